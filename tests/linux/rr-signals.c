/*
 * rr in the guest (tests/linux/rr.sh): signals and timers.  Lines that
 * start with "det " are the same in every run (the guest runs it natively
 * too and compares them); "nd " lines say where asynchronous signals
 * arrived, which differs from run to run and which a replay must
 * reproduce exactly.
 *   - synchronous: raise(SIGUSR1), kill(getpid(), SIGUSR2) while blocked
 *     then unblocked, a SIGSEGV caught and left with siglongjmp, SIGFPE
 *     from a division by zero, likewise;
 *   - asynchronous: an ITIMER_REAL (SIGALRM) and a POSIX timer
 *     (SIGRTMIN, SA_SIGINFO with its sival) interrupting a busy loop,
 *     each arrival noted with the loop's iteration number; a nanosleep
 *     that a timer interrupts.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define WANT 8

static volatile unsigned long iter;
static volatile int n_alrm, n_rt, n_usr1, n_usr2, rt_val;
static unsigned long at_alrm[WANT + 8], at_rt[WANT + 8];
static sigjmp_buf jb;

static void on_alrm(int sig)
{
    (void)sig;
    if (n_alrm < WANT + 8)
        at_alrm[n_alrm] = iter;
    n_alrm++;
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (n_rt < WANT + 8)
        at_rt[n_rt] = iter;
    rt_val = si->si_value.sival_int;
    n_rt++;
}

static void on_usr(int sig)
{
    if (sig == SIGUSR1)
        n_usr1++;
    else
        n_usr2++;
}

static void on_fault(int sig)
{
    siglongjmp(jb, sig);
}

static void handle(int sig, void (*h)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = h;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

int main(void)
{
    struct sigaction sa;
    sigset_t set;
    int s;

    handle(SIGUSR1, on_usr);
    handle(SIGUSR2, on_usr);
    handle(SIGSEGV, on_fault);
    handle(SIGFPE, on_fault);
    handle(SIGALRM, on_alrm);
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGRTMIN, &sa, NULL);

    /* synchronous signals */
    raise(SIGUSR1);
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, NULL);
    kill(getpid(), SIGUSR2);
    int before = n_usr2;
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    printf("det usr1 %d usr2 blocked %d unblocked %d\n", n_usr1, before, n_usr2);
    int *volatile bad = (int *)16;
    s = sigsetjmp(jb, 1);
    if (s == 0)
        *bad = 1;
    printf("det fault 1 gave %s\n", s == SIGSEGV ? "SIGSEGV" : "something else");
    volatile int zero = 0;
    s = sigsetjmp(jb, 1);
    if (s == 0)
        s = 100 / zero;
    printf("det fault 2 gave %s\n", s == SIGFPE ? "SIGFPE" : "something else");

    /*
     * asynchronous: an interval timer and a POSIX timer, 50 ms and 70 ms
     * (with 2 and 3 ms, rr in the TCG guest took longer than that for
     * each signal, and the queued SIGRTMINs kept the loop from starting;
     * with 20 and 30 ms, under -smp 2, they came in bunches at 4
     * iterations)
     */
    struct itimerval it = { { 0, 50000 }, { 0, 50000 } };
    timer_t tid;
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGRTMIN;
    sev.sigev_value.sival_int = 4242;
    struct itimerspec its = { { 0, 70000000 }, { 0, 70000000 } };
    if (timer_create(CLOCK_MONOTONIC, &sev, &tid) || timer_settime(tid, 0, &its, NULL) ||
        setitimer(ITIMER_REAL, &it, NULL)) {
        perror("timers");
        return 1;
    }
    uint32_t h = 1;
    while (n_alrm < WANT || n_rt < WANT) {
        h = h * 1103515245u + 12345u;
        if (h & 0x100)
            h ^= 0x5a5a;
        iter = iter + 1;
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    timer_delete(tid);
    printf("det timers: at least %d SIGALRM and %d SIGRTMIN: %s, sival %d\n", WANT, WANT,
           n_alrm >= WANT && n_rt >= WANT ? "yes" : "no", rt_val);
    printf("nd loop %lu iterations, %d SIGALRM at", iter, n_alrm);
    for (s = 0; s < n_alrm && s < WANT + 8; s++)
        printf(" %lu", at_alrm[s]);
    printf("; %d SIGRTMIN at", n_rt);
    for (s = 0; s < n_rt && s < WANT + 8; s++)
        printf(" %lu", at_rt[s]);
    printf("\n");

    /* a sleep that a timer interrupts */
    alarm(1);
    struct timespec req = { 5, 0 }, rem;
    int r = nanosleep(&req, &rem);
    printf("det nanosleep interrupted: %s\n", r == -1 && errno == EINTR ? "yes" : "no");
    printf("det exit 3\n");
    return 3;
}
