// qemu-lwp engine: what the engine's tests, fuzzer, benchmarks and tools
// use beyond the API QEMU uses (lwp-engine.h).  QEMU never calls these:
// reference.cc, which QEMU does not link, defines all but
// lwp_next_interval.
//
// Copyright (c) 2026 qemu-lwp contributors
// SPDX-License-Identifier: GPL-2.0-or-later

#ifndef LWP_ENGINE_TEST_HH
#define LWP_ENGINE_TEST_HH

#include "lwp-engine.hh"

extern "C" {

// The events @info counts after the enable bits and filters: a mask
uint32_t lwp_counted_events(const LwpState *s, const LwpContext *ctx,
                            const LwpEventInfo *info);

// An instruction retired (spec 1.1): decrement the counters of the events
// it is counted for and store a record for each that went negative.
LwpStatus lwp_retire(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     const LwpEventInfo *info, LwpResult *res);

// The reset value of @event's counter, randomised (spec 1.1 step 5)
int32_t lwp_next_interval(LwpState *s, unsigned event);

// A new geometry, empty.  False (and the model unchanged) when @cfg is
// not valid or memory runs out.
bool lwp_cache_configure(LwpCache *c, const LwpCacheConfig *cfg);

}

#endif // LWP_ENGINE_TEST_HH
