/*
 * The LWP instructions of the legacy-mode tests, as raw bytes, and the
 * code that runs them (lwp32-insns.S).  Included by lwp32-insns.S, which
 * assembles every entry of LWP32_SNIPPETS, and by lwp32.c.
 *
 * XOP (AMD LWP spec 43724, 5.1-5.4): 8F, then R'X'B'.mmmmm (R, X, B
 * inverted in bits 7:5, map in 4:0), then W.vvvv'.L.pp (vvvv inverted in
 * bits 6:3), then opcode 12, ModRM, [SIB, displacement], [imm32 in map
 * 0Ah].  LLWPCB is map 9 /0, SLWPCB map 9 /1 (both mod = 11b, vvvv' =
 * 1111b), LWPINS map 0Ah /0 and LWPVAL map 0Ah /1.  Names say what differs
 * from the plain form.  "vvvv'" below is the field as stored (inverted).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef LWP32_H
#define LWP32_H

/* The immediate of every LWPINS and LWPVAL here: Flags = its low 16 bits */
#define LWP_IMM         0xa5c31234

/*
 * X(name, bytes...) is one instruction; XI(name, bytes...) is followed by
 * the imm32 LWP_IMM.  The vvvv register of LWPINS and LWPVAL is EDX
 * (vvvv' = 1101b, byte 0x68) unless the name says otherwise; their r/m
 * operand is ECX (ModRM C1, C9) or the memory operand in the name.
 */
#define LWP32_SNIPPETS(X, XI)                                                 \
    /* LLWPCB EAX: E9 = R'X'B' 111, map 9; 78 = W0 vvvv' 1111 L0 pp 00 */     \
    X(llwpcb_eax, 0x8f, 0xe9, 0x78, 0x12, 0xc0)                               \
    /* SLWPCB EAX: ModRM C8 = 11 001 000 */                                   \
    X(slwpcb_eax, 0x8f, 0xe9, 0x78, 0x12, 0xc8)                               \
    /* vvvv' = 0111b (38): the top bit of vvvv set, #UD */                    \
    X(llwpcb_vvvv0111, 0x8f, 0xe9, 0x38, 0x12, 0xc0)                          \
    /* BOUND EAX, [ECX] (62 /r, ModRM 01): not LWP, a load in a helper */     \
    X(bound_eax_mecx, 0x62, 0x01)                                             \
    X(slwpcb_vvvv0111, 0x8f, 0xe9, 0x38, 0x12, 0xc8)                          \
    /* vvvv' = 1110b (70): the bottom bit of vvvv set, #UD */                 \
    X(llwpcb_vvvv1110, 0x8f, 0xe9, 0x70, 0x12, 0xc0)                          \
    X(slwpcb_vvvv1110, 0x8f, 0xe9, 0x70, 0x12, 0xc8)                          \
    /* W = 1 (F8) */                                                          \
    X(llwpcb_w1, 0x8f, 0xe9, 0xf8, 0x12, 0xc0)                                \
    X(slwpcb_w1, 0x8f, 0xe9, 0xf8, 0x12, 0xc8)                                \
    /* EBX (C3, CB) with R'X'B' = 000 (09): R11 in 64-bit mode */             \
    X(llwpcb_rxb000, 0x8f, 0x09, 0x78, 0x12, 0xc3)                            \
    X(slwpcb_rxb000, 0x8f, 0x09, 0x78, 0x12, 0xcb)                            \
    /* mod = 00b ([EAX]), #UD */                                              \
    X(llwpcb_mem, 0x8f, 0xe9, 0x78, 0x12, 0x00)                               \
    X(slwpcb_mem, 0x8f, 0xe9, 0x78, 0x12, 0x08)                               \
    /* L = 1 (7C), pp = 01b (79), ModRM.reg = 2 (D0), 66h prefix: #UD */      \
    X(llwpcb_l1, 0x8f, 0xe9, 0x7c, 0x12, 0xc0)                                \
    X(llwpcb_pp01, 0x8f, 0xe9, 0x79, 0x12, 0xc0)                              \
    X(xop9_12_reg2, 0x8f, 0xe9, 0x78, 0x12, 0xd0)                             \
    X(llwpcb_p66, 0x66, 0x8f, 0xe9, 0x78, 0x12, 0xc0)                         \
    /* LWPINS EDX, ECX, imm32: EA = R'X'B' 111, map 0Ah; ModRM C1 */          \
    XI(lwpins_ecx, 0x8f, 0xea, 0x68, 0x12, 0xc1)                              \
    /* LWPVAL EDX, ECX, imm32: ModRM C9 = 11 001 001 */                       \
    XI(lwpval_ecx, 0x8f, 0xea, 0x68, 0x12, 0xc9)                              \
    /* vvvv' = 0101b (28): EDX, or R10 in 64-bit mode */                      \
    XI(lwpins_vvvv0101, 0x8f, 0xea, 0x28, 0x12, 0xc1)                         \
    XI(lwpval_vvvv0101, 0x8f, 0xea, 0x28, 0x12, 0xc9)                         \
    /* vvvv' = 1111b (78) and 0111b (38): EAX, or R8 in 64-bit mode */        \
    XI(lwpins_vvvv1111, 0x8f, 0xea, 0x78, 0x12, 0xc1)                         \
    XI(lwpins_vvvv0111, 0x8f, 0xea, 0x38, 0x12, 0xc1)                         \
    /* W = 1 (E8) */                                                          \
    XI(lwpins_w1, 0x8f, 0xea, 0xe8, 0x12, 0xc1)                               \
    XI(lwpval_w1, 0x8f, 0xea, 0xe8, 0x12, 0xc9)                               \
    /* R'X'B' = 000 (0A): ECX would be R9 in 64-bit mode */                   \
    XI(lwpins_rxb000, 0x8f, 0x0a, 0x68, 0x12, 0xc1)                           \
    XI(lwpval_rxb000, 0x8f, 0x0a, 0x68, 0x12, 0xc9)                           \
    /* R'X'B' = 000, [EBX + ESI * 4]: 04 = 00 000 100, SIB B3 = 10 110 011 */ \
    XI(lwpins_rxb000_sib, 0x8f, 0x0a, 0x68, 0x12, 0x04, 0xb3)                 \
    /* [EBX + 10h]: 43 = 01 000 011 */                                        \
    XI(lwpins_ebx_d8, 0x8f, 0xea, 0x68, 0x12, 0x43, 0x10)                     \
    /* [EBX + ESI * 4 + 100h]: 84 = 10 000 100, SIB B3 */                     \
    XI(lwpins_sib_d32, 0x8f, 0xea, 0x68, 0x12, 0x84, 0xb3, 0x00, 0x01, 0x00,  \
      0x00)                                                                   \
    /* [ESI * 8 + 100h]: 04, SIB F5 = 11 110 101 (no base) */                 \
    XI(lwpins_sib_nobase, 0x8f, 0xea, 0x68, 0x12, 0x04, 0xf5, 0x00, 0x01,     \
      0x00, 0x00)                                                             \
    /* [100h]: 05 = 00 000 101 */                                             \
    XI(lwpins_d32, 0x8f, 0xea, 0x68, 0x12, 0x05, 0x00, 0x01, 0x00, 0x00)      \
    /* [EBP + 8], SS by default: 45 = 01 000 101 */                           \
    XI(lwpins_ebp_d8, 0x8f, 0xea, 0x68, 0x12, 0x45, 0x08)                     \
    /* 67h: [BX + SI] (00), [BX + SI + 10h] (40), [BP + DI + 8] (43, SS) */   \
    XI(lwpins_a16_bx_si, 0x67, 0x8f, 0xea, 0x68, 0x12, 0x00)                  \
    XI(lwpins_a16_bx_si_d8, 0x67, 0x8f, 0xea, 0x68, 0x12, 0x40, 0x10)         \
    XI(lwpins_a16_bp_di_d8, 0x67, 0x8f, 0xea, 0x68, 0x12, 0x43, 0x08)         \
    /* 67h: [100h] (06 = 00 000 110, disp16) */                               \
    XI(lwpins_a16_d16, 0x67, 0x8f, 0xea, 0x68, 0x12, 0x06, 0x00, 0x01)        \
    /* Segment overrides FS, ES, SS: [EBX] (03 = 00 000 011) */               \
    XI(lwpins_fs_ebx, 0x64, 0x8f, 0xea, 0x68, 0x12, 0x03)                     \
    XI(lwpins_es_ebx, 0x26, 0x8f, 0xea, 0x68, 0x12, 0x03)                     \
    XI(lwpins_ss_ebx, 0x36, 0x8f, 0xea, 0x68, 0x12, 0x03)                     \
    /* GS and 67h: GS:[BX + SI] */                                            \
    XI(lwpins_gs_a16_bx_si, 0x65, 0x67, 0x8f, 0xea, 0x68, 0x12, 0x00)         \
    /* LWPVAL [EBX + 10h] (4B = 01 001 011), SIB + disp32 (8C, B3) */         \
    XI(lwpval_ebx_d8, 0x8f, 0xea, 0x68, 0x12, 0x4b, 0x10)                     \
    XI(lwpval_sib_d32, 0x8f, 0xea, 0x68, 0x12, 0x8c, 0xb3, 0x00, 0x01, 0x00,  \
      0x00)                                                                   \
    /* LWPVAL [EBP + 8] (4D = 01 001 101, SS), 67h [BX + SI] (08) */          \
    XI(lwpval_ebp_d8, 0x8f, 0xea, 0x68, 0x12, 0x4d, 0x08)                     \
    XI(lwpval_a16_bx_si, 0x67, 0x8f, 0xea, 0x68, 0x12, 0x08)                  \
    /* LWPVAL FS:[EBX] (0B = 00 001 011) */                                   \
    XI(lwpval_fs_ebx, 0x64, 0x8f, 0xea, 0x68, 0x12, 0x0b)                     \
    /* LWPINS after 66h, F2h, F3h, F0h (LOCK); L = 1 (6C); pp = 01b (69) */   \
    XI(lwpins_p66, 0x66, 0x8f, 0xea, 0x68, 0x12, 0xc1)                        \
    XI(lwpins_pf2, 0xf2, 0x8f, 0xea, 0x68, 0x12, 0xc1)                        \
    XI(lwpins_pf3, 0xf3, 0x8f, 0xea, 0x68, 0x12, 0xc1)                        \
    XI(lwpins_lock, 0xf0, 0x8f, 0xea, 0x68, 0x12, 0xc1)                       \
    XI(lwpins_l1, 0x8f, 0xea, 0x6c, 0x12, 0xc1)                               \
    XI(lwpins_pp01, 0x8f, 0xea, 0x69, 0x12, 0xc1)                             \
    /* POP EAX (8F C0): map field 0 < 8, so not XOP */                        \
    X(pop_eax, 0x8f, 0xc0)                                                    \
    /* XSAVE SS:[EBX] (0F AE /4), XRSTOR SS:[EBX] (0F AE /5) */               \
    X(xsave_ss_ebx, 0x36, 0x0f, 0xae, 0x23)                                   \
    X(xrstor_ss_ebx, 0x36, 0x0f, 0xae, 0x2b)

/* Offsets in struct insn_regs */
#define R_EAX       0
#define R_EBX       4
#define R_ECX       8
#define R_EDX       12
#define R_ESI       16
#define R_EDI       20
#define R_EBP       24
#define R_DS        28
#define R_ES        32
#define R_FS        36
#define R_GS        40
#define R_EFLAGS    44

#ifndef __ASSEMBLER__
#include "libcflat.h"

struct insn_regs {
    u32 eax, ebx, ecx, edx, esi, edi, ebp;
    u32 ds, es, fs, gs;                 /* selectors */
    u32 eflags;                         /* out */
};

/*
 * Run the snippet @insn with the registers of @r, CF = 1 and the other
 * arithmetic flags clear; store the registers and EFLAGS afterwards into
 * @r.  Returns the vector of the exception it raised (exception_vec), or
 * 0.  The caller's segment registers are restored either way.  Works at
 * CPL0 and CPL3.
 */
int run_insn(const u8 *insn, struct insn_regs *r);
/* lwp32-insns.S: the straight-line code of test_flush */
extern const u8 flush32_seq[];

#define DECLARE_SNIPPET(name, ...) \
    extern const u8 name[];
LWP32_SNIPPETS(DECLARE_SNIPPET, DECLARE_SNIPPET)

/*
 * Virtual-8086 mode code (16-bit), to be copied below 1 MiB.  Each entry
 * point is followed by HLT, which raises #GP at IOPL 0.
 */
extern const u8 vm86_code[], vm86_code_end[];
extern const u8 vm86_pop_hlt[], vm86_hlt[], vm86_llwpcb[], vm86_slwpcb[],
    vm86_llwpcb_rxb000[], vm86_lwpins[], vm86_lwpval[];
#endif

#endif
