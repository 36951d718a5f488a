// Unit tests: the Intel performance-monitoring registers (pmu-engine.h).
// Expected values are a real Nehalem's (CPUID 0AH of a Core i5 750: EAX
// 0x07300403, EDX 0x603; PERF_CAPABILITIES 0x1c3) or written out by hand
// from the field layouts of SDM Vol. 3B 18.13 and Vol. 2B (RDPMC), never
// computed by the engine.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <gtest/gtest.h>

#include <cstdint>

extern "C" {
#include "pmu-engine.h"
}

namespace
{

// The CPU state's registers, with sentinels beyond the profile's counters
struct Regs {
    uint64_t gp[8] = {};
    uint64_t evtsel[8] = {};
    uint64_t fixed[4] = {};
    uint64_t fixed_ctrl = 0;
    uint64_t global_ctrl = 0;
    uint64_t global_status = 0;
    PmuRegs r = {gp, evtsel, fixed, &fixed_ctrl, &global_ctrl, &global_status};
};

const PmuProfile *nehalem()
{
    return pmu_profile_find(true, 6, 0x1a);
}

TEST(PmuProfile, NehalemSignaturesOnly)
{
    ASSERT_NE(nehalem(), nullptr);
    EXPECT_STREQ(pmu_profile_name(nehalem()), "Nehalem");
    for (uint32_t model : {0x1au, 0x1eu, 0x1fu, 0x2eu}) {
        EXPECT_EQ(pmu_profile_find(true, 6, model), nehalem()) << model;
    }
    // Westmere (06_25H, 06_2CH), Core 2 (06_17H), AMD, family 15
    EXPECT_EQ(pmu_profile_find(true, 6, 0x25), nullptr);
    EXPECT_EQ(pmu_profile_find(true, 6, 0x2c), nullptr);
    EXPECT_EQ(pmu_profile_find(true, 6, 0x17), nullptr);
    EXPECT_EQ(pmu_profile_find(false, 6, 0x1a), nullptr);
    EXPECT_EQ(pmu_profile_find(true, 15, 0x1a), nullptr);
}

TEST(PmuCpuid, NehalemLeaf0A)
{
    uint32_t eax, ebx, ecx, edx;
    pmu_cpuid_0a(nehalem(), &eax, &ebx, &ecx, &edx);
    // version 3, 4 counters, 48 bits, EBX length 7: the real part's
    EXPECT_EQ(eax, 0x07300403u);
    // every architectural event offered (the real part: 0x44)
    EXPECT_EQ(ebx, 0u);
    EXPECT_EQ(ecx, 0u);
    // 3 fixed counters, 48 bits wide: the real part's
    EXPECT_EQ(edx, 0x603u);
    EXPECT_EQ(pmu_num_gp(nehalem()), 4u);
    EXPECT_EQ(pmu_num_fixed(nehalem()), 3u);
}

TEST(PmuMisc, MiscEnableBits)
{
    // bit 7 available, 11 BTS and 12 PEBS unavailable
    EXPECT_EQ(pmu_misc_enable_bits(nehalem()), 0x1880u);
}

TEST(PmuReset, GeneralPurposeEnablesSetFixedClear)
{
    Regs s;
    for (auto &v : s.gp) {
        v = 0x1234;
    }
    s.fixed[2] = 7;
    s.fixed_ctrl = 0x333;
    s.global_status = 1;
    s.evtsel[3] = 0x43003c;
    pmu_reset(nehalem(), &s.r);
    EXPECT_EQ(s.global_ctrl, 0xfu);
    EXPECT_EQ(s.global_status, 0u);
    EXPECT_EQ(s.fixed_ctrl, 0u);
    EXPECT_EQ(s.fixed[2], 0u);
    EXPECT_EQ(s.evtsel[3], 0u);
    for (int i = 0; i < 4; i++) {
        EXPECT_EQ(s.gp[i], 0u);
    }
    // beyond the profile: untouched
    EXPECT_EQ(s.gp[4], 0x1234u);
}

TEST(PmuMsr, CounterWriteSignExtendsBit31To48Bits)
{
    Regs s;
    uint64_t v;
    // Linux: wrmsrl(MSR_P6_PERFCTR0 + 1, (u64)(-100000) & 0xffffffffffff)
    ASSERT_EQ(pmu_wrmsr(nehalem(), &s.r, 0xc2, 0xfffffffe7960ull), PMU_DONE);
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0xc2, &v), PMU_DONE);
    EXPECT_EQ(v, 0xfffffffe7960ull);
    // bit 31 clear: the upper bits are 0 whatever EDX held
    ASSERT_EQ(pmu_wrmsr(nehalem(), &s.r, 0xc1, 0xdead00001234ull), PMU_DONE);
    EXPECT_EQ(s.gp[0], 0x1234u);
    // bit 31 set: bits 47:32 set, 63:48 never
    ASSERT_EQ(pmu_wrmsr(nehalem(), &s.r, 0xc4, 0x80000000ull), PMU_DONE);
    EXPECT_EQ(s.gp[3], 0xffff80000000ull);
}

TEST(PmuMsr, LinuxProbeReadsBackWhatItWrote)
{
    // check_hw_exists(): read PMC0, xor 0xffff, write, read back
    Regs s;
    uint64_t v, back;
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0xc1, &v), PMU_DONE);
    v ^= 0xffff;
    ASSERT_EQ(pmu_wrmsr(nehalem(), &s.r, 0xc1, v), PMU_DONE);
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0xc1, &back), PMU_DONE);
    EXPECT_EQ(back, 0xffffu);
}

TEST(PmuMsr, FixedCounterWriteKeeps48Bits)
{
    Regs s;
    ASSERT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x30a, 0xffffffffffffffffull),
              PMU_DONE);
    EXPECT_EQ(s.fixed[1], 0xffffffffffffull);
    uint64_t v;
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0x30b, &v), PMU_DONE);
    EXPECT_EQ(v, 0u);
}

TEST(PmuMsr, MsrsTheProfileLacksRaiseGp)
{
    Regs s;
    uint64_t v = 0;
    // PMC4-7, PERFEVTSEL4-7, FIXED_CTR3, the full-width aliases (no
    // PERF_CAPABILITIES[13]), version 4's STATUS_SET and INUSE
    for (uint32_t msr : {0xc5u, 0xc8u, 0x18au, 0x18du, 0x30cu, 0x4c1u, 0x4c4u,
                         0x391u, 0x392u}) {
        EXPECT_EQ(pmu_rdmsr(nehalem(), &s.r, msr, &v), PMU_GP) << msr;
        EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, msr, 0), PMU_GP) << msr;
    }
    // not performance-monitoring MSRs: the caller's
    for (uint32_t msr : {0xc0u, 0xc9u, 0x185u, 0x18eu, 0x308u, 0x30du,
                         0x38cu, 0x393u, 0x4c0u, 0x4c9u, 0x1d9u}) {
        EXPECT_EQ(pmu_rdmsr(nehalem(), &s.r, msr, &v), PMU_NOT_MINE) << msr;
        EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, msr, 0), PMU_NOT_MINE) << msr;
    }
}

TEST(PmuMsr, EventSelectReservedBitsRaiseGp)
{
    Regs s;
    // INST_RETIRED.ANY_P, USR OS INT EN, CMASK 0xff, INV, AnyThread, PC, E
    uint64_t all = 0xffffffffull;
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x187, all), PMU_DONE);
    EXPECT_EQ(s.evtsel[1], all);
    for (unsigned bit = 32; bit < 64; bit++) {
        EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x187, 1ull << bit), PMU_GP)
            << bit;
    }
    EXPECT_EQ(s.evtsel[1], all); // unchanged by the faulting writes
}

TEST(PmuMsr, FixedControlHasTwelveBits)
{
    Regs s;
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x38d, 0xfffull), PMU_DONE);
    EXPECT_EQ(s.fixed_ctrl, 0xfffu);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x38d, 0x1000ull), PMU_GP);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x38d, 1ull << 63), PMU_GP);
    EXPECT_EQ(s.fixed_ctrl, 0xfffu);
}

TEST(PmuMsr, GlobalControlEnablesFourAndThree)
{
    Regs s;
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x38f, 0x70000000full), PMU_DONE);
    EXPECT_EQ(s.global_ctrl, 0x70000000full);
    for (uint64_t bad : {0x10ull, 0x800000000ull, 1ull << 31, 1ull << 63}) {
        EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x38f, bad), PMU_GP) << bad;
    }
    EXPECT_EQ(s.global_ctrl, 0x70000000full);
}

TEST(PmuMsr, StatusIsReadOnlyAndOvfCtrlClearsIt)
{
    Regs s;
    s.global_status = 0x700000003ull | (1ull << 62);
    uint64_t v;
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x38e, 0), PMU_GP);
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0x38e, &v), PMU_DONE);
    EXPECT_EQ(v, 0x700000003ull | (1ull << 62));
    // clear PMC1 and FIXED_CTR1 and the buffer bit
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x390,
                        0x200000002ull | (1ull << 62)),
              PMU_DONE);
    EXPECT_EQ(s.global_status, 0x500000001ull);
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0x390, &v), PMU_DONE);
    EXPECT_EQ(v, 0u);
    // 61, 62 and 63 are defined; 4-31, 35-60 are not
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x390, 7ull << 61), PMU_DONE);
    for (uint64_t bad : {0x10ull, 1ull << 31, 1ull << 35, 1ull << 60}) {
        EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x390, bad), PMU_GP) << bad;
    }
    EXPECT_EQ(s.global_status, 0x500000001ull);
}

TEST(PmuMsr, PerfCapabilitiesIsTheRealPartsAndReadOnly)
{
    Regs s;
    uint64_t v;
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0x345, &v), PMU_DONE);
    EXPECT_EQ(v, 0x1c3u);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x345, 0x1c3), PMU_GP);
}

TEST(PmuRdpmc, TypeAndIndex)
{
    Regs s;
    s.gp[3] = 0xffff00001111ull;
    s.fixed[2] = 0x123456789abcull;
    uint64_t v;
    ASSERT_EQ(pmu_rdpmc(nehalem(), &s.r, 3, &v), PMU_DONE);
    EXPECT_EQ(v, 0xffff00001111ull);
    ASSERT_EQ(pmu_rdpmc(nehalem(), &s.r, 0x40000002, &v), PMU_DONE);
    EXPECT_EQ(v, 0x123456789abcull);
    // index beyond the profile, the old "fast read" bit, other types
    for (uint32_t ecx : {4u, 0x40000003u, 0x80000000u, 0xc0000000u,
                         0x20000000u, 0x00010000u, 0x40010000u}) {
        EXPECT_EQ(pmu_rdpmc(nehalem(), &s.r, ecx, &v), PMU_GP) << ecx;
    }
}

} // namespace
