/*
 * AMD Lightweight Profiling (LWP) as the guest kernels see it: the MSRs,
 * the CPUID leaf, the LWPCB and the event records.  Shared by the 64-bit
 * (lwp.c, lwp-events.c) and the 32-bit (lwp32.c) test kernels.
 *
 * Every number is written down here from the AMD LWP specification
 * (43724 rev 3.08), independently of the emulator's include/lwp/.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef LWP_GUEST_H
#define LWP_GUEST_H

#include "libcflat.h"
#include "processor.h"

/* Spec 3, 4 */
#define MSR_LWP_CFG         0xc0000105
#define MSR_LWP_CBADDR      0xc0000106
#define LWP_LEAF            0x8000001c
#define CPUID_EXT3_LWP      BIT(15)             /* CPUID 0x80000001 ECX */
#define XSTATE_LWP          BIT_ULL(62)
#define XSTATE_FP_SSE_AVX   0x7ul               /* x87, SSE, AVX */

/*
 * LWPCB.Flags, LWP_CFG bits 31:1 and CPUID 0x8000001C EAX/EDX (Figure
 * 6-2, Table 3-1): bit n enables EventId n; bit 31 the threshold interrupt
 */
#define LWP_VAL             BIT(1)
#define LWP_IRE             BIT(2)
#define LWP_BRE             BIT(3)
#define LWP_DME             BIT(4)
#define LWP_CNH             BIT(5)
#define LWP_RNH             BIT(6)
#define LWP_INT             BIT(31)

/* LWP_CFG: bits 39:32 COREID, 47:40 VECTOR (spec 4.2) */
#define LWP_CFG_COREID(x)   ((u64)(x) << 32)
#define LWP_CFG_VECTOR(x)   ((u64)(x) << 40)

/* Table 2-1 */
#define EVENT_VAL           1                   /* LWPVAL record */
#define EVENT_IRE           2                   /* Instructions Retired */
#define EVENT_BRE           3                   /* Branches Retired */
#define EVENT_DME           4                   /* DCache Misses */
#define EVENT_CNH           5                   /* CPU Clocks not Halted */
#define EVENT_RNH           6                   /* Ref. Clocks not Halted */
#define EVENT_INS           0xff                /* LWPINS record */
#define RECORD_SIZE         32                  /* LwpEventSize */
#define EVENT_OFFSET        0x80                /* LwpEventOffset */

/* Figure 2-4: Flags (bytes 3-2) of a Branches Retired record */
#define BRE_FLAG_TKN        BIT(15)             /* record bit 31 */

/* EventInterval n and EventCounter n are 26-bit fields (Table 6-1) */
#define LWP_EVENT_MASK      0x03ffffff

/* LWPCB (Table 6-1) with LwpEventOffset 0x80 */
struct lwpcb {
    u32 flags;
    u32 buffer_size;                    /* Random in bits 31:28 */
    u64 buffer_base;
    u32 head;
    u32 reserved20;
    u64 missed_events;
    u32 threshold;
    u32 filters;
    u64 base_ip;
    u64 limit_ip;
    u64 reserved56;
    u32 tail;
    u32 reserved68;
    u8 software[16];
    u8 reserved88[EVENT_OFFSET - 88];
    struct {
        u32 interval;
        u32 counter;
    } event[6];                         /* EventId 1-6 */
};

/* Event record (Figures 2-1 to 2-4, 2-6, 2-7) */
struct lwp_record {
    u8 event_id;
    u8 core_id;
    u16 flags;
    u32 data1;
    u64 ip;
    u64 data2;                          /* BRE: TargetAddress */
    u64 reserved;
};

/* The LWP component of the standard-format XSAVE area (Figure 7-1) */
struct xs_lwp {
    u64 cb_addr;
    u32 flags;
    u32 head;
    u64 buffer_base;
    u32 buffer_size;                    /* bits 31:28 reserved */
    u32 filters;
    u8 saved[32];                       /* SavedEventRecord */
    u32 counter[16];                    /* EventCounter1-6, 7-16 reserved */
};

_Static_assert(sizeof(struct lwp_record) == RECORD_SIZE, "record size");
_Static_assert(sizeof(struct xs_lwp) == 128, "LWP area");
_Static_assert(__builtin_offsetof(struct lwpcb, tail) == 64, "LWPCB");
_Static_assert(__builtin_offsetof(struct lwpcb, event) == EVENT_OFFSET,
               "LWPCB");

/* CPUID 0x8000001C, all zero when the leaf is beyond the maximum */
static inline struct cpuid lwp_cpuid(void)
{
    struct cpuid zero = { 0, 0, 0, 0 };

    return cpuid(0x80000000).a >= LWP_LEAF ? cpuid(LWP_LEAF) : zero;
}

#endif
