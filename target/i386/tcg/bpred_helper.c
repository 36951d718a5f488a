/*
 * x86 profiling: the branch-predictor model
 *
 * The near branches of TBs that the model takes (gen_pmu_bpred) come here
 * when the generated code finds the model mispredicts them
 * (tcg-helpers/bpred-engine.h, docs/branch-predictor.md).  A
 * misprediction counts for the PMU (pmu_x86_mispredict) or, with
 * cost-model=detailed, as a stall of LWP's clocks.
 *
 * Copyright (c) 2026 qemu-lwp contributors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "cpu.h"
#include "exec/helper-proto.h"
#include "helper-tcg.h"

/* The linear address of @eip in the current code segment */
static uint64_t x86_linear_eip(CPUX86State *env, target_ulong eip)
{
    if (env->hflags & HF_CS64_MASK) {
        return eip;
    }
    return (uint32_t)(env->segs[R_CS].base + eip);
}

/*
 * The near branch at EIP @ip retired (gen_pmu_bpred): the predictor model
 * takes it (@kind PMU_BPRED_*; @target the EIP it went to, @ret the EIP
 * of a CALL's return).  If it mispredicted it, the PMU counts it, or at
 * CPL 3, with X86_PROF_LWP_STALLS, LWP's clocks count its stall when it
 * retires (a CPU has one of them: x86_cpu_realizefn).
 */
void helper_pmu_bpred(CPUX86State *env, uint32_t kind, target_ulong ip,
                      target_ulong target, target_ulong ret)
{
    BpredState *b = &env->bpred;
    uint64_t lip = x86_linear_eip(env, ip), to = x86_linear_eip(env, target);
    bool misp;

    switch (kind) {
    case PMU_BPRED_NOT_TAKEN:
    case PMU_BPRED_TAKEN:
        misp = bpred_cond(b, lip, kind == PMU_BPRED_TAKEN);
        break;
    case PMU_BPRED_JMP:
        misp = bpred_indirect(b, lip, to);
        break;
    case PMU_BPRED_CALL:
        bpred_call(b, x86_linear_eip(env, ret));
        return;
    case PMU_BPRED_CALL_IND:
        misp = bpred_indirect(b, lip, to);
        bpred_call(b, x86_linear_eip(env, ret));
        break;
    case PMU_BPRED_RET:
        misp = bpred_ret(b, to);
        break;
    default:
        g_assert_not_reached();
    }
    if (!misp) {
        return;
    }
    if ((env->prof & X86_PROF_LWP_STALLS) &&
        (env->hflags & HF_CPL_MASK) == 3) {
        lwp_x86_stall(env, env_archcpu(env)->cost_mispredict);
        return;
    }
#ifndef CONFIG_USER_ONLY
    if (env_archcpu(env)->pmu_profile) {
        pmu_x86_mispredict(env, kind);
    }
#endif
}
