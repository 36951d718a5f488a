// qemu-lwp engine: the registers of Intel architectural performance
// monitoring (SDM Vol. 3B 18.13 and 18.17; pmu-engine.h)
//
// SPDX-License-Identifier: GPL-2.0-or-later

extern "C" {
#include "pmu-engine.h"
}
#include "lwp-engine.hh"

namespace
{

constexpr uint64_t bits(unsigned n)
{
    return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
}

} // namespace

struct PmuProfile {
    const char *name;
    uint8_t version;   // CPUID.0AH:EAX[7:0]
    uint8_t num_gp;    // EAX[15:8]
    uint8_t gp_width;  // EAX[23:16]
    uint8_t num_fixed; // EDX[4:0]
    uint8_t fixed_width; // EDX[12:5]
    // CPUID.0AH:EBX: a set bit is one of the seven architectural events
    // (SDM 18.13) that is NOT available; EAX[31:24] is its length
    uint8_t events_len;
    uint32_t events_unavailable;
    // IA32_PERF_CAPABILITIES (Vol. 4, Table 2-2)
    uint64_t perf_capabilities;
    // IA32_PERF_GLOBAL_OVF_CTRL bits beyond the counters' (SDM 18.17 for
    // the Core i7: 61 uncore, 62 DS buffer, 63 CondChgd)
    uint64_t ovf_ctrl_extra;
    // IA32_DEBUGCTL's defined bits (Vol. 3C, Table 35-2 for the Core i7:
    // LBR, BTF, TR, BTS, BTINT, BTS_OFF_OS, BTS_OFF_USR,
    // FREEZE_LBRS_ON_PMI, FREEZE_PERFMON_ON_PMI, ENABLE_UNCORE_PMI; not
    // FREEZE_WHILE_SMM, which needs PERF_CAPABILITIES[12])
    uint64_t debugctl_valid;
    // The data caches (pmu_cache_config)
    LwpCacheConfig cache;
    // The cycles a mispredicted branch costs (pmu_mispredict_penalty)
    uint32_t mispredict_penalty;
    // The entries of the LBR stack (pmu_lbr_depth), at the Core i7's
    // addresses (PMU_MSR_LBR_*)
    uint8_t lbr_depth;
    // The Branch Trace Store, with the 64-bit DS save area (pmu_has_bts)
    bool bts;
    // PEBS of record format 1 and load latency (pmu_has_pebs)
    bool pebs;
    // The P6 family's last branch records (17.14) in place of the Core
    // i7's stack; no counters (version 0)
    bool lbr_p6;
};

namespace
{

// Nehalem (Intel Core i7 and Xeon 5500, DisplayFamily_DisplayModel 06_1AH,
// 06_1EH, 06_1FH and 06_2EH, as the SDM's event chapter lists them; QEMU's
// "Nehalem" is 06_1AH).  Architectural performance monitoring version 3 with 4
// general-purpose and 3 fixed-function counters, all 48 bits wide: the
// CPUID 0AH EAX of a Core i5 750 (06_1EH) is 0x07300403 and its EDX
// 0x603.  That part's EBX is 0x44 (UnHalted Reference Cycles on a general
// counter and Branch Misses Retired unavailable, the latter for erratum
// AAJ80); here every one of the seven events is offered (EBX 0), since
// the cost and predictor models define both exactly (choice 57).
// PERF_CAPABILITIES 0x1c3 is the part's: LBR format 3 (64-bit LIP with
// the mispredict flag), PEBS trap and saved architectural registers,
// PEBS record format 1; no full-width counter writes (bit 13 clear), so
// IA32_A_PMCx do not exist.
// The data caches of one core of that part, as its CPUID leaf 4 reports
// them: L1D 32 KiB 8-way, L2 256 KiB 8-way, L3 8 MiB 16-way, all with
// 64-byte lines; load-to-use latencies of 4, 10 and 40 cycles (Intel's
// optimization manual gives 4, 10 and 35-40+ for Nehalem; 18.17.1.2 of
// the SDM: the minimum load latency is 4) and 200 for DRAM (no primary
// source: about 75 ns at the part's 2.66 GHz).
// A mispredicted branch costs 17 cycles: "at least 17 clock cycles",
// measured on Nehalem by Agner Fog (The microarchitecture of Intel, AMD
// and VIA CPUs, "Misprediction penalty"); Intel publishes none.
// The LBR stack has 16 entries (SDM 18.6.1, Table 18-8 in the seeds'
// edition: 06_1AH, 16, TOS 0 to 15).
// BTS with the 64-bit DS save area and CPL-qualified stores: a Core i7
// 920's CPUID leaf 1 has EDX bit 21 (DS) and ECX bits 2 (DTES64) and 4
// (DS-CPL), and its IA32_MISC_ENABLE bit 11 clear.
// PEBS as PERF_CAPABILITIES says (format 1, trap-like, the architectural
// registers saved; SDM 18.6.1.1) with load latency (18.17.1.2): the same
// part's IA32_MISC_ENABLE bit 12 is clear.
constexpr PmuProfile kNehalem = {
    "Nehalem", 3, 4, 48, 3, 48, 7, 0, 0x1c3,
    (uint64_t{1} << 61) | (uint64_t{1} << 62) | (uint64_t{1} << 63),
    0x3fc3,
    {3, 200, {{32u << 10, 8, 64, 4}, {256u << 10, 8, 64, 10},
              {8u << 20, 16, 64, 40}}},
    17,
    16,
    true,
    true,
    false,
};

// The P6 family (Pentium Pro, II and III: DisplayFamily_DisplayModel
// 06_01H, 03H, 05H, 06H, 07H, 08H, 0AH and 0BH; QEMU's "pentium2" is
// 06_05H, "pentium3" 06_07H): DEBUGCTLMSR with LBR, BTF, PB0-PB3 and TR
// (SDM 17.14.1, Figure 17-18), one LastBranchFromIP/ToIP pair and the
// LastExceptionFromIP/ToIP pair (17.14.2), 32-bit offsets without a
// mispredict flag.  Its counters (PerfCtr0/1, PerfEvtSel0/1) are not the
// architectural ones and are the CPU model's, as upstream.
constexpr PmuProfile kP6 = {
    "P6", 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0x7f,
    {},
    0,
    1,
    false,
    false,
    true,
};

// IA32_PERFEVTSELx: bits 31:0 are defined in version 3 (event select,
// unit mask, USR, OS, E, PC, INT, AnyThread, EN, INV, CMASK; SDM 18.13),
// bits 63:32 are reserved
constexpr uint64_t kEvtselValid = bits(32);

// The IA32_DEBUGCTL flags that are modelled: the rest of the defined bits
// (ENABLE_UNCORE_PMI) are ignored and read 0, as without a PMU
constexpr uint64_t kDebugctlModelled =
    PMU_DEBUGCTL_LBR | PMU_DEBUGCTL_BTF | PMU_DEBUGCTL_TR | PMU_DEBUGCTL_BTS |
    PMU_DEBUGCTL_BTINT | PMU_DEBUGCTL_BTS_OFF_OS | PMU_DEBUGCTL_BTS_OFF_USR |
    PMU_DEBUGCTL_FREEZE_LBRS_ON_PMI | PMU_DEBUGCTL_FREEZE_PERFMON_ON_PMI;

// An LBR address: bits 47:0, and bit 47's sign above them (SDM 18.6.1)
uint64_t lbr_canonical(uint64_t a)
{
    return static_cast<uint64_t>(static_cast<int64_t>(a << 16) >> 16);
}

uint64_t counter_mask(const PmuProfile *p, bool fixed)
{
    return bits(fixed ? p->fixed_width : p->gp_width);
}

// IA32_PERF_GLOBAL_CTRL and the counter bits of the status: one bit per
// general-purpose counter from bit 0, per fixed counter from bit 32
uint64_t counter_bits(const PmuProfile *p)
{
    return bits(p->num_gp) | (bits(p->num_fixed) << 32);
}

// IA32_FIXED_CTR_CTRL: per fixed counter i, bits 4i+3:4i are its enable
// field (OS, USR), AnyThread (version 3) and PMI (SDM 18.13)
uint64_t fixed_ctrl_valid(const PmuProfile *p)
{
    return bits(4 * p->num_fixed);
}

// What an MSR address is to a profile
enum class Reg {
    kNotMine, // not a performance-monitoring MSR
    kAbsent,  // one the architecture has and the profile lacks: #GP
    kPmc,
    kFullWidthPmc,
    kEvtsel,
    kFixed,
    kCapabilities,
    kFixedCtrl,
    kStatus,
    kCtrl,
    kOvfCtrl,
    kDebugctl,
    kLbrFrom,
    kLbrTo,
    kLbrTos,
    kLbrSelect,
    kLerFrom,
    kLerTo,
    kDsArea,
    kPebsEnable,
    kPebsLdLat,
};

// The P6 family's: DEBUGCTLMSR and the two pairs, nothing else
Reg decode_p6(uint32_t msr, unsigned *index)
{
    *index = 0;
    switch (msr) {
    case PMU_MSR_DEBUGCTL:
        return Reg::kDebugctl;
    case PMU_MSR_P6_LBR_FROM:
        return Reg::kLbrFrom;
    case PMU_MSR_P6_LBR_TO:
        return Reg::kLbrTo;
    case PMU_MSR_LER_FROM:
        return Reg::kLerFrom;
    case PMU_MSR_LER_TO:
        return Reg::kLerTo;
    default:
        return Reg::kNotMine;
    }
}

// @msr as a register of @p, and its counter index in *@index
Reg decode(const PmuProfile *p, uint32_t msr, unsigned *index)
{
    struct Range {
        uint32_t base;
        unsigned arch, have;
        Reg reg;
    };
    bool full_width = p->perf_capabilities & (uint64_t{1} << 13);

    if (p->lbr_p6) {
        return decode_p6(msr, index);
    }
    const Range ranges[] = {
        {PMU_MSR_PMC0, PMU_ARCH_GP, p->num_gp, Reg::kPmc},
        // the full-width aliases exist only with PERF_CAPABILITIES[13]
        {PMU_MSR_A_PMC0, PMU_ARCH_GP, full_width ? p->num_gp : 0u,
         Reg::kFullWidthPmc},
        {PMU_MSR_PERFEVTSEL0, PMU_ARCH_GP, p->num_gp, Reg::kEvtsel},
        {PMU_MSR_FIXED_CTR0, PMU_ARCH_FIXED, p->num_fixed, Reg::kFixed},
        // the Core i7's LBR stack: MSRs beyond its depth do not exist
        // (the next 16 addresses are the Sandy Bridge's 32-entry stack's)
        {PMU_MSR_LBR_FROM0, 32, p->lbr_depth, Reg::kLbrFrom},
        {PMU_MSR_LBR_TO0, 32, p->lbr_depth, Reg::kLbrTo},
    };

    for (const Range &r : ranges) {
        if (msr >= r.base && msr < r.base + r.arch) {
            *index = msr - r.base;
            return *index < r.have ? r.reg : Reg::kAbsent;
        }
    }
    switch (msr) {
    case PMU_MSR_PERF_CAPABILITIES:
        return Reg::kCapabilities;
    case PMU_MSR_FIXED_CTR_CTRL:
        return Reg::kFixedCtrl;
    case PMU_MSR_GLOBAL_STATUS:
        return Reg::kStatus;
    case PMU_MSR_GLOBAL_CTRL:
        return Reg::kCtrl;
    case PMU_MSR_GLOBAL_OVF_CTRL:
        return Reg::kOvfCtrl;
    case PMU_MSR_DEBUGCTL:
        return Reg::kDebugctl;
    case PMU_MSR_LBR_TOS:
        return p->lbr_depth ? Reg::kLbrTos : Reg::kNotMine;
    case PMU_MSR_LBR_SELECT:
        return p->lbr_depth ? Reg::kLbrSelect : Reg::kNotMine;
    case PMU_MSR_LER_FROM:
        return p->lbr_depth ? Reg::kLerFrom : Reg::kNotMine;
    case PMU_MSR_LER_TO:
        return p->lbr_depth ? Reg::kLerTo : Reg::kNotMine;
    case PMU_MSR_DS_AREA:
        return p->bts || p->pebs ? Reg::kDsArea : Reg::kNotMine;
    case PMU_MSR_PEBS_ENABLE:
        return p->pebs ? Reg::kPebsEnable : Reg::kNotMine;
    case PMU_MSR_PEBS_LD_LAT:
        return p->pebs ? Reg::kPebsLdLat : Reg::kNotMine;
    case PMU_MSR_GLOBAL_STATUS_SET:
    case PMU_MSR_GLOBAL_INUSE:
        return p->version >= 4 ? Reg::kNotMine : Reg::kAbsent;
    default:
        return Reg::kNotMine;
    }
}

// IA32_PERFEVTSELx fields (SDM 18.13)
constexpr uint64_t kEvtselUsr = uint64_t{1} << 16;
constexpr uint64_t kEvtselOs = uint64_t{1} << 17;
constexpr uint64_t kEvtselEdge = uint64_t{1} << 18;
constexpr uint64_t kEvtselInt = uint64_t{1} << 20;
constexpr uint64_t kEvtselEn = uint64_t{1} << 22;
constexpr uint64_t kEvtselInv = uint64_t{1} << 23;
constexpr unsigned kEvtselCmaskShift = 24;

// One event of the table: event select, unit mask, what it counts
struct Event {
    uint8_t select, umask, source, kinds;
};

// Nehalem's events that the model counts: the seven architectural ones
// (SDM Appendix A, Table A-1) and those of the Core i7 list (Table A-2)
// whose source the event layer has.  Umask bits of BR_INST_RETIRED and
// BR_MISP_RETIRED combine; the others are matched whole.
constexpr Event kNehalemEvents[] = {
    {0x3c, 0x00, PMU_SRC_CYCLES, 0},     // UnHalted Core Cycles
    {0x3c, 0x01, PMU_SRC_REF_CYCLES, 0}, // UnHalted Reference Cycles
    {0xc0, 0x00, PMU_SRC_INSN, 0},       // INST_RETIRED.ANY_P
    {0x2e, 0x4f, PMU_SRC_LLC_REF, 0},    // LLC Reference
    {0x2e, 0x41, PMU_SRC_LLC_MISS, 0},   // LLC Misses
    {0xc4, 0x00, PMU_SRC_BRANCH, PMU_BR_ALL},      // Branch Instruction Retired
    {0xc5, 0x00, PMU_SRC_BRANCH_MISP, PMU_BR_ALL}, // Branch Misses Retired
    {0x0b, 0x01, PMU_SRC_LOADS, 0},      // MEM_INST_RETIRED.LOADS
    {0x0b, 0x02, PMU_SRC_STORES, 0},     // MEM_INST_RETIRED.STORES
    {0xcb, 0x01, PMU_SRC_LOAD_LEVEL, PMU_LEVEL_L1}, // MEM_LOAD_RETIRED.L1D_HIT
    {0xcb, 0x02, PMU_SRC_LOAD_LEVEL, PMU_LEVEL_L2}, // .L2_HIT
    {0xcb, 0x04, PMU_SRC_LOAD_LEVEL, PMU_LEVEL_L3}, // .L3_UNSHARED_HIT
    // .OTHER_CORE_L2_HIT_HITM: no vCPU's cache holds another's lines
    {0xcb, 0x08, PMU_SRC_LOAD_LEVEL, 0},
    {0xcb, 0x10, PMU_SRC_LOAD_LEVEL, PMU_LEVEL_DRAM}, // .L3_MISS
    // MEM_INST_RETIRED.LATENCY_ABOVE_THRESHOLD (SDM 18.17.1.2)
    {0x0b, 0x10, PMU_SRC_LOAD_LATENCY, 0},
};

// The events of the Core i7's PEBS list (SDM 18.6.1.1, the table "PEBS
// Performance Events for Intel Core i7 Processor Family") that the model
// counts: INST_RETIRED,
// BR_INST_RETIRED, BR_MISP_RETIRED, MEM_LOAD_RETIRED and MEM_INST_RETIRED,
// by event select, whatever the unit mask and modifiers (Linux samples
// cycles precisely as INST_RETIRED with INV and CMASK 16)
bool pebs_event(uint64_t evtsel)
{
    switch (evtsel & 0xff) {
    case 0xc0:
    case 0xc4:
    case 0xc5:
    case 0xcb:
    case 0x0b:
        return true;
    default:
        return false;
    }
}

// IA32_PEBS_ENABLE's defined bits: PEBS_EN_PMCx and LL_EN_PMCx
uint64_t pebs_enable_valid(const PmuProfile *p)
{
    return bits(p->num_gp) | bits(p->num_gp) << PMU_PEBS_LL_SHIFT;
}

// BR_INST_RETIRED's (C4H) and BR_MISP_RETIRED's (C5H) unit mask bits:
// 01H CONDITIONAL, 02H NEAR_CALL, 04H ALL_BRANCHES (Table A-2)
uint8_t branch_kinds(uint8_t umask)
{
    uint8_t kinds = 0;

    if (umask & 0x01) {
        kinds |= PMU_BR_COND;
    }
    if (umask & 0x02) {
        kinds |= PMU_BR_CALL;
    }
    if (umask & 0x04) {
        kinds |= PMU_BR_ALL;
    }
    return umask & ~0x07u ? 0 : kinds;
}

// What event select @select with unit mask @umask counts
PmuCount decode_event(const PmuProfile *, uint8_t select, uint8_t umask)
{
    PmuCount c = {};

    if ((select == 0xc4 || select == 0xc5) && umask) {
        c.kinds = branch_kinds(umask);
        if (c.kinds) {
            c.source = select == 0xc4 ? PMU_SRC_BRANCH : PMU_SRC_BRANCH_MISP;
            c.known = true;
        }
        return c;
    }
    for (const Event &e : kNehalemEvents) {
        if (e.select == select && e.umask == umask) {
            c.source = e.source;
            c.kinds = e.kinds;
            c.known = true;
            break;
        }
    }
    return c;
}

} // namespace

extern "C" {

const PmuProfile *pmu_profile_find(bool intel, uint32_t family,
                                   uint32_t model)
{
    if (!intel || family != 6) {
        return nullptr;
    }
    switch (model) {
    case 0x1a:
    case 0x1e:
    case 0x1f:
    case 0x2e:
        return &kNehalem;
    case 0x01:
    case 0x03:
    case 0x05:
    case 0x06:
    case 0x07:
    case 0x08:
    case 0x0a:
    case 0x0b:
        return &kP6;
    default:
        return nullptr;
    }
}

const char *pmu_profile_name(const PmuProfile *p)
{
    return p->name;
}

void pmu_cache_config(const PmuProfile *p, LwpCacheConfig *cfg)
{
    *cfg = p->cache;
}

uint32_t pmu_mispredict_penalty(const PmuProfile *p)
{
    return p->mispredict_penalty;
}

bool pmu_has_counters(const PmuProfile *p)
{
    return p->version != 0;
}

unsigned pmu_num_gp(const PmuProfile *p)
{
    return p->num_gp;
}

unsigned pmu_num_fixed(const PmuProfile *p)
{
    return p->num_fixed;
}

uint64_t pmu_gp_counter_mask(const PmuProfile *p)
{
    return counter_mask(p, false);
}

void pmu_cpuid_0a(const PmuProfile *p, uint32_t *eax, uint32_t *ebx,
                  uint32_t *ecx, uint32_t *edx)
{
    *eax = p->version | uint32_t{p->num_gp} << 8 |
           uint32_t{p->gp_width} << 16 | uint32_t{p->events_len} << 24;
    *ebx = p->events_unavailable;
    *ecx = 0;
    *edx = p->num_fixed | uint32_t{p->fixed_width} << 5;
}

uint64_t pmu_misc_enable_bits(const PmuProfile *p)
{
    // the P6 family has no IA32_MISC_ENABLE bits of these
    if (!p->version) {
        return 0;
    }
    return PMU_MISC_ENABLE_PERF_AVAIL |
           (p->bts ? 0 : PMU_MISC_ENABLE_BTS_UNAVAIL) |
           (p->pebs ? 0 : PMU_MISC_ENABLE_PEBS_UNAVAIL);
}

void pmu_reset(const PmuProfile *p, const PmuRegs *r)
{
    for (unsigned i = 0; i < p->num_gp; i++) {
        r->gp_counter[i] = 0;
        r->gp_evtsel[i] = 0;
    }
    for (unsigned i = 0; i < p->num_fixed; i++) {
        r->fixed_counter[i] = 0;
    }
    *r->fixed_ctr_ctrl = 0;
    *r->global_status = 0;
    *r->debugctl = 0;
    // MSR_LBR_SELECT is 0 at RESET (SDM 18.6.2), so is the rest here
    for (unsigned i = 0; i < p->lbr_depth; i++) {
        r->lbr_from[i] = 0;
        r->lbr_to[i] = 0;
    }
    if (p->lbr_depth) {
        // (the P6 family has neither: they stay 0)
        *r->lbr_tos = 0;
        *r->lbr_select = 0;
        *r->ler_from = 0;
        *r->ler_to = 0;
    }
    if (p->bts || p->pebs) {
        *r->ds_area = 0;
    }
    if (p->pebs) {
        *r->pebs_enable = 0;
        *r->pebs_ld_lat = 0;
        *r->pebs_armed = 0;
    }
    // At RESET the general-purpose counters' enable bits are set, so that
    // software written for version 1 counts without knowing of this
    // register (SDM 18.13; KVM does the same); the fixed counters' are
    // clear
    *r->global_ctrl = bits(p->num_gp);
}

bool pmu_owns_msr(const PmuProfile *p, uint32_t msr)
{
    unsigned i = 0;

    return decode(p, msr, &i) != Reg::kNotMine;
}

PmuStatus pmu_rdmsr(const PmuProfile *p, const PmuRegs *r, uint32_t msr,
                    uint64_t *val)
{
    unsigned i = 0;

    switch (decode(p, msr, &i)) {
    case Reg::kNotMine:
        return PMU_NOT_MINE;
    case Reg::kAbsent:
        return PMU_GP;
    case Reg::kPmc:
    case Reg::kFullWidthPmc:
        *val = r->gp_counter[i];
        break;
    case Reg::kEvtsel:
        *val = r->gp_evtsel[i];
        break;
    case Reg::kFixed:
        *val = r->fixed_counter[i];
        break;
    case Reg::kCapabilities:
        *val = p->perf_capabilities;
        break;
    case Reg::kFixedCtrl:
        *val = *r->fixed_ctr_ctrl;
        break;
    case Reg::kStatus:
        *val = *r->global_status;
        break;
    case Reg::kCtrl:
        *val = *r->global_ctrl;
        break;
    case Reg::kOvfCtrl:
        // write-only in effect: its bits clear the status (SDM 18.13),
        // and it reads 0, as KVM's does
        *val = 0;
        break;
    case Reg::kDebugctl:
        *val = *r->debugctl;
        break;
    case Reg::kLbrFrom:
        *val = r->lbr_from[i];
        break;
    case Reg::kLbrTo:
        *val = r->lbr_to[i];
        break;
    case Reg::kLbrTos:
        *val = *r->lbr_tos;
        break;
    case Reg::kDsArea:
        *val = *r->ds_area;
        break;
    case Reg::kPebsEnable:
        *val = *r->pebs_enable;
        break;
    case Reg::kPebsLdLat:
        *val = *r->pebs_ld_lat;
        break;
    case Reg::kLbrSelect:
        *val = *r->lbr_select;
        break;
    case Reg::kLerFrom:
        *val = *r->ler_from;
        break;
    case Reg::kLerTo:
        *val = *r->ler_to;
        break;
    }
    return PMU_DONE;
}

PmuStatus pmu_wrmsr(const PmuProfile *p, const PmuRegs *r, uint32_t msr,
                    uint64_t val)
{
    unsigned i = 0;

    switch (decode(p, msr, &i)) {
    case Reg::kNotMine:
        return PMU_NOT_MINE;
    case Reg::kAbsent:
    case Reg::kCapabilities: // read-only
    case Reg::kStatus:       // read-only before version 4
        return PMU_GP;
    case Reg::kPmc: {
        // Bits 31:0 are written and the bits above them are bit 31's sign
        // extension (SDM 18.13); EDX is ignored, which Linux relies on
        // when it writes -left & cntval_mask
        uint64_t sext = static_cast<uint64_t>(
            static_cast<int64_t>(static_cast<int32_t>(val)));
        r->gp_counter[i] = sext & counter_mask(p, false);
        // the overflow that armed PEBS is gone with the count
        if (p->pebs) {
            *r->pebs_armed &= ~(uint64_t{1} << i);
        }
        break;
    }
    case Reg::kFullWidthPmc:
        // Full-width writes (a later SDM's "Full-Width Writes to
        // Performance Counter Registers"): the whole width, #GP beyond it
        if (val & ~counter_mask(p, false)) {
            return PMU_GP;
        }
        r->gp_counter[i] = val;
        if (p->pebs) {
            *r->pebs_armed &= ~(uint64_t{1} << i);
        }
        break;
    case Reg::kEvtsel:
        if (val & ~kEvtselValid) {
            return PMU_GP;
        }
        r->gp_evtsel[i] = val;
        break;
    case Reg::kFixed:
        // The bits beyond the width are dropped, as KVM does (the SDM
        // does not say; Linux always writes within cntval_mask)
        r->fixed_counter[i] = val & counter_mask(p, true);
        break;
    case Reg::kFixedCtrl:
        if (val & ~fixed_ctrl_valid(p)) {
            return PMU_GP;
        }
        *r->fixed_ctr_ctrl = val;
        break;
    case Reg::kCtrl:
        if (val & ~counter_bits(p)) {
            return PMU_GP;
        }
        *r->global_ctrl = val;
        break;
    case Reg::kOvfCtrl:
        if (val & ~(counter_bits(p) | p->ovf_ctrl_extra)) {
            return PMU_GP;
        }
        *r->global_status &= ~val;
        break;
    case Reg::kDebugctl:
        if (val & ~p->debugctl_valid) {
            return PMU_GP;
        }
        // the P6 family's PB0-PB3 and TR read back, and do nothing here
        *r->debugctl = p->lbr_p6 ? val : val & kDebugctlModelled;
        break;
    // The SDM's tables give the stack's MSRs as read-only, but software
    // writes them: Linux clears the stack with WRMSR and, in a guest,
    // checks that each one takes a value (check_msr); so they take one
    // in the format the processor writes (choice 72), #GP otherwise
    case Reg::kLbrFrom:
        // the P6 family's pair: "These registers can be read using the
        // RDMSR instruction" (17.14.2); nothing writes them
        if (p->lbr_p6) {
            return PMU_GP;
        }
        if ((val & ~PMU_LBR_FROM_MISPRED) !=
            (lbr_canonical(val) & ~PMU_LBR_FROM_MISPRED)) {
            return PMU_GP;
        }
        r->lbr_from[i] = val;
        break;
    case Reg::kLbrTo:
        if (p->lbr_p6 || val != lbr_canonical(val)) {
            return PMU_GP;
        }
        r->lbr_to[i] = val;
        break;
    case Reg::kLbrTos:
        if (val >= p->lbr_depth) {
            return PMU_GP;
        }
        *r->lbr_tos = val;
        break;
    case Reg::kLbrSelect:
        if (val & ~uint64_t{PMU_LBR_SELECT_VALID}) {
            return PMU_GP;
        }
        *r->lbr_select = val;
        break;
    case Reg::kLerFrom: // read-only
    case Reg::kLerTo:
        return PMU_GP;
    case Reg::kDsArea:
        // a linear address: #GP unless canonical (Vol. 4, IA32_DS_AREA)
        if (val != lbr_canonical(val)) {
            return PMU_GP;
        }
        *r->ds_area = val;
        break;
    case Reg::kPebsEnable:
        if (val & ~pebs_enable_valid(p)) {
            return PMU_GP;
        }
        *r->pebs_enable = val;
        *r->pebs_armed &= val;
        break;
    case Reg::kPebsLdLat:
        // bits 15:0, the threshold in core cycles, the rest reserved (SDM
        // 18.17.1.2, Figure "Layout of MSR_PEBS_LD_LAT MSR"); the SDM's
        // minimum, 3, needs no rule: no load of the model takes fewer
        // than 4 cycles
        if (val & ~bits(16)) {
            return PMU_GP;
        }
        *r->pebs_ld_lat = val;
        break;
    }
    return PMU_DONE;
}

PmuStatus pmu_rdpmc(const PmuProfile *p, const PmuRegs *r, uint32_t ecx,
                    uint64_t *val)
{
    // With architectural performance monitoring, ECX[31:16] is the type
    // (0: general-purpose, 4000H: fixed-function) and ECX[15:0] the index
    // within it; any other type, and an index the profile does not have,
    // raise #GP (Vol. 2B, RDPMC).  There is no "fast" read.
    uint32_t type = ecx >> 16;
    uint32_t index = ecx & 0xffff;

    if (type == 0 && index < p->num_gp) {
        *val = r->gp_counter[index];
        return PMU_DONE;
    }
    if (type == 0x4000 && index < p->num_fixed) {
        *val = r->fixed_counter[index];
        return PMU_DONE;
    }
    return PMU_GP;
}

// What counter @c counts with EDGE, INV and CMASK (SDM 18.2.1.1, choice
// 66), per cycle of the cost model: an instruction retires in its first
// cycle, a branch's second cycle retires nothing, so a cycle holds at
// most one retired instruction, branch and mispredicted branch, and each
// cycle is one of the cycle sources.  With CMASK c, a cycle counts when
// its events number at least c (INV: fewer than c); with CMASK 0, INV is
// ignored, and EDGE takes the cycles with an event.  EDGE counts the
// cycles that count after one that does not.  Each combination is a
// plain source, a known 0, or not modelled (it counts 0 as well).  With
// @stalls (the detailed cost model, choice 69), cycles in which nothing
// retires also follow loads and mispredicted branches: the cycles without
// an instruction or a branch (INV with CMASK 1, with or without EDGE) are
// no longer a sum of events, and are not modelled.
static PmuCount per_cycle(PmuCount c, bool edge, bool inv, unsigned cmask,
                          bool stalls)
{
    PmuCount zero = {}, all = {}, no_event = {};
    bool cycles = c.source == PMU_SRC_CYCLES || c.source == PMU_SRC_REF_CYCLES;
    bool branches = c.source == PMU_SRC_BRANCH ||
                    c.source == PMU_SRC_BRANCH_MISP;

    if (!c.known || (!cycles && !branches && c.source != PMU_SRC_INSN)) {
        return PmuCount{};
    }
    if (stalls && inv && cmask == 1 && !cycles) {
        return PmuCount{};
    }
    if (!cmask) {
        if (!edge) {
            return c;
        }
        cmask = 1;
        inv = false;
    }
    zero.known = true;
    all.source = PMU_SRC_CYCLES;
    all.known = true;
    // the cycles without the event: a branch's second cycle for
    // instructions; for all branches, the instructions' other cycles
    if (c.source == PMU_SRC_INSN) {
        no_event.source = PMU_SRC_BRANCH;
        no_event.kinds = PMU_BR_ALL;
        no_event.known = true;
    } else if (c.source == PMU_SRC_BRANCH && c.kinds == PMU_BR_ALL) {
        no_event.source = PMU_SRC_INSN;
        no_event.known = true;
    } else if (cycles) {
        no_event = zero;
    }
    if (cmask >= 2) {
        // never that many events in a cycle: no cycle, or every cycle
        return !inv ? zero : edge ? PmuCount{} : all;
    }
    if (!inv) {
        // each branch's cycle follows one without it; an instruction's
        // may follow another's, and a cycle always follows a cycle
        return !edge ? (cycles ? all : c) : branches ? c : PmuCount{};
    }
    // a branch's second cycle always follows its first
    return !edge || c.source == PMU_SRC_INSN || cycles ? no_event
                                                         : PmuCount{};
}

PmuCount pmu_count_gp(const PmuProfile *p, const PmuRegs *r, unsigned i)
{
    uint64_t sel = r->gp_evtsel[i];
    PmuCount c = decode_event(p, sel & 0xff, (sel >> 8) & 0xff);

    if (sel & (kEvtselEdge | kEvtselInv | uint64_t{0xff} << kEvtselCmaskShift)) {
        c = per_cycle(c, sel & kEvtselEdge, sel & kEvtselInv,
                      (sel >> kEvtselCmaskShift) & 0xff, r->stalls);
    }
    c.pmi = sel & kEvtselInt;
    if ((sel & kEvtselEn) && (*r->global_ctrl & (uint64_t{1} << i))) {
        c.cpl = (sel & kEvtselOs ? PMU_CPL0 : 0) |
                (sel & kEvtselUsr ? PMU_CPL123 : 0);
    }
    if (!c.known) {
        c.source = PMU_SRC_NONE;
    }
    return c;
}

PmuCount pmu_count_fixed(const PmuProfile *p, const PmuRegs *r, unsigned i)
{
    // IA32_FIXED_CTR0 counts INST_RETIRED.ANY, 1 CPU_CLK_UNHALTED.CORE,
    // 2 CPU_CLK_UNHALTED.REF (SDM 18.13, Table A-1's fixed counters)
    static const uint8_t kFixedSource[] = {
        PMU_SRC_INSN, PMU_SRC_CYCLES, PMU_SRC_REF_CYCLES,
    };
    uint64_t field = *r->fixed_ctr_ctrl >> (4 * i);
    PmuCount c = {};

    (void)p;
    c.source = kFixedSource[i];
    c.known = true;
    c.pmi = field & 8;
    if (*r->global_ctrl & (uint64_t{1} << (32 + i))) {
        c.cpl = (field & 1 ? PMU_CPL0 : 0) | (field & 2 ? PMU_CPL123 : 0);
    }
    return c;
}

uint64_t pmu_until_overflow(const PmuProfile *p, const PmuRegs *r,
                            bool fixed, unsigned i)
{
    uint64_t value = fixed ? r->fixed_counter[i] : r->gp_counter[i];

    // an armed PEBS counter: its next event is its PEBS event
    if (!fixed && p->pebs && (*r->pebs_armed & (uint64_t{1} << i))) {
        return 1;
    }
    return counter_mask(p, fixed) - value + 1;
}

bool pmu_add(const PmuProfile *p, const PmuRegs *r, bool fixed, unsigned i,
             uint64_t n)
{
    uint64_t *value = fixed ? &r->fixed_counter[i] : &r->gp_counter[i];
    bool overflow = *value + n > counter_mask(p, fixed);

    *value = (*value + n) & counter_mask(p, fixed);
    if (overflow) {
        *r->global_status |= uint64_t{1} << (fixed ? 32 + i : i);
    }
    return overflow;
}

void pmu_sub(const PmuProfile *p, const PmuRegs *r, bool fixed, unsigned i,
             uint64_t n)
{
    uint64_t *value = fixed ? &r->fixed_counter[i] : &r->gp_counter[i];

    if (n > *value) {
        *r->global_status &= ~(uint64_t{1} << (fixed ? 32 + i : i));
        if (!fixed && p->pebs) {
            *r->pebs_armed &= ~(uint64_t{1} << i);
        }
    }
    *value = (*value - n) & counter_mask(p, fixed);
}

bool pmu_pmi_request(const PmuProfile *, const PmuRegs *r)
{
    bool changed = false;

    if ((*r->debugctl & PMU_DEBUGCTL_FREEZE_LBRS_ON_PMI) &&
        (*r->debugctl & PMU_DEBUGCTL_LBR)) {
        *r->debugctl &= ~PMU_DEBUGCTL_LBR;
        changed = true;
    }
    if ((*r->debugctl & PMU_DEBUGCTL_FREEZE_PERFMON_ON_PMI) &&
        *r->global_ctrl) {
        *r->global_ctrl = 0;
        changed = true;
    }
    return changed;
}

unsigned pmu_lbr_depth(const PmuProfile *p)
{
    return p->lbr_depth;
}

bool pmu_lbr_has_mispredict(const PmuProfile *p)
{
    return !p->lbr_p6;
}

bool pmu_lbr_records_at(const PmuProfile *p, const PmuRegs *r, bool cpl0)
{
    return p->lbr_depth && (*r->debugctl & PMU_DEBUGCTL_LBR) &&
           !(*r->lbr_select & (cpl0 ? PMU_LBR_CPL_EQ_0 : PMU_LBR_CPL_NEQ_0));
}

void pmu_lbr_record(const PmuProfile *p, const PmuRegs *r, unsigned kind,
                    bool cpl0, uint64_t from, uint64_t to, bool misp)
{
    unsigned tos;

    if (!pmu_lbr_records_at(p, r, cpl0) || (*r->lbr_select & kind)) {
        return;
    }
    tos = (*r->lbr_tos + 1) % p->lbr_depth;
    *r->lbr_tos = tos;
    r->lbr_from[tos] = (lbr_canonical(from) & ~PMU_LBR_FROM_MISPRED) |
                       (misp && !p->lbr_p6 ? PMU_LBR_FROM_MISPRED : 0);
    r->lbr_to[tos] = lbr_canonical(to);
}

void pmu_lbr_event(const PmuProfile *p, const PmuRegs *r, bool cpl0,
                   uint64_t from, uint64_t to)
{
    if (!p->lbr_depth || !(*r->debugctl & PMU_DEBUGCTL_LBR)) {
        return;
    }
    *r->ler_from = lbr_canonical(r->lbr_from[*r->lbr_tos]);
    *r->ler_to = r->lbr_to[*r->lbr_tos];
    pmu_lbr_record(p, r, PMU_LBR_FAR, cpl0, from, to, false);
}

bool pmu_has_bts(const PmuProfile *p)
{
    return p->bts;
}

bool pmu_bts_records_at(const PmuProfile *p, const PmuRegs *r, bool cpl0)
{
    uint64_t d = *r->debugctl;

    return p->bts && (d & PMU_DEBUGCTL_TR) && (d & PMU_DEBUGCTL_BTS) &&
           !(d & (cpl0 ? PMU_DEBUGCTL_BTS_OFF_OS : PMU_DEBUGCTL_BTS_OFF_USR));
}

PmuBtsStore pmu_bts_store(const PmuRegs *r, uint64_t base, uint64_t index,
                          uint64_t max, uint64_t threshold)
{
    PmuBtsStore s = {false, index, false};

    // "fits": index + 24 <= max, without wrapping around 2^64
    if (index > max || max - index < PMU_BTS_RECORD_SIZE) {
        return s;
    }
    s.store = true;
    s.index = index + PMU_BTS_RECORD_SIZE;
    s.pmi = s.index >= threshold;
    if (max - s.index < PMU_BTS_RECORD_SIZE &&
        !(*r->debugctl & PMU_DEBUGCTL_BTINT)) {
        s.index = base;
    }
    return s;
}

bool pmu_has_pebs(const PmuProfile *p)
{
    return p->pebs;
}

bool pmu_pebs_event(const PmuProfile *p, const PmuRegs *r, unsigned i,
                    uint64_t n, bool overflowed)
{
    uint64_t bit = uint64_t{1} << i;

    if (!n || !p->pebs || !(*r->pebs_enable & bit) ||
        !pebs_event(r->gp_evtsel[i])) {
        return false;
    }
    if (*r->pebs_armed & bit) {
        return true;
    }
    if (!overflowed) {
        return false;
    }
    // the events after the overflow: its PEBS event is among them
    if (r->gp_counter[i]) {
        return true;
    }
    *r->pebs_armed |= bit;
    return false;
}

PmuBtsStore pmu_pebs_store(uint64_t index, uint64_t max, uint64_t threshold)
{
    PmuBtsStore s = {false, index, false};

    if (index > max || max - index < PMU_PEBS_RECORD_SIZE) {
        return s;
    }
    s.store = true;
    s.index = index + PMU_PEBS_RECORD_SIZE;
    s.pmi = s.index >= threshold;
    return s;
}

void pmu_pebs_done(const PmuProfile *p, const PmuRegs *r,
                   const uint64_t *reset, bool stored, bool pmi)
{
    if (stored) {
        // "After each PEBS record is written, the processor checks each
        // counter to see if it overflowed and was enabled for PEBS": the
        // reset value of each one is loaded (SDM 18.6.1.1), and its
        // overflow status cleared (18.17.1)
        uint64_t due = ((*r->global_status & bits(p->num_gp)) |
                        *r->pebs_armed) & *r->pebs_enable;

        for (unsigned i = 0; i < p->num_gp; i++) {
            uint64_t bit = uint64_t{1} << i;

            if ((due & bit) && pebs_event(r->gp_evtsel[i])) {
                r->gp_counter[i] = reset[i] & counter_mask(p, false);
                *r->global_status &= ~bit;
            }
        }
        if (pmi) {
            *r->global_status |= PMU_STATUS_OVF_BUFFER;
        }
    }
    *r->pebs_armed = 0;
}

uint64_t pmu_pebs_data_source(unsigned level)
{
    switch (level) {
    case PMU_LEVEL_L1:
        return 0x1; // "Minimal latency core cache hit", the L1 data cache
    case PMU_LEVEL_L2:
        return 0x3; // "satisfied by the L2"
    case PMU_LEVEL_L3:
        return 0x4; // "L3 HIT ... no coherency actions required"
    default:
        // "L3 MISS. Local home requests that missed the L3 cache and was
        // serviced by local DRAM (go to exclusive state)": one package,
        // and no other core holds the line
        return 0xc;
    }
}

uint32_t pmu_block_events(unsigned source, uint32_t n, bool branch)
{
    switch (source) {
    case PMU_SRC_INSN:
        return n;
    case PMU_SRC_BRANCH:
        return branch;
    case PMU_SRC_CYCLES:
    case PMU_SRC_REF_CYCLES:
        return n + branch;
    default:
        return 0;
    }
}

uint32_t pmu_event_insn(unsigned source, uint64_t event, uint32_t n)
{
    // instruction i (i < n) ends at event i, for instructions and cycles
    // alike; the last instruction takes the rest
    if (source == PMU_SRC_BRANCH || event >= n) {
        return n;
    }
    return event;
}

} // extern "C"
