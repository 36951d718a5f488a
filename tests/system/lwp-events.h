/*
 * The CPL3 code of the 64-bit LWP event tests (lwp-user64.S) as C sees
 * it, and the entry point of the tests (lwp-events.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef LWP_EVENTS_H
#define LWP_EVENTS_H

#include "libcflat.h"
#include "lwp-user64.h"

/*
 * One instruction of lwp_seq_user()'s counted sequence, in the order it
 * retires, from the assembler's labels: its address, the address of the
 * instruction executed after it (a branch's target, or its fall-through
 * when not taken) and its kind.
 */
struct seq_insn {
    u64 ip, next, kind;
};

extern const struct seq_insn lwp_seq[], lwp_seq_end[];
/* The CPL3 code of lwp_seq_user() */
extern const u8 lwp_seq_text[], lwp_seq_text_end[];

/*
 * CPL3: LLWPCB @cb, then the sequence lwp_seq[], with two SYSCALLs, an
 * INT LWP_TEST_INT_VECTOR and a far CALL through LWP_GATE_KERNEL_SEL
 * among its instructions.  Comes back through INT
 * USER_RET_VECTOR with LWP still enabled.
 */
void lwp_seq_user(void *cb);

/* SYSCALL entry (IA32_LSTAR): lwp_ring0_loop()'s loop, ++lwp_syscalls */
extern const u8 lwp_syscall_entry[];
extern volatile u32 lwp_syscalls;       /* volatile: written at CPL0 */

/*
 * LWP_GATE_KERNEL_SEL's target (CPL0): lwp_ring0_loop()'s loop,
 * ++lwp_gate_calls, LRETQ; LWP_GATE_USER_SEL's target (CPL3): NOP, LRETQ
 */
extern const u8 lwp_gate_entry[], lwp_gate_callee[];
extern volatile u32 lwp_gate_calls;     /* volatile: written at CPL0 */

/* RING0_LOOPS iterations of DEC + JNZ, at the caller's CPL */
void lwp_ring0_loop(void);

struct lwp_ins_args {
    u64 cb;
    u32 count;                          /* at least 1 */
};

/*
 * CPL3: LLWPCB a->cb, a->count times the LWPINS at lwp_ins_insn (the next
 * instruction at lwp_ins_next), then LLWPCB 0.  Comes back through INT
 * USER_RET_VECTOR.
 */
void lwp_ins_user(void *a);
extern const u8 lwp_ins_insn[], lwp_ins_next[];

void test_lwp_events(void);

#endif
