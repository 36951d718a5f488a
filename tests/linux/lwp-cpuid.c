/*
 * The guest's own view of the CPUID words the linux test layer checks.
 * Built on the host with "gcc -static -O2" and run as a program of the
 * busybox initramfs (tests/linux/run.sh).
 *
 * Prints one line per leaf, "@@cpuid LEAF SUBLEAF EAX EBX ECX EDX" in hex,
 * then "@@xcr0 VALUE" as read by XGETBV (when CR4.OSXSAVE is on, which
 * CPUID 1 ECX[27] reports), or "@@xcr0 none".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdint.h>
#include <stdio.h>

static void cpuid(uint32_t leaf, uint32_t subleaf, uint32_t r[4])
{
    asm volatile("cpuid"
                 : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                 : "a"(leaf), "c"(subleaf));
}

static void show(uint32_t leaf, uint32_t subleaf)
{
    uint32_t r[4];

    cpuid(leaf, subleaf, r);
    printf("@@cpuid %08x %u %08x %08x %08x %08x\n",
           leaf, subleaf, r[0], r[1], r[2], r[3]);
}

int main(void)
{
    uint32_t r[4];

    show(0x8000001C, 0);
    show(0xD, 0);
    show(0xD, 1);
    show(0xD, 62);

    cpuid(1, 0, r);
    if (r[2] & (1u << 27)) {
        uint32_t lo, hi;

        asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        printf("@@xcr0 %016llx\n", ((unsigned long long)hi << 32) | lo);
    } else {
        printf("@@xcr0 none\n");
    }
    return 0;
}
