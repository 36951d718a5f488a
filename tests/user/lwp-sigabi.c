/*
 * lwp-sigabi: LWP across signals, fork, threads and execve, as Linux
 * gives user xstate (docs/implementation-choices.md rows 42 and 43)
 *
 * A plain Linux program (libc and system calls only), so that the same
 * static binary runs under qemu-x86_64 and in a Linux guest whose kernel
 * supports LWP.  Checked:
 *   (a) a handler (SIGUSR1, raise()) runs with LWP disabled: SLWPCB
 *       returns 0 in it (spec 5.2); the frame's XSAVE area holds the LWP
 *       state (spec 7.2, Table 7-1); after the handler SLWPCB returns the
 *       LWPCB again, records keep arriving and none names an instruction
 *       of the handler;
 *   (b) a handler that clears bit 62 of the frame's XSTATE_BV, or of its
 *       fx_sw xfeatures, returns into a context with LWP disabled
 *       (XRSTOR with XSTATE_BV[62] = 0 gives the processor supplied
 *       values, LWP_CBADDR 0: spec 7.4, 7.5);
 *   (c) a handler left with siglongjmp leaves LWP disabled;
 *   (d) progress with INT: Threshold 0 and a SIGIO handler that never
 *       drains the ring, then Threshold one record and a handler that
 *       drains one record per SIGIO; the main loop finishes (a livelock
 *       is reported by an alarm), the interrupt comes only when the head
 *       advances (Table 6-1 Threshold), so a never-drained ring of
 *       BufferSize 1024 gives at most 31 SIGIOs (a full ring holds
 *       BufferSize / 32 - 1 records, spec 1.1 step 3) and MissedEvents
 *       grows (Table 6-1);
 *   (e) fork and pthread_create: the new process or thread starts with
 *       LWP disabled and the parent keeps its LWPCB (spec 8.7.2);
 *   (f) after execve LWP is disabled (a new process, spec 8.7.2).  When
 *       the exec'd image runs on a CPU without LWP (qemu-x86_64 runs an
 *       exec'd program on the host unless binfmt_misc sends it to an
 *       emulator), LWP_SIGABI_EXEC_VIA names a command to exec it with.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "lwp-test.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/wait.h>

#define BIG_RECS        4096u
#define BIG_RING        (BIG_RECS * LT_REC)
#define SMALL_RING      LT_RING_MIN     /* 32 slots, 31 records */
#define XSTATE_LWP_BIT  62
#define EXIT_NO_LWP     77

static uint8_t *cb, *ring, *small_cb, *small_ring;

/* ---- handlers, in a section of their own so their addresses are known --- */

#define HANDLER __attribute__((noinline, section("lwp_sigabi_handlers")))
extern const char __start_lwp_sigabi_handlers[];
extern const char __stop_lwp_sigabi_handlers[];

enum usr1_mode { USR1_PLAIN, USR1_CLEAR_BV, USR1_CLEAR_XFEATURES, USR1_JUMP };

static volatile int usr1_mode;
static volatile uint64_t in_handler_slwpcb;
static volatile int frame_xsave, frame_bv62, frame_xf62;
static volatile uint64_t in_frame_lwpcb;
static volatile unsigned handler_sink;
static sigjmp_buf jump_env;

static HANDLER void on_usr1(int sig, siginfo_t *si, void *uc_)
{
    ucontext_t *uc = uc_;
    uint8_t *fx = (uint8_t *)uc->uc_mcontext.fpregs;
    uint64_t xfeatures = 0, bv = 0;
    unsigned i;

    (void)sig;
    (void)si;
    in_handler_slwpcb = (uintptr_t)__slwpcb();
    in_frame_lwpcb = frame_lwpcb(uc);
    /* enough instructions for many records if LWP counted here */
    for (i = 0; i < 2000; i++) {
        handler_sink += i;
    }
    /* fx_sw_bytes at 464: magic1, extended_size, xfeatures */
    frame_xsave = fx && rd32(fx, 464) == FP_XSTATE_MAGIC1;
    if (frame_xsave) {
        xfeatures = rd64(fx, 464 + 8);
        bv = rd64(fx, 512);
        frame_xf62 = (xfeatures >> XSTATE_LWP_BIT) & 1;
        frame_bv62 = (bv >> XSTATE_LWP_BIT) & 1;
        if (usr1_mode == USR1_CLEAR_BV) {
            wr64(fx, 512, bv & ~(1ull << XSTATE_LWP_BIT));
        } else if (usr1_mode == USR1_CLEAR_XFEATURES) {
            wr64(fx, 464 + 8, xfeatures & ~(1ull << XSTATE_LWP_BIT));
        }
    }
    if (usr1_mode == USR1_JUMP) {
        siglongjmp(jump_env, 1);
    }
}

static volatile int nsigio, bad_sigio, drained;

static HANDLER void on_sigio_keep(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    nsigio++;
    if (si->si_code != POLL_IN) {
        bad_sigio++;
    }
}

/* Consume the oldest record: BufferTailOffset += 32 (Table 6-1) */
static HANDLER void on_sigio_drain_one(int sig, siginfo_t *si, void *uc)
{
    uint32_t tail = rd32(small_cb, LWPCB_TAIL);

    (void)sig;
    (void)uc;
    nsigio++;
    if (si->si_code != POLL_IN) {
        bad_sigio++;
    }
    if (tail != rd32(small_cb, LWPCB_HEAD)) {
        wr32(small_cb, LWPCB_TAIL, (tail + LT_REC) % SMALL_RING);
        drained++;
    }
}

static void on_alarm(int sig)
{
    static const char msg[] = "FAIL: (d) the main loop finishes within "
        "60 s with INT enabled (it did not: a livelock)\n";

    (void)sig;
    if (write(1, msg, sizeof(msg) - 1) < 0) {
        _exit(2);
    }
    _exit(1);
}

static void handle(int sig, void (*fn)(int, siginfo_t *, void *))
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

/* ---- helpers ---------------------------------------------------------------- */

static volatile unsigned work_sink;

static void __attribute__((noinline)) work(unsigned n)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        work_sink += i;
    }
}

/* IRE every 16th instruction into the big ring, no interrupt */
static void big_lwpcb(void)
{
    uint32_t e = LWP_EVENT_OFFSET;

    lwpcb_init(cb, ring, BIG_RING, LWP_FEAT_IRE);
    wr32(cb, LWPCB_INTERVAL(e, LWP_EVENT_ID_IRE), 15);
    wr32(cb, LWPCB_COUNTER(e, LWP_EVENT_ID_IRE), 15);
}

/* SLWPCB flushes the head to the LWPCB (spec 5.2) */
static uint32_t flushed_head(void)
{
    (void)__slwpcb();
    return rd32(cb, LWPCB_HEAD);
}

static int in_handlers(uint64_t ip)
{
    return ip >= (uintptr_t)__start_lwp_sigabi_handlers &&
           ip < (uintptr_t)__stop_lwp_sigabi_handlers;
}

/* ---- (a) to (c) -------------------------------------------------------------- */

static void test_handler_runs_disabled(void)
{
    uint32_t h0, h1, h2, head, off, handler_recs = 0;
    uint64_t after;

    big_lwpcb();
    usr1_mode = USR1_PLAIN;
    in_handler_slwpcb = 0xdead;
    in_frame_lwpcb = 0;
    __llwpcb(cb);
    work(3000);
    h0 = flushed_head();
    raise(SIGUSR1);
    after = (uintptr_t)__slwpcb();
    h1 = rd32(cb, LWPCB_HEAD);
    work(3000);
    h2 = flushed_head();
    __llwpcb(NULL);
    head = rd32(cb, LWPCB_HEAD);

    report(in_handler_slwpcb == 0, "(a) SLWPCB in a SIGUSR1 handler returns "
           "0: the handler runs with LWP disabled (got 0x%" PRIx64 ")",
           (uint64_t)in_handler_slwpcb);
    report(frame_xsave && frame_xf62 && frame_bv62,
           "(a) the handler's frame is an XSAVE frame whose fx_sw xfeatures "
           "and XSTATE_BV have bit 62 (XSAVE frame %d, xfeatures %d, "
           "XSTATE_BV %d)", frame_xsave, frame_xf62, frame_bv62);
    report(in_frame_lwpcb == (uintptr_t)cb, "(a) component 62 in the frame "
           "holds the LWPCB address (Table 7-1; got 0x%" PRIx64 ", want "
           "%p)", (uint64_t)in_frame_lwpcb, (void *)cb);
    report(after == (uintptr_t)cb, "(a) after the handler SLWPCB returns the "
           "LWPCB again (got 0x%" PRIx64 ", want %p)", after, (void *)cb);
    report(h0 > 0 && h2 > h1, "(a) records keep arriving after the handler "
           "(head 0x%x before the signal, 0x%x after it, 0x%x after more "
           "work)", h0, h1, h2);
    for (off = 0; off < head; off += LT_REC) {
        handler_recs += in_handlers(read_rec(ring, off).ip);
    }
    report(handler_recs == 0, "(a) no record names an instruction of the "
           "handler (%u of %u do)", handler_recs, head / LT_REC);
}

static void test_frame_without_lwp(int mode, const char *what)
{
    uint64_t after;

    big_lwpcb();
    usr1_mode = mode;
    in_handler_slwpcb = 0xdead;
    __llwpcb(cb);
    work(100);
    raise(SIGUSR1);
    after = (uintptr_t)__slwpcb();
    __llwpcb(NULL);
    report(in_handler_slwpcb == 0 && after == 0, "(b) a handler that clears "
           "bit 62 of the frame's %s returns into a context with LWP "
           "disabled: SLWPCB 0 in the handler and after it (got 0x%" PRIx64
           " and 0x%" PRIx64 ")", what, (uint64_t)in_handler_slwpcb, after);
}

static void test_siglongjmp(void)
{
    uint64_t after;

    big_lwpcb();
    usr1_mode = USR1_JUMP;
    if (sigsetjmp(jump_env, 1) == 0) {
        __llwpcb(cb);
        work(100);
        raise(SIGUSR1);
        report(0, "(c) the SIGUSR1 handler leaves with siglongjmp (it "
               "returned)");
    }
    after = (uintptr_t)__slwpcb();
    __llwpcb(NULL);
    report(after == 0, "(c) after siglongjmp out of a handler LWP is "
           "disabled: SLWPCB returns 0 (got 0x%" PRIx64 ")", after);
}

/* ---- (d) --------------------------------------------------------------------- */

#define PROGRESS_TRIPS 100000u

/*
 * IRE every 16th instruction into the 32-slot ring, INT at @threshold,
 * @handler on SIGIO; run the main loop (an alarm reports a livelock)
 */
static void progress_run(uint32_t threshold,
                         void (*handler)(int, siginfo_t *, void *),
                         const char *what)
{
    uint32_t e = LWP_EVENT_OFFSET;

    lwpcb_init(small_cb, small_ring, SMALL_RING,
               LWP_FEAT_IRE | LWP_FEAT_INT);
    wr32(small_cb, LWPCB_THRESHOLD, threshold);
    wr32(small_cb, LWPCB_INTERVAL(e, LWP_EVENT_ID_IRE), 15);
    wr32(small_cb, LWPCB_COUNTER(e, LWP_EVENT_ID_IRE), 15);
    nsigio = bad_sigio = drained = 0;
    handle(SIGIO, handler);
    alarm(60);
    __llwpcb(small_cb);
    work(PROGRESS_TRIPS);
    __llwpcb(NULL);
    alarm(0);
    report(1, "(d) %s: the main loop of %u trips finishes", what,
           PROGRESS_TRIPS);
    report(!bad_sigio, "(d) %s: every SIGIO has si_code POLL_IN (%d did "
           "not)", what, bad_sigio);
}

static void test_progress(void)
{
    uint32_t head, tail, stored, cap = SMALL_RING / LT_REC - 1;
    uint64_t missed;
    int n;

    signal(SIGALRM, on_alarm);

    progress_run(0, on_sigio_keep, "never-draining SIGIO handler, "
                 "Threshold 0");
    n = nsigio;
    head = rd32(small_cb, LWPCB_HEAD);
    tail = rd32(small_cb, LWPCB_TAIL);
    missed = rd64(small_cb, LWPCB_MISSED);
    report(head == cap * LT_REC && tail == 0, "(d) the ring fills: it holds "
           "BufferSize / 32 - 1 = %u records (head 0x%x, tail 0x%x)", cap,
           head, tail);
    report(n >= 1 && n <= (int)cap, "(d) SIGIOs only for records that "
           "advance the head: between 1 and %u, none once the ring is full "
           "(got %d)", cap, n);
    report(missed > 0, "(d) the events that find the ring full are counted "
           "in MissedEvents (got %" PRIu64 ")", missed);

    progress_run(LT_REC, on_sigio_drain_one, "SIGIO handler draining one "
                 "record, Threshold 1 record");
    n = nsigio;
    head = rd32(small_cb, LWPCB_HEAD);
    tail = rd32(small_cb, LWPCB_TAIL);
    stored = (uint32_t)drained +
             (head + SMALL_RING - tail) % SMALL_RING / LT_REC;
    report(n >= 1 && (uint32_t)n <= stored, "(d) SIGIOs only for records "
           "that advance the head: between 1 and the %u records stored "
           "(got %d; %" PRIu64 " events missed)", stored, n,
           rd64(small_cb, LWPCB_MISSED));
    signal(SIGIO, SIG_DFL);
}

/* ---- (e) and (f) ------------------------------------------------------------- */

static void *thread_slwpcb(void *arg)
{
    (void)arg;
    return __slwpcb();
}

static void test_fork_and_thread(void)
{
    uint64_t before, parent, joined, child;
    pthread_t t;
    void *ret = (void *)1;
    int status = -1;
    pid_t pid;

    big_lwpcb();
    __llwpcb(cb);
    before = (uintptr_t)__slwpcb();
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        child = (uintptr_t)__slwpcb();
        _exit(child == 0 ? 0 : 1);
    }
    parent = (uintptr_t)__slwpcb();
    waitpid(pid, &status, 0);
    report(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "(e) the child's SLWPCB returns 0 right after fork (status 0x%x)",
           status);
    report(before == (uintptr_t)cb && parent == (uintptr_t)cb,
           "(e) the parent keeps its LWPCB across fork (0x%" PRIx64 ", "
           "then 0x%" PRIx64 ")", before, parent);

    if (pthread_create(&t, NULL, thread_slwpcb, NULL) == 0) {
        pthread_join(t, &ret);
    }
    joined = (uintptr_t)__slwpcb();
    __llwpcb(NULL);
    report(ret == NULL, "(e) a new pthread's SLWPCB returns 0 (got %p)", ret);
    report(joined == (uintptr_t)cb, "(e) the creating thread keeps its "
           "LWPCB (0x%" PRIx64 ")", joined);
}

static void test_exec(void)
{
    char self[4096], via[4096];
    char *argv[64];
    const char *env = getenv("LWP_SIGABI_EXEC_VIA");
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    int argc = 0, status = -1;
    pid_t pid;

    if (n <= 0) {
        report(0, "(f) readlink /proc/self/exe works (%s)", strerror(errno));
        return;
    }
    self[n] = 0;
    if (env) {
        snprintf(via, sizeof(via), "%s", env);
        for (char *tok = strtok(via, " "); tok && argc < 60;
             tok = strtok(NULL, " ")) {
            argv[argc++] = tok;
        }
    }
    argv[argc++] = self;
    argv[argc++] = (char *)"--after-exec";
    argv[argc] = NULL;
    big_lwpcb();
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        __llwpcb(cb);
        if (!__slwpcb()) {
            _exit(3);
        }
        execv(argv[0], argv);
        _exit(4);
    }
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_NO_LWP) {
        report_skip("(f) the exec'd image runs on a CPU without LWP; set "
                    "LWP_SIGABI_EXEC_VIA to a command that runs it with "
                    "LWP");
        return;
    }
    report(WIFEXITED(status) && WEXITSTATUS(status) == 0, "(f) after execve "
           "from a process with LWP enabled, SLWPCB returns 0 in the new "
           "image (status 0x%x; 1: not 0, 3: LLWPCB failed, 4: execv "
           "failed)", status);
}

int main(int argc, char **argv)
{
    uint32_t avail;

    if (argc > 1 && !strcmp(argv[1], "--after-exec")) {
        if (!(lwp_available() & LWP_FEAT_AVAIL)) {
            return EXIT_NO_LWP;
        }
        return __slwpcb() == 0 ? 0 : 1;
    }
    avail = lwp_available();
    if ((avail & (LWP_FEAT_AVAIL | LWP_FEAT_IRE)) !=
        (LWP_FEAT_AVAIL | LWP_FEAT_IRE)) {
        report_skip("LWP with IRE is not available (CPUID 8000_001C EAX "
                    "0x%x)", avail);
        return report_summary("lwp-sigabi");
    }
    cb = page_alloc(4096);
    ring = page_alloc(BIG_RING);
    small_cb = page_alloc(4096);
    small_ring = page_alloc(SMALL_RING);
    handle(SIGUSR1, on_usr1);

    test_handler_runs_disabled();
    test_frame_without_lwp(USR1_CLEAR_BV, "XSTATE_BV");
    test_frame_without_lwp(USR1_CLEAR_XFEATURES, "fx_sw xfeatures");
    test_siglongjmp();
    if (avail & LWP_FEAT_INT) {
        test_progress();
    } else {
        report_skip("(d) threshold interrupts are not available");
    }
    test_fork_and_thread();
    test_exec();
    return report_summary("lwp-sigabi");
}
