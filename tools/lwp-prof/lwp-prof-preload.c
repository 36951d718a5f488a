/*
 * lwp-prof-preload.so: the recorder that runs inside the profiled program
 *
 * Loaded by `lwp-prof record` with LD_PRELOAD (docs/lwp-prof.md).  It
 * enables LWP in every thread of an unmodified, dynamically linked
 * program and appends what LWP stores to the record file:
 *
 * - The main thread is enabled by the constructor.  LWP is per thread and
 *   a new thread starts with LWP disabled (docs/linux.md, "The LWP ABI"),
 *   so pthread_create is interposed: the new thread runs a start routine
 *   that gives it its own LWPCB and ring before the program's.
 * - Each thread's ring is drained by the threshold signal, SIGIO with
 *   si_code POLL_IN and si_fd -1, which goes to the thread whose record
 *   crossed the threshold.  The handler runs with LWP disabled and
 *   BufferHeadOffset current: it writes the records between the tail and
 *   the head to the file in one write and moves the tail.
 * - A thread that ends (a TSD destructor) and the thread that runs exit()
 *   (the library's destructor) execute LLWPCB 0, which flushes the head,
 *   and drain what is left.
 * - sigaction and signal are interposed: a program that installs its own
 *   SIGIO handler is reported (stderr and a NOTE chunk); lwp-prof keeps
 *   the signal and forwards to the program's handler every SIGIO that is
 *   not LWP's.  A program that loads its own LWPCB is reported at the
 *   first threshold signal that interrupts it (the signal frame's
 *   component 62 holds another LWPCB; the signal is then the program's and
 *   is forwarded), else when its thread ends (SLWPCB no longer returns
 *   ours).
 * - pthread_sigmask and sigprocmask are interposed to keep SIGIO
 *   unblocked; a SIGIO of the program's own that comes while the program
 *   blocks it is held until the program unblocks it (sigsuspend too) or
 *   takes it with sigwait, sigwaitinfo or sigtimedwait (interposed too,
 *   with sigpending).
 *
 * - fork is followed: the child gets its own LWPCB and ring
 *   (child_after_fork), its chunks carry its pid.
 * - exec is followed: a program that a profiled one execs gets this
 *   library from LD_PRELOAD and LWP_PROF_OUT and LWP_PROF_EXECED from the
 *   environment.  qemu-x86_64 runs an exec'd program natively, without
 *   LWP: the library in it runs it again under the same qemu
 *   (run_with_lwp).  A program that cannot load the library (statically
 *   linked, set-user-ID) is counted, not profiled (exec_target).
 *
 * Environment (set by lwp-prof record): LWP_PROF_OUT, the record file;
 * LWP_PROF_EVENTS, "ire:N,bre:N,..."; LWP_PROF_RING_KB and
 * LWP_PROF_THRESHOLD_KB; LWP_PROF_PROCESSES, the record file again;
 * LWP_PROF_QEMU_CMD, qemu-x86_64 and its options, a line each (not with
 * --native), and LWP_PROF_QEMU_ENV, a variable for qemu's environment;
 * LWP_PROF_NO_FOLLOW_EXEC (record --no-follow-exec); LWP_PROF_QUIET,
 * when set, keeps the notes and warnings out of stderr (they are in the
 * file); LWP_PROF_STACKS (record -g).  lwp-prof record
 * sets LWP_PROF_EXECED=0, which the library makes 1 for the programs the
 * profiled one execs, and LWP_PROF_REEXEC=PID while it runs one again
 * under qemu.  The environment is changed in environ itself, not with
 * setenv or unsetenv, which a program may define (bash does).
 * Without LWP_PROF_OUT the library profiles nothing; with --no-follow-exec
 * the constructor removes it, and an exec'd program is counted instead: a
 * program exec'd with LWP_PROF_PROCESSES and this library in its
 * environment appends a PROCESS chunk.  A failure to set up LWP in the
 * main thread ends the program with status 125 and a message.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <cpuid.h>
#include <dlfcn.h>
#include <errno.h>
#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>
#include <x86intrin.h>

#include "lwp/lwp-arch.h"
#include "lwp-prof-format.h"

#define TLS __attribute__((tls_model("initial-exec")))
#define XSTATE_MAGIC1 0x46505853u  /* fx_sw_bytes.magic1 of an XSAVE frame */

static const char *const event_names[LWP_NUM_EVENTS + 1] = {
    NULL, "val", "ire", "bre", "dme", "cnh", "rnh",
};

struct thr {
    uint8_t *cb;
    uint8_t *ring;
    uint32_t pid;           /* its process: a vfork child shares the struct */
    uint32_t tid;
    uint32_t seq;
    uint64_t records;
    int active;
    int own_noted;          /* the program's own LWPCB is reported */
    struct thr *next;       /* the registry of profiled threads */
};

static struct {
    int fd;                 /* the record file, O_APPEND; -1: off */
    uint32_t want;          /* LWPCB.Flags asked for */
    uint32_t interval[LWP_NUM_EVENTS + 1];
    uint32_t ring_size;
    uint32_t threshold;
    uint32_t event_offset;
    pthread_key_t key;
    int threads;            /* threads profiled now */
    uint32_t seq;           /* threads created (the main thread is 1) */
    uint64_t records;       /* records of every thread */
    int sigio_noted;
    uint32_t xs_offset;     /* component 62 in the XSAVE area, CPUID 0xD */
    int flushing;           /* exit: other threads flush on SIGIO */
    pthread_mutex_t lock;   /* the registry */
    struct thr *all;
    struct sigaction prog_sigio;    /* the program's SIGIO disposition */
    char *processes;        /* LWP_PROF_PROCESSES: where others are counted */
    int io_held;            /* a SIGIO the program blocks came: io_info */
    siginfo_t io_info;
    int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
    int (*real_pthread_sigmask)(int, const sigset_t *, sigset_t *);
    int (*real_sigprocmask)(int, const sigset_t *, sigset_t *);
    int (*real_sigtimedwait)(const sigset_t *, siginfo_t *,
                             const struct timespec *);
    int mask_noted;
    int quiet;              /* LWP_PROF_QUIET: notes go to the file only */
    int stacks;             /* LWP_PROF_STACKS: record -g */
    int (*real_pthread_create)(pthread_t *, const pthread_attr_t *,
                               void *(*)(void *), void *);
    void *(*real_dlopen)(const char *, int);
} g = { .fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

static __thread struct thr *self TLS;
/* The program blocks SIGIO in this thread (lwp-prof keeps it unblocked) */
static __thread int io_blocked TLS;

static uint32_t gettid_(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

static void fail(const char *msg)
{
    fprintf(stderr, "lwp-prof: %s\n", msg);
    _exit(125);
}

static uint32_t cb_read32(struct thr *t, uint32_t off)
{
    return __atomic_load_n((uint32_t *)(t->cb + off), __ATOMIC_ACQUIRE);
}

static uint64_t cb_read64(struct thr *t, uint32_t off)
{
    return __atomic_load_n((uint64_t *)(t->cb + off), __ATOMIC_ACQUIRE);
}

static void cb_write32(struct thr *t, uint32_t off, uint32_t v)
{
    __atomic_store_n((uint32_t *)(t->cb + off), v, __ATOMIC_RELEASE);
}

static void cb_write64(struct thr *t, uint32_t off, uint64_t v)
{
    __atomic_store_n((uint64_t *)(t->cb + off), v, __ATOMIC_RELEASE);
}

static void llwpcb(void *cb)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __llwpcb(cb);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void *slwpcb(void)
{
    void *p;

    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    p = __slwpcb();
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return p;
}

/* One chunk in one write (async-signal-safe; O_APPEND keeps it whole) */
static void put_chunk(uint32_t type, const struct iovec *parts, int n)
{
    static const uint8_t zero[8];
    struct iovec iov[6];
    uint32_t hdr[2] = { type, 0 };
    size_t size = 0;
    int i;

    if (g.fd < 0 || n > 4) {
        return;
    }
    iov[0].iov_base = hdr;
    iov[0].iov_len = sizeof(hdr);
    for (i = 0; i < n; i++) {
        iov[i + 1] = parts[i];
        size += parts[i].iov_len;
    }
    hdr[1] = (uint32_t)size;
    iov[n + 1].iov_base = (void *)zero;
    iov[n + 1].iov_len = (8 - size % 8) % 8;
    if (writev(g.fd, iov, n + 2) < 0) {
        /* nothing to do: lwp-prof record checks the file */
    }
}

static void put_text(uint32_t type, const char *text, size_t len)
{
    struct iovec v = { (void *)text, len };

    put_chunk(type, &v, 1);
}

/*
 * A NOTE chunk, also on stderr without -q: a note, or a warning (some of
 * the profile is lost; the report shows both)
 */
static void vnote(int warning, const char *fmt, va_list ap)
{
    char line[512];
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);

    if (n < 0) {
        return;
    }
    if (n > (int)sizeof(line) - 2) {
        n = sizeof(line) - 2;
    }
    put_text(LWPPROF_NOTE, line, n);
    line[n] = '\n';
    (void)warning;
    if (g.quiet) {
        return;
    }
    if (write(2, "lwp-prof: ", 10) < 0 || write(2, line, n + 1) < 0) {
        /* stderr closed */
    }
}

static void note(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vnote(0, fmt, ap);
    va_end(ap);
}

static void warn(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vnote(1, fmt, ap);
    va_end(ap);
}

struct text {
    char *buf;
    size_t len, cap;
};

static void add_text(struct text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += n;
            return;
        }
        char *nb = realloc(t->buf, t->cap * 2 + n + 1);

        if (!nb) {
            return;
        }
        t->buf = nb;
        t->cap = t->cap * 2 + n + 1;
    }
}

/* One line of OBJECTS: the loaded object's file, build-id, size, mtime */
static int object_line(struct dl_phdr_info *info, size_t size, void *p)
{
    char path[PATH_MAX], id[2 * 64 + 1] = "";
    const char *name = info->dlpi_name;
    struct stat st;

    (void)size;
    if (!name || !*name) {
        name = "/proc/self/exe";    /* the program */
    }
    if (name[0] != '/' || !realpath(name, path) || stat(path, &st)) {
        return 0;                   /* the vDSO */
    }
    for (int i = 0; i < info->dlpi_phnum && !id[0]; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const uint8_t *n = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = n + ph->p_memsz;

        while (ph->p_type == PT_NOTE && n + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)n;
            const uint8_t *desc = n + sizeof(*nh) + ((nh->n_namesz + 3) & ~3u);

            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                !memcmp(n + sizeof(*nh), "GNU", 4) && nh->n_descsz <= 64 &&
                desc + nh->n_descsz <= end) {
                for (unsigned k = 0; k < nh->n_descsz; k++) {
                    snprintf(id + 2 * k, 3, "%02x", desc[k]);
                }
                break;
            }
            n = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    add_text(p, "%s\t%s\t%lld\t%lld.%09ld\n", path, id, (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    return 0;
}

/*
 * The OBJECTS chunk: each loaded object's build-id, and its file's size
 * and mtime, so that the report sees a file that changed since
 */
static void put_objects(void)
{
    struct text t = { malloc(4096), 0, 4096 };

    if (!t.buf) {
        return;
    }
    dl_iterate_phdr(object_line, &t);
    put_text(LWPPROF_OBJECTS, t.buf, t.len);
    free(t.buf);
}

/* The MAPS chunk, then OBJECTS */
static void put_maps(void)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    ssize_t r;

    if (fd < 0) {
        return;
    }
    for (;;) {
        if (cap - len < 4096) {
            char *nb = realloc(buf, cap ? cap * 2 : 65536);

            if (!nb) {
                break;
            }
            buf = nb;
            cap = cap ? cap * 2 : 65536;
        }
        r = read(fd, buf + len, cap - len);
        if (r <= 0) {
            break;
        }
        len += r;
    }
    close(fd);
    if (buf) {
        char pid[32];
        struct iovec v[2] = { { pid, 0 }, { buf, len } };

        v[0].iov_len = snprintf(pid, sizeof(pid), "pid %d\n", (int)getpid());
        put_chunk(LWPPROF_MAPS, v, 2);
    }
    free(buf);
    put_objects();
}

/* Write the records in [tail, head) and move the tail to the head */
static void drain(struct thr *t)
{
    uint32_t head = cb_read32(t, LWPCB_HEAD);
    uint32_t tail = cb_read32(t, LWPCB_TAIL);
    uint32_t hdr[2], n;
    struct iovec v[3];
    int parts = 1;

    if (head >= g.ring_size || tail >= g.ring_size || head == tail) {
        return;
    }
    hdr[0] = t->tid;
    v[0].iov_base = hdr;
    v[0].iov_len = sizeof(hdr);
    if (head > tail) {
        v[parts].iov_base = t->ring + tail;
        v[parts++].iov_len = head - tail;
    } else {
        v[parts].iov_base = t->ring + tail;
        v[parts++].iov_len = g.ring_size - tail;
        if (head) {
            v[parts].iov_base = t->ring;
            v[parts++].iov_len = head;
        }
    }
    n = (uint32_t)((v[1].iov_len + (parts > 2 ? v[2].iov_len : 0)) /
                   LWP_EVENT_RECORD_SIZE);
    hdr[1] = n;
    put_chunk(LWPPROF_RECORDS, v, parts);
    t->records += n;
    __atomic_add_fetch(&g.records, n, __ATOMIC_RELAXED);
    cb_write32(t, LWPCB_TAIL, head);
}

static int lwp_signal(const siginfo_t *si)
{
    return si && si->si_code == POLL_IN && si->si_fd == -1;
}

static void forward_sigio(int sig, siginfo_t *si, void *uc)
{
    struct sigaction *p = &g.prog_sigio;

    if (p->sa_flags & SA_SIGINFO) {
        if (p->sa_sigaction) {
            p->sa_sigaction(sig, si, uc);
        }
    } else if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
        p->sa_handler(sig);
    }
}

/*
 * The threshold signal.  It runs with LWP disabled (SLWPCB returns 0), so
 * the drain stores no records.  Any other SIGIO goes to the program's
 * handler, if it has one.
 */
static void put_stop(struct thr *t)
{
    struct lwpprof_thread rec = { 0 };
    struct iovec v = { &rec, sizeof(rec) };

    rec.tid = t->tid;
    rec.seq = t->seq;
    rec.pid = (uint32_t)getpid();
    rec.kind = LWPPROF_THREAD_STOP;
    rec.missed = cb_read64(t, LWPCB_MISSED);
    rec.records = t->records;
    put_chunk(LWPPROF_THREAD, &v, 1);
}

/*
 * The LWPCB address and BufferHeadOffset of the interrupted context, from
 * the signal frame's XSAVE area (component 62): 0 when the frame has no
 * XSAVE area or LWP is off in it
 */
static int frame_lwp(ucontext_t *uc, uint64_t *cbaddr, uint32_t *head)
{
    uint8_t *fx = uc ? (uint8_t *)uc->uc_mcontext.fpregs : NULL;
    uint64_t bv;

    if (!fx || *(uint32_t *)(fx + 464) != XSTATE_MAGIC1 || !g.xs_offset) {
        return 0;
    }
    memcpy(&bv, fx + 512, 8);
    if (!((bv >> LWP_XSTATE_BIT) & 1)) {
        return 0;
    }
    memcpy(cbaddr, fx + g.xs_offset + LWP_XS_CBADDR, 8);
    memcpy(head, fx + g.xs_offset + LWP_XS_HEAD, 4);
    return *cbaddr != 0;
}

/* The program loaded its own LWPCB in this thread: say so, once */
static void own_lwpcb(struct thr *t, uint64_t cur, const char *when)
{
    if (t->own_noted) {
        return;
    }
    t->own_noted = 1;
    warn("lwp-in-use: thread %u: the program changed the thread's LWPCB "
         "(SLWPCB is %p, not lwp-prof's %p; found %s): its own use of LWP "
         "replaced lwp-prof's, whose records stop there", t->tid,
         (void *)(uintptr_t)cur, (void *)t->cb, when);
}

/*
 * exit() in another thread asked this one to flush (lwp_prof_stop).  The
 * LWPCB's head is stale until a threshold or LLWPCB, but the interrupted
 * context's LWP state is in the frame's XSAVE area (docs/linux.md, "The
 * LWP ABI"): drain up to its head, then clear XSTATE_BV[62] so that the
 * thread returns with LWP off.
 */
static void flush_from_frame(struct thr *t, ucontext_t *uc)
{
    uint8_t *fx = (uint8_t *)uc->uc_mcontext.fpregs;
    uint64_t bv, cbaddr;
    uint32_t head;

    if (!frame_lwp(uc, &cbaddr, &head)) {
        return;
    }
    if (cbaddr != (uintptr_t)t->cb) {
        own_lwpcb(t, cbaddr, "at exit");
        return;     /* the program's own LWPCB: its thread end turns it off */
    }
    cb_write32(t, LWPCB_HEAD, head);
    drain(t);
    memcpy(&bv, fx + 512, 8);
    bv &= ~(1ull << LWP_XSTATE_BIT);
    memcpy(fx + 512, &bv, 8);
    put_stop(t);
    __atomic_store_n(&t->active, 0, __ATOMIC_RELEASE);
}

/*
 * record -g: the threshold is one record, so the signal comes right after
 * each record's instruction (in the same translation block, in
 * qemu-x86_64): the stack of the interrupted context, which backtrace
 * unwinds through the signal frame, is the record's, or its caller's
 * when the block ended with a call or return (the report tells them
 * apart).  Written after the drain of the newest record at @head.
 */
static void put_stack(struct thr *t, ucontext_t *uc, uint32_t head)
{
    void *bt[LWPPROF_STACK_MAX + 8];
    struct lwpprof_stack h = { 0 };
    uint64_t rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    int n = backtrace(bt, LWPPROF_STACK_MAX + 8), i, from = -1;
    struct iovec v[2];

    for (i = 0; i < n && from < 0; i++) {
        if ((uint64_t)(uintptr_t)bt[i] == rip) {
            from = i;
        }
    }
    if (from < 0) {
        return;
    }
    memcpy(&h.ip, t->ring + (head + g.ring_size - LWP_EVENT_RECORD_SIZE) %
                            g.ring_size + 8, 8);
    h.tid = t->tid;
    h.rip = rip;
    h.depth = (uint32_t)(n - from - 1);
    v[0].iov_base = &h;
    v[0].iov_len = sizeof(h);
    v[1].iov_base = bt + from + 1;
    v[1].iov_len = h.depth * sizeof(void *);
    put_chunk(LWPPROF_STACK, v, 2);
}

static void on_sigio(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    struct thr *t = self;
    uint64_t cbaddr;
    uint32_t head;

    if (lwp_signal(si) && t && t->active) {
        /*
         * LWP's threshold signal.  When the interrupted context runs
         * another LWPCB, the program loaded its own: the threshold is
         * that LWPCB's, so the signal is the program's too
         */
        uint32_t newest = cb_read32(t, LWPCB_HEAD);
        int fresh = newest != cb_read32(t, LWPCB_TAIL);

        drain(t);
        if (g.stacks && fresh && newest < g.ring_size) {
            put_stack(t, uc, newest);
        }
        if (frame_lwp(uc, &cbaddr, &head) && cbaddr != (uintptr_t)t->cb) {
            own_lwpcb(t, cbaddr, "at a threshold signal");
            forward_sigio(sig, si, uc);
        }
    } else if (si && si->si_code == SI_TKILL && si->si_pid == getpid() &&
               __atomic_load_n(&g.flushing, __ATOMIC_ACQUIRE) && t &&
               t->active) {
        flush_from_frame(t, uc);
    } else if (io_blocked) {
        /* The program's SIGIO, which it blocks: pending until it takes it */
        if (si) {
            g.io_info = *si;
        }
        __atomic_store_n(&g.io_held, 1, __ATOMIC_RELEASE);
    } else {
        forward_sigio(sig, si, uc);
    }
    errno = saved;
}

/* Give the calling thread its LWPCB and ring: 0, or a reason */
static const char *thread_start(struct thr *t)
{
    void *old = slwpcb();
    struct lwpprof_thread rec = { 0 };
    struct iovec v = { &rec, sizeof(rec) };
    const char *why = NULL;
    uint32_t flags;

    t->tid = gettid_();
    t->pid = (uint32_t)getpid();
    if (old) {
        return "LWP is already enabled in this thread (SLWPCB is not 0)";
    }
    t->cb = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    t->ring = mmap(NULL, g.ring_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (t->cb == MAP_FAILED || t->ring == MAP_FAILED) {
        return "mmap of the LWPCB or the ring failed";
    }
    cb_write32(t, LWPCB_FLAGS, g.want);
    cb_write32(t, LWPCB_BUFFER_SIZE, g.ring_size);
    cb_write64(t, LWPCB_BUFFER_BASE, (uintptr_t)t->ring);
    cb_write32(t, LWPCB_THRESHOLD, g.threshold);
    for (int id = 1; id <= LWP_NUM_EVENTS; id++) {
        if (g.want & (1u << id)) {
            cb_write32(t, LWPCB_INTERVAL(g.event_offset, id), g.interval[id]);
            cb_write32(t, LWPCB_COUNTER(g.event_offset, id), g.interval[id]);
        }
    }
    /*
     * The threshold signal can come before this function returns (a small
     * ring fills during the lazy binding of what follows): the handler
     * must find the thread's ring from the start.  A signal it ignored
     * would be the last: a full ring does not advance its head, and LWP
     * interrupts only when the head advances (spec 5.3, Table 6-1).
     */
    self = t;
    __atomic_store_n(&t->active, 1, __ATOMIC_RELEASE);
    llwpcb(t->cb);
    flags = cb_read32(t, LWPCB_FLAGS);
    if (slwpcb() != t->cb) {
        why = "LLWPCB did not enable LWP";
    } else if (!(flags & LWP_FEAT_INT) || !(flags & LWP_FEAT_EVENTS_MASK)) {
        why = "LLWPCB did not enable the events or the threshold interrupt";
    }
    if (why) {
        llwpcb(NULL);
        __atomic_store_n(&t->active, 0, __ATOMIC_RELEASE);
        self = NULL;
        return why;
    }
    __atomic_add_fetch(&g.threads, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&g.lock);
    t->next = g.all;
    g.all = t;
    pthread_mutex_unlock(&g.lock);
    pthread_setspecific(g.key, t);
    rec.tid = t->tid;
    rec.seq = t->seq;
    rec.pid = (uint32_t)getpid();
    rec.kind = LWPPROF_THREAD_START;
    put_chunk(LWPPROF_THREAD, &v, 1);
    return NULL;
}

static int real_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    if (!g.real_pthread_sigmask) {
        *(void **)&g.real_pthread_sigmask = dlsym(RTLD_NEXT,
                                                  "pthread_sigmask");
        if (!g.real_pthread_sigmask) {
            return ENOSYS;
        }
    }
    return g.real_pthread_sigmask(how, set, old);
}

static void note_sigmask(void)
{
    if (!__atomic_exchange_n(&g.mask_noted, 1, __ATOMIC_RELAXED)) {
        note("sigmask: the program blocks SIGIO; lwp-prof leaves it "
             "unblocked for LWP's threshold signal and holds the "
             "program's own SIGIO until it unblocks or waits for it");
    }
}

/*
 * A set without SIGIO: LWP's threshold signal must reach every profiled
 * thread, or its ring fills and LWP counts MissedEvents.  io_blocked
 * keeps what the program asked for
 */
static const sigset_t *keep_sigio(int how, const sigset_t *set, sigset_t *tmp)
{
    int io;

    if (!set || g.fd < 0) {
        return set;
    }
    io = sigismember(set, SIGIO);
    if (how == SIG_SETMASK || io) {
        io_blocked = how != SIG_UNBLOCK && io;
    }
    if (how == SIG_UNBLOCK || !io) {
        return set;
    }
    *tmp = *set;
    sigdelset(tmp, SIGIO);
    note_sigmask();
    return tmp;
}

/*
 * The program unblocked SIGIO: one that came while it was blocked is
 * sent again, now that the program's handler can have it
 */
static void release_sigio(void)
{
    siginfo_t si;

    if (io_blocked || !__atomic_exchange_n(&g.io_held, 0, __ATOMIC_ACQUIRE)) {
        return;
    }
    si = g.io_info;
    if (syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid_(), SIGIO, &si)) {
        forward_sigio(SIGIO, &si, NULL);
    }
}

/* pthread_sigmask and sigprocmask: the old set is the program's view */
static int change_mask(int (*real)(int, const sigset_t *, sigset_t *),
                       int how, const sigset_t *set, sigset_t *old)
{
    sigset_t tmp;
    int was = io_blocked, r;

    r = real(how, keep_sigio(how, set, &tmp), old);
    if (r) {
        io_blocked = was;
        return r;
    }
    if (old && g.fd >= 0 && was) {
        sigaddset(old, SIGIO);
    }
    release_sigio();
    return 0;
}

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    return change_mask(real_sigmask, how, set, old);
}

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    if (!g.real_sigprocmask) {
        *(void **)&g.real_sigprocmask = dlsym(RTLD_NEXT, "sigprocmask");
        if (!g.real_sigprocmask) {
            errno = ENOSYS;
            return -1;
        }
    }
    return change_mask(g.real_sigprocmask, how, set, old);
}

/*
 * sigwait, sigwaitinfo and sigtimedwait of a set with SIGIO: a SIGIO held
 * for the program is taken first.  Then SIGIO is blocked for real during
 * the wait, so that the kernel hands the program's SIGIO to the wait, not
 * to the handler; a threshold signal of LWP that the wait takes (one
 * raised before it) is drained and waited past.
 */
static int wait_signal(const sigset_t *set, siginfo_t *info,
                       const struct timespec *timeout)
{
    sigset_t io, old;
    siginfo_t si;
    int r, e;

    if (!g.real_sigtimedwait) {
        *(void **)&g.real_sigtimedwait = dlsym(RTLD_NEXT, "sigtimedwait");
        if (!g.real_sigtimedwait) {
            errno = ENOSYS;
            return -1;
        }
    }
    if (g.fd < 0 || !set || !sigismember(set, SIGIO)) {
        return g.real_sigtimedwait(set, info, timeout);
    }
    sigemptyset(&io);
    sigaddset(&io, SIGIO);
    real_sigmask(SIG_BLOCK, &io, &old);
    for (;;) {
        if (__atomic_exchange_n(&g.io_held, 0, __ATOMIC_ACQUIRE)) {
            si = g.io_info;
            if (si.si_code == SI_TKILL) {
                si.si_code = SI_USER;   /* as glibc's sigtimedwait says it */
            }
            r = SIGIO;
            break;
        }
        r = g.real_sigtimedwait(set, &si, timeout);
        if (r != SIGIO || !lwp_signal(&si) || !self || !self->active) {
            break;
        }
        drain(self);
    }
    e = errno;
    real_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    if (r > 0 && info) {
        *info = si;
    }
    return r;
}

int sigtimedwait(const sigset_t *set, siginfo_t *info,
                 const struct timespec *timeout)
{
    return wait_signal(set, info, timeout);
}

int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
    return wait_signal(set, info, NULL);
}

int sigwait(const sigset_t *set, int *sig)
{
    int r;

    do {
        r = wait_signal(set, NULL, NULL);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        return errno;
    }
    *sig = r;
    return 0;
}

/* The next definition of @name (the libc function this one hooks) */
static void *real_fn(void **slot, const char *name)
{
    if (!*slot) {
        *slot = dlsym(RTLD_NEXT, name);
    }
    return *slot;
}

/*
 * sigsuspend: LWP's threshold signal stays unblocked during the wait (it
 * may wake it: a signal was caught).  A SIGIO held for the program, which
 * @mask unblocks, is the signal it waits for: sent again, it is caught at
 * once and sigsuspend returns.
 */
int sigsuspend(const sigset_t *mask)
{
    static void *real;
    int (*fn)(const sigset_t *);
    int was = io_blocked, r;
    sigset_t tmp;

    *(void **)&fn = real_fn(&real, "sigsuspend");
    if (!fn) {
        errno = ENOSYS;
        return -1;
    }
    if (g.fd < 0) {
        return fn(mask);
    }
    io_blocked = sigismember(mask, SIGIO) == 1;
    if (!io_blocked && __atomic_load_n(&g.io_held, __ATOMIC_ACQUIRE)) {
        release_sigio();    /* its handler runs before this returns */
        io_blocked = was;
        errno = EINTR;
        return -1;
    }
    tmp = *mask;
    sigdelset(&tmp, SIGIO);
    r = fn(&tmp);
    io_blocked = was;
    return r;
}

int sigpending(sigset_t *set)
{
    int r = syscall(SYS_rt_sigpending, set, _NSIG / 8);

    if (!r && g.fd >= 0 && __atomic_load_n(&g.io_held, __ATOMIC_ACQUIRE)) {
        sigaddset(set, SIGIO);
    }
    return r;
}

/* Turn LWP off in the calling thread and write what is left */
static void thread_stop(struct thr *t)
{
    sigset_t io, old;
    void *cur;

    if (!t) {
        return;
    }
    sigemptyset(&io);
    sigaddset(&io, SIGIO);
    real_sigmask(SIG_BLOCK, &io, &old);
    if (!t->active) {
        real_sigmask(SIG_SETMASK, &old, NULL);
        return;
    }
    cur = slwpcb();
    if (cur != t->cb) {
        own_lwpcb(t, (uintptr_t)cur, "when the thread ended");
    }
    llwpcb(NULL);   /* flushes the head (and the program's LWPCB, if any) */
    t->active = 0;
    drain(t);
    put_stop(t);
    __atomic_sub_fetch(&g.threads, 1, __ATOMIC_RELAXED);
    self = NULL;
    real_sigmask(SIG_SETMASK, &old, NULL);
}

/* The thread's struct stays in the registry (exit may look at it) */
static void key_destructor(void *p)
{
    thread_stop(p);
}

struct start {
    void *(*fn)(void *);
    void *arg;
    uint32_t seq;
    int io_blocked;         /* the creator's, which the thread inherits */
};

static void *thread_trampoline(void *p)
{
    struct start s = *(struct start *)p;
    struct thr *t = calloc(1, sizeof(*t));
    const char *why;
    sigset_t io;

    free(p);
    io_blocked = s.io_blocked;
    /*
     * The creator may have blocked every signal for the new thread (liblzma
     * does): the threshold signal must get through
     */
    sigemptyset(&io);
    sigaddset(&io, SIGIO);
    real_sigmask(SIG_UNBLOCK, &io, NULL);
    if (t && g.fd >= 0) {
        t->seq = s.seq;
        why = thread_start(t);
        if (why) {
            warn("thread %u not profiled: %s", gettid_(), why);
            free(t);
        }
    } else {
        free(t);
    }
    return s.fn(s.arg);
}

int pthread_create(pthread_t *th, const pthread_attr_t *attr,
                   void *(*fn)(void *), void *arg)
{
    struct start *s;

    if (!g.real_pthread_create) {
        *(void **)&g.real_pthread_create = dlsym(RTLD_NEXT, "pthread_create");
        if (!g.real_pthread_create) {
            return EAGAIN;
        }
    }
    if (g.fd < 0 || !(s = malloc(sizeof(*s)))) {
        return g.real_pthread_create(th, attr, fn, arg);
    }
    s->fn = fn;
    s->arg = arg;
    s->seq = __atomic_add_fetch(&g.seq, 1, __ATOMIC_RELAXED);
    s->io_blocked = io_blocked;
    int r = g.real_pthread_create(th, attr, thread_trampoline, s);
    if (r) {
        free(s);
    }
    return r;
}

static int call_sigaction(int sig, const struct sigaction *act,
                          struct sigaction *old)
{
    if (!g.real_sigaction) {
        *(void **)&g.real_sigaction = dlsym(RTLD_NEXT, "sigaction");
        if (!g.real_sigaction) {
            errno = ENOSYS;
            return -1;
        }
    }
    return g.real_sigaction(sig, act, old);
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (sig != SIGIO || g.fd < 0) {
        return call_sigaction(sig, act, old);
    }
    if (old) {
        *old = g.prog_sigio;
    }
    if (act) {
        int handler = (act->sa_flags & SA_SIGINFO) ||
                      (act->sa_handler != SIG_DFL &&
                       act->sa_handler != SIG_IGN);

        g.prog_sigio = *act;
        if (handler && !g.sigio_noted) {
            g.sigio_noted = 1;
            note("sigio: the program installs its own SIGIO handler; "
                 "lwp-prof keeps SIGIO for LWP's threshold signal and "
                 "forwards every other SIGIO to the program's handler "
                 "(without its sa_mask and flags)");
        }
    }
    return 0;
}

sighandler_t signal(int sig, sighandler_t h)
{
    struct sigaction sa, old;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = h;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &old)) {
        return SIG_ERR;
    }
    return old.sa_handler;
}

void *dlopen(const char *file, int mode)
{
    void *h;

    if (!g.real_dlopen) {
        *(void **)&g.real_dlopen = dlsym(RTLD_NEXT, "dlopen");
        if (!g.real_dlopen) {
            return NULL;
        }
    }
    h = g.real_dlopen(file, mode);
    if (h && g.fd >= 0) {
        put_maps();
    }
    return h;
}

static uint32_t env_number(const char *name, uint32_t dflt, uint32_t max)
{
    const char *s = getenv(name);
    unsigned long v;
    char junk;

    if (!s || !*s) {
        return dflt;
    }
    if (sscanf(s, "%lu%c", &v, &junk) != 1 || v > max) {
        fprintf(stderr, "lwp-prof: %s=%s: not a number up to %u\n",
                name, s, max);
        _exit(125);
    }
    return (uint32_t)v;
}

/* "ire:N,bre:N": the events and their intervals */
static void parse_events(const char *s)
{
    char *copy = strdup(s), *save = NULL, *tok;

    if (!copy) {
        fail("out of memory");
    }
    for (tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':'), *end;
        unsigned long v = 100000;
        int id;

        if (colon) {
            *colon = 0;
            errno = 0;
            v = strtoul(colon + 1, &end, 0);
            if (errno || *end || end == colon + 1 || v > LWPCB_INTERVAL_MAX) {
                fail("LWP_PROF_EVENTS: an interval is not a number up to "
                     "0x1ffffff");
            }
        }
        for (id = 1; id <= LWP_NUM_EVENTS; id++) {
            if (!strcmp(tok, event_names[id])) {
                break;
            }
        }
        if (id > LWP_NUM_EVENTS || id == LWP_EVENT_ID_VAL) {
            fail("LWP_PROF_EVENTS: unknown event (ire, bre, dme, cnh, rnh)");
        }
        g.want |= 1u << id;
        g.interval[id] = (uint32_t)v;
    }
    free(copy);
}

static void put_info(struct thr *t)
{
    char buf[4096], exe[1024];
    int n = 0;
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    uint32_t flags = cb_read32(t, LWPCB_FLAGS);

    exe[len > 0 ? len : 0] = 0;
    n += snprintf(buf + n, sizeof(buf) - n, "pid=%d\nexe=%s\nflags=0x%x\n",
                  (int)getpid(), exe, flags);
    for (int id = 2; id <= LWP_NUM_EVENTS; id++) {
        if (flags & (1u << id)) {
            n += snprintf(buf + n, sizeof(buf) - n, "interval.%s=%u\n",
                          event_names[id],
                          cb_read32(t, LWPCB_INTERVAL(g.event_offset, id)));
        }
    }
    n += snprintf(buf + n, sizeof(buf) - n,
                  "ring_bytes=%u\nthreshold_bytes=%u\n",
                  g.ring_size, g.threshold);
    put_text(LWPPROF_INFO, buf, n);
}

/*
 * A process the program started, in the record file: @how, its @pid and
 * @ppid, the program it runs (@path, NULL: this one) and, when it is not
 * profiled, @why
 */
static void put_process_of(uint32_t how, pid_t pid, pid_t ppid,
                           const char *path, const char *why)
{
    struct lwpprof_process rec = { 0 };
    char exe[1024];
    ssize_t len = path ? (ssize_t)strlen(path)
                       : readlink("/proc/self/exe", exe, sizeof(exe));
    struct iovec v[4] = { { &rec, sizeof(rec) },
                          { path ? (void *)path : exe, len > 0 ? len : 0 },
                          { (void *)"\n", why ? 1 : 0 },
                          { (void *)why, why ? strlen(why) : 0 } };

    int opened = 0;

    if (g.fd < 0 && g.processes) {
        g.fd = open(g.processes, O_WRONLY | O_APPEND | O_CLOEXEC);
        opened = g.fd >= 0;
    }
    rec.pid = (uint32_t)pid;
    rec.ppid = (uint32_t)ppid;
    rec.how = how;
    put_chunk(LWPPROF_PROCESS, v, 4);
    if (opened) {
        close(g.fd);
        g.fd = -1;
    }
}

static void put_process(uint32_t how, const char *why)
{
    put_process_of(how, getpid(), getppid(), NULL, why);
}

/* fork(): the registry stays whole for the child (child_after_fork) */
static void fork_prepare(void)
{
    pthread_mutex_lock(&g.lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&g.lock);
}

/*
 * The child of fork() is followed: a stream of its own in the same file,
 * its threads' chunks with its pid.  It starts with LWP disabled
 * (docs/linux.md); the parent's threads are not in it, and their LWPCBs
 * and rings here are copies whose records the parent drains, so they go,
 * and the thread that forked starts again.  A child of a program that
 * lwp-prof does not profile (one the profiled program exec'd) is counted.
 */
static void child_after_fork(void)
{
    struct thr *t, *next, *me = self;
    const char *why;
    sigset_t io;

    if (g.fd < 0) {
        put_process(LWPPROF_PROCESS_FORKED, NULL);
        return;
    }
    pthread_mutex_init(&g.lock, NULL);
    for (t = g.all; t; t = next) {
        next = t->next;
        munmap(t->cb, 4096);
        munmap(t->ring, g.ring_size);
        if (t != me) {
            free(t);
        }
    }
    g.all = NULL;
    g.threads = 0;
    g.records = 0;
    g.flushing = 0;
    g.io_held = 0;      /* a child has no pending signals */
    g.seq = 1;
    self = NULL;
    put_process(LWPPROF_PROCESS_FOLLOWED, NULL);
    if (me) {
        memset(me, 0, sizeof(*me));
    } else {
        me = calloc(1, sizeof(*me));
    }
    if (!me) {
        why = "out of memory";
    } else {
        me->seq = 1;
        why = thread_start(me);
        if (!why) {
            return;
        }
        free(me);
    }
    warn("process %d not profiled: %s", (int)getpid(), why);
    close(g.fd);
    g.fd = -1;
    /* the program's own SIGIO mask and handler, as lwp-prof is not there */
    if (io_blocked) {
        sigemptyset(&io);
        sigaddset(&io, SIGIO);
        real_sigmask(SIG_BLOCK, &io, NULL);
    }
    call_sigaction(SIGIO, &g.prog_sigio, NULL);
}

/*
 * The environment the program's main and the programs it execs get,
 * changed in environ itself: a program may define its own setenv and
 * unsetenv (bash does, for its shell variables, and ignores them before
 * its main), which the constructor's calls would reach
 */
static void env_remove(const char *name)
{
    size_t len = strlen(name);
    char **ep = environ, **dp;

    while (ep && *ep) {
        if (!strncmp(*ep, name, len) && (*ep)[len] == '=') {
            for (dp = ep; (dp[0] = dp[1]); dp++) {
                /* shift the rest down */
            }
        } else {
            ep++;
        }
    }
}

/*
 * LWP_PROF_EXECED=0, which lwp-prof record sets for the program, becomes
 * 1 for the programs it execs: changed in its string, as a new array
 * would be a program's to manage (bash's main frees what it did not make)
 */
static void env_mark_execed(void)
{
    char **ep;

    for (ep = environ; ep && *ep; ep++) {
        if (!strncmp(*ep, "LWP_PROF_EXECED=", 16) && (*ep)[16] == '0') {
            (*ep)[16] = '1';
        }
    }
}

static int cpu_has_lwp(void)
{
    uint32_t a, b, c, d;

    __cpuid(0x80000000, a, b, c, d);
    if (a < LWP_CPUID_LEAF) {
        return 0;
    }
    __cpuid(0x80000001, a, b, c, d);
    if (!((c >> LWP_CPUID_EXT3_BIT) & 1)) {
        return 0;
    }
    __cpuid(LWP_CPUID_LEAF, a, b, c, d);
    return (a & LWP_FEAT_AVAIL) && (a & LWP_FEAT_INT);
}

/*
 * A program that a profiled one exec'd runs where the program ran: with
 * LWP here (qemu-x86_64, or a CPU with LWP), NULL; else qemu-x86_64 runs
 * it, as lwp-prof record ran the program (LWP_PROF_QEMU_CMD: qemu and its
 * options, a line each), with this library in LD_PRELOAD for it and not
 * for qemu.  A qemu-x86_64 runs a program's execve natively: this
 * re-exec is lwp-prof's way to follow it.  Returns why it cannot.
 */
static const char *run_with_lwp(char **argv)
{
    const char *cmd = getenv("LWP_PROF_QEMU_CMD");
    const char *tried = getenv("LWP_PROF_REEXEC");
    const char *ld = getenv("LD_PRELOAD");
    const char *qenv = getenv("LWP_PROF_QEMU_ENV");
    char exe[PATH_MAX], pid[32], *copy, *save = NULL, *tok;
    size_t nargs = 0, nenv = 0, i, n = 0;
    ssize_t len;

    if (cpu_has_lwp()) {
        return NULL;
    }
    if (!cmd || !*cmd) {
        return "this CPU has no LWP";
    }
    snprintf(pid, sizeof(pid), "LWP_PROF_REEXEC=%d", (int)getpid());
    if (tried && !strcmp(tried, pid + 16)) {
        return "qemu-x86_64 gave it no LWP";
    }
    if (!ld || strchr(ld, ',')) {
        return "its LD_PRELOAD has a comma, which qemu's -E cannot pass";
    }
    len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    copy = strdup(cmd);
    if (len <= 0 || !copy || !argv || !argv[0]) {
        return "its executable is not known";
    }
    exe[len] = 0;
    for (i = 0; cmd[i]; i++) {
        nargs += cmd[i] == '\n';
    }
    for (i = 0; argv[i]; i++) {
        nargs++;
    }
    for (i = 0; environ[i]; i++) {
        nenv++;
    }
    char *nargv[nargs + 8], *nenvp[nenv + 3];
    size_t ldlen = strlen(ld) + sizeof("LD_PRELOAD=");
    char ldarg[ldlen];

    for (tok = strtok_r(copy, "\n", &save); tok;
         tok = strtok_r(NULL, "\n", &save)) {
        nargv[n++] = tok;
    }
    snprintf(ldarg, ldlen, "LD_PRELOAD=%s", ld);
    nargv[n++] = "-0";
    nargv[n++] = argv[0];
    nargv[n++] = "-E";
    nargv[n++] = ldarg;
    nargv[n++] = exe;
    for (i = 1; argv[i]; i++) {
        nargv[n++] = argv[i];
    }
    nargv[n] = NULL;
    n = 0;
    for (i = 0; environ[i]; i++) {
        if (strncmp(environ[i], "LD_PRELOAD=", 11) &&
            strncmp(environ[i], "LWP_PROF_REEXEC=", 16)) {
            nenvp[n++] = environ[i];
        }
    }
    nenvp[n++] = pid;
    if (qenv && *qenv) {
        nenvp[n++] = (char *)qenv;  /* qemu's own (MALLOC_ARENA_MAX=1) */
    }
    nenvp[n] = NULL;
    syscall(SYS_execve, nargv[0], nargv, nenvp);   /* not execve's hook */
    free(copy);
    return "qemu-x86_64 did not start";
}

__attribute__((constructor))
static void lwp_prof_start(int argc, char **argv)
{
    (void)argc;
    const char *out = getenv("LWP_PROF_OUT");
    const char *events = getenv("LWP_PROF_EVENTS");
    const char *processes = getenv("LWP_PROF_PROCESSES");
    uint32_t a, b, c, d, min_ring;
    struct sigaction sa;
    sigset_t io, old;
    struct thr *t;
    const char *why, *execed;

    g.processes = processes && *processes ? strdup(processes) : NULL;
    if (!out || !*out) {
        /* a program that the profiled one exec'd: counted, not profiled */
        if (g.processes) {
            put_process(LWPPROF_PROCESS_EXECED, "record --no-follow-exec");
            pthread_atfork(NULL, NULL, child_after_fork);
        }
        return;
    }
    execed = getenv("LWP_PROF_EXECED");
    if (execed && *execed == '1') {
        /* a program that a profiled one exec'd: followed */
        why = run_with_lwp(argv);
        if (why) {
            put_process(LWPPROF_PROCESS_EXECED, why);
            pthread_atfork(NULL, NULL, child_after_fork);
            return;
        }
        env_remove("LWP_PROF_REEXEC");
        put_process(LWPPROF_PROCESS_EXEC_FOLLOWED, NULL);
    }
    parse_events(events && *events ? events : "ire:100000");
    g.quiet = getenv("LWP_PROF_QUIET") != NULL;
    g.ring_size = env_number("LWP_PROF_RING_KB", 1024, 65536) << 10;
    g.threshold = env_number("LWP_PROF_THRESHOLD_KB", 512, 65536) << 10;
    g.stacks = getenv("LWP_PROF_STACKS") != NULL;
    if (g.stacks) {
        void *first[2];

        g.threshold = LWP_EVENT_RECORD_SIZE;    /* a signal per record */
        backtrace(first, 2);    /* loads libgcc_s: not in a handler */
    }

    __cpuid(0x80000000, a, b, c, d);
    if (a < LWP_CPUID_LEAF) {
        fail("this CPU has no LWP (no CPUID leaf 8000_001C)");
    }
    __cpuid(0x80000001, a, b, c, d);
    if (!((c >> LWP_CPUID_EXT3_BIT) & 1)) {
        fail("this CPU has no LWP (CPUID 8000_0001 ECX[15] is 0)");
    }
    __cpuid(LWP_CPUID_LEAF, a, b, c, d);
    if (!(a & LWP_FEAT_AVAIL)) {
        fail("LWP is not available (CPUID 8000_001C EAX[0] is 0)");
    }
    if (!(a & LWP_FEAT_INT)) {
        fail("LWP's threshold interrupt is not available");
    }
    if ((g.want & ~a) & LWP_FEAT_EVENTS_MASK) {
        char msg[160];
        int n = snprintf(msg, sizeof(msg), "events not available here:");

        for (int pass = 0; pass < 2; pass++) {
            uint32_t set = pass ? a : g.want & ~a;
            const char *sep = " ";

            for (int id = 2; id <= LWP_NUM_EVENTS; id++) {
                if (set & (1u << id)) {
                    n += snprintf(msg + n, sizeof(msg) - n, "%s%s", sep,
                                  event_names[id]);
                    sep = ", ";
                }
            }
            n += snprintf(msg + n, sizeof(msg) - n, "%s", pass ? ")" :
                          " (this CPU's LWP offers");
        }
        fail(msg);
    }
    g.want |= LWP_FEAT_INT;
    {
        uint32_t ea, eb, ec, ed;

        __cpuid_count(0xd, LWP_XSTATE_BIT, ea, eb, ec, ed);
        g.xs_offset = ea >= LWP_XSAVE_SIZE ? eb : 0;
        (void)ec;
        (void)ed;
    }
    g.event_offset = (b >> LWP_CPUID_EBX_EVENTOFFSET_SHIFT) & 0xff;
    min_ring = ((c & LWP_CAP_MIN_BUFFER_MASK) >> LWP_CAP_MIN_BUFFER_SHIFT) *
               32 * LWP_EVENT_RECORD_SIZE;
    if (g.ring_size < min_ring) {
        g.ring_size = min_ring;
    }
    if (g.threshold >= g.ring_size) {
        g.threshold = g.ring_size / 2;
    }

    g.fd = open(out, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (g.fd < 0) {
        fprintf(stderr, "lwp-prof: %s: %s\n", out, strerror(errno));
        _exit(125);
    }
    /* programs it execs are followed (run_with_lwp), or counted */
    if (getenv("LWP_PROF_NO_FOLLOW_EXEC")) {
        env_remove("LWP_PROF_OUT");
    } else {
        env_mark_execed();
    }
    if (pthread_key_create(&g.key, key_destructor)) {
        fail("pthread_key_create failed");
    }

    /* A program started with SIGIO blocked: unblocked as keep_sigio does */
    sigemptyset(&io);
    sigaddset(&io, SIGIO);
    if (!real_sigmask(SIG_UNBLOCK, &io, &old) && sigismember(&old, SIGIO)) {
        io_blocked = 1;
        note_sigmask();
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigio;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (call_sigaction(SIGIO, &sa, NULL)) {
        fail("sigaction(SIGIO) failed");
    }

    t = calloc(1, sizeof(*t));
    if (!t) {
        fail("out of memory");
    }
    t->seq = g.seq = 1;
    put_maps();     /* before LWP counts: not the program's work */
    why = thread_start(t);
    if (why) {
        fail(why);
    }
    put_info(t);
    pthread_atfork(fork_prepare, fork_parent, child_after_fork);
}

/*
 * Threads still running at exit() have records since their last drain:
 * SIGIO (from tgkill, SI_TKILL) makes each flush them from its signal
 * frame.  A thread that blocks SIGIO for a second keeps its records.
 */
static void flush_others(void)
{
    struct thr *t;
    int waits;

    __atomic_store_n(&g.flushing, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&g.lock);
    for (t = g.all; t; t = t->next) {
        if (__atomic_load_n(&t->active, __ATOMIC_ACQUIRE)) {
            syscall(SYS_tgkill, getpid(), t->tid, SIGIO);
        }
    }
    for (waits = 0; waits < 1000; waits++) {
        int busy = 0;

        for (t = g.all; t; t = t->next) {
            busy |= __atomic_load_n(&t->active, __ATOMIC_ACQUIRE);
        }
        if (!busy) {
            break;
        }
        usleep(1000);
    }
    pthread_mutex_unlock(&g.lock);
}

static void put_exit(void)
{
    struct lwpprof_exit rec = { 0 };
    struct iovec v = { &rec, sizeof(rec) };

    rec.tid = gettid_();
    rec.threads = __atomic_load_n(&g.threads, __ATOMIC_RELAXED);
    rec.records = __atomic_load_n(&g.records, __ATOMIC_RELAXED);
    put_chunk(LWPPROF_EXIT, &v, 1);
}

__attribute__((destructor))
static void lwp_prof_stop(void)
{
    if (g.fd < 0) {
        return;
    }
    thread_stop(self);
    flush_others();
    put_maps();
    put_exit();
}

/*
 * _exit and _Exit called by the program (exit() ends with glibc's own):
 * the calling thread's records are written, as at exit(), but not the
 * other threads' (the program may be in a signal handler or a forked
 * child, where lwp_prof_stop's locks, sleeps and allocations are not safe)
 */
__attribute__((noreturn)) static void exit_now(int status)
{
    if (g.fd >= 0 && self && self->pid == (uint32_t)getpid()) {
        thread_stop(self);
        put_exit();
    }
    for (;;) {
        syscall(SYS_exit_group, status);
    }
}

void _exit(int status)
{
    exit_now(status);
}

void _Exit(int status)
{
    exit_now(status);
}

/* Whether @envp has a variable @name (with its '=') */
static int env_has(char *const envp[], const char *name)
{
    size_t len = strlen(name);

    for (; envp && *envp; envp++) {
        if (!strncmp(*envp, name, len)) {
            return 1;
        }
    }
    return 0;
}

/*
 * A program that cannot load this library, which an exec is about to run
 * in process @pid with the environment @envp (statically linked,
 * set-user-ID, not x86-64, or an environment without this library or the
 * record file: env -i), is counted here as not profiled: @file, searched
 * in PATH when @search and it has no '/'.  Any other is followed (or
 * counted) by this library in it.
 */
static void exec_target(const char *file, int search, pid_t pid,
                        char *const envp[])
{
    char buf[PATH_MAX];
    const char *path = file, *why = NULL;
    Elf64_Ehdr eh;
    struct stat st;
    int fd;

    if ((g.fd < 0 && !g.processes) || !file || !*file) {
        return;
    }
    if (search && !strchr(file, '/')) {
        const char *p = getenv("PATH"), *end;

        path = NULL;
        for (p = p ? p : "/bin:/usr/bin"; !path && *p; p = end + !!*end) {
            end = strchrnul(p, ':');
            if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)(end - p), p,
                         file) < (int)sizeof(buf) &&
                access(buf, X_OK) == 0) {
                path = buf;
            }
        }
    }
    if (!path || access(path, X_OK) != 0 ||
        (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        return;     /* the exec fails */
    }
    if (fstat(fd, &st) == 0 && pread(fd, &eh, sizeof(eh), 0) == sizeof(eh) &&
        !memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
        if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
            why = "not an x86-64 program";
        } else if (st.st_mode & (S_ISUID | S_ISGID)) {
            why = "set-user-ID or set-group-ID: the loader ignores LD_PRELOAD";
        } else {
            why = "statically linked";
            for (int i = 0; i < eh.e_phnum; i++) {
                Elf64_Phdr ph;

                if (pread(fd, &ph, sizeof(ph), eh.e_phoff +
                          (off_t)i * eh.e_phentsize) == sizeof(ph) &&
                    ph.p_type == PT_INTERP) {
                    why = NULL;
                }
            }
        }
    }
    close(fd);
    if (!why && (!env_has(envp, "LD_PRELOAD=") ||
                 !env_has(envp, g.fd >= 0 ? "LWP_PROF_OUT="
                                          : "LWP_PROF_PROCESSES="))) {
        why = "its environment lacks LD_PRELOAD or lwp-prof's variables";
    }
    if (why) {
        put_process_of(LWPPROF_PROCESS_EXECED, pid,
                       pid == getpid() ? getppid() : getpid(), path, why);
    }
}

/*
 * execve and the exec functions that take an argv: the calling thread's
 * records up to the exec are written (SLWPCB flushes the head).  LWP stays
 * on, in case the exec fails; the new image starts with it off.
 */
static void before_exec(const char *file, int search, char *const envp[])
{
    struct thr *t = self;
    sigset_t io, old;

    exec_target(file, search, getpid(), envp);
    if (g.fd < 0 || !t || !t->active || t->pid != (uint32_t)getpid()) {
        return;     /* (a vfork child: the parent's ring is not its own) */
    }
    sigemptyset(&io);
    sigaddset(&io, SIGIO);
    real_sigmask(SIG_BLOCK, &io, &old);
    if (slwpcb() == t->cb) {
        drain(t);
        put_stop(t);    /* its records end here, unless the exec fails */
    }
    real_sigmask(SIG_SETMASK, &old, NULL);
}

int execve(const char *path, char *const argv[], char *const envp[])
{
    static void *real;
    int (*fn)(const char *, char *const[], char *const[]);

    before_exec(path, 0, envp);
    *(void **)&fn = real_fn(&real, "execve");
    return fn ? fn(path, argv, envp) : (errno = ENOSYS, -1);
}

int execv(const char *path, char *const argv[])
{
    static void *real;
    int (*fn)(const char *, char *const[]);

    before_exec(path, 0, environ);
    *(void **)&fn = real_fn(&real, "execv");
    return fn ? fn(path, argv) : (errno = ENOSYS, -1);
}

int execvp(const char *file, char *const argv[])
{
    static void *real;
    int (*fn)(const char *, char *const[]);

    before_exec(file, 1, environ);
    *(void **)&fn = real_fn(&real, "execvp");
    return fn ? fn(file, argv) : (errno = ENOSYS, -1);
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
    static void *real;
    int (*fn)(const char *, char *const[], char *const[]);

    before_exec(file, 1, envp);
    *(void **)&fn = real_fn(&real, "execvpe");
    return fn ? fn(file, argv, envp) : (errno = ENOSYS, -1);
}

/*
 * execl, execlp and execle: their arguments up to the NULL become the argv
 * of execv, execvp and execve (above); execle's environment follows it
 */
static size_t count_args(const char *arg, va_list ap)
{
    size_t n = 0;

    for (; arg; arg = va_arg(ap, const char *)) {
        n++;
    }
    return n;
}

/* argv[0..n]: @arg, the n-1 arguments after it, NULL; then *envp */
static void fill_args(char **argv, size_t n, const char *arg, va_list ap,
                      char *const **envp)
{
    argv[0] = (char *)arg;
    for (size_t i = 1; i < n; i++) {
        argv[i] = va_arg(ap, char *);
    }
    argv[n] = NULL;
    if (envp) {
        if (n) {
            (void)va_arg(ap, char *);   /* the NULL after the arguments */
        }
        *envp = va_arg(ap, char *const *);
    }
}

enum { EXEC_V, EXEC_VP, EXEC_VE };

static int exec_list(int kind, const char *path, const char *arg, va_list ap)
{
    char *const *envp = NULL;
    va_list count;
    size_t n;

    va_copy(count, ap);
    n = count_args(arg, count);
    va_end(count);
    char *argv[n + 1];

    fill_args(argv, n, arg, ap, kind == EXEC_VE ? &envp : NULL);
    return kind == EXEC_V ? execv(path, argv)
           : kind == EXEC_VP ? execvp(path, argv) : execve(path, argv, envp);
}

int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    int r;

    va_start(ap, arg);
    r = exec_list(EXEC_V, path, arg, ap);
    va_end(ap);
    return r;
}

int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    int r;

    va_start(ap, arg);
    r = exec_list(EXEC_VP, file, arg, ap);
    va_end(ap);
    return r;
}

int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    int r;

    va_start(ap, arg);
    r = exec_list(EXEC_VE, path, arg, ap);
    va_end(ap);
    return r;
}

/*
 * posix_spawn and posix_spawnp exec in the child with glibc's own execve,
 * which no library can interpose: a program that cannot load this library
 * is counted here, once the child runs it (@search: posix_spawnp)
 */
typedef int spawn_fn(pid_t *, const char *, const posix_spawn_file_actions_t *,
                     const posix_spawnattr_t *, char *const[], char *const[]);

static int spawn(void **real, const char *name, int search, pid_t *pid,
                 const char *file, const posix_spawn_file_actions_t *fa,
                 const posix_spawnattr_t *attr, char *const argv[],
                 char *const envp[])
{
    spawn_fn *fn;
    pid_t child;
    int r;

    *(void **)&fn = real_fn(real, name);
    r = fn ? fn(&child, file, fa, attr, argv, envp) : ENOSYS;
    if (!r) {
        exec_target(file, search, child, envp ? envp : environ);
        if (pid) {
            *pid = child;
        }
    }
    return r;
}

int posix_spawn(pid_t *pid, const char *path,
                const posix_spawn_file_actions_t *fa,
                const posix_spawnattr_t *attr, char *const argv[],
                char *const envp[])
{
    static void *real;

    return spawn(&real, "posix_spawn", 0, pid, path, fa, attr, argv, envp);
}

int posix_spawnp(pid_t *pid, const char *file,
                 const posix_spawn_file_actions_t *fa,
                 const posix_spawnattr_t *attr, char *const argv[],
                 char *const envp[])
{
    static void *real;

    return spawn(&real, "posix_spawnp", 1, pid, file, fa, attr, argv, envp);
}
