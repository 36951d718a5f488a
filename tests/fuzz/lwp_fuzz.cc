// libFuzzer target for the LWP engine (tcg-helpers/lwp-engine.h).
//
// The input is a CPU context, an LWPCB image placed in fake guest memory,
// an XSAVE area and a sequence of operations (the LWP instructions,
// retired instructions, consumer tail moves, XSAVE/XRSTOR, page permission
// flips ...).  The fake memory aborts when the engine writes a byte that
// probe_write did not accept in the same API call; after every call the
// target checks the engine's invariants and aborts on a violation, so that
// libFuzzer records the input.  tests/fuzz/README.md describes the input
// format; tests/fuzz/run.sh builds and runs it.
//
// Reproduce one input with a trace of every call:
//   LWP_FUZZ_TRACE=1 build/fuzz/lwp_fuzz tests/fuzz/crashes/<file>
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <cinttypes>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "lwp-engine-test.hh"

namespace
{

constexpr uint64_t kPage = 4096;
// The LWPCB image in the input: the fixed part and six event quadwords
constexpr uint32_t kCbImage = LWP_EVENT_OFFSET + 8 * LWP_NUM_EVENTS;
constexpr uint32_t kAllFeatures = 0x8000007f;
constexpr uint32_t kBulldozer = 0x8000000f;
constexpr uint8_t kR = 1;
constexpr uint8_t kW = 2;
constexpr unsigned kMaxOps = 256;

bool g_trace;

// ---------------------------------------------------------------- input

class Input
{
  public:
    Input(const uint8_t *data, size_t size) : data_(data), size_(size)
    {
    }
    bool empty() const
    {
        return pos_ >= size_;
    }
    uint8_t u8()
    {
        return pos_ < size_ ? data_[pos_++] : 0;
    }
    uint16_t u16()
    {
        uint16_t lo = u8();
        uint16_t hi = u8();
        return static_cast<uint16_t>(lo | hi << 8);
    }
    uint32_t u32()
    {
        uint32_t lo = u16();
        uint32_t hi = u16();
        return lo | hi << 16;
    }
    uint64_t u64()
    {
        uint64_t lo = u32();
        uint64_t hi = u32();
        return lo | hi << 32;
    }
    void bytes(uint8_t *out, size_t len)
    {
        for (size_t i = 0; i < len; i++) {
            out[i] = u8();
        }
    }

  private:
    const uint8_t *data_;
    size_t size_;
    size_t pos_ = 0;
};

// ------------------------------------------------------ failure reports

const char *g_op_name = "setup";
unsigned g_op_index;

[[noreturn]] __attribute__((format(printf, 3, 4))) void
fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "\nlwp_fuzz: INVARIANT VIOLATED at %s:%d, op #%u (%s):\n  ",
            file, line, g_op_index, g_op_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    abort();
}

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fail(__FILE__, __LINE__, __VA_ARGS__);                             \
        }                                                                      \
    } while (0)

// ----------------------------------------------------------- guest memory

// [addr, addr + len) modulo 2^64
struct Range {
    uint64_t addr;
    uint64_t len;
    bool contains(uint64_t a) const
    {
        return a - addr < len;
    }
};

// Sparse guest memory: 4 KiB pages with CPL-3 permissions (kR, kW);
// unmapped pages have none.
class Memory
{
  public:
    uint8_t perm(uint64_t addr) const
    {
        auto it = pages_.find(addr / kPage);
        return it == pages_.end() ? 0 : it->second->perm;
    }
    void set_perm(uint64_t addr, uint8_t perm)
    {
        page(addr / kPage).perm = perm;
    }
    // Whether every byte of the range has @need; *@bad: the first that
    // has not
    bool check(uint64_t addr, uint64_t len, uint8_t need,
               uint64_t *bad = nullptr) const
    {
        for (uint64_t i = 0; i < len;) {
            uint64_t a = addr + i;
            if ((perm(a) & need) != need) {
                if (bad) {
                    *bad = a;
                }
                return false;
            }
            i += kPage - a % kPage;
        }
        return true;
    }
    // Harness access, without permission checks; maps what it touches
    void poke(uint64_t addr, const void *src, uint64_t len)
    {
        const uint8_t *p = static_cast<const uint8_t *>(src);
        for (uint64_t i = 0; i < len; i++) {
            uint64_t a = addr + i;
            page(a / kPage).data[a % kPage] = p[i];
        }
    }
    void peek(uint64_t addr, void *dst, uint64_t len) const
    {
        uint8_t *p = static_cast<uint8_t *>(dst);
        for (uint64_t i = 0; i < len; i++) {
            uint64_t a = addr + i;
            auto it = pages_.find(a / kPage);
            p[i] = it == pages_.end() ? 0 : it->second->data[a % kPage];
        }
    }
    uint32_t peek32(uint64_t addr) const
    {
        uint8_t b[4];
        peek(addr, b, 4);
        return b[0] | b[1] << 8 | b[2] << 16 | uint32_t{b[3]} << 24;
    }
    void poke32(uint64_t addr, uint32_t v)
    {
        uint8_t b[4] = {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16),
                        uint8_t(v >> 24)};
        poke(addr, b, 4);
    }
    // Map the pages of a range (keeping the permissions of mapped ones)
    void map(uint64_t addr, uint64_t len, uint8_t perm)
    {
        for (uint64_t i = 0; i < len;) {
            uint64_t a = addr + i;
            auto &p = pages_[a / kPage];
            if (!p) {
                p.reset(new Page());
                p->perm = perm;
            }
            i += kPage - a % kPage;
        }
    }

  private:
    struct Page {
        uint8_t perm = 0;
        uint8_t data[kPage] = {};
    };
    Page &page(uint64_t pn)
    {
        auto &p = pages_[pn];
        if (!p) {
            p.reset(new Page());
        }
        return *p;
    }
    std::map<uint64_t, std::unique_ptr<Page>> pages_;
};

// ----------------------------------------------------------------- harness

struct Harness {
    Memory mem;
    LwpState s;
    LwpContext ctx;
    uint32_t ds_base32;   // DS base outside 64-bit mode
    uint32_t cb_size;     // CbSize in bytes
    uint64_t cb_linear;   // where the input put its LWPCB image
    uint64_t ring_linear; // and its ring buffer
    uint32_t ring_len;
    uint8_t area_in[LWP_XSAVE_SIZE];
    uint8_t area_saved[LWP_XSAVE_SIZE];
    bool saved_valid = false;
    // The API call in progress and its memory accesses
    const char *call = nullptr;
    std::vector<Range> probed;
    std::vector<Range> writes;
    unsigned reads = 0;
    LwpMem lmem = {nullptr, nullptr};
};

// lwp-engine.h: "A range never wraps: outside long mode the engine splits
// it at 4G."
void check_range(const Harness *h, const char *what, uint64_t addr,
                 uint32_t len)
{
    CHECK(h->call, "%s outside an engine call", what);
    CHECK(len == 0 || addr + (len - 1) >= addr,
          "%s: %s of %u bytes at 0x%" PRIx64 " wraps at 2^64", h->call, what,
          len, addr);
    CHECK(h->ctx.lma || addr + len <= uint64_t{1} << 32,
          "%s: %s of %u bytes at 0x%" PRIx64 " outside long mode crosses 4G",
          h->call, what, len, addr);
}

bool mem_read(void *opaque, uint64_t addr, void *buf, uint32_t len)
{
    Harness *h = static_cast<Harness *>(opaque);

    check_range(h, "read", addr, len);
    h->reads++;
    if (!h->mem.check(addr, len, kR)) {
        return false;
    }
    h->mem.peek(addr, buf, len);
    return true;
}

bool mem_probe_write(void *opaque, uint64_t addr, uint32_t len)
{
    Harness *h = static_cast<Harness *>(opaque);

    check_range(h, "probe_write", addr, len);
    if (!h->mem.check(addr, len, kR | kW)) {
        return false;
    }
    h->probed.push_back(Range{addr, len});
    return true;
}

void mem_write(void *opaque, uint64_t addr, const void *buf, uint32_t len)
{
    Harness *h = static_cast<Harness *>(opaque);

    check_range(h, "write", addr, len);
    for (uint32_t i = 0; i < len; i++) {
        uint64_t a = addr + i;
        bool ok = false;
        for (const Range &r : h->probed) {
            ok = ok || r.contains(a);
        }
        CHECK(ok,
              "%s wrote %u bytes at 0x%" PRIx64 ": byte 0x%" PRIx64
              " was not accepted by probe_write in this call",
              h->call, len, addr, a);
    }
    CHECK(h->mem.check(addr, len, kR | kW), "write to a non-writable page");
    h->writes.push_back(Range{addr, len});
    h->mem.poke(addr, buf, len);
}

const LwpMemOps kMemOps = {mem_read, mem_probe_write, mem_write};

bool enabled(const LwpState &s)
{
    return s.cb_addr != 0;
}

uint64_t ea_mask(const Harness &h)
{
    return h.ctx.long64 ? ~uint64_t{0} : 0xffffffffu;
}

// The effective address of a linear one (DS-relative outside 64-bit mode)
uint64_t ea_of(const Harness &h, uint64_t linear)
{
    return (linear - h.ctx.ds_base) & ea_mask(h);
}

void trace_state(const char *what, const LwpState &s)
{
    fprintf(stderr,
            "    %s: cb_addr=0x%" PRIx64 " flags=0x%x base=0x%" PRIx64
            " size=0x%x head=0x%x tail=0x%x thr=0x%x filters=0x%x "
            "reload=0x%x pending=%u ctr=[%d %d %d %d %d %d]\n",
            what, s.cb_addr, s.flags, s.buffer_base, s.buffer_size, s.head,
            s.tail, s.threshold, s.filters, s.reload, s.pending[0],
            s.counter[1], s.counter[2], s.counter[3], s.counter[4],
            s.counter[5], s.counter[6]);
}

void check_state(const Harness &h)
{
    const LwpState &s = h.s;

    if (!enabled(s)) {
        return;
    }
    CHECK(s.buffer_size % 32 == 0 && s.buffer_size >= 32,
          "enabled with buffer_size 0x%x", s.buffer_size);
    CHECK(s.head < s.buffer_size && s.head % 32 == 0,
          "enabled with head 0x%x, buffer_size 0x%x", s.head, s.buffer_size);
}

void begin(Harness &h, const char *name)
{
    h.call = name;
    h.probed.clear();
    h.writes.clear();
    h.reads = 0;
}

// What a call may have written although it returned a fault
enum class FaultWrites {
    kNone,
    kFlush,  // LLWPCB: the flush of the old LWPCB completed
    kStored, // a multi-record store: the records it reports stored
};

// Whether a linear address is in the LWPCB or the ring buffer of @s
// (outside long mode linear addresses wrap at 4G)
bool in_ranges(const Harness &h, const LwpState &s, uint64_t a)
{
    uint64_t mask = h.ctx.lma ? ~uint64_t{0} : 0xffffffffu;
    return enabled(s) && (((a - s.cb_addr) & mask) < h.cb_size ||
                          ((a - s.buffer_base) & mask) < s.buffer_size);
}

// After every engine call that takes memory
void end(Harness &h, const LwpState &pre, LwpStatus st, const LwpResult &res,
         FaultWrites fw = FaultWrites::kNone)
{
    if (g_trace) {
        fprintf(stderr,
                "  %s -> status %d, stored %u full %u int %u fault 0x%" PRIx64
                "%s; %zu probes, %zu writes, %u reads\n",
                h.call, st, res.stored, res.full, res.interrupt, res.fault_addr,
                res.fault_write ? " (write)" : "", h.probed.size(),
                h.writes.size(), h.reads);
        for (const Range &w : h.writes) {
            fprintf(stderr, "    write 0x%" PRIx64 " +%" PRIu64 "\n", w.addr,
                    w.len);
        }
        trace_state("state", h.s);
    }
    CHECK(st == LWP_OK || st == LWP_FAULT_GP || st == LWP_FAULT_PF,
          "%s returned status %d", h.call, st);
    check_state(h);
    bool flush_only = st != LWP_OK && fw == FaultWrites::kFlush &&
                      enabled(pre) && !enabled(h.s);
    for (const Range &w : h.writes) {
        for (uint64_t i = 0; i < w.len; i++) {
            uint64_t a = w.addr + i;
            CHECK(in_ranges(h, pre, a) || (!flush_only && in_ranges(h, h.s, a)),
                  "%s wrote 0x%" PRIx64 " (write 0x%" PRIx64 " +%" PRIu64
                  "), outside the LWPCB [0x%" PRIx64 " +0x%x] and the ring "
                  "[0x%" PRIx64 " +0x%x] before the call and after it "
                  "[0x%" PRIx64 " +0x%x], [0x%" PRIx64 " +0x%x]",
                  h.call, a, w.addr, w.len, pre.cb_addr, h.cb_size,
                  pre.buffer_base, pre.buffer_size, h.s.cb_addr, h.cb_size,
                  h.s.buffer_base, h.s.buffer_size);
        }
    }
    if (st != LWP_OK && !h.writes.empty()) {
        bool allowed = flush_only || res.stored > 0;
        CHECK(allowed,
              "%s returned fault %d after %zu writes (first at 0x%" PRIx64
              " +%" PRIu64 ")",
              h.call, st, h.writes.size(), h.writes[0].addr, h.writes[0].len);
    }
    if (st == LWP_FAULT_PF) {
        uint8_t need = res.fault_write ? kR | kW : kR;
        // a range LWP cannot use at all (non-canonical or wrapping in
        // long mode) is a fault without any access
        uint64_t top = res.fault_addr + res.fault_len - 1;
        unsigned vb = h.ctx.va_bits ? h.ctx.va_bits : 48;
        auto canon = [vb](uint64_t a) {
            int64_t x = static_cast<int64_t>(a << (64 - vb)) >> (64 - vb);
            return static_cast<uint64_t>(x) == a;
        };
        bool unusable = h.ctx.lma && (top < res.fault_addr ||
                                      !canon(res.fault_addr) || !canon(top));
        CHECK(
            res.fault_len > 0 &&
                (unusable || !h.mem.check(res.fault_addr, res.fault_len, need)),
            "%s reports a %s #PF at 0x%" PRIx64 " +%u, which is accessible",
            h.call, res.fault_write ? "write" : "read", res.fault_addr,
            res.fault_len);
    }
    h.call = nullptr;
}

bool same_state(const LwpState &a, const LwpState &b)
{
    return memcmp(&a, &b, offsetof(LwpState, pending) + sizeof a.pending) == 0;
}

// The same state, except that the lazy reload of @pre (lwp_xrstor) may have
// completed: it only re-reads LWPCB fields, which nothing else sees.
bool same_state_but_reload(const LwpState &pre, const LwpState &post)
{
    LwpState p = post;

    if (pre.reload && !post.reload) {
        p.flags = (p.flags & ~LWP_FEAT_INT) | (pre.flags & LWP_FEAT_INT);
        p.random = pre.random;
        p.threshold = pre.threshold;
        p.base_ip = pre.base_ip;
        p.limit_ip = pre.limit_ip;
        p.tail = pre.tail;
        memcpy(p.interval, pre.interval, sizeof p.interval);
        p.reload = pre.reload;
    }
    return same_state(pre, p);
}

const LwpMem *mem_of(const Harness &h)
{
    return &h.lmem;
}

LwpStatus do_sync(Harness &h)
{
    LwpResult res = {};
    LwpState pre = h.s;
    begin(h, "lwp_sync");
    LwpStatus st = lwp_sync(&h.s, &h.ctx, mem_of(h), &res);
    end(h, pre, st, res);
    return st;
}

// Before a CPL-3 step, as the glue does (lwp-engine.h, lwp_needs_sync).
// False: the sync faulted, the glue raises #PF and the step does not run.
bool presync(Harness &h)
{
    if (h.ctx.cpl != 3 || !lwp_needs_sync(&h.s)) {
        return true;
    }
    return do_sync(h) == LWP_OK;
}

// ------------------------------------------------------------- operations

enum Op {
    kOpLlwpcb,
    kOpSlwpcb,
    kOpLwpins,
    kOpLwpval,
    kOpRetire,
    kOpStoreEvents,
    kOpCountdown,
    kOpTail,
    kOpSync,
    kOpXsave,
    kOpXrstor,
    kOpPerm,
    kOpPoke,
    kOpCpl,
    kOpMode,
    kOpCfg,
    kOpCbaddr,
    kOpNextInterval,
    kNumOps,
};

const char *const kOpNames[kNumOps] = {
    "LLWPCB",    "SLWPCB", "LWPINS", "LWPVAL", "retire", "store_events",
    "countdown", "tail",   "sync",   "XSAVE",  "XRSTOR", "perm",
    "poke",      "cpl",    "mode",   "cfg",    "cbaddr", "next_interval",
};

// An instruction address: near the IP filter bounds, small, or raw
uint64_t take_ip(Harness &h, Input &in)
{
    uint8_t b = in.u8();
    int64_t delta = static_cast<int8_t>(in.u8());
    uint64_t ip;

    switch (b & 3) {
    case 0:
        ip = h.s.base_ip + static_cast<uint64_t>(delta);
        break;
    case 1:
        ip = h.s.limit_ip + static_cast<uint64_t>(delta);
        break;
    case 2:
        ip = 0x400000 + (uint64_t{in.u16()} << 4);
        break;
    default:
        ip = in.u64();
        break;
    }
    return ip & ea_mask(h);
}

void take_info(Harness &h, Input &in, LwpEventInfo *info)
{
    memset(info, 0, sizeof *info);
    info->ip = take_ip(h, in);
    info->events = in.u8() & LWP_FEAT_EVENTS_MASK;
    info->cycles = in.u8();
    info->ref_cycles = in.u8();
    uint8_t b = in.u8();
    info->branch_kind = b % 3;
    info->taken = b >> 2 & 1;
    info->predicted = b >> 3 & 1;
    info->predicted_ok = b >> 4 & 1;
    info->fused = b >> 5 & 1;
    info->dme_addr_valid = b >> 6 & 1;
    if (info->events & LWP_FEAT_BRE) {
        info->target = take_ip(h, in);
    }
    if (info->events & LWP_FEAT_DME) {
        uint8_t d = in.u8();
        info->dme_source = d & 7;
        info->dme_latency = in.u16() >> (d >> 3 & 7);
        info->dme_addr = in.u64() & ea_mask(h);
    }
}

void op_llwpcb(Harness &h, Input &in)
{
    uint8_t b = in.u8();
    uint64_t ea;

    switch (b & 3) {
    case 0:
        ea = 0;
        break;
    case 1:
        ea = ea_of(h, h.cb_linear);
        break;
    case 2:
        ea = ea_of(h, h.cb_linear) +
             static_cast<uint64_t>(static_cast<int8_t>(in.u8()));
        break;
    default:
        ea = in.u64();
        break;
    }
    ea &= ea_mask(h);
    if (!presync(h)) {
        return;
    }
    LwpResult res = {};
    LwpState pre = h.s;
    begin(h, "lwp_llwpcb");
    LwpStatus st = lwp_llwpcb(&h.s, &h.ctx, mem_of(h), ea, &res);
    end(h, pre, st, res, FaultWrites::kFlush);
    if (st == LWP_OK && ea == 0) {
        CHECK(!enabled(h.s), "LLWPCB 0 left LWP enabled");
    }
    if (st == LWP_OK && ea != 0) {
        CHECK(enabled(h.s), "LLWPCB 0x%" PRIx64 " succeeded, LWP disabled", ea);
        CHECK(ea_of(h, h.s.cb_addr) == ea,
              "LLWPCB 0x%" PRIx64 " set LWP_CBADDR 0x%" PRIx64, ea,
              h.s.cb_addr);
    }
}

void op_slwpcb(Harness &h)
{
    if (!presync(h)) {
        return;
    }
    LwpResult res = {};
    LwpState pre = h.s;
    uint64_t ea = 0xdead;
    begin(h, "lwp_slwpcb");
    LwpStatus st = lwp_slwpcb(&h.s, &h.ctx, mem_of(h), &ea, &res);
    end(h, pre, st, res);
    CHECK(st != LWP_FAULT_GP, "SLWPCB raised #GP");
    if (st == LWP_OK) {
        uint64_t want = enabled(pre) ? ea_of(h, pre.cb_addr) : 0;
        CHECK((ea & ea_mask(h)) == want,
              "SLWPCB returned 0x%" PRIx64 ", LWPCB at 0x%" PRIx64, ea, want);
        CHECK(h.s.cb_addr == pre.cb_addr, "SLWPCB changed LWP_CBADDR");
    }
}

void op_ins_val(Harness &h, Input &in, bool val)
{
    uint64_t ip = take_ip(h, in);
    uint32_t data1 = in.u32();
    uint64_t data2 = in.u64() & ea_mask(h);
    uint32_t flags = in.u32();

    if (!presync(h)) {
        return;
    }
    LwpResult res = {};
    LwpState pre = h.s;
    LwpStatus st;
    if (val) {
        bool fires = lwp_lwpval_fires(&h.s, &h.ctx, ip);
        CHECK(same_state(pre, h.s), "lwp_lwpval_fires changed the state");
        begin(h, "lwp_lwpval");
        st = lwp_lwpval(&h.s, &h.ctx, mem_of(h), ip, data1, data2, flags, &res);
        end(h, pre, st, res);
        CHECK(!fires || enabled(pre), "LWPVAL fires with LWP disabled");
        if (!lwp_needs_sync(&pre)) {
            CHECK(fires || res.stored == 0,
                  "LWPVAL stored %u records after lwp_lwpval_fires said no",
                  res.stored);
            CHECK(!fires || st != LWP_OK || res.stored == 1,
                  "LWPVAL fired and stored %u records", res.stored);
        }
    } else {
        begin(h, "lwp_lwpins");
        st = lwp_lwpins(&h.s, &h.ctx, mem_of(h), ip, data1, data2, flags, &res);
        end(h, pre, st, res);
        CHECK(enabled(pre) || !res.full, "LWPINS with LWP disabled: CF=1");
    }
    CHECK(st != LWP_FAULT_GP, "%s raised #GP", val ? "LWPVAL" : "LWPINS");
    if (st != LWP_OK && res.stored == 0) {
        CHECK(same_state_but_reload(pre, h.s),
              "%s faulted and changed the state", val ? "LWPVAL" : "LWPINS");
    }
    if (!enabled(pre)) {
        CHECK(st == LWP_OK && h.writes.empty() && res.stored == 0,
              "%s with LWP disabled did something", val ? "LWPVAL" : "LWPINS");
    }
}

void op_retire(Harness &h, Input &in, bool generated)
{
    LwpEventInfo info;
    take_info(h, in, &info);
    if (!presync(h)) {
        return;
    }
    LwpResult res = {};
    LwpState pre = h.s;
    LwpStatus st;
    const char *name = generated ? "lwp_store_events" : "lwp_retire";
    if (!generated) {
        begin(h, "lwp_retire");
        st = lwp_retire(&h.s, &h.ctx, mem_of(h), &info, &res);
    } else {
        // What generated code does: decrement the counted events' counters
        uint32_t events = lwp_counted_events(&h.s, &h.ctx, &info);
        CHECK(same_state(pre, h.s), "lwp_counted_events changed the state");
        CHECK((events & ~info.events) == 0,
              "lwp_counted_events 0x%x, the instruction caused 0x%x", events,
              info.events);
        for (unsigned e = 1; e <= LWP_NUM_EVENTS; e++) {
            if (!(events & 1u << e) || h.s.counter[e] < -(1 << 24)) {
                continue;
            }
            h.s.counter[e] -= e == LWP_EVENT_ID_CNH   ? int32_t(info.cycles)
                              : e == LWP_EVENT_ID_RNH ? int32_t(info.ref_cycles)
                                                      : 1;
        }
        pre = h.s;
        begin(h, "lwp_store_events");
        st = lwp_store_events(&h.s, &h.ctx, mem_of(h), &info, events, &res);
    }
    end(h, pre, st, res, FaultWrites::kStored);
    CHECK(st != LWP_FAULT_GP, "%s raised #GP", name);
    if (!enabled(pre)) {
        CHECK(st == LWP_OK && res.stored == 0,
              "a retired instruction stored with LWP disabled");
    }
}

// Many events went by: generated code brought a counter down to v
void op_countdown(Harness &h, Input &in)
{
    uint8_t b = in.u8();
    int32_t v = static_cast<int32_t>(b >> 3 & 3) - 2;

    for (unsigned e = 1; e <= LWP_NUM_EVENTS; e++) {
        bool pick = (b & 7) == 7 || e == 1u + (b & 7) % LWP_NUM_EVENTS;
        if (pick && (h.s.flags & 1u << e) && h.s.counter[e] > v) {
            h.s.counter[e] = v;
        }
    }
}

uint64_t cur_cb(const Harness &h)
{
    return enabled(h.s) ? h.s.cb_addr : h.cb_linear;
}

// The consumer moves BufferTailOffset
void op_tail(Harness &h, Input &in)
{
    uint8_t b = in.u8();
    uint64_t cb = cur_cb(h);
    uint32_t size = h.s.buffer_size ? h.s.buffer_size : 32;
    uint32_t head = h.mem.peek32(cb + LWPCB_HEAD);
    uint32_t tail;

    switch (b & 3) {
    case 0:
        tail = head;
        break;
    case 1:
        tail = (head + 32 * uint32_t{in.u8()}) % size;
        break;
    case 2:
        tail = in.u32();
        break;
    default:
        tail = h.s.head;
        break;
    }
    h.mem.poke32(cb + LWPCB_TAIL, tail);
}

int32_t clamp26(int32_t v)
{
    const int32_t lo = -(1 << 25);
    const int32_t hi = (1 << 25) - 1;
    return v < lo ? lo : v > hi ? hi : v;
}

void op_xsave(Harness &h, Input &in)
{
    uint8_t b = in.u8();
    uint8_t area[LWP_XSAVE_SIZE];

    memset(area, 0xcc, sizeof area);
    LwpState pre = h.s;
    bool in_use = lwp_xsave(&h.s, area);
    CHECK(same_state(pre, h.s), "XSAVE changed the state");
    CHECK(in_use == enabled(h.s), "XSAVE: in use %d, LWP enabled %d", in_use,
          enabled(h.s));
    if (!in_use) {
        return;
    }
    for (unsigned i = LWP_XS_COUNTER(LWP_NUM_EVENTS) + 4; i < sizeof area;
         i++) {
        CHECK(area[i] == 0, "XSAVE: reserved byte %u is 0x%x", i, area[i]);
    }
    memcpy(h.area_saved, area, sizeof area);
    h.saved_valid = true;
    if ((b & 1) && h.ctx.cpl == 0) {
        // A context switch back to the same thread: the state the area
        // holds comes back
        bool on = lwp_xrstor(&h.s, &h.ctx, area, nullptr);
        check_state(h);
        CHECK(on && h.s.cb_addr == pre.cb_addr && h.s.head == pre.head &&
                  h.s.buffer_base == pre.buffer_base &&
                  h.s.buffer_size == pre.buffer_size,
              "XSAVE+XRSTOR at CPL 0 lost the state: enabled %d, cb 0x%" PRIx64
              " head 0x%x base 0x%" PRIx64 " size 0x%x",
              on, h.s.cb_addr, h.s.head, h.s.buffer_base, h.s.buffer_size);
        CHECK(memcmp(h.s.pending, pre.pending, sizeof pre.pending) == 0 &&
                  h.s.rng == pre.rng,
              "XSAVE+XRSTOR lost the pending record or the generator");
        for (unsigned e = 1; e <= LWP_NUM_EVENTS; e++) {
            if (h.s.flags & pre.flags & 1u << e) {
                // The area holds a 26-bit signed counter (choice 16); any
                // value at or below -2^25 stores the same records
                CHECK(clamp26(h.s.counter[e]) == clamp26(pre.counter[e]),
                      "XSAVE+XRSTOR: counter %u %d -> %d", e, pre.counter[e],
                      h.s.counter[e]);
            }
        }
    }
}

void op_xrstor(Harness &h, Input &in)
{
    uint8_t b = in.u8();
    uint8_t area[LWP_XSAVE_SIZE];
    const uint8_t *p = area;

    switch (b & 3) {
    case 0:
    case 1:
        if (!h.saved_valid) {
            return;
        }
        memcpy(area, h.area_saved, sizeof area);
        if (b & 1) {
            uint8_t off = in.u8() % LWP_XSAVE_SIZE;
            area[off] ^= in.u8();
        }
        break;
    case 2:
        memcpy(area, h.area_in, sizeof area);
        break;
    default:
        p = nullptr;
        break;
    }
    bool on = lwp_xrstor(&h.s, &h.ctx, p, nullptr);
    if (g_trace) {
        fprintf(stderr, "  lwp_xrstor(%s) -> %d\n", p ? "area" : "NULL", on);
        trace_state("state", h.s);
    }
    check_state(h);
    CHECK(on == enabled(h.s), "XRSTOR returned %d, LWP enabled %d", on,
          enabled(h.s));
    if (!p) {
        CHECK(!on, "XRSTOR of the processor-supplied values enabled LWP");
    }
}

// A page of interest changes its CPL-3 permissions
void op_perm(Harness &h, Input &in)
{
    uint8_t b = in.u8();
    static const uint8_t kPerms[] = {kR | kW, kR, 0};
    uint8_t perm = kPerms[(b >> 3) % 3];
    uint64_t a;

    switch (b & 7) {
    case 0:
        a = h.cb_linear;
        break;
    case 1:
        a = h.cb_linear + kCbImage - 1;
        break;
    case 2:
        a = h.ring_linear;
        break;
    case 3:
        a = h.ring_linear + h.ring_len - 1;
        break;
    case 4:
        a = cur_cb(h);
        break;
    case 5:
        a = h.s.buffer_base + h.s.head;
        break;
    case 6:
        a = h.s.buffer_base + kPage * in.u8();
        break;
    default:
        a = cur_cb(h) + h.cb_size - 1;
        break;
    }
    h.mem.set_perm(a, perm);
}

// Software writes a dword of its LWPCB
void op_poke(Harness &h, Input &in)
{
    uint32_t off = in.u8() % (kCbImage / 4) * 4;
    h.mem.poke32(cur_cb(h) + off, in.u32());
}

void op_cfg(Harness &h, Input &in)
{
    uint64_t v = in.u64();
    uint64_t before = h.ctx.cfg;
    if (lwp_cfg_write(v, h.ctx.edx, &h.ctx.cfg) != LWP_OK) {
        CHECK(h.ctx.cfg == before, "WRMSR LWP_CFG #GP changed LWP_CFG");
    }
}

void op_cbaddr(Harness &h, Input &in)
{
    uint8_t b = in.u8();
    uint64_t v = (b & 1) ? in.u64() : 0;
    LwpStatus st = lwp_cbaddr_write(v);
    CHECK((st == LWP_OK) == (v == 0), "WRMSR LWP_CBADDR 0x%" PRIx64 ": %d", v,
          st);
    if (st == LWP_OK) {
        lwp_state_init(&h.s);
        CHECK(!enabled(h.s), "lwp_state_init left LWP enabled");
    }
}

void op_next_interval(Harness &h, Input &in)
{
    unsigned e = 1 + in.u8() % LWP_NUM_EVENTS;
    if (!enabled(h.s) || !(h.s.flags & 1u << e)) {
        return;
    }
    int32_t v = lwp_next_interval(&h.s, e);
    CHECK(v >= 0 && v <= LWPCB_INTERVAL_MAX, "lwp_next_interval(%u) = %d", e,
          v);
}

// ------------------------------------------------------------------ setup

const uint64_t kBases64[] = {
    0x10000,
    0x7fffffff0000,
    0xffff800000000000,
    0x00fffffffff00000,
    0xfffffffffffff000,
    0x100000000,
};
const uint64_t kBases32[] = {0x10000, 0xffff0000, 0x7fff0000, 0};

uint64_t place(const Harness &h, uint8_t sel, uint16_t off)
{
    if (h.ctx.long64) {
        return kBases64[sel % 6] + off;
    }
    return (kBases32[sel % 4] + off) & 0xffffffffu;
}

void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

void setup(Harness &h, Input &in)
{
    uint8_t mode = in.u8();
    uint8_t featsel = in.u8();
    uint32_t edx_raw = in.u32();
    uint32_t ecx_raw = in.u32();
    uint64_t cfg_raw = in.u64();

    lwp_state_init(&h.s);
    memset(&h.ctx, 0, sizeof h.ctx);
    h.ctx.long64 = mode & 1;
    h.ctx.lma = h.ctx.long64 | (featsel >> 3 & 1);
    h.ctx.va_bits = (mode & 2) ? 57 : 48;
    h.ctx.cpl = mode >> 2 & 3;
    h.ctx.ds_flags = mode >> 4;
    switch (featsel & 3) {
    case 0:
        h.ctx.edx = kAllFeatures;
        break;
    case 1:
        h.ctx.edx = kBulldozer;
        break;
    default:
        h.ctx.edx =
            (edx_raw & (LWP_FEAT_EVENTS_MASK | LWP_FEAT_INT)) | LWP_FEAT_AVAIL;
        break;
    }
    h.ctx.ecx = lwp_cpuid_ecx(ecx_raw, h.ctx.edx);
    uint64_t cfg = cfg_raw & ~LWP_CFG_IGNORED_MASK &
                   ~(LWP_CFG_FEATURES_MASK & ~uint64_t{h.ctx.edx});
    if (featsel & 4) {
        cfg = (cfg & ~LWP_CFG_FEATURES_MASK) |
              (h.ctx.edx & LWP_CFG_FEATURES_MASK);
    }
    CHECK(lwp_cfg_write(cfg, h.ctx.edx, &h.ctx.cfg) == LWP_OK,
          "WRMSR LWP_CFG 0x%" PRIx64 " with EDX 0x%x", cfg, h.ctx.edx);
    h.cb_size = (lwp_cpuid_ebx(h.ctx.edx) & 0xff) * 8;

    h.ds_base32 = in.u32();
    h.ctx.ds_limit = in.u32();
    h.ctx.ds_base = h.ctx.long64 ? 0 : h.ds_base32;

    uint8_t cb_sel = in.u8();
    uint16_t cb_off = in.u16();
    uint8_t ring_sel = in.u8();
    uint16_t ring_off = in.u16();
    uint8_t ring_recs = in.u8();
    uint8_t fixup = in.u8();
    uint8_t perms = in.u8();
    uint8_t image[kCbImage];
    in.bytes(image, sizeof image);
    in.bytes(h.area_in, sizeof h.area_in);

    h.cb_linear = place(h, cb_sel, cb_off);
    h.ring_linear = place(h, ring_sel, ring_off);
    h.ring_len = (ring_recs % 128 + 1) * 32u;

    if (fixup & 1) {
        put64(image + LWPCB_BUFFER_BASE, ea_of(h, h.ring_linear));
    }
    if (fixup & 2) {
        uint32_t v = get32(image + LWPCB_BUFFER_SIZE);
        put32(image + LWPCB_BUFFER_SIZE,
              (v & ~LWPCB_BUFFER_SIZE_MASK) | h.ring_len);
    }
    if (fixup & 4) {
        memset(image + 20, 0, 4);
        memset(image + 56, 0, 8);
        memset(image + 68, 0, 4);
        memset(image + LWPCB_SOFTWARE_END, 0,
               LWP_EVENT_OFFSET - LWPCB_SOFTWARE_END);
        put32(image + LWPCB_FILTERS,
              get32(image + LWPCB_FILTERS) & ~LWP_FILTER_RESERVED_MASK);
    }
    if (fixup & 8) {
        for (unsigned n = 1; n <= LWP_NUM_EVENTS; n++) {
            uint8_t *iv = image + LWPCB_INTERVAL(LWP_EVENT_OFFSET, n);
            uint8_t *ct = image + LWPCB_COUNTER(LWP_EVENT_OFFSET, n);
            put32(iv, get32(iv) & 0x3ff);
            put32(ct, get32(ct) & 0x3ff);
        }
    }
    if (fixup & 16) {
        put32(image + LWPCB_HEAD, 0);
        put32(image + LWPCB_TAIL, 0);
    }
    if (fixup & 32) {
        put32(image + LWPCB_FLAGS, LWP_FEAT_EVENTS_MASK | LWP_FEAT_INT);
    }
    if (fixup & 64) {
        uint32_t t = get32(image + LWPCB_THRESHOLD);
        put32(image + LWPCB_THRESHOLD, t % h.ring_len & ~31u);
    }

    h.mem.map(h.ring_linear, h.ring_len, kR | kW);
    h.mem.map(h.cb_linear, kCbImage, kR | kW);
    h.mem.poke(h.cb_linear, image, sizeof image);
    static const uint8_t kPerms[] = {kR | kW, kR, 0, kR | kW};
    if (perms & 3) {
        h.mem.set_perm(h.cb_linear + kCbImage - 1, kPerms[perms & 3]);
    }
    if (perms >> 2 & 3) {
        h.mem.set_perm(h.ring_linear + h.ring_len - 1, kPerms[perms >> 2 & 3]);
    }
    if (g_trace) {
        fprintf(stderr,
                "setup: long64=%u lma=%u va=%u cpl=%u ds=0x%x/0x%x/%x "
                "edx=0x%x ecx=0x%x cfg=0x%" PRIx64 " cb=0x%" PRIx64
                " ring=0x%" PRIx64 " +0x%x fixup=0x%x perms=0x%x\n",
                h.ctx.long64, h.ctx.lma, h.ctx.va_bits, h.ctx.cpl, h.ds_base32,
                h.ctx.ds_limit, h.ctx.ds_flags, h.ctx.edx, h.ctx.ecx, h.ctx.cfg,
                h.cb_linear, h.ring_linear, h.ring_len, fixup, perms);
    }
}

// A long mode OS runs 64-bit and compatibility mode code; the legacy mode
// of setup() stays legacy, and so does the paging mode (va_bits)
void op_mode(Harness &h)
{
    if (h.ctx.lma) {
        h.ctx.long64 ^= 1;
        h.ctx.ds_base = h.ctx.long64 ? 0 : h.ds_base32;
    }
}

void run_op(Harness &h, Input &in, unsigned op)
{
    switch (op) {
    case kOpLlwpcb:
        op_llwpcb(h, in);
        break;
    case kOpSlwpcb:
        op_slwpcb(h);
        break;
    case kOpLwpins:
        op_ins_val(h, in, false);
        break;
    case kOpLwpval:
        op_ins_val(h, in, true);
        break;
    case kOpRetire:
        op_retire(h, in, false);
        break;
    case kOpStoreEvents:
        op_retire(h, in, true);
        break;
    case kOpCountdown:
        op_countdown(h, in);
        break;
    case kOpTail:
        op_tail(h, in);
        break;
    case kOpSync:
        do_sync(h);
        break;
    case kOpXsave:
        op_xsave(h, in);
        break;
    case kOpXrstor:
        op_xrstor(h, in);
        break;
    case kOpPerm:
        op_perm(h, in);
        break;
    case kOpPoke:
        op_poke(h, in);
        break;
    case kOpCpl:
        h.ctx.cpl = in.u8() & 3;
        break;
    case kOpMode:
        op_mode(h);
        break;
    case kOpCfg:
        op_cfg(h, in);
        break;
    case kOpCbaddr:
        op_cbaddr(h, in);
        break;
    default:
        op_next_interval(h, in);
        break;
    }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
    g_trace = getenv("LWP_FUZZ_TRACE") != nullptr;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Input in(data, size);
    std::unique_ptr<Harness> h(new Harness());
    h->lmem.ops = &kMemOps;
    h->lmem.opaque = h.get();

    g_op_name = "setup";
    g_op_index = 0;
    setup(*h, in);
    for (unsigned i = 0; i < kMaxOps && !in.empty(); i++) {
        unsigned op = in.u8() % kNumOps;
        g_op_index = i;
        g_op_name = kOpNames[op];
        if (g_trace) {
            fprintf(stderr, "op #%u %s\n", i, g_op_name);
        }
        run_op(*h, in, op);
        check_state(*h);
    }
    return 0;
}
