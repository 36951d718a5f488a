/*
 * Timer interrupts at CPL3, with and without LWP counting (lwp-irq.c)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef LWP_IRQ_H
#define LWP_IRQ_H

#include "libcflat.h"

/* The interrupt-delay test; the LWP part only if @lwp */
void test_lwp_irq(bool lwp);

#endif
