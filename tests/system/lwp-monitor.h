/*
 * config=monitor: the guest of the HMP "info lwp" check (lwp-monitor.c)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef LWP_MONITOR_H
#define LWP_MONITOR_H

int lwp_monitor_main(void);

#endif
