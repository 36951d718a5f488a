/*
 * x86 Intel performance monitoring: the counts of generated code
 * (translate-pmu.c.inc) and the counters' registers
 *
 * Copyright (c) 2026 qemu-lwp contributors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "exec/cpu_ldst.h"
#include "exec/helper-proto.h"
#include "tcg/insn-start-words.h"
#include "tcg/tcg.h"
#include "qemu/main-loop.h"
#include "hw/i386/apic.h"
#include "tcg/helper-tcg.h"
#include "tcg/trace.h"

/*
 * The most a window field is armed with: the give-backs of a TB (at most
 * TCG_MAX_INSNS + 1 events) fit above it in 15 bits
 */
#define PMU_FIELD_MAX 0x3fff

/* Counter @c of the window (0-3: IA32_PMCx, 4-6: IA32_FIXED_CTRx) */
static int pmu_field(const uint64_t *w, int c)
{
    int s = x86_pmu_win_slot(c);

    return (int16_t)extract64(w[s / 4], 16 * (s % 4), 16);
}

static void pmu_set_field(uint64_t *w, int c, int v)
{
    int s = x86_pmu_win_slot(c);

    w[s / 4] = deposit64(w[s / 4], 16 * (s % 4), 16, (uint16_t)v);
}

static bool pmu_is_fixed(int c, unsigned *i)
{
    *i = c < 4 ? c : c - 4;
    return c >= 4;
}

/*
 * A PEBS event happened (pmu_pebs_event): the assist follows the
 * instruction that made it, before the next one and before an interrupt
 * is taken there (x86_cpu_exec_interrupt, pmu_x86_pebs).  Each caller
 * ends the TB after that instruction.
 */
static void pmu_pebs_request(CPUX86State *env)
{
    BQL_LOCK_GUARD();
    cpu_interrupt(env_cpu(env), CPU_INTERRUPT_PEBS);
}

/*
 * Counter @c (as the window numbers them) counts @n events: returns
 * PMU_SYNC_PMI when it overflowed and its controls ask for a PMI, and
 * PMU_SYNC_PEBS when its PEBS event happened, whose assist it requested
 */
enum { PMU_SYNC_PMI = 1, PMU_SYNC_PEBS = 2 };

static unsigned pmu_count(CPUX86State *env, const PmuProfile *p,
                          const PmuRegs *regs, int c, uint64_t n)
{
    unsigned i, r = 0;
    bool fixed = pmu_is_fixed(c, &i);
    bool ovf = pmu_add(p, regs, fixed, i, n);

    if (ovf && (fixed ? pmu_count_fixed(p, regs, i)
                      : pmu_count_gp(p, regs, i)).pmi) {
        r |= PMU_SYNC_PMI;
    }
    if (!fixed && pmu_pebs_event(p, regs, i, n, ovf)) {
        pmu_pebs_request(env);
        r |= PMU_SYNC_PEBS;
    }
    return r;
}

/*
 * The counters' registers take what the window counted since it was
 * armed; the window is left empty, so that the next TB that counts
 * takes the slow path and arms it.  Returns PMU_SYNC_PMI when a counter
 * whose controls ask for a PMI overflowed, PMU_SYNC_PEBS when a PEBS
 * event happened.
 */
static unsigned pmu_sync(CPUX86State *env)
{
    const PmuProfile *p = env_archcpu(env)->pmu_profile;
    PmuRegs regs = x86_pmu_regs(env);
    unsigned r = 0;
    int c;

    if (!p) {
        return 0;
    }
    for (c = 0; c < X86_PMU_COUNTERS; c++) {
        int used = pmu_field(env->pmu_armed, c) - pmu_field(env->pmu_win, c);
        unsigned i;
        bool fixed = pmu_is_fixed(c, &i);

        if (used > 0) {
            r |= pmu_count(env, p, &regs, c, used);
        } else if (used < 0) {
            /* counts given back after the last sync took them */
            pmu_sub(p, &regs, fixed, i, -used);
        }
    }
    env->pmu_win[0] = env->pmu_win[1] = 0;
    env->pmu_armed[0] = env->pmu_armed[1] = 0;
    return r;
}

/*
 * The PMI, through the local APIC's LVT performance counter entry, after
 * the counters froze if IA32_DEBUGCTL asks for it
 */
static void pmu_pmi(CPUX86State *env)
{
    X86CPU *cpu = env_archcpu(env);
    PmuRegs regs = x86_pmu_regs(env);

    if (pmu_pmi_request(cpu->pmu_profile, &regs)) {
        cpu_sync_prof(env);
    }
    trace_pmu_pmi(env_cpu(env)->cpu_index, env->msr_global_status);
    if (cpu->apic_state) {
        BQL_LOCK_GUARD();
        apic_deliver_pmi(cpu->apic_state);
    }
}

void pmu_x86_sync(CPUX86State *env)
{
    if (pmu_sync(env) & PMU_SYNC_PMI) {
        pmu_pmi(env);
    }
}

/*
 * Give back (@sign 1) or take again (@sign -1) the counts of @insns
 * instructions of a TB with profile @prof, the last of them the branch
 * of kind @br (PMU_BR_*, 0 for none), @loads of them loading and
 * @stores storing
 */
static void pmu_recount(CPUX86State *env, uint64_t prof, uint32_t insns,
                        unsigned br, uint32_t loads, uint32_t stores,
                        int sign)
{
    int c;

    for (c = 0; c < X86_PMU_COUNTERS; c++) {
        int n = x86_pmu_events(prof, c, insns, br, loads, stores);

        if (n) {
            pmu_set_field(env->pmu_win, c,
                          pmu_field(env->pmu_win, c) + sign * n);
        }
    }
}

/* An exception unwound the instruction of @tb whose insn_start word is @word */
void pmu_x86_unretire(CPUX86State *env, const TranslationBlock *tb,
                      uint64_t word)
{
    uint64_t prof = x86_tb_prof(tb);

    pmu_x86_drop_loads(env);
    if (prof & X86_PROF_PMU) {
        pmu_recount(env, prof, tb->icount - lwp_unwind_index(word),
                    extract64(word, PMU_UNWIND_BRANCH_SHIFT, 5),
                    extract64(word, PMU_UNWIND_LOADS_SHIFT,
                              PMU_UNWIND_MEM_BITS),
                    extract64(word, PMU_UNWIND_STORES_SHIFT,
                              PMU_UNWIND_MEM_BITS), 1);
    }
}

/*
 * The current instruction, the last of its TB, raised an exception
 * without unwinding, or exits to be executed again: it did not retire.
 * It is not a branch; @mem (X86_INSN_*) says whether the TB counted it
 * as loading and storing.
 */
void pmu_x86_uncount(CPUX86State *env, unsigned mem)
{
    uint64_t prof = env->prof_at[(env->hflags & HF_CPL_MASK) != 0];

    if (prof & X86_PROF_PMU) {
        pmu_recount(env, prof, 1, 0, !!(mem & X86_INSN_LOADS),
                    !!(mem & X86_INSN_STORES), 1);
    }
}

void helper_pmu_uncount(CPUX86State *env, uint32_t mem)
{
    pmu_x86_uncount(env, mem);
}

/*
 * A helper called at @ra reads or writes the counters: give back (@sign
 * 1) the counts of its instruction and those after it in its TB, which
 * have not retired, and take them again (@sign -1) after the access.
 * Found as an exception finds them: nothing in the TB's code pays for it.
 */
void pmu_x86_recount(CPUX86State *env, uintptr_t ra, int sign)
{
    TranslationBlock *tb;
    uint64_t data[TARGET_INSN_START_WORDS];
    uint64_t prof;

    if (!ra || !((env->prof_at[0] | env->prof_at[1]) & X86_PROF_PMU)) {
        return;
    }
    tb = tcg_tb_lookup(ra);
    if (!tb || !cpu_unwind_state_data(env_cpu(env), ra, data)) {
        return;
    }
    prof = x86_tb_prof(tb);
    if (prof & X86_PROF_PMU) {
        pmu_recount(env, prof, tb->icount - lwp_unwind_index(data[1]),
                    extract64(data[1], PMU_UNWIND_BRANCH_SHIFT, 5),
                    extract64(data[1], PMU_UNWIND_LOADS_SHIFT,
                              PMU_UNWIND_MEM_BITS),
                    extract64(data[1], PMU_UNWIND_STORES_SHIFT,
                              PMU_UNWIND_MEM_BITS), sign);
    }
}

/*
 * The start of a TB that counts nothing of the PMU at its CPL found a
 * field below 0 (gen_pmu_pending): sync, and raise the PMI if a counter
 * overflowed; the TB then exits before its first instruction, so that
 * the interrupt is taken there
 */
void helper_pmu_pending(CPUX86State *env)
{
    unsigned r = pmu_sync(env);

    if (r & PMU_SYNC_PMI) {
        pmu_pmi(env);
    }
    if (r) {
        cpu_loop_exit_noexc(env_cpu(env));
    }
}

/*
 * The slow path of a TB start (translate-pmu.c.inc): the TB of n
 * instructions (@n_br bits 15:0), ending with a branch of PMU_BR_* kind
 * @n_br >> 16 if any, translated with @cflags, counts @inc0 and @inc1
 * (packed as the window) and a field would go below 0.  Sync the
 * counters and arm the window again.  When a counter overflows in the
 * TB before its last instruction, translate the TB again so that the
 * instruction at which it does ends it; at the last instruction, its
 * field goes below 0, so that the next TB start syncs it then, after
 * that instruction retired, and raises the PMI if the counter asks for
 * one: that TB then exits before its first instruction, so that the
 * interrupt is taken there.
 */
void helper_pmu_tb_slow(CPUX86State *env, uint64_t inc0, uint64_t inc1,
                        uint32_t n_br, uint32_t cflags)
{
    const PmuProfile *p = env_archcpu(env)->pmu_profile;
    PmuRegs regs = x86_pmu_regs(env);
    uint64_t inc[2] = { inc0, inc1 };
    bool user = (env->hflags & HF_CPL_MASK) != 0;
    uint32_t n = n_br & 0xffff, k = n;
    unsigned r = pmu_sync(env);
    int c;

    if (r & PMU_SYNC_PMI) {
        pmu_pmi(env);
    }
    if (r) {
        /* nothing of the TB has run: EIP is its start */
        cpu_loop_exit_noexc(env_cpu(env));
    }
    for (c = 0; c < X86_PMU_COUNTERS; c++) {
        int v = pmu_field(inc, c);
        unsigned i;
        bool fixed = pmu_is_fixed(c, &i);
        uint64_t until;
        unsigned src;
        int armed;

        if (!v) {
            continue;
        }
        until = pmu_until_overflow(p, &regs, fixed, i);
        src = x86_pmu_source(env->prof_at[user], c);
        if (v >= until && (src == PMU_SRC_LOADS || src == PMU_SRC_STORES)) {
            /*
             * Which instruction makes the until-th load or store is the
             * TB's to know: translated again one instruction at a time
             * until it is the one, each 1-instruction TB ends it.
             */
            k = 1;
        } else if (v >= until) {
            k = MIN(k, pmu_event_insn(src, until, n));
        }
        armed = MIN(until - 1, PMU_FIELD_MAX);
        pmu_set_field(env->pmu_armed, c, armed);
        pmu_set_field(env->pmu_win, c, armed - v);
    }
    if (k < n) {
        /* nothing of the TB has run: EIP is its start */
        env->pmu_win[0] = env->pmu_armed[0];
        env->pmu_win[1] = env->pmu_armed[1];
        env_cpu(env)->cflags_next_tb = (cflags & ~CF_COUNT_MASK) | k;
        cpu_loop_exit_noexc(env_cpu(env));
    }
}

static bool pmu_stalls(CPUX86State *env, const uint32_t *n, uintptr_t ra,
                       bool *leave);

/*
 * The predictor model mispredicted the near branch of PMU_BPRED_* kind
 * @kind that retired at this CPL (helper_pmu_bpred): every counter of
 * mispredicted branches of its kind at this CPL counts it, and with
 * cost-model=detailed every counter of cycles its stall.  A PMI that
 * follows is taken before the instruction at the branch's target.
 */
void pmu_x86_mispredict(CPUX86State *env, unsigned kind)
{
    static const unsigned br_of[] = {
        [PMU_BPRED_NOT_TAKEN] = PMU_BR_COND,
        [PMU_BPRED_TAKEN] = PMU_BR_COND,
        [PMU_BPRED_JMP] = PMU_BR_JMP,
        [PMU_BPRED_CALL_IND] = PMU_BR_CALL,
        [PMU_BPRED_RET] = PMU_BR_RET,
    };
    const PmuProfile *p = env_archcpu(env)->pmu_profile;
    unsigned cpl = env->hflags & HF_CPL_MASK ? PMU_CPL123 : PMU_CPL0;
    unsigned br = br_of[kind];
    unsigned cycles = env->pmu_cycle_counters[cpl == PMU_CPL123];
    unsigned counters = 0, i;
    PmuRegs regs;
    bool pmi = false;

    for (i = 0; i < PMU_MAX_GP; i++) {
        if (env->pmu_misp_kinds[cpl == PMU_CPL123][i] & br) {
            counters |= 1u << i;
        }
    }
    /* the model also runs for the branch records' mispredict flag */
    if (!counters && !cycles) {
        return;
    }
    regs = x86_pmu_regs(env);
    for (i = 0; i < PMU_MAX_GP; i++) {
        if (counters & (1u << i)) {
            pmi |= pmu_count(env, p, &regs, i, 1) & PMU_SYNC_PMI;
        }
    }
    /* cost-model=detailed: the stall cycles of the mispredict */
    if (cycles) {
        uint32_t stalls[X86_PMU_COUNTERS] = { };
        bool leave = false;

        for (i = 0; i < X86_PMU_COUNTERS; i++) {
            if (cycles & (1u << i)) {
                stalls[i] = env_archcpu(env)->cost_mispredict;
            }
        }
        pmi |= pmu_stalls(env, stalls, 0, &leave);
    }
    if (pmi) {
        /* the TB counted its events at its start: the branch is its last */
        pmu_sync(env);
        pmu_pmi(env);
    }
}

/*
 * The cache events (X86_PROF_PMU_CACHE; translate-pmu.c.inc): a load of
 * @size bytes at the linear address @addr, made by the current
 * instruction at the current CPL, completed.  The cache model takes it,
 * and each general-purpose counter that counts loads of the level that
 * supplied it (env->pmu_cache_levels) counts it once the instruction
 * retires (helper_pmu_cache_commit).  A line-crossing load is one load,
 * of the level that supplied its lowest line that missed L1
 * (lwp_cache_load).
 */
void pmu_x86_load(CPUX86State *env, target_ulong addr, uint32_t size)
{
    X86CPU *cpu = env_archcpu(env);
    const uint8_t *levels =
        env->pmu_cache_levels[(env->hflags & HF_CPL_MASK) != 0];
    LwpCacheResult r;
    unsigned bit, i, cycles;
    uint64_t ll = 0;

    if (!cpu->lwp_cache) {
        return;
    }
    r = lwp_cache_load(cpu->lwp_cache, addr, size);
    bit = 1u << r.level;
    for (i = 0; i < PMU_MAX_GP; i++) {
        if (levels[i] & bit) {
            env->pmu_cache_pend[i]++;
            env->pmu_cache_due = 1;
            ll |= env->msr_pebs_enable & BIT_ULL(PMU_PEBS_LL_SHIFT + i);
        }
    }
    if (ll) {
        /*
         * every load is tagged (choice 74): a PEBS record takes the last
         * of those that retired
         */
        env->pmu_ll_addr[1] = addr;
        env->pmu_ll_source[1] =
            pmu_pebs_data_source(1u << (r.level - LWP_CACHE_L1));
        env->pmu_ll_latency[1] = r.latency;
        env->pmu_ll_due = 1;
    }
    /* cost-model=detailed: the load's stall cycles */
    cycles = env->pmu_cycle_counters[(env->hflags & HF_CPL_MASK) != 0];
    if (cycles && cpu->cost_load[r.level]) {
        for (i = 0; i < X86_PMU_COUNTERS; i++) {
            if (cycles & (1u << i)) {
                env->pmu_cache_pend[i] += cpu->cost_load[r.level];
                env->pmu_cache_due = 1;
            }
        }
    }
}

void helper_pmu_load(CPUX86State *env, target_ulong addr, uint32_t size)
{
    pmu_x86_load(env, addr, size);
}

/*
 * cost-model=detailed: @n[c] stall cycles of the current instruction for
 * each counter c of the window (the cycles of a TB's instructions count
 * at its start).  Those that fit in a counter's field come off it: the
 * counter cannot overflow before the TB's end.  Otherwise the registers
 * take what the window counted up to this instruction (when it is in the
 * middle of the TB, @ra of the helper called at the start of the next:
 * the rest of the TB is given back until the sync is done) and then the
 * stalls, which may overflow the counter here; *@leave is set when the
 * TB must then end before the next instruction, whose TB counts afresh.
 * Returns whether a counter whose controls ask for a PMI overflowed.
 */
static bool pmu_stalls(CPUX86State *env, const uint32_t *n, uintptr_t ra,
                       bool *leave)
{
    const PmuProfile *p = env_archcpu(env)->pmu_profile;
    PmuRegs regs = x86_pmu_regs(env);
    unsigned big = 0, pmi;
    int c;

    for (c = 0; c < X86_PMU_COUNTERS; c++) {
        int f = pmu_field(env->pmu_win, c);

        if (n[c] && (int64_t)n[c] <= f) {
            pmu_set_field(env->pmu_win, c, f - n[c]);
        } else if (n[c]) {
            big |= 1u << c;
        }
    }
    if (!big) {
        return false;
    }
    if (ra) {
        pmu_x86_recount(env, ra, 1);
    }
    pmi = pmu_sync(env);
    for (c = 0; c < X86_PMU_COUNTERS; c++) {
        if (big & (1u << c)) {
            pmi |= pmu_count(env, p, &regs, c, n[c]);
        }
    }
    if (ra) {
        pmu_x86_recount(env, ra, -1);
        *leave = true;
    }
    return pmi & PMU_SYNC_PMI;
}

/*
 * The instruction whose loads the cache model took retired: the counters
 * count them, the cache events in the registers, the stall cycles of
 * cost-model=detailed in the window (pmu_stalls).  When a counter whose
 * controls ask for a PMI overflows, the PMI follows the instruction: at
 * the start of the next instruction of its TB (@mid), the registers take
 * what the TB's start counted, and the TB exits before that
 * instruction, giving back its counts and those after it
 * (x86_restore_state_to_opc), so that the interrupt is taken there; at
 * the TB's exit, at the next TB's start.  A counter that neither
 * overflows nor has its PEBS event due (pmu_pebs_event) just takes the
 * count, as pmu_count() would.
 */
void helper_pmu_cache_commit(CPUX86State *env, uint32_t mid)
{
    X86CPU *cpu = env_archcpu(env);
    const PmuProfile *p = cpu->pmu_profile;
    /* at either CPL: IRET's loads counted at the CPL it left */
    uint8_t window = env->pmu_cycle_counters[0] | env->pmu_cycle_counters[1];
    uint32_t stalls[X86_PMU_COUNTERS] = { };
    unsigned r = 0, slow = 0, i;
    bool leave = false;

    for (i = 0; i < X86_PMU_COUNTERS; i++) {
        uint32_t n = env->pmu_cache_pend[i];

        if (!n) {
            continue;
        }
        if (window & (1u << i)) {
            stalls[i] = n;
        } else if (i < PMU_MAX_GP && !(env->pmu_pebs_armed & BIT_ULL(i)) &&
                   env->msr_gp_counters[i] + n <= cpu->pmu_gp_mask) {
            env->msr_gp_counters[i] += n;
        } else {
            slow |= 1u << i;
            continue;
        }
        env->pmu_cache_pend[i] = 0;
    }
    if (slow) {
        PmuRegs regs = x86_pmu_regs(env);

        for (i = 0; i < X86_PMU_COUNTERS; i++) {
            if (slow & (1u << i)) {
                r |= pmu_count(env, p, &regs, i, env->pmu_cache_pend[i]);
                env->pmu_cache_pend[i] = 0;
            }
        }
    }
    env->pmu_cache_due = 0;
    if (env->pmu_ll_due) {
        env->pmu_ll_due = 0;
        env->pmu_ll_addr[0] = env->pmu_ll_addr[1];
        env->pmu_ll_source[0] = env->pmu_ll_source[1];
        env->pmu_ll_latency[0] = env->pmu_ll_latency[1];
    }
    if (window && pmu_stalls(env, stalls, mid ? GETPC() : 0, &leave)) {
        r |= PMU_SYNC_PMI;
    }
    if (r & PMU_SYNC_PMI) {
        /* what the TB's start counted, of the instructions up to this one */
        if (mid) {
            pmu_x86_recount(env, GETPC(), 1);
        }
        pmu_sync(env);
        if (mid) {
            pmu_x86_recount(env, GETPC(), -1);
        }
        pmu_pmi(env);
    }
    if (r) {
        leave = mid;
    }
    if (leave) {
        cpu_loop_exit_restore(env_cpu(env), GETPC());
    }
}

/* An EIP as the LBR stack takes it: zero-extended outside 64-bit mode */
static uint64_t lbr_eip(target_ulong eip, bool code64)
{
    return code64 ? eip : (uint32_t)eip;
}

/*
 * The branch that the TB's exit follows (gen_lbr_exit), at EIP @from, to
 * EIP @to: @desc is its PMU_LBR_* kind, bit 16 if it was taken at CPL 0,
 * bit 17 if in 64-bit code; @misp the predictor model's verdict.  The
 * EIP after a far branch is in the new code segment's mode.
 */
void helper_pmu_lbr(CPUX86State *env, target_ulong from, target_ulong to,
                    uint32_t desc, uint32_t misp)
{
    PmuRegs regs = x86_pmu_regs(env);

    pmu_lbr_record(env_archcpu(env)->pmu_profile, &regs, desc & 0xffff,
                   desc & (1 << 16), lbr_eip(from, desc & (1 << 17)),
                   lbr_eip(to, env->hflags & HF_CS64_MASK), misp);
}

/*
 * The Branch Trace Store (choice 73): the DS save area and the BTS buffer
 * are accessed through the supervisor's mapping of the current address
 * space (the kernel set IA32_DS_AREA), without SMAP, never faulting: a
 * field or record that is not mapped writable (readable, for the fields
 * read) drops the message, and nothing of it is written.
 */
static int bts_mmu_index(CPUX86State *env)
{
    return env->hflags & HF_LMA_MASK ? MMU_KNOSMAP64_IDX : MMU_KNOSMAP32_IDX;
}

/* Whether the @len bytes at @addr (at most a page) can be accessed */
static bool bts_probe(CPUX86State *env, uint64_t addr, int len,
                      MMUAccessType type)
{
    void *host;
    int mmu_idx = bts_mmu_index(env);

    return !(probe_access_flags(env, addr, 1, type, mmu_idx, true, &host,
                                0) & TLB_INVALID_MASK) &&
           !(probe_access_flags(env, addr + len - 1, 1, type, mmu_idx, true,
                                &host, 0) & TLB_INVALID_MASK);
}

/*
 * A branch trace message, from EIP @from (of the branch, or where an
 * interrupt or exception was delivered) taken at CPL 0 (@cpl0) or above,
 * to EIP @to, predicted by the model unless @misp: stored in the BTS
 * buffer if IA32_DEBUGCTL asks for those of that CPL
 */
static void pmu_bts(CPUX86State *env, uint64_t from, uint64_t to, bool cpl0,
                    bool misp)
{
    const PmuProfile *p = env_archcpu(env)->pmu_profile;
    PmuRegs regs = x86_pmu_regs(env);
    uint64_t ds = env->msr_ds_area, f[4];
    int mmu_idx = bts_mmu_index(env), i;
    PmuBtsStore st;

    if (!pmu_bts_records_at(p, &regs, cpl0) ||
        !bts_probe(env, ds, 32, MMU_DATA_LOAD) ||
        !bts_probe(env, ds + PMU_DS_BTS_INDEX, 8, MMU_DATA_STORE)) {
        return;
    }
    for (i = 0; i < 4; i++) {
        f[i] = cpu_ldq_le_mmuidx_ra(env, ds + 8 * i, mmu_idx, 0);
    }
    st = pmu_bts_store(&regs, f[0], f[1], f[2], f[3]);
    if (!st.store ||
        !bts_probe(env, f[1], PMU_BTS_RECORD_SIZE, MMU_DATA_STORE)) {
        return;
    }
    cpu_stq_le_mmuidx_ra(env, f[1], from, mmu_idx, 0);
    cpu_stq_le_mmuidx_ra(env, f[1] + 8, to, mmu_idx, 0);
    cpu_stq_le_mmuidx_ra(env, f[1] + 16, misp ? 0 : PMU_BTS_PREDICTED,
                         mmu_idx, 0);
    cpu_stq_le_mmuidx_ra(env, ds + PMU_DS_BTS_INDEX, st.index, mmu_idx, 0);
    if (st.pmi) {
        pmu_pmi(env);
    }
}

/* The branch that the TB's exit follows (gen_lbr_exit): as helper_pmu_lbr */
void helper_pmu_bts(CPUX86State *env, target_ulong from, target_ulong to,
                    uint32_t desc, uint32_t misp)
{
    pmu_bts(env, lbr_eip(from, desc & (1 << 17)),
            lbr_eip(to, env->hflags & HF_CS64_MASK), desc & (1 << 16), misp);
}

/*
 * An interrupt or exception, delivered at EIP @from at CPL 0 (@cpl0) or
 * above, in 64-bit code (@code64) or not, went to the handler at EIP
 * env->eip: for LBR, a far branch (choice 72); for BTS, a message
 * (choice 73)
 */
void pmu_x86_lbr_event(CPUX86State *env, target_ulong from, bool cpl0,
                       bool code64)
{
    PmuRegs regs = x86_pmu_regs(env);

    if (env->msr_debugctl & PMU_DEBUGCTL_LBR) {
        pmu_lbr_event(env_archcpu(env)->pmu_profile, &regs, cpl0,
                      lbr_eip(from, code64),
                      lbr_eip(env->eip, env->hflags & HF_CS64_MASK));
    }
    if (env->msr_debugctl & PMU_DEBUGCTL_TR) {
        pmu_bts(env, lbr_eip(from, code64),
                lbr_eip(env->eip, env->hflags & HF_CS64_MASK), cpl0, false);
    }
}

/*
 * The PEBS assist (SDM 18.6.1.1; choice 74), requested by the PEBS event
 * of the instruction that just retired: a record of the state that
 * instruction left (RIP the next instruction's) is stored in the PEBS
 * buffer of the DS save area, through the same mapping as BTS messages
 * and with the same probes, so that nothing is half-written; then the
 * counters that overflowed with PEBS take their reset values, and a
 * record that reached the threshold raises the PMI.
 */
void pmu_x86_pebs(CPUX86State *env)
{
    static const int gpr[] = {
        R_EAX, R_EBX, R_ECX, R_EDX, R_ESI, R_EDI, R_EBP, R_ESP,
    };
    const PmuProfile *p = env_archcpu(env)->pmu_profile;
    PmuRegs regs = x86_pmu_regs(env);
    uint64_t ds = env->msr_ds_area, f[4], reset[PMU_MAX_GP] = { };
    uint64_t rec[PMU_PEBS_RECORD_SIZE / 8] = { };
    bool lma = env->hflags & HF_LMA_MASK;
    int mmu_idx = bts_mmu_index(env), i;
    PmuBtsStore st = { };

    if (!p || !pmu_has_pebs(p)) {
        return;
    }
    /* what the TB left given back */
    pmu_x86_sync(env);
    if (bts_probe(env, ds + PMU_DS_PEBS_BASE,
                  PMU_DS_PEBS_RESET + 8 * PMU_MAX_GP - PMU_DS_PEBS_BASE,
                  MMU_DATA_LOAD) &&
        bts_probe(env, ds + PMU_DS_PEBS_INDEX, 8, MMU_DATA_STORE)) {
        for (i = 0; i < 4; i++) {
            f[i] = cpu_ldq_le_mmuidx_ra(env, ds + PMU_DS_PEBS_BASE + 8 * i,
                                        mmu_idx, 0);
        }
        for (i = 0; i < PMU_MAX_GP; i++) {
            reset[i] = cpu_ldq_le_mmuidx_ra(env,
                                            ds + PMU_DS_PEBS_RESET + 8 * i,
                                            mmu_idx, 0);
        }
        st = pmu_pebs_store(f[1], f[2], f[3]);
        st.store = st.store && bts_probe(env, f[1], PMU_PEBS_RECORD_SIZE,
                                         MMU_DATA_STORE);
    }
    if (st.store) {
        /* outside IA-32e mode: 32-bit values, R8-R15 0 (SDM 18.6.1.1) */
        uint64_t mask = lma ? UINT64_MAX : UINT32_MAX;

        rec[0] = cpu_compute_eflags(env);
        rec[1] = env->eip & mask;
        for (i = 0; i < ARRAY_SIZE(gpr); i++) {
            rec[2 + i] = env->regs[gpr[i]] & mask;
        }
#ifdef TARGET_X86_64
        for (i = 8; lma && i < 16; i++) {
            rec[2 + i] = env->regs[i];
        }
#endif
        rec[PMU_PEBS_STATUS / 8] = env->msr_global_status;
        rec[PMU_PEBS_DLA / 8] = env->pmu_ll_addr[0];
        rec[PMU_PEBS_DSE / 8] = env->pmu_ll_source[0];
        rec[PMU_PEBS_LAT / 8] = env->pmu_ll_latency[0];
        for (i = 0; i < ARRAY_SIZE(rec); i++) {
            cpu_stq_le_mmuidx_ra(env, f[1] + 8 * i, rec[i], mmu_idx, 0);
        }
        cpu_stq_le_mmuidx_ra(env, ds + PMU_DS_PEBS_INDEX, st.index, mmu_idx,
                             0);
    }
    pmu_pebs_done(p, &regs, reset, st.store, st.store && st.pmi);
    if (st.store && st.pmi) {
        pmu_pmi(env);
    }
}
