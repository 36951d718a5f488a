/*
 * The program Debian's perf counts in the linux layer's PMU guest
 * (tests/linux/run.sh): N iterations of DEC/JNZ, nothing else that
 * depends on N, so that two runs with N of the same number of digits
 * differ by exactly 2 * (N2 - N1) user instructions and N2 - N1 branches.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1;

    asm volatile("1: dec %0\n\t"
                 "jnz 1b"
                 : "+r"(n));
    return 0;
}
