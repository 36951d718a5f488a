// qemu-lwp engine: the branch-predictor model behind BR_MISP_RETIRED
// (event C5H) and LWP's lwp-bpred (bpred-engine.h).
// docs/branch-predictor.md specifies it; the section names below are
// that document's.
//
// SPDX-License-Identifier: GPL-2.0-or-later

extern "C" {
#include "bpred-engine.h"
}

#include <cstddef>

namespace
{

// The layout is what generated code and the migration stream see
static_assert(offsetof(BpredState, btb_tag) == 0, "layout");
static_assert(offsetof(BpredState, btb_target) == 8 * BPRED_BTB_ENTRIES,
              "layout");
static_assert(offsetof(BpredState, rsb) == 16 * BPRED_BTB_ENTRIES, "layout");
static_assert(offsetof(BpredState, rsb_top) ==
                  16 * BPRED_BTB_ENTRIES + 8 * BPRED_RSB_ENTRIES,
              "layout");
static_assert(offsetof(BpredState, cond) ==
                  16 * BPRED_BTB_ENTRIES + 8 * BPRED_RSB_ENTRIES + 8,
              "layout");
static_assert(sizeof(BpredState) == 12424, "layout");
static_assert((BPRED_RSB_ENTRIES & (BPRED_RSB_ENTRIES - 1)) == 0,
              "the return stack wraps with a mask");

constexpr uint32_t kRsbMask = BPRED_RSB_ENTRIES - 1;

// "Index functions": the address folded onto itself, BITS bits at a time,
// keeping the low BITS bits
template <unsigned Bits> constexpr uint32_t fold(uint64_t ip)
{
    return static_cast<uint32_t>((ip ^ (ip >> Bits)) &
                                 ((uint64_t{1} << Bits) - 1));
}

static_assert(fold<12>(0x401234) == (0x234 ^ 0x401), "index example");

} // namespace

extern "C" {

void bpred_reset(BpredState *s)
{
    for (uint32_t i = 0; i < BPRED_BTB_ENTRIES; i++) {
        s->btb_tag[i] = BPRED_BTB_EMPTY;
        s->btb_target[i] = 0;
    }
    for (uint64_t &e : s->rsb) {
        e = 0;
    }
    s->rsb_top = 0;
    s->reserved = 0;
    for (uint8_t &c : s->cond) {
        c = BPRED_COUNTER_INIT;
    }
}

bool bpred_state_valid(const BpredState *s)
{
    if (s->rsb_top > kRsbMask || s->reserved != 0) {
        return false;
    }
    // One test for the whole table, without a branch per counter
    uint8_t high = 0;
    for (uint8_t c : s->cond) {
        high |= c & ~BPRED_COUNTER_MAX;
    }
    return high == 0;
}

uint32_t bpred_cond_index(uint64_t ip)
{
    return fold<BPRED_COND_BITS>(ip);
}

uint32_t bpred_btb_index(uint64_t ip)
{
    return fold<BPRED_BTB_BITS>(ip);
}

// "Conditional branches"
bool bpred_cond(BpredState *s, uint64_t ip, bool taken)
{
    uint8_t &c = s->cond[fold<BPRED_COND_BITS>(ip)];
    bool predicted_taken = c >= 2;
    if (taken) {
        c += c < BPRED_COUNTER_MAX;
    } else {
        c -= c > 0;
    }
    return predicted_taken != taken;
}

// "Indirect branches"
bool bpred_indirect(BpredState *s, uint64_t ip, uint64_t target)
{
    uint32_t i = fold<BPRED_BTB_BITS>(ip);
    bool miss = s->btb_tag[i] != ip || s->btb_target[i] != target;
    s->btb_tag[i] = ip;
    s->btb_target[i] = target;
    return miss;
}

// "Return stack"
void bpred_call(BpredState *s, uint64_t return_ip)
{
    uint32_t top = (s->rsb_top + 1) & kRsbMask;
    s->rsb[top] = return_ip;
    s->rsb_top = top;
}

bool bpred_ret(BpredState *s, uint64_t target)
{
    uint32_t top = s->rsb_top & kRsbMask;
    bool miss = s->rsb[top] != target;
    s->rsb_top = (top - 1) & kRsbMask;
    return miss;
}

} // extern "C"
