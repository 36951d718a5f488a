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
/* Its number of general-purpose and of fixed-function counters */
unsigned pmu_num_gp(const PmuProfile *p);
unsigned pmu_num_fixed(const PmuProfile *p);

/* CPUID leaf 0AH (SDM 18.13; Vol. 2A, CPUID) */
void pmu_cpuid_0a(const PmuProfile *p, uint32_t *eax, uint32_t *ebx,
                  uint32_t *ecx, uint32_t *edx);

/*
 * IA32_MISC_ENABLE: the bits the profile sets at reset, all read-only
 * (Vol. 4: bit 7 "performance monitoring available", bits 11 and 12 "BTS
 * and PEBS unavailable", until the profile has them)
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

#endif /* PMU_ENGINE_H */
