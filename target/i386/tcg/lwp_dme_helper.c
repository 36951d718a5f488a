/*
 * x86 AMD Lightweight Profiling: DCache Misses
 *
 * Loads of CPL 3 instructions run through the vCPU's cache model
 * (lwp_cache_* of the engine, docs/system/i386/lwp.rst); the misses are
 * the events.  Section numbers are those of AMD publication 43724
 * revision 3.08.
 *
 * Copyright (c) 2026 qemu-lwp contributors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "exec/helper-proto.h"
#include "tcg/insn-start-words.h"
#include "tcg/tcg.h"
#include "helper-tcg.h"
#include "lwp_helper.h"

/*
 * Add the DCache Miss record the current instruction gathered, if any, to
 * the events of @ev, whose instruction retired
 */
void lwp_dme_take(CPUX86State *env, LwpEventInfo *ev)
{
    LwpState *s = &env->lwp;

    if (!(env->lwp_dme_due & LWP_DUE_DME)) {
        return;
    }
    env->lwp_dme_due &= ~LWP_DUE_DME;
    if (s->cb_addr && (s->flags & LWP_FEAT_DME) &&
        s->counter[LWP_EVENT_ID_DME] < 0) {
        ev->events |= LWP_FEAT_DME;
        ev->dme_source = env->lwp_dme_src;
        ev->dme_addr_valid = 1;
        ev->dme_latency = env->lwp_dme_latency;
        ev->dme_addr = env->lwp_dme_addr;
    }
}

/*
 * lwp_dme_count's slow path: an L1 miss @r that may be no event (the
 * MinLatency and CLF filters, Table 6-2) or may make a record due
 */
static void lwp_dme_event(CPUX86State *env, LwpCacheResult r)
{
    LwpState *s = &env->lwp;
    int32_t *counter = &s->counter[LWP_EVENT_ID_DME];
    unsigned src = lwp_cache_dme_source(r.level);
    LwpContext ctx;

    if (s->filters & (LWP_FILTER_MIN_LATENCY_MASK | LWP_FILTER_CLF)) {
        ctx = (LwpContext) { .ecx = env->features[FEAT_8000_001C_ECX] };
        if (!lwp_dme_eligible(s, &ctx, r.latency, src)) {
            return;
        }
    }
    if (*counter > LWP_ENGINE_COUNTER_FLOOR) {
        --*counter;
    }
    if (*counter < 0 && !(env->lwp_dme_due & LWP_DUE_DME)) {
        env->lwp_dme_due |= LWP_DUE_DME;
        env->lwp_dme_addr = r.addr;
        env->lwp_dme_latency = r.latency;
        env->lwp_dme_src = src;
    }
}

/*
 * DCache Misses (spec 2.4, choice 55).  A load of @size bytes at the
 * linear address @addr, made by the current CPL 3 instruction of a TB
 * translated with X86_PROF_LWP_DME, completed: run it through the cache model.
 * A miss that is eligible (the IP filter, @elig; MinLatency and CLF,
 * Table 6-2) is an event, counted at once.  The event that takes the
 * counter below 0 gathers the record, which the instruction stores when
 * it retires (helper_lwp_dme_commit, helper_lwp_fire); the counter counts
 * on below 0 until then (spec 1.1 step 2).  A line-crossing load is one
 * load (lwp_cache_load).  With @stalls, its latency above L1's is a stall
 * of the instruction's clocks (lwp_x86_stall).
 */
static inline void lwp_dme_count(CPUX86State *env, target_ulong addr,
                                 uint32_t size, bool elig, bool stalls)
{
    X86CPU *cpu = env_archcpu(env);
    LwpState *s = &env->lwp;
    int32_t *counter = &s->counter[LWP_EVENT_ID_DME];
    LwpCacheResult r;
    bool counted;

    if (!cpu->lwp_cache) {
        return;
    }
    r = lwp_cache_load(cpu->lwp_cache, addr, size);
    if (stalls && cpu->cost_load[r.level]) {
        lwp_x86_stall(env, cpu->cost_load[r.level]);
    }
    counted = (r.misses != 0) & elig & (s->cb_addr != 0) &
              !!(s->flags & LWP_FEAT_DME);
    /*
     * Whether a load misses is as good as random, and a miss is counted
     * without a branch on that unless it may need more than a decrement:
     * a filter, the counter near 0
     */
    if (unlikely((s->filters & (LWP_FILTER_MIN_LATENCY_MASK |
                                LWP_FILTER_CLF)) ||
                 *counter <= 1) && counted) {
        lwp_dme_event(env, r);
        return;
    }
    *counter -= counted;
}

/* ... from generated code: @desc is the size | LWP_DME_ELIGIBLE bit */
void helper_lwp_dme_load(CPUX86State *env, target_ulong addr, uint32_t desc)
{
    lwp_dme_count(env, addr, extract32(desc, 0, LWP_DME_ELIGIBLE_SHIFT),
                  extract32(desc, LWP_DME_ELIGIBLE_SHIFT, 1),
                  extract32(desc, LWP_DME_STALLS_SHIFT, 1));
}

/*
 * ... from a helper called at @ra (x86_profile_load): counted only if
 * its TB counts DME at CPL 3 (not, for example, when the XRSTOR that
 * made the load enabled LWP itself); its eligibility under the IP filter
 * is that of the instruction, found as an exception finds it
 */
void lwp_x86_dme_load_slow(CPUX86State *env, target_ulong addr,
                           uint32_t size, uintptr_t ra)
{
    TranslationBlock *tb = tcg_tb_lookup(ra);
    uint64_t data[TARGET_INSN_START_WORDS];
    uint64_t prof;
    bool elig = true;

    if (!tb || (tb->flags & HF_CPL_MASK) != 3) {
        return;
    }
    prof = x86_tb_prof(tb);
    if (!(prof & (X86_PROF_LWP_DME | X86_PROF_LWP_STALLS))) {
        return;
    }
    if ((prof & X86_PROF_LWP_DME) && (prof & X86_PROF_LWP_IPF)) {
        elig = cpu_unwind_state_data(env_cpu(env), ra, data) &&
               lwp_eligible_in(env, prof, x86_unwind_eip(env, tb, data[0]));
    }
    lwp_dme_count(env, addr, size, elig && (prof & X86_PROF_LWP_DME),
                  prof & X86_PROF_LWP_STALLS);
}

/*
 * cost-model=detailed (choice 70): @n clocks in which the current CPL 3
 * instruction stalls (a load's latency above L1's, a mispredict's
 * penalty), after its own.  CNH and RNH count them once it retires at
 * CPL 3 (helper_lwp_dme_commit); an instruction that does not has them
 * dropped, there or at the next CPL 3 TB's start.
 */
void lwp_x86_stall(CPUX86State *env, uint32_t n)
{
    if (!(env->lwp_dme_due & LWP_DUE_STALL)) {
        env->lwp_dme_due |= LWP_DUE_STALL;
        env->lwp_stall = 0;
    }
    env->lwp_stall += n;
}

/*
 * The stalls of the instruction at @ip, which retired, come off the
 * counters of CNH and RNH, if it is eligible under the IP filter.  The
 * TB's start counted the clocks of the instructions after it: when a
 * counter has fewer left than the stalls, at the start of the next
 * instruction (LWP_COMMIT_MID; helper called at @ra) those are given
 * back first, and the TB ends there (returns true) once the records that
 * fall due are stored, so that the next TB counts them afresh.  The
 * records of the counters that went below 0 are added to @ev's events.
 */
static bool lwp_stall_commit(CPUX86State *env, LwpEventInfo *ev,
                             target_ulong ip, uint32_t how, uintptr_t ra)
{
    static const struct {
        int id;
        uint32_t feat;
    } clk[2] = {
        { LWP_EVENT_ID_CNH, LWP_FEAT_CNH },
        { LWP_EVENT_ID_RNH, LWP_FEAT_RNH },
    };
    LwpState *s = &env->lwp;
    uint32_t n = env->lwp_stall;
    uint32_t ev_mask = s->cb_addr ? s->flags : 0;
    bool big = false;
    int k;

    env->lwp_dme_due &= ~LWP_DUE_STALL;
    env->lwp_stall = 0;
    if (!(env->prof & X86_PROF_LWP_STALLS) ||
        !lwp_eligible_in(env, env->prof, ip)) {
        return false;
    }
    for (k = 0; k < ARRAY_SIZE(clk); k++) {
        if ((ev_mask & clk[k].feat) && s->counter[clk[k].id] < (int64_t)n) {
            big = true;
        }
    }
    if (big) {
        /* the records of the instructions before this one come first */
        lwp_x86_commit(env);
        if (how & LWP_COMMIT_MID) {
            lwp_x86_flush_recount(env, ra, 1);
        }
    }
    for (k = 0; k < ARRAY_SIZE(clk); k++) {
        if (ev_mask & clk[k].feat) {
            s->counter[clk[k].id] -= n;
            if (s->counter[clk[k].id] < 0) {
                ev->events |= clk[k].feat;
            }
        }
    }
    return big && (how & LWP_COMMIT_MID);
}

/*
 * The instruction at @ip retired: its stalls come off the clocks, and the
 * records it made due are stored, with the DCache Miss record it gathered
 * (in EventId order), unless helper_lwp_fire stores them at the exit of
 * an exact TB (@how, LWP_COMMIT_*)
 */
void helper_lwp_dme_commit(CPUX86State *env, target_ulong ip, uint32_t how)
{
    LwpEventInfo ev = { .ip = ip };
    bool leave = false;

    /* a far CALL or JMP that left CPL 3 did not retire there (choice 39) */
    if ((env->hflags & HF_CPL_MASK) != 3) {
        env->lwp_dme_due = 0;
        return;
    }
    if (env->lwp_dme_due & LWP_DUE_STALL) {
        leave = lwp_stall_commit(env, &ev, ip, how, GETPC());
    }
    if (how & LWP_COMMIT_EXACT) {
        return;
    }
    lwp_dme_take(env, &ev);
    if (ev.events) {
        lwp_store_due(env, &ev);
    }
    if (leave) {
        /* count the rest of the TB again from the next instruction */
        lwp_x86_flush_recount(env, GETPC(), -1);
        cpu_loop_exit_restore(env_cpu(env), GETPC());
    }
}

/* INVD, WBINVD: every cache level is emptied (choice 53) */
void helper_lwp_cache_flush(CPUX86State *env)
{
    x86_cpu_lwp_cache_flush(env_archcpu(env));
}

/* CLFLUSH, CLFLUSHOPT of the linear address @addr: the line leaves */
void helper_lwp_cache_flush_line(CPUX86State *env, target_ulong addr)
{
    X86CPU *cpu = env_archcpu(env);

    if (cpu->lwp_cache) {
        lwp_cache_flush_line(cpu->lwp_cache, addr);
    }
}
