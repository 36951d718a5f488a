// qemu-lwp engine: XSAVE component 62 (spec 7.2-7.5, 8.2)
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include "engine-internal.hh"

namespace lwp
{
namespace
{

constexpr uint32_t kRngOffset = LWP_XS_SAVED_RECORD + 24;
constexpr int32_t kField26Max = (int32_t{1} << 25) - 1;
constexpr int32_t kField26Min = -(int32_t{1} << 25);

// spec 7.4 Check(): the LWPCB and ring buffer pointers of an area restored
// at CPL != 0 must be reachable through the current DS (choice 31).
bool check(const LwpContext *ctx, uint64_t addr, uint32_t size)
{
    uint64_t ea = ctx->long64 ? addr : (addr - ctx->ds_base) & 0xffffffffu;
    return range_ok(ctx, ea, size);
}

} // namespace
} // namespace lwp

using namespace lwp;

extern "C" {

// spec 7.3: "If LWP is not currently enabled ... XSAVE sets bit 62 in
// XSAVE.HEADER.XSTATE_BV to 0"; otherwise it "stores the various internal
// LWP values into the XSAVE area with no checking or conversion"
// (Figure 7-1, choice 29).
bool lwp_xsave(const LwpState *s, uint8_t *area)
{
    memset(area, 0, LWP_XSAVE_SIZE);
    if (!enabled(s)) {
        return false;
    }
    st64(area + LWP_XS_CBADDR, s->cb_addr);
    st32(area + LWP_XS_FLAGS, s->flags & kEventMask);
    st32(area + LWP_XS_HEAD, s->head);
    st64(area + LWP_XS_BUFFER_BASE, s->buffer_base);
    st32(area + LWP_XS_BUFFER_SIZE, s->buffer_size & LWPCB_BUFFER_SIZE_MASK);
    st32(area + LWP_XS_FILTERS, s->filters);
    memcpy(area + LWP_XS_SAVED_RECORD, s->pending, 24);
    st64(area + kRngOffset, s->rng);
    for (unsigned n = 1; n <= LWP_NUM_EVENTS; n++) {
        if (s->flags & bit(n)) {
            st32(area + LWP_XS_COUNTER(n),
                 static_cast<uint32_t>(s->counter[n]));
        }
    }
    return true;
}

// spec 7.4 and 7.5 (choice 30)
bool lwp_xrstor(LwpState *s, const LwpContext *ctx, const uint8_t *area,
                const char **why)
{
    const char *unused;

    why = why ? why : &unused;
    *why = nullptr;
    // 7.5: "LWP_CBADDR is set to 0 and LWP is disabled. Other processor
    // internal state for LWP is set to 0"; Table 7-1: LWPCBAddress 0 means
    // disabled, "the rest of the save area is ignored".
    lwp_state_init(s);
    if (!area || !ld64(area + LWP_XS_CBADDR)) {
        return false;
    }
    LwpState n{};
    n.cb_addr = ld64(area + LWP_XS_CBADDR);
    n.buffer_base = ld64(area + LWP_XS_BUFFER_BASE);
    if (!ctx->lma) {
        n.cb_addr &= 0xffffffffu;
        n.buffer_base &= 0xffffffffu;
    }
    // Step 1: "If BufferSize is below the implementation minimum, LWP is
    // disabled"; rounded down; the head fixed up.
    n.buffer_size =
        ld32(area + LWP_XS_BUFFER_SIZE) & LWPCB_BUFFER_SIZE_MASK & ~(kRec - 1);
    if (!n.cb_addr) {
        *why = "LWPCBAddress is 0 in its low 32 bits, the only ones read "
               "outside long mode (7.4)";
        return false;
    }
    if (n.buffer_size < min_buffer(ctx)) {
        *why = "BufferSize is below 32 * LwpMinBufferSize records (7.4 "
               "step 1)";
        return false;
    }
    uint32_t head = ld32(area + LWP_XS_HEAD);
    n.head = (head > n.buffer_size - kRec ? 0 : head) & ~(kRec - 1);
    // "If the CPL != 0, XRSTOR first validates the LWPCB and ring buffer
    // pointers ... If any of the address checks fails, LWP is disabled.
    // No fault is generated."
    if (ctx->cpl != 0 && !check(ctx, n.cb_addr, cb_size(ctx))) {
        *why = "at CPL 3, the LWPCB is beyond the DS limit or not canonical "
               "(7.4 Check)";
        return false;
    }
    if (ctx->cpl != 0 && !check(ctx, n.buffer_base, n.buffer_size)) {
        *why = "at CPL 3, the ring buffer is beyond the DS limit or not "
               "canonical (7.4 Check)";
        return false;
    }
    // Step 2: the events available in LWP_CFG, their counters
    n.flags = ld32(area + LWP_XS_FLAGS) & available(ctx) & kEventMask;
    for (unsigned e = 1; e <= LWP_NUM_EVENTS; e++) {
        if (n.flags & bit(e)) {
            int32_t c = static_cast<int32_t>(ld32(area + LWP_XS_COUNTER(e)));
            c = c < kField26Min ? kField26Min : c;
            n.counter[e] = c > kField26Max ? kField26Max : c;
        }
    }
    n.filters = ld32(area + LWP_XS_FILTERS);
    // Step 3: a pending record; bytes 24-31 carry the generator state
    if (area[LWP_XS_SAVED_RECORD + LWP_REC_EVENT_ID]) {
        memcpy(n.pending, area + LWP_XS_SAVED_RECORD, 24);
    }
    n.rng = ld64(area + kRngOffset);
    // 8.2.5: the rest is read from the LWPCB in ring 3 (lwp_sync)
    n.reload = 1;
    *s = n;
    return true;
}

} // extern "C"
