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
 * Loads that QEMU makes in helpers: FXRSTOR of the image FXSAVE stored at
 * @a (with the gather's index and mask registers), FLD m80 at @b,
 * VPGATHERDD of the 4 dwords at @c + idx[i], then a MOV from @d; only
 * these load while LWP is enabled
 */
void dme_helpers(void *cb, void *a, void *b, void *c, void *d,
                 const uint32_t *idx);
extern char dme_at_fxrstor[], dme_at_fld[], dme_at_gather[], dme_at_mov[];

#endif
