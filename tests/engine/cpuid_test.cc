// Unit tests: CPUID Fn8000_001C and the LWP MSR rules (spec 3.3, 4.2, 4.3).
// Expected values are the real Family 15h values (notes/prior-art.md) or
// written out by hand from the spec's Table 3-1 field layout.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <gtest/gtest.h>

#include "lwp-engine.hh"

namespace
{

constexpr uint32_t kBulldozerEdx = 0x8000000f; // Avail VAL IRE BRE Int
constexpr uint64_t kXcr0Lwp = 1ull << 62;

TEST(CpuidEbx, BulldozerValueFromItsFeatures)
{
    // FX-8150, Opteron 6274 ...: EBX = 80032013
    EXPECT_EQ(lwp_cpuid_ebx(kBulldozerEdx), 0x80032013u);
}

TEST(CpuidEbx, AllSixEventsNeedSixEventQwords)
{
    // LwpEventOffset 0x80, MaxEvents 6, EventSize 0x20, CbSize 0x80/8 + 6
    EXPECT_EQ(lwp_cpuid_ebx(0x8000007f), 0x80062016u);
}

TEST(CpuidEbx, MaxEventsIsTheHighestSupportedEventId)
{
    // IRE and RNH only: EventIds up to 6 must have room in the LWPCB
    EXPECT_EQ(lwp_cpuid_ebx(LWP_FEAT_AVAIL | LWP_FEAT_IRE | LWP_FEAT_RNH),
              0x80062016u);
    EXPECT_EQ(lwp_cpuid_ebx(LWP_FEAT_AVAIL | LWP_FEAT_VAL), 0x80012011u);
}

TEST(CpuidEbx, NoEventsLeavesOnlyTheFixedPart)
{
    EXPECT_EQ(lwp_cpuid_ebx(LWP_FEAT_AVAIL), 0x80002010u);
}

TEST(CpuidEcx, BulldozerValue)
{
    // LwpVersion 1, LwpMinBufferSize 1, no filtering capabilities
    EXPECT_EQ(lwp_cpuid_ecx(0, kBulldozerEdx), 0x00010200u);
}

TEST(CpuidEcx, CacheFieldsAreZeroWithoutTheDcacheMissEvent)
{
    uint32_t caps = LWP_CAP_DATA_ADDRESS | LWP_CAP_CACHE_LEVELS |
                    LWP_CAP_CACHE_LATENCY | 31u /* LatencyMax */ |
                    (2u << 6) /* LatencyRnd */ | LWP_CAP_IP_FILTERING;
    EXPECT_EQ(lwp_cpuid_ecx(caps, kBulldozerEdx), 0x20010200u);
    EXPECT_EQ(lwp_cpuid_ecx(caps, kBulldozerEdx | LWP_FEAT_DME), 0xe00102bfu);
}

TEST(CpuidEcx, BranchPredictionNeedsTheBranchEvent)
{
    EXPECT_EQ(lwp_cpuid_ecx(LWP_CAP_BRANCH_PREDICTION, LWP_FEAT_AVAIL),
              0x00010200u);
    EXPECT_EQ(lwp_cpuid_ecx(LWP_CAP_BRANCH_PREDICTION, kBulldozerEdx),
              0x10010200u);
}

TEST(CpuidEcx, VersionAndMinBufferAreNotTakenFromTheCaps)
{
    EXPECT_EQ(lwp_cpuid_ecx(0x00ffff00u, kBulldozerEdx), 0x00010200u);
}

TEST(CpuidEax, ZeroWhileXcr0Bit62IsClear)
{
    EXPECT_EQ(lwp_cpuid_eax(0x7, 0x8000000e, kBulldozerEdx), 0u);
    EXPECT_EQ(lwp_cpuid_eax(0x7, 0, kBulldozerEdx), 0u);
}

TEST(CpuidEax, AvailBitIsXcr0Bit62)
{
    EXPECT_EQ(lwp_cpuid_eax(kXcr0Lwp | 7, 0, kBulldozerEdx), 1u);
}

TEST(CpuidEax, FeatureBitsAreLwpCfgAndSupported)
{
    EXPECT_EQ(lwp_cpuid_eax(kXcr0Lwp | 7, 0x8000000e, kBulldozerEdx),
              0x8000000fu);
    EXPECT_EQ(lwp_cpuid_eax(kXcr0Lwp | 7, 0x00000004, kBulldozerEdx),
              0x00000005u);
    // COREID and VECTOR are not features
    EXPECT_EQ(lwp_cpuid_eax(kXcr0Lwp | 7, 0xeeff00000002ull, kBulldozerEdx),
              0x00000003u);
}

TEST(LwpCfg, SupportedFeaturesAreAccepted)
{
    uint64_t cfg = 0;
    EXPECT_EQ(lwp_cfg_write(0x8000000e, kBulldozerEdx, &cfg), LWP_OK);
    EXPECT_EQ(cfg, 0x8000000eull);
}

TEST(LwpCfg, EachUnsupportedFeatureBitRaisesGpAndKeepsTheValue)
{
    for (int bit = 1; bit < 32; bit++) {
        uint64_t cfg = 0x5a000000000aull;
        uint64_t v = 1ull << bit;
        LwpStatus want = (kBulldozerEdx & v) ? LWP_OK : LWP_FAULT_GP;
        EXPECT_EQ(lwp_cfg_write(v, kBulldozerEdx, &cfg), want) << "bit " << bit;
        if (want == LWP_FAULT_GP) {
            EXPECT_EQ(cfg, 0x5a000000000aull) << "bit " << bit;
        } else {
            EXPECT_EQ(cfg, v) << "bit " << bit;
        }
    }
}

TEST(LwpCfg, Bit0AndBits63To48AreWriteIgnored)
{
    // FX-8150 probe: write-ignored mask ffff000000000001
    uint64_t cfg = 7;
    EXPECT_EQ(lwp_cfg_write(0xffff000000000001ull, kBulldozerEdx, &cfg),
              LWP_OK);
    EXPECT_EQ(cfg, 0u);
    EXPECT_EQ(lwp_cfg_write(0xffffffff8000000full, kBulldozerEdx, &cfg),
              LWP_OK);
    EXPECT_EQ(cfg, 0x0000ffff8000000eull);
}

TEST(LwpCfg, CoreIdAndVectorAreStored)
{
    uint64_t cfg = 0;
    EXPECT_EQ(lwp_cfg_write(0xa55a00000000ull, LWP_FEAT_AVAIL, &cfg), LWP_OK);
    EXPECT_EQ(cfg, 0xa55a00000000ull);
}

TEST(LwpCfg, NothingButAvailSupportedMeansEveryFeatureBitFaults)
{
    uint64_t cfg = 0;
    EXPECT_EQ(lwp_cfg_write(LWP_FEAT_INT, LWP_FEAT_AVAIL, &cfg), LWP_FAULT_GP);
    EXPECT_EQ(lwp_cfg_write(LWP_FEAT_VAL, LWP_FEAT_AVAIL, &cfg), LWP_FAULT_GP);
    EXPECT_EQ(cfg, 0u);
}

TEST(LwpCbaddr, OnlyZeroMayBeWritten)
{
    EXPECT_EQ(lwp_cbaddr_write(0), LWP_OK);
    EXPECT_EQ(lwp_cbaddr_write(1), LWP_FAULT_GP);
    EXPECT_EQ(lwp_cbaddr_write(0x1000), LWP_FAULT_GP);
    EXPECT_EQ(lwp_cbaddr_write(1ull << 63), LWP_FAULT_GP);
}

} // namespace
