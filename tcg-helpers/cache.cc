// qemu-lwp engine: the data cache model behind the DCache Miss event
// (spec 2.4, 2.4.1; docs/cache-model.md)
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include "cache.h"

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
    std::free(lines_);
    std::free(stamps_);
}

bool CacheLevel::init(const LwpCacheLevelConfig &cfg)
{
    uint64_t entries = cfg.size / cfg.line_size;
    auto *lines =
        static_cast<uint64_t *>(std::malloc(entries * sizeof(uint64_t)));
    auto *stamps =
        static_cast<uint64_t *>(std::malloc(entries * sizeof(uint64_t)));
    if (!lines || !stamps) {
        std::free(lines);
        std::free(stamps);
        return false;
    }
    std::free(lines_);
    std::free(stamps_);
    lines_ = lines;
    stamps_ = stamps;
    ways_ = cfg.ways;
    set_mask_ = entries / cfg.ways - 1;
    line_shift_ = ilog2(cfg.line_size);
    latency_ = cfg.latency;
    clear();
    return true;
}

void CacheLevel::swap(CacheLevel &other)
{
    std::swap(lines_, other.lines_);
    std::swap(stamps_, other.stamps_);
    std::swap(clock_, other.clock_);
    std::swap(set_mask_, other.set_mask_);
    std::swap(ways_, other.ways_);
    std::swap(line_shift_, other.line_shift_);
    std::swap(latency_, other.latency_);
}

void CacheLevel::clear()
{
    uint64_t n = (set_mask_ + 1) * ways_;
    for (uint64_t i = 0; i < n; i++) {
        lines_[i] = kEmpty;
        stamps_[i] = 0;
    }
    clock_ = 0;
}

// "LRU": a hit makes the line the most recently used of its set.  The
// scans look at every way, without a branch that depends on the data
// (which way hits is unpredictable, a full scan is cheaper)
bool CacheLevel::lookup(uint64_t addr)
{
    uint64_t line = addr >> line_shift_;
    uint64_t base = set_base(line);
    const uint64_t *set = lines_ + base;
    uint32_t hit = ways_;
    for (uint32_t w = 0; w < ways_; w++) {
        hit = set[w] == line ? w : hit;
    }
    if (hit == ways_) {
        return false;
    }
    stamps_[base + hit] = ++clock_;
    return true;
}

// "LRU": a fill enters as the most recently used line; the least recently
// used one leaves if the set is full (an unused way has the smallest stamp)
void CacheLevel::fill(uint64_t addr)
{
    uint64_t line = addr >> line_shift_;
    uint64_t base = set_base(line);
    const uint64_t *stamp = stamps_ + base;
    uint32_t victim = 0;
    uint64_t oldest = stamp[0];
    for (uint32_t w = 1; w < ways_; w++) {
        bool older = stamp[w] < oldest;
        victim = older ? w : victim;
        oldest = older ? stamp[w] : oldest;
    }
    lines_[base + victim] = line;
    stamps_[base + victim] = ++clock_;
}

void CacheLevel::invalidate(uint64_t addr)
{
    uint64_t line = addr >> line_shift_;
    uint64_t base = set_base(line);
    for (uint32_t w = 0; w < ways_; w++) {
        if (lines_[base + w] == line) {
            lines_[base + w] = kEmpty;
            stamps_[base + w] = 0;
            return;
        }
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
    return true;
}

// "Lookup and fill": the levels in order until one hits (or DRAM); every
// level above the one that supplied the line gets it
unsigned CacheModel::access_line(uint64_t addr)
{
    unsigned src = 0;
    while (src < levels_ && !level_[src].lookup(addr)) {
        src++;
    }
    for (unsigned i = 0; i < src; i++) {
        level_[i].fill(addr);
    }
    return src;
}

// "Loads and line-crossing loads": the L1 lines of the load, in ascending
// order, each accessed as above; the result describes the first that
// missed L1
bool CacheModel::load(uint64_t addr, uint32_t size, LwpCacheResult *res)
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
        unsigned src = access_line(a);
        if (src) {
            if (!res->misses) {
                res->addr = a < addr ? addr : a;
                res->level = static_cast<uint8_t>(
                    src < levels_ ? LWP_CACHE_L1 + src : LWP_CACHE_DRAM);
                res->latency =
                    src < levels_ ? level_[src].latency() : dram_latency_;
            }
            res->misses++;
        }
        if (a == last_line) {
            break;
        }
    }
    return res->misses != 0;
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
