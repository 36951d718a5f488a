// Micro-benchmark of the engine's store path (docs/benchmarks.md): records
// stored per second through lwp_store_events, lwp_retire and lwp_lwpins,
// with a trivial in-process guest memory (an LWPCB and a 64 KiB ring) and
// a consumer that moves BufferTailOffset every N records.
//
// A benchmark, not a test: it prints a table and asserts nothing about
// time.  Usage: engine-store [seconds per row, default 0.5]
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lwp-engine-test.hh"

namespace
{

constexpr uint64_t kMemBase = 0x10000;
constexpr uint64_t kCb = kMemBase;            // the LWPCB
constexpr uint64_t kRing = kMemBase + 0x1000; // the ring buffer
constexpr uint32_t kRingSize = 64 * 1024;
constexpr uint64_t kMemSize = 0x1000 + kRingSize;
constexpr uint32_t kAllFeatures = 0x8000007f;

// Flat guest memory [kMemBase, kMemBase + kMemSize), all of it writable
struct Memory {
    std::vector<uint8_t> bytes = std::vector<uint8_t>(kMemSize);

    bool in(uint64_t addr, uint32_t len) const
    {
        return addr >= kMemBase && addr - kMemBase <= kMemSize - len;
    }
    uint32_t get32(uint64_t addr) const
    {
        uint32_t v;
        memcpy(&v, &bytes[addr - kMemBase], 4);
        return v;
    }
    void put32(uint64_t addr, uint32_t v)
    {
        memcpy(&bytes[addr - kMemBase], &v, 4);
    }
    void put64(uint64_t addr, uint64_t v)
    {
        memcpy(&bytes[addr - kMemBase], &v, 8);
    }
};

bool mem_read(void *opaque, uint64_t addr, void *buf, uint32_t len)
{
    auto *m = static_cast<Memory *>(opaque);
    if (!m->in(addr, len)) {
        return false;
    }
    memcpy(buf, &m->bytes[addr - kMemBase], len);
    return true;
}

bool mem_probe_write(void *opaque, uint64_t addr, uint32_t len)
{
    return static_cast<Memory *>(opaque)->in(addr, len);
}

void mem_write(void *opaque, uint64_t addr, const void *buf, uint32_t len)
{
    auto *m = static_cast<Memory *>(opaque);
    memcpy(&m->bytes[addr - kMemBase], buf, len);
}

const LwpMemOps kOps = {mem_read, mem_probe_write, mem_write};

// One thread with LWP enabled: every event at interval 0xff
struct Setup {
    Memory mem;
    LwpMem lmem = {&kOps, &mem};
    LwpContext ctx = {};
    LwpState s = {};
    LwpEventInfo info = {};

    // @flags: LWPCB.Flags; @threshold: LWPCB.Threshold
    Setup(uint32_t flags, uint32_t threshold)
    {
        ctx.edx = kAllFeatures;
        ctx.ecx = lwp_cpuid_ecx(0, ctx.edx);
        ctx.cfg = kAllFeatures & LWP_CFG_FEATURES_MASK;
        ctx.long64 = 1;
        ctx.lma = 1;
        ctx.va_bits = 48;
        ctx.cpl = 3;
        mem.put32(kCb + LWPCB_FLAGS, flags);
        mem.put32(kCb + LWPCB_BUFFER_SIZE, kRingSize);
        mem.put64(kCb + LWPCB_BUFFER_BASE, kRing);
        mem.put32(kCb + LWPCB_THRESHOLD, threshold);
        for (unsigned n = 1; n <= LWP_NUM_EVENTS; n++) {
            mem.put32(kCb + LWPCB_INTERVAL(LWP_EVENT_OFFSET, n), 0xff);
        }
        lwp_state_init(&s);
        LwpResult res;
        if (lwp_llwpcb(&s, &ctx, &lmem, kCb, &res) != LWP_OK) {
            fprintf(stderr, "engine-store: LLWPCB failed\n");
            exit(1);
        }
        info.ip = 0x401000;
        info.events = LWP_FEAT_IRE;
        info.cycles = 1;
        info.ref_cycles = 1;
    }
    // The consumer has read everything: BufferTailOffset = head
    void consume()
    {
        mem.put32(kCb + LWPCB_TAIL, mem.get32(kCb + LWPCB_HEAD));
    }
};

struct Row {
    const char *name;
    uint64_t calls;
    uint64_t records;
    double seconds;
};

double g_seconds = 0.5;

// Run @step (one engine call; returns the records it stored) in batches
// until g_seconds have passed.  @tail_every: records between tail moves,
// 0 for a consumer that never reads.
template <typename F>
Row run(const char *name, Setup &b, uint32_t tail_every, F step)
{
    using Clock = std::chrono::steady_clock;
    uint64_t calls = 0;
    uint64_t records = 0;
    uint64_t since_tail = 0;
    auto start = Clock::now();
    double elapsed = 0;

    do {
        for (int i = 0; i < 4096; i++) {
            unsigned n = step(b);
            records += n;
            since_tail += n;
            if (tail_every && since_tail >= tail_every) {
                b.consume();
                since_tail = 0;
            }
        }
        calls += 4096;
        elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < g_seconds);
    return Row{name, calls, records, elapsed};
}

// One IRE record per call: the counter went negative in generated code
unsigned store_events(Setup &b)
{
    LwpResult res;
    b.s.counter[LWP_EVENT_ID_IRE] = -1;
    lwp_store_events(&b.s, &b.ctx, &b.lmem, &b.info, LWP_FEAT_IRE, &res);
    return res.stored;
}

unsigned retire(Setup &b)
{
    LwpResult res;
    lwp_retire(&b.s, &b.ctx, &b.lmem, &b.info, &res);
    return res.stored;
}

unsigned retire_every(Setup &b)
{
    b.s.counter[LWP_EVENT_ID_IRE] = 0;
    return retire(b);
}

unsigned lwpins(Setup &b)
{
    LwpResult res;
    lwp_lwpins(&b.s, &b.ctx, &b.lmem, b.info.ip, 1, 2, 3, &res);
    return res.stored;
}

void print(const Row &r)
{
    double per_call = r.seconds * 1e9 / static_cast<double>(r.calls);
    double recs = static_cast<double>(r.records) / r.seconds;
    printf("| %-44s | %10.2f | %8.1f | %10.2f |\n", r.name,
           static_cast<double>(r.calls) / r.seconds / 1e6, per_call,
           recs / 1e6);
}

} // namespace

int main(int argc, char **argv)
{
    if (argc > 1) {
        g_seconds = atof(argv[1]);
    }
    const uint32_t events = LWP_FEAT_EVENTS_MASK;
    const uint32_t never = kRingSize; // Threshold above BufferSize - 32

    printf("engine-store: %u KiB ring, %.2f s per row\n\n", kRingSize / 1024,
           g_seconds);
    printf("| %-44s | %10s | %8s | %10s |\n", "path", "Mcalls/s", "ns/call",
           "Mrecords/s");
    printf("|%s|%s|%s|%s|\n", std::string(46, '-').c_str(),
           std::string(12, '-').c_str(), std::string(10, '-').c_str(),
           std::string(12, '-').c_str());
    {
        Setup b(events, never);
        print(run("lwp_store_events, 1 record, tail every 64", b, 64,
                  store_events));
    }
    {
        Setup b(events, never);
        print(run("lwp_store_events, 1 record, tail every 1024", b, 1024,
                  store_events));
    }
    {
        Setup b(events, never);
        print(run("lwp_store_events, ring full (MissedEvents)", b, 0,
                  store_events));
    }
    {
        Setup b(events | LWP_FEAT_INT, 32);
        print(run("lwp_store_events, threshold armed, every 64", b, 64,
                  store_events));
    }
    {
        Setup b(events, never);
        print(
            run("lwp_retire, IRE interval 0xff, tail every 64", b, 64, retire));
    }
    {
        Setup b(events, never);
        print(run("lwp_retire, 1 record per call, tail every 64", b, 64,
                  retire_every));
    }
    {
        Setup b(events, never);
        print(run("LWPINS, tail every 1024", b, 1024, lwpins));
    }
    {
        Setup b(events, never);
        print(run("LWPINS, ring full (MissedEvents)", b, 0, lwpins));
    }
    return 0;
}
