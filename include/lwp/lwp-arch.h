/*
 * AMD Lightweight Profiling: architectural definitions
 *
 * The one place where LWP's guest-visible numbers are written down, taken
 * from "Lightweight Profiling Specification", AMD publication 43724,
 * revision 3.08 (cited as "spec N.M").  Plain C11, and C++, that needs
 * only <assert.h> and <stdint.h>, so the C++ engine (tcg-helpers/), the
 * QEMU glue and the guest test programs all include the same definitions.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef LWP_ARCH_H
#define LWP_ARCH_H

#include <assert.h>
#include <stdint.h>

/* spec 3.1: CPUID Fn8000_0001_ECX[LWP] */
#define LWP_CPUID_EXT3_BIT          15

/* spec 3.2, 4.1: XCR0 bit 62 and the XSAVE component it enables */
#define LWP_XSTATE_BIT              62
#define LWP_XSAVE_OFFSET            0x340   /* standard (non-compacted) form */
#define LWP_XSAVE_SIZE              0x80

/* spec 3.3, Table 3-1: CPUID Fn8000_001C */
#define LWP_CPUID_LEAF              0x8000001Cu

/* EAX (available) and EDX (supported) feature bits */
#define LWP_FEAT_AVAIL              (1u << 0)   /* LwpAvail */
#define LWP_FEAT_VAL                (1u << 1)   /* LWPVAL, EventId 1 */
#define LWP_FEAT_IRE                (1u << 2)   /* instructions retired, 2 */
#define LWP_FEAT_BRE                (1u << 3)   /* branches retired, 3 */
#define LWP_FEAT_DME                (1u << 4)   /* DCache misses, 4 */
#define LWP_FEAT_CNH                (1u << 5)   /* CPU clocks not halted, 5 */
#define LWP_FEAT_RNH                (1u << 6)   /* reference clocks, 6 */
#define LWP_FEAT_INT                (1u << 31)  /* threshold interrupt */
#define LWP_FEAT_EVENTS_MASK        0x7eu       /* EventId n is bit n */
#define LWP_NUM_EVENTS              6           /* v1 defines EventIds 1..6 */

/* EBX: LWPCB and record geometry */
#define LWP_CPUID_EBX_CBSIZE_SHIFT      0   /* LWPCB size in quadwords */
#define LWP_CPUID_EBX_EVENTSIZE_SHIFT   8   /* bytes per event record */
#define LWP_CPUID_EBX_MAXEVENTS_SHIFT   16  /* highest EventId */
#define LWP_CPUID_EBX_EVENTOFFSET_SHIFT 24  /* offset of EventInterval1 */
#define LWP_EVENT_RECORD_SIZE       32      /* LwpEventSize, version 1 */
#define LWP_EVENT_OFFSET            0x80    /* LwpEventOffset */

/* ECX: capabilities */
#define LWP_CAP_LATENCY_MAX_SHIFT   0       /* 4:0, DCache latency bits */
#define LWP_CAP_LATENCY_MAX_MASK    (0x1fu << 0)
#define LWP_CAP_DATA_ADDRESS        (1u << 5)
#define LWP_CAP_LATENCY_RND_SHIFT   6       /* 8:6 */
#define LWP_CAP_LATENCY_RND_MASK    (0x7u << 6)
#define LWP_CAP_VERSION_SHIFT       9       /* 15:9 */
#define LWP_CAP_VERSION_MASK        (0x7fu << 9)
#define LWP_CAP_MIN_BUFFER_SHIFT    16      /* 23:16, units of 32 records */
#define LWP_CAP_MIN_BUFFER_MASK     (0xffu << 16)
#define LWP_CAP_BRANCH_PREDICTION   (1u << 28)
#define LWP_CAP_IP_FILTERING        (1u << 29)
#define LWP_CAP_CACHE_LEVELS        (1u << 30)
#define LWP_CAP_CACHE_LATENCY       (1u << 31)
/* Capabilities that exist only with the DCache miss event (Table 3-1) */
#define LWP_CAP_DME_ONLY_MASK       (LWP_CAP_LATENCY_MAX_MASK | \
                                     LWP_CAP_DATA_ADDRESS | \
                                     LWP_CAP_LATENCY_RND_MASK | \
                                     LWP_CAP_CACHE_LEVELS | \
                                     LWP_CAP_CACHE_LATENCY)
#define LWP_VERSION                 1

/* spec 4.2: LWP_CFG */
#define LWP_MSR_CFG                 0xc0000105u
#define LWP_CFG_FEATURES_MASK       0xfffffffeull   /* bits 31:1 */
#define LWP_CFG_COREID_SHIFT        32              /* bits 39:32 */
#define LWP_CFG_VECTOR_SHIFT        40              /* bits 47:40 */
/* Write-ignored, read as zero on the FX-8150 (notes/prior-art.md) */
#define LWP_CFG_IGNORED_MASK        0xffff000000000001ull

/* spec 4.3: LWP_CBADDR */
#define LWP_MSR_CBADDR              0xc0000106u

/* spec 6, Table 6-1 and Figure 6-1: the LWPCB (offsets in bytes) */
#define LWPCB_FLAGS                 0x00    /* Figure 6-2 */
#define LWPCB_BUFFER_SIZE           0x04    /* 27:0 BufferSize, 31:28 Random */
#define LWPCB_BUFFER_SIZE_MASK      0x0fffffffu
#define LWPCB_RANDOM_SHIFT          28
#define LWPCB_BUFFER_BASE           0x08
#define LWPCB_HEAD                  0x10    /* BufferHeadOffset */
#define LWPCB_MISSED                0x18    /* MissedEvents, 64 bits */
#define LWPCB_THRESHOLD             0x20
#define LWPCB_FILTERS               0x24    /* Figure 6-3 */
#define LWPCB_BASE_IP               0x28
#define LWPCB_LIMIT_IP              0x30
#define LWPCB_TAIL                  0x40    /* BufferTailOffset */
#define LWPCB_SOFTWARE              0x48    /* 72-87, never accessed */
#define LWPCB_SOFTWARE_END          0x58
/* EventInterval n at E + 8(n-1), EventCounter n at E + 8(n-1) + 4 */
#define LWPCB_INTERVAL(e, n)        ((e) + 8 * ((n) - 1))
#define LWPCB_COUNTER(e, n)         ((e) + 8 * ((n) - 1) + 4)
#define LWPCB_EVENT_VALUE_BITS      26      /* 25:0; 31:26 reserved */
#define LWPCB_INTERVAL_MAX          0x01ffffff

/* Figure 6-3: LWPCB.Filters */
#define LWP_FILTER_MIN_LATENCY_MASK 0x000000ffu
#define LWP_FILTER_CLF              (1u << 8)
#define LWP_FILTER_NBC              (1u << 9)
#define LWP_FILTER_RDC              (1u << 10)
#define LWP_FILTER_RAM              (1u << 11)
#define LWP_FILTER_OTH              (1u << 12)
#define LWP_FILTER_RESERVED_MASK    0x01ffe000u     /* 24:13 */
#define LWP_FILTER_NMB              (1u << 25)
#define LWP_FILTER_NPB              (1u << 26)
#define LWP_FILTER_NAB              (1u << 27)
#define LWP_FILTER_NCB              (1u << 28)
#define LWP_FILTER_NRB              (1u << 29)
#define LWP_FILTER_IPI              (1u << 30)
#define LWP_FILTER_IPF              (1u << 31)

/* spec 2, Figure 2-1: event records */
#define LWP_REC_EVENT_ID            0
#define LWP_REC_CORE_ID             1
#define LWP_REC_FLAGS               2       /* 16 bits */
#define LWP_REC_DATA1               4       /* 32 bits */
#define LWP_REC_IP                  8       /* InstructionAddress */
#define LWP_REC_DATA2               16      /* Data2, Target or DataAddress */
#define LWP_EVENT_ID_VAL            1       /* Table 2-1 */
#define LWP_EVENT_ID_IRE            2
#define LWP_EVENT_ID_BRE            3
#define LWP_EVENT_ID_DME            4
#define LWP_EVENT_ID_CNH            5
#define LWP_EVENT_ID_RNH            6
#define LWP_EVENT_ID_INS            255     /* LWPINS */
/* Figure 2-4: bits of the record's first dword (Flags is bits 31:16) */
#define LWP_REC_BRE_FUS             (1u << 28)
#define LWP_REC_BRE_PRV             (1u << 29)
#define LWP_REC_BRE_PRD             (1u << 30)
#define LWP_REC_BRE_TKN             (1u << 31)
/* Figure 2-5 */
#define LWP_REC_DME_DAV             (1u << 28)
#define LWP_REC_DME_SRC_SHIFT       29
#define LWP_DME_SRC_NONE            0
#define LWP_DME_SRC_LOCAL_L3        1
#define LWP_DME_SRC_REMOTE          2
#define LWP_DME_SRC_DRAM            3
#define LWP_DME_SRC_REMOTE_CACHE    4       /* reserved */
#define LWP_DME_SRC_OTHER           7

/* spec 7.2, Figure 7-1: the XSAVE component (offsets within it) */
#define LWP_XS_CBADDR               0
#define LWP_XS_FLAGS                8       /* bit n: Counter n active */
#define LWP_XS_HEAD                 12
#define LWP_XS_BUFFER_BASE          16
#define LWP_XS_BUFFER_SIZE          24      /* 27:0; 31:28 reserved */
#define LWP_XS_FILTERS              28
#define LWP_XS_SAVED_RECORD         32      /* 32 bytes */
#define LWP_XS_COUNTER(n)           (64 + 4 * ((n) - 1))

/*
 * The same layouts as structures, for C and C++ code that maps them; the
 * checks below hold them to the offsets above, which are the spec's.
 * Little-endian, as the x86 that has LWP.
 */
struct lwp_cb {                         /* spec 6, Figure 6-1 */
    uint32_t flags;
    uint32_t buffer_size;               /* and Random, 31:28 */
    uint64_t buffer_base;
    uint32_t head;                      /* BufferHeadOffset */
    uint32_t reserved_14;
    uint64_t missed;                    /* MissedEvents */
    uint32_t threshold;
    uint32_t filters;
    uint64_t base_ip;
    uint64_t limit_ip;
    uint64_t reserved_38;
    uint32_t tail;                      /* BufferTailOffset */
    uint32_t reserved_44;
    uint64_t software[2];
    uint8_t reserved_58[LWP_EVENT_OFFSET - LWPCB_SOFTWARE_END];
    struct lwp_cb_event {               /* EventId n is event[n - 1] */
        uint32_t interval;
        uint32_t counter;
    } event[LWP_NUM_EVENTS];
};

struct lwp_event_record {               /* spec 2, Figure 2-1 */
    uint8_t event_id;
    uint8_t core_id;
    uint16_t flags;
    uint32_t data1;
    uint64_t ip;                        /* InstructionAddress */
    uint64_t data2;
    uint64_t reserved;
};

struct lwp_xsave_area {                 /* spec 7.2, Figure 7-1 */
    uint64_t cb_addr;
    uint32_t flags;
    uint32_t head;
    uint64_t buffer_base;
    uint32_t buffer_size;
    uint32_t filters;
    uint8_t saved_record[LWP_EVENT_RECORD_SIZE];
    uint32_t counter[LWP_NUM_EVENTS];   /* EventId n is counter[n - 1] */
    uint8_t reserved[LWP_XSAVE_SIZE - LWP_XS_COUNTER(LWP_NUM_EVENTS + 1)];
};

#define LWP_ARCH_CHECK(cond) static_assert(cond, #cond)
#define LWP_ARCH_OFFSET(type, field) __builtin_offsetof(struct type, field)

LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_cb, flags) == LWPCB_FLAGS);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_cb, buffer_size) == LWPCB_BUFFER_SIZE);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_cb, buffer_base) == LWPCB_BUFFER_BASE);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_cb, head) == LWPCB_HEAD);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_cb, missed) == LWPCB_MISSED);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_cb, threshold) == LWPCB_THRESHOLD);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_cb, filters) == LWPCB_FILTERS);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_cb, base_ip) == LWPCB_BASE_IP);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_cb, limit_ip) == LWPCB_LIMIT_IP);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_cb, tail) == LWPCB_TAIL);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_cb, software) == LWPCB_SOFTWARE);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_cb, event[1].interval) ==
               LWPCB_INTERVAL(LWP_EVENT_OFFSET, 2));
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_cb, event[1].counter) ==
               LWPCB_COUNTER(LWP_EVENT_OFFSET, 2));
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_event_record, event_id) ==
               LWP_REC_EVENT_ID);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_event_record, core_id) == LWP_REC_CORE_ID);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_event_record, flags) == LWP_REC_FLAGS);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_event_record, data1) == LWP_REC_DATA1);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_event_record, ip) == LWP_REC_IP);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_event_record, data2) == LWP_REC_DATA2);
LWP_ARCH_CHECK(sizeof(struct lwp_event_record) == LWP_EVENT_RECORD_SIZE);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_xsave_area, cb_addr) == LWP_XS_CBADDR);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_xsave_area, flags) == LWP_XS_FLAGS);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_xsave_area, head) == LWP_XS_HEAD);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_xsave_area, buffer_base) ==
               LWP_XS_BUFFER_BASE);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_xsave_area, buffer_size) ==
               LWP_XS_BUFFER_SIZE);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_xsave_area, filters) == LWP_XS_FILTERS);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_xsave_area, saved_record) ==
               LWP_XS_SAVED_RECORD);
LWP_ARCH_CHECK(LWP_ARCH_OFFSET(lwp_xsave_area, counter[1]) ==
               LWP_XS_COUNTER(2));
LWP_ARCH_CHECK(sizeof(struct lwp_xsave_area) == LWP_XSAVE_SIZE);

#endif /* LWP_ARCH_H */
