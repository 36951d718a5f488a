/*
 * HMP "info pmu": each vCPU's Intel performance-monitoring registers, for
 * the people who debug a PMU driver (Intel SDM Vol. 3B 18.13).
 *
 * Copyright (c) 2026 qemu-lwp contributors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "cpu.h"
#include "hw/core/cpu.h"
#include "monitor/monitor.h"
#include "monitor/hmp-target.h"

typedef struct PmuInfo {
    uint64_t gp[PMU_MAX_GP], evtsel[PMU_MAX_GP], fixed[PMU_MAX_FIXED];
    uint64_t fixed_ctrl, global_ctrl, global_status, debugctl;
    uint64_t lbr_from[PMU_MAX_LBR], lbr_to[PMU_MAX_LBR];
    uint64_t lbr_tos, lbr_select, ler_from, ler_to, ds_area;
    uint64_t pebs_enable, pebs_ld_lat;
} PmuInfo;

/* On the vCPU's thread, between two TBs */
static void pmu_info_on_cpu(CPUState *cs, run_on_cpu_data data)
{
    CPUX86State *env = cpu_env(cs);
    PmuInfo *info = data.host_ptr;

    /* what TBs counted in the window is not in the registers yet */
    pmu_x86_sync(env);
    memcpy(info->gp, env->msr_gp_counters, sizeof(info->gp));
    memcpy(info->evtsel, env->msr_gp_evtsel, sizeof(info->evtsel));
    memcpy(info->fixed, env->msr_fixed_counters, sizeof(info->fixed));
    info->fixed_ctrl = env->msr_fixed_ctr_ctrl;
    info->global_ctrl = env->msr_global_ctrl;
    info->global_status = env->msr_global_status;
    info->debugctl = env->msr_debugctl;
    memcpy(info->lbr_from, env->msr_lbr_from, sizeof(info->lbr_from));
    memcpy(info->lbr_to, env->msr_lbr_to, sizeof(info->lbr_to));
    info->lbr_tos = env->msr_lbr_tos;
    info->lbr_select = env->msr_lbr_select;
    info->ler_from = env->msr_ler_from;
    info->ler_to = env->msr_ler_to;
    info->ds_area = env->msr_ds_area;
    info->pebs_enable = env->msr_pebs_enable;
    info->pebs_ld_lat = env->msr_pebs_ld_lat;
}

/* pmu-engine.h's PMU_SRC_* */
static const char *const pmu_source_names[] = {
    [PMU_SRC_NONE] = "nothing",
    [PMU_SRC_INSN] = "instructions retired",
    [PMU_SRC_BRANCH] = "branches retired",
    [PMU_SRC_BRANCH_MISP] = "mispredicted branches retired",
    [PMU_SRC_CYCLES] = "core cycles",
    [PMU_SRC_REF_CYCLES] = "reference cycles",
    [PMU_SRC_LOADS] = "loads retired",
    [PMU_SRC_STORES] = "stores retired",
    [PMU_SRC_LOAD_LEVEL] = "loads retired by supplier",
    [PMU_SRC_LLC_REF] = "LLC references",
    [PMU_SRC_LLC_MISS] = "LLC misses",
    [PMU_SRC_LOAD_LATENCY] = "loads retired above the latency threshold",
};

/* What a counter counts, as PmuCount says */
static void pmu_print_count(Monitor *mon, PmuCount c)
{
    if (!c.known) {
        monitor_printf(mon, "an event the model does not count (it counts "
                       "0)");
    } else {
        monitor_printf(mon, "%s", pmu_source_names[c.source]);
        if (c.source == PMU_SRC_BRANCH || c.source == PMU_SRC_BRANCH_MISP ||
            c.source == PMU_SRC_LOAD_LEVEL) {
            monitor_printf(mon, " (kinds 0x%x)", c.kinds);
        }
    }
    if (!c.cpl) {
        monitor_printf(mon, ", disabled");
    } else {
        monitor_printf(mon, ", at %s", c.cpl == PMU_CPL0 ? "CPL 0" :
                       c.cpl == PMU_CPL123 ? "CPL 1-3" : "every CPL");
    }
    monitor_printf(mon, "%s\n", c.pmi ? ", PMI on overflow" : "");
}

static void pmu_info_cpu(Monitor *mon, CPUState *cs,
                         const PmuProfile *profile)
{
    PmuInfo info;
    PmuRegs regs = {
        .gp_counter = info.gp,
        .gp_evtsel = info.evtsel,
        .fixed_counter = info.fixed,
        .fixed_ctr_ctrl = &info.fixed_ctrl,
        .global_ctrl = &info.global_ctrl,
        .global_status = &info.global_status,
        .stalls = X86_CPU(cs)->cost_stalls,
    };
    unsigned i;

    run_on_cpu(cs, pmu_info_on_cpu, RUN_ON_CPU_HOST_PTR(&info));
    if (!pmu_has_counters(profile)) {
        /* the P6 family's last branch records; its counters are upstream's */
        monitor_printf(mon, "  %s: the last branch and exception records\n",
                       pmu_profile_name(profile));
    } else {
        monitor_printf(mon, "  %s: %u general-purpose and %u "
                       "fixed-function counters\n",
                       pmu_profile_name(profile), pmu_num_gp(profile),
                       pmu_num_fixed(profile));
        monitor_printf(mon, "  GLOBAL_CTRL 0x%" PRIx64 ", GLOBAL_STATUS 0x%"
                       PRIx64 ", FIXED_CTR_CTRL 0x%" PRIx64 "\n",
                       info.global_ctrl, info.global_status,
                       info.fixed_ctrl);
    }
    monitor_printf(mon, "  DEBUGCTL 0x%" PRIx64, info.debugctl);
    if (pmu_has_bts(profile) || pmu_has_pebs(profile)) {
        monitor_printf(mon, ", DS_AREA 0x%016" PRIx64, info.ds_area);
    }
    monitor_printf(mon, "\n");
    if (pmu_has_pebs(profile)) {
        monitor_printf(mon, "  PEBS_ENABLE 0x%" PRIx64 ", LD_LAT_THRESHOLD %"
                       PRIu64 "\n", info.pebs_enable, info.pebs_ld_lat);
    }
    if (pmu_lbr_depth(profile)) {
        unsigned n = pmu_lbr_depth(profile), k;

        monitor_printf(mon, "  LBR_SELECT 0x%" PRIx64 ", TOS %" PRIu64
                       ", LER FROM 0x%016" PRIx64 " TO 0x%016" PRIx64 "\n",
                       info.lbr_select, info.lbr_tos, info.ler_from,
                       info.ler_to);
        /* newest first */
        for (k = 0; k < n; k++) {
            i = (info.lbr_tos + n - k) % n;
            monitor_printf(mon, "  LBR%u FROM 0x%016" PRIx64 " TO 0x%016"
                           PRIx64 "\n", i, info.lbr_from[i], info.lbr_to[i]);
        }
    }
    for (i = 0; i < pmu_num_gp(profile); i++) {
        monitor_printf(mon, "  PMC%u 0x%012" PRIx64 ", PERFEVTSEL%u 0x%"
                       PRIx64 ": ", i, info.gp[i], i, info.evtsel[i]);
        pmu_print_count(mon, pmu_count_gp(profile, &regs, i));
    }
    for (i = 0; i < pmu_num_fixed(profile); i++) {
        monitor_printf(mon, "  FIXED_CTR%u 0x%012" PRIx64 ": ", i,
                       info.fixed[i]);
        pmu_print_count(mon, pmu_count_fixed(profile, &regs, i));
    }
}

void hmp_info_pmu(Monitor *mon, const QDict *qdict)
{
    CPUState *cs;

    CPU_FOREACH(cs) {
        const PmuProfile *profile = X86_CPU(cs)->pmu_profile;

        monitor_printf(mon, "CPU#%d:\n", cs->cpu_index);
        if (!profile) {
            monitor_printf(mon, "  no PMU (TCG gives one with pmu=on to "
                           "a CPU model that has a PMU profile)\n");
            continue;
        }
        pmu_info_cpu(mon, cs, profile);
    }
}
