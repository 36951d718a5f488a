/*
 * The program that Debian's perf profiles through the kernel's lwp PMU in
 * the linux layer (tests/linux/lwp-perf.sh): an ordinary static program,
 * no LWP code, linked at 0x10000000 (away from busybox) so that the TCG
 * plugin tests/linux/lwp-perf-plugin.c knows its instructions by address.
 *
 * work_a, work_b and work_c each run one loop of two instructions (dec,
 * jnz) on their argument, so each retires 2 * iterations + 1 instructions
 * (the loop, ret) in one stretch; main runs them for N, 3N and 2N iterations
 * (lwp-perf-work N, default 100000).  noipa: gcc -O2 would otherwise fold
 * the three identical functions into one (-fipa-icf).
 *
 * lwp-perf-work dme prints the address of a 64 MiB mapping ("buf 0x...")
 * and runs work_m, as tools/lwp-prof/tests/prof-work.c's: it reads the
 * first byte of each 4 KiB page of the mapping, 8 times over, 131072 loads
 * by one MOVZBL.  In the default cache model (docs/cache-model.md) every
 * one misses every level: the 16384 lines fall in one L1 set (4 ways) and
 * in 32 sets of L2 (16 ways) and of L3 (64 ways), 512 lines a set, read in
 * the same order each pass, so LRU always evicts the line read next; DRAM
 * supplies each, latency 256.
 *
 * lwp-perf-work threads A B C runs work_a, work_b and work_c in three new
 * threads at once, for A, B and C iterations.  When 2A + 1, 2B + 1 and
 * 2C + 1 are multiples of the sample period, each thread's samples in its
 * function do not depend on how many instructions the thread ran before
 * (tests/linux/lwp-perf.sh, lwp_perf_threads).
 *
 * lwp-perf-work wait FIFO A B C reads a byte from FIFO, then runs work_a,
 * work_b and work_c in its one thread for A, B and C iterations: perf
 * record -p attaches to it while it waits.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>

#define WORK(name)                                                  \
    __attribute__((noipa)) static void name(unsigned long n)     \
    {                                                               \
        asm volatile("1: dec %0\n\t"                                \
                     "jnz 1b"                                       \
                     : "+r"(n));                                    \
    }

WORK(work_a)
WORK(work_b)
WORK(work_c)

#define DME_PAGES 16384
#define DME_PASSES 8

__attribute__((noipa)) static void work_m(const unsigned char *buf)
{
    unsigned long n = DME_PASSES * DME_PAGES, off = 0;

    asm volatile("1:\tmovzbl (%[buf],%[off]), %%eax\n"
                 "\tadd $4096, %[off]\n"
                 "\tand $%c[mask], %[off]\n"
                 "\tdec %[n]\n"
                 "\tjnz 1b"
                 : [off] "+r"(off), [n] "+r"(n)
                 : [buf] "r"(buf), [mask] "i"(DME_PAGES * 4096 - 1)
                 : "eax", "cc", "memory");
}

static unsigned long iterations[3];

static void *thread_a(void *arg) { work_a(iterations[0]); return arg; }
static void *thread_b(void *arg) { work_b(iterations[1]); return arg; }
static void *thread_c(void *arg) { work_c(iterations[2]); return arg; }

int main(int argc, char **argv)
{
    unsigned long n;

    if (argc > 4 && !strcmp(argv[1], "threads")) {
        void *(*const fn[3])(void *) = { thread_a, thread_b, thread_c };
        pthread_t t[3];
        int i;

        for (i = 0; i < 3; i++) {
            iterations[i] = strtoul(argv[2 + i], NULL, 10);
        }
        for (i = 0; i < 3; i++) {
            if (pthread_create(&t[i], NULL, fn[i], NULL)) {
                return 1;
            }
        }
        for (i = 0; i < 3; i++) {
            pthread_join(t[i], NULL);
        }
        return 0;
    }

    if (argc > 5 && !strcmp(argv[1], "wait")) {
        int fd = open(argv[2], O_RDONLY);
        char c;

        if (fd < 0 || read(fd, &c, 1) != 1) {
            return 1;
        }
        work_a(strtoul(argv[3], NULL, 10));
        work_b(strtoul(argv[4], NULL, 10));
        work_c(strtoul(argv[5], NULL, 10));
        return 0;
    }

    if (argc > 1 && !strcmp(argv[1], "dme")) {
        unsigned char *buf = mmap(NULL, DME_PAGES * 4096UL, PROT_READ,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (buf == MAP_FAILED) {
            return 1;
        }
        printf("buf %p\n", (void *)buf);
        fflush(stdout);
        work_m(buf);
        return 0;
    }
    n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;

    work_a(n);
    work_b(3 * n);
    work_c(2 * n);
    return 0;
}
