/*
 * config=monitor and config=monitor-run: the guests of the HMP "info lwp"
 * checks (lwp-monitor.c)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef LWP_MONITOR_H
#define LWP_MONITOR_H

int lwp_monitor_main(void);
int lwp_monitor_run_main(void);

#endif
