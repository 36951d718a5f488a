/*
 * rr in the guest (tests/linux/rr.sh): threads that race.  THREADS
 * threads each add 1 to a shared counter ITERS times without any lock:
 * load, a stretch of branches, store.  When a thread is switched out
 * between its load and its store, the other threads' updates in between
 * are lost, so the final count and the order in which the threads ran
 * depend on where the scheduler preempted them.  Under rr, on one CPU at
 * a time, that is where rr's time-slice interrupt (the ticks counter's
 * overflow) fell.  Prints the count, the lost updates, how often the
 * owner of the counter changed and a hash of the sequence of owners;
 * exits with (hash % 100) + 1.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4

static volatile unsigned long counter;
static volatile int owner = -1;
static volatile unsigned long switches;
static volatile uint32_t seq = 2166136261u;
static unsigned long iters;

static void *work(void *arg)
{
    int me = (int)(long)arg;
    unsigned long i, k;
    for (i = 0; i < iters; i++) {
        unsigned long c = counter;
        /* the window: 100 conditional branches the ticks counter counts */
        for (k = 0; k < 100; k++)
            asm volatile("" ::: "memory");
        counter = c + 1;
        if (owner != me) {
            owner = me;
            switches = switches + 1;
            seq = (seq ^ (uint32_t)me) * 16777619u;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t[THREADS];
    long n;
    iters = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    for (n = 0; n < THREADS; n++)
        if (pthread_create(&t[n], NULL, work, (void *)n)) {
            perror("pthread_create");
            return 1;
        }
    for (n = 0; n < THREADS; n++)
        pthread_join(t[n], NULL);
    printf("race threads %d iters %lu counter %lu lost %lu switches %lu seq %08x\n",
           THREADS, iters, counter, THREADS * iters - counter, switches, seq);
    int status = 1 + (int)(seq % 100);
    printf("exit %d\n", status);
    return status;
}
