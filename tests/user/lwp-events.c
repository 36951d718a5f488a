/*
 * lwp-events: Instructions Retired and Branches Retired records of blocks
 * that exercise every branch kind
 *
 *   lwp-events [--native] [--block main|dense|sig|smc|val] [--trips N]
 *              [--val I[:C]] [--ire I[:C]] [--bre I[:C]]
 *              [--cnh I[:C]] [--rnh I[:C]]
 *              [--filters NCB,NRB,NAB,IPF,IPI]
 *              [--base SYM[+N]] [--limit SYM[+N]] [--ring BYTES]
 *
 * Sets up an LWPCB (Random 0, no threshold interrupt) with the events
 * asked for: EventInterval n = I and EventCounter n = C (C defaults to
 * I), Filters from the bit names, BaseIP and LimitIP from a label of the
 * blocks plus N bytes.  Then it runs one block of lwp-events.h, which
 * enables LWP with LLWPCB just before the label ev_X_start and disables it
 * with LLWPCB 0 at ev_X_stop, and prints what LWP left:
 *
 *   CPUID 8000001c EAX=a EBX=b ECX=c EDX=d
 *   FLAGS f FILTERS f BASEIP b LIMITIP l      (Flags as written back)
 *   EVENT n INTERVAL i COUNTER c              (n = 1..3, as written back)
 *   REC id core flags data1 ip data2 rsvd     (every record, in order)
 *   HEAD h
 *   MISSED m
 *
 * It checks nothing itself: events-check.py computes the expected output
 * from a trace of the same block run on the host CPU (native-trace.cc)
 * and GNU objdump's disassembly, and compares.
 *
 * --native runs the block on a CPU without LWP: a SIGILL handler steps
 * over the two LLWPCB instructions (and nothing else), so the host runs
 * exactly the instructions that qemu-x86_64 runs with LWP enabled.  The
 * program is static and not position-independent, so the addresses are
 * the same in both runs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <cpuid.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "lwp/lwp-arch.h"
#include "lwp-events.h"

/*
 * ev_main: one trip of the loop runs, in this order,
 *   Jcc rel8 and rel32 (taken or not, by trips % 4), JRCXZ and JECXZ
 *   (taken when trips is even), LOOP, LOOPE and LOOPNE (taken twice,
 *   then not taken), JMP rel8 and rel32, JMP through a register, through
 *   memory and through a jump table, CALL rel, CALL through a register
 *   and through memory, RET and RET imm16; then what is not a branch:
 *   RET far (lretq) and JMP far through memory to selector 0x33 (the
 *   64-bit user code segment of Linux and of qemu-x86_64), SYSCALL
 *   (getpid), and REP MOVSB/STOSB with 5, 7 and 0 iterations.
 * ev_ipf_a, ev_ipf_b and ev_ipf_c are in the middle of straight-line
 * code, so that a translation block straddles BaseIP or LimitIP.
 */
asm(".text\n"
    ".globl ev_main\n"
    "ev_main:\n"
    "    push %rbx\n"
    "    push %rbp\n"
    "    push %r12\n"
    "    push %r13\n"
    "    push %r14\n"
    "    push %r15\n"
    "    mov %rsi, %r12\n"
    "    llwpcb %rdi\n"
    ".globl ev_main_start\n"
    "ev_main_start:\n"
    "    xor %ebp, %ebp\n"
    ".Lmain_loop:\n"
    "    mov %r12, %rax\n"
    "    and $3, %eax\n"
    "    cmp $1, %eax\n"
    "    je .Lm1\n"
    "    add $1, %rbp\n"
    ".Lm1:\n"
    "    cmp $2, %eax\n"
    "    {disp32} jne .Lm2\n"
    "    add $2, %rbp\n"
    ".Lm2:\n"
    "    mov %r12, %rcx\n"
    "    and $1, %ecx\n"
    "    jrcxz .Lm3\n"
    "    add $3, %rbp\n"
    ".Lm3:\n"
    "    jecxz .Lm4\n"
    "    add $4, %rbp\n"
    ".Lm4:\n"
    "    add $1, %r8\n"
    "    add $2, %r9\n"
    ".globl ev_ipf_a\n"
    "ev_ipf_a:\n"
    "    lea 3(%r8), %r10\n"
    "    imul $5, %r9, %r11\n"
    "    add %r10, %r11\n"
    "    mov $3, %ecx\n"
    ".Lm5:\n"
    "    loop .Lm5\n"
    "    mov $3, %ecx\n"
    "    xor %edx, %edx\n"
    ".Lm6:\n"
    "    loope .Lm6\n"
    "    mov $4, %ecx\n"
    ".Lm7:\n"
    "    cmp $2, %ecx\n"
    "    loopne .Lm7\n"
    "    jmp .Lm8\n"
    "    ud2\n"
    ".Lm8:\n"
    "    {disp32} jmp .Lm9\n"
    "    ud2\n"
    ".Lm9:\n"
    "    lea .Lm10(%rip), %rax\n"
    "    jmp *%rax\n"
    "    ud2\n"
    ".Lm10:\n"
    "    jmp *ev_jmp_slot(%rip)\n"
    "    ud2\n"
    ".Lm11:\n"
    "    mov %r12, %rax\n"
    "    and $1, %eax\n"
    "    jmp *ev_jmp_table(,%rax,8)\n"
    ".Lm12:\n"
    "    add $7, %rbp\n"
    "    jmp .Lm14\n"
    ".Lm13:\n"
    "    sub $7, %rbp\n"
    ".Lm14:\n"
    "    add $3, %r8\n"
    "    add $4, %r9\n"
    ".globl ev_ipf_b\n"
    "ev_ipf_b:\n"
    "    lea 5(%r8), %r10\n"
    "    imul $3, %r9, %r11\n"
    "    add %r10, %r11\n"
    "    call ev_fn_ret\n"
    "    lea ev_fn_ret(%rip), %rax\n"
    "    call *%rax\n"
    "    call *ev_call_slot(%rip)\n"
    "    push %r12\n"
    "    call ev_fn_ret8\n"
    "    push $0x33\n"
    "    lea .Lm15(%rip), %rax\n"
    "    push %rax\n"
    "    lretq\n"
    "    ud2\n"
    ".Lm15:\n"
    "    ljmp *ev_far_ptr(%rip)\n"
    "    ud2\n"
    ".Lm16:\n"
    "    mov $39, %eax\n"
    "    syscall\n"
    "    lea ev_src(%rip), %rsi\n"
    "    lea ev_dst(%rip), %rdi\n"
    "    mov $5, %ecx\n"
    "    rep movsb\n"
    "    mov $7, %ecx\n"
    "    rep stosb\n"
    "    xor %ecx, %ecx\n"
    "    rep movsb\n"
    "    add $5, %r8\n"
    "    add $6, %r9\n"
    ".globl ev_ipf_c\n"
    "ev_ipf_c:\n"
    "    lea 7(%r8), %r10\n"
    "    add %r10, %r9\n"
    "    dec %r12\n"
    "    jnz .Lmain_loop\n"
    "    xor %eax, %eax\n"
    ".globl ev_main_stop\n"
    "ev_main_stop:\n"
    "    llwpcb %rax\n"
    "    pop %r15\n"
    "    pop %r14\n"
    "    pop %r13\n"
    "    pop %r12\n"
    "    pop %rbp\n"
    "    pop %rbx\n"
    "    ret\n"
    "ev_fn_ret:\n"
    "    ret\n"
    "ev_fn_ret8:\n"
    "    ret $8\n"
    ".data\n"
    ".balign 8\n"
    "ev_jmp_slot:\n"
    "    .quad .Lm11\n"
    "ev_jmp_table:\n"
    "    .quad .Lm12, .Lm13\n"
    "ev_call_slot:\n"
    "    .quad ev_fn_ret\n"
    "ev_far_ptr:\n"
    "    .long .Lm16\n"
    "    .word 0x33\n"
    ".bss\n"
    "ev_src:\n"
    "    .skip 64\n"
    "ev_dst:\n"
    "    .skip 64\n"
    ".text\n");

/*
 * ev_dense: only branches (JMP rel, CALL rel, RET, JMP through a
 * register, JRCXZ not taken, LOOP), so that an interval of 99999 stores
 * several records of both events within a trace short enough to be
 * single-stepped.
 */
asm(".text\n"
    ".globl ev_dense\n"
    "ev_dense:\n"
    "    mov %rsi, %rcx\n"
    "    lea .Ld3(%rip), %rdx\n"
    "    llwpcb %rdi\n"
    ".globl ev_dense_start\n"
    "ev_dense_start:\n"
    "    jmp .Ld2\n"
    ".Ld2:\n"
    "    call ev_fn_ret\n"
    "    jmp *%rdx\n"
    ".Ld3:\n"
    "    jrcxz .Ld4\n"
    "    loop ev_dense_start\n"
    ".Ld4:\n"
    "    xor %eax, %eax\n"
    ".globl ev_dense_stop\n"
    "ev_dense_stop:\n"
    "    llwpcb %rax\n"
    "    ret\n");

/*
 * ev_sig: each trip makes ev_sig_page read-only (mprotect, a SYSCALL) and
 * stores to it, then makes it inaccessible and jumps through it (to
 * .Lsig_next, whose address is in the page's second quadword): a branch
 * that faults.  ev_segv_handler makes the page writable again and
 * returns, and the store or the jump is restarted and retires.  The
 * handler runs with LWP disabled and rt_sigreturn restores LWP from the
 * frame (choice 43): nothing from the fault to the restart counts.
 */
asm(".text\n"
    ".globl ev_sig\n"
    "ev_sig:\n"
    "    push %r12\n"
    "    mov %rsi, %r12\n"
    "    mov ev_sig_page(%rip), %rax\n"
    "    lea .Lsig_next(%rip), %rcx\n"
    "    mov %rcx, 8(%rax)\n"
    "    llwpcb %rdi\n"
    ".globl ev_sig_start\n"
    "ev_sig_start:\n"
    ".Lsig_loop:\n"
    "    mov $10, %eax\n"
    "    mov ev_sig_page(%rip), %rdi\n"
    "    mov $4096, %esi\n"
    "    mov $1, %edx\n"
    "    syscall\n"
    "    mov ev_sig_page(%rip), %rdi\n"
    "    add $1, %r8\n"
    "    movl $1, (%rdi)\n"
    "    add $2, %r9\n"
    "    mov $10, %eax\n"
    "    mov $4096, %esi\n"
    "    xor %edx, %edx\n"
    "    syscall\n"
    "    mov ev_sig_page(%rip), %rdi\n"
    "    jmp *8(%rdi)\n"
    ".Lsig_next:\n"
    "    dec %r12\n"
    "    jnz .Lsig_loop\n"
    "    xor %eax, %eax\n"
    ".globl ev_sig_stop\n"
    "ev_sig_stop:\n"
    "    llwpcb %rax\n"
    "    pop %r12\n"
    "    ret\n"
    ".globl ev_segv_handler\n"
    "ev_segv_handler:\n"
    "    mov 16(%rsi), %rax\n"
    "    and $-4096, %rax\n"
    "    cmp ev_sig_page(%rip), %rax\n"
    "    jne .Lsig_bad\n"
    "    mov $10, %eax\n"
    "    mov ev_sig_page(%rip), %rdi\n"
    "    mov $4096, %esi\n"
    "    mov $3, %edx\n"
    "    syscall\n"
    "    ret\n"
    ".Lsig_bad:\n"
    "    sub $8, %rsp\n"
    "    mov %rsi, %rdi\n"
    "    call ev_unexpected_segv\n"
    "    ud2\n");

/*
 * ev_smc: each trip stores the trip count into the immediate of a MOV
 * further on, in the same translation block, and runs it: qemu-x86_64
 * invalidates the running TB at the store, and runs the store again as
 * a TB of its own (self-modifying code).  The length and kind of every
 * instruction stay what objdump shows.  main() makes the page writable.
 */
asm(".text\n"
    ".globl ev_smc\n"
    "ev_smc:\n"
    "    mov %rsi, %rcx\n"
    "    xor %edx, %edx\n"
    "    llwpcb %rdi\n"
    ".globl ev_smc_start\n"
    "ev_smc_start:\n"
    ".Lsmc_loop:\n"
    "    mov %ecx, .Lsmc_mov+1(%rip)\n"
    "    add $1, %r8\n"
    ".Lsmc_mov:\n"
    "    mov $0, %eax\n"
    "    add %eax, %edx\n"
    "    dec %ecx\n"
    "    jnz .Lsmc_loop\n"
    "    xor %eax, %eax\n"
    ".globl ev_smc_stop\n"
    "ev_smc_stop:\n"
    "    llwpcb %rax\n"
    "    mov %edx, ev_smc_sum(%rip)\n"
    "    ret\n");

/*
 * ev_val: straight-line code (no branch) with LWPVAL and LWPINS, whose
 * operands are constants set by MOV, so that events-check.py can model
 * it from objdump's disassembly alone.  Not run natively (LWPVAL and
 * LWPINS need LWP).  ev_val_mid is a label for BaseIP or LimitIP.
 */
asm(".text\n"
    ".globl ev_val\n"
    "ev_val:\n"
    "    push %rbx\n"
    "    mov $0x11111111, %ecx\n"
    "    movabs $0x2222222233333333, %rdx\n"
    "    mov $0x44444444, %esi\n"
    "    mov $-5, %r8\n"
    "    llwpcb %rdi\n"
    ".globl ev_val_start\n"
    "ev_val_start:\n"
    "    lwpval $0x1001, %ecx, %rdx\n"
    "    lwpval $0x1002, %esi, %edx\n"
    "    add $1, %rax\n"
    "    lwpval $0x11003, %r8d, %r8\n"
    "    lwpins $0x2001, %ecx, %rsi\n"
    "    lwpval $0x1004, %edx, %rcx\n"
    "    add $1, %rax\n"
    "    add $1, %rax\n"
    "    lwpval $0x1005, ev_val_data(%rip), %r8d\n"
    "    mov $0x55555555, %ecx\n"
    "    lwpval $0x1006, %ecx, %rsi\n"
    "    lwpval $0x1007, %ecx, %esi\n"
    "    lwpins $0x2002, %esi, %edx\n"
    "    add $1, %rax\n"
    "    lwpval $0x1008, %r8d, %rcx\n"
    "    add $1, %rax\n"
    ".globl ev_val_mid\n"
    "ev_val_mid:\n"
    "    lwpval $0x1009, %ecx, %rdx\n"
    "    lwpval $0x100a, %esi, %r8\n"
    "    lwpins $0x2003, %r8d, %rcx\n"
    "    lwpval $0x100b, %edx, %rdx\n"
    "    movabs $0x7777777788888888, %rdx\n"
    "    lwpval $0x100c, %edx, %rdx\n"
    "    add $1, %rax\n"
    "    add $1, %rax\n"
    "    add $1, %rax\n"
    "    lwpval $0x100d, %ecx, %esi\n"
    "    lwpval $0x100e, %esi, %rcx\n"
    "    add $1, %rax\n"
    "    lwpval $0x100f, ev_val_data(%rip), %rdx\n"
    "    lwpins $0x2004, ev_val_data(%rip), %r8\n"
    "    lwpval $0x1010, %r8d, %rsi\n"
    "    xor %eax, %eax\n"
    ".globl ev_val_stop\n"
    "ev_val_stop:\n"
    "    llwpcb %rax\n"
    "    pop %rbx\n"
    "    ret\n"
    ".data\n"
    ".balign 4\n"
    "ev_val_data:\n"
    "    .long 0x5a5a1234\n"
    ".text\n");

void *ev_sig_page;
uint32_t ev_smc_sum;

void ev_unexpected_segv(void *info)
{
    siginfo_t *si = info;

    printf("FAIL: unexpected SIGSEGV (si_code %d, address %p)\n",
           si->si_code, si->si_addr);
    fflush(stdout);
    _exit(3);
}

/* --native: step over LLWPCB (8F RXB.09 W.1111.0.00 12 /0, mod 11) */
static void skip_llwpcb(int sig, siginfo_t *si, void *ctx)
{
    ucontext_t *uc = ctx;
    const uint8_t *p = (const uint8_t *)uc->uc_mcontext.gregs[REG_RIP];

    (void)sig;
    (void)si;
    if (p[0] == 0x8f && (p[1] & 0x1f) == 9 && (p[2] & 0x7f) == 0x78 &&
        p[3] == 0x12 && (p[4] & 0xf8) == 0xc0) {
        uc->uc_mcontext.gregs[REG_RIP] += 5;
        return;
    }
    printf("FAIL: SIGILL at %p, which is not LLWPCB\n", (const void *)p);
    fflush(stdout);
    _exit(3);
}

struct label {
    const char *name;
    const char *addr;
};

static const struct label labels[] = {
    { "ev_main_start", ev_main_start }, { "ev_main_stop", ev_main_stop },
    { "ev_dense_start", ev_dense_start },
    { "ev_dense_stop", ev_dense_stop },
    { "ev_sig_start", ev_sig_start }, { "ev_sig_stop", ev_sig_stop },
    { "ev_val_start", ev_val_start }, { "ev_val_stop", ev_val_stop },
    { "ev_smc_start", ev_smc_start }, { "ev_smc_stop", ev_smc_stop },
    { "ev_ipf_a", ev_ipf_a }, { "ev_ipf_b", ev_ipf_b },
    { "ev_ipf_c", ev_ipf_c }, { "ev_val_mid", ev_val_mid },
};

static void usage(void)
{
    fprintf(stderr,
            "usage: lwp-events [--native] [--block main|dense|sig|smc|val] "
            "[--trips N]\n"
            "       [--val I[:C]] [--ire I[:C]] [--bre I[:C]] "
            "[--cnh I[:C]] [--rnh I[:C]] "
            "[--filters NCB,NRB,NAB,IPF,IPI]\n"
            "       [--base SYM[+N]] [--limit SYM[+N]] [--ring BYTES]\n");
    exit(2);
}

/* A whole string as a number: decimal, 0x hexadecimal, 0 octal */
static long long number(const char *s)
{
    long long v;
    int n = 0;

    if (sscanf(s, "%lli%n", &v, &n) != 1 || s[n]) {
        usage();
    }
    return v;
}

/* SYM or SYM+N, SYM one of labels[] */
static uint64_t parse_label(const char *s)
{
    const char *plus = strchr(s, '+');
    size_t len = plus ? (size_t)(plus - s) : strlen(s);

    for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
        if (strlen(labels[i].name) == len &&
            !strncmp(labels[i].name, s, len)) {
            return (uintptr_t)labels[i].addr + (plus ? number(plus + 1) : 0);
        }
    }
    fprintf(stderr, "lwp-events: unknown label '%s'\n", s);
    exit(2);
}

/* I or I:C, signed (the checker also tries negative values) */
static void parse_event(const char *s, int32_t *interval, int32_t *counter)
{
    char *copy = strdup(s), *colon = strchr(copy, ':');

    if (colon) {
        *colon = 0;
    }
    *interval = (int32_t)number(copy);
    *counter = colon ? (int32_t)number(colon + 1) : *interval;
    free(copy);
}

static uint32_t parse_filters(const char *s)
{
    static const struct {
        const char *name;
        uint32_t bit;
    } names[] = {
        { "NCB", LWP_FILTER_NCB }, { "NRB", LWP_FILTER_NRB },
        { "NAB", LWP_FILTER_NAB }, { "IPF", LWP_FILTER_IPF },
        { "IPI", LWP_FILTER_IPI },
    };
    uint32_t f = 0;
    char *copy = strdup(s), *save = NULL;

    for (char *t = strtok_r(copy, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        size_t i;

        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            if (!strcmp(t, names[i].name)) {
                f |= names[i].bit;
                break;
            }
        }
        if (i == sizeof(names) / sizeof(names[0])) {
            fprintf(stderr, "lwp-events: unknown filter '%s'\n", t);
            exit(2);
        }
    }
    free(copy);
    return f;
}

static void *map(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    return p;
}

static void on_signal(int sig, void (*fn)(int, siginfo_t *, void *))
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL)) {
        perror("sigaction");
        exit(2);
    }
}

static void print_results(const uint8_t *cb, const uint8_t *ring)
{
    const uint32_t e = LWP_EVENT_OFFSET;
    uint32_t a, b, c, d, head;

    __cpuid(LWP_CPUID_LEAF, a, b, c, d);
    printf("CPUID 8000001c EAX=0x%08x EBX=0x%08x ECX=0x%08x EDX=0x%08x\n",
           a, b, c, d);
    printf("FLAGS 0x%08x FILTERS 0x%08x BASEIP 0x%" PRIx64
           " LIMITIP 0x%" PRIx64 "\n",
           *(const uint32_t *)(cb + LWPCB_FLAGS),
           *(const uint32_t *)(cb + LWPCB_FILTERS),
           *(const uint64_t *)(cb + LWPCB_BASE_IP),
           *(const uint64_t *)(cb + LWPCB_LIMIT_IP));
    for (unsigned n = 1; n <= 6; n++) {
        printf("EVENT %u INTERVAL 0x%08x COUNTER 0x%08x\n", n,
               *(const uint32_t *)(cb + LWPCB_INTERVAL(e, n)),
               *(const uint32_t *)(cb + LWPCB_COUNTER(e, n)));
    }
    head = *(const uint32_t *)(cb + LWPCB_HEAD);
    for (uint32_t off = 0; off < head; off += LWP_EVENT_RECORD_SIZE) {
        const uint8_t *r = ring + off;

        printf("REC %u %u 0x%04x 0x%08x 0x%" PRIx64 " 0x%" PRIx64
               " 0x%" PRIx64 "\n",
               r[LWP_REC_EVENT_ID], r[LWP_REC_CORE_ID],
               *(const uint16_t *)(r + LWP_REC_FLAGS),
               *(const uint32_t *)(r + LWP_REC_DATA1),
               *(const uint64_t *)(r + LWP_REC_IP),
               *(const uint64_t *)(r + LWP_REC_DATA2),
               *(const uint64_t *)(r + 24));
    }
    printf("HEAD %u\n", head);
    printf("MISSED %" PRIu64 "\n", *(const uint64_t *)(cb + LWPCB_MISSED));
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "native", no_argument, NULL, 'n' },
        { "block", required_argument, NULL, 'k' },
        { "trips", required_argument, NULL, 't' },
        { "val", required_argument, NULL, '1' },
        { "ire", required_argument, NULL, '2' },
        { "bre", required_argument, NULL, '3' },
        { "cnh", required_argument, NULL, '5' },
        { "rnh", required_argument, NULL, '6' },
        { "filters", required_argument, NULL, 'f' },
        { "base", required_argument, NULL, 'b' },
        { "limit", required_argument, NULL, 'l' },
        { "ring", required_argument, NULL, 'r' },
        { NULL, 0, NULL, 0 },
    };
    const uint32_t e = LWP_EVENT_OFFSET;
    int native = 0, opt;
    const char *block = "main";
    void (*fn)(void *, uint64_t) = ev_main;
    uint64_t trips = 1, base = 0, limit = 0;
    uint32_t flags = 0, filters = 0, ring_size = 1u << 24;
    int32_t interval[7] = { 0 }, counter[7] = { 0 };
    uint8_t *cb, *ring;

    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'n':
            native = 1;
            break;
        case 'k':
            block = optarg;
            break;
        case 't':
            trips = number(optarg);
            break;
        case '1':
        case '2':
        case '3':
        case '5':
        case '6':
            parse_event(optarg, &interval[opt - '0'], &counter[opt - '0']);
            flags |= 1u << (opt - '0');
            break;
        case 'f':
            filters = parse_filters(optarg);
            break;
        case 'b':
            base = parse_label(optarg);
            break;
        case 'l':
            limit = parse_label(optarg);
            break;
        case 'r':
            ring_size = number(optarg);
            break;
        default:
            usage();
        }
    }
    if (optind != argc || trips == 0) {
        usage();
    }
    if (!strcmp(block, "main")) {
        fn = ev_main;
    } else if (!strcmp(block, "dense")) {
        fn = ev_dense;
    } else if (!strcmp(block, "sig")) {
        fn = ev_sig;
        ev_sig_page = map(4096);
        on_signal(SIGSEGV, ev_segv_handler);
    } else if (!strcmp(block, "smc")) {
        uintptr_t page = (uintptr_t)ev_smc & -(uintptr_t)4096;

        fn = ev_smc;
        if (mprotect((void *)page, 2 * 4096,
                     PROT_READ | PROT_WRITE | PROT_EXEC)) {
            perror("mprotect");
            exit(2);
        }
    } else if (!strcmp(block, "val") && !native) {
        fn = ev_val;
    } else {
        usage();
    }

    cb = map(4096);
    ring = map(ring_size);
    memset(cb, 0, 4096);
    *(uint32_t *)(cb + LWPCB_FLAGS) = flags;
    *(uint32_t *)(cb + LWPCB_BUFFER_SIZE) = ring_size;
    *(uint64_t *)(cb + LWPCB_BUFFER_BASE) = (uintptr_t)ring;
    *(uint32_t *)(cb + LWPCB_FILTERS) = filters;
    *(uint64_t *)(cb + LWPCB_BASE_IP) = base;
    *(uint64_t *)(cb + LWPCB_LIMIT_IP) = limit;
    for (unsigned n = 1; n <= 6; n++) {
        uint32_t m = (1u << LWPCB_EVENT_VALUE_BITS) - 1;

        *(uint32_t *)(cb + LWPCB_INTERVAL(e, n)) = interval[n] & m;
        *(uint32_t *)(cb + LWPCB_COUNTER(e, n)) = counter[n] & m;
    }

    if (native) {
        on_signal(SIGILL, skip_llwpcb);
        fn(cb, trips);
        printf("NATIVE %s done\n", block);
        return 0;
    }
    fn(cb, trips);
    if (fn == ev_smc && ev_smc_sum != trips * (trips + 1) / 2) {
        /* the modified MOV ran as it was before the store */
        printf("SMC sum %u, expected %u\n", ev_smc_sum,
               (uint32_t)(trips * (trips + 1) / 2));
        return 1;
    }
    print_results(cb, ring);
    return 0;
}
