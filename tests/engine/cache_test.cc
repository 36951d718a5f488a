// Unit tests: the data cache model (docs/cache-model.md).  Every expected
// result was computed by hand from that document's rules; the comments
// give the computation.  Sets are written most recently used first.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <gtest/gtest.h>

#include <initializer_list>
#include <vector>

#include "lwp-engine-test.hh"

namespace
{

// One load and the result the document gives for it
struct Step {
    uint64_t addr;
    uint32_t size;
    unsigned level; // LWP_CACHE_*
    uint32_t latency;
    uint64_t res_addr;
    unsigned misses;
};

LwpCacheConfig make(uint32_t dram, std::initializer_list<LwpCacheLevelConfig> l)
{
    LwpCacheConfig cfg{};
    cfg.dram_latency = dram;
    for (const LwpCacheLevelConfig &x : l) {
        cfg.level[cfg.levels++] = x;
    }
    return cfg;
}

// The direct-mapped toy: L1 4 sets of 16-byte lines, L2 8 sets of 32,
// L3 16 sets of 64.  Address A is in L1 set (A/16)%4, L2 set (A/32)%8,
// L3 set (A/64)%16.
LwpCacheConfig direct()
{
    return make(100, {{64, 1, 16, 2}, {256, 1, 32, 10}, {1024, 1, 64, 30}});
}

constexpr unsigned L1 = LWP_CACHE_L1, L2 = LWP_CACHE_L2, L3 = LWP_CACHE_L3,
                   DRAM = LWP_CACHE_DRAM;

class Cache : public ::testing::Test
{
  protected:
    void TearDown() override
    {
        lwp_cache_free(c);
    }
    void use(const LwpCacheConfig &cfg)
    {
        lwp_cache_free(c);
        c = lwp_cache_new(&cfg);
        ASSERT_NE(c, nullptr);
    }
    void run(std::initializer_list<Step> steps)
    {
        int i = 0;
        for (const Step &s : steps) {
            LwpCacheResult r = lwp_cache_load(c, s.addr, s.size);
            bool miss = r.misses != 0;
            SCOPED_TRACE(testing::Message()
                         << "step " << i++ << ": load " << std::hex << s.addr
                         << " size " << std::dec << s.size);
            EXPECT_EQ(miss, s.misses != 0);
            EXPECT_EQ(r.level, s.level);
            EXPECT_EQ(r.latency, s.latency);
            EXPECT_EQ(r.addr, s.res_addr);
            EXPECT_EQ(r.misses, s.misses);
        }
    }

    // In lru()'s L1 (below): A, B, C, D fill it, then A hits: A D C B
    void fill_lru()
    {
        run({
            {0x00, 1, DRAM, 50, 0x00, 1}, // L1: A
            {0x10, 1, DRAM, 50, 0x10, 1}, // B A
            {0x20, 1, DRAM, 50, 0x20, 1}, // C B A
            {0x30, 1, DRAM, 50, 0x30, 1}, // D C B A
            {0x00, 1, L1, 1, 0x00, 0},    // hit: A D C B
        });
    }

    LwpCache *c = nullptr;
};

// ---------------------------------------------------------------------------
// Each level supplies data, with its latency ("Lookup and fill")

TEST_F(Cache, DirectMappedEachLevelSuppliesWithItsLatency)
{
    use(direct());
    run({
        // 0x100: L1 set 0, L2 set 0, L3 set 4: all miss, DRAM; all filled
        {0x100, 4, DRAM, 100, 0x100, 1},
        // again: L1 hit, with L1's latency and the load's address
        {0x104, 4, L1, 2, 0x104, 0},
        // 0x140: L1 set 0 (evicts 0x100), L2 set 2, L3 set 5: DRAM
        {0x140, 8, DRAM, 100, 0x140, 1},
        // 0x100: L1 set 0 holds 0x140; L2 set 0 still holds 0x100
        {0x100, 4, L2, 10, 0x100, 1},
        // 0x200: L1 set 0 and L2 set 0 (both evict 0x100), L3 set 8: DRAM
        {0x200, 1, DRAM, 100, 0x200, 1},
        // 0x108: L1 and L2 hold 0x200's lines; L3 set 4 holds 0x100
        {0x108, 2, L3, 30, 0x108, 1},
        // and the fill from L3 put it back in L1 and L2
        {0x10c, 4, L1, 2, 0x10c, 0},
        // 0x140: L1 set 0 holds 0x100 again; L2 set 2 kept 0x140
        {0x140, 8, L2, 10, 0x140, 1},
    });
}

// ---------------------------------------------------------------------------
// LRU in a 4-way set ("LRU"): L1 is one set of four 16-byte lines; L2
// (16 sets of 4 ways) keeps every line used below, so an L1 miss of a line
// seen before is supplied by L2.

LwpCacheConfig lru()
{
    return make(50, {{64, 4, 16, 1}, {1024, 4, 16, 7}});
}

TEST_F(Cache, LruEvictsTheLeastRecentlyUsedWay)
{
    use(lru());
    fill_lru();
    run({
        {0x40, 1, DRAM, 50, 0x40, 1}, // E evicts B: E A D C
        {0x10, 1, L2, 7, 0x10, 1},    // B evicts C: B E A D
        {0x20, 1, L2, 7, 0x20, 1},    // C evicts D: C B E A
        {0x00, 1, L1, 1, 0x00, 0},    // hit: A C B E
        {0x40, 1, L1, 1, 0x40, 0},    // hit: E A C B
        {0x30, 1, L2, 7, 0x30, 1},    // D evicts B: D E A C
        {0x10, 1, L2, 7, 0x10, 1},    // B evicts C: B D E A
        {0x20, 1, L2, 7, 0x20, 1},    // C evicts A: C B D E
        {0x00, 1, L2, 7, 0x00, 1},    // A evicts E: A C B D
    });
}

TEST_F(Cache, FlushLineKeepsTheOrderOfTheOthers)
{
    use(lru());
    run({
        {0x00, 1, DRAM, 50, 0x00, 1},
        {0x10, 1, DRAM, 50, 0x10, 1},
        {0x20, 1, DRAM, 50, 0x20, 1},
        {0x30, 1, DRAM, 50, 0x30, 1}, // D C B A
    });
    lwp_cache_flush_line(c, 0x1f); // B leaves L1 and L2: D C A -
    run({
        {0x40, 1, DRAM, 50, 0x40, 1}, // E takes the empty way: E D C A
        {0x00, 1, L1, 1, 0x00, 0},    // A E D C (nothing was evicted)
        {0x20, 1, L1, 1, 0x20, 0},    // C A E D
        {0x30, 1, L1, 1, 0x30, 0},    // D C A E
        {0x10, 1, DRAM, 50, 0x10, 1}, // B, gone from L2 too, evicts E
        {0x40, 1, L2, 7, 0x40, 1},    // E evicts A: E B D C
        {0x00, 1, L2, 7, 0x00, 1},    // A evicts C: A E B D
    });
}

// ---------------------------------------------------------------------------
// Line-crossing loads ("Loads and line-crossing loads")

TEST_F(Cache, LineCrossingLoadReportsTheFirstLineThatMissed)
{
    use(direct());
    run({
        // 0x10e..0x111: L1 lines 0x100 and 0x110.  0x100 misses
        // everywhere (DRAM); 0x110 misses L1 (set 1) but its 32-byte L2
        // line 0x100 was just filled: L2.  Two misses, one result: the
        // first line's, at the load's own address.
        {0x10e, 4, DRAM, 100, 0x10e, 2},
        // 0x11e..0x121: line 0x110 hits L1; line 0x120 (L1 set 2, L2 set
        // 1) misses L1 and L2, and L3 line 0x100 has it.  Reported at the
        // second line's first byte.
        {0x11e, 4, L3, 30, 0x120, 1},
        // 0x12f..0x130: line 0x120 hits; 0x130 (L1 set 3) misses, and L2
        // line 0x120 (filled just before) has it
        {0x12f, 2, L2, 10, 0x130, 1},
        // both lines present now: a hit, at the load's address
        {0x11c, 8, L1, 2, 0x11c, 0},
        // size 0 counts as 1, and a one-byte load never crosses
        {0x13f, 0, L1, 2, 0x13f, 0},
        {0x14f, 1, DRAM, 100, 0x14f, 1},
    });
}

TEST_F(Cache, LineCrossingLoadCanEvictItsOwnFirstLine)
{
    // L1 is a single 16-byte line; L2 has 4 sets of 4 ways
    use(make(50, {{16, 1, 16, 1}, {256, 4, 16, 5}}));
    run({
        // 0x0f..0x10: line 0x00, then line 0x10, which evicts it from L1
        {0x0f, 2, DRAM, 50, 0x0f, 2},
        // again: 0x00 misses L1 (it holds 0x10), L2 has it; then 0x10
        // misses L1 (it holds 0x00 now), L2 has it
        {0x0f, 2, L2, 5, 0x0f, 2},
        {0x10, 1, L1, 1, 0x10, 0},
    });
}

TEST_F(Cache, LoadAtTheTopOfTheAddressSpaceIsCutOffNotWrapped)
{
    use(direct());
    run({
        // bytes 2^64-8 .. 2^64-1 only: one line, one miss
        {0xfffffffffffffff8ull, 16, DRAM, 100, 0xfffffffffffffff8ull, 1},
        {0xfffffffffffffff0ull, 16, L1, 2, 0xfffffffffffffff0ull, 0},
        // nothing at 0 was touched
        {0x0, 1, DRAM, 100, 0x0, 1},
    });
}

// ---------------------------------------------------------------------------
// Flushes ("Flushes")

TEST_F(Cache, FlushEmptiesEveryLevel)
{
    use(direct());
    run({{0x100, 4, DRAM, 100, 0x100, 1}, {0x100, 4, L1, 2, 0x100, 0}});
    lwp_cache_flush(c);
    run({{0x100, 4, DRAM, 100, 0x100, 1}});
}

TEST_F(Cache, FlushLineDropsEachLevelsOwnLine)
{
    use(direct());
    run({{0x100, 4, DRAM, 100, 0x100, 1}});
    // 0x11f is in L1 line 0x110 (0x100 stays in L1), L2 line 0x100 and
    // L3 line 0x100 (both dropped)
    lwp_cache_flush_line(c, 0x11f);
    run({
        {0x100, 4, L1, 2, 0x100, 0},
        {0x140, 1, DRAM, 100, 0x140, 1}, // evicts 0x100 from L1 set 0
        {0x100, 4, DRAM, 100, 0x100, 1}, // not in L2 or L3 any more
    });
    lwp_cache_flush_line(c, 0x105);
    run({{0x100, 4, DRAM, 100, 0x100, 1}});
}

// ---------------------------------------------------------------------------
// Configuration ("Configuration")

TEST(CacheConfig, Rules)
{
    LwpCacheConfig good = direct();
    EXPECT_TRUE(lwp_cache_config_valid(&good));

    struct Bad {
        const char *why;
        void (*edit)(LwpCacheConfig *);
    };
    const Bad bad[] = {
        {"no level", [](LwpCacheConfig *c) { c->levels = 0; }},
        {"4 levels", [](LwpCacheConfig *c) { c->levels = 4; }},
        {"line 8", [](LwpCacheConfig *c) { c->level[0] = {32, 1, 8, 1}; }},
        {"line 8192",
         [](LwpCacheConfig *c) { c->level[2] = {8192, 1, 8192, 1}; }},
        {"line 48", [](LwpCacheConfig *c) { c->level[0] = {96, 1, 48, 1}; }},
        {"0 ways", [](LwpCacheConfig *c) { c->level[0].ways = 0; }},
        {"65 ways",
         [](LwpCacheConfig *c) { c->level[2] = {65 * 64, 65, 64, 1}; }},
        {"size not ways*lines",
         [](LwpCacheConfig *c) { c->level[0] = {64, 3, 16, 1}; }},
        {"3 sets", [](LwpCacheConfig *c) { c->level[0] = {48, 1, 16, 1}; }},
        {"0 sets", [](LwpCacheConfig *c) { c->level[0].size = 0; }},
        {"line below the level above",
         [](LwpCacheConfig *c) { c->level[2] = {1024, 1, 16, 30}; }},
        {"above 64 MiB",
         [](LwpCacheConfig *c) { c->level[2] = {128u << 20, 1, 64, 30}; }},
    };
    for (const Bad &b : bad) {
        LwpCacheConfig cfg = good;
        b.edit(&cfg);
        EXPECT_FALSE(lwp_cache_config_valid(&cfg)) << b.why;
        EXPECT_EQ(lwp_cache_new(&cfg), nullptr) << b.why;
    }

    // A single set (fully associative), 64 ways, 64 MiB, one level
    LwpCacheConfig odd = make(9, {{64 * 64, 64, 64, 1}});
    EXPECT_TRUE(lwp_cache_config_valid(&odd));
    odd = make(9, {{64u << 20, 64, 4096, 1}});
    EXPECT_TRUE(lwp_cache_config_valid(&odd));
    // the fields of unused levels are ignored
    odd.level[2].line_size = 3;
    EXPECT_TRUE(lwp_cache_config_valid(&odd));
}

TEST_F(Cache, ConfigureEmptiesOrLeavesTheModelAlone)
{
    use(direct());
    run({{0x100, 4, DRAM, 100, 0x100, 1}});
    LwpCacheConfig bad = direct();
    bad.level[1].line_size = 8;
    EXPECT_FALSE(lwp_cache_configure(c, &bad));
    run({{0x100, 4, L1, 2, 0x100, 0}});
    LwpCacheConfig two = make(70, {{64, 1, 16, 3}, {256, 1, 32, 9}});
    EXPECT_TRUE(lwp_cache_configure(c, &two));
    run({
        {0x100, 4, DRAM, 70, 0x100, 1}, // empty, and the new latencies
        {0x140, 4, DRAM, 70, 0x140, 1},
        {0x100, 4, L2, 9, 0x100, 1},
    });
}

// ---------------------------------------------------------------------------
// Defaults ("Default configuration") and SRC

TEST_F(Cache, DefaultsModelAFamily15hCore)
{
    LwpCacheConfig cfg;
    lwp_cache_default_config(&cfg);
    ASSERT_EQ(cfg.levels, 3u);
    EXPECT_EQ(cfg.level[0].size, 16u << 10);
    EXPECT_EQ(cfg.level[0].ways, 4u);
    EXPECT_EQ(cfg.level[1].size, 2u << 20);
    EXPECT_EQ(cfg.level[1].ways, 16u);
    EXPECT_EQ(cfg.level[2].size, 8u << 20);
    EXPECT_EQ(cfg.level[2].ways, 64u);
    for (unsigned i = 0; i < 3; i++) {
        EXPECT_EQ(cfg.level[i].line_size, 64u);
    }
    use(cfg);

    // L1 has 64 sets, L2 and L3 2048: a stride of 4 KiB stays in one L1
    // set only, 128 KiB in one L1 and one L2 set, and 17 lines fit in a
    // 64-way L3 set
    const uint64_t x = 0x7f0000001040ull;
    run({{x, 8, DRAM, 256, x, 1}, {x, 8, L1, 4, x, 0}});
    for (uint64_t k = 1; k <= 4; k++) {
        run({{x + k * 4096, 8, DRAM, 256, x + k * 4096, 1}});
    }
    run({{x, 8, L2, 20, x, 1}}); // evicted from L1 by the fourth
    for (uint64_t k = 1; k <= 16; k++) {
        run({{x + k * 131072, 8, DRAM, 256, x + k * 131072, 1}});
    }
    run({{x, 8, L3, 64, x, 1}}); // evicted from L1 and L2 by the 16th
}

TEST(CacheSource, Figure2_5Src)
{
    EXPECT_EQ(lwp_cache_dme_source(LWP_CACHE_L1), 0u);
    EXPECT_EQ(lwp_cache_dme_source(LWP_CACHE_L2), 0u);
    EXPECT_EQ(lwp_cache_dme_source(LWP_CACHE_L3),
              unsigned{LWP_DME_SRC_LOCAL_L3});
    EXPECT_EQ(lwp_cache_dme_source(LWP_CACHE_DRAM), unsigned{LWP_DME_SRC_DRAM});
}

} // namespace

// ---------------------------------------------------------------------------
// The contents for migration (lwp_cache_save, lwp_cache_restore): each
// set's list of "LRU", from L1 on

namespace
{

TEST_F(Cache, SaveGivesEachSetsListMostRecentFirst)
{
    use(lru());
    EXPECT_TRUE(lwp_cache_empty(c));
    fill_lru();
    EXPECT_FALSE(lwp_cache_empty(c));
    // L1: one set of 4; L2: 16 sets of 4, line n alone in set n
    ASSERT_EQ(lwp_cache_state_words(c), 4u + 64u);
    std::vector<uint64_t> w(68);
    lwp_cache_save(c, w.data());
    const uint64_t e = ~uint64_t{0};
    std::vector<uint64_t> want(68, e);
    want[0] = 0, want[1] = 3, want[2] = 2, want[3] = 1;
    for (uint64_t n = 0; n < 4; n++) {
        want[4 + 4 * n] = n;
    }
    EXPECT_EQ(w, want);
}

// A model restored from another's contents behaves as that one
TEST_F(Cache, RestoredModelLoadsAsTheSavedOne)
{
    LwpCacheConfig cfg;
    lwp_cache_default_config(&cfg);
    use(cfg);
    LwpCache *b = lwp_cache_new(&cfg);
    ASSERT_NE(b, nullptr);
    uint64_t x = 1;
    auto next = [&x]() {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        // 4 MiB of lines, and now and then a line far above (tags with
        // bits above 31)
        return (x >> 63) && !(x & 0xf000) ? (x >> 8) << 12
                                          : (x >> 20) & ((4u << 20) - 1);
    };
    for (int i = 0; i < 300000; i++) {
        lwp_cache_load(c, next(), 8);
    }
    std::vector<uint64_t> saved(lwp_cache_state_words(c));
    lwp_cache_save(c, saved.data());
    ASSERT_TRUE(lwp_cache_restore(b, saved.data()));
    std::vector<uint64_t> again(saved.size());
    lwp_cache_save(b, again.data());
    EXPECT_EQ(again, saved);
    for (int i = 0; i < 300000; i++) {
        uint64_t a = next();
        LwpCacheResult r1 = lwp_cache_load(c, a, 16);
        LwpCacheResult r2 = lwp_cache_load(b, a, 16);
        ASSERT_EQ(r1.level, r2.level) << i;
        ASSERT_EQ(r1.addr, r2.addr) << i;
        ASSERT_EQ(r1.misses, r2.misses) << i;
    }
    lwp_cache_free(b);
}

// Contents that are no model's are refused, and leave the model empty
TEST_F(Cache, RestoreRefusesListsOfNoModel)
{
    use(lru());
    const uint64_t e = ~uint64_t{0};
    std::vector<uint64_t> good(68, e);
    good[0] = 5, good[1] = 7;
    good[4 + 4 * 5] = 5;
    ASSERT_TRUE(lwp_cache_restore(c, good.data()));
    EXPECT_FALSE(lwp_cache_empty(c));
    struct Bad {
        size_t at;
        uint64_t line;
        const char *why;
    } bad[] = {
        {4 + 4 * 6, 5, "L2: line 5 in set 6"},
        {4 + 4 * 5 + 1, 5, "L2: line 5 twice in set 5"},
        {2, 5, "L1: line 5 twice"},
        {4 + 4 * 7 + 1, 7, "L2: a line after an unused way"},
        {3, e >> 3, "L1: a line above the address space"},
    };
    for (const Bad &b : bad) {
        std::vector<uint64_t> w = good;
        w[b.at] = b.line;
        run({{0x50, 1, L1, 1, 0x50, 0}}); // the model holds lines
        EXPECT_FALSE(lwp_cache_restore(c, w.data())) << b.why;
        EXPECT_TRUE(lwp_cache_empty(c)) << b.why;
        ASSERT_TRUE(lwp_cache_restore(c, good.data()));
    }
}

} // namespace
