// Unit tests: the Intel performance-monitoring registers (pmu-engine.h).
// Expected values are a real Nehalem's (CPUID 0AH of a Core i5 750: EAX
// 0x07300403, EDX 0x603; PERF_CAPABILITIES 0x1c3) or written out by hand
// from the field layouts of SDM Vol. 3B 18.13 and Vol. 2B (RDPMC), never
// computed by the engine.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>

extern "C" {
#include "pmu-engine.h"
}
#include "lwp-engine.hh"

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
    uint64_t debugctl = 0;
    uint64_t lbr_from[PMU_MAX_LBR] = {};
    uint64_t lbr_to[PMU_MAX_LBR] = {};
    uint64_t lbr_tos = 0, lbr_select = 0, ler_from = 0, ler_to = 0;
    uint64_t ds_area = 0;
    uint64_t pebs_enable = 0, pebs_ld_lat = 0, pebs_armed = 0;
    PmuRegs r = {gp,        evtsel,    fixed,       &fixed_ctrl,
                 &global_ctrl, &global_status, &debugctl, lbr_from,
                 lbr_to,    &lbr_tos,  &lbr_select, &ler_from,
                 &ler_to,   &ds_area,  &pebs_enable, &pebs_ld_lat,
                 &pebs_armed, false};
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

// The data caches of a Core i5 750 as its CPUID leaf 4 describes them
// (L1D 32 KiB 8-way, L2 256 KiB 8-way, L3 8 MiB 16-way, 64-byte lines),
// with the latencies that docs/pmu.md cites: a geometry the cache model
// accepts
TEST(PmuCache, NehalemCaches)
{
    LwpCacheConfig c;

    pmu_cache_config(nehalem(), &c);
    EXPECT_EQ(c.levels, 3u);
    EXPECT_EQ(c.level[0].size, 32u * 1024);
    EXPECT_EQ(c.level[0].ways, 8u);
    EXPECT_EQ(c.level[0].line_size, 64u);
    EXPECT_EQ(c.level[0].latency, 4u);
    EXPECT_EQ(c.level[1].size, 256u * 1024);
    EXPECT_EQ(c.level[1].ways, 8u);
    EXPECT_EQ(c.level[1].line_size, 64u);
    EXPECT_EQ(c.level[1].latency, 10u);
    EXPECT_EQ(c.level[2].size, 8u * 1024 * 1024);
    EXPECT_EQ(c.level[2].ways, 16u);
    EXPECT_EQ(c.level[2].line_size, 64u);
    EXPECT_EQ(c.level[2].latency, 40u);
    EXPECT_EQ(c.dram_latency, 200u);
    EXPECT_TRUE(lwp_cache_config_valid(&c));
}

TEST(PmuMisc, MiscEnableBits)
{
    // bit 7 available, 11 BTS and 12 PEBS available (clear)
    EXPECT_EQ(pmu_misc_enable_bits(nehalem()), 0x80u);
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
        EXPECT_TRUE(pmu_owns_msr(nehalem(), msr)) << msr;
    }
    // not performance-monitoring MSRs: the caller's
    for (uint32_t msr : {0xc0u, 0xc9u, 0x185u, 0x18eu, 0x308u, 0x30du,
                         0x38cu, 0x393u, 0x4c0u, 0x4c9u, 0x1dau}) {
        EXPECT_EQ(pmu_rdmsr(nehalem(), &s.r, msr, &v), PMU_NOT_MINE) << msr;
        EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, msr, 0), PMU_NOT_MINE) << msr;
        EXPECT_FALSE(pmu_owns_msr(nehalem(), msr)) << msr;
    }
    // the profile's own: PMC0-3, PERFEVTSEL0-3, FIXED_CTR0-2,
    // PERF_CAPABILITIES, FIXED_CTR_CTRL, GLOBAL_STATUS, CTRL, OVF_CTRL
    for (uint32_t msr : {0xc1u, 0xc4u, 0x186u, 0x189u, 0x309u, 0x30bu,
                         0x345u, 0x38du, 0x38eu, 0x38fu, 0x390u}) {
        EXPECT_TRUE(pmu_owns_msr(nehalem(), msr)) << msr;
    }
}

TEST(PmuMsr, DebugctlFreezePerfmonOnPmi)
{
    Regs s;
    uint64_t v = 1;
    pmu_reset(nehalem(), &s.r);
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0x1d9, &v), PMU_DONE);
    EXPECT_EQ(v, 0u);
    // FREEZE_PERFMON_ON_PMI, bit 12, reads back
    ASSERT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x1d9, 0x1000), PMU_DONE);
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0x1d9, &v), PMU_DONE);
    EXPECT_EQ(v, 0x1000u);
    // reserved on the Core i7 (Vol. 3C, Table 35-2): 5:2, 14 without
    // PERF_CAPABILITIES[12] (0x1c3), 63:15
    for (unsigned bit : {2u, 3u, 4u, 5u, 14u, 15u, 31u, 32u, 63u}) {
        EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x1d9, uint64_t{1} << bit),
                  PMU_GP)
            << bit;
    }
    EXPECT_EQ(s.debugctl, 0x1000u);
    // the branch trace flags TR, BTS, BTINT, BTS_OFF_OS and BTS_OFF_USR
    // (6-10) read back; ENABLE_UNCORE_PMI (13) is defined, so it does not
    // raise #GP, but it is not modelled and reads 0
    ASSERT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x1d9, 0x27c0), PMU_DONE);
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0x1d9, &v), PMU_DONE);
    EXPECT_EQ(v, 0x7c0u);
    // LBR and BTF, bits 0 and 1, and FREEZE_LBRS_ON_PMI, bit 11, are
    // modelled: they read back
    ASSERT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x1d9, 0x2fc3), PMU_DONE);
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0x1d9, &v), PMU_DONE);
    EXPECT_EQ(v, 0xfc3u);
}

TEST(PmuOverflow, PmiRequestFreezesTheCountersWhenAsked)
{
    Regs s;
    // without FREEZE_PERFMON_ON_PMI, nothing changes
    s.global_ctrl = 0x70000000full;
    EXPECT_FALSE(pmu_pmi_request(nehalem(), &s.r));
    EXPECT_EQ(s.global_ctrl, 0x70000000full);
    // with it, every enable bit of IA32_PERF_GLOBAL_CTRL is cleared (SDM
    // 18.5.3.1), general-purpose and fixed alike
    s.debugctl = 0x1000;
    EXPECT_TRUE(pmu_pmi_request(nehalem(), &s.r));
    EXPECT_EQ(s.global_ctrl, 0u);
    EXPECT_FALSE(pmu_pmi_request(nehalem(), &s.r));
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

// Counting: event selects as Linux and rr write them (the values are
// theirs: perf's "instructions" is 0x5300c0 with INT, rr's conditional
// branch counter on Nehalem is 0x5101c4), decoded by the field layout of
// SDM 18.13 and the event lists of the SDM's Appendix A
PmuCount gp(Regs &s, uint64_t evtsel, uint64_t global_ctrl = 0xf)
{
    s.evtsel[1] = evtsel;
    s.global_ctrl = global_ctrl;
    return pmu_count_gp(nehalem(), &s.r, 1);
}

TEST(PmuCount, PerfAndRrEventSelects)
{
    Regs s;
    PmuCount c = gp(s, 0x5300c0); // instructions, USR OS INT EN
    EXPECT_EQ(c.source, PMU_SRC_INSN);
    EXPECT_EQ(c.cpl, PMU_CPL0 | PMU_CPL123);
    EXPECT_TRUE(c.pmi);
    EXPECT_TRUE(c.known);
    c = gp(s, 0x5101c4); // rr: BR_INST_RETIRED.CONDITIONAL, USR INT EN
    EXPECT_EQ(c.source, PMU_SRC_BRANCH);
    EXPECT_EQ(c.kinds, PMU_BR_COND);
    EXPECT_EQ(c.cpl, PMU_CPL123);
    EXPECT_TRUE(c.pmi);
    c = gp(s, 0x4200c4); // branches, OS EN, no INT
    EXPECT_EQ(c.source, PMU_SRC_BRANCH);
    EXPECT_EQ(c.kinds, PMU_BR_ALL);
    EXPECT_EQ(c.cpl, PMU_CPL0);
    EXPECT_FALSE(c.pmi);
}

TEST(PmuCount, EventTable)
{
    Regs s;
    struct {
        uint64_t evtsel;
        unsigned source, kinds;
    } const want[] = {
        {0x43003c, PMU_SRC_CYCLES, 0},
        {0x43013c, PMU_SRC_REF_CYCLES, 0},
        {0x434f2e, PMU_SRC_LLC_REF, 0},
        {0x43412e, PMU_SRC_LLC_MISS, 0},
        {0x4304c4, PMU_SRC_BRANCH, PMU_BR_ALL},
        {0x4302c4, PMU_SRC_BRANCH, PMU_BR_CALL},
        {0x4303c4, PMU_SRC_BRANCH, PMU_BR_COND | PMU_BR_CALL},
        {0x4300c5, PMU_SRC_BRANCH_MISP, PMU_BR_ALL},
        {0x4302c5, PMU_SRC_BRANCH_MISP, PMU_BR_CALL},
        {0x43010b, PMU_SRC_LOADS, 0},
        {0x43020b, PMU_SRC_STORES, 0},
        {0x4301cb, PMU_SRC_LOAD_LEVEL, PMU_LEVEL_L1},
        {0x4302cb, PMU_SRC_LOAD_LEVEL, PMU_LEVEL_L2},
        {0x4304cb, PMU_SRC_LOAD_LEVEL, PMU_LEVEL_L3},
        {0x4308cb, PMU_SRC_LOAD_LEVEL, 0},
        {0x4310cb, PMU_SRC_LOAD_LEVEL, PMU_LEVEL_DRAM},
    };
    for (const auto &w : want) {
        PmuCount c = gp(s, w.evtsel);
        EXPECT_EQ(c.source, w.source) << std::hex << w.evtsel;
        EXPECT_EQ(c.kinds, w.kinds) << std::hex << w.evtsel;
        EXPECT_TRUE(c.known) << std::hex << w.evtsel;
    }
}

TEST(PmuCount, UnknownEventsAndModifiersCountNothing)
{
    Regs s;
    // C4H umask 08H is not a Nehalem unit mask; MEM_LOAD_RETIRED.DTLB_MISS
    // needs a TLB model; 0x3c umask 02H does not exist
    for (uint64_t sel : {0x4308c4ull, 0x4380cbull, 0x43023cull, 0x4300ffull,
                         // EDGE on instructions, CMASK on loads
                         0x4700c0ull, 0x143010bull}) {
        PmuCount c = gp(s, sel);
        EXPECT_EQ(c.source, PMU_SRC_NONE) << std::hex << sel;
        EXPECT_FALSE(c.known) << std::hex << sel;
    }
}

/*
 * EDGE, INV and CMASK (SDM 18.2.1.1: with CMASK c a cycle counts when
 * its events number at least c, with INV fewer than c, and INV is ignored
 * when CMASK is 0; EDGE counts deasserted-to-asserted transitions) over
 * the cost model's cycles (choice 62: an instruction one cycle, a branch
 * one more, in which nothing retires).  Worked by hand for a block of n
 * instructions ending with a branch: n + 1 cycles, n with an instruction
 * retiring, 1 with a branch retiring.
 */
TEST(PmuCount, PerCycleModifiers)
{
    Regs s;
    const uint8_t all = PMU_BR_ALL, cond = PMU_BR_COND;
    const struct {
        uint64_t evtsel;
        uint8_t source, kinds;
        bool known;
    } want[] = {
        // instructions, CMASK 1: the n cycles with one
        {0x14300c0, PMU_SRC_INSN, 0, true},
        // INV without CMASK is ignored
        {0xc300c0, PMU_SRC_INSN, 0, true},
        // INV CMASK 1: the cycle without, a branch's second
        {0x1c300c0, PMU_SRC_BRANCH, all, true},
        // CMASK 2: never two in a cycle; INV CMASK 2: every cycle
        {0x24300c0, PMU_SRC_NONE, 0, true},
        {0x2c300c0, PMU_SRC_CYCLES, 0, true},
        // EDGE INV CMASK 1: each branch's second cycle follows its first
        {0x1c700c0, PMU_SRC_BRANCH, all, true},
        // EDGE CMASK 1 on instructions: depends on the cycle before
        {0x14700c0, PMU_SRC_NONE, 0, false},
        // all branches, INV CMASK 1: the cycles of the other instructions
        {0x1c304c4, PMU_SRC_INSN, 0, true},
        // conditional branches, INV CMASK 1: not a sum of block events
        {0x1c301c4, PMU_SRC_NONE, 0, false},
        // EDGE on branches: each follows a cycle without one
        {0x04701c4, PMU_SRC_BRANCH, cond, true},
        {0x04700c5, PMU_SRC_BRANCH_MISP, all, true},
        {0x14700c5, PMU_SRC_BRANCH_MISP, all, true},
        // cycles: CMASK 1 every cycle, INV CMASK 1 none, INV CMASK 2 all
        {0x143003c, PMU_SRC_CYCLES, 0, true},
        {0x1c3003c, PMU_SRC_NONE, 0, true},
        {0x2c3003c, PMU_SRC_CYCLES, 0, true},
        {0x1c3013c, PMU_SRC_NONE, 0, true},
        // EDGE on cycles: one transition, when counting starts
        {0x147003c, PMU_SRC_NONE, 0, false},
        // EDGE INV CMASK 2 on anything: the same
        {0x2c700c4, PMU_SRC_NONE, 0, false},
    };
    for (const auto &w : want) {
        PmuCount c = gp(s, w.evtsel);
        EXPECT_EQ(c.source, w.source) << std::hex << w.evtsel;
        EXPECT_EQ(c.kinds, w.kinds) << std::hex << w.evtsel;
        EXPECT_EQ(c.known, w.known) << std::hex << w.evtsel;
    }
}

// cost-model=detailed (choice 69): stall cycles in which nothing retires
// follow loads and mispredicts, so the cycles without an instruction or a
// branch are no sum of events; the rest is as without stalls
TEST(PmuCount, PerCycleModifiersWithStalls)
{
    Regs s;
    s.r.stalls = true;
    const uint8_t all = PMU_BR_ALL;
    const struct {
        uint64_t evtsel;
        uint8_t source, kinds;
        bool known;
    } want[] = {
        {0x14300c0, PMU_SRC_INSN, 0, true},     // CMASK 1
        {0xc300c0, PMU_SRC_INSN, 0, true},      // INV without CMASK
        {0x1c300c0, PMU_SRC_NONE, 0, false},    // INV CMASK 1
        {0x1c700c0, PMU_SRC_NONE, 0, false},    // EDGE INV CMASK 1
        {0x1c304c4, PMU_SRC_NONE, 0, false},    // all branches INV CMASK 1
        {0x24300c0, PMU_SRC_NONE, 0, true},     // CMASK 2: never
        {0x2c300c0, PMU_SRC_CYCLES, 0, true},   // INV CMASK 2: every cycle
        {0x04700c5, PMU_SRC_BRANCH_MISP, all, true}, // EDGE on branches
        {0x1c3003c, PMU_SRC_NONE, 0, true},     // cycles INV CMASK 1: none
    };
    for (const auto &w : want) {
        PmuCount c = gp(s, w.evtsel);
        EXPECT_EQ(c.source, w.source) << std::hex << w.evtsel;
        EXPECT_EQ(c.kinds, w.kinds) << std::hex << w.evtsel;
        EXPECT_EQ(c.known, w.known) << std::hex << w.evtsel;
    }
    // Agner Fog's measurement on Nehalem: at least 17 cycles
    EXPECT_EQ(pmu_mispredict_penalty(nehalem()), 17u);
}

TEST(PmuCount, EnablesGateTheCounter)
{
    Regs s;
    EXPECT_EQ(gp(s, 0x0300c0).cpl, 0u);          // EN clear
    EXPECT_EQ(gp(s, 0x4300c0, 0xd).cpl, 0u);     // GLOBAL_CTRL bit 1 clear
    EXPECT_EQ(gp(s, 0x4000c0).cpl, 0u);          // neither USR nor OS
    // fixed: OS|USR|PMI for FIXED_CTR0, USR for 1, OS for 2
    s.fixed_ctrl = 0x12b;
    s.global_ctrl = 0x300000000ull; // FIXED_CTR2 not enabled globally
    PmuCount c = pmu_count_fixed(nehalem(), &s.r, 0);
    EXPECT_EQ(c.source, PMU_SRC_INSN);
    EXPECT_EQ(c.cpl, PMU_CPL0 | PMU_CPL123);
    EXPECT_TRUE(c.pmi);
    c = pmu_count_fixed(nehalem(), &s.r, 1);
    EXPECT_EQ(c.source, PMU_SRC_CYCLES);
    EXPECT_EQ(c.cpl, PMU_CPL123);
    EXPECT_FALSE(c.pmi);
    c = pmu_count_fixed(nehalem(), &s.r, 2);
    EXPECT_EQ(c.source, PMU_SRC_REF_CYCLES);
    EXPECT_EQ(c.cpl, 0u);
}

TEST(PmuCount, OverflowAt2To48)
{
    Regs s;
    // perf's sampling period of 100000: the counter starts at -100000
    s.gp[2] = 0xfffffffe7960ull;
    EXPECT_EQ(pmu_until_overflow(nehalem(), &s.r, false, 2), 100000u);
    EXPECT_FALSE(pmu_add(nehalem(), &s.r, false, 2, 99999));
    EXPECT_EQ(s.gp[2], 0xffffffffffffull);
    EXPECT_EQ(s.global_status, 0u);
    EXPECT_EQ(pmu_until_overflow(nehalem(), &s.r, false, 2), 1u);
    EXPECT_TRUE(pmu_add(nehalem(), &s.r, false, 2, 1));
    EXPECT_EQ(s.gp[2], 0u);
    EXPECT_EQ(s.global_status, 0x4u);
    EXPECT_EQ(pmu_until_overflow(nehalem(), &s.r, false, 2),
              0x1000000000000ull);
    // a fixed counter's bit is 32 + its index
    s.fixed[1] = 0xfffffffffffeull;
    EXPECT_TRUE(pmu_add(nehalem(), &s.r, true, 1, 5));
    EXPECT_EQ(s.fixed[1], 3u);
    EXPECT_EQ(s.global_status, 0x200000004ull);
}

TEST(PmuBlock, EventsAndWhereTheyHappen)
{
    // 5 instructions ending with a branch: 5 instructions, 6 cycles
    // (one each, one more for the branch), 1 branch
    EXPECT_EQ(pmu_block_events(PMU_SRC_INSN, 5, true), 5u);
    EXPECT_EQ(pmu_block_events(PMU_SRC_CYCLES, 5, true), 6u);
    EXPECT_EQ(pmu_block_events(PMU_SRC_REF_CYCLES, 5, false), 5u);
    EXPECT_EQ(pmu_block_events(PMU_SRC_BRANCH, 5, true), 1u);
    EXPECT_EQ(pmu_block_events(PMU_SRC_BRANCH, 5, false), 0u);
    EXPECT_EQ(pmu_block_events(PMU_SRC_LOADS, 5, true), 0u);
    // the 3rd instruction retires the 3rd instruction and ends the 3rd
    // cycle; the 6th cycle is the last instruction's second
    EXPECT_EQ(pmu_event_insn(PMU_SRC_INSN, 3, 5), 3u);
    EXPECT_EQ(pmu_event_insn(PMU_SRC_CYCLES, 3, 5), 3u);
    EXPECT_EQ(pmu_event_insn(PMU_SRC_CYCLES, 5, 5), 5u);
    EXPECT_EQ(pmu_event_insn(PMU_SRC_CYCLES, 6, 5), 5u);
    EXPECT_EQ(pmu_event_insn(PMU_SRC_BRANCH, 1, 5), 5u);
    EXPECT_EQ(pmu_event_insn(PMU_SRC_INSN, 1, 1), 1u);
}

TEST(PmuCount, TakingBackUndoesTheOverflow)
{
    Regs s;
    s.gp[0] = 0xfffffffffffdull;
    s.global_status = 0x2; // PMC1's, not this counter's
    EXPECT_TRUE(pmu_add(nehalem(), &s.r, false, 0, 5));
    EXPECT_EQ(s.gp[0], 2u);
    EXPECT_EQ(s.global_status, 0x3u);
    pmu_sub(nehalem(), &s.r, false, 0, 2);
    EXPECT_EQ(s.gp[0], 0u);
    EXPECT_EQ(s.global_status, 0x3u); // still past the overflow
    pmu_sub(nehalem(), &s.r, false, 0, 1);
    EXPECT_EQ(s.gp[0], 0xffffffffffffull);
    EXPECT_EQ(s.global_status, 0x2u);
}

} // namespace

// The Core i7's LBR stack (SDM 18.6.1, 18.6.2): 16 entries at 680H and
// 6C0H, MSR_LASTBRANCH_TOS at 1C9H, MSR_LBR_SELECT at 1C8H, the LER pair
// at 1DDH and 1DEH (Vol. 3C Table 35-2); FROM is bits 47:0 with their
// sign in 62:48 and the mispredict flag in 63, TO bits 47:0 and their
// sign in 63:48
// The Branch Trace Store (SDM Vol. 3B 18.7.8; Vol. 4 for IA32_DS_AREA
// and IA32_DEBUGCTL)
TEST(PmuBts, DsAreaMsr)
{
    Regs s;
    uint64_t v = 1;
    s.ds_area = 0x1234;
    pmu_reset(nehalem(), &s.r);
    EXPECT_TRUE(pmu_has_bts(nehalem()));
    EXPECT_TRUE(pmu_owns_msr(nehalem(), 0x600));
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0x600, &v), PMU_DONE);
    EXPECT_EQ(v, 0u);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x600, 0xffff880012345000ull),
              PMU_DONE);
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0x600, &v), PMU_DONE);
    EXPECT_EQ(v, 0xffff880012345000ull);
    // a linear address: not canonical, #GP and unchanged
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x600, 0x0000800000000000ull),
              PMU_GP);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x600, 0x8000000000000000ull),
              PMU_GP);
    EXPECT_EQ(s.ds_area, 0xffff880012345000ull);
}

// Table 18-9, CPL-qualified branch trace store encodings: TR, BTS,
// BTS_OFF_OS, BTS_OFF_USR (BTINT plays no part in which are stored)
TEST(PmuBts, CplQualifiedEncodings)
{
    struct {
        uint64_t debugctl;
        bool cpl0, cpl3;
    } const rows[] = {
        {0, false, false},
        {0x040, false, false},          // TR: messages, not stored
        {0x080, false, false},          // BTS without TR
        {0x0c0, true, true},            // all
        {0x2c0, false, true},           // BTS_OFF_OS: CPL > 0 only
        {0x4c0, true, false},           // BTS_OFF_USR: CPL 0 only
        {0x6c0, false, false},          // both off
        {0x1c0, true, true},            // with BTINT
        {0x7c0, false, false},
    };
    for (const auto &row : rows) {
        Regs s;
        s.debugctl = row.debugctl;
        EXPECT_EQ(pmu_bts_records_at(nehalem(), &s.r, true), row.cpl0)
            << std::hex << row.debugctl;
        EXPECT_EQ(pmu_bts_records_at(nehalem(), &s.r, false), row.cpl3)
            << std::hex << row.debugctl;
    }
}

// A pmu_bts_store() result, or the one the rules give, as text: a
// mismatch prints both
std::string Bts(const PmuBtsStore &st)
{
    char b[64];
    snprintf(b, sizeof(b), "store=%d index=%#llx pmi=%d", st.store,
             static_cast<unsigned long long>(st.index), st.pmi);
    return b;
}

std::string Bts(bool store, uint64_t index, bool pmi)
{
    return Bts(PmuBtsStore{store, index, pmi});
}

// The BTS buffer (18.7.8.2 and its notes): base 0x1000, three 24-byte
// records up to the absolute maximum 0x1048
TEST(PmuBts, CircularBufferWraps)
{
    Regs s;
    s.debugctl = 0xc0; // TR, BTS; BTINT clear: circular
    // threshold beyond the maximum: no interrupt ever
    EXPECT_EQ(Bts(pmu_bts_store(&s.r, 0x1000, 0x1000, 0x1048, 0x1060)),
              Bts(true, 0x1018, false));
    EXPECT_EQ(Bts(pmu_bts_store(&s.r, 0x1000, 0x1018, 0x1048, 0x1060)),
              Bts(true, 0x1030, false));
    // the third fills the buffer: back to the base
    EXPECT_EQ(Bts(pmu_bts_store(&s.r, 0x1000, 0x1030, 0x1048, 0x1060)),
              Bts(true, 0x1000, false));
    // the SDM's "a multiple of the record size plus 1" maximum: the same
    EXPECT_EQ(Bts(pmu_bts_store(&s.r, 0x1000, 0x1030, 0x1049, 0x1060)),
              Bts(true, 0x1000, false));
    // "it's not enough to clear BTINT": a threshold within the buffer
    // interrupts in the circular mode too
    EXPECT_EQ(Bts(pmu_bts_store(&s.r, 0x1000, 0x1018, 0x1048, 0x1030)),
              Bts(true, 0x1030, true));
}

TEST(PmuBts, InterruptModeStopsWhenFull)
{
    Regs s;
    s.debugctl = 0x1c0; // TR, BTS, BTINT
    // threshold at the second record's end
    EXPECT_EQ(Bts(pmu_bts_store(&s.r, 0x1000, 0x1000, 0x1048, 0x1030)),
              Bts(true, 0x1018, false));
    EXPECT_EQ(Bts(pmu_bts_store(&s.r, 0x1000, 0x1018, 0x1048, 0x1030)),
              Bts(true, 0x1030, true));
    EXPECT_EQ(Bts(pmu_bts_store(&s.r, 0x1000, 0x1030, 0x1048, 0x1030)),
              Bts(true, 0x1048, true));
    // full: dropped, the index stays
    EXPECT_EQ(Bts(pmu_bts_store(&s.r, 0x1000, 0x1048, 0x1048, 0x1030)),
              Bts(false, 0x1048, false));
}

TEST(PmuBts, NoRoomStoresNothing)
{
    Regs s;
    s.debugctl = 0xc0;
    // smaller than one record (the SDM: undefined; here nothing)
    EXPECT_EQ(Bts(pmu_bts_store(&s.r, 0x1000, 0x1000, 0x1010, 0)),
              Bts(false, 0x1000, false));
    // an index past the maximum, and one that would wrap around 2^64
    EXPECT_EQ(Bts(pmu_bts_store(&s.r, 0x1000, 0x2000, 0x1048, 0)),
              Bts(false, 0x2000, false));
    EXPECT_EQ(Bts(pmu_bts_store(&s.r, 0, ~uint64_t{0} - 8, ~uint64_t{0}, 0)),
              Bts(false, ~uint64_t{0} - 8, false));
}

// PEBS of the Core i7 (SDM Vol. 3B 18.6.1.1, record format 1) and load
// latency (18.17.1.2): IA32_PEBS_ENABLE (3F1H) has PEBS_EN_PMC0-3 in
// bits 3:0 and LL_EN_PMC0-3 in bits 35:32; MSR_PEBS_LD_LAT_THRESHOLD
// (3F6H) bits 15:0
TEST(PmuPebs, Msrs)
{
    Regs s;
    uint64_t v = 1;
    s.pebs_enable = s.pebs_ld_lat = s.pebs_armed = 7;
    pmu_reset(nehalem(), &s.r);
    EXPECT_TRUE(pmu_has_pebs(nehalem()));
    EXPECT_EQ(s.pebs_armed, 0u);
    for (uint32_t msr : {0x3f1u, 0x3f6u}) {
        EXPECT_TRUE(pmu_owns_msr(nehalem(), msr)) << msr;
        ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, msr, &v), PMU_DONE) << msr;
        EXPECT_EQ(v, 0u) << msr;
    }
    // Linux's value for load latency on PMC0, the SDM's example
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x3f1, 0x100000001ull), PMU_DONE);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x3f1, 0xf0000000full), PMU_DONE);
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0x3f1, &v), PMU_DONE);
    EXPECT_EQ(v, 0xf0000000full);
    // reserved: 31:4, 63:36 (PS_ENABLE, bit 63, is a later part's)
    for (uint64_t bad : {0x10ull, 0x80000000ull, 0x1000000000ull,
                         0x8000000000000000ull}) {
        EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x3f1, bad), PMU_GP) << bad;
    }
    EXPECT_EQ(s.pebs_enable, 0xf0000000full);
    // Linux's check_msr() flips 0x11; the SDM's minimum is 3
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x3f6, 0x11), PMU_DONE);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x3f6, 0xffff), PMU_DONE);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x3f6, 0x10000), PMU_GP);
    ASSERT_EQ(pmu_rdmsr(nehalem(), &s.r, 0x3f6, &v), PMU_DONE);
    EXPECT_EQ(v, 0xffffu);
}

// MEM_INST_RETIRED.LATENCY_ABOVE_THRESHOLD, 0BH 10H (18.17.1.2)
TEST(PmuPebs, LoadLatencyEvent)
{
    Regs s;
    s.global_ctrl = 1;
    s.evtsel[0] = 0x43100b; // EN, OS, USR, 0BH 10H
    PmuCount c = pmu_count_gp(nehalem(), &s.r, 0);
    EXPECT_EQ(c.source, PMU_SRC_LOAD_LATENCY);
    EXPECT_TRUE(c.known);
    EXPECT_EQ(c.cpl, PMU_CPL0 | PMU_CPL123);
}

// Arming (18.6.1.1): "When the counter IA32_PMCx overflows from maximum
// count to zero, the PEBS hardware is armed. Upon occurrence of the next
// PEBS event, the PEBS hardware triggers an assist"
TEST(PmuPebs, OverflowArmsNextEventTriggers)
{
    const uint64_t max = (uint64_t{1} << 48) - 1;
    Regs s;
    s.global_ctrl = 0xf;
    s.pebs_enable = 1;
    s.evtsel[0] = 0x4300c0; // INST_RETIRED.ANY_P
    s.gp[0] = max - 2;      // three events to the overflow
    EXPECT_EQ(pmu_until_overflow(nehalem(), &s.r, false, 0), 3u);
    EXPECT_FALSE(pmu_add(nehalem(), &s.r, false, 0, 2));
    EXPECT_FALSE(pmu_pebs_event(nehalem(), &s.r, 0, 2, false));
    // the third overflows to 0: armed, not yet the PEBS event
    EXPECT_TRUE(pmu_add(nehalem(), &s.r, false, 0, 1));
    EXPECT_FALSE(pmu_pebs_event(nehalem(), &s.r, 0, 1, true));
    EXPECT_EQ(s.pebs_armed, 1u);
    EXPECT_EQ(s.global_status, 1u);
    // the next event is the PEBS event
    EXPECT_EQ(pmu_until_overflow(nehalem(), &s.r, false, 0), 1u);
    EXPECT_FALSE(pmu_add(nehalem(), &s.r, false, 0, 1));
    EXPECT_TRUE(pmu_pebs_event(nehalem(), &s.r, 0, 1, false));
    EXPECT_EQ(s.gp[0], 1u);
}

TEST(PmuPebs, EventsPastTheOverflowTriggerAtOnce)
{
    const uint64_t max = (uint64_t{1} << 48) - 1;
    Regs s;
    s.global_ctrl = 0xf;
    s.pebs_enable = 2;
    s.evtsel[1] = 0x4301cb; // MEM_LOAD_RETIRED.L1D_HIT
    s.gp[1] = max;
    // two loads of one instruction: the first overflows, the second is
    // the PEBS event
    EXPECT_TRUE(pmu_add(nehalem(), &s.r, false, 1, 2));
    EXPECT_TRUE(pmu_pebs_event(nehalem(), &s.r, 1, 2, true));
}

TEST(PmuPebs, OnlyPreciseEventsWithPebsEnabled)
{
    const uint64_t max = (uint64_t{1} << 48) - 1;
    // event select, PEBS_ENABLE: armed or not
    struct {
        uint64_t evtsel, enable;
        bool arms;
    } const rows[] = {
        {0x4300c0, 1, true},   // INST_RETIRED
        {0x4300c4, 1, true},   // BR_INST_RETIRED
        {0x4304c5, 1, true},   // BR_MISP_RETIRED.ALL_BRANCHES
        {0x4301cb, 1, true},   // MEM_LOAD_RETIRED.L1D_HIT
        {0x43100b, 1, true},   // MEM_INST_RETIRED.LATENCY_ABOVE_THRESHOLD
        {0x43003c, 1, false},  // UnHalted Core Cycles: not precise
        {0x434f2e, 1, false},  // LLC Reference: not precise
        {0x4300c0, 0, false},  // PEBS not enabled
        {0x4300c0, 2, false},  // PEBS enabled for another counter
    };
    for (const auto &row : rows) {
        Regs s;
        s.global_ctrl = 0xf;
        s.pebs_enable = row.enable;
        s.evtsel[0] = row.evtsel;
        s.gp[0] = max;
        EXPECT_TRUE(pmu_add(nehalem(), &s.r, false, 0, 1));
        EXPECT_FALSE(pmu_pebs_event(nehalem(), &s.r, 0, 1, true));
        EXPECT_EQ(s.pebs_armed, row.arms ? 1u : 0u) << std::hex << row.evtsel;
    }
}

TEST(PmuPebs, WritingTheCounterOrDisablingDisarms)
{
    Regs s;
    s.pebs_enable = 3;
    s.pebs_armed = 3;
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0xc1, 0xfffffff0), PMU_DONE);
    EXPECT_EQ(s.pebs_armed, 2u);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x3f1, 1), PMU_DONE);
    EXPECT_EQ(s.pebs_armed, 0u);
    // counts given back across the overflow: it did not happen
    s.pebs_armed = 1;
    s.global_status = 1;
    s.gp[0] = 0;
    pmu_sub(nehalem(), &s.r, false, 0, 1);
    EXPECT_EQ(s.pebs_armed, 0u);
    EXPECT_EQ(s.global_status, 0u);
}

// The PEBS buffer: records of 0B0H bytes (Table 18-23), base 0x2000,
// room for two up to the absolute maximum 0x2160
TEST(PmuPebs, BufferIndexThresholdAndNoRoom)
{
    EXPECT_EQ(Bts(pmu_pebs_store(0x2000, 0x2160, 0x20b0)),
              Bts(true, 0x20b0, true));
    EXPECT_EQ(Bts(pmu_pebs_store(0x2000, 0x2160, 0x2160)),
              Bts(true, 0x20b0, false));
    EXPECT_EQ(Bts(pmu_pebs_store(0x20b0, 0x2160, 0x2160)),
              Bts(true, 0x2160, true));
    // full: skipped, no wrap (PEBS has no circular mode)
    EXPECT_EQ(Bts(pmu_pebs_store(0x2160, 0x2160, 0x2160)),
              Bts(false, 0x2160, false));
    EXPECT_EQ(Bts(pmu_pebs_store(0x20b1, 0x2160, 0x2160)),
              Bts(false, 0x20b1, false));
    EXPECT_EQ(Bts(pmu_pebs_store(~uint64_t{0} - 8, ~uint64_t{0}, 0)),
              Bts(false, ~uint64_t{0} - 8, false));
}

// "After each PEBS record is written, the processor checks each counter
// to see if it overflowed and was enabled for PEBS ... the reset value
// for each overflowed counter is loaded"; "clear the counter overflow
// status, and reload the counter"
TEST(PmuPebs, DoneReloadsOverflowedPebsCounters)
{
    const uint64_t reset[4] = {0xfffffffffff0ull, 0xffff0000ffffffe0ull,
                               0x123, 0x456};
    Regs s;
    s.pebs_enable = 0x3 | (uint64_t{1} << 32);
    s.evtsel[0] = 0x4300c0;
    s.evtsel[1] = 0x4300c4;
    s.evtsel[2] = 0x4300c0; // overflowed, PEBS not enabled for it
    s.evtsel[3] = 0x4300c0;
    s.gp[0] = 1;
    s.gp[1] = 5;
    s.gp[2] = 7;
    s.gp[3] = 9;
    s.pebs_armed = 1;
    // PMC1 and PMC2 overflowed, and fixed counter 0
    s.global_status = 0x6 | (uint64_t{1} << 32);
    pmu_pebs_done(nehalem(), &s.r, reset, true, false);
    EXPECT_EQ(s.gp[0], 0xfffffffffff0ull);
    EXPECT_EQ(s.gp[1], 0xffffffe0ull); // bits 47:0 of the reset value
    EXPECT_EQ(s.gp[2], 7u);
    EXPECT_EQ(s.gp[3], 9u);
    EXPECT_EQ(s.global_status, 0x4 | (uint64_t{1} << 32));
    EXPECT_EQ(s.pebs_armed, 0u);
    // the threshold: OvfBuffer, bit 62
    pmu_pebs_done(nehalem(), &s.r, reset, true, true);
    EXPECT_EQ(s.global_status, 0x4 | (uint64_t{1} << 32) |
                                   (uint64_t{1} << 62));
}

TEST(PmuPebs, SkippedRecordReloadsNothing)
{
    const uint64_t reset[4] = {0x10, 0x20, 0x30, 0x40};
    Regs s;
    s.pebs_enable = 1;
    s.evtsel[0] = 0x4300c0;
    s.gp[0] = 1;
    s.global_status = 1;
    s.pebs_armed = 1;
    pmu_pebs_done(nehalem(), &s.r, reset, false, false);
    EXPECT_EQ(s.gp[0], 1u);
    EXPECT_EQ(s.global_status, 1u);
    EXPECT_EQ(s.pebs_armed, 0u);
}

// Table 18-24, "Data Source Encoding for Load Latency Record"
TEST(PmuPebs, DataSource)
{
    EXPECT_EQ(pmu_pebs_data_source(PMU_LEVEL_L1), 0x1u);
    EXPECT_EQ(pmu_pebs_data_source(PMU_LEVEL_L2), 0x3u);
    EXPECT_EQ(pmu_pebs_data_source(PMU_LEVEL_L3), 0x4u);
    EXPECT_EQ(pmu_pebs_data_source(PMU_LEVEL_DRAM), 0xcu);
}

// The P6 family's last branch records (SDM 17.14): DEBUGCTLMSR (1D9H)
// with LBR, BTF, PB0-PB3 and TR (Figure 17-18), LastBranchFromIP and
// ToIP (1DBH, 1DCH), LastExceptionFromIP and ToIP (1DDH, 1DEH); the
// counters are not architectural ones and stay the CPU model's
const PmuProfile *p6()
{
    return pmu_profile_find(true, 6, 0x07);
}

TEST(PmuP6, SignaturesAndNoCounters)
{
    ASSERT_NE(p6(), nullptr);
    EXPECT_STREQ(pmu_profile_name(p6()), "P6");
    // Pentium Pro, II, III (QEMU's pentium2 is 06_05H, pentium3 06_07H)
    for (uint32_t model : {0x01u, 0x03u, 0x05u, 0x06u, 0x07u, 0x08u, 0x0au,
                           0x0bu}) {
        EXPECT_EQ(pmu_profile_find(true, 6, model), p6()) << model;
    }
    // Pentium M (06_09H, 06_0DH) has another stack; family 5 has none
    EXPECT_EQ(pmu_profile_find(true, 6, 0x09), nullptr);
    EXPECT_EQ(pmu_profile_find(true, 6, 0x0d), nullptr);
    EXPECT_EQ(pmu_profile_find(true, 5, 0x02), nullptr);
    EXPECT_FALSE(pmu_has_counters(p6()));
    EXPECT_TRUE(pmu_has_counters(nehalem()));
    EXPECT_EQ(pmu_lbr_depth(p6()), 1u);
    EXPECT_FALSE(pmu_lbr_has_mispredict(p6()));
    EXPECT_TRUE(pmu_lbr_has_mispredict(nehalem()));
    EXPECT_EQ(pmu_misc_enable_bits(p6()), 0u);
    EXPECT_FALSE(pmu_has_bts(p6()));
    EXPECT_FALSE(pmu_has_pebs(p6()));
    // PerfCtr0/1, PerfEvtSel0/1, the architectural MSRs, the Core i7's
    // LBR MSRs: not the profile's
    for (uint32_t msr : {0xc1u, 0xc2u, 0x186u, 0x187u, 0x309u, 0x345u,
                         0x38du, 0x38eu, 0x38fu, 0x390u, 0x1c8u, 0x1c9u,
                         0x680u, 0x6c0u, 0x600u, 0x3f1u}) {
        EXPECT_FALSE(pmu_owns_msr(p6(), msr)) << std::hex << msr;
    }
}

TEST(PmuP6, Msrs)
{
    Regs s;
    uint64_t v = 1;
    pmu_reset(p6(), &s.r);
    for (uint32_t msr : {0x1d9u, 0x1dbu, 0x1dcu, 0x1ddu, 0x1deu}) {
        EXPECT_TRUE(pmu_owns_msr(p6(), msr)) << std::hex << msr;
        ASSERT_EQ(pmu_rdmsr(p6(), &s.r, msr, &v), PMU_DONE) << msr;
        EXPECT_EQ(v, 0u) << msr;
    }
    // bits 6:0 read back; 31:7 are reserved
    EXPECT_EQ(pmu_wrmsr(p6(), &s.r, 0x1d9, 0x7f), PMU_DONE);
    ASSERT_EQ(pmu_rdmsr(p6(), &s.r, 0x1d9, &v), PMU_DONE);
    EXPECT_EQ(v, 0x7fu);
    EXPECT_EQ(pmu_wrmsr(p6(), &s.r, 0x1d9, 0x80), PMU_GP);
    EXPECT_EQ(pmu_wrmsr(p6(), &s.r, 0x1d9, 0x1000), PMU_GP);
    // "These registers can be read using the RDMSR instruction"
    for (uint32_t msr : {0x1dbu, 0x1dcu, 0x1ddu, 0x1deu}) {
        EXPECT_EQ(pmu_wrmsr(p6(), &s.r, msr, 0), PMU_GP) << msr;
    }
}

// 17.14.2 and 17.14.3: a branch loads the pair; an interrupt or exception
// first copies it to LastException*; no mispredict flag
TEST(PmuP6, RecordsTheLastBranchAndException)
{
    Regs s;
    uint64_t v = 0;
    pmu_reset(p6(), &s.r);
    s.debugctl = PMU_DEBUGCTL_LBR;
    pmu_lbr_record(p6(), &s.r, PMU_LBR_JCC, false, 0x1234, 0x1250, true);
    ASSERT_EQ(pmu_rdmsr(p6(), &s.r, 0x1db, &v), PMU_DONE);
    EXPECT_EQ(v, 0x1234u);
    ASSERT_EQ(pmu_rdmsr(p6(), &s.r, 0x1dc, &v), PMU_DONE);
    EXPECT_EQ(v, 0x1250u);
    pmu_lbr_record(p6(), &s.r, PMU_LBR_NEAR_RET, true, 0xc0001000,
                   0x80000000, false);
    pmu_lbr_event(p6(), &s.r, true, 0x80000004, 0xc0002000);
    ASSERT_EQ(pmu_rdmsr(p6(), &s.r, 0x1dd, &v), PMU_DONE);
    EXPECT_EQ(v, 0xc0001000u);
    ASSERT_EQ(pmu_rdmsr(p6(), &s.r, 0x1de, &v), PMU_DONE);
    EXPECT_EQ(v, 0x80000000u);
    ASSERT_EQ(pmu_rdmsr(p6(), &s.r, 0x1db, &v), PMU_DONE);
    EXPECT_EQ(v, 0x80000004u);
    ASSERT_EQ(pmu_rdmsr(p6(), &s.r, 0x1dc, &v), PMU_DONE);
    EXPECT_EQ(v, 0xc0002000u);
    // LBR clear: nothing
    s.debugctl = 0;
    pmu_lbr_record(p6(), &s.r, PMU_LBR_JCC, false, 0x1, 0x2, false);
    EXPECT_EQ(s.lbr_from[0], 0x80000004u);
}

TEST(PmuLbr, Msrs)
{
    Regs s;
    uint64_t v = 1;
    pmu_reset(nehalem(), &s.r);
    EXPECT_EQ(pmu_lbr_depth(nehalem()), 16u);
    for (uint32_t msr : {0x1c8u, 0x1c9u, 0x1ddu, 0x1deu, 0x680u, 0x68fu,
                         0x6c0u, 0x6cfu}) {
        EXPECT_TRUE(pmu_owns_msr(nehalem(), msr)) << msr;
        EXPECT_EQ(pmu_rdmsr(nehalem(), &s.r, msr, &v), PMU_DONE) << msr;
        EXPECT_EQ(v, 0u) << msr;
    }
    // the 32-entry stacks' addresses beyond the 16: #GP
    for (uint32_t msr : {0x690u, 0x69fu, 0x6d0u, 0x6dfu}) {
        EXPECT_EQ(pmu_rdmsr(nehalem(), &s.r, msr, &v), PMU_GP) << msr;
        EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, msr, 0), PMU_GP) << msr;
    }
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x1c9, 15), PMU_DONE);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x1c9, 16), PMU_GP);
    EXPECT_EQ(s.lbr_tos, 15u);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x1c8, 0x1ff), PMU_DONE);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x1c8, 0x200), PMU_GP);
    EXPECT_EQ(s.lbr_select, 0x1ffu);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x1dd, 0), PMU_GP);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x1de, 0), PMU_GP);
    // FROM: canonical in 62:0, anything in 63
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x685, 0x8000800000000000ull),
              PMU_GP);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x685, 0xffff800000000000ull),
              PMU_DONE);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x685, 0x800000000040f00dull),
              PMU_DONE);
    EXPECT_EQ(s.lbr_from[5], 0x800000000040f00dull);
    // TO: canonical in 63:0
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x6c5, 0x8000000000000000ull),
              PMU_GP);
    EXPECT_EQ(pmu_wrmsr(nehalem(), &s.r, 0x6c5, 0xffff800000001234ull),
              PMU_DONE);
    EXPECT_EQ(s.lbr_to[5], 0xffff800000001234ull);
    pmu_reset(nehalem(), &s.r);
    EXPECT_EQ(s.lbr_from[5] | s.lbr_to[5] | s.lbr_tos | s.lbr_select, 0u);
}

TEST(PmuLbr, RecordsWithTheTopOfStackAndFilters)
{
    Regs s;
    pmu_reset(nehalem(), &s.r);
    // without IA32_DEBUGCTL.LBR nothing is recorded
    pmu_lbr_record(nehalem(), &s.r, PMU_LBR_JCC, false, 0x1000, 0x2000, 0);
    EXPECT_EQ(s.lbr_tos, 0u);
    EXPECT_EQ(s.lbr_from[1], 0u);
    s.debugctl = 1;
    pmu_lbr_record(nehalem(), &s.r, PMU_LBR_JCC, false, 0x1000, 0x2000, 1);
    EXPECT_EQ(s.lbr_tos, 1u);
    EXPECT_EQ(s.lbr_from[1], 0x8000000000001000ull);
    EXPECT_EQ(s.lbr_to[1], 0x2000u);
    // a kernel address: bit 47's sign above it
    pmu_lbr_record(nehalem(), &s.r, PMU_LBR_NEAR_RET, true,
                   0xffffffff81000000ull, 0xffffffff81000010ull, 0);
    EXPECT_EQ(s.lbr_tos, 2u);
    EXPECT_EQ(s.lbr_from[2], 0x7fffffff81000000ull);
    EXPECT_EQ(s.lbr_to[2], 0xffffffff81000010ull);
    // MSR_LBR_SELECT: a kind left out, a CPL left out
    s.lbr_select = PMU_LBR_NEAR_RET;
    pmu_lbr_record(nehalem(), &s.r, PMU_LBR_NEAR_RET, false, 1, 2, 0);
    EXPECT_EQ(s.lbr_tos, 2u);
    s.lbr_select = PMU_LBR_CPL_NEQ_0;
    EXPECT_FALSE(pmu_lbr_records_at(nehalem(), &s.r, false));
    EXPECT_TRUE(pmu_lbr_records_at(nehalem(), &s.r, true));
    pmu_lbr_record(nehalem(), &s.r, PMU_LBR_FAR, false, 1, 2, 0);
    EXPECT_EQ(s.lbr_tos, 2u);
    pmu_lbr_record(nehalem(), &s.r, PMU_LBR_FAR, true, 3, 4, 0);
    EXPECT_EQ(s.lbr_tos, 3u);
    // the top of stack wraps from 15 to 0
    s.lbr_select = 0;
    s.lbr_tos = 15;
    pmu_lbr_record(nehalem(), &s.r, PMU_LBR_NEAR_REL_JMP, false, 5, 6, 0);
    EXPECT_EQ(s.lbr_tos, 0u);
    EXPECT_EQ(s.lbr_from[0], 5u);
    EXPECT_EQ(s.lbr_to[0], 6u);
}

TEST(PmuLbr, InterruptsSetTheLastExceptionRecord)
{
    Regs s;
    pmu_reset(nehalem(), &s.r);
    s.debugctl = 1;
    pmu_lbr_record(nehalem(), &s.r, PMU_LBR_JCC, false, 0x1000, 0x2000, 1);
    pmu_lbr_event(nehalem(), &s.r, false, 0x2004, 0xffffffff81000000ull);
    // LER: the last branch before the event, without the flag
    EXPECT_EQ(s.ler_from, 0x1000u);
    EXPECT_EQ(s.ler_to, 0x2000u);
    // the event: a far branch from where it came to the handler
    EXPECT_EQ(s.lbr_tos, 2u);
    EXPECT_EQ(s.lbr_from[2], 0x2004u);
    EXPECT_EQ(s.lbr_to[2], 0xffffffff81000000ull);
    // LBR_SELECT FAR leaves the event out, LER still takes the branch
    s.lbr_select = PMU_LBR_FAR;
    pmu_lbr_record(nehalem(), &s.r, PMU_LBR_JCC, false, 0x3000, 0x4000, 0);
    pmu_lbr_event(nehalem(), &s.r, false, 0x4000, 0x5000);
    EXPECT_EQ(s.lbr_tos, 3u);
    EXPECT_EQ(s.ler_from, 0x3000u);
    EXPECT_EQ(s.ler_to, 0x4000u);
}

TEST(PmuLbr, FreezeLbrsOnPmi)
{
    Regs s;
    pmu_reset(nehalem(), &s.r);
    s.global_ctrl = 1;
    // LBR alone: a PMI changes nothing
    s.debugctl = PMU_DEBUGCTL_LBR;
    EXPECT_FALSE(pmu_pmi_request(nehalem(), &s.r));
    EXPECT_EQ(s.debugctl, PMU_DEBUGCTL_LBR);
    // FREEZE_LBRS_ON_PMI clears LBR (SDM 18.5.3.1), not the counters
    s.debugctl = PMU_DEBUGCTL_LBR | PMU_DEBUGCTL_FREEZE_LBRS_ON_PMI;
    EXPECT_TRUE(pmu_pmi_request(nehalem(), &s.r));
    EXPECT_EQ(s.debugctl, PMU_DEBUGCTL_FREEZE_LBRS_ON_PMI);
    EXPECT_EQ(s.global_ctrl, 1u);
    EXPECT_FALSE(pmu_pmi_request(nehalem(), &s.r));
}
