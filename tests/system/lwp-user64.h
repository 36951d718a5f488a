/*
 * Numbers shared by the CPL3 code of the 64-bit LWP event tests
 * (lwp-user64.S) and their C side (lwp-events.h).  No C: the assembler
 * includes it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef LWP_USER64_H
#define LWP_USER64_H

/* DPL3 interrupt gate that the CPL3 sequence raises with INT n */
#define LWP_TEST_INT_VECTOR 0x81

/* Iterations of the CPL0 loop (DEC + JNZ) of lwp_ring0_loop() */
#define RING0_LOOPS         1000

/* The LWPINS of lwp_ins_user(): imm32 (Flags = its low 16 bits), ECX, EDX */
#define LWP_INS_IMM         0x5a5a4321
#define LWP_INS_DATA1       0x1357
#define LWP_INS_DATA2       0x2468

/*
 * 64-bit call gates (DPL3) that the CPL3 sequence calls through with far
 * CALL: one to lwp_gate_entry in KERNEL_CS (CPL0), one to lwp_gate_callee
 * in USER_CS (same privilege)
 */
#define LWP_GATE_KERNEL_SEL (TEST_GATE64_SEL(0) | 3)
#define LWP_GATE_USER_SEL   (TEST_GATE64_SEL(1) | 3)

/* struct seq_insn.kind */
#define SEQ_INSN            0           /* not a branch */
#define SEQ_TAKEN           1           /* a branch, taken */
#define SEQ_NOT_TAKEN       2           /* a conditional branch, not taken */

#endif
