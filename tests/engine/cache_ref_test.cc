// The data cache model against its independent reimplementation
// (docs/cache-model.md, "Tests"): deterministic pseudo-random access
// streams go through the engine's model, every operation and result is
// written to a stream file, and tests/engine/cache_model_ref.py, written
// from the document alone, recomputes and compares every result.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "cache.hh"
#include "lwp-engine.hh"
#include "naive_model.h"

namespace
{

// splitmix64, the test model's (choice 18)
struct Rng {
    uint64_t state;
    uint64_t next()
    {
        return naive::Model::splitmix64(&state);
    }
    uint64_t below(uint64_t n)
    {
        return next() % n;
    }
};

struct Counts {
    uint64_t loads = 0, crossing_misses = 0, flushes = 0, flushlines = 0;
    uint64_t level[LWP_CACHE_DRAM + 1] = {};
};

// A stream file's first line ("Stream file format" in cache-model.md)
void write_config(FILE *out, const LwpCacheConfig &cfg)
{
    std::fprintf(out, "config %x %x", cfg.levels, cfg.dram_latency);
    for (unsigned i = 0; i < cfg.levels; i++) {
        const LwpCacheLevelConfig &l = cfg.level[i];
        std::fprintf(out, " %x %x %x %x", l.size, l.ways, l.line_size,
                     l.latency);
    }
    std::fprintf(out, "\n");
}

// Runs the model over a generated stream and writes it to @out
class StreamWriter
{
  public:
    StreamWriter(const LwpCacheConfig &cfg, FILE *out, uint64_t seed)
        : cfg_(cfg), out_(out), rng_{seed}
    {
        cache_ = lwp_cache_new(&cfg);
        write_config(out_, cfg);
    }
    ~StreamWriter()
    {
        lwp_cache_free(cache_);
    }
    bool ok() const
    {
        return cache_ != nullptr;
    }

    void load(uint64_t addr, uint32_t size)
    {
        LwpCacheResult r = lwp_cache_load(cache_, addr, size);
        bool miss = r.misses != 0;
        std::fprintf(out_, "load %" PRIx64 " %x -> %x %x %x %" PRIx64 " %x\n",
                     addr, size, miss, r.level, r.latency, r.addr, r.misses);
        counts.loads++;
        counts.level[r.level < LWP_CACHE_DRAM ? r.level : LWP_CACHE_DRAM]++;
        counts.crossing_misses += r.misses > 1;
        last_ = addr;
    }

    // One burst of a pattern; returns after about @budget loads at most
    void burst(uint64_t budget)
    {
        uint32_t l1 = cfg_.level[0].line_size;
        uint64_t cap[4] = {};
        for (unsigned i = 0; i < cfg_.levels; i++) {
            cap[i] = cfg_.level[i].size;
        }
        uint64_t biggest = cap[cfg_.levels - 1];
        // Regions around each level's capacity
        uint64_t sizes[] = {cap[0] / 2,
                            cap[0] * 2,
                            cap[1] ? cap[1] / 2 : 64,
                            cap[1] * 2,
                            cap[2] ? cap[2] / 2 : 64,
                            biggest * 2};
        uint64_t region = sizes[rng_.below(6)];
        region = region < 64 ? 64 : region;
        static const uint64_t bases[] = {0x10000, 0x7f1234560000ull,
                                         0xffffffff00000000ull};
        uint64_t base = bases[rng_.below(3)];
        uint64_t strides[] = {
            1, 4, 8, 16, 24, 48, l1, l1 + 8, 4096, cap[0] / cfg_.level[0].ways};
        uint64_t n;
        switch (rng_.below(6)) {
        case 0: // a walk with one stride
        case 1: {
            uint64_t stride = strides[rng_.below(10)];
            n = region / stride;
            n = n < budget ? n : budget;
            uint64_t off = rng_.below(l1);
            for (uint64_t i = 0; i < n; i++) {
                load(base + (off + i * stride) % region, size());
            }
            break;
        }
        case 2: // random loads in the region
        case 3:
            n = rng_.below(budget) + 1;
            for (uint64_t i = 0; i < n; i++) {
                load(base + rng_.below(region), size());
            }
            break;
        case 4: // a few hot addresses, line-crossing ones among them
            n = rng_.below(budget < 64 ? budget : 64) + 1;
            for (uint64_t i = 0; i < n; i++) {
                load(base + rng_.below(8) * l1 - rng_.below(8), size());
            }
            break;
        default: // the top of the address space: loads cut off at 2^64-1
            n = rng_.below(8) + 1;
            for (uint64_t i = 0; i < n; i++) {
                load(~uint64_t{0} - rng_.below(2 * l1), size());
            }
            break;
        }
        if (rng_.below(100) < 10) {
            std::fprintf(out_, "flushline %" PRIx64 "\n", last_);
            lwp_cache_flush_line(cache_, last_);
            counts.flushlines++;
        }
        if (rng_.below(1000) < 5) {
            std::fprintf(out_, "flush\n");
            lwp_cache_flush(cache_);
            counts.flushes++;
        }
    }

    Counts counts;

  private:
    uint32_t size()
    {
        static const uint32_t common[] = {1, 2, 4, 8, 16};
        return rng_.below(2) ? common[rng_.below(5)]
                             : static_cast<uint32_t>(rng_.below(16) + 1);
    }

    LwpCacheConfig cfg_;
    FILE *out_;
    Rng rng_;
    LwpCache *cache_;
    uint64_t last_ = 0;
};

LwpCacheConfig toy(uint32_t levels, uint32_t dram,
                   std::initializer_list<LwpCacheLevelConfig> l)
{
    LwpCacheConfig cfg{};
    cfg.levels = levels;
    cfg.dram_latency = dram;
    unsigned i = 0;
    for (const LwpCacheLevelConfig &x : l) {
        cfg.level[i++] = x;
    }
    return cfg;
}

struct RefCase {
    const char *name;
    LwpCacheConfig cfg;
    uint64_t loads;
    uint64_t burst;
};

void PrintTo(const RefCase &c, std::ostream *os)
{
    *os << c.name;
}

// Runs the Python model on the stream file @path, which must find every
// result the same; removes the file then (LWP_CACHE_KEEP_STREAM=1 keeps
// it, to run the Python by hand)
void check_with_reference(const std::string &path)
{
    std::string cmd = std::string(LWP_PYTHON3) + " " + LWP_CACHE_REF_PY + " " +
                      path + " 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string output;
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) {
        output += buf;
    }
    int status = pclose(p);
    EXPECT_EQ(status, 0) << cmd << "\n" << output;
    EXPECT_NE(output.find(" 0 mismatches"), std::string::npos) << output;
    if (status == 0 && !::testing::Test::HasFailure() &&
        !std::getenv("LWP_CACHE_KEEP_STREAM")) {
        std::remove(path.c_str());
    }
}

class CacheReference : public ::testing::TestWithParam<RefCase>
{
};

TEST_P(CacheReference, EveryResultMatchesThePythonModel)
{
    const RefCase &c = GetParam();
    std::string path = ::testing::TempDir() + "lwp-cache-" + c.name + "-" +
                       std::to_string(getpid()) + ".stream";
    FILE *out = std::fopen(path.c_str(), "w");
    ASSERT_NE(out, nullptr) << path;
    Counts counts;
    {
        StreamWriter w(c.cfg, out, 0x4c5750 + c.loads);
        ASSERT_TRUE(w.ok());
        while (w.counts.loads < c.loads) {
            w.burst(c.burst);
        }
        counts = w.counts;
    }
    ASSERT_EQ(std::fclose(out), 0);

    // The stream exercises what it is meant to: every level supplies data,
    // loads miss in two lines, flushes happen
    for (unsigned lv = LWP_CACHE_L1; lv <= LWP_CACHE_DRAM; lv++) {
        if (lv == LWP_CACHE_DRAM || lv <= c.cfg.levels) {
            EXPECT_GE(counts.level[lv], counts.loads / 100)
                << "level " << lv << " supplies too few loads";
        }
    }
    EXPECT_GT(counts.crossing_misses, 0u);
    EXPECT_GT(counts.flushlines, 0u);

    check_with_reference(path);
}

INSTANTIATE_TEST_SUITE_P(
    Streams, CacheReference,
    ::testing::Values(
        // Direct-mapped L1 with 16-byte lines: line-crossing loads often
        // evict their own first line
        RefCase{"toy3_direct_l1",
                toy(3, 100,
                    {{256, 1, 16, 3}, {1024, 2, 32, 11}, {4096, 4, 64, 35}}),
                60000, 300},
        // A fully associative L3 (one set of 64 ways)
        RefCase{"toy3_full_l3",
                toy(3, 150,
                    {{512, 4, 16, 2}, {2048, 2, 32, 9}, {4096, 64, 64, 40}}),
                60000, 300},
        // The short path of a 4-way L1 with a 16-way L2 (the default
        // geometry's), here with lines that grow from level to level
        RefCase{"toy3_short_path",
                toy(3, 120,
                    {{512, 4, 16, 3}, {4096, 16, 32, 12}, {16384, 8, 128, 41}}),
                60000, 300},
        RefCase{"toy2", toy(2, 77, {{1024, 2, 32, 5}, {4096, 1, 32, 17}}),
                40000, 300},
        RefCase{"toy1", toy(1, 60, {{512, 8, 64, 1}}), 20000, 300},
        RefCase{"default",
                [] {
                    LwpCacheConfig cfg;
                    lwp_cache_default_config(&cfg);
                    return cfg;
                }(),
                400000, 70000}),
    [](const ::testing::TestParamInfo<RefCase> &info) {
        return std::string(info.param.name);
    });

// The stamps are 32-bit: when a level's counter reaches its limit, the
// level renumbers the stamps of every set in their order
// (docs/cache-model.md, "Cost").  A model whose counters are pushed close
// to the limit again and again, so that every level renumbers many times,
// must still give every result the Python model gives.
TEST(CacheStamps, RenumberingChangesNoResult)
{
    int k = 0;
    for (const LwpCacheConfig &cfg :
         {toy(3, 100, {{256, 1, 16, 3}, {1024, 2, 32, 11}, {4096, 4, 64, 35}}),
          [] {
              LwpCacheConfig c;
              lwp_cache_default_config(&c);
              return c;
          }()}) {
        std::string path = ::testing::TempDir() + "lwp-cache-stamps-" +
                           std::to_string(k++) + "-" +
                           std::to_string(getpid()) + ".stream";
        FILE *out = std::fopen(path.c_str(), "w");
        ASSERT_NE(out, nullptr) << path;
        write_config(out, cfg);
        lwp::CacheModel pushed;
        ASSERT_TRUE(pushed.configure(cfg));
        Rng rng{0x5354414d50};
        uint64_t region = uint64_t{cfg.level[cfg.levels - 1].size} * 2;
        uint64_t levels[LWP_CACHE_DRAM + 1] = {};
        for (int i = 0; i < 200000; i++) {
            if (i % 500 == 0) {
                pushed.raise_clock_for_test((uint32_t{1} << 31) - 50);
            }
            // hot lines and a region twice the last level: every level
            // hits and misses
            uint64_t addr = rng.below(4) ? 0x7f0000000000ull + rng.below(region)
                                         : 0x1000 + rng.below(64) * 64;
            uint32_t size = static_cast<uint32_t>(rng.below(16) + 1);
            if (rng.below(1000) == 0) {
                std::fprintf(out, "flushline %" PRIx64 "\n", addr);
                pushed.flush_line(addr);
            }
            LwpCacheResult r = pushed.load(addr, size);
            bool miss = r.misses != 0;
            std::fprintf(
                out, "load %" PRIx64 " %x -> %x %x %x %" PRIx64 " %x\n", addr,
                size, miss, r.level, r.latency, r.addr, r.misses);
            levels[r.level]++;
        }
        ASSERT_EQ(std::fclose(out), 0);
        for (unsigned lv = LWP_CACHE_L1; lv <= LWP_CACHE_DRAM; lv++) {
            if (lv == LWP_CACHE_DRAM || lv <= cfg.levels) {
                EXPECT_GT(levels[lv], 1000u) << "level " << lv;
            }
        }
        check_with_reference(path);
    }
}

} // namespace
