// Unit tests: the event filters (spec 2.3, 2.4, 6 Figure 6-3 and Table
// 6-2, Table 3-1 capabilities; implementation-choices rows 27, 28).
// Default context capabilities: LatencyMax 10, LatencyRnd 4 (latency cap
// 2^10 - 2^4 = 1008), BranchPrediction, IpFiltering, CacheLevels and
// CacheLatency all present.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <gtest/gtest.h>

#include "fake_mem.h"

namespace
{

using namespace lwptest;

// A filter setting and what it makes eligible: Filters, the CPUID ECX
// capabilities taken away, and queries of the fixture's eligible() with
// the answer each must give.  Each case is named after what it shows.
template <typename Query> struct FilterCase {
    const char *name;
    uint32_t filters;
    uint32_t ecx_clear;
    std::vector<Query> queries;
};

template <typename Query>
void PrintTo(const FilterCase<Query> &c, std::ostream *os)
{
    *os << c.name;
}

// Loads the case's LWPCB and asks each of its queries
template <typename Fixture, typename Query>
class FilterTable : public Fixture,
                    public ::testing::WithParamInterface<FilterCase<Query>>
{
  protected:
    void check()
    {
        const FilterCase<Query> &c = this->GetParam();
        this->ctx.ecx &= ~c.ecx_clear;
        this->cb.filters = c.filters;
        ASSERT_EQ(this->load(), LWP_OK);
        for (const Query &q : c.queries) {
            EXPECT_EQ(this->eligible(q), q.want) << q;
        }
    }
};

// ---------------------------------------------------------------------------
// IP filtering (Table 6-2 IPI, IPF; Table 6-1 BaseIP, LimitIP; row 27)

class IpFilter : public EngineTest
{
  protected:
    void SetUp() override
    {
        EngineTest::SetUp();
        cb.flags = 0x7e;
        cb.base_ip = 0x1000;
        cb.limit_ip = 0x1fff;
    }
    bool eligible(uint64_t ip)
    {
        return lwp_ip_eligible(&s, &ctx, ip);
    }
    template <typename Query> bool eligible(const Query &q)
    {
        return eligible(q.ip);
    }
};

struct IpQuery {
    uint64_t ip;
    bool want;
};

std::ostream &operator<<(std::ostream &os, const IpQuery &q)
{
    return os << "ip " << std::hex << q.ip;
}

using IpFilterTable = FilterTable<IpFilter, IpQuery>;

TEST_P(IpFilterTable, Eligibility)
{
    check();
}

INSTANTIATE_TEST_SUITE_P(
    IpFilter, IpFilterTable,
    ::testing::Values(
        // "greater than or equal to BaseIP", "less than or equal to LimitIP"
        FilterCase<IpQuery>{"RangeIncludesBaseIpAndLimitIp",
                            LWP_FILTER_IPF,
                            0,
                            {{0x0fff, false},
                             {0x1000, true},
                             {0x1800, true},
                             {0x1fff, true},
                             {0x2000, false},
                             {0xffffffff80001000ull, false}}},
        // IPI: "Only instructions outside the range from BaseIP to LimitIP"
        FilterCase<IpQuery>{
            "InvertSelectsOnlyAddressesOutsideTheRange",
            LWP_FILTER_IPF | LWP_FILTER_IPI,
            0,
            {{0x0fff, true}, {0x1000, false}, {0x1fff, false}, {0x2000, true}}},
        // IPI: "Ignored if IPF is zero"
        FilterCase<IpQuery>{"InvertWithoutIpfIsIgnored",
                            LWP_FILTER_IPI,
                            0,
                            {{0x0fff, true}, {0x1000, true}, {0x2000, true}}},
        // Table 3-1 LwpIpFiltering 0: "The IPI, IPF, BaseIP, and LimitIP
        // fields of the LWPCB are ignored"
        FilterCase<IpQuery>{"IgnoredWithoutTheIpFilteringCapability",
                            LWP_FILTER_IPF,
                            LWP_CAP_IP_FILTERING,
                            {{0x0fff, true}, {0x2000, true}}}),
    CaseName{});

TEST_F(IpFilter, RangeOfAddressesAgainstBaseIpAndLimitIp)
{
    // Table 6-1: BaseIP 0x1000 and LimitIP 0x1fff both belong to the
    // range.  A translation block from EIP first to last is counted whole
    // only when it is all inside or all outside.
    cb.filters = LWP_FILTER_IPF;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(lwp_ip_range(&s, 0x1000, 0x1fff), LWP_IP_RANGE_IN);
    EXPECT_EQ(lwp_ip_range(&s, 0x1800, 0x1800), LWP_IP_RANGE_IN);
    EXPECT_EQ(lwp_ip_range(&s, 0x0000, 0x0fff), LWP_IP_RANGE_OUT);
    EXPECT_EQ(lwp_ip_range(&s, 0x2000, 0x3000), LWP_IP_RANGE_OUT);
    EXPECT_EQ(lwp_ip_range(&s, 0x0fff, 0x1000), LWP_IP_RANGE_BOTH);
    EXPECT_EQ(lwp_ip_range(&s, 0x1fff, 0x2000), LWP_IP_RANGE_BOTH);
    EXPECT_EQ(lwp_ip_range(&s, 0x0000, 0x3000), LWP_IP_RANGE_BOTH);
    // a range that wraps (a 32-bit EIP past 4G) is never one side
    EXPECT_EQ(lwp_ip_range(&s, 0xfffffff0, 0x10), LWP_IP_RANGE_BOTH);
}

TEST_F(IpFilter, AppliesToEveryCountedEvent)
{
    // Figure 6-3 text: "The IP filtering applies to all events"
    cb.filters = LWP_FILTER_IPF;
    ASSERT_EQ(load(), LWP_OK);
    LwpEventInfo info{};
    info.events = LWP_FEAT_IRE | LWP_FEAT_BRE | LWP_FEAT_DME | LWP_FEAT_CNH |
                  LWP_FEAT_RNH;
    info.cycles = 1;
    info.ref_cycles = 1;
    info.branch_kind = LWP_BRANCH_REL;
    info.taken = 1;
    info.dme_source = LWP_DME_SRC_DRAM;
    info.dme_latency = 0x100;
    info.ip = 0x2000;
    EXPECT_EQ(lwp_counted_events(&s, &ctx, &info), 0u);
    info.ip = 0x1000;
    EXPECT_EQ(lwp_counted_events(&s, &ctx, &info), info.events);
}

TEST_F(IpFilter, InstructionsOutsideTheRangeAreNotCounted)
{
    // Table 6-2 IPF: only instructions in the range are "eligible for LWP
    // event counting"
    cb.filters = LWP_FILTER_IPF;
    cb.counter[2] = 10;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(retire(0x2000, LWP_FEAT_IRE), LWP_OK);
    EXPECT_EQ(s.counter[2], 10);
    ASSERT_EQ(retire(0x1ffe, LWP_FEAT_IRE), LWP_OK);
    EXPECT_EQ(s.counter[2], 9);
}

// ---------------------------------------------------------------------------
// Branch filters (Table 6-2 NMB, NPB, NAB, NCB, NRB; 2.3; row 27)

class BranchFilter : public EngineTest
{
  protected:
    void SetUp() override
    {
        EngineTest::SetUp();
        cb.flags = LWP_FEAT_BRE | LWP_FEAT_IRE;
    }
    bool eligible(unsigned kind, bool predicted = false,
                  bool predicted_ok = false)
    {
        return lwp_branch_eligible(&s, &ctx, kind, predicted, predicted_ok);
    }
    template <typename Query> bool eligible(const Query &q)
    {
        return eligible(q.kind, q.predicted, q.predicted_ok);
    }
};

struct BranchQuery {
    unsigned kind;
    bool predicted;
    bool predicted_ok;
    bool want;
};

std::ostream &operator<<(std::ostream &os, const BranchQuery &q)
{
    return os << "kind " << q.kind << " predicted " << q.predicted << " ok "
              << q.predicted_ok;
}

using BranchFilterTable = FilterTable<BranchFilter, BranchQuery>;

TEST_P(BranchFilterTable, Eligibility)
{
    check();
}

constexpr unsigned kCond = LWP_BRANCH_COND;
constexpr unsigned kRel = LWP_BRANCH_REL;
constexpr unsigned kInd = LWP_BRANCH_INDIRECT;

INSTANTIATE_TEST_SUITE_P(
    BranchFilter, BranchFilterTable,
    ::testing::Values(
        // Table 6-2: each filter bit 0 counts its branches
        FilterCase<BranchQuery>{"WithoutFiltersEveryBranchIsEligible",
                                0,
                                0,
                                {{kCond, false, false, true},
                                 {kRel, false, false, true},
                                 {kInd, false, false, true},
                                 {kCond, true, false, true},
                                 {kCond, true, true, true}}},
        // NAB: "jumps through a register or memory (JMP opcode FF /4) and
        // calls through a register or memory (CALL opcode FF /2)"
        FilterCase<BranchQuery>{"NabSkipsOnlyIndirectBranches",
                                LWP_FILTER_NAB,
                                0,
                                {{kCond, false, false, true},
                                 {kRel, false, false, true},
                                 {kInd, false, false, false}}},
        // NCB: Jcc and LOOPcc (row 27: JrCXZ and LOOP too)
        FilterCase<BranchQuery>{"NcbSkipsOnlyConditionalBranches",
                                LWP_FILTER_NCB,
                                0,
                                {{kCond, false, false, false},
                                 {kRel, false, false, true},
                                 {kInd, false, false, true}}},
        // NRB: JMP, CALL and RET (row 27: RET is relative)
        FilterCase<BranchQuery>{"NrbSkipsOnlyUnconditionalRelativeBranches",
                                LWP_FILTER_NRB,
                                0,
                                {{kCond, false, false, true},
                                 {kRel, false, false, false},
                                 {kInd, false, false, true}}},
        // "Caution: If NRB, NCB, and NAB are all set, no branches will be
        // counted"
        FilterCase<BranchQuery>{"NabNcbAndNrbTogetherSkipEveryBranch",
                                LWP_FILTER_NAB | LWP_FILTER_NCB |
                                    LWP_FILTER_NRB,
                                0,
                                {{kCond, false, false, false},
                                 {kRel, false, false, false},
                                 {kInd, false, false, false}}},
        // Table 6-2 NMB: "Mispredicted branches will not be counted" (with
        // LwpBranchPrediction)
        FilterCase<BranchQuery>{"NmbSkipsMispredictedBranches",
                                LWP_FILTER_NMB,
                                0,
                                {{kCond, true, false, false},
                                 {kCond, true, true, true},
                                 {kInd, true, false, false}}},
        // Table 6-2 NPB: "Correctly predicted branches will not be counted"
        FilterCase<BranchQuery>{"NpbSkipsCorrectlyPredictedBranches",
                                LWP_FILTER_NPB,
                                0,
                                {{kCond, true, false, true},
                                 {kCond, true, true, false},
                                 {kRel, true, true, false}}},
        // Row 27: "NMB/NPB act only with LwpBranchPrediction and a known
        // prediction"; NMB + NPB skip every branch with a prediction
        FilterCase<BranchQuery>{
            "PredictionFiltersActOnlyWhenThePredictionIsKnown",
            LWP_FILTER_NMB | LWP_FILTER_NPB,
            0,
            {{kCond, true, false, false},
             {kCond, true, true, false},
             {kCond, false, false, true},
             {kRel, false, true, true}}},
        // Table 3-1 LwpBranchPrediction 0: "NMB and NPB fields of the
        // LWPCB are ignored"
        FilterCase<BranchQuery>{
            "PredictionFiltersNeedTheBranchPredictionCapability",
            LWP_FILTER_NMB | LWP_FILTER_NPB,
            LWP_CAP_BRANCH_PREDICTION,
            {{kCond, true, false, true}, {kCond, true, true, true}}}),
    CaseName{});

TEST_F(BranchFilter, FilteredBranchIsNotCountedButItsInstructionIs)
{
    // Table 6-2 NCB; spec 1.1 step 1 "Some events may have filters":
    // the filter applies to the branch event only
    cb.filters = LWP_FILTER_NCB;
    cb.counter[2] = 10;
    cb.counter[3] = 10;
    ASSERT_EQ(load(), LWP_OK);
    LwpEventInfo info{};
    info.ip = 0x1000;
    info.events = LWP_FEAT_IRE | LWP_FEAT_BRE;
    info.branch_kind = LWP_BRANCH_COND;
    info.target = 0x1010;
    ASSERT_EQ(retire(info), LWP_OK);
    EXPECT_EQ(s.counter[2], 9);
    EXPECT_EQ(s.counter[3], 10);
    info.branch_kind = LWP_BRANCH_REL;
    info.taken = 1;
    ASSERT_EQ(retire(info), LWP_OK);
    EXPECT_EQ(s.counter[3], 9);
}

// ---------------------------------------------------------------------------
// DCache miss filters (Table 6-2 MinLatency, CLF, NBC, RDC, RAM, OTH;
// 2.4.1; row 28)

class DmeFilter : public EngineTest
{
  protected:
    void SetUp() override
    {
        EngineTest::SetUp();
        cb.flags = LWP_FEAT_DME;
    }
    bool eligible(uint32_t latency, unsigned source = LWP_DME_SRC_DRAM)
    {
        return lwp_dme_eligible(&s, &ctx, latency, source);
    }
    template <typename Query> bool eligible(const Query &q)
    {
        return eligible(q.latency, q.source);
    }
};

TEST_F(DmeFilter, CacheLevelFilterSelectsTheDataSource)
{
    // Row 28: SRC 1 needs NBC, 2 or 4 RDC, 3 RAM, 7 OTH; 0, 5, 6 never
    struct Case {
        uint32_t bit;
        bool src[8];
    };
    const Case cases[] = {
        {LWP_FILTER_NBC, {0, 1, 0, 0, 0, 0, 0, 0}},
        {LWP_FILTER_RDC, {0, 0, 1, 0, 1, 0, 0, 0}},
        {LWP_FILTER_RAM, {0, 0, 0, 1, 0, 0, 0, 0}},
        {LWP_FILTER_OTH, {0, 0, 0, 0, 0, 0, 0, 1}},
        {LWP_FILTER_NBC | LWP_FILTER_RDC | LWP_FILTER_RAM | LWP_FILTER_OTH,
         {0, 1, 1, 1, 1, 0, 0, 1}},
        {0, {0, 0, 0, 0, 0, 0, 0, 0}},
    };
    for (const Case &c : cases) {
        cb.filters = LWP_FILTER_CLF | c.bit;
        ASSERT_EQ(load(), LWP_OK);
        for (unsigned src = 0; src < 8; src++) {
            EXPECT_EQ(eligible(0x40, src), c.src[src])
                << "filters " << std::hex << cb.filters << " SRC " << src;
        }
    }
}

struct DmeQuery {
    uint32_t latency;
    unsigned source;
    bool want;
};

std::ostream &operator<<(std::ostream &os, const DmeQuery &q)
{
    return os << "latency " << q.latency << " SRC " << q.source;
}

using DmeFilterTable = FilterTable<DmeFilter, DmeQuery>;

TEST_P(DmeFilterTable, Eligibility)
{
    check();
}

constexpr unsigned kDram = LWP_DME_SRC_DRAM;

// CLF 0: "The next 4 bits are ignored, and any cache or memory level is
// eligible"
std::vector<DmeQuery> every_source_at(uint32_t latency)
{
    std::vector<DmeQuery> q;
    for (unsigned src = 0; src < 8; src++) {
        q.push_back({latency, src, true});
    }
    return q;
}

INSTANTIATE_TEST_SUITE_P(
    DmeFilter, DmeFilterTable,
    ::testing::Values(
        // MinLatency 4: 64 cycles.  63 rounds down to 48 (row 28).
        FilterCase<DmeQuery>{"MinLatencyIsMultipliedBy16",
                             4,
                             0,
                             {{0, kDram, false},
                              {48, kDram, false},
                              {63, kDram, false},
                              {64, kDram, true},
                              {79, kDram, true},
                              {1000, kDram, true}}},
        // Table 6-2 MinLatency: "A value of 0 disables filtering by
        // latency"
        FilterCase<DmeQuery>{"MinLatencyZeroDisablesTheLatencyFilter",
                             0,
                             0,
                             {{0, kDram, true}, {15, kDram, true}}},
        // 0xff * 16 = 4080 is capped at 1008; so is a latency of 5000
        FilterCase<DmeQuery>{
            "MinLatencyAboveTheMaximumUsesTheMaximum",
            0xff,
            0,
            {{1007, kDram, false}, {1008, kDram, true}, {5000, kDram, true}}},
        // Table 3-1 LwpCacheLatency 0: "MinLatency is ignored"
        FilterCase<DmeQuery>{"LatencyFilterNeedsTheCacheLatencyCapability",
                             0xff,
                             LWP_CAP_CACHE_LATENCY,
                             {{0, kDram, true}}},
        FilterCase<DmeQuery>{"WithoutClfEverySourceIsEligible", LWP_FILTER_NBC,
                             0, every_source_at(0x40)},
        // Table 3-1 LwpCacheLevels 0: "CLF is ignored"
        FilterCase<DmeQuery>{"CacheLevelFilterNeedsTheCacheLevelsCapability",
                             LWP_FILTER_CLF | LWP_FILTER_NBC,
                             LWP_CAP_CACHE_LEVELS,
                             {{0x40, kDram, true}}},
        // Row 28: "both filters apply when both are on"
        FilterCase<DmeQuery>{"LatencyAndCacheLevelFiltersBothApply",
                             LWP_FILTER_CLF | LWP_FILTER_RAM | 4,
                             0,
                             {{64, kDram, true},
                              {48, kDram, false},
                              {64, LWP_DME_SRC_LOCAL_L3, false}}}),
    CaseName{});

TEST_F(DmeFilter, IneligibleMissIsNotCounted)
{
    // spec 1.1 step 1, 2.4: only misses eligible under the filters count
    cb.filters = 4;
    cb.counter[4] = 10;
    ASSERT_EQ(load(), LWP_OK);
    LwpEventInfo info{};
    info.ip = 0x1000;
    info.events = LWP_FEAT_DME;
    info.dme_source = LWP_DME_SRC_DRAM;
    info.dme_latency = 32;
    ASSERT_EQ(retire(info), LWP_OK);
    EXPECT_EQ(s.counter[4], 10);
    info.dme_latency = 64;
    ASSERT_EQ(retire(info), LWP_OK);
    EXPECT_EQ(s.counter[4], 9);
}

// ---------------------------------------------------------------------------
// lwp_counted_events: enable bits plus every filter (spec 1.1 step 1)

using CountedEvents = EngineTest;

TEST_F(CountedEvents, OnlyEnabledEventsThatPassTheirFilters)
{
    // spec 1.1 step 1: enable bits (Figure 6-2) and filters (Table 6-2)
    cb.flags = LWP_FEAT_IRE | LWP_FEAT_BRE | LWP_FEAT_DME;
    cb.filters = LWP_FILTER_NCB | LWP_FILTER_CLF | LWP_FILTER_RAM;
    ASSERT_EQ(load(), LWP_OK);
    LwpEventInfo info{};
    info.ip = 0x1000;
    info.events = LWP_FEAT_IRE | LWP_FEAT_BRE | LWP_FEAT_DME | LWP_FEAT_CNH |
                  LWP_FEAT_RNH;
    info.cycles = 1;
    info.ref_cycles = 1;
    info.branch_kind = LWP_BRANCH_COND;
    info.dme_source = LWP_DME_SRC_LOCAL_L3;
    info.dme_latency = 0x40;
    EXPECT_EQ(lwp_counted_events(&s, &ctx, &info), uint32_t{LWP_FEAT_IRE});
    info.branch_kind = LWP_BRANCH_REL;
    info.taken = 1;
    info.dme_source = LWP_DME_SRC_DRAM;
    EXPECT_EQ(lwp_counted_events(&s, &ctx, &info),
              uint32_t{LWP_FEAT_IRE | LWP_FEAT_BRE | LWP_FEAT_DME});
}

TEST_F(CountedEvents, NoneWhileLwpIsDisabled)
{
    // spec 1.1: LWP counts only "When enabled"
    LwpEventInfo info{};
    info.ip = 0x1000;
    info.events = LWP_FEAT_IRE | LWP_FEAT_BRE;
    EXPECT_EQ(lwp_counted_events(&s, &ctx, &info), 0u);
}

} // namespace
