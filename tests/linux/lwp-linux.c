/*
 * lwp-linux: what a Linux program sees of LWP (docs/linux.md, "The LWP
 * ABI"), checked inside the linux layer's guest running our kernel and,
 * where it makes sense, under qemu-x86_64, which gives the same ABI.
 *
 *   lwp-linux selfprof [N]  a program profiling itself through the
 *                           threshold signal; every record accounted for
 *   lwp-linux stress [N]    the same, for several at once (no check of
 *                           the system-wide /proc/interrupts)
 *   lwp-linux two           two processes pinned to CPU 0 profiling at once
 *   lwp-linux coreid        threads moved between CPUs mid-run: each
 *                           record's CoreId is the CPU it ran on
 *   lwp-linux ptrace        a parent reads a child's component 62 with
 *                           PTRACE_GETREGSET NT_X86_XSTATE
 *   lwp-linux core          ... and from the child's core dump
 *   lwp-linux badcb         a bad LWPCB gets SIGSEGV, nothing else happens
 *   lwp-linux nolwp         arch_prctl(ARCH_SET_LWP, 0) takes LWP away from
 *                           one thread, its children and what it execs;
 *                           LWPINS still stores its record (spec 5.1); a
 *                           thread with LWP and one without share CPU 0
 *   lwp-linux hostile       component 62 forged in a signal frame and
 *                           through PTRACE_SETREGSET: refused when its
 *                           LWPCB or ring is outside user space or a
 *                           reserved field is not zero
 *   lwp-linux perfown       the kernel's lwp perf PMU and the program's own
 *                           LWP: who owns LWP_CBADDR (docs/linux.md)
 *
 * Expected values come from the spec (AMD 43724) and from counting the
 * instructions of the asm below, never from a run.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "../user/lwp-test.h"

#include <elf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#define REC 32
#define IRE_INTERVAL 999            /* a record every 1000 instructions */

/*
 * lwp_loop(lwpcb, n): LLWPCB, n iterations of a 4-instruction loop,
 * SLWPCB (which flushes BufferHeadOffset to the LWPCB, spec 5.2), and
 * LLWPCB 0.  After the enabling LLWPCB it retires 1 + 4n + 3 counted
 * instructions, give or take the two LLWPCBs, so with n a multiple of
 * 250 and the interval 1000, the number of records is exactly 4n / 1000
 * whichever way the spec's edges are read.
 *
 * Which instruction each record names is exact too.  LLWPCB itself is
 * not counted (docs/implementation-choices.md, choice 39), so the MOV is
 * counted instruction 1 and the loop's instructions are 2 + 4j + m.  With
 * EventCounter2 = EventInterval2 = 999, record r is stored at counted
 * instruction 1000r (spec 5.1 step 7, Table 6-1), and 1000r - 2 = 2 mod 4:
 * every record names the DEC, whatever the signals, context switches and
 * migrations in between.
 */
asm(".text\n"
    ".globl lwp_loop, lwp_loop_start, lwp_loop_dec, lwp_loop_end\n"
    "lwp_loop:\n"
    "    llwpcb %rdi\n"
    "    mov %rsi, %rcx\n"
    "lwp_loop_start:\n"
    "    add $1, %rax\n"
    "    add $2, %rdx\n"
    "lwp_loop_dec:\n"
    "    dec %rcx\n"
    "    jnz lwp_loop_start\n"
    "lwp_loop_end:\n"
    "    slwpcb %rax\n"
    "    xor %eax, %eax\n"
    "    llwpcb %rax\n"
    "    ret\n");
void lwp_loop(void *lwpcb, unsigned long n);
extern char lwp_loop_start[], lwp_loop_dec[], lwp_loop_end[];

struct prof {
    uint8_t *cb;
    uint8_t *ring;
    uint32_t size;
    unsigned long drained;      /* records taken out of the ring */
    unsigned long bad;          /* records not of the loop */
    unsigned long sigio;        /* threshold signals received */
    unsigned long badinfo;      /* signals with other siginfo */
    int last_core;              /* CoreId of the last record */
    int core_mismatch;          /* records whose CoreId != expect_core */
    int expect_core;            /* -1: any */
};

static __thread struct prof *cur;

static uint32_t ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t ld64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static void st32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* Take every record between BufferTailOffset and BufferHeadOffset */
static void drain(struct prof *p)
{
    uint32_t head = __atomic_load_n((uint32_t *)(p->cb + LWPCB_HEAD), __ATOMIC_ACQUIRE);
    uint32_t tail = ld32(p->cb + LWPCB_TAIL);

    while (tail != head) {
        const uint8_t *r = p->ring + tail;
        uint64_t ip = ld64(r + LWP_REC_IP);

        if (r[LWP_REC_EVENT_ID] != 2 || ip != (uintptr_t)lwp_loop_dec) {
            p->bad++;
        }
        p->last_core = r[LWP_REC_CORE_ID];
        if (p->expect_core >= 0 && r[LWP_REC_CORE_ID] != p->expect_core) {
            p->core_mismatch++;
        }
        p->drained++;
        tail = tail + REC == p->size ? 0 : tail + REC;
    }
    __atomic_store_n((uint32_t *)(p->cb + LWPCB_TAIL), tail, __ATOMIC_RELEASE);
}

static void on_sigio(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (!cur) {
        return;
    }
    cur->sigio++;
    if (si->si_code != POLL_IN || si->si_band != 0x41 || si->si_fd != -1) {
        cur->badinfo++;
    }
    drain(cur);
}

static void prof_init(struct prof *p, uint32_t ring_records, uint32_t threshold_records,
                      int intr)
{
    memset(p, 0, sizeof(*p));
    p->cb = aligned_alloc(64, 256);
    p->size = ring_records * REC;
    p->ring = aligned_alloc(64, p->size);
    memset(p->cb, 0, 256);
    memset(p->ring, 0, p->size);
    st32(p->cb + LWPCB_FLAGS, LWP_FEAT_IRE | (intr ? LWP_FEAT_INT : 0));
    st32(p->cb + LWPCB_BUFFER_SIZE, p->size);
    memcpy(p->cb + LWPCB_BUFFER_BASE, &p->ring, 8);
    st32(p->cb + LWPCB_THRESHOLD, threshold_records * REC);
    st32(p->cb + LWPCB_INTERVAL(LWP_EVENT_OFFSET, 2), IRE_INTERVAL);
    st32(p->cb + LWPCB_COUNTER(LWP_EVENT_OFFSET, 2), IRE_INTERVAL);
    p->expect_core = -1;
}

static void install_sigio(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigio;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGIO, &sa, NULL);
}

/* The sum of the "LWP" line of /proc/interrupts, -1 without one */
static long lwp_interrupts(void)
{
    char line[1024];
    long sum = -1;
    FILE *f = fopen("/proc/interrupts", "r");

    if (!f) {
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        char *s = line, *e;

        while (*s == ' ') {
            s++;
        }
        if (strncmp(s, "LWP:", 4)) {
            continue;
        }
        sum = 0;
        s += 4;
        for (;;) {
            long v = strtol(s, &e, 10);
            if (e == s) {
                break;
            }
            sum += v;
            s = e;
        }
    }
    fclose(f);
    return sum;
}

/*
 * One profiled run of n iterations: a ring of 32 records, Threshold 8
 * records, the handler drains everything.  Returns the number of failed
 * checks.
 */
static int selfprof(unsigned long n, const char *who)
{
    struct prof p;
    unsigned long expect = 4 * n / (IRE_INTERVAL + 1);
    uint64_t missed;
    int ok = 1;

    prof_init(&p, 32, 8, 1);
    cur = &p;
    lwp_loop(p.cb, n);
    drain(&p);          /* what was left below the threshold */
    cur = NULL;
    missed = ld64(p.cb + LWPCB_MISSED);
    ok &= report(p.drained + missed == expect,
                 "%s: records drained (%lu) + MissedEvents (%lu) = %lu, the "
                 "loop's 4 x %lu instructions / %d", who, p.drained,
                 (unsigned long)missed, expect, n, IRE_INTERVAL + 1);
    ok &= report(missed == 0, "%s: MissedEvents 0: the handler drains the "
                 "whole ring at each threshold crossing", who);
    ok &= report(p.bad == 0, "%s: every record is Instructions Retired at "
                 "the loop's DEC, the 1000th counted instruction (%lu are "
                 "not)", who, p.bad);
    ok &= report(p.sigio == expect / 8, "%s: one SIGIO per 8 records, "
                 "Threshold 8 with a drained ring: %lu (got %lu)", who,
                 expect / 8, p.sigio);
    ok &= report(p.badinfo == 0, "%s: every SIGIO has si_code POLL_IN, "
                 "si_band POLLIN|POLLRDNORM, si_fd -1", who);
    free(p.cb);
    free(p.ring);
    return !ok;
}

static void pin(int cpu)
{
    cpu_set_t s;

    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof(s), &s)) {
        perror("sched_setaffinity");
        exit(2);
    }
}

static int cmd_selfprof(unsigned long n, int alone)
{
    long before = lwp_interrupts();
    struct prof p;
    int failed;

    install_sigio();
    failed = selfprof(n, alone ? "selfprof" : "stress");
    if (!alone) {
        return failed;
    }
    if (before >= 0) {
        long after = lwp_interrupts();
        report(after - before == (long)(4 * n / (IRE_INTERVAL + 1) / 8),
               "/proc/interrupts: LWP grew by one per SIGIO (%ld)",
               after - before);
    }
    /* Without INT in Flags, no signal at all (spec 6, Flags.INT) */
    prof_init(&p, 32, 8, 0);
    cur = &p;
    lwp_loop(p.cb, 1000);
    cur = NULL;
    report(p.sigio == 0, "no SIGIO when Flags.INT is clear");
    return failed;
}

/* Two children pinned to CPU 0, each profiling a long run at once */
static int cmd_two(void)
{
    pid_t kid[2];
    int i, status, ok = 1;

    for (i = 0; i < 2; i++) {
        kid[i] = fork();
        if (kid[i] == 0) {
            pin(0);
            install_sigio();
            _exit(selfprof(2500000, i ? "child B" : "child A"));
        }
    }
    for (i = 0; i < 2; i++) {
        waitpid(kid[i], &status, 0);
        ok &= report(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                     "two: process %c on CPU 0 gets exactly its solo records",
                     'A' + i);
    }
    return !ok;
}

/*
 * coreid: 4 threads; each moves itself over the CPUs in its own order,
 * profiling a phase on each CPU into a ring that holds everything.  The
 * migration happens inside sched_setaffinity, so every record of a phase
 * was stored on the phase's CPU.
 */
static int ncpus;

static void *coreid_thread(void *arg)
{
    long t = (long)arg, k;
    struct prof p;
    long bad = 0, records = 0;

    for (k = 0; k < 4 * ncpus; k++) {
        int cpu = (t + k) % ncpus;

        pin(cpu);
        prof_init(&p, 64, 64, 0);
        p.expect_core = cpu;
        lwp_loop(p.cb, 10000);
        drain(&p);
        bad += p.core_mismatch + p.bad;
        records += p.drained;
        if (p.drained != 40) {
            bad++;
        }
        free(p.cb);
        free(p.ring);
    }
    return (void *)(bad * 1000000 + records);
}

static int cmd_coreid(void)
{
    pthread_t th[4];
    long t;
    int ok = 1;

    ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    for (t = 0; t < 4; t++) {
        pthread_create(&th[t], NULL, coreid_thread, (void *)t);
    }
    for (t = 0; t < 4; t++) {
        void *r;
        long v;

        pthread_join(th[t], &r);
        v = (long)r;
        ok &= report(v / 1000000 == 0 && v % 1000000 == 40L * 4 * ncpus,
                     "coreid: thread %ld: %d phases on %d CPUs, 40 records "
                     "each, every CoreId the phase's CPU (%ld wrong, %ld "
                     "records)", t, 4 * ncpus, ncpus, v / 1000000, v % 1000000);
    }
    return !ok;
}

/* ptrace: the child enables LWP and stops; the parent reads component 62 */
static int cmd_ptrace(void)
{
    int fd[2], status;
    uint32_t a, b, c, d;
    uint64_t child_cb = 0, bv, got;
    static uint8_t xs[8192];
    struct iovec iov = { xs, sizeof(xs) };
    pid_t pid;

    __cpuid_count(0xd, 62, a, b, c, d);
    if (pipe(fd)) {
        return 1;
    }
    pid = fork();
    if (pid == 0) {
        struct prof p;

        prof_init(&p, 32, 8, 0);
        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        __llwpcb(p.cb);
        if (write(fd[1], &p.cb, 8) != 8) {
            _exit(2);
        }
        raise(SIGSTOP);
        _exit(__slwpcb() == p.cb ? 0 : 1);
    }
    if (read(fd[0], &child_cb, 8) != 8) {
        return 1;
    }
    waitpid(pid, &status, 0);
    report(WIFSTOPPED(status), "ptrace: the child stops");
    report(ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &iov) == 0,
           "ptrace: PTRACE_GETREGSET NT_X86_XSTATE succeeds");
    memcpy(&bv, xs + 512, 8);
    report(iov.iov_len >= b + a, "ptrace: the regset covers component 62 "
           "(%zu bytes, component at %u + %u)", iov.iov_len, b, a);
    report((bv >> 62) & 1, "ptrace: XSTATE_BV[62] is set: the child's LWP is "
           "enabled");
    memcpy(&got, xs + b, 8);
    report(got == child_cb, "ptrace: LWPCBAddress at CPUID 0xD.62 EBX (0x%x) "
           "is the child's LWPCB (0x%llx, read 0x%llx)", b,
           (unsigned long long)child_cb, (unsigned long long)got);
    ptrace(PTRACE_CONT, pid, NULL, NULL);
    waitpid(pid, &status, 0);
    report(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "ptrace: after the stop the child still has its LWPCB");
    return 0;
}

/*
 * core: the child enables LWP and aborts; its core dump's NT_X86_XSTATE
 * note holds component 62 with the LWPCB address
 */
static int cmd_core(void)
{
    char dir[] = "./lwp-core.XXXXXX", path[64];
    int fd[2], status, found = 0;
    uint32_t a, b, c, d;
    uint64_t child_cb = 0;
    pid_t pid;
    FILE *f;
    Elf64_Ehdr eh;
    long size;
    uint8_t *core;

    __cpuid_count(0xd, 62, a, b, c, d);
    if (!mkdtemp(dir) || pipe(fd)) {
        return report(0, "core: a directory and a pipe for the child");
    }
    pid = fork();
    if (pid == 0) {
        struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
        struct prof p;

        prof_init(&p, 32, 8, 0);
        if (setrlimit(RLIMIT_CORE, &rl) || chdir(dir)) {
            _exit(2);
        }
        __llwpcb(p.cb);
        if (write(fd[1], &p.cb, 8) != 8) {
            _exit(2);
        }
        abort();
    }
    if (read(fd[0], &child_cb, 8) != 8) {
        return report(0, "core: the child reports its LWPCB");
    }
    waitpid(pid, &status, 0);
    report(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && WCOREDUMP(status),
           "core: the child dies of SIGABRT with a core dump (status 0x%x)", status);
    snprintf(path, sizeof(path), "%s/core", dir);
    f = fopen(path, "rb");
    if (!f) {
        return report(0, "core: %s exists (core_pattern \"core\")", path);
    }
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    rewind(f);
    core = malloc(size);
    if (fread(core, 1, size, f) != (size_t)size) {
        size = 0;
    }
    fclose(f);
    memcpy(&eh, core, sizeof(eh));
    /* Walk the PT_NOTE segments for the NT_X86_XSTATE note ("LINUX") */
    for (int i = 0; size && i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        uint64_t off;

        memcpy(&ph, core + eh.e_phoff + i * eh.e_phentsize, sizeof(ph));
        if (ph.p_type != PT_NOTE) {
            continue;
        }
        for (off = 0; off + 12 <= ph.p_filesz;) {
            Elf64_Nhdr nh;
            const uint8_t *desc;

            memcpy(&nh, core + ph.p_offset + off, sizeof(nh));
            desc = core + ph.p_offset + off + 12 + ((nh.n_namesz + 3) & ~3u);
            if (nh.n_type == NT_X86_XSTATE && nh.n_descsz >= b + a) {
                uint64_t bv = ld64(desc + 512), cb = ld64(desc + b);

                found = 1;
                report((bv >> 62) & 1, "core: XSTATE_BV[62] set in the note");
                report(cb == (uintptr_t)child_cb, "core: LWPCBAddress at 0x%x "
                       "is the child's LWPCB (0x%llx, read 0x%llx)", b,
                       (unsigned long long)child_cb, (unsigned long long)cb);
            }
            off += 12 + ((nh.n_namesz + 3) & ~3u) + ((nh.n_descsz + 3) & ~3u);
        }
    }
    report(found, "core: the dump has an NT_X86_XSTATE note covering "
           "component 62 (%ld bytes read)", size);
    free(core);
    unlink(path);
    rmdir(dir);
    return 0;
}

/* badcb: LLWPCB of an unmapped LWPCB raises #PF: SIGSEGV at its address */
static void bad_llwpcb(void *arg)
{
    __llwpcb(arg);
}

static int cmd_badcb(void)
{
    struct fault f;
    void *hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int sig;

    install_fault_handlers(0);
    sig = guarded(bad_llwpcb, hole, &f);
    report(sig == SIGSEGV && f.addr == (uintptr_t)hole,
           "badcb: LLWPCB of a PROT_NONE page: SIGSEGV at its address "
           "(got signal %d at 0x%lx)", sig, (unsigned long)f.addr);
    report(__slwpcb() == NULL, "badcb: LWP stays disabled after the fault");
    sig = guarded(bad_llwpcb, (void *)0x8000000000000000ull, &f);
    report(sig == SIGSEGV, "badcb: LLWPCB of a non-canonical address: #GP, "
           "SIGSEGV (got signal %d)", sig);
    return 0;
}

/*
 * hostile: LWP state (component 62) forged by the program itself.  XRSTOR
 * at CPL 0 loads LWPCBAddress and BufferBase without the checks it makes
 * at CPL 3 (spec 7.4), so the kernel must refuse component 62 from user
 * space whose LWPCB or ring is not in user space, or whose reserved fields
 * (spec 7.2, Table 7-1) are not zero: rt_sigreturn with SIGSEGV (si_code
 * SI_KERNEL, as for any bad frame) and PTRACE_SETREGSET with EINVAL.
 */
struct forge {
    const char *what;
    unsigned off, width;        /* within component 62 */
    uint64_t val;
    int or_in;                  /* OR val into the field instead */
    int refused;
};

#define KADDR 0xffff888000000000ull     /* the kernel's direct map */

static const struct forge forges[] = {
    { "the frame as the kernel wrote it", 0, 0, 0, 0, 0 },
    { "LWPCBAddress in the kernel", 0, 8, KADDR, 0, 1 },
    { "LWPCBAddress non-canonical", 0, 8, 0x8000000000000000ull, 0, 1 },
    { "BufferBase in the kernel", 16, 8, KADDR, 0, 1 },
    { "BufferBase at the top of the address space", 16, 8,
      0xfffffffffffffc00ull, 0, 1 },
    { "Flags bit 0 (reserved)", 8, 4, 1, 1, 1 },
    { "Flags bit 31 (reserved)", 8, 4, 0x80000000u, 1, 1 },
    { "BufferSize bit 28 (reserved)", 24, 4, 0x10000000u, 1, 1 },
    { "EventCounter7 (reserved)", 88, 4, 1, 0, 1 },
    { "EventCounter16 (reserved)", 124, 4, 1, 0, 1 },
    { "EventCounter2 changed (allowed)", 68, 4, 5000, 0, 0 },
};

static void forge_apply(uint8_t *xsave, const struct forge *f)
{
    uint32_t a, b, c, d;
    uint8_t *p;

    __cpuid_count(0xd, 62, a, b, c, d);
    (void)a;
    (void)c;
    (void)d;
    p = xsave + b + f->off;
    if (f->width == 8) {
        uint64_t v;

        memcpy(&v, p, 8);
        v = f->or_in ? v | f->val : f->val;
        memcpy(p, &v, 8);
    } else if (f->width == 4) {
        uint32_t v;

        memcpy(&v, p, 4);
        v = f->or_in ? v | (uint32_t)f->val : (uint32_t)f->val;
        memcpy(p, &v, 4);
    }
}

static const struct forge *forging;

static void on_usr1_forge(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;

    (void)sig;
    (void)si;
    if (!frame_lwpcb(uc)) {
        _exit(30);              /* the frame has no LWP state */
    }
    forge_apply((uint8_t *)uc->uc_mcontext.fpregs, forging);
}

static void on_segv_forge(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    _exit(si->si_code == SI_KERNEL ? 20 : 21);
}

static int cmd_hostile(void)
{
    static uint8_t xs[8192], ys[8192];
    struct iovec iov = { xs, sizeof(xs) };
    struct prof p;
    size_t i, n = sizeof(forges) / sizeof(forges[0]);
    int status, fd[2];
    pid_t pid;

    /* rt_sigreturn, one child per forgery */
    for (i = 0; i < n; i++) {
        const struct forge *f = &forges[i];

        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            struct sigaction sa;

            memset(&sa, 0, sizeof(sa));
            sa.sa_sigaction = on_usr1_forge;
            sa.sa_flags = SA_SIGINFO;
            sigaction(SIGUSR1, &sa, NULL);
            sa.sa_sigaction = on_segv_forge;
            sigaction(SIGSEGV, &sa, NULL);
            forging = f;
            prof_init(&p, 32, 8, 0);
            __llwpcb(p.cb);
            raise(SIGUSR1);
            _exit(__slwpcb() == p.cb ? 0 : 1);
        }
        waitpid(pid, &status, 0);
        if (f->refused) {
            report(WIFEXITED(status) && WEXITSTATUS(status) == 20,
                   "hostile: rt_sigreturn of a frame with %s: SIGSEGV "
                   "SI_KERNEL, the frame refused (status 0x%x)", f->what,
                   status);
        } else {
            report(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                   "hostile: rt_sigreturn of a frame with %s: returns, LWP "
                   "still on with the LWPCB (status 0x%x)", f->what, status);
        }
    }

    /* PTRACE_SETREGSET NT_X86_XSTATE of a stopped child */
    if (pipe(fd)) {
        return report(0, "hostile: a pipe");
    }
    pid = fork();
    if (pid == 0) {
        prof_init(&p, 32, 8, 0);
        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        __llwpcb(p.cb);
        raise(SIGSTOP);
        _exit(__slwpcb() == p.cb ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    if (!WIFSTOPPED(status) ||
        ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &iov)) {
        kill(pid, SIGKILL);
        return report(0, "hostile: the child stops and PTRACE_GETREGSET works");
    }
    for (i = 1; i < n; i++) {
        const struct forge *f = &forges[i];
        struct iovec yv = { ys, iov.iov_len };
        long r;

        memcpy(ys, xs, iov.iov_len);
        forge_apply(ys, f);
        errno = 0;
        r = ptrace(PTRACE_SETREGSET, pid, (void *)NT_X86_XSTATE, &yv);
        if (f->refused) {
            report(r == -1 && errno == EINVAL, "hostile: PTRACE_SETREGSET "
                   "with %s: EINVAL (got %ld, errno %d)", f->what, r, errno);
        } else {
            report(r == 0, "hostile: PTRACE_SETREGSET with %s succeeds "
                   "(got %ld, errno %d)", f->what, r, errno);
        }
    }
    report(ptrace(PTRACE_SETREGSET, pid, (void *)NT_X86_XSTATE, &iov) == 0,
           "hostile: PTRACE_SETREGSET of the child's own state succeeds");
    ptrace(PTRACE_CONT, pid, NULL, NULL);
    waitpid(pid, &status, 0);
    report(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "hostile: the child goes on with its own LWPCB (status 0x%x)",
           status);
    return 0;
}

/* The kernel series' per-thread switch (docs/linux.md, "The LWP ABI") */
#define ARCH_GET_LWP 0x1031
#define ARCH_SET_LWP 0x1032

static long arch_prctl(int code, unsigned long arg)
{
    return syscall(SYS_arch_prctl, code, arg);
}

/* LLWPCB with IRE|INT, 4,000 instructions: Flags read back, records stored */
static void without_lwp(const char *who, int want_avail)
{
    struct prof p;
    uint32_t a, b, c, d;

    prof_init(&p, 32, 8, 1);
    __cpuid(LWP_CPUID_LEAF, a, b, c, d);
    report(arch_prctl(ARCH_GET_LWP, 0) == want_avail,
           "%s: ARCH_GET_LWP returns %d", who, want_avail);
    if (want_avail) {
        report(a == d, "%s: CPUID 8000_001C EAX = EDX (0x%08x, 0x%08x)", who, a, d);
    } else {
        report(a == LWP_FEAT_AVAIL, "%s: CPUID 8000_001C EAX = 1: LwpAvail "
               "(XCR0[62]) and no feature, LWP_CFG[31:1] = 0 (got 0x%08x)", who, a);
    }
    install_sigio();
    cur = &p;
    lwp_loop(p.cb, 1000);
    cur = NULL;
    if (want_avail) {
        report(ld32(p.cb + LWPCB_FLAGS) == (LWP_FEAT_IRE | LWP_FEAT_INT) &&
               ld32(p.cb + LWPCB_HEAD) == 4 * REC,
               "%s: LLWPCB keeps IRE|INT in Flags, 4 records stored "
               "(Flags 0x%08x, head 0x%x)", who, ld32(p.cb + LWPCB_FLAGS),
               ld32(p.cb + LWPCB_HEAD));
    } else {
        uint64_t ip;
        uint8_t cf;

        report(ld32(p.cb + LWPCB_FLAGS) == 0 && ld32(p.cb + LWPCB_HEAD) == 0 &&
               p.sigio == 0, "%s: LLWPCB clears Flags (spec 5.1: no feature "
               "available), no record, no SIGIO (Flags 0x%08x, head 0x%x)",
               who, ld32(p.cb + LWPCB_FLAGS), ld32(p.cb + LWPCB_HEAD));
        /*
         * Spec 5.1: with no available event in Flags, LLWPCB still
         * enables LWP, for LWPINS; its record is EventId 255 (2.7)
         */
        __llwpcb(p.cb);
        LWPINS64_AT(cf, ip, 0x1234, 0x56, 0x78);
        report(__slwpcb() == p.cb && ld32(p.cb + LWPCB_HEAD) == REC &&
               p.ring[LWP_REC_EVENT_ID] == 255 &&
               ld64(p.ring + LWP_REC_IP) == ip,
               "%s: LLWPCB still enables LWP and LWPINS stores its record "
               "(SLWPCB %p, head 0x%x, EventId %u)", who, __slwpcb(),
               ld32(p.cb + LWPCB_HEAD), p.ring[LWP_REC_EVENT_ID]);
        (void)cf;
        __llwpcb(NULL);
    }
}

static int cmd_nolwp(int argc, char **argv)
{
    struct prof p;
    pid_t pid;
    int status, no_exec;

    if (argc > 2 && !strcmp(argv[2], "exec")) {
        without_lwp("after exec", 0);
        return 0;
    }
    /*
     * Under qemu-x86_64 (tests/user/run.sh) the exec'd static binary would
     * run on the host, without LWP: the emulator cannot carry the setting
     * across execve (docs/implementation-choices.md).
     */
    no_exec = getenv("LWP_LINUX_NO_EXEC") != NULL;
    without_lwp("parent, before", 1);
    pid = fork();
    if (pid == 0) {
        prof_init(&p, 32, 8, 0);
        __llwpcb(p.cb);
        report(arch_prctl(ARCH_SET_LWP, 0) == 0, "child: ARCH_SET_LWP 0 succeeds");
        report(__slwpcb() == NULL, "child: LWP is off at once (SLWPCB 0)");
        report(arch_prctl(ARCH_SET_LWP, 2) < 0 && errno == EINVAL,
               "child: ARCH_SET_LWP 2 is EINVAL");
        without_lwp("child", 0);
        if (fork() == 0) {
            without_lwp("grandchild", 0);
            if (no_exec) {
                report_skip("grandchild: exec keeps LWP off: not checked, "
                            "the exec'd image would not run emulated "
                            "(LWP_LINUX_NO_EXEC)");
                _exit(0);
            }
            fflush(stdout);
            execl("/proc/self/exe", "lwp-linux", "nolwp", "exec", (char *)NULL);
            _exit(3);
        }
        wait(&status);
        report(WIFEXITED(status) && WEXITSTATUS(status) == 0,
               no_exec ? "child: the grandchild ran" :
               "child: the grandchild's exec ran");
        report(arch_prctl(ARCH_SET_LWP, 1) == 0, "child: ARCH_SET_LWP 1 succeeds");
        without_lwp("child, again", 1);
        fflush(stdout);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    report(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ran");
    without_lwp("parent, after", 1);

    /*
     * A thread without LWP and one with it, both pinned to CPU 0, take
     * turns: the context switch gives each its own LWP_CFG[31:0]
     */
    pid = fork();
    if (pid == 0) {
        pin(0);
        arch_prctl(ARCH_SET_LWP, 0);
        for (int i = 0; i < 5; i++) {
            sched_yield();
            without_lwp("sharing CPU 0, without", 0);
        }
        fflush(stdout);
        _exit(0);
    }
    pin(0);
    for (int i = 0; i < 5; i++) {
        sched_yield();
        without_lwp("sharing CPU 0, with", 1);
    }
    waitpid(pid, &status, 0);
    report(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "the child sharing CPU 0 ran");
    return 0;
}

/*
 * perfown: one LWP_CBADDR for the kernel's lwp PMU and the program.  The
 * program's own LWP comes first: perf_event_open of an lwp event on
 * itself fails with EBUSY while the program has its LWPCB loaded.  With
 * none, it succeeds, and from the return to user mode the kernel's LWPCB
 * is live (SLWPCB names it, not the program's); its period cannot be
 * changed; a second event of another LWP event on the same thread is
 * EBUSY.  Then the program's LLWPCB takes
 * LWP over (the instruction cannot be refused): its own profile is
 * exact, as in selfprof.
 */
static long perf_open(uint64_t config)
{
    struct perf_event_attr a;
    FILE *f = fopen("/sys/bus/event_source/devices/lwp/type", "r");
    int type = -1;

    if (!f || fscanf(f, "%d", &type) != 1) {
        errno = ENODEV;
        type = -1;
    }
    if (f) {
        fclose(f);
    }
    if (type < 0) {
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.type = type;
    a.size = sizeof(a);
    a.config = config;
    a.sample_period = 10007;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static int cmd_perfown(void)
{
    struct prof p, own;
    unsigned long n = 250000, expect = 4 * n / (IRE_INTERVAL + 1);
    void *cb = NULL;
    long fd, fd2;
    int err;

    prof_init(&own, 32, 8, 0);
    asm volatile("llwpcb %0" : : "r"(own.cb) : "memory");
    fd = perf_open(2);
    err = errno;
    report(fd < 0 && err == EBUSY, "perfown: perf_event_open of lwp/ire/ on "
           "itself fails with EBUSY while the program has its own LWPCB "
           "(got %ld, %s)", fd, fd < 0 ? strerror(err) : "no error");
    if (fd >= 0) {
        close(fd);
    }
    asm volatile("llwpcb %0" : : "r"(0UL) : "memory");
    fd = perf_open(2);
    err = errno;
    report(fd >= 0, "perfown: with LWP disabled it succeeds (%s)",
           fd < 0 ? strerror(err) : "an event");
    asm volatile("slwpcb %0" : "=r"(cb) : : "memory");
    free(own.cb);
    free(own.ring);
    report(cb && cb != own.cb, "perfown: the event's LWPCB is live in the "
           "thread once the syscall returns (SLWPCB %p)", cb);
    if (fd >= 0) {
        uint64_t period = 20011;
        long r = ioctl(fd, PERF_EVENT_IOC_PERIOD, &period);

        err = errno;
        report(r == -1 && err == EINVAL, "perfown: PERF_EVENT_IOC_PERIOD "
               "to another period fails with EINVAL: the interval is in the "
               "LWPCB (got %ld, %s)", r, r ? strerror(err) : "no error");
    }
    fd2 = perf_open(3);
    err = errno;
    report(fd2 < 0 && err == EBUSY, "perfown: a second lwp event of another "
           "EventId on the thread fails with EBUSY (got %ld, %s)", fd2,
           fd2 < 0 ? strerror(err) : "no error");
    if (fd2 >= 0) {
        close(fd2);
    }
    /* selfprof's profile: SIGIO every 8 records, the handler drains */
    install_sigio();
    prof_init(&p, 32, 8, 1);
    cur = &p;
    lwp_loop(p.cb, n);
    drain(&p);
    cur = NULL;
    report(p.drained == expect && p.bad == 0, "perfown: the program's "
           "LLWPCB takes LWP over from the event: %lu records, all at the "
           "loop's DEC (got %lu, %lu elsewhere)", expect, p.drained, p.bad);
    if (fd >= 0) {
        close(fd);
    }
    free(p.cb);
    free(p.ring);
    return 0;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "selfprof";

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(cmd, "nolwp") && argc > 2) {
        /* exec'd by cmd_nolwp, with LWP taken away */
        cmd_nolwp(argc, argv);
        return report_summary("nolwp exec");
    }
    if (!(lwp_available() & LWP_FEAT_IRE) || !(lwp_available() & LWP_FEAT_INT)) {
        report(0, "LWP with IRE and INT is available (CPUID 8000_001C EAX "
               "0x%08x)", lwp_available());
        return report_summary("lwp-linux");
    }
    if (!strcmp(cmd, "selfprof")) {
        cmd_selfprof(argc > 2 ? strtoul(argv[2], NULL, 0) : 250000, 1);
    } else if (!strcmp(cmd, "stress")) {
        cmd_selfprof(argc > 2 ? strtoul(argv[2], NULL, 0) : 2500000, 0);
    } else if (!strcmp(cmd, "two")) {
        cmd_two();
    } else if (!strcmp(cmd, "coreid")) {
        cmd_coreid();
    } else if (!strcmp(cmd, "ptrace")) {
        cmd_ptrace();
    } else if (!strcmp(cmd, "core")) {
        cmd_core();
    } else if (!strcmp(cmd, "badcb")) {
        cmd_badcb();
    } else if (!strcmp(cmd, "nolwp")) {
        cmd_nolwp(argc, argv);
    } else if (!strcmp(cmd, "hostile")) {
        cmd_hostile();
    } else if (!strcmp(cmd, "perfown")) {
        cmd_perfown();
    } else {
        fprintf(stderr, "usage: lwp-linux selfprof|stress|two|coreid|ptrace|core|badcb|nolwp|hostile|perfown\n");
        return 2;
    }
    return report_summary(cmd);
}
