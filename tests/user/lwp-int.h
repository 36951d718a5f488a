/*
 * lwp-int: the assembly block whose threshold interrupts lwp-int.c counts
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef LWP_INT_H
#define LWP_INT_H

#include <stdint.h>

/* LLWPCB lwpcb, a loop of four instructions run trips times, LLWPCB 0 */
void int_block(void *lwpcb, uint64_t trips);
/* the loop's instructions, and the one after it */
extern const char int_l0[], int_l1[], int_l2[], int_l3[], int_l4[];

#endif
