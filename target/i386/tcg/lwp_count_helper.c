/*
 * x86 AMD Lightweight Profiling: the counting's slow paths
 *
 * The events of CPL 3 instructions are counted by generated code
 * (translate-lwp.c.inc, whose opening comment explains the design and
 * its words); this file is what that code calls when a TB cannot count
 * by itself, when a record is due, and when counts must be given back.
 * Section numbers are those of AMD publication 43724 revision 3.08.
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
 * The events that a TB translated with @tb_flags and the profile @prof
 * counts per instruction, at its start: LWP_FEAT_IRE, _CNH, _RNH.
 */
uint32_t lwp_tb_events(uint32_t tb_flags, uint64_t prof)
{
    uint32_t ev = 0;

    if ((tb_flags & HF_CPL_MASK) != 3) {
        return 0;
    }
    if (prof & X86_PROF_LWP_IRE) {
        ev |= LWP_FEAT_IRE;
    }
    if (prof & X86_PROF_LWP_CNH) {
        ev |= LWP_FEAT_CNH;
    }
    if (prof & X86_PROF_LWP_RNH) {
        ev |= LWP_FEAT_RNH;
    }
    return ev;
}

/*
 * Whether the instruction at @eip, in a TB whose profile is @prof, is
 * eligible under the IP filter (the TB's instructions all are, or none
 * is: lwp_tb_eligible splits the others).
 */
bool lwp_eligible_in(CPUX86State *env, uint64_t prof,
                     target_ulong eip)
{
    LwpContext ctx;

    if (!(prof & X86_PROF_LWP_IPF)) {
        return true;
    }
    lwp_x86_context(env, &ctx);
    return lwp_ip_eligible(&env->lwp, &ctx, eip);
}

/* Add @insns to the IRE counter and @clocks to CNH and RNH, among @ev */
void lwp_add(LwpState *s, uint32_t ev, int32_t insns, int32_t clocks)
{
    if (ev & LWP_FEAT_IRE) {
        s->counter[LWP_EVENT_ID_IRE] += insns;
    }
    if (ev & LWP_FEAT_CNH) {
        s->counter[LWP_EVENT_ID_CNH] += clocks;
    }
    if (ev & LWP_FEAT_RNH) {
        s->counter[LWP_EVENT_ID_RNH] += clocks;
    }
}

/*
 * @n instructions of a TB translated with @tb_flags and @prof, the first
 * at @eip, were counted at its start but did not retire, nor did the near
 * branch of kind @branch_kind (LWP_BRANCH_*, or -1) that ends the TB:
 * give back their counts (@sign 1), or take them again (@sign -1), if the
 * LWP that counted them is still the one enabled (choice 39).  @bre: the
 * TB counted the branch for Branches Retired at its start too.
 */
static void lwp_recount_at(CPUX86State *env, uint32_t tb_flags,
                           uint64_t prof, target_ulong eip, uint32_t n,
                           int branch_kind, bool bre, int32_t sign)
{
    LwpState *s = &env->lwp;
    uint32_t ev = lwp_tb_events(tb_flags, prof) & s->flags;

    bre = bre && branch_kind >= 0 && (s->flags & LWP_FEAT_BRE) &&
          (prof & X86_PROF_LWP_BRE) && (tb_flags & HF_CPL_MASK) == 3;
    if (!s->cb_addr || (!ev && !bre) || !lwp_eligible_in(env, prof, eip)) {
        return;
    }
    lwp_add(s, ev, sign * (int32_t)n,
            sign * (int32_t)(n + (branch_kind >= 0)));
    if (bre) {
        s->counter[LWP_EVENT_ID_BRE] +=
            sign * env->lwp_bre_counts[branch_kind];
    }
}

static void lwp_unretire_at(CPUX86State *env, uint32_t tb_flags,
                            uint64_t prof, target_ulong eip, uint32_t n,
                            int branch_kind, bool bre)
{
    lwp_recount_at(env, tb_flags, prof, eip, n, branch_kind, bre, 1);
}

/*
 * Give back (@sign 1) or take again (@sign -1) the counts of the
 * instructions of @tb from the one at @eip, whose second insn_start word
 * is @word, to the TB's end
 */
static void lwp_recount_tb(CPUX86State *env, const TranslationBlock *tb,
                           target_ulong eip, uint64_t word, int32_t sign)
{
    lwp_recount_at(env, tb->flags, x86_tb_prof(tb), eip,
                   tb->icount - lwp_unwind_index(word),
                   lwp_unwind_branch(word),
                   !(tb_cflags(tb) & CF_COUNT_MASK), sign);
}

/* ... from env->eip: an exception unwound the instruction there */
void lwp_x86_unretire(CPUX86State *env, const TranslationBlock *tb,
                      uint64_t word)
{
    lwp_recount_tb(env, tb, env->eip, word, 1);
}

/*
 * A helper called at @ra from a CPL 3 TB is about to write the counters
 * to memory (SLWPCB, XSAVE, XSAVEOPT: they do not end their TB), after
 * lwp_x86_commit.  The TB's start counted the helper's instruction, those
 * after it and the branch that ends the TB, none of which has retired:
 * give their counts back (@sign 1) so that the counters are those after
 * the instructions retired so far (spec 2.2, 2.3, 5.2, 7.3; choice 54),
 * and take them again (@sign -1) once the counters are written, before
 * anything can raise an exception (which would give them back again).
 * Found as an exception finds them, with x86_unwind_eip like
 * x86_restore_state_to_opc: nothing in the TB's code pays for it.
 */
void lwp_x86_flush_recount(CPUX86State *env, uintptr_t ra, int32_t sign)
{
    TranslationBlock *tb;
    uint64_t data[TARGET_INSN_START_WORDS];

    if (!ra || !env->lwp.cb_addr) {
        return;
    }
    tb = tcg_tb_lookup(ra);
    if (!tb || (tb->flags & HF_CPL_MASK) != 3 ||
        !cpu_unwind_state_data(env_cpu(env), ra, data)) {
        return;
    }
    lwp_recount_tb(env, tb, x86_unwind_eip(env, tb, data[0]), data[1], sign);
}

/*
 * A far CALL or JMP at @eip, the last instruction of a TB translated with
 * @tb_flags and @prof, completed: when it left CPL 3 (a call gate to an
 * inner ring, a task switch), it did not retire at CPL 3 (choice 39).  It
 * is not a branch (choice 46).
 */
void helper_lwp_far_transfer(CPUX86State *env, target_ulong eip,
                             uint32_t tb_flags, uint64_t prof)
{
    if ((env->hflags & HF_CPL_MASK) != 3) {
        lwp_unretire_at(env, tb_flags, prof, eip, 1, -1, false);
        lwp_x86_commit(env);
    }
}

/*
 * The current instruction, the last of its TB, leaves CPL 3 or raises an
 * exception without unwinding: it does not retire at CPL 3 (choice 39).
 * It is not a branch.
 */
void lwp_x86_uncount(CPUX86State *env)
{
    lwp_unretire_at(env, env->hflags, env->prof, env->eip, 1, -1,
                    false);
    lwp_x86_commit(env);
}

/*
 * In a TB of @n instructions, the last a near branch if @br, the
 * instruction that takes the counter of event @id below 0, counted from
 * 1; n + 1 if none does.  Each instruction is one event, or one clock
 * for CNH and RNH, and a near branch two clocks (choice 48).  A negative
 * counter makes the first do it.
 */
static uint32_t lwp_fires_at(LwpState *s, int id, uint32_t n, bool br)
{
    int64_t c = s->counter[id];
    uint32_t last = n + (br && id != LWP_EVENT_ID_IRE);

    if (c < 0) {
        return 1;
    }
    if (c + 1 < n) {
        return c + 1;
    }
    return c < last ? n : n + 1;
}

/*
 * The instruction of such a TB at which the first of the events @ev
 * fires (n + 1 if none)
 */
static uint32_t lwp_split_at(LwpState *s, uint32_t ev, uint32_t n, bool br)
{
    static const int ids[] = {
        LWP_EVENT_ID_IRE, LWP_EVENT_ID_CNH, LWP_EVENT_ID_RNH
    };
    uint32_t k = n + 1;
    int i;

    for (i = 0; i < ARRAY_SIZE(ids); i++) {
        if (ev & (1u << ids[i])) {
            k = MIN(k, lwp_fires_at(s, ids[i], n, br));
        }
    }
    return k;
}

/* Have the current TB run as an exact TB of its first @k instructions */
static G_NORETURN void lwp_retranslate(CPUX86State *env, uint32_t cflags,
                                       uint32_t k)
{
    CPUState *cs = env_cpu(env);

    /* a TB of TCG_MAX_INSNS: its last instruction becomes a TB of its own */
    cs->cflags_next_tb = (cflags & ~CF_COUNT_MASK) | MIN(k, CF_COUNT_MASK);
    cpu_loop_exit_noexc(cs);
}

/*
 * At a TB start, before anything of the TB ran: store the record the TB
 * before deferred.  If that left it pending, the TB is looked up again
 * with X86_PROF_LWP_SYNC.
 */
static void lwp_tb_commit(CPUX86State *env)
{
    uint64_t prof = env->prof;

    lwp_x86_commit(env);
    if (env->prof != prof) {
        cpu_loop_exit_noexc(env_cpu(env));
    }
}

/*
 * LWP must first store what lwp_sync stores (a pending record, or LWPCB
 * fields to re-read after XRSTOR).  Nothing of the current TB ran: a
 * fault is taken at its first instruction, and the threshold interrupt
 * comes before it.  Returns only if the sync changed nothing the TB was
 * translated for.
 */
static void lwp_tb_sync(CPUX86State *env)
{
    LwpState *s = &env->lwp;
    uint64_t prof = env->prof;
    LwpContext ctx;
    LwpGlue g = { .env = env, .mmu_idx = lwp_mmu_index(env), .ra = 0 };
    LwpMem mem = { .ops = &lwp_mem_ops, .opaque = &g };
    LwpResult res;

    if (!lwp_needs_sync(s)) {
        return;
    }
    lwp_x86_context(env, &ctx);
    lwp_finish(&g, lwp_sync(s, &ctx, &mem, &res), &res);
    if (env->prof != prof || res.interrupt) {
        cpu_loop_exit_noexc(env_cpu(env));
    }
}

/*
 * The IP filter for a TB from EIP @first to @last: whether its
 * instructions are eligible.  When they are not all on one side of
 * BaseIP and LimitIP, the TB is split into TBs of one instruction.
 */
static bool lwp_tb_eligible(CPUX86State *env, target_ulong first,
                            target_ulong last, uint32_t cflags)
{
    if (!(env->prof & X86_PROF_LWP_IPF)) {
        return true;
    }
    switch (lwp_ip_range(&env->lwp, first, last)) {
    case LWP_IP_RANGE_IN:
        return !env->lwp_ipi;
    case LWP_IP_RANGE_OUT:
        return env->lwp_ipi;
    default:
        /* one instruction is always on one side */
        g_assert(first != last);
        lwp_retranslate(env, cflags, 1);
    }
}

/*
 * Start of an exact TB of @n instructions translated with @cflags, from
 * EIP @first to @last, that the generated code does not count by itself
 * (translate-lwp.c.inc, gen_lwp_tb_start); @n has LWP_TB_ENDS_BRANCH if the TB
 * ends with a near branch.  When an instruction before its last would
 * take Instructions Retired or a clock counter below 0, split it, so that
 * the instruction that does ends it, as icount does.  Otherwise count
 * the TB and return whether its instructions are eligible under the IP
 * filter; its exits count its branch and store the records.
 */
uint32_t helper_lwp_tb_enter(CPUX86State *env, uint32_t n,
                             target_ulong first, target_ulong last,
                             uint32_t cflags)
{
    LwpState *s = &env->lwp;
    bool br = n & LWP_TB_ENDS_BRANCH;
    uint32_t ev, k;

    n &= ~LWP_TB_ENDS_BRANCH;
    lwp_tb_commit(env);
    lwp_tb_sync(env);
    if (!lwp_tb_eligible(env, first, last, cflags)) {
        return false;
    }
    ev = lwp_tb_events(env->hflags, env->prof);
    k = lwp_split_at(s, ev, n, br);
    if (k < n) {
        lwp_retranslate(env, cflags, k);
    }
    lwp_add(s, ev, -(int32_t)n, -(int32_t)(n + br));
    return true;
}

/*
 * Before normal TBs run on: arm their window with what the counters of
 * Instructions Retired and Branches Retired hold, up to LWP_WIN_*_MAX.
 * A counter below 0 (a deferred record) arms nothing: the next TB that
 * counts the event finds its window below 0 and takes the slow path.
 * The window is given back (lwp_x86_commit) before the counters are used
 * again; until then they only have counts added, which the window never
 * misses: it is never above its counter's value.
 */
static void lwp_arm(CPUX86State *env)
{
    LwpState *s = &env->lwp;
    uint32_t ire = 0, bre = 0;

    if (env->prof & X86_PROF_LWP_IRE) {
        ire = MIN(MAX(s->counter[LWP_EVENT_ID_IRE], 0), LWP_WIN_IRE_MAX);
    }
    if (env->prof & X86_PROF_LWP_BRE) {
        bre = MIN(MAX(s->counter[LWP_EVENT_ID_BRE], 0), LWP_WIN_BRE_MAX);
    }
    env->lwp_win = env->lwp_win_armed = ire | bre << LWP_WIN_BRE_SHIFT;
}

/*
 * What a normal TB ending with a near branch of kind @kind (-1: none)
 * counts for Branches Retired at its start: 1 if the Filters count it
 */
static uint32_t lwp_tb_bre(CPUX86State *env, int kind)
{
    if (kind < 0 || !(env->prof & X86_PROF_LWP_BRE)) {
        return 0;
    }
    return (env->prof & X86_PROF_LWP_BRF) ? env->lwp_bre_counts[kind] : 1;
}

/* Count a normal TB of @n instructions, eligible, as its start does */
static void lwp_count_tb(CPUX86State *env, uint32_t n, int kind)
{
    LwpState *s = &env->lwp;

    lwp_add(s, lwp_tb_events(env->hflags, env->prof), -(int32_t)n,
            -(int32_t)(n + (kind >= 0)));
    s->counter[LWP_EVENT_ID_BRE] -= lwp_tb_bre(env, kind);
}

/*
 * Start of a normal TB of @n instructions that the generated code does
 * not count by itself: LWP must sync, the TB straddles the IP filter's
 * range, a counter would go negative, or one is (a deferred record).
 * @n has LWP_TB_ENDS_BRANCH if the TB ends with a near branch, and the
 * LWP_TB_KIND, _RESUMES and _MAY_DEFER bits; @lens0 and @lens1 the
 * lengths of its first 16 and next 16 instructions, 4 bits each.
 *
 * A TB that resumes is counted here when no record is due in it, or when
 * the only one is of Instructions Retired, at its k-th instruction, and
 * may be deferred: the counter keeps counting below zero until the TB
 * ends, and lwp_x86_commit stores it then (spec 1.1 steps 2, 3 and 5,
 * choice 51).  Otherwise the TB is retranslated as an exact one, of its
 * first k instructions when the k-th takes Instructions Retired or a
 * clock counter below 0, of one instruction when it straddles, else of
 * all n.
 */
void helper_lwp_tb_slow(CPUX86State *env, uint32_t n, target_ulong first,
                        target_ulong last, uint32_t cflags, uint64_t lens0,
                        uint64_t lens1)
{
    LwpState *s = &env->lwp;
    bool br = n & LWP_TB_ENDS_BRANCH;
    int kind = (int)extract32(n, LWP_TB_KIND_SHIFT, 2) - 1;
    bool resumes = n & LWP_TB_RESUMES, may_defer = n & LWP_TB_MAY_DEFER;
    uint32_t ev, k, i, bre = 0;
    target_ulong ip = first;
    LwpContext ctx;

    n = extract32(n, 0, 16);
    lwp_tb_commit(env);
    lwp_tb_sync(env);
    if (!lwp_tb_eligible(env, first, last, cflags)) {
        if (resumes) {
            lwp_arm(env);
            return;
        }
        lwp_retranslate(env, cflags, n);
    }
    ev = lwp_tb_events(env->hflags, env->prof);
    k = lwp_split_at(s, ev, n, br);
    bre = lwp_tb_bre(env, kind);
    if (!resumes || (int64_t)s->counter[LWP_EVENT_ID_BRE] < bre) {
        lwp_retranslate(env, cflags, MIN(k, n));
    }
    if (k > n) {
        lwp_count_tb(env, n, kind);
        lwp_arm(env);
        return;
    }
    /*
     * Deferred: a record of IRE alone, not at a last instruction that can
     * use LWP state itself (only a near branch cannot), with the
     * instructions' addresses known.  The counter ends the TB at c - n,
     * an overrun of n - 1 - c.
     */
    lwp_x86_context(env, &ctx);
    if (may_defer && (ev & LWP_FEAT_IRE) && (k < n || br) &&
        lwp_fires_at(s, LWP_EVENT_ID_IRE, n, br) == k &&
        lwp_split_at(s, ev & ~LWP_FEAT_IRE, n, br) > n &&
        lwp_store_deferrable(s, &ctx, LWP_EVENT_ID_IRE,
                             n - 1 - s->counter[LWP_EVENT_ID_IRE])) {
        for (i = 0; i < k - 1; i++) {
            ip += extract64(i < 16 ? lens0 : lens1, 4 * (i % 16), 4);
        }
        env->lwp_defer_ip = (env->hflags & HF_CS64_MASK) ? ip : (uint32_t)ip;
        env->lwp_defer = 1;
        lwp_count_tb(env, n, kind);
        lwp_arm(env);
        return;
    }
    lwp_retranslate(env, cflags, k);
}

/*
 * Store the records of @ev->events that are due, after their instruction
 * retired.  A page fault leaves the record pending (choice 25): it is
 * stored, or the fault taken, before the next CPL 3 instruction.
 */
void lwp_store_due(CPUX86State *env, const LwpEventInfo *ev)
{
    LwpContext ctx;
    LwpGlue g = { .env = env, .mmu_idx = lwp_mmu_index(env), .ra = 0 };
    LwpMem mem = { .ops = &lwp_mem_ops, .opaque = &g };
    LwpResult res;
    uint64_t prof = env->prof;

    lwp_x86_context(env, &ctx);
    /* a fault is traced when the sync raises it (lwp_finish) */
    lwp_store_events(&env->lwp, &ctx, &mem, ev, ev->events, &res);
    /* a record left pending: the next TB, even chained, must sync first */
    cpu_sync_prof(env);
    if (env->prof != prof) {
        cpu_exit(env_cpu(env));
    }
    if (res.interrupt) {
        lwp_threshold_interrupt(env);
    }
}

/*
 * The record of Instructions Retired that a normal TB deferred to its end
 * (helper_lwp_tb_slow): the instruction at env->lwp_defer_ip retired
 * unless an exception gave its count back, so store the record if the
 * counter is still negative.  It is the record, and the counter after it
 * the value, that storing it at once would have given (choice 51).
 */
static void lwp_commit_deferred(CPUX86State *env)
{
    LwpState *s = &env->lwp;
    LwpEventInfo ev = { .ip = env->lwp_defer_ip, .events = LWP_FEAT_IRE };

    env->lwp_defer = 0;
    if (s->cb_addr && (s->flags & LWP_FEAT_IRE) &&
        s->counter[LWP_EVENT_ID_IRE] < 0) {
        lwp_store_due(env, &ev);
    }
}

/*
 * lwp_x86_commit: subtract from the counters what normal TBs used of
 * their window (lwp_arm), then commit the deferred record
 */
void lwp_x86_commit_slow(CPUX86State *env)
{
    lwp_win_used(env, env->lwp.counter);
    env->lwp_win = env->lwp_win_armed = 0;
    if (env->lwp_defer) {
        lwp_commit_deferred(env);
    }
}

/*
 * After the last instruction of a TB retired, at @ip: it made a counter
 * negative.  @info holds the events it counted for (LWP_FEAT_*), and for
 * a branch its kind (bits 15:8) and whether it was taken (bit 16); the
 * next instruction is at @target.
 */
void helper_lwp_fire(CPUX86State *env, target_ulong ip, target_ulong target,
                     uint32_t info)
{
    LwpEventInfo ev = {
        .ip = ip,
        .events = info & 0xff,
        .target = target,
        .branch_kind = (info >> 8) & 0xff,
        .taken = (info >> 16) & 1,
    };

    lwp_x86_commit(env);
    /* and the DCache Miss record it gathered, in EventId order */
    lwp_dme_take(env, &ev);
    lwp_store_due(env, &ev);
}
