// Fake guest memory for the engine tests, and the fixture they share.
//
// FakeMem is a sparse byte map with per-4KiB-page read/write permission
// flags that implements LwpMemOps.  It checks the engine's side of the
// LwpMemOps contract (lwp-engine.h): every write must lie in one range that
// probe_write accepted earlier in the same engine call.  A test starts each
// call with call(), which forgets the accepted ranges and returns the
// LwpMem to pass.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#ifndef LWP_TESTS_ENGINE_FAKE_MEM_H
#define LWP_TESTS_ENGINE_FAKE_MEM_H

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "lwp-engine-test.hh"

namespace lwptest
{

constexpr uint64_t kPageSize = 0x1000;

// Page permissions, as seen by CPL-3 accesses
enum Perm : uint8_t {
    kNone = 0,
    kRead = 1,
    kWrite = 2,
    kReadWrite = 3,
};

// One call of an LwpMemOps callback, for tests that look at the order
struct Access {
    char kind; // 'r' read, 'p' probe_write, 'w' write
    uint64_t addr;
    uint32_t len;
    bool ok;
};

class FakeMem
{
  public:
    using Page = std::array<uint8_t, kPageSize>;

    FakeMem()
    {
        ops_.read = &FakeMem::read_cb;
        ops_.probe_write = &FakeMem::probe_cb;
        ops_.write = &FakeMem::write_cb;
    }
    FakeMem(const FakeMem &) = delete;
    FakeMem &operator=(const FakeMem &) = delete;

    // Give every page that [addr, addr + len) touches the permission @perm
    void map(uint64_t addr, uint64_t len, uint8_t perm)
    {
        if (len == 0) {
            return;
        }
        uint64_t first = addr & ~(kPageSize - 1);
        uint64_t last = (addr + (len - 1)) & ~(kPageSize - 1);
        for (uint64_t p = first;; p += kPageSize) {
            perm_[p] = perm;
            pages_[p]; // materialise, zero-filled
            if (p == last) {
                break;
            }
        }
    }

    uint8_t perm(uint64_t addr) const
    {
        auto it = perm_.find(addr & ~(kPageSize - 1));
        return it == perm_.end() ? uint8_t{kNone} : it->second;
    }

    // Test-side access, without permission checks or logging
    void poke(uint64_t addr, const void *buf, size_t len)
    {
        const uint8_t *b = static_cast<const uint8_t *>(buf);
        for (size_t i = 0; i < len; i++) {
            uint64_t a = addr + i;
            pages_[a & ~(kPageSize - 1)][a & (kPageSize - 1)] = b[i];
        }
    }
    void peek(uint64_t addr, void *buf, size_t len) const
    {
        uint8_t *b = static_cast<uint8_t *>(buf);
        for (size_t i = 0; i < len; i++) {
            uint64_t a = addr + i;
            auto it = pages_.find(a & ~(kPageSize - 1));
            b[i] = it == pages_.end() ? 0 : it->second[a & (kPageSize - 1)];
        }
    }
    void poke8(uint64_t addr, uint8_t v)
    {
        poke(addr, &v, 1);
    }
    void poke16(uint64_t addr, uint16_t v)
    {
        put_le(addr, v, 2);
    }
    void poke32(uint64_t addr, uint32_t v)
    {
        put_le(addr, v, 4);
    }
    void poke64(uint64_t addr, uint64_t v)
    {
        put_le(addr, v, 8);
    }
    uint8_t peek8(uint64_t addr) const
    {
        return static_cast<uint8_t>(get_le(addr, 1));
    }
    uint16_t peek16(uint64_t addr) const
    {
        return static_cast<uint16_t>(get_le(addr, 2));
    }
    uint32_t peek32(uint64_t addr) const
    {
        return static_cast<uint32_t>(get_le(addr, 4));
    }
    uint64_t peek64(uint64_t addr) const
    {
        return get_le(addr, 8);
    }
    std::vector<uint8_t> bytes(uint64_t addr, size_t len) const
    {
        std::vector<uint8_t> v(len);
        peek(addr, v.data(), len);
        return v;
    }

    // Every byte of every page, to check that a call left memory untouched
    std::map<uint64_t, Page> snapshot() const
    {
        return pages_;
    }

    // Start an engine call: forget the accepted probes, return the LwpMem
    LwpMem call()
    {
        accepted_.clear();
        return LwpMem{&ops_, this};
    }

    const std::vector<Access> &log() const
    {
        return log_;
    }
    void clear_log()
    {
        log_.clear();
    }
    size_t count(char kind) const
    {
        size_t n = 0;
        for (const Access &a : log_) {
            n += a.kind == kind;
        }
        return n;
    }
    // Index in log() of the first write that overlaps [addr, addr + len)
    long first_write(uint64_t addr, uint32_t len) const
    {
        for (size_t i = 0; i < log_.size(); i++) {
            const Access &a = log_[i];
            if (a.kind == 'w' && a.addr < addr + len && addr < a.addr + a.len) {
                return static_cast<long>(i);
            }
        }
        return -1;
    }

  private:
    bool allowed(uint64_t addr, uint32_t len, uint8_t need) const
    {
        if (len == 0) {
            return true;
        }
        uint64_t first = addr & ~(kPageSize - 1);
        uint64_t last = (addr + (len - 1)) & ~(kPageSize - 1);
        for (uint64_t p = first;; p += kPageSize) {
            if ((perm(p) & need) != need) {
                return false;
            }
            if (p == last) {
                return true;
            }
        }
    }

    void put_le(uint64_t addr, uint64_t v, int n)
    {
        for (int i = 0; i < n; i++) {
            poke8(addr + i, static_cast<uint8_t>(v >> (8 * i)));
        }
    }
    uint64_t get_le(uint64_t addr, int n) const
    {
        uint8_t b[8];
        peek(addr, b, n);
        uint64_t v = 0;
        for (int i = n - 1; i >= 0; i--) {
            v = (v << 8) | b[i];
        }
        return v;
    }

    static bool read_cb(void *opaque, uint64_t addr, void *buf, uint32_t len)
    {
        FakeMem *m = static_cast<FakeMem *>(opaque);
        bool ok = m->allowed(addr, len, kRead);
        m->log_.push_back({'r', addr, len, ok});
        if (ok) {
            m->peek(addr, buf, len);
        }
        return ok;
    }

    static bool probe_cb(void *opaque, uint64_t addr, uint32_t len)
    {
        FakeMem *m = static_cast<FakeMem *>(opaque);
        bool ok = m->allowed(addr, len, kWrite);
        m->log_.push_back({'p', addr, len, ok});
        if (ok) {
            m->accepted_.push_back({addr, len});
        }
        return ok;
    }

    static void write_cb(void *opaque, uint64_t addr, const void *buf,
                         uint32_t len)
    {
        FakeMem *m = static_cast<FakeMem *>(opaque);
        bool probed = false;
        for (const auto &r : m->accepted_) {
            // [addr, addr + len) within [r.first, r.first + r.second)
            if (addr >= r.first && addr - r.first <= r.second &&
                len <= r.second - (addr - r.first)) {
                probed = true;
                break;
            }
        }
        m->log_.push_back({'w', addr, len, probed});
        if (!probed) {
            ADD_FAILURE() << "engine wrote " << len << " bytes at 0x"
                          << std::hex << addr
                          << " outside every range probe_write accepted "
                             "earlier in the same call";
        }
        if (!m->allowed(addr, len, kWrite)) {
            ADD_FAILURE()
                << "engine wrote to a page that is not writable, at 0x"
                << std::hex << addr;
            return;
        }
        m->poke(addr, buf, len);
    }

    LwpMemOps ops_;
    std::map<uint64_t, Page> pages_;
    std::map<uint64_t, uint8_t> perm_;
    std::vector<std::pair<uint64_t, uint32_t>> accepted_;
    std::vector<Access> log_;
};

// One instruction at @ip that caused @events, taking one clock for CNH and
// RNH (no branch or DME data)
inline LwpEventInfo plain_insn(uint64_t ip, uint32_t events)
{
    LwpEventInfo info{};
    info.ip = ip;
    info.events = events;
    info.cycles = (events & LWP_FEAT_CNH) ? 1 : 0;
    info.ref_cycles = (events & LWP_FEAT_RNH) ? 1 : 0;
    return info;
}

// ---------------------------------------------------------------------------
// An LWPCB image (spec 6, Figure 6-1, Table 6-1), written field by field.
// interval[n] and counter[n] are the raw dwords (bits 31:26 included).
struct Lwpcb {
    uint32_t flags = 0;
    uint32_t buffer_size = 0; // bits 27:0 of the dword at 4
    uint8_t random = 0;       // bits 31:28 of the dword at 4
    uint64_t buffer_base = 0;
    uint32_t head = 0;
    uint64_t missed = 0;
    uint32_t threshold = 0;
    uint32_t filters = 0;
    uint64_t base_ip = 0;
    uint64_t limit_ip = 0;
    uint32_t tail = 0;
    uint32_t interval[LWP_NUM_EVENTS + 1] = {};
    uint32_t counter[LWP_NUM_EVENTS + 1] = {};

    // Write E + 8 * @events bytes at @addr: every other byte is zero
    void write(FakeMem &m, uint64_t addr,
               unsigned events = LWP_NUM_EVENTS) const
    {
        std::vector<uint8_t> zero(LWP_EVENT_OFFSET + 8 * events);
        m.poke(addr, zero.data(), zero.size());
        m.poke32(addr + LWPCB_FLAGS, flags);
        m.poke32(addr + LWPCB_BUFFER_SIZE,
                 (buffer_size & LWPCB_BUFFER_SIZE_MASK) |
                     (uint32_t{random} << LWPCB_RANDOM_SHIFT));
        m.poke64(addr + LWPCB_BUFFER_BASE, buffer_base);
        m.poke32(addr + LWPCB_HEAD, head);
        m.poke64(addr + LWPCB_MISSED, missed);
        m.poke32(addr + LWPCB_THRESHOLD, threshold);
        m.poke32(addr + LWPCB_FILTERS, filters);
        m.poke64(addr + LWPCB_BASE_IP, base_ip);
        m.poke64(addr + LWPCB_LIMIT_IP, limit_ip);
        m.poke32(addr + LWPCB_TAIL, tail);
        for (unsigned n = 1; n <= events; n++) {
            m.poke32(addr + LWPCB_INTERVAL(LWP_EVENT_OFFSET, n), interval[n]);
            m.poke32(addr + LWPCB_COUNTER(LWP_EVENT_OFFSET, n), counter[n]);
        }
    }
};

using Record = std::array<uint8_t, LWP_EVENT_RECORD_SIZE>;

// A record as Figure 2-1 lays it out: @word0 is bytes 3-0 (EventId in 7:0,
// CoreId in 15:8, Flags in 31:16), bytes 31-24 are reserved and zero.
inline Record make_record(uint32_t word0, uint32_t data1, uint64_t ip,
                          uint64_t data2)
{
    Record r{};
    for (int i = 0; i < 4; i++) {
        r[i] = static_cast<uint8_t>(word0 >> (8 * i));
        r[4 + i] = static_cast<uint8_t>(data1 >> (8 * i));
    }
    for (int i = 0; i < 8; i++) {
        r[8 + i] = static_cast<uint8_t>(ip >> (8 * i));
        r[16 + i] = static_cast<uint8_t>(data2 >> (8 * i));
    }
    return r;
}

// Names each case of a parameterized test after its member name, so that
// a table keeps the names its cases had as tests of their own
struct CaseName {
    template <typename Param>
    std::string operator()(const ::testing::TestParamInfo<Param> &i) const
    {
        return i.param.name;
    }
};

// A record written out byte by byte, as the spec's figures number them:
// 32 two-digit hexadecimal bytes, byte 0 first, separated by blanks
inline Record record_bytes(const char *hex)
{
    Record r{};
    size_t n = 0;
    for (const char *p = hex; *p != '\0';) {
        if (*p == ' ') {
            p++;
            continue;
        }
        unsigned byte = 0;
        for (int k = 0; k < 2; k++, p++) {
            byte = byte << 4 |
                   (*p <= '9' ? unsigned(*p - '0') : unsigned(*p - 'a' + 10));
        }
        if (n < r.size()) {
            r[n] = static_cast<uint8_t>(byte);
        }
        n++;
    }
    EXPECT_EQ(n, r.size()) << "record_bytes(\"" << hex << "\")";
    return r;
}

// ---------------------------------------------------------------------------
// The fixture: a 64-bit CPL-3 thread on a CPU that supports everything.
class EngineTest : public ::testing::Test
{
  protected:
    static constexpr uint64_t kCb = 0x10000;  // LWPCB, linear = effective
    static constexpr uint64_t kBuf = 0x20000; // ring buffer
    static constexpr uint32_t kSize = 0x400;  // the minimum: 32 records
    static constexpr uint8_t kCore = 0x2a;    // LWP_CFG[39:32]
    // CPUID 8000_001C EDX: LwpAvail, events 1-6, LwpInt
    static constexpr uint32_t kEdx = 0x8000007f;
    // LWP_CFG: every supported feature, COREID 0x2a, VECTOR 0
    static constexpr uint64_t kCfg = 0x0000002a8000007eull;
    // CPUID 8000_001C ECX: LatencyMax 10, DataAddress, LatencyRnd 4,
    // Version 1, MinBufferSize 1, BranchPrediction, IpFiltering,
    // CacheLevels, CacheLatency
    static constexpr uint32_t kEcx = 0xf001032a;
    // LwpCbSize with all six events: (0x80 / 8 + 6) quadwords
    static constexpr uint32_t kCbSize = 0xb0;

    void SetUp() override
    {
        lwp_state_init(&s);
        ctx.cfg = kCfg;
        ctx.edx = kEdx;
        ctx.ecx = kEcx;
        ctx.ds_base = 0;
        ctx.ds_limit = 0xffffffff;
        ctx.ds_flags = LWP_DS_USABLE | LWP_DS_WRITABLE;
        ctx.long64 = 1;
        ctx.lma = 1;
        ctx.va_bits = 48;
        ctx.cpl = 3;
        m.map(kCb, kPageSize, kReadWrite);
        m.map(kBuf, kPageSize, kReadWrite);
        cb.buffer_size = kSize;
        cb.buffer_base = kBuf;
        for (unsigned n = 1; n <= LWP_NUM_EVENTS; n++) {
            cb.interval[n] = 0x1000;
        }
    }

    // Stop LWP if it runs (so that no flush lands on the new image), write
    // cb at @at and run LLWPCB on it
    LwpStatus load(uint64_t at = kCb)
    {
        if (s.cb_addr != 0) {
            EXPECT_EQ(llwpcb(0), LWP_OK) << "stopping LWP before a reload";
        }
        cb.write(m, at);
        return llwpcb(at);
    }

    LwpStatus llwpcb(uint64_t ea)
    {
        LwpMem mem = m.call();
        res = LwpResult{};
        LwpStatus st = lwp_llwpcb(&s, &ctx, &mem, ea, &res);
        // every #GP says which rule failed (the glue traces it), and
        // nothing else does
        EXPECT_EQ(st == LWP_FAULT_GP, res.gp_reason != nullptr);
        return st;
    }
    LwpStatus slwpcb(uint64_t *ea)
    {
        LwpMem mem = m.call();
        res = LwpResult{};
        return lwp_slwpcb(&s, &ctx, &mem, ea, &res);
    }
    LwpStatus lwpins(uint64_t ip, uint32_t data1, uint64_t data2,
                     uint32_t flags)
    {
        LwpMem mem = m.call();
        res = LwpResult{};
        return lwp_lwpins(&s, &ctx, &mem, ip, data1, data2, flags, &res);
    }
    LwpStatus lwpval(uint64_t ip, uint32_t data1, uint64_t data2,
                     uint32_t flags)
    {
        LwpMem mem = m.call();
        res = LwpResult{};
        return lwp_lwpval(&s, &ctx, &mem, ip, data1, data2, flags, &res);
    }
    LwpStatus retire(const LwpEventInfo &info)
    {
        LwpMem mem = m.call();
        res = LwpResult{};
        return lwp_retire(&s, &ctx, &mem, &info, &res);
    }
    // One instruction at @ip that caused @events (no branch or DME data)
    LwpStatus retire(uint64_t ip, uint32_t events)
    {
        return retire(plain_insn(ip, events));
    }
    LwpStatus store_events(const LwpEventInfo &info, uint32_t events)
    {
        LwpMem mem = m.call();
        res = LwpResult{};
        return lwp_store_events(&s, &ctx, &mem, &info, events, &res);
    }
    LwpStatus sync()
    {
        LwpMem mem = m.call();
        res = LwpResult{};
        return lwp_sync(&s, &ctx, &mem, &res);
    }

    // The ring buffer slot @n and the LWPCB fields LWP writes
    Record slot(unsigned n) const
    {
        Record r;
        m.peek(kBuf + LWP_EVENT_RECORD_SIZE * n, r.data(), r.size());
        return r;
    }
    uint32_t head_in_lwpcb(uint64_t at = kCb) const
    {
        return m.peek32(at + LWPCB_HEAD);
    }
    uint64_t missed_in_lwpcb(uint64_t at = kCb) const
    {
        return m.peek64(at + LWPCB_MISSED);
    }

    // The failed access LWP_FAULT_PF reports, [fault_addr, + fault_len),
    // holds @addr / lies within [@lo, @lo + @len)
    bool fault_covers(uint64_t addr) const
    {
        return res.fault_addr <= addr && addr - res.fault_addr < res.fault_len;
    }
    bool fault_within(uint64_t lo, uint64_t len) const
    {
        return res.fault_len > 0 && res.fault_addr >= lo &&
               res.fault_addr - lo <= len &&
               res.fault_len <= len - (res.fault_addr - lo);
    }

    FakeMem m;
    LwpState s;
    LwpContext ctx{};
    LwpResult res{};
    Lwpcb cb;
};

// splitmix64 (Steele, Lea, Flood 2014), the reference for doc row 18
inline uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

} // namespace lwptest

#endif // LWP_TESTS_ENGINE_FAKE_MEM_H
