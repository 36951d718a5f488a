/*
 * lwp-ire: the assembly block whose records lwp-ire.c prints
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef LWP_IRE_H
#define LWP_IRE_H

#include <stdint.h>

/* LLWPCB lwpcb, a loop of four instructions run trips times, LLWPCB 0 */
void ire_block(void *lwpcb, uint64_t trips);

#endif
