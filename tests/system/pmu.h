/*
 * The architectural PMU tests (pmu.c): config=pmu and config=nopmu.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PMU_H
#define PMU_H

#include "libcflat.h"

/* Run the tests for a CPU with (@pmu) or without a PMU; the summary */
int pmu_main(bool pmu);
/* config=pmu-monitor: set the registers, print them, halt (never returns) */
int pmu_monitor_main(void);
/* config=pmu-migrate: the counted workload, its digest; the summary */
int pmu_migrate_main(void);
/* config=pmu-cost: -cpu Nehalem,pmu=on,cost-model=detailed */
int pmu_cost_main(void);

#endif
