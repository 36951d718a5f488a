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
    // As CacheModel's, for this level's sets
    uint64_t state_words() const
    {
        return (set_mask_ + 1) * ways_;
    }
    void save(uint64_t *words) const;
    bool restore(const uint64_t *words);
    bool empty() const;

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
// only while some line of the level has a nonzero rest (narrow_limit_;
// user addresses never do), and the time the way was last used: a stamp from
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
    // lookup() in two steps: whether the line of @addr is present, with
    // the entry of its way in @index ...
    template <uint32_t stride = 0>
    [[gnu::always_inline]] inline bool find(uint64_t addr,
                                            uint64_t *index) const;
    // ... and the hit on the way at @index, which fails and changes
    // nothing when the stamps need renumbering (then hit(), out of line)
    [[gnu::always_inline]] inline bool hit_fast(uint64_t index)
    {
        uint32_t stamp = clock_ + 1;
        if (static_cast<int32_t>(stamp) < 0) { // stamp == kClockLimit, 2^31
            return false;
        }
        clock_ = stamp;
        stamps_[index] = stamp;
        return true;
    }
    void hit(uint64_t index)
    {
        stamps_[index] = next_stamp();
    }
    // Inserts the line holding @addr, absent, as the most recently used,
    // evicting the least recently used when the set is full
    void fill(uint64_t addr);
    // Removes the line holding @addr if present; the others keep their order
    void invalidate(uint64_t addr);
    void clear();
    void swap(CacheLevel &other);
    // As CacheModel's, for this level's sets
    uint64_t state_words() const
    {
        return (set_mask_ + 1) * ways_;
    }
    void save(uint64_t *words) const;
    bool restore(const uint64_t *words);
    bool empty() const;

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

    // The first entry of the set of @addr (@stride: as for lookup)
    template <uint32_t stride = 0> uint64_t set_base(uint64_t addr) const
    {
        return ((addr >> line_shift_) & set_mask_) *
               (stride ? stride : stride_);
    }
    // The two parts of the tag of the line holding @addr
    uint32_t tag_lo(uint64_t addr) const
    {
        return static_cast<uint32_t>(addr >> tag_shift_) &
               ((uint32_t{1} << kTagBits) - 1);
    }
    uint32_t tag_hi(uint64_t addr) const
    {
        return static_cast<uint32_t>(addr >> hi_shift_);
    }
    // The ways among the stride_ entries at @set that hold @want: a bit
    // per way
    [[gnu::always_inline]] inline uint64_t equal(const uint32_t *set,
                                                 uint32_t want) const;
    // The ways of the set at @base that hold the line of @addr (@stride:
    // as for lookup)
    template <uint32_t stride = 0>
    [[gnu::always_inline]] inline uint64_t match(uint64_t base,
                                                 uint64_t addr) const;
    // The way of the set at @base that a fill replaces: the one with the
    // smallest stamp (the first of them)
    [[gnu::always_inline]] inline uint32_t victim(uint64_t base) const;
    // The way at @index now holds the line of @addr, as the most recently
    // used
    [[gnu::always_inline]] inline void put(uint64_t index, uint64_t addr);
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
    // While no line of the level has a nonzero rest, the addresses whose
    // line has none: those below 2^hi_shift_; 0 once some line has one
    uint64_t narrow_limit_ = 0;
    uint32_t clock_ = 0; // the last stamp given
    uint32_t stride_ = 0;
    uint32_t tag_shift_ = 0; // line_shift_ + set_bits_
    uint32_t hi_shift_ = 0;  // tag_shift_ + kTagBits
};

// The ways among @set's @n entries that hold @want: a bit per way.  @n
// is a multiple of 4, and with SSE2 @set is 16-byte aligned.
[[gnu::always_inline]] inline uint64_t equal_n(const uint32_t *set,
                                               uint32_t want, uint32_t n)
{
    uint64_t ways = 0;
    uint32_t w = 0;
#ifdef __SSE2__
    const __m128i *v = reinterpret_cast<const __m128i *>(set);
    __m128i x = _mm_set1_epi32(static_cast<int>(want));
    // sixteen ways at a time: four compares packed into one byte mask (a
    // 16-way L2 lookup takes 3 instructions fewer than with four
    // movmskps, shifts and ors, 81 instead of 88 per load of the model
    // where the loads of a gzip run are replayed: bench/cache_replay.cc)
#pragma GCC unroll 4
    for (; w + 16 <= n; w += 16) {
        __m128i e0 = _mm_cmpeq_epi32(_mm_load_si128(v + w / 4), x);
        __m128i e1 = _mm_cmpeq_epi32(_mm_load_si128(v + w / 4 + 1), x);
        __m128i e2 = _mm_cmpeq_epi32(_mm_load_si128(v + w / 4 + 2), x);
        __m128i e3 = _mm_cmpeq_epi32(_mm_load_si128(v + w / 4 + 3), x);
        __m128i e =
            _mm_packs_epi16(_mm_packs_epi32(e0, e1), _mm_packs_epi32(e2, e3));
        ways |= uint64_t{static_cast<uint32_t>(_mm_movemask_epi8(e))} << w;
    }
#pragma GCC unroll 4
    for (; w < n; w += 4) {
        __m128i e = _mm_cmpeq_epi32(_mm_load_si128(v + w / 4), x);
        uint32_t eq =
            static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(e)));
        ways |= uint64_t{eq} << w;
    }
#else
    for (; w < n; w++) {
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
uint64_t CacheLevel::match(uint64_t base, uint64_t addr) const
{
    uint64_t ways = stride ? equal_n(tags_ + base, tag_lo(addr), stride)
                           : equal(tags_ + base, tag_lo(addr));
    if (addr >= narrow_limit_) {
        uint32_t hi = tag_hi(addr);
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

void CacheLevel::put(uint64_t index, uint64_t addr)
{
    tags_[index] = tag_lo(addr);
    if (addr >= narrow_limit_) {
        hi_[index] = tag_hi(addr);
        narrow_limit_ = 0;
    }
    stamps_[index] = next_stamp();
}

template <uint32_t stride>
bool CacheLevel::find(uint64_t addr, uint64_t *index) const
{
    uint64_t base = set_base<stride>(addr);
    uint64_t ways = match<stride>(base, addr);
    if (!ways) {
        return false;
    }
    *index = base + static_cast<uint64_t>(__builtin_ctzll(ways));
    return true;
}

// "LRU": a hit makes the line the most recently used of its set
template <uint32_t stride> bool CacheLevel::lookup(uint64_t addr)
{
    uint64_t index;
    if (!find<stride>(addr, &index)) {
        return false;
    }
    hit(index);
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
    // The contents, as lwp_cache_save and lwp_cache_restore take them
    uint64_t state_words() const;
    void save(uint64_t *words) const;
    bool restore(const uint64_t *words);
    bool empty() const;
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
    // load(), for a load in more than one L1 line or without a short path
    [[gnu::noinline]] LwpCacheResult load_lines(uint64_t addr, uint32_t size);
    // The short path of load() after a miss in L1, from L2 on: when L2's
    // stride is @l2_stride (0: not known at compile time) ...
    template <uint32_t l2_stride>
    [[gnu::noinline]] LwpCacheResult l1_missed(uint64_t addr);
    // ... and after a miss in L2
    [[gnu::noinline]] LwpCacheResult l2_missed(uint64_t addr);
    // ... after an L1 hit (a function of its own, like the others, so that
    // GCC 12 makes all of them jumps, not calls)
    [[gnu::noinline]] LwpCacheResult l1_hit(uint64_t addr);
    // ... and after an L2 hit on the way at @index that renumbers stamps
    [[gnu::noinline, gnu::cold]] LwpCacheResult l2_hit(uint64_t addr,
                                                       uint64_t index);
    // The result of a load at @addr whose first line that missed L1 (or
    // its only line) @src supplied (made as two words in a union, which GCC and
    // Clang allow: stores into the fields of a result keep the functions that
    // return it from jumping to one another, and a bit cast becomes field by
    // field moves)
    LwpCacheResult short_result(uint64_t addr, unsigned src) const
    {
        union {
            uint64_t words[2];
            LwpCacheResult res;
        } u = {{addr, result_tail_[src]}};
        return u.res;
    }

    ListLevel l1_;
    CacheLevel lower_[LWP_CACHE_MAX_LEVELS - 1]; // L2, L3
    unsigned levels_ = 0;
    unsigned fast_path_ = 0;
    // A load takes the short path when (its offset in its L1 line) + (its
    // size) < short_limit_: 0 without a short path, else the line size
    // plus 1.  A load that passes 2^64 - 1 crosses into another line.
    uint64_t l1_offset_mask_ = 0;
    uint64_t short_limit_ = 0;
    uint32_t dram_latency_ = 0;
    // By the supplying level (0 is L1, levels_ DRAM): the bytes of the
    // result after its addr, its latency, level and misses (0 for L1, 1
    // for the others)
    uint64_t result_tail_[LWP_CACHE_MAX_LEVELS + 1] = {};
};

bool cache_config_valid(const LwpCacheConfig &cfg);

} // namespace lwp

// The C interface's handle: one model per vCPU
struct LwpCache {
    lwp::CacheModel model;
};

#endif // LWP_CACHE_HH
