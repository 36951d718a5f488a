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
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

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

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;

    work_a(n);
    work_b(3 * n);
    work_c(2 * n);
    return 0;
}
