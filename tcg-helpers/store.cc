// qemu-lwp engine: counting, filters, records and the ring buffer
// (spec 1.1, 2, 5.3, 5.4, 6, 8.1, 8.3)
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include "engine-internal.hh"

namespace lwp
{
namespace
{

// splitmix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number
// generators", OOPSLA 2014), the generator of implementation choice 18.
uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// spec 1.1 step 4 and 6 (Threshold): threshold interrupts are enabled in
// LWPCB.Flags and available in LWP_CFG
bool int_enabled(const LwpState *s, const LwpContext *ctx)
{
    return s->flags & available(ctx) & LWP_FEAT_INT;
}

uint32_t used_space(uint32_t head, uint32_t tail, uint32_t size)
{
    return (head + size - tail) % size;
}

LwpStatus read_tail(const LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                    uint32_t *tail, LwpResult *res)
{
    uint8_t b[4];
    if (!mem_read(ctx, mem, s->cb_addr + LWPCB_TAIL, b, 4, res)) {
        return LWP_FAULT_PF;
    }
    *tail = sanitize_tail(ld32(b), s->buffer_size);
    return LWP_OK;
}

// Latency as a DCache miss record reports it (spec 2.4.1): capped at
// 2^LwpLatencyMax - 2^LwpLatencyRnd, rounded down to 2^LwpLatencyRnd.
uint32_t dme_latency(const LwpContext *ctx, uint64_t latency)
{
    unsigned max_bits = ctx->ecx & LWP_CAP_LATENCY_MAX_MASK;
    unsigned rnd =
        (ctx->ecx & LWP_CAP_LATENCY_RND_MASK) >> LWP_CAP_LATENCY_RND_SHIFT;
    uint64_t step = uint64_t{1} << rnd;
    if (max_bits) {
        uint64_t cap = (uint64_t{1} << max_bits) - step;
        latency = latency < cap ? latency : cap;
    }
    return static_cast<uint32_t>(latency & ~(step - 1));
}

// spec 2.1-2.7: the record an event gathers for one instruction
void gather(uint8_t *rec, unsigned event, const LwpContext *ctx,
            const LwpEventInfo *info)
{
    record_header(rec, event, ctx, info->ip);
    uint32_t dw0 = ld32(rec);
    if (event == LWP_EVENT_ID_BRE) {
        // Figure 2-4: TKN is always 1 for unconditional branches; PRV
        // only with the LwpBranchPrediction capability.
        if (info->branch_kind != LWP_BRANCH_COND || info->taken) {
            dw0 |= LWP_REC_BRE_TKN;
        }
        if (info->fused) {
            dw0 |= LWP_REC_BRE_FUS;
        }
        if (info->predicted && (ctx->ecx & LWP_CAP_BRANCH_PREDICTION)) {
            dw0 |= LWP_REC_BRE_PRV;
            if (info->predicted_ok) {
                dw0 |= LWP_REC_BRE_PRD;
            }
        }
        st64(rec + LWP_REC_DATA2, info->target);
    } else if (event == LWP_EVENT_ID_DME) {
        // Figure 2-5: DataAddress only with LwpDataAddress
        dw0 |= uint32_t{info->dme_source & 7u} << LWP_REC_DME_SRC_SHIFT;
        st32(rec + LWP_REC_DATA1, dme_latency(ctx, info->dme_latency));
        if (info->dme_addr_valid && (ctx->ecx & LWP_CAP_DATA_ADDRESS)) {
            dw0 |= LWP_REC_DME_DAV;
            st64(rec + LWP_REC_DATA2, info->dme_addr);
        }
    }
    st32(rec, dw0);
}

// spec 8.2.5, 8.3: after XRSTOR, the LWPCB fields the XSAVE area does not
// hold are re-read before LWP next needs them in ring 3 (choice 30).
LwpStatus reload(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                 LwpResult *res)
{
    uint8_t cb[kMaxCbSize] = {};
    if (!read_cb(ctx, mem, s->cb_addr, cb, res)) {
        return LWP_FAULT_PF;
    }
    s->flags &= ~LWP_FEAT_INT;
    s->flags |= ld32(cb + LWPCB_FLAGS) & available(ctx) & LWP_FEAT_INT;
    s->random = static_cast<uint8_t>(ld32(cb + LWPCB_BUFFER_SIZE) >>
                                     LWPCB_RANDOM_SHIFT);
    s->threshold = ld32(cb + LWPCB_THRESHOLD) & ~(kRec - 1);
    s->base_ip = ld64(cb + LWPCB_BASE_IP);
    s->limit_ip = ld64(cb + LWPCB_LIMIT_IP);
    s->tail = sanitize_tail(ld32(cb + LWPCB_TAIL), s->buffer_size);
    for (unsigned n = 1; n <= max_event(ctx); n++) {
        int32_t iv = 0;
        if (s->flags & bit(n)) {
            iv = field26(ld32(cb + LWPCB_INTERVAL(LWP_EVENT_OFFSET, n)));
            iv = iv < min_interval(n) ? min_interval(n) : iv;
        }
        s->interval[n] = static_cast<uint32_t>(iv);
    }
    s->reload = 0;
    return LWP_OK;
}

} // namespace

// Store the records of @events that are due (counter negative), in
// ascending EventId order (choice 20).  A fault leaves the record it was
// storing pending (choice 25).
LwpStatus store_due(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                    const LwpEventInfo *info, uint32_t events, LwpResult *res)
{
    LwpStatus st = sync(s, ctx, mem, res);
    if (st != LWP_OK) {
        return st;
    }
    for (unsigned n = 1; n <= LWP_NUM_EVENTS; n++) {
        if (!(events & s->flags & bit(n)) || s->counter[n] >= 0) {
            continue;
        }
        uint8_t rec[kRec];
        gather(rec, n, ctx, info);
        st = store_record(s, ctx, mem, rec, res);
        if (st != LWP_OK) {
            memcpy(s->pending, rec, kRec);
            return st;
        }
        reset_counter(s, n);
    }
    return LWP_OK;
}

int32_t min_interval(unsigned event)
{
    // spec 5.1 step 7: "The minimum event interval for LWPVAL is zero"
    return event == LWP_EVENT_ID_VAL ? 0 : LWP_ENGINE_MIN_INTERVAL;
}

// Table 6-1, BufferTailOffset: whatever software stores, LWP uses an
// offset inside the buffer (choice 23).
uint32_t sanitize_tail(uint32_t tail, uint32_t size)
{
    return size ? (tail % size) & ~(kRec - 1) : 0;
}

// Figure 2-1: EventId, CoreId from LWP_CFG[39:32], InstructionAddress;
// reserved and undefined fields zero.
void record_header(uint8_t *rec, unsigned event, const LwpContext *ctx,
                   uint64_t ip)
{
    memset(rec, 0, kRec);
    rec[LWP_REC_EVENT_ID] = static_cast<uint8_t>(event);
    rec[LWP_REC_CORE_ID] = core_id(ctx);
    st64(rec + LWP_REC_IP, ip);
}

// spec 1.1 step 5: "For each event that was stored, the counter is reset
// to its programmed interval ... If the event counter went below -1 ...
// that overrun value reduces the reset value" (choice 19).
void reset_counter(LwpState *s, unsigned event)
{
    int64_t c = s->counter[event];
    int64_t next = lwp_next_interval(s, event) + c + 1;
    s->counter[event] = static_cast<int32_t>(next < 0 ? 0 : next);
}

// spec 1.1 step 3, 6 (BufferHeadOffset, MissedEvents, Threshold), 8.3:
// store one record at the head (choices 21, 22).  Nothing changes unless
// every access succeeds.
LwpStatus store_record(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                       const uint8_t *rec, LwpResult *res)
{
    uint32_t size = s->buffer_size;
    uint32_t head = s->head;
    uint32_t tail = s->tail;
    uint32_t next = head + kRec == size ? 0 : head + kRec;
    bool fresh = false;

    // "It also rereads it whenever the ring buffer appears to be full."
    if (next == tail) {
        if (read_tail(s, ctx, mem, &tail, res) != LWP_OK) {
            return LWP_FAULT_PF;
        }
        fresh = true;
    }
    bool full = next == tail;
    uint32_t new_head = full ? head : next;
    // Table 6-1 Threshold: the space used is computed "when LWP advances
    // BufferHeadOffset"; a record that finds the ring full does not
    bool irq = !full && int_enabled(s, ctx);

    // "the hardware rereads the tail pointer every time it stores an event
    // record while the threshold condition appears to be true"
    if (irq && !fresh && used_space(new_head, tail, size) >= s->threshold) {
        if (read_tail(s, ctx, mem, &tail, res) != LWP_OK) {
            return LWP_FAULT_PF;
        }
    }
    irq = irq && used_space(new_head, tail, size) >= s->threshold;

    // Figure 2-1, CoreId: "the core on which LWP is running" when the
    // record is stored, also for a record that was pending (choice 33)
    uint8_t out[kRec];
    memcpy(out, rec, kRec);
    out[LWP_REC_CORE_ID] = core_id(ctx);

    Txn txn;
    txn.add(s->buffer_base + head, out, kRec);
    if (full) {
        // "the LWP hardware ... increments the 64-bit counter
        // LWPCB.MissedEvents" (kept in memory, 8.3)
        uint8_t b[8];
        if (!mem_read(ctx, mem, s->cb_addr + LWPCB_MISSED, b, 8, res)) {
            return LWP_FAULT_PF;
        }
        txn.add64(s->cb_addr + LWPCB_MISSED, ld64(b) + 1);
    }
    txn.add32(s->cb_addr + LWPCB_HEAD, new_head);
    if (!txn.probe(ctx, mem, res)) {
        return LWP_FAULT_PF;
    }
    txn.commit(ctx, mem);

    s->head = new_head;
    s->tail = tail;
    res->full = full;
    res->interrupt |= irq;
    res->stored++;
    return LWP_OK;
}

// The pending record, if any, after the lazy reload (spec 7.4 step 3,
// 8.2.5): "LWP will store it into the event ring buffer as soon as possible
// once the CPL is 3."
LwpStatus sync(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
               LwpResult *res)
{
    if (!enabled(s)) {
        return LWP_OK;
    }
    if (s->reload && reload(s, ctx, mem, res) != LWP_OK) {
        return LWP_FAULT_PF;
    }
    if (!s->pending[LWP_REC_EVENT_ID]) {
        return LWP_OK;
    }
    uint8_t rec[kRec];
    memcpy(rec, s->pending, kRec);
    LwpStatus st = store_record(s, ctx, mem, rec, res);
    if (st != LWP_OK) {
        return st;
    }
    unsigned n = rec[LWP_REC_EVENT_ID];
    memset(s->pending, 0, kRec);
    if (n <= LWP_NUM_EVENTS && (s->flags & bit(n)) && s->counter[n] < 0) {
        reset_counter(s, n);
    }
    return LWP_OK;
}

} // namespace lwp

using namespace lwp;

extern "C" {

void lwp_state_init(LwpState *s)
{
    memset(s, 0, sizeof(*s));
}

bool lwp_needs_sync(const LwpState *s)
{
    return enabled(s) && (s->reload || s->pending[LWP_REC_EVENT_ID]);
}

// spec 1.1 step 3: "The store need not complete synchronously with the
// instruction retiring ... the Report and Reset steps (below) may complete
// later", and step 5: the overrun "reduces the reset value".  Storing the
// record of @event after @overrun more events leaves what storing it now
// and counting them would, if nothing waits for lwp_sync, the reset value
// is at least @overrun whatever Random draws (no second record is due
// meanwhile), and the store cannot interrupt: the ring does not look full
// (a full ring rereads the tail) and the space used after it stays under
// Threshold with the tail LWP holds, which is never ahead of the real one
// (8.3).  Choice 51.
bool lwp_store_deferrable(const LwpState *s, const LwpContext *ctx,
                          unsigned event, uint32_t overrun)
{
    if (!enabled(s) || lwp_needs_sync(s) || event < 1 ||
        event > LWP_NUM_EVENTS || !(s->flags & bit(event))) {
        return false;
    }
    uint32_t m = s->random ? (uint32_t{1} << s->random) - 1 : 0;
    if ((s->interval[event] & ~m) < overrun) {
        return false;
    }
    uint32_t size = s->buffer_size;
    uint32_t next = s->head + kRec == size ? 0 : s->head + kRec;
    if (next == s->tail) {
        return false;
    }
    return !int_enabled(s, ctx) ||
           used_space(next, s->tail, size) < s->threshold;
}

// spec 1.1 step 5 and 6 (Random): choice 18
int32_t lwp_next_interval(LwpState *s, unsigned event)
{
    uint32_t iv = s->interval[event];
    if (s->random) {
        uint32_t m = (uint32_t{1} << s->random) - 1;
        iv = (iv & ~m) | (static_cast<uint32_t>(splitmix64(&s->rng)) & m);
    }
    return static_cast<int32_t>(iv);
}

// spec 6, Table 6-1: BaseIP and LimitIP are both in the range
LwpIpRange lwp_ip_range(const LwpState *s, uint64_t first, uint64_t last)
{
    if (first > last) {
        return LWP_IP_RANGE_BOTH;
    }
    if (s->base_ip <= first && last <= s->limit_ip) {
        return LWP_IP_RANGE_IN;
    }
    if (last < s->base_ip || first > s->limit_ip) {
        return LWP_IP_RANGE_OUT;
    }
    return LWP_IP_RANGE_BOTH;
}

// spec 6, Table 6-2 (IPF, IPI): "The range is inclusive if IPI is 0 and
// exclusive if IPI is 1"; ignored without LwpIpFiltering.
bool lwp_ip_eligible(const LwpState *s, const LwpContext *ctx, uint64_t ip)
{
    if (!(ctx->ecx & LWP_CAP_IP_FILTERING) || !(s->filters & LWP_FILTER_IPF)) {
        return true;
    }
    bool in = lwp_ip_range(s, ip, ip) == LWP_IP_RANGE_IN;
    return in != !!(s->filters & LWP_FILTER_IPI);
}

// Table 6-2, NAB/NCB/NRB by kind; NMB/NPB with LwpBranchPrediction
bool lwp_branch_eligible(const LwpState *s, const LwpContext *ctx,
                         unsigned kind, bool predicted, bool predicted_ok)
{
    uint32_t f = s->filters;
    static const uint32_t kind_filter[] = {LWP_FILTER_NCB, LWP_FILTER_NRB,
                                           LWP_FILTER_NAB};
    if (kind > LWP_BRANCH_INDIRECT || (f & kind_filter[kind])) {
        return false;
    }
    if (predicted && (ctx->ecx & LWP_CAP_BRANCH_PREDICTION)) {
        if (f & (predicted_ok ? LWP_FILTER_NPB : LWP_FILTER_NMB)) {
            return false;
        }
    }
    return true;
}

// Table 6-2, MinLatency and CLF (choice 28)
bool lwp_dme_eligible(const LwpState *s, const LwpContext *ctx,
                      uint32_t latency, unsigned source)
{
    uint32_t f = s->filters;
    if ((ctx->ecx & LWP_CAP_CACHE_LATENCY) &&
        (f & LWP_FILTER_MIN_LATENCY_MASK)) {
        uint32_t min = dme_latency(ctx, (f & LWP_FILTER_MIN_LATENCY_MASK) * 16);
        if (dme_latency(ctx, latency) < min) {
            return false;
        }
    }
    if ((ctx->ecx & LWP_CAP_CACHE_LEVELS) && (f & LWP_FILTER_CLF)) {
        uint32_t need;
        switch (source) {
        case LWP_DME_SRC_LOCAL_L3:
            need = LWP_FILTER_NBC;
            break;
        case LWP_DME_SRC_REMOTE:
        case LWP_DME_SRC_REMOTE_CACHE:
            need = LWP_FILTER_RDC;
            break;
        case LWP_DME_SRC_DRAM:
            need = LWP_FILTER_RAM;
            break;
        case LWP_DME_SRC_OTHER:
            need = LWP_FILTER_OTH;
            break;
        default:
            return false;
        }
        if (!(f & need)) {
            return false;
        }
    }
    return true;
}

LwpStatus lwp_store_events(LwpState *s, const LwpContext *ctx,
                           const LwpMem *mem, const LwpEventInfo *info,
                           uint32_t events, LwpResult *res)
{
    *res = LwpResult{};
    return enabled(s) ? store_due(s, ctx, mem, info, events, res) : LWP_OK;
}

LwpStatus lwp_sync(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                   LwpResult *res)
{
    *res = LwpResult{};
    return sync(s, ctx, mem, res);
}

// spec 5.4, Figure 2-8: "LWPINS simply clears CF if LWP is not enabled";
// CF = 1 when the buffer was full.
LwpStatus lwp_lwpins(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     uint64_t ip, uint32_t data1, uint64_t data2,
                     uint32_t flags, LwpResult *res)
{
    *res = LwpResult{};
    if (!enabled(s)) {
        return LWP_OK;
    }
    LwpStatus st = sync(s, ctx, mem, res);
    if (st != LWP_OK) {
        return st;
    }
    uint8_t rec[kRec];
    record_header(rec, LWP_EVENT_ID_INS, ctx, ip);
    st16(rec + LWP_REC_FLAGS, static_cast<uint16_t>(flags));
    st32(rec + LWP_REC_DATA1, data1);
    st64(rec + LWP_REC_DATA2, data2);
    return store_record(s, ctx, mem, rec, res);
}

// spec 5.3: LWPVAL counts only when LWP and its event are enabled (and,
// choice 27, the IP filter passes); the r/m operand is read only when the
// counter goes negative.
bool lwp_lwpval_fires(const LwpState *s, const LwpContext *ctx, uint64_t ip)
{
    return enabled(s) && (s->flags & LWP_FEAT_VAL) &&
           lwp_ip_eligible(s, ctx, ip) && s->counter[LWP_EVENT_ID_VAL] <= 0;
}

LwpStatus lwp_lwpval(LwpState *s, const LwpContext *ctx, const LwpMem *mem,
                     uint64_t ip, uint32_t data1, uint64_t data2,
                     uint32_t flags, LwpResult *res)
{
    *res = LwpResult{};
    if (!enabled(s) || !(s->flags & LWP_FEAT_VAL)) {
        return LWP_OK;
    }
    LwpStatus st = sync(s, ctx, mem, res);
    if (st != LWP_OK || !lwp_ip_eligible(s, ctx, ip)) {
        return st;
    }
    int32_t before = s->counter[LWP_EVENT_ID_VAL];
    s->counter[LWP_EVENT_ID_VAL] = before - 1;
    if (before > 0) {
        return LWP_OK;
    }
    // Figure 2-2
    uint8_t rec[kRec];
    record_header(rec, LWP_EVENT_ID_VAL, ctx, ip);
    st16(rec + LWP_REC_FLAGS, static_cast<uint16_t>(flags));
    st32(rec + LWP_REC_DATA1, data1);
    st64(rec + LWP_REC_DATA2, data2);
    st = store_record(s, ctx, mem, rec, res);
    if (st != LWP_OK) {
        // the instruction faults and will be restarted: not counted
        s->counter[LWP_EVENT_ID_VAL] = before;
        return st;
    }
    reset_counter(s, LWP_EVENT_ID_VAL);
    return LWP_OK;
}

} // extern "C"
