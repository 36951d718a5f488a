// qemu-lwp engine: the data cache model behind the DCache Miss event
// (spec 2.4).  docs/cache-model.md specifies it; the section names below
// ("Lookup", "LRU", ...) are that document's.  The C interface is
// lwp_cache_* in lwp-engine.h; this header is for the engine and its
// tests.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#ifndef LWP_CACHE_HH
#define LWP_CACHE_HH

#include <cstdint>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "lwp-engine.hh"

namespace lwp
{

// What a level of either kind takes from its configuration
class LevelShape
{
  public:
    uint32_t latency() const
    {
        return latency_;
    }
    uint32_t line_size() const
    {
        return uint32_t{1} << line_shift_;
    }

  protected:
    // Takes a valid level configuration
    void set_shape(const LwpCacheLevelConfig &cfg);
    void swap_shape(LevelShape &other);

    uint64_t set_mask_ = 0; // sets - 1
    uint32_t set_bits_ = 0;
    uint32_t ways_ = 0;
    uint32_t line_shift_ = 0;
    uint32_t latency_ = 0;
};

// L1: each set is its list of "LRU", most recently used line first, as
// line numbers, with kEmpty after the used lines.  lwp_cache_l1_lines
// gives the glue this array, so that generated code can tell a load
// that hits the first line of its set, which changes nothing.
class ListLevel : public LevelShape
{
  public:
    ListLevel() = default;
    ListLevel(const ListLevel &) = delete;
    ListLevel &operator=(const ListLevel &) = delete;
    ~ListLevel();

    // Takes a valid level configuration; false when memory runs out
    bool init(const LwpCacheLevelConfig &cfg);
    // As CacheLevel's
    bool lookup(uint64_t addr);
    void fill(uint64_t addr);
    void invalidate(uint64_t addr);
    void clear();
    void swap(ListLevel &other);

    uint64_t *lines()
    {
        return lines_;
    }

  private:
    // CacheModel::load's path for a load within one L1 line
    friend class CacheModel;

    static constexpr uint64_t kEmpty = ~uint64_t{0};

    uint64_t *set_of(uint64_t line) const
    {
        return lines_ + (line & set_mask_) * ways_;
    }
    // The list @set (ways_ entries) with its entry @k removed and @line
    // put in front: entries 0 to k - 1 move back by one place
    static void to_front(uint64_t *set, uint32_t k, uint64_t line)
    {
        for (; k > 0; k--) {
            set[k] = set[k - 1];
        }
        set[0] = line;
    }
    // The index of @line in @set, or ways_ if it is not there
    uint32_t find(const uint64_t *set, uint64_t line) const
    {
        uint32_t k = 0;
        while (k < ways_ && set[k] != line) {
            k++;
        }
        return k;
    }

    uint64_t *lines_ = nullptr;
};

// L2 and L3: one set-associative cache level with true LRU per set
// ("Levels").  Each set is an array of `ways` ways, in no order.  A way
// holds a line as its tag, the line number without the set index bits,
// in three parts (see "Cost" in docs/cache-model.md): its low 31 bits in
// tags_ (kEmptyTag for an unused way), the rest in hi_, which is read
// only while some line of the level has a nonzero rest (wide_; user
// addresses never do), and the time the way was last used: a stamp from
// a counter that every use advances, 0 for an unused way.
// The set's list of docs/cache-model.md, most recently used first, is its
// lines by decreasing stamp, so a hit only writes a stamp, and a fill
// replaces the way with the smallest (an unused one, else the least
// recently used line).  A set takes `stride_` entries of each array, its
// ways rounded up to a multiple of 4 (the padding is kEmptyTag), so that
// a lookup compares four tags at a time.
class CacheLevel : public LevelShape
{
  public:
    CacheLevel() = default;
    CacheLevel(const CacheLevel &) = delete;
    CacheLevel &operator=(const CacheLevel &) = delete;
    ~CacheLevel();

    // Takes a valid level configuration; false when memory runs out
    bool init(const LwpCacheLevelConfig &cfg);
    // Whether the line holding @addr is present; a hit makes it the most
    // recently used of its set ("LRU").  @stride: the level's stride_, if
    // the caller knows it, for a compare unrolled at compile time
    template <uint32_t stride = 0>
    [[gnu::always_inline]] inline bool lookup(uint64_t addr);
    // Inserts the line holding @addr, absent, as the most recently used,
    // evicting the least recently used when the set is full
    void fill(uint64_t addr);
    // Removes the line holding @addr if present; the others keep their order
    void invalidate(uint64_t addr);
    void clear();
    void swap(CacheLevel &other);

    // For tests only: raise the stamp counter to @clock (at most to the
    // limit), to reach the renumbering of stamps without two billion
    // accesses
    void raise_clock_for_test(uint32_t clock)
    {
        clock = clock < kClockLimit ? clock : kClockLimit - 1;
        clock_ = clock > clock_ ? clock : clock_;
    }

  private:
    static constexpr uint32_t kEmptyTag = ~uint32_t{0};
    static constexpr uint32_t kTagBits = 31;
    // Stamps stay below this, so that they compare as signed numbers too
    static constexpr uint32_t kClockLimit = uint32_t{1} << 31;

    uint64_t set_base(uint64_t line) const
    {
        return (line & set_mask_) * stride_;
    }
    uint32_t tag_lo(uint64_t line) const
    {
        return static_cast<uint32_t>(line >> set_bits_) &
               ((uint32_t{1} << kTagBits) - 1);
    }
    uint32_t tag_hi(uint64_t line) const
    {
        return static_cast<uint32_t>(line >> (set_bits_ + kTagBits));
    }
    // The ways among the stride_ entries at @set that hold @want: a bit
    // per way
    [[gnu::always_inline]] inline uint64_t equal(const uint32_t *set,
                                                 uint32_t want) const;
    // The ways of the set at @base whose tag is @line's (@stride: as for
    // lookup)
    template <uint32_t stride = 0>
    [[gnu::always_inline]] inline uint64_t match(uint64_t base,
                                                 uint64_t line) const;
    // The way of the set at @base that a fill replaces: the one with the
    // smallest stamp (the first of them)
    [[gnu::always_inline]] inline uint32_t victim(uint64_t base) const;
    // The way at @index now holds @line, as the most recently used
    [[gnu::always_inline]] inline void put(uint64_t index, uint64_t line);
    uint32_t next_stamp()
    {
        if (clock_ == kClockLimit - 1) {
            renumber();
        }
        return ++clock_;
    }

    void renumber();

    uint32_t *tags_ = nullptr;
    uint32_t *hi_ = nullptr;
    uint32_t *stamps_ = nullptr;
    bool wide_ = false;
    uint32_t clock_ = 0; // the last stamp given
    uint32_t stride_ = 0;
};

// The ways among @set's @n entries that hold @want: a bit per way
[[gnu::always_inline]] inline uint64_t equal_n(const uint32_t *set,
                                               uint32_t want, uint32_t n)
{
    uint64_t ways = 0;
#ifdef __SSE2__
    __m128i v = _mm_set1_epi32(static_cast<int>(want));
    // unrolled for the constant @n of the short path: 11.7 instead of
    // 12.4 ns per load where the loads of a gzip run are replayed (the
    // same for oldest_n's chain of conditional moves: 13.9)
#pragma GCC unroll 16
    for (uint32_t w = 0; w < n; w += 4) {
        __m128i four =
            _mm_loadu_si128(reinterpret_cast<const __m128i *>(set + w));
        uint32_t eq = static_cast<uint32_t>(
            _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(four, v))));
        ways |= uint64_t{eq} << w;
    }
#else
    for (uint32_t w = 0; w < n; w++) {
        ways |= uint64_t{set[w] == want} << w;
    }
#endif
    return ways;
}

// The way with the smallest of @n stamps (the first of them)
[[gnu::always_inline]] inline uint32_t oldest_n(const uint32_t *stamp,
                                                uint32_t n)
{
    uint32_t way = 0;
    uint32_t oldest = stamp[0];
    for (uint32_t w = 1; w < n; w++) {
        bool older = stamp[w] < oldest;
        way = older ? w : way;
        oldest = older ? stamp[w] : oldest;
    }
    return way;
}

// equal_n and oldest_n get the usual associativities as constants
uint64_t CacheLevel::equal(const uint32_t *set, uint32_t want) const
{
    switch (stride_) {
    case 4:
        return equal_n(set, want, 4);
    case 8:
        return equal_n(set, want, 8);
    case 16:
        return equal_n(set, want, 16);
    default:
        return equal_n(set, want, stride_);
    }
}

template <uint32_t stride>
uint64_t CacheLevel::match(uint64_t base, uint64_t line) const
{
    uint64_t ways = stride ? equal_n(tags_ + base, tag_lo(line), stride)
                           : equal(tags_ + base, tag_lo(line));
    uint32_t hi = tag_hi(line);
    if (wide_ || hi) {
        ways &=
            stride ? equal_n(hi_ + base, hi, stride) : equal(hi_ + base, hi);
    }
    return ways;
}

uint32_t CacheLevel::victim(uint64_t base) const
{
    const uint32_t *stamp = stamps_ + base;
    switch (ways_) {
    case 4:
        return oldest_n(stamp, 4);
    case 8:
        return oldest_n(stamp, 8);
    case 16:
        return oldest_n(stamp, 16);
    default:
        return oldest_n(stamp, ways_);
    }
}

void CacheLevel::put(uint64_t index, uint64_t line)
{
    uint32_t hi = tag_hi(line);
    tags_[index] = tag_lo(line);
    if (hi || wide_) {
        hi_[index] = hi;
        wide_ = true;
    }
    stamps_[index] = next_stamp();
}

// "LRU": a hit makes the line the most recently used of its set
template <uint32_t stride> bool CacheLevel::lookup(uint64_t addr)
{
    uint64_t line = addr >> line_shift_;
    uint64_t base = (line & set_mask_) * (stride ? stride : stride_);
    uint64_t ways = match<stride>(base, line);
    if (!ways) {
        return false;
    }
    stamps_[base + static_cast<unsigned>(__builtin_ctzll(ways))] = next_stamp();
    return true;
}

// The hierarchy: levels looked up in order, then DRAM ("Lookup and fill").
// configure() must succeed before any other call.
class CacheModel
{
  public:
    bool configure(const LwpCacheConfig &cfg);
    LwpCacheResult load(uint64_t addr, uint32_t size);
    // For tests only: CacheLevel::raise_clock_for_test on L2 and L3
    void raise_clock_for_test(uint32_t clock);
    void flush();
    void flush_line(uint64_t addr);
    // lwp_cache_l1_lines
    uint64_t *l1_lines()
    {
        return l1_.lines();
    }

  private:
    // Level @i, 1 (L2) or 2 (L3)
    CacheLevel &lower(unsigned i)
    {
        return lower_[i - 1];
    }
    // One L1 line from level @first >= 1 on (after a miss in those above
    // it): the level that supplied it (0 is L1, levels_ DRAM)
    [[gnu::noinline]] unsigned access_from(unsigned first, uint64_t addr);
    // One L1 line from L1 on
    unsigned access(uint64_t addr);
    [[gnu::noinline]] LwpCacheResult load_lines(uint64_t addr, uint32_t size);
    template <uint32_t ways, uint32_t l2_stride>
    [[gnu::always_inline]] inline unsigned access_line_l1(uint64_t addr);

    ListLevel l1_;
    CacheLevel lower_[LWP_CACHE_MAX_LEVELS - 1]; // L2, L3
    unsigned levels_ = 0;
    unsigned fast_path_ = 0;
    uint32_t dram_latency_ = 0;
    // By the supplying level (0 is L1, levels_ DRAM): the result's level
    // and latency
    uint8_t result_level_[LWP_CACHE_MAX_LEVELS + 1] = {};
    uint32_t result_latency_[LWP_CACHE_MAX_LEVELS + 1] = {};
};

bool cache_config_valid(const LwpCacheConfig &cfg);

} // namespace lwp

// The C interface's handle: one model per vCPU
struct LwpCache {
    lwp::CacheModel model;
};

#endif // LWP_CACHE_HH
