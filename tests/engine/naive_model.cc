// The naive LWP model: see naive_model.h.  Every rule cites the spec
// section or the row of docs/implementation-choices.md it implements.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include "naive_model.h"

#include <cstring>

namespace naive
{

using namespace spec;

namespace
{

uint32_t le32(const uint8_t *p)
{
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
           uint32_t(p[3]) << 24;
}

uint64_t le64(const uint8_t *p)
{
    return uint64_t(le32(p)) | uint64_t(le32(p + 4)) << 32;
}

void set_le16(uint8_t *p, uint16_t v)
{
    p[0] = uint8_t(v);
    p[1] = uint8_t(v >> 8);
}

void set_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = uint8_t(v >> (8 * i));
    }
}

void set_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = uint8_t(v >> (8 * i));
    }
}

// Row 16: EventInterval/EventCounter are 26-bit signed, bits 31:26 ignored
int32_t field26(uint32_t raw)
{
    int32_t v = int32_t(raw & 0x03ffffffu);
    if (v & 0x02000000) {
        v -= 0x04000000;
    }
    return v;
}

// Row 17: the minimum interval
int32_t min_interval(unsigned id)
{
    return id == 1 ? 0 : 1;
}

bool has_event(uint32_t mask, unsigned id)
{
    return (mask >> id) & 1;
}

// Row 23: a tail that breaks the rules
uint32_t clean_tail(uint32_t raw, uint32_t size)
{
    return (raw % size) / kRecordSize * kRecordSize;
}

} // namespace

// ---------------------------------------------------------------------------
// GuestMemory

const GuestMemory::Page *GuestMemory::find(uint64_t addr) const
{
    auto it = pages_.find(addr / kPageSize);
    return it == pages_.end() ? nullptr : &it->second;
}

void GuestMemory::map(uint64_t addr, uint64_t len)
{
    for (uint64_t p = addr / kPageSize; p <= (addr + len - 1) / kPageSize;
         p++) {
        Page &page = pages_[p];
        if (page.bytes.empty()) {
            page.bytes.assign(kPageSize, 0);
            dirty_.push_back(p * kPageSize / 64);
        }
        page.readable = page.writable = true;
    }
}

bool GuestMemory::mapped(uint64_t addr) const
{
    return find(addr) != nullptr;
}

void GuestMemory::set_access(uint64_t addr, bool readable, bool writable)
{
    auto it = pages_.find(addr / kPageSize);
    if (it != pages_.end()) {
        it->second.readable = readable;
        it->second.writable = writable;
    }
}

bool GuestMemory::can_read(uint64_t addr) const
{
    const Page *p = find(addr);
    return p && p->readable;
}

bool GuestMemory::can_write(uint64_t addr) const
{
    const Page *p = find(addr);
    return p && p->writable;
}

uint8_t GuestMemory::get(uint64_t addr) const
{
    const Page *p = find(addr);
    return p ? p->bytes[addr % kPageSize] : 0;
}

void GuestMemory::put(uint64_t addr, uint8_t value)
{
    auto it = pages_.find(addr / kPageSize);
    if (it == pages_.end()) {
        return;
    }
    it->second.bytes[addr % kPageSize] = value;
    if (dirty_.empty() || dirty_.back() != addr / 64) {
        dirty_.push_back(addr / 64);
    }
}

uint32_t GuestMemory::get32(uint64_t addr) const
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) {
        v = v << 8 | get(addr + i);
    }
    return v;
}

uint64_t GuestMemory::get64(uint64_t addr) const
{
    return uint64_t(get32(addr)) | uint64_t(get32(addr + 4)) << 32;
}

void GuestMemory::put32(uint64_t addr, uint32_t value)
{
    for (int i = 0; i < 4; i++) {
        put(addr + i, uint8_t(value >> (8 * i)));
    }
}

void GuestMemory::put64(uint64_t addr, uint64_t value)
{
    put32(addr, uint32_t(value));
    put32(addr + 4, uint32_t(value >> 32));
}

std::vector<uint64_t> GuestMemory::page_addrs() const
{
    std::vector<uint64_t> v;
    for (const auto &kv : pages_) {
        v.push_back(kv.first * kPageSize);
    }
    return v;
}

// ---------------------------------------------------------------------------
// Addresses and checks

uint64_t Model::splitmix64(uint64_t *state)
{
    *state += 0x9E3779B97F4A7C15ull;
    uint64_t z = *state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Outside long mode, linear addresses are 32 bits and wrap at 4G
uint64_t Model::wrap(const Cpu &cpu, uint64_t lin) const
{
    return cpu.long_mode ? lin : lin & 0xffffffffu;
}

bool Model::load(const Cpu &cpu, uint64_t lin, uint32_t len, uint8_t *buf,
                 Outcome *out) const
{
    for (uint32_t i = 0; i < len; i++) {
        uint64_t a = wrap(cpu, lin + i);
        if (!mem_.can_read(a)) {
            out->kind = Outcome::kPf;
            out->fault_byte = a;
            out->fault_start = wrap(cpu, lin);
            out->fault_len = len;
            out->fault_write = false;
            return false;
        }
        buf[i] = mem_.get(a);
    }
    return true;
}

bool Model::probe(const Cpu &cpu, uint64_t lin, uint32_t len,
                  Outcome *out) const
{
    for (uint32_t i = 0; i < len; i++) {
        uint64_t a = wrap(cpu, lin + i);
        if (!mem_.can_write(a)) {
            out->kind = Outcome::kPf;
            out->fault_byte = a;
            out->fault_start = wrap(cpu, lin);
            out->fault_len = len;
            out->fault_write = true;
            return false;
        }
    }
    return true;
}

void Model::save(const Cpu &cpu, uint64_t lin, const uint8_t *buf, uint32_t len)
{
    for (uint32_t i = 0; i < len; i++) {
        mem_.put(wrap(cpu, lin + i), buf[i]);
    }
}

// 5.1 step 5: effective to linear
uint64_t Model::to_linear(const Cpu &cpu, uint64_t ea) const
{
    if (cpu.mode64) {
        return ea;
    }
    // a 32-bit address: base + offset wraps at 4G (only a range that
    // starts below 4G may run past it in compatibility mode)
    return (cpu.ds_base + (ea & 0xffffffffu)) & 0xffffffffu;
}

// Row 31: the segment check of a store to [ea, ea + size - 1]
bool Model::segment_ok(const Cpu &cpu, uint64_t ea, uint64_t size) const
{
    if (cpu.mode64) {
        uint64_t top = ea + size - 1;
        if (top < ea) {
            return false; // wraps
        }
        auto canonical = [&](uint64_t a) {
            int64_t s = int64_t(a << (64 - cpu.va_bits)) >> (64 - cpu.va_bits);
            return uint64_t(s) == a;
        };
        return canonical(ea) && canonical(top);
    }
    uint64_t top = ea + size - 1;
    if (ea > 0xffffffffu || top > 0xffffffffu) {
        return false;
    }
    if (!cpu.ds_usable || !cpu.ds_writable) {
        return false;
    }
    if (cpu.ds_expand_down) {
        uint64_t upper = cpu.ds_big ? 0xffffffffu : 0xffffu;
        return ea > cpu.ds_limit && top <= upper;
    }
    return top <= cpu.ds_limit;
}

// Spec 7.4, Check(): at CPL != 0, addresses from the XSAVE area
bool Model::xrstor_check(const Cpu &cpu, uint64_t lin, uint64_t size) const
{
    uint64_t addr = lin;
    if (!cpu.mode64) {
        addr = (lin - cpu.ds_base) & 0xffffffffu;
    }
    return segment_ok(cpu, addr, size);
}

// Glossary "Available": supported, and turned on in LWP_CFG
uint32_t Model::available(const Cpu &cpu) const
{
    return uint32_t(cpu.lwp_cfg) & cpu.cpuid_edx & (kFlagEvents | kFlagInt);
}

// Table 3-1: LwpCbSize * 8 = E + 8 * LwpMaxEvents (the highest supported)
uint32_t Model::cb_size(const Cpu &cpu) const
{
    unsigned max_id = 0;
    for (unsigned id = 1; id <= kMaxEventId; id++) {
        if (has_event(cpu.cpuid_edx, id)) {
            max_id = id;
        }
    }
    return kEventOffset + 8 * max_id;
}

// Table 3-1 LwpMinBufferSize; row 32
uint32_t Model::min_ring_bytes(const Cpu &cpu) const
{
    uint32_t units = (cpu.cpuid_ecx >> 16) & 0xff;
    uint32_t bytes = units * 32 * kRecordSize;
    return bytes < kRecordSize ? kRecordSize : bytes;
}

// Row 28: latency capped at 2^LatencyMax - 2^LatencyRnd, rounded down
uint32_t Model::cap_latency(const Cpu &cpu, uint64_t cycles) const
{
    unsigned max_bits = cpu.cpuid_ecx & 0x1f;
    unsigned rnd_bits = (cpu.cpuid_ecx >> 6) & 7;
    uint64_t cap = (uint64_t(1) << max_bits) - (uint64_t(1) << rnd_bits);
    if (cycles > cap) {
        cycles = cap;
    }
    return uint32_t(cycles >> rnd_bits << rnd_bits);
}

// ---------------------------------------------------------------------------
// Filters (Table 6-2, rows 27 and 28)

bool Model::ip_eligible(const Cpu &cpu, uint64_t ip) const
{
    if (!(cpu.cpuid_ecx & kCapIpFiltering) || !(filters_ & kFiltIpf)) {
        return true;
    }
    bool inside = base_ip_ <= ip && ip <= limit_ip_;
    bool invert = (filters_ & kFiltIpi) != 0;
    return inside != invert;
}

bool Model::branch_eligible(const Cpu &cpu, Instruction::Kind kind, bool known,
                            bool correct) const
{
    if (kind == Instruction::kConditional && (filters_ & kFiltNcb)) {
        return false;
    }
    if (kind == Instruction::kRelative && (filters_ & kFiltNrb)) {
        return false;
    }
    if (kind == Instruction::kIndirect && (filters_ & kFiltNab)) {
        return false;
    }
    if ((cpu.cpuid_ecx & kCapBranchPrediction) && known) {
        if (correct && (filters_ & kFiltNpb)) {
            return false;
        }
        if (!correct && (filters_ & kFiltNmb)) {
            return false;
        }
    }
    return true;
}

bool Model::dme_eligible(const Cpu &cpu, uint32_t latency,
                         unsigned source) const
{
    if (cpu.cpuid_ecx & kCapCacheLatency) {
        uint32_t minimum = cap_latency(cpu, (filters_ & kFiltMinLatency) * 16);
        if (minimum > cap_latency(cpu, latency)) {
            return false;
        }
    }
    if ((cpu.cpuid_ecx & kCapCacheLevels) && (filters_ & kFiltClf)) {
        uint32_t needed;
        switch (source) {
        case 1:
            needed = kFiltNbc;
            break;
        case 2:
        case 4:
            needed = kFiltRdc;
            break;
        case 3:
            needed = kFiltRam;
            break;
        case 7:
            needed = kFiltOth;
            break;
        default:
            return false;
        }
        if (!(filters_ & needed)) {
            return false;
        }
    }
    return true;
}

uint32_t Model::counted_events(const Cpu &cpu, const Instruction &insn) const
{
    if (!enabled()) {
        return 0;
    }
    uint32_t counted = 0;
    for (unsigned id = 2; id <= kMaxEventId; id++) {
        if (!has_event(insn.events, id) || !has_event(events_, id)) {
            continue;
        }
        if (!ip_eligible(cpu, insn.ip)) {
            continue;
        }
        if (id == 3 && !branch_eligible(cpu, insn.kind, insn.prediction_known,
                                        insn.predicted_correctly)) {
            continue;
        }
        if (id == 4 && !dme_eligible(cpu, insn.latency, insn.data_source)) {
            continue;
        }
        counted |= 1u << id;
    }
    return counted;
}

// ---------------------------------------------------------------------------
// Records and the ring buffer

// Figures 2-1 to 2-7, row 33 (CoreId), for EventIds 2-6
void Model::gather(const Cpu &cpu, unsigned id, const Instruction &insn,
                   uint8_t rec[kRecordSize]) const
{
    std::memset(rec, 0, kRecordSize);
    rec[0] = uint8_t(id);
    rec[1] = uint8_t(cpu.lwp_cfg >> 32);
    set_le64(rec + 8, insn.ip);
    if (id == 3) { // Figure 2-4: bits 28-31 of the first dword
        uint16_t f = 0;
        if (insn.fused) {
            f |= 1u << 12;
        }
        // PRV: only where LwpBranchPrediction says LWP knows predictions
        if (insn.prediction_known && (cpu.cpuid_ecx & kCapBranchPrediction)) {
            f |= 1u << 13;
            if (insn.predicted_correctly) {
                f |= 1u << 14;
            }
        }
        if (insn.taken) {
            f |= 1u << 15;
        }
        set_le16(rec + 2, f);
        set_le64(rec + 16, insn.next_ip);
    } else if (id == 4) { // Figure 2-5
        bool dav = insn.address_known && (cpu.cpuid_ecx & kCapDataAddress);
        uint16_t f = uint16_t((insn.data_source & 7) << 13);
        if (dav) {
            f |= 1u << 12;
            set_le64(rec + 16, insn.data_address);
        }
        set_le16(rec + 2, f);
        set_le32(rec + 4, cap_latency(cpu, insn.latency));
    }
}

// 1.1 step 3, rows 21-22 and 25: store one record.  Reads first (the tail
// when LWP's copy says full or over threshold, MissedEvents when full),
// then checks every write, then writes: record, MissedEvents, head.
bool Model::put_record(const Cpu &cpu, const uint8_t rec[kRecordSize],
                       Outcome *out)
{
    uint32_t tail = tail_;
    uint32_t next = (head_ + kRecordSize) % size_;
    bool copy_full = next == tail_;
    uint32_t copy_used = ((copy_full ? head_ : next) + size_ - tail_) % size_;
    // Threshold is ignored without the interrupt (Table 6-1)
    bool int_ready = int_on_ && (available(cpu) & kFlagInt);
    if (copy_full || (int_ready && copy_used >= threshold_)) {
        uint8_t b[4];
        if (!load(cpu, cb_ + kCbTail, 4, b, out)) {
            return false;
        }
        tail = clean_tail(le32(b), size_);
    }
    bool full = next == tail;
    uint64_t missed = 0;
    if (full) {
        uint8_t b[8];
        if (!load(cpu, cb_ + kCbMissed, 8, b, out)) {
            return false;
        }
        missed = le64(b);
    }
    if (!probe(cpu, ring_ + head_, kRecordSize, out)) {
        return false;
    }
    if (full && !probe(cpu, cb_ + kCbMissed, 8, out)) {
        return false;
    }
    if (!probe(cpu, cb_ + kCbHead, 4, out)) {
        return false;
    }
    save(cpu, ring_ + head_, rec, kRecordSize);
    if (full) {
        uint8_t b[8];
        set_le64(b, missed + 1);
        save(cpu, cb_ + kCbMissed, b, 8);
    } else {
        head_ = next;
    }
    uint8_t b[4];
    set_le32(b, head_);
    save(cpu, cb_ + kCbHead, b, 4);
    tail_ = tail;
    // Table 6-1 Threshold: checked "when LWP advances BufferHeadOffset",
    // which a record that finds the ring full does not
    uint32_t used = (head_ + size_ - tail) % size_;
    if (!full && used >= threshold_ && int_ready) {
        out->interrupt = true;
    }
    out->full = full;
    out->stored++;
    return true;
}

// 1.1 step 5, rows 17-19
void Model::reset_counter(unsigned id)
{
    int32_t reset = interval_[id];
    if (random_ != 0) {
        uint32_t m = (1u << random_) - 1;
        uint32_t x = uint32_t(splitmix64(&rng_));
        reset = int32_t((uint32_t(reset) & ~m) | (x & m));
    }
    int32_t c = counter_[id];
    int64_t v = reset;
    if (c <= -1) {
        v = int64_t(reset) + (c + 1);
    }
    counter_[id] = v < 0 ? 0 : int32_t(v);
}

int32_t Model::next_interval(unsigned id)
{
    int32_t reset = interval_[id];
    if (random_ != 0) {
        uint32_t m = (1u << random_) - 1;
        uint32_t x = uint32_t(splitmix64(&rng_));
        reset = int32_t((uint32_t(reset) & ~m) | (x & m));
    }
    return reset;
}

// Row 25: the pending record, CoreId as of now (row 33)
bool Model::store_saved_record(const Cpu &cpu, Outcome *out)
{
    uint8_t rec[kRecordSize] = {};
    std::memcpy(rec, saved_, sizeof(saved_));
    rec[1] = uint8_t(cpu.lwp_cfg >> 32);
    if (!put_record(cpu, rec, out)) {
        return false;
    }
    unsigned id = saved_[0];
    std::memset(saved_, 0, sizeof(saved_));
    if (id >= 1 && id <= kMaxEventId && has_event(events_, id)) {
        reset_counter(id);
    }
    return true;
}

// Row 26: the pending record, then the counters and the head
bool Model::flush(const Cpu &cpu, Outcome *out)
{
    if (saved_[0] != 0 && !store_saved_record(cpu, out)) {
        return false;
    }
    for (unsigned id = 1; id <= kMaxEventId; id++) {
        if (has_event(events_, id) &&
            !probe(cpu, cb_ + kEventOffset + 8 * (id - 1) + 4, 4, out)) {
            return false;
        }
    }
    if (!probe(cpu, cb_ + kCbHead, 4, out)) {
        return false;
    }
    for (unsigned id = 1; id <= kMaxEventId; id++) {
        if (has_event(events_, id)) {
            uint8_t b[4];
            set_le32(b, uint32_t(counter_[id]) & 0x03ffffffu); // row 16
            save(cpu, cb_ + kEventOffset + 8 * (id - 1) + 4, b, 4);
        }
    }
    uint8_t b[4];
    set_le32(b, head_);
    save(cpu, cb_ + kCbHead, b, 4);
    return true;
}

// ---------------------------------------------------------------------------
// Instructions

void Model::disable()
{
    cb_ = 0;
    events_ = 0;
    int_on_ = false;
    ring_ = 0;
    size_ = head_ = tail_ = threshold_ = filters_ = random_ = 0;
    base_ip_ = limit_ip_ = 0;
    std::memset(interval_, 0, sizeof(interval_));
    std::memset(counter_, 0, sizeof(counter_));
    rng_ = 0;
    std::memset(saved_, 0, sizeof(saved_));
    stale_ = false;
}

bool Model::needs_sync() const
{
    return enabled() && (stale_ || saved_[0] != 0);
}

// Spec 5.1, rows 14-18 and 24
Outcome Model::llwpcb(const Cpu &cpu, uint64_t ea)
{
    Outcome out;
    if (enabled() && !flush(cpu, &out)) {
        return out; // step 2: still enabled
    }
    disable();
    if (ea == 0) {
        return out;
    }
    const uint32_t cbsize = cb_size(cpu);
    // (a)
    if (!segment_ok(cpu, ea, cbsize)) {
        out.kind = Outcome::kGp;
        return out;
    }
    const uint64_t cb = to_linear(cpu, ea);
    // (b)
    std::vector<uint8_t> img(cbsize, 0);
    if (!read_lwpcb(cpu, cb, cbsize, img.data(), &out)) {
        return out;
    }
    // (c)
    bool reserved = false;
    for (uint32_t i = 0; i < cbsize; i++) {
        bool rsvd = (i >= 20 && i < 24) || (i >= 56 && i < 64) ||
                    (i >= 68 && i < 72) ||
                    (i >= kCbSoftwareEnd && i < kEventOffset);
        if (rsvd && img[i] != 0) {
            reserved = true;
        }
    }
    uint32_t filters = le32(&img[kCbFilters]);
    if (reserved || (filters & kFiltReserved)) {
        out.kind = Outcome::kGp;
        return out;
    }
    // (d)
    uint32_t word = le32(&img[kCbBufferSize]);
    uint32_t size = (word & 0x0fffffffu) / kRecordSize * kRecordSize;
    if (size < min_ring_bytes(cpu)) {
        out.kind = Outcome::kGp;
        return out;
    }
    // (e)
    uint64_t base_ea = le64(&img[kCbBufferBase]);
    if ((!cpu.mode64 && (base_ea >> 32) != 0) ||
        !segment_ok(cpu, base_ea, size)) {
        out.kind = Outcome::kGp;
        return out;
    }
    // Steps 6 and 7, row 15
    uint32_t flags = le32(&img[kCbFlags]) & available(cpu);
    int32_t interval[kMaxEventId + 1] = {};
    int32_t counter[kMaxEventId + 1] = {};
    bool write_interval[kMaxEventId + 1] = {};
    for (unsigned id = 1; id <= kMaxEventId; id++) {
        if (!has_event(flags, id)) {
            continue;
        }
        uint32_t at = kEventOffset + 8 * (id - 1);
        interval[id] = field26(le32(&img[at]));
        if (interval[id] < min_interval(id)) {
            interval[id] = min_interval(id);
            write_interval[id] = true;
        }
        counter[id] = field26(le32(&img[at + 4]));
        if (counter[id] < 0) {
            counter[id] = 0;
        }
    }
    uint32_t head = le32(&img[kCbHead]); // row 24, LLWPCB rule
    if (head >= size) {
        head = 0;
    }
    head = head / kRecordSize * kRecordSize;
    // (f): all of it writable (5.1: "readable and writable in user mode")
    if (!probe(cpu, cb, kCbSoftware, &out) ||
        !probe(cpu, cb + kCbSoftwareEnd, cbsize - kCbSoftwareEnd, &out)) {
        return out;
    }
    uint8_t b[4];
    set_le32(b, flags);
    save(cpu, cb + kCbFlags, b, 4);
    for (unsigned id = 1; id <= kMaxEventId; id++) {
        if (write_interval[id]) {
            set_le32(b, uint32_t(interval[id]));
            save(cpu, cb + kEventOffset + 8 * (id - 1), b, 4);
        }
    }
    set_le32(b, head);
    save(cpu, cb + kCbHead, b, 4);
    // Step 8: started
    cb_ = cb;
    events_ = flags & kFlagEvents;
    int_on_ = (flags & kFlagInt) != 0;
    ring_ = to_linear(cpu, base_ea);
    size_ = size;
    head_ = head;
    tail_ = clean_tail(le32(&img[kCbTail]), size);
    threshold_ = le32(&img[kCbThreshold]) / kRecordSize * kRecordSize;
    filters_ = filters;
    random_ = word >> 28;
    base_ip_ = le64(&img[kCbBaseIp]);
    limit_ip_ = le64(&img[kCbLimitIp]);
    for (unsigned id = 1; id <= kMaxEventId; id++) {
        interval_[id] = interval[id];
        counter_[id] = counter[id];
    }
    rng_ = 0; // row 18
    return out;
}

// The LWPCB as LLWPCB and the re-read after XRSTOR see it: all CbSize
// bytes but 72-87, which LWP never reads (Table 6-1)
bool Model::read_lwpcb(const Cpu &cpu, uint64_t cb, uint32_t cbsize,
                       uint8_t *img, Outcome *out) const
{
    return load(cpu, cb, kCbSoftware, img, out) &&
           load(cpu, cb + kCbSoftwareEnd, cbsize - kCbSoftwareEnd,
                img + kCbSoftwareEnd, out);
}

// Spec 5.2
Outcome Model::slwpcb(const Cpu &cpu, uint64_t *ea)
{
    Outcome out;
    *ea = 0;
    if (!enabled()) {
        return out;
    }
    if (!flush(cpu, &out)) {
        return out;
    }
    *ea = cb_ - (cpu.mode64 ? 0 : cpu.ds_base);
    return out;
}

// Spec 5.4: not IP filtered (row 27)
Outcome Model::lwpins(const Cpu &cpu, uint64_t ip, uint32_t data1,
                      uint64_t data2, uint32_t imm)
{
    Outcome out;
    if (!enabled()) {
        return out; // CF = 0
    }
    uint8_t rec[kRecordSize] = {};
    rec[0] = uint8_t(kInsEventId);
    rec[1] = uint8_t(cpu.lwp_cfg >> 32);
    set_le16(rec + 2, uint16_t(imm));
    set_le32(rec + 4, data1);
    set_le64(rec + 8, ip);
    set_le64(rec + 16, data2);
    put_record(cpu, rec, &out);
    return out;
}

// Spec 5.3, 2.1
bool Model::lwpval_fires(const Cpu &cpu, uint64_t ip) const
{
    return enabled() && has_event(events_, 1) && ip_eligible(cpu, ip) &&
           counter_[1] - 1 < 0;
}

Outcome Model::lwpval(const Cpu &cpu, uint64_t ip, uint32_t data1,
                      uint64_t data2, uint32_t imm)
{
    Outcome out;
    if (!enabled() || !has_event(events_, 1) || !ip_eligible(cpu, ip)) {
        return out;
    }
    int32_t before = counter_[1];
    counter_[1] = before - 1;
    if (counter_[1] >= 0) {
        return out;
    }
    uint8_t rec[kRecordSize] = {};
    rec[0] = 1;
    rec[1] = uint8_t(cpu.lwp_cfg >> 32);
    set_le16(rec + 2, uint16_t(imm));
    set_le32(rec + 4, data1);
    set_le64(rec + 8, ip);
    set_le64(rec + 16, data2);
    if (!put_record(cpu, rec, &out)) {
        counter_[1] = before; // restarted: counted once (row 25)
        return out;
    }
    reset_counter(1);
    return out;
}

// 1.1 steps 1-5, rows 19, 20 and 25
Outcome Model::retire(const Cpu &cpu, const Instruction &insn)
{
    Outcome out;
    uint32_t counted = counted_events(cpu, insn);
    for (unsigned id = 2; id <= kMaxEventId; id++) {
        if (!has_event(counted, id)) {
            continue;
        }
        if (id == 5) {
            counter_[id] -= int32_t(insn.core_clocks);
        } else if (id == 6) {
            counter_[id] -= int32_t(insn.ref_clocks);
        } else {
            counter_[id] -= 1;
        }
    }
    for (unsigned id = 2; id <= kMaxEventId; id++) {
        if (!has_event(counted, id) || counter_[id] >= 0) {
            continue;
        }
        uint8_t rec[kRecordSize];
        gather(cpu, id, insn, rec);
        if (!put_record(cpu, rec, &out)) {
            std::memcpy(saved_, rec, sizeof(saved_)); // pending
            return out;
        }
        reset_counter(id);
    }
    return out;
}

// Row 30 and 8.2.5: re-read what XSAVE does not hold, then row 25
Outcome Model::sync(const Cpu &cpu)
{
    Outcome out;
    if (!enabled()) {
        return out;
    }
    if (stale_) {
        const uint32_t cbsize = cb_size(cpu);
        std::vector<uint8_t> img(cbsize, 0);
        if (!read_lwpcb(cpu, cb_, cbsize, img.data(), &out)) {
            return out;
        }
        int_on_ = (le32(&img[kCbFlags]) & available(cpu) & kFlagInt) != 0;
        random_ = le32(&img[kCbBufferSize]) >> 28;
        threshold_ = le32(&img[kCbThreshold]) / kRecordSize * kRecordSize;
        base_ip_ = le64(&img[kCbBaseIp]);
        limit_ip_ = le64(&img[kCbLimitIp]);
        tail_ = clean_tail(le32(&img[kCbTail]), size_);
        for (unsigned id = 1; id <= kMaxEventId; id++) {
            interval_[id] = 0;
            if (has_event(events_, id)) {
                interval_[id] =
                    field26(le32(&img[kEventOffset + 8 * (id - 1)]));
                if (interval_[id] < min_interval(id)) {
                    interval_[id] = min_interval(id);
                }
            }
        }
        stale_ = false;
    }
    if (saved_[0] != 0) {
        store_saved_record(cpu, &out);
    }
    return out;
}

// ---------------------------------------------------------------------------
// XSAVE / XRSTOR

// Spec 7.2, 7.3, row 29
bool Model::xsave(uint8_t area[kXsaveSize]) const
{
    if (!enabled()) {
        return false;
    }
    std::memset(area, 0, kXsaveSize);
    set_le64(area + 0, cb_);
    set_le32(area + 8, events_);
    set_le32(area + 12, head_);
    set_le64(area + 16, ring_);
    set_le32(area + 24, size_);
    set_le32(area + 28, filters_);
    std::memcpy(area + 32, saved_, sizeof(saved_));
    set_le64(area + 56, rng_);
    for (unsigned id = 1; id <= kMaxEventId; id++) {
        if (has_event(events_, id)) {
            set_le32(area + 64 + 4 * (id - 1), uint32_t(counter_[id]));
        }
    }
    return true;
}

// Spec 7.4, 7.5, rows 24 and 30
bool Model::xrstor(const Cpu &cpu, const uint8_t *area)
{
    if (area == nullptr) {
        disable();
        return false;
    }
    // linear addresses: 32 bits outside long mode
    uint64_t cb = wrap(cpu, le64(area + 0));
    uint32_t size = (le32(area + 24) & 0x0fffffffu) / kRecordSize * kRecordSize;
    uint64_t ring = wrap(cpu, le64(area + 16));
    if (cb == 0 || size < min_ring_bytes(cpu)) {
        disable();
        return false;
    }
    if (cpu.cpl != 0 && (!xrstor_check(cpu, cb, cb_size(cpu)) ||
                         !xrstor_check(cpu, ring, size))) {
        disable();
        return false;
    }
    uint32_t head = le32(area + 12);
    if (head > size - kRecordSize) {
        head = 0;
    }
    head = head / kRecordSize * kRecordSize;
    disable();
    cb_ = cb;
    ring_ = ring;
    size_ = size;
    head_ = head;
    events_ = le32(area + 8) & kFlagEvents & available(cpu);
    for (unsigned id = 1; id <= kMaxEventId; id++) {
        if (has_event(events_, id)) {
            int32_t c = int32_t(le32(area + 64 + 4 * (id - 1)));
            if (c > 0x01ffffff) {
                c = 0x01ffffff;
            }
            if (c < -0x02000000) {
                c = -0x02000000;
            }
            counter_[id] = c;
        }
    }
    filters_ = le32(area + 28);
    std::memcpy(saved_, area + 32, sizeof(saved_));
    rng_ = le64(area + 56);
    stale_ = true;
    return true;
}

} // namespace naive
