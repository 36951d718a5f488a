/*
 * qemu-lwp engine: the rules of AMD Lightweight Profiling
 *
 * This is the engine's whole interface.  It is plain C (scalar types,
 * status codes), implemented in C++17 without exceptions, and it never
 * touches guest memory: the QEMU glue reads and writes the guest and hands
 * the engine values.  Section numbers refer to AMD publication 43724
 * revision 3.08 ("spec").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef LWP_ENGINE_H
#define LWP_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lwp/lwp-arch.h"

/* C++ includes lwp-engine.hh, which declares all this extern "C" */

typedef enum LwpStatus {
    LWP_OK = 0,
    LWP_FAULT_GP, /* the instruction raises #GP(0) */
    LWP_FAULT_PF, /* a guest access would fault: LwpResult.fault_* */
} LwpStatus;

/*
 * CPUID Fn8000_001C (spec 3.3, Table 3-1).  @edx is the supported feature
 * set (LwpAvail plus events and LwpInt), @ecx_caps the capability flags the
 * CPU model asks for.
 */

/* EBX: LWPCB size, record size, highest EventId, event area offset */
uint32_t lwp_cpuid_ebx(uint32_t edx);
/*
 * The smallest ring buffer LLWPCB accepts, in units of 32 records
 * (LwpMinBufferSize): 1, as on every Family 15h part.
 */
#define LWP_ENGINE_MIN_BUFFER 1
/*
 * ECX: @ecx_caps with the flags the spec ties to an absent event cleared,
 * plus LwpVersion and LwpMinBufferSize.
 */
uint32_t lwp_cpuid_ecx(uint32_t ecx_caps, uint32_t edx);
/* EAX: what is available: XCR0[62] in bit 0, LWP_CFG & EDX above it */
uint32_t lwp_cpuid_eax(uint64_t xcr0, uint64_t lwp_cfg, uint32_t edx);

/*
 * WRMSR LWP_CFG (spec 4.2): LWP_FAULT_GP when @value turns on a feature
 * bit that @edx does not report, leaving *@cfg unchanged; otherwise the
 * value without its write-ignored bits is stored in *@cfg.
 */
LwpStatus lwp_cfg_write(uint64_t value, uint32_t edx, uint64_t *cfg);

/* WRMSR LWP_CBADDR (spec 4.3): only zero may be written */
LwpStatus lwp_cbaddr_write(uint64_t value);

/*
 * The smallest EventInterval LLWPCB accepts for EventIds 2..6 (spec 5.1
 * step 7, "implementation-defined minimum").  LWPVAL's minimum is 0.
 */
#define LWP_ENGINE_MIN_INTERVAL 1

/*
 * How far below 0 a counter goes: events past it are not counted (a
 * record is due long before; the glue's DME counting stops there too)
 */
#define LWP_ENGINE_COUNTER_FLOOR (-(1 << 30))

/*
 * Per-thread LWP state.  It is a plain struct so that the glue can embed
 * it in the CPU state, migrate it field by field and let generated code
 * decrement counter[]; everything else is written only by the engine.
 * LWP is enabled exactly when cb_addr != 0.
 */
typedef struct LwpState {
    int32_t counter[LWP_NUM_EVENTS + 1]; /* [EventId]; [0] unused */
    uint32_t flags; /* enabled: EventId bits and LWP_FEAT_INT */
    uint32_t head;  /* BufferHeadOffset */
    uint32_t tail;  /* cached BufferTailOffset (spec 8.3) */
    uint32_t buffer_size;
    uint32_t threshold;
    uint32_t filters;
    uint32_t interval[LWP_NUM_EVENTS + 1];
    uint64_t cb_addr;     /* LWP_CBADDR: linear address of the LWPCB */
    uint64_t buffer_base; /* linear */
    uint64_t base_ip;
    uint64_t limit_ip;
    uint64_t rng;   /* randomisation generator (splitmix64) */
    uint8_t random; /* LWPCB.Random */
    uint8_t reload; /* LWPCB fields still to re-read (spec 8.2.5) */
    uint8_t pending[LWP_EVENT_RECORD_SIZE]; /* EventId 0: none pending */
} LwpState;

/*
 * What the engine needs to know about the CPU, fresh for every call.
 * Addresses: in 64-bit mode effective addresses are 64 bits and DS has no
 * base or limit (pass ds_base 0); elsewhere they are 32 bits and the DS
 * descriptor is checked as for a data store.
 */
typedef struct LwpContext {
    uint64_t cfg; /* LWP_CFG */
    uint32_t edx; /* CPUID Fn8000_001C_EDX: supported */
    uint32_t ecx; /* CPUID Fn8000_001C_ECX: capabilities */
    uint64_t ds_base;
    uint32_t ds_limit; /* byte granular, as in the segment cache */
    uint8_t ds_flags;  /* LWP_DS_* */
    uint8_t long64;    /* 64-bit mode (else 32-bit effective addresses) */
    uint8_t lma;       /* long mode: linear addresses do not wrap at 4G */
    uint8_t va_bits;   /* 48 or 57: canonical form in 64-bit mode */
    uint8_t cpl;
} LwpContext;

#define LWP_DS_USABLE 1 /* not a null selector */
#define LWP_DS_WRITABLE 2
#define LWP_DS_EXPAND_DOWN 4
#define LWP_DS_BIG 8 /* B bit: expand-down upper bound 4G-1 */

/*
 * Guest memory, at linear addresses with CPL-3 permissions.  None of these
 * may fault or longjmp: read and probe_write report failure by returning
 * false.  The engine reads first, then probes every range it will write,
 * and only then writes, in order (the ring buffer record before the head
 * offset), so a failure leaves guest memory and the LWP state untouched,
 * except that a pending record stored before it stays stored
 * (LwpResult.stored).  write is only called on ranges probe_write accepted
 * in the same call.  A range never wraps and is canonical: outside long
 * mode the engine splits it at 4G.
 * The glue orders the writes for other CPUs (smp_wmb before each one).
 */
typedef struct LwpMemOps {
    bool (*read)(void *opaque, uint64_t addr, void *buf, uint32_t len);
    bool (*probe_write)(void *opaque, uint64_t addr, uint32_t len);
    void (*write)(void *opaque, uint64_t addr, const void *buf, uint32_t len);
} LwpMemOps;

typedef struct LwpMem {
    const LwpMemOps *ops;
    void *opaque;
} LwpMem;

/* Outcome details of a call, filled by every call that takes one */
typedef struct LwpResult {
    /* LWP_FAULT_GP of LLWPCB: which rule of spec 5.1 failed, for traces */
    const char *gp_reason;
    uint64_t fault_addr; /* LWP_FAULT_PF: the range whose access failed */
    uint32_t fault_len;
    uint8_t fault_write; /* LWP_FAULT_PF: 1 for a write */
    uint8_t interrupt;   /* raise the threshold interrupt (spec 1.1 step 4) */
    uint8_t full;        /* the last store found the ring buffer full */
    uint8_t stored;      /* records stored by this call */
} LwpResult;

/* One retired instruction and the events it caused (spec 1.1 step 1) */
typedef struct LwpEventInfo {
    uint64_t ip;         /* effective address of the instruction */
    uint32_t events;     /* LWP_FEAT_IRE etc.: events it caused */
    uint32_t cycles;     /* CNH: core clocks it took */
    uint32_t ref_cycles; /* RNH: reference clocks it took */
    /* LWP_FEAT_BRE */
    uint64_t target;     /* next instruction executed */
    uint8_t branch_kind; /* LWP_BRANCH_* */
    uint8_t taken;
    uint8_t predicted;    /* 1: prediction known (PRV) */
    uint8_t predicted_ok; /* PRD */
    uint8_t fused;        /* FUS: ip names the flag-setting instruction */
    /* LWP_FEAT_DME */
    uint8_t dme_source; /* LWP_DME_SRC_* */
    uint8_t dme_addr_valid;
    uint32_t dme_latency; /* cycles */
    uint64_t dme_addr;    /* linear */
} LwpEventInfo;

/* Branch kinds, as the Filters word classifies them (Table 6-2) */
#define LWP_BRANCH_COND 0     /* Jcc, JrCXZ, LOOP, LOOPE, LOOPNE: NCB */
#define LWP_BRANCH_REL 1      /* JMP rel, CALL rel, RET: NRB */
#define LWP_BRANCH_INDIRECT 2 /* JMP FF /4, CALL FF /2: NAB */

/* The disabled state, as after reset or LWP_CBADDR = 0 (spec 4.3, 7.5) */
void lwp_state_init(LwpState *s);

/* Enabled LWP whose next CPL-3 step must first call lwp_sync() */
bool lwp_needs_sync(const LwpState *s);

/*
 * LLWPCB (spec 5.1).  @ea is the operand (already truncated to the operand
 * size).  Flushes an enabled LWP first (a fault there leaves it enabled),
 * then disables it for @ea 0 or validates and loads the new LWPCB (any
 * fault there leaves it disabled).  LWP_FAULT_GP, LWP_FAULT_PF.
 */
LwpStatus lwp_llwpcb(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     uint64_t ea, LwpResult *res);

/*
 * SLWPCB (spec 5.2): flush; *@ea is the LWPCB's effective address (linear
 * minus DS base; the caller truncates it to the operand size), 0 when LWP
 * is disabled.  LWP_FAULT_PF.
 */
LwpStatus lwp_slwpcb(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     uint64_t *ea, LwpResult *res);

/*
 * LWPINS (spec 5.4): stores EventId 255.  res->full is the new CF (0 when
 * LWP is disabled).  LWP_FAULT_PF leaves everything unchanged.
 */
LwpStatus lwp_lwpins(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     uint64_t ip, uint32_t data1, uint64_t data2,
                     uint32_t flags, LwpResult *res);

/*
 * LWPVAL (spec 5.3).  lwp_lwpval_fires() says whether this LWPVAL will
 * store a record, i.e. whether the caller must read its r/m operand;
 * lwp_lwpval() then counts it (and stores, with @data1).  LWP_FAULT_PF
 * leaves everything unchanged, including the counter.
 */
bool lwp_lwpval_fires(const LwpState *s, const LwpContext *ctx, uint64_t ip);
LwpStatus lwp_lwpval(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     uint64_t ip, uint32_t data1, uint64_t data2,
                     uint32_t flags, LwpResult *res);

/*
 * Filters (spec 6, Table 6-2): whether an event is eligible to be counted.
 * lwp_ip_eligible applies to every event; the others add their event's
 * own conditions.  The glue may evaluate the static parts at translation.
 *
 * lwp_ip_range is the IP filter's one predicate: where the addresses
 * @first..@last lie against [BaseIP, LimitIP] (Table 6-1: both bounds
 * included), all inside, all outside, or on both sides (also when
 * @first > @last).  lwp_ip_eligible is it for one address, with IPF, IPI
 * and the LwpIpFiltering capability applied.
 */
typedef enum LwpIpRange {
    LWP_IP_RANGE_IN,
    LWP_IP_RANGE_OUT,
    LWP_IP_RANGE_BOTH,
} LwpIpRange;

LwpIpRange lwp_ip_range(const LwpState *s, uint64_t first, uint64_t last);
bool lwp_ip_eligible(const LwpState *s, const LwpContext *ctx, uint64_t ip);
bool lwp_branch_eligible(const LwpState *s, const LwpContext *ctx,
                         unsigned kind, bool predicted, bool predicted_ok);
bool lwp_dme_eligible(const LwpState *s, const LwpContext *ctx,
                      uint32_t latency, unsigned source);

/*
 * The counters of @events were already decremented (by generated code) for
 * the instruction @info describes: store a record, in EventId order, for
 * each of them that is negative (spec 1.1 steps 2-5, 8.1).  A fault leaves
 * the record in progress pending (stored by the next lwp_sync) and the
 * remaining counters negative: each gathers its record at its next event.
 */
LwpStatus lwp_store_events(LwpState *s, const LwpContext *ctx,
                           const LwpMem *mem, const LwpEventInfo *info,
                           uint32_t events, LwpResult *res);

/*
 * Before LWP runs CPL-3 code after XRSTOR or a faulted store: re-read the
 * LWPCB fields the XSAVE area does not hold and store a pending record
 * (spec 7.4, 8.2.5).
 */
LwpStatus lwp_sync(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                   LwpResult *res);

/*
 * Whether the record of @event, whose counter is negative, may be stored
 * after @overrun more events of it were counted, with the same result as
 * storing it now (spec 1.1 step 3): then lwp_store_events stores it later.
 */
bool lwp_store_deferrable(const LwpState *s, const LwpContext *ctx,
                          unsigned event, uint32_t overrun);

/*
 * XSAVE of component 62 (spec 7.2, 7.3): fills @area (LWP_XSAVE_SIZE
 * bytes) and returns whether the component is in use (XSTATE_BV[62]).
 */
bool lwp_xsave(const LwpState *s, uint8_t *area);

/*
 * XRSTOR of component 62 (spec 7.4, 7.5): @area is NULL for the processor
 * supplied values (XSTATE_BV[62] = 0).  Never faults: an area that fails a
 * check disables LWP, and *@why (if @why is not NULL) then names the
 * check, for traces; it is NULL otherwise (LWP enabled, or an area that
 * disables it with LWPCBAddress 0).  Returns whether LWP is enabled
 * afterwards.
 */
bool lwp_xrstor(LwpState *s, const LwpContext *ctx, const uint8_t *area,
                const char **why);

/*
 * The data cache model behind the DCache Miss event (spec 2.4; the model
 * is specified in docs/cache-model.md, which is precise enough to
 * reimplement it).  A deterministic hierarchy of up to three
 * set-associative, true-LRU, non-inclusive caches in front of DRAM, one
 * instance per vCPU.  Only the loads the glue passes touch it.
 */
#define LWP_CACHE_MAX_LEVELS 3

/* Where the data of a load came from (LwpCacheResult.level) */
#define LWP_CACHE_L1 1
#define LWP_CACHE_L2 2
#define LWP_CACHE_L3 3
#define LWP_CACHE_DRAM 4 /* whatever the number of cache levels */

typedef struct LwpCacheLevelConfig {
    uint32_t size;      /* bytes: sets * ways * line_size, sets a power of 2 */
    uint32_t ways;      /* 1..64 */
    uint32_t line_size; /* bytes: power of 2, 16..4096, >= the level above */
    uint32_t latency;   /* cycles of a load whose data this level supplies */
} LwpCacheLevelConfig;

typedef struct LwpCacheConfig {
    uint32_t levels; /* 1..LWP_CACHE_MAX_LEVELS; level[0] is L1 */
    uint32_t dram_latency;
    LwpCacheLevelConfig level[LWP_CACHE_MAX_LEVELS];
} LwpCacheConfig;

/* The outcome of one load */
typedef struct LwpCacheResult {
    uint64_t addr;    /* the lowest address that missed L1; a hit: the load's */
    uint32_t latency; /* cycles, of the level below */
    uint8_t level;    /* LWP_CACHE_*: supplied the L1 line of addr */
    uint8_t misses;   /* L1 lines of the load that missed (2: line-crossing) */
} LwpCacheResult;

typedef struct LwpCache LwpCache;

/* The Family 15h defaults (docs/cache-model.md, "Default configuration") */
void lwp_cache_default_config(LwpCacheConfig *cfg);
bool lwp_cache_config_valid(const LwpCacheConfig *cfg);
/* An empty model; NULL when @cfg is not valid or memory runs out */
LwpCache *lwp_cache_new(const LwpCacheConfig *cfg);
void lwp_cache_free(LwpCache *c);
/*
 * A load of @size bytes (0 counts as 1) at @addr, linear or physical as
 * the glue chooses: its result, whose misses is not 0 when it missed L1,
 * i.e. when it is a DCache miss (a line-crossing load is one miss however
 * many of its lines missed, spec 2.4).  Returned by value: two registers
 * on the usual 64-bit ABIs.
 */
LwpCacheResult lwp_cache_load(LwpCache *c, uint64_t addr, uint32_t size);
/* Every level empty: RESET, INVD, WBINVD */
void lwp_cache_flush(LwpCache *c);
/* The line holding @addr leaves every level: CLFLUSH, CLFLUSHOPT */
void lwp_cache_flush_line(LwpCache *c, uint64_t addr);
/*
 * L1 as the model keeps it, for generated code to read: set s of L1's
 * sets is the L1-ways entries from index s * ways, the line numbers
 * (address >> log2(line size)) of its lines from the most recently used
 * to the least, then all ones for each unused way (docs/cache-model.md,
 * "LRU").  A load within line n that is entry 0 of its set hits L1 and
 * changes nothing, so it need not be passed to lwp_cache_load.  Valid
 * until lwp_cache_configure or lwp_cache_free.
 */
uint64_t *lwp_cache_l1_lines(LwpCache *c);
/*
 * The model's contents, for migration: each set of each level from L1
 * on, as its list of "LRU" (line numbers from the most recently used,
 * then all ones for each unused way), lwp_cache_state_words() words in
 * all.  lwp_cache_restore takes them into a model of the same
 * configuration, which then behaves as the one saved; when they are not
 * such lists (a line in another set or twice in one, a line after an
 * unused way), it returns false and leaves the model empty.
 */
size_t lwp_cache_state_words(const LwpCache *c);
void lwp_cache_save(const LwpCache *c, uint64_t *words);
bool lwp_cache_restore(LwpCache *c, const uint64_t *words);
/* Whether no level holds a line */
bool lwp_cache_empty(const LwpCache *c);
/* SRC of a DCache Miss record (Figure 2-5, LWP_DME_SRC_*) for a level */
unsigned lwp_cache_dme_source(unsigned level);

/*
 * Disassembly of LLWPCB, SLWPCB, LWPINS and LWPVAL (spec 5.1-5.4) for
 * QEMU's "-d in_asm", where the capstone library does not know them.
 *
 * @code holds @size bytes from the start of an instruction in a
 * protected-mode code segment of @mode_bits (16, 32 or 64).  Returns the
 * instruction's length (prefixes included) and fills @insn when the bytes
 * are an LWP instruction the CPU executes rather than rejects with #UD;
 * 0 when they are anything else; -1 when @size bytes are too few to tell.
 * The operands are in AT&T order and in the notation capstone uses for
 * everything else: "$imm, r/m32, reg" for LWPINS and LWPVAL, numbers in
 * decimal up to 9 and in hex above, a zero displacement left out.
 */
typedef struct LwpDisasInsn {
    char mnemonic[8];
    char op_str[80];
} LwpDisasInsn;

int lwp_disas(const uint8_t *code, size_t size, unsigned mode_bits,
              LwpDisasInsn *insn);

#endif /* LWP_ENGINE_H */
