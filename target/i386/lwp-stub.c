/*
 * AMD Lightweight Profiling without its engine (-Dlwp=disabled, or no C++
 * compiler): the x86 targets build, and LWP cannot be enabled, so only the
 * calls made whatever the CPU's features are reachable here.
 *
 * Copyright (c) 2026 qemu-lwp contributors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "lwp-engine.h"
#include "pmu-engine.h"
#include "bpred-engine.h"

/* Reachable: CPUID 8000_001C, when the xlevel reaches it */
uint32_t lwp_cpuid_eax(uint64_t xcr0, uint64_t lwp_cfg, uint32_t edx)
{
    return 0;
}

/* Reachable: a new linux-user thread starts with LWP disabled */
void lwp_state_init(LwpState *s)
{
    memset(s, 0, sizeof(*s));
}

/* Reachable: CPU unrealize, with no model */
void lwp_cache_free(LwpCache *c)
{
    assert(!c);
}

uint32_t lwp_cpuid_ebx(uint32_t edx)
{
    g_assert_not_reached();
}

uint32_t lwp_cpuid_ecx(uint32_t ecx_caps, uint32_t edx)
{
    g_assert_not_reached();
}

LwpStatus lwp_cfg_write(uint64_t value, uint32_t edx, uint64_t *cfg)
{
    g_assert_not_reached();
}

LwpStatus lwp_cbaddr_write(uint64_t value)
{
    g_assert_not_reached();
}

bool lwp_needs_sync(const LwpState *s)
{
    g_assert_not_reached();
}

LwpStatus lwp_llwpcb(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     uint64_t ea, LwpResult *res)
{
    g_assert_not_reached();
}

LwpStatus lwp_slwpcb(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     uint64_t *ea, LwpResult *res)
{
    g_assert_not_reached();
}

LwpStatus lwp_lwpins(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     uint64_t ip, uint32_t data1, uint64_t data2,
                     uint32_t flags, LwpResult *res)
{
    g_assert_not_reached();
}

bool lwp_lwpval_fires(const LwpState *s, const LwpContext *ctx, uint64_t ip)
{
    g_assert_not_reached();
}

LwpStatus lwp_lwpval(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     uint64_t ip, uint32_t data1, uint64_t data2,
                     uint32_t flags, LwpResult *res)
{
    g_assert_not_reached();
}

LwpIpRange lwp_ip_range(const LwpState *s, uint64_t first, uint64_t last)
{
    g_assert_not_reached();
}

bool lwp_ip_eligible(const LwpState *s, const LwpContext *ctx, uint64_t ip)
{
    g_assert_not_reached();
}

bool lwp_branch_eligible(const LwpState *s, const LwpContext *ctx,
                         unsigned kind, bool predicted, bool predicted_ok)
{
    g_assert_not_reached();
}

bool lwp_dme_eligible(const LwpState *s, const LwpContext *ctx,
                      uint32_t latency, unsigned source)
{
    g_assert_not_reached();
}

LwpStatus lwp_store_events(LwpState *s, const LwpContext *ctx,
                           const LwpMem *mem, const LwpEventInfo *info,
                           uint32_t events, LwpResult *res)
{
    g_assert_not_reached();
}

LwpStatus lwp_sync(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                   LwpResult *res)
{
    g_assert_not_reached();
}

bool lwp_store_deferrable(const LwpState *s, const LwpContext *ctx,
                          unsigned event, uint32_t overrun)
{
    g_assert_not_reached();
}

bool lwp_xsave(const LwpState *s, uint8_t *area)
{
    g_assert_not_reached();
}

bool lwp_xrstor(LwpState *s, const LwpContext *ctx, const uint8_t *area,
                const char **why)
{
    g_assert_not_reached();
}

void lwp_cache_default_config(LwpCacheConfig *cfg)
{
    g_assert_not_reached();
}

bool lwp_cache_config_valid(const LwpCacheConfig *cfg)
{
    g_assert_not_reached();
}

LwpCache *lwp_cache_new(const LwpCacheConfig *cfg)
{
    g_assert_not_reached();
}

LwpCacheResult lwp_cache_load(LwpCache *c, uint64_t addr, uint32_t size)
{
    g_assert_not_reached();
}

void lwp_cache_flush(LwpCache *c)
{
    g_assert_not_reached();
}

void lwp_cache_flush_line(LwpCache *c, uint64_t addr)
{
    g_assert_not_reached();
}

uint64_t *lwp_cache_l1_lines(LwpCache *c)
{
    g_assert_not_reached();
}

size_t lwp_cache_state_words(const LwpCache *c)
{
    g_assert_not_reached();
}

void lwp_cache_save(const LwpCache *c, uint64_t *words)
{
    g_assert_not_reached();
}

bool lwp_cache_restore(LwpCache *c, const uint64_t *words)
{
    g_assert_not_reached();
}

bool lwp_cache_empty(const LwpCache *c)
{
    g_assert_not_reached();
}

unsigned lwp_cache_dme_source(unsigned level)
{
    g_assert_not_reached();
}

int lwp_disas(const uint8_t *code, size_t size, unsigned mode_bits,
              LwpDisasInsn *insn)
{
    g_assert_not_reached();
}

/* Reachable: CPU realize with pmu=on under TCG; no profile, so no PMU */
const PmuProfile *pmu_profile_find(bool intel, uint32_t family,
                                   uint32_t model)
{
    return NULL;
}

void pmu_cpuid_0a(const PmuProfile *p, uint32_t *eax, uint32_t *ebx,
                  uint32_t *ecx, uint32_t *edx)
{
    g_assert_not_reached();
}

uint64_t pmu_misc_enable_bits(const PmuProfile *p)
{
    g_assert_not_reached();
}

void pmu_cache_config(const PmuProfile *p, struct LwpCacheConfig *cfg)
{
    g_assert_not_reached();
}

uint32_t pmu_mispredict_penalty(const PmuProfile *p)
{
    g_assert_not_reached();
}

void pmu_reset(const PmuProfile *p, const PmuRegs *r)
{
    g_assert_not_reached();
}

void bpred_reset(BpredState *s)
{
    g_assert_not_reached();
}

/* Reachable: an incoming migration stream with the cpu/bpred subsection */
bool bpred_state_valid(const BpredState *s)
{
    return false;
}

bool bpred_cond(BpredState *s, uint64_t ip, bool taken)
{
    g_assert_not_reached();
}

bool bpred_indirect(BpredState *s, uint64_t ip, uint64_t target)
{
    g_assert_not_reached();
}

void bpred_call(BpredState *s, uint64_t return_ip)
{
    g_assert_not_reached();
}

bool bpred_ret(BpredState *s, uint64_t target)
{
    g_assert_not_reached();
}

bool pmu_owns_msr(const PmuProfile *p, uint32_t msr)
{
    g_assert_not_reached();
}

PmuStatus pmu_rdmsr(const PmuProfile *p, const PmuRegs *r, uint32_t msr,
                    uint64_t *val)
{
    g_assert_not_reached();
}

PmuStatus pmu_wrmsr(const PmuProfile *p, const PmuRegs *r, uint32_t msr,
                    uint64_t val)
{
    g_assert_not_reached();
}

PmuStatus pmu_rdpmc(const PmuProfile *p, const PmuRegs *r, uint32_t ecx,
                    uint64_t *val)
{
    g_assert_not_reached();
}

const char *pmu_profile_name(const PmuProfile *p)
{
    g_assert_not_reached();
}

unsigned pmu_num_gp(const PmuProfile *p)
{
    g_assert_not_reached();
}

unsigned pmu_num_fixed(const PmuProfile *p)
{
    g_assert_not_reached();
}

PmuCount pmu_count_gp(const PmuProfile *p, const PmuRegs *r, unsigned i)
{
    g_assert_not_reached();
}

PmuCount pmu_count_fixed(const PmuProfile *p, const PmuRegs *r, unsigned i)
{
    g_assert_not_reached();
}

uint64_t pmu_until_overflow(const PmuProfile *p, const PmuRegs *r,
                            bool fixed, unsigned i)
{
    g_assert_not_reached();
}

bool pmu_add(const PmuProfile *p, const PmuRegs *r, bool fixed, unsigned i,
             uint64_t n)
{
    g_assert_not_reached();
}

void pmu_sub(const PmuProfile *p, const PmuRegs *r, bool fixed, unsigned i,
             uint64_t n)
{
    g_assert_not_reached();
}

bool pmu_pmi_request(const PmuProfile *p, const PmuRegs *r)
{
    g_assert_not_reached();
}

uint32_t pmu_event_insn(unsigned source, uint64_t event, uint32_t n)
{
    g_assert_not_reached();
}

uint32_t pmu_block_events(unsigned source, uint32_t n, bool branch)
{
    g_assert_not_reached();
}

unsigned pmu_lbr_depth(const PmuProfile *p)
{
    g_assert_not_reached();
}

bool pmu_lbr_records_at(const PmuProfile *p, const PmuRegs *r, bool cpl0)
{
    g_assert_not_reached();
}

void pmu_lbr_record(const PmuProfile *p, const PmuRegs *r, unsigned kind,
                    bool cpl0, uint64_t from, uint64_t to, bool misp)
{
    g_assert_not_reached();
}

void pmu_lbr_event(const PmuProfile *p, const PmuRegs *r, bool cpl0,
                   uint64_t from, uint64_t to)
{
    g_assert_not_reached();
}

bool pmu_has_bts(const PmuProfile *p)
{
    g_assert_not_reached();
}

bool pmu_bts_records_at(const PmuProfile *p, const PmuRegs *r, bool cpl0)
{
    g_assert_not_reached();
}

PmuBtsStore pmu_bts_store(const PmuRegs *r, uint64_t base, uint64_t index,
                          uint64_t max, uint64_t threshold)
{
    g_assert_not_reached();
}

bool pmu_has_pebs(const PmuProfile *p)
{
    g_assert_not_reached();
}

bool pmu_pebs_event(const PmuProfile *p, const PmuRegs *r, unsigned i,
                    uint64_t n, bool overflowed)
{
    g_assert_not_reached();
}

PmuBtsStore pmu_pebs_store(uint64_t index, uint64_t max, uint64_t threshold)
{
    g_assert_not_reached();
}

void pmu_pebs_done(const PmuProfile *p, const PmuRegs *r,
                   const uint64_t *reset, bool stored, bool pmi)
{
    g_assert_not_reached();
}

uint64_t pmu_pebs_data_source(unsigned level)
{
    g_assert_not_reached();
}

bool pmu_has_counters(const PmuProfile *p)
{
    g_assert_not_reached();
}

bool pmu_lbr_has_mispredict(const PmuProfile *p)
{
    g_assert_not_reached();
}
