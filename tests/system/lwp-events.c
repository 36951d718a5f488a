/*
 * System-mode tests of LWP's events around CPL changes and of the
 * threshold interrupt, in the 64-bit kernel:
 *
 * - CPL0 code is never counted (spec 1.1, 2.2): SYSCALL and INT n
 *   handlers and the kernel after the CPL3 code returned run loops of
 *   known length with LWP enabled, and add nothing.
 * - A CPL3 sequence with SYSCALL/SYSRET and INT n/IRET in it is counted
 *   exactly (spec 2.2, 2.3, Table 6-1): the records must be those of a
 *   model run over the assembler's list of the sequence's instructions
 *   (lwp-user64.S).  SYSCALL and INT n leave CPL3 and are not counted,
 *   SYSRET and IRET enter it and are not counted either (choice 39);
 *   neither is a branch (spec 2.3, choice 40).  The same for a far CALL
 *   through a call gate to CPL0 and the far RET back; a far CALL and far
 *   RET that stay at CPL3 (to USER_CS, directly or through a call gate)
 *   are counted, and are not branches (choice 46).
 * - The clock events CPU Clocks not Halted and Reference Clocks not
 *   Halted (spec 2.5, 2.6) under the cost model of choice 48: each
 *   instruction that Instructions Retired counts takes one clock, a near
 *   branch (taken or not) one more; RNH counts the same clocks as CNH.
 *   So CPL0 code, SYSCALL, INT n and the call gate to CPL0 add none, and
 *   a branch can take a counter from 0 to -2, which shortens the next
 *   interval (spec 1.1 step 5, choice 19).  Checked alone, together and
 *   with IRE and BRE, against the same model; skipped when CPUID
 *   0x8000001C EDX lacks them (the Family 15h profiles).
 * - The threshold interrupt (spec 1.1 step 4, 4.2, 6, 8.5; choice 42): a
 *   fixed local APIC interrupt with vector LWP_CFG[47:40], taken after
 *   the instruction whose record reached the threshold, once per store
 *   at or over the threshold (choice 22), and never without INT in
 *   LWP_CFG or in LWPCB.Flags, or with Threshold > BufferSize.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libcflat.h"
#include "desc.h"
#include "processor.h"
#include "lwp-guest.h"
#include "lwp-events.h"

#define CORE_ID             0x3d

#define MSR_STAR            0xc0000081
#define MSR_LSTAR           0xc0000082
#define MSR_FMASK           0xc0000084
#define EFER_SCE            BIT(0)
/* STAR[63:48]: SYSRET loads CS = base + 16 (USER_CS), SS = base + 8 */
#define STAR_SYSRET_BASE    0x10
#define FMASK_TF_IF_DF      0x700

/* Threshold interrupt vectors (LWP_CFG[47:40]) */
#define VECTOR_A            0x51
#define VECTOR_B            0xa7

#define RING_RECORDS        256
#define MAX_RECORDS         RING_RECORDS
#define MAX_IRQS            64

static struct lwpcb cb __attribute__((aligned(64)));
static struct lwp_record ring[RING_RECORDS] __attribute__((aligned(4096)));
static u32 min_ring;                    /* LwpMinBufferSize in bytes */
static u32 lwp_edx;                     /* CPUID 0x8000001C EDX */

/* CPL0 entries of INT LWP_TEST_INT_VECTOR */
static volatile unsigned user_ints;

static void user_int_handler(struct ex_regs *regs)
{
    (void)regs;
    lwp_ring0_loop();
    user_ints++;
}

/* ---- threshold interrupt handler ---- */

static struct {
    volatile unsigned count;            /* interrupts taken */
    volatile unsigned wrong;            /* ... on the vector not in LWP_CFG */
    unsigned long rip[MAX_IRQS], cs[MAX_IRQS];
    bool drain, eoi;
} thr;

static void thr_handler(struct ex_regs *regs)
{
    unsigned i = thr.count;

    if (i < MAX_IRQS) {
        thr.rip[i] = regs->rip;
        thr.cs[i] = regs->cs;
    }
    thr.count = i + 1;
    if (thr.drain) {
        /* the consumer empties the ring (spec 1.1) */
        cb.tail = cb.head;
    }
    if (thr.eoi) {
        apic_write(APIC_EOI, 0);
    }
}

static void wrong_vector_handler(struct ex_regs *regs)
{
    (void)regs;
    thr.wrong++;
    apic_write(APIC_EOI, 0);
}

static void thr_reset(bool drain, bool eoi)
{
    memset(&thr, 0, sizeof(thr));
    thr.drain = drain;
    thr.eoi = eoi;
}

/* Neither in service nor pending: ISR and IRR bits of @vec clear */
static bool apic_idle(unsigned vec)
{
    return !apic_vector_bit(APIC_ISR, vec) && !apic_vector_bit(APIC_IRR, vec);
}

/* ---- LWP ---- */

/* XCR0[62] and LWP_CFG = @features of EDX, COREID, VECTOR @vec */
static void lwp_config(u32 features, u8 vec)
{
    xsetbv_safe(0, XSTATE_FP_SSE_AVX | XSTATE_LWP);
    wrmsr(MSR_LWP_CFG, (features & lwp_edx & ~1u) | LWP_CFG_COREID(CORE_ID) |
          LWP_CFG_VECTOR(vec));
}

/* A fresh LWPCB for LLWPCB at CPL3 and an all-zero ring of @size bytes */
static void put_cb(u32 flags, u32 size, u32 threshold)
{
    memset(&cb, 0, sizeof(cb));
    memset(ring, 0, sizeof(ring));
    cb.flags = flags;
    cb.buffer_size = size;
    cb.buffer_base = (uintptr_t)ring;
    cb.threshold = threshold;
}

/* SLWPCB at CPL0: flushes the head and the counters (spec 5.2) */
static u64 slwpcb(void)
{
    u64 ea;

    asm volatile("slwpcb %0" : "=r"(ea) : : "memory");
    return ea;
}

/* Stop LWP without a flush (spec 4.3) */
static void lwp_stop(void)
{
    wrmsr(MSR_LWP_CBADDR, 0);
}

static bool has(u32 features)
{
    return (lwp_edx & features) == features;
}

/* ---- 1, 2: counting around SYSCALL and INT n ---- */

/* The events counted over the CPL3 sequence, in ascending EventId order */
static const struct {
    u8 id;
    const char *name;
} seq_events[] = {
    { EVENT_IRE, "IRE" },
    { EVENT_BRE, "BRE" },
    { EVENT_CNH, "CNH" },
    { EVENT_RNH, "RNH" },
};

#define NR_EVENTS           6           /* EventId 1-6, as in struct lwpcb */
#define SEQ_ID(k)           (seq_events[k].id)
#define SEQ_BIT(k)          BIT(SEQ_ID(k))

struct seq_setting {
    bool on;
    u32 interval, counter;              /* EventInterval n, EventCounter n */
};

/* The events of a run, by EventId - 1; the others are off, with 0 and 0 */
struct seq_run {
    struct seq_setting ev[NR_EVENTS];
};

#define IRE(i, c)           [EVENT_IRE - 1] = { true, (i), (c) }
#define BRE(i, c)           [EVENT_BRE - 1] = { true, (i), (c) }
#define CNH(i, c)           [EVENT_CNH - 1] = { true, (i), (c) }
#define RNH(i, c)           [EVENT_RNH - 1] = { true, (i), (c) }

struct seq_model {
    struct lwp_record rec[MAX_RECORDS];
    u64 next[MAX_RECORDS];              /* next instruction after rec[i] */
    unsigned n;
    unsigned overruns;                  /* records at a counter below -1 */
    int counter[NR_EVENTS];             /* after the sequence */
};

static const struct seq_setting *seq_ev(const struct seq_run *run, unsigned k)
{
    return &run->ev[SEQ_ID(k) - 1];
}

/* LWPCB.Flags of @run */
static u32 seq_flags(const struct seq_run *run)
{
    u32 flags = 0;
    unsigned k;

    for (k = 0; k < ARRAY_SIZE(seq_events); k++) {
        flags |= seq_ev(run, k)->on ? SEQ_BIT(k) : 0;
    }
    return flags;
}

/*
 * "IRE 1/1 CNH 2/0": the events in @flags with their interval/counter in
 * @run, or only their names without @run
 */
static void seq_name(char *buf, size_t size, const struct seq_run *run,
                     u32 flags)
{
    unsigned k, len = 0;

    buf[0] = 0;
    for (k = 0; k < ARRAY_SIZE(seq_events) && len < size; k++) {
        if (!(flags & SEQ_BIT(k))) {
            continue;
        }
        len += snprintf(buf + len, size - len, "%s%s", len ? " " : "",
                        seq_events[k].name);
        if (run && len < size) {
            len += snprintf(buf + len, size - len, " %u/%u",
                            seq_ev(run, k)->interval,
                            seq_ev(run, k)->counter);
        }
    }
}

/*
 * How much instruction @e decrements the counter of EventId @id: 1 for
 * IRE, 1 for BRE if it is a branch (spec 2.2, 2.3; choices 39, 40), and
 * for CNH and RNH its clocks: one, and one more for a near branch, taken
 * or not (choice 48).  Far CALL and RET are SEQ_INSN (choice 46).
 */
static int seq_weight(u8 id, const struct seq_insn *e)
{
    bool branch = e->kind != SEQ_INSN;

    switch (id) {
    case EVENT_IRE:
        return 1;
    case EVENT_BRE:
        return branch;
    default:
        return 1 + branch;
    }
}

/*
 * @w events of EventId @id at @e: count them down; below 0 append the
 * record and reset the counter to the interval less the overrun (spec 1.1
 * steps 2-5, Table 6-1; choice 19)
 */
static void model_event(struct seq_model *m, const struct seq_run *run,
                        u8 id, const struct seq_insn *e, int w)
{
    int *counter = &m->counter[id - 1];
    struct lwp_record *r = &m->rec[m->n];

    *counter -= w;
    if (*counter >= 0) {
        return;
    }
    m->overruns += *counter < -1;
    *counter += (int)run->ev[id - 1].interval + 1;
    if (*counter < 0) {
        *counter = 0;
    }
    memset(r, 0, sizeof(*r));
    r->event_id = id;
    r->core_id = CORE_ID;
    r->ip = e->ip;
    if (id == EVENT_BRE) {
        /* Figure 2-4; FUS, PRV, PRD 0 (choice 40) */
        r->flags = e->kind == SEQ_TAKEN ? BRE_FLAG_TKN : 0;
        r->data2 = e->next;
    }
    /* CNH, RNH: generic records, Flags, Data1, Data2 0 (Figure 2-6, 2-7) */
    m->next[m->n++] = e->next;
}

/* The records of lwp_seq[] under @run; ascending EventIds (choice 20) */
static void model_seq(const struct seq_run *run, struct seq_model *m)
{
    const struct seq_insn *e;
    unsigned k;
    int w;

    memset(m, 0, sizeof(*m));
    for (k = 0; k < ARRAY_SIZE(seq_events); k++) {
        m->counter[SEQ_ID(k) - 1] = seq_ev(run, k)->counter;
    }
    for (e = lwp_seq; e < lwp_seq_end; e++) {
        for (k = 0; k < ARRAY_SIZE(seq_events); k++) {
            w = seq_weight(SEQ_ID(k), e);
            if (seq_ev(run, k)->on && w && m->n < MAX_RECORDS) {
                model_event(m, run, SEQ_ID(k), e, w);
            }
        }
    }
}

static bool record_eq(const struct lwp_record *a, const struct lwp_record *b)
{
    return a->event_id == b->event_id && a->core_id == b->core_id &&
           a->flags == b->flags && a->data1 == b->data1 && a->ip == b->ip &&
           a->data2 == b->data2 && a->reserved == b->reserved;
}

/* Index of the first of @n records that differs from the model, or @n */
static unsigned first_mismatch(const struct seq_model *m, unsigned n)
{
    unsigned i;

    for (i = 0; i < n && record_eq(&ring[i], &m->rec[i]); i++) {
        continue;
    }
    return i;
}

static void report_records(const struct seq_model *m, u32 head)
{
    unsigned n = head / RECORD_SIZE, i = first_mismatch(m, MIN(n, m->n));
    const struct lwp_record *g = &ring[i], *w = &m->rec[i];

    report(head == m->n * RECORD_SIZE && cb.missed_events == 0,
           "BufferHeadOffset, MissedEvents - expect %u records (%u after "
           "a counter went below -1), none missed (got head %u, %lu "
           "missed)", m->n, m->overruns, head, cb.missed_events);
    if (i < MIN(n, m->n)) {
        report(false, "record %u of %u - expect EventId %u, IP %lx, "
               "Flags %x, Target %lx (got EventId %u, CoreId %x, IP %lx, "
               "Flags %x, Data1 %x, Target %lx)", i, m->n, w->event_id,
               w->ip, w->flags, w->data2, g->event_id, g->core_id, g->ip,
               g->flags, g->data1, g->data2);
    } else {
        report(n >= m->n, "every record - expect the model's EventId, "
               "CoreId %x, IP, Flags and Target", CORE_ID);
    }
}

/* No record names an address outside the CPL3 sequence */
static void report_cpl3_only(u32 head)
{
    unsigned i, n = MIN(head / RECORD_SIZE, RING_RECORDS);

    for (i = 0; i < n; i++) {
        if (ring[i].ip < (uintptr_t)lwp_seq_text ||
            ring[i].ip >= (uintptr_t)lwp_seq_text_end) {
            break;
        }
    }
    report(i == n, "records' InstructionAddress - expect only CPL3 "
           "addresses, in %p-%p (got record %u of %u at %lx)", lwp_seq_text,
           lwp_seq_text_end, i, n, i < n ? ring[i].ip : 0);
}

/*
 * "IRE 1 -> 1, CNH 0 -> 0": the EventCounters of the events in @flags,
 * @a[] and @b[] (by EventId - 1), or only @a[] when @b is NULL
 */
static void counters_name(char *buf, size_t size, u32 flags, const u32 *a,
                          const u32 *b)
{
    unsigned k, len = 0;
    u8 id;

    buf[0] = 0;
    for (k = 0; k < ARRAY_SIZE(seq_events) && len < size; k++) {
        id = SEQ_ID(k);
        if (!(flags & SEQ_BIT(k))) {
            continue;
        }
        len += snprintf(buf + len, size - len, "%s%s %u", len ? ", " : "",
                        seq_events[k].name, a[id - 1] & LWP_EVENT_MASK);
        if (b && len < size) {
            len += snprintf(buf + len, size - len, " -> %u",
                            b[id - 1] & LWP_EVENT_MASK);
        }
    }
}

/* The EventCounters of the LWPCB, by EventId - 1 */
static void cb_counters(u32 *ctr)
{
    unsigned i;

    for (i = 0; i < NR_EVENTS; i++) {
        ctr[i] = cb.event[i].counter;
    }
}

static bool counters_eq(const u32 *a, const u32 *b)
{
    unsigned k;
    u8 id;

    for (k = 0; k < ARRAY_SIZE(seq_events); k++) {
        id = SEQ_ID(k);
        if ((a[id - 1] ^ b[id - 1]) & LWP_EVENT_MASK) {
            return false;
        }
    }
    return true;
}

/*
 * Run lwp_seq_user() under @run (with interrupts on if @irq), then
 * lwp_ring0_loop() at CPL0 with LWP still enabled, and flush.  Returns
 * run_in_user()'s result; the flushed LWPCB is in cb.
 */
static int seq_run_once(const struct seq_run *run, u32 extra_flags,
                        u32 threshold, bool irq)
{
    u32 head, ctr[2][NR_EVENTS];
    char got[128];
    u64 ea[2];
    unsigned i;
    int ret;

    put_cb(seq_flags(run) | extra_flags, sizeof(ring), threshold);
    for (i = 0; i < NR_EVENTS; i++) {
        cb.event[i].interval = run->ev[i].interval;
        cb.event[i].counter = run->ev[i].counter;
    }
    lwp_syscalls = 0;
    user_ints = 0;
    lwp_gate_calls = 0;
    ret = (irq ? run_in_user_irq : run_in_user)(lwp_seq_user, &cb);

    /* CPL0 with LWP enabled: a flush, a known loop, a second flush */
    ea[0] = slwpcb();
    head = cb.head;
    cb_counters(ctr[0]);
    lwp_ring0_loop();
    ea[1] = slwpcb();
    lwp_stop();
    cb_counters(ctr[1]);
    counters_name(got, sizeof(got), cb.flags, ctr[0], ctr[1]);
    report(ea[0] == (uintptr_t)&cb && ea[1] == ea[0] && cb.head == head &&
           counters_eq(ctr[0], ctr[1]),
           "CPL0 loop of %u DEC + JNZ with LWP enabled - expect SLWPCB %p "
           "both times, head and counters unchanged (got %lx, %lx; head %u "
           "-> %u, %s)", RING0_LOOPS, &cb, ea[0], ea[1], head, cb.head, got);
    return ret;
}

/*
 * The EventCounters flushed after the run: the model's for the enabled
 * events (CPL0 added nothing), those LLWPCB found for the others
 */
static void report_counters(const struct seq_run *run,
                            const struct seq_model *m)
{
    u32 want[NR_EVENTS], got[NR_EVENTS];
    char ws[96], gs[96];
    unsigned i;

    for (i = 0; i < NR_EVENTS; i++) {
        want[i] = run->ev[i].on ? (u32)m->counter[i] : run->ev[i].counter;
    }
    cb_counters(got);
    counters_name(ws, sizeof(ws), ~0u, want, NULL);
    counters_name(gs, sizeof(gs), ~0u, got, NULL);
    report(counters_eq(want, got), "EventCounters after the flush - expect "
           "%s (got %s)", ws, gs);
}

/*
 * Push @run's name as the report prefix and model the run in @m; false,
 * with the prefix popped again, when CPUID lacks one of its events
 */
static bool seq_begin(const struct seq_run *run, struct seq_model *m)
{
    static char prefix[64];             /* report_prefix_push() keeps it */
    char lacks[32];

    seq_name(prefix, sizeof(prefix), run, seq_flags(run));
    report_prefix_push(prefix);
    if (!has(seq_flags(run))) {
        seq_name(lacks, sizeof(lacks), NULL, seq_flags(run) & ~lwp_edx);
        report_skip("CPUID 0x8000001C EDX %x lacks %s", lwp_edx, lacks);
        report_prefix_pop();
        return false;
    }
    model_seq(run, m);
    return true;
}

static void test_seq(const struct seq_run *run)
{
    static struct seq_model m;
    u32 want = seq_flags(run) & lwp_edx;
    int ret;

    if (!seq_begin(run, &m)) {
        return;
    }
    ret = seq_run_once(run, 0, 0, false);
    report(ret == 0 && lwp_syscalls == 2 && user_ints == 1 &&
           lwp_gate_calls == 1,
           "CPL3 sequence - expect a normal return after 2 SYSCALLs, 1 "
           "INT 0x%x and 1 far CALL to CPL0, each running %u CPL0 loop "
           "iterations (got %x, %u, %u, %u)", LWP_TEST_INT_VECTOR,
           RING0_LOOPS, ret, lwp_syscalls, user_ints, lwp_gate_calls);
    report(cb.flags == want, "LWPCB.Flags after LLWPCB - expect %x (got %x)",
           want, cb.flags);
    report_records(&m, cb.head);
    report_cpl3_only(cb.head);
    report_counters(run, &m);
    report_prefix_pop();
}

/* A 64-bit call gate, DPL3, to @sel:@target in GDT slot @gate_sel */
static void set_call_gate64(unsigned gate_sel, u16 sel, const void *target)
{
    u64 off = (uintptr_t)target;

    gdt[gate_sel / 8] = (off & 0xffff) | (u64)sel << 16 |
                        (u64)(0x80 | 3 << 5 | 0xc) << 40 |
                        (off >> 16 & 0xffff) << 48;
    gdt[gate_sel / 8 + 1] = off >> 32;
}

static void setup_syscall(void)
{
    set_call_gate64(LWP_GATE_KERNEL_SEL & ~3, KERNEL_CS, lwp_gate_entry);
    set_call_gate64(LWP_GATE_USER_SEL & ~3, USER_CS, lwp_gate_callee);
    wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SCE);
    wrmsr(MSR_STAR, (u64)STAR_SYSRET_BASE << 48 | (u64)KERNEL_CS << 32);
    wrmsr(MSR_LSTAR, (uintptr_t)lwp_syscall_entry);
    wrmsr(MSR_FMASK, FMASK_TF_IF_DF);
    allow_user_int(LWP_TEST_INT_VECTOR);
    handle_irq(LWP_TEST_INT_VECTOR, user_int_handler);
}

static void test_counting(void)
{
    static const struct seq_run runs[] = {
        { { IRE(1, 1), BRE(1, 1) } },
        { { IRE(2, 2), BRE(2, 0) } },
        { { IRE(7, 7), BRE(7, 3) } },
        { { IRE(1, 0), BRE(7, 7) } },
        { { IRE(7, 4), BRE(2, 1) } },
        { { IRE(2, 0) } },
        { { BRE(1, 0) } },
        /*
         * The clock events (choice 48), alone, together and with IRE and
         * BRE; at these intervals some branches (two clocks) take a
         * counter from 0 to -2
         */
        { { CNH(1, 1) } },
        { { CNH(1, 0) } },
        { { CNH(2, 2) } },
        { { CNH(7, 3) } },
        { { RNH(1, 1) } },
        { { RNH(2, 0) } },
        { { RNH(7, 7) } },
        { { CNH(1, 1), RNH(1, 1) } },
        { { CNH(2, 1), RNH(7, 7) } },
        { { CNH(7, 5), RNH(2, 2) } },
        { { IRE(1, 1), BRE(1, 1), CNH(1, 1), RNH(1, 1) } },
        { { IRE(2, 0), BRE(1, 0), CNH(2, 2), RNH(1, 0) } },
        { { IRE(7, 4), BRE(2, 1), CNH(7, 7), RNH(2, 1) } },
        { { IRE(1, 0), CNH(1, 0) } },
        { { BRE(2, 0), RNH(2, 1) } },
    };
    unsigned i;

    report_prefix_push("CPL3 counting");
    lwp_config(~0u, VECTOR_A);
    for (i = 0; i < ARRAY_SIZE(runs); i++) {
        test_seq(&runs[i]);
    }
    report_prefix_pop();
}

/* ---- 3: the threshold interrupt ---- */

/*
 * @count LWPINS at CPL3 with interrupts on, LWPCB.Flags @flags, a ring
 * of @size bytes and @threshold; the caller has set LWP_CFG.  Returns
 * run_in_user_irq()'s result.
 */
static int run_lwpins(u32 flags, u32 size, u32 threshold, u32 count)
{
    struct lwp_ins_args a = { (uintptr_t)&cb, count };

    put_cb(flags, size, threshold);
    return run_in_user_irq(lwp_ins_user, &a);
}

/* Every interrupt frame of the run: RIP @rip at CPL3 */
static void report_frames(const char *what, unsigned long rip)
{
    unsigned i, n = MIN(thr.count, MAX_IRQS);

    for (i = 0; i < n && thr.rip[i] == rip && thr.cs[i] == USER_CS; i++) {
        continue;
    }
    report(n && i == n, "%s: every interrupt frame - expect RIP %lx, CS %x "
           "(frame %u of %u: RIP %lx, CS %lx)", what, rip, USER_CS, i, n,
           i < n ? thr.rip[i] : 0, i < n ? thr.cs[i] : 0);
}

/*
 * @count LWPINS, Threshold @records records: expect @irqs interrupts on
 * the vector of LWP_CFG, each right after an LWPINS
 */
static void check_lwpins_irqs(const char *what, u32 records, u32 count,
                              unsigned irqs)
{
    int ret = run_lwpins(LWP_INT, min_ring, records * RECORD_SIZE, count);

    report(ret == 0 && thr.count == irqs && !thr.wrong, "%s: %u LWPINS, "
           "Threshold %u records - expect %u interrupts (got %u, %u on the "
           "other vector, run_in_user %x)", what, count, records, irqs,
           thr.count, thr.wrong, ret);
    report_frames(what, (uintptr_t)lwp_ins_next);
}

static void test_threshold_lwpins(void)
{
    u32 i, nr = min_ring / RECORD_SIZE;
    int ret;

    /* LLWPCB keeps INT: it is available */
    thr_reset(true, true);
    check_lwpins_irqs("drained", 4, 20, 5);
    report(cb.flags == LWP_INT && cb.missed_events == 0,
           "LWPCB.Flags, MissedEvents - expect %x, 0 (got %x, %lu)",
           LWP_INT, cb.flags, cb.missed_events);
    report(ring[0].event_id == EVENT_INS && ring[0].core_id == CORE_ID &&
           ring[0].flags == (u16)LWP_INS_IMM &&
           ring[0].data1 == LWP_INS_DATA1 && ring[0].data2 == LWP_INS_DATA2 &&
           ring[0].ip == (uintptr_t)lwp_ins_insn,
           "first LWPINS record - expect EventId 255, Flags %x, Data1 %x, "
           "Data2 %x, IP %p (got %u, %x, %x, %lx, %lx)", (u16)LWP_INS_IMM,
           LWP_INS_DATA1, LWP_INS_DATA2, lwp_ins_insn, ring[0].event_id,
           ring[0].flags, ring[0].data1, ring[0].data2, ring[0].ip);
    report(apic_idle(VECTOR_A), "APIC ISR and IRR bits of vector 0x%x "
           "after the handler's EOIs - expect clear", VECTOR_A);

    /* 6 (Threshold): "an interrupt ... every time an event record is stored" */
    thr_reset(true, true);
    check_lwpins_irqs("Threshold 0", 0, 6, 6);

    /* Not drained: every store at or over the threshold (choice 22) */
    thr_reset(false, true);
    check_lwpins_irqs("not drained", 4, 10, 7);

    /* Without EOI the APIC holds back the next ones (choice 42) */
    thr_reset(true, false);
    ret = run_lwpins(LWP_INT, min_ring, 4 * RECORD_SIZE, 20);
    report(ret == 0 && thr.count == 1 && apic_vector_bit(APIC_ISR, VECTOR_A) &&
           apic_vector_bit(APIC_IRR, VECTOR_A),
           "handler without EOI, 20 LWPINS, Threshold 4 records - expect 1 "
           "interrupt, vector 0x%x in service and pending (got %u, ISR %d, "
           "IRR %d)", VECTOR_A, thr.count,
           apic_vector_bit(APIC_ISR, VECTOR_A),
           apic_vector_bit(APIC_IRR, VECTOR_A));
    thr.eoi = true;
    apic_write(APIC_EOI, 0);
    sti();
    for (i = 0; i < 1000; i++) {
        pause();
    }
    cli();
    report(thr.count == 2 && apic_idle(VECTOR_A), "EOI, then STI - expect "
           "the pending interrupt once, then nothing in service or pending "
           "(got %u interrupts)", thr.count);

    /* The vector is LWP_CFG[47:40] */
    lwp_config(~0u, VECTOR_B);
    handle_irq(VECTOR_A, wrong_vector_handler);
    handle_irq(VECTOR_B, thr_handler);
    thr_reset(true, true);
    check_lwpins_irqs("LWP_CFG vector 0xa7", 4, 8, 2);
    report(apic_idle(VECTOR_B), "APIC ISR and IRR bits of vector 0x%x - "
           "expect clear", VECTOR_B);
    handle_irq(VECTOR_A, thr_handler);
    handle_irq(VECTOR_B, wrong_vector_handler);
    lwp_config(~0u, VECTOR_A);

    /* No interrupt */
    thr_reset(true, true);
    ret = run_lwpins(LWP_INT, min_ring, min_ring + RECORD_SIZE, nr - 1);
    report(ret == 0 && thr.count == 0 && !thr.wrong && apic_idle(VECTOR_A) &&
           cb.head == (nr - 1) * RECORD_SIZE && cb.missed_events == 0,
           "Threshold = BufferSize + 32, %u LWPINS fill the ring - expect "
           "no interrupt (got %u, head %u, %lu missed)", nr - 1, thr.count,
           cb.head, cb.missed_events);
    thr_reset(true, true);
    ret = run_lwpins(0, min_ring, 0, 8);
    report(ret == 0 && thr.count == 0 && !thr.wrong && apic_idle(VECTOR_A) &&
           cb.head == 8 * RECORD_SIZE,
           "INT clear in LWPCB.Flags, Threshold 0, 8 LWPINS - expect no "
           "interrupt (got %u, head %u)", thr.count, cb.head);
    lwp_config(~LWP_INT, VECTOR_A);
    thr_reset(true, true);
    ret = run_lwpins(LWP_INT, min_ring, 0, 8);
    report(ret == 0 && thr.count == 0 && !thr.wrong && apic_idle(VECTOR_A) &&
           cb.head == 8 * RECORD_SIZE && cb.flags == 0,
           "INT clear in LWP_CFG, set in Flags, Threshold 0, 8 LWPINS - "
           "expect no interrupt, Flags 0 after LLWPCB (got %u, head %u, "
           "Flags %x)", thr.count, cb.head, cb.flags);
    lwp_config(~0u, VECTOR_A);
}

/*
 * The records of the CPL3 sequence under @run with Threshold 0: one
 * interrupt per record, each taken before the instruction after the
 * recorded one.
 */
static void test_threshold_seq(const struct seq_run *run)
{
    static struct seq_model m;
    unsigned i, n;
    int ret;

    if (!seq_begin(run, &m)) {
        return;
    }
    thr_reset(true, true);
    ret = seq_run_once(run, LWP_INT, 0, true);
    n = MIN(thr.count, MAX_IRQS);
    report(ret == 0 && thr.count == m.n && !thr.wrong,
           "Threshold 0 - expect %u interrupts, one per record (got %u, %u "
           "on the other vector, run_in_user %x)", m.n, thr.count,
           thr.wrong, ret);
    for (i = 0; i < n && i < m.n && thr.rip[i] == m.next[i] &&
         thr.cs[i] == USER_CS; i++) {
        continue;
    }
    report(n == m.n && i == n, "interrupt frames - expect RIP = the "
           "instruction after each recorded one, CS %x (frame %u: expect "
           "%lx, got %lx)", USER_CS, i, i < m.n ? m.next[i] : 0,
           i < n ? thr.rip[i] : 0);
    report_records(&m, cb.head);
    report_prefix_pop();
}

/*
 * ---- DCache Misses at CPL3 (spec 2.4, choices 53 and 55) ----
 *
 * Pointer chases through lists whose strides make the documented cache
 * model (docs/cache-model.md, default configuration) supply each load
 * from a known level: an 8 KiB list fits L1, so its second pass misses
 * nothing; 16 lines one page apart all fall in L1 set 0 (4 ways) and in
 * 16 sets of L2, so each pass misses L1 and, the second time, L2
 * supplies them (SRC 0, 20 cycles).  Interval 1 with Random 0: every
 * second eligible miss stores a record.  A CPL0 chase adds nothing.
 */
static u8 dme_l1[8192] __attribute__((aligned(4096)));
static u8 dme_l2[16 * 4096] __attribute__((aligned(4096)));

struct dme_chase {
    struct lwpcb *cb;
    void *start;
    u64 n;
};

/* CPL3: enable LWP, chase n steps, disable it; only the chase loads */
static void dme_chase_user(void *arg)
{
    struct dme_chase *c = arg;
    void *p = c->start;
    u64 n = c->n;

    asm volatile("llwpcb %[cb]\n"
                 "1: mov (%[p]), %[p]\n"
                 "dec %[n]\n"
                 "jnz 1b\n"
                 "llwpcb %[zero]"
                 : [p] "+r"(p), [n] "+r"(n)
                 : [cb] "r"(c->cb), [zero] "r"(0ul) : "memory", "cc");
}

/* A cyclic list of @count pointers @stride bytes apart */
static void *dme_list(u8 *base, u64 stride, u64 count)
{
    for (u64 i = 0; i < count; i++) {
        *(void **)(base + i * stride) = base + ((i + 1) % count) * stride;
    }
    return base;
}

/* Chase at CPL3 with DME at interval 1; returns the records stored */
static u32 dme_run(void *start, u64 n)
{
    struct dme_chase c = { &cb, start, n };

    put_cb(LWP_DME, sizeof(ring), 0);
    cb.event[EVENT_DME - 1].interval = 1;
    cb.event[EVENT_DME - 1].counter = 1;
    run_in_user(dme_chase_user, &c);
    return cb.head / RECORD_SIZE;
}

static void test_dme(void)
{
    u32 n, bad = 0, ctr[NR_EVENTS];
    u8 *p;

    if (!has(LWP_DME)) {
        report_skip("DCache Misses: not in CPUID 0x8000001C EDX");
        return;
    }
    lwp_config(LWP_DME, VECTOR_A);
    dme_list(dme_l1, 64, 128);
    n = dme_run(dme_l1, 128);
    report(n == 64, "DME at CPL3: first pass over 128 new lines, interval 1 "
           "- expect 64 records (got %u)", n);
    n = dme_run(dme_l1, 128);
    report(n == 0, "DME at CPL3: second pass over 8 KiB - expect no L1 "
           "miss (got %u records)", n);

    dme_list(dme_l2, 4096, 16);
    dme_run(dme_l2, 16);
    n = dme_run(dme_l2, 16);
    for (unsigned i = 0; i < n; i++) {
        struct lwp_record *r = &ring[i];
        u32 w0 = r->event_id | r->core_id << 8 | (u32)r->flags << 16;

        p = (u8 *)(uintptr_t)r->data2;
        if (r->event_id != EVENT_DME || r->core_id != CORE_ID ||
            w0 >> 29 != 0 || !(w0 & (1u << 28)) || r->data1 != 20 ||
            p < dme_l2 || p >= dme_l2 + sizeof(dme_l2) ||
            (uintptr_t)p % 4096) {
            bad++;
        }
    }
    report(n == 8 && !bad, "DME at CPL3: 16 lines of L1 set 0 again - "
           "expect 8 records, each with DAV, SRC 0, latency 20 and a "
           "line of the list (got %u, %u wrong)", n, bad);

    /* CPL0 with DME enabled: nothing counts */
    put_cb(LWP_DME, sizeof(ring), 0);
    cb.event[EVENT_DME - 1].interval = 1;
    cb.event[EVENT_DME - 1].counter = 1;
    asm volatile("llwpcb %0" : : "r"(&cb) : "memory");
    p = dme_l2;
    for (unsigned i = 0; i < 64; i++) {
        /* volatile: each step must be a load, in this order */
        p = *(u8 * volatile *)p;
    }
    slwpcb();
    cb_counters(ctr);
    lwp_stop();
    report(cb.head == 0 && ctr[EVENT_DME - 1] == 1, "DME at CPL0: 64 L1 "
           "misses with LWP enabled - expect no record and the counter "
           "still 1 (head %u, counter %u)", cb.head, ctr[EVENT_DME - 1]);
}

static void test_threshold(void)
{
    /* one event each: records of one instruction would share a vector */
    static const struct seq_run runs[] = {
        { { IRE(2, 1) } },
        { { CNH(2, 1) } },
        { { RNH(7, 0) } },
    };
    unsigned i;

    report_prefix_push("threshold interrupt");
    if (!has(LWP_INT)) {
        report_skip("CPUID 0x8000001C EDX %x lacks LwpInt", lwp_edx);
        report_prefix_pop();
        return;
    }
    enable_apic();
    handle_irq(VECTOR_A, thr_handler);
    handle_irq(VECTOR_B, wrong_vector_handler);
    lwp_config(~0u, VECTOR_A);
    for (i = 0; i < ARRAY_SIZE(runs); i++) {
        test_threshold_seq(&runs[i]);
    }
    test_threshold_lwpins();
    handle_irq(VECTOR_A, NULL);
    handle_irq(VECTOR_B, NULL);
    report_prefix_pop();
}

void test_lwp_events(void)
{
    struct cpuid r;

    report_prefix_push("events");
    if (!(cpuid(0x80000001).c & CPUID_EXT3_LWP) || !enable_osxsave()) {
        report_skip("no LWP: event and threshold interrupt tests");
        report_prefix_pop();
        return;
    }
    r = lwp_cpuid();
    lwp_edx = r.d;
    min_ring = ((r.c >> 16) & 0xff) * 32 * RECORD_SIZE;
    if (min_ring < RECORD_SIZE) {
        min_ring = 32 * RECORD_SIZE;
    }
    if (min_ring > sizeof(ring)) {
        report_skip("LwpMinBufferSize %u bytes > %u", min_ring,
                    (unsigned)sizeof(ring));
        report_prefix_pop();
        return;
    }
    setup_syscall();
    test_counting();
    test_threshold();
    test_dme();
    lwp_stop();
    wrmsr(MSR_LWP_CFG, 0);
    report_prefix_pop();
}
