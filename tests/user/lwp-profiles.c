/*
 * lwp-profiles: more LWP configurations at once than the TB key has ids
 *
 * What a translation block counts is keyed by a 3-bit profile id (QEMU's
 * target/i386/cpu.h, HF_PROF; docs/implementation-choices.md row 56):
 * six profiles are interned, the others share the id whose TBs check the
 * vCPU's profile at their start and are translated again when it differs.
 * Here ten threads, each with its own combination of events and filters
 * (ten profiles; the main thread gives six of them the six ids first),
 * run the same loop at the same time, so that the TBs of the checked id
 * are translated again and again under each other.  Each
 * thread's counters must be what the spec says of the loop alone:
 *
 *     llwpcb  (cb)            not counted (row 39)
 *     mov     $N, %ecx        1 instruction
 *  1: dec     %ecx            N instructions
 *     jnz     1b              N instructions, N conditional branches
 *     slwpcb  %rax            1 instruction (its flush is overwritten)
 *     llwpcb  (0)             flushes the counters after the SLWPCB (5.1,
 *                             rows 39, 54)
 *
 * so Instructions Retired (2.2) counted 2 + 2N, Branches Retired (2.3) N,
 * and both clocks (2.5, 2.6, row 48: one per instruction, one more per
 * near branch) 2 + 3N.  The IP filter (6) of some threads covers every
 * address; of others, only address 1, so that they count nothing.  The
 * branch filter NRB leaves conditional branches counted.  Expected
 * values come from this listing, never from QEMU.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "lwp-test.h"

#include <pthread.h>

#define THREADS         10
#define ROUNDS          100
#define LOOP            20000u
#define INTERVAL        0x1000000u
#define NEVENTS         4
#define INTERNED        6       /* ids 1 to 6 */

struct prof_thread {
    uint32_t flags;             /* LWP_FEAT_* events enabled */
    uint32_t filters;           /* LWPCB Filters */
    int outside;                /* the IP filter leaves the loop out */
    const char *name;
    unsigned bad;               /* rounds with a wrong counter */
    uint32_t got[LWP_EVENT_ID_RNH + 1], want[LWP_EVENT_ID_RNH + 1];
};

static pthread_barrier_t bar;

static uint64_t run_loop(void *cb)
{
    uint64_t out;

    __asm__ volatile("llwpcb %1\n\t"
                     "mov %2, %%ecx\n"
                     "1:\n\t"
                     "dec %%ecx\n\t"
                     "jnz 1b\n\t"
                     "slwpcb %0\n\t"
                     "llwpcb %3\n\t"
                     : "=&r"(out)
                     : "r"(cb), "i"(LOOP), "r"(0ul)
                     : "rcx", "cc", "memory");
    return out;
}

static const uint32_t events[NEVENTS] = {
    LWP_EVENT_ID_IRE, LWP_EVENT_ID_BRE, LWP_EVENT_ID_CNH, LWP_EVENT_ID_RNH,
};

static void prof_lwpcb(void *cb, void *ring, const struct prof_thread *t)
{
    uint32_t e = LWP_EVENT_OFFSET;

    lwpcb_init(cb, ring, LT_RING_MIN, t->flags);
    wr32(cb, LWPCB_FILTERS, t->filters);
    wr64(cb, LWPCB_BASE_IP, t->outside ? 1 : 0);
    wr64(cb, LWPCB_LIMIT_IP, t->outside ? 1 : ~0ull);
    for (unsigned i = 0; i < NEVENTS; i++) {
        wr32(cb, LWPCB_INTERVAL(e, events[i]), INTERVAL);
        wr32(cb, LWPCB_COUNTER(e, events[i]), INTERVAL);
    }
}

static void *thread_fn(void *arg)
{
    struct prof_thread *t = arg;
    void *cb = aligned_alloc(4096, 4096);
    void *ring = aligned_alloc(4096, LT_RING_MIN);
    uint32_t e = LWP_EVENT_OFFSET;

    t->want[LWP_EVENT_ID_IRE] = INTERVAL - (t->outside ? 0 : 2 + 2 * LOOP);
    t->want[LWP_EVENT_ID_BRE] = INTERVAL - (t->outside ? 0 : LOOP);
    t->want[LWP_EVENT_ID_CNH] = INTERVAL - (t->outside ? 0 : 2 + 3 * LOOP);
    t->want[LWP_EVENT_ID_RNH] = INTERVAL - (t->outside ? 0 : 2 + 3 * LOOP);
    for (unsigned r = 0; r < ROUNDS; r++) {
        prof_lwpcb(cb, ring, t);
        pthread_barrier_wait(&bar);     /* all loops at once */
        if (run_loop(cb) != (uintptr_t)cb) {
            t->bad++;
        }
        for (unsigned i = 0; i < NEVENTS; i++) {
            uint32_t id = events[i];

            if (!(t->flags & (1u << id))) {
                continue;
            }
            t->got[id] = rd32(cb, LWPCB_COUNTER(e, id));
            if (t->got[id] != t->want[id]) {
                t->bad++;
            }
        }
    }
    free(ring);
    free(cb);
    return NULL;
}

int main(void)
{
    static struct prof_thread th[THREADS] = {
        { .flags = LWP_FEAT_IRE | LWP_FEAT_BRE, .name = "IRE+BRE" },
        { .flags = LWP_FEAT_CNH | LWP_FEAT_RNH, .name = "CNH+RNH" },
        { .flags = LWP_FEAT_IRE | LWP_FEAT_CNH, .name = "IRE+CNH" },
        { .flags = LWP_FEAT_BRE | LWP_FEAT_RNH, .filters = LWP_FILTER_NRB,
          .name = "BRE+RNH, NRB" },
        { .flags = LWP_FEAT_IRE | LWP_FEAT_BRE | LWP_FEAT_CNH | LWP_FEAT_RNH,
          .name = "IRE+BRE+CNH+RNH" },
        { .flags = LWP_FEAT_CNH, .filters = LWP_FILTER_IPF,
          .name = "CNH, IPF" },
        /*
         * checked: any TB of another counts what this one does not, or
         * does not count what this one does
         */
        { .flags = LWP_FEAT_IRE, .name = "IRE" },
        { .flags = LWP_FEAT_IRE, .filters = LWP_FILTER_IPF, .outside = 1,
          .name = "IRE, the IP filter leaving the loop out" },
        { .flags = LWP_FEAT_BRE, .name = "BRE" },
        { .flags = LWP_FEAT_BRE, .filters = LWP_FILTER_IPF, .outside = 1,
          .name = "BRE, the IP filter leaving the loop out" },
    };
    pthread_t tid[THREADS];

    if (!lwp_supported()) {
        report_skip("LWP not supported");
        return report_summary("lwp-profiles");
    }
    /*
     * The first six profiles take the six interned ids, in this order:
     * the other four all run with the checked id
     */
    void *cb = aligned_alloc(4096, 4096);
    void *ring = aligned_alloc(4096, LT_RING_MIN);

    for (unsigned i = 0; i < INTERNED; i++) {
        prof_lwpcb(cb, ring, &th[i]);
        __llwpcb(cb);
        __llwpcb(NULL);
    }
    pthread_barrier_init(&bar, NULL, THREADS);
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_create(&tid[i], NULL, thread_fn, &th[i]);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        pthread_join(tid[i], NULL);
    }
    for (unsigned i = 0; i < THREADS; i++) {
        struct prof_thread *t = &th[i];

        static const char *const names[] = {
            [LWP_EVENT_ID_IRE] = "IRE", [LWP_EVENT_ID_BRE] = "BRE",
            [LWP_EVENT_ID_CNH] = "CNH", [LWP_EVENT_ID_RNH] = "RNH",
        };
        char counters[160] = "";
        size_t n = 0;

        for (unsigned k = 0; k < NEVENTS; k++) {
            uint32_t id = events[k];

            if (t->flags & (1u << id)) {
                n += snprintf(counters + n, sizeof(counters) - n,
                              " %s %u (want %u)", names[id], t->got[id],
                              t->want[id]);
            }
        }
        report(!t->bad, "%s: %u rounds of the loop, side by side with %u "
               "other profiles; the counters after the last:%s; %u wrong",
               t->name, ROUNDS, THREADS - 1, counters, t->bad);
    }
    return report_summary("lwp-profiles");
}
