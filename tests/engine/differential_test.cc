// Differential test: the engine (tcg-helpers/, through lwp-engine.h only)
// against the naive model of naive_model.h, which was written from the spec
// and docs/implementation-choices.md alone.  Random operation sequences
// from fixed seeds drive both through the same guest memory layout; after
// every engine call the test compares the status, the LwpResult, the XSAVE
// image, lwp_needs_sync, the filters and all of guest memory.
//
// A #PF is compared as the guest sees it: the first inaccessible byte of
// the range the engine reports (fault_addr, fault_len), and the access
// type.  The engine's memory is wrapped so that it asserts the LwpMemOps
// contract: every write inside a range probe_write accepted in the same
// call, no write after a failed access, no range that wraps.
//
// The sequences stay inside what the rows define: like the glue, they call
// lwp_sync before every CPL-3 step that needs it; the consumer only makes
// legal tail moves; a running LWPCB is never rewritten; a forged XSAVE area
// has reserved bytes 0 and a SavedEventRecord only for an event that stays
// enabled with a negative counter, as XSAVE makes them.
//
// Reproduce one sequence with LWP_DIFF_SEED=<seed> (prints its trace);
// LWP_DIFF_SEQUENCES and LWP_DIFF_OPS change the size of the run, and
// LWP_DIFF_SUMMARY=1 prints one line per mismatch and what was exercised.
//
// The DiffModel tests check the model itself against values worked out by
// hand from the spec, so that the differential test does not merely trust
// it.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lwp-engine-test.hh"
#include "naive_model.h"

namespace
{

using naive::Cpu;
using naive::GuestMemory;
using naive::Instruction;
using naive::Model;
using naive::Outcome;

std::string fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char *f, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof(buf), f, ap);
    va_end(ap);
    return buf;
}

uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, nullptr, 0) : dflt;
}

// What the sequences exercised, by name (printed at the end of the run)
std::map<std::string, uint64_t> g_stats;

void count(const std::string &what)
{
    g_stats[what]++;
}

// ---------------------------------------------------------------------------
// The engine's view of a GuestMemory, checking its side of the LwpMemOps
// contract: writes only inside ranges probe_write accepted in the same call,
// nothing written after a failed access, no range that wraps.

struct CheckedMem {
    GuestMemory *mem = nullptr;
    bool long_mode = true;
    std::vector<std::pair<uint64_t, uint64_t>> accepted; // [begin, end)
    bool failed = false;
    uint64_t faults = 0;
    std::string violation;

    void begin(bool lm)
    {
        long_mode = lm;
        accepted.clear();
        failed = false;
        violation.clear();
    }
    void complain(const std::string &s)
    {
        if (violation.empty()) {
            violation = s;
        }
    }
    bool range_ok(const char *what, uint64_t addr, uint32_t len)
    {
        uint64_t limit = long_mode ? 0 : (uint64_t(1) << 32);
        if (len == 0) {
            return true;
        }
        if ((long_mode && addr + len - 1 < addr) ||
            (!long_mode && addr + len > limit)) {
            complain(fmt("%s(%#" PRIx64 ", %u) wraps", what, addr, len));
            return false;
        }
        return true;
    }
};

bool cm_read(void *opaque, uint64_t addr, void *buf, uint32_t len)
{
    auto *m = static_cast<CheckedMem *>(opaque);
    m->range_ok("read", addr, len);
    for (uint32_t i = 0; i < len; i++) {
        if (!m->mem->can_read(addr + i)) {
            m->faults++;
            m->failed = true;
            return false;
        }
    }
    for (uint32_t i = 0; i < len; i++) {
        static_cast<uint8_t *>(buf)[i] = m->mem->get(addr + i);
    }
    return true;
}

bool cm_probe(void *opaque, uint64_t addr, uint32_t len)
{
    auto *m = static_cast<CheckedMem *>(opaque);
    m->range_ok("probe_write", addr, len);
    for (uint32_t i = 0; i < len; i++) {
        if (!m->mem->can_write(addr + i)) {
            m->faults++;
            m->failed = true;
            return false;
        }
    }
    m->accepted.emplace_back(addr, addr + len);
    return true;
}

void cm_write(void *opaque, uint64_t addr, const void *buf, uint32_t len)
{
    auto *m = static_cast<CheckedMem *>(opaque);
    m->range_ok("write", addr, len);
    if (m->failed) {
        m->complain(
            fmt("write(%#" PRIx64 ", %u) after a failed access", addr, len));
    }
    for (uint32_t i = 0; i < len; i++) {
        uint64_t a = addr + i;
        bool covered = false;
        for (const auto &r : m->accepted) {
            covered = covered || (a >= r.first && a < r.second);
        }
        if (!covered) {
            m->complain(fmt("write(%#" PRIx64 ", %u): byte %#" PRIx64
                            " was not probed in this call",
                            addr, len, a));
            return;
        }
        if (!m->mem->can_write(a)) {
            m->complain(fmt("write to read-only %#" PRIx64, a));
            return;
        }
    }
    for (uint32_t i = 0; i < len; i++) {
        m->mem->put(addr + i, static_cast<const uint8_t *>(buf)[i]);
    }
    if (addr + len == (uint64_t(1) << 32) ||
        (addr > 0xffffffffu && addr < (uint64_t(1) << 32) + 32)) {
        count("engine writes ending at or starting just past 4G");
    }
}

const LwpMemOps kCheckedOps = {cm_read, cm_probe, cm_write};

// ---------------------------------------------------------------------------
// Conversions between the engine's types and the model's

Cpu to_cpu(const LwpContext &c)
{
    Cpu cpu;
    cpu.lwp_cfg = c.cfg;
    cpu.cpuid_edx = c.edx;
    cpu.cpuid_ecx = c.ecx;
    cpu.mode64 = c.long64;
    cpu.long_mode = c.lma;
    cpu.va_bits = c.va_bits;
    cpu.cpl = c.cpl;
    cpu.ds_base = c.ds_base;
    cpu.ds_limit = c.ds_limit;
    cpu.ds_usable = c.ds_flags & LWP_DS_USABLE;
    cpu.ds_writable = c.ds_flags & LWP_DS_WRITABLE;
    cpu.ds_expand_down = c.ds_flags & LWP_DS_EXPAND_DOWN;
    cpu.ds_big = c.ds_flags & LWP_DS_BIG;
    return cpu;
}

Instruction to_insn(const LwpEventInfo &e)
{
    Instruction i;
    i.ip = e.ip;
    i.events = e.events;
    i.core_clocks = e.cycles;
    i.ref_clocks = e.ref_cycles;
    i.next_ip = e.target;
    i.kind = e.branch_kind == LWP_BRANCH_COND  ? Instruction::kConditional
             : e.branch_kind == LWP_BRANCH_REL ? Instruction::kRelative
                                               : Instruction::kIndirect;
    i.taken = e.taken;
    i.prediction_known = e.predicted;
    i.predicted_correctly = e.predicted_ok;
    i.fused = e.fused;
    i.data_source = e.dme_source;
    i.address_known = e.dme_addr_valid;
    i.latency = e.dme_latency;
    i.data_address = e.dme_addr;
    return i;
}

const char *kind_name(int k)
{
    return k == 0 ? "OK" : k == 1 ? "#GP" : k == 2 ? "#PF" : "?";
}

std::string xsave_field(unsigned off)
{
    if (off < 8) {
        return "LWPCBAddress";
    } else if (off < 12) {
        return "Flags";
    } else if (off < 16) {
        return "BufferHeadOffset";
    } else if (off < 24) {
        return "BufferBase";
    } else if (off < 28) {
        return "BufferSize";
    } else if (off < 32) {
        return "Filters";
    } else if (off < 56) {
        return fmt("SavedEventRecord+%u", off - 32);
    } else if (off < 64) {
        return "rng (SavedEventRecord 24-31)";
    } else if (off < 88) {
        return fmt("EventCounter%u", (off - 64) / 4 + 1);
    }
    return "reserved";
}

std::string lwpcb_field(uint64_t off)
{
    static const struct {
        unsigned begin, end;
        const char *name;
    } f[] = {{0, 4, "Flags"},          {4, 8, "BufferSize"},
             {8, 16, "BufferBase"},    {16, 20, "BufferHeadOffset"},
             {24, 32, "MissedEvents"}, {32, 36, "Threshold"},
             {36, 40, "Filters"},      {40, 48, "BaseIP"},
             {48, 56, "LimitIP"},      {64, 68, "BufferTailOffset"},
             {72, 88, "software"}};
    for (const auto &x : f) {
        if (off >= x.begin && off < x.end) {
            return x.name;
        }
    }
    if (off >= 128 && off < 128 + 48) {
        unsigned n = unsigned(off - 128) / 8 + 1;
        return fmt("%s%u",
                   (off - 128) % 8 < 4 ? "EventInterval" : "EventCounter", n);
    }
    return "reserved";
}

// ---------------------------------------------------------------------------
// One random sequence

struct Rng {
    std::mt19937_64 g;
    explicit Rng(uint64_t seed) : g(seed)
    {
    }
    uint64_t next()
    {
        return g();
    }
    uint64_t below(uint64_t n)
    {
        return n ? g() % n : 0;
    }
    bool chance(unsigned percent)
    {
        return below(100) < percent;
    }
    uint64_t range(uint64_t lo, uint64_t hi)
    {
        return lo + below(hi - lo + 1);
    }
};

class Sequence
{
  public:
    Sequence(uint64_t seed, bool trace);
    // false: a mismatch, described in failure
    bool run(unsigned ops);
    std::string failure;
    uint64_t calls = 0;
    uint64_t records = 0;
    uint64_t faults = 0;
    uint64_t gps = 0;

  private:
    // the world
    void make_cpu();
    void make_layout();
    void map_both(uint64_t lin, uint64_t len);
    void put32(uint64_t lin, uint32_t v);
    void put64(uint64_t lin, uint64_t v);
    void put8(uint64_t lin, uint8_t v);
    uint64_t lin(uint64_t ea) const;
    uint32_t cb_bytes() const;
    uint64_t random_cfg();
    uint64_t random_ip();
    void write_lwpcb(unsigned slot, bool allow_bad);
    LwpEventInfo random_info();
    void set_access(uint64_t page, bool r, bool w);

    // operations; false on a mismatch
    bool step();
    bool step(unsigned r);
    bool op_run();
    bool op_lwpins();
    bool op_lwpval();
    bool op_consume();
    bool op_slwpcb();
    bool op_llwpcb();
    bool op_xsave();
    bool op_cfg();
    bool op_flip();
    bool op_fix();
    bool op_ds();
    bool op_kill();
    bool op_next_interval();
    bool op_sync();
    bool before_cpl3(bool *ok);
    bool do_retire(const LwpEventInfo &info, bool *ok);
    void random_operands(uint32_t *data1, uint64_t *data2, uint32_t *imm);
    bool retire_lwp_insn(uint64_t ip, unsigned cnh_chance);
    bool do_xrstor(const uint8_t *area, unsigned cpl, const char *why);

    // comparison
    void begin_call();
    bool check(const std::string &call, LwpStatus st, const LwpResult &r,
               const Outcome &o);
    bool check_state(const std::string &call);
    bool mismatch(const std::string &call, const std::string &diff);
    std::string where(uint64_t lin) const;
    void log(const std::string &s);

    uint64_t seed_;
    bool trace_;
    Rng rng_;
    unsigned op_ = 0;
    std::vector<std::string> trail_;

    GuestMemory mm_; // the model's memory
    GuestMemory em_; // the engine's memory
    CheckedMem cm_;
    LwpMem lwpmem_;
    LwpState es_;
    Model model_;
    LwpContext ctx_;

    // layout, at effective addresses (64-bit mode: linear)
    uint64_t region_ = 0;
    std::vector<uint64_t> slot_ea_;
    std::vector<uint64_t> ring_ea_;
    std::vector<uint32_t> ring_len_;
    uint64_t unmapped_ea_ = 0;
    uint64_t ip_base_ = 0;
    std::vector<std::vector<uint8_t>> stash_;
    LwpContext ds0_; // DS as the layout made it
};

Sequence::Sequence(uint64_t seed, bool trace)
    : seed_(seed), trace_(trace), rng_(seed * 0x9E3779B97F4A7C15ull + 1),
      model_(mm_)
{
    cm_.mem = &em_;
    lwpmem_.ops = &kCheckedOps;
    lwpmem_.opaque = &cm_;
    lwp_state_init(&es_);
    std::memset(&ctx_, 0, sizeof(ctx_));
    make_cpu();
    make_layout();
}

void Sequence::log(const std::string &s)
{
    if (trace_) {
        printf("  [op %u] %s\n", op_, s.c_str());
    }
}

uint64_t Sequence::random_cfg()
{
    uint64_t features = 0;
    for (unsigned b = 1; b < 32; b++) {
        if ((ctx_.edx >> b) & 1 && rng_.chance(80)) {
            features |= 1u << b;
        }
    }
    return features | rng_.below(256) << 32 | rng_.below(256) << 40;
}

void Sequence::make_cpu()
{
    uint32_t edx = LWP_FEAT_AVAIL;
    for (unsigned id = 1; id <= 6; id++) {
        if (rng_.chance(70)) {
            edx |= 1u << id;
        }
    }
    if (rng_.chance(60)) {
        edx |= LWP_FEAT_INT;
    }
    uint32_t caps = 0;
    if (rng_.chance(60)) {
        caps |= LWP_CAP_IP_FILTERING;
    }
    if (rng_.chance(50)) {
        caps |= LWP_CAP_BRANCH_PREDICTION;
    }
    caps |= uint32_t(rng_.range(10, 31));
    caps |= uint32_t(rng_.range(0, 4)) << LWP_CAP_LATENCY_RND_SHIFT;
    if (rng_.chance(60)) {
        caps |= LWP_CAP_DATA_ADDRESS;
    }
    switch (rng_.below(3)) {
    case 0:
        caps |= LWP_CAP_CACHE_LEVELS;
        break;
    case 1:
        caps |= LWP_CAP_CACHE_LATENCY;
        break;
    default:
        caps |= LWP_CAP_CACHE_LEVELS | LWP_CAP_CACHE_LATENCY;
    }
    ctx_.edx = edx;
    ctx_.ecx = lwp_cpuid_ecx(caps, edx);
    ctx_.cfg = random_cfg();
    ctx_.cpl = 3;
    unsigned mode = unsigned(rng_.below(100));
    ctx_.long64 = mode < 55;
    ctx_.lma = mode < 70;
    ctx_.va_bits = rng_.chance(25) ? 57 : 48;
    ctx_.ds_flags = LWP_DS_USABLE | LWP_DS_WRITABLE;
    ctx_.ds_limit = 0xffffffffu;
    ctx_.ds_base = 0;
}

uint64_t Sequence::lin(uint64_t ea) const
{
    if (ctx_.long64) {
        return ea;
    }
    return (ctx_.ds_base + (ea & 0xffffffffu)) & 0xffffffffu;
}

uint32_t Sequence::cb_bytes() const
{
    uint32_t ebx = lwp_cpuid_ebx(ctx_.edx);
    return (ebx & 0xff) * 8;
}

void Sequence::map_both(uint64_t l, uint64_t len)
{
    for (uint64_t i = 0; i < len; i += GuestMemory::kPageSize) {
        uint64_t a = ctx_.lma ? l + i : (l + i) & 0xffffffffu;
        mm_.map(a, 1);
        em_.map(a, 1);
    }
    uint64_t last = ctx_.lma ? l + len - 1 : (l + len - 1) & 0xffffffffu;
    mm_.map(last, 1);
    em_.map(last, 1);
}

void Sequence::put8(uint64_t l, uint8_t v)
{
    if (!ctx_.lma) {
        l &= 0xffffffffu;
    }
    mm_.put(l, v);
    em_.put(l, v);
}

void Sequence::put32(uint64_t l, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        put8(l + i, uint8_t(v >> (8 * i)));
    }
}

void Sequence::put64(uint64_t l, uint64_t v)
{
    put32(l, uint32_t(v));
    put32(l + 4, uint32_t(v >> 32));
}

void Sequence::make_layout()
{
    bool straddle = false;
    if (ctx_.long64) {
        unsigned r = unsigned(rng_.below(100));
        if (r < 45) {
            region_ = 0x400000 + rng_.below(256) * 0x10000;
        } else if (r < 60) {
            region_ = (uint64_t(1) << 47) - 0xe000; // ends near the hole
        } else if (r < 75) {
            region_ = 0xffff800000000000ull + rng_.below(16) * 0x100000;
        } else if (r < 85 && ctx_.va_bits == 57) {
            region_ = (uint64_t(1) << 47) + rng_.below(1 << 20) * 0x1000;
        } else {
            region_ = 0x00007f0000000000ull + rng_.below(1 << 20) * 0x1000;
        }
        ip_base_ = rng_.chance(80) ? 0x401000 : 0x00007f1234560000ull;
    } else {
        unsigned r = unsigned(rng_.below(100));
        if (r < 30) {
            ctx_.ds_base = 0;
        } else if (r < 60) {
            ctx_.ds_base = rng_.range(0x10, 0x7fff) * 0x10000;
        } else if (r < 75) {
            ctx_.ds_base = rng_.range(0x100000, 0x7fffffff);
        } else if (r < 85) {
            ctx_.ds_base = 0xffff0000u + rng_.below(0x8000); // wraps at 4G
        } else {
            straddle = true; // 4G inside ring 0 or LWPCB slot 0: below
        }
        bool small = rng_.chance(60);
        region_ = small ? 0x1000 * rng_.range(1, 3)
                        : 0x400000 + rng_.below(64) * 0x10000;
        unsigned d = unsigned(rng_.below(100));
        if (d < 50) {
            ctx_.ds_limit = 0xffffffffu;
        } else if (d < 80) {
            ctx_.ds_limit = uint32_t(region_ + 0xc000 + rng_.below(0x1000));
        } else if (d < 90) {
            ctx_.ds_limit = uint32_t(region_ + rng_.range(0x3000, 0xb000));
        } else {
            ctx_.ds_flags |= LWP_DS_EXPAND_DOWN;
            ctx_.ds_limit = uint32_t(region_ - 1 - rng_.below(region_ / 2));
            if (!small || rng_.chance(50)) {
                ctx_.ds_flags |= LWP_DS_BIG;
            }
        }
        ip_base_ = 0x08048000;
    }
    const uint32_t cbsize = cb_bytes();
    for (unsigned i = 0; i < 3; i++) {
        uint64_t page = region_ + 0x2000 * i;
        uint64_t off;
        unsigned r = unsigned(rng_.below(100));
        if (r < 30) {
            off = 0;
        } else if (r < 70) {
            off = 64 * rng_.below(48);
        } else if (r < 85) {
            off = 0x1000 - 8 * rng_.range(1, 24); // straddles a page
        } else {
            off = rng_.below(0x1000 - cbsize);
        }
        slot_ea_.push_back(page + off);
    }
    for (unsigned j = 0; j < 2; j++) {
        uint64_t base = region_ + 0x6000 + 0x3000 * j;
        uint64_t off = rng_.chance(50) ? 0 : 32 * rng_.below(40);
        if (rng_.chance(10)) {
            off = rng_.below(64);
        }
        uint32_t len = uint32_t(1024 + 32 * rng_.below(97));
        ring_ea_.push_back(base + off);
        ring_len_.push_back(len);
    }
    if (straddle) { // linear 4G (legacy: 0) inside a record or the LWPCB
        uint64_t at = rng_.chance(70) ? ring_ea_[0] + 32 * rng_.range(1, 31) +
                                            (rng_.chance(50) ? 16 : 0)
                                      : slot_ea_[0] + rng_.range(1, cbsize - 1);
        ctx_.ds_base = (uint64_t(1) << 32) - at;
        count(ctx_.lma ? "layouts across 4G, compatibility mode"
                       : "layouts across 4G, legacy mode");
    }
    for (unsigned i = 0; i < 3; i++) {
        map_both(lin(region_ + 0x2000 * i), 0x2000);
    }
    for (unsigned j = 0; j < 2; j++) {
        uint64_t base = region_ + 0x6000 + 0x3000 * j;
        map_both(lin(base), ring_ea_[j] - base + ring_len_[j]);
    }
    unmapped_ea_ = region_ + 0x10000 + rng_.below(0x1000);
    ds0_ = ctx_;
    for (unsigned i = 0; i < 3; i++) {
        write_lwpcb(i, false);
    }
}

uint64_t Sequence::random_ip()
{
    if (rng_.chance(92)) {
        return ip_base_ + rng_.below(0x400);
    }
    return ctx_.long64 ? rng_.next() : rng_.next() & 0xffffffffu;
}

// A new LWPCB in a slot: mostly valid, sometimes with one defect
void Sequence::write_lwpcb(unsigned slot, bool allow_bad)
{
    const uint64_t cb = lin(slot_ea_[slot]);
    const uint32_t cbsize = cb_bytes();
    const unsigned ring = unsigned(rng_.below(ring_ea_.size()));
    const uint32_t len = ring_len_[ring];
    for (uint32_t i = 0; i < cbsize; i++) {
        put8(cb + i, 0);
    }
    uint32_t flags = 0;
    for (unsigned id = 1; id <= LWP_NUM_EVENTS; id++) {
        if (rng_.chance(75)) {
            flags |= 1u << id;
        }
    }
    if (rng_.chance(60)) {
        flags |= LWP_FEAT_INT;
    }
    if (rng_.chance(10)) {
        flags |= uint32_t(rng_.next()) & 0x7fffff81u; // reserved bits
    }
    uint32_t size = len;
    if (rng_.chance(15)) {
        size = len - uint32_t(rng_.below(32)); // not a multiple of 32
    }
    uint32_t random = 0;
    unsigned r = unsigned(rng_.below(100));
    if (r >= 55) {
        random =
            r < 90 ? uint32_t(rng_.range(1, 4)) : uint32_t(rng_.range(5, 15));
    }
    uint32_t rounded = size & ~31u;
    auto offset = [&]() -> uint32_t {
        unsigned k = unsigned(rng_.below(100));
        if (k < 40) {
            return 0;
        } else if (k < 75) {
            return uint32_t(32 * rng_.below(rounded / 32));
        } else if (k < 85) {
            return uint32_t(rng_.below(rounded));
        } else if (k < 92) {
            return rounded - uint32_t(rng_.range(1, 31));
        }
        return uint32_t(rng_.range(rounded, rounded + 100));
    };
    uint32_t head = offset();
    uint32_t tail = rng_.chance(50) ? head : offset();
    uint32_t threshold;
    unsigned t = unsigned(rng_.below(100));
    if (t < 15) {
        threshold = 0;
    } else if (t < 75) {
        threshold = uint32_t(32 * rng_.below(rounded / 32 + 1));
    } else if (t < 90) {
        threshold = uint32_t(rng_.range(rounded - 32, rounded + 64));
    } else {
        threshold = uint32_t(rng_.below(rounded));
    }
    uint32_t filters = uint32_t(rng_.next()) & ~LWP_FILTER_RESERVED_MASK;
    filters &= ~(rng_.chance(70) ? 0x3e000000u : 0u); // mostly no branch filter
    if (rng_.chance(50)) {
        filters &= ~(LWP_FILTER_IPF | LWP_FILTER_IPI);
    }
    if (rng_.chance(40)) {
        filters &= ~LWP_FILTER_MIN_LATENCY_MASK;
    }
    uint64_t base_ip = ip_base_ + rng_.below(0x300);
    uint64_t limit_ip = base_ip + rng_.below(0x200);
    if (rng_.chance(10)) {
        std::swap(base_ip, limit_ip);
    }
    put32(cb + LWPCB_FLAGS, flags);
    put32(cb + LWPCB_BUFFER_SIZE, size | random << 28);
    put64(cb + LWPCB_BUFFER_BASE, ring_ea_[ring]);
    put32(cb + LWPCB_HEAD, head);
    put64(cb + LWPCB_MISSED, rng_.chance(70) ? rng_.below(100) : rng_.next());
    put32(cb + LWPCB_THRESHOLD, threshold);
    put32(cb + LWPCB_FILTERS, filters);
    put64(cb + LWPCB_BASE_IP, base_ip);
    put64(cb + LWPCB_LIMIT_IP, limit_ip);
    put32(cb + LWPCB_TAIL, tail);
    for (unsigned i = LWPCB_SOFTWARE; i < LWPCB_SOFTWARE_END; i++) {
        put8(cb + i, uint8_t(rng_.next()));
    }
    for (unsigned id = 1; 8 * id + LWP_EVENT_OFFSET <= cbsize; id++) {
        int32_t interval;
        unsigned k = unsigned(rng_.below(100));
        if (id == 1) {
            interval = k < 80   ? int32_t(rng_.below(6))
                       : k < 90 ? -int32_t(rng_.range(1, 100))
                                : int32_t(rng_.below(0x2000000));
        } else if (k < 50) {
            interval = int32_t(rng_.range(0xff, k < 30 ? 0x120 : 0x400));
        } else if (k < 70) {
            interval = int32_t(rng_.range(0, 0xfe)) - (k < 60 ? 0x200 : 0);
        } else if (k < 95) {
            interval = int32_t(rng_.range(0x400, 0x4000));
        } else {
            interval = int32_t(rng_.range(0x4000, 0x1ffffff));
        }
        int32_t counter;
        k = unsigned(rng_.below(100));
        if (k < 70) {
            counter = int32_t(rng_.below(40));
        } else if (k < 80) {
            counter = -int32_t(rng_.range(1, 0x2000000));
        } else {
            counter = int32_t(rng_.below(0x2000000));
        }
        uint32_t iw = uint32_t(interval) & 0x03ffffffu;
        uint32_t cw = uint32_t(counter) & 0x03ffffffu;
        if (rng_.chance(10)) {
            iw |= uint32_t(rng_.next()) & 0xfc000000u;
        }
        if (rng_.chance(10)) {
            cw |= uint32_t(rng_.next()) & 0xfc000000u;
        }
        put32(cb + LWPCB_INTERVAL(LWP_EVENT_OFFSET, id), iw);
        put32(cb + LWPCB_COUNTER(LWP_EVENT_OFFSET, id), cw);
    }
    if (!allow_bad || !rng_.chance(12)) {
        log(fmt("write LWPCB slot %u at %#" PRIx64 ": ring %u flags %#x size "
                "%#x random %u head %#x tail %#x thr %#x filters %#x",
                slot, cb, ring, flags, size, random, head, tail, threshold,
                filters));
        return;
    }
    // one defect (row 14)
    std::string what;
    switch (rng_.below(6)) {
    case 0: {
        static const unsigned rsvd[] = {20, 21, 22, 23, 56,  60,
                                        63, 68, 71, 88, 100, 127};
        unsigned b = rsvd[rng_.below(sizeof(rsvd) / sizeof(rsvd[0]))];
        put8(cb + b, uint8_t(rng_.range(1, 255)));
        what = fmt("reserved byte %u", b);
        break;
    }
    case 1:
        put32(cb + LWPCB_FILTERS, filters | (1u << rng_.range(13, 24)));
        what = "reserved filter bit";
        break;
    case 2:
        put32(cb + LWPCB_BUFFER_SIZE,
              uint32_t(rng_.below(1024)) | random << 28);
        what = "small ring";
        break;
    case 3:
        if (ctx_.long64) {
            put64(cb + LWPCB_BUFFER_BASE, (uint64_t(1) << 47) - 0x200);
        } else {
            put64(cb + LWPCB_BUFFER_BASE, ring_ea_[ring] | uint64_t(1) << 32);
        }
        what = "ring base";
        break;
    case 4:
        if (ctx_.long64) {
            put64(cb + LWPCB_BUFFER_BASE,
                  ring_ea_[ring] ^ (uint64_t(1) << rng_.range(47, 62)));
        } else {
            put64(cb + LWPCB_BUFFER_BASE, 0xffffffffu - rng_.below(len));
        }
        what = "ring beyond limit";
        break;
    default:
        put32(cb + LWPCB_BUFFER_SIZE, 0x0ffffff0u | random << 28);
        what = "huge ring";
        break;
    }
    log(fmt("write LWPCB slot %u at %#" PRIx64 " with defect: %s", slot, cb,
            what.c_str()));
}

LwpEventInfo Sequence::random_info()
{
    LwpEventInfo e;
    std::memset(&e, 0, sizeof(e));
    e.ip = random_ip();
    if (rng_.chance(85)) {
        e.events |= LWP_FEAT_IRE;
    }
    if (rng_.chance(30)) {
        e.events |= LWP_FEAT_BRE;
        e.branch_kind = uint8_t(rng_.below(3));
        e.taken = e.branch_kind != LWP_BRANCH_COND || rng_.chance(50);
        e.predicted = rng_.chance(60);
        e.predicted_ok = e.predicted &&
                         (e.branch_kind != LWP_BRANCH_COND || rng_.chance(70));
        e.fused = e.branch_kind == LWP_BRANCH_COND && rng_.chance(20);
        e.target = random_ip();
    }
    if (rng_.chance(20)) {
        e.events |= LWP_FEAT_DME;
        e.dme_source = uint8_t(rng_.below(8));
        e.dme_addr_valid = rng_.chance(70);
        e.dme_latency = rng_.chance(90) ? uint32_t(rng_.below(3000))
                                        : uint32_t(rng_.next());
        e.dme_addr = ctx_.long64 ? rng_.next() : rng_.next() & 0xffffffffu;
    }
    if (rng_.chance(60)) {
        e.events |= LWP_FEAT_CNH;
        e.cycles = rng_.chance(85) ? uint32_t(rng_.range(1, 12))
                                   : uint32_t(rng_.range(13, 700));
    }
    if (rng_.chance(40)) {
        e.events |= LWP_FEAT_RNH;
        e.ref_cycles = rng_.chance(85) ? uint32_t(rng_.range(1, 12))
                                       : uint32_t(rng_.range(13, 700));
    }
    return e;
}

void Sequence::set_access(uint64_t page, bool r, bool w)
{
    mm_.set_access(page, r, w);
    em_.set_access(page, r, w);
}

// ---------------------------------------------------------------------------
// Comparison

std::string Sequence::where(uint64_t a) const
{
    uint32_t cbsize = cb_bytes();
    for (unsigned i = 0; i < slot_ea_.size(); i++) {
        uint64_t cb = lin(slot_ea_[i]);
        if (a >= cb && a < cb + cbsize) {
            return fmt("LWPCB slot %u +%#" PRIx64 " (%s)", i, a - cb,
                       lwpcb_field(a - cb).c_str());
        }
    }
    for (unsigned j = 0; j < ring_ea_.size(); j++) {
        uint64_t r = lin(ring_ea_[j]);
        if (a >= r && a < r + ring_len_[j]) {
            return fmt("ring %u +%#" PRIx64 " (record %" PRIu64 " byte %" PRIu64
                       ")",
                       j, a - r, (a - r) / 32, (a - r) % 32);
        }
    }
    return "elsewhere";
}

void Sequence::begin_call()
{
    cm_.begin(ctx_.lma);
    calls++;
}

bool Sequence::mismatch(const std::string &call, const std::string &diff)
{
    failure = fmt("seed %" PRIu64 ", op %u: %s\n", seed_, op_, call.c_str()) +
              diff +
              fmt("reproduce: LWP_DIFF_SEED=%" PRIu64
                  " build/engine/tests/engine/engine-tests "
                  "--gtest_filter=Diff.RandomSequences\n",
                  seed_);
    return false;
}

bool Sequence::check(const std::string &call, LwpStatus st, const LwpResult &r,
                     const Outcome &o)
{
    std::string d;
    if (int(st) != int(o.kind)) {
        d += fmt("  status: engine %s, model %s\n", kind_name(st),
                 kind_name(o.kind));
        if (o.kind == Outcome::kPf) {
            d += fmt("  model: %s fault at %#" PRIx64 " (%s), access %#" PRIx64
                     "+%u\n",
                     o.fault_write ? "write" : "read", o.fault_byte,
                     where(o.fault_byte).c_str(), o.fault_start, o.fault_len);
        }
        if (st == LWP_FAULT_PF) {
            d += fmt("  engine: %s fault range %#" PRIx64 "+%u (%s)\n",
                     r.fault_write ? "write" : "read", r.fault_addr,
                     r.fault_len, where(r.fault_addr).c_str());
        }
    } else if (st == LWP_FAULT_PF) {
        // the guest-visible fault: the first inaccessible byte of the range
        uint64_t byte = 0;
        bool found = false;
        for (uint32_t i = 0; i < r.fault_len && !found; i++) {
            uint64_t a = r.fault_addr + i;
            if (!ctx_.lma) {
                a &= 0xffffffffu;
            }
            if (r.fault_write ? !em_.can_write(a) : !em_.can_read(a)) {
                byte = a;
                found = true;
            }
        }
        if (!found) {
            d += fmt("  engine: fault range %#" PRIx64 "+%u is accessible\n",
                     r.fault_addr, r.fault_len);
        } else if (byte != o.fault_byte ||
                   bool(r.fault_write) != o.fault_write) {
            d += fmt("  fault: engine %s at %#" PRIx64 " (%s; range %#" PRIx64
                     "+%u), model %s at %#" PRIx64 " (%s; access %#" PRIx64
                     "+%u)\n",
                     r.fault_write ? "write" : "read", byte,
                     where(byte).c_str(), r.fault_addr, r.fault_len,
                     o.fault_write ? "write" : "read", o.fault_byte,
                     where(o.fault_byte).c_str(), o.fault_start, o.fault_len);
        }
    }
    if (bool(r.interrupt) != o.interrupt) {
        d +=
            fmt("  interrupt: engine %u, model %u\n", r.interrupt, o.interrupt);
    }
    if (bool(r.full) != o.full) {
        d += fmt("  full: engine %u, model %u\n", r.full, o.full);
    }
    if (r.stored != o.stored) {
        d += fmt("  stored: engine %u, model %u\n", r.stored, o.stored);
    }
    if (!cm_.violation.empty()) {
        d += "  memory contract: " + cm_.violation + "\n";
    }
    if (st == LWP_FAULT_PF) {
        faults++;
    } else if (st == LWP_FAULT_GP) {
        gps++;
    }
    records += o.stored;
    std::string name = call.substr(0, call.find(' '));
    count(name + " " + kind_name(o.kind));
    if (o.full) {
        count("store found the ring full");
    }
    if (o.interrupt) {
        count("threshold interrupt");
    }
    if (o.stored > 1) {
        count("several records in one call");
    }
    if (!d.empty()) {
        return mismatch(call, d);
    }
    return check_state(call);
}

bool Sequence::check_state(const std::string &call)
{
    std::string d;
    uint8_t ea[LWP_XSAVE_SIZE], ma[LWP_XSAVE_SIZE];
    bool ein = lwp_xsave(&es_, ea);
    bool min = model_.xsave(ma);
    if (ein != min) {
        d += fmt("  XSAVE in use: engine %d, model %d\n", ein, min);
    } else if (ein) {
        for (unsigned i = 0; i < LWP_XSAVE_SIZE; i++) {
            if (ea[i] != ma[i]) {
                unsigned start = i;
                std::string field = xsave_field(i);
                while (i + 1 < LWP_XSAVE_SIZE && xsave_field(i + 1) == field) {
                    i++;
                }
                std::string e, m;
                for (unsigned k = i + 1; k-- > start;) {
                    e += fmt("%02x", ea[k]);
                    m += fmt("%02x", ma[k]);
                }
                d += fmt("  XSAVE +%u %s: engine %s, model %s\n", start,
                         field.c_str(), e.c_str(), m.c_str());
            }
        }
    }
    bool ens = lwp_needs_sync(&es_);
    if (ens != model_.needs_sync()) {
        d += fmt("  needs_sync: engine %d, model %d\n", ens,
                 model_.needs_sync());
    }
    // guest memory: every line either side wrote
    std::vector<uint64_t> lines = mm_.dirty();
    lines.insert(lines.end(), em_.dirty().begin(), em_.dirty().end());
    std::sort(lines.begin(), lines.end());
    lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
    unsigned shown = 0;
    for (uint64_t line : lines) {
        for (uint64_t a = line * 64; a < line * 64 + 64; a++) {
            uint8_t x = em_.get(a), y = mm_.get(a);
            if (x != y && shown++ < 12) {
                d += fmt("  memory %#" PRIx64 " %s: engine %02x, model %02x\n",
                         a, where(a).c_str(), x, y);
            }
        }
    }
    mm_.clear_dirty();
    em_.clear_dirty();
    // the filters, while they are loaded
    if (d.empty() && model_.enabled() && !model_.needs_sync()) {
        Cpu cpu = to_cpu(ctx_);
        for (int k = 0; k < 2; k++) {
            uint64_t ip = random_ip();
            if (lwp_ip_eligible(&es_, &ctx_, ip) !=
                model_.ip_eligible(cpu, ip)) {
                d += fmt("  lwp_ip_eligible(%#" PRIx64 "): engine %d\n", ip,
                         !model_.ip_eligible(cpu, ip));
            }
            if (lwp_lwpval_fires(&es_, &ctx_, ip) !=
                model_.lwpval_fires(cpu, ip)) {
                d += fmt("  lwp_lwpval_fires(%#" PRIx64 "): engine %d\n", ip,
                         !model_.lwpval_fires(cpu, ip));
            }
        }
        unsigned kind = unsigned(rng_.below(3));
        bool known = rng_.chance(50), ok = rng_.chance(50);
        Instruction probe;
        probe.kind = kind == 0   ? Instruction::kConditional
                     : kind == 1 ? Instruction::kRelative
                                 : Instruction::kIndirect;
        if (lwp_branch_eligible(&es_, &ctx_, kind, known, ok) !=
            model_.branch_eligible(cpu, probe.kind, known, ok)) {
            d += fmt("  lwp_branch_eligible(%u, %d, %d): engine %d\n", kind,
                     known, ok,
                     !model_.branch_eligible(cpu, probe.kind, known, ok));
        }
        if (ctx_.edx & LWP_FEAT_DME) {
            uint32_t lat =
                uint32_t(rng_.chance(80) ? rng_.below(5000) : rng_.next());
            unsigned src = unsigned(rng_.below(8));
            if (lwp_dme_eligible(&es_, &ctx_, lat, src) !=
                model_.dme_eligible(cpu, lat, src)) {
                d += fmt("  lwp_dme_eligible(%u, %u): engine %d\n", lat, src,
                         !model_.dme_eligible(cpu, lat, src));
            }
        }
    }
    if (!d.empty()) {
        return mismatch(call + " (state after it)", d);
    }
    return true;
}

// ---------------------------------------------------------------------------
// Operations

// The glue's rule: lwp_sync before a CPL-3 step when lwp_needs_sync
bool Sequence::before_cpl3(bool *ok)
{
    *ok = true;
    if (!model_.needs_sync()) {
        return true;
    }
    ctx_.cpl = 3;
    *ok = false;
    LwpResult r = {};
    begin_call();
    LwpStatus st = lwp_sync(&es_, &ctx_, &lwpmem_, &r);
    Outcome o = model_.sync(to_cpu(ctx_));
    log(fmt("lwp_sync -> %s stored %u", kind_name(o.kind), o.stored));
    if (o.stored) {
        count("pending record stored by lwp_sync");
    }
    if (!check("lwp_sync", st, r, o)) {
        return false;
    }
    *ok = o.kind == Outcome::kOk;
    return true;
}

bool Sequence::do_retire(const LwpEventInfo &info, bool *ok)
{
    Cpu cpu = to_cpu(ctx_);
    Instruction insn = to_insn(info);
    uint32_t emask = lwp_counted_events(&es_, &ctx_, &info);
    uint32_t mmask = model_.counted_events(cpu, insn);
    std::string call =
        fmt("retire ip %#" PRIx64 " events %#x cycles %u/%u kind %u tkn %u "
            "prv %u prd %u fus %u src %u dav %u lat %u",
            info.ip, info.events, info.cycles, info.ref_cycles,
            info.branch_kind, info.taken, info.predicted, info.predicted_ok,
            info.fused, info.dme_source, info.dme_addr_valid, info.dme_latency);
    if (emask != mmask) {
        return mismatch(call, fmt("  lwp_counted_events: engine %#x, model "
                                  "%#x\n",
                                  emask, mmask));
    }
    LwpResult r = {};
    begin_call();
    LwpStatus st;
    if (rng_.chance(50)) {
        st = lwp_retire(&es_, &ctx_, &lwpmem_, &info, &r);
    } else { // as generated code does: decrement, then store
        call += " (generated-code path)";
        for (unsigned id = 2; id <= LWP_NUM_EVENTS; id++) {
            if ((emask >> id) & 1) {
                es_.counter[id] -= id == LWP_EVENT_ID_CNH ? int32_t(info.cycles)
                                   : id == LWP_EVENT_ID_RNH
                                       ? int32_t(info.ref_cycles)
                                       : 1;
            }
        }
        st = lwp_store_events(&es_, &ctx_, &lwpmem_, &info, emask, &r);
    }
    Outcome o = model_.retire(cpu, insn);
    for (unsigned id = 2; id <= LWP_NUM_EVENTS; id++) {
        if ((mmask >> id) & 1) {
            count(fmt("event %u counted", id));
        }
    }
    log(call + fmt(" -> %s counted %#x stored %u", kind_name(o.kind), mmask,
                   o.stored));
    *ok = o.kind == Outcome::kOk;
    return check(call, st, r, o);
}

bool Sequence::op_run()
{
    unsigned n =
        unsigned(rng_.chance(30) || !model_.enabled() ? rng_.range(1, 4)
                                                      : rng_.range(5, 40));
    for (unsigned i = 0; i < n; i++) {
        bool ok;
        if (!before_cpl3(&ok)) {
            return false;
        }
        if (!ok) {
            return true;
        }
        if (!do_retire(random_info(), &ok)) {
            return false;
        }
        if (!ok) {
            return true;
        }
    }
    return true;
}

// The operands of an LWPINS or LWPVAL: Data1 (reg/mem), Data2 (a 64-bit
// register only in 64-bit mode) and the imm32
void Sequence::random_operands(uint32_t *data1, uint64_t *data2, uint32_t *imm)
{
    *data1 = uint32_t(rng_.next());
    *data2 = ctx_.long64 && rng_.chance(50) ? rng_.next()
                                            : rng_.next() & 0xffffffffu;
    *imm = uint32_t(rng_.next());
}

// After an LWPINS or LWPVAL at @ip that completed: most often it retires
// too (an Instructions Retired event, with @cnh_chance % a CPU clocks one)
bool Sequence::retire_lwp_insn(uint64_t ip, unsigned cnh_chance)
{
    if (!rng_.chance(60)) {
        return true;
    }
    LwpEventInfo e;
    std::memset(&e, 0, sizeof(e));
    e.ip = ip;
    e.events = LWP_FEAT_IRE;
    if (cnh_chance && rng_.chance(cnh_chance)) {
        e.events |= LWP_FEAT_CNH;
        e.cycles = uint32_t(rng_.range(1, 5));
    }
    bool ok;
    return do_retire(e, &ok);
}

bool Sequence::op_lwpins()
{
    bool ok;
    if (!before_cpl3(&ok) || !ok) {
        return ok || failure.empty();
    }
    uint64_t ip = random_ip();
    uint32_t data1, imm;
    uint64_t data2;
    random_operands(&data1, &data2, &imm);
    std::string call =
        fmt("LWPINS ip %#" PRIx64 " data1 %#x data2 %#" PRIx64 " imm %#x", ip,
            data1, data2, imm);
    LwpResult r = {};
    begin_call();
    LwpStatus st = lwp_lwpins(&es_, &ctx_, &lwpmem_, ip, data1, data2, imm, &r);
    Outcome o = model_.lwpins(to_cpu(ctx_), ip, data1, data2, imm);
    log(call + fmt(" -> %s CF %u", kind_name(o.kind), o.full));
    if (!check(call, st, r, o)) {
        return false;
    }
    return o.kind != Outcome::kOk || retire_lwp_insn(ip, 0);
}

bool Sequence::op_lwpval()
{
    bool ok;
    if (!before_cpl3(&ok) || !ok) {
        return ok || failure.empty();
    }
    uint64_t ip = random_ip();
    bool fires = model_.lwpval_fires(to_cpu(ctx_), ip);
    std::string call = fmt("LWPVAL ip %#" PRIx64, ip);
    if (lwp_lwpval_fires(&es_, &ctx_, ip) != fires) {
        return mismatch(call, fmt("  lwp_lwpval_fires: engine %d, model %d\n",
                                  !fires, fires));
    }
    uint32_t data1, imm;
    uint64_t data2;
    random_operands(&data1, &data2, &imm);
    call += fmt(" data1 %#x data2 %#" PRIx64 " imm %#x (fires %d)", data1,
                data2, imm, fires);
    LwpResult r = {};
    begin_call();
    LwpStatus st = lwp_lwpval(&es_, &ctx_, &lwpmem_, ip, data1, data2, imm, &r);
    Outcome o = model_.lwpval(to_cpu(ctx_), ip, data1, data2, imm);
    log(call + fmt(" -> %s stored %u", kind_name(o.kind), o.stored));
    if (!check(call, st, r, o)) {
        return false;
    }
    return o.kind != Outcome::kOk || retire_lwp_insn(ip, 30);
}

// The consumer takes k <= used records: a legal tail move (spec 1.1, 6)
bool Sequence::op_consume()
{
    uint8_t a[LWP_XSAVE_SIZE];
    if (!model_.xsave(a)) {
        return true;
    }
    uint64_t cb;
    uint32_t head, size;
    std::memcpy(&cb, a + LWP_XS_CBADDR, 8);
    std::memcpy(&head, a + LWP_XS_HEAD, 4);
    std::memcpy(&size, a + LWP_XS_BUFFER_SIZE, 4);
    uint32_t raw = mm_.get32(cb + LWPCB_TAIL);
    if (!ctx_.lma) {
        raw = 0;
        for (int i = 3; i >= 0; i--) {
            raw = raw << 8 | mm_.get((cb + LWPCB_TAIL + i) & 0xffffffffu);
        }
    }
    uint32_t tail = raw % size / 32 * 32;
    uint32_t used = (head + size - tail) % size / 32;
    uint32_t k = uint32_t(rng_.chance(30) ? used : rng_.below(used + 1));
    uint32_t next = (tail + 32 * k) % size;
    log(fmt("consumer: tail %#x -> %#x (head %#x, %u of %u records)", raw, next,
            head, k, used));
    put32(cb + LWPCB_TAIL, next);
    return check_state("consumer tail move");
}

bool Sequence::op_slwpcb()
{
    bool ok;
    if (!before_cpl3(&ok) || !ok) {
        return ok || failure.empty();
    }
    uint64_t eea = 0xdead, mea = 0xbeef;
    LwpResult r = {};
    begin_call();
    LwpStatus st = lwp_slwpcb(&es_, &ctx_, &lwpmem_, &eea, &r);
    Outcome o = model_.slwpcb(to_cpu(ctx_), &mea);
    log(fmt("SLWPCB -> %s ea %#" PRIx64, kind_name(o.kind), mea));
    if (!check("SLWPCB", st, r, o)) {
        return false;
    }
    if (o.kind == Outcome::kOk) {
        uint64_t mask = ctx_.long64 ? ~uint64_t(0) : 0xffffffffu;
        if ((eea & mask) != (mea & mask)) {
            return mismatch("SLWPCB", fmt("  ea: engine %#" PRIx64
                                          ", model %#" PRIx64 "\n",
                                          eea & mask, mea & mask));
        }
    }
    return true;
}

bool Sequence::op_llwpcb()
{
    bool ok;
    if (!before_cpl3(&ok) || !ok) {
        return ok || failure.empty();
    }
    uint64_t ea;
    unsigned r = unsigned(rng_.below(100));
    unsigned slot = unsigned(rng_.below(slot_ea_.size()));
    uint8_t a[LWP_XSAVE_SIZE];
    uint64_t active = 0;
    if (model_.xsave(a)) {
        std::memcpy(&active, a + LWP_XS_CBADDR, 8);
    }
    if (r < 60 && lin(slot_ea_[slot]) != active) {
        // a new LWPCB; never the running one, whose fields must not change
        // while LWP uses it (spec 6: results unpredictable)
        write_lwpcb(slot, true);
        ea = slot_ea_[slot];
    } else if (r < 82) {
        ea = slot_ea_[slot]; // as it is
    } else if (r < 89) {
        ea = 0;
    } else {
        switch (rng_.below(5)) {
        case 0:
            ea = unmapped_ea_;
            break;
        case 1:
            ea = ctx_.long64 ? (uint64_t(1) << 47) - rng_.range(1, 0x100)
                             : 0xffffffffu - rng_.below(0x100);
            break;
        case 2:
            ea = ctx_.long64 ? (uint64_t(1) << 56) + 0x1000 * rng_.below(4)
                             : uint64_t(ctx_.ds_limit) - rng_.below(0x100);
            break;
        case 3:
            ea = ctx_.long64 ? ~uint64_t(0) - rng_.below(0x80)
                             : region_ - 0x1000;
            break;
        default:
            ea =
                ctx_.long64 ? 0x0000800000000000ull : rng_.next() & 0xffffffffu;
            break;
        }
        if (!ctx_.long64) {
            ea &= 0xffffffffu;
        }
    }
    std::string call = fmt("LLWPCB %#" PRIx64, ea);
    LwpResult res = {};
    begin_call();
    LwpStatus st = lwp_llwpcb(&es_, &ctx_, &lwpmem_, ea, &res);
    Outcome o = model_.llwpcb(to_cpu(ctx_), ea);
    if (o.kind == Outcome::kGp) {
        count(ctx_.long64 ? "LLWPCB #GP in 64-bit mode" : "LLWPCB #GP outside");
    }
    log(call + fmt(" -> %s", kind_name(o.kind)));
    return check(call, st, res, o);
}

// XRSTOR of @area (NULL: processor supplied values) at @cpl
bool Sequence::do_xrstor(const uint8_t *area, unsigned cpl, const char *why)
{
    uint8_t a[LWP_XSAVE_SIZE];
    if (area) {
        std::memcpy(a, area, sizeof(a));
        // Keep a SavedEventRecord only where the rows define its fate: an
        // event that stays enabled, whose counter is negative
        unsigned id = a[LWP_XS_SAVED_RECORD];
        uint32_t flags, c = 0;
        std::memcpy(&flags, a + LWP_XS_FLAGS, 4);
        bool keep = id >= 2 && id <= LWP_NUM_EVENTS &&
                    ((flags & uint32_t(ctx_.cfg) & ctx_.edx) >> id & 1);
        if (keep) {
            std::memcpy(&c, a + LWP_XS_COUNTER(id), 4);
            keep = int32_t(c) < 0;
        }
        if (!keep) {
            std::memset(a + LWP_XS_SAVED_RECORD, 0, 24);
        }
    }
    ctx_.cpl = uint8_t(cpl);
    std::string call = fmt("XRSTOR %s at CPL %u", why, cpl);
    if (area) {
        uint64_t cb, base;
        uint32_t head, size, flags;
        std::memcpy(&cb, a + 0, 8);
        std::memcpy(&flags, a + 8, 4);
        std::memcpy(&head, a + 12, 4);
        std::memcpy(&base, a + 16, 8);
        std::memcpy(&size, a + 24, 4);
        call += fmt(" (cb %#" PRIx64 " flags %#x head %#x base %#" PRIx64
                    " size %#x saved id %u)",
                    cb, flags, head, base, size, a[32]);
    }
    bool e = lwp_xrstor(&es_, &ctx_, area ? a : nullptr, nullptr);
    bool m = model_.xrstor(to_cpu(ctx_), area ? a : nullptr);
    ctx_.cpl = 3;
    calls++;
    log(call + fmt(" -> enabled %d", m));
    count(
        fmt("XRSTOR at CPL %u -> %s", cpl ? 3 : 0, m ? "enabled" : "disabled"));
    if (e != m) {
        return mismatch(call, fmt("  enabled: engine %d, model %d\n", e, m));
    }
    return check_state(call);
}

bool Sequence::op_xsave()
{
    uint8_t area[LWP_XSAVE_SIZE];
    bool in_use = model_.xsave(area); // equal to the engine's: checked
    unsigned cpl = rng_.chance(50)   ? 0
                   : rng_.chance(85) ? 3
                                     : unsigned(rng_.range(1, 2));
    unsigned r = unsigned(rng_.below(100));
    if (r < 40) {
        return do_xrstor(in_use ? area : nullptr, cpl, "round trip");
    }
    if (r < 62) { // context switch: save this thread, run another one
        if (in_use) {
            if (stash_.size() >= 4) {
                stash_.erase(stash_.begin());
            }
            stash_.emplace_back(area, area + sizeof(area));
        }
        if (!stash_.empty() && rng_.chance(85)) {
            unsigned k = unsigned(rng_.below(stash_.size()));
            return do_xrstor(stash_[k].data(), cpl, "of a stashed area");
        }
        return do_xrstor(nullptr, cpl, "processor supplied values");
    }
    if (r < 92) { // a forged area
        if (!in_use) {
            if (stash_.empty()) {
                return do_xrstor(nullptr, cpl, "processor supplied values");
            }
            std::memcpy(area, stash_[rng_.below(stash_.size())].data(),
                        sizeof(area));
        }
        std::string what;
        switch (rng_.below(9)) {
        case 0: {
            uint64_t cb = lin(slot_ea_[rng_.below(slot_ea_.size())]);
            if (rng_.chance(20)) {
                cb = rng_.chance(50) ? 0 : lin(unmapped_ea_);
            }
            std::memcpy(area + LWP_XS_CBADDR, &cb, 8);
            what = "LWPCBAddress";
            break;
        }
        case 1: {
            uint32_t size = uint32_t(rng_.chance(50) ? rng_.below(2048)
                                                     : rng_.below(0x3000));
            std::memcpy(area + LWP_XS_BUFFER_SIZE, &size, 4);
            what = "BufferSize";
            break;
        }
        case 2: {
            uint32_t size, head;
            std::memcpy(&size, area + LWP_XS_BUFFER_SIZE, 4);
            head = uint32_t(rng_.chance(50) ? size - rng_.range(1, 40)
                                            : rng_.below(size + 64));
            std::memcpy(area + LWP_XS_HEAD, &head, 4);
            what = "BufferHeadOffset";
            break;
        }
        case 3: {
            uint32_t flags = uint32_t(rng_.next()) & 0x7e;
            std::memcpy(area + LWP_XS_FLAGS, &flags, 4);
            what = "Flags";
            break;
        }
        case 4:
            for (unsigned id = 1; id <= LWP_NUM_EVENTS; id++) {
                if (rng_.chance(50)) {
                    int32_t c = int32_t(rng_.next());
                    if (rng_.chance(60)) {
                        c >>= rng_.range(6, 30);
                    }
                    std::memcpy(area + LWP_XS_COUNTER(id), &c, 4);
                }
            }
            what = "EventCounters";
            break;
        case 5: {
            unsigned j = unsigned(rng_.below(ring_ea_.size()));
            uint64_t base = lin(ring_ea_[j]);
            uint32_t size = ring_len_[j];
            if (rng_.chance(25)) {
                base = lin(unmapped_ea_);
            }
            std::memcpy(area + LWP_XS_BUFFER_BASE, &base, 8);
            std::memcpy(area + LWP_XS_BUFFER_SIZE, &size, 4);
            what = "BufferBase";
            break;
        }
        case 6: {
            uint32_t f = uint32_t(rng_.next()) & ~LWP_FILTER_RESERVED_MASK;
            std::memcpy(area + LWP_XS_FILTERS, &f, 4);
            what = "Filters";
            break;
        }
        case 7: {
            uint64_t s = rng_.next();
            std::memcpy(area + LWP_XS_SAVED_RECORD + 24, &s, 8);
            what = "rng";
            break;
        }
        default: {
            uint64_t cb;
            std::memcpy(&cb, area, 8);
            cb = ctx_.long64 ? cb ^ (uint64_t(1) << rng_.range(40, 62))
                             : cb + 0x100000000ull * rng_.range(1, 3);
            std::memcpy(area, &cb, 8);
            what = "LWPCBAddress out of reach";
            break;
        }
        }
        return do_xrstor(area, cpl, ("forged " + what).c_str());
    }
    return do_xrstor(nullptr, cpl, "processor supplied values");
}

bool Sequence::op_cfg()
{
    ctx_.cfg = random_cfg();
    log(fmt("LWP_CFG = %#" PRIx64, ctx_.cfg));
    return check_state("LWP_CFG write");
}

bool Sequence::op_flip()
{
    std::vector<uint64_t> pages = mm_.page_addrs();
    uint64_t page = pages[rng_.below(pages.size())];
    uint8_t a[LWP_XSAVE_SIZE];
    if (model_.xsave(a) && rng_.chance(60)) {
        uint64_t cb, base;
        uint32_t head;
        std::memcpy(&cb, a + LWP_XS_CBADDR, 8);
        std::memcpy(&head, a + LWP_XS_HEAD, 4);
        std::memcpy(&base, a + LWP_XS_BUFFER_BASE, 8);
        uint64_t pick = rng_.chance(50) ? base + head + rng_.below(32)
                                        : cb + rng_.below(cb_bytes());
        if (!ctx_.lma) {
            pick &= 0xffffffffu;
        }
        if (mm_.mapped(pick)) {
            page = pick & ~(GuestMemory::kPageSize - 1);
        }
    }
    unsigned r = unsigned(rng_.below(100));
    bool rd = r >= 30, wr = r >= 80;
    set_access(page, rd, wr);
    log(fmt("page %#" PRIx64 " -> %s", page, wr ? "RW" : rd ? "RO" : "none"));
    return check_state("permission change");
}

// The OS handles the fault: every page back to RW; an LWP that still
// cannot sync is turned off (LWP_CBADDR = 0)
bool Sequence::op_fix()
{
    for (uint64_t p : mm_.page_addrs()) {
        set_access(p, true, true);
    }
    log("all pages RW");
    if (!check_state("pages fixed")) {
        return false;
    }
    bool ok;
    if (!before_cpl3(&ok)) {
        return false;
    }
    if (!ok) {
        return op_kill();
    }
    return true;
}

bool Sequence::op_ds()
{
    if (ctx_.long64) {
        return true;
    }
    unsigned r = unsigned(rng_.below(100));
    if (r < 15) {
        ctx_.ds_limit = uint32_t(region_ + rng_.range(0x2000, 0xd000));
        ctx_.ds_flags &= ~LWP_DS_EXPAND_DOWN;
    } else if (r < 25) {
        ctx_.ds_flags ^= LWP_DS_WRITABLE;
    } else if (r < 30) {
        ctx_.ds_flags ^= LWP_DS_USABLE;
    } else if (r < 40) {
        ctx_.ds_base += 0x1000 * rng_.range(1, 4); // moves the effective view
    } else {                                       // back to the layout's DS
        ctx_.ds_base = ds0_.ds_base;
        ctx_.ds_limit = ds0_.ds_limit;
        ctx_.ds_flags = ds0_.ds_flags;
    }
    log(fmt("DS base %#" PRIx64 " limit %#x flags %#x", ctx_.ds_base,
            ctx_.ds_limit, ctx_.ds_flags));
    return check_state("DS change");
}

bool Sequence::op_kill()
{
    lwp_state_init(&es_);
    model_.disable();
    log("LWP_CBADDR = 0");
    return check_state("LWP_CBADDR = 0");
}

bool Sequence::op_next_interval()
{
    if (!model_.enabled() || model_.needs_sync()) {
        return true;
    }
    uint8_t a[LWP_XSAVE_SIZE];
    model_.xsave(a);
    uint32_t flags;
    std::memcpy(&flags, a + LWP_XS_FLAGS, 4);
    if (!flags) {
        return true;
    }
    unsigned id;
    do {
        id = unsigned(rng_.range(1, LWP_NUM_EVENTS));
    } while (!((flags >> id) & 1));
    int32_t e = lwp_next_interval(&es_, id);
    int32_t m = model_.next_interval(id);
    std::string call = fmt("lwp_next_interval(%u)", id);
    log(call + fmt(" -> %d", m));
    if (e != m) {
        return mismatch(call, fmt("  value: engine %d, model %d\n", e, m));
    }
    return check_state(call);
}

bool Sequence::op_sync()
{
    LwpResult r = {};
    begin_call();
    LwpStatus st = lwp_sync(&es_, &ctx_, &lwpmem_, &r);
    Outcome o = model_.sync(to_cpu(ctx_));
    log(fmt("lwp_sync (unasked) -> %s stored %u", kind_name(o.kind), o.stored));
    return check("lwp_sync", st, r, o);
}

bool Sequence::step()
{
    bool was = model_.enabled();
    count(was ? "ops with LWP enabled" : "ops with LWP disabled");
    unsigned r = unsigned(rng_.below(1000));
    if (!was && rng_.chance(10)) {
        r = 650; // the program turns LWP back on
    }
    bool ok = step(r);
    if (was && !model_.enabled()) {
        count(fmt("turned off by op kind %u", r < 300   ? 0
                                              : r < 700 ? r / 100
                                              : r < 790 ? 7
                                              : r < 950 ? 9
                                                        : 10));
    }
    return ok;
}

bool Sequence::step(unsigned r)
{
    if (r < 300) {
        return op_run();
    } else if (r < 370) {
        return op_lwpins();
    } else if (r < 460) {
        return op_lwpval();
    } else if (r < 570) {
        return op_consume();
    } else if (r < 610) {
        return op_slwpcb();
    } else if (r < 700) {
        return op_llwpcb();
    } else if (r < 790) {
        return op_xsave();
    } else if (r < 810) {
        return op_cfg();
    } else if (r < 870) {
        return op_flip();
    } else if (r < 930) {
        return op_fix();
    } else if (r < 945) {
        return op_ds();
    } else if (r < 950) {
        return op_kill();
    } else if (r < 970) {
        return op_next_interval();
    }
    return op_sync();
}

bool Sequence::run(unsigned ops)
{
    log(fmt("seed %" PRIu64 ": edx %#x ecx %#x cfg %#" PRIx64
            " long64 %u lma %u va %u DS base %#" PRIx64 " limit %#x flags %#x",
            seed_, ctx_.edx, ctx_.ecx, ctx_.cfg, ctx_.long64, ctx_.lma,
            ctx_.va_bits, ctx_.ds_base, ctx_.ds_limit, ctx_.ds_flags));
    if (!check_state("setup")) {
        return false;
    }
    // Most sequences start with LWP on
    if (rng_.chance(90) && !op_llwpcb()) {
        return false;
    }
    for (op_ = 1; op_ <= ops; op_++) {
        if (!step()) {
            return false;
        }
    }
    // finally all of memory
    for (uint64_t p : mm_.page_addrs()) {
        for (uint64_t a = p; a < p + GuestMemory::kPageSize; a++) {
            if (mm_.get(a) != em_.get(a)) {
                return mismatch("end of sequence",
                                fmt("  memory %#" PRIx64 " %s: engine %02x, "
                                    "model %02x\n",
                                    a, where(a).c_str(), em_.get(a),
                                    mm_.get(a)));
            }
        }
    }
    return true;
}

TEST(Diff, RandomSequences)
{
    const uint64_t one = env_u64("LWP_DIFF_SEED", ~uint64_t(0));
    const uint64_t sequences = env_u64("LWP_DIFF_SEQUENCES", 2000);
    const unsigned ops = unsigned(env_u64("LWP_DIFF_OPS", 200));
    const bool summary = env_u64("LWP_DIFF_SUMMARY", 0) != 0;
    uint64_t calls = 0, records = 0, faults = 0, gps = 0;
    unsigned failed = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (uint64_t seed = 0; seed < sequences; seed++) {
        if (one != ~uint64_t(0) && seed != one) {
            continue;
        }
        Sequence s(seed, one != ~uint64_t(0));
        bool ok = s.run(ops);
        calls += s.calls;
        records += s.records;
        faults += s.faults;
        gps += s.gps;
        if (!ok) {
            if (summary) { // one line per sequence: the call and first diff
                std::string f = s.failure;
                size_t nl = f.find('\n');
                size_t nl2 = f.find('\n', nl + 1);
                printf("%s |%s\n", f.substr(0, nl).c_str(),
                       f.substr(nl + 1, nl2 - nl - 1).c_str());
            }
            if (failed++ < 5) {
                ADD_FAILURE() << s.failure;
            }
        }
    }
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (summary) {
        for (const auto &kv : g_stats) {
            printf("[ diff     ]   %-40s %" PRIu64 "\n", kv.first.c_str(),
                   kv.second);
        }
    }
    printf("[ diff     ] %" PRIu64 " sequences x %u ops: %" PRIu64
           " engine calls, %" PRIu64 " records, %" PRIu64 " #PF, %" PRIu64
           " #GP, %u mismatching sequences, %.2f s\n",
           one != ~uint64_t(0) ? 1 : sequences, ops, calls, records, faults,
           gps, failed, secs);
    EXPECT_EQ(failed, 0u);
}

// ---------------------------------------------------------------------------
// The two places where the differential test first found the engine
// departing from the spec and the rows (fixed in the engine since), reduced
// to a few calls each, engine and model side by side.

struct DiffEngine : ::testing::Test {
    GuestMemory mem;
    CheckedMem cm;
    LwpMem lm = {&kCheckedOps, &cm};
    LwpState s;
    LwpContext ctx;
    LwpResult r = {};
    Model model{mem_model};
    GuestMemory mem_model;

    void SetUp() override
    {
        cm.mem = &mem;
        lwp_state_init(&s);
        std::memset(&ctx, 0, sizeof(ctx));
        ctx.edx = 0x8000007f;
        ctx.ecx = lwp_cpuid_ecx(0, ctx.edx);
        ctx.cfg = 0x11ull << 32 | LWP_FEAT_IRE;
        ctx.long64 = ctx.lma = 1;
        ctx.va_bits = 48;
        ctx.cpl = 3;
        ctx.ds_flags = LWP_DS_USABLE | LWP_DS_WRITABLE;
        ctx.ds_limit = 0xffffffffu;
    }
    // both memories
    void map(uint64_t a, uint64_t len)
    {
        mem.map(a, len);
        mem_model.map(a, len);
    }
    void put32(uint64_t a, uint32_t v)
    {
        mem.put32(a, v);
        mem_model.put32(a, v);
    }
    void put64(uint64_t a, uint64_t v)
    {
        mem.put64(a, v);
        mem_model.put64(a, v);
    }
    void access(uint64_t a, bool rd, bool wr)
    {
        mem.set_access(a, rd, wr);
        mem_model.set_access(a, rd, wr);
    }
    uint64_t first_bad_byte(bool write)
    {
        for (uint32_t i = 0; i < r.fault_len; i++) {
            uint64_t a = r.fault_addr + i;
            if (write ? !mem.can_write(a) : !mem.can_read(a)) {
                return a;
            }
        }
        return 0;
    }
};

// Row 33: "CoreId: LWP_CFG[39:32] at the time the record is stored".  A
// record whose store faulted is stored by lwp_sync (lwp-engine.h), so it
// carries the COREID of that moment, e.g. after the thread moved to another
// core, not the COREID of the attempt that faulted.
TEST_F(DiffEngine, PendingRecordTakesTheCoreIdOfItsStore)
{
    map(0x10000, 0x1000);
    map(0x20000, 0x1000);
    put32(0x10000 + LWPCB_FLAGS, LWP_FEAT_IRE);
    put32(0x10000 + LWPCB_BUFFER_SIZE, 1024);
    put64(0x10000 + LWPCB_BUFFER_BASE, 0x20000);
    put32(0x10000 + LWPCB_THRESHOLD, 2048);
    Cpu cpu = to_cpu(ctx);
    cm.begin(true);
    ASSERT_EQ(lwp_llwpcb(&s, &ctx, &lm, 0x10000, &r), LWP_OK);
    ASSERT_EQ(model.llwpcb(cpu, 0x10000).kind, Outcome::kOk);
    access(0x20000, true, false);
    LwpEventInfo e;
    std::memset(&e, 0, sizeof(e));
    e.ip = 0x401000;
    e.events = LWP_FEAT_IRE; // EventCounter2 0: this one is recorded
    cm.begin(true);
    ASSERT_EQ(lwp_retire(&s, &ctx, &lm, &e, &r), LWP_FAULT_PF);
    ASSERT_EQ(model.retire(cpu, to_insn(e)).kind, Outcome::kPf);
    ASSERT_TRUE(lwp_needs_sync(&s));
    ctx.cfg = 0x22ull << 32 | LWP_FEAT_IRE; // now on core 0x22
    cpu = to_cpu(ctx);
    access(0x20000, true, true);
    cm.begin(true);
    ASSERT_EQ(lwp_sync(&s, &ctx, &lm, &r), LWP_OK);
    ASSERT_EQ(model.sync(cpu).stored, 1u);
    EXPECT_EQ(mem_model.get(0x20000 + LWP_REC_CORE_ID), 0x22);
    EXPECT_EQ(mem.get(0x20000 + LWP_REC_EVENT_ID), LWP_EVENT_ID_IRE);
    EXPECT_EQ(mem.get(0x20000 + LWP_REC_CORE_ID), 0x22)
        << "row 33: the CoreId of when lwp_sync stores the record";
}

// Table 6-1: LWPCB bytes 72-87 "are never read or written by the LWP
// hardware" (lwp-arch.h: "never accessed").  With a page boundary at
// LWPCB+80 and the second page unreadable, LWP's first access that faults
// is LWPCB+88, not LWPCB+80.
TEST_F(DiffEngine, SoftwareBytesAreNotAccessed)
{
    const uint64_t cb = 0x11000 - 80;
    map(0x10000, 0x2000);
    map(0x20000, 0x1000);
    put32(cb + LWPCB_BUFFER_SIZE, 1024);
    put64(cb + LWPCB_BUFFER_BASE, 0x20000);
    access(0x11000, false, false);
    Cpu cpu = to_cpu(ctx);
    cm.begin(true);
    ASSERT_EQ(lwp_llwpcb(&s, &ctx, &lm, cb, &r), LWP_FAULT_PF);
    Outcome o = model.llwpcb(cpu, cb);
    ASSERT_EQ(o.kind, Outcome::kPf);
    EXPECT_EQ(o.fault_byte, cb + 88);
    EXPECT_FALSE(r.fault_write);
    EXPECT_EQ(first_bad_byte(false), cb + 88) << "LLWPCB read";
    // and the same for LLWPCB's writability check (row 14 f)
    access(0x11000, true, false);
    cm.begin(true);
    ASSERT_EQ(lwp_llwpcb(&s, &ctx, &lm, cb, &r), LWP_FAULT_PF);
    o = model.llwpcb(cpu, cb);
    ASSERT_EQ(o.kind, Outcome::kPf);
    EXPECT_EQ(o.fault_byte, cb + 88);
    EXPECT_TRUE(r.fault_write);
    EXPECT_EQ(first_bad_byte(true), cb + 88) << "LLWPCB write check";
}

// ---------------------------------------------------------------------------
// The model against hand-computed spec values

struct DiffModel : ::testing::Test {
    GuestMemory mem;
    Model model{mem};
    Cpu cpu;
    static constexpr uint64_t kCb = 0x10000;   // LWPCB
    static constexpr uint64_t kRing = 0x20000; // ring buffer, 1024 bytes

    void SetUp() override
    {
        cpu.cpuid_edx = 0x8000007f;          // all events, Int
        cpu.cpuid_ecx = 0x00010200;          // version 1, LwpMinBufferSize 1
        cpu.lwp_cfg = 0x000012348000007eull; // COREID 0x34
        mem.map(kCb, 0x1000);
        mem.map(kRing, 0x1000);
        mem.put32(kCb + 4, 1024);
        mem.put64(kCb + 8, kRing);
    }
    std::vector<uint8_t> record(unsigned i)
    {
        std::vector<uint8_t> r;
        for (unsigned k = 0; k < 32; k++) {
            r.push_back(mem.get(kRing + 32 * i + k));
        }
        return r;
    }
};

TEST_F(DiffModel, LlwpcbWritesBackFlagsIntervalsAndHead)
{
    cpu.lwp_cfg = 0x0000000080000006ull; // VAL, IRE, Int available
    mem.put32(kCb + 0, 0x8000001fu);     // asks VAL IRE BRE DME and bit 0
    mem.put32(kCb + 16, 1024 + 40);      // head >= BufferSize: 0
    mem.put32(kCb + 0x80, 0x03fffffd);   // EventInterval1 = -3
    mem.put32(kCb + 0x84, 0xfc000007);   // EventCounter1 7, bits 31:26 set
    mem.put32(kCb + 0x88, 0);            // EventInterval2 below 1
    mem.put32(kCb + 0x90, 0x77);         // BRE: not available, untouched
    ASSERT_EQ(model.llwpcb(cpu, kCb).kind, Outcome::kOk);
    EXPECT_EQ(mem.get32(kCb + 0), 0x80000006u);
    EXPECT_EQ(mem.get32(kCb + 0x80), 0u);
    EXPECT_EQ(mem.get32(kCb + 0x88), 1u);
    EXPECT_EQ(mem.get32(kCb + 0x90), 0x77u);
    EXPECT_EQ(mem.get32(kCb + 16), 0u);
    uint8_t a[128];
    ASSERT_TRUE(model.xsave(a));
    EXPECT_EQ(a[8], 0x06); // Flags: events only
    EXPECT_EQ(a[64], 7);   // EventCounter1
    EXPECT_EQ(a[68], 0);   // EventCounter2 0
}

TEST_F(DiffModel, LlwpcbRejectsInOrder)
{
    mem.put(kCb + 100, 1); // reserved byte between 88 and E
    EXPECT_EQ(model.llwpcb(cpu, kCb).kind, Outcome::kGp);
    mem.put(kCb + 100, 0);
    mem.put32(kCb + 4, 1023); // rounds down to 992 < 1024
    EXPECT_EQ(model.llwpcb(cpu, kCb).kind, Outcome::kGp);
    mem.put32(kCb + 4, 1024 + 31); // rounds down to 1024
    mem.set_access(kCb, true, false);
    Outcome o = model.llwpcb(cpu, kCb);
    EXPECT_EQ(o.kind, Outcome::kPf); // (f) after (c)-(e)
    EXPECT_TRUE(o.fault_write);
    EXPECT_EQ(o.fault_byte, kCb);
    mem.set_access(kCb, false, false);
    mem.put(kCb + 100, 1);
    o = model.llwpcb(cpu, kCb); // (b) before (c)
    EXPECT_EQ(o.kind, Outcome::kPf);
    EXPECT_FALSE(o.fault_write);
    // 64-bit: the LWPCB must be canonical, all CbSize = 0xb0 bytes of it
    EXPECT_EQ(model.llwpcb(cpu, (uint64_t(1) << 47) - 0xa0).kind, Outcome::kGp);
}

TEST_F(DiffModel, LegacySegmentChecks)
{
    cpu.mode64 = false;
    cpu.long_mode = false;
    cpu.ds_base = 0x8000;
    mem.put64(kCb + 8, kRing - 0x8000);
    cpu.ds_limit = uint32_t(kRing - 0x8000 + 1023); // ring ends at the limit
    EXPECT_EQ(model.llwpcb(cpu, kCb - 0x8000).kind, Outcome::kOk);
    uint64_t ea;
    EXPECT_EQ(model.slwpcb(cpu, &ea).kind, Outcome::kOk);
    EXPECT_EQ(ea, kCb - 0x8000);
    cpu.ds_limit--; // one byte short
    EXPECT_EQ(model.llwpcb(cpu, kCb - 0x8000).kind, Outcome::kGp);
    EXPECT_FALSE(model.enabled());
    // expand-down: valid offsets are above the limit, up to 0xFFFF without B
    cpu.ds_expand_down = true;
    cpu.ds_big = false;
    cpu.ds_limit = 0x7fff;
    EXPECT_EQ(model.llwpcb(cpu, kCb - 0x8000).kind, Outcome::kGp); // ring > 64K
    cpu.ds_big = true;
    EXPECT_EQ(model.llwpcb(cpu, kCb - 0x8000).kind, Outcome::kOk);
    cpu.ds_limit = uint32_t(kCb - 0x8000); // the LWPCB's first byte is not
    EXPECT_EQ(model.llwpcb(cpu, kCb - 0x8000).kind, Outcome::kGp);
    mem.put64(kCb + 8, (uint64_t(1) << 32) | (kRing - 0x8000));
    cpu.ds_expand_down = false;
    cpu.ds_limit = 0xffffffffu;
    EXPECT_EQ(model.llwpcb(cpu, kCb - 0x8000).kind, Outcome::kGp);
}

TEST_F(DiffModel, InstructionsRetiredRecordAndReset)
{
    cpu.lwp_cfg = 0x0000003400000004ull; // IRE, COREID 0x34
    mem.put32(kCb + 0, 4);
    mem.put32(kCb + 0x88, 0x100); // EventInterval2
    mem.put32(kCb + 0x8c, 2);     // EventCounter2
    mem.put32(kCb + 32, 1024);    // Threshold: never
    ASSERT_EQ(model.llwpcb(cpu, kCb).kind, Outcome::kOk);
    Instruction insn;
    insn.events = 1u << 2;
    for (uint64_t ip = 0x401000; ip < 0x401003; ip++) {
        insn.ip = ip;
        Outcome o = model.retire(cpu, insn);
        EXPECT_EQ(o.stored, ip == 0x401002 ? 1u : 0u);
    }
    std::vector<uint8_t> want = {2, 0x34, 0, 0, 0, 0, 0, 0, 0x02, 0x10, 0x40};
    want.resize(32, 0);
    EXPECT_EQ(record(0), want);
    EXPECT_EQ(mem.get32(kCb + 16), 32u); // head written on the store
    uint8_t a[128];
    ASSERT_TRUE(model.xsave(a));
    EXPECT_EQ(a[68] | a[69] << 8, 0x100); // reset to the interval
    uint64_t ea;
    model.slwpcb(cpu, &ea);
    EXPECT_EQ(mem.get32(kCb + 0x8c), 0x100u); // flushed counter
}

TEST_F(DiffModel, FullRingOverwritesAndCountsMissed)
{
    mem.put32(kCb + 0, 0x80000000u); // only Int: LWPINS still works
    mem.put32(kCb + 16, 1024 - 64);  // head: two slots left
    mem.put32(kCb + 64, 0);          // tail
    mem.put64(kCb + 24, 41);         // MissedEvents
    mem.put32(kCb + 32, 1024 - 32);  // threshold: the full ring
    ASSERT_EQ(model.llwpcb(cpu, kCb).kind, Outcome::kOk);
    Outcome o = model.lwpins(cpu, 1, 2, 3, 0x12345);
    EXPECT_FALSE(o.full);
    EXPECT_TRUE(o.interrupt); // (992 - 0) >= 992
    EXPECT_EQ(mem.get32(kCb + 16), 1024u - 32);
    o = model.lwpins(cpu, 4, 5, 6, 7);
    EXPECT_TRUE(o.full);       // CF = 1
    EXPECT_FALSE(o.interrupt); // the head does not advance (Table 6-1)
    EXPECT_EQ(mem.get64(kCb + 24), 42u);
    EXPECT_EQ(mem.get32(kCb + 16), 1024u - 32); // head stays
    std::vector<uint8_t> want = {255, 0x34, 7, 0, 5, 0, 0, 0, 4};
    want.resize(16, 0);
    want.push_back(6);
    want.resize(32, 0);
    EXPECT_EQ(record(31), want); // the slot at the head, overwritten
    mem.put32(kCb + 64, 64);     // the consumer takes two records
    o = model.lwpins(cpu, 8, 9, 10, 11);
    EXPECT_FALSE(o.full);      // the tail is re-read when the copy says full
    EXPECT_FALSE(o.interrupt); // used = 0 - 64 mod 1024 = 960 < 992
    EXPECT_EQ(mem.get32(kCb + 16), 0u);
}

TEST_F(DiffModel, SplitmixRandomisesTheReset)
{
    uint64_t st = 0; // splitmix64's published first output from seed 0
    EXPECT_EQ(Model::splitmix64(&st), 0xe220a8397b1dcdafull);
    cpu.lwp_cfg = 0x4; // IRE
    mem.put32(kCb + 0, 4);
    mem.put32(kCb + 4, 1024 | 4u << 28); // Random = 4
    mem.put32(kCb + 0x88, 0x100);
    mem.put32(kCb + 32, 2048);
    ASSERT_EQ(model.llwpcb(cpu, kCb).kind, Outcome::kOk);
    Instruction insn;
    insn.events = 1u << 2;
    model.retire(cpu, insn); // counter 0 -> -1: stored, reset
    uint8_t a[128];
    ASSERT_TRUE(model.xsave(a));
    EXPECT_EQ(a[68] | a[69] << 8, 0x10f); // 0x100 | (0x...af & 0xf)
    uint64_t state = 0;
    for (int i = 0; i < 8; i++) {
        state |= uint64_t(a[56 + i]) << (8 * i);
    }
    EXPECT_EQ(state, 0x9E3779B97F4A7C15ull); // one draw from 0
}

TEST_F(DiffModel, OverrunReducesTheReset)
{
    cpu.lwp_cfg = 1u << 5; // CNH
    mem.put32(kCb + 0, 1u << 5);
    mem.put32(kCb + 0xa0, 0x100); // EventInterval5
    mem.put32(kCb + 0xa4, 10);
    mem.put32(kCb + 32, 2048);
    ASSERT_EQ(model.llwpcb(cpu, kCb).kind, Outcome::kOk);
    Instruction insn;
    insn.events = 1u << 5;
    insn.core_clocks = 15; // 10 - 15 = -5
    EXPECT_EQ(model.retire(cpu, insn).stored, 1u);
    uint8_t a[128];
    model.xsave(a);
    EXPECT_EQ(a[80] | a[81] << 8, 0x100 - 4); // reset + (c + 1)
    insn.core_clocks = 0x300;                 // far below: at least 0
    model.retire(cpu, insn);
    model.xsave(a);
    EXPECT_EQ(a[80] | a[81] << 8, 0);
}

TEST_F(DiffModel, EventsInAscendingOrderAndPendingOnFault)
{
    cpu.lwp_cfg = 0x340000003cull; // IRE BRE DME CNH, COREID 0x34
    cpu.cpuid_ecx = 0x00010200 | 10 | 4u << 6 | 0x90000020u; // BP, latency, DA
    mem.put32(kCb + 0, 0x3c);
    mem.put32(kCb + 32, 2048);
    ASSERT_EQ(model.llwpcb(cpu, kCb).kind, Outcome::kOk);
    Instruction insn;
    insn.ip = 0x1234;
    insn.events = 0x3c;
    insn.core_clocks = 1;
    insn.kind = Instruction::kRelative;
    insn.taken = true;
    insn.prediction_known = true;
    insn.predicted_correctly = true;
    insn.next_ip = 0x5678;
    insn.data_source = 3;
    insn.address_known = true;
    insn.latency = 2000; // capped at 2^10 - 2^4 = 1008
    insn.data_address = 0xabcdef;
    mem.set_access(kRing, true, true);
    Outcome o = model.retire(cpu, insn);
    EXPECT_EQ(o.stored, 4u);
    EXPECT_EQ(record(0)[0], 2);
    EXPECT_EQ(record(1)[0], 3);
    EXPECT_EQ(record(1)[3], 0xe0); // TKN PRD PRV
    EXPECT_EQ(record(1)[16], 0x78);
    EXPECT_EQ(record(2)[0], 4);
    EXPECT_EQ(record(2)[3], 0x70); // SRC 3, DAV
    EXPECT_EQ(record(2)[4] | record(2)[5] << 8, 1008);
    EXPECT_EQ(record(3)[0], 5);
    // The counters were reset to the minimum interval, 1 (choice 17): one
    // more event takes both to 0; the next goes negative in both
    insn.events = 0x0c; // IRE BRE
    for (int i = 0; i < 1; i++) {
        EXPECT_EQ(model.retire(cpu, insn).stored, 0u);
    }
    mem.set_access(kRing, true, false);
    o = model.retire(cpu, insn);
    EXPECT_EQ(o.kind, Outcome::kPf);
    EXPECT_TRUE(o.fault_write);
    EXPECT_EQ(o.fault_byte, kRing + 4 * 32);
    EXPECT_TRUE(model.needs_sync());
    uint8_t a[128];
    model.xsave(a);
    EXPECT_EQ(a[32], 2); // IRE's record pending, BRE's not gathered
    EXPECT_EQ(a[33], 0x34);
    EXPECT_EQ(a[40] | a[41] << 8, 0x1234);
    EXPECT_EQ(int32_t(a[68] | a[69] << 8 | a[70] << 16 | a[71] << 24), -1);
    EXPECT_EQ(int32_t(a[72] | a[73] << 8 | a[74] << 16 | a[75] << 24), -1);
    mem.set_access(kRing, true, true);
    o = model.sync(cpu);
    EXPECT_EQ(o.kind, Outcome::kOk);
    EXPECT_EQ(o.stored, 1u);
    EXPECT_FALSE(model.needs_sync());
    EXPECT_EQ(record(4)[0], 2);
    model.xsave(a);
    EXPECT_EQ(a[32], 0);
    EXPECT_EQ(a[68] | a[69] << 8, 1); // IRE: 1 + (-1 + 1)
    EXPECT_EQ(int32_t(a[72] | a[73] << 8 | a[74] << 16 | a[75] << 24), -1);
    // BRE gathers its record at its next event: -2, reset 1 - 1
    insn.events = 0x08;
    EXPECT_EQ(model.retire(cpu, insn).stored, 1u);
    EXPECT_EQ(record(5)[0], 3);
    model.xsave(a);
    EXPECT_EQ(a[72] | a[73] << 8, 0);
}

TEST_F(DiffModel, XsaveLayoutAndXrstorRules)
{
    cpu.lwp_cfg = 0x80000006ull;
    mem.put32(kCb + 0, 0x80000006u);
    mem.put32(kCb + 4, 1024 | 3u << 28);
    mem.put32(kCb + 16, 1024 - 16); // LLWPCB: < size, rounds to 992
    mem.put32(kCb + 36, 0x80000000u);
    mem.put32(kCb + 0x84, 9);
    mem.put32(kCb + 0x8c, 0x1ff);
    ASSERT_EQ(model.llwpcb(cpu, kCb).kind, Outcome::kOk);
    EXPECT_EQ(mem.get32(kCb + 16), 992u);
    uint8_t a[128];
    ASSERT_TRUE(model.xsave(a));
    uint8_t want[128] = {};
    want[1] = 0x00, want[2] = 0x01; // LWPCBAddress 0x10000
    want[8] = 0x06;
    want[12] = 0xe0, want[13] = 0x03; // head 992
    want[18] = 0x02;                  // BufferBase 0x20000
    want[25] = 0x04;                  // BufferSize 1024, no Random
    want[31] = 0x80;                  // Filters
    want[64] = 9;
    want[68] = 0xff, want[69] = 0x01;
    EXPECT_EQ(0, std::memcmp(a, want, 128));
    // XRSTOR: a head in the last 31 bytes is 0 (7.4), not rounded (6)
    a[12] = 0xf0;
    cpu.cpl = 0;
    ASSERT_TRUE(model.xrstor(cpu, a));
    EXPECT_TRUE(model.needs_sync());
    uint8_t b[128];
    model.xsave(b);
    EXPECT_EQ(b[12] | b[13] << 8, 0);
    // counters clamp to 26 bits; Flags AND LWP_CFG
    a[12] = 0;
    a[64] = 0, a[65] = 0, a[66] = 0, a[67] = 0x40; // 0x40000000
    a[8] = 0x7e;
    ASSERT_TRUE(model.xrstor(cpu, a));
    model.xsave(b);
    EXPECT_EQ(b[8], 0x06);
    EXPECT_EQ(int32_t(b[64] | b[65] << 8 | b[66] << 16 | b[67] << 24),
              0x01ffffff);
    // sync re-reads Random, Threshold, INT, intervals; no #GP
    mem.put(kCb + 100, 1);
    EXPECT_EQ(model.sync(cpu).kind, Outcome::kOk);
    // CPL 3: the ring must pass Check
    cpu.cpl = 3;
    a[16] = 0, a[17] = 0, a[18] = 0, a[22] = 0x80; // non-canonical base
    EXPECT_FALSE(model.xrstor(cpu, a));
    EXPECT_FALSE(model.enabled());
    cpu.cpl = 0;
    EXPECT_TRUE(model.xrstor(cpu, a));
    EXPECT_FALSE(model.xrstor(cpu, nullptr));
}

TEST_F(DiffModel, Filters)
{
    cpu.cpuid_ecx = 0x00010200 | 10 | 4u << 6 | 0xf0000000u; // all caps
    mem.put32(kCb + 0, 0x18);
    cpu.lwp_cfg = 0x18; // BRE DME
    // IPF IPI NPB CLF RAM, MinLatency 0x50 (1280 cycles, capped to 1008)
    mem.put32(kCb + 36, 0xc4000950u);
    mem.put64(kCb + 40, 0x100);
    mem.put64(kCb + 48, 0x200);
    ASSERT_EQ(model.llwpcb(cpu, kCb).kind, Outcome::kOk);
    EXPECT_FALSE(model.ip_eligible(cpu, 0x100)); // inverted, inclusive
    EXPECT_FALSE(model.ip_eligible(cpu, 0x200));
    EXPECT_TRUE(model.ip_eligible(cpu, 0x201));
    EXPECT_FALSE(
        model.branch_eligible(cpu, Instruction::kRelative, true, true));
    EXPECT_TRUE(
        model.branch_eligible(cpu, Instruction::kRelative, true, false));
    EXPECT_TRUE(
        model.branch_eligible(cpu, Instruction::kRelative, false, true));
    EXPECT_TRUE(model.dme_eligible(cpu, 1008, 3));
    EXPECT_TRUE(model.dme_eligible(cpu, 5000, 3));
    EXPECT_FALSE(model.dme_eligible(cpu, 1007, 3)); // rounds to 992
    EXPECT_FALSE(model.dme_eligible(cpu, 2000, 1)); // not NBC
    EXPECT_FALSE(model.dme_eligible(cpu, 2000, 5)); // never
    // without the capabilities the filters are ignored
    cpu.cpuid_ecx = 0x00010200 | 10;
    EXPECT_TRUE(model.ip_eligible(cpu, 0x100));
    EXPECT_TRUE(model.branch_eligible(cpu, Instruction::kRelative, true, true));
    EXPECT_TRUE(model.dme_eligible(cpu, 0, 5));
}

} // namespace
