/*
 * HMP "info lwp": each vCPU's AMD Lightweight Profiling state, for the
 * people who test an OS's LWP support (AMD publication 43724, "spec").
 *
 * Copyright (c) 2026 qemu-lwp contributors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "cpu.h"
#include "exec/cpu-common.h"
#include "hw/core/cpu.h"
#include "monitor/monitor.h"
#include "monitor/hmp-target.h"
#include "tcg/helper-tcg.h"

typedef struct LwpInfo {
    LwpState s;         /* counters as of the last instruction retired */
    uint64_t cfg;       /* LWP_CFG */
    bool defer;         /* a deferred Instructions Retired record */
    target_ulong defer_ip;
    int cpl;
    bool halted;
} LwpInfo;

/* On the vCPU's thread, between two TBs */
static void lwp_info_on_cpu(CPUState *cs, run_on_cpu_data data)
{
    CPUX86State *env = cpu_env(cs);
    LwpInfo *info = data.host_ptr;

    info->s = env->lwp;
    /* what normal TBs counted in their window is not in lwp.counter yet */
    lwp_win_used(env, info->s.counter);
    info->cfg = env->lwp_cfg;
    info->defer = env->lwp_defer;
    info->defer_ip = env->lwp_defer_ip;
    info->cpl = env->hflags & HF_CPL_MASK;
    info->halted = cs->halted;
}

/* Table 2-1 */
static const char *const lwp_event_names[LWP_NUM_EVENTS + 1] = {
    [LWP_EVENT_ID_VAL] = "LWPVAL",
    [LWP_EVENT_ID_IRE] = "Instructions Retired",
    [LWP_EVENT_ID_BRE] = "Branches Retired",
    [LWP_EVENT_ID_DME] = "DCache Misses",
    [LWP_EVENT_ID_CNH] = "CPU Clocks not Halted",
    [LWP_EVENT_ID_RNH] = "CPU Reference Clocks not Halted",
};

static void lwp_info_cpu(Monitor *mon, CPUState *cs)
{
    LwpInfo info;
    const LwpState *s = &info.s;
    uint8_t missed[8];
    int id;

    run_on_cpu(cs, lwp_info_on_cpu, RUN_ON_CPU_HOST_PTR(&info));
    monitor_printf(mon, "  CPL %d, %s\n", info.cpl,
                   info.halted ? "halted" : "running");
    /* bit 0 would enable EventId 0, which is no event (choice 2) */
    monitor_printf(mon, "  LWP_CFG 0x%" PRIx64 " (bit 0 reads 0: EventId 0 "
                   "is no event), LWP_CBADDR 0x%" PRIx64 ": LWP %s\n",
                   info.cfg, s->cb_addr,
                   !s->cb_addr ? "disabled" :
                   info.cpl == 3 ? "enabled, counting (CPL 3)" :
                   "enabled, not counting (it counts at CPL 3 only: this is "
                   "the state the OS left loaded, for the thread it runs at "
                   "CPL 3 next)");
    if (!s->cb_addr) {
        return;
    }
    monitor_printf(mon, "  Flags 0x%x, ring 0x%" PRIx64 " of %u bytes, "
                   "head %u, tail %u (as last read), threshold %u\n",
                   s->flags, s->buffer_base, s->buffer_size, s->head,
                   s->tail, s->threshold);
    monitor_printf(mon, "  Filters 0x%x, BaseIP 0x%" PRIx64 ", LimitIP 0x%"
                   PRIx64 ", Random %u\n", s->filters, s->base_ip,
                   s->limit_ip, s->random);
    for (id = 1; id <= LWP_NUM_EVENTS; id++) {
        if (s->flags & (1u << id)) {
            monitor_printf(mon, "  EventId %d (%s): interval %u, "
                           "counter %d\n", id, lwp_event_names[id],
                           s->interval[id], s->counter[id]);
        }
    }
    /* MissedEvents lives in the LWPCB only (spec 8.3) */
    if (cpu_memory_rw_debug(cs, s->cb_addr + LWPCB_MISSED, missed,
                            sizeof(missed), false) == 0) {
        monitor_printf(mon, "  MissedEvents %" PRIu64 " (from the LWPCB)\n",
                       ldq_le_p(missed));
    } else {
        monitor_printf(mon, "  MissedEvents: the LWPCB is not mapped\n");
    }
    if (s->pending[0]) {
        monitor_printf(mon, "  pending record: EventId %u, stored before "
                       "the next CPL 3 instruction\n", s->pending[0]);
    } else {
        monitor_printf(mon, "  pending record: none\n");
    }
    if (s->reload) {
        monitor_printf(mon, "  LWPCB fields to read again after XRSTOR "
                       "(spec 8.2.5)\n");
    }
    if (info.defer) {
        monitor_printf(mon, "  deferred Instructions Retired record of "
                       "the instruction at 0x%" PRIx64 "\n",
                       (uint64_t)info.defer_ip);
    }
}

void hmp_info_lwp(Monitor *mon, const QDict *qdict)
{
    CPUState *cs;

    CPU_FOREACH(cs) {
        CPUX86State *env = cpu_env(cs);

        monitor_printf(mon, "CPU#%d:\n", cs->cpu_index);
        if (!(env->features[FEAT_8000_0001_ECX] & CPUID_EXT3_LWP)) {
            monitor_printf(mon, "  no LWP\n");
            continue;
        }
        lwp_info_cpu(mon, cs);
    }
}
