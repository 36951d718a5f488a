/*
 * qemu-lwp engine: the branch-predictor model
 *
 * A deterministic model of a branch predictor, which says of every
 * retired near branch whether it was mispredicted: for Intel's
 * BR_MISP_RETIRED (event C5H) and, later, LWP's lwp-bpred (the PRV and
 * PRD bits of a Branches Retired record).  docs/branch-predictor.md
 * specifies it completely; the names below ("Conditional branches",
 * "Return stack", ...) are that document's sections.
 *
 * One BpredState per vCPU, shared by every CPL.  It is a plain C struct
 * with a fixed layout, so that the CPU state can embed it, migrate it
 * field by field, and generated code can read and write its fields
 * directly: the slot of a conditional or indirect branch depends on the
 * branch's address only, which the translator knows.  C++ includes this
 * header in an extern "C" block.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef BPRED_ENGINE_H
#define BPRED_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

/* Table sizes (powers of two) and the index functions' shifts */
#define BPRED_COND_BITS 12
#define BPRED_COND_ENTRIES (1u << BPRED_COND_BITS) /* 4096 counters */
#define BPRED_BTB_BITS 9
#define BPRED_BTB_ENTRIES (1u << BPRED_BTB_BITS)   /* 512 targets */
#define BPRED_RSB_ENTRIES 16u                      /* return stack depth */

/* A 2-bit counter: 0 and 1 predict not taken, 2 and 3 taken */
#define BPRED_COUNTER_MAX 3u
#define BPRED_COUNTER_INIT 1u /* weakly not taken */
/* The tag of a BTB entry that no branch has written since RESET */
#define BPRED_BTB_EMPTY UINT64_MAX

/*
 * "State".  Every address is a linear address (CS base + rIP),
 * zero-extended to 64 bits.
 */
typedef struct BpredState {
    /* "Indirect branches": the address of the branch, all ones if none */
    uint64_t btb_tag[BPRED_BTB_ENTRIES];
    /* the branch's last target */
    uint64_t btb_target[BPRED_BTB_ENTRIES];
    /* "Return stack": return addresses, a circular array */
    uint64_t rsb[BPRED_RSB_ENTRIES];
    /* index of the most recently pushed entry, 0 to 15 */
    uint32_t rsb_top;
    /* 0 */
    uint32_t reserved;
    /* "Conditional branches": 2-bit saturating counters, 0 to 3 */
    uint8_t cond[BPRED_COND_ENTRIES];
} BpredState;

/* The state at RESET (power-on, system_reset): "Reset" */
void bpred_reset(BpredState *s);

/*
 * Whether @s is a state the model can reach: every counter 0 to 3,
 * rsb_top 0 to 15, reserved 0.  The glue rejects a loaded (migrated)
 * state that is not.  Whatever the bytes of @s, the functions below
 * stay inside it.
 */
bool bpred_state_valid(const BpredState *s);

/*
 * The index of the counter of the conditional branch at @ip,
 * (ip ^ (ip >> 12)) & 4095, and of its BTB entry for an indirect branch,
 * (ip ^ (ip >> 9)) & 511: "Index functions"
 */
uint32_t bpred_cond_index(uint64_t ip);
uint32_t bpred_btb_index(uint64_t ip);

/*
 * Each of these takes one retired branch, returns whether the model
 * mispredicted it, and updates @s.
 *
 * bpred_cond: a conditional branch (Jcc, JrCXZ, LOOP, LOOPE, LOOPNE) at
 * @ip, taken or not.
 * bpred_indirect: a near JMP or CALL through a register or memory at
 * @ip, to @target.  An indirect CALL also calls bpred_call.
 * bpred_call: a near CALL, direct or indirect, whose return address (the
 * address of the next instruction) is @return_ip.  Never mispredicted.
 * bpred_ret: a near RET (C3H, C2H iw) to @target.
 *
 * Direct near JMP, direct near CALL (beyond bpred_call), far transfers,
 * interrupts, exceptions, IRET, SYSCALL, SYSRET, SYSENTER and SYSEXIT are
 * never mispredicted and leave the state alone.
 */
bool bpred_cond(BpredState *s, uint64_t ip, bool taken);
bool bpred_indirect(BpredState *s, uint64_t ip, uint64_t target);
void bpred_call(BpredState *s, uint64_t return_ip);
bool bpred_ret(BpredState *s, uint64_t target);

#endif /* BPRED_ENGINE_H */
