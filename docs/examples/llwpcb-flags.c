/*
 * llwpcb-flags: GCC's __llwpcb() is not a memory clobber
 * (docs/quickstart-linux.md).  LLWPCB rewrites LWPCB.Flags with the
 * events it enabled (spec 5.1 step 6), but GCC does not know that: the
 * first read below is folded to the value the program stored.
 *
 *   gcc -O2 -static -mlwp -o llwpcb-flags docs/examples/llwpcb-flags.c
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <stdint.h>
#include <stdio.h>
#include <x86intrin.h>

static struct {
    uint32_t flags, buffer_size;      /* spec 6, Figure 6-1 */
    uint64_t buffer_base;
    uint8_t rest[0xb0 - 0x10];        /* up to EventId 6 */
} cb __attribute__((aligned(64)));
static uint8_t ring[32 * 32] __attribute__((aligned(64)));

int main(void)
{
    uint32_t folded;

    cb.flags = (1u << 2) | (1u << 4); /* Instructions Retired, DCache Misses */
    cb.buffer_size = sizeof(ring);
    cb.buffer_base = (uintptr_t)ring;
    __llwpcb(&cb);
    folded = cb.flags;                /* GCC reuses the value stored above */
    asm volatile("" : : : "memory");  /* from here on, GCC reads memory */
    printf("Flags without a barrier 0x%x, with one 0x%x\n", folded, cb.flags);
    __llwpcb(NULL);
    return 0;
}
