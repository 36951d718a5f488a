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
};

TEST_F(IpFilter, RangeIncludesBaseIpAndLimitIp)
{
    // "greater than or equal to BaseIP", "less than or equal to LimitIP"
    cb.filters = LWP_FILTER_IPF;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(eligible(0x0fff));
    EXPECT_TRUE(eligible(0x1000));
    EXPECT_TRUE(eligible(0x1800));
    EXPECT_TRUE(eligible(0x1fff));
    EXPECT_FALSE(eligible(0x2000));
    EXPECT_FALSE(eligible(0xffffffff80001000ull));
}

TEST_F(IpFilter, InvertSelectsOnlyAddressesOutsideTheRange)
{
    // IPI: "Only instructions outside the range from BaseIP to LimitIP"
    cb.filters = LWP_FILTER_IPF | LWP_FILTER_IPI;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(eligible(0x0fff));
    EXPECT_FALSE(eligible(0x1000));
    EXPECT_FALSE(eligible(0x1fff));
    EXPECT_TRUE(eligible(0x2000));
}

TEST_F(IpFilter, InvertWithoutIpfIsIgnored)
{
    // IPI: "Ignored if IPF is zero"
    cb.filters = LWP_FILTER_IPI;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(eligible(0x0fff));
    EXPECT_TRUE(eligible(0x1000));
    EXPECT_TRUE(eligible(0x2000));
}

TEST_F(IpFilter, IgnoredWithoutTheIpFilteringCapability)
{
    // Table 3-1 LwpIpFiltering 0: "The IPI, IPF, BaseIP, and LimitIP
    // fields of the LWPCB are ignored"
    ctx.ecx &= ~LWP_CAP_IP_FILTERING;
    cb.filters = LWP_FILTER_IPF;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(eligible(0x0fff));
    EXPECT_TRUE(eligible(0x2000));
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
};

TEST_F(BranchFilter, WithoutFiltersEveryBranchIsEligible)
{
    // Table 6-2: each filter bit 0 counts its branches
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(eligible(LWP_BRANCH_COND));
    EXPECT_TRUE(eligible(LWP_BRANCH_REL));
    EXPECT_TRUE(eligible(LWP_BRANCH_INDIRECT));
    EXPECT_TRUE(eligible(LWP_BRANCH_COND, true, false));
    EXPECT_TRUE(eligible(LWP_BRANCH_COND, true, true));
}

TEST_F(BranchFilter, NabSkipsOnlyIndirectBranches)
{
    // NAB: "jumps through a register or memory (JMP opcode FF /4) and
    // calls through a register or memory (CALL opcode FF /2)"
    cb.filters = LWP_FILTER_NAB;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(eligible(LWP_BRANCH_COND));
    EXPECT_TRUE(eligible(LWP_BRANCH_REL));
    EXPECT_FALSE(eligible(LWP_BRANCH_INDIRECT));
}

TEST_F(BranchFilter, NcbSkipsOnlyConditionalBranches)
{
    // NCB: Jcc and LOOPcc (row 27: JrCXZ and LOOP too)
    cb.filters = LWP_FILTER_NCB;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(eligible(LWP_BRANCH_COND));
    EXPECT_TRUE(eligible(LWP_BRANCH_REL));
    EXPECT_TRUE(eligible(LWP_BRANCH_INDIRECT));
}

TEST_F(BranchFilter, NrbSkipsOnlyUnconditionalRelativeBranches)
{
    // NRB: JMP, CALL and RET (row 27: RET is relative)
    cb.filters = LWP_FILTER_NRB;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(eligible(LWP_BRANCH_COND));
    EXPECT_FALSE(eligible(LWP_BRANCH_REL));
    EXPECT_TRUE(eligible(LWP_BRANCH_INDIRECT));
}

TEST_F(BranchFilter, NabNcbAndNrbTogetherSkipEveryBranch)
{
    // "Caution: If NRB, NCB, and NAB are all set, no branches will be
    // counted"
    cb.filters = LWP_FILTER_NAB | LWP_FILTER_NCB | LWP_FILTER_NRB;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(eligible(LWP_BRANCH_COND));
    EXPECT_FALSE(eligible(LWP_BRANCH_REL));
    EXPECT_FALSE(eligible(LWP_BRANCH_INDIRECT));
}

TEST_F(BranchFilter, NmbSkipsMispredictedBranches)
{
    // Table 6-2 NMB: "Mispredicted branches will not be counted" (with
    // LwpBranchPrediction)
    cb.filters = LWP_FILTER_NMB;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(eligible(LWP_BRANCH_COND, true, false));
    EXPECT_TRUE(eligible(LWP_BRANCH_COND, true, true));
    EXPECT_FALSE(eligible(LWP_BRANCH_INDIRECT, true, false));
}

TEST_F(BranchFilter, NpbSkipsCorrectlyPredictedBranches)
{
    // Table 6-2 NPB: "Correctly predicted branches will not be counted"
    cb.filters = LWP_FILTER_NPB;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(eligible(LWP_BRANCH_COND, true, false));
    EXPECT_FALSE(eligible(LWP_BRANCH_COND, true, true));
    EXPECT_FALSE(eligible(LWP_BRANCH_REL, true, true));
}

TEST_F(BranchFilter, PredictionFiltersActOnlyWhenThePredictionIsKnown)
{
    // Row 27: "NMB/NPB act only with LwpBranchPrediction and a known
    // prediction"; NMB + NPB skip every branch with a prediction
    cb.filters = LWP_FILTER_NMB | LWP_FILTER_NPB;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(eligible(LWP_BRANCH_COND, true, false));
    EXPECT_FALSE(eligible(LWP_BRANCH_COND, true, true));
    EXPECT_TRUE(eligible(LWP_BRANCH_COND, false, false));
    EXPECT_TRUE(eligible(LWP_BRANCH_REL, false, true));
}

TEST_F(BranchFilter, PredictionFiltersNeedTheBranchPredictionCapability)
{
    // Table 3-1 LwpBranchPrediction 0: "NMB and NPB fields of the LWPCB
    // are ignored"
    ctx.ecx &= ~LWP_CAP_BRANCH_PREDICTION;
    cb.filters = LWP_FILTER_NMB | LWP_FILTER_NPB;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(eligible(LWP_BRANCH_COND, true, false));
    EXPECT_TRUE(eligible(LWP_BRANCH_COND, true, true));
}

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
};

TEST_F(DmeFilter, MinLatencyIsMultipliedBy16)
{
    // MinLatency 4: 64 cycles.  63 rounds down to 48 (row 28).
    cb.filters = 4;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(eligible(0));
    EXPECT_FALSE(eligible(48));
    EXPECT_FALSE(eligible(63));
    EXPECT_TRUE(eligible(64));
    EXPECT_TRUE(eligible(79));
    EXPECT_TRUE(eligible(1000));
}

TEST_F(DmeFilter, MinLatencyZeroDisablesTheLatencyFilter)
{
    // Table 6-2 MinLatency: "A value of 0 disables filtering by latency"
    cb.filters = 0;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(eligible(0));
    EXPECT_TRUE(eligible(15));
}

TEST_F(DmeFilter, MinLatencyAboveTheMaximumUsesTheMaximum)
{
    // 0xff * 16 = 4080 is capped at 1008; so is a latency of 5000
    cb.filters = 0xff;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(eligible(1007));
    EXPECT_TRUE(eligible(1008));
    EXPECT_TRUE(eligible(5000));
}

TEST_F(DmeFilter, LatencyFilterNeedsTheCacheLatencyCapability)
{
    // Table 3-1 LwpCacheLatency 0: "MinLatency is ignored"
    ctx.ecx &= ~LWP_CAP_CACHE_LATENCY;
    cb.filters = 0xff;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(eligible(0));
}

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

TEST_F(DmeFilter, WithoutClfEverySourceIsEligible)
{
    // CLF 0: "The next 4 bits are ignored, and any cache or memory level
    // is eligible"
    cb.filters = LWP_FILTER_NBC;
    ASSERT_EQ(load(), LWP_OK);
    for (unsigned src = 0; src < 8; src++) {
        EXPECT_TRUE(eligible(0x40, src)) << "SRC " << src;
    }
}

TEST_F(DmeFilter, CacheLevelFilterNeedsTheCacheLevelsCapability)
{
    // Table 3-1 LwpCacheLevels 0: "CLF is ignored"
    ctx.ecx &= ~LWP_CAP_CACHE_LEVELS;
    cb.filters = LWP_FILTER_CLF | LWP_FILTER_NBC;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(eligible(0x40, LWP_DME_SRC_DRAM));
}

TEST_F(DmeFilter, LatencyAndCacheLevelFiltersBothApply)
{
    // Row 28: "both filters apply when both are on"
    cb.filters = LWP_FILTER_CLF | LWP_FILTER_RAM | 4;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(eligible(64, LWP_DME_SRC_DRAM));
    EXPECT_FALSE(eligible(48, LWP_DME_SRC_DRAM));
    EXPECT_FALSE(eligible(64, LWP_DME_SRC_LOCAL_L3));
}

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
