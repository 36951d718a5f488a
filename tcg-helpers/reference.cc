// qemu-lwp engine: the reference retirement of one instruction, for the
// engine's tests, fuzzer and benchmarks (lwp-engine-test.hh).  QEMU
// counts in generated code and does not link this file.
//
// Copyright (c) 2026 qemu-lwp contributors
// SPDX-License-Identifier: GPL-2.0-or-later

#include "cache.hh"
#include "engine-internal.hh"

using namespace lwp;

// spec 1.1 step 1: the events an instruction decrements.  LWPVAL's event
// is counted by lwp_lwpval() only.
uint32_t lwp_counted_events(const LwpState *s, const LwpContext *ctx,
                            const LwpEventInfo *info)
{
    if (!enabled(s) || !lwp_ip_eligible(s, ctx, info->ip)) {
        return 0;
    }
    uint32_t m = info->events & s->flags & kEventMask & ~LWP_FEAT_VAL;
    if ((m & LWP_FEAT_BRE) &&
        !lwp_branch_eligible(s, ctx, info->branch_kind, info->predicted,
                             info->predicted_ok)) {
        m &= ~LWP_FEAT_BRE;
    }
    if ((m & LWP_FEAT_DME) &&
        !lwp_dme_eligible(s, ctx, info->dme_latency, info->dme_source)) {
        m &= ~LWP_FEAT_DME;
    }
    return m;
}

LwpStatus lwp_retire(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     const LwpEventInfo *info, LwpResult *res)
{
    *res = LwpResult{};
    LwpStatus st = sync(s, ctx, mem, res);
    if (st != LWP_OK) {
        return st;
    }
    uint32_t m = lwp_counted_events(s, ctx, info);
    for (unsigned n = 1; n <= LWP_NUM_EVENTS; n++) {
        if (!(m & bit(n))) {
            continue;
        }
        int64_t dec = n == LWP_EVENT_ID_CNH   ? info->cycles
                      : n == LWP_EVENT_ID_RNH ? info->ref_cycles
                                              : 1;
        int64_t c = s->counter[n] - dec;
        s->counter[n] =
            static_cast<int32_t>(c < kCounterFloor ? kCounterFloor : c);
    }
    return store_due(s, ctx, mem, info, m, res);
}

bool lwp_cache_configure(LwpCache *c, const LwpCacheConfig *cfg)
{
    return c->model.configure(*cfg);
}
