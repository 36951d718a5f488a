// qemu-lwp engine: the data cache model behind the DCache Miss event
// (spec 2.4).  docs/cache-model.md specifies it; the section names below
// ("Lookup", "LRU", ...) are that document's.  The C interface is
// lwp_cache_* in lwp-engine.h; this header is for the engine and its
// tests.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#ifndef LWP_CACHE_H
#define LWP_CACHE_H

#include <cstdint>

#include "lwp-engine.h"

namespace lwp
{

// One set-associative cache level with true LRU per set ("Levels").
// Each set is an array of `ways` line numbers (kEmpty: an unused way), in
// no order, each with the time it was last used: a stamp from a counter
// that every use advances, 0 for an unused way.  The set's list of
// docs/cache-model.md, most recently used first, is its lines by
// decreasing stamp, so a hit only writes a stamp, and a fill replaces
// the way with the smallest (an unused one, else the least recently
// used line).
class CacheLevel
{
  public:
    CacheLevel() = default;
    CacheLevel(const CacheLevel &) = delete;
    CacheLevel &operator=(const CacheLevel &) = delete;
    ~CacheLevel();

    // Takes a valid level configuration; false when memory runs out
    bool init(const LwpCacheLevelConfig &cfg);
    // Whether the line holding @addr is present; a hit makes it the most
    // recently used of its set ("LRU")
    bool lookup(uint64_t addr);
    // Inserts the line holding @addr, absent, as the most recently used,
    // evicting the least recently used when the set is full
    void fill(uint64_t addr);
    // Removes the line holding @addr if present; the others keep their order
    void invalidate(uint64_t addr);
    void clear();
    void swap(CacheLevel &other);

    uint32_t latency() const
    {
        return latency_;
    }
    uint32_t line_size() const
    {
        return uint32_t{1} << line_shift_;
    }

    static constexpr uint64_t kEmpty = ~uint64_t{0};

  private:
    uint64_t set_base(uint64_t line) const
    {
        return (line & set_mask_) * ways_;
    }

    // sets * ways each, a set's ways side by side: the lookup scans only
    // the line numbers
    uint64_t *lines_ = nullptr;
    uint64_t *stamps_ = nullptr;
    uint64_t clock_ = 0; // the last stamp given
    uint64_t set_mask_ = 0;     // sets - 1
    uint32_t ways_ = 0;
    uint32_t line_shift_ = 0;
    uint32_t latency_ = 0;
};

// The hierarchy: levels looked up in order, then DRAM ("Lookup and fill").
// configure() must succeed before any other call.
class CacheModel
{
  public:
    bool configure(const LwpCacheConfig &cfg);
    bool load(uint64_t addr, uint32_t size, LwpCacheResult *res);
    void flush();
    void flush_line(uint64_t addr);

  private:
    // One L1 line: the level that supplied it (index into level_, or
    // levels_ for DRAM)
    unsigned access_line(uint64_t addr);

    CacheLevel level_[LWP_CACHE_MAX_LEVELS];
    unsigned levels_ = 0;
    uint32_t dram_latency_ = 0;
};

bool cache_config_valid(const LwpCacheConfig &cfg);

} // namespace lwp

#endif // LWP_CACHE_H
