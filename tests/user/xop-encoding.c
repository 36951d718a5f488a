/*
 * xop-encoding: which XOP encodings around the LWP opcodes execute and
 * which raise #UD
 *
 * Every encoding below is written as raw bytes into an executable buffer
 * and executed, one at a time, with SIGILL caught: SIGILL at the first
 * byte of the instruction is #UD, anything else means the encoding was
 * accepted.  The expected class of each encoding comes from the spec
 * (AMD 43724 rev 3.08, sections 5.1-5.4, and the XOP rules of the APM):
 *
 *   LLWPCB  XOP map 9,   op 0x12 /0, mod = 11b, vvvv = 1111b, L = 0, pp = 00
 *   SLWPCB  XOP map 9,   op 0x12 /1, same constraints
 *   LWPINS  XOP map 0xA, op 0x12 /0 + imm32, any mod, any vvvv, L = 0, pp = 00
 *   LWPVAL  XOP map 0xA, op 0x12 /1 + imm32, same constraints
 *   R, X, B and W may take any value (W selects the 32/64-bit register);
 *   ModRM.reg 2..7, other maps 8..0x1f and opcodes 0x10, 0x11, 0x13 are
 *   #UD on a CPU without XOP and TBM; an XOP after a 66, F2, F3, LOCK or
 *   REX prefix is #UD; segment overrides and 67 are allowed.
 *   8F whose map_select field (bits 4:0 of the next byte) is below 8 is
 *   not XOP: 8F /0 is POP Ev and must behave exactly as before, 8F /4 #UD.
 *
 * Coverage: for map 9 and map 0xA op 0x12, the full product of R/X/B (8),
 * W (2), vvvv (16), L (2), pp (4) and every ModRM byte (256), with SIB and
 * displacement bytes where the ModRM asks for them; for the other maps
 * and opcodes, both values of R/X/B together, every W, L, pp and
 * ModRM.reg, vvvv 0000b/1111b, mod 00b/11b; every prefix on each LWP form;
 * every 8F ModRM byte with map_select < 8, alone and after 41, 48 and 66.
 *
 * In 64-bit mode the register file and the arithmetic flags are compared
 * after each accepted encoding: LWP is disabled, so LLWPCB (its register
 * holds 0) and LWPVAL change nothing, SLWPCB zeroes its register and
 * LWPINS only clears CF (spec 5.2-5.4).  POP is checked bit for bit
 * (destination, RSP, flags).
 *
 * Operands, with LWP enabled (64-bit): LLWPCB and SLWPCB with every r/m
 * register (XOP.B) and W; LWPINS and LWPVAL with every vvvv register
 * (Data2, 4 bits, zero-extended when W=0), every r/m register (Data1,
 * XOP.B) and memory forms [base + disp8] (XOP.B) and [rax + index]
 * (XOP.X); each record is checked field by field.
 *
 * Legacy mode: qemu-x86_64 cannot load an ELF32, so the same bytes also run
 * in a 32-bit code segment that modify_ldt installs in the LDT (selector 7:
 * index 0, TI = 1, RPL 3), entered with a far call and left with a far
 * return.  There R/X/B are ignored, W does not select a 64-bit register,
 * and vvvv must still be 1111b for LLWPCB/SLWPCB: 0111b is #UD (the high
 * vvvv bit is only ignored where vvvv names a register).  If the emulator
 * refuses modify_ldt or the far call, the legacy part is skipped with a
 * message.
 *
 * With --objdump the program does not execute anything: it writes the
 * same encodings to a file, disassembles it with the host's GNU objdump
 * (-b binary, i386:x86-64 and i386) and compares objdump's mnemonic and
 * instruction length with the expected class.  Known divergences of GNU
 * objdump 2.40 from the spec, reported as DIVERGENCE lines, not failures:
 *   - it decodes an XOP after 66/F2/F3/LOCK/REX ("data16 llwpcb %eax",
 *     "rex llwpcb %eax"), which the APM makes #UD;
 *   - it decodes other ISA extensions in the same opcode space (TBM's
 *     BEXTR is XOP map 0xA op 0x10), which are #UD on a CPU without TBM;
 *   - older binutils accepted XOP.L = 1 on the LWP instructions; 2.40 does
 *     not, but such a version would be reported here the same way.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "lwp-test.h"
#include "xop-encoding.h"

#include <asm/ldt.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/syscall.h>

/* ---- fixed guest addresses ----------------------------------------------- */

/*
 * Every register that forms an address holds S, so [reg], [reg+reg] and
 * [reg+disp] all land in the data region; all of it is below 4 GiB for the
 * 32-bit runs.
 */
#define DATA_S          0x08000000ull
#define DATA_LO         (DATA_S - 0x10000)
#define DATA_HI         (2 * DATA_S + 0x10000)
#define POP_STACK       (DATA_S + 0x80000)         /* RSP for POP forms */
#define POP_VALUE       0x1122334455667788ull
#define POP_TARGET      (DATA_S + 0x400)           /* RIP-relative POP */
#define CODE_BASE       0x20000000ull
#define STACK32_BASE    0x30000000ull
#define STACK32_SIZE    0x10000
#define SLOT            32      /* bytes per encoding in the code buffer */
#define FLAGS_IN        0x8d7ull /* OF SF ZF AF PF CF set, bit 1 */
#define FLAGS_ARITH     0x8d5ull

/* ---- classes and categories ---------------------------------------------- */

enum cls { K_UD, K_LLWPCB, K_SLWPCB, K_LWPINS, K_LWPVAL, K_POP, K_OTHER };

static const char *const cls_name[] = {
    "#UD", "llwpcb", "slwpcb", "lwpins", "lwpval", "pop", "another insn",
};

enum cat {
    C_LWPCB_OK, C_LWPCB_REG, C_LWPCB_MOD, C_LWPCB_VVVV7, C_LWPCB_VVVV,
    C_LWPCB_L, C_LWPCB_PP,
    C_INS_OK, C_INS_REG, C_INS_L, C_INS_PP,
    C_OTHER,
    C_P66, C_PF2, C_PF3, C_PLOCK, C_PREX, C_PSEG,
    C_POP, C_POP_UD,
    C_NUM
};

static const char *const cat_desc[C_NUM] = {
    [C_LWPCB_OK] = "LLWPCB/SLWPCB (XOP map 9 op 0x12 /0 /1, mod=11b, "
                   "vvvv=1111b, L=0, pp=00, any R/X/B/W) execute",
    [C_LWPCB_REG] = "XOP map 9 op 0x12 with ModRM.reg 2..7 raises #UD",
    [C_LWPCB_MOD] = "LLWPCB/SLWPCB with ModRM.mod != 11b raise #UD",
    [C_LWPCB_VVVV7] = "LLWPCB/SLWPCB with vvvv=0111b raise #UD "
                      "(vvvv is not masked to 3 bits)",
    [C_LWPCB_VVVV] = "LLWPCB/SLWPCB with vvvv != 1111b raise #UD",
    [C_LWPCB_L] = "LLWPCB/SLWPCB with XOP.L=1 raise #UD",
    [C_LWPCB_PP] = "LLWPCB/SLWPCB with XOP.pp != 00 raise #UD",
    [C_INS_OK] = "LWPINS/LWPVAL (XOP map 0xA op 0x12 /0 /1 + imm32, any "
                 "mod/rm/vvvv, L=0, pp=00, any R/X/B/W) execute",
    [C_INS_REG] = "XOP map 0xA op 0x12 with ModRM.reg 2..7 raises #UD",
    [C_INS_L] = "LWPINS/LWPVAL with XOP.L=1 raise #UD",
    [C_INS_PP] = "LWPINS/LWPVAL with XOP.pp != 00 raise #UD",
    [C_OTHER] = "XOP maps 8..0x1f, opcodes 0x10..0x13 (except map 9/0xA "
                "op 0x12) raise #UD",
    [C_P66] = "LWP instructions after a 66 prefix raise #UD",
    [C_PF2] = "LWP instructions after an F2 prefix raise #UD",
    [C_PF3] = "LWP instructions after an F3 prefix raise #UD",
    [C_PLOCK] = "LWP instructions after a LOCK (F0) prefix raise #UD",
    [C_PREX] = "LWP instructions after a REX prefix (40..4F) raise #UD",
    [C_PSEG] = "LWP instructions after 26/2E/36/3E or 67 prefixes execute",
    [C_POP] = "8F with map_select < 8 and ModRM.reg=0 is POP Ev "
              "(destination, RSP and flags bit for bit)",
    [C_POP_UD] = "8F /4 (map_select < 8) raises #UD",
};

/* ---- encodings ----------------------------------------------------------- */

struct enc {
    int m32;            /* legacy mode (32-bit code segment) */
    int prefix;         /* -1: none */
    int xop;            /* 0: 8F followed directly by a ModRM (POP forms) */
    unsigned rxb;       /* raw (inverted) R X B bits as encoded */
    unsigned map, w, vvvv, l, pp, op, modrm;
};

struct cand {
    uint8_t b[20];
    uint8_t len;
    uint8_t cat;
    uint8_t cls;
    uint8_t zero_regs;  /* all GPRs 0: the LLWPCB forms */
    uint8_t rm;         /* ModRM.rm with B: SLWPCB's / POP's register */
    uint8_t mod;
    uint8_t osize16;    /* 66 on a POP form */
    int8_t riprel;      /* offset of a RIP-relative disp32 to fix, or -1 */
    uint8_t rex_x, rex_b;
};

static struct cand *cands;
static size_t ncands, cap;

static struct cand *new_cand(void)
{
    if (ncands == cap) {
        cap = cap ? cap * 2 : 1 << 16;
        cands = realloc(cands, cap * sizeof(*cands));
        if (!cands) {
            perror("realloc");
            exit(2);
        }
    }
    memset(&cands[ncands], 0, sizeof(*cands));
    cands[ncands].riprel = -1;
    return &cands[ncands++];
}

static int is_rex(int p)
{
    return p >= 0x40 && p <= 0x4f;
}

/* The spec's expectation (see the top of the file) */
static void classify(const struct enc *e, struct cand *c)
{
    unsigned mod = e->modrm >> 6, reg = (e->modrm >> 3) & 7;

    if (!e->xop) {
        c->cat = reg == 0 ? C_POP : C_POP_UD;
        c->cls = reg == 0 ? K_POP : K_UD;
        return;
    }
    c->cls = K_UD;
    if (e->map == 9 && e->op == 0x12) {
        c->cat = reg > 1 ? C_LWPCB_REG
               : mod != 3 ? C_LWPCB_MOD
               : e->vvvv == 7 ? C_LWPCB_VVVV7
               : e->vvvv != 0xf ? C_LWPCB_VVVV
               : e->l ? C_LWPCB_L
               : e->pp ? C_LWPCB_PP : C_LWPCB_OK;
        if (c->cat == C_LWPCB_OK) {
            c->cls = reg == 0 ? K_LLWPCB : K_SLWPCB;
        }
    } else if (e->map == 0xa && e->op == 0x12) {
        c->cat = reg > 1 ? C_INS_REG
               : e->l ? C_INS_L
               : e->pp ? C_INS_PP : C_INS_OK;
        if (c->cat == C_INS_OK) {
            c->cls = reg == 0 ? K_LWPINS : K_LWPVAL;
        }
    } else {
        c->cat = C_OTHER;
    }
    if (e->prefix < 0) {
        return;
    }
    switch (e->prefix) {
    case 0x66:
        c->cat = C_P66;
        break;
    case 0xf2:
        c->cat = C_PF2;
        break;
    case 0xf3:
        c->cat = C_PF3;
        break;
    case 0xf0:
        c->cat = C_PLOCK;
        break;
    default:
        c->cat = is_rex(e->prefix) ? C_PREX : C_PSEG;
        break;
    }
    if (c->cat != C_PSEG) {
        c->cls = K_UD;
    }
}

/* ModRM tail: SIB, displacement.  POP forms get distinct displacements. */
static void emit_tail(const struct enc *e, struct cand *c, int addr16)
{
    unsigned mod = e->modrm >> 6, rm = e->modrm & 7;
    int pop = !e->xop;
    uint32_t d32 = pop ? 0x100 : 0;
    uint8_t d8 = pop ? 0x10 : 0;

    if (mod == 3) {
        return;
    }
    if (addr16) {
        if (mod == 0 && rm == 6) {
            c->b[c->len++] = 0;
            c->b[c->len++] = 0;
        } else if (mod == 1) {
            c->b[c->len++] = d8;
        } else if (mod == 2) {
            c->b[c->len++] = 0;
            c->b[c->len++] = 1;
        }
        return;
    }
    if (rm == 4) {
        c->b[c->len++] = 0x00;          /* SIB: [base rax + index rax] */
    }
    if (mod == 0 && rm == 5) {
        if (e->m32) {
            d32 = pop ? POP_TARGET : DATA_S;    /* absolute disp32 */
        } else {
            c->riprel = c->len;                 /* fixed per slot */
        }
        d32 = e->m32 ? d32 : 0;
    } else if (mod == 1) {
        c->b[c->len++] = d8;
        return;
    } else if (mod != 2) {
        return;
    }
    memcpy(&c->b[c->len], &d32, 4);
    c->len += 4;
}

static void add(const struct enc *e)
{
    struct cand *c = new_cand();
    int addr16 = e->m32 && e->prefix == 0x67;
    unsigned reg = (e->modrm >> 3) & 7;

    classify(e, c);
    if (e->prefix >= 0) {
        c->b[c->len++] = e->prefix;
    }
    c->b[c->len++] = 0x8f;
    if (e->xop) {
        c->b[c->len++] = e->rxb << 5 | e->map;
        c->b[c->len++] = e->w << 7 | e->vvvv << 3 | e->l << 2 | e->pp;
        c->b[c->len++] = e->op;
    }
    c->b[c->len++] = e->modrm;
    emit_tail(e, c, addr16);
    if (e->xop && e->map == 0xa) {
        /*
         * imm32 0x0b0f0b0f: the bytes 0f 0b 0f 0b are UD2 UD2, so an
         * immediate taken as shorter than 32 bits ends in a SIGILL that
         * is not at the instruction's first byte
         */
        static const uint8_t imm[4] = { 0x0f, 0x0b, 0x0f, 0x0b };

        memcpy(&c->b[c->len], imm, 4);
        c->len += 4;
    }
    c->mod = e->modrm >> 6;
    if (e->xop) {
        c->rex_x = !((e->rxb >> 1) & 1);
        c->rex_b = !(e->rxb & 1);
    } else if (is_rex(e->prefix)) {
        c->rex_x = (e->prefix >> 1) & 1;
        c->rex_b = e->prefix & 1;
    }
    if (e->m32) {
        c->rex_x = c->rex_b = 0;
    }
    c->rm = (e->modrm & 7) | c->rex_b << 3;
    c->osize16 = !e->xop && e->prefix == 0x66;
    c->zero_regs = e->xop && e->map == 9 && e->op == 0x12 && reg == 0;
}

static void gen(int m32)
{
    struct enc e = { .m32 = m32, .prefix = -1, .xop = 1 };
    static const int prefixes[] = {
        0x66, 0xf2, 0xf3, 0xf0, 0x26, 0x2e, 0x36, 0x3e, 0x67,
        0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47,
        0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f,
    };
    /* the LWP forms that prefixes are put in front of: map, W, ModRM */
    static const unsigned forms[][3] = {
        { 9, 0, 0xc0 }, { 9, 1, 0xc1 }, { 9, 0, 0xc8 }, { 9, 1, 0xcb },
        { 0xa, 0, 0xc0 }, { 0xa, 1, 0x00 }, { 0xa, 0, 0xc9 }, { 0xa, 1, 0x08 },
    };
    static const int pop_prefixes[] = { -1, 0x41, 0x48, 0x66 };

    ncands = 0;
    /* map 9 and map 0xA, op 0x12: the full product */
    for (e.map = 9; e.map <= 0xa; e.map++) {
        e.op = 0x12;
        for (e.rxb = 0; e.rxb < 8; e.rxb++) {
            for (e.w = 0; e.w < 2; e.w++) {
                for (e.vvvv = 0; e.vvvv < 16; e.vvvv++) {
                    for (e.l = 0; e.l < 2; e.l++) {
                        for (e.pp = 0; e.pp < 4; e.pp++) {
                            for (e.modrm = 0; e.modrm < 256; e.modrm++) {
                                add(&e);
                            }
                        }
                    }
                }
            }
        }
    }
    /* the other maps and the neighbouring opcodes */
    for (e.map = 8; e.map <= 0x1f; e.map++) {
        for (e.op = 0x10; e.op <= 0x13; e.op++) {
            if (e.op == 0x12 && (e.map == 9 || e.map == 0xa)) {
                continue;
            }
            for (e.rxb = 0; e.rxb < 8; e.rxb += 7) {
                for (e.w = 0; e.w < 2; e.w++) {
                    for (e.vvvv = 0; e.vvvv < 16; e.vvvv += 15) {
                        for (e.l = 0; e.l < 2; e.l++) {
                            for (e.pp = 0; e.pp < 4; e.pp++) {
                                for (unsigned r = 0; r < 8; r++) {
                                    e.modrm = 0xc0 | r << 3;
                                    add(&e);
                                    e.modrm = r << 3;
                                    add(&e);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    /* prefixes in front of valid LWP forms */
    e.op = 0x12;
    e.rxb = 7;
    e.vvvv = 0xf;
    e.l = e.pp = 0;
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        if (m32 && is_rex(prefixes[i])) {
            continue;   /* INC/DEC outside 64-bit mode */
        }
        e.prefix = prefixes[i];
        for (size_t j = 0; j < sizeof(forms) / sizeof(forms[0]); j++) {
            e.map = forms[j][0];
            e.w = forms[j][1];
            e.modrm = forms[j][2];
            add(&e);
        }
    }
    /* 8F with map_select < 8: POP Ev and 8F /4 */
    e.xop = 0;
    for (size_t i = 0; i < 4; i++) {
        e.prefix = pop_prefixes[i];
        if (m32 && is_rex(e.prefix)) {
            continue;
        }
        for (e.modrm = 0; e.modrm < 256; e.modrm++) {
            if ((e.modrm & 0x1f) < 8) {
                add(&e);
            }
        }
    }
}

static void hex(const struct cand *c, char *buf)
{
    buf[0] = 0;
    for (int i = 0; i < c->len; i++) {
        sprintf(buf + strlen(buf), "%s%02x", i ? " " : "", c->b[i]);
    }
}

/* ---- per-category tallies ------------------------------------------------ */

#define EXAMPLES 4

struct tally {
    unsigned n, bad, diverge;
    char ex[EXAMPLES][160];
    char div[EXAMPLES][160];
};

static struct tally tally[C_NUM];

static void tally_reset(void)
{
    memset(tally, 0, sizeof(tally));
}

static void note_bad(int cat, const struct cand *c, const char *fmt, ...)
{
    struct tally *t = &tally[cat];
    char h[80];
    va_list ap;

    if (t->bad < EXAMPLES) {
        hex(c, h);
        int n = snprintf(t->ex[t->bad], sizeof(t->ex[0]), "[%s] ", h);
        va_start(ap, fmt);
        vsnprintf(t->ex[t->bad] + n, sizeof(t->ex[0]) - n, fmt, ap);
        va_end(ap);
    }
    t->bad++;
}

/* One report line per category */
static void tally_report(const char *what, const char *tool, int lwp)
{
    for (int i = 0; i < C_NUM; i++) {
        struct tally *t = &tally[i];
        int lwp_ok = i == C_LWPCB_OK || i == C_INS_OK || i == C_PSEG;

        if (!t->n) {
            continue;
        }
        report(t->bad == 0, "%s: %s%s: %u of %u encodings as expected",
               what, (lwp_ok && !lwp) ? "[LWP not supported, so #UD "
               "instead] " : "", cat_desc[i], t->n - t->bad, t->n);
        for (unsigned j = 0; j < t->bad && j < EXAMPLES; j++) {
            printf("    e.g. %s\n", t->ex[j]);
        }
        if (t->diverge) {
            printf("DIVERGENCE: %s: %s: %u encodings, e.g. %s\n", tool,
                   cat_desc[i], t->diverge, t->div[0]);
        }
    }
}

/* ---- 64-bit execution ---------------------------------------------------- */

/*
 * xe_enter loads every GPR and the flags from *io, jumps to code; the slot
 * ends with "jmp *(%rip)" to xe_exit, which stores them back into *io.
 * xe_enter32 switches to a stack below 4 GiB and far-calls xe32_entry
 * (32-bit code, selector 7), which loads xe32_regval into every GPR but
 * ESP and jumps to code; the slot ends with "jmp *xe32_exit_ptr" and
 * xe32_exit far-returns.
 */
__asm__(
    "    .pushsection .data\n"
    "    .balign 8\n"
    "xe_saved_rsp: .quad 0\n"
    "xe_io:        .quad 0\n"
    "xe_target:    .quad 0\n"
    "xe_tmp:       .quad 0\n"
    "    .globl xe32_regval, xe32_exit_ptr\n"
    "xe32_regval:  .long 0\n"
    "xe32_target:  .long 0\n"
    "xe32_saved_esp: .long 0\n"
    "xe32_exit_ptr: .long xe32_exit\n"
    "xe32_farptr:  .long xe32_entry\n"
    "              .word 7\n"
    "    .popsection\n"
    "    .text\n"
    "    .globl xe_enter, xe_exit, xe_enter32\n"
    "xe_enter:\n"
    "    push %rbx; push %rbp; push %r12; push %r13; push %r14; push %r15\n"
    "    mov %rsp, xe_saved_rsp(%rip)\n"
    "    mov %rdi, xe_io(%rip)\n"
    "    mov %rsi, xe_target(%rip)\n"
    "    pushq 128(%rdi)\n"
    "    popfq\n"
    "    mov 0(%rdi), %rax\n"
    "    mov 8(%rdi), %rcx\n"
    "    mov 16(%rdi), %rdx\n"
    "    mov 24(%rdi), %rbx\n"
    "    mov 40(%rdi), %rbp\n"
    "    mov 48(%rdi), %rsi\n"
    "    mov 64(%rdi), %r8\n"
    "    mov 72(%rdi), %r9\n"
    "    mov 80(%rdi), %r10\n"
    "    mov 88(%rdi), %r11\n"
    "    mov 96(%rdi), %r12\n"
    "    mov 104(%rdi), %r13\n"
    "    mov 112(%rdi), %r14\n"
    "    mov 120(%rdi), %r15\n"
    "    mov 32(%rdi), %rsp\n"
    "    mov 56(%rdi), %rdi\n"
    "    jmp *xe_target(%rip)\n"
    "xe_exit:\n"
    "    mov %rdi, xe_tmp(%rip)\n"
    "    mov xe_io(%rip), %rdi\n"
    "    mov %rax, 0(%rdi)\n"
    "    mov %rcx, 8(%rdi)\n"
    "    mov %rdx, 16(%rdi)\n"
    "    mov %rbx, 24(%rdi)\n"
    "    mov %rsp, 32(%rdi)\n"
    "    mov %rbp, 40(%rdi)\n"
    "    mov %rsi, 48(%rdi)\n"
    "    mov %r8, 64(%rdi)\n"
    "    mov %r9, 72(%rdi)\n"
    "    mov %r10, 80(%rdi)\n"
    "    mov %r11, 88(%rdi)\n"
    "    mov %r12, 96(%rdi)\n"
    "    mov %r13, 104(%rdi)\n"
    "    mov %r14, 112(%rdi)\n"
    "    mov %r15, 120(%rdi)\n"
    "    mov xe_tmp(%rip), %rax\n"
    "    mov %rax, 56(%rdi)\n"
    "    mov xe_saved_rsp(%rip), %rsp\n"
    "    pushfq\n"
    "    popq 128(%rdi)\n"
    "    pop %r15; pop %r14; pop %r13; pop %r12; pop %rbp; pop %rbx\n"
    "    ret\n"
    "xe_enter32:\n"
    "    push %rbx; push %rbp; push %r12; push %r13; push %r14; push %r15\n"
    "    mov %rsp, xe_saved_rsp(%rip)\n"
    "    mov %edi, xe32_target(%rip)\n"
    "    mov $" "0x30010000" ", %rsp\n"     /* STACK32_BASE + STACK32_SIZE */
    "    lcall *xe32_farptr(%rip)\n"
    "    mov xe_saved_rsp(%rip), %rsp\n"
    "    pop %r15; pop %r14; pop %r13; pop %r12; pop %rbp; pop %rbx\n"
    "    ret\n"
    "    .code32\n"
    "xe32_entry:\n"
    "    mov %ss, %eax\n"
    "    mov %eax, %ds\n"
    "    mov %eax, %es\n"
    "    mov %esp, xe32_saved_esp\n"
    "    mov xe32_regval, %eax\n"
    "    mov %eax, %ecx\n"
    "    mov %eax, %edx\n"
    "    mov %eax, %ebx\n"
    "    mov %eax, %ebp\n"
    "    mov %eax, %esi\n"
    "    mov %eax, %edi\n"
    "    jmp *xe32_target\n"
    "xe32_exit:\n"
    "    mov xe32_saved_esp, %esp\n"
    "    lret\n"
    "    .code64\n");

static uint8_t *code;

struct run_arg {
    struct cpu *io;
    uintptr_t slot;
};

static void run64(void *p)
{
    struct run_arg *a = p;

    xe_enter(a->io, a->slot);
}

static void run32(void *p)
{
    xe_enter32(((struct run_arg *)p)->slot);
}

static void put_exit(uint8_t *s, uint8_t *end, int m32);

/* Lay out every candidate: bytes, then the jump back, in its own slot */
static void place(int m32)
{
    for (size_t i = 0; i < ncands; i++) {
        struct cand *c = &cands[i];
        uint8_t *s = code + i * SLOT;
        uintptr_t next = (uintptr_t)s + c->len;

        memcpy(s, c->b, c->len);
        if (c->riprel >= 0 && c->cls == K_POP) {
            int32_t d = (int32_t)(POP_TARGET - next);

            memcpy(s + c->riprel, &d, 4);
        } else if (c->riprel >= 0) {
            memset(s + c->riprel, 0, 4);
        }
        put_exit(s + c->len, code + (i + 1) * SLOT, m32);
    }
}

/* after an encoding: the jump back to the trampoline, then int3 fill */
static void put_exit(uint8_t *s, uint8_t *end, int m32)
{
    {
        if (m32) {
            uint32_t a = (uint32_t)(uintptr_t)&xe32_exit_ptr;

            *s++ = 0xff;                /* jmp *abs32 */
            *s++ = 0x25;
            memcpy(s, &a, 4);
            s += 4;
        } else {
            uint64_t a = (uintptr_t)xe_exit;

            *s++ = 0xff;                /* jmp *0(%rip) */
            *s++ = 0x25;
            memset(s, 0, 4);
            s += 4;
            memcpy(s, &a, 8);
            s += 8;
        }
        memset(s, 0xcc, end - s);
    }
}

/* POP's effective address (64-bit addressing, every base/index = S) */
static uint64_t pop_ea(const struct cand *c, uint64_t next_rip)
{
    unsigned rm = c->rm & 7;
    uint64_t ea;

    if (c->mod == 0 && rm == 5) {
        return POP_TARGET;
    }
    ea = DATA_S;                        /* base: rax/r8 (SIB) or rm */
    if (rm == 4) {
        ea += DATA_S;                   /* SIB index rax/r8 */
    }
    ea += c->mod == 1 ? 0x10 : c->mod == 2 ? 0x100 : 0;
    (void)next_rip;
    return ea;
}

static void expect_state(const struct cand *c, const struct cpu *in,
                         struct cpu *exp, uint64_t *ea)
{
    *exp = *in;
    *ea = 0;
    switch (c->cls) {
    case K_SLWPCB:
        exp->r[c->rm] = 0;              /* LWP disabled: register = 0 */
        break;
    case K_LWPINS:
        exp->flags &= ~1ull;            /* LWP disabled: CF cleared */
        break;
    case K_POP:
        exp->r[4] += c->osize16 ? 2 : 8;
        if (c->mod == 3) {
            if (c->osize16) {
                exp->r[c->rm] = (exp->r[c->rm] & ~0xffffull) |
                                (POP_VALUE & 0xffff);
            } else {
                exp->r[c->rm] = POP_VALUE;
            }
        } else {
            *ea = pop_ea(c, 0);
        }
        break;
    default:
        break;
    }
}

static int lwp_ok_cls(int cls)
{
    return cls >= K_LLWPCB && cls <= K_LWPVAL;
}

static void exec_all(int m32, int lwp, int skip_other)
{
    static const char *const rn[16] = {
        "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
        "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
    };
    unsigned segv_ok = 0;

    tally_reset();
    place(m32);
    for (size_t i = 0; i < ncands; i++) {
        struct cand *c = &cands[i];
        uintptr_t slot = (uintptr_t)code + i * SLOT;
        int cls = (!lwp && lwp_ok_cls(c->cls)) ? K_UD : c->cls;
        struct cpu io, in, exp;
        struct run_arg a = { &io, slot };
        struct fault f;
        uint64_t ea;
        int sig;

        if (c->cat == C_OTHER && skip_other) {
            continue;
        }
        for (int r = 0; r < 16; r++) {
            in.r[r] = c->zero_regs ? 0 : DATA_S;
        }
        if (c->cls == K_POP || c->cat == C_POP_UD) {
            in.r[4] = POP_STACK;
            wr64((void *)(uintptr_t)POP_STACK, 0, POP_VALUE);
        }
        in.flags = FLAGS_IN;
        io = in;
        xe32_regval = c->zero_regs ? 0 : (uint32_t)DATA_S;
        sig = guarded(m32 ? run32 : run64, &a, &f);
        tally[c->cat].n++;
        if (cls == K_UD) {
            if (sig != SIGILL) {
                note_bad(c->cat, c, "expected #UD, got %s", signame(sig));
            } else if (f.rip != slot) {
                note_bad(c->cat, c, "expected #UD at the first byte, got "
                         "SIGILL at +%ld", (long)(f.rip - slot));
            }
            continue;
        }
        if (m32) {
            /* decoded: completed, or faulted on a memory operand */
            if (sig == SIGSEGV && c->mod != 3 && f.rip == slot) {
                segv_ok++;
            } else if (sig) {
                note_bad(c->cat, c, "expected %s to execute, got %s at +%ld",
                         cls_name[cls], signame(sig), (long)(f.rip - slot));
            }
            continue;
        }
        if (sig) {
            note_bad(c->cat, c, "expected %s to execute, got %s at +%ld",
                     cls_name[cls], signame(sig), (long)(f.rip - slot));
            continue;
        }
        expect_state(c, &in, &exp, &ea);
        for (int r = 0; r < 16; r++) {
            if (io.r[r] != exp.r[r]) {
                note_bad(c->cat, c, "%s: expected %s=0x%llx, got 0x%llx",
                         cls_name[cls], rn[r], (unsigned long long)exp.r[r],
                         (unsigned long long)io.r[r]);
                goto next;
            }
        }
        if ((io.flags & FLAGS_ARITH) != (exp.flags & FLAGS_ARITH)) {
            note_bad(c->cat, c, "%s: expected flags 0x%llx, got 0x%llx",
                     cls_name[cls],
                     (unsigned long long)(exp.flags & FLAGS_ARITH),
                     (unsigned long long)(io.flags & FLAGS_ARITH));
        }
        if (ea) {
            uint64_t want = c->osize16 ? (POP_VALUE & 0xffff) : POP_VALUE;
            uint64_t got = rd64((void *)(uintptr_t)ea, 0);

            if (c->osize16) {
                got &= 0xffff;
            }
            if (got != want) {
                note_bad(c->cat, c,
                         "pop: expected 0x%llx at 0x%llx, got 0x%llx",
                         (unsigned long long)want, (unsigned long long)ea,
                         (unsigned long long)got);
            }
            wr64((void *)(uintptr_t)ea, 0, 0);
        }
next:;
    }
    tally_report(m32 ? "32-bit" : "64-bit", "", lwp);
    if (m32 && segv_ok) {
        printf("    note: %u accepted memory forms faulted on their operand "
               "(SIGSEGV at the instruction), counted as decoded\n", segv_ok);
    }
}


/* ---- register and memory operands, LWP enabled (64-bit) ---------------- */

#define OP_CB           (DATA_S + 0x100000)     /* below 4 GiB */
#define OP_RING         (DATA_S + 0x110000)
#define OP_RING_SIZE    0x10000

/* a distinct value in every register, high and low halves different */
static uint64_t junk_reg(unsigned i)
{
    return (uint64_t)(0xa0 + i) << 56 | (uint64_t)(0x10 + i) << 32 |
           (0x01010101u * (i + 1) ^ 0x80000000u);
}

/* run one encoding from slot 0 with *io; returns the signal */
static int run_one(const uint8_t *b, unsigned len, struct cpu *io,
                   struct fault *f)
{
    struct run_arg a = { io, (uintptr_t)code };

    memcpy(code, b, len);
    put_exit(code + len, code + SLOT, 0);
    return guarded(run64, &a, f);
}

static unsigned op_bad;
static char op_ex[EXAMPLES][256];

__attribute__((format(printf, 2, 3)))
static void op_fail(const uint8_t *b, const char *fmt, ...)
{
    va_list ap;

    if (op_bad < EXAMPLES) {
        int n = snprintf(op_ex[op_bad], sizeof(op_ex[0]), "[%02x %02x %02x "
                         "%02x %02x] ", b[0], b[1], b[2], b[3], b[4]);

        va_start(ap, fmt);
        vsnprintf(op_ex[op_bad] + n, sizeof(op_ex[0]) - n, fmt, ap);
        va_end(ap);
    }
    op_bad++;
}

/* one report for a group of encodings, then its first failures */
__attribute__((format(printf, 2, 3)))
static void op_report(unsigned n, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    report(op_bad == 0, "%s: %u of %u encodings as expected", msg,
           n - op_bad, n);
    for (unsigned i = 0; i < op_bad && i < EXAMPLES; i++) {
        printf("    e.g. %s\n", op_ex[i]);
    }
    op_bad = 0;
}

/*
 * LWPINS/LWPVAL: Data2 is the vvvv register (4 bits in 64-bit mode,
 * zero-extended for W=0), Data1 the r/m register (with XOP.B) or the
 * memory at [base (B) + index (X)].
 */
static void test_ins_operands(int map_reg, int val)
{
    uint8_t *cb = (uint8_t *)(uintptr_t)OP_CB;
    uint8_t *ring = (uint8_t *)(uintptr_t)OP_RING;
    unsigned n = 0;
    struct cpu io, in;
    struct fault f;
    uint8_t b[16];
    int sig;

    op_bad = 0;
    lwpcb_init(cb, ring, OP_RING_SIZE, val ? LWP_FEAT_VAL : 0);
    if (try_llwpcb(cb, NULL)) {
        report(0, "64-bit operands: LLWPCB of a valid LWPCB executes");
        return;
    }
    /* register forms: every vvvv, every r/m register, W 1 then W 0 */
    for (int w = 1; w >= 0; w--) {
        for (unsigned v = 0; v < 16; v++) {
            for (unsigned r = 0; r < 16; r++) {
                uint32_t h = rd32(cb, LWPCB_HEAD);
                struct rec rc;
                uint64_t d2;

                for (unsigned i = 0; i < 16; i++) {
                    in.r[i] = junk_reg(i);
                }
                in.flags = FLAGS_IN;
                io = in;
                b[0] = 0x8f;
                b[1] = (r & 8 ? 0 : 0x20) | 0xc0 | 0xa;
                b[2] = w << 7 | (~v & 15) << 3;
                b[3] = 0x12;
                b[4] = 0xc0 | map_reg << 3 | (r & 7);
                memcpy(&b[5], "\x0f\x0b\x0f\x0b", 4);
                sig = run_one(b, 9, &io, &f);
                n++;
                if (sig) {
                    op_fail(b, "got %s", signame(sig));
                    continue;
                }
                rc = read_rec(ring, h);
                d2 = w ? in.r[v] : (uint32_t)in.r[v];
                if (rd32(cb, LWPCB_HEAD) != h + 32 ||
                    rc.event_id != (map_reg ? 1 : 255) ||
                    rc.flags != 0x0b0f || rc.ip != (uintptr_t)code ||
                    rc.data1 != (uint32_t)in.r[r] || rc.data2 != d2) {
                    op_fail(b, "vvvv=%u r/m=%u W=%d: expected Data1 0x%x Data2 "
                            "0x%llx at 0x%lx, got Data1 0x%x Data2 0x%llx at "
                            "0x%llx (head %u)", v, r, w, (uint32_t)in.r[r],
                            (unsigned long long)d2, (unsigned long)code,
                            rc.data1, (unsigned long long)rc.data2,
                            (unsigned long long)rc.ip, rd32(cb, LWPCB_HEAD));
                }
            }
        }
        op_report(n, "64-bit %s, W=%d, register forms: Data2 = the 4-bit "
                  "vvvv register%s, Data1 = the r/m register (XOP.B), "
                  "Flags = imm16, InstructionAddress = the instruction",
                  map_reg ? "LWPVAL" : "LWPINS", w,
                  w ? "" : " zero-extended from 32 bits");
        n = 0;
    }
    /* memory forms: [base] with disp8 for every base, [rax + index] */
    for (unsigned k = 0; k < 32; k++) {
        unsigned base = k < 16 ? k : 0, index = k < 16 ? 4 : k - 16;
        uint32_t h = rd32(cb, LWPCB_HEAD);
        uint64_t ea;
        unsigned len = 0;
        struct rec rc;

        if (k >= 16 && index == 4) {
            continue;                   /* SIB index 100b: none */
        }
        for (unsigned i = 0; i < 16; i++) {
            in.r[i] = DATA_S + 0x1000 * i;
        }
        in.flags = FLAGS_IN;
        io = in;
        b[len++] = 0x8f;
        b[len++] = (index & 8 ? 0 : 0x40) | (base & 8 ? 0 : 0x20) | 0x80 | 0xa;
        b[len++] = 0x78;                /* W0, vvvv = rax, L0, pp 00 */
        b[len++] = 0x12;
        if (k < 16) {
            b[len++] = 0x40 | map_reg << 3 | (base & 7);    /* [base+8] */
            if ((base & 7) == 4) {
                b[len++] = 0x24;        /* SIB: base rsp/r12, no index */
            }
            b[len++] = 8;
            ea = in.r[base] + 8;
        } else {
            b[len++] = 0x04 | map_reg << 3;                 /* SIB */
            b[len++] = (index & 7) << 3;                    /* base rax */
            ea = in.r[0] + in.r[index];
        }
        memcpy(&b[len], "\x0f\x0b\x0f\x0b", 4);
        len += 4;
        wr32((void *)(uintptr_t)ea, 0, 0x5eed0000 | k);
        sig = run_one(b, len, &io, &f);
        n++;
        rc = read_rec(ring, h);
        if (sig || rc.data1 != (0x5eed0000 | k) || rc.data2 !=
            (uint32_t)in.r[0] || rd32(cb, LWPCB_HEAD) != h + 32) {
            op_fail(b, "memory operand at 0x%llx: expected Data1 0x%x, got "
                    "%s, Data1 0x%x", (unsigned long long)ea, 0x5eed0000 | k,
                    signame(sig), rc.data1);
        }
        wr32((void *)(uintptr_t)ea, 0, 0);
    }
    lwp_off();
    op_report(n, "64-bit %s, memory forms: Data1 = the dword at [base "
              "(XOP.B) + disp8] or [rax + index (XOP.X)]",
              map_reg ? "LWPVAL" : "LWPINS");
}

/* LLWPCB and SLWPCB take their register from r/m with XOP.B */
static void test_cb_operands(void)
{
    uint8_t *cb = (uint8_t *)(uintptr_t)OP_CB;
    uint8_t *ring = (uint8_t *)(uintptr_t)OP_RING;
    unsigned n = 0;
    struct cpu io, in;
    struct fault f;
    uint8_t b[5];
    uint64_t v;
    int sig;

    op_bad = 0;
    for (unsigned w = 0; w < 2; w++) {
        for (unsigned r = 0; r < 16; r++) {
            for (unsigned i = 0; i < 16; i++) {
                in.r[i] = junk_reg(i);
            }
            in.r[r] = OP_CB;
            in.flags = FLAGS_IN;
            io = in;
            b[0] = 0x8f;
            b[1] = (r & 8 ? 0 : 0x20) | 0xc0 | 9;
            b[2] = w << 7 | 0x78;
            b[3] = 0x12;
            b[4] = 0xc0 | (r & 7);
            lwp_off();
            lwpcb_init(cb, ring, OP_RING_SIZE, 0);
            sig = run_one(b, 5, &io, &f);
            n++;
            v = 0;
            if (!sig) {
                try_slwpcb(&v);
            }
            if (sig || v != OP_CB) {
                op_fail(b, "LLWPCB r%u W=%u: expected LWPCB 0x%llx, got %s, "
                        "SLWPCB 0x%llx", r, w, (unsigned long long)OP_CB,
                        signame(sig), (unsigned long long)v);
            }
            /* SLWPCB into register r, LWP enabled */
            for (unsigned i = 0; i < 16; i++) {
                in.r[i] = junk_reg(i);
            }
            io = in;
            b[4] = 0xc8 | (r & 7);
            sig = run_one(b, 5, &io, &f);
            n++;
            for (unsigned i = 0; i < 16 && !sig; i++) {
                uint64_t want = i == r ? OP_CB : in.r[i];

                if (io.r[i] != want) {
                    op_fail(b, "SLWPCB r%u W=%u: expected r%u = 0x%llx, got "
                            "0x%llx", r, w, i, (unsigned long long)want,
                            (unsigned long long)io.r[i]);
                    break;
                }
            }
            if (sig) {
                op_fail(b, "SLWPCB r%u W=%u: got %s", r, w, signame(sig));
            }
        }
    }
    lwp_off();
    op_report(n, "64-bit LLWPCB/SLWPCB use the r/m register with XOP.B "
              "(every register, W 0 and 1; SLWPCB changes no other "
              "register)");
}

/* ---- legacy mode set-up -------------------------------------------------- */

/*
 * The LDT entry for the 32-bit code segment.  Linux takes a 16-byte
 * struct user_desc; upstream qemu-x86_64 (10.0) declares base_addr as
 * abi_ulong and so accepts only its own 24-byte layout (EINVAL for the
 * Linux one).  Try the Linux layout first, then QEMU's.
 */
struct qemu_user_desc {
    uint32_t entry_number;
    uint64_t base_addr;
    uint32_t limit;
    uint32_t flags;
};

static int setup_ldt(void)
{
    struct user_desc d;
    struct qemu_user_desc q;
    long r;

    memset(&d, 0, sizeof(d));
    d.entry_number = 0;
    d.base_addr = 0;
    d.limit = 0xfffff;
    d.seg_32bit = 1;
    d.contents = 2;             /* MODIFY_LDT_CONTENTS_CODE */
    d.read_exec_only = 0;
    d.limit_in_pages = 1;
    d.seg_not_present = 0;
    d.useable = 1;
    d.lm = 0;
    r = syscall(SYS_modify_ldt, 1, &d, sizeof(d));
    if (r != 0 && errno == EINVAL) {
        memset(&q, 0, sizeof(q));
        q.limit = 0xfffff;
        memcpy(&q.flags, (char *)&d + 12, 4);   /* the bit-field word */
        r = syscall(SYS_modify_ldt, 1, &q, sizeof(q));
        if (r == 0) {
            printf("note: modify_ldt accepted only QEMU's 24-byte "
                   "target_modify_ldt_ldt_s, not Linux's 16-byte "
                   "struct user_desc\n");
        }
    }
    if (r != 0) {
        report_skip("legacy mode: modify_ldt(1) failed (%s): the emulator "
                    "cannot install a 32-bit code segment, legacy-mode "
                    "encodings not tested", strerror(errno));
        return 0;
    }
    return 1;
}

/* A 32-bit slot with just NOP: can we get into legacy mode and back? */
static int probe32_here(void)
{
    struct run_arg a;
    uint8_t *s = code;
    uint32_t p = (uint32_t)(uintptr_t)&xe32_exit_ptr;

    *s++ = 0x90;
    *s++ = 0xff;
    *s++ = 0x25;
    memcpy(s, &p, 4);
    a.slot = (uintptr_t)code;
    return guarded(run32, &a, NULL);
}

/*
 * Probe in a child first: upstream qemu-x86_64 is built with CODE64 fixed
 * to true, and entering a 32-bit code segment there trips an assertion
 * that aborts the whole emulator.
 */
static int probe32(void)
{
    pid_t pid;
    int st, sig;

    if ((uintptr_t)&xe32_exit_ptr >> 32 || (uintptr_t)xe_enter32 >> 32) {
        report_skip("legacy mode: the program is not loaded below 4 GiB");
        return 0;
    }
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        struct rlimit nocore = { 0, 0 };

        setrlimit(RLIMIT_CORE, &nocore);        /* no core of the abort */
        dup2(fd, 1);
        dup2(fd, 2);
        _exit(probe32_here());
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid) {
        report_skip("legacy mode: cannot fork the probe (%s)",
                    strerror(errno));
        return 0;
    }
    if (WIFSIGNALED(st)) {
        report_skip("legacy mode: the process died with signal %d on a far "
                    "call into a 32-bit LDT code segment (qemu-x86_64 has no "
                    "compatibility mode: its translator asserts CODE64); "
                    "legacy-mode encodings not tested here", WTERMSIG(st));
        return 0;
    }
    sig = WEXITSTATUS(st);
    if (sig) {
        report_skip("legacy mode: far call into the 32-bit LDT code segment "
                    "raised %s; legacy-mode encodings not tested",
                    signame(sig));
        return 0;
    }
    return probe32_here() == 0;
}

static void *map_fixed(uint64_t addr, size_t size, int prot)
{
    void *p = mmap((void *)(uintptr_t)addr, size, prot,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE |
                   MAP_NORESERVE, -1, 0);

    if (p != (void *)(uintptr_t)addr) {
        fprintf(stderr, "mmap at 0x%llx failed\n", (unsigned long long)addr);
        exit(2);
    }
    return p;
}

/* ---- the objdump cross-check --------------------------------------------- */

static int objdump_cls(const char *text, char *mn, size_t mnlen)
{
    static const char *const pfx[] = {
        "data16", "data32", "addr16", "addr32", "repz", "repnz", "rep",
        "lock", "cs", "ds", "es", "ss", "fs", "gs", "notrack", "bnd", NULL,
    };
    const char *p = text;

    for (;;) {
        size_t n = strcspn(p, " \t");
        int is_pfx = n >= 3 && !strncmp(p, "rex", 3);

        for (int i = 0; pfx[i] && !is_pfx; i++) {
            is_pfx = strlen(pfx[i]) == n && !strncmp(p, pfx[i], n);
        }
        if (!is_pfx || !p[n]) {
            snprintf(mn, mnlen, "%.*s", (int)n, p);
            break;
        }
        p += n;
        p += strspn(p, " \t");
    }
    if (!strcmp(mn, "(bad)")) {
        return K_UD;
    }
    for (int k = K_LLWPCB; k <= K_LWPVAL; k++) {
        if (!strcmp(mn, cls_name[k])) {
            return k;
        }
    }
    if (!strncmp(mn, "pop", 3)) {
        return K_POP;
    }
    return K_OTHER;
}

static void note_div(int cat, const struct cand *c, const char *text)
{
    struct tally *t = &tally[cat];
    char h[80];

    if (t->diverge < EXAMPLES) {
        hex(c, h);
        snprintf(t->div[t->diverge], sizeof(t->div[0]),
                 "[%s] spec: %s, objdump: '%s'", h, cls_name[c->cls], text);
    }
    t->diverge++;
}

/*
 * "   1a0:\tinsn": the hexadecimal address before the colon of an objdump
 * line (after leading blanks) in *addr, and *rest just after the colon;
 * 0 when the line does not start that way
 */
static int parse_objdump_addr(char *line, long *addr, char **rest)
{
    char *p = line + strspn(line, " \t");
    char *digits = p;
    long v = 0;

    for (; isxdigit((unsigned char)*p); p++) {
        v = v * 16 + (isdigit((unsigned char)*p) ? *p - '0'
                      : tolower((unsigned char)*p) - 'a' + 10);
    }
    if (p == digits || *p != ':') {
        return 0;
    }
    *addr = v;
    *rest = p + 1;
    return 1;
}

static int objdump_check(int m32)
{
    char path[] = "/tmp/xop-encoding-XXXXXX";
    char cmd[256], line[512];
    int fd = mkstemp(path);
    FILE *fp;
    uint8_t *buf;
    size_t size;
    char **text;
    int *dlen;
    long last = -1;

    gen(m32);
    size = ncands * SLOT;
    buf = malloc(size);
    text = calloc(ncands, sizeof(*text));
    dlen = calloc(ncands, sizeof(*dlen));
    if (fd < 0 || !buf || !text || !dlen) {
        perror("objdump_check");
        return 0;
    }
    memset(buf, 0x90, size);
    for (size_t i = 0; i < ncands; i++) {
        memcpy(buf + i * SLOT, cands[i].b, cands[i].len);
    }
    if (write(fd, buf, size) != (ssize_t)size) {
        perror("write");
        return 0;
    }
    close(fd);
    snprintf(cmd, sizeof(cmd), "objdump -D -b binary -m %s "
             "--no-show-raw-insn %s", m32 ? "i386" : "i386:x86-64", path);
    fp = popen(cmd, "r");
    if (!fp) {
        perror("popen");
        return 0;
    }
    while (fgets(line, sizeof(line), fp)) {
        char *colon;
        long addr;

        if (line[0] != ' ' || !parse_objdump_addr(line, &addr, &colon)) {
            continue;
        }
        colon += strspn(colon, " \t");
        colon[strcspn(colon, "\n")] = 0;
        if (last >= 0) {
            dlen[last / SLOT] = addr - last;
            last = -1;
        }
        if (addr % SLOT == 0 && addr / SLOT < (long)ncands) {
            text[addr / SLOT] = strdup(colon);
            last = addr;
        }
    }
    pclose(fp);
    unlink(path);

    tally_reset();
    for (size_t i = 0; i < ncands; i++) {
        struct cand *c = &cands[i];
        char mn[64] = "";
        int k;

        tally[c->cat].n++;
        if (!text[i]) {
            note_bad(c->cat, c, "objdump printed no instruction at the "
                     "encoding's first byte");
            continue;
        }
        k = objdump_cls(text[i], mn, sizeof(mn));
        if (k == c->cls) {
            if (k != K_UD && dlen[i] != c->len) {
                note_bad(c->cat, c, "objdump: '%s' is %d bytes, expected %d",
                         text[i], dlen[i], c->len);
            }
        } else if (c->cls == K_UD && lwp_ok_cls(k) &&
                   (c->cat == C_P66 || c->cat == C_PF2 || c->cat == C_PF3 ||
                    c->cat == C_PLOCK || c->cat == C_PREX ||
                    c->cat == C_LWPCB_L || c->cat == C_INS_L)) {
            note_div(c->cat, c, text[i]);       /* documented above */
        } else if (c->cls == K_UD && k == K_OTHER && c->cat == C_OTHER) {
            note_div(c->cat, c, text[i]);       /* TBM/XOP: documented */
        } else {
            note_bad(c->cat, c, "spec: %s, objdump: '%s'", cls_name[c->cls],
                     text[i]);
        }
        free(text[i]);
    }
    free(text);
    free(dlen);
    free(buf);
    tally_report(m32 ? "objdump -m i386 agrees with the spec" :
                 "objdump -m i386:x86-64 agrees with the spec",
                 m32 ? "objdump -m i386" : "objdump -m i386:x86-64", 1);
    return 1;
}

int main(int argc, char **argv)
{
    uint32_t a, b, c, d;
    int lwp, skip_other;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && !strcmp(argv[1], "--objdump")) {
        /* host-side: no LWP instruction is executed */
        objdump_check(0);
        objdump_check(1);
        return report_summary("xop-encoding --objdump");
    }

    install_altstack();
    install_fault_handlers(1);
    lwp = lwp_supported();
    __cpuid(0x80000001, a, b, c, d);
    /* ECX[11] XOP, ECX[21] TBM: then the other opcodes may be defined */
    skip_other = (c >> 11) & 1 || (c >> 21) & 1;
    printf("CPUID: LWP %s, XOP %u, TBM %u\n", lwp ? "supported" :
           "not supported (every LWP encoding must be #UD)",
           (c >> 11) & 1, (c >> 21) & 1);
    if (skip_other) {
        report_skip("the CPU has XOP or TBM: other XOP opcodes not checked");
    }

    map_fixed(DATA_LO, DATA_HI - DATA_LO, PROT_READ | PROT_WRITE);
    map_fixed(STACK32_BASE, STACK32_SIZE, PROT_READ | PROT_WRITE);

    gen(0);
    code = map_fixed(CODE_BASE, ncands * SLOT + 4096,
                     PROT_READ | PROT_WRITE | PROT_EXEC);
    lwp_off();
    exec_all(0, lwp, skip_other);
    if (lwp) {
        test_cb_operands();
        test_ins_operands(0, 0);
        if (lwp_available() & LWP_FEAT_VAL) {
            test_ins_operands(1, 1);
        } else {
            report_skip("64-bit LWPVAL operands: VAL not available");
        }
    }

    gen(1);
    if (setup_ldt() && probe32()) {
        exec_all(1, lwp, skip_other);
    }
    return report_summary("xop-encoding");
}
