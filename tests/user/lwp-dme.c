/*
 * DCache Misses (EventId 4, spec 2.4) under qemu-x86_64 -cpu max,+lwp:
 * pointer chases whose strides make each level of the documented cache
 * model (docs/cache-model.md, default configuration) supply the data.
 *
 * dme_chase() enables LWP with DME alone (or with Instructions Retired),
 * follows a cyclic list of 8-byte pointers N times with one
 * "mov (%rax), %rax" per step, and disables LWP; nothing else in it loads
 * from memory.  Each chase prints a CHASE line and writes its records,
 * as the ring held them, to the file named by the first argument, which
 * tests/user/dme-check.py checks against the model fed the loads of the
 * same run as upstream QEMU's execlog plugin saw them.  dme_stack() does
 * the same with the loads of the stack instructions (POP, POPF, RET, RET
 * imm16, LEAVE, PUSH m, POP m, ENTER with nesting), each from a line
 * never loaded before, then again from the same lines; each record must
 * name the stack address the instruction read.  And this program
 * checks what the spec and the documented defaults say of each chase:
 * the level that supplies the second pass over a list, its SRC and
 * latency (as CPUID's LwpLatencyRnd and LwpLatencyMax round and cap it),
 * and how many records an interval gives (every (I+1)-th miss, Random =
 * 0).
 *
 * "lwp-dme DUMP clocks", under -cpu max,+lwp,cost-model=detailed, runs
 * the same chases with CPU Clocks not Halted and Reference Clocks not
 * Halted instead of DME (mode 2 in the CHASE line): the records fall
 * where the cost model puts them, each load's latency above L1's and
 * each mispredicted "jnz" (the predictor model) a stall of its
 * instruction; dme-check.py --clocks checks them against the reference
 * models fed the execlog trace.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "lwp-test.h"
#include "lwp-dme.h"

#include <inttypes.h>

#include "lwp-dme-loads.c.inc"

asm(".text\n"
    ".globl dme_helpers\n"
    ".type dme_helpers, @function\n"
    "dme_helpers:\n"
    "    vmovdqu (%r9), %xmm1\n"
    "    vpcmpeqd %xmm2, %xmm2, %xmm2\n"
    "    fxsave (%rsi)\n"
    "    llwpcb %rdi\n"
    ".globl dme_at_fxrstor, dme_at_fld, dme_at_gather, dme_at_mov\n"
    "dme_at_fxrstor:\n"
    "    fxrstor (%rsi)\n"
    "dme_at_fld:\n"
    "    fldt (%rdx)\n"
    "dme_at_gather:\n"
    "    vpgatherdd %xmm2, (%rcx,%xmm1,1), %xmm0\n"
    "dme_at_mov:\n"
    "    mov (%r8), %rax\n"
    "    fstp %st(0)\n"
    "    xor %edi, %edi\n"
    "    llwpcb %rdi\n"
    "    ret\n");

#define RING_SIZE (128u << 10)  /* 4096 records: more than any run makes */
#define STACK_STEPS 64          /* dme_stack's: 512 loads, 2 MiB of stack */

static void *cb, *ring;
static FILE *dump;    /* argv[1]: every record, as LWP stored it */

struct dme_rec {
    uint8_t id;
    uint8_t src;
    uint8_t dav;
    uint32_t latency;
    uint64_t ip;
    uint64_t addr;
};

static struct dme_rec recs[RING_SIZE / LT_REC];

/*
 * @size bytes at the fixed address @at, so that every run (with or without
 * a plugin) loads from the same addresses
 */
static void *fixed_alloc(uintptr_t at, size_t size)
{
    void *p = mmap((void *)at, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

    if (p != (void *)at) {
        perror("mmap");
        exit(2);
    }
    return p;
}

/*
 * A cyclic list of @count pointers @stride bytes apart from @base; returns
 * its first element
 */
static void *make_list(char *base, uint64_t stride, uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
        *(void **)(base + i * stride) = base + ((i + 1) % count) * stride;
    }
    return base;
}

/*
 * Run @fn (dme_chase, dme_stack or kinds_run) @n steps from @start with
 * DME (interval @iv, EventCounter @counter; and Instructions Retired too,
 * at @iv, if @ire is 1; and LWPVAL, at interval 0) and Filters @filters;
 * with @ire 2, CPU Clocks not Halted at @iv and Reference Clocks not
 * Halted at @iv + 1 instead of DME (EventCounter @counter for both); keep
 * the records, and dump them.
 * Returns how many were stored.
 */
static unsigned run_lwp(const char *name,
                        void (*fn)(void *, void *, uint64_t), void *start,
                        uint64_t n, uint32_t iv, uint32_t counter,
                        uint32_t filters, int ire)
{
    /*
     * LWPVAL reads its operand only when it stores a record (5.3): at
     * interval 0 it always does, before its DME record (choice 20)
     */
    uint32_t flags = LWP_FEAT_DME | LWP_FEAT_VAL | (ire ? LWP_FEAT_IRE : 0);
    unsigned k = 0;

    if (ire == 2) {
        flags = LWP_FEAT_VAL | LWP_FEAT_CNH | LWP_FEAT_RNH;
    }
    lwpcb_init(cb, ring, RING_SIZE, flags);
    wr32(cb, LWPCB_FILTERS, filters);
    wr32(cb, LWPCB_INTERVAL(LWP_EVENT_OFFSET, LWP_EVENT_ID_DME), iv);
    wr32(cb, LWPCB_COUNTER(LWP_EVENT_OFFSET, LWP_EVENT_ID_DME), counter);
    if (ire == 1) {
        wr32(cb, LWPCB_INTERVAL(LWP_EVENT_OFFSET, LWP_EVENT_ID_IRE), iv);
        wr32(cb, LWPCB_COUNTER(LWP_EVENT_OFFSET, LWP_EVENT_ID_IRE), iv);
    } else if (ire == 2) {
        wr32(cb, LWPCB_INTERVAL(LWP_EVENT_OFFSET, LWP_EVENT_ID_CNH), iv);
        wr32(cb, LWPCB_COUNTER(LWP_EVENT_OFFSET, LWP_EVENT_ID_CNH), counter);
        wr32(cb, LWPCB_INTERVAL(LWP_EVENT_OFFSET, LWP_EVENT_ID_RNH), iv + 1);
        wr32(cb, LWPCB_COUNTER(LWP_EVENT_OFFSET, LWP_EVENT_ID_RNH), counter);
    }
    fn(cb, start, n);
    printf("CHASE %s %" PRIu64 " %u 0x%x %d %u\n", name, n, iv, filters, ire,
           counter);
    for (uint32_t off = 0; off != rd32(cb, LWPCB_HEAD); off += LT_REC) {
        struct rec r = read_rec(ring, off);
        struct dme_rec *d = &recs[k++];

        d->id = r.event_id;
        d->src = r.event_id == LWP_EVENT_ID_DME ? r.flags >> 13 : 0;
        d->dav = r.event_id == LWP_EVENT_ID_DME && (r.flags & 0x1000);
        d->latency = r.data1;
        d->ip = r.ip;
        d->addr = r.data2;
        if (dump) {
            fwrite((char *)ring + off, LT_REC, 1, dump);
        }
    }
    printf("END %u\n", k);
    return k;
}

/* dme_kinds with its gather's indexes: 4 dwords, a line apart */
static void kinds_run(void *cb, void *base, uint64_t n)
{
    static const uint32_t idx[4] = { 0, 64, 128, 192 };

    (void)n;
    dme_kinds(cb, base, idx);
}

static unsigned chase(const char *name, void *start, uint64_t n, uint32_t iv,
                      uint32_t filters, int ire)
{
    return run_lwp(name, dme_chase, start, n, iv, iv, filters, ire);
}

/*
 * The Latency field for a load that a level with @cycles supplied (spec
 * 2.4.1): rounded down to a multiple of 2^LwpLatencyRnd and capped at
 * 2^LwpLatencyMax - 2^LwpLatencyRnd (CPUID 8000_001C ECX 8:6 and 4:0)
 */
static uint32_t rec_latency(uint32_t cycles)
{
    uint32_t a, b, c, d, rnd, max, step;

    __cpuid(LWP_CPUID_LEAF, a, b, c, d);
    rnd = (c >> 6) & 7;
    max = c & 0x1f;
    step = 1u << rnd;
    if (max && cycles > (1u << max) - step) {
        cycles = (1u << max) - step;
    }
    return cycles & ~(step - 1);
}

/* Every record of the last chase is a DME record from @src with @lat */
static void check_level(const char *what, unsigned k, unsigned want,
                        unsigned src, unsigned lat, const char *lo,
                        const char *hi)
{
    unsigned bad = 0;

    for (unsigned i = 0; i < k; i++) {
        if (recs[i].id != LWP_EVENT_ID_DME || recs[i].src != src ||
            recs[i].latency != lat || !recs[i].dav ||
            recs[i].ip != (uintptr_t)dme_chase_load ||
            recs[i].addr < (uintptr_t)lo || recs[i].addr >= (uintptr_t)hi) {
            bad++;
        }
    }
    report(k == want, "%s: %u records (expected %u)", what, k, want);
    report(!bad, "%s: every record at the load, DAV, SRC %u, latency %u, "
           "address in the list (%u do not)", what, src, lat, bad);
}

/*
 * cost-model=detailed: the chases of main with the clock events, at
 * intervals below and above a load's stall (L2 16 cycles, L3 60, DRAM
 * 252), for dme-check.py --clocks, which checks every record against the
 * reference models.  Here, by hand: the second chase from L1, whose list
 * the first one brought in (8 KiB, half of L1), takes 534 clocks: 128
 * steps of two instructions and a "jnz" (4 clocks), the MOV before and
 * the XOR after (2), and the last "jnz", which the predictor model
 * mispredicts (20; the first one it predicts, as the first chase left its
 * counter at 2).  At interval 104 (a record every 105 clocks, from
 * EventCounter 104) and 105 (every 106), that is 5 records each: 4
 * without the stall.
 */
static void clocks(char *l1, char *l2, char *l3, char *dram)
{
    unsigned k, cnh = 0, rnh = 0;

    make_list(l1, 64, 128);
    make_list(l2, 4096, 16);
    make_list(l3, 4096, 1024);
    make_list(dram, 4096, 4096);
    run_lwp("clk-l1-first", dme_chase, l1, 128, 999, 0, 0, 2);
    k = run_lwp("clk-l1-second", dme_chase, l1, 128, 104, 104, 0, 2);
    for (unsigned i = 0; i < k; i++) {
        cnh += recs[i].id == LWP_EVENT_ID_CNH;
        rnh += recs[i].id == LWP_EVENT_ID_RNH;
    }
    report(k == 10 && cnh == 5 && rnh == 5, "a chase from L1 with a "
           "mispredicted exit: 534 clocks, 5 CNH records at interval 104 "
           "and 5 RNH at 105 (%u and %u of %u)", cnh, rnh, k);
    run_lwp("clk-l2", dme_chase, l2, 16, 99, 0, 0, 2);
    run_lwp("clk-l2-again", dme_chase, l2, 16, 7, 3, 0, 2);
    run_lwp("clk-l3", dme_chase, l3, 1024, 1000, 0, 0, 2);
    run_lwp("clk-l3-again", dme_chase, l3, 1024, 61, 5, 0, 2);
    run_lwp("clk-dram", dme_chase, dram, 4096, 999, 0, 0, 2);
    run_lwp("clk-dram-again", dme_chase, dram, 1024, 250, 0, 0, 2);
}

int main(int argc, char **argv)
{
    char *l1, *l2, *l3, *dram;
    unsigned k;

    if (argc > 1) {
        dump = fopen(argv[1], "wb");
        if (!dump) {
            perror(argv[1]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOFBF, 1 << 20);
    if (!(lwp_available() & LWP_FEAT_DME)) {
        report_skip("DME not available (run with -cpu max,+lwp)");
        return report_summary("lwp-dme");
    }
    cb = fixed_alloc(0x10000000000, 4096);
    ring = fixed_alloc(0x10000100000, RING_SIZE);
    l1 = fixed_alloc(0x10001000000, 8192);
    l2 = fixed_alloc(0x10002000000, 16 * 4096);
    l3 = fixed_alloc(0x10004000000, 1024 * 4096);
    dram = fixed_alloc(0x10008000000, 4096 * 4096);
    if (argc > 2 && !strcmp(argv[2], "clocks")) {
        clocks(l1, l2, l3, dram);
        if (dump) {
            fclose(dump);
        }
        return report_summary("lwp-dme clocks");
    }

    /* 128 lines, 8 KiB: half of L1, so the second pass hits */
    make_list(l1, 64, 128);
    chase("l1-first", l1, 128, 1, 0, 0);
    k = chase("l1-second", l1, 128, 1, 0, 0);
    report(k == 0, "8 KiB list again: no miss, no record (%u)", k);

    /*
     * One line per page: all in L1 set 0 (4 ways), so 16 of them always
     * miss L1; in 16 sets of L2, which keeps them (SRC 0: Figure 2-5 has
     * no code for L2; 20 cycles)
     */
    make_list(l2, 4096, 16);
    chase("l2-first", l2, 16, 1, 0, 0);
    k = chase("l2-second", l2, 16, 1, 0, 0);
    check_level("16 lines in one L1 set, again", k, 8, LWP_DME_SRC_NONE,
                rec_latency(20),
                l2, l2 + 16 * 4096);

    /* 1024 of them: 32 L2 sets of 16 ways cannot keep them, L3's 64 can */
    make_list(l3, 4096, 1024);
    chase("l3-first", l3, 1024, 1, 0, 0);
    k = chase("l3-second", l3, 1024, 1, 0, 0);
    check_level("1024 lines in 32 L3 sets, again", k, 512,
                LWP_DME_SRC_LOCAL_L3, rec_latency(64), l3, l3 + 1024 * 4096);

    /* 4096: L3 cannot keep them either (cyclic LRU), DRAM supplies */
    make_list(dram, 4096, 4096);
    chase("dram-first", dram, 4096, 1, 0, 0);
    k = chase("dram-second", dram, 4096, 9, 0, 0);
    check_level("4096 lines in 32 L3 sets, again, interval 9", k, 409,
                LWP_DME_SRC_DRAM, rec_latency(256), dram,
                dram + 4096 * 4096);

    /* Filters (Table 6-2): CLF with RAM only, then MinLatency 5 (80) */
    chase("l3-refill", l3, 1024, 1, 0, 0);
    k = chase("l3-clf-ram", l3, 1024, 0, LWP_FILTER_CLF | LWP_FILTER_RAM, 0);
    report(k == 0, "CLF with only RAM selected: no L3 miss counted (%u)", k);
    k = chase("dram-clf-ram", dram, 4096, 1, LWP_FILTER_CLF | LWP_FILTER_RAM,
              0);
    check_level("CLF with only RAM selected, DRAM misses", k, 2048,
                LWP_DME_SRC_DRAM, rec_latency(256), dram,
                dram + 4096 * 4096);
    chase("l3-refill-2", l3, 1024, 1, 0, 0);
    k = chase("l3-minlat-80", l3, 1024, 1, 5, 0);
    report(k == 0, "MinLatency 80: no 64-cycle L3 miss counted (%u)", k);
    k = chase("dram-minlat-80", dram, 4096, 1, 5, 0);
    check_level("MinLatency 80, DRAM misses", k, 2048, LWP_DME_SRC_DRAM,
                rec_latency(256),
                dram, dram + 4096 * 4096);

    /* with Instructions Retired at the same interval, in EventId order */
    chase("l2-ire", l2, 16, 1, 0, 1);

    /*
     * The stack loads, at the minimum interval, 1 (choice 17): a record
     * at every second miss, each naming the stack address read.  First
     * from DRAM with EventCounter 0 (the 1st, 3rd, ... load of a step),
     * then again from the same lines, which L2 keeps, with EventCounter 1
     * (the 2nd, 4th, ...): each kind has records in one of the two.
     */
    {
        char *stk = fixed_alloc(0x10010000000, 4 << 20);
        char *top = stk + (4 << 20) - 4096;
        /*
         * Each step leaves RSP 24 bytes lower than its SUBs do (PUSH m
         * -8, RET imm16 +8, ENTER -24), and ENTER loads 8 bytes below it
         */
        char *low = top - STACK_STEPS *
                    (DME_STACK_LOADS * DME_STACK_STRIDE + 24) - 8;
        unsigned bad = 0;

        for (unsigned pass = 0; pass < 2; pass++) {
            k = run_lwp(pass ? "stack-again" : "stack", dme_stack, top,
                        STACK_STEPS, 1, pass, 0, 0);
            for (unsigned i = 0; i < k; i++) {
                bad += recs[i].id != LWP_EVENT_ID_DME ||
                       recs[i].addr < (uintptr_t)low ||
                       recs[i].addr >= (uintptr_t)top;
            }
            report(k == STACK_STEPS * DME_STACK_LOADS / 2 && !bad,
                   "%s pass over %u stack lines: a record every second "
                   "load (%u), each at a stack address (%u are not)",
                   pass ? "second" : "first",
                   STACK_STEPS * DME_STACK_LOADS, k, bad);
        }
    }

    /*
     * A load of each kind that generated code makes, interval 1, each
     * from lines never loaded before, twice, on two copies of the lines:
     * EventCounter 0, then 1.  Up to the first instruction with more
     * than one miss (dme_kinds has them last: CMPS, the gather), the
     * events of the two runs are the same, so an instruction with one
     * miss has its record in one of them, and one with more in both:
     * together, a record at every kind's instruction, at an address it
     * read.
     */
    {
        char *base[2] = { fixed_alloc(0x10018000000, 64 * 4096),
                          fixed_alloc(0x1001c000000, 64 * 4096) };
        uintptr_t ips[2 * DME_KINDS];
        unsigned n = 0, bad = 0, kinds = 0;

        for (unsigned run = 0; run < 2; run++) {
            char *end = base[run] + (DME_KINDS + 1) * DME_STACK_STRIDE + 4096;

            k = run_lwp(run ? "kinds-1" : "kinds", kinds_run, base[run], 1,
                        1, run, 0, 0);
            for (unsigned i = 0; i < k; i++) {
                if (recs[i].id == LWP_EVENT_ID_VAL) {
                    bad += recs[i].ip != (uintptr_t)dme_kinds_lwpval;
                    continue;
                }
                bad += recs[i].id != LWP_EVENT_ID_DME ||
                       recs[i].ip < (uintptr_t)dme_kinds ||
                       recs[i].ip >= (uintptr_t)dme_kinds_end ||
                       recs[i].addr < (uintptr_t)base[run] ||
                       recs[i].addr >= (uintptr_t)end;
                if (n < 2 * DME_KINDS) {
                    ips[n++] = recs[i].ip;
                }
            }
        }
        for (unsigned i = 0; i < n; i++) {
            unsigned j = 0;

            while (j < i && ips[j] != ips[i]) {
                j++;
            }
            kinds += j == i;
        }
        report(kinds == DME_KINDS && !bad,
               "%u load kinds: records at %u different instructions, each "
               "of dme_kinds at an address in the lines it loads (%u are "
               "not)", DME_KINDS, kinds, bad);
    }

    /*
     * Last (dme-check.py models the runs above only): loads made in helpers,
     * from lines never loaded before, so each comes from DRAM.  Interval
     * 1 from a counter of 0: the 1st, 3rd, ... event stores a record.
     * FXRSTOR's 512 bytes are one load (event 1: a record at its first
     * byte), FLD m80 one (2), the gather's 4 elements 4 (3 to 6: one
     * record, at the first element; the overrun takes the next interval
     * down to 0, choice 19), and the MOV stores a record at once.
     */
    {
        char *h = fixed_alloc(0x10020000000, 64 * 4096);
        static const uint32_t idx[4] = { 0, 64, 128, 192 };
        struct {
            uintptr_t ip, addr;
        } want[] = {
            { (uintptr_t)dme_at_fxrstor, (uintptr_t)h },
            { (uintptr_t)dme_at_gather, (uintptr_t)h + 8192 },
            { (uintptr_t)dme_at_mov, (uintptr_t)h + 12288 },
        };
        unsigned bad = 0;

        lwpcb_init(cb, ring, RING_SIZE, LWP_FEAT_DME);
        wr32(cb, LWPCB_INTERVAL(LWP_EVENT_OFFSET, LWP_EVENT_ID_DME), 1);
        dme_helpers(cb, h, h + 4096, h + 8192, h + 12288, idx);
        k = rd32(cb, LWPCB_HEAD) / LT_REC;
        for (unsigned i = 0; i < k && i < 3; i++) {
            struct rec r = read_rec(ring, i * LT_REC);

            if (r.event_id != LWP_EVENT_ID_DME || r.ip != want[i].ip ||
                r.data2 != want[i].addr || r.data1 != rec_latency(256) ||
                r.flags >> 12 != (LWP_DME_SRC_DRAM << 1 | 1)) {
                bad++;
            }
        }
        report(k == 3 && !bad, "loads in helpers (FXRSTOR, FLD m80, "
               "VPGATHERDD) and a MOV: 3 records, at FXRSTOR, the gather "
               "and the MOV, DRAM, latency %u (%u records, %u wrong)",
               rec_latency(256), k, bad);
    }

    if (dump) {
        fclose(dump);
    }
    return report_summary("lwp-dme");
}
