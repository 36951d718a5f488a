/*
 * lwp-trace: what a program sees of its LWP state, printed as the lines
 * the target/i386/tcg trace events must log for it (trace-check.py runs
 * it under qemu-x86_64 -d trace:lwp_* and compares).
 *
 * Every expected value comes from the program's own view: the LWPCB as
 * LLWPCB and SLWPCB leave it in memory (spec 5.1, 5.2: Flags read back,
 * BufferHeadOffset), BufferTailOffset as the SIGIO handler wrote it (the
 * tail LWP reads when the ring looks full to the threshold, 8.3), and
 * the address of the SIGSEGV that a record store into a read-only ring
 * page raises (si_addr).  The order of the lines is the program's order.
 *
 * Printed lines: "expect: EVENT ARGS" for each event, in order; then the
 * usual PASS/FAIL lines and summary (run.sh).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "lwp-test.h"

#include <inttypes.h>

#include "lwp-trace.h"

/*
 * trace_loop(trips): four instructions a trip; the IP filter keeps the
 * records to them (the SIGIO handler runs with LWP disabled, choice 43)
 */
asm(".text\n"
    ".globl trace_loop, trace_l0, trace_l3\n"
    "trace_loop:\n"
    "    mov %rdi, %rcx\n"
    "trace_l0: add $1, %rax\n"
    "    add $2, %rdx\n"
    "    dec %rcx\n"
    "trace_l3: jnz trace_l0\n"
    "    ret\n");

#define RING_SIZE (64 * LT_REC)
#define THRESHOLD (8 * LT_REC)

/*
 * XRSTOR of an image whose component 62 names LWPCB @cb and a ring at
 * @ring of @size bytes, which fails the check of spec 7.4 that @why
 * names: LWP stays disabled (SLWPCB 0), without a fault
 */
static void xrstor_off(void *cb, void *ring, uint32_t size, const char *why)
{
    static uint8_t xs[4096] __attribute__((aligned(64)));
    unsigned a, b, c, d;
    uint64_t bv = 1ull << 62;

    __cpuid_count(0xd, 62, a, b, c, d);
    (void)a;
    (void)c;
    (void)d;
    memset(xs, 0, sizeof(xs));
    memcpy(xs + 512, &bv, 8);
    wr64(xs + b, LWP_XS_CBADDR, (uintptr_t)cb);
    wr64(xs + b, LWP_XS_BUFFER_BASE, (uintptr_t)ring);
    wr32(xs + b, LWP_XS_BUFFER_SIZE, size);
    asm volatile("xrstor %0" : : "m"(xs), "a"(0), "d"(1u << 30) : "memory");
    report(__slwpcb() == NULL, "XRSTOR of LWPCB %p, ring %p of 0x%x bytes: "
           "LWP stays disabled, no fault", cb, ring, size);
    printf("expect: lwp_xrstor_off cpu 0 LWPCB 0x%" PRIxPTR ": %s\n",
           (uintptr_t)cb, why);
}
#define MAX_SIGS 256

static uint8_t *cb, *ring;
static volatile int nsig;   /* written by the SIGIO handler */
static uint32_t sig_head[MAX_SIGS], sig_tail[MAX_SIGS];
static uint32_t tail;

static void on_sigio(int sig, siginfo_t *si, void *uc)
{
    uint32_t head = rd32(cb, LWPCB_HEAD);

    (void)sig;
    (void)si;
    (void)uc;
    if (nsig < MAX_SIGS) {
        sig_head[nsig] = head;
        sig_tail[nsig] = tail;
    }
    nsig++;
    /* drain: the next crossing is a new one */
    tail = head;
    wr32(cb, LWPCB_TAIL, head);
}

/* the ring's page fault: make it writable and restart the store */
static int nsegv;
static uintptr_t segv_addr;
static long segv_err;

static int on_segv(const struct fault *f)
{
    if (f->signo != SIGSEGV || nsegv++) {
        return 0;
    }
    segv_addr = f->addr;
    segv_err = f->err;
    mprotect(ring, RING_SIZE, PROT_READ | PROT_WRITE);
    return 1;
}

/* The same for a ring page that is not mapped: map it again */
static int on_segv_unmapped(const struct fault *f)
{
    if (f->signo != SIGSEGV || nsegv++) {
        return 0;
    }
    segv_addr = f->addr;
    segv_err = f->err;
    mmap((void *)(f->addr & ~4095ul), 4096, PROT_READ | PROT_WRITE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    return 1;
}

int main(void)
{
    uint32_t need = LWP_FEAT_AVAIL | LWP_FEAT_IRE | LWP_FEAT_INT;
    struct sigaction sa = { .sa_sigaction = on_sigio,
                            .sa_flags = SA_SIGINFO };
    uint32_t flags, head;
    struct fault f;
    void *cur;
    int i;

    if ((lwp_available() & need) != need ||
        !(lwp_cpuid_ecx() & LWP_CAP_IP_FILTERING)) {
        report_skip("this CPU has no IRE, INT or IP filtering");
        return report_summary("lwp-trace");
    }
    cb = page_alloc(4096);
    ring = page_alloc(RING_SIZE);
    sigaction(SIGIO, &sa, NULL);

    /* 5.1: LLWPCB; the event: the LWPCB, Flags read back, the ring */
    lwpcb_init_ire_in(cb, ring, RING_SIZE, LWP_FEAT_IRE | LWP_FEAT_INT,
                      THRESHOLD, (uintptr_t)trace_l0, (uintptr_t)trace_l3, 9);
    __llwpcb(cb);
    flags = rd32(cb, LWPCB_FLAGS);
    printf("expect: lwp_llwpcb cpu 0 LWPCB 0x%" PRIxPTR " Flags 0x%x ring "
           "0x%" PRIx64 " size 0x%x\n", (uintptr_t)cb, flags,
           rd64(cb, LWPCB_BUFFER_BASE), rd32(cb, LWPCB_BUFFER_SIZE));

    /* 800 records, a SIGIO at each 8th: one event each, head and tail */
    trace_loop(2000);
    for (i = 0; i < nsig && i < MAX_SIGS; i++) {
        printf("expect: lwp_threshold cpu 0 BufferHeadOffset 0x%x tail "
               "0x%x\n", sig_head[i], sig_tail[i]);
    }
    report(nsig == 100, "800 records, Threshold 8 records, drained at each "
           "SIGIO: 100 SIGIOs (got %d)", nsig);

    /* 5.2: SLWPCB flushes BufferHeadOffset to the LWPCB */
    cur = __slwpcb();
    head = rd32(cb, LWPCB_HEAD);
    report(cur == cb, "SLWPCB returns the LWPCB");
    printf("expect: lwp_flush cpu 0 LWPCB 0x%" PRIxPTR " BufferHeadOffset "
           "0x%x\n", (uintptr_t)cb, head);

    /*
     * A record store into a read-only ring page faults: SIGSEGV at the
     * record's slot; the handler makes the page writable and LWPINS,
     * restarted, stores its record there
     */
    install_fault_handlers(0);
    lt_hook = on_segv;
    mprotect(ring, RING_SIZE, PROT_READ);
    __lwpins32(0x1234, 0x5678, 0x9a);
    lt_hook = NULL;
    report(nsegv == 1 && segv_addr == (uintptr_t)ring + head,
           "LWPINS with the ring read-only: one SIGSEGV, at the record's "
           "slot (%d, at 0x%" PRIxPTR ", slot 0x%" PRIxPTR ")", nsegv,
           segv_addr, (uintptr_t)ring + head);
    /* the frame's error code: present, write, user (SDM Vol. 3A 4.7) */
    report(segv_err == 7, "its error code P | W | U (got 0x%lx)", segv_err);
    printf("expect: lwp_fault cpu 0 0x%" PRIxPTR " len %u write 1 error "
           "code 0x%lx: raised\n", segv_addr, LT_REC, segv_err);
    report(ring[head + LWP_REC_EVENT_ID] == LWP_EVENT_ID_INS &&
           rd32(ring + head, LWP_REC_DATA1) == 0x5678,
           "LWPINS, restarted, stores its record in that slot (EventId %u)",
           ring[head + LWP_REC_EVENT_ID]);
    /* The same with the ring page unmapped: not present, write, user */
    __slwpcb();
    head = rd32(cb, LWPCB_HEAD);
    printf("expect: lwp_flush cpu 0 LWPCB 0x%" PRIxPTR " BufferHeadOffset "
           "0x%x\n", (uintptr_t)cb, head);
    nsegv = 0;
    lt_hook = on_segv_unmapped;
    munmap(ring + (head & ~4095u), 4096);
    __lwpins32(0x1234, 0x5678, 0x9a);
    lt_hook = NULL;
    report(nsegv == 1 && segv_addr == (uintptr_t)ring + head &&
           segv_err == 6, "LWPINS with its ring page unmapped: one SIGSEGV, "
           "at the record's slot, error code W | U (%d, at 0x%" PRIxPTR
           ", error code 0x%lx)", nsegv, segv_addr, segv_err);
    printf("expect: lwp_fault cpu 0 0x%" PRIxPTR " len %u write 1 error "
           "code 0x%lx: raised\n", segv_addr, LT_REC, segv_err);
    /*
     * Each signal delivered while LWP was on saved its state in the frame
     * and sigreturn restored it (the kernel's signal ABI, docs/linux.md):
     * the SIGIOs and the two SIGSEGVs
     */
    printf("expect-count: lwp_xsave 0x%" PRIxPTR " %d\n", (uintptr_t)cb,
           nsig + 2);
    printf("expect-count: lwp_xrstor 0x%" PRIxPTR " %d\n", (uintptr_t)cb,
           nsig + 2);

    /* LLWPCB 0 disables LWP */
    __llwpcb(NULL);
    printf("expect: lwp_llwpcb_disable cpu 0\n");
    report(__slwpcb() == NULL, "SLWPCB after LLWPCB 0 returns 0");

    /*
     * A ring of one record, below the 32 * LwpMinBufferSize records that
     * Table 6-1 requires: LLWPCB raises #GP (SIGSEGV, the kernel's
     * si_code for it), and the trace names the rule
     */
    wr32(cb, LWPCB_BUFFER_SIZE, LT_REC);
    i = try_llwpcb(cb, &f);
    report(i == SIGSEGV && f.code == SI_KERNEL,
           "LLWPCB with a ring of one record: #GP, SIGSEGV SI_KERNEL (got "
           "%s, code %d)", signame(f.signo), f.code);
    printf("expect: lwp_llwpcb_gp cpu 0 LWPCB 0x%" PRIxPTR ": BufferSize is "
           "below 32 * LwpMinBufferSize records (Table 6-1, BufferSize)\n",
           (uintptr_t)cb);

    /*
     * XRSTOR of component 62 images that each fail one check of spec 7.4
     * at CPL 3: LWP stays disabled, nothing faults, and the trace names
     * the check
     */
    xrstor_off(cb, ring, LT_REC, "BufferSize is below 32 * "
               "LwpMinBufferSize records (7.4 step 1)");
    xrstor_off((void *)0x8000000000000000ull, ring, RING_SIZE, "at CPL 3, "
               "the LWPCB is beyond the DS limit or not canonical (7.4 "
               "Check)");
    xrstor_off(cb, (void *)0x0000800000000000ull, RING_SIZE, "at CPL 3, "
               "the ring buffer is beyond the DS limit or not canonical "
               "(7.4 Check)");
    return report_summary("lwp-trace");
}
