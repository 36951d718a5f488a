/*
 * lwp-ire: the Instructions Retired records of a known loop, or of
 * straight-line code around REP string instructions
 *
 *   lwp-ire INTERVAL TRIPS
 *   lwp-ire rep INTERVAL COUNT
 *
 * Enables LWP with only Instructions Retired (EventId 2, Random 0,
 * EventInterval2 = EventCounter2 = INTERVAL) inside ire_block, runs its
 * loop TRIPS times, disables LWP there, and prints every stored record as
 * "REC <EventId> <InstructionAddress>", then "MISSED <n>" and the
 * EventCounter2 that the disabling LLWPCB flushed, "COUNTER <n>" (spec
 * 5.1).  With "rep", ire_rep_block runs instead: REP STOSB and REP MOVSB
 * with RCX = COUNT, each of which retires once (spec 2.2: the counter is
 * decremented each time an instruction retires; choice 39), however many
 * iterations it takes.  It checks nothing itself: ire-check.py derives the
 * expected records from GNU objdump's disassembly of this binary and
 * compares (spec 1.1, 2.2).
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

/*
 * ire_rep_block(lwpcb, count, dst, src): LLWPCB, straight-line code with
 * a REP STOSB and two REP MOVSB of count bytes (RCX = count, DF = 0 by
 * the ABI), the last one followed directly by a REP STOSB that then has
 * RCX = 0, LLWPCB 0.  dst and src hold count bytes.
 */
asm(".text\n"
    ".p2align 4\n"
    ".globl ire_rep_block\n"
    "ire_rep_block:\n"
    "    llwpcb %rdi\n"
    "    mov %rsi, %r8\n"
    "    mov %rcx, %r9\n"
    "    mov %r8, %rcx\n"
    "    mov %rdx, %rdi\n"
    "    mov $0x5a, %eax\n"
    "    nop\n"
    "    rep stosb\n"
    "    nop\n"
    "    mov %r8, %rcx\n"
    "    mov %rdx, %rdi\n"
    "    mov %r9, %rsi\n"
    "    rep movsb\n"
    "    mov %r8, %rcx\n"
    "    mov %rdx, %rdi\n"
    "    mov %r9, %rsi\n"
    "    rep movsb\n"
    "    rep stosb\n"
    "    nop\n"
    "    xor %edi, %edi\n"
    "    llwpcb %rdi\n"
    "    ret\n");

#define RING_SIZE (1u << 20)

int main(int argc, char **argv)
{
    uint32_t interval, e = LWP_EVENT_OFFSET, head;
    uint64_t trips, missed;
    uint8_t *cb, *ring, *dst = NULL, *src = NULL;
    int rep = argc == 4 && !strcmp(argv[1], "rep");

    if (argc != 3 + rep) {
        fprintf(stderr, "usage: lwp-ire [rep] INTERVAL TRIPS|COUNT\n");
        return 2;
    }
    if (sscanf(argv[1 + rep], "%u", &interval) != 1 ||
        sscanf(argv[2 + rep], "%" SCNu64, &trips) != 1) {
        fprintf(stderr, "lwp-ire: INTERVAL and TRIPS are numbers\n");
        return 2;
    }
    if (rep) {
        dst = malloc(trips + 1);
        src = malloc(trips + 1);
        if (!dst || !src) {
            perror("malloc");
            return 2;
        }
        memset(src, 0xa5, trips + 1);
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

    if (rep) {
        ire_rep_block(cb, trips, dst, src);
    } else {
        ire_block(cb, trips);
    }

    head = *(uint32_t *)(cb + LWPCB_HEAD);
    missed = *(uint64_t *)(cb + LWPCB_MISSED);
    printf("INTERVAL %u\n", *(uint32_t *)(cb + LWPCB_INTERVAL(e, 2)));
    for (uint32_t off = 0; off < head; off += LWP_EVENT_RECORD_SIZE) {
        printf("REC %u 0x%llx\n", ring[off + LWP_REC_EVENT_ID],
               (unsigned long long)*(uint64_t *)(ring + off + LWP_REC_IP));
    }
    printf("MISSED %llu\n", (unsigned long long)missed);
    printf("COUNTER %u\n",
           *(uint32_t *)(cb + LWPCB_COUNTER(e, 2)) & 0x3ffffff);
    return 0;
}
