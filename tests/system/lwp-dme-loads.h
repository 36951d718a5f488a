/*
 * DCache Misses of every kind of load at CPL3 (lwp-dme-loads.c)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef LWP_DME_LOADS_H
#define LWP_DME_LOADS_H

/* config=dme: the runs whose records tests/user/dme-check.py checks */
void test_lwp_dme_loads(void);
void test_lwp_dme_clocks(void);

#endif
