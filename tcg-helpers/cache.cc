// qemu-lwp engine: the data cache model behind the DCache Miss event
// (spec 2.4, 2.4.1; docs/cache-model.md)
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include "cache.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <utility>

// The C interface's handle: one model per vCPU
struct LwpCache {
    lwp::CacheModel model;
};

namespace lwp
{
namespace
{

constexpr uint32_t kMinLine = 16;
constexpr uint32_t kMaxLine = 4096;
constexpr uint32_t kMaxWays = 64;
constexpr uint32_t kMaxSize = uint32_t{64} << 20;

constexpr bool pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

unsigned ilog2(uint64_t v)
{
    unsigned n = 0;
    while (v > 1) {
        v >>= 1;
        n++;
    }
    return n;
}

// "Configuration": the rules a level must follow
bool level_valid(const LwpCacheLevelConfig &l)
{
    if (!pow2(l.line_size) || l.line_size < kMinLine ||
        l.line_size > kMaxLine || l.ways < 1 || l.ways > kMaxWays ||
        l.size > kMaxSize) {
        return false;
    }
    uint64_t way_bytes = uint64_t{l.ways} * l.line_size;
    return l.size % way_bytes == 0 && pow2(l.size / way_bytes);
}

} // namespace

bool cache_config_valid(const LwpCacheConfig &cfg)
{
    if (cfg.levels < 1 || cfg.levels > LWP_CACHE_MAX_LEVELS) {
        return false;
    }
    for (unsigned i = 0; i < cfg.levels; i++) {
        if (!level_valid(cfg.level[i]) ||
            (i && cfg.level[i].line_size < cfg.level[i - 1].line_size)) {
            return false;
        }
    }
    return true;
}

CacheLevel::~CacheLevel()
{
    std::free(tags_);
    std::free(hi_);
    std::free(stamps_);
}

bool CacheLevel::init(const LwpCacheLevelConfig &cfg)
{
    uint64_t sets = cfg.size / cfg.line_size / cfg.ways;
    uint32_t stride = (cfg.ways + 3) & ~3u;
    // whole host cache lines, so that a 16-way set's tags are one
    size_t bytes = (sets * stride * sizeof(uint32_t) + 63) & ~size_t{63};
    auto *tags = static_cast<uint32_t *>(std::aligned_alloc(64, bytes));
    auto *hi = static_cast<uint32_t *>(std::aligned_alloc(64, bytes));
    auto *stamps = static_cast<uint32_t *>(std::aligned_alloc(64, bytes));
    if (!tags || !hi || !stamps) {
        std::free(tags);
        std::free(hi);
        std::free(stamps);
        return false;
    }
    std::free(tags_);
    std::free(hi_);
    std::free(stamps_);
    tags_ = tags;
    hi_ = hi;
    stamps_ = stamps;
    ways_ = cfg.ways;
    stride_ = stride;
    set_mask_ = sets - 1;
    set_bits_ = ilog2(sets);
    line_shift_ = ilog2(cfg.line_size);
    latency_ = cfg.latency;
    clear();
    return true;
}

void CacheLevel::swap(CacheLevel &other)
{
    std::swap(tags_, other.tags_);
    std::swap(hi_, other.hi_);
    std::swap(stamps_, other.stamps_);
    std::swap(wide_, other.wide_);
    std::swap(clock_, other.clock_);
    std::swap(set_mask_, other.set_mask_);
    std::swap(set_bits_, other.set_bits_);
    std::swap(ways_, other.ways_);
    std::swap(stride_, other.stride_);
    std::swap(line_shift_, other.line_shift_);
    std::swap(latency_, other.latency_);
}

void CacheLevel::clear()
{
    uint64_t n = (set_mask_ + 1) * stride_;
    for (uint64_t i = 0; i < n; i++) {
        tags_[i] = kEmptyTag;
        hi_[i] = 0;
        stamps_[i] = 0;
    }
    wide_ = false;
    clock_ = 0;
}

// The stamp counter reached its limit: give each set's used ways the
// stamps 1, 2, ... in the order of their stamps, which keeps every set's
// order, and go on from the largest
void CacheLevel::renumber()
{
    for (uint64_t base = 0; base <= set_mask_ * stride_; base += stride_) {
        uint32_t *stamp = stamps_ + base;
        uint64_t used[kMaxWays]; // stamp << 32 | way
        uint32_t n = 0;
        for (uint32_t w = 0; w < ways_; w++) {
            if (stamp[w]) {
                used[n++] = uint64_t{stamp[w]} << 32 | w;
            }
        }
        std::sort(used, used + n);
        for (uint32_t i = 0; i < n; i++) {
            stamp[static_cast<uint32_t>(used[i])] = i + 1;
        }
    }
    clock_ = ways_;
}

// "LRU": a fill enters as the most recently used line; the least recently
// used one leaves if the set is full (an unused way has the smallest stamp)
void CacheLevel::fill(uint64_t addr)
{
    uint64_t line = addr >> line_shift_;
    uint64_t base = set_base(line);
    put(base + victim(base), line);
}

void CacheLevel::invalidate(uint64_t addr)
{
    uint64_t line = addr >> line_shift_;
    uint64_t base = set_base(line);
    uint64_t ways = match(base, line);
    if (ways) {
        unsigned w = static_cast<unsigned>(__builtin_ctzll(ways));
        tags_[base + w] = kEmptyTag;
        hi_[base + w] = 0;
        stamps_[base + w] = 0;
    }
}

bool CacheModel::configure(const LwpCacheConfig &cfg)
{
    if (!cache_config_valid(cfg)) {
        return false;
    }
    CacheLevel fresh[LWP_CACHE_MAX_LEVELS];
    for (unsigned i = 0; i < cfg.levels; i++) {
        if (!fresh[i].init(cfg.level[i])) {
            return false;
        }
    }
    for (unsigned i = 0; i < LWP_CACHE_MAX_LEVELS; i++) {
        level_[i].swap(fresh[i]);
    }
    levels_ = cfg.levels;
    dram_latency_ = cfg.dram_latency;
    fast_path_ = 0;
    if (cfg.level[0].ways == 4) {
        fast_path_ = levels_ > 1 && cfg.level[1].ways == 16 ? 1 : 2;
    }
    for (unsigned i = 0; i <= LWP_CACHE_MAX_LEVELS; i++) {
        result_level_[i] = LWP_CACHE_DRAM;
        result_latency_[i] = dram_latency_;
    }
    for (unsigned i = 0; i < levels_ && i < LWP_CACHE_MAX_LEVELS; i++) {
        result_level_[i] = static_cast<uint8_t>(LWP_CACHE_L1 + i);
        result_latency_[i] = level_[i].latency();
    }
    return true;
}

// "Lookup and fill": the levels from @first on in order until one hits
// (or DRAM); every level from @first above the one that supplied the line
// gets it
unsigned CacheModel::access_from(unsigned first, uint64_t addr)
{
    unsigned src = first;
    while (src < levels_ && !level_[src].lookup(addr)) {
        src++;
    }
    for (unsigned i = first; i < src; i++) {
        level_[i].fill(addr);
    }
    return src;
}

// access_from(0, ...), when L1's sets have @ways ways and L2's stride is
// @l2_stride (0: not known at compile time).  Whether a load hits L1 is as
// good as random, so L1's hit and fill are the same update of one way,
// chosen without a branch.  L1's stamp counter is not checked: load goes
// to load_lines near its limit.
template <uint32_t ways, uint32_t l2_stride>
unsigned CacheModel::access_line_l1(uint64_t addr)
{
    CacheLevel &l1 = level_[0];
    uint64_t line = addr >> l1.line_shift_;
    uint64_t base = (line & l1.set_mask_) * ways;
    uint32_t lo = l1.tag_lo(line);
    uint32_t hi = l1.tag_hi(line);
    uint32_t *tags = l1.tags_ + base;
    uint32_t *his = l1.hi_ + base;
    uint32_t *stamps = l1.stamps_ + base;
    uint64_t hit = equal_n(tags, lo, ways) & equal_n(his, hi, ways);
    uint32_t victim = oldest_n(stamps, ways);
    uint32_t way = hit ? static_cast<uint32_t>(__builtin_ctzll(hit)) : victim;
    uint32_t now = ++l1.clock_; // load took load_lines near the limit

    tags[way] = lo;
    his[way] = hi;
    l1.wide_ |= hi != 0;
    stamps[way] = now;
    if (hit) {
        return 0;
    }
    if (levels_ > 1 && level_[1].lookup<l2_stride>(addr)) {
        return 1;
    }
    return access_from(1, addr);
}

// "Loads and line-crossing loads": the L1 lines of the load, in ascending
// order, each accessed as above; the result describes the first that
// missed L1.  A load within one line takes a short path, with the rest out
// of line (load_lines), so that it saves few registers
bool CacheModel::load(uint64_t addr, uint32_t size, LwpCacheResult *res)
{
    uint64_t mask = ~uint64_t{0} << level_[0].line_shift_;
    uint64_t last = addr + (size ? size - 1 : 0);

    if ((addr & mask) != (last & mask) || last < addr || !fast_path_ ||
        level_[0].clock_ >= CacheLevel::kClockLimit - 1) {
        return load_lines(addr, size, res);
    }
    unsigned src = fast_path_ == 1 ? access_line_l1<4, 16>(addr)
                                   : access_line_l1<4, 0>(addr);
    res->addr = addr;
    res->level = result_level_[src];
    res->latency = result_latency_[src];
    res->misses = src != 0;
    return src != 0;
}

bool CacheModel::load_lines(uint64_t addr, uint32_t size, LwpCacheResult *res)
{
    uint64_t line = level_[0].line_size();
    uint64_t last = size ? addr + (size - 1) : addr;
    if (last < addr) {
        last = ~uint64_t{0};
    }
    uint64_t first_line = addr & ~(line - 1);
    uint64_t last_line = last & ~(line - 1);

    *res = LwpCacheResult{};
    res->addr = addr;
    res->level = LWP_CACHE_L1;
    res->latency = level_[0].latency();
    for (uint64_t a = first_line;; a += line) {
        unsigned src = access_from(0, a);
        if (src) {
            if (!res->misses) {
                res->addr = a < addr ? addr : a;
                res->level = result_level_[src];
                res->latency = result_latency_[src];
            }
            res->misses++;
        }
        if (a == last_line) {
            break;
        }
    }
    return res->misses != 0;
}

void CacheModel::raise_clock_for_test(uint32_t clock)
{
    for (CacheLevel &l : level_) {
        l.raise_clock_for_test(clock);
    }
}

void CacheModel::flush()
{
    for (unsigned i = 0; i < levels_; i++) {
        level_[i].clear();
    }
}

void CacheModel::flush_line(uint64_t addr)
{
    for (unsigned i = 0; i < levels_; i++) {
        level_[i].invalidate(addr);
    }
}

} // namespace lwp

extern "C" {

// docs/cache-model.md, "Default configuration": an FX-8150 / Opteron 6200
// (Family 15h) core, with the caches it shares treated as its own
void lwp_cache_default_config(LwpCacheConfig *cfg)
{
    *cfg = LwpCacheConfig{};
    cfg->levels = 3;
    cfg->level[0] = {16u << 10, 4, 64, 4};
    cfg->level[1] = {2u << 20, 16, 64, 20};
    cfg->level[2] = {8u << 20, 64, 64, 64};
    cfg->dram_latency = 256;
}

bool lwp_cache_config_valid(const LwpCacheConfig *cfg)
{
    return lwp::cache_config_valid(*cfg);
}

LwpCache *lwp_cache_new(const LwpCacheConfig *cfg)
{
    void *p = std::malloc(sizeof(LwpCache));
    if (!p) {
        return nullptr;
    }
    auto *c = new (p) LwpCache;
    if (!c->model.configure(*cfg)) {
        lwp_cache_free(c);
        return nullptr;
    }
    return c;
}

void lwp_cache_free(LwpCache *c)
{
    if (c) {
        c->~LwpCache();
        std::free(c);
    }
}

bool lwp_cache_configure(LwpCache *c, const LwpCacheConfig *cfg)
{
    return c->model.configure(*cfg);
}

bool lwp_cache_load(LwpCache *c, uint64_t addr, uint32_t size,
                    LwpCacheResult *res)
{
    return c->model.load(addr, size, res);
}

void lwp_cache_flush(LwpCache *c)
{
    c->model.flush();
}

void lwp_cache_flush_line(LwpCache *c, uint64_t addr)
{
    c->model.flush_line(addr);
}

// Figure 2-5 SRC: L3 is the Family 15h northbridge cache (Table 6-2 NBC),
// DRAM is DRAM; Figure 2-5 has no code for L2, so an L2 hit reports 0
// ("No valid status"), and CLF never makes it eligible (choice 28)
unsigned lwp_cache_dme_source(unsigned level)
{
    switch (level) {
    case LWP_CACHE_L3:
        return LWP_DME_SRC_LOCAL_L3;
    case LWP_CACHE_DRAM:
        return LWP_DME_SRC_DRAM;
    default:
        return LWP_DME_SRC_NONE;
    }
}

} // extern "C"
