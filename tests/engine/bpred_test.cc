// The branch-predictor model (bpred-engine.h, docs/branch-predictor.md).
//
// BpredHand: cases worked out by hand from the document's rules; every
// expected value is written out, with its arithmetic in the comments,
// never computed by the code under test.
//
// BpredReference: deterministic pseudo-random branch streams go through
// the engine's model, every call, result and from time to time the whole
// state are written to a stream file, and tests/engine/bpred_model_ref.py,
// written from the document alone, recomputes and compares everything.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

extern "C" {
#include "bpred-engine.h"
}
#include "naive_model.h"

namespace
{

constexpr uint64_t kAllOnes = ~uint64_t{0};

struct Fresh {
    BpredState s;
    Fresh()
    {
        // Garbage first, so that the test sees what reset writes
        std::memset(&s, 0xa5, sizeof s);
        bpred_reset(&s);
    }
};

// "Index functions": the examples of the document's table
TEST(BpredHand, IndexFunctionsFoldTheAddress)
{
    // 0x401234: low 12 bits 0x234, bits 12-23 0x401: 0x234 ^ 0x401
    EXPECT_EQ(bpred_cond_index(0x401234), 0x635u);
    // low 9 bits 0x034, bits 9-17 0x009 (0x401234 >> 9 = 0x2009): 0x03d
    EXPECT_EQ(bpred_btb_index(0x401234), 0x03du);
    EXPECT_EQ(bpred_cond_index(0x401000), 0x401u); // 0x000 ^ 0x401
    EXPECT_EQ(bpred_cond_index(0x400001), 0x401u); // 0x001 ^ 0x400
    // + 2^24 changes bit 24 only, which neither index reads
    EXPECT_EQ(bpred_cond_index(0x1401000), 0x401u);
    EXPECT_EQ(bpred_btb_index(0x401000), 0x008u); // 0x000 ^ (0x2008 & 0x1ff)
    EXPECT_EQ(bpred_btb_index(0x1401000), 0x008u);
    EXPECT_EQ(bpred_btb_index(0x400001), 0x001u); // 0x001 ^ (0x2000 & 0x1ff)
    EXPECT_EQ(bpred_btb_index(0x1000), 0x008u);   // 0x000 ^ 0x008
    // Bits 24 and up do not matter: the top of the address space
    // 0xffffffffffffffff: 0xfff ^ 0xfff = 0, and 0x1ff ^ 0x1ff = 0
    EXPECT_EQ(bpred_cond_index(kAllOnes), 0u);
    EXPECT_EQ(bpred_btb_index(kAllOnes), 0u);
    // 0xffffffff81000010 (a kernel address): 0x010 ^ 0x000 (bits 12-23 of
    // ...81000010 are 0x000)
    EXPECT_EQ(bpred_cond_index(0xffffffff81000010ull), 0x010u);
}

// "Index functions": two branches in one 4 KiB-aligned block never share
// a counter, nor two in one 512-byte block a BTB entry
TEST(BpredHand, OneAlignedBlockNeverSharesASlot)
{
    struct Table {
        uint32_t (*index)(uint64_t);
        uint64_t block; // its size, and the number of slots
    } tables[] = {{bpred_cond_index, 4096}, {bpred_btb_index, 512}};
    for (const Table &t : tables) {
        std::vector<bool> seen(t.block);
        uint64_t base = 0x7f1234567000ull; // aligned to both
        for (uint64_t ip = base; ip < base + t.block; ip++) {
            uint32_t i = t.index(ip);
            ASSERT_LT(i, t.block);
            EXPECT_FALSE(seen[i]) << std::hex << ip;
            seen[i] = true;
        }
    }
}

// "State": the offsets the generated code uses
TEST(BpredHand, LayoutIsTheDocumentedOne)
{
    EXPECT_EQ(offsetof(BpredState, btb_tag), 0u);
    EXPECT_EQ(offsetof(BpredState, btb_target), 4096u);
    EXPECT_EQ(offsetof(BpredState, rsb), 8192u);
    EXPECT_EQ(offsetof(BpredState, rsb_top), 8320u);
    EXPECT_EQ(offsetof(BpredState, reserved), 8324u);
    EXPECT_EQ(offsetof(BpredState, cond), 8328u);
    EXPECT_EQ(sizeof(BpredState), 12424u);
    EXPECT_EQ(BPRED_COND_ENTRIES, 4096u);
    EXPECT_EQ(BPRED_BTB_ENTRIES, 512u);
    EXPECT_EQ(BPRED_RSB_ENTRIES, 16u);
}

// "Reset"
TEST(BpredHand, ResetIsWeaklyNotTakenEmptyBtbZeroStack)
{
    Fresh f;
    for (unsigned i = 0; i < 4096; i++) {
        ASSERT_EQ(f.s.cond[i], 1) << i;
    }
    for (unsigned i = 0; i < 512; i++) {
        ASSERT_EQ(f.s.btb_tag[i], kAllOnes) << i;
        ASSERT_EQ(f.s.btb_target[i], 0u) << i;
    }
    for (unsigned i = 0; i < 16; i++) {
        ASSERT_EQ(f.s.rsb[i], 0u) << i;
    }
    EXPECT_EQ(f.s.rsb_top, 0u);
    EXPECT_EQ(f.s.reserved, 0u);
    EXPECT_TRUE(bpred_state_valid(&f.s));
}

// "Conditional branches": the table, row by row
TEST(BpredHand, CounterTable)
{
    struct Row {
        uint8_t before;
        bool taken;
        bool mispredicted;
        uint8_t after;
    } rows[] = {
        {0, true, true, 1},   {0, false, false, 0}, {1, true, true, 2},
        {1, false, false, 0}, {2, true, false, 3},  {2, false, true, 1},
        {3, true, false, 3},  {3, false, true, 2},
    };
    for (const Row &r : rows) {
        Fresh f;
        f.s.cond[0x635] = r.before; // the counter of 0x401234
        EXPECT_EQ(bpred_cond(&f.s, 0x401234, r.taken), r.mispredicted)
            << "counter " << int(r.before) << " taken " << r.taken;
        EXPECT_EQ(f.s.cond[0x635], r.after)
            << "counter " << int(r.before) << " taken " << r.taken;
    }
}

// A loop branch taken 9 times, then not taken (a loop of 10 iterations),
// run three times.  Counter from 1:
//   run 1: T(1: predicts N, miss, ->2) T(2: ok ->3) 7 x T(3: ok) N(3:
//          predicts T, miss, ->2): 2 mispredictions
//   run 2: T(2: ok ->3) 8 x T ... N(3: miss ->2): 1
//   run 3: the same: 1
TEST(BpredHand, LoopBranchMispredictsTwiceThenOncePerRun)
{
    Fresh f;
    const uint64_t jnz = 0x401234;
    unsigned per_run[3] = {};
    for (int run = 0; run < 3; run++) {
        for (int i = 0; i < 10; i++) {
            per_run[run] += bpred_cond(&f.s, jnz, i < 9);
        }
        EXPECT_EQ(f.s.cond[0x635], 2) << "after run " << run;
    }
    EXPECT_EQ(per_run[0], 2u);
    EXPECT_EQ(per_run[1], 1u);
    EXPECT_EQ(per_run[2], 1u);
}

// Alternating outcomes from a counter of 1:
//   T N T N ...: T(1: miss ->2) N(2: miss ->1) T(1: miss ->2) ...: every
//   one mispredicted
//   N T N T ...: N(1: ok ->0) T(0: miss ->1) N(1: ok ->0) ...: every
//   second one
TEST(BpredHand, AlternatingBranch)
{
    Fresh f;
    unsigned miss = 0;
    for (int i = 0; i < 8; i++) {
        miss += bpred_cond(&f.s, 0x500000, i % 2 == 0);
    }
    EXPECT_EQ(miss, 8u);

    Fresh g;
    miss = 0;
    bool each[8];
    for (int i = 0; i < 8; i++) {
        each[i] = bpred_cond(&g.s, 0x500000, i % 2 == 1);
        miss += each[i];
    }
    EXPECT_EQ(miss, 4u);
    EXPECT_FALSE(each[0]);
    EXPECT_TRUE(each[1]);
    EXPECT_EQ(g.s.cond[0x500], 1); // 0x500000: 0x000 ^ 0x500; ended on T
}

// Aliasing on a counter: P at 0x401000 and Q at 0x400001 share counter
// 0x401.  P always taken, Q never, interleaved P Q P Q:
//   P(1: miss ->2) Q(2: miss ->1) P(1: miss ->2) ...: all 8 mispredicted.
// Q at 0x401002 instead (counter 0x002 ^ 0x401 = 0x403): P(1: miss ->2)
// P(2: ok ->3) ...; Q(1: ok ->0) Q(0: ok) ...: 1 of 8.
TEST(BpredHand, TwoBranchesAliasedOnOneCounter)
{
    Fresh f;
    unsigned miss = 0;
    for (int i = 0; i < 4; i++) {
        miss += bpred_cond(&f.s, 0x401000, true);
        miss += bpred_cond(&f.s, 0x400001, false);
    }
    EXPECT_EQ(miss, 8u);

    Fresh g;
    miss = 0;
    for (int i = 0; i < 4; i++) {
        miss += bpred_cond(&g.s, 0x401000, true);
        miss += bpred_cond(&g.s, 0x401002, false);
    }
    EXPECT_EQ(miss, 1u);
    EXPECT_EQ(g.s.cond[0x401], 3);
    EXPECT_EQ(g.s.cond[0x403], 0);
}

// "Indirect branches": a JMP at 0x401234 (entry 0x3d) to A A B B A:
//   A: tag all ones != ip, miss; A: hit, ok; B: hit, target A != B, miss;
//   B: ok; A: miss.  3 of 5.
TEST(BpredHand, IndirectBranchSwitchingTargets)
{
    Fresh f;
    const uint64_t jmp = 0x401234, a = 0x402000, b = 0x403000;
    EXPECT_TRUE(bpred_indirect(&f.s, jmp, a));
    EXPECT_FALSE(bpred_indirect(&f.s, jmp, a));
    EXPECT_TRUE(bpred_indirect(&f.s, jmp, b));
    EXPECT_FALSE(bpred_indirect(&f.s, jmp, b));
    EXPECT_TRUE(bpred_indirect(&f.s, jmp, a));
    EXPECT_EQ(f.s.btb_tag[0x3d], jmp);
    EXPECT_EQ(f.s.btb_target[0x3d], a);
}

// Aliasing on a BTB entry: 0x401000 and 0x1000 both use entry 8.  Even
// with the same target, the full-address tag makes each evict the other:
// 0x401000 -> T (miss), 0x1000 -> T (tag 0x401000, miss), 0x401000 -> T
// (tag 0x1000, miss)...: all mispredicted.
TEST(BpredHand, TwoIndirectBranchesAliasedOnOneEntry)
{
    Fresh f;
    const uint64_t t = 0x405000;
    unsigned miss = 0;
    for (int i = 0; i < 3; i++) {
        miss += bpred_indirect(&f.s, 0x401000, t);
        miss += bpred_indirect(&f.s, 0x1000, t);
    }
    EXPECT_EQ(miss, 6u);
    EXPECT_EQ(f.s.btb_tag[8], 0x1000u);
    // A third branch on another entry is not disturbed: 0x401234 (0x3d)
    EXPECT_TRUE(bpred_indirect(&f.s, 0x401234, t));
    EXPECT_FALSE(bpred_indirect(&f.s, 0x401234, t));
}

// An indirect CALL is bpred_indirect plus bpred_call; its RET then
// returns to the pushed address
TEST(BpredHand, IndirectCallPushesItsReturnAddress)
{
    Fresh f;
    // call *%rax at 0x401000 (2 bytes) to 0x500000, twice
    for (int i = 0; i < 2; i++) {
        EXPECT_EQ(bpred_indirect(&f.s, 0x401000, 0x500000), i == 0);
        bpred_call(&f.s, 0x401002);
        EXPECT_EQ(f.s.rsb_top, 1u);
        EXPECT_EQ(f.s.rsb[1], 0x401002u);
        EXPECT_FALSE(bpred_ret(&f.s, 0x401002));
        EXPECT_EQ(f.s.rsb_top, 0u);
    }
}

// "Return stack", overflow: 20 nested calls pushing r1..r20, then their 20
// returns.  top: 0 -> r1 in 1, ..., r15 in 15, r16 in 0, r17 in 1 (over
// r1), r18 in 2, r19 in 3, r20 in 4.  Returns: r20 (slot 4) ... r16
// (slot 0), r15 (slot 15) ... r5 (slot 5): 16 correct; then r4 reads
// slot 4 = r20, r3 slot 3 = r19, r2 slot 2 = r18, r1 slot 1 = r17: 4
// mispredicted; top back to 4 - 20 = -16 = 0 (mod 16).
TEST(BpredHand, CallChainDeeperThan16)
{
    Fresh f;
    auto r = [](int k) { return uint64_t{0x400000} + 0x100 * k; };
    for (int k = 1; k <= 20; k++) {
        bpred_call(&f.s, r(k));
    }
    EXPECT_EQ(f.s.rsb_top, 4u);
    EXPECT_EQ(f.s.rsb[1], r(17));
    EXPECT_EQ(f.s.rsb[5], r(5));
    std::vector<int> missed;
    for (int k = 20; k >= 1; k--) {
        if (bpred_ret(&f.s, r(k))) {
            missed.push_back(k);
        }
    }
    EXPECT_EQ(missed, (std::vector<int>{4, 3, 2, 1}));
    EXPECT_EQ(f.s.rsb_top, 0u);
}

// Exactly 16 deep: all 16 returns predicted
TEST(BpredHand, CallChainOf16Fits)
{
    Fresh f;
    for (int k = 1; k <= 16; k++) {
        bpred_call(&f.s, 0x7000 + k);
    }
    unsigned miss = 0;
    for (int k = 16; k >= 1; k--) {
        miss += bpred_ret(&f.s, 0x7000 + k);
    }
    EXPECT_EQ(miss, 0u);
}

// "Return stack", underflow: no check, top wraps, entries keep their value
TEST(BpredHand, UnderflowWrapsAndPoppingDoesNotClear)
{
    Fresh f;
    // After RESET: rsb[0] = 0, so a RET to 0 is predicted, one to
    // 0x1234 is not; top 0 -> 15 -> 14
    EXPECT_FALSE(bpred_ret(&f.s, 0));
    EXPECT_EQ(f.s.rsb_top, 15u);
    EXPECT_TRUE(bpred_ret(&f.s, 0x1234)); // rsb[15] = 0
    EXPECT_EQ(f.s.rsb_top, 14u);

    // 16 pushes r1..r16 into slots 1..15, 0; 16 matched pops bring top to
    // 0; the next pop reads slot 0, still r16, then slot 15, still r15
    Fresh g;
    for (int k = 1; k <= 16; k++) {
        bpred_call(&g.s, 0x9000 + k);
    }
    for (int k = 16; k >= 1; k--) {
        ASSERT_FALSE(bpred_ret(&g.s, 0x9000 + k));
    }
    EXPECT_EQ(g.s.rsb_top, 0u);
    EXPECT_FALSE(bpred_ret(&g.s, 0x9000 + 16));
    EXPECT_FALSE(bpred_ret(&g.s, 0x9000 + 15));
    EXPECT_TRUE(bpred_ret(&g.s, 0x9000 + 16)); // slot 14 holds r14
    EXPECT_EQ(g.s.rsb_top, 13u);
}

// A RET used as an indirect jump (push target; ret) desynchronises the
// stack: the pushed-by-call entry is consumed by the wrong RET
TEST(BpredHand, UnmatchedRetDesynchronises)
{
    Fresh f;
    bpred_call(&f.s, 0xa005);             // call f (from main): slot 1
    bpred_call(&f.s, 0xb005);             // call g (from f): slot 2
    EXPECT_TRUE(bpred_ret(&f.s, 0xc000)); // g: push $h; ret -> reads b005
    EXPECT_TRUE(bpred_ret(&f.s, 0xb005)); // h returns to f: reads a005
    EXPECT_TRUE(bpred_ret(&f.s, 0xa005)); // f returns to main: reads 0
    EXPECT_EQ(f.s.rsb_top, 15u);
}

// RESET forgets all training
TEST(BpredHand, ResetForgets)
{
    Fresh f;
    bpred_cond(&f.s, 0x401234, true);
    bpred_cond(&f.s, 0x401234, true);
    bpred_indirect(&f.s, 0x401234, 0x1);
    bpred_call(&f.s, 0x42);
    bpred_reset(&f.s);
    Fresh g;
    EXPECT_EQ(std::memcmp(&f.s, &g.s, sizeof f.s), 0);
    EXPECT_TRUE(bpred_cond(&f.s, 0x401234, true)); // counter 1 again
    EXPECT_TRUE(bpred_indirect(&f.s, 0x401234, 0x1));
}

// "Loading a state"
TEST(BpredHand, StateValidity)
{
    Fresh f;
    f.s.cond[4095] = 3;
    f.s.cond[0] = 0;
    f.s.rsb_top = 15;
    f.s.btb_tag[7] = 0x1234; // any address is valid
    f.s.btb_target[7] = kAllOnes;
    f.s.rsb[3] = kAllOnes;
    EXPECT_TRUE(bpred_state_valid(&f.s));

    BpredState bad = f.s;
    bad.cond[4095] = 4;
    EXPECT_FALSE(bpred_state_valid(&bad)) << "counter 4";
    bad = f.s;
    bad.cond[17] = 0xff;
    EXPECT_FALSE(bpred_state_valid(&bad)) << "counter 255";
    bad = f.s;
    bad.rsb_top = 16;
    EXPECT_FALSE(bpred_state_valid(&bad)) << "top 16";
    bad = f.s;
    bad.reserved = 1;
    EXPECT_FALSE(bpred_state_valid(&bad)) << "reserved";
}

// A hostile state: the functions stay inside it (ASan would tell) and
// follow the rules as written
TEST(BpredHand, HostileStateStaysInside)
{
    Fresh f;
    f.s.rsb_top = 0xffffffffu;
    f.s.rsb[15] = 0x77;
    // top used modulo 16: 15; then 14
    EXPECT_FALSE(bpred_ret(&f.s, 0x77));
    EXPECT_EQ(f.s.rsb_top, 14u);
    f.s.rsb_top = 0xfffffff0u;
    bpred_call(&f.s, 0x88); // (0xfffffff0 + 1) & 15 = 1
    EXPECT_EQ(f.s.rsb_top, 1u);
    EXPECT_EQ(f.s.rsb[1], 0x88u);
    // A counter of 200 predicts taken; taken leaves it, not taken takes 1
    f.s.cond[0x635] = 200;
    EXPECT_FALSE(bpred_cond(&f.s, 0x401234, true));
    EXPECT_EQ(f.s.cond[0x635], 200);
    EXPECT_TRUE(bpred_cond(&f.s, 0x401234, false));
    EXPECT_EQ(f.s.cond[0x635], 199);
}

// ---- Differential against the Python model ----

struct Rng {
    uint64_t state;
    uint64_t next()
    {
        return naive::Model::splitmix64(&state);
    }
    uint64_t below(uint64_t n)
    {
        return next() % n;
    }
};

struct Counts {
    uint64_t cond = 0, cond_miss = 0, ind = 0, ind_miss = 0, calls = 0,
             rets = 0, ret_miss = 0, deep = 0, underflows = 0, resets = 0,
             dumps = 0;
};

// Runs the model over a generated branch stream and writes it to @out
class StreamWriter
{
  public:
    StreamWriter(FILE *out, uint64_t seed) : out_(out), rng_{seed}
    {
        bpred_reset(&s_);
        std::fprintf(out_, "reset\n");
        make_sites();
    }

    void cond(uint64_t ip, bool taken)
    {
        bool m = bpred_cond(&s_, ip, taken);
        std::fprintf(out_, "cond %" PRIx64 " %x -> %x\n", ip, taken, m);
        counts.cond++;
        counts.cond_miss += m;
        tick();
    }
    void indirect(uint64_t ip, uint64_t target)
    {
        bool m = bpred_indirect(&s_, ip, target);
        std::fprintf(out_, "ind %" PRIx64 " %" PRIx64 " -> %x\n", ip, target,
                     m);
        counts.ind++;
        counts.ind_miss += m;
        tick();
    }
    void call(uint64_t ret_ip)
    {
        bpred_call(&s_, ret_ip);
        std::fprintf(out_, "call %" PRIx64 "\n", ret_ip);
        counts.calls++;
        tick();
    }
    void ret(uint64_t target)
    {
        bool m = bpred_ret(&s_, target);
        std::fprintf(out_, "ret %" PRIx64 " -> %x\n", target, m);
        counts.rets++;
        counts.ret_miss += m;
        tick();
    }
    void dump()
    {
        std::fprintf(out_, "state %x", s_.rsb_top);
        for (uint64_t e : s_.rsb) {
            std::fprintf(out_, " %" PRIx64, e);
        }
        std::fputc(' ', out_);
        for (uint8_t c : s_.cond) {
            std::fprintf(out_, "%x", c);
        }
        bool any = false;
        for (uint32_t i = 0; i < BPRED_BTB_ENTRIES; i++) {
            if (s_.btb_tag[i] != kAllOnes || s_.btb_target[i] != 0) {
                std::fprintf(out_, "%c%x:%" PRIx64 ":%" PRIx64, any ? ',' : ' ',
                             i, s_.btb_tag[i], s_.btb_target[i]);
                any = true;
            }
        }
        std::fprintf(out_, "%s\n", any ? "" : " -");
        counts.dumps++;
    }
    bool valid() const
    {
        return bpred_state_valid(&s_);
    }

    // One burst of a pattern
    void burst()
    {
        switch (rng_.below(8)) {
        case 0: // a loop nest: the inner branch and the outer one
        case 1: {
            const Site &inner = pick(cond_sites_);
            const Site &outer = pick(cond_sites_);
            uint64_t outer_n = rng_.below(6) + 1;
            for (uint64_t o = 0; o < outer_n; o++) {
                for (uint64_t i = 0; i < inner.trip; i++) {
                    cond(inner.ip, i + 1 < inner.trip);
                }
                cond(outer.ip, o + 1 < outer_n);
            }
            break;
        }
        case 2: { // biased and alternating branches, aliased pairs
            uint64_t n = rng_.below(64) + 1;
            for (uint64_t i = 0; i < n; i++) {
                const Site &c = pick(cond_sites_);
                bool taken = c.trip % 3 == 0   ? (phase_++ & 1)
                             : c.trip % 3 == 1 ? rng_.below(10) < 9
                                               : rng_.below(10) < 2;
                cond(c.ip, taken);
            }
            break;
        }
        case 3: { // indirect branches, with few or many targets
            uint64_t n = rng_.below(32) + 1;
            for (uint64_t i = 0; i < n; i++) {
                const Site &c = pick(ind_sites_);
                uint64_t which = rng_.below(4) ? rng_.below(c.trip) : 0;
                indirect(c.ip, c.target + 0x40 * which);
                if (rng_.below(3) == 0) { // an indirect CALL
                    call(c.ip + 2);
                    depth_++;
                }
            }
            break;
        }
        case 4: // calls and returns, matched, to a random depth
        case 5: {
            uint64_t n = rng_.below(12) + 1;
            for (uint64_t i = 0; i < n; i++) {
                if (depth_ && rng_.below(2)) {
                    pop_matched();
                } else {
                    push(pick(call_sites_).ip + 5);
                }
            }
            break;
        }
        case 6: { // a chain deeper than the stack, then all its returns
            uint64_t n = rng_.below(40) + 1;
            counts.deep += n > 16;
            for (uint64_t i = 0; i < n; i++) {
                push(pick(call_sites_).ip + 5);
            }
            for (uint64_t i = 0; i < n; i++) {
                pop_matched();
            }
            break;
        }
        default: // unmatched returns (underflow, longjmp, ret as jump)
            if (rng_.below(4) == 0) {
                shadow_.clear();
                depth_ = 0;
                counts.underflows++;
                for (uint64_t i = rng_.below(20) + 1; i > 0; i--) {
                    ret(rng_.below(2) ? pick(call_sites_).ip + 5
                                      : rng_.below(4) * 0x100);
                }
            } else if (!shadow_.empty()) {
                // a longjmp out of some frames, then a return
                uint64_t skip = rng_.below(shadow_.size()) + 1;
                while (skip-- > 1 && !shadow_.empty()) {
                    shadow_.pop_back();
                }
                pop_matched();
            }
            break;
        }
        if (rng_.below(2000) == 0) {
            bpred_reset(&s_);
            std::fprintf(out_, "reset\n");
            shadow_.clear();
            depth_ = 0;
            counts.resets++;
        }
    }

    Counts counts;

  private:
    struct Site {
        uint64_t ip;
        uint64_t trip;   // a loop's trip count, or the number of targets
        uint64_t target; // indirect: the first target
    };

    const Site &pick(const std::vector<Site> &v)
    {
        return v[rng_.below(v.size())];
    }

    uint64_t address()
    {
        static const uint64_t bases[] = {0x400000, 0x7f1234560000ull,
                                         0xffffffff81000000ull, 0x8048000,
                                         0xffffffffffff0000ull};
        return bases[rng_.below(5)] + rng_.below(0x10000);
    }

    void make_sites()
    {
        for (int i = 0; i < 200; i++) {
            uint64_t ip = address();
            cond_sites_.push_back({ip, rng_.below(20) + 1, 0});
            // aliased on its counter: + 2^24, or bits 0 and 12 flipped
            if (i % 8 == 0) {
                cond_sites_.push_back(
                    {ip + (uint64_t{1} << 24), rng_.below(20) + 1, 0});
                cond_sites_.push_back({ip ^ 0x1001, rng_.below(20) + 1, 0});
            }
        }
        for (int i = 0; i < 60; i++) {
            uint64_t ip = address();
            ind_sites_.push_back({ip, rng_.below(5) + 1, address()});
            if (i % 6 == 0) { // aliased on its BTB entry: + 2^18
                ind_sites_.push_back(
                    {ip + (uint64_t{1} << 18), rng_.below(3) + 1, address()});
            }
        }
        for (int i = 0; i < 100; i++) {
            call_sites_.push_back({address(), 0, 0});
        }
    }

    void push(uint64_t ret_ip)
    {
        call(ret_ip);
        shadow_.push_back(ret_ip);
        depth_++;
    }
    void pop_matched()
    {
        if (shadow_.empty()) {
            ret(pick(call_sites_).ip + 5);
            return;
        }
        uint64_t t = shadow_.back();
        shadow_.pop_back();
        depth_ = shadow_.size();
        ret(t);
    }

    // A dump of the state now and then
    void tick()
    {
        if (++ops_ % 25000 == 0) {
            dump();
        }
    }

    FILE *out_;
    Rng rng_;
    BpredState s_;
    std::vector<Site> cond_sites_, ind_sites_, call_sites_;
    std::vector<uint64_t> shadow_; // the real call stack's return addresses
    uint64_t depth_ = 0;
    uint64_t phase_ = 0;
    uint64_t ops_ = 0;
};

// Runs the Python model on the stream file @path, which must find every
// result the same; removes the file then (BPRED_KEEP_STREAM=1 keeps it)
void check_with_reference(const std::string &path)
{
    std::string cmd = std::string(LWP_PYTHON3) + " " + LWP_BPRED_REF_PY + " " +
                      path + " 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string output;
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) {
        output += buf;
    }
    int status = pclose(p);
    EXPECT_EQ(status, 0) << cmd << "\n" << output;
    EXPECT_NE(output.find(" 0 mismatches"), std::string::npos) << output;
    if (status == 0 && !::testing::Test::HasFailure() &&
        !std::getenv("BPRED_KEEP_STREAM")) {
        std::remove(path.c_str());
    }
}

class BpredReference : public ::testing::TestWithParam<uint64_t>
{
};

TEST_P(BpredReference, EveryResultAndStateMatchesThePythonModel)
{
    uint64_t seed = GetParam();
    std::string path = ::testing::TempDir() + "lwp-bpred-" +
                       std::to_string(seed) + "-" + std::to_string(getpid()) +
                       ".stream";
    FILE *out = std::fopen(path.c_str(), "w");
    ASSERT_NE(out, nullptr) << path;
    Counts counts;
    {
        StreamWriter w(out, 0x42505245 + seed);
        while (w.counts.cond + w.counts.ind + w.counts.rets < 150000) {
            w.burst();
            ASSERT_TRUE(w.valid());
        }
        w.dump();
        counts = w.counts;
    }
    ASSERT_EQ(std::fclose(out), 0);

    // The stream exercises what it is meant to: each kind both predicted
    // and mispredicted, chains deeper than the stack, underflows
    EXPECT_GT(counts.cond_miss, counts.cond / 50);
    EXPECT_LT(counts.cond_miss, counts.cond / 2);
    EXPECT_GT(counts.ind_miss, counts.ind / 20);
    EXPECT_LT(counts.ind_miss, counts.ind);
    EXPECT_GT(counts.ret_miss, counts.rets / 50);
    EXPECT_LT(counts.ret_miss, counts.rets / 2);
    EXPECT_GT(counts.deep, 10u);
    EXPECT_GT(counts.underflows, 10u);
    EXPECT_GT(counts.dumps, 3u);

    check_with_reference(path);
}

INSTANTIATE_TEST_SUITE_P(BpredStreams, BpredReference,
                         ::testing::Values(1, 2, 3));

} // namespace
