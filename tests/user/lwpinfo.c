/*
 * lwpinfo: what a program sees of AMD Lightweight Profiling
 *
 * Prints CPUID Fn8000_0001_ECX[LWP], the raw CPUID Fn8000_001C registers,
 * XCR0 and the decoded fields of AMD publication 43724, Table 3-1.  Built
 * with the host gcc (-mlwp) and run under qemu-x86_64; the user-mode tests
 * compare its output with the values the spec and real hardware give.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>

#include "lwp/lwp-arch.h"

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;

    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

static void features(const char *what, uint32_t r)
{
    static const char *const names[32] = {
        [0] = "avail", [1] = "val", [2] = "ire", [3] = "bre", [4] = "dme",
        [5] = "cnh", [6] = "rnh", [31] = "int",
    };

    printf("%s:", what);
    for (int i = 0; i < 32; i++) {
        if (r & (1u << i)) {
            printf(" %s", names[i] ? names[i] : "?");
        }
    }
    printf("\n");
}

int main(void)
{
    uint32_t a, b, c, d, max_ext;

    __cpuid(0x80000000, max_ext, b, c, d);
    __cpuid(0x80000001, a, b, c, d);
    printf("LWP supported (CPUID 8000_0001 ECX[15]): %u\n", (c >> 15) & 1);
    if (!((c >> LWP_CPUID_EXT3_BIT) & 1) || max_ext < LWP_CPUID_LEAF) {
        return 0;
    }
    __cpuid_count(0x1, 0, a, b, c, d);
    if (c & (1u << 27)) { /* OSXSAVE */
        printf("XCR0: %016llx\n", (unsigned long long)xgetbv0());
    }
    __cpuid(LWP_CPUID_LEAF, a, b, c, d);
    printf("CPUID 8000_001C: EAX=%08x EBX=%08x ECX=%08x EDX=%08x\n",
           a, b, c, d);
    features("available", a);
    features("supported", d);
    printf("LWPCB size: %u bytes, event record: %u bytes, max EventId: %u, "
           "event area at +0x%x\n",
           (b & 0xff) * 8, (b >> 8) & 0xff, (b >> 16) & 0xff, b >> 24);
    printf("version %u, minimum ring buffer %u records\n",
           (c & LWP_CAP_VERSION_MASK) >> LWP_CAP_VERSION_SHIFT,
           32 * ((c & LWP_CAP_MIN_BUFFER_MASK) >> LWP_CAP_MIN_BUFFER_SHIFT));
    return 0;
}
