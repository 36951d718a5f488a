// Unit tests: counting, reset, the ring buffer, event records, LWPINS,
// LWPVAL and the pending record (spec 1.1, 2.1-2.7, 5.3, 5.4, 6, 8.1,
// 8.3, 8.6; implementation-choices rows 17-23, 25, 33).  Expected values
// are written out by hand from the spec's figures and the doc's rows.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <gtest/gtest.h>

#include "fake_mem.h"

namespace
{

using namespace lwptest;

constexpr uint32_t kE = LWP_EVENT_OFFSET;

LwpEventInfo branch(uint64_t ip, uint64_t target, uint8_t kind, bool taken,
                    bool predicted, bool predicted_ok, bool fused)
{
    LwpEventInfo info{};
    info.ip = ip;
    info.events = LWP_FEAT_BRE;
    info.target = target;
    info.branch_kind = kind;
    info.taken = taken;
    info.predicted = predicted;
    info.predicted_ok = predicted_ok;
    info.fused = fused;
    return info;
}

LwpEventInfo dcache_miss(uint64_t ip, unsigned source, bool addr_valid,
                         uint32_t latency, uint64_t addr)
{
    LwpEventInfo info{};
    info.ip = ip;
    info.events = LWP_FEAT_DME;
    info.dme_source = static_cast<uint8_t>(source);
    info.dme_addr_valid = addr_valid;
    info.dme_latency = latency;
    info.dme_addr = addr;
    return info;
}

// ---------------------------------------------------------------------------
// Counting and reset (spec 1.1 steps 1, 2, 5; 5.1 step 7; rows 17, 19)

using Counting = EngineTest;

TEST_F(Counting, CounterZeroStoresARecordOnTheNextEvent)
{
    // spec 5.1 step 7: "A zero or negative value in EventCounter n means
    // that the next event of that type will cause an event record"
    cb.flags = LWP_FEAT_IRE;
    cb.counter[2] = 0;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(retire(0x401000, LWP_FEAT_IRE), LWP_OK);
    EXPECT_EQ(res.stored, 1);
    EXPECT_EQ(slot(0), make_record(0x2a02, 0, 0x401000, 0));
    // Reset to the interval (1.1 step 5)
    EXPECT_EQ(s.counter[2], 0x1000);
}

TEST_F(Counting, NegativeCounterInTheLwpcbStoresOnTheNextEventToo)
{
    // Table 6-1 EventCounter: "LLWPCB treats a negative value as zero"
    cb.flags = LWP_FEAT_IRE;
    cb.counter[2] = 0x03ffffff; // -1: treated as zero
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(retire(0x401000, LWP_FEAT_IRE), LWP_OK);
    EXPECT_EQ(res.stored, 1);
    EXPECT_EQ(s.counter[2], 0x1000);
}

TEST_F(Counting, CounterNStoresOnTheEventAfterTheNth)
{
    // 1.1 step 2: the record is for the event that makes it negative
    cb.flags = LWP_FEAT_IRE;
    cb.counter[2] = 2;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(retire(0x1000, LWP_FEAT_IRE), LWP_OK);
    EXPECT_EQ(s.counter[2], 1);
    ASSERT_EQ(retire(0x1004, LWP_FEAT_IRE), LWP_OK);
    EXPECT_EQ(s.counter[2], 0);
    EXPECT_EQ(res.stored, 0);
    EXPECT_EQ(s.head, 0u);
    ASSERT_EQ(retire(0x1008, LWP_FEAT_IRE), LWP_OK);
    EXPECT_EQ(res.stored, 1);
    EXPECT_EQ(slot(0), make_record(0x2a02, 0, 0x1008, 0));
}

TEST_F(Counting, IntervalNStoresEveryNPlusFirstEvent)
{
    // Table 6-1 EventInterval2: "after n+1 ... instructions are retired";
    // design: exact, every (interval+1)-th event.
    cb.flags = LWP_FEAT_IRE;
    cb.interval[2] = 0xff;
    cb.counter[2] = 0;
    ASSERT_EQ(load(), LWP_OK);
    for (uint64_t i = 0; i < 600; i++) {
        ASSERT_EQ(retire(0x10000 + 4 * i, LWP_FEAT_IRE), LWP_OK);
    }
    EXPECT_EQ(s.head, 0x60u);
    EXPECT_EQ(slot(0), make_record(0x2a02, 0, 0x10000, 0));
    EXPECT_EQ(slot(1), make_record(0x2a02, 0, 0x10000 + 4 * 256, 0));
    EXPECT_EQ(slot(2), make_record(0x2a02, 0, 0x10000 + 4 * 512, 0));
    EXPECT_EQ(s.counter[2], 0xff - (599 - 512));
}

TEST_F(Counting, IntervalBelowTheMinimumCountsAtTheMinimum)
{
    // Row 17: EventInterval2 = 0 is used as the minimum, 1: a record for
    // every second instruction after the first
    cb.flags = LWP_FEAT_IRE;
    cb.interval[2] = 0;
    ASSERT_EQ(load(), LWP_OK);
    for (uint64_t i = 0; i < 6; i++) {
        ASSERT_EQ(retire(0x10000 + i, LWP_FEAT_IRE), LWP_OK);
    }
    EXPECT_EQ(s.head, 0x60u);
    EXPECT_EQ(slot(0), make_record(0x2a02, 0, 0x10000, 0));
    EXPECT_EQ(slot(1), make_record(0x2a02, 0, 0x10000 + 2, 0));
    EXPECT_EQ(slot(2), make_record(0x2a02, 0, 0x10000 + 4, 0));
}

TEST_F(Counting, OverrunReducesTheNextReset)
{
    // 1.1 step 5; row 19: counter c <= -1 becomes reset + (c + 1)
    cb.flags = LWP_FEAT_IRE;
    cb.counter[2] = 5;
    ASSERT_EQ(load(), LWP_OK);
    s.counter[2] = -3; // generated code counted past zero
    LwpEventInfo info{};
    info.ip = 0x2000;
    info.events = LWP_FEAT_IRE;
    ASSERT_EQ(store_events(info, LWP_FEAT_IRE), LWP_OK);
    EXPECT_EQ(res.stored, 1);
    EXPECT_EQ(slot(0), make_record(0x2a02, 0, 0x2000, 0));
    EXPECT_EQ(s.counter[2], 0x1000 - 2);
}

TEST_F(Counting, ResetAtTheCounterBoundaries)
{
    // Row 19 at c = -1, -2, -3: reset, reset - 1, reset - 2; a counter of
    // 0 stores nothing
    cb.flags = LWP_FEAT_IRE;
    cb.interval[2] = 0x300;
    ASSERT_EQ(load(), LWP_OK);
    LwpEventInfo info{};
    info.ip = 0x2000;
    info.events = LWP_FEAT_IRE;
    for (int c : {0, -1, -2, -3}) {
        s.counter[2] = c;
        ASSERT_EQ(store_events(info, LWP_FEAT_IRE), LWP_OK) << "c " << c;
        EXPECT_EQ(res.stored, c < 0 ? 1 : 0) << "c " << c;
        EXPECT_EQ(s.counter[2], c < 0 ? 0x300 + c + 1 : 0) << "c " << c;
    }
}

TEST_F(Counting, OverrunNeverMakesTheResetNegative)
{
    // Row 19: "at least 0"
    cb.flags = LWP_FEAT_IRE;
    ASSERT_EQ(load(), LWP_OK);
    s.counter[2] = -0x2000;
    LwpEventInfo info{};
    info.ip = 0x2000;
    info.events = LWP_FEAT_IRE;
    ASSERT_EQ(store_events(info, LWP_FEAT_IRE), LWP_OK);
    EXPECT_EQ(s.counter[2], 0);
}

TEST_F(Counting, StoreEventsStoresOnlyForNegativeCounters)
{
    // lwp_store_events: "store a record ... for each of them that is
    // negative"
    cb.flags = LWP_FEAT_IRE | LWP_FEAT_BRE;
    cb.counter[2] = 9;
    ASSERT_EQ(load(), LWP_OK);
    s.counter[2] = 0;
    s.counter[3] = -1;
    LwpEventInfo info =
        branch(0x3000, 0x3010, LWP_BRANCH_REL, true, false, false, false);
    ASSERT_EQ(store_events(info, LWP_FEAT_IRE | LWP_FEAT_BRE), LWP_OK);
    EXPECT_EQ(res.stored, 1);
    EXPECT_EQ(slot(0)[0], LWP_EVENT_ID_BRE);
    EXPECT_EQ(s.counter[2], 0);
    EXPECT_EQ(s.counter[3], 0x1000);
}

TEST_F(Counting, ClockEventsCountTheCyclesTheInstructionTook)
{
    // spec 2.5, 2.6: one decrement per (reference) clock
    cb.flags = LWP_FEAT_CNH | LWP_FEAT_RNH;
    cb.counter[5] = 5;
    cb.counter[6] = 100;
    ASSERT_EQ(load(), LWP_OK);
    LwpEventInfo info{};
    info.ip = 0x5000;
    info.events = LWP_FEAT_CNH | LWP_FEAT_RNH;
    info.cycles = 3;
    info.ref_cycles = 40;
    ASSERT_EQ(retire(info), LWP_OK);
    EXPECT_EQ(s.counter[5], 2);
    EXPECT_EQ(s.counter[6], 60);
    EXPECT_EQ(res.stored, 0);

    info.ip = 0x5004;
    info.cycles = 4;      // 2 - 4 = -2
    info.ref_cycles = 70; // 60 - 70 = -10
    ASSERT_EQ(retire(info), LWP_OK);
    EXPECT_EQ(res.stored, 2);
    EXPECT_EQ(slot(0), make_record(0x2a05, 0, 0x5004, 0));
    EXPECT_EQ(slot(1), make_record(0x2a06, 0, 0x5004, 0));
    EXPECT_EQ(s.counter[5], 0x1000 - 1);
    EXPECT_EQ(s.counter[6], 0x1000 - 9);
}

TEST_F(Counting, SeveralNegativeCountersOnOneInstructionStoreOneRecordEach)
{
    // 1.1 step 2, 8.1; row 20: one record per event, ascending EventId
    cb.flags = 0x7c;
    ASSERT_EQ(load(), LWP_OK);
    LwpEventInfo info =
        branch(0x6000, 0x6100, LWP_BRANCH_INDIRECT, true, false, false, false);
    info.events = LWP_FEAT_IRE | LWP_FEAT_BRE | LWP_FEAT_DME | LWP_FEAT_CNH |
                  LWP_FEAT_RNH;
    info.cycles = 1;
    info.ref_cycles = 1;
    info.dme_source = LWP_DME_SRC_DRAM;
    info.dme_latency = 0x40;
    ASSERT_EQ(retire(info), LWP_OK);
    EXPECT_EQ(res.stored, 5);
    EXPECT_EQ(s.head, 0xa0u);
    for (unsigned i = 0; i < 5; i++) {
        EXPECT_EQ(slot(i)[0], static_cast<int>(2 + i)) << "slot " << i;
        EXPECT_EQ(s.counter[2 + i], 0x1000) << "EventId " << 2 + i;
    }
}

TEST_F(Counting, EventsThatAreNotEnabledAreNotCounted)
{
    // spec 1.1 step 1, Figure 6-2: only the events enabled in Flags count
    cb.flags = LWP_FEAT_IRE;
    cb.counter[2] = 5;
    ASSERT_EQ(load(), LWP_OK);
    LwpEventInfo info =
        branch(0x6000, 0x6100, LWP_BRANCH_REL, true, false, false, false);
    info.events |= LWP_FEAT_IRE;
    ASSERT_EQ(retire(info), LWP_OK);
    EXPECT_EQ(s.counter[2], 4);
    EXPECT_EQ(res.stored, 0);
    EXPECT_EQ(s.head, 0u);
}

TEST_F(Counting, NothingIsCountedWhileLwpIsDisabled)
{
    // spec 1.1: LWP counts only "When enabled"
    ASSERT_EQ(retire(0x401000, LWP_FEAT_IRE), LWP_OK);
    EXPECT_EQ(res.stored, 0);
    EXPECT_TRUE(m.log().empty());
    EXPECT_EQ(s.cb_addr, 0u);
}

// ---------------------------------------------------------------------------
// Randomisation (Table 6-1 Random, 1.1 step 5; row 18)

using Randomisation = EngineTest;

TEST_F(Randomisation, ReferenceSplitmix64FromStateZero)
{
    // The hand-checked anchor of row 18's generator
    uint64_t state = 0;
    EXPECT_EQ(splitmix64(&state), 0xe220a8397b1dcdafull);
    EXPECT_EQ(state, 0x9e3779b97f4a7c15ull);
    EXPECT_EQ(splitmix64(&state), 0x6e789e6aa1b965f4ull);
    EXPECT_EQ(splitmix64(&state), 0x06c45d188009454full);
}

TEST_F(Randomisation, RandomZeroIsDeterministicAndDrawsNothing)
{
    // Row 18: "Random = 0 draws nothing"; design: exact with Random = 0
    cb.flags = LWP_FEAT_IRE;
    cb.interval[2] = 0x1234;
    cb.random = 0;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(lwp_next_interval(&s, 2), 0x1234);
    EXPECT_EQ(lwp_next_interval(&s, 2), 0x1234);
    EXPECT_EQ(s.rng, 0u);
}

TEST_F(Randomisation, Random15UsesSplitmix64FromStateZero)
{
    // m = 2^15 - 1 = 0x7fff; interval 0x10000 keeps its high bits:
    // 0xe220a8397b1dcdaf & 0x7fff = 0x4daf, then 0x65f4, then 0x454f
    cb.flags = LWP_FEAT_IRE;
    cb.interval[2] = 0x10000;
    cb.random = 15;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.rng, 0u);
    EXPECT_EQ(lwp_next_interval(&s, 2), 0x14daf);
    EXPECT_EQ(s.rng, 0x9e3779b97f4a7c15ull);
    EXPECT_EQ(lwp_next_interval(&s, 2), 0x165f4);
    EXPECT_EQ(lwp_next_interval(&s, 2), 0x1454f);
}

TEST_F(Randomisation, RandomSetsOnlyTheBottomBits)
{
    // Random = 4, m = 0xf: (0x1234 & ~0xf) | (x & 0xf); x ends in ...f,
    // ...4, ...f
    cb.flags = LWP_FEAT_IRE;
    cb.interval[2] = 0x1234;
    cb.random = 4;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(lwp_next_interval(&s, 2), 0x123f);
    EXPECT_EQ(lwp_next_interval(&s, 2), 0x1234);
    EXPECT_EQ(lwp_next_interval(&s, 2), 0x123f);
}

TEST_F(Randomisation, TheInitialCounterIsNotRandomisedButEachResetIs)
{
    // spec 5.1 step 7 loads EventCounter as is; Table 6-1 Random applies
    // "each time a counter is loaded from an interval"; row 19 overrun
    cb.flags = LWP_FEAT_IRE;
    cb.interval[2] = 0x10000;
    cb.counter[2] = 1;
    cb.random = 15;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.counter[2], 1);
    EXPECT_EQ(s.rng, 0u);
    ASSERT_EQ(retire(0x1000, LWP_FEAT_IRE), LWP_OK);
    ASSERT_EQ(retire(0x1004, LWP_FEAT_IRE), LWP_OK);
    EXPECT_EQ(res.stored, 1);
    EXPECT_EQ(s.counter[2], 0x14daf);
    EXPECT_EQ(s.rng, 0x9e3779b97f4a7c15ull);

    s.counter[2] = -5;
    LwpEventInfo info{};
    info.ip = 0x1008;
    info.events = LWP_FEAT_IRE;
    ASSERT_EQ(store_events(info, LWP_FEAT_IRE), LWP_OK);
    EXPECT_EQ(s.counter[2], 0x165f4 - 4);
}

TEST_F(Randomisation, GeneratorRestartsAtZeroOnLlwpcb)
{
    // Row 18: "Its state is 0 after LLWPCB"
    cb.flags = LWP_FEAT_IRE;
    cb.interval[2] = 0x10000;
    cb.random = 15;
    ASSERT_EQ(load(), LWP_OK);
    lwp_next_interval(&s, 2);
    lwp_next_interval(&s, 2);
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.rng, 0u);
    EXPECT_EQ(lwp_next_interval(&s, 2), 0x14daf);
}

// ---------------------------------------------------------------------------
// The ring buffer (1.1 step 3, 6 BufferHeadOffset/MissedEvents/
// BufferTailOffset, 8.3; rows 21, 23)

using Ring = EngineTest;

TEST_F(Ring, RecordGoesToTheSlotAtTheHeadAndTheHeadAdvances)
{
    // spec 1.1 step 3: stored at the head, which advances; row 21
    cb.head = 0x40;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(lwpins(0x1000, 1, 2, 3), LWP_OK);
    EXPECT_EQ(slot(2), make_record(0x0003'2aff, 1, 0x1000, 2));
    EXPECT_EQ(s.head, 0x60u);
    EXPECT_EQ(head_in_lwpcb(), 0x60u);
    EXPECT_EQ(res.full, 0);
}

TEST_F(Ring, HeadWrapsFromTheLastSlotToZero)
{
    // spec 1.1 (the ring "might wrap around from the end of the ring to the
    // beginning"): a head of BufferSize - 32 advances to 0
    cb.head = 0x3e0;
    cb.tail = 0x200;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(slot(31), make_record(0x2aff, 0, 0x1000, 0));
    EXPECT_EQ(s.head, 0u);
    EXPECT_EQ(head_in_lwpcb(), 0u);
    EXPECT_EQ(res.full, 0);
}

TEST_F(Ring, FullBufferOverwritesTheSlotAtTheHeadAndCountsMissedEvents)
{
    // Full: advancing the head would make it equal to the tail (1.1 step
    // 3); the record overwrites the slot at the head, MissedEvents + 1,
    // the head stays (row 21)
    cb.tail = 0x40;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(res.full, 0);
    EXPECT_EQ(head_in_lwpcb(), 0x20u);

    ASSERT_EQ(lwpins(0x2000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(res.full, 1);
    EXPECT_EQ(slot(1), make_record(0x2aff, 0, 0x2000, 0));
    EXPECT_EQ(s.head, 0x20u);
    EXPECT_EQ(head_in_lwpcb(), 0x20u);
    EXPECT_EQ(missed_in_lwpcb(), 1u);

    ASSERT_EQ(lwpins(0x3000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(res.full, 1);
    EXPECT_EQ(slot(0), make_record(0x2aff, 0, 0x1000, 0));
    EXPECT_EQ(slot(1), make_record(0x2aff, 0, 0x3000, 0));
    EXPECT_EQ(slot(2), Record{});
    EXPECT_EQ(s.head, 0x20u);
    EXPECT_EQ(missed_in_lwpcb(), 2u);
}

TEST_F(Ring, BufferOfTheMinimumSizeHoldsThirtyOneRecords)
{
    // 32 slots; the last free slot is never filled while tail = 0
    ASSERT_EQ(load(), LWP_OK);
    for (unsigned i = 0; i < 31; i++) {
        ASSERT_EQ(lwpins(0x1000 + i, 0, 0, 0), LWP_OK);
        EXPECT_EQ(res.full, 0) << "record " << i;
    }
    EXPECT_EQ(head_in_lwpcb(), 0x3e0u);
    ASSERT_EQ(lwpins(0x2000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(res.full, 1);
    EXPECT_EQ(head_in_lwpcb(), 0x3e0u);
    EXPECT_EQ(missed_in_lwpcb(), 1u);
    EXPECT_EQ(slot(31), make_record(0x2aff, 0, 0x2000, 0));
}

TEST_F(Ring, MissedEventsIsA64BitCounter)
{
    // Table 6-1: "The 64-bit count"
    cb.tail = 0x20;
    cb.missed = 0xffffffff;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(res.full, 1);
    EXPECT_EQ(missed_in_lwpcb(), 0x100000000ull);
}

TEST_F(Ring, MissedEventsIsKeptInMemory)
{
    // 8.3: "The MissedEvents value is a counter for an exceptional
    // condition and is kept in memory": software may reset it
    cb.tail = 0x20;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(missed_in_lwpcb(), 1u);
    m.poke64(kCb + LWPCB_MISSED, 100);
    ASSERT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(missed_in_lwpcb(), 101u);
}

TEST_F(Ring, CounterIsResetWhenTheBufferIsFull)
{
    // 1.1 step 5: "Reset happens if the ring buffer head pointer was
    // advanced or if the missed event counter was incremented"
    cb.flags = LWP_FEAT_IRE;
    cb.tail = 0x20;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(retire(0x1000, LWP_FEAT_IRE), LWP_OK);
    EXPECT_EQ(res.full, 1);
    EXPECT_EQ(missed_in_lwpcb(), 1u);
    EXPECT_EQ(s.counter[2], 0x1000);
}

TEST_F(Ring, TailIsRereadWhenTheBufferLooksFull)
{
    // 8.3: "It also rereads it whenever the ring buffer appears to be full"
    cb.tail = 0x20;
    ASSERT_EQ(load(), LWP_OK);
    m.poke32(kCb + LWPCB_TAIL, 0x200); // software consumed records
    ASSERT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(res.full, 0);
    EXPECT_EQ(head_in_lwpcb(), 0x20u);
    EXPECT_EQ(missed_in_lwpcb(), 0u);
}

TEST_F(Ring, TailBreakingTheRulesIsUsedModuloSizeRoundedDown)
{
    // Row 23: (0x428 mod 0x400) rounded down to 32 = 0x20: the first
    // store finds the buffer full
    cb.tail = 0x428;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(res.full, 1);
    EXPECT_EQ(slot(0), make_record(0x2aff, 0, 0x1000, 0));
    EXPECT_EQ(head_in_lwpcb(), 0u);
    EXPECT_EQ(missed_in_lwpcb(), 1u);
}

TEST_F(Ring, HeadIsWrittenAfterEveryStoreAndAfterTheRecord)
{
    // Row 21: "The head is written to the LWPCB after every store, after
    // the record"
    ASSERT_EQ(load(), LWP_OK);
    for (unsigned i = 0; i < 3; i++) {
        m.clear_log();
        ASSERT_EQ(lwpins(0x1000 + i, 0, 0, 0), LWP_OK);
        EXPECT_EQ(head_in_lwpcb(), 0x20u * (i + 1)) << "store " << i;
        long rec = m.first_write(kBuf + 0x20 * i, LWP_EVENT_RECORD_SIZE);
        long head = m.first_write(kCb + LWPCB_HEAD, 4);
        EXPECT_GE(rec, 0) << "store " << i;
        EXPECT_GT(head, rec) << "store " << i;
    }
}

TEST_F(Ring, RecordThatPasses4GIsSplitOutsideLongMode)
{
    // lwp-engine.h: "outside long mode the engine splits it at 4G".  DS
    // base 0xfffff000: the ring at ea 0xff0 starts at linear 0xfffffff0,
    // so its first slot is 16 bytes below 4G and 16 bytes at 0.
    ctx.long64 = 0;
    ctx.lma = 0;
    ctx.ds_base = 0xfffff000;
    m.map(0xfffff000, kPageSize, kReadWrite);
    m.map(0, kPageSize, kReadWrite);
    cb.buffer_base = 0xff0;
    cb.write(m, 0xfffff100);
    ASSERT_EQ(llwpcb(0x100), LWP_OK);
    ASSERT_EQ(lwpins(0x1000, 0x11223344, 0x5566778899aabbccull, 0x7788),
              LWP_OK);
    Record got;
    m.peek(0xfffffff0, got.data(), 16);
    m.peek(0, got.data() + 16, 16);
    EXPECT_EQ(got, make_record(0x7788'2aff, 0x11223344, 0x1000,
                               0x5566778899aabbccull));
    EXPECT_EQ(head_in_lwpcb(0xfffff100), 0x20u);
}

// ---------------------------------------------------------------------------
// The threshold interrupt (1.1 step 4, Table 6-1 Threshold, 8.3; row 22)

class Threshold : public EngineTest
{
  protected:
    void SetUp() override
    {
        EngineTest::SetUp();
        cb.flags = LWP_FEAT_INT;
    }
    // Store one LWPINS record; return whether it asked for the interrupt
    bool store()
    {
        EXPECT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
        return res.interrupt != 0;
    }
};

TEST_F(Threshold, InterruptWhileSpaceUsedIsAtLeastTheThreshold)
{
    // Table 6-1 Threshold: "If the space used equals or exceeds Threshold,
    // LWP causes an interrupt"; row 22: checked after every store
    cb.threshold = 0x40;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(store()); // used 0x20
    EXPECT_TRUE(store());  // used 0x40
    EXPECT_TRUE(store());  // used 0x60
}

TEST_F(Threshold, ThresholdIsRoundedDownToTheRecordSize)
{
    // Table 6-1 Threshold: "the value used internally will be rounded down"
    cb.threshold = 0x5f; // 0x40
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(store());
    EXPECT_TRUE(store());

    cb.threshold = 0x3f; // 0x20
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(store());
}

TEST_F(Threshold, ZeroInterruptsOnEveryStoreThatAdvancesTheHead)
{
    // "If Threshold is zero, an interrupt will be taken every time an
    // event record is stored in the ring buffer"; the check is made "when
    // LWP advances BufferHeadOffset" (Table 6-1 Threshold)
    cb.threshold = 0;
    cb.tail = 0x40;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(store()); // head 0x20
    EXPECT_EQ(res.full, 0);
    EXPECT_FALSE(store()); // full: the head stays, the event is missed
    EXPECT_EQ(res.full, 1);
}

TEST_F(Threshold, NoInterruptForARecordThatFindsTheRingFull)
{
    // Table 6-1 Threshold: the space used is computed "when LWP advances
    // BufferHeadOffset"; a record that finds the ring full does not
    // advance it (1.1 step 3, 5.4: "If the ring buffer is not full, the
    // head pointer is advanced"), it only increments MissedEvents.  Once
    // software empties the ring, stores interrupt again.
    cb.threshold = 0x20;
    cb.head = 0x3c0;
    cb.tail = 0;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(store()); // head 0x3e0: used 0x3e0
    for (unsigned i = 0; i < 3; i++) {
        EXPECT_FALSE(store()) << "full store " << i;
        EXPECT_EQ(res.full, 1);
    }
    EXPECT_EQ(missed_in_lwpcb(), 3u);
    EXPECT_EQ(head_in_lwpcb(), 0x3e0u);
    m.poke32(kCb + LWPCB_TAIL, 0x3e0);
    EXPECT_TRUE(store()); // head 0: used 0x20
    EXPECT_EQ(res.full, 0);
}

TEST_F(Threshold, AboveBufferSizeMinusOneRecordNeverInterrupts)
{
    // "If Threshold is greater than BufferSize, no interrupt will ever be
    // taken"; row 22: the space used is at most BufferSize - 32
    for (uint32_t t : {0x400u, 0x41fu, 0xffffffffu}) {
        cb.threshold = t;
        ASSERT_EQ(load(), LWP_OK);
        for (unsigned i = 0; i < 33; i++) {
            EXPECT_FALSE(store()) << "threshold " << t << " store " << i;
        }
    }
}

TEST_F(Threshold, ThresholdOfTheLastSlotFiresWhenTheBufferFills)
{
    // Row 22: the space used reaches at most BufferSize - 32 = 0x3e0
    cb.threshold = 0x3e0;
    ASSERT_EQ(load(), LWP_OK);
    for (unsigned i = 0; i < 30; i++) {
        EXPECT_FALSE(store()) << "store " << i;
    }
    EXPECT_TRUE(store()); // used 0x3e0
    EXPECT_FALSE(store()); // full: the head does not advance
    EXPECT_EQ(res.full, 1);
}

TEST_F(Threshold, SpaceUsedIsHeadMinusTailModuloBufferSize)
{
    // Table 6-1 Threshold: ((BufferHeadOffset - BufferTailOffset) %
    // BufferSize)
    cb.head = 0x3c0;
    cb.tail = 0x3a0;
    cb.threshold = 0x60;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(store()); // head 0x3e0: 0x40
    EXPECT_TRUE(store());  // head 0: 0x60
    EXPECT_EQ(head_in_lwpcb(), 0u);
}

TEST_F(Threshold, InterruptNeedsIntInFlags)
{
    // Table 6-1 Threshold: "Ignored if ... they are not enabled in Flags"
    cb.flags = 0;
    cb.threshold = 0;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(store());
}

TEST_F(Threshold, InterruptNeedsIntInLwpCfg)
{
    // Table 6-1 Threshold: "Ignored if threshold interrupts are not
    // available in LWP_CFG"
    ctx.cfg = 0x0000002a0000007eull;
    cb.threshold = 0;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(m.peek32(kCb + LWPCB_FLAGS), 0u);
    EXPECT_FALSE(store());
}

TEST_F(Threshold, TailIsRereadWhileOverThreshold)
{
    // 8.3: "the hardware rereads the tail pointer every time it stores an
    // event record while the threshold condition appears to be true"
    cb.threshold = 0x40;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(store());
    EXPECT_TRUE(store());
    m.poke32(kCb + LWPCB_TAIL, 0x40);
    EXPECT_FALSE(store()); // head 0x60, tail 0x40: 0x20 used
}

// ---------------------------------------------------------------------------
// Deferring a store (spec 1.1 steps 3 and 5; choice 51)

class Deferral : public EngineTest
{
  protected:
    // IRE enabled, its counter -1: one record is due
    void SetUp() override
    {
        EngineTest::SetUp();
        cb.flags = LWP_FEAT_IRE;
    }
    bool deferrable(uint32_t overrun)
    {
        return lwp_store_deferrable(&s, &ctx, LWP_EVENT_ID_IRE, overrun);
    }
};

TEST_F(Deferral, WithoutInterruptUpToTheInterval)
{
    // Step 5: reset 0x1000 minus the overrun stays >= 0 for an overrun up
    // to 0x1000, so no second record falls due meanwhile
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(deferrable(0));
    EXPECT_TRUE(deferrable(7));
    EXPECT_TRUE(deferrable(0x1000));
    EXPECT_FALSE(deferrable(0x1001));
}

TEST_F(Deferral, RandomLowersTheSmallestReset)
{
    // Step 5 / 6 Random: the low Random bits of the reset are random, so
    // the smallest reset of 0x1234 with Random 8 is 0x1200, with 12 0x1000
    cb.interval[2] = 0x1234;
    cb.random = 8;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(deferrable(0x1200));
    EXPECT_FALSE(deferrable(0x1201));
    cb.random = 12;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(deferrable(0x1000));
    EXPECT_FALSE(deferrable(0x1001));
    cb.random = 13;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(deferrable(0));
    EXPECT_FALSE(deferrable(1));
}

TEST_F(Deferral, NotAcrossTheThreshold)
{
    // Table 6-1 Threshold: the store that makes the space used reach
    // Threshold interrupts, so it is not deferred; 0x40 is reached by the
    // second record
    cb.flags = LWP_FEAT_IRE | LWP_FEAT_INT;
    cb.threshold = 0x40;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(deferrable(1));
    ASSERT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_FALSE(deferrable(1));
    // without INT in Flags the threshold does not matter
    cb.flags = LWP_FEAT_IRE;
    cb.head = 0x20;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(deferrable(1));
}

TEST_F(Deferral, NotWhenTheRingLooksFull)
{
    // 8.3: a ring that looks full makes the store reread the tail
    cb.head = 0x3e0;
    cb.tail = 0;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(deferrable(1));
    cb.tail = 0x20;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_TRUE(deferrable(1));
}

TEST_F(Deferral, NotWithAPendingRecordOrForAnEventOff)
{
    ASSERT_EQ(load(), LWP_OK);
    s.pending[LWP_REC_EVENT_ID] = LWP_EVENT_ID_IRE;
    EXPECT_FALSE(deferrable(1));
    s.pending[LWP_REC_EVENT_ID] = 0;
    EXPECT_TRUE(deferrable(1));
    EXPECT_FALSE(lwp_store_deferrable(&s, &ctx, LWP_EVENT_ID_BRE, 1));
    EXPECT_FALSE(lwp_store_deferrable(&s, &ctx, 0, 1));
    EXPECT_FALSE(lwp_store_deferrable(&s, &ctx, LWP_NUM_EVENTS + 1, 1));
    ASSERT_EQ(llwpcb(0), LWP_OK);
    EXPECT_FALSE(deferrable(1));
}

TEST_F(Deferral, DeferredStoreLeavesWhatAStoreNowWould)
{
    // The claim deferral rests on, for every overrun it allows: store at
    // counter -1 then count @overrun more, against count them first and
    // store at -1 - overrun.  Same ring, LWPCB, counter, and generator.
    for (uint8_t random : {0, 4}) {
        for (uint32_t overrun : {0u, 1u, 5u, 0xf00u}) {
            cb.random = random;
            cb.flags = LWP_FEAT_IRE | LWP_FEAT_INT;
            cb.threshold = 0x100;
            ASSERT_EQ(load(), LWP_OK);
            ASSERT_TRUE(deferrable(overrun));
            LwpEventInfo info{};
            info.ip = 0x401234;
            info.events = LWP_FEAT_IRE;
            auto cb0 = m.bytes(kCb, kPageSize);
            auto buf0 = m.bytes(kBuf, kPageSize);
            LwpState s0 = s;

            s.counter[2] = -1;
            ASSERT_EQ(store_events(info, LWP_FEAT_IRE), LWP_OK);
            s.counter[2] -= overrun;
            EXPECT_EQ(res.interrupt, 0);
            auto now_cb = m.bytes(kCb, kPageSize);
            auto now_buf = m.bytes(kBuf, kPageSize);
            LwpState now_s = s;

            m.poke(kCb, cb0.data(), cb0.size());
            m.poke(kBuf, buf0.data(), buf0.size());
            s = s0;
            s.counter[2] = -1 - static_cast<int32_t>(overrun);
            ASSERT_EQ(store_events(info, LWP_FEAT_IRE), LWP_OK);
            EXPECT_EQ(res.interrupt, 0);
            EXPECT_EQ(res.stored, 1);
            EXPECT_EQ(slot(0), make_record(0x2a02, 0, 0x401234, 0));
            EXPECT_EQ(m.bytes(kCb, kPageSize), now_cb) << "overrun " << overrun;
            EXPECT_EQ(m.bytes(kBuf, kPageSize), now_buf);
            EXPECT_EQ(memcmp(&s, &now_s, sizeof(s)), 0)
                << "random " << int(random) << " overrun " << overrun;
            EXPECT_GE(s.counter[2], 0);
        }
    }
}

// ---------------------------------------------------------------------------
// Event records (spec 2, Figures 2-1 to 2-8; row 33)

// One record, checked byte for byte against its figure: the event
// enabled in Flags, the CPUID ECX capabilities taken away, the call that
// stores the record, and the 32 bytes written out by hand from the figure
struct RecordCase {
    const char *name;
    uint32_t flags;
    uint32_t ecx_clear;
    enum Via { kRetire, kLwpval, kLwpins } via;
    LwpEventInfo info; // kRetire: the instruction; kLwpval, kLwpins: ip
    uint32_t data1;    // kLwpval, kLwpins
    uint64_t data2;
    uint32_t imm;
    Record want;
};

void PrintTo(const RecordCase &c, std::ostream *os)
{
    *os << c.name;
}

RecordCase retired(const char *name, uint32_t flags, const LwpEventInfo &info,
                   const Record &want, uint32_t ecx_clear = 0)
{
    return {name, flags, ecx_clear, RecordCase::kRetire, info, 0, 0, 0, want};
}

RecordCase lwp_insn(const char *name, RecordCase::Via via, uint32_t flags,
                    uint64_t ip, uint32_t data1, uint64_t data2, uint32_t imm,
                    const Record &want)
{
    return {name, flags, 0, via, plain_insn(ip, 0), data1, data2, imm, want};
}

std::vector<RecordCase> record_cases()
{
    return {
        // Figure 2-2: Flags = imm16, Data1 = reg/mem, Data2 = reg
        lwp_insn(
            "ProgrammedValueSampleLayout", RecordCase::kLwpval, LWP_FEAT_VAL,
            0x401000, 0xdeadbeef, 0x1122334455667788ull, 0xabcd1234,
            record_bytes("01 2a 34 12 ef be ad de 00 10 40 00 00 00 00 00 "
                         "88 77 66 55 44 33 22 11 00 00 00 00 00 00 00 00")),
        // Figure 2-3 (generic): EventId 2, CoreId, InstructionAddress
        retired(
            "InstructionsRetiredLayout", LWP_FEAT_IRE,
            plain_insn(0x00007f0012345678ull, LWP_FEAT_IRE),
            record_bytes("02 2a 00 00 00 00 00 00 78 56 34 12 00 7f 00 00 "
                         "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00")),
        // Figure 2-4: TKN (bit 31), PRD (30), PRV (29) -> byte 3 = 0xe0;
        // TargetAddress at 23-16
        retired(
            "BranchRetiredTakenAndPredictedLayout", LWP_FEAT_BRE,
            branch(0x401000, 0x402000, LWP_BRANCH_COND, true, true, true,
                   false),
            record_bytes("03 2a 00 e0 00 00 00 00 00 10 40 00 00 00 00 00 "
                         "00 20 40 00 00 00 00 00 00 00 00 00 00 00 00 00")),
        // FUS (bit 28) and PRV (29) -> byte 3 = 0x30; TargetAddress is the
        // fall-through address of the not-taken branch
        retired(
            "BranchRetiredFusedNotTakenMispredictedLayout", LWP_FEAT_BRE,
            branch(0x401000, 0x401006, LWP_BRANCH_COND, false, true, false,
                   true),
            record_bytes("03 2a 00 30 00 00 00 00 00 10 40 00 00 00 00 00 "
                         "06 10 40 00 00 00 00 00 00 00 00 00 00 00 00 00")),
        // PRV = 0, PRD = 0; TKN "Always 1 for unconditional branches"
        retired(
            "BranchRetiredWithoutPredictionInformationLayout", LWP_FEAT_BRE,
            branch(0xffffffff, 0x100000000ull, LWP_BRANCH_REL, true, false,
                   false, false),
            record_bytes("03 2a 00 80 00 00 00 00 ff ff ff ff 00 00 00 00 "
                         "00 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00")),
        // Figure 2-5: DAV bit 28, SRC 31:29 (3 = DRAM) -> byte 3 = 0x70;
        // Latency at 7-4, rounded down to 2^LatencyRnd = 16 (row 28): 200
        // -> 192 = 0xc0; DataAddress at 23-16
        retired(
            "DcacheMissLayout", LWP_FEAT_DME,
            dcache_miss(0x401000, LWP_DME_SRC_DRAM, true, 200,
                        0x00007fff12345678ull),
            record_bytes("04 2a 00 70 c0 00 00 00 00 10 40 00 00 00 00 00 "
                         "78 56 34 12 ff 7f 00 00 00 00 00 00 00 00 00 00")),
        // 2.4.1, row 28: cap 2^10 - 2^4 = 1008 = 0x3f0
        retired("DcacheMissLatencyIsCappedAtLatencyMax", LWP_FEAT_DME,
                dcache_miss(0x401000, LWP_DME_SRC_LOCAL_L3, true, 5000, 0x1000),
                make_record(0x3000'2a04, 0x3f0, 0x401000, 0x1000)),
        // Figure 2-5 DAV 0: "Address is unavailable"; undefined fields are
        // zero (spec 2).  SRC 7 (Other) -> byte 3 = 0xe0
        retired(
            "DcacheMissWithoutAValidAddressHasDavZeroAndNoAddress",
            LWP_FEAT_DME,
            dcache_miss(0x401000, LWP_DME_SRC_OTHER, false, 0x40, 0x12345678),
            make_record(0xe000'2a04, 0x40, 0x401000, 0)),
        // Table 3-1 LwpDataAddress 0: "Data address is not reported"
        retired(
            "DcacheMissWithoutTheDataAddressCapabilityHasNoAddress",
            LWP_FEAT_DME,
            dcache_miss(0x401000, LWP_DME_SRC_REMOTE, true, 0x40, 0x12345678),
            make_record(0x4000'2a04, 0x40, 0x401000, 0), LWP_CAP_DATA_ADDRESS),
        // Figure 2-6 (generic), EventId 5
        retired("CpuClocksNotHaltedLayout", LWP_FEAT_CNH,
                plain_insn(0x401000, LWP_FEAT_CNH),
                make_record(0x2a05, 0, 0x401000, 0)),
        // Figure 2-7 (generic), EventId 6
        retired("CpuReferenceClocksNotHaltedLayout", LWP_FEAT_RNH,
                plain_insn(0x401000, LWP_FEAT_RNH),
                make_record(0x2a06, 0, 0x401000, 0)),
        // Figure 2-8, spec 5.4: imm32 truncated to 16 bits in Flags
        lwp_insn(
            "ProgrammedEventLayout", RecordCase::kLwpins, 0, 0x401000,
            0x01020304, 0xa1a2a3a4a5a6a7a8ull, 0xffff5a5b,
            record_bytes("ff 2a 5b 5a 04 03 02 01 00 10 40 00 00 00 00 00 "
                         "a8 a7 a6 a5 a4 a3 a2 a1 00 00 00 00 00 00 00 00")),
    };
}

class RecordLayout : public EngineTest,
                     public ::testing::WithParamInterface<RecordCase>
{
};

TEST_P(RecordLayout, IsTheSpecFigure)
{
    const RecordCase &c = GetParam();
    ctx.ecx &= ~c.ecx_clear;
    cb.flags = c.flags;
    if (c.via == RecordCase::kLwpval) {
        cb.interval[1] = 0;
    }
    ASSERT_EQ(load(), LWP_OK);
    switch (c.via) {
    case RecordCase::kRetire:
        ASSERT_EQ(retire(c.info), LWP_OK);
        break;
    case RecordCase::kLwpval:
        ASSERT_EQ(lwpval(c.info.ip, c.data1, c.data2, c.imm), LWP_OK);
        break;
    case RecordCase::kLwpins:
        ASSERT_EQ(lwpins(c.info.ip, c.data1, c.data2, c.imm), LWP_OK);
        break;
    }
    EXPECT_EQ(slot(0), c.want);
}

INSTANTIATE_TEST_SUITE_P(Records, RecordLayout,
                         ::testing::ValuesIn(record_cases()), CaseName{});

using Records = EngineTest;

TEST_F(Records, CoreIdIsLwpCfgBits39To32WhenTheRecordIsStored)
{
    // spec 2 Figure 2-1, 4.2; row 33.  VECTOR (47:40) is not recorded.
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
    ctx.cfg = 0x0000997780000000ull | 0x7e;
    ASSERT_EQ(lwpins(0x2000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(slot(0)[1], 0x2a);
    EXPECT_EQ(slot(1)[1], 0x77);
}

// ---------------------------------------------------------------------------
// LWPINS (spec 5.4; rows 25, 27)

using Lwpins = EngineTest;

TEST_F(Lwpins, CarryIsClearWhenStoredAndSetWhenTheBufferIsFull)
{
    // spec 5.4: "If the ring buffer is not full ... the CF flag is cleared";
    // full: "the CF flag is set"
    cb.tail = 0x40;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(res.full, 0);
    ASSERT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(res.full, 1);
}

TEST_F(Lwpins, DisabledLwpClearsCarryAndTouchesNothing)
{
    // "LWPINS simply clears CF if LWP is not enabled"
    ASSERT_EQ(lwpins(0x1000, 1, 2, 3), LWP_OK);
    EXPECT_EQ(res.full, 0);
    EXPECT_EQ(res.stored, 0);
    EXPECT_TRUE(m.log().empty());
}

TEST_F(Lwpins, IpFilteringDoesNotApply)
{
    // Row 27: IP filtering applies to counted events and LWPVAL only
    cb.filters = LWP_FILTER_IPF;
    cb.base_ip = 0x1000;
    cb.limit_ip = 0x1fff;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(lwpins(0x5000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(slot(0), make_record(0x2aff, 0, 0x5000, 0));
}

TEST_F(Lwpins, RingBufferFaultChangesNothing)
{
    // Row 25: LWPINS faults before it completes and is restarted
    ASSERT_EQ(load(), LWP_OK);
    m.map(kBuf, kPageSize, kRead);
    auto before = m.snapshot();
    m.clear_log();
    EXPECT_EQ(lwpins(0x1000, 0, 0, 0), LWP_FAULT_PF);
    EXPECT_TRUE(fault_within(kBuf, LWP_EVENT_RECORD_SIZE));
    EXPECT_TRUE(fault_covers(kBuf));
    EXPECT_EQ(res.fault_write, 1);
    EXPECT_EQ(m.count('w'), 0u);
    EXPECT_TRUE(m.snapshot() == before);
    EXPECT_EQ(s.head, 0u);
    EXPECT_EQ(s.pending[0], 0);
    EXPECT_FALSE(lwp_needs_sync(&s));
}

TEST_F(Lwpins, LwpcbFaultWritesNoRecord)
{
    // lwp-engine.h LwpMemOps: every range is probed before the first
    // write, so the record is not written when the head cannot be
    ASSERT_EQ(load(), LWP_OK);
    m.map(kCb, kPageSize, kRead);
    auto before = m.snapshot();
    m.clear_log();
    EXPECT_EQ(lwpins(0x1000, 0, 0, 0), LWP_FAULT_PF);
    EXPECT_EQ(res.fault_write, 1);
    EXPECT_EQ(m.count('w'), 0u);
    EXPECT_TRUE(m.snapshot() == before);
    EXPECT_EQ(s.head, 0u);
}

// ---------------------------------------------------------------------------
// LWPVAL (spec 2.1, 5.3; rows 17, 25, 27)

using Lwpval = EngineTest;

TEST_F(Lwpval, FiresExactlyWhenTheCounterWillGoNegative)
{
    // "If the counter is not negative and the modrm operand specifies a
    // memory location, that location is not accessed"
    cb.flags = LWP_FEAT_VAL;
    cb.interval[1] = 3;
    cb.counter[1] = 1;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(lwp_lwpval_fires(&s, &ctx, 0x1000));
    ASSERT_EQ(lwpval(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(s.counter[1], 0);
    EXPECT_EQ(res.stored, 0);
    EXPECT_TRUE(lwp_lwpval_fires(&s, &ctx, 0x1000));
    ASSERT_EQ(lwpval(0x1000, 7, 8, 9), LWP_OK);
    EXPECT_EQ(res.stored, 1);
    EXPECT_EQ(slot(0), make_record(0x0009'2a01, 7, 0x1000, 8));
    EXPECT_EQ(s.counter[1], 3);
    EXPECT_FALSE(lwp_lwpval_fires(&s, &ctx, 0x1000));
}

TEST_F(Lwpval, IntervalZeroStoresEveryLwpval)
{
    // Table 6-1 EventInterval1: minimum zero
    cb.flags = LWP_FEAT_VAL;
    cb.interval[1] = 0;
    ASSERT_EQ(load(), LWP_OK);
    for (unsigned i = 0; i < 3; i++) {
        EXPECT_TRUE(lwp_lwpval_fires(&s, &ctx, 0x1000 + i));
        ASSERT_EQ(lwpval(0x1000 + i, i, 0, 0), LWP_OK);
    }
    EXPECT_EQ(s.head, 0x60u);
    EXPECT_EQ(slot(2), make_record(0x2a01, 2, 0x1002, 0));
}

TEST_F(Lwpval, DoesNothingWhenTheValEventIsNotEnabled)
{
    // spec 5.3: "LWPVAL does nothing if ... the Programmed Value Sample
    // event is not enabled in LWPCB.Flags"
    cb.flags = LWP_FEAT_IRE;
    ASSERT_EQ(load(), LWP_OK);
    int32_t before = s.counter[1];
    m.clear_log();
    EXPECT_FALSE(lwp_lwpval_fires(&s, &ctx, 0x1000));
    ASSERT_EQ(lwpval(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(s.counter[1], before);
    EXPECT_EQ(res.stored, 0);
    EXPECT_TRUE(m.log().empty());
}

TEST_F(Lwpval, DoesNothingWhenLwpIsDisabled)
{
    // spec 5.3: "LWPVAL does nothing if LWP is not enabled"
    EXPECT_FALSE(lwp_lwpval_fires(&s, &ctx, 0x1000));
    ASSERT_EQ(lwpval(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(res.stored, 0);
    EXPECT_TRUE(m.log().empty());
}

TEST_F(Lwpval, FaultLeavesTheCounterUnchanged)
{
    // Row 25: LWPVAL faults before it completes and is restarted, so it is
    // counted once
    cb.flags = LWP_FEAT_VAL;
    cb.interval[1] = 5;
    ASSERT_EQ(load(), LWP_OK);
    m.map(kBuf, kPageSize, kRead);
    EXPECT_TRUE(lwp_lwpval_fires(&s, &ctx, 0x1000));
    EXPECT_EQ(lwpval(0x1000, 1, 2, 3), LWP_FAULT_PF);
    EXPECT_TRUE(fault_within(kBuf, LWP_EVENT_RECORD_SIZE));
    EXPECT_TRUE(fault_covers(kBuf));
    EXPECT_EQ(res.fault_write, 1);
    EXPECT_EQ(s.counter[1], 0);
    EXPECT_EQ(s.head, 0u);
    EXPECT_EQ(s.pending[0], 0);
    EXPECT_FALSE(lwp_needs_sync(&s));

    m.map(kBuf, kPageSize, kReadWrite);
    EXPECT_TRUE(lwp_lwpval_fires(&s, &ctx, 0x1000));
    ASSERT_EQ(lwpval(0x1000, 1, 2, 3), LWP_OK);
    EXPECT_EQ(slot(0), make_record(0x0003'2a01, 1, 0x1000, 2));
    EXPECT_EQ(s.counter[1], 5);
}

TEST_F(Lwpval, IpFilteringApplies)
{
    // Row 27: IP filtering applies to LWPVAL
    cb.flags = LWP_FEAT_VAL;
    cb.filters = LWP_FILTER_IPF;
    cb.base_ip = 0x1000;
    cb.limit_ip = 0x1fff;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_FALSE(lwp_lwpval_fires(&s, &ctx, 0x2000));
    ASSERT_EQ(lwpval(0x2000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(s.counter[1], 0);
    EXPECT_EQ(res.stored, 0);
    EXPECT_TRUE(lwp_lwpval_fires(&s, &ctx, 0x1fff));
}

TEST_F(Lwpval, FullBufferCountsMissedEvents)
{
    // spec 5.3: "If the ring buffer is full, the event record overwrites
    // the last record in the buffer, the MissedEvents counter in the LWPCB
    // is incremented, and the head pointer is not advanced"
    cb.flags = LWP_FEAT_VAL;
    cb.interval[1] = 0;
    cb.tail = 0x20;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(lwpval(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(res.full, 1);
    EXPECT_EQ(missed_in_lwpcb(), 1u);
    EXPECT_EQ(head_in_lwpcb(), 0u);
    EXPECT_TRUE(lwp_lwpval_fires(&s, &ctx, 0x1000))
        << "reset to 0 (1.1 step 5)";
}

// ---------------------------------------------------------------------------
// A fault while storing a counted event's record (1.1 step 2, 8.6; row 25)

using PendingRecord = EngineTest;

TEST_F(PendingRecord, RingFaultKeepsTheRecordPendingUntilLwpSync)
{
    // Row 25, 8.6 ("saving the event record ... and retrying the store
    // later"): the record stays pending, the counter counts on below zero,
    // lwp_sync stores it; the store that faulted changes nothing
    cb.flags = LWP_FEAT_IRE;
    ASSERT_EQ(load(), LWP_OK);
    m.map(kBuf, kPageSize, kRead);
    auto before = m.snapshot();
    m.clear_log();
    EXPECT_EQ(retire(0x401000, LWP_FEAT_IRE), LWP_FAULT_PF);
    EXPECT_TRUE(fault_within(kBuf, LWP_EVENT_RECORD_SIZE));
    EXPECT_TRUE(fault_covers(kBuf));
    EXPECT_EQ(res.fault_write, 1);
    EXPECT_EQ(m.count('w'), 0u);
    EXPECT_TRUE(m.snapshot() == before);
    EXPECT_EQ(s.pending[0], LWP_EVENT_ID_IRE);
    EXPECT_EQ(s.counter[2], -1); // counts on below zero
    EXPECT_EQ(s.head, 0u);
    EXPECT_TRUE(lwp_needs_sync(&s));

    // Still not writable: still pending
    EXPECT_EQ(sync(), LWP_FAULT_PF);
    EXPECT_TRUE(lwp_needs_sync(&s));

    m.map(kBuf, kPageSize, kReadWrite);
    ASSERT_EQ(sync(), LWP_OK);
    EXPECT_EQ(slot(0), make_record(0x2a02, 0, 0x401000, 0));
    EXPECT_EQ(head_in_lwpcb(), 0x20u);
    EXPECT_EQ(s.counter[2], 0x1000);
    EXPECT_EQ(s.pending[0], 0);
    EXPECT_FALSE(lwp_needs_sync(&s));
}

TEST_F(PendingRecord, LwpcbFaultAlsoLeavesTheRecordPending)
{
    // Row 25, 8.6: the head cannot be written: the record is not written
    // either (probe before write) and stays pending
    cb.flags = LWP_FEAT_IRE;
    ASSERT_EQ(load(), LWP_OK);
    m.map(kCb, kPageSize, kRead);
    m.clear_log();
    EXPECT_EQ(retire(0x401000, LWP_FEAT_IRE), LWP_FAULT_PF);
    EXPECT_EQ(res.fault_write, 1);
    EXPECT_EQ(m.count('w'), 0u);
    EXPECT_EQ(slot(0), Record{});
    EXPECT_TRUE(lwp_needs_sync(&s));

    m.map(kCb, kPageSize, kReadWrite);
    ASSERT_EQ(sync(), LWP_OK);
    EXPECT_EQ(slot(0), make_record(0x2a02, 0, 0x401000, 0));
    EXPECT_EQ(head_in_lwpcb(), 0x20u);
}

TEST_F(PendingRecord, OtherNegativeCountersGatherTheirRecordAtTheirNextEvent)
{
    // Row 25: "Other events that went negative on that instruction gather
    // their record at their next event"
    cb.flags = LWP_FEAT_IRE | LWP_FEAT_BRE;
    ASSERT_EQ(load(), LWP_OK);
    m.map(kBuf, kPageSize, kRead);
    LwpEventInfo a =
        branch(0x401000, 0x401100, LWP_BRANCH_REL, true, false, false, false);
    a.events |= LWP_FEAT_IRE;
    EXPECT_EQ(retire(a), LWP_FAULT_PF);
    EXPECT_EQ(s.pending[0], LWP_EVENT_ID_IRE);
    EXPECT_EQ(s.counter[3], -1);

    m.map(kBuf, kPageSize, kReadWrite);
    ASSERT_EQ(sync(), LWP_OK);
    EXPECT_EQ(slot(0), make_record(0x2a02, 0, 0x401000, 0));
    EXPECT_EQ(s.counter[3], -1);

    LwpEventInfo b =
        branch(0x401100, 0x401200, LWP_BRANCH_REL, true, false, false, false);
    b.events |= LWP_FEAT_IRE;
    ASSERT_EQ(retire(b), LWP_OK);
    EXPECT_EQ(res.stored, 1);
    EXPECT_EQ(slot(1), make_record(0x8000'2a03, 0, 0x401100, 0x401200));
    EXPECT_EQ(s.counter[3], 0x1000 - 1);
    EXPECT_EQ(s.counter[2], 0x1000 - 1);
}

} // namespace
