/*
 * lwp-trace: the assembly block whose records and threshold interrupts
 * lwp-trace.c traces
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef LWP_TRACE_H
#define LWP_TRACE_H

#include <stdint.h>

/* a loop of four instructions run trips times */
void trace_loop(uint64_t trips);
/* the loop's first and last instructions */
extern const char trace_l0[], trace_l3[];

#endif
