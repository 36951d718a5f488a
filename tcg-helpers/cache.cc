// qemu-lwp engine: the data cache model behind the DCache Miss event
// (spec 2.4, 2.4.1; docs/cache-model.md)
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include "cache.hh"
#include "lwp-engine-test.hh"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <utility>

namespace lwp
{
namespace
{

constexpr uint32_t kMinLine = 16;
constexpr uint32_t kMaxLine = 4096;
constexpr uint32_t kMaxWays = 64;
constexpr uint32_t kMaxSize = uint32_t{64} << 20;

// CacheModel::result_tail_ holds the bytes of a result after its addr
constexpr size_t kTailOffset = offsetof(LwpCacheResult, latency);
static_assert(kTailOffset == sizeof(uint64_t) &&
                  sizeof(LwpCacheResult) == 2 * sizeof(uint64_t),
              "a result is its addr and 8 bytes");

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

void LevelShape::set_shape(const LwpCacheLevelConfig &cfg)
{
    uint64_t sets = cfg.size / cfg.line_size / cfg.ways;
    ways_ = cfg.ways;
    set_mask_ = sets - 1;
    set_bits_ = ilog2(sets);
    line_shift_ = ilog2(cfg.line_size);
    latency_ = cfg.latency;
}

void LevelShape::swap_shape(LevelShape &other)
{
    std::swap(set_mask_, other.set_mask_);
    std::swap(set_bits_, other.set_bits_);
    std::swap(ways_, other.ways_);
    std::swap(line_shift_, other.line_shift_);
    std::swap(latency_, other.latency_);
}

ListLevel::~ListLevel()
{
    std::free(lines_);
}

bool ListLevel::init(const LwpCacheLevelConfig &cfg)
{
    uint64_t sets = cfg.size / cfg.line_size / cfg.ways;
    size_t bytes = (sets * cfg.ways * sizeof(uint64_t) + 63) & ~size_t{63};
    auto *lines = static_cast<uint64_t *>(std::aligned_alloc(64, bytes));
    if (!lines) {
        return false;
    }
    std::free(lines_);
    lines_ = lines;
    set_shape(cfg);
    clear();
    return true;
}

void ListLevel::swap(ListLevel &other)
{
    std::swap(lines_, other.lines_);
    swap_shape(other);
}

void ListLevel::clear()
{
    uint64_t n = (set_mask_ + 1) * ways_;
    for (uint64_t i = 0; i < n; i++) {
        lines_[i] = kEmpty;
    }
}

// "LRU": a hit moves the line to the front of its set's list
bool ListLevel::lookup(uint64_t addr)
{
    uint64_t line = addr >> line_shift_;
    uint64_t *set = set_of(line);
    uint32_t k = find(set, line);
    if (k == ways_) {
        return false;
    }
    to_front(set, k, line);
    return true;
}

// ... a fill puts it in front and drops the last line if the list is full
// (the unused places are at its end)
void ListLevel::fill(uint64_t addr)
{
    uint64_t line = addr >> line_shift_;
    to_front(set_of(line), ways_ - 1, line);
}

// ... an invalidation removes it; the lines after it move up by one place
void ListLevel::invalidate(uint64_t addr)
{
    uint64_t line = addr >> line_shift_;
    uint64_t *set = set_of(line);
    uint32_t k = find(set, line);
    if (k == ways_) {
        return;
    }
    for (; k + 1 < ways_; k++) {
        set[k] = set[k + 1];
    }
    set[ways_ - 1] = kEmpty;
}

// The contents for migration: the lists of "LRU" as they are kept
void ListLevel::save(uint64_t *words) const
{
    std::memcpy(words, lines_, state_words() * sizeof(uint64_t));
}

// Whether @words holds the list of a set: @n entries, lines of set @set
// (whose index bits are @set_mask) that fit in an address after a left
// shift by @shift, none twice, then kEmpty
static bool valid_list(const uint64_t *words, uint32_t n, uint64_t set,
                       uint64_t set_mask, uint32_t shift)
{
    uint32_t used = 0;
    while (used < n && words[used] != ~uint64_t{0}) {
        uint64_t line = words[used];
        if ((line & set_mask) != set || (line << shift) >> shift != line) {
            return false;
        }
        for (uint32_t k = 0; k < used; k++) {
            if (words[k] == line) {
                return false;
            }
        }
        used++;
    }
    for (uint32_t k = used; k < n; k++) {
        if (words[k] != ~uint64_t{0}) {
            return false;
        }
    }
    return true;
}

bool ListLevel::restore(const uint64_t *words)
{
    for (uint64_t set = 0; set <= set_mask_; set++) {
        if (!valid_list(words + set * ways_, ways_, set, set_mask_,
                        line_shift_)) {
            clear();
            return false;
        }
    }
    std::memcpy(lines_, words, state_words() * sizeof(uint64_t));
    return true;
}

bool ListLevel::empty() const
{
    for (uint64_t set = 0; set <= set_mask_; set++) {
        if (lines_[set * ways_] != kEmpty) {
            return false;
        }
    }
    return true;
}

// The lines of each set by decreasing stamp, as line numbers
void CacheLevel::save(uint64_t *words) const
{
    for (uint64_t set = 0; set <= set_mask_; set++) {
        uint64_t base = set * stride_;
        uint64_t used[kMaxWays]; // stamp << 32 | way
        uint32_t n = 0;
        for (uint32_t w = 0; w < ways_; w++) {
            if (stamps_[base + w]) {
                used[n++] = uint64_t{stamps_[base + w]} << 32 | w;
            }
        }
        std::sort(used, used + n, std::greater<uint64_t>());
        for (uint32_t i = 0; i < ways_; i++) {
            uint64_t *out = words + set * ways_ + i;
            if (i < n) {
                uint64_t way = base + static_cast<uint32_t>(used[i]);
                uint64_t tag = uint64_t{hi_[way]} << kTagBits | tags_[way];
                *out = tag << set_bits_ | set;
            } else {
                *out = ~uint64_t{0};
            }
        }
    }
}

// Each set filled from its least recently used line to its most
bool CacheLevel::restore(const uint64_t *words)
{
    clear();
    for (uint64_t set = 0; set <= set_mask_; set++) {
        const uint64_t *list = words + set * ways_;
        uint32_t n = 0;
        if (!valid_list(list, ways_, set, set_mask_, line_shift_)) {
            clear();
            return false;
        }
        while (n < ways_ && list[n] != ~uint64_t{0}) {
            n++;
        }
        while (n > 0) {
            fill(list[--n] << line_shift_);
        }
    }
    return true;
}

bool CacheLevel::empty() const
{
    uint64_t n = (set_mask_ + 1) * stride_;
    for (uint64_t i = 0; i < n; i++) {
        if (stamps_[i]) {
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
    stride_ = stride;
    set_shape(cfg);
    tag_shift_ = line_shift_ + set_bits_;
    hi_shift_ = tag_shift_ + kTagBits;
    clear();
    return true;
}

void CacheLevel::swap(CacheLevel &other)
{
    std::swap(tags_, other.tags_);
    std::swap(hi_, other.hi_);
    std::swap(stamps_, other.stamps_);
    std::swap(narrow_limit_, other.narrow_limit_);
    std::swap(clock_, other.clock_);
    std::swap(stride_, other.stride_);
    std::swap(tag_shift_, other.tag_shift_);
    std::swap(hi_shift_, other.hi_shift_);
    swap_shape(other);
}

void CacheLevel::clear()
{
    uint64_t n = (set_mask_ + 1) * stride_;
    for (uint64_t i = 0; i < n; i++) {
        tags_[i] = kEmptyTag;
        hi_[i] = 0;
        stamps_[i] = 0;
    }
    narrow_limit_ = uint64_t{1} << hi_shift_;
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
    uint64_t base = set_base(addr);
    put(base + victim(base), addr);
}

void CacheLevel::invalidate(uint64_t addr)
{
    uint64_t base = set_base(addr);
    uint64_t ways = match(base, addr);
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
    ListLevel l1;
    CacheLevel fresh[LWP_CACHE_MAX_LEVELS - 1];
    if (!l1.init(cfg.level[0])) {
        return false;
    }
    for (unsigned i = 1; i < cfg.levels; i++) {
        if (!fresh[i - 1].init(cfg.level[i])) {
            return false;
        }
    }
    l1_.swap(l1);
    for (unsigned i = 1; i < LWP_CACHE_MAX_LEVELS; i++) {
        lower_[i - 1].swap(fresh[i - 1]);
    }
    levels_ = cfg.levels;
    dram_latency_ = cfg.dram_latency;
    fast_path_ = 0;
    if (cfg.level[0].ways == 4) {
        fast_path_ = levels_ > 1 && cfg.level[1].ways == 16 ? 1 : 2;
    }
    l1_offset_mask_ = cfg.level[0].line_size - 1;
    short_limit_ = fast_path_ ? uint64_t{cfg.level[0].line_size} + 1 : 0;
    for (unsigned src = 0; src <= LWP_CACHE_MAX_LEVELS; src++) {
        LwpCacheResult res = {};
        res.level = LWP_CACHE_DRAM;
        res.latency = dram_latency_;
        if (src == 0) {
            res.level = LWP_CACHE_L1;
            res.latency = l1_.latency();
        } else if (src < levels_) {
            res.level = static_cast<uint8_t>(LWP_CACHE_L1 + src);
            res.latency = lower(src).latency();
        }
        res.misses = src != 0;
        std::memcpy(&result_tail_[src],
                    reinterpret_cast<const char *>(&res) + kTailOffset,
                    sizeof(result_tail_[src]));
    }
    return true;
}

// "Lookup and fill": the levels from @first on in order until one hits
// (or DRAM); every level from @first above the one that supplied the line
// gets it
unsigned CacheModel::access_from(unsigned first, uint64_t addr)
{
    unsigned src = first;
    while (src < levels_ && !lower(src).lookup(addr)) {
        src++;
    }
    for (unsigned i = first; i < src; i++) {
        lower(i).fill(addr);
    }
    return src;
}

unsigned CacheModel::access(uint64_t addr)
{
    if (l1_.lookup(addr)) {
        return 0;
    }
    l1_.fill(addr);
    return access_from(1, addr);
}

// The 4-way L1 @set with @line put in front: a hit moves it there from
// its place, a miss drops the last line.  Whether a load hits L1 is as
// good as random, so both are the same update, without a branch: the line
// goes to the front, and the lines before its place (a miss: all but the
// last) move back by one.  Returns whether @line missed.
[[gnu::always_inline]] inline bool to_front4(uint64_t *set, uint64_t line)
{
#ifdef __SSE2__
    // two ways per vector: a = ways 0 and 1, b = 2 and 3
    __m128i *v = reinterpret_cast<__m128i *>(set);
    __m128i want = _mm_set1_epi64x(static_cast<long long>(line));
    __m128i a = _mm_load_si128(v);
    __m128i b = _mm_load_si128(v + 1);
    // all ones in the ways that hold @line (64-bit compares from 32-bit)
    __m128i ea = _mm_cmpeq_epi32(a, want);
    __m128i eb = _mm_cmpeq_epi32(b, want);
    ea = _mm_and_si128(ea, _mm_shuffle_epi32(ea, _MM_SHUFFLE(2, 3, 0, 1)));
    eb = _mm_and_si128(eb, _mm_shuffle_epi32(eb, _MM_SHUFFLE(2, 3, 0, 1)));
    // the ways that keep their line, those after @line's place: way w
    // (1 to 3) when @line is in one of ways 0 to w - 1 (way 0 never)
    __m128i in01 =
        _mm_or_si128(ea, _mm_shuffle_epi32(ea, _MM_SHUFFLE(1, 0, 3, 2)));
    __m128i keep_a = _mm_slli_si128(ea, 8);
    __m128i keep_b = _mm_or_si128(in01, _mm_slli_si128(eb, 8));
    // the others take the line before them, way 0 takes @line
    __m128i moved_a = _mm_unpacklo_epi64(want, a);
    __m128i moved_b = _mm_castpd_si128(
        _mm_shuffle_pd(_mm_castsi128_pd(a), _mm_castsi128_pd(b), 1));
    // moved ^ ((moved ^ old) & keep)
    _mm_store_si128(
        v, _mm_xor_si128(moved_a,
                         _mm_and_si128(_mm_xor_si128(moved_a, a), keep_a)));
    _mm_store_si128(
        v + 1, _mm_xor_si128(moved_b,
                             _mm_and_si128(_mm_xor_si128(moved_b, b), keep_b)));
    return !_mm_movemask_epi8(_mm_or_si128(in01, eb));
#else
    uint64_t old[4] = {set[0], set[1], set[2], set[3]};
    // all ones when the line is before place w in the list (masks, not
    // conditions, which GCC makes branches)
    uint64_t before = 0;
    for (uint32_t w = 1; w < 4; w++) {
        before |= -uint64_t{old[w - 1] == line};
        set[w] = (old[w] & before) | (old[w - 1] & ~before);
    }
    set[0] = line;
    return !(before | (old[3] == line));
#endif
}

// "Loads and line-crossing loads": the L1 lines of the load, in ascending
// order, each accessed as above; the result describes the first that
// missed L1.  A load within one line of a 4-way L1 takes a short path,
// with the rest in other functions that it jumps to (load_lines,
// l1_missed), so that an L1 hit saves no registers
LwpCacheResult CacheModel::load(uint64_t addr, uint32_t size)
{
    if ((addr & l1_offset_mask_) + size >= short_limit_) {
        return load_lines(addr, size);
    }
    uint64_t line = addr >> l1_.line_shift_;
    if (!to_front4(l1_.lines_ + (line & l1_.set_mask_) * 4, line)) {
        return l1_hit(addr);
    }
    if (fast_path_ == 1) {
        return l1_missed<16>(addr);
    }
    return l1_missed<0>(addr);
}

template <uint32_t l2_stride>
LwpCacheResult CacheModel::l1_missed(uint64_t addr)
{
    if (!l2_stride && levels_ == 1) {
        return short_result(addr, 1);
    }
    uint64_t index;
    if (!lower(1).find<l2_stride>(addr, &index)) {
        return l2_missed(addr);
    }
    if (!lower(1).hit_fast(index)) {
        return l2_hit(addr, index);
    }
    return short_result(addr, 1);
}

LwpCacheResult CacheModel::l1_hit(uint64_t addr)
{
    return short_result(addr, 0);
}

LwpCacheResult CacheModel::l2_hit(uint64_t addr, uint64_t index)
{
    lower(1).hit(index);
    return short_result(addr, 1);
}

LwpCacheResult CacheModel::l2_missed(uint64_t addr)
{
    lower(1).fill(addr);
    return short_result(addr, access_from(2, addr));
}

LwpCacheResult CacheModel::load_lines(uint64_t addr, uint32_t size)
{
    uint64_t line = l1_.line_size();
    uint64_t last = size ? addr + (size - 1) : addr;
    if (last < addr) {
        last = ~uint64_t{0};
    }
    uint64_t first_line = addr & ~(line - 1);
    uint64_t last_line = last & ~(line - 1);

    LwpCacheResult res = short_result(addr, 0);
    for (uint64_t a = first_line;; a += line) {
        unsigned src = access(a);
        if (src) {
            if (!res.misses) {
                res = short_result(a < addr ? addr : a, src);
            } else {
                res.misses++;
            }
        }
        if (a == last_line) {
            break;
        }
    }
    return res;
}

void CacheModel::raise_clock_for_test(uint32_t clock)
{
    for (CacheLevel &l : lower_) {
        l.raise_clock_for_test(clock);
    }
}

void CacheModel::flush()
{
    l1_.clear();
    for (unsigned i = 1; i < levels_; i++) {
        lower(i).clear();
    }
}

void CacheModel::flush_line(uint64_t addr)
{
    l1_.invalidate(addr);
    for (unsigned i = 1; i < levels_; i++) {
        lower(i).invalidate(addr);
    }
}

uint64_t CacheModel::state_words() const
{
    uint64_t n = l1_.state_words();
    for (unsigned i = 1; i < levels_; i++) {
        n += lower_[i - 1].state_words();
    }
    return n;
}

void CacheModel::save(uint64_t *words) const
{
    l1_.save(words);
    words += l1_.state_words();
    for (unsigned i = 1; i < levels_; i++) {
        lower_[i - 1].save(words);
        words += lower_[i - 1].state_words();
    }
}

bool CacheModel::restore(const uint64_t *words)
{
    bool ok = l1_.restore(words);
    words += l1_.state_words();
    for (unsigned i = 1; ok && i < levels_; i++) {
        ok = lower(i).restore(words);
        words += lower(i).state_words();
    }
    if (!ok) {
        flush();
    }
    return ok;
}

bool CacheModel::empty() const
{
    for (unsigned i = 1; i < levels_; i++) {
        if (!lower_[i - 1].empty()) {
            return false;
        }
    }
    return l1_.empty();
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

LwpCacheResult lwp_cache_load(LwpCache *c, uint64_t addr, uint32_t size)
{
    return c->model.load(addr, size);
}

void lwp_cache_flush(LwpCache *c)
{
    c->model.flush();
}

void lwp_cache_flush_line(LwpCache *c, uint64_t addr)
{
    c->model.flush_line(addr);
}

uint64_t *lwp_cache_l1_lines(LwpCache *c)
{
    return c->model.l1_lines();
}

size_t lwp_cache_state_words(const LwpCache *c)
{
    return c->model.state_words();
}

void lwp_cache_save(const LwpCache *c, uint64_t *words)
{
    c->model.save(words);
}

bool lwp_cache_restore(LwpCache *c, const uint64_t *words)
{
    return c->model.restore(words);
}

bool lwp_cache_empty(const LwpCache *c)
{
    return c->model.empty();
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
