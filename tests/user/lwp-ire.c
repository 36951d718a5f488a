/*
 * lwp-ire: the Instructions Retired records of a known loop
 *
 *   lwp-ire INTERVAL TRIPS
 *
 * Enables LWP with only Instructions Retired (EventId 2, Random 0,
 * EventInterval2 = EventCounter2 = INTERVAL) inside ire_block, runs its
 * loop TRIPS times, disables LWP there, and prints every stored record as
 * "REC <EventId> <InstructionAddress>", then "MISSED <n>".  It checks
 * nothing itself: ire-check.py derives the expected records from GNU
 * objdump's disassembly of this binary and compares (spec 1.1, 2.2).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lwp/lwp-arch.h"
#include "lwp-ire.h"

/*
 * ire_block(lwpcb, trips): LLWPCB, a loop of four instructions, LLWPCB 0.
 * Neither LLWPCB is counted (docs/implementation-choices.md, choice 39).
 */
asm(".text\n"
    ".globl ire_block\n"
    "ire_block:\n"
    "    llwpcb %rdi\n"
    "    mov %rsi, %rcx\n"
    "1:  add $1, %rax\n"
    "    add $2, %rdx\n"
    "    dec %rcx\n"
    "    jnz 1b\n"
    "    xor %edi, %edi\n"
    "    llwpcb %rdi\n"
    "    ret\n"
    ".globl ire_block_end\n"
    "ire_block_end:\n");

#define RING_SIZE (1u << 20)

int main(int argc, char **argv)
{
    uint32_t interval, e = LWP_EVENT_OFFSET, head;
    uint64_t trips, missed;
    uint8_t *cb, *ring;

    if (argc != 3) {
        fprintf(stderr, "usage: lwp-ire INTERVAL TRIPS\n");
        return 2;
    }
    if (sscanf(argv[1], "%u", &interval) != 1 ||
        sscanf(argv[2], "%" SCNu64, &trips) != 1) {
        fprintf(stderr, "lwp-ire: INTERVAL and TRIPS are numbers\n");
        return 2;
    }
    cb = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ring = mmap(NULL, RING_SIZE, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (cb == MAP_FAILED || ring == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    memset(cb, 0, 4096);
    *(uint32_t *)(cb + LWPCB_FLAGS) = LWP_FEAT_IRE;
    *(uint32_t *)(cb + LWPCB_BUFFER_SIZE) = RING_SIZE;
    *(uint64_t *)(cb + LWPCB_BUFFER_BASE) = (uintptr_t)ring;
    *(uint32_t *)(cb + LWPCB_INTERVAL(e, LWP_EVENT_ID_IRE)) = interval;
    *(uint32_t *)(cb + LWPCB_COUNTER(e, LWP_EVENT_ID_IRE)) = interval;

    ire_block(cb, trips);

    head = *(uint32_t *)(cb + LWPCB_HEAD);
    missed = *(uint64_t *)(cb + LWPCB_MISSED);
    printf("INTERVAL %u\n", *(uint32_t *)(cb + LWPCB_INTERVAL(e, 2)));
    for (uint32_t off = 0; off < head; off += LWP_EVENT_RECORD_SIZE) {
        printf("REC %u 0x%llx\n", ring[off + LWP_REC_EVENT_ID],
               (unsigned long long)*(uint64_t *)(ring + off + LWP_REC_IP));
    }
    printf("MISSED %llu\n", (unsigned long long)missed);
    return 0;
}
