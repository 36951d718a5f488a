/*
 * lwp-exits: a signal reaches a thread that spins in counted code
 *
 * Nothing that LWP adds to generated code may delay an exit request:
 * the counting code never writes icount_decr, which a host signal's
 * cpu_exit() sets (tests/user/exitreq-check.py checks the ops).  Were an
 * exit lost, the guest signal would wait for the thread's next syscall,
 * and a thread that spins until its handler runs would spin forever.
 *
 * The main thread enables LWP (events counted, intervals of 2^25) and,
 * SIGNALS times, spins in blocks of a few instructions until its
 * SIGUSR1 handler runs, with no syscall; a second thread (LWP off,
 * choice 36) sends each signal with pthread_kill and waits for the
 * handler.  A spin that passes SPIN_LIMIT trips (about 10^7
 * instructions) counts as late; the thread then makes syscalls until
 * the handler runs.  Each event setting must have no late signal; so
 * must LWP off, the control, which shows that SPIN_LIMIT is enough.
 * Each setting prints the median and the largest delay, in spin trips
 * between the sender's go, given once pthread_kill has returned (so that
 * a sender that the host preempts in between delays no signal), and the
 * handler, beside the control's
 * (docs/benchmarks.md); they depend on the host's signal delivery and
 * scheduling, so no check is made of them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "lwp-test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define SIGNALS     4000
#define SPIN_LIMIT  2000000u
#define RING_SIZE   (64 * LT_REC)

static void *cb, *ring;
static pthread_t main_thr;
static volatile sig_atomic_t handled;   /* SIGUSR1 handler runs */
static atomic_uint sent, acked;

static void on_usr1(int sig)
{
    (void)sig;
    handled = handled + 1;
}

static void *sender(void *arg)
{
    (void)arg;
    for (unsigned i = 1; i <= SIGNALS; i++) {
        /* the go once it is sent: no trips while the host preempts us */
        pthread_kill(main_thr, SIGUSR1);
        atomic_store(&sent, i);
        while (atomic_load(&acked) != i) {
            sched_yield();
        }
    }
    return NULL;
}

static unsigned trips[SIGNALS];

static int cmp_uint(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

    return x < y ? -1 : x > y;
}

/*
 * SIGNALS signals with LWP counting @flags (0: off); returns the late,
 * and the median and largest spin trips before the handler ran
 */
static unsigned run(uint32_t flags, unsigned *median, unsigned *max)
{
    uint32_t e = LWP_EVENT_OFFSET;
    unsigned late = 0;
    pthread_t thr;

    *median = *max = 0;
    handled = 0;
    atomic_store(&sent, 0);
    atomic_store(&acked, 0);
    if (flags) {
        lwpcb_init(cb, ring, RING_SIZE, flags);
        for (unsigned id = LWP_EVENT_ID_IRE; id <= LWP_EVENT_ID_BRE; id++) {
            wr32(cb, LWPCB_INTERVAL(e, id), LWPCB_INTERVAL_MAX);
            wr32(cb, LWPCB_COUNTER(e, id), LWPCB_INTERVAL_MAX);
        }
        if (try_llwpcb(cb, NULL)) {
            report(0, "LLWPCB with Flags 0x%x", flags);
            return SIGNALS;
        }
    }
    if (pthread_create(&thr, NULL, sender, NULL)) {
        perror("pthread_create");
        exit(2);
    }
    for (unsigned i = 1; i <= SIGNALS; i++) {
        unsigned k;

        while (atomic_load(&sent) != i) {
            /* no syscall: the signal may come at any time */
        }
        for (k = 0; handled != (sig_atomic_t)i && k < SPIN_LIMIT; k++) {
            __asm__ volatile("" : : : "memory");
        }
        trips[i - 1] = k;
        if (handled != (sig_atomic_t)i) {
            late++;
            while (handled != (sig_atomic_t)i) {
                sched_yield();
            }
        }
        atomic_store(&acked, i);
    }
    pthread_join(thr, NULL);
    if (flags) {
        lwp_off();
    }
    qsort(trips, SIGNALS, sizeof(trips[0]), cmp_uint);
    *median = trips[SIGNALS / 2];
    *max = trips[SIGNALS - 1];
    return late;
}

int main(void)
{
    static const struct {
        uint32_t flags;
        const char *what;
    } cfg[] = {
        { 0, "LWP off (control)" },
        { LWP_FEAT_IRE | LWP_FEAT_BRE, "IRE+BRE" },
        { LWP_FEAT_IRE, "IRE only" },
        { LWP_FEAT_BRE, "BRE only" },
    };
    uint32_t need = LWP_FEAT_AVAIL | LWP_FEAT_IRE | LWP_FEAT_BRE;
    struct sigaction sa = { .sa_handler = on_usr1 };

    if ((lwp_available() & need) != need) {
        report_skip("IRE and BRE not available");
        return report_summary("lwp-exits");
    }
    install_fault_handlers(0);
    sigaction(SIGUSR1, &sa, NULL);
    main_thr = pthread_self();
    cb = page_alloc(4096);
    ring = page_alloc(RING_SIZE);
    for (unsigned c = 0; c < sizeof(cfg) / sizeof(cfg[0]); c++) {
        unsigned median, max, late = run(cfg[c].flags, &median, &max);

        report(late == 0, "%s: %u of %u signals late (spin past %u trips); "
               "delay in trips: median %u, max %u", cfg[c].what, late,
               SIGNALS, SPIN_LIMIT, median, max);
    }
    return report_summary("lwp-exits");
}
