/*
 * The assembler routines of lwp-dme.c
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef LWP_DME_H
#define LWP_DME_H

#include <stdint.h>

/*
 * LLWPCB @cb, follow the cyclic list of pointers from @start @n times
 * (one "mov (%rax), %rax" at dme_chase_load per step), LLWPCB 0
 */
void dme_chase(void *cb, void *start, uint64_t n);
extern char dme_chase_load[];

/*
 * LLWPCB @cb, then @n times, each on a stack line never loaded before
 * (DME_STACK_STRIDE bytes below the last, from @top down): the stack
 * loads of POP r64, POPF, RET, RET imm16, LEAVE, PUSH m64, POP m64 and
 * ENTER with nesting level 2; LLWPCB 0.  Every load is 8 bytes.
 */
void dme_stack(void *cb, void *top, uint64_t n);
#define DME_STACK_STRIDE 4160
#define DME_STACK_LOADS  8     /* per step */

/*
 * LLWPCB @cb, then one load of each kind that generated code makes (MOV
 * and ALU operands, read-modify-writes, JMP and CALL through memory,
 * LODS, MOVS and SCAS with and without REP, XLAT, CMPXCHG, XCHG, XADD,
 * CMPXCHG8B/16B, x87, SSE, AVX 128 and 256, LWPVAL, then those that miss
 * more than one line: CMPS and a gather), each from its own line
 * DME_STACK_STRIDE bytes above the last, from @base; the gather's dword
 * indexes from @idx (loaded before LLWPCB); LLWPCB 0
 */
void dme_kinds(void *cb, void *base, const uint32_t *idx);
extern char dme_kinds_lwpval[], dme_kinds_end[];
#define DME_KINDS 37

/*
 * Loads that QEMU makes in helpers: FXRSTOR of the image FXSAVE stored at
 * @a (with the gather's index and mask registers), FLD m80 at @b,
 * VPGATHERDD of the 4 dwords at @c + idx[i], then a MOV from @d; only
 * these load while LWP is enabled
 */
void dme_helpers(void *cb, void *a, void *b, void *c, void *d,
                 const uint32_t *idx);
extern char dme_at_fxrstor[], dme_at_fld[], dme_at_gather[], dme_at_mov[];

#endif
