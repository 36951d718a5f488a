/*
 * lwp-ire: the assembly blocks whose records lwp-ire.c prints
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef LWP_IRE_H
#define LWP_IRE_H

#include <stdint.h>

/* LLWPCB lwpcb, a loop of four instructions run trips times, LLWPCB 0 */
void ire_block(void *lwpcb, uint64_t trips);
/* LLWPCB lwpcb, REP STOSB/MOVSB with RCX = count into dst, LLWPCB 0 */
void ire_rep_block(void *lwpcb, uint64_t count, void *dst, const void *src);

#endif
