/*
 * lwp-threads: LWP state is per thread
 *
 *   - a new thread starts with LWP disabled: __slwpcb() returns 0 in it
 *     even though its creator had LWP enabled (spec 8.7.2 via XRSTOR at
 *     thread creation; docs/implementation-choices.md row 36);
 *   - two threads, each with its own LWPCB and ring, storing records in
 *     turns: each ring holds only the records of its own thread, in order,
 *     and each LWPCB's head counts only its own thread's records;
 *   - the creator's LWP state is unchanged by the other thread's LLWPCB
 *     calls, and a thread that exits with LWP enabled leaves the others
 *     alone;
 *   - a child process made by fork() starts with LWP disabled as well
 *     (row 36): its LWPINS stores nothing into its copy of the ring; the
 *     parent keeps profiling.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "lwp-test.h"

#include <pthread.h>
#include <sys/wait.h>

#define ROUNDS  20

static void *cb_main, *ring_main, *cb_thr, *ring_thr;
static pthread_barrier_t bar;

struct thread_result {
    uint64_t slwpcb_at_start;
    int start_sig;
    int llwpcb_sig;
    uint64_t slwpcb_after;
    unsigned cf_set;
};

/* CF of each store; Data2 is the thread's tag, Data1 the round */
static void *thread_fn(void *arg)
{
    struct thread_result *r = arg;

    install_fault_handlers(0);
    r->start_sig = try_slwpcb(&r->slwpcb_at_start);
    lwpcb_init(cb_thr, ring_thr, LT_RING_MIN, 0);
    r->llwpcb_sig = try_llwpcb(cb_thr, NULL);
    pthread_barrier_wait(&bar);
    for (unsigned i = 0; i < ROUNDS; i++) {
        pthread_barrier_wait(&bar);     /* the main thread stores first */
        if (!r->llwpcb_sig) {
            r->cf_set += __lwpins64(0xbbbb, i, 0xb);
        }
        pthread_barrier_wait(&bar);
    }
    r->slwpcb_after = r->llwpcb_sig ? 0 : (uintptr_t)__slwpcb();
    return NULL;                        /* exits with LWP enabled */
}

/* every record in the ring [0, n) is this thread's, in order */
static int ring_is(const void *ring, unsigned n, uint64_t tag, uint16_t fl)
{
    for (unsigned i = 0; i < n; i++) {
        struct rec rc = read_rec(ring, 32 * i);

        if (rc.event_id != LWP_EVENT_ID_INS || rc.data2 != tag ||
            rc.flags != fl || rc.data1 != i) {
            printf("    record %u: EventId %u Flags 0x%x Data1 %u "
                   "Data2 0x%llx\n",
                   i, rc.event_id, rc.flags, rc.data1,
                   (unsigned long long)rc.data2);
            return 0;
        }
    }
    return 1;
}

int main(void)
{
    struct thread_result r;
    pthread_t t;
    unsigned cf_main = 0;
    uint64_t v;
    pid_t pid;
    int st;

    setvbuf(stdout, NULL, _IOLBF, 0);
    install_fault_handlers(0);
    if (!lwp_supported()) {
        report(0, "LWP is supported (CPUID 8000_0001 ECX[15]): run with "
               "-cpu ...,+lwp");
        return report_summary("lwp-threads");
    }
    cb_main = page_alloc(4096);
    ring_main = page_alloc(4096);
    cb_thr = page_alloc(4096);
    ring_thr = page_alloc(4096);
    if (!lwp_insns_work()) {
        return report_summary("lwp-threads");
    }

    lwpcb_init(cb_main, ring_main, LT_RING_MIN, 0);
    if (try_llwpcb(cb_main, NULL)) {
        report(0, "LLWPCB of a valid LWPCB in the main thread executes");
        return report_summary("lwp-threads");
    }
    memset(&r, 0, sizeof(r));
    pthread_barrier_init(&bar, NULL, 2);
    pthread_create(&t, NULL, thread_fn, &r);
    pthread_barrier_wait(&bar);
    report(r.start_sig == 0 && r.slwpcb_at_start == 0, "a new thread starts "
           "with LWP disabled: SLWPCB returns 0 although its creator had LWP "
           "enabled (got 0x%llx, %s)", (unsigned long long)r.slwpcb_at_start,
           signame(r.start_sig));
    report(r.llwpcb_sig == 0, "the new thread enables LWP with its own LWPCB "
           "(got %s)", signame(r.llwpcb_sig));
    v = (uintptr_t)__slwpcb();
    report(v == (uintptr_t)cb_main, "the other thread's LLWPCB leaves the "
           "main thread's LWPCB in place (SLWPCB 0x%llx)",
           (unsigned long long)v);
    for (unsigned i = 0; i < ROUNDS; i++) {
        cf_main += __lwpins64(0xaaaa, i, 0xa);
        pthread_barrier_wait(&bar);
        pthread_barrier_wait(&bar);     /* the thread stores */
    }
    pthread_join(t, NULL);

    report(cf_main == 0 && r.cf_set == 0, "no store found a ring full (CF)");
    report(rd32(cb_main, LWPCB_HEAD) == 32 * ROUNDS, "the main thread's head "
           "counts only its own %u records (head %u)", ROUNDS,
           rd32(cb_main, LWPCB_HEAD));
    report(rd32(cb_thr, LWPCB_HEAD) == 32 * ROUNDS, "the thread's head counts "
           "only its own %u records (head %u)", ROUNDS,
           rd32(cb_thr, LWPCB_HEAD));
    report(ring_is(ring_main, ROUNDS, 0xaaaa, 0xa), "the main thread's ring "
           "holds only its records, in order");
    report(ring_is(ring_thr, ROUNDS, 0xbbbb, 0xb), "the thread's ring holds "
           "only its records, in order");
    report(r.slwpcb_after == (uintptr_t)cb_thr, "the thread's SLWPCB returns "
           "its own LWPCB (got 0x%llx)", (unsigned long long)r.slwpcb_after);
    v = (uintptr_t)__slwpcb();
    report(v == (uintptr_t)cb_main, "after the thread exited with LWP "
           "enabled, the main thread still has its LWPCB (SLWPCB 0x%llx)",
           (unsigned long long)v);
    __lwpins64(0xaaaa, ROUNDS, 0xa);
    report(rd32(cb_main, LWPCB_HEAD) == 32 * (ROUNDS + 1) &&
           rd32(cb_thr, LWPCB_HEAD) == 32 * ROUNDS, "and it goes on storing "
           "into its own ring only (heads %u, %u)", rd32(cb_main, LWPCB_HEAD),
           rd32(cb_thr, LWPCB_HEAD));

    /* fork: the child starts disabled; exit status 0 if it saw 0 */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        uint64_t cv = 1;

        install_fault_handlers(0);
        if (try_slwpcb(&cv) != 0 || cv != 0) {
            _exit(1);
        }
        /* LWP disabled: clears CF, stores nothing into the child's copy */
        __lwpins64(0xcccc, 0, 0xc);
        _exit(rd32(cb_main, LWPCB_HEAD) == 32 * (ROUNDS + 1) &&
              ((uint8_t *)ring_main)[32 * (ROUNDS + 1)] == 0xa5 ? 0 : 2);
    }
    st = -1;
    if (pid > 0) {
        waitpid(pid, &st, 0);
    }
    report(WIFEXITED(st) && WEXITSTATUS(st) != 1, "a child made by fork() "
           "starts with LWP disabled (SLWPCB 0 in the child; status 0x%x)", st);
    report(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's LWPINS stores "
           "nothing (its copy of the ring and head are unchanged)");
    v = (uintptr_t)__slwpcb();
    report(v == (uintptr_t)cb_main, "the parent keeps its LWPCB after fork "
           "(SLWPCB 0x%llx)", (unsigned long long)v);
    lwp_off();
    return report_summary("lwp-threads");
}
