// Unit tests: XSAVE and XRSTOR of component 62 and the lazy re-read of the
// LWPCB (spec 7.2-7.5, 8.2.5, 8.3; implementation-choices rows 18, 24,
// 29-31).  Areas are written out by hand from Figure 7-1.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "fake_mem.h"

namespace
{

using namespace lwptest;

using Area = std::array<uint8_t, LWP_XSAVE_SIZE>;

void put(Area &a, size_t off, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) {
        a[off + i] = static_cast<uint8_t>(v >> (8 * i));
    }
}

uint32_t get32(const Area &a, size_t off)
{
    return a[off] | a[off + 1] << 8 | a[off + 2] << 16 |
           static_cast<uint32_t>(a[off + 3]) << 24;
}

class XsaveTest : public EngineTest
{
  protected:
    // A valid area of an enabled LWP at kCb / kBuf (Figure 7-1)
    Area area(uint32_t flags, uint32_t head = 0)
    {
        Area a{};
        put(a, LWP_XS_CBADDR, kCb, 8);
        put(a, LWP_XS_FLAGS, flags, 4);
        put(a, LWP_XS_HEAD, head, 4);
        put(a, LWP_XS_BUFFER_BASE, kBuf, 8);
        put(a, LWP_XS_BUFFER_SIZE, kSize, 4);
        return a;
    }
    // XRSTOR of @a; why names the check that disabled LWP, or is empty
    bool xrstor(const Area &a)
    {
        const char *w = "unset";
        bool on = lwp_xrstor(&s, &ctx, a.data(), &w);
        why = w ? w : "";
        return on;
    }
    std::string why;
    Area xsave(bool *in_use = nullptr)
    {
        Area a;
        a.fill(0xcc);
        bool used = lwp_xsave(&s, a.data());
        if (in_use) {
            *in_use = used;
        }
        return a;
    }
};

// ---------------------------------------------------------------------------
// XSAVE (spec 7.2, 7.3; rows 10, 29)

using Xsave = XsaveTest;

TEST_F(Xsave, DisabledLwpIsNotInUse)
{
    // 7.3: "XSAVE sets bit 62 in XSAVE.HEADER.XSTATE_BV to 0"
    bool in_use = true;
    xsave(&in_use);
    EXPECT_FALSE(in_use);
}

TEST_F(Xsave, AreaOfAnEnabledLwpFollowsFigure7_1)
{
    // Figure 7-1, Table 7-1; row 29: Flags holds the enabled events (no INT),
    // BufferSize is the size in use (Random is not saved), EventCounter n
    // is 0 for events not enabled, reserved bytes are 0
    cb.flags = LWP_FEAT_INT | LWP_FEAT_VAL | LWP_FEAT_IRE | LWP_FEAT_BRE;
    cb.buffer_size = 0x41f;
    cb.random = 3;
    cb.head = 0x60;
    cb.filters = 0x30000107;
    cb.counter[1] = 5;
    cb.counter[2] = 0x123;
    cb.counter[3] = 0x03ffffff; // -1: loaded as 0
    cb.counter[4] = 0x77;       // DME not enabled
    ASSERT_EQ(load(), LWP_OK);
    bool in_use = false;
    Area got = xsave(&in_use);
    EXPECT_TRUE(in_use);
    const Area want = {
        0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, // LWPCBAddress
        0x0e, 0x00, 0x00, 0x00, 0x60, 0x00, 0x00, 0x00, // Flags, Head
        0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, // BufferBase
        0x00, 0x04, 0x00, 0x00, 0x07, 0x01, 0x00, 0x30, // Size, Filters
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // SavedEventRecord
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // generator state
        0x05, 0x00, 0x00, 0x00, 0x23, 0x01, 0x00, 0x00, // EventCounter1, 2
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // EventCounter3, 4
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // EventCounter5, 6
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // reserved
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    };
    EXPECT_EQ(got, want);
}

TEST_F(Xsave, PendingRecordAndGeneratorStateAreInSavedEventRecord)
{
    // Row 29: bytes 0-23 the pending record, 24-31 the generator state;
    // row 25: the pending event's counter counts on below zero
    cb.flags = LWP_FEAT_IRE;
    cb.interval[2] = 0x10000;
    cb.random = 15;
    ASSERT_EQ(load(), LWP_OK);
    ASSERT_EQ(retire(0x401000, LWP_FEAT_IRE), LWP_OK); // one draw
    s.counter[2] = 0;                                  // as if counted down
    m.map(kBuf, kPageSize, kRead);
    ASSERT_EQ(retire(0x401234, LWP_FEAT_IRE), LWP_FAULT_PF);
    Area got = xsave();
    Area want = area(LWP_FEAT_IRE, 0x20);
    const uint8_t record[24] = {0x02, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                0x34, 0x12, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,
                                0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    for (int i = 0; i < 24; i++) {
        want[LWP_XS_SAVED_RECORD + i] = record[i];
    }
    put(want, LWP_XS_SAVED_RECORD + 24, 0x9e3779b97f4a7c15ull, 8);
    put(want, LWP_XS_COUNTER(2), 0xffffffff, 4);
    EXPECT_EQ(got, want);
}

TEST_F(Xsave, LlwpcbXsaveXrstorXsaveIsTheSameArea)
{
    // spec 7.3, 7.4, 8.2.1: a context switch keeps the state
    cb.flags = 0x8000007e;
    cb.head = 0xa0;
    cb.filters = 0x80000000;
    for (unsigned n = 1; n <= 6; n++) {
        cb.counter[n] = 0x100 * n;
    }
    ASSERT_EQ(load(), LWP_OK);
    Area first = xsave();
    lwp_state_init(&s);
    ASSERT_TRUE(xrstor(first));
    EXPECT_EQ(xsave(), first);
}

// ---------------------------------------------------------------------------
// XRSTOR (spec 7.4, 7.5; rows 18, 24, 30, 31)

using Xrstor = XsaveTest;

TEST_F(Xrstor, ProcessorSuppliedValuesDisableLwpAndClearTheState)
{
    // 7.5: "LWP_CBADDR is set to 0 and LWP is disabled. Other processor
    // internal state for LWP is set to 0"; row 18: generator state 0
    cb.flags = LWP_FEAT_IRE;
    cb.random = 15;
    ASSERT_EQ(load(), LWP_OK);
    lwp_next_interval(&s, 2);
    m.map(kBuf, kPageSize, kRead);
    ASSERT_EQ(retire(0x401000, LWP_FEAT_IRE), LWP_FAULT_PF);
    EXPECT_FALSE(lwp_xrstor(&s, &ctx, nullptr, nullptr));
    EXPECT_EQ(s.cb_addr, 0u);
    EXPECT_EQ(s.rng, 0u);
    EXPECT_EQ(s.pending[0], 0);
    EXPECT_EQ(s.flags, 0u);
    EXPECT_FALSE(lwp_needs_sync(&s));
    bool in_use = true;
    xsave(&in_use);
    EXPECT_FALSE(in_use);
}

TEST_F(Xrstor, ZeroLwpcbAddressDisables)
{
    // Table 7-1 LWPCBAddress: "0 if LWP is disabled, in which case the
    // rest of the save area is ignored"
    ASSERT_EQ(load(), LWP_OK);
    Area a = area(0x7e);
    put(a, LWP_XS_CBADDR, 0, 8);
    EXPECT_FALSE(xrstor(a));
    EXPECT_EQ(s.cb_addr, 0u);
    // the area asks for LWP disabled: no check failed, nothing to trace
    EXPECT_EQ(why, "");
}

TEST_F(Xrstor, LoadsTheInternalState)
{
    // 7.4 steps 1-3
    ctx.cpl = 0;
    Area a = area(LWP_FEAT_VAL | LWP_FEAT_IRE | LWP_FEAT_BRE, 0x40);
    put(a, LWP_XS_FILTERS, 0x30000107, 4);
    put(a, LWP_XS_SAVED_RECORD + 24, 0x1234, 8);
    put(a, LWP_XS_COUNTER(1), 5, 4);
    put(a, LWP_XS_COUNTER(2), 0x123, 4);
    put(a, LWP_XS_COUNTER(3), 0xffffffff, 4);
    ASSERT_TRUE(xrstor(a));
    EXPECT_EQ(s.cb_addr, kCb);
    EXPECT_EQ(s.flags & LWP_FEAT_EVENTS_MASK, 0x0eu);
    EXPECT_EQ(s.head, 0x40u);
    EXPECT_EQ(s.buffer_base, kBuf);
    EXPECT_EQ(s.buffer_size, kSize);
    EXPECT_EQ(s.filters, 0x30000107u);
    EXPECT_EQ(s.counter[1], 5);
    EXPECT_EQ(s.counter[2], 0x123);
    EXPECT_EQ(s.counter[3], -1);
    EXPECT_EQ(s.rng, 0x1234u);
    EXPECT_EQ(s.pending[0], 0);
    EXPECT_TRUE(lwp_needs_sync(&s));
}

TEST_F(Xrstor, XsaveOfARestoredAreaGivesItBack)
{
    // 7.3: "with no checking or conversion"; a valid area survives
    // XRSTOR -> XSAVE unchanged, pending record and generator included
    Area a = area(0x7e, 0x3e0);
    put(a, LWP_XS_FILTERS, 0xfe001fff, 4);
    const uint8_t record[24] = {0x03, 0x2a, 0x00, 0xe0, 0x00, 0x00, 0x00, 0x00,
                                0x10, 0x32, 0x54, 0x76, 0x00, 0x00, 0x00, 0x00,
                                0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    for (int i = 0; i < 24; i++) {
        a[LWP_XS_SAVED_RECORD + i] = record[i];
    }
    put(a, LWP_XS_SAVED_RECORD + 24, 0x0123456789abcdefull, 8);
    for (unsigned n = 1; n <= 6; n++) {
        put(a, LWP_XS_COUNTER(n), 0x01000000 + n, 4);
    }
    put(a, LWP_XS_COUNTER(3), 0xffffffff, 4);
    ASSERT_TRUE(xrstor(a));
    EXPECT_EQ(xsave(), a);
}

TEST_F(Xrstor, BufferSizeBelowTheMinimumDisables)
{
    // 7.4 step 1: "If BufferSize is below the implementation minimum, LWP
    // is disabled"
    for (uint32_t size : {0x3e0u, 0x3ffu, 0u}) {
        Area a = area(0x7e);
        put(a, LWP_XS_BUFFER_SIZE, size, 4);
        EXPECT_FALSE(xrstor(a)) << "BufferSize " << size;
        EXPECT_EQ(s.cb_addr, 0u) << "BufferSize " << size;
        EXPECT_NE(why.find("BufferSize"), std::string::npos) << why;
        EXPECT_NE(why.find("7.4 step 1"), std::string::npos) << why;
    }
}

TEST_F(Xrstor, BufferSizeIsRoundedDown)
{
    // spec 7.4 step 1: "If BufferSize is not a multiple of the event record
    // size, it is rounded down"
    Area a = area(0x7e);
    put(a, LWP_XS_BUFFER_SIZE, 0x41f, 4);
    ASSERT_TRUE(xrstor(a));
    EXPECT_EQ(s.buffer_size, 0x400u);
}

TEST_F(Xrstor, HeadBeyondTheLastRecordBecomesZeroThenRoundsDown)
{
    // 7.4 step 1; row 24: head > BufferSize - 32 -> 0, then round down
    const struct {
        uint32_t in, out;
    } cases[] = {{0x3e0, 0x3e0}, {0x3e1, 0},   {0x3ff, 0},     {0x400, 0},
                 {0x3df, 0x3c0}, {0x45, 0x40}, {0xffffffff, 0}};
    for (const auto &c : cases) {
        ASSERT_TRUE(xrstor(area(0x7e, c.in))) << "head " << c.in;
        EXPECT_EQ(s.head, c.out) << "head " << c.in;
    }
}

TEST_F(Xrstor, HeadIsComparedWithTheRoundedBufferSize)
{
    // 7.4 step 1 rounds BufferSize 0x41f down to 0x400 before the head
    // check: 0x3f0 > 0x400 - 32, so the head becomes 0
    Area a = area(0x7e, 0x3f0);
    put(a, LWP_XS_BUFFER_SIZE, 0x41f, 4);
    ASSERT_TRUE(xrstor(a));
    EXPECT_EQ(s.head, 0u);
}

TEST_F(Xrstor, CounterBitsAreAndedWithTheEventsAvailableInLwpCfg)
{
    // 7.4 step 2.  LWP_CFG without DME; Flags bit 0 and 31:7 reserved.
    ctx.cfg = 0x0000002a8000006eull;
    Area a = area(0xffffffff);
    for (unsigned n = 1; n <= 6; n++) {
        put(a, LWP_XS_COUNTER(n), 7, 4);
    }
    ASSERT_TRUE(xrstor(a));
    EXPECT_EQ(s.flags & LWP_FEAT_EVENTS_MASK, 0x6eu);
    Area got = xsave();
    EXPECT_EQ(get32(got, LWP_XS_FLAGS), 0x6eu);
    EXPECT_EQ(get32(got, LWP_XS_COUNTER(4)), 0u);
    EXPECT_EQ(get32(got, LWP_XS_COUNTER(5)), 7u);
}

TEST_F(Xrstor, CountersAreClampedToThe26BitSignedRange)
{
    // Row 30, row 16: -2^25 .. 2^25 - 1
    Area a = area(0x7e);
    put(a, LWP_XS_COUNTER(1), 0x7fffffff, 4);
    put(a, LWP_XS_COUNTER(2), 0x80000000, 4);
    put(a, LWP_XS_COUNTER(3), 0xfffffffb, 4);
    put(a, LWP_XS_COUNTER(4), 0x02000000, 4);
    put(a, LWP_XS_COUNTER(5), 0xfdffffff, 4);
    put(a, LWP_XS_COUNTER(6), 0x01ffffff, 4);
    ASSERT_TRUE(xrstor(a));
    EXPECT_EQ(s.counter[1], 0x01ffffff);
    EXPECT_EQ(s.counter[2], -0x02000000);
    EXPECT_EQ(s.counter[3], -5);
    EXPECT_EQ(s.counter[4], 0x01ffffff);
    EXPECT_EQ(s.counter[5], -0x02000000);
    EXPECT_EQ(s.counter[6], 0x01ffffff);
}

TEST_F(Xrstor, OverwritesAnEnabledLwpWithoutSavingIt)
{
    // 7.4: "the old LWP state is overwritten without being saved"
    cb.flags = LWP_FEAT_IRE;
    ASSERT_EQ(load(), LWP_OK);
    m.map(kBuf, kPageSize, kRead);
    ASSERT_EQ(retire(0x401000, LWP_FEAT_IRE), LWP_FAULT_PF);
    Area a = area(LWP_FEAT_BRE, 0x80);
    put(a, LWP_XS_CBADDR, 0x30000, 8);
    ASSERT_TRUE(xrstor(a));
    EXPECT_EQ(s.cb_addr, 0x30000u);
    EXPECT_EQ(s.pending[0], 0);
    EXPECT_EQ(s.head, 0x80u);
}

TEST_F(Xrstor, AtCpl3ANonCanonicalAddressDisablesSilently)
{
    // 7.4 "If any of the address checks fails, LWP is disabled. No fault
    // is generated"; row 31 in 64-bit mode
    Area bad_cb = area(0x7e);
    put(bad_cb, LWP_XS_CBADDR, 0x0000800000000000ull, 8);
    Area bad_ring = area(0x7e);
    put(bad_ring, LWP_XS_BUFFER_BASE, 0x00007ffffffffe00ull, 8);

    Area wrapping_ring = area(0x7e);
    put(wrapping_ring, LWP_XS_BUFFER_BASE, 0xfffffffffffffe00ull, 8);

    ctx.cpl = 3;
    EXPECT_FALSE(xrstor(bad_cb));
    EXPECT_EQ(s.cb_addr, 0u);
    EXPECT_NE(why.find("the LWPCB is"), std::string::npos) << why;
    EXPECT_FALSE(xrstor(bad_ring));
    EXPECT_EQ(s.cb_addr, 0u);
    EXPECT_NE(why.find("the ring buffer is"), std::string::npos) << why;
    EXPECT_FALSE(xrstor(wrapping_ring));
    EXPECT_EQ(s.cb_addr, 0u);
    EXPECT_NE(why.find("the ring buffer is"), std::string::npos) << why;

    // 7.4: "If the CPL = 0, XRSTOR simply reloads"
    ctx.cpl = 0;
    EXPECT_TRUE(xrstor(bad_cb));
    EXPECT_EQ(why, "");
    EXPECT_TRUE(xrstor(bad_ring));
}

class XrstorLegacy : public XsaveTest
{
  protected:
    // DS base 0x100000, limit 0xffff; the LWPCB at linear 0x102000 (ea
    // 0x2000), the ring at 0x104000 (ea 0x4000)
    void SetUp() override
    {
        XsaveTest::SetUp();
        ctx.long64 = 0;
        ctx.lma = 0;
        ctx.ds_base = 0x100000;
        ctx.ds_limit = 0xffff;
        ctx.cpl = 3;
    }
    Area legacy_area()
    {
        Area a = area(0x7e);
        put(a, LWP_XS_CBADDR, 0x102000, 8);
        put(a, LWP_XS_BUFFER_BASE, 0x104000, 8);
        return a;
    }
};

TEST_F(XrstorLegacy, AtCpl3TheRangesMustPassTheDsStoreCheck)
{
    // 7.4 Check(): ea = truncate32(addr - DS.BASE); row 31
    EXPECT_TRUE(xrstor(legacy_area()));

    ctx.ds_limit = 0x20ae; // the LWPCB ends at 0x20af (LwpCbSize 0xb0)
    EXPECT_FALSE(xrstor(legacy_area())) << "LWPCB beyond the limit";
    ctx.ds_limit = 0x43fe; // the ring ends at 0x43ff
    EXPECT_FALSE(xrstor(legacy_area())) << "ring beyond the limit";
    ctx.ds_limit = 0x43ff;
    EXPECT_TRUE(xrstor(legacy_area()));

    ctx.ds_flags = LWP_DS_WRITABLE;
    EXPECT_FALSE(xrstor(legacy_area())) << "null DS";
    ctx.ds_flags = LWP_DS_USABLE;
    EXPECT_FALSE(xrstor(legacy_area())) << "read-only DS";
    ctx.ds_flags = LWP_DS_USABLE | LWP_DS_WRITABLE;

    // DS base above the LWPCB: its ea wraps to 0xfffff000 (truncate32)
    ctx.ds_base = 0x103000;
    EXPECT_FALSE(xrstor(legacy_area())) << "LWPCB at ea 0xfffff000";
    EXPECT_EQ(s.cb_addr, 0u);
    ctx.ds_limit = 0xffffffff;
    EXPECT_TRUE(xrstor(legacy_area())) << "ea 0xfffff000, limit 4G-1";
}

TEST_F(XrstorLegacy, AtCpl3ARingPastFourGigabytesDisables)
{
    // 7.4 Check(): top = addr + size - 1 must not pass 4G-1 (row 31)
    ctx.ds_base = 0;
    ctx.ds_limit = 0xffffffff;
    Area a = legacy_area();
    put(a, LWP_XS_BUFFER_BASE, 0xfffffc00, 8);
    put(a, LWP_XS_BUFFER_SIZE, 0x800, 4);
    EXPECT_FALSE(xrstor(a));
    put(a, LWP_XS_BUFFER_SIZE, 0x400, 4);
    EXPECT_TRUE(xrstor(a));
}

TEST_F(XrstorLegacy, AtCpl0NothingIsChecked)
{
    // spec 7.4: "If the CPL = 0, XRSTOR simply reloads the LWPCB address and
    // the ring buffer address"
    ctx.cpl = 0;
    ctx.ds_flags = 0;
    ctx.ds_limit = 0;
    EXPECT_TRUE(xrstor(legacy_area()));
    EXPECT_EQ(s.cb_addr, 0x102000u);
}

TEST_F(XrstorLegacy, CheckCoversLwpCbSizeBytes)
{
    // Table 3-1 LwpCbSize with EDX 8000000F: 19 quadwords, 0x98 bytes
    ctx.edx = 0x8000000f;
    ctx.ds_limit = 0x2097;
    Area a = legacy_area();
    put(a, LWP_XS_BUFFER_BASE, 0x101000, 8);
    EXPECT_TRUE(xrstor(a));
    ctx.ds_limit = 0x2096;
    EXPECT_FALSE(xrstor(a));
}

// ---------------------------------------------------------------------------
// The lazy re-read of the LWPCB after XRSTOR (7.4, 8.2.5, 8.3; row 30)

class XrstorSync : public XsaveTest
{
  protected:
    void SetUp() override
    {
        XsaveTest::SetUp();
        // The LWPCB in memory: what the XSAVE area does not hold
        cb.flags = LWP_FEAT_INT | LWP_FEAT_VAL | LWP_FEAT_IRE;
        cb.random = 15;
        cb.threshold = 0x25;
        cb.base_ip = 0x1000;
        cb.limit_ip = 0x1fff;
        cb.interval[1] = 0x03ffffff; // -1 -> 0
        cb.interval[2] = 0;          // -> 1
        cb.tail = 0x60;
        cb.write(m, kCb);
    }
};

TEST_F(XrstorSync, FieldsNotInTheAreaAreRereadBeforeTheNextUse)
{
    // spec 7.4 "The LWP hardware will read additional state from the LWPCB",
    // 8.2.5, 8.3; row 30: INT, Random, Threshold, BaseIP, LimitIP, the
    // intervals and the tail, sanitised without write-back
    ASSERT_TRUE(xrstor(area(LWP_FEAT_VAL | LWP_FEAT_IRE, 0x60)));
    EXPECT_TRUE(lwp_needs_sync(&s));
    auto before = m.snapshot();
    ASSERT_EQ(sync(), LWP_OK);
    EXPECT_FALSE(lwp_needs_sync(&s));
    EXPECT_EQ(s.random, 15);
    EXPECT_EQ(s.base_ip, 0x1000u);
    EXPECT_EQ(s.limit_ip, 0x1fffu);
    EXPECT_EQ(s.interval[1], 0u);
    EXPECT_EQ(s.interval[2], 1u);
    EXPECT_EQ(s.tail, 0x60u);
    EXPECT_NE(s.flags & LWP_FEAT_INT, 0u);
    // Sanitised "without #GP or write-back"
    EXPECT_EQ(m.count('w'), 0u);
    EXPECT_TRUE(m.snapshot() == before);
}

TEST_F(XrstorSync, EnabledEventsComeFromTheAreaNotFromLwpcbFlags)
{
    // Row 30: only INT is taken from LWPCB.Flags (VAL | IRE | INT here);
    // the events are the area's Counter n bits (7.4 step 2)
    ASSERT_TRUE(xrstor(area(LWP_FEAT_BRE)));
    ASSERT_EQ(sync(), LWP_OK);
    EXPECT_EQ(s.flags & LWP_FEAT_EVENTS_MASK, uint32_t{LWP_FEAT_BRE});
    EXPECT_NE(s.flags & LWP_FEAT_INT, 0u);
    EXPECT_FALSE(lwp_lwpval_fires(&s, &ctx, 0x1000));
}

TEST_F(XrstorSync, ThresholdAndIntComeFromTheLwpcb)
{
    // Threshold 0x25 is used as 0x20; head = tail = 0x60 (empty)
    ASSERT_TRUE(xrstor(area(LWP_FEAT_IRE, 0x60)));
    ASSERT_EQ(sync(), LWP_OK);
    ASSERT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(res.interrupt, 1);
    EXPECT_EQ(head_in_lwpcb(), 0x80u);

    // The same area with a LWPCB that does not ask for the interrupt
    cb.flags = LWP_FEAT_IRE;
    cb.write(m, kCb);
    ASSERT_TRUE(xrstor(area(LWP_FEAT_IRE, 0x60)));
    ASSERT_EQ(sync(), LWP_OK);
    ASSERT_EQ(lwpins(0x1000, 0, 0, 0), LWP_OK);
    EXPECT_EQ(res.interrupt, 0);
}

TEST_F(XrstorSync, UnreadableLwpcbFaultsAndKeepsNeedingSync)
{
    // spec 8.2.5: the re-read happens in ring 3 and "can take a #PF"
    ASSERT_TRUE(xrstor(area(LWP_FEAT_IRE)));
    m.map(kCb, kPageSize, kNone);
    EXPECT_EQ(sync(), LWP_FAULT_PF);
    EXPECT_EQ(res.fault_write, 0);
    EXPECT_TRUE(fault_within(kCb, kCbSize));
    EXPECT_TRUE(lwp_needs_sync(&s));
    EXPECT_EQ(s.cb_addr, kCb);
}

TEST_F(XrstorSync, BadLwpcbContentsRaiseNoGp)
{
    // Row 30: "sanitised as by LLWPCB but without #GP"
    m.poke8(kCb + 20, 1);
    ASSERT_TRUE(xrstor(area(LWP_FEAT_IRE)));
    EXPECT_EQ(sync(), LWP_OK);
}

TEST_F(XrstorSync, PendingRecordIsStoredBySync)
{
    // 7.4 step 3: "LWP will store it into the event ring buffer as soon
    // as possible once the CPL is 3"; row 19: its counter is then reset
    Area a = area(LWP_FEAT_IRE, 0x60);
    const uint8_t record[24] = {0x02, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                0x00, 0x10, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,
                                0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    for (int i = 0; i < 24; i++) {
        a[LWP_XS_SAVED_RECORD + i] = record[i];
    }
    put(a, LWP_XS_COUNTER(2), 0xffffffff, 4);
    cb.interval[2] = 0x1000;
    cb.random = 0;
    cb.write(m, kCb);
    ASSERT_TRUE(xrstor(a));
    EXPECT_EQ(s.pending[0], LWP_EVENT_ID_IRE);
    ASSERT_EQ(sync(), LWP_OK);
    EXPECT_EQ(slot(3), make_record(0x2a02, 0, 0x401000, 0));
    EXPECT_EQ(head_in_lwpcb(), 0x80u);
    EXPECT_EQ(s.counter[2], 0x1000);
    EXPECT_EQ(s.pending[0], 0);
}

TEST_F(XrstorSync, GeneratorStateComesFromSavedEventRecordBytes24To31)
{
    // Row 18: the state after one draw from 0 gives the second output,
    // 0x6e789e6aa1b965f4: with Random 15 and interval 0x10000, 0x165f4
    cb.interval[2] = 0x10000;
    cb.write(m, kCb);
    Area a = area(LWP_FEAT_IRE);
    put(a, LWP_XS_SAVED_RECORD + 24, 0x9e3779b97f4a7c15ull, 8);
    ASSERT_TRUE(xrstor(a));
    ASSERT_EQ(sync(), LWP_OK);
    EXPECT_EQ(lwp_next_interval(&s, 2), 0x165f4);
}

} // namespace
