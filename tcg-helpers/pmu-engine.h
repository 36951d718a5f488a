/*
 * qemu-lwp engine: Intel architectural performance monitoring
 *
 * The rules of the performance-monitoring registers of Intel SDM Vol. 3B
 * 18.13 ("Architectural Performance Monitoring", versions 1 to 3; the
 * section numbers are those of the edition in the project's seeds) and
 * 18.17 (Nehalem), for the CPU models that have a profile: how many
 * counters of which width CPUID 0AH reports, which MSRs exist, what WRMSR
 * may write to them and what RDMSR and RDPMC read.  Like lwp-engine.h it
 * is plain C, implemented in C++17, and keeps no state: the registers are
 * the CPU state's, which PmuRegs points at; C++ includes it in an
 * extern "C" block.  "SDM" below is Vol. 3B unless it says otherwise;
 * "Vol. 4" is its MSR tables.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef PMU_ENGINE_H
#define PMU_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

/* Architectural MSR addresses (Vol. 4, Table 2-2) */
#define PMU_MSR_PMC0 0xc1               /* IA32_PMC0 .. IA32_PMC7 */
#define PMU_MSR_PERFEVTSEL0 0x186       /* IA32_PERFEVTSEL0 .. 7 */
#define PMU_MSR_FIXED_CTR0 0x309        /* IA32_FIXED_CTR0 .. 3 */
#define PMU_MSR_PERF_CAPABILITIES 0x345 /* IA32_PERF_CAPABILITIES */
#define PMU_MSR_FIXED_CTR_CTRL 0x38d    /* IA32_FIXED_CTR_CTRL */
#define PMU_MSR_GLOBAL_STATUS 0x38e     /* IA32_PERF_GLOBAL_STATUS */
#define PMU_MSR_GLOBAL_CTRL 0x38f       /* IA32_PERF_GLOBAL_CTRL */
#define PMU_MSR_GLOBAL_OVF_CTRL 0x390   /* IA32_PERF_GLOBAL_OVF_CTRL */
#define PMU_MSR_GLOBAL_STATUS_SET 0x391 /* version 4 */
#define PMU_MSR_GLOBAL_INUSE 0x392      /* version 4 */
#define PMU_MSR_A_PMC0 0x4c1            /* IA32_A_PMC0 .. 7, full width */
#define PMU_MSR_DEBUGCTL 0x1d9          /* IA32_DEBUGCTL */
#define PMU_MSR_DS_AREA 0x600           /* IA32_DS_AREA */
#define PMU_MSR_PEBS_ENABLE 0x3f1       /* IA32_PEBS_ENABLE */
#define PMU_MSR_PEBS_LD_LAT 0x3f6       /* MSR_PEBS_LD_LAT_THRESHOLD */

/*
 * The last branch records of the Core i7 (SDM 18.6.1 and 18.6.2; Vol. 3C
 * Table 35-2): MSR_LBR_SELECT, MSR_LASTBRANCH_TOS, MSR_LER_FROM_LIP and
 * MSR_LER_TO_LIP, and the FROM and TO halves of the stack's entries
 */
#define PMU_MSR_LBR_SELECT 0x1c8
#define PMU_MSR_LBR_TOS 0x1c9
#define PMU_MSR_LER_FROM 0x1dd
#define PMU_MSR_LER_TO 0x1de
#define PMU_MSR_LBR_FROM0 0x680
#define PMU_MSR_LBR_TO0 0x6c0
/*
 * The P6 family's one pair (SDM 17.14; "MSRs in the P6 Family
 * Processors", Appendix B.8 of the seeds' edition): LastBranchFromIP and
 * LastBranchToIP; LastExceptionFromIP and LastExceptionToIP are at the
 * Core i7's MSR_LER_* addresses
 */
#define PMU_MSR_P6_LBR_FROM 0x1db
#define PMU_MSR_P6_LBR_TO 0x1dc
/* The deepest LBR stack of a profile: the CPU state's arrays hold these */
#define PMU_MAX_LBR 16
/* MSR_LBR_SELECT: each set bit leaves those branches out (SDM 18.6.2) */
#define PMU_LBR_CPL_EQ_0 (1u << 0)      /* taken at CPL 0 */
#define PMU_LBR_CPL_NEQ_0 (1u << 1)     /* taken at CPL 1, 2 or 3 */
#define PMU_LBR_JCC (1u << 2)           /* Jcc, JrCXZ, LOOPcc */
#define PMU_LBR_NEAR_REL_CALL (1u << 3)
#define PMU_LBR_NEAR_IND_CALL (1u << 4)
#define PMU_LBR_NEAR_RET (1u << 5)
#define PMU_LBR_NEAR_IND_JMP (1u << 6)
#define PMU_LBR_NEAR_REL_JMP (1u << 7)
/* far JMP, CALL and RET, IRET, SYSCALL ..., interrupts and exceptions */
#define PMU_LBR_FAR (1u << 8)
#define PMU_LBR_SELECT_VALID 0x1ffu
/* A FROM entry's flag: the predictor model mispredicted the branch */
#define PMU_LBR_FROM_MISPRED (1ull << 63)

/*
 * IA32_DEBUGCTL's flags: record last branches (SDM 18.6), single-step on
 * branches (SDM 17.4.3), store branch trace messages in the BTS buffer
 * (TR, BTS, BTINT, BTS_OFF_OS, BTS_OFF_USR: SDM 18.7.8), and freeze the
 * LBRs and the counters on a PMI (SDM 18.5.3.1)
 */
#define PMU_DEBUGCTL_LBR (1ull << 0)
#define PMU_DEBUGCTL_BTF (1ull << 1)
#define PMU_DEBUGCTL_TR (1ull << 6)
#define PMU_DEBUGCTL_BTS (1ull << 7)
#define PMU_DEBUGCTL_BTINT (1ull << 8)
#define PMU_DEBUGCTL_BTS_OFF_OS (1ull << 9)
#define PMU_DEBUGCTL_BTS_OFF_USR (1ull << 10)
#define PMU_DEBUGCTL_FREEZE_LBRS_ON_PMI (1ull << 11)
#define PMU_DEBUGCTL_FREEZE_PERFMON_ON_PMI (1ull << 12)

/* How many of each the architecture has room for at those addresses */
#define PMU_ARCH_GP 8
#define PMU_ARCH_FIXED 4

/* The most counters a profile has: the CPU state's arrays hold these */
#define PMU_MAX_GP 4
#define PMU_MAX_FIXED 3

/* IA32_MISC_ENABLE (Vol. 4, Table 2-2) */
#define PMU_MISC_ENABLE_PERF_AVAIL (1ull << 7)
#define PMU_MISC_ENABLE_BTS_UNAVAIL (1ull << 11)
#define PMU_MISC_ENABLE_PEBS_UNAVAIL (1ull << 12)

/* A CPU model's performance-monitoring profile; constant */
typedef struct PmuProfile PmuProfile;

/*
 * The profile of the CPU with this vendor and DisplayFamily and
 * DisplayModel (Vol. 2A, CPUID leaf 1), or NULL when it has none.
 */
const PmuProfile *pmu_profile_find(bool intel, uint32_t family,
                                   uint32_t model);
/* Its name, for messages and docs ("Nehalem") */
const char *pmu_profile_name(const PmuProfile *p);
/*
 * Whether it has counters, architectural performance monitoring: a P6
 * family profile has only the last branch records, and leaves the
 * counters' MSRs, RDPMC and CPUID to the CPU model (pmu_owns_msr)
 */
bool pmu_has_counters(const PmuProfile *p);
/* Its number of general-purpose and of fixed-function counters */
unsigned pmu_num_gp(const PmuProfile *p);
unsigned pmu_num_fixed(const PmuProfile *p);
/* The value a general-purpose counter wraps after: 2^width - 1 */
uint64_t pmu_gp_counter_mask(const PmuProfile *p);

/* CPUID leaf 0AH (SDM 18.13; Vol. 2A, CPUID) */
void pmu_cpuid_0a(const PmuProfile *p, uint32_t *eax, uint32_t *ebx,
                  uint32_t *ecx, uint32_t *edx);

/*
 * The geometry and latencies of the part's data caches, for the cache
 * model (lwp-engine.h, lwp_cache_*) behind the cache events: what a
 * CPU with this profile uses where its properties leave a field 0
 */
struct LwpCacheConfig;
void pmu_cache_config(const PmuProfile *p, struct LwpCacheConfig *cfg);

/*
 * IA32_MISC_ENABLE: the bits the profile sets at reset, all read-only
 * (Vol. 4: bit 7 "performance monitoring available", bits 11 and 12 "BTS
 * and PEBS unavailable" for those the profile lacks)
 */
uint64_t pmu_misc_enable_bits(const PmuProfile *p);

/*
 * The registers, in the CPU state.  Arrays have the profile's number of
 * counters at least.
 */
typedef struct PmuRegs {
    uint64_t *gp_counter;     /* IA32_PMCx */
    uint64_t *gp_evtsel;      /* IA32_PERFEVTSELx */
    uint64_t *fixed_counter;  /* IA32_FIXED_CTRx */
    uint64_t *fixed_ctr_ctrl; /* IA32_FIXED_CTR_CTRL */
    uint64_t *global_ctrl;    /* IA32_PERF_GLOBAL_CTRL */
    uint64_t *global_status;  /* IA32_PERF_GLOBAL_STATUS */
    uint64_t *debugctl;       /* IA32_DEBUGCTL */
    uint64_t *lbr_from;       /* MSR_LASTBRANCH_x_FROM_IP */
    uint64_t *lbr_to;         /* MSR_LASTBRANCH_x_TO_IP */
    uint64_t *lbr_tos;        /* MSR_LASTBRANCH_TOS */
    uint64_t *lbr_select;     /* MSR_LBR_SELECT */
    uint64_t *ler_from;       /* MSR_LER_FROM_LIP */
    uint64_t *ler_to;         /* MSR_LER_TO_LIP */
    uint64_t *ds_area;        /* IA32_DS_AREA */
    uint64_t *pebs_enable;    /* IA32_PEBS_ENABLE */
    uint64_t *pebs_ld_lat;    /* MSR_PEBS_LD_LAT_THRESHOLD */
    /* Not a register: the counters whose overflow armed PEBS (pmu_pebs_*) */
    uint64_t *pebs_armed;
    /*
     * Not a register: the cost model has stall cycles, in which nothing
     * retires (pmu_cost_*), so EDGE, INV and CMASK see them
     */
    bool stalls;
} PmuRegs;

typedef enum PmuStatus {
    PMU_DONE = 0,  /* the access completed */
    PMU_GP,        /* it raises #GP(0) and changes nothing */
    PMU_NOT_MINE,  /* not a performance-monitoring MSR: the caller's */
} PmuStatus;

/*
 * The registers' values at RESET; INIT leaves them alone (Vol. 3A, Table
 * 9-1)
 */
void pmu_reset(const PmuProfile *p, const PmuRegs *r);

/*
 * Whether @msr is one of the performance-monitoring MSRs, which RDMSR
 * and WRMSR below answer with PMU_DONE or PMU_GP: the caller can leave
 * every other MSR alone without preparing the registers
 */
bool pmu_owns_msr(const PmuProfile *p, uint32_t msr);

/* RDMSR and WRMSR of @msr at CPL 0 */
PmuStatus pmu_rdmsr(const PmuProfile *p, const PmuRegs *r, uint32_t msr,
                    uint64_t *val);
PmuStatus pmu_wrmsr(const PmuProfile *p, const PmuRegs *r, uint32_t msr,
                    uint64_t val);

/*
 * RDPMC of the counter that @ecx selects (Vol. 2B, RDPMC), once the
 * caller has checked CR4.PCE and CPL: PMU_GP for a selector the profile
 * does not have; otherwise the counter's value in *@val.
 */
PmuStatus pmu_rdpmc(const PmuProfile *p, const PmuRegs *r, uint32_t ecx,
                    uint64_t *val);

/*
 * Counting.  What a counter counts, decoded from its controls: the event
 * table of the profile (SDM 18.13 for the architectural events, 18.17 and
 * the Core i7 event list for Nehalem's), the USR and OS filters and the
 * enables; EDGE, INV and CMASK against the cost model's cycles, which
 * turns each combination into a plain source or a known 0 (PMU_SRC_NONE
 * with known = true).  The source is what the event layer reports; an
 * event the model does not know, or a combination of modifiers it does
 * not model, gives PMU_SRC_NONE with known = false: the counter counts 0.
 */
typedef enum PmuSource {
    PMU_SRC_NONE = 0,
    PMU_SRC_INSN,        /* instructions retired */
    PMU_SRC_BRANCH,      /* branches retired, of the kinds in .kinds */
    PMU_SRC_BRANCH_MISP, /* the same, mispredicted (the predictor model) */
    PMU_SRC_CYCLES,      /* core cycles, unhalted (the cost model) */
    PMU_SRC_REF_CYCLES,  /* reference cycles, unhalted (the cost model) */
    PMU_SRC_LOADS,       /* load instructions retired */
    PMU_SRC_STORES,      /* store instructions retired */
    PMU_SRC_LOAD_LEVEL,  /* loads retired, by supplier (PMU_LEVEL_*) */
    PMU_SRC_LLC_REF,     /* references to the last-level cache */
    PMU_SRC_LLC_MISS,    /* misses in the last-level cache */
    /* loads retired whose latency exceeds MSR_PEBS_LD_LAT_THRESHOLD */
    PMU_SRC_LOAD_LATENCY,
} PmuSource;

/* Branch kinds of the event layer (PmuCount.kinds of the branch sources) */
#define PMU_BR_COND (1u << 0)     /* Jcc, JrCXZ, LOOP, LOOPE, LOOPNE */
#define PMU_BR_JMP (1u << 1)      /* near JMP, direct or indirect */
#define PMU_BR_CALL (1u << 2)     /* near CALL, direct or indirect */
#define PMU_BR_RET (1u << 3)      /* near RET */
/* far JMP, CALL and RET; INT n, IRET, SYSCALL, SYSRET, SYSENTER, SYSEXIT */
#define PMU_BR_FAR (1u << 4)
#define PMU_BR_ALL 0x1fu

/* Where a load came from (PmuCount.kinds of PMU_SRC_LOAD_LEVEL) */
#define PMU_LEVEL_L1 (1u << 0)
#define PMU_LEVEL_L2 (1u << 1)
#define PMU_LEVEL_L3 (1u << 2)
#define PMU_LEVEL_DRAM (1u << 3)

/* PmuCount.cpl */
#define PMU_CPL0 (1u << 0)    /* OS: counts at CPL 0 */
#define PMU_CPL123 (1u << 1)  /* USR: counts at CPL 1, 2 and 3 */

typedef struct PmuCount {
    uint8_t source; /* PMU_SRC_* */
    uint8_t kinds;  /* PMU_BR_* or PMU_LEVEL_*, by source */
    uint8_t cpl;    /* PMU_CPL0 | PMU_CPL123: where it counts; 0: nowhere */
    bool pmi;       /* INT (or the fixed field's PMI): a PMI on overflow */
    bool known;     /* false: the event or a modifier is not modelled */
} PmuCount;

/* General-purpose counter @i: from IA32_PERFEVTSELi and GLOBAL_CTRL */
PmuCount pmu_count_gp(const PmuProfile *p, const PmuRegs *r, unsigned i);
/* Fixed-function counter @i: from IA32_FIXED_CTR_CTRL and GLOBAL_CTRL */
PmuCount pmu_count_fixed(const PmuProfile *p, const PmuRegs *r, unsigned i);

/*
 * How many events general-purpose (@fixed false) or fixed-function
 * counter @i takes before it overflows: from its value to 2^width, so
 * at least 1.
 */
uint64_t pmu_until_overflow(const PmuProfile *p, const PmuRegs *r,
                            bool fixed, unsigned i);
/*
 * Count @n events on that counter: it wraps modulo 2^width, and when it
 * passes 2^width - 1 its IA32_PERF_GLOBAL_STATUS bit is set.  Returns
 * whether it overflowed.
 */
bool pmu_add(const PmuProfile *p, const PmuRegs *r, bool fixed, unsigned i,
             uint64_t n);
/*
 * Take back @n events counted too early (instructions that did not
 * retire): when that takes the counter back across its overflow, the
 * overflow did not happen and its status bit is cleared.
 */
void pmu_sub(const PmuProfile *p, const PmuRegs *r, bool fixed, unsigned i,
             uint64_t n);

/*
 * A counter whose controls ask for a PMI overflowed: the PMI is requested.
 * With IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI the enable bits of
 * IA32_PERF_GLOBAL_CTRL are cleared (SDM 18.5.3.1), so that nothing
 * after the instruction that overflowed counts; with FREEZE_LBRS_ON_PMI,
 * IA32_DEBUGCTL.LBR is.  Returns whether the counters' controls or
 * IA32_DEBUGCTL changed.
 */
bool pmu_pmi_request(const PmuProfile *p, const PmuRegs *r);

/*
 * The cost model of the cycle sources (today's, as LWP's clock events,
 * choice 48): an instruction takes one cycle, and a branch one more.  In
 * a block of @n instructions that ends with a branch if @branch, the
 * events of @source (PMU_SRC_INSN, PMU_SRC_CYCLES, PMU_SRC_REF_CYCLES, or
 * PMU_SRC_BRANCH with the block's branch counted) number pmu_block_events,
 * and the event number @event of them (from 1) happens at the
 * instruction pmu_event_insn returns (from 1; the last for a branch).
 */
uint32_t pmu_block_events(unsigned source, uint32_t n, bool branch);
uint32_t pmu_event_insn(unsigned source, uint64_t event, uint32_t n);
/*
 * The detailed cost model (choice 69), for a CPU that asks for it: the
 * cycles above add, for each load, the latency of the cache level that
 * supplied it less L1's, and for each mispredicted near branch
 * pmu_mispredict_penalty() cycles, stalls in which nothing retires.
 */
uint32_t pmu_mispredict_penalty(const PmuProfile *p);

/*
 * The last branch records (SDM 18.6; choice 72).  The depth of the
 * profile's stack, 0 without one.
 */
unsigned pmu_lbr_depth(const PmuProfile *p);
/*
 * Whether its records have the mispredict flag (PMU_LBR_FROM_MISPRED):
 * the Core i7's format 3 does, the P6 family's pair (SDM 17.14) does not
 */
bool pmu_lbr_has_mispredict(const PmuProfile *p);
/*
 * Whether IA32_DEBUGCTL.LBR and MSR_LBR_SELECT record some branches taken
 * at CPL 0 (@cpl0) or at CPL 1-3
 */
bool pmu_lbr_records_at(const PmuProfile *p, const PmuRegs *r, bool cpl0);
/*
 * A branch of kind @kind (one PMU_LBR_* kind bit) taken at CPL 0 (@cpl0)
 * or above, from the instruction at @from to @to (offsets in their code
 * segments, zero-extended outside 64-bit mode), which the predictor
 * model mispredicted if @misp: unless MSR_LBR_SELECT leaves it out, or
 * IA32_DEBUGCTL.LBR is clear, the top of stack moves to the next entry,
 * which takes it: FROM bits 47:0 @from, 62:48 the sign of bit 47, 63
 * @misp if the format has the flag; TO bits 47:0 @to, 63:48 the sign of
 * bit 47 (SDM 18.6.1; the P6 family's 32-bit offsets are the same).
 */
void pmu_lbr_record(const PmuProfile *p, const PmuRegs *r, unsigned kind,
                    bool cpl0, uint64_t from, uint64_t to, bool misp);
/*
 * An interrupt or exception delivered at @from (the instruction it
 * interrupted or that raised it) to the handler at @to: with
 * IA32_DEBUGCTL.LBR, MSR_LER_FROM_LIP and MSR_LER_TO_LIP take the last
 * branch recorded, then it is recorded as a far branch
 */
void pmu_lbr_event(const PmuProfile *p, const PmuRegs *r, bool cpl0,
                   uint64_t from, uint64_t to);

/*
 * The Branch Trace Store (SDM 18.7.8 and 18.5.3; choice 73), with the
 * 64-bit DS save area (DTES64) at IA32_DS_AREA.  Whether the profile has
 * it (CPUID.01H:EDX.DS, ECX.DTES64 and ECX.DS-CPL; IA32_MISC_ENABLE bit
 * 11 clear).
 */
bool pmu_has_bts(const PmuProfile *p);
/*
 * Whether IA32_DEBUGCTL stores the branch trace messages of branches
 * taken at CPL 0 (@cpl0) or at CPL 1-3 (TR, BTS and the BTS_OFF_* flag
 * of that CPL; SDM Table 18-9)
 */
bool pmu_bts_records_at(const PmuProfile *p, const PmuRegs *r, bool cpl0);

/* The DS save area's BTS fields (linear addresses), and a record's size */
#define PMU_DS_BTS_BASE 0x00
#define PMU_DS_BTS_INDEX 0x08
#define PMU_DS_BTS_MAX 0x10
#define PMU_DS_BTS_THRESHOLD 0x18
#define PMU_BTS_RECORD_SIZE 24
/* A record's third quadword: the branch was predicted */
#define PMU_BTS_PREDICTED (1ull << 4)

typedef struct PmuBtsStore {
    bool store;      /* write the record at the index */
    uint64_t index;  /* the BTS index after it */
    bool pmi;        /* a PMI is requested */
} PmuBtsStore;

/*
 * What a branch trace message does to the BTS buffer whose base, index,
 * absolute maximum and interrupt threshold the DS save area holds: the
 * record is stored at the index if it fits below the absolute maximum,
 * and the index moves past it.  When no other record fits after it, the
 * index goes back to the base in the circular mode (IA32_DEBUGCTL.BTINT
 * clear) and stays otherwise, so that later messages are dropped until
 * software moves it.  Once a record took the index to the threshold or
 * beyond, a PMI is requested, in either mode (SDM 18.7.8.3's note: only
 * a threshold above the maximum avoids it).
 */
PmuBtsStore pmu_bts_store(const PmuRegs *r, uint64_t base, uint64_t index,
                          uint64_t max, uint64_t threshold);

/*
 * Precise event-based sampling, the Core i7's (SDM 18.6.1.1, record
 * format 1 with PEBSTrap, and the load-latency facility of 18.17.1.2;
 * choice 74), with the same DS save area.  Whether the profile has it
 * (IA32_MISC_ENABLE bit 12 clear, IA32_PEBS_ENABLE and
 * MSR_PEBS_LD_LAT_THRESHOLD).
 */
bool pmu_has_pebs(const PmuProfile *p);
/* IA32_PEBS_ENABLE: PEBS_EN_PMCx is bit x, LL_EN_PMCx bit 32 + x */
#define PMU_PEBS_LL_SHIFT 32
/*
 * General-purpose counter @i took @n events, pmu_add() having returned
 * @overflowed: whether its PEBS event happened, the first event it
 * counts after the overflow that armed PEBS for it (an event of the
 * Core i7's PEBS list, with PEBS_EN_PMCi set).  An overflow that ends
 * exactly at 0 arms it (pmu_until_overflow() is then 1): its PEBS event
 * is the counter's next.  Once it happened, the assist follows the
 * instruction that made it (pmu_pebs_store, pmu_pebs_done).
 */
bool pmu_pebs_event(const PmuProfile *p, const PmuRegs *r, unsigned i,
                    uint64_t n, bool overflowed);

/* The DS save area's PEBS fields, the counters' reset values after them */
#define PMU_DS_PEBS_BASE 0x20
#define PMU_DS_PEBS_INDEX 0x28
#define PMU_DS_PEBS_MAX 0x30
#define PMU_DS_PEBS_THRESHOLD 0x38
#define PMU_DS_PEBS_RESET 0x40
/*
 * A record of format 1 (SDM Table 18-23, the offsets below): RFLAGS,
 * RIP, RAX, RBX, RCX, RDX, RSI, RDI, RBP, RSP, R8-R15, then
 * IA32_PERF_GLOBAL_STATUS, the data linear address, the data source and
 * the latency of load latency
 */
#define PMU_PEBS_RECORD_SIZE 0xb0
#define PMU_PEBS_STATUS 0x90
#define PMU_PEBS_DLA 0x98
#define PMU_PEBS_DSE 0xa0
#define PMU_PEBS_LAT 0xa8
/* IA32_PERF_GLOBAL_STATUS: the PEBS buffer reached its threshold */
#define PMU_STATUS_OVF_BUFFER (1ull << 62)

/*
 * What the assist does to the PEBS buffer of the DS save area: the record
 * is stored at the index when it fits below the absolute maximum, and the
 * index moves past it; a PMI is requested when it reaches the interrupt
 * threshold.  There is no circular mode: a record that does not fit is
 * not stored (the assist is skipped).
 */
PmuBtsStore pmu_pebs_store(uint64_t index, uint64_t max, uint64_t threshold);
/*
 * After the assist, the record stored (@stored) or skipped: a stored one
 * reloads every general-purpose counter that overflowed with PEBS
 * enabled for it (its status bit set, or armed) with its reset value
 * @reset[i] from the DS save area, and clears its status bit; with @pmi,
 * IA32_PERF_GLOBAL_STATUS.OvfBuffer is set.  Either way PEBS is no
 * longer armed.
 */
void pmu_pebs_done(const PmuProfile *p, const PmuRegs *r,
                   const uint64_t *reset, bool stored, bool pmi);
/*
 * The data source of a load-latency record (SDM Table 18-24, "Data
 * Source Encoding for Load Latency Record") for a load that the level
 * @level (one PMU_LEVEL_* bit) supplied
 */
uint64_t pmu_pebs_data_source(unsigned level);

#endif /* PMU_ENGINE_H */
