/*
 * lwp-int: the threshold interrupt in qemu-x86_64, a SIGIO (spec 1.1
 * step 4, Table 6-1 Threshold; docs/implementation-choices.md row 42)
 *
 * A loop of four instructions runs with LWP counting Instructions
 * Retired every 10th instruction (EventInterval2 9), filtered by IP to
 * the loop (spec 6), so that the records are the loop's alone (the SIGIO
 * handler runs with LWP disabled, choice 43).  The handler drains the
 * ring (BufferTailOffset = BufferHeadOffset), so each crossing of the
 * threshold is a new one.
 * Checked, from the spec:
 *   - with INT enabled and Threshold = 4 records: one SIGIO per 4
 *     records, each with si_code POLL_IN and si_band POLLIN|POLLRDNORM,
 *     arriving when the space used is exactly the threshold and at the
 *     instruction that follows the one the last record names;
 *   - Threshold 0: one SIGIO per record;
 *   - no SIGIO without INT in Flags, with Threshold > BufferSize, or
 *     when LWP_CFG lacks INT (run under -lwp-int: LLWPCB clears it);
 *   - the SIGIO is an asynchronous signal, as the kernel's for a ring
 *     buffer: while the thread blocks it, it stays pending (it does not
 *     kill the process), and the 40 crossings made meanwhile deliver one
 *     SIGIO when it is unblocked (a standard signal is pending once).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "lwp-test.h"

#include <inttypes.h>

#include "lwp-int.h"

/*
 * int_block(lwpcb, trips): LLWPCB, the loop, LLWPCB 0.  The labels name
 * the loop's instructions, so the next instruction after each is known.
 */
asm(".text\n"
    ".globl int_block, int_l0, int_l1, int_l2, int_l3, int_l4\n"
    "int_block:\n"
    "    llwpcb %rdi\n"
    "    mov %rsi, %rcx\n"
    "int_l0: add $1, %rax\n"
    "int_l1: add $2, %rdx\n"
    "int_l2: dec %rcx\n"
    "int_l3: jnz int_l0\n"
    "int_l4: xor %edi, %edi\n"
    "    llwpcb %rdi\n"
    "    ret\n");

#define RING_SIZE (64 * LT_REC)
#define MAX_SIGS 4096

static uint8_t *cb, *ring;
static volatile int nsig;       /* written by the SIGIO handler */
static int bad_code, bad_used, bad_rip;
static uint32_t threshold, drained;
static uint64_t last_bad_rip, last_bad_ip;

/* The instruction after the one at @ip, given where execution went */
static uintptr_t next_insn(uintptr_t ip, uintptr_t rip)
{
    if (ip == (uintptr_t)int_l0) {
        return (uintptr_t)int_l1;
    }
    if (ip == (uintptr_t)int_l1) {
        return (uintptr_t)int_l2;
    }
    if (ip == (uintptr_t)int_l2) {
        return (uintptr_t)int_l3;
    }
    /* JNZ: taken or not */
    return rip == (uintptr_t)int_l4 ? (uintptr_t)int_l4 : (uintptr_t)int_l0;
}

static void on_sigio(int sig, siginfo_t *si, void *uc_)
{
    ucontext_t *uc = uc_;
    uint32_t head = rd32(cb, LWPCB_HEAD);
    uint32_t tail = rd32(cb, LWPCB_TAIL);
    uint32_t used = (head + RING_SIZE - tail) % RING_SIZE;
    uint32_t last = (head + RING_SIZE - LT_REC) % RING_SIZE;
    uintptr_t rip = uc->uc_mcontext.gregs[REG_RIP];
    uint64_t ip = rd64(ring + last, LWP_REC_IP);

    (void)sig;
    nsig++;
    if (si->si_code != 1 || si->si_band != 0x41) {  /* POLL_IN */
        bad_code++;
    }
    /* Threshold 0: "an interrupt ... every time an event record is stored" */
    if (used != (threshold ? threshold : LT_REC)) {
        bad_used++;
    }
    if (rip != next_insn(ip, rip)) {
        bad_rip++;
        last_bad_rip = rip;
        last_bad_ip = ip;
    }
    drained += used / LT_REC;
    wr32(cb, LWPCB_TAIL, head);
}

/*
 * Run the loop with IRE every 10th instruction and INT as asked; returns
 * the number of records stored (drained plus left in the ring).
 */
static uint32_t run(uint32_t flags, uint32_t thr, uint64_t trips)
{
    lwpcb_init_ire_in(cb, ring, RING_SIZE, flags, thr, (uintptr_t)int_l0,
                      (uintptr_t)int_l3, 9);
    threshold = thr;
    nsig = 0;
    drained = 0;
    bad_code = bad_used = bad_rip = 0;
    int_block(cb, trips);
    return drained + (rd32(cb, LWPCB_HEAD) + RING_SIZE -
                      rd32(cb, LWPCB_TAIL)) % RING_SIZE / LT_REC;
}

int main(void)
{
    uint32_t avail = lwp_available();
    uint32_t need = LWP_FEAT_AVAIL | LWP_FEAT_IRE;
    struct sigaction sa = { .sa_sigaction = on_sigio,
                            .sa_flags = SA_SIGINFO };
    uint32_t recs;
    uint32_t cpuid_ecx = lwp_cpuid_ecx();
    sigset_t io, old;
    int blocked;

    if ((avail & need) != need || !(cpuid_ecx & LWP_CAP_IP_FILTERING)) {
        report_skip("this CPU has no IRE or no IP filtering (EAX 0x%x, "
                    "ECX 0x%x)", avail, cpuid_ecx);
        return report_summary("lwp-int");
    }
    cb = page_alloc(4096);
    ring = page_alloc(RING_SIZE);
    sigaction(SIGIO, &sa, NULL);

    if (avail & LWP_FEAT_INT) {
        /* 2000 trips: 8000 instructions, 800 records */
        recs = run(LWP_FEAT_IRE | LWP_FEAT_INT, 4 * LT_REC, 2000);
        report(recs == 800, "IRE every 10th of 8000 instructions stores 800 "
               "records (got %u)", recs);
        report(nsig == 200, "Threshold 4 records, drained at each SIGIO: "
               "one SIGIO per 4 records, 200 (got %d)", nsig);
        report(!bad_code, "every SIGIO has si_code POLL_IN and si_band "
               "POLLIN|POLLRDNORM (%d did not)", bad_code);
        report(!bad_used, "every SIGIO arrives when the space used is "
               "exactly the threshold (%d did not)", bad_used);
        report(!bad_rip, "every SIGIO arrives at the instruction after the "
               "one the last record names (%d did not; last: RIP 0x%" PRIx64
               " after a record at 0x%" PRIx64 ")", bad_rip, last_bad_rip,
               last_bad_ip);

        recs = run(LWP_FEAT_IRE | LWP_FEAT_INT, 0, 100);
        report(recs == 40 && nsig == 40 && !bad_code && !bad_used &&
               !bad_rip, "Threshold 0: one SIGIO per record, right after "
               "it (records %u, SIGIOs %d, bad %d/%d/%d)", recs, nsig,
               bad_code, bad_used, bad_rip);

        sigemptyset(&io);
        sigaddset(&io, SIGIO);
        sigprocmask(SIG_BLOCK, &io, &old);
        recs = run(LWP_FEAT_IRE | LWP_FEAT_INT, 0, 100);
        blocked = nsig;
        sigprocmask(SIG_SETMASK, &old, NULL);
        report(recs == 40 && blocked == 0 && nsig == 1 && !bad_code,
               "SIGIO blocked: Threshold 0, 40 records, no SIGIO while "
               "blocked, one with POLL_IN once unblocked (SIGIOs %d "
               "blocked, %d in all)", blocked, nsig);

        recs = run(LWP_FEAT_IRE | LWP_FEAT_INT, RING_SIZE + LT_REC, 100);
        report(recs == 40 && nsig == 0, "Threshold > BufferSize: never a "
               "SIGIO (records %u, SIGIOs %d)", recs, nsig);
    } else {
        recs = run(LWP_FEAT_IRE | LWP_FEAT_INT, 0, 100);
        report(!(rd32(cb, LWPCB_FLAGS) & LWP_FEAT_INT),
               "INT not available: LLWPCB clears it from Flags (0x%x)",
               rd32(cb, LWPCB_FLAGS));
        report(recs == 40 && nsig == 0, "INT not available in LWP_CFG: no "
               "SIGIO, even at Threshold 0 (records %u, SIGIOs %d)", recs,
               nsig);
    }
    recs = run(LWP_FEAT_IRE, 0, 100);
    report(recs == 40 && nsig == 0, "INT not in Flags: no SIGIO, even at "
           "Threshold 0 (records %u, SIGIOs %d)", recs, nsig);
    return report_summary("lwp-int");
}
