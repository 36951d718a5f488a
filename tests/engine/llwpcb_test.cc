// Unit tests: LLWPCB and SLWPCB (spec 5.1, 5.2, 6; implementation-choices
// rows 14-17, 24, 26, 31).  Every expected value is written out by hand
// from the spec's tables or the doc's rows, never taken from the engine.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <gtest/gtest.h>

#include <cstring>

#include <vector>

#include "fake_mem.h"

namespace
{

using namespace lwptest;

constexpr uint32_t kE = LWP_EVENT_OFFSET; // LwpEventOffset, 0x80

uint64_t interval_at(uint64_t cb, unsigned n)
{
    return cb + LWPCB_INTERVAL(kE, n);
}
uint64_t counter_at(uint64_t cb, unsigned n)
{
    return cb + LWPCB_COUNTER(kE, n);
}

void put32(std::vector<uint8_t> &v, size_t off, uint32_t x)
{
    for (int i = 0; i < 4; i++) {
        v[off + i] = static_cast<uint8_t>(x >> (8 * i));
    }
}

using Llwpcb = EngineTest;
using Slwpcb = EngineTest;

// ---------------------------------------------------------------------------
// Flags (spec 5.1 step 6, Table 6-1 "Flags", Figure 6-2; doc row 15)

TEST_F(Llwpcb, FlagsAreAndedWithAvailableFeaturesAndWrittenBack)
{
    // Available = LWP_CFG & EDX (Glossary "Available").  A Bulldozer CPU
    // supports VAL, IRE, BRE and Int (EDX 8000000F); LWP_CFG asks for all.
    ctx.edx = 0x8000000f;
    cb.flags = 0xffffffff;
    cb.write(m, kCb, 3);
    ASSERT_EQ(llwpcb(kCb), LWP_OK);
    EXPECT_EQ(m.peek32(kCb + LWPCB_FLAGS), 0x8000000eu);
    EXPECT_EQ(s.flags, 0x8000000eu);
    EXPECT_EQ(s.cb_addr, kCb);
}

TEST_F(Llwpcb, FlagsLoseWhatLwpCfgDoesNotMakeAvailable)
{
    // LWP_CFG without Int and without DME: both are cleared from Flags
    ctx.cfg = 0x0000002a0000006eull;
    cb.flags = LWP_FEAT_INT | LWP_FEAT_DME | LWP_FEAT_IRE;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(m.peek32(kCb + LWPCB_FLAGS), uint32_t{LWP_FEAT_IRE});
    EXPECT_EQ(s.flags, uint32_t{LWP_FEAT_IRE});
}

TEST_F(Llwpcb, ReservedFlagsBitsAreClearedNotFaulted)
{
    // Figure 6-2: bits 0 and 30:7 are reserved; doc row 14: the AND with
    // the available features clears them instead of raising #GP.
    cb.flags = 0x7fffff83; // bit 0, bits 30:7, and VAL
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(m.peek32(kCb + LWPCB_FLAGS), uint32_t{LWP_FEAT_VAL});
}

TEST_F(Llwpcb, NoEventEnabledStillEnablesLwp)
{
    // spec 5.1 Notes: LWP is enabled for LWPINS even without events
    cb.flags = 0;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.cb_addr, kCb);
    EXPECT_EQ(s.flags, 0u);
}

// ---------------------------------------------------------------------------
// EventInterval / EventCounter (spec 5.1 step 7, Table 6-1; rows 15-17)

TEST_F(Llwpcb, IntervalBelowTheMinimumBecomesTheMinimumAndIsWrittenBack)
{
    // Row 17: minimum 1 for EventIds 2-6, so only 0 is below it
    cb.flags = 0x7c; // IRE BRE DME CNH RNH
    cb.interval[2] = 0;
    cb.interval[3] = 1;
    cb.interval[4] = 2;
    cb.interval[5] = 0x100;
    cb.interval[6] = 0xfc000000; // 0 with reserved bits set
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(m.peek32(interval_at(kCb, 2)), 1u);
    EXPECT_EQ(m.peek32(interval_at(kCb, 3)), 1u);
    EXPECT_EQ(m.peek32(interval_at(kCb, 4)), 2u);
    EXPECT_EQ(m.peek32(interval_at(kCb, 5)), 0x100u);
    EXPECT_EQ(m.peek32(interval_at(kCb, 6)), 1u);
    EXPECT_EQ(s.interval[2], 1u);
    EXPECT_EQ(s.interval[3], 1u);
    EXPECT_EQ(s.interval[4], 2u);
    EXPECT_EQ(s.interval[5], 0x100u);
    EXPECT_EQ(s.interval[6], 1u);
}

TEST_F(Llwpcb, NegativeIntervalBecomesTheMinimum)
{
    // Table 6-1: "If it is negative or is below the implementation
    // minimum, LLWPCB will use the minimum and will store that value".
    // Row 16: 26-bit signed, sign in bit 25.
    cb.flags = LWP_FEAT_IRE | LWP_FEAT_BRE | LWP_FEAT_DME;
    cb.interval[2] = 0x03ffffff; // -1
    cb.interval[3] = 0x02000000; // -2^25
    cb.interval[4] = 0xffffffff; // -1, reserved bits set
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(m.peek32(interval_at(kCb, 2)), 1u);
    EXPECT_EQ(m.peek32(interval_at(kCb, 3)), 1u);
    EXPECT_EQ(m.peek32(interval_at(kCb, 4)), 1u);
    EXPECT_EQ(s.interval[2], 1u);
    EXPECT_EQ(s.interval[3], 1u);
    EXPECT_EQ(s.interval[4], 1u);
}

TEST_F(Llwpcb, LwpvalIntervalMinimumIsZeroAndNegativeBecomesZero)
{
    // Table 6-1 EventInterval1: "If it is negative, LLWPCB will use zero
    // and will store zero"; the only event allowed below the minimum.
    cb.flags = LWP_FEAT_VAL;
    cb.interval[1] = 0x03ffffff; // -1
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(m.peek32(interval_at(kCb, 1)), 0u);
    EXPECT_EQ(s.interval[1], 0u);

    cb.interval[1] = 0;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.interval[1], 0u);
    cb.interval[1] = 5;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(m.peek32(interval_at(kCb, 1)), 5u);
    EXPECT_EQ(s.interval[1], 5u);
}

TEST_F(Llwpcb, IntervalReservedBits31To26AreIgnoredAndWrittenAsZero)
{
    // Row 16: bits 31:26 ignored on read; row 15: a written-back interval
    // is the whole dword with reserved bits 0.  An interval that needs no
    // fix is not written.
    cb.flags = LWP_FEAT_IRE | LWP_FEAT_BRE;
    cb.interval[2] = 0xfc000100; // 0x100: valid
    cb.interval[3] = 0xfc000000; // 0: below the minimum
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.interval[2], 0x100u);
    EXPECT_EQ(m.peek32(interval_at(kCb, 2)), 0xfc000100u);
    EXPECT_EQ(s.interval[3], 1u);
    EXPECT_EQ(m.peek32(interval_at(kCb, 3)), 0x00000001u);
}

TEST_F(Llwpcb, IntervalMaximumIsKept)
{
    // Row 17: the maximum is 0x1FFFFFF
    cb.flags = LWP_FEAT_IRE;
    cb.interval[2] = 0x01ffffff;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.interval[2], 0x01ffffffu);
    EXPECT_EQ(m.peek32(interval_at(kCb, 2)), 0x01ffffffu);
}

TEST_F(Llwpcb, IntervalsOfEventsNotEnabledAreNotTouched)
{
    // spec 5.1 step 7 "For each event being enabled"; row 15
    cb.flags = LWP_FEAT_IRE;
    cb.interval[1] = 0xffffffff;
    cb.interval[3] = 0;
    cb.interval[6] = 0x03ffffff;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(m.peek32(interval_at(kCb, 1)), 0xffffffffu);
    EXPECT_EQ(m.peek32(interval_at(kCb, 3)), 0u);
    EXPECT_EQ(m.peek32(interval_at(kCb, 6)), 0x03ffffffu);
}

TEST_F(Llwpcb, NegativeEventCounterLoadsAsZeroAndIsNotWrittenBack)
{
    // Table 6-1 EventCounter: "LLWPCB treats a negative value as zero";
    // row 16 (26-bit signed, bits 31:26 ignored), row 15 (not written)
    cb.flags = 0x7c;
    cb.counter[2] = 0x03ffffff; // -1
    cb.counter[3] = 0x02000000; // -2^25
    cb.counter[4] = 0xfffffff0; // -16
    cb.counter[5] = 7;
    cb.counter[6] = 0xfc000009; // 9, reserved bits set
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.counter[2], 0);
    EXPECT_EQ(s.counter[3], 0);
    EXPECT_EQ(s.counter[4], 0);
    EXPECT_EQ(s.counter[5], 7);
    EXPECT_EQ(s.counter[6], 9);
    EXPECT_EQ(m.peek32(counter_at(kCb, 2)), 0x03ffffffu);
    EXPECT_EQ(m.peek32(counter_at(kCb, 4)), 0xfffffff0u);
}

TEST_F(Llwpcb, CounterAboveTheIntervalIsKept)
{
    // spec 5.1 step 7: "If the counter value is larger than the interval,
    // the first event record will be stored after a larger number"
    cb.flags = LWP_FEAT_IRE;
    cb.interval[2] = 0x1000;
    cb.counter[2] = 0x5000;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.counter[2], 0x5000);
}

// ---------------------------------------------------------------------------
// BufferSize, Random, BufferHeadOffset (Table 6-1; rows 14d, 24)

TEST_F(Llwpcb, BufferSizeIsRoundedDownToTheRecordSize)
{
    // Table 6-1 BufferSize: "the value used internally will be rounded down"
    cb.buffer_size = 0x41f;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.buffer_size, 0x400u);
    // BufferSize is not written back (row 15)
    EXPECT_EQ(m.peek32(kCb + LWPCB_BUFFER_SIZE), 0x41fu);
}

TEST_F(Llwpcb, BufferSizeBelowTheMinimumRaisesGp)
{
    // Table 3-1 LwpMinBufferSize 1: 32 records of 32 bytes = 0x400.
    // Row 14 (d): the size rounded down to 32 is compared.
    for (uint32_t size : {0x3e0u, 0x3ffu, 0x20u, 0u}) {
        cb.buffer_size = size;
        cb.write(m, kCb);
        auto before = m.snapshot();
        EXPECT_EQ(llwpcb(kCb), LWP_FAULT_GP) << "BufferSize " << size;
        EXPECT_TRUE(res.gp_reason &&
                    std::strstr(res.gp_reason, "BufferSize is below"));
        EXPECT_EQ(s.cb_addr, 0u) << "BufferSize " << size;
        EXPECT_TRUE(m.snapshot() == before) << "BufferSize " << size;
    }
}

TEST_F(Llwpcb, BufferSizeOfExactlyTheMinimumIsAccepted)
{
    // Table 6-1 BufferSize "must be at least (32 * LwpMinBufferSize *
    // LwpEventSize)": 0x400 itself is fine (row 14 d)
    cb.buffer_size = 0x400;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.buffer_size, 0x400u);
    EXPECT_EQ(s.buffer_base, kBuf);
}

TEST_F(Llwpcb, RandomIsBits31To28OfTheBufferSizeDword)
{
    // Table 6-1: BufferSize 59:32, Random 63:60
    cb.buffer_size = 0x800;
    cb.random = 15;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.random, 15);
    EXPECT_EQ(s.buffer_size, 0x800u);
}

TEST_F(Llwpcb, HeadIsRoundedDownAndWrittenBack)
{
    // Table 6-1 BufferHeadOffset: "LWP will round it down"; row 15
    cb.head = 0x45;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.head, 0x40u);
    EXPECT_EQ(head_in_lwpcb(), 0x40u);

    cb.head = 0x3ff; // in range: rounds to the last slot
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.head, 0x3e0u);
    EXPECT_EQ(head_in_lwpcb(), 0x3e0u);
}

TEST_F(Llwpcb, HeadAtOrBeyondBufferSizeBecomesZero)
{
    // Row 24: LLWPCB: head >= BufferSize -> 0, then round down
    for (uint32_t head : {0x400u, 0x401u, 0xffffffe0u}) {
        cb.head = head;
        ASSERT_EQ(load(), LWP_OK) << "head " << head;
        EXPECT_EQ(s.head, 0u) << "head " << head;
        EXPECT_EQ(head_in_lwpcb(), 0u) << "head " << head;
    }
    // BufferSize 0x41f is used as 0x400: a head of 0x410 lies beyond it
    cb.buffer_size = 0x41f;
    cb.head = 0x410;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.head, 0u);
    EXPECT_EQ(head_in_lwpcb(), 0u);
}

TEST_F(Llwpcb, FiltersRandomTailAndIpRangeAreCaptured)
{
    // Table 6-1 / Figure 6-3: every Filters bit but 24:13
    cb.filters = 0xfe001fff;
    cb.random = 7;
    cb.base_ip = 0x0000123456789000ull;
    cb.limit_ip = 0xffffffff80001000ull;
    cb.tail = 0x60;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.filters, 0xfe001fffu);
    EXPECT_EQ(s.random, 7);
    EXPECT_EQ(s.base_ip, 0x0000123456789000ull);
    EXPECT_EQ(s.limit_ip, 0xffffffff80001000ull);
    EXPECT_EQ(s.tail, 0x60u);
}

TEST_F(Llwpcb, WritesBackOnlyFlagsFixedIntervalsAndHead)
{
    // Row 15: "Flags (requested AND available), the EventInterval n of
    // each enabled event that was negative or below the minimum ..., and
    // the sanitised BufferHeadOffset. Nothing else"
    cb.flags = 0xffffffff;
    cb.buffer_size = 0x4ff;
    cb.random = 3;
    cb.head = 0x47;
    cb.missed = 0x1122334455667788ull;
    cb.threshold = 0x123;
    cb.filters = 0x80000104;
    cb.base_ip = 0x400000;
    cb.limit_ip = 0x7fffffff;
    cb.tail = 0x99;
    cb.interval[1] = 0x03fffffe; // -2 -> 0
    cb.interval[2] = 0;          // -> 1
    cb.interval[3] = 0x2000;
    cb.interval[4] = 0xfc000000; // -> 1
    cb.interval[5] = 0x0001;
    cb.interval[6] = 0x02000001; // negative -> 1
    for (unsigned n = 1; n <= 6; n++) {
        cb.counter[n] = 0x03fffff0 + n;
    }
    cb.write(m, kCb);
    for (unsigned i = 0; i < 16; i++) {
        m.poke8(kCb + LWPCB_SOFTWARE + i, static_cast<uint8_t>(0xa0 + i));
    }
    std::vector<uint8_t> want = m.bytes(kCb, kCbSize);
    put32(want, LWPCB_FLAGS, 0x8000007e);
    put32(want, LWPCB_HEAD, 0x40);
    put32(want, LWPCB_INTERVAL(kE, 1), 0);
    put32(want, LWPCB_INTERVAL(kE, 2), 1);
    put32(want, LWPCB_INTERVAL(kE, 4), 1);
    put32(want, LWPCB_INTERVAL(kE, 6), 1);

    ASSERT_EQ(llwpcb(kCb), LWP_OK);
    EXPECT_EQ(m.bytes(kCb, kCbSize), want);
}

// ---------------------------------------------------------------------------
// #GP for LWPCB contents (spec 5.1 "Exceptions", 6; row 14 c)

TEST_F(Llwpcb, NonZeroReservedFieldRaisesGp)
{
    // Reserved: bytes 20-23, 56-63, 68-71 and 88..E-1 (Table 6-1)
    std::vector<unsigned> offsets;
    for (unsigned o = 20; o < 24; o++) {
        offsets.push_back(o);
    }
    for (unsigned o = 56; o < 64; o++) {
        offsets.push_back(o);
    }
    for (unsigned o = 68; o < 72; o++) {
        offsets.push_back(o);
    }
    for (unsigned o = 88; o < kE; o++) {
        offsets.push_back(o);
    }
    for (unsigned o : offsets) {
        cb.write(m, kCb);
        m.poke8(kCb + o, 0x01);
        auto before = m.snapshot();
        EXPECT_EQ(llwpcb(kCb), LWP_FAULT_GP) << "reserved byte " << o;
        EXPECT_TRUE(res.gp_reason &&
                    std::strstr(res.gp_reason, "reserved field"));
        EXPECT_EQ(s.cb_addr, 0u) << "reserved byte " << o;
        EXPECT_TRUE(m.snapshot() == before) << "reserved byte " << o;
    }
}

TEST_F(Llwpcb, ReservedFiltersBitRaisesGp)
{
    // Figure 6-3: Filters bits 24:13 are reserved
    for (unsigned bit = 13; bit <= 24; bit++) {
        cb.filters = 1u << bit;
        cb.write(m, kCb);
        EXPECT_EQ(llwpcb(kCb), LWP_FAULT_GP) << "Filters bit " << bit;
        EXPECT_EQ(s.cb_addr, 0u) << "Filters bit " << bit;
    }
}

TEST_F(Llwpcb, SoftwareBytes72To87AreNeitherCheckedNorWritten)
{
    // Table 6-1: "never read or written by the LWP hardware"
    cb.write(m, kCb);
    for (unsigned i = 0; i < 16; i++) {
        m.poke8(kCb + LWPCB_SOFTWARE + i, 0xa5);
    }
    ASSERT_EQ(llwpcb(kCb), LWP_OK);
    for (unsigned i = 0; i < 16; i++) {
        EXPECT_EQ(m.peek8(kCb + LWPCB_SOFTWARE + i), 0xa5) << "byte " << i;
    }
    for (const Access &a : m.log()) {
        if (a.kind == 'w') {
            EXPECT_FALSE(a.addr < kCb + LWPCB_SOFTWARE_END &&
                         kCb + LWPCB_SOFTWARE < a.addr + a.len)
                << "write at 0x" << std::hex << a.addr;
        }
    }
}

TEST_F(Llwpcb, AccessesOnlyLwpCbSizeBytes)
{
    // Table 3-1 LwpCbSize: with EDX 8000000F (highest EventId 3) the LWPCB
    // is 0x80/8 + 3 = 19 quadwords (0x98 bytes).  It ends right before an
    // unmapped page, so any access beyond it would fault.
    ctx.edx = 0x8000000f;
    const uint64_t at = 0x30000 - 0x98;
    m.map(at, 0x98, kReadWrite);
    cb.flags = LWP_FEAT_IRE;
    cb.write(m, at, 3);
    ASSERT_EQ(llwpcb(at), LWP_OK);
    EXPECT_EQ(s.cb_addr, at);
}

// ---------------------------------------------------------------------------
// #PF on the LWPCB (spec 5.1 step 4; rows 14 b, f; row 25)

TEST_F(Llwpcb, UnreadableLwpcbRaisesPfAndLeavesLwpDisabled)
{
    // The LWPCB straddles 0x11000; that page is not mapped.  Byte 0x20
    // (Threshold) is the first one that cannot be read: the fault is
    // reported in that page.
    const uint64_t at = 0x11000 - 0x20;
    cb.write(m, at);
    auto before = m.snapshot();
    EXPECT_EQ(llwpcb(at), LWP_FAULT_PF);
    EXPECT_TRUE(fault_covers(0x11000))
        << "fault range 0x" << std::hex << res.fault_addr << " + 0x"
        << res.fault_len;
    EXPECT_TRUE(fault_within(at, kCbSize));
    EXPECT_EQ(res.fault_write, 0);
    EXPECT_EQ(s.cb_addr, 0u);
    EXPECT_EQ(m.count('w'), 0u);
    EXPECT_TRUE(m.snapshot() == before);
}

TEST_F(Llwpcb, ReadOnlyLwpcbRaisesPfOnWriteAndLeavesLwpDisabled)
{
    // Row 14 (f): Flags (byte 0) is always written back
    cb.flags = LWP_FEAT_IRE;
    cb.write(m, kCb);
    m.map(kCb, kPageSize, kRead);
    auto before = m.snapshot();
    EXPECT_EQ(llwpcb(kCb), LWP_FAULT_PF);
    EXPECT_EQ(res.fault_write, 1);
    EXPECT_TRUE(fault_covers(kCb)) << "Flags is always written";
    EXPECT_TRUE(fault_within(kCb, kCbSize));
    EXPECT_EQ(s.cb_addr, 0u);
    EXPECT_EQ(m.count('w'), 0u);
    EXPECT_TRUE(m.snapshot() == before);
}

TEST_F(Llwpcb, ReadFaultComesBeforeContentGp)
{
    // Row 14 order: (b) the read fault before (c) the reserved fields.
    // Byte 20 (reserved) is non-zero, but the LWPCB's second page is not
    // mapped.
    const uint64_t at = 0x11000 - 0x20;
    cb.write(m, at);
    m.poke8(at + 20, 1);
    EXPECT_EQ(llwpcb(at), LWP_FAULT_PF);
    EXPECT_EQ(res.fault_write, 0);
    EXPECT_EQ(s.cb_addr, 0u);
}

TEST_F(Llwpcb, ContentGpComesBeforeTheWriteFault)
{
    // Row 14 order: (c) reserved, (d) size, (e) ring check before (f)
    m.map(kCb, kPageSize, kRead);

    cb.write(m, kCb);
    m.poke8(kCb + 21, 1);
    EXPECT_EQ(llwpcb(kCb), LWP_FAULT_GP) << "reserved byte, read-only LWPCB";

    cb.buffer_size = 0x3e0;
    cb.write(m, kCb);
    EXPECT_EQ(llwpcb(kCb), LWP_FAULT_GP) << "small ring, read-only LWPCB";

    cb.buffer_size = kSize;
    cb.buffer_base = 0x0000800000000000ull;
    cb.write(m, kCb);
    EXPECT_EQ(llwpcb(kCb), LWP_FAULT_GP)
        << "non-canonical ring, read-only LWPCB";
    EXPECT_EQ(s.cb_addr, 0u);
}

// ---------------------------------------------------------------------------
// 64-bit mode address checks (spec 5.1 step 4; row 31)

TEST_F(Llwpcb, NonCanonicalLwpcbRaisesGpBeforeAnyAccess)
{
    // Row 14 (a) comes before (b): no read is tried
    EXPECT_EQ(llwpcb(0x0000800000000000ull), LWP_FAULT_GP);
    EXPECT_TRUE(res.gp_reason && std::strstr(res.gp_reason, "canonical"));
    EXPECT_EQ(llwpcb(0xffff7ffffffff000ull), LWP_FAULT_GP);
    // The last byte (ea + 0xAF) is not canonical
    EXPECT_EQ(llwpcb(0x00007fffffffff80ull), LWP_FAULT_GP);
    EXPECT_TRUE(m.log().empty());
    EXPECT_EQ(s.cb_addr, 0u);
}

TEST_F(Llwpcb, CanonicalFormFollowsVaBits)
{
    // 57-bit linear addresses: 0x0000800000000000 is canonical
    const uint64_t at = 0x0000800000000000ull;
    m.map(at, kPageSize, kReadWrite);
    ctx.va_bits = 57;
    ASSERT_EQ(load(at), LWP_OK);
    EXPECT_EQ(s.cb_addr, at);

    // Upper half, 48 bits.  CR4.LA57 cannot change while LWP runs in long
    // mode, so start again from the disabled state.
    lwp_state_init(&s);
    const uint64_t hi = 0xffff800000001000ull;
    m.map(hi, kPageSize, kReadWrite);
    ctx.va_bits = 48;
    ASSERT_EQ(load(hi), LWP_OK);
    EXPECT_EQ(s.cb_addr, hi);
}

TEST_F(Llwpcb, RingBufferMustBeCanonicalAndNotWrap)
{
    // Row 14 (e), row 31: both ends canonical, no wrap
    cb.buffer_base = 0x00007ffffffffc00ull; // last byte 0x7fffffffffff
    EXPECT_EQ(load(), LWP_OK);
    cb.buffer_base = 0x00007ffffffffe00ull; // last byte not canonical
    EXPECT_EQ(load(), LWP_FAULT_GP);
    cb.buffer_base = 0x0000800000000000ull;
    EXPECT_EQ(load(), LWP_FAULT_GP);
    cb.buffer_base = 0xfffffffffffffe00ull; // wraps past 2^64
    EXPECT_EQ(load(), LWP_FAULT_GP);
    EXPECT_EQ(s.cb_addr, 0u);
}

TEST_F(Llwpcb, UpperBitsOfBufferBaseAreAllowedIn64BitMode)
{
    // Table 6-1: only "if the default address size is less than 64 bits"
    cb.buffer_base = 0x0000000100004000ull;
    ASSERT_EQ(load(), LWP_OK);
    EXPECT_EQ(s.buffer_base, 0x0000000100004000ull);
}

// ---------------------------------------------------------------------------
// Flush of an enabled LWP (spec 5.1 step 2, 5.2; rows 25, 26)

TEST_F(Llwpcb, EnabledLwpIsFlushedToTheOldLwpcbFirst)
{
    // spec 5.1 step 2: "the processor flushes the LWP state to memory in the
    // old LWPCB"; 5.2 (counters of active events, head); row 26
    cb.flags = LWP_FEAT_IRE | LWP_FEAT_BRE;
    cb.interval[2] = 0x1000;
    cb.counter[2] = 0;
    cb.counter[3] = 0x20;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(retire(0x401000, LWP_FEAT_IRE), LWP_OK); // record, 0x1000
    ASSERT_EQ(retire(0x401004, LWP_FEAT_IRE | LWP_FEAT_BRE), LWP_OK);
    ASSERT_EQ(retire(0x401008, LWP_FEAT_IRE), LWP_OK);

    const uint64_t cb2 = 0x30000;
    m.map(cb2, kPageSize, kReadWrite);
    Lwpcb other;
    other.flags = LWP_FEAT_IRE;
    other.buffer_size = kSize;
    other.buffer_base = 0x40000;
    other.interval[2] = 0x2000;
    other.write(m, cb2);
    ASSERT_EQ(llwpcb(cb2), LWP_OK);

    EXPECT_EQ(m.peek32(counter_at(kCb, 2)), 0xffeu);
    EXPECT_EQ(m.peek32(counter_at(kCb, 3)), 0x1fu);
    EXPECT_EQ(head_in_lwpcb(), 0x20u);
    EXPECT_EQ(s.cb_addr, cb2);
    EXPECT_EQ(s.buffer_base, 0x40000u);
    EXPECT_EQ(s.interval[2], 0x2000u);
}

TEST_F(Llwpcb, FaultInTheFlushLeavesTheOldLwpcbEnabled)
{
    // spec 5.1 step 2: "If the flush causes a #PF exception, LWP remains
    // enabled with the old LWPCB still active"; the new one is not touched
    cb.flags = LWP_FEAT_IRE;
    ASSERT_EQ(load(), LWP_OK);
    m.map(kCb, kPageSize, kRead);

    const uint64_t cb2 = 0x30000;
    m.map(cb2, kPageSize, kReadWrite);
    Lwpcb other = cb;
    other.interval[2] = 0; // would be written back
    other.write(m, cb2);
    auto before = m.snapshot();
    m.clear_log();
    EXPECT_EQ(llwpcb(cb2), LWP_FAULT_PF);
    EXPECT_EQ(res.fault_write, 1);
    EXPECT_EQ(s.cb_addr, kCb);
    EXPECT_EQ(s.flags, uint32_t{LWP_FEAT_IRE});
    EXPECT_EQ(m.count('w'), 0u);
    EXPECT_TRUE(m.snapshot() == before);
}

TEST_F(Llwpcb, FaultOnTheNewLwpcbAfterTheFlushLeavesLwpDisabled)
{
    // spec 5.1 step 2 "the flush is done before LWP attempts to access the
    // new LWPCB"; step 4: "LWP is left disabled"
    cb.flags = LWP_FEAT_IRE;
    cb.counter[2] = 0x50;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(retire(0x401000, LWP_FEAT_IRE), LWP_OK);

    // The new LWPCB is not mapped at all
    EXPECT_EQ(llwpcb(0x50000), LWP_FAULT_PF);
    EXPECT_TRUE(fault_within(0x50000, kCbSize));
    EXPECT_EQ(res.fault_write, 0);
    EXPECT_EQ(s.cb_addr, 0u);
    // ... but the old one was flushed before the new one was touched
    EXPECT_EQ(m.peek32(counter_at(kCb, 2)), 0x4fu);
}

TEST_F(Llwpcb, ZeroDisablesAfterFlushing)
{
    // spec 5.1 step 3
    cb.flags = LWP_FEAT_IRE;
    cb.counter[2] = 0x50;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(retire(0x401000, LWP_FEAT_IRE), LWP_OK);
    ASSERT_EQ(llwpcb(0), LWP_OK);
    EXPECT_EQ(s.cb_addr, 0u);
    EXPECT_EQ(m.peek32(counter_at(kCb, 2)), 0x4fu);
}

TEST_F(Llwpcb, ZeroWhileDisabledAccessesNothing)
{
    // spec 5.1 step 3: address 0 disables; nothing to flush
    ASSERT_EQ(llwpcb(0), LWP_OK);
    EXPECT_EQ(s.cb_addr, 0u);
    EXPECT_TRUE(m.log().empty());
}

// ---------------------------------------------------------------------------
// Legacy mode: DS checks (spec 5.1 step 4 and 5, Table 6-1 BufferBase;
// rows 14 a, e and 31).  DS base 0x100000; the LWPCB at effective address
// 0x2000, the ring at 0x4000.

class LlwpcbLegacy : public EngineTest
{
  protected:
    static constexpr uint64_t kDsBase = 0x100000;
    static constexpr uint64_t kCbEa = 0x2000;
    static constexpr uint64_t kBufEa = 0x4000;

    void SetUp() override
    {
        EngineTest::SetUp();
        ctx.long64 = 0;
        ctx.lma = 0;
        ctx.ds_base = kDsBase;
        ctx.ds_limit = 0xffff;
        m.map(kDsBase + kCbEa, kPageSize, kReadWrite);
        m.map(kDsBase + kBufEa, kPageSize, kReadWrite);
        cb.buffer_base = kBufEa;
        cb.flags = LWP_FEAT_IRE;
    }
    LwpStatus load_at(uint64_t ea)
    {
        if (s.cb_addr != 0) {
            EXPECT_EQ(llwpcb(0), LWP_OK) << "stopping LWP before a reload";
        }
        cb.write(m, (ctx.ds_base + ea) & 0xffffffff);
        return llwpcb(ea);
    }
};

TEST_F(LlwpcbLegacy, AddressesAreMadeLinearWithTheDsBase)
{
    // spec 5.1 step 5; SLWPCB returns linear - DS base (spec 5.2)
    ASSERT_EQ(load_at(kCbEa), LWP_OK);
    EXPECT_EQ(s.cb_addr, kDsBase + kCbEa);
    EXPECT_EQ(s.buffer_base, kDsBase + kBufEa);
    uint64_t ea = 1;
    ASSERT_EQ(slwpcb(&ea), LWP_OK);
    EXPECT_EQ(ea, kCbEa);
}

TEST_F(LlwpcbLegacy, LwpcbBeyondTheDsLimitRaisesGp)
{
    // LwpCbSize 0xB0: the last byte is ea + 0xAF
    ctx.ds_limit = kCbEa + 0xae;
    cb.buffer_base = 0x1000;
    m.map(kDsBase + 0x1000, kPageSize, kReadWrite);
    EXPECT_EQ(load_at(kCbEa), LWP_FAULT_GP);
    EXPECT_EQ(s.cb_addr, 0u);
    ctx.ds_limit = kCbEa + 0xaf;
    EXPECT_EQ(load_at(kCbEa), LWP_OK);
}

TEST_F(LlwpcbLegacy, RingBufferBeyondTheDsLimitRaisesGp)
{
    // spec 5.1 step 4: "If any part of the LWPCB or the ring buffer is
    // beyond the data segment limit, LLWPCB causes a #GP"; row 14 (e)
    ctx.ds_limit = kBufEa + kSize - 2;
    EXPECT_EQ(load_at(kCbEa), LWP_FAULT_GP);
    EXPECT_EQ(s.cb_addr, 0u);
    ctx.ds_limit = kBufEa + kSize - 1;
    EXPECT_EQ(load_at(kCbEa), LWP_OK);
}

TEST_F(LlwpcbLegacy, NullDsRaisesGpBeforeAnyRead)
{
    // Row 31 "usable"; row 14 (a) precedes the read (b)
    ctx.ds_flags = LWP_DS_WRITABLE;
    EXPECT_EQ(llwpcb(0x7000), LWP_FAULT_GP); // not even mapped
    EXPECT_TRUE(m.log().empty());
    EXPECT_EQ(load_at(kCbEa), LWP_FAULT_GP);
    EXPECT_EQ(s.cb_addr, 0u);
}

TEST_F(LlwpcbLegacy, ReadOnlyDsRaisesGp)
{
    // Row 31: a store check on DS
    ctx.ds_flags = LWP_DS_USABLE;
    EXPECT_EQ(load_at(kCbEa), LWP_FAULT_GP);
    EXPECT_EQ(s.cb_addr, 0u);
}

TEST_F(LlwpcbLegacy, ExpandDownSegmentAllowsOnlyOffsetsAboveTheLimit)
{
    // Row 31: expand-down: above the limit and up to 0xFFFF (B = 0)
    ctx.ds_flags = LWP_DS_USABLE | LWP_DS_WRITABLE | LWP_DS_EXPAND_DOWN;
    ctx.ds_limit = 0x0fff;
    EXPECT_EQ(load_at(kCbEa), LWP_OK);

    EXPECT_EQ(llwpcb(0x0f80), LWP_FAULT_GP) << "LWPCB below the limit";
    EXPECT_EQ(s.cb_addr, 0u);

    cb.buffer_base = 0xfc00; // last byte 0xffff
    m.map(kDsBase + 0xfc00, kPageSize, kReadWrite);
    EXPECT_EQ(load_at(kCbEa), LWP_OK);

    cb.buffer_base = 0xfe00; // last byte 0x101ff
    m.map(kDsBase + 0xfe00, 2 * kPageSize, kReadWrite);
    EXPECT_EQ(load_at(kCbEa), LWP_FAULT_GP) << "ring above 0xFFFF, B = 0";
    ctx.ds_flags |= LWP_DS_BIG;
    EXPECT_EQ(load_at(kCbEa), LWP_OK) << "ring above 0xFFFF, B = 1";
}

TEST_F(LlwpcbLegacy, RangePastFourGigabytesRaisesGp)
{
    // Row 31: the range must not pass 4G-1
    ctx.ds_base = 0;
    ctx.ds_limit = 0xffffffff;
    EXPECT_EQ(llwpcb(0xffffff80), LWP_FAULT_GP) << "LWPCB";
    EXPECT_EQ(s.cb_addr, 0u);

    cb.buffer_base = 0xfffffc00; // size 0x800: passes 4G-1
    cb.buffer_size = 0x800;
    m.map(0x2000, kPageSize, kReadWrite);
    cb.write(m, 0x2000);
    EXPECT_EQ(llwpcb(0x2000), LWP_FAULT_GP) << "ring";
    EXPECT_EQ(s.cb_addr, 0u);
}

TEST_F(LlwpcbLegacy, BufferBaseUpperBitsMustBeZero)
{
    // Table 6-1 BufferBase; row 14 (e)
    cb.buffer_base = 0x0000000100000000ull + kBufEa;
    EXPECT_EQ(load_at(kCbEa), LWP_FAULT_GP);
    EXPECT_EQ(s.cb_addr, 0u);
}

TEST_F(LlwpcbLegacy, LinearAddressesWrapAt4GOutsideLongMode)
{
    // lwp-engine.h: outside long mode a range that passes 4G is split
    // there.  DS base 0xffffff00 + ea 0xc0: the LWPCB is at linear
    // 0xffffffc0 and goes on at 0; the ring at ea 0xf0xx wraps to 0xefxx.
    ctx.ds_base = 0xffffff00;
    ctx.ds_limit = 0xffffffff;
    m.map(0xfffff000, kPageSize, kReadWrite);
    m.map(0, kPageSize, kReadWrite);
    m.map(0xf000, kPageSize, kReadWrite);
    cb.flags = LWP_FEAT_IRE;
    cb.interval[2] = 0; // written back as 1 at linear 0x48
    cb.buffer_base = 0xf100;
    FakeMem img;
    img.map(0, kPageSize, kReadWrite);
    cb.write(img, 0);
    std::vector<uint8_t> b = img.bytes(0, kCbSize);
    m.poke(0xffffffc0, b.data(), 0x40);
    m.poke(0, b.data() + 0x40, kCbSize - 0x40);

    ASSERT_EQ(llwpcb(0xc0), LWP_OK);
    EXPECT_EQ(s.cb_addr, 0xffffffc0u);
    EXPECT_EQ(s.buffer_base, 0xf000u);
    EXPECT_EQ(m.peek32(0x48), 1u);
    EXPECT_EQ(m.peek32(0xffffffc0), uint32_t{LWP_FEAT_IRE});
    uint64_t ea = 0;
    ASSERT_EQ(slwpcb(&ea), LWP_OK);
    EXPECT_EQ(ea & 0xffffffff, 0xc0u);
}

// ---------------------------------------------------------------------------
// SLWPCB (spec 5.2; row 26)

TEST_F(Slwpcb, DisabledLwpReturnsZeroAndAccessesNothing)
{
    // spec 5.2: "If LWP is not currently enabled, SLWPCB sets the specified
    // register to zero"
    uint64_t ea = 0x1234;
    EXPECT_EQ(slwpcb(&ea), LWP_OK);
    EXPECT_EQ(ea, 0u);
    EXPECT_TRUE(m.log().empty());
}

TEST_F(Slwpcb, ReturnsTheEffectiveAddressOfTheLwpcb)
{
    // spec 5.2: linear LWP_CBADDR minus DS.Base (0 in 64-bit mode)
    ASSERT_EQ(load(), LWP_OK);
    uint64_t ea = 0;
    EXPECT_EQ(slwpcb(&ea), LWP_OK);
    EXPECT_EQ(ea, kCb);
    EXPECT_EQ(s.cb_addr, kCb) << "SLWPCB leaves LWP enabled";
}

TEST_F(Slwpcb, EffectiveAddressUsesTheCurrentDsBase)
{
    // spec 5.2: linear LWP_CBADDR minus the current DS.Base
    ctx.long64 = 0;
    ctx.lma = 0;
    ctx.ds_base = 0x0;
    ASSERT_EQ(load(), LWP_OK);
    ctx.ds_base = 0x800;
    uint64_t ea = 0;
    EXPECT_EQ(slwpcb(&ea), LWP_OK);
    EXPECT_EQ(ea & 0xffffffff, kCb - 0x800);
}

TEST_F(Slwpcb, FlushWritesTheCountersOfActiveEventsAndTheHead)
{
    // spec 5.2 "stores the internal event counters for active events and
    // the current ring buffer head pointer into the LWPCB"
    cb.flags = LWP_FEAT_IRE | LWP_FEAT_BRE;
    cb.counter[2] = 10;
    cb.counter[3] = 0;
    cb.counter[4] = 0x55; // DME is not enabled
    cb.interval[3] = 0x300;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(retire(0x1000, LWP_FEAT_IRE | LWP_FEAT_BRE), LWP_OK);
    ASSERT_EQ(retire(0x1004, LWP_FEAT_IRE), LWP_OK);
    ASSERT_EQ(retire(0x1008, LWP_FEAT_IRE), LWP_OK);
    // Software moved nothing; the LWPCB holds what LLWPCB left
    m.poke32(counter_at(kCb, 2), 0);
    m.poke32(kCb + LWPCB_HEAD, 0x3e0);
    uint64_t ea = 0;
    ASSERT_EQ(slwpcb(&ea), LWP_OK);
    EXPECT_EQ(m.peek32(counter_at(kCb, 2)), 7u);
    EXPECT_EQ(m.peek32(counter_at(kCb, 3)), 0x300u);
    EXPECT_EQ(m.peek32(counter_at(kCb, 4)), 0x55u);
    EXPECT_EQ(head_in_lwpcb(), 0x20u);
}

TEST_F(Slwpcb, NegativeCounterIsWrittenAs26Bits)
{
    // Row 16: EventCounter is bits 25:0; bits 31:26 are written as 0
    cb.flags = LWP_FEAT_IRE;
    cb.counter[2] = 5;
    ASSERT_EQ(load(), LWP_OK);
    s.counter[2] = -3; // as generated code leaves it (no record gathered)
    uint64_t ea = 0;
    ASSERT_EQ(slwpcb(&ea), LWP_OK);
    EXPECT_EQ(m.peek32(counter_at(kCb, 2)), 0x03fffffdu);
}

TEST_F(Slwpcb, FlushStoresThePendingRecordFirst)
{
    // spec 5.2 "If there is an unwritten event record pending, it is
    // written"; row 26: before the counters and head
    cb.flags = LWP_FEAT_IRE;
    cb.interval[2] = 0x1000;
    ASSERT_EQ(load(), LWP_OK);
    m.map(kBuf, kPageSize, kRead);
    ASSERT_EQ(retire(0x401000, LWP_FEAT_IRE), LWP_FAULT_PF);
    m.map(kBuf, kPageSize, kReadWrite);

    uint64_t ea = 0;
    ASSERT_EQ(slwpcb(&ea), LWP_OK);
    EXPECT_EQ(slot(0), make_record(0x2a02, 0, 0x401000, 0));
    EXPECT_EQ(head_in_lwpcb(), 0x20u);
    // The record was stored, so the counter was reset (1.1 step 5)
    EXPECT_EQ(m.peek32(counter_at(kCb, 2)), 0x1000u);
    EXPECT_FALSE(lwp_needs_sync(&s));
}

TEST_F(Slwpcb, FaultInTheFlushRaisesPfAndKeepsLwpEnabled)
{
    // spec 5.2 Exceptions: #PF "from reading or writing the LWPCB"; row 25:
    // a fault changes nothing
    cb.flags = LWP_FEAT_IRE;
    ASSERT_EQ(load(), LWP_OK);
    m.map(kCb, kPageSize, kRead);
    m.clear_log();
    uint64_t ea = 0;
    EXPECT_EQ(slwpcb(&ea), LWP_FAULT_PF);
    EXPECT_EQ(res.fault_write, 1);
    EXPECT_EQ(s.cb_addr, kCb);
    EXPECT_EQ(m.count('w'), 0u);
}

} // namespace
