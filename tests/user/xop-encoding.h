/*
 * xop-encoding: the assembly entry points and data of xop-encoding.c
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef XOP_ENCODING_H
#define XOP_ENCODING_H

#include <stdint.h>

/* The assembly below xe_enter uses these offsets: r[n] at 8n, flags 128 */
struct cpu {
    uint64_t r[16];     /* rax rcx rdx rbx rsp rbp rsi rdi r8..r15 */
    uint64_t flags;
};

/* 64-bit: run code with the registers and flags of *io, store them back */
void xe_enter(struct cpu *io, uintptr_t code);
/* where code's slot jumps back to: stores the registers into *io */
void xe_exit(void);
/* 32-bit: far-call into code with every GPR but ESP set to xe32_regval */
void xe_enter32(uintptr_t code);
/* the value xe_enter32 loads into the GPRs */
extern uint32_t xe32_regval;
/* the 32-bit address a 32-bit slot jumps through to return */
extern uint32_t xe32_exit_ptr;

#endif
