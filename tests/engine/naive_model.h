// A deliberately naive second model of AMD Lightweight Profiling, written
// straight from the spec (AMD publication 43724 rev 3.08, "spec") and the
// "Engine rules" of docs/implementation-choices.md ("row N"), for the
// differential test.  It shares no code with tcg-helpers/ and does not
// include its headers: the constants below are copied again from the spec's
// tables.  It favours the obvious slow way over speed: guest memory is a
// byte map, records are assembled byte by byte, every LWPCB field is read
// from memory when it is needed.  Only LWP's copy of the tail is kept, as
// row 21 describes it, because whether the tail is read shows in faults.
//
// Where the spec and the rows leave a detail open, the model takes the
// obvious reading; the first runs against the engine settled these:
// - base + offset wraps at 4G outside 64-bit mode; outside long mode all
//   linear addresses are 32 bits, also those XRSTOR loads;
// - LLWPCB reads, and checks writable, all CbSize bytes but 72-87; the
//   re-read after XRSTOR reads the same bytes;
// - a store reads the tail for the threshold only while the interrupt is
//   enabled and available (Table 6-1: Threshold is ignored otherwise), and
//   checks its writes in the order record, MissedEvents, head;
// - PRV (and so PRD) only with LwpBranchPrediction, DAV only with
//   LwpDataAddress;
// - a record that waits for lwp_sync keeps its gathered bytes in
//   SavedEventRecord and gets the CoreId of its store (row 33).
//
// SPDX-License-Identifier: GPL-2.0-or-later

#ifndef NAIVE_MODEL_H
#define NAIVE_MODEL_H

#include <cstdint>
#include <map>
#include <vector>

namespace naive
{

// The spec's numbers, independently of include/lwp/lwp-arch.h.
namespace spec
{
constexpr uint32_t kRecordSize = 32;   // 2: 32 bytes per record, version 1
constexpr uint32_t kEventOffset = 128; // E: EventInterval1 (Table 3-1 EBX)
constexpr unsigned kMaxEventId = 6;    // Table 2-1
constexpr unsigned kInsEventId = 255;  // 2.7
// Table 6-1: LWPCB byte offsets
constexpr uint32_t kCbFlags = 0;
constexpr uint32_t kCbBufferSize = 4;
constexpr uint32_t kCbBufferBase = 8;
constexpr uint32_t kCbHead = 16;
constexpr uint32_t kCbMissed = 24;
constexpr uint32_t kCbThreshold = 32;
constexpr uint32_t kCbFilters = 36;
constexpr uint32_t kCbBaseIp = 40;
constexpr uint32_t kCbLimitIp = 48;
constexpr uint32_t kCbTail = 64;
constexpr uint32_t kCbSoftware = 72; // 72-87: never read or written
constexpr uint32_t kCbSoftwareEnd = 88;
// Figure 6-2 / Table 3-1 EAX and EDX: bit n is EventId n
constexpr uint32_t kFlagInt = 0x80000000u;
constexpr uint32_t kFlagEvents = 0x7eu;
// Figure 6-3: Filters
constexpr uint32_t kFiltMinLatency = 0xffu;
constexpr uint32_t kFiltClf = 1u << 8;
constexpr uint32_t kFiltNbc = 1u << 9;
constexpr uint32_t kFiltRdc = 1u << 10;
constexpr uint32_t kFiltRam = 1u << 11;
constexpr uint32_t kFiltOth = 1u << 12;
constexpr uint32_t kFiltReserved = 0x01ffe000u; // 24:13
constexpr uint32_t kFiltNmb = 1u << 25;
constexpr uint32_t kFiltNpb = 1u << 26;
constexpr uint32_t kFiltNab = 1u << 27;
constexpr uint32_t kFiltNcb = 1u << 28;
constexpr uint32_t kFiltNrb = 1u << 29;
constexpr uint32_t kFiltIpi = 1u << 30;
constexpr uint32_t kFiltIpf = 1u << 31;
// Table 3-1 ECX
constexpr uint32_t kCapDataAddress = 1u << 5;
constexpr uint32_t kCapBranchPrediction = 1u << 28;
constexpr uint32_t kCapIpFiltering = 1u << 29;
constexpr uint32_t kCapCacheLevels = 1u << 30;
constexpr uint32_t kCapCacheLatency = 1u << 31;
// Figure 7-1: the XSAVE area
constexpr uint32_t kXsaveSize = 128;
} // namespace spec

// Guest memory: sparse 4 KiB pages of bytes, each readable and/or writable.
// Unmapped pages are neither.  get/put ignore the permissions (they are the
// harness's and the model's raw access); dirty() lists the 64-byte lines
// put() touched since the last clear_dirty().
class GuestMemory
{
  public:
    static constexpr uint64_t kPageSize = 4096;

    void map(uint64_t addr, uint64_t len); // RW, zero-filled when new
    bool mapped(uint64_t addr) const;
    void set_access(uint64_t addr, bool readable, bool writable);
    bool can_read(uint64_t addr) const;
    bool can_write(uint64_t addr) const;
    uint8_t get(uint64_t addr) const;
    void put(uint64_t addr, uint8_t value);
    uint32_t get32(uint64_t addr) const;
    uint64_t get64(uint64_t addr) const;
    void put32(uint64_t addr, uint32_t value);
    void put64(uint64_t addr, uint64_t value);
    std::vector<uint64_t> page_addrs() const;
    const std::vector<uint64_t> &dirty() const
    {
        return dirty_;
    }
    void clear_dirty()
    {
        dirty_.clear();
    }

  private:
    struct Page {
        std::vector<uint8_t> bytes;
        bool readable = true;
        bool writable = true;
    };
    const Page *find(uint64_t addr) const;
    std::map<uint64_t, Page> pages_;
    std::vector<uint64_t> dirty_;
};

// What the model needs to know about the CPU, as in the spec's terms.
struct Cpu {
    uint64_t lwp_cfg = 0;   // 4.2
    uint32_t cpuid_edx = 0; // Fn8000_001C_EDX: supported
    uint32_t cpuid_ecx = 0; // Fn8000_001C_ECX: capabilities
    bool mode64 = true;     // 64-bit mode
    bool long_mode = true;  // linear addresses are 64-bit (no 4G wrap)
    unsigned va_bits = 48;
    unsigned cpl = 3;
    uint64_t ds_base = 0;
    uint32_t ds_limit = 0xffffffffu;
    bool ds_usable = true;
    bool ds_writable = true;
    bool ds_expand_down = false;
    bool ds_big = true;
};

struct Outcome {
    enum Kind { kOk, kGp, kPf } kind = kOk;
    uint64_t fault_byte = 0;  // kPf: the first byte that is not accessible
    uint64_t fault_start = 0; // kPf: the access it belongs to (diagnostics)
    uint32_t fault_len = 0;
    bool fault_write = false;
    bool interrupt = false;
    bool full = false;
    unsigned stored = 0;
};

// One retired instruction; events has bit n set for EventId n.
struct Instruction {
    uint64_t ip = 0;
    uint32_t events = 0;
    uint32_t core_clocks = 0; // CNH
    uint32_t ref_clocks = 0;  // RNH
    uint64_t next_ip = 0;     // BRE target
    enum Kind { kConditional, kRelative, kIndirect } kind = kConditional;
    bool taken = false;
    bool prediction_known = false;
    bool predicted_correctly = false;
    bool fused = false;
    unsigned data_source = 0; // DME SRC
    bool address_known = false;
    uint32_t latency = 0;
    uint64_t data_address = 0;
};

class Model
{
  public:
    explicit Model(GuestMemory &mem) : mem_(mem)
    {
    }

    // The instructions and events (spec 5.1-5.4, 1.1, rows 14-28)
    Outcome llwpcb(const Cpu &cpu, uint64_t ea);
    Outcome slwpcb(const Cpu &cpu, uint64_t *ea);
    Outcome lwpins(const Cpu &cpu, uint64_t ip, uint32_t data1, uint64_t data2,
                   uint32_t imm);
    bool lwpval_fires(const Cpu &cpu, uint64_t ip) const;
    Outcome lwpval(const Cpu &cpu, uint64_t ip, uint32_t data1, uint64_t data2,
                   uint32_t imm);
    Outcome retire(const Cpu &cpu, const Instruction &insn);
    Outcome sync(const Cpu &cpu);
    bool needs_sync() const;
    int32_t next_interval(unsigned event_id);

    // Filters (Table 6-2, rows 27-28)
    bool ip_eligible(const Cpu &cpu, uint64_t ip) const;
    bool branch_eligible(const Cpu &cpu, Instruction::Kind kind, bool known,
                         bool correct) const;
    bool dme_eligible(const Cpu &cpu, uint32_t latency, unsigned source) const;
    uint32_t counted_events(const Cpu &cpu, const Instruction &insn) const;

    // XSAVE/XRSTOR of component 62 (spec 7, rows 29-30); area NULL: the
    // processor supplied values
    bool xsave(uint8_t area[spec::kXsaveSize]) const;
    bool xrstor(const Cpu &cpu, const uint8_t *area);

    // LWP_CBADDR = 0 (spec 4.3)
    void disable();
    bool enabled() const
    {
        return cb_ != 0;
    }

    // Generic splitmix64 (Steele, Lea, Flood 2014), public for self-tests
    static uint64_t splitmix64(uint64_t *state);

  private:
    // accesses at linear addresses, failing into *out (kPf)
    uint64_t wrap(const Cpu &cpu, uint64_t lin) const;
    bool load(const Cpu &cpu, uint64_t lin, uint32_t len, uint8_t *buf,
              Outcome *out) const;
    bool probe(const Cpu &cpu, uint64_t lin, uint32_t len, Outcome *out) const;
    void save(const Cpu &cpu, uint64_t lin, const uint8_t *buf, uint32_t len);
    bool read_lwpcb(const Cpu &cpu, uint64_t cb, uint32_t cbsize, uint8_t *img,
                    Outcome *out) const;
    bool segment_ok(const Cpu &cpu, uint64_t ea, uint64_t size) const;
    bool xrstor_check(const Cpu &cpu, uint64_t lin, uint64_t size) const;
    uint64_t to_linear(const Cpu &cpu, uint64_t ea) const;
    uint32_t available(const Cpu &cpu) const;
    uint32_t cb_size(const Cpu &cpu) const;
    uint32_t min_ring_bytes(const Cpu &cpu) const;
    uint32_t cap_latency(const Cpu &cpu, uint64_t cycles) const;

    void gather(const Cpu &cpu, unsigned id, const Instruction &insn,
                uint8_t rec[spec::kRecordSize]) const;
    bool put_record(const Cpu &cpu, const uint8_t rec[spec::kRecordSize],
                    Outcome *out);
    void reset_counter(unsigned id);
    bool store_saved_record(const Cpu &cpu, Outcome *out);
    bool flush(const Cpu &cpu, Outcome *out);

    GuestMemory &mem_;
    // LWP's internal state, in the spec's words
    uint64_t cb_ = 0;     // LWP_CBADDR, linear
    uint32_t events_ = 0; // enabled EventIds (bit n)
    bool int_on_ = false; // threshold interrupts enabled
    uint64_t ring_ = 0;   // ring buffer, linear
    uint32_t size_ = 0;   // BufferSize, rounded down to 32
    uint32_t head_ = 0;   // BufferHeadOffset
    uint32_t tail_ = 0;   // LWP's copy of BufferTailOffset (8.3)
    uint32_t threshold_ = 0;
    uint32_t filters_ = 0;
    uint32_t random_ = 0;
    uint64_t base_ip_ = 0;
    uint64_t limit_ip_ = 0;
    int32_t interval_[spec::kMaxEventId + 1] = {};
    int32_t counter_[spec::kMaxEventId + 1] = {};
    uint64_t rng_ = 0;
    uint8_t saved_[24] = {}; // SavedEventRecord bytes 0-23
    bool stale_ = false;     // LWPCB fields to re-read (XRSTOR, 8.2.5)
};

} // namespace naive

#endif
