/*
 * The LWP workload of the snapshot and migration tests
 * (tests/migration/run.sh), config=migrate of the 64-bit kernel.
 *
 * A CPL3 loop (lwp-migrate-user64.S) runs with LWP enabled: LWPVAL every
 * iteration, LWPINS every MIG_INS_EVERY iterations, Instructions Retired,
 * Branches Retired and, when CPUID has them, the two clock events
 * (choice 48), at small intervals with LWPCB.Random = 2 (spec 6, Table
 * 6-1; choice 18: the generator state then decides every interval), and
 * the threshold interrupt (spec 1.1 step 4, 6; choice 42).  A CPL0
 * consumer, entered by the threshold interrupt and by INT
 * MIG_DRAIN_VECTOR every MIG_DRAIN_EVERY iterations, flushes with SLWPCB
 * (spec 5.2), drains the ring buffer (spec 8.3) and folds every record,
 * all 32 bytes in order, into a 64-bit FNV-1a hash.  At the end it
 * flushes again, does XSAVE of the LWP component (spec 7.2, 7.3), folds
 * the LWPCB's counters, head and MissedEvents, the XSAVE area (which
 * holds the generator state, choice 18) and the loop's own results, and
 * prints
 *
 *   LWPDIGEST records=N missed=M hash=0x...
 *
 * The loop depends on nothing but its seed, so every uninterrupted run
 * prints the same digest; a run that is saved and restored (savevm and
 * loadvm, or migration to a file) must print it too.  The driver
 * compares the digests: their expected value is that of the run without
 * snapshot or migration.
 *
 * The consumer also checks what the spec fixes regardless of timing, and
 * reports PASS/FAIL lines: records only for the enabled events, with
 * CoreId LWP_CFG[39:32] and CPL3 addresses (spec 2, 2.2); one LWPINS
 * record for every LWPINS, in order, with its Data1 (spec 5.4); LWPVAL
 * records in order, at most 4 LWPVALs apart (interval 3, Random 2:
 * choice 18); a ring that never fills (the threshold interrupt drains it
 * at half full), so no missed event.
 *
 * Before it enables LWP the kernel prints "LWPMIGRATE: idle" and spins a
 * while with LWP untouched (XCR0[62], LWP_CFG and LWP_CBADDR all 0), then
 * "LWPMIGRATE: configured" and spins with LWP_CFG set but LWP not yet
 * enabled: the driver migrates in those windows to check when the vmstate
 * subsections "cpu/lwp" and "cpu/lwp/state" are sent (choice 12).
 * Command line words: iters=N (loop iterations), spin=N (millions of
 * CPL0 loop iterations in each of the two windows).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libcflat.h"
#include "desc.h"
#include "processor.h"
#include "lwp-guest.h"
#include "lwp-migrate.h"

#define CORE_ID             0x4d

#define RING_RECORDS        64
#define THRESHOLD_RECORDS   32          /* half the ring */
#define RANDOM_BITS         2           /* LWPCB.Random */

#define DEFAULT_ITERS       150000
#define DEFAULT_SPIN        100         /* millions */
#define PROGRESS_STEPS      16

/* XSAVE: the standard-format area and the LWP component (spec 7.1) */
#define XSAVE_SIZE          0x3c0
#define XSAVE_XSTATE_BV     512
#define XSAVE_LWP           0x340
#define XSAVE_LWP_SIZE      0x80

/* EventInterval n of the loop (EventId - 1); EventCounter n starts equal */
static const u32 intervals[6] = {
    3,                                  /* VAL: a record every 1-4 LWPVALs */
    11,                                 /* IRE */
    5,                                  /* BRE */
    0,                                  /* DME: not enabled */
    7,                                  /* CNH */
    13,                                 /* RNH */
};

/* Largest gap between LWPVAL records: interval 3 with 2 random bits */
#define VAL_MAX_GAP         4

static struct lwpcb cb __attribute__((aligned(64)));
static struct lwp_record ring[RING_RECORDS] __attribute__((aligned(4096)));
static u8 xsave_area[XSAVE_SIZE] __attribute__((aligned(64)));
static struct mig_args args;

static struct {
    u64 hash;
    u64 records;
    u64 count[7];                       /* by EventId 1-6; [0]: LWPINS */
    u64 drains, thr_irqs;
    u64 val_seq, val_bad_gap;           /* last LWPVAL Data1 */
    u64 ins_seq, ins_bad;               /* next expected LWPINS Data1 */
    u64 bad_id, bad_core, bad_ip, bad_head;
    u32 want_ids;                       /* bit n: EventId n may appear */
    unsigned progress;
    struct lwp_record first_bad;
    bool have_bad;
} st;

/* ---- FNV-1a, 64 bits ---- */

#define FNV_OFFSET          0xcbf29ce484222325ul
#define FNV_PRIME           0x100000001b3ul

static void fold(const void *p, size_t n)
{
    const u8 *b = p;

    while (n--) {
        st.hash = (st.hash ^ *b++) * FNV_PRIME;
    }
}

static void fold64(u64 v)
{
    fold(&v, sizeof(v));
}

/* ---- LWP ---- */

static u64 slwpcb(void)
{
    u64 ea;

    asm volatile("slwpcb %0" : "=r"(ea) : : "memory");
    return ea;
}

static void note_bad(const struct lwp_record *r)
{
    if (!st.have_bad) {
        st.first_bad = *r;
        st.have_bad = true;
    }
}

/* Fold one record and check what the spec fixes for it */
static void consume(const struct lwp_record *r)
{
    u8 id = r->event_id;

    fold(r, sizeof(*r));
    st.records++;
    if (id == EVENT_INS) {
        st.count[0]++;
    } else if (id >= 1 && id <= 6) {
        st.count[id]++;
    }
    if (id != EVENT_INS && (id > 6 || !(st.want_ids & BIT(id)))) {
        st.bad_id++;
        note_bad(r);
    }
    if (r->core_id != CORE_ID) {
        st.bad_core++;
        note_bad(r);
    }
    if (r->ip < (uintptr_t)mig_text || r->ip >= (uintptr_t)mig_text_end) {
        st.bad_ip++;
        note_bad(r);
    }
    if (id == EVENT_VAL) {
        /* spec 5.3: Data1 = the sequence number, Flags = imm16 */
        if (r->data1 <= st.val_seq || r->data1 - st.val_seq > VAL_MAX_GAP ||
            r->ip != (uintptr_t)mig_val_insn ||
            r->flags != (u16)MIG_VAL_IMM) {
            st.val_bad_gap++;
            note_bad(r);
        }
        st.val_seq = r->data1;
    } else if (id == EVENT_INS) {
        /* spec 5.4: every LWPINS stores its record */
        if (r->data1 != st.ins_seq || r->ip != (uintptr_t)mig_ins_insn ||
            r->flags != (u16)MIG_INS_IMM) {
            st.ins_bad++;
            note_bad(r);
        }
        st.ins_seq = r->data1 + MIG_INS_EVERY;
    }
}

/*
 * The consumer (spec 8.3): SLWPCB flushes the head (spec 5.2), then
 * every record from the tail to the head is consumed and the tail moved
 */
static void drain(void)
{
    const u32 size = sizeof(ring);
    u32 tail = cb.tail, head;

    slwpcb();
    head = cb.head;
    if (head >= size || head % RECORD_SIZE) {
        st.bad_head++;
        return;
    }
    while (tail != head) {
        consume(&ring[tail / RECORD_SIZE]);
        tail = (tail + RECORD_SIZE) % size;
    }
    cb.tail = tail;
}

static void thr_handler(struct ex_regs *regs)
{
    (void)regs;
    st.thr_irqs++;
    drain();
    apic_write(APIC_EOI, 0);
}

static void drain_handler(struct ex_regs *regs)
{
    unsigned step = regs->r12 * PROGRESS_STEPS / args.iters;

    st.drains++;
    drain();
    if (step > st.progress) {
        st.progress = step;
        printf("LWPMIGRATE: progress %u/%u\n", step, PROGRESS_STEPS);
    }
}

static void spin(const char *phase, u64 millions)
{
    u64 n = millions * 1000000;

    printf("LWPMIGRATE: %s\n", phase);
    asm volatile("1: dec %0; jnz 1b" : "+r"(n) : : "cc");
}

static u64 cmdline_u64(const char *key, u64 def)
{
    char val[24];
    const char *p;
    u64 v = 0;

    if (!cmdline_get(key, val, sizeof(val)) || !val[0]) {
        return def;
    }
    for (p = val; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + *p - '0';
    }
    return *p || !v ? def : v;
}

/* ---- the run ---- */

static void setup_lwpcb(u32 flags)
{
    unsigned i;

    memset(&cb, 0, sizeof(cb));
    memset(ring, 0, sizeof(ring));
    cb.flags = flags;
    cb.buffer_size = sizeof(ring) | (u32)RANDOM_BITS << 28;
    cb.buffer_base = (uintptr_t)ring;
    cb.threshold = THRESHOLD_RECORDS * RECORD_SIZE;
    for (i = 0; i < 6; i++) {
        cb.event[i].interval = intervals[i];
        cb.event[i].counter = intervals[i];
    }
}

static void xsave_lwp(void)
{
    memset(xsave_area, 0, sizeof(xsave_area));
    asm volatile("xsave64 (%0)"
                 : : "r"(xsave_area), "a"(0), "d"((u32)(XSTATE_LWP >> 32))
                 : "memory");
}

static void report_run(int ret, u64 ea)
{
    u64 ins_want = args.iters / MIG_INS_EVERY;
    const struct lwp_record *b = &st.first_bad;

    report(ret == 0 && args.seq == args.iters,
           "CPL3 loop - expect a normal return after %lu iterations "
           "(got %x, %lu)", args.iters, ret, args.seq);
    report(ea == (uintptr_t)&cb, "SLWPCB at the end - expect %p (got %lx)",
           &cb, ea);
    report(!st.bad_head, "BufferHeadOffset at every drain - expect below "
           "BufferSize, a multiple of 32 (got %lu bad)", st.bad_head);
    report(!st.bad_id && !st.bad_core && !st.bad_ip,
           "every record - expect an enabled EventId, CoreId %x, an "
           "address in the CPL3 loop %p-%p (got %lu, %lu, %lu bad)",
           CORE_ID, mig_text, mig_text_end, st.bad_id, st.bad_core,
           st.bad_ip);
    report(st.count[0] == ins_want && !st.ins_bad && !args.carry,
           "LWPINS records - expect %lu, Data1 %u, %u, ... at %p, Flags "
           "%x, none with CF = 1 (got %lu, %lu out of order, %lu CF)",
           ins_want, MIG_INS_EVERY, 2 * MIG_INS_EVERY, mig_ins_insn,
           (u16)MIG_INS_IMM, st.count[0], st.ins_bad, args.carry);
    report(!st.val_bad_gap && st.val_seq + VAL_MAX_GAP > args.seq &&
           st.val_seq <= args.seq,
           "LWPVAL records - expect Data1 increasing by 1 to %u, the last "
           "one within the last %u of %lu, at %p, Flags %x (got %lu bad, "
           "last %lu)", VAL_MAX_GAP, VAL_MAX_GAP, args.seq, mig_val_insn,
           (u16)MIG_VAL_IMM, st.val_bad_gap, st.val_seq);
    if (st.have_bad) {
        printf("info: first bad record: EventId %u CoreId %x Flags %x "
               "Data1 %x IP %lx Data2 %lx\n", b->event_id, b->core_id,
               b->flags, b->data1, b->ip, b->data2);
    }
    report(cb.missed_events == 0 && st.thr_irqs > 0,
           "MissedEvents - expect 0, the threshold interrupt drains the ring "
           "at half full (got %lu missed, %lu interrupts)",
           cb.missed_events, st.thr_irqs);
    report(*(u64 *)&xsave_area[XSAVE_XSTATE_BV] == XSTATE_LWP &&
           *(u64 *)&xsave_area[XSAVE_LWP] == (uintptr_t)&cb,
           "XSAVE of component 62 - expect XSTATE_BV bit 62, LWPCBAddress "
           "%p (spec 7.2, 7.3; got %lx, %lx)", &cb,
           *(u64 *)&xsave_area[XSAVE_XSTATE_BV],
           *(u64 *)&xsave_area[XSAVE_LWP]);
}

static void fold_final(void)
{
    unsigned i;

    for (i = 0; i < ARRAY_SIZE(st.count); i++) {
        fold64(st.count[i]);
    }
    fold64(st.records);
    fold64(st.thr_irqs);
    fold64(st.drains);
    fold64(args.seq);
    fold64(args.rng);
    fold64(args.sum);
    fold64(args.carry);
    /* the flushed LWPCB (spec 5.2) */
    fold64(cb.flags);
    fold64(cb.head);
    fold64(cb.tail);
    fold64(cb.missed_events);
    for (i = 0; i < 6; i++) {
        fold64(cb.event[i].interval);
        fold64(cb.event[i].counter);
    }
    /* XSTATE_BV and the LWP component (spec 7.2) */
    fold(&xsave_area[XSAVE_XSTATE_BV], 8);
    fold(&xsave_area[XSAVE_LWP], XSAVE_LWP_SIZE);
}

int lwp_migrate_main(void)
{
    const u32 need = LWP_VAL | LWP_IRE | LWP_BRE | LWP_INT;
    u64 spin_m = cmdline_u64("spin", DEFAULT_SPIN);
    u32 edx, features;
    unsigned i;
    int ret;
    u64 ea, cfg = ~0ul, cbaddr = ~0ul;

    st.hash = FNV_OFFSET;
    args.iters = cmdline_u64("iters", DEFAULT_ITERS);
    args.seed = 0x2545f4914f6cdd1dul;
    args.cb = (uintptr_t)&cb;
    printf("LWPMIGRATE: start iters=%lu\n", args.iters);
    /*
     * Spec 4.2, 4.3: both MSRs are 0 after reset, also after a reset in
     * the middle of a profiling run (choice 5; tests/migration part e)
     */
    if (!rdmsr_safe(MSR_LWP_CFG, &cfg) &&
        !rdmsr_safe(MSR_LWP_CBADDR, &cbaddr)) {
        printf("LWPMIGRATE: boot LWP_CFG=%lx LWP_CBADDR=%lx\n", cfg,
               cbaddr);
    }
    report_prefix_push("migrate");

    spin("idle", spin_m);
    edx = lwp_cpuid().d;
    if (!(cpuid(0x80000001).c & CPUID_EXT3_LWP) || !enable_osxsave() ||
        (edx & need) != need) {
        report_skip("no LWP with VAL, IRE, BRE and INT (EDX %x)", edx);
        printf("LWPMIGRATE: no LWP\n");
        report_prefix_pop();
        return report_summary();
    }
    /* the clock events when the profile has them (choice 48) */
    features = need | (edx & (LWP_CNH | LWP_RNH));
    st.want_ids = features & ~LWP_INT;
    xsetbv_safe(0, XSTATE_FP_SSE_AVX | XSTATE_LWP);
    wrmsr(MSR_LWP_CFG, features | LWP_CFG_COREID(CORE_ID) |
          LWP_CFG_VECTOR(MIG_THR_VECTOR));
    spin("configured", spin_m);

    enable_apic();
    handle_irq(MIG_THR_VECTOR, thr_handler);
    allow_user_int(MIG_DRAIN_VECTOR);
    handle_irq(MIG_DRAIN_VECTOR, drain_handler);
    setup_lwpcb(features);
    st.ins_seq = MIG_INS_EVERY;
    printf("LWPMIGRATE: running features=%x\n", features);
    ret = run_in_user_irq(mig_user, &args);

    /* CPL0, LWP still enabled: flush, drain, XSAVE, fold */
    ea = slwpcb();
    drain();
    xsave_lwp();
    wrmsr(MSR_LWP_CBADDR, 0);
    handle_irq(MIG_THR_VECTOR, NULL);
    handle_irq(MIG_DRAIN_VECTOR, NULL);
    report_run(ret, ea);
    fold_final();

    printf("info: records VAL %lu IRE %lu BRE %lu CNH %lu RNH %lu INS %lu, "
           "%lu threshold interrupts, %lu INT drains\n", st.count[EVENT_VAL],
           st.count[EVENT_IRE], st.count[EVENT_BRE], st.count[EVENT_CNH],
           st.count[EVENT_RNH], st.count[0], st.thr_irqs, st.drains);
    printf("info: flushed counters");
    for (i = 0; i < 6; i++) {
        printf(" %x", cb.event[i].counter);
    }
    printf(", head %u, generator %lx\n", cb.head,
           *(u64 *)&xsave_area[XSAVE_LWP + 56]);
    printf("LWPDIGEST records=%lu missed=%lu hash=0x%016lx\n", st.records,
           cb.missed_events, st.hash);
    report_prefix_pop();
    return report_summary();
}
