// Micro-benchmark of the data cache model (docs/cache-model.md, "Cost"):
// the loads of a real program replayed through lwp_cache_load as QEMU's
// DCache Miss helper makes them (lwp_dme_helper.c), with the model
// configured as for -cpu max,+lwp (lwp_cache_default_config).  A load
// that generated code answers itself, one within the most recently used
// line of its L1 set (gen_lwp_dme: entry 0 of the list of the set of its
// first byte equals the line of its last byte), skips the model, as it
// does there.  It prints the time per call of the model and a checksum of
// every result, so that two versions of the model can be compared: the
// same checksum, the same results.
//
// A benchmark, not a test: it asserts nothing about time, and it needs
// an input made once (not in git): the loads of a program as upstream
// QEMU's mem plugin (tests/tcg/plugins/mem.c) prints them, for example
// one copy of bench/qemu-bench.sh's gzip workload, in build/cache-replay:
//
//   gcc -O2 -shared -fPIC -I../upstream-src/include/qemu -o libmem.so
//       $(pkg-config --cflags --libs glib-2.0)
//       ../upstream-src/tests/tcg/plugins/mem.c
//   ../upstream/qemu-x86_64 -d plugin -D /dev/fd/3
//       -plugin ./libmem.so,print-accesses=true,track=r
//       /usr/bin/gzip -6 -c ../bench/input-6m.tar 3>&1 >/dev/null |
//       ../engine/bench/cache-replay record gzip-loads.bin
//
// Usage:
//
//   cache-replay record STREAM < mem-plugin-output
//   cache-replay [-r ROUNDS] [-n LOADS] [-a] [-w CALLS] STREAM
//
// -w writes the loads that reach the model to the stream CALLS, which
// -a replays without the test of generated code: every load calls the
// model.  The same calls, with the same results (the checksum), but the
// time is the model's, not that of the test of the other loads and of
// reading them (gzip -6 of the first 6 MiB of the QEMU source tar: 49
// million of 173 million loads reach the model):
//
//   cache-replay -r 1 -w gzip-calls.bin gzip-loads.bin
//   cache-replay -a -r 21 gzip-calls.bin
//
// The host instructions per call: valgrind --tool=callgrind
// --toggle-collect=lwp_cache_load cache-replay -a -r 1 gzip-calls.bin,
// the Ir it collected divided by the calls it printed.
//
// STREAM is one 64-bit word per load, in the host's byte order: the
// address in bits 0-55, the size in bytes in bits 56-63.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "lwp-engine.hh"

namespace
{

constexpr unsigned kAddrBits = 56;
constexpr uint64_t kAddrMask = (uint64_t{1} << kAddrBits) - 1;

[[noreturn]] void usage()
{
    std::fprintf(stderr, "usage: cache-replay record STREAM < mem-output\n"
                         "       cache-replay [-r ROUNDS] [-n LOADS] [-a] "
                         "[-w CALLS] STREAM\n");
    std::exit(2);
}

// The mem plugin's lines are "insn_vaddr,insn_symbol,mem_vaddr,mem_hwaddr,
// access_size (bits),access_type,mem_value"; the symbol may hold commas,
// so the fields are taken from the end.  Keeps the loads.
int record(const char *path)
{
    std::FILE *out = std::fopen(path, "wb");
    if (!out) {
        std::perror(path);
        return 1;
    }
    static char line[4096];
    uint64_t loads = 0, stores = 0;
    std::vector<uint64_t> buf;
    buf.reserve(1 << 16);
    while (std::fgets(line, sizeof(line), stdin)) {
        // the commas before mem_value, access_type, access_size,
        // mem_hwaddr: the address is after the fourth comma from the end
        char *comma[4];
        char *end = line + std::strlen(line);
        int n = 0;
        for (char *p = end; p > line && n < 4;) {
            if (*--p == ',') {
                comma[n++] = p;
            }
        }
        if (n < 4) {
            continue; // the header, or not an access
        }
        if (std::strncmp(comma[1] + 1, "load,", 5)) {
            stores++;
            continue;
        }
        char *vaddr = comma[3];
        while (vaddr > line && vaddr[-1] != ',') {
            vaddr--;
        }
        if (std::strncmp(vaddr, "0x", 2)) {
            continue; // the header
        }
        uint64_t addr = std::strtoull(vaddr, nullptr, 16);
        uint64_t bits = std::strtoull(comma[2] + 1, nullptr, 10);
        if (addr > kAddrMask || bits < 8 || bits > 8 * 255) {
            std::fprintf(stderr, "cache-replay: bad access: %s", line);
            return 1;
        }
        buf.push_back(addr | (bits / 8) << kAddrBits);
        loads++;
        if (buf.size() == buf.capacity()) {
            std::fwrite(buf.data(), sizeof(uint64_t), buf.size(), out);
            buf.clear();
        }
    }
    std::fwrite(buf.data(), sizeof(uint64_t), buf.size(), out);
    if (std::fclose(out)) {
        std::perror(path);
        return 1;
    }
    std::printf("%" PRIu64 " loads (%" PRIu64 " other accesses left out)\n",
                loads, stores);
    return 0;
}

struct Totals {
    uint64_t calls = 0;
    uint64_t misses = 0;       // loads that missed L1
    uint64_t by_level[8] = {}; // by LwpCacheResult.level
    uint64_t checksum = 0;
};

// Every field of every result, in order
inline uint64_t mix(uint64_t h, const LwpCacheResult &r)
{
    h = (h ^ r.addr) * 0x100000001b3ull;
    h = (h ^ (uint64_t{r.latency} << 16 | uint64_t{r.level} << 8 | r.misses)) *
        0x9e3779b97f4a7c15ull;
    return h;
}

// The CPU time of this thread: other jobs on the machine take the CPU
// away for long stretches of time, which the wall clock would count
double cpu_ns()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// One replay of @loads through a new model; the time of the loop in @ns.
// @all: every load calls the model; else those that generated code does
// not answer, which go to @calls if not null.
Totals replay(const std::vector<uint64_t> &loads, bool all,
              std::vector<uint64_t> *calls, double *ns)
{
    LwpCacheConfig cfg;
    lwp_cache_default_config(&cfg);
    LwpCache *c = lwp_cache_new(&cfg);
    if (!c) {
        std::fprintf(stderr, "cache-replay: lwp_cache_new failed\n");
        std::exit(1);
    }
    // what the CPU's realize gives generated code (x86_cpu_lwp_cache_realize)
    const uint64_t *l1 = lwp_cache_l1_lines(c);
    const unsigned shift = __builtin_ctz(cfg.level[0].line_size);
    const uint64_t line = cfg.level[0].line_size;
    const uint64_t set_mask =
        cfg.level[0].size / (cfg.level[0].ways * cfg.level[0].line_size) - 1;
    const uint64_t ways = cfg.level[0].ways;

    Totals t;
    double start = cpu_ns();
    for (uint64_t w : loads) {
        uint64_t a = w & kAddrMask;
        uint32_t size = static_cast<uint32_t>(w >> kAddrBits);
        // gen_lwp_dme's test, before the helper call
        if (!all && size <= line) {
            uint64_t last = a + size - 1;
            bool slow = !set_mask && size > 1 && (a & (line - 1)) > line - size;
            if (!slow &&
                l1[((a >> shift) & set_mask) * ways] == last >> shift) {
                continue;
            }
        }
        if (calls) {
            calls->push_back(w);
        }
        LwpCacheResult r = lwp_cache_load(c, a, size);
        t.calls++;
        t.misses += r.misses != 0;
        t.by_level[r.level & 7]++;
        t.checksum = mix(t.checksum, r);
    }
    *ns = cpu_ns() - start;
    lwp_cache_free(c);
    return t;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc == 3 && !std::strcmp(argv[1], "record")) {
        return record(argv[2]);
    }
    unsigned rounds = 5;
    uint64_t limit = ~uint64_t{0};
    bool all = false;
    const char *calls_path = nullptr;
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i++) {
        if (!std::strcmp(argv[i], "-a")) {
            all = true;
        } else if (!std::strcmp(argv[i], "-r")) {
            rounds = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 0));
        } else if (!std::strcmp(argv[i], "-n")) {
            limit = std::strtoull(argv[++i], nullptr, 0);
        } else if (!std::strcmp(argv[i], "-w")) {
            calls_path = argv[++i];
        } else {
            usage();
        }
    }
    if (i + 1 != argc || !rounds) {
        usage();
    }

    std::FILE *f = std::fopen(argv[i], "rb");
    if (!f) {
        std::perror(argv[i]);
        return 1;
    }
    std::fseek(f, 0, SEEK_END);
    uint64_t n = static_cast<uint64_t>(std::ftell(f)) / sizeof(uint64_t);
    std::fseek(f, 0, SEEK_SET);
    n = std::min(n, limit);
    std::vector<uint64_t> loads(n);
    if (std::fread(loads.data(), sizeof(uint64_t), n, f) != n) {
        std::fprintf(stderr, "cache-replay: short read of %s\n", argv[i]);
        return 1;
    }
    std::fclose(f);

    std::vector<double> ns(rounds);
    Totals t;
    std::vector<uint64_t> calls;
    for (unsigned r = 0; r < rounds; r++) {
        Totals now =
            replay(loads, all, calls_path && !r ? &calls : nullptr, &ns[r]);
        if (r && now.checksum != t.checksum) {
            std::fprintf(stderr, "cache-replay: round %u differs\n", r);
            return 1;
        }
        t = now;
    }
    if (calls_path) {
        std::FILE *out = std::fopen(calls_path, "wb");
        if (!out ||
            std::fwrite(calls.data(), sizeof(uint64_t), calls.size(), out) !=
                calls.size() ||
            std::fclose(out)) {
            std::perror(calls_path);
            return 1;
        }
    }
    std::vector<double> sorted = ns;
    std::sort(sorted.begin(), sorted.end());
    double median = sorted[rounds / 2];

    std::printf("loads %" PRIu64 ", model calls %" PRIu64 ", L1 misses %" PRIu64
                " (L2 %" PRIu64 ", L3 %" PRIu64 ", DRAM %" PRIu64 ")\n",
                n, t.calls, t.misses, t.by_level[LWP_CACHE_L2],
                t.by_level[LWP_CACHE_L3], t.by_level[LWP_CACHE_DRAM]);
    std::printf("checksum %016" PRIx64 "\n", t.checksum);
    std::printf("ns per call: median %.2f, min %.2f, max %.2f (%u rounds; "
                "replay loop %.3f s of CPU)\n",
                median / t.calls, sorted[0] / t.calls,
                sorted[rounds - 1] / t.calls, rounds, median / 1e9);
    return 0;
}
