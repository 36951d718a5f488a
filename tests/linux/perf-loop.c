/*
 * The program Debian's perf counts in the linux layer's PMU guest
 * (tests/linux/run.sh): N iterations of DEC/JNZ, nothing else that
 * depends on N, so that two runs with N of the same number of digits
 * differ by exactly 2 * (N2 - N1) user instructions and N2 - N1 branches.
 * With a second argument K, it then reads one byte of each 64-byte line
 * of the first K KiB (at most 1024) of a buffer, twice: loads for the
 * cache events to count.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

/* volatile: every read below is a load the cache events must see */
static volatile unsigned char buf[1024 * 1024];

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1;
    unsigned long k = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
    unsigned long i, pass, sum = 0;

    asm volatile("1: dec %0\n\t"
                 "jnz 1b"
                 : "+r"(n));
    if (k > 1024) {
        k = 1024;
    }
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < k * 1024; i += 64) {
            sum += buf[i];
        }
    }
    return sum != 0;
}
