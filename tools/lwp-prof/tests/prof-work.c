/*
 * prof-work: a program whose functions retire known instruction counts,
 * for tools/lwp-prof/tests/run.sh.
 *
 * work_a, work_b and work_c each run one loop of two instructions
 * (dec, jnz) for a fixed number of iterations, so each retires
 * 2 * iterations + 2 instructions (mov, the loop, ret) in one stretch.
 *
 *   prof-work           main runs work_a, work_b, work_c
 *   prof-work threads   work_a and work_b in two new threads, work_c in main
 *   prof-work sigio     installs a SIGIO handler first, then as above
 *   prof-work lwp       loads its own LWPCB in main after the work, then
 *                       runs work_a again
 *   prof-work lwpint    profiles itself: a SIGIO handler, its own LWPCB
 *                       with Instructions Retired every 10007 and the
 *                       threshold interrupt every 32 records, work_a;
 *                       prints how many threshold signals it got
 *   prof-work lwpinsn   main runs work_l only: LWP's own instructions in a
 *                       hot function (the annotated disassembly names them)
 *   prof-work dme       main runs work_m only: loads that miss every cache
 *                       level (DCache Misses)
 *   prof-work mixed     main runs work_m, then work_b: few instructions
 *                       that wait for DRAM, then many that do not
 *   prof-work sigwait   waits for the SIGIO it sends itself, as a program
 *                       that takes SIGIO as a notification does: blocks
 *                       it, raise() and sigwaitinfo, runs work_a, work_b
 *                       and work_c with it blocked, kill() and
 *                       sigtimedwait, then raise() with a handler and
 *                       unblocks it, then raise() blocked and
 *                       sigsuspend; prints what it got
 *   prof-work children [PROG]
 *                       forks two children that exit at once, runs `true`
 *                       with posix_spawnp (and PROG with posix_spawn),
 *                       then runs work_a
 *   prof-work exec [PROG ARGS]
 *                       execs PROG with ARGS (argv[0] PROG), or /bin/true
 *   prof-work fork      forks a child that runs work_b and returns from
 *                       main, then one that runs work_c and calls _exit,
 *                       then runs work_a
 *   prof-work b2        main runs work_a, work_b twice, work_c (the
 *                       second build of a program, for lwp-prof diff)
 *   prof-work aslr      prints where its stack and heap are, and runs
 *                       work_a 1 to 4 times, as bits 12 and 13 of a
 *                       stack address say (a program whose work depends
 *                       on where it was loaded)
 *   prof-work callers   work_a from call_once (once) and from call_twice
 *                       (twice), which main calls: work_a's callers for
 *                       record -g
 *
 * work_l runs LWPINS once, then a loop of four instructions (SLWPCB,
 * LWPVAL, dec, jnz) 200,000 times: 4 * 200000 + 3 instructions (mov,
 * LWPINS, the loop, ret).  lwp-prof enables no LWPVAL event, so LWPVAL
 * does nothing; SLWPCB reads lwp-prof's LWPCB; LWPINS stores one record
 * (event 255) in lwp-prof's ring.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define LOOP(n)                                                   \
    __asm__ volatile("mov $" #n ", %%ecx\n1:\tdec %%ecx\n\tjnz 1b" \
                     ::: "ecx", "cc")

__attribute__((noinline)) void work_a(void) { LOOP(1000000); }
__attribute__((noinline)) void work_b(void) { LOOP(3000000); }
__attribute__((noinline)) void work_c(void) { LOOP(1500000); }

__attribute__((noinline)) void work_l(void)
{
    __asm__ volatile("mov $200000, %%ecx\n"
                     "\tlwpins $7, %%ecx, %%edx\n"
                     "1:\tslwpcb %%rax\n"
                     "\tlwpval $1, %%ecx, %%edx\n"
                     "\tdec %%ecx\n"
                     "\tjnz 1b"
                     ::: "rax", "ecx", "cc");
}

/*
 * work_m reads the first byte of each 4 KiB page of a 64 MiB mapping, 8
 * times over: 131072 loads, one instruction (MOV, then three instructions
 * of loop) each.  In the default cache model (docs/cache-model.md) every
 * one of them misses every level: all 16384 lines are in one L1 set (4
 * ways), and in 32 of the 2048 sets of L2 (16 ways) and of L3 (64 ways),
 * 512 lines per set, read in the same order each time, so LRU always
 * evicts the line that is read next.  DRAM supplies each, latency 256.
 */
#define DME_PAGES 16384
#define DME_PASSES 8

__attribute__((noinline)) void work_m(const unsigned char *buf)
{
    unsigned long n = DME_PASSES * DME_PAGES, off = 0;

    __asm__ volatile("1:\tmovzbl (%[buf],%[off]), %%eax\n"
                     "\tadd $4096, %[off]\n"
                     "\tand $%c[mask], %[off]\n"
                     "\tdec %[n]\n"
                     "\tjnz 1b"
                     : [off] "+r"(off), [n] "+r"(n)
                     : [buf] "r"(buf), [mask] "i"(DME_PAGES * 4096 - 1)
                     : "eax", "cc", "memory");
}

/* "callers": no tail calls, so that each caller's frame is there */
__attribute__((noinline)) void call_once(void)
{
    work_a();
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void call_twice(void)
{
    work_a();
    work_a();
    __asm__ volatile("" ::: "memory");
}

static void *run(void *fn)
{
    ((void (*)(void))fn)();
    return NULL;
}

static void on_io(int sig)
{
    (void)sig;
}

/* "lwpint": the LWPCB, its ring and the threshold signals it got */
static unsigned char own_cb[256] __attribute__((aligned(64)));
static unsigned char own_ring[1 << 16] __attribute__((aligned(64)));
static volatile int own_signals;

static void put32(unsigned char *p, unsigned int v)
{
    memcpy(p, &v, 4);
}

static void on_own_io(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code == POLL_IN && si->si_fd == -1) {
        own_signals++;
        memcpy(own_cb + 0x40, own_cb + 0x10, 4);  /* tail = head: drained */
    }
}

static void self_profile(void)
{
    struct sigaction sa;
    unsigned int a, b, c, d, ev;
    unsigned long base = (unsigned long)own_ring;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_own_io;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGIO, &sa, NULL);
    __cpuid(0x8000001c, a, b, c, d);
    ev = b >> 24;                               /* EventOffset */
    put32(own_cb, 0x80000004u);                 /* Flags: INT, IRE */
    put32(own_cb + 4, sizeof(own_ring));        /* BufferSize */
    memcpy(own_cb + 8, &base, 8);               /* BufferBase */
    put32(own_cb + 0x20, 32 * 32);              /* BufferThresholdOffset */
    put32(own_cb + ev + 8, 10007);              /* IRE EventInterval */
    put32(own_cb + ev + 12, 10007);             /* IRE EventCounter */
    __llwpcb(own_cb);
    work_a();
    __llwpcb(NULL);
    printf("own threshold signals: %d\n", own_signals);
}

static volatile int io_count;

static void count_io(int sig)
{
    (void)sig;
    io_count++;
}

/* "sigwait": each wait must return the SIGIO just sent, or fail */
static void wait_sigio(void)
{
    struct timespec ten = { 10, 0 };
    sigset_t io, now;
    siginfo_t si;
    int r;

    sigemptyset(&io);
    sigaddset(&io, SIGIO);
    sigprocmask(SIG_BLOCK, &io, NULL);
    raise(SIGIO);
    if (sigwaitinfo(&io, &si) != SIGIO) {
        exit(3);
    }
    printf("sigwaitinfo: SIGIO, si_code %d\n", si.si_code);
    work_a();
    work_b();
    work_c();
    kill(getpid(), SIGIO);
    if (sigtimedwait(&io, &si, &ten) != SIGIO) {
        exit(4);
    }
    printf("sigtimedwait: SIGIO, si_code %d\n", si.si_code);
    sigprocmask(SIG_BLOCK, NULL, &now);
    printf("SIGIO blocked: %d\n", sigismember(&now, SIGIO));
    signal(SIGIO, count_io);
    raise(SIGIO);
    sigpending(&now);
    printf("SIGIO pending: %d, handled: %d\n", sigismember(&now, SIGIO),
           io_count);
    sigprocmask(SIG_UNBLOCK, &io, NULL);
    sigpending(&now);
    printf("unblocked: SIGIO pending: %d, handled: %d\n",
           sigismember(&now, SIGIO), io_count);
    /* the pending SIGIO wakes sigsuspend at once */
    sigprocmask(SIG_BLOCK, &io, &now);
    raise(SIGIO);
    r = sigsuspend(&now);
    printf("sigsuspend: %d (%s), handled: %d\n", r,
           r < 0 && errno == EINTR ? "EINTR" : "?", io_count);
}

/* "children": two forked children, `true` and @prog */
static void start_children(char *prog)
{
    char *argv[] = { "true", NULL }, *pargv[] = { prog, NULL };
    pid_t pid;
    int i;

    for (i = 0; i < 2; i++) {
        pid = fork();
        if (pid == 0) {
            _exit(0);
        }
        waitpid(pid, NULL, 0);
    }
    if (posix_spawnp(&pid, "true", NULL, NULL, argv, environ) == 0) {
        waitpid(pid, NULL, 0);
    }
    if (prog && posix_spawn(&pid, prog, NULL, NULL, pargv, environ) == 0) {
        waitpid(pid, NULL, 0);
    }
    work_a();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";

    if (!strcmp(mode, "sigio")) {
        signal(SIGIO, on_io);
    }
    if (!strcmp(mode, "threads")) {
        pthread_t a, b;

        if (pthread_create(&a, NULL, run, (void *)work_a) ||
            pthread_create(&b, NULL, run, (void *)work_b)) {
            return 1;
        }
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        work_c();
    } else if (!strcmp(mode, "lwpinsn")) {
        work_l();
    } else if (!strcmp(mode, "dme") || !strcmp(mode, "mixed")) {
        void *buf = mmap(NULL, DME_PAGES * 4096, PROT_READ,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (buf == MAP_FAILED) {
            return 1;
        }
        work_m(buf);
        if (!strcmp(mode, "mixed")) {
            work_b();
        }
    } else if (!strcmp(mode, "lwpint")) {
        self_profile();
    } else if (!strcmp(mode, "sigwait")) {
        wait_sigio();
    } else if (!strcmp(mode, "children")) {
        start_children(argc > 2 ? argv[2] : NULL);
    } else if (!strcmp(mode, "aslr")) {
        int here;
        void *heap = malloc(16);
        unsigned long n = ((unsigned long)&here >> 12) % 4 + 1;

        printf("stack %p heap %p: work_a x %lu\n", (void *)&here, heap, n);
        while (n--) {
            work_a();
        }
        free(heap);
    } else if (!strcmp(mode, "callers")) {
        call_once();
        call_twice();
    } else if (!strcmp(mode, "b2")) {
        work_a();
        work_b();
        work_b();
        work_c();
    } else if (!strcmp(mode, "fork")) {
        pid_t pid = fork();

        if (pid == 0) {
            work_b();
            printf("child of prof-work fork done\n");
            return 0;
        }
        waitpid(pid, NULL, 0);
        pid = fork();
        if (pid == 0) {
            work_c();
            _exit(0);
        }
        waitpid(pid, NULL, 0);
        work_a();
    } else if (!strcmp(mode, "exec")) {
        if (argc > 2) {
            execv(argv[2], argv + 2);
        } else {
            execl("/bin/true", "true", (char *)NULL);
        }
        return 1;
    } else {
        work_a();
        work_b();
        work_c();
    }
    if (!strcmp(mode, "lwp")) {
        /* A program profiling itself: its LWPCB replaces lwp-prof's */
        static unsigned char cb[256] __attribute__((aligned(64)));
        static unsigned char ring[1 << 16] __attribute__((aligned(64)));
        unsigned int size = sizeof(ring);
        unsigned long base = (unsigned long)ring;

        memcpy(cb + 4, &size, 4);       /* BufferSize, Flags 0 */
        memcpy(cb + 8, &base, 8);       /* BufferBase */
        __llwpcb(cb);
        work_a();
    }
    printf("prof-work %s done\n", mode);
    return 0;
}
