// qemu-lwp engine: LLWPCB, SLWPCB and the flush (spec 5.1, 5.2, 6)
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include "engine-internal.hh"

namespace lwp
{
namespace
{

// spec 5.2: "The flush operation stores the internal event counters for
// active events and the current ring buffer head pointer into the LWPCB.
// If there is an unwritten event record pending, it is written to the
// event ring buffer." (choice 26)
LwpStatus flush(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                LwpResult *res)
{
    LwpStatus st = sync(s, ctx, mem, res);
    if (st != LWP_OK) {
        return st;
    }
    Txn txn;
    for (unsigned n = 1; n <= max_event(ctx); n++) {
        if (s->flags & bit(n)) {
            txn.add32(s->cb_addr + LWPCB_COUNTER(LWP_EVENT_OFFSET, n),
                      to_field26(s->counter[n]));
        }
    }
    txn.add32(s->cb_addr + LWPCB_HEAD, s->head);
    if (!txn.probe(ctx, mem, res)) {
        return LWP_FAULT_PF;
    }
    txn.commit(ctx, mem);
    return LWP_OK;
}

// Table 6-1: reserved fields of the fixed part that "must be zero"
bool reserved_clear(const uint8_t *cb)
{
    if (ld32(cb + 20) || ld64(cb + 56) || ld32(cb + 68)) {
        return false;
    }
    for (unsigned i = LWPCB_SOFTWARE_END; i < LWP_EVENT_OFFSET; i++) {
        if (cb[i]) {
            return false;
        }
    }
    return !(ld32(cb + LWPCB_FILTERS) & LWP_FILTER_RESERVED_MASK);
}

// spec 5.1 steps 4-8 for a non-zero LWPCB address, with LWP disabled.
// Implementation choices 14-17: the checks in order, what is written back.
LwpStatus load(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
               uint64_t ea, LwpResult *res)
{
    const uint32_t size = cb_size(ctx);
    uint8_t cb[kMaxCbSize] = {};

    // "If any part of the LWPCB ... is beyond the data segment limit"
    if (!range_ok(ctx, ea, size)) {
        res->gp_reason = "the LWPCB is beyond the DS limit or not canonical "
                         "(5.1)";
        return LWP_FAULT_GP;
    }
    const uint64_t cb_addr = linear(ctx, ea);
    // LWP_CBADDR 0 means disabled (4.3): an LWPCB whose linear address is
    // 0 cannot be enabled (choice 14 (a))
    if (!cb_addr) {
        res->gp_reason = "the LWPCB's linear address is 0, which "
                         "LWP_CBADDR takes for disabled (4.3)";
        return LWP_FAULT_GP;
    }
    if (!read_cb(ctx, mem, cb_addr, cb, res)) {
        return LWP_FAULT_PF;
    }
    if (!reserved_clear(cb)) {
        res->gp_reason = "a reserved field of the LWPCB is not 0 (Table "
                         "6-1)";
        return LWP_FAULT_GP;
    }
    // Table 6-1, BufferSize: rounded down to a multiple of LwpEventSize,
    // at least 32 * LwpMinBufferSize * LwpEventSize
    uint32_t dw = ld32(cb + LWPCB_BUFFER_SIZE);
    uint32_t bsize = dw & LWPCB_BUFFER_SIZE_MASK & ~(kRec - 1);
    if (bsize < min_buffer(ctx)) {
        res->gp_reason = "BufferSize is below 32 * LwpMinBufferSize records "
                         "(Table 6-1, BufferSize)";
        return LWP_FAULT_GP;
    }
    // "If the default address size is less than 64 bits, the upper bits of
    // BufferBase must be zero"; the ring buffer within the DS limit.
    uint64_t base = ld64(cb + LWPCB_BUFFER_BASE);
    if ((!ctx->long64 && base >> 32) || !range_ok(ctx, base, bsize)) {
        res->gp_reason = "the ring buffer is beyond the DS limit or not "
                         "canonical, or BufferBase has upper bits outside "
                         "64-bit mode (5.1)";
        return LWP_FAULT_GP;
    }
    // "The LWPCB must be in memory that is readable and writable in user
    // mode": probe all of it, then write back.
    if (!probe_write_cb(ctx, mem, cb_addr, res)) {
        return LWP_FAULT_PF;
    }

    LwpState n{};
    Txn txn;
    // Step 6 and Figure 6-2: Flags AND available, stored back
    n.flags = ld32(cb + LWPCB_FLAGS) & available(ctx);
    txn.add32(cb_addr + LWPCB_FLAGS, n.flags);
    // Step 7 and Table 6-1: intervals at least the minimum (stored back),
    // counters negative -> 0
    for (unsigned e = 1; e <= max_event(ctx); e++) {
        if (!(n.flags & bit(e))) {
            continue;
        }
        uint32_t off = LWPCB_INTERVAL(LWP_EVENT_OFFSET, e);
        int32_t iv = field26(ld32(cb + off));
        if (iv < min_interval(e)) {
            iv = min_interval(e);
            txn.add32(cb_addr + off, static_cast<uint32_t>(iv));
        }
        n.interval[e] = static_cast<uint32_t>(iv);
        int32_t c = field26(ld32(cb + LWPCB_COUNTER(LWP_EVENT_OFFSET, e)));
        n.counter[e] = c < 0 ? 0 : c;
    }
    // Table 6-1, BufferHeadOffset: "LWP will use a value of 0 if
    // BufferHeadOffset is too large ... will round it down" (choice 24)
    uint32_t head = ld32(cb + LWPCB_HEAD);
    n.head = (head >= bsize ? 0 : head) & ~(kRec - 1);
    txn.add32(cb_addr + LWPCB_HEAD, n.head);
    // Step 5: linear addresses kept internally
    n.cb_addr = cb_addr;
    n.buffer_base = linear(ctx, base);
    n.buffer_size = bsize;
    n.tail = sanitize_tail(ld32(cb + LWPCB_TAIL), bsize);
    n.threshold = ld32(cb + LWPCB_THRESHOLD) & ~(kRec - 1);
    n.filters = ld32(cb + LWPCB_FILTERS);
    n.base_ip = ld64(cb + LWPCB_BASE_IP);
    n.limit_ip = ld64(cb + LWPCB_LIMIT_IP);
    n.random = static_cast<uint8_t>(dw >> LWPCB_RANDOM_SHIFT);

    txn.commit(ctx, mem);
    *s = n;
    return LWP_OK;
}

} // namespace
} // namespace lwp

using namespace lwp;

extern "C" {

// spec 5.1, Action
LwpStatus lwp_llwpcb(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     uint64_t ea, LwpResult *res)
{
    *res = LwpResult{};
    // Step 2: "If the flush causes a #PF exception, LWP remains enabled
    // with the old LWPCB still active."
    if (enabled(s)) {
        LwpStatus st = flush(s, ctx, mem, res);
        if (st != LWP_OK) {
            return st;
        }
    }
    // Steps 3-4: disabled for 0, and "If any of these exceptions occurs,
    // LLWPCB aborts and LWP is left disabled."
    lwp_state_init(s);
    if (!ea) {
        return LWP_OK;
    }
    if (!ctx->long64) {
        ea &= 0xffffffffu;
    }
    return load(s, ctx, mem, ea, res);
}

// spec 5.2: flush, then the effective address of the LWPCB (0 when LWP is
// disabled): LWP_CBADDR minus DS.Base.
LwpStatus lwp_slwpcb(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     uint64_t *ea, LwpResult *res)
{
    *res = LwpResult{};
    *ea = 0;
    if (!enabled(s)) {
        return LWP_OK;
    }
    LwpStatus st = flush(s, ctx, mem, res);
    if (st != LWP_OK) {
        return st;
    }
    *ea = s->cb_addr - (ctx->long64 ? 0 : ctx->ds_base);
    if (!ctx->long64) {
        *ea &= 0xffffffffu;
    }
    return LWP_OK;
}

} // extern "C"
