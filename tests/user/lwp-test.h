/*
 * Helpers shared by the user-mode LWP guest tests in tests/user
 *
 * kvm-unit-tests style: every check is one report() line whose message
 * states the expected behaviour; the program ends with one summary line
 * "NAME: N passed, N failed" and exits 1 when anything failed.  run.sh adds
 * up the PASS:/FAIL: lines of every program.
 *
 * Instructions that may fault run under guarded(): a SIGILL, SIGSEGV or
 * SIGBUS inside it is caught and reported through struct fault instead of
 * killing the program, so an emulator without LWP (SIGILL on every LWP
 * opcode) gives readable failures rather than a crash.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef LWP_TEST_H
#define LWP_TEST_H

#define _GNU_SOURCE
#include <cpuid.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <x86intrin.h>

#include "lwp/lwp-arch.h"

/* Not every program uses every helper */
#pragma GCC diagnostic ignored "-Wunused-function"

/* ---- reporting ---------------------------------------------------------- */

static int lt_passed, lt_failed, lt_skipped;
static const char *lt_prefix = "";

static void report_prefix(const char *p)
{
    lt_prefix = p;
}

__attribute__((format(printf, 2, 3)))
static int report(int ok, const char *fmt, ...)
{
    va_list ap;

    printf("%s: %s%s", ok ? "PASS" : "FAIL", lt_prefix, *lt_prefix ? ": " : "");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (ok) {
        lt_passed++;
    } else {
        lt_failed++;
    }
    return ok;
}

__attribute__((format(printf, 1, 2)))
static void report_skip(const char *fmt, ...)
{
    va_list ap;

    printf("SKIP: %s%s", lt_prefix, *lt_prefix ? ": " : "");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    lt_skipped++;
}

/* "NAME: N passed, N failed" (plus skips); exit status 1 on any failure */
static int report_summary(const char *name)
{
    printf("%s: %d passed, %d failed", name, lt_passed, lt_failed);
    if (lt_skipped) {
        printf(", %d skipped", lt_skipped);
    }
    printf("\n");
    fflush(stdout);
    return lt_failed ? 1 : 0;
}

/* ---- CPUID ---------------------------------------------------------------- */

static int lwp_supported(void)
{
    uint32_t a, b, c, d;

    __cpuid(0x80000000, a, b, c, d);
    if (a < LWP_CPUID_LEAF) {
        return 0;
    }
    __cpuid(0x80000001, a, b, c, d);
    return (c >> LWP_CPUID_EXT3_BIT) & 1;
}

/* CPUID 8000_001C EAX: the features LLWPCB may enable (spec 3.3) */
static uint32_t lwp_available(void)
{
    uint32_t a, b, c, d;

    if (!lwp_supported()) {
        return 0;
    }
    __cpuid(LWP_CPUID_LEAF, a, b, c, d);
    return a;
}

/* CPUID 8000_001C ECX: LwpIpFiltering and the other capabilities */
static uint32_t lwp_cpuid_ecx(void)
{
    uint32_t a, b, c, d;

    __cpuid(LWP_CPUID_LEAF, a, b, c, d);
    (void)a;
    (void)b;
    (void)d;
    return c;
}

/* ---- guarded execution ---------------------------------------------------- */

struct fault {
    int signo;          /* 0: no fault */
    int code;           /* si_code */
    uintptr_t addr;     /* si_addr */
    long trapno;        /* uc_mcontext REG_TRAPNO */
    long err;           /* uc_mcontext REG_ERR: #PF's error code */
    uintptr_t rip;      /* REG_RIP at the fault */
    uint64_t lwpcb;     /* the frame's LWPCBAddress: 0 with LWP disabled */
};

/*
 * LWPCBAddress in the LWP state (XSAVE component 62, Table 7-1) of a
 * signal frame: 0 when the frame has no XSAVE area or XSTATE_BV[62] is
 * clear (processor supplied values, 7.5).  The fxsave area's fx_sw bytes
 * (offset 464) start with FP_XSTATE_MAGIC1; XSTATE_BV is the first
 * quadword of the XSAVE header at 512; CPUID 0xD sub-leaf 62 EBX is the
 * component's offset.
 */
static uint64_t frame_lwpcb(const ucontext_t *uc)
{
    const uint8_t *fx = (const uint8_t *)uc->uc_mcontext.fpregs;
    uint32_t magic, a, b, c, d;
    uint64_t bv, addr;

    if (!fx) {
        return 0;
    }
    memcpy(&magic, fx + 464, 4);
    memcpy(&bv, fx + 512, 8);
    if (magic != FP_XSTATE_MAGIC1 || !((bv >> 62) & 1)) {
        return 0;
    }
    __cpuid_count(0xd, 62, a, b, c, d);
    (void)a;
    (void)c;
    (void)d;
    memcpy(&addr, fx + b, 8);
    return addr;
}

/*
 * A hook sees every SIGSEGV/SIGBUS/SIGILL first; returning non-zero resumes
 * the faulting instruction (page-fault restart tests).
 */
typedef int (*fault_hook_fn)(const struct fault *f);

static __thread sigjmp_buf *lt_guard;
static __thread struct fault lt_fault;
static __thread fault_hook_fn lt_hook;

static void lt_handler(int sig, siginfo_t *si, void *ctx)
{
    ucontext_t *uc = ctx;

    lt_fault.signo = sig;
    lt_fault.code = si->si_code;
    lt_fault.addr = (uintptr_t)si->si_addr;
    lt_fault.trapno = uc->uc_mcontext.gregs[REG_TRAPNO];
    lt_fault.err = uc->uc_mcontext.gregs[REG_ERR];
    lt_fault.rip = uc->uc_mcontext.gregs[REG_RIP];
    lt_fault.lwpcb = frame_lwpcb(uc);
    if (lt_hook && lt_hook(&lt_fault)) {
        return;
    }
    if (lt_guard) {
        siglongjmp(*lt_guard, 1);
    }
    /* not inside guarded(): report and stop instead of dumping core */
    printf("FAIL: %sunexpected signal %d (si_code %d, addr 0x%lx, rip 0x%lx) "
           "outside a guarded region\n", lt_prefix, sig, si->si_code,
           (unsigned long)lt_fault.addr, (unsigned long)lt_fault.rip);
    fflush(stdout);
    _exit(3);
}

static void install_fault_handlers(int on_altstack)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = lt_handler;
    sa.sa_flags = SA_SIGINFO | (on_altstack ? SA_ONSTACK : 0);
    sigemptyset(&sa.sa_mask);
    sigaction(SIGILL, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGTRAP, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);
}

/* A private signal stack, for code that runs with a junk %rsp */
static void install_altstack(void)
{
    stack_t ss;

    ss.ss_size = 1 << 16;
    ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ss.ss_flags = 0;
    if (ss.ss_sp == MAP_FAILED || sigaltstack(&ss, NULL)) {
        perror("sigaltstack");
        exit(2);
    }
}

/*
 * Run fn(arg); returns 0 if it completed, else the signal number (details
 * in *f when f is non-NULL).  The signal mask is restored on a fault.
 */
static int guarded(void (*fn)(void *), void *arg, struct fault *f)
{
    sigjmp_buf env;
    sigjmp_buf *volatile outer = lt_guard;
    int sig = 0;

    memset(&lt_fault, 0, sizeof(lt_fault));
    if (sigsetjmp(env, 1) == 0) {
        lt_guard = &env;
        fn(arg);
    } else {
        sig = lt_fault.signo;
    }
    lt_guard = outer;
    if (f) {
        *f = lt_fault;
        if (!sig) {
            memset(f, 0, sizeof(*f));
        }
    }
    return sig;
}

static const char *signame(int sig)
{
    switch (sig) {
    case 0:
        return "no fault";
    case SIGILL:
        return "SIGILL (#UD)";
    case SIGSEGV:
        return "SIGSEGV";
    case SIGBUS:
        return "SIGBUS";
    case SIGTRAP:
        return "SIGTRAP";
    case SIGFPE:
        return "SIGFPE";
    default:
        return "another signal";
    }
}

/* ---- the LWPCB and event records ------------------------------------------ */

static inline uint32_t rd32(const void *base, unsigned off)
{
    uint32_t v;

    memcpy(&v, (const char *)base + off, 4);
    return v;
}

static inline uint64_t rd64(const void *base, unsigned off)
{
    uint64_t v;

    memcpy(&v, (const char *)base + off, 8);
    return v;
}

static inline void wr32(void *base, unsigned off, uint32_t v)
{
    memcpy((char *)base + off, &v, 4);
}

static inline void wr64(void *base, unsigned off, uint64_t v)
{
    memcpy((char *)base + off, &v, 8);
}

#define LT_RING_MIN     1024u   /* 32 records: LwpMinBufferSize 1 */
#define LT_REC          LWP_EVENT_RECORD_SIZE

/* One record as read back from the ring (spec Figures 2-2 and 2-8) */
struct rec {
    uint8_t event_id;
    uint8_t core_id;
    uint16_t flags;
    uint32_t data1;
    uint64_t ip;
    uint64_t data2;
    uint64_t reserved;      /* bytes 31-24 */
};

static struct rec read_rec(const void *ring, uint32_t off)
{
    const char *p = (const char *)ring + off;
    struct rec r;

    r.event_id = p[LWP_REC_EVENT_ID];
    r.core_id = p[LWP_REC_CORE_ID];
    memcpy(&r.flags, p + LWP_REC_FLAGS, 2);
    r.data1 = rd32(p, LWP_REC_DATA1);
    r.ip = rd64(p, LWP_REC_IP);
    r.data2 = rd64(p, LWP_REC_DATA2);
    r.reserved = rd64(p, 24);
    return r;
}

/* Page-aligned, zeroed anonymous memory */
static void *page_alloc(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    return p;
}

/*
 * A zeroed LWPCB (one page) describing a ring of ring_size bytes, filled
 * with 0xA5 so that every byte a record writes can be seen.
 */
static void lwpcb_init(void *cb, void *ring, uint32_t ring_size,
                       uint32_t flags)
{
    memset(cb, 0, 4096);
    wr32(cb, LWPCB_FLAGS, flags);
    wr32(cb, LWPCB_BUFFER_SIZE, ring_size);
    wr64(cb, LWPCB_BUFFER_BASE, (uintptr_t)ring);
    memset(ring, 0xa5, ring_size);
}

/*
 * ... for Instructions Retired every (interval + 1)th instruction in
 * [base_ip, limit_ip] (the IP filter, spec 6), and the given Threshold
 */
static void lwpcb_init_ire_in(void *cb, void *ring, uint32_t ring_size,
                              uint32_t flags, uint32_t threshold,
                              uintptr_t base_ip, uintptr_t limit_ip,
                              uint32_t interval)
{
    uint32_t e = LWP_EVENT_OFFSET;

    lwpcb_init(cb, ring, ring_size, flags);
    wr32(cb, LWPCB_THRESHOLD, threshold);
    wr32(cb, LWPCB_FILTERS, LWP_FILTER_IPF);
    wr64(cb, LWPCB_BASE_IP, base_ip);
    wr64(cb, LWPCB_LIMIT_IP, limit_ip);
    wr32(cb, LWPCB_INTERVAL(e, LWP_EVENT_ID_IRE), interval);
    wr32(cb, LWPCB_COUNTER(e, LWP_EVENT_ID_IRE), interval);
}

/* ---- the instructions, guarded ---------------------------------------------- */

struct lt_op {
    void *cb;
    uint64_t out;
};

static void lt_do_llwpcb(void *arg)
{
    __llwpcb(((struct lt_op *)arg)->cb);
}

static void lt_do_slwpcb(void *arg)
{
    ((struct lt_op *)arg)->out = (uintptr_t)__slwpcb();
}

/* LLWPCB cb; returns the signal it raised, 0 if none */
static int try_llwpcb(void *cb, struct fault *f)
{
    struct lt_op op = { .cb = cb };

    return guarded(lt_do_llwpcb, &op, f);
}

/* SLWPCB; returns the signal it raised, 0 if none; *out = the register */
static int try_slwpcb(uint64_t *out)
{
    struct lt_op op = { .out = 0xdeadbeefdeadbeefull };
    int sig = guarded(lt_do_slwpcb, &op, NULL);

    *out = op.out;
    return sig;
}

/* LLWPCB 0: LWP off, whatever a failed test left behind */
static void lwp_off(void)
{
    try_llwpcb(NULL, NULL);
}

/*
 * LWPINS with the address of the instruction: ip receives the address of
 * label 1, the LWPINS itself; cf receives CF.  d1 may be a register or a
 * memory operand ("rm"), d2 a 64- (lwpins q) or 32-bit register.
 */
#define LWPINS64_AT(cf, ip, d2, d1, imm)                                    \
    __asm__ volatile("lea 1f(%%rip), %[ipr]\n\t"                            \
                     "1: lwpins %[i], %[a], %[b]\n\t"                       \
                     "setc %[c]"                                            \
                     : [c] "=qm"(cf), [ipr] "=&r"(ip)                       \
                     : [i] "i"(imm), [a] "rm"((uint32_t)(d1)),              \
                       [b] "r"((uint64_t)(d2))                              \
                     : "cc", "memory")

#define LWPINS32_AT(cf, ip, d2, d1, imm)                                    \
    __asm__ volatile("lea 1f(%%rip), %[ipr]\n\t"                            \
                     "1: lwpins %[i], %[a], %k[b]\n\t"                      \
                     "setc %[c]"                                            \
                     : [c] "=qm"(cf), [ipr] "=&r"(ip)                       \
                     : [i] "i"(imm), [a] "rm"((uint32_t)(d1)),              \
                       [b] "r"((uint64_t)(d2))                              \
                     : "cc", "memory")

/* The same with Data1 forced to a memory operand */
#define LWPINS64M_AT(cf, ip, d2, mem32, imm)                                \
    __asm__ volatile("lea 1f(%%rip), %[ipr]\n\t"                            \
                     "1: lwpins %[i], %[a], %[b]\n\t"                       \
                     "setc %[c]"                                            \
                     : [c] "=qm"(cf), [ipr] "=&r"(ip)                       \
                     : [i] "i"(imm), [a] "m"(mem32),                        \
                       [b] "r"((uint64_t)(d2))                              \
                     : "cc", "memory")

#define LWPVAL64M_AT(ip, d2, mem32, imm)                                    \
    __asm__ volatile("lea 1f(%%rip), %[ipr]\n\t"                            \
                     "1: lwpval %[i], %[a], %[b]"                           \
                     : [ipr] "=&r"(ip)                                      \
                     : [i] "i"(imm), [a] "m"(mem32),                        \
                       [b] "r"((uint64_t)(d2))                              \
                     : "memory")

#define LWPVAL64_AT(ip, d2, d1, imm)                                        \
    __asm__ volatile("lea 1f(%%rip), %[ipr]\n\t"                            \
                     "1: lwpval %[i], %[a], %[b]"                           \
                     : [ipr] "=&r"(ip)                                      \
                     : [i] "i"(imm), [a] "rm"((uint32_t)(d1)),              \
                       [b] "r"((uint64_t)(d2))                              \
                     : "memory")

#define LWPVAL32_AT(ip, d2, d1, imm)                                        \
    __asm__ volatile("lea 1f(%%rip), %[ipr]\n\t"                            \
                     "1: lwpval %[i], %[a], %k[b]"                          \
                     : [ipr] "=&r"(ip)                                      \
                     : [i] "i"(imm), [a] "rm"((uint32_t)(d1)),              \
                       [b] "r"((uint64_t)(d2))                              \
                     : "memory")

/*
 * Probe: does LLWPCB 0 execute?  Every LWP test program starts with it so
 * that an emulator without the instructions gives one clear message.
 */
static int lwp_insns_work(void)
{
    struct fault f;
    int sig = try_llwpcb(NULL, &f);

    return report(sig == 0, "LLWPCB with a register holding 0 executes "
                  "(expected no fault, got %s)", signame(sig));
}

#endif /* LWP_TEST_H */
