/*
 * A tiny preemptive kernel with two CPL3 tasks that both use LWP, in the
 * 64-bit test kernel: LWP state is switched with XSAVE and XRSTOR as an
 * operating system must do it (spec 7, 8.2.1, 8.4, 8.7.2).
 *
 * - Each task (lwp-tasks-user64.S) enables LWP itself with LLWPCB at
 *   CPL3, with its own LWPCB and ring buffer, and runs its own loop with
 *   branches, LWPVAL and LWPINS, under Programmed Value Sample,
 *   Instructions Retired, Branches Retired and, when CPUID 0x8000001C EDX
 *   has them, CPU Clocks not Halted and Reference Clocks not Halted, at
 *   small intervals.  It traps to the kernel with INT TASK_EXIT_VECTOR
 *   when done.
 * - The local APIC timer (periodic) interrupts the running task many
 *   times in the middle of its loop.  The handler XSAVEs the task's
 *   state with EDX:EAX = XCR0 (x87, SSE, AVX, LWP) into the task's area,
 *   XRSTORs the other task's area and IRETs into it.  A task's first
 *   dispatch XRSTORs an area whose XSTATE_BV is 0, so that it starts with
 *   LWP off (spec 8.4, 8.7.2).  At the exit the kernel flushes the task's
 *   LWP state with SLWPCB (spec 5.2) and writes 0 to LWP_CBADDR (8.7.2).
 * - Oracle: each task first runs alone (same code and LWPCB, no timer);
 *   its ring buffer and LWPCB are saved.  Then the two run interleaved
 *   under the timer, and each task's ring buffer (all of it) and LWPCB
 *   must be byte for byte those of its solo run, whatever the
 *   interleaving (spec 1: "A thread has its own ring buffer and counters
 *   which are context switched with the rest of the thread state").
 *   Round 1 has Random = 0; round 2 has Random > 0, so that the
 *   generator state, which the XSAVE area carries (choice 18), must
 *   survive the switches too.
 * - Independent checks: the number of records of each event is derived
 *   from the loop structure in lwp-tasks-user64.S (choices 17, 19, 39,
 *   40, 48: exact for Random = 0, bounded by the randomised intervals for
 *   Random > 0); every record has the task's CoreId, an address in the
 *   task's code and, for LWPVAL and LWPINS, the task's tag in Data2 and
 *   Flags, so no record of one task is in the other's buffer; each task
 *   is switched out at least MIN_SWITCHES times, inside its loop, while
 *   both tasks have LWP on; every XSAVE area has XSTATE_BV[62] = 1 and
 *   the task's LWPCB address, ring buffer and Counter n bits when the
 *   task had run LLWPCB, else 0 (spec 7.2, 7.3); LWP_CBADDR after every
 *   XRSTOR is the restored task's LWPCB, or 0 for a new task (4.3, 7.4,
 *   7.5).
 *
 * The preemption points depend on host timing (TCG without icount), so
 * every boot interleaves the tasks differently.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libcflat.h"
#include "desc.h"
#include "processor.h"
#include "lwp-guest.h"
#include "lwp-tasks.h"

#define XCR0_TASKS          (XSTATE_FP_SSE_AVX | XSTATE_LWP)
#define CORE_ID             0x7c

#define TIMER_VECTOR        0x6c
/*
 * Timer period in APIC counts: QEMU's APIC counts at 1 GHz, so 50 us, a
 * few percent of a task's run
 */
#define TIMER_COUNT         50000

/*
 * Each task switched out at least this often per interleaved run.  A
 * loaded host can hold back the ticks (the timer is host time), so a run
 * with fewer is repeated, up to MAX_ATTEMPTS runs in all; every run's
 * records must equal the solo run's.
 */
#define MIN_SWITCHES        8
#define MAX_ATTEMPTS        10

#define NR_EVENTS           6                   /* EventId 1-6 */
#define ENABLE_ALL          (LWP_VAL | LWP_IRE | LWP_BRE | LWP_CNH | LWP_RNH)
#define RING_RECORDS        32768
#define RING_BYTES          (RING_RECORDS * RECORD_SIZE)
#define TASK_STACK          4096

/* XSAVE area, standard format; the LWP component at 0x340 (spec 3.2, 7.1) */
#define XSAVE_SIZE          0x3c0
#define XSAVE_LWP           0x340
#define MXCSR_DEFAULT       0x1f80

/* The LWP component of the XSAVE area (Figure 7-1, Table 7-1) */
struct lwp_xsave {
    u64 lwpcb;                          /* LWPCBAddress, 0: LWP disabled */
    u32 flags;                          /* bits 6:1: Counter n active */
    u32 head;                           /* BufferHeadOffset */
    u64 buffer_base;
    u32 buffer_size;                    /* bits 27:0 */
    u32 filters;
    u8 saved_record[32];                /* SavedEventRecord */
    u32 counter[NR_EVENTS];             /* EventCounter 1-6 */
    u8 reserved[40];
};

struct xsave_area {
    u8 legacy[24];
    u32 mxcsr;
    u8 legacy_rest[484];
    u64 xstate_bv;                      /* XSAVE.HEADER.XSTATE_BV */
    u64 xcomp_bv;
    u8 header_rest[48];
    u8 ext[XSAVE_LWP - 576];
    struct lwp_xsave lwp;
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct lwp_xsave) == 0x80, "LWP XSAVE component");
_Static_assert(__builtin_offsetof(struct xsave_area, lwp) == XSAVE_LWP,
               "XSAVE layout");
_Static_assert(sizeof(struct xsave_area) == XSAVE_SIZE, "XSAVE size");

static const char *const event_names[NR_EVENTS] = {
    "VAL", "IRE", "BRE", "DME", "CNH", "RNH",
};

/* EventInterval n and EventCounter n of one task, by EventId - 1 */
struct task_params {
    u32 random;                         /* LWPCB.Random */
    struct {
        u32 interval, counter;
    } ev[NR_EVENTS];
};

/* What the loop of a task makes LWP count (lwp-tasks-user64.S) */
struct loop_counts {
    u64 insns, branches, vals, ins;
};

struct task {
    const char *name;
    void (*entry)(void *cb);
    const u8 *text, *text_end, *body, *body_end, *exit;
    u32 tag, val_imm, ins_imm;
    struct lwpcb *cb;
    struct lwp_record *ring, *solo;     /* solo: the solo run's ring */
    struct lwpcb solo_cb;
    struct xsave_area *xs;
    u8 *stack_top;
    void (*counts)(struct loop_counts *c);

    /* one run */
    struct ex_regs ctx;                 /* while switched out */
    bool started, done;
    u64 exit_rip, exit_cb;
    unsigned preempted;                 /* XSAVEs by the timer handler */
    unsigned switched_out, in_body;     /* ... for a switch, in the loop */
    unsigned bad_saves, bad_restores;
    u64 bad_rip, bad_bv, bad_cb, bad_msr;
};

static struct lwpcb cb_a __attribute__((aligned(64)));
static struct lwpcb cb_b __attribute__((aligned(64)));
static struct lwp_record ring_a[RING_RECORDS] __attribute__((aligned(4096)));
static struct lwp_record ring_b[RING_RECORDS] __attribute__((aligned(4096)));
static struct lwp_record solo_a[RING_RECORDS] __attribute__((aligned(4096)));
static struct lwp_record solo_b[RING_RECORDS] __attribute__((aligned(4096)));
static struct xsave_area xs_a, xs_b, xs_init;
static u8 stack_a[TASK_STACK] __attribute__((aligned(16)));
static u8 stack_b[TASK_STACK] __attribute__((aligned(16)));
static u32 lwp_edx;                     /* CPUID 0x8000001C EDX */

/* Task A: 3 + 6 N + N / 8 instructions, 2 N branches, N LWPVAL, N / 8 LWPINS */
static void task_a_counts(struct loop_counts *c)
{
    u64 n = TASK_A_LOOPS;

    c->insns = 3 + 6 * n + n / 8;
    c->branches = 2 * n;
    c->vals = n;
    c->ins = n / 8;
}

/* Task B: 3 + O (4 + 5 I) instructions, 1 + O (1 + 3 I) branches */
static void task_b_counts(struct loop_counts *c)
{
    u64 o = TASK_B_OUTER, i = TASK_B_INNER;

    c->insns = 3 + o * (4 + 5 * i);
    c->branches = 1 + o * (1 + 3 * i);
    c->vals = o * i;
    c->ins = o;
}

static struct task tasks[2] = {
    {
        .name = "A", .entry = task_a_entry,
        .text = task_a_text, .text_end = task_a_text_end,
        .body = task_a_body, .body_end = task_a_body_end,
        .exit = task_a_exit,
        .tag = TASK_A_TAG, .val_imm = TASK_A_VAL_IMM,
        .ins_imm = TASK_A_INS_IMM,
        .cb = &cb_a, .ring = ring_a, .solo = solo_a, .xs = &xs_a,
        .stack_top = stack_a + TASK_STACK, .counts = task_a_counts,
    },
    {
        .name = "B", .entry = task_b_entry,
        .text = task_b_text, .text_end = task_b_text_end,
        .body = task_b_body, .body_end = task_b_body_end,
        .exit = task_b_exit,
        .tag = TASK_B_TAG, .val_imm = TASK_B_VAL_IMM,
        .ins_imm = TASK_B_INS_IMM,
        .cb = &cb_b, .ring = ring_b, .solo = solo_b, .xs = &xs_b,
        .stack_top = stack_b + TASK_STACK, .counts = task_b_counts,
    },
};

static struct {
    unsigned cur;                       /* the running task */
    bool active;                        /* a run is on */
    u64 mask;                           /* EDX:EAX of XSAVE and XRSTOR */
    unsigned ticks, switches, live_switches, stray;
} sched;

/* ---- CPU helpers ---- */

static void xsave(struct xsave_area *a, u64 mask)
{
    asm volatile("xsave64 %0"
                 : "+m"(*a) : "a"((u32)mask), "d"((u32)(mask >> 32)));
}

static void xrstor(const struct xsave_area *a, u64 mask)
{
    asm volatile("xrstor64 %0"
                 : : "m"(*a), "a"((u32)mask), "d"((u32)(mask >> 32))
                 : "memory");
}

/* SLWPCB at CPL0: flushes the counters and the head (spec 5.2) */
static u64 slwpcb(void)
{
    u64 ea;

    asm volatile("slwpcb %0" : "=r"(ea) : : "memory");
    return ea;
}

static void timer_start(void)
{
    apic_write(APIC_TDCR, APIC_TDCR_DIV1);
    apic_write(APIC_LVTT, APIC_LVT_PERIODIC | TIMER_VECTOR);
    apic_write(APIC_TMICT, TIMER_COUNT);
}

static void timer_stop(void)
{
    apic_write(APIC_LVTT, APIC_LVT_MASKED | TIMER_VECTOR);
    apic_write(APIC_TMICT, 0);
}

static bool in_range(u64 ip, const u8 *start, const u8 *end)
{
    return ip >= (uintptr_t)start && ip < (uintptr_t)end;
}

/* ---- the scheduler ---- */

/* LWPCB.Flags after LLWPCB: the requested events that are available */
static u32 enabled_events(void)
{
    return ENABLE_ALL & lwp_edx;
}

/*
 * Check the area XSAVE just wrote for task @t, interrupted at @rip:
 * LLWPCB has run (RIP past it, up to the INT) exactly when LWP is on,
 * and then the area holds the task's LWPCB, ring buffer and events
 * (spec 7.2, 7.3; choice 29: Flags holds the enabled events only)
 */
static void check_save(struct task *t, u64 rip)
{
    const struct lwp_xsave *l = &t->xs->lwp;
    bool on = t->xs->xstate_bv & XSTATE_LWP;
    bool want_on = rip >= (uintptr_t)t->text && rip <= (uintptr_t)t->text_end;
    bool ok = on == want_on;

    if (on) {
        ok = ok && l->lwpcb == (uintptr_t)t->cb &&
             l->buffer_base == (uintptr_t)t->ring &&
             (l->buffer_size & 0x0fffffff) == RING_BYTES &&
             l->flags == enabled_events();
    }
    if (!ok && !t->bad_saves++) {
        t->bad_rip = rip;
        t->bad_bv = t->xs->xstate_bv;
        t->bad_cb = l->lwpcb;
    }
}

/*
 * Make task @i the running one: XRSTOR its area, or for its first
 * dispatch an area with XSTATE_BV = 0 (spec 8.4, 8.7.2), check
 * LWP_CBADDR (spec 4.3, 7.4, 7.5) and IRET into it through @regs
 */
static void dispatch(unsigned i, struct ex_regs *regs)
{
    struct task *t = &tasks[i];
    u64 want = 0, got;

    if (t->started) {
        xrstor(t->xs, sched.mask);
        if (t->xs->xstate_bv & XSTATE_LWP) {
            want = (uintptr_t)t->cb;
        }
    } else {
        xrstor(&xs_init, sched.mask);
        t->started = true;
    }
    got = rdmsr(MSR_LWP_CBADDR);
    if (got != want && !t->bad_restores++) {
        t->bad_msr = got;
    }
    *regs = t->ctx;
    sched.cur = i;
}

static void timer_handler(struct ex_regs *regs)
{
    struct task *t = &tasks[sched.cur], *o = &tasks[!sched.cur];
    unsigned next = sched.cur;
    bool live;

    apic_write(APIC_EOI, 0);
    if (!sched.active || (regs->cs & 3) != 3) {
        sched.stray++;
        return;
    }
    sched.ticks++;
    t->ctx = *regs;
    xsave(t->xs, sched.mask);
    check_save(t, regs->rip);
    t->preempted++;
    if (!o->done) {
        next = !sched.cur;
        t->in_body += in_range(regs->rip, t->body, t->body_end);
        live = (t->xs->xstate_bv & XSTATE_LWP) && o->started &&
               (o->xs->xstate_bv & XSTATE_LWP);
        t->switched_out++;
        sched.switches++;
        sched.live_switches += live;
    }
    /* With the other task done, the same task is restored */
    dispatch(next, regs);
}

/* INT TASK_EXIT_VECTOR: the running task is done */
static void exit_handler(struct ex_regs *regs)
{
    struct task *t = &tasks[sched.cur], *o = &tasks[!sched.cur];

    if (!sched.active || (regs->cs & 3) != 3) {
        printf("ABORT: INT 0x%x outside a task run, rip %lx\n",
               TASK_EXIT_VECTOR, regs->rip);
        abort();
    }
    t->exit_rip = regs->rip;
    t->exit_cb = slwpcb();
    wrmsr(MSR_LWP_CBADDR, 0);
    t->done = true;
    if (!o->done) {
        dispatch(!sched.cur, regs);
        return;
    }
    timer_stop();
    sched.active = false;
    user_return(0);
}

/* A fresh LWPCB for task @t under @p, and an all-zero ring buffer */
static void put_task_cb(struct task *t, const struct task_params *p)
{
    unsigned i;

    memset(t->cb, 0, sizeof(*t->cb));
    memset(t->ring, 0, RING_BYTES);
    t->cb->flags = ENABLE_ALL;
    t->cb->buffer_size = RING_BYTES | p->random << 28;
    t->cb->buffer_base = (uintptr_t)t->ring;
    for (i = 0; i < NR_EVENTS; i++) {
        t->cb->event[i].interval = p->ev[i].interval;
        t->cb->event[i].counter = p->ev[i].counter;
    }
}

static void reset_task(struct task *t, const struct task_params *p,
                       bool runs)
{
    put_task_cb(t, p);
    memset(&t->ctx, 0, sizeof(t->ctx));
    t->ctx.rip = (uintptr_t)t->entry;
    t->ctx.cs = USER_CS;
    t->ctx.rflags = 0x202;              /* IF */
    t->ctx.rsp = (uintptr_t)t->stack_top;
    t->ctx.ss = USER_DS;
    t->ctx.rdi = (uintptr_t)t->cb;
    t->started = false;
    t->done = !runs;
    t->exit_rip = t->exit_cb = 0;
    t->preempted = t->in_body = t->switched_out = 0;
    t->bad_saves = t->bad_restores = 0;
}

/*
 * Run task @first, and the other one too with the timer if @both.  The
 * first task starts on run_in_user()'s stack, with LWP off after the
 * XRSTOR of the init area; returns run_in_user_irq()'s result.
 */
static int run_tasks(const struct task_params *p, unsigned first, bool both)
{
    struct task *t = &tasks[first];
    unsigned i;
    int ret;

    reset_task(&tasks[0], &p[0], both || first == 0);
    reset_task(&tasks[1], &p[1], both || first == 1);
    memset(&sched, 0, sizeof(sched));
    sched.mask = XCR0_TASKS;
    sched.cur = first;
    sched.active = true;
    xrstor(&xs_init, sched.mask);
    t->started = true;
    if (both) {
        timer_start();
    }
    ret = run_in_user_irq(t->entry, t->cb);
    timer_stop();
    sched.active = false;
    /* take a tick that was pending when the timer stopped */
    sti();
    for (i = 0; i < 1000; i++) {
        pause();
    }
    cli();
    wrmsr(MSR_LWP_CBADDR, 0);
    return ret;
}

/* ---- checks ---- */

struct ring_stats {
    unsigned n;                         /* records, head / 32 */
    u64 per_event[NR_EVENTS + 1];       /* by EventId - 1; [6]: LWPINS */
    unsigned bad, bad_index;            /* records that break the rules */
    unsigned foreign, foreign_index;    /* records of the other task */
};

/*
 * Classify the @n records of @t's ring buffer @ring: each must be of an
 * enabled event or LWPINS, with CoreId CORE_ID, an address in @t's code,
 * reserved bytes 0, and for LWPVAL and LWPINS @t's tag in Data2 and its
 * immediate in Flags (Figures 2-1, 2-2, 2-8; spec 5.3, 5.4)
 */
static void ring_stats(const struct task *t, const struct lwp_record *ring,
                       unsigned n, struct ring_stats *s)
{
    const struct task *o = &tasks[t == &tasks[0]];
    const struct lwp_record *r;
    unsigned i;
    bool ok, val, ins;

    memset(s, 0, sizeof(*s));
    s->n = n;
    for (i = 0; i < n && i < RING_RECORDS; i++) {
        r = &ring[i];
        val = r->event_id == EVENT_VAL;
        ins = r->event_id == EVENT_INS;
        ok = r->core_id == CORE_ID && r->reserved == 0 &&
             in_range(r->ip, t->text, t->text_end);
        if (ins) {
            s->per_event[NR_EVENTS]++;
        } else if (r->event_id >= 1 && r->event_id <= NR_EVENTS &&
                   (enabled_events() & BIT(r->event_id))) {
            s->per_event[r->event_id - 1]++;
        } else {
            ok = false;
        }
        if (val || ins) {
            ok = ok && r->data2 == t->tag &&
                 r->flags == (val ? t->val_imm : t->ins_imm);
        }
        if (!ok && !s->bad++) {
            s->bad_index = i;
        }
        if ((in_range(r->ip, o->text, o->text_end) ||
             ((val || ins) && r->data2 == o->tag)) && !s->foreign++) {
            s->foreign_index = i;
        }
    }
}

static void report_ring_rules(const struct task *t,
                              const struct lwp_record *ring,
                              const struct ring_stats *s)
{
    const struct task *o = &tasks[t == &tasks[0]];
    const struct lwp_record *r = &ring[s->bad_index];
    const struct lwp_record *f = &ring[s->foreign_index];

    report(!s->bad, "task %s: every record - expect an enabled EventId or "
           "255, CoreId %x, IP in %p-%p, tag %x in LWPVAL/LWPINS Data2 "
           "(got %u bad, the first: record %u EventId %u CoreId %x IP %lx "
           "Flags %x Data2 %lx)", t->name, CORE_ID, t->text, t->text_end,
           t->tag, s->bad, s->bad_index, r->event_id, r->core_id, r->ip,
           r->flags, r->data2);
    report(!s->foreign, "task %s: records of task %s (its code addresses "
           "or tag %x) - expect none (got %u, the first: record %u EventId "
           "%u IP %lx Data2 %lx)", t->name, o->name, o->tag, s->foreign,
           s->foreign_index, f->event_id, f->ip, f->data2);
}

/* "VAL 1500 IRE 4594 ..." from @v, or "VAL 1500-1600 ..." with @hi */
static void counts_name(char *buf, size_t size, const u64 *v, const u64 *hi)
{
    unsigned i, len = 0;

    buf[0] = 0;
    for (i = 0; i <= NR_EVENTS && len < size; i++) {
        if (i < NR_EVENTS && !(enabled_events() & BIT(i + 1))) {
            continue;
        }
        len += snprintf(buf + len, size - len, "%s%s %lu", len ? " " : "",
                        i < NR_EVENTS ? event_names[i] : "INS", v[i]);
        if (hi && hi[i] != v[i] && len < size) {
            len += snprintf(buf + len, size - len, "-%lu", hi[i]);
        }
    }
}

/*
 * The records the loop of @t makes under @p: for each enabled event,
 * T events (the instructions, branches, LWPVALs, or for the clock events
 * one clock per instruction and one more per branch, choice 48) with
 * EventCounter c0 give a record at event c0 + 1, then one every R + 1
 * events, where R is the interval or, with Random = r, between
 * (interval & ~m) and (interval | m), m = 2^r - 1 (spec 1.1 steps 2-5,
 * 5.1 step 7, Table 6-1; choices 18, 19: a branch's overrun shortens the
 * next interval, so the events between records still sum to R + 1).
 * Every LWPINS stores one record (spec 5.4).  @lo and @hi by EventId - 1,
 * [NR_EVENTS]: LWPINS.
 */
static void expected_records(const struct task *t,
                             const struct task_params *p, u64 *lo, u64 *hi)
{
    struct loop_counts c;
    u64 total[NR_EVENTS] = { 0 }, rmin, rmax, m = (1u << p->random) - 1;
    unsigned i;

    t->counts(&c);
    total[EVENT_VAL - 1] = c.vals;
    total[EVENT_IRE - 1] = c.insns;
    total[EVENT_BRE - 1] = c.branches;
    total[EVENT_CNH - 1] = c.insns + c.branches;
    total[EVENT_RNH - 1] = c.insns + c.branches;
    for (i = 0; i < NR_EVENTS; i++) {
        lo[i] = hi[i] = 0;
        if (!(enabled_events() & BIT(i + 1)) || total[i] <= p->ev[i].counter) {
            continue;
        }
        rmin = p->ev[i].interval & ~m;
        rmax = p->ev[i].interval | m;
        lo[i] = (total[i] - p->ev[i].counter - 1) / (rmax + 1) + 1;
        hi[i] = (total[i] - p->ev[i].counter - 1) / (rmin + 1) + 1;
    }
    lo[NR_EVENTS] = hi[NR_EVENTS] = c.ins;
}

/* The run ended by both tasks' INT TASK_EXIT_VECTOR, flushed at the exit */
static void report_exits(const char *what, int ret, bool both)
{
    const struct task *t;
    unsigned i;
    bool ok = ret == 0;

    for (i = 0; i < 2; i++) {
        t = &tasks[i];
        if (both || t->started) {
            ok = ok && t->done && t->exit_rip == (uintptr_t)t->exit &&
                 t->exit_cb == (uintptr_t)t->cb;
        }
    }
    report(ok, "%s: run - expect a normal end, each task leaving by INT "
           "0x%x at %p / %p with SLWPCB = its LWPCB %p / %p (got %x; %lx, "
           "%lx; %lx, %lx)", what, TASK_EXIT_VECTOR, tasks[0].exit,
           tasks[1].exit, tasks[0].cb, tasks[1].cb, ret, tasks[0].exit_rip,
           tasks[1].exit_rip, tasks[0].exit_cb, tasks[1].exit_cb);
}

/* The solo run of task @i: its records against the loop structure */
static void run_solo(const struct task_params *p, unsigned i)
{
    struct task *t = &tasks[i];
    u64 lo[NR_EVENTS + 1], hi[NR_EVENTS + 1], total = 0;
    char what[16], want[128], got[128];
    struct ring_stats s;
    bool in_bounds = true;
    unsigned k;
    int ret;

    snprintf(what, sizeof(what), "solo %s", t->name);
    ret = run_tasks(p, i, false);
    report_exits(what, ret, false);
    memcpy(t->solo, t->ring, RING_BYTES);
    t->solo_cb = *t->cb;

    report(t->cb->flags == enabled_events(), "task %s: LWPCB.Flags after "
           "LLWPCB - expect %x (got %x)", t->name, enabled_events(),
           t->cb->flags);
    expected_records(t, &p[i], lo, hi);
    ring_stats(t, t->ring, t->cb->head / RECORD_SIZE, &s);
    for (k = 0; k <= NR_EVENTS; k++) {
        in_bounds = in_bounds && s.per_event[k] >= lo[k] &&
                    s.per_event[k] <= hi[k];
        total += s.per_event[k];
    }
    counts_name(want, sizeof(want), lo, hi);
    counts_name(got, sizeof(got), s.per_event, NULL);
    report(in_bounds, "task %s: records per event - expect %s (got %s)",
           t->name, want, got);
    report(t->cb->head == total * RECORD_SIZE && t->cb->missed_events == 0,
           "task %s: BufferHeadOffset, MissedEvents - expect %lu records, "
           "none missed (got head %u, %lu missed)", t->name, total,
           t->cb->head, t->cb->missed_events);
    report_ring_rules(t, t->ring, &s);
}

/* Index of the first record where @a and @b differ, or RING_RECORDS */
static unsigned first_diff(const struct lwp_record *a,
                           const struct lwp_record *b)
{
    const u64 *x = (const u64 *)a, *y = (const u64 *)b;
    unsigned i;

    for (i = 0; i < RING_BYTES / 8 && x[i] == y[i]; i++) {
        continue;
    }
    return i / (RECORD_SIZE / 8);
}

static bool lwpcb_eq(const struct lwpcb *a, const struct lwpcb *b)
{
    const u8 *x = (const u8 *)a, *y = (const u8 *)b;
    unsigned i;

    for (i = 0; i < sizeof(*a) && x[i] == y[i]; i++) {
        continue;
    }
    return i == sizeof(*a);
}

static void report_vs_solo(const struct task *t)
{
    unsigned i = first_diff(t->ring, t->solo);
    const struct lwp_record *g = &t->ring[i], *w = &t->solo[i];
    struct ring_stats s;

    if (i < RING_RECORDS) {
        report(false, "task %s: ring buffer - expect the solo run's, all "
               "%u bytes (record %u differs: expect EventId %u IP %lx Data1 "
               "%x Data2 %lx, got EventId %u IP %lx Data1 %x Data2 %lx)",
               t->name, RING_BYTES, i, w->event_id, w->ip, w->data1,
               w->data2, g->event_id, g->ip, g->data1, g->data2);
    } else {
        report(true, "task %s: ring buffer - expect the solo run's, all %u "
               "bytes (%u records)", t->name, RING_BYTES,
               t->solo_cb.head / RECORD_SIZE);
    }
    report(lwpcb_eq(t->cb, &t->solo_cb), "task %s: LWPCB after the exit's "
           "SLWPCB - expect the solo run's (got head %u, %lu missed, "
           "counters %u %u %u %u %u; solo %u, %lu, %u %u %u %u %u)",
           t->name, t->cb->head, t->cb->missed_events,
           t->cb->event[0].counter, t->cb->event[1].counter,
           t->cb->event[2].counter, t->cb->event[4].counter,
           t->cb->event[5].counter, t->solo_cb.head,
           t->solo_cb.missed_events, t->solo_cb.event[0].counter,
           t->solo_cb.event[1].counter, t->solo_cb.event[2].counter,
           t->solo_cb.event[4].counter, t->solo_cb.event[5].counter);
    ring_stats(t, t->ring, t->cb->head / RECORD_SIZE, &s);
    report_ring_rules(t, t->ring, &s);
}

static bool enough_switches(void)
{
    return tasks[0].switched_out >= MIN_SWITCHES &&
           tasks[1].switched_out >= MIN_SWITCHES &&
           tasks[0].in_body >= MIN_SWITCHES &&
           tasks[1].in_body >= MIN_SWITCHES &&
           sched.live_switches >= 2 * MIN_SWITCHES;
}

/* Every check of report_vs_solo() and of the XSAVE areas passes */
static bool same_as_solo(void)
{
    struct ring_stats s;
    const struct task *t;
    unsigned i;
    bool ok = true;

    for (i = 0; i < 2; i++) {
        t = &tasks[i];
        ring_stats(t, t->ring, t->cb->head / RECORD_SIZE, &s);
        ok = ok && t->done && !t->bad_saves && !t->bad_restores &&
             first_diff(t->ring, t->solo) == RING_RECORDS &&
             lwpcb_eq(t->cb, &t->solo_cb) && !s.bad && !s.foreign;
    }
    return ok;
}

/*
 * Both tasks under the timer, task @first dispatched first; again while
 * the ticks were too few for MIN_SWITCHES and every check passed
 */
static void run_interleaved(const struct task_params *p, unsigned first)
{
    char what[32];
    struct task *t;
    unsigned i, attempt = 0;
    int ret;

    snprintf(what, sizeof(what), "interleaved, %s first",
             tasks[first].name);
    report_prefix_push(what);
    do {
        ret = run_tasks(p, first, true);
        printf("info: %u ticks, %u switches (%u with LWP on in both), "
               "task A switched out %u times (%u in its loop), task B %u "
               "(%u)\n", sched.ticks, sched.switches, sched.live_switches,
               tasks[0].switched_out, tasks[0].in_body,
               tasks[1].switched_out, tasks[1].in_body);
    } while (++attempt < MAX_ATTEMPTS && !enough_switches() && !ret &&
             same_as_solo());
    report_exits("both", ret, true);
    report(enough_switches(),
           "context switches in run %u - expect each task switched out "
           ">= %u times, of which >= %u in its loop, >= %u switches "
           "with LWP on in both (got A %u, %u; B %u, %u; %u)", attempt,
           MIN_SWITCHES, MIN_SWITCHES, 2 * MIN_SWITCHES,
           tasks[0].switched_out, tasks[0].in_body, tasks[1].switched_out,
           tasks[1].in_body, sched.live_switches);
    for (i = 0; i < 2; i++) {
        t = &tasks[i];
        report(!t->bad_saves, "task %s: %u XSAVEs - expect XSTATE_BV[62] "
               "= 1 exactly after its LLWPCB, then LWPCBAddress %p, "
               "BufferBase %p, BufferSize %x, Flags %x (got %u bad, the "
               "first at RIP %lx: XSTATE_BV %lx, LWPCBAddress %lx)",
               t->name, t->preempted, t->cb, t->ring, RING_BYTES,
               enabled_events(), t->bad_saves, t->bad_rip, t->bad_bv,
               t->bad_cb);
        report(!t->bad_restores, "task %s: LWP_CBADDR after each XRSTOR - "
               "expect %p, or 0 before its LLWPCB (got %u bad, the first "
               "%lx)", t->name, t->cb, t->bad_restores, t->bad_msr);
        report_vs_solo(t);
    }
    report_prefix_pop();
}

/* FNV-1a of the first @n records of @ring */
static u64 ring_hash(const struct lwp_record *ring, unsigned n)
{
    const u8 *b = (const u8 *)ring;
    u64 h = 0xcbf29ce484222325ul;
    unsigned i;

    for (i = 0; i < n * RECORD_SIZE; i++) {
        h = (h ^ b[i]) * 0x100000001b3ul;
    }
    return h;
}

static void run_round(const char *name, const struct task_params *p,
                      u64 *hash, const u64 *hash0)
{
    unsigned i;

    report_prefix_push(name);
    for (i = 0; i < 2; i++) {
        run_solo(p, i);
        hash[i] = ring_hash(tasks[i].solo, tasks[i].solo_cb.head / RECORD_SIZE);
        if (hash0) {
            report(hash[i] != hash0[i], "task %s: records with Random %u - "
                   "expect other than with Random 0 (hash %lx)",
                   tasks[i].name, p[i].random, hash[i]);
        }
    }
    run_interleaved(p, 0);
    run_interleaved(p, 1);
    report_prefix_pop();
}

void test_lwp_tasks(void)
{
    /* VAL, IRE, BRE, DME (off), CNH, RNH: interval, counter */
    static const struct task_params round0[2] = {
        { 0, { { 3, 1 }, { 7, 7 }, { 13, 5 }, { 0, 0 }, { 13, 13 },
               { 29, 2 } } },
        { 0, { { 5, 5 }, { 13, 0 }, { 9, 9 }, { 0, 0 }, { 11, 4 },
               { 23, 23 } } },
    };
    /*
     * The same with Random 2 and 3: the randomised intervals of IRE to
     * RNH stay >= 4, above the minimum of 1 (choice 17); LWPVAL's may be
     * 0, its minimum
     */
    static const struct task_params round1[2] = {
        { 2, { { 3, 1 }, { 7, 7 }, { 13, 5 }, { 0, 0 }, { 13, 13 },
               { 29, 2 } } },
        { 3, { { 5, 5 }, { 13, 0 }, { 9, 9 }, { 0, 0 }, { 11, 4 },
               { 23, 23 } } },
    };
    u64 hash0[2], hash1[2];
    u32 size;

    report_prefix_push("tasks");
    if (!(cpuid(0x80000001).c & CPUID_EXT3_LWP) || !enable_osxsave()) {
        report_skip("no LWP: two-task XSAVE/XRSTOR test");
        report_prefix_pop();
        return;
    }
    lwp_edx = lwp_cpuid().d;
    xsetbv_safe(0, XCR0_TASKS);
    size = cpuid_indexed(0xd, 0).b;
    if (size > sizeof(struct xsave_area)) {
        report_skip("XSAVE area of XCR0 %lx is %x bytes, more than %x",
                    XCR0_TASKS, size, XSAVE_SIZE);
        report_prefix_pop();
        return;
    }
    wrmsr(MSR_LWP_CFG, (lwp_edx & ~(1u | LWP_INT)) | LWP_CFG_COREID(CORE_ID));
    memset(&xs_init, 0, sizeof(xs_init));
    xs_init.mxcsr = MXCSR_DEFAULT;      /* XSTATE_BV 0: every component off */

    enable_apic();
    handle_irq(TIMER_VECTOR, timer_handler);
    allow_user_int(TASK_EXIT_VECTOR);
    handle_irq(TASK_EXIT_VECTOR, exit_handler);

    run_round("Random 0", round0, hash0, NULL);
    run_round("Random 2/3", round1, hash1, hash0);

    handle_irq(TIMER_VECTOR, NULL);
    handle_irq(TASK_EXIT_VECTOR, NULL);
    wrmsr(MSR_LWP_CBADDR, 0);
    wrmsr(MSR_LWP_CFG, 0);
    report_prefix_pop();
}
