/*
 * lwp-preload: enable LWP in an unmodified program, for bench/qemu-bench.sh
 *
 * Built as a shared library and loaded with LD_PRELOAD (under qemu-x86_64:
 * -E LD_PRELOAD=.../lwp-preload.so).  Its constructor, in the main thread,
 * allocates an LWPCB and a ring buffer and executes LLWPCB.  A consumer
 * reads BufferHeadOffset, counts the records between the tail and the
 * head by EventId and moves BufferTailOffset to the head, as a profiler
 * would.  By default the consumer is LWP's threshold interrupt (spec 1.1
 * step 4), as LWP intends: INT is enabled with a Threshold, and the
 * SIGIO handler that qemu-x86_64 raises for it (choice 42) drains the
 * ring in the profiled thread itself.  LWP_BENCH_CONSUMER=thread uses a
 * polling thread instead, which wakes every LWP_BENCH_PERIOD_MS; LWP is
 * per thread and a new thread starts with LWP disabled (spec 8.7.2,
 * docs/implementation-choices.md choice 36), so only the main thread is
 * profiled.  The destructor executes LLWPCB 0 (which flushes the head),
 * stops the consumer, drains what is left and prints one line:
 *
 *   lwp-preload: flags=0x6 interval2=99999 interval3=99999 records=N
 *     ev1=N ev2=N ev3=N ev4=N ev5=N ev6=N ev255=N other=N missed=N
 *     drains=N
 *
 * flags is LWPCB.Flags as LLWPCB wrote it back (the events actually
 * enabled), intervalN the EventIntervalN it wrote back (raised to the
 * implementation's minimum), missed is LWPCB.MissedEvents.
 *
 * Environment:
 *   LWP_BENCH_EVENTS    a list of val, ire, bre, dme, cnh, rnh separated
 *                       by ',', '+' or ':' (qemu-x86_64's -E splits its
 *                       argument at commas, so pass ire+bre there); unset
 *                       or empty: the library does nothing
 *   LWP_BENCH_INTERVAL  EventInterval and EventCounter of every event
 *                       (default 99999; 0 asks for the minimum)
 *   LWP_BENCH_RING_KB   ring buffer size in KiB (default 32768)
 *   LWP_BENCH_CONSUMER  signal (default) or thread
 *   LWP_BENCH_THRESHOLD_KB  signal: Threshold in KiB (default 1024, 32 Ki
 *                       records; at most the ring size)
 *   LWP_BENCH_PERIOD_MS thread: how long the consumer sleeps between two
 *                       drains (default 10: the default ring holds 1 Mi
 *                       records, over 100 ms of records at the minimum
 *                       interval)
 *   LWP_BENCH_OUT       file that receives the line (default: stderr)
 *
 * Random is 0; no filters.  Any failure to set up
 * LWP ends the program with exit status 3, so a benchmark cannot silently
 * measure a run without LWP.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <cpuid.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "lwp/lwp-arch.h"

#define NUM_IDS 256

static const char *const event_names[LWP_NUM_EVENTS + 1] = {
    NULL, "val", "ire", "bre", "dme", "cnh", "rnh",
};

static struct {
    uint8_t *cb;            /* the LWPCB */
    uint8_t *ring;          /* the ring buffer */
    uint32_t ring_size;     /* BufferSize, a multiple of the record size */
    unsigned long period_ms; /* the consumer thread's sleep */
    int thread;             /* the consumer is a thread, not SIGIO */
    uint64_t drains;        /* times the consumer found records */
    uint32_t event_offset;  /* LwpEventOffset (CPUID 8000_001C EBX) */
    uint32_t flags;         /* LWPCB.Flags after LLWPCB */
    uint32_t interval[LWP_NUM_EVENTS + 1];
    uint64_t count[NUM_IDS];
    uint64_t records;
    int stop;
    int active;
    pthread_t consumer;
} lb;

static void fail(const char *msg)
{
    fprintf(stderr, "lwp-preload: %s\n", msg);
    _exit(3);
}

/*
 * The LWPCB is shared with LWP (and the consumer thread): every access is
 * an atomic one so that the compiler neither caches nor elides it.
 */
static uint32_t cb_read32(uint32_t offset)
{
    return __atomic_load_n((uint32_t *)(lb.cb + offset), __ATOMIC_ACQUIRE);
}

static void cb_write32(uint32_t offset, uint32_t value)
{
    __atomic_store_n((uint32_t *)(lb.cb + offset), value, __ATOMIC_RELEASE);
}

static uint64_t cb_read64(uint32_t offset)
{
    return __atomic_load_n((uint64_t *)(lb.cb + offset), __ATOMIC_ACQUIRE);
}

static void cb_write64(uint32_t offset, uint64_t value)
{
    __atomic_store_n((uint64_t *)(lb.cb + offset), value, __ATOMIC_RELEASE);
}

/* LLWPCB reads and writes the LWPCB behind the compiler's back */
static void llwpcb(void *cb)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __llwpcb(cb);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* Count the records in [tail, head) and move the tail to the head */
static void drain(void)
{
    uint32_t head = cb_read32(LWPCB_HEAD);
    uint32_t tail = cb_read32(LWPCB_TAIL);

    if (head >= lb.ring_size) {
        return;
    }
    lb.drains += tail != head;
    while (tail != head) {
        lb.count[lb.ring[tail + LWP_REC_EVENT_ID]]++;
        lb.records++;
        tail += LWP_EVENT_RECORD_SIZE;
        if (tail >= lb.ring_size) {
            tail = 0;
        }
    }
    cb_write32(LWPCB_TAIL, tail);
}

/*
 * The threshold interrupt (choice 42): the ring is over the threshold.
 * LWP would count the handler's own instructions (choice 43), which at
 * small intervals store more records than the drain consumes: LLWPCB 0
 * stops LWP (writing back the head and the counters), LLWPCB resumes it
 * where it was, so the drain is not profiled, like a consumer thread or
 * an OS that drains in the kernel.
 */
static void on_sigio(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    llwpcb(NULL);
    drain();
    llwpcb(lb.cb);
}

static void *consumer(void *arg)
{
    const struct timespec period = {
        lb.period_ms / 1000, lb.period_ms % 1000 * 1000 * 1000
    };

    (void)arg;
    while (!__atomic_load_n(&lb.stop, __ATOMIC_ACQUIRE)) {
        nanosleep(&period, NULL);
        drain();
    }
    return NULL;
}

static uint32_t parse_events(const char *s)
{
    uint32_t flags = 0;
    char *copy = strdup(s), *save = NULL, *tok;

    if (!copy) {
        fail("out of memory");
    }
    for (tok = strtok_r(copy, ",+:", &save); tok;
         tok = strtok_r(NULL, ",+:", &save)) {
        int id;

        for (id = 1; id <= LWP_NUM_EVENTS; id++) {
            if (!strcmp(tok, event_names[id])) {
                break;
            }
        }
        if (id > LWP_NUM_EVENTS) {
            fail("LWP_BENCH_EVENTS: unknown event (val,ire,bre,dme,cnh,rnh)");
        }
        flags |= 1u << id;
    }
    free(copy);
    return flags;
}

static unsigned long env_number(const char *name, unsigned long dflt)
{
    const char *s = getenv(name);
    unsigned long v;
    char junk;

    if (!s || !*s) {
        return dflt;
    }
    if (sscanf(s, "%lu%c", &v, &junk) != 1) {
        fail("LWP_BENCH_INTERVAL, _RING_KB and _PERIOD_MS are numbers");
    }
    return v;
}

__attribute__((constructor))
static void lwp_preload_start(void)
{
    const char *events = getenv("LWP_BENCH_EVENTS");
    uint32_t a, b, c, d, want, interval, min_ring, threshold = 0;
    unsigned long ring_kb;
    const char *how = getenv("LWP_BENCH_CONSUMER");

    if (!events || !*events) {
        return;
    }
    want = parse_events(events);
    interval = env_number("LWP_BENCH_INTERVAL", 99999);
    ring_kb = env_number("LWP_BENCH_RING_KB", 32768);
    lb.period_ms = env_number("LWP_BENCH_PERIOD_MS", 10);
    if (lb.period_ms < 1 || lb.period_ms > 1000) {
        fail("LWP_BENCH_PERIOD_MS is not 1..1000");
    }
    if (how && !strcmp(how, "thread")) {
        lb.thread = 1;
    } else if (how && *how && strcmp(how, "signal")) {
        fail("LWP_BENCH_CONSUMER is signal or thread");
    }
    if (interval > LWPCB_INTERVAL_MAX) {
        fail("LWP_BENCH_INTERVAL is above 0x1ffffff");
    }

    __cpuid(0x80000000, a, b, c, d);
    if (a < LWP_CPUID_LEAF) {
        fail("no CPUID leaf 8000_001C: LWP not supported");
    }
    __cpuid(0x80000001, a, b, c, d);
    if (!((c >> LWP_CPUID_EXT3_BIT) & 1)) {
        fail("CPUID 8000_0001 ECX[LWP] is 0: LWP not supported");
    }
    __cpuid(LWP_CPUID_LEAF, a, b, c, d);
    if (!(a & LWP_FEAT_AVAIL)) {
        fail("LWP not available (CPUID 8000_001C EAX[0] is 0)");
    }
    if (!lb.thread && !(a & LWP_FEAT_INT)) {
        fail("the threshold interrupt is not available (EAX[31] is 0)");
    }
    lb.event_offset = (b >> LWP_CPUID_EBX_EVENTOFFSET_SHIFT) & 0xff;
    min_ring = ((c & LWP_CAP_MIN_BUFFER_MASK) >> LWP_CAP_MIN_BUFFER_SHIFT) *
               32 * LWP_EVENT_RECORD_SIZE;
    if (ring_kb == 0 || ring_kb > (LWPCB_BUFFER_SIZE_MASK >> 10)) {
        fail("LWP_BENCH_RING_KB out of range");
    }
    lb.ring_size = ring_kb << 10;
    if (lb.ring_size < min_ring) {
        lb.ring_size = min_ring;
    }

    /* LwpCbSize is at most 255 quadwords: one page holds any LWPCB */
    lb.cb = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    lb.ring = mmap(NULL, lb.ring_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (lb.cb == MAP_FAILED || lb.ring == MAP_FAILED) {
        fail("mmap failed");
    }
    if (!lb.thread) {
        struct sigaction sa = {
            .sa_sigaction = on_sigio, .sa_flags = SA_SIGINFO | SA_RESTART,
        };

        threshold = env_number("LWP_BENCH_THRESHOLD_KB", 1024) << 10;
        threshold = threshold > lb.ring_size ? lb.ring_size : threshold;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGIO, &sa, NULL)) {
            fail("sigaction(SIGIO) failed");
        }
        want |= LWP_FEAT_INT;
    }
    cb_write32(LWPCB_THRESHOLD, threshold);
    cb_write32(LWPCB_FLAGS, want);
    cb_write32(LWPCB_BUFFER_SIZE, lb.ring_size);    /* Random = 0 */
    cb_write64(LWPCB_BUFFER_BASE, (uintptr_t)lb.ring);
    for (int id = 1; id <= LWP_NUM_EVENTS; id++) {
        if (want & (1u << id)) {
            cb_write32(LWPCB_INTERVAL(lb.event_offset, id), interval);
            cb_write32(LWPCB_COUNTER(lb.event_offset, id), interval);
        }
    }

    llwpcb(lb.cb);

    if (__slwpcb() != lb.cb) {
        fail("LLWPCB did not enable LWP");
    }
    lb.flags = cb_read32(LWPCB_FLAGS);
    for (int id = 1; id <= LWP_NUM_EVENTS; id++) {
        lb.interval[id] = cb_read32(LWPCB_INTERVAL(lb.event_offset, id));
    }
    if (!lb.thread && !(lb.flags & LWP_FEAT_INT)) {
        fail("LLWPCB did not enable the threshold interrupt");
    }
    lb.active = 1;
    /* The consumer thread starts with LWP disabled (choice 36) */
    if (lb.thread && pthread_create(&lb.consumer, NULL, consumer, NULL)) {
        fail("pthread_create failed");
    }
}

__attribute__((destructor))
static void lwp_preload_stop(void)
{
    const char *out = getenv("LWP_BENCH_OUT");
    char line[512];
    uint64_t other;
    int n, fd = 2;

    if (!lb.active) {
        return;
    }
    lb.active = 0;
    /* LLWPCB 0 flushes the head pointer and the counters, then disables */
    llwpcb(NULL);
    if (lb.thread) {
        __atomic_store_n(&lb.stop, 1, __ATOMIC_RELEASE);
        pthread_join(lb.consumer, NULL);
    } else {
        sigset_t io;

        /* a SIGIO still queued must not drain at the same time */
        sigemptyset(&io);
        sigaddset(&io, SIGIO);
        sigprocmask(SIG_BLOCK, &io, NULL);
    }
    drain();

    n = snprintf(line, sizeof(line), "lwp-preload: flags=0x%x", lb.flags);
    for (int id = 1; id <= LWP_NUM_EVENTS; id++) {
        if (lb.flags & (1u << id)) {
            n += snprintf(line + n, sizeof(line) - n, " interval%d=%u",
                          id, lb.interval[id]);
        }
    }
    n += snprintf(line + n, sizeof(line) - n, " records=%llu",
                  (unsigned long long)lb.records);
    for (int id = 1; id <= LWP_NUM_EVENTS; id++) {
        n += snprintf(line + n, sizeof(line) - n, " ev%d=%llu",
                      id, (unsigned long long)lb.count[id]);
    }
    other = lb.records;
    for (int id = 1; id <= LWP_NUM_EVENTS; id++) {
        other -= lb.count[id];
    }
    other -= lb.count[LWP_EVENT_ID_INS];
    n += snprintf(line + n, sizeof(line) - n,
                  " ev255=%llu other=%llu missed=%llu drains=%llu\n",
                  (unsigned long long)lb.count[LWP_EVENT_ID_INS],
                  (unsigned long long)other,
                  (unsigned long long)cb_read64(LWPCB_MISSED),
                  (unsigned long long)lb.drains);
    if (out && *out) {
        fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            fd = 2;
        }
    }
    if (write(fd, line, n) != n) {
        /* nothing useful to do at exit */
    }
    if (fd != 2) {
        close(fd);
    }
}
