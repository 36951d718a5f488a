// qemu-lwp engine: helpers shared by the engine's source files
//
// SPDX-License-Identifier: GPL-2.0-or-later

#ifndef LWP_ENGINE_INTERNAL_HH
#define LWP_ENGINE_INTERNAL_HH

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lwp-engine-test.hh"

namespace lwp
{

constexpr uint32_t kRec = LWP_EVENT_RECORD_SIZE;
constexpr uint32_t kEventMask = LWP_FEAT_EVENTS_MASK;
constexpr uint32_t kMaxCbSize = LWP_EVENT_OFFSET + 8 * LWP_NUM_EVENTS;
constexpr int32_t kCounterFloor = LWP_ENGINE_COUNTER_FLOOR;

constexpr uint32_t bit(unsigned event)
{
    return uint32_t{1} << event;
}

// Little-endian loads and stores: guest memory and the XSAVE area are
// little-endian whatever the host is.
inline uint32_t ld32(const uint8_t *p)
{
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
           uint32_t{p[3]} << 24;
}
inline uint64_t ld64(const uint8_t *p)
{
    return ld32(p) | uint64_t{ld32(p + 4)} << 32;
}
inline void st16(uint8_t *p, uint16_t v)
{
    p[0] = static_cast<uint8_t>(v);
    p[1] = static_cast<uint8_t>(v >> 8);
}
inline void st32(uint8_t *p, uint32_t v)
{
    st16(p, static_cast<uint16_t>(v));
    st16(p + 2, static_cast<uint16_t>(v >> 16));
}
inline void st64(uint8_t *p, uint64_t v)
{
    st32(p, static_cast<uint32_t>(v));
    st32(p + 4, static_cast<uint32_t>(v >> 32));
}

// spec 6, Table 6-1: EventInterval and EventCounter are 26-bit signed
// fields in bits 25:0; bits 31:26 are ignored (implementation choice 16).
inline int32_t field26(uint32_t dword)
{
    uint32_t v = dword & ((uint32_t{1} << LWPCB_EVENT_VALUE_BITS) - 1);
    return static_cast<int32_t>(v ^ 0x02000000u) - 0x02000000;
}
inline uint32_t to_field26(int32_t v)
{
    return static_cast<uint32_t>(v) &
           ((uint32_t{1} << LWPCB_EVENT_VALUE_BITS) - 1);
}

inline bool enabled(const LwpState *s)
{
    return s->cb_addr != 0;
}

// Glossary, "Available": supported (EDX) and turned on in LWP_CFG
inline uint32_t available(const LwpContext *ctx)
{
    return static_cast<uint32_t>(ctx->cfg) & ctx->edx &
           (kEventMask | LWP_FEAT_INT);
}

// LwpCbSize in bytes (Table 3-1)
inline uint32_t cb_size(const LwpContext *ctx)
{
    return (lwp_cpuid_ebx(ctx->edx) & 0xff) * 8;
}

inline unsigned max_event(const LwpContext *ctx)
{
    return (lwp_cpuid_ebx(ctx->edx) >> LWP_CPUID_EBX_MAXEVENTS_SHIFT) & 0xff;
}

// Table 3-1, LwpMinBufferSize, in bytes; at least one record (choice 32)
inline uint32_t min_buffer(const LwpContext *ctx)
{
    uint32_t units =
        (ctx->ecx & LWP_CAP_MIN_BUFFER_MASK) >> LWP_CAP_MIN_BUFFER_SHIFT;
    uint32_t bytes = units * 32 * kRec;
    return bytes < kRec ? kRec : bytes;
}

inline uint8_t core_id(const LwpContext *ctx)
{
    return static_cast<uint8_t>(ctx->cfg >> LWP_CFG_COREID_SHIFT);
}

// Effective address to linear address (spec 5.1 step 5): outside 64-bit
// mode effective and linear addresses are 32 bits wide.
inline uint64_t linear(const LwpContext *ctx, uint64_t ea)
{
    return ctx->long64 ? ea : (ea + ctx->ds_base) & 0xffffffffu;
}

bool range_ok(const LwpContext *ctx, uint64_t ea, uint64_t size);
// A linear range the engine can hand to the glue: canonical and not
// wrapping in long mode (outside it, ranges are split at 4G); any other
// is reported as a fault without calling the glue
bool linear_ok(const LwpContext *ctx, uint64_t addr, uint64_t size);

// Guest memory through the glue's callbacks, split at 4G outside long mode
bool mem_read(const LwpContext *ctx, const LwpMem *mem, uint64_t addr,
              void *buf, uint32_t len, LwpResult *res);
bool mem_probe_write(const LwpContext *ctx, const LwpMem *mem, uint64_t addr,
                     uint32_t len, LwpResult *res);

// The LWPCB without bytes 72-87, which "are never read or written by the
// LWP hardware" (Table 6-1): into @cb, a buffer of kMaxCbSize bytes
bool read_cb(const LwpContext *ctx, const LwpMem *mem, uint64_t cb_addr,
             uint8_t *cb, LwpResult *res);
bool probe_write_cb(const LwpContext *ctx, const LwpMem *mem, uint64_t cb_addr,
                    LwpResult *res);

// A set of guest writes that are all probed before any is made, then made
// in the order they were added (spec 8.3: the record before the head).
class Txn
{
  public:
    void add(uint64_t addr, const void *data, uint32_t len);
    void add32(uint64_t addr, uint32_t v)
    {
        uint8_t b[4];
        st32(b, v);
        add(addr, b, 4);
    }
    void add64(uint64_t addr, uint64_t v)
    {
        uint8_t b[8];
        st64(b, v);
        add(addr, b, 8);
    }
    bool probe(const LwpContext *ctx, const LwpMem *mem, LwpResult *res) const;
    void commit(const LwpContext *ctx, const LwpMem *mem) const;

  private:
    struct Write {
        uint64_t addr;
        uint32_t len;
        uint8_t data[kRec];
    };
    static constexpr int kMax = 2 + LWP_NUM_EVENTS + 2;
    Write w_[kMax];
    int n_ = 0;
};

// Ring buffer and counters (store.cc)
LwpStatus sync(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
               LwpResult *res);
LwpStatus store_record(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                       const uint8_t *rec, LwpResult *res);
LwpStatus store_due(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                    const LwpEventInfo *info, uint32_t events, LwpResult *res);
void reset_counter(LwpState *s, unsigned event);
void record_header(uint8_t *rec, unsigned event, const LwpContext *ctx,
                   uint64_t ip);
uint32_t sanitize_tail(uint32_t tail, uint32_t size);
int32_t min_interval(unsigned event);

} // namespace lwp

#endif // LWP_ENGINE_INTERNAL_HH
