// qemu-lwp engine: address checks and guest memory transactions
// (spec 5.1 step 4, 7.4 Check, 8.6)
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include "engine-internal.hh"

namespace lwp
{
namespace
{

bool canonical(const LwpContext *ctx, uint64_t addr)
{
    unsigned bits = ctx->va_bits ? ctx->va_bits : 48;
    int64_t sext = static_cast<int64_t>(addr << (64 - bits)) >> (64 - bits);
    return static_cast<uint64_t>(sext) == addr;
}

// A "Store-type Segment_check" on DS (spec 7.4) of [ea, top]: the segment
// is usable and writable and the range lies within its limit; for an
// expand-down segment, above the limit and below 64K or 4G (B bit).
bool ds_store_check(const LwpContext *ctx, uint64_t ea, uint64_t top)
{
    if (!(ctx->ds_flags & LWP_DS_USABLE) ||
        !(ctx->ds_flags & LWP_DS_WRITABLE)) {
        return false;
    }
    if (ctx->ds_flags & LWP_DS_EXPAND_DOWN) {
        uint64_t upper = (ctx->ds_flags & LWP_DS_BIG) ? 0xffffffffu : 0xffffu;
        return ea > ctx->ds_limit && top <= upper;
    }
    return top <= ctx->ds_limit;
}

// The pieces of [addr, addr + len) in linear address space: outside long
// mode linear addresses wrap at 4G (choice 31).
template <typename F>
bool for_pieces(const LwpContext *ctx, uint64_t addr, uint32_t len, F f)
{
    if (ctx->lma) {
        return f(addr, len, 0u);
    }
    addr &= 0xffffffffu;
    uint64_t room = 0x100000000ull - addr;
    if (len <= room) {
        return f(addr, len, 0u);
    }
    uint32_t first = static_cast<uint32_t>(room);
    return f(addr, first, 0u) && f(0, len - first, first);
}

void set_fault(LwpResult *res, uint64_t addr, uint32_t len, bool write)
{
    res->fault_addr = addr;
    res->fault_len = len;
    res->fault_write = write;
}

} // namespace

// spec 5.1 step 4 ("any part of the LWPCB or the ring buffer is beyond the
// data segment limit") and 7.4 Check(), completed as implementation
// choice 31: 32-bit effective addresses with a DS store check outside
// 64-bit mode; canonical, non-wrapping ranges in 64-bit mode.
bool range_ok(const LwpContext *ctx, uint64_t ea, uint64_t size)
{
    uint64_t top = ea + size - 1;
    if (ctx->long64) {
        return top >= ea && canonical(ctx, ea) && canonical(ctx, top);
    }
    return ea <= 0xffffffffu && top <= 0xffffffffu &&
           ds_store_check(ctx, ea, top);
}

bool linear_ok(const LwpContext *ctx, uint64_t addr, uint64_t size)
{
    uint64_t top = addr + size - 1;
    return !ctx->lma ||
           (top >= addr && canonical(ctx, addr) && canonical(ctx, top));
}

bool mem_read(const LwpContext *ctx, const LwpMem *mem, uint64_t addr,
              void *buf, uint32_t len, LwpResult *res)
{
    auto *out = static_cast<uint8_t *>(buf);
    if (!linear_ok(ctx, addr, len)) {
        // non-canonical or wrapping (a CPL-0 XRSTOR is trusted, 7.4):
        // reported as the fault an access there raises
        set_fault(res, addr, len, false);
        return false;
    }
    return for_pieces(ctx, addr, len, [&](uint64_t a, uint32_t l, uint32_t o) {
        if (mem->ops->read(mem->opaque, a, out + o, l)) {
            return true;
        }
        set_fault(res, a, l, false);
        return false;
    });
}

bool mem_probe_write(const LwpContext *ctx, const LwpMem *mem, uint64_t addr,
                     uint32_t len, LwpResult *res)
{
    if (!linear_ok(ctx, addr, len)) {
        set_fault(res, addr, len, true);
        return false;
    }
    return for_pieces(ctx, addr, len, [&](uint64_t a, uint32_t l, uint32_t) {
        if (mem->ops->probe_write(mem->opaque, a, l)) {
            return true;
        }
        set_fault(res, a, l, true);
        return false;
    });
}

bool read_cb(const LwpContext *ctx, const LwpMem *mem, uint64_t cb_addr,
             uint8_t *cb, LwpResult *res)
{
    uint32_t size = cb_size(ctx);
    return mem_read(ctx, mem, cb_addr, cb, LWPCB_SOFTWARE, res) &&
           mem_read(ctx, mem, cb_addr + LWPCB_SOFTWARE_END,
                    cb + LWPCB_SOFTWARE_END, size - LWPCB_SOFTWARE_END, res);
}

bool probe_write_cb(const LwpContext *ctx, const LwpMem *mem, uint64_t cb_addr,
                    LwpResult *res)
{
    uint32_t size = cb_size(ctx);
    return mem_probe_write(ctx, mem, cb_addr, LWPCB_SOFTWARE, res) &&
           mem_probe_write(ctx, mem, cb_addr + LWPCB_SOFTWARE_END,
                           size - LWPCB_SOFTWARE_END, res);
}

void Txn::add(uint64_t addr, const void *data, uint32_t len)
{
    // The engine never queues more, or larger, writes than kMax and kRec:
    // a record, MissedEvents, the head, a Flags word, six counters.
    if (n_ == kMax) {
        __builtin_trap(); // unreachable: no operation queues more
    }
    Write &w = w_[n_++];
    w.addr = addr;
    w.len = len;
    memcpy(w.data, data, len);
}

bool Txn::probe(const LwpContext *ctx, const LwpMem *mem, LwpResult *res) const
{
    for (int i = 0; i < n_; i++) {
        if (!mem_probe_write(ctx, mem, w_[i].addr, w_[i].len, res)) {
            return false;
        }
    }
    return true;
}

void Txn::commit(const LwpContext *ctx, const LwpMem *mem) const
{
    for (int i = 0; i < n_; i++) {
        const Write &w = w_[i];
        for_pieces(ctx, w.addr, w.len, [&](uint64_t a, uint32_t l, uint32_t o) {
            mem->ops->write(mem->opaque, a, w.data + o, l);
            return true;
        });
    }
}

} // namespace lwp
