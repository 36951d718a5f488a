/*
 * System-mode tests of LWP's XSAVE state component 62 in the 64-bit
 * kernel (spec 43724 rev 3.08, sections 7.1-7.5, 8.2.5, 8.4, 8.7; choices
 * 9, 10, 24, 29, 30, 31 of docs/implementation-choices.md):
 *
 * - XSAVE and XSAVEOPT (standard format, component 62 at 0x340, 128
 *   bytes, Figure 7-1): XSTATE_BV[62] is 0 while LWP is disabled, 1 while
 *   it is enabled, and the area holds what the test programmed in the
 *   LWPCB and what a model counted over the CPL3 code (lwp-xsave-user64.S,
 *   whose instruction tables come from the assembler's labels).
 * - XRSTOR's rules (7.4, 7.5, choice 30): LWPCBAddress 0, BufferSize below
 *   the minimum, the head (choice 24), Flags ANDed with LWP_CFG, the
 *   counters clamped to 26 bits, #GP with XCR0[62] = 0, the processor
 *   supplied values, RFBM[62] = 0, no threshold interrupt, and the lazy
 *   re-read of the LWPCB in ring 3 (8.2.5).
 * - XRSTOR at CPL3 (7.4 Check, choices 30, 31; 8.4): areas that fail the
 *   64-bit checks disable LWP without a fault; areas that pass them but
 *   point at supervisor, read-only or not-present pages get a CPL3 #PF
 *   on LWP's first access, and LWP never writes there.
 * - A new thread (XRSTOR of the init state) has LWP off (8.4, 8.7); no
 *   LWP state leaks between two tasks switched with XSAVE/XRSTOR (8.2.1).
 * - The next instruction sees a change of LWP's state: a CPL3 XRSTOR that
 *   enables LWP, WRMSR(LWP_CBADDR, 0) (4.3) and XSETBV clearing XCR0[62]
 *   (4.1, 7.1, 8.2.2).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libcflat.h"
#include "desc.h"
#include "processor.h"
#include "lwp-guest.h"
#include "lwp-xsave.h"

#define CORE_ID             0x2c
#define THR_VECTOR          0x5c        /* LWP_CFG[47:40] */

#define NR_EVENTS           6
#define MAX_RECORDS         64
#define RING_BYTES          (MAX_RECORDS * RECORD_SIZE)

/* LWPCB.Filters NCB (Table 6-2): the sequences have no conditional branch */
#define FILTER_NCB          BIT(28)

struct xs_area {
    u8 legacy[512];
    u64 xstate_bv;
    u64 xcomp_bv;
    u8 header_rsvd[48];
    u8 avx[256];
    struct xs_lwp lwp;                  /* at 0x340 (spec 3.2, choice 9) */
    u8 rest[4096 - 0x3c0];
};

_Static_assert(__builtin_offsetof(struct xs_area, lwp) == 0x340, "LWP area");

static struct xs_area area[3] __attribute__((aligned(64)));
static struct lwpcb cb __attribute__((aligned(64)));
static struct lwp_record ring[MAX_RECORDS] __attribute__((aligned(4096)));
static u32 lwp_edx, min_ring, cb_size;

/* ---- paging: a 2 MiB page split into 4 KiB pages of our own ---- */

#define PTE_P               BIT(0)
#define PTE_W               BIT(1)
#define PTE_U               BIT(2)
#define PTE_PS              BIT(7)
#define PTE_ADDR            0x000ffffffffff000ul
#define PDE_FLAGS           0x1ful      /* P, W, U, PWT, PCD */

#define XS_PAGES            16
#define PG_SUP              0           /* supervisor only */
#define PG_RO               1           /* user, read-only */
#define PG_NP               2           /* not present */
#define ALIAS(k)            (8 + (k))   /* CPL0 view of page k */

#define PF_P                BIT(0)
#define PF_W                BIT(1)
#define PF_U                BIT(2)

static u8 xs_mem[XS_PAGES][4096] __attribute__((aligned(XS_PAGES * 4096)));
static u64 xs_pt[512] __attribute__((aligned(4096)));
static u64 *xs_pde, xs_pde_old;

static unsigned long read_cr3(void)
{
    unsigned long val;

    asm volatile("mov %%cr3, %0" : "=r"(val));
    return val;
}

static void flush_tlb(void)
{
    write_cr3(read_cr3());
}

static u64 *table_of(u64 entry)
{
    return (u64 *)(uintptr_t)(entry & PTE_ADDR);
}

/* Map the 2 MiB page that holds xs_mem with xs_pt, identically */
static bool xs_split(void)
{
    u64 va = (uintptr_t)xs_mem, base, *t;
    unsigned i;

    t = table_of(read_cr3());
    t = table_of(t[(va >> 39) & 511]);
    t = table_of(t[(va >> 30) & 511]);
    xs_pde = &t[(va >> 21) & 511];
    if (!(*xs_pde & PTE_PS)) {
        return false;
    }
    xs_pde_old = *xs_pde;
    base = xs_pde_old & PTE_ADDR & ~0x1ffffful;
    for (i = 0; i < 512; i++) {
        xs_pt[i] = (base + i * 4096) | (xs_pde_old & PDE_FLAGS);
    }
    *xs_pde = (uintptr_t)xs_pt | PTE_P | PTE_W | PTE_U;
    flush_tlb();
    return true;
}

static void xs_unsplit(void)
{
    *xs_pde = xs_pde_old;
    flush_tlb();
}

/* Map page @k of xs_mem to page @phys of xs_mem with @flags */
static void xs_map(unsigned k, unsigned phys, u64 flags)
{
    xs_pt[((uintptr_t)xs_mem[k] >> 12) & 511] =
        (uintptr_t)xs_mem[phys] | flags;
    flush_tlb();
}

/* Page @k as its alias sees it: the CPL0 view */
static u8 *alias(unsigned k)
{
    return xs_mem[ALIAS(k)];
}

static void fill_page(unsigned k)
{
    unsigned i;

    for (i = 0; i < 4096; i++) {
        alias(k)[i] = 0x5a ^ (u8)(i * 7);
    }
}

/* Offset of the first byte that differs from fill_page()'s, or 4096 */
static unsigned page_changed(unsigned k, unsigned from)
{
    unsigned i;

    for (i = from; i < 4096 && alias(k)[i] == (u8)(0x5a ^ (u8)(i * 7)); i++) {
        continue;
    }
    return i;
}

/* ---- CPU helpers ---- */

static int xsave_to(struct xs_area *a, u64 mask)
{
    return asm_safe("xsave (%0)", "r"(a), "a"((u32)mask),
                    "d"((u32)(mask >> 32)));
}

static int xsaveopt_to(struct xs_area *a, u64 mask)
{
    return asm_safe("xsaveopt (%0)", "r"(a), "a"((u32)mask),
                    "d"((u32)(mask >> 32)));
}

static int xrstor_from(struct xs_area *a, u64 mask)
{
    return asm_safe("xrstor (%0)", "r"(a), "a"((u32)mask),
                    "d"((u32)(mask >> 32)));
}

static u64 cbaddr(void)
{
    return rdmsr(MSR_LWP_CBADDR);
}

static void lwp_stop(void)
{
    wrmsr(MSR_LWP_CBADDR, 0);
}

static bool has(u32 features)
{
    return (lwp_edx & features) == features;
}

/* XCR0[62] and LWP_CFG = @features of EDX, CORE_ID, THR_VECTOR */
static void lwp_config(u32 features)
{
    xsetbv_safe(0, XSTATE_FP_SSE_AVX | XSTATE_LWP);
    wrmsr(MSR_LWP_CFG, (features & lwp_edx & ~1u) | LWP_CFG_COREID(CORE_ID) |
          LWP_CFG_VECTOR(THR_VECTOR));
}

static void user_slwpcb(void *arg)
{
    u64 ea;

    asm volatile("slwpcb %0" : "=r"(ea) : : "memory");
    *(u64 *)arg = ea;
}

/* SLWPCB at CPL3; ~0 if the CPL3 code died */
static u64 slwpcb_user(void)
{
    u64 ea = ~0ul;

    if (run_in_user(user_slwpcb, &ea)) {
        return ~0ul;
    }
    return ea;
}

/*
 * A fresh LWPCB at @p and an all-zero @ring of @size bytes: @flags,
 * Threshold = @size (never reached: choice 22), every interval 1 and
 * counter @ctr (spec 6)
 */
static void make_cb(struct lwpcb *p, u32 flags, void *base, u32 size,
                    u32 ctr)
{
    unsigned i;

    memset(p, 0, sizeof(*p));
    p->flags = flags;
    p->buffer_size = size;
    p->buffer_base = (uintptr_t)base;
    p->threshold = size;
    for (i = 0; i < NR_EVENTS; i++) {
        p->event[i].interval = 1;
        p->event[i].counter = ctr;
    }
}

static bool cb_differs(const struct lwpcb *a, const struct lwpcb *b)
{
    const u8 *x = (const u8 *)a, *y = (const u8 *)b;
    unsigned i;

    for (i = 0; i < sizeof(*a) && x[i] == y[i]; i++) {
        continue;
    }
    return i < sizeof(*a);
}

static void clear_ring(void)
{
    memset(ring, 0, sizeof(ring));
}

/* An area whose only component is a copy of @l, with XSTATE_BV = @bv */
static struct xs_area *make_area(unsigned i, const struct xs_lwp *l, u64 bv)
{
    struct xs_area *a = &area[i];

    memset(a, 0, sizeof(*a));
    a->xstate_bv = bv;
    if (l) {
        a->lwp = *l;
    }
    return a;
}

/* Area @i filled with 0xa5 in the LWP component, XSTATE_BV = @bv */
static struct xs_area *dirty_area(unsigned i, u64 bv)
{
    struct xs_area *a = make_area(i, NULL, bv);

    memset(&a->lwp, 0xa5, sizeof(a->lwp));
    return a;
}

/* The area of LWP enabled on cb and ring (1 KiB) with counters @ire, @bre */
static void good_lwp(struct xs_lwp *l, u32 ire, u32 bre)
{
    memset(l, 0, sizeof(*l));
    l->cb_addr = (uintptr_t)&cb;
    l->flags = LWP_IRE | LWP_BRE;
    l->buffer_base = (uintptr_t)ring;
    l->buffer_size = min_ring;
    l->counter[EVENT_IRE - 1] = ire;
    l->counter[EVENT_BRE - 1] = bre;
}

/* ---- the model of IRE and BRE (spec 1.1, 2.2, 2.3; choices 19, 20) ---- */

struct xs_model {
    u32 flags;
    u32 interval[NR_EVENTS];
    int ctr[NR_EVENTS];
    struct lwp_record rec[MAX_RECORDS];
    unsigned n;
};

static void model_init(struct xs_model *m, u32 flags, u32 ire_int, int ire,
                       u32 bre_int, int bre)
{
    memset(m, 0, sizeof(*m));
    m->flags = flags;
    m->interval[EVENT_IRE - 1] = ire_int;
    m->ctr[EVENT_IRE - 1] = ire;
    m->interval[EVENT_BRE - 1] = bre_int;
    m->ctr[EVENT_BRE - 1] = bre;
}

/* Count the instructions [@b, @e): a record when a counter goes below 0 */
static void model_run(struct xs_model *m, const struct xs_insn *b,
                      const struct xs_insn *e)
{
    static const u8 ids[] = { EVENT_IRE, EVENT_BRE };
    struct lwp_record *r;
    unsigned k;
    int *c;

    for (; b < e; b++) {
        for (k = 0; k < ARRAY_SIZE(ids); k++) {
            if (!(m->flags & BIT(ids[k])) ||
                (ids[k] == EVENT_BRE && b->kind == XS_INSN)) {
                continue;
            }
            c = &m->ctr[ids[k] - 1];
            if (--*c >= 0 || m->n >= MAX_RECORDS) {
                continue;
            }
            *c = m->interval[ids[k] - 1];
            r = &m->rec[m->n++];
            memset(r, 0, sizeof(*r));
            r->event_id = ids[k];
            r->core_id = CORE_ID;
            r->ip = b->ip;
            if (ids[k] == EVENT_BRE) {
                r->flags = BRE_FLAG_TKN;
                r->data2 = b->next;
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

/*
 * The records in @r (up to @head) against the model; the slots after the
 * model's records must still be zero
 */
static void report_records(const char *what, const struct lwp_record *r,
                           unsigned slots, u32 head, const struct xs_model *m)
{
    static const struct lwp_record zero;
    unsigned i;

    for (i = 0; i < m->n && record_eq(&r[i], &m->rec[i]); i++) {
        continue;
    }
    if (i < m->n) {
        report(false, "%s: record %u of %u - expect EventId %u, IP %lx, "
               "Flags %x, Target %lx (got EventId %u, CoreId %x, IP %lx, "
               "Flags %x, Target %lx)", what, i, m->n, m->rec[i].event_id,
               m->rec[i].ip, m->rec[i].flags, m->rec[i].data2, r[i].event_id,
               r[i].core_id, r[i].ip, r[i].flags, r[i].data2);
        return;
    }
    for (; i < slots && record_eq(&r[i], &zero); i++) {
        continue;
    }
    report(i == slots && head == m->n * RECORD_SIZE,
           "%s: expect the model's %u records (EventId, CoreId %x, IP, "
           "Target) and head %u, then %u empty slots (got head %u, %u empty "
           "slots)", what, m->n, CORE_ID, m->n * RECORD_SIZE,
           slots - m->n, head, i - m->n);
}

/* ---- 1: XSAVE and XSAVEOPT (7.2, 7.3; choices 9, 10, 29) ---- */

static bool has_xsaveopt(void)
{
    return cpuid_indexed(0xd, 1).a & BIT(0);
}

static void test_xsave_disabled(void)
{
    struct xs_area *a;
    int vec;

    lwp_stop();
    a = dirty_area(0, XSTATE_LWP);
    vec = xsave_to(a, XSTATE_LWP);
    report(!vec && !(a->xstate_bv & XSTATE_LWP), "LWP_CBADDR = 0: XSAVE - "
           "expect XSTATE_BV[62] = 0 (got vector %d, XSTATE_BV %lx)", vec,
           a->xstate_bv);
    if (!has_xsaveopt()) {
        report_skip("CPUID 0xD.1 EAX[0] = 0: XSAVEOPT");
        return;
    }
    a = dirty_area(1, XSTATE_LWP);
    vec = xsaveopt_to(a, XSTATE_LWP);
    report(!vec && !(a->xstate_bv & XSTATE_LWP), "LWP_CBADDR = 0: XSAVEOPT "
           "- expect XSTATE_BV[62] = 0 (got vector %d, XSTATE_BV %lx)", vec,
           a->xstate_bv);
}

/* Compare the saved component with @want, field by field */
static void report_area(const char *what, const struct xs_area *a,
                        const struct xs_lwp *want)
{
    const struct xs_lwp *l = &a->lwp;
    unsigned i, bad_ctr = 16;
    bool saved0 = true;

    for (i = 0; i < 32; i++) {
        saved0 &= l->saved[i] == want->saved[i];
    }
    for (i = 0; i < 16 && bad_ctr == 16; i++) {
        if (l->counter[i] != want->counter[i]) {
            bad_ctr = i;
        }
    }
    report(a->xstate_bv & XSTATE_LWP, "%s: XSTATE_BV[62] - expect 1 "
           "(got %lx)", what, a->xstate_bv);
    report(l->cb_addr == want->cb_addr && l->flags == want->flags &&
           l->head == want->head, "%s: LWPCBAddress, Flags, BufferHeadOffset "
           "- expect %lx, %x, %u (got %lx, %x, %u)", what, want->cb_addr,
           want->flags, want->head, l->cb_addr, l->flags, l->head);
    report(l->buffer_base == want->buffer_base &&
           l->buffer_size == want->buffer_size &&
           l->filters == want->filters, "%s: BufferBase, BufferSize, "
           "Filters - expect %lx, %x, %x (got %lx, %x, %x)", what,
           want->buffer_base, want->buffer_size, want->filters,
           l->buffer_base, l->buffer_size, l->filters);
    report(saved0, "%s: SavedEventRecord (bytes 32-63) - expect EventId %u, "
           "IP %lx, bytes 24-31 0 (got EventId %u, IP %lx, bytes 24-31 "
           "%lx)", what, want->saved[0], *(const u64 *)&want->saved[8],
           l->saved[0], *(const u64 *)&l->saved[8],
           *(const u64 *)&l->saved[24]);
    report(bad_ctr == 16, "%s: EventCounter1-6 and reserved bytes 88-127 - "
           "expect %x %x %x %x %x %x, then 0 (first difference: dword %u, "
           "got %x)", what, want->counter[0], want->counter[1],
           want->counter[2], want->counter[3], want->counter[4],
           want->counter[5], bad_ctr, bad_ctr < 16 ? l->counter[bad_ctr] : 0);
}

static void test_xsave_enabled(void)
{
    u32 events = (LWP_VAL | LWP_IRE | LWP_BRE) & lwp_edx;
    static struct xs_model m;
    struct xs_lwp want;
    struct xs_area *a;
    int ret, vec;

    report_prefix_push("XSAVE enabled");
    lwp_config(~0u);
    make_cb(&cb, events | (LWP_INT & lwp_edx), ring, RING_BYTES, 0);
    cb.filters = FILTER_NCB;
    cb.event[EVENT_VAL - 1].interval = 7;
    cb.event[EVENT_VAL - 1].counter = 9;
    cb.event[EVENT_IRE - 1].interval = 4;
    cb.event[EVENT_IRE - 1].counter = 2;
    clear_ring();
    model_init(&m, events, 4, 2, 1, 0);
    model_run(&m, xs_seq_a, xs_seq_a_end);

    ret = run_in_user(xs_llwpcb_user, &cb);
    report(ret == 0, "LLWPCB and %u instructions at CPL3 - expect a normal "
           "return (got %x)", (unsigned)(xs_seq_a_end - xs_seq_a), ret);
    report_records("ring", ring, MAX_RECORDS, m.n * RECORD_SIZE, &m);

    memset(&want, 0, sizeof(want));
    want.cb_addr = (uintptr_t)&cb;
    want.flags = events;                /* no INT (choice 29) */
    want.head = m.n * RECORD_SIZE;
    want.buffer_base = (uintptr_t)ring;
    want.buffer_size = RING_BYTES;
    want.filters = FILTER_NCB;
    want.counter[EVENT_VAL - 1] = events & LWP_VAL ? 9 : 0;
    want.counter[EVENT_IRE - 1] = m.ctr[EVENT_IRE - 1];
    want.counter[EVENT_BRE - 1] = m.ctr[EVENT_BRE - 1];

    a = dirty_area(0, 0);
    vec = xsave_to(a, XSTATE_LWP);
    report(!vec, "XSAVE with EDX:EAX = 1<<62 - expect no fault (got %d)", vec);
    report_area("XSAVE", a, &want);
    if (has_xsaveopt()) {
        a = dirty_area(1, 0);
        vec = xsaveopt_to(a, XSTATE_LWP);
        report(!vec, "XSAVEOPT - expect no fault (got %d)", vec);
        report_area("XSAVEOPT", a, &want);
    } else {
        report_skip("CPUID 0xD.1 EAX[0] = 0: XSAVEOPT");
    }
    lwp_stop();
    report_prefix_pop();
}

/*
 * A pending record (7.2 SavedEventRecord, choices 25, 29): the ring is in
 * a read-only page, so the first record cannot be stored
 */
static void test_xsave_pending(void)
{
    u8 *ro = xs_mem[PG_RO];
    struct xs_user u;
    struct xs_area *a;
    u64 want_ip = xs_seq_a[0].ip, cr2, got_ip;
    unsigned off;
    int ret;

    report_prefix_push("pending record");
    lwp_config(~0u);
    xs_map(PG_RO, PG_RO, PTE_P | PTE_U);
    fill_page(PG_RO);
    make_cb(&cb, LWP_IRE, ro, min_ring, 0);
    cb.event[EVENT_IRE - 1].interval = 5;
    ret = run_in_user(xs_llwpcb_user, &cb);
    cr2 = read_cr2();
    report(ret == (USER_EXCEPTION | PF_VECTOR) &&
           user_ex_regs.error_code == (PF_P | PF_W | PF_U) &&
           cr2 == (uintptr_t)ro && user_ex_regs.rip == xs_seq_a[0].next,
           "IRE counter 0, ring in a user read-only page - expect #PF "
           "(error code 7, CR2 %p) before the instruction after the first "
           "one, %lx (got %x, error code %lx, CR2 %lx, RIP %lx)", ro,
           xs_seq_a[0].next, ret, user_ex_regs.error_code, cr2,
           user_ex_regs.rip);
    /* the trace gives the failed store's range and the #PF's error code */
    printf("trace-expect: lwp_fault cpu 0 0x%lx len 32 write 1 error code "
           "0x%lx: raised\n", cr2, user_ex_regs.error_code);
    off = page_changed(PG_RO, 0);
    report(off == 4096, "read-only ring page - expect unchanged (got a "
           "change at offset %u)", off);

    a = dirty_area(0, 0);
    xsave_to(a, XSTATE_LWP);
    got_ip = *(u64 *)&a->lwp.saved[8];
    report((a->xstate_bv & XSTATE_LWP) && a->lwp.saved[0] == EVENT_IRE &&
           a->lwp.saved[1] == CORE_ID && *(u16 *)&a->lwp.saved[2] == 0 &&
           *(u32 *)&a->lwp.saved[4] == 0 && got_ip == want_ip &&
           *(u64 *)&a->lwp.saved[16] == 0 && *(u64 *)&a->lwp.saved[24] == 0,
           "XSAVE - expect XSTATE_BV[62], SavedEventRecord EventId 2, CoreId "
           "%x, Flags 0, Data1 0, IP %lx, bytes 16-31 0 (got %lx, %u, %x, "
           "%x, %x, %lx, %lx, %lx)", CORE_ID, want_ip,
           a->xstate_bv & XSTATE_LWP, a->lwp.saved[0], a->lwp.saved[1],
           *(u16 *)&a->lwp.saved[2], *(u32 *)&a->lwp.saved[4], got_ip,
           *(u64 *)&a->lwp.saved[16], *(u64 *)&a->lwp.saved[24]);
    report(a->lwp.head == 0 && a->lwp.counter[EVENT_IRE - 1] == 0xffffffff,
           "XSAVE - expect head 0, EventCounter2 -1: the counter counts on "
           "below zero while the record is pending (choice 25) (got %u, %x)",
           a->lwp.head, a->lwp.counter[EVENT_IRE - 1]);

    /* 7.4 step 3: XRSTOR at CPL3 stores it once the page is writable */
    lwp_stop();
    xs_map(PG_RO, PG_RO, PTE_P | PTE_W | PTE_U);
    memset(ro, 0, 4096);
    u = (struct xs_user){ .area = (uintptr_t)a, .mask_hi = 1u << 30 };
    ret = run_in_user(xs_xrstor_user, &u);
    report(ret == 0 && ((struct lwp_record *)ro)->event_id == EVENT_IRE &&
           ((struct lwp_record *)ro)->ip == want_ip,
           "XRSTOR of that area at CPL3, ring writable - expect the pending "
           "record first in the ring: EventId 2, IP %lx (got %x, %u, %lx)",
           want_ip, ret, ((struct lwp_record *)ro)->event_id,
           ((struct lwp_record *)ro)->ip);
    lwp_stop();
    report_prefix_pop();
}

/* ---- 2: XRSTOR's rules at CPL0 (7.4, 7.5; choices 24, 30) ---- */

/*
 * XRSTOR @in at CPL0, then XSAVE into @out.  Returns LWP_CBADDR after the
 * XRSTOR; *@bv is XSTATE_BV[62] of the XSAVE.
 */
static u64 restore_save(const struct xs_lwp *in, struct xs_lwp *out,
                        bool *bv)
{
    struct xs_area *a;
    u64 addr;

    lwp_stop();
    a = make_area(0, in, XSTATE_LWP);
    if (xrstor_from(a, XSTATE_LWP)) {
        *bv = false;
        return ~0ul;
    }
    addr = cbaddr();
    a = dirty_area(1, 0);
    xsave_to(a, XSTATE_LWP);
    *out = a->lwp;
    *bv = a->xstate_bv & XSTATE_LWP;
    lwp_stop();
    return addr;
}

static void test_xrstor_rules(void)
{
    static const struct {
        u32 in, out;
    } heads[] = {                       /* with BufferSize 1024 */
        { 1024 - 32, 1024 - 32 },
        { 1024 - 31, 0 },               /* > BufferSize - 32 (choice 24) */
        { 1024 - 33, 1024 - 64 },
        { 1024, 0 },
        { 0x45, 0x40 },
        { 0xffffffff, 0 },
    };
    static const struct {
        u32 in, out;
    } ctrs[] = {                        /* 26-bit signed (choice 30) */
        { 0x01ffffff, 0x01ffffff },
        { 0x02000000, 0x01ffffff },
        { 0x7fffffff, 0x01ffffff },
        { 0x80000000, 0xfe000000 },
        { 0xfe000000, 0xfe000000 },
        { 0xfdffffff, 0xfe000000 },
        { 0xfffffffb, 0xfffffffb },
    };
    struct xs_lwp in, out;
    unsigned i;
    bool bv;
    u64 got;
    int vec;

    report_prefix_push("XRSTOR CPL0");
    lwp_config(~0u);
    make_cb(&cb, LWP_IRE | LWP_BRE, ring, min_ring, 0);

    good_lwp(&in, 10, 20);
    got = restore_save(&in, &out, &bv);
    report(got == (uintptr_t)&cb && bv && out.cb_addr == in.cb_addr &&
           out.flags == in.flags && out.head == 0 &&
           out.buffer_base == in.buffer_base &&
           out.buffer_size == in.buffer_size &&
           out.counter[EVENT_IRE - 1] == 10 &&
           out.counter[EVENT_BRE - 1] == 20,
           "valid area - expect LWP_CBADDR %p, XSAVE gives it back (got "
           "%lx, XSTATE_BV[62] %d, LWPCBAddress %lx, Flags %x, size %u, "
           "counters %u %u)", &cb, got, bv, out.cb_addr, out.flags,
           out.buffer_size, out.counter[EVENT_IRE - 1],
           out.counter[EVENT_BRE - 1]);

    in.cb_addr = 0;
    got = restore_save(&in, &out, &bv);
    report(got == 0 && !bv, "LWPCBAddress 0 - expect LWP disabled: "
           "LWP_CBADDR 0, XSAVE XSTATE_BV[62] 0 (got %lx, %d)", got, bv);

    good_lwp(&in, 10, 20);
    in.buffer_size = min_ring - RECORD_SIZE;
    got = restore_save(&in, &out, &bv);
    report(got == 0 && !bv, "BufferSize %u, below the minimum %u - expect "
           "LWP disabled (got LWP_CBADDR %lx, XSTATE_BV[62] %d)",
           in.buffer_size, min_ring, got, bv);
    in.buffer_size = min_ring + 17;
    got = restore_save(&in, &out, &bv);
    report(got == (uintptr_t)&cb && out.buffer_size == min_ring,
           "BufferSize %u - expect enabled, rounded down to %u (got "
           "LWP_CBADDR %lx, %u)", in.buffer_size, min_ring, got,
           out.buffer_size);

    for (i = 0; i < ARRAY_SIZE(heads); i++) {
        good_lwp(&in, 10, 20);
        in.buffer_size = 1024;
        in.head = heads[i].in;
        got = restore_save(&in, &out, &bv);
        report(got == (uintptr_t)&cb && out.head == heads[i].out,
               "BufferSize 1024, BufferHeadOffset %u - expect %u (got "
               "LWP_CBADDR %lx, head %u)", heads[i].in, heads[i].out, got,
               out.head);
    }

    for (i = 0; i < ARRAY_SIZE(ctrs); i++) {
        good_lwp(&in, ctrs[i].in, 20);
        got = restore_save(&in, &out, &bv);
        report(got == (uintptr_t)&cb &&
               out.counter[EVENT_IRE - 1] == ctrs[i].out,
               "EventCounter2 %08x - expect %08x (got %08x)", ctrs[i].in,
               ctrs[i].out, out.counter[EVENT_IRE - 1]);
    }

    /* Flags AND LWP_CFG: IRE only available */
    lwp_config(LWP_IRE | LWP_INT);
    good_lwp(&in, 10, 20);
    in.flags = 0xffffffff;
    got = restore_save(&in, &out, &bv);
    report(got == (uintptr_t)&cb && out.flags == LWP_IRE &&
           out.counter[EVENT_IRE - 1] == 10 && out.counter[EVENT_BRE - 1] == 0,
           "Flags ffffffff, LWP_CFG = IRE | INT - expect Flags %x, "
           "EventCounter2 10, EventCounter3 0 (got %x, %u, %u)", LWP_IRE,
           out.flags, out.counter[EVENT_IRE - 1],
           out.counter[EVENT_BRE - 1]);
    lwp_config(~0u);

    /* 7.5: XSTATE_BV[62] = 0 with RFBM[62] = 1 disables LWP */
    good_lwp(&in, 10, 20);
    lwp_stop();
    xrstor_from(make_area(0, &in, XSTATE_LWP), XSTATE_LWP);
    got = cbaddr();
    vec = xrstor_from(make_area(1, &in, 0), XSTATE_LWP);
    report(got == (uintptr_t)&cb && !vec && cbaddr() == 0,
           "LWP enabled, XRSTOR with XSTATE_BV[62] = 0, RFBM[62] = 1 - "
           "expect the processor supplied values: LWP_CBADDR 0 (got %lx "
           "before, vector %d, %lx after)", got, vec, cbaddr());

    /* 7.4: RFBM[62] = 0 leaves LWP alone */
    xrstor_from(make_area(0, &in, XSTATE_LWP), XSTATE_LWP);
    good_lwp(&out, 77, 88);
    out.head = 64;
    vec = xrstor_from(make_area(1, &out, XSTATE_LWP), 0x1);
    xsave_to(dirty_area(2, 0), XSTATE_LWP);
    out = area[2].lwp;
    report(!vec && cbaddr() == (uintptr_t)&cb && out.head == 0 &&
           out.counter[EVENT_IRE - 1] == 10 && out.counter[EVENT_BRE - 1] == 20,
           "LWP enabled (counters 10, 20), XRSTOR of other LWP state with "
           "EDX:EAX = 1 - expect LWP unchanged: LWP_CBADDR %p, head 0, "
           "counters 10, 20 (got vector %d, %lx, %u, %u, %u)", &cb, vec,
           cbaddr(), out.head, out.counter[EVENT_IRE - 1],
           out.counter[EVENT_BRE - 1]);
    lwp_stop();

    /* 7.4: XSTATE_BV[62] = 1 while XCR0[62] = 0 */
    xsetbv_safe(0, XSTATE_FP_SSE_AVX);
    vec = xrstor_from(make_area(0, &in, XSTATE_LWP), ~0ul);
    report(vec == GP_VECTOR && exception_error_code == 0 && cbaddr() == 0,
           "XCR0 = 7, XRSTOR with XSTATE_BV[62] = 1 - expect #GP(0), LWP "
           "still disabled (got vector %d, error code %lx, LWP_CBADDR %lx)",
           vec, exception_error_code, cbaddr());
    lwp_config(~0u);

    /* At CPL0 the addresses are taken as they are (7.4, choice 30) */
    good_lwp(&in, 10, 20);
    in.cb_addr = 0x0000800000000000ul;
    got = restore_save(&in, &out, &bv);
    report(got == in.cb_addr, "CPL0, non-canonical LWPCBAddress %lx - "
           "expect it loaded unchecked (got LWP_CBADDR %lx)", in.cb_addr, got);
    report_prefix_pop();
}

/* ---- 2, 3: XRSTOR at CPL3 (7.4 Check; choices 30, 31; 8.4) ---- */

static int xrstor_user(struct xs_area *a, struct xs_user *u)
{
    *u = (struct xs_user){ .area = (uintptr_t)a, .mask_hi = 1u << 30,
                           .out = ~0ul };
    return run_in_user(xs_xrstor_user, u);
}

static void test_xrstor_user(void)
{
    static const struct {
        const char *name;
        u64 cb_addr, base;
        u32 size;
    } bad[] = {
        { "LWPCBAddress non-canonical", 0x0000800000000000ul, 0, 0 },
        { "LWPCB wraps past 2^64", 0xffffffffffffffc0ul, 0, 0 },
        { "BufferBase non-canonical", 0, 0xffff000000000000ul, 0 },
        { "ring's last byte non-canonical", 0, 0x00007ffffffffe00ul, 1024 },
        { "ring wraps past 2^64", 0, 0xfffffffffffffe00ul, 1024 },
        { "BufferSize below the minimum", 0, 0, 1 },
    };
    static struct xs_model m;
    static struct lwpcb snap;
    struct xs_lwp in;
    struct xs_user u;
    unsigned i, j;
    int ret;

    report_prefix_push("XRSTOR CPL3");
    lwp_config(~0u);

    /* 5a: the first record names the instruction after the XRSTOR */
    make_cb(&cb, LWP_IRE, ring, min_ring, 0);
    cb.event[EVENT_IRE - 1].interval = 2;
    clear_ring();
    good_lwp(&in, 0, 0);
    in.flags = LWP_IRE;
    model_init(&m, LWP_IRE, 2, 0, 0, 0);
    model_run(&m, xs_seq_b, xs_seq_b_end);
    ret = xrstor_user(make_area(0, &in, XSTATE_LWP), &u);
    report(ret == 0 && u.out == (uintptr_t)&cb, "valid area, EventCounter2 "
           "0 - expect LWP enabled, SLWPCB %p (got %x, %lx)", &cb, ret, u.out);
    report(ring[0].event_id == EVENT_IRE && ring[0].ip ==
           (uintptr_t)xs_xrstor_next, "first record - expect IRE at %p, the "
           "instruction after the XRSTOR (got EventId %u, IP %lx)",
           xs_xrstor_next, ring[0].event_id, ring[0].ip);
    report_records("ring, interval 2 from the LWPCB", ring, MAX_RECORDS,
                   cb.head, &m);
    lwp_stop();

    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        make_cb(&cb, LWP_IRE, ring, min_ring, 0);
        clear_ring();
        good_lwp(&in, 0, 0);
        if (bad[i].cb_addr) {
            in.cb_addr = bad[i].cb_addr;
        }
        if (bad[i].base) {
            in.buffer_base = bad[i].base;
        }
        if (bad[i].size) {
            in.buffer_size = bad[i].size == 1 ? min_ring - RECORD_SIZE :
                             bad[i].size;
        }
        snap = cb;
        ret = xrstor_user(make_area(0, &in, XSTATE_LWP), &u);
        for (j = 0; j < MAX_RECORDS && !ring[j].event_id; j++) {
            continue;
        }
        report(ret == 0 && u.out == 0 && cbaddr() == 0 &&
               !cb_differs(&snap, &cb) && j == MAX_RECORDS,
               "%s - expect no fault, LWP disabled (SLWPCB 0), LWPCB and "
               "ring untouched (got %x, SLWPCB %lx, LWP_CBADDR %lx, LWPCB "
               "%s, record in slot %u)", bad[i].name, ret, u.out, cbaddr(),
               cb_differs(&snap, &cb) ? "changed" : "same", j);
        lwp_stop();
    }
    report_prefix_pop();
}

/*
 * Areas that pass Check but point at pages CPL3 cannot write: LWP's own
 * accesses use CPL3 permissions (choices 31, 34), so the first one is a
 * #PF at CPL3, and nothing is written there (8.4)
 */
static void test_xrstor_pages(void)
{
    static const struct {
        const char *name;
        bool lwpcb;                     /* the LWPCB, else the ring */
        unsigned page;
        u64 pte;
        u32 err_mask, err;
    } tc[] = {
        { "ring in a supervisor page", false, PG_SUP, PTE_P | PTE_W,
          PF_P | PF_W | PF_U, PF_P | PF_W | PF_U },
        { "ring in a read-only page", false, PG_RO, PTE_P | PTE_U,
          PF_P | PF_W | PF_U, PF_P | PF_W | PF_U },
        { "ring in a not-present page", false, PG_NP, 0,
          PF_P | PF_W | PF_U, PF_W | PF_U },
        { "LWPCB in a supervisor page", true, PG_SUP, PTE_P | PTE_W,
          PF_P | PF_U, PF_P | PF_U },
        { "LWPCB in a read-only page", true, PG_RO, PTE_P | PTE_U,
          PF_P | PF_W | PF_U, PF_P | PF_W | PF_U },
        { "LWPCB in a not-present page", true, PG_NP, 0,
          PF_P | PF_U, PF_U },
    };
    static struct lwpcb snap;
    struct xs_lwp in;
    struct xs_user u;
    u64 target, len, cr2, rip, addr;
    unsigned i, j, off;
    bool rip_ok;
    int ret;

    report_prefix_push("XRSTOR CPL3 pages");
    lwp_config(~0u);
    for (i = 0; i < ARRAY_SIZE(tc); i++) {
        unsigned k = tc[i].page;

        xs_map(k, k, PTE_P | PTE_W | PTE_U);
        fill_page(k);
        clear_ring();
        good_lwp(&in, 0, 0);
        in.flags = LWP_IRE;
        target = (uintptr_t)xs_mem[k];
        if (tc[i].lwpcb) {
            make_cb(&snap, LWP_IRE, ring, min_ring, 0);
            memcpy(alias(k), &snap, sizeof(snap));
            in.cb_addr = target;
            len = cb_size;
        } else {
            make_cb(&cb, LWP_IRE, xs_mem[k], min_ring, 0);
            snap = cb;
            in.buffer_base = target;
            len = min_ring;
        }
        xs_map(k, k, tc[i].pte);
        ret = xrstor_user(make_area(0, &in, XSTATE_LWP), &u);
        cr2 = read_cr2();
        rip = user_ex_regs.rip;
        addr = cbaddr();
        lwp_stop();
        /*
         * A record is due at the first instruction after the XRSTOR; the
         * LWPCB is read before the next CPL3 use (choice 30)
         */
        rip_ok = rip == xs_seq_b[0].next ||
                 (tc[i].lwpcb && rip == (uintptr_t)xs_xrstor_next);
        report(ret == (USER_EXCEPTION | PF_VECTOR) &&
               (user_ex_regs.error_code & tc[i].err_mask) ==
               tc[i].err && cr2 >= target && cr2 < target + len && rip_ok,
               "%s: XRSTOR at CPL3, then a record due - expect no fault at "
               "the XRSTOR, #PF with error code %x (bits %x) in %lx-%lx at "
               "%lx%s (got %x, error code %lx, CR2 %lx, RIP %lx)",
               tc[i].name, tc[i].err, tc[i].err_mask, target,
               target + len - 1, xs_seq_b[0].next,
               tc[i].lwpcb ? " or the one before" : "", ret,
               user_ex_regs.error_code, cr2, rip);
        report(addr == in.cb_addr, "%s: LWP_CBADDR after the #PF - expect "
               "%lx, Check passed (choice 31) (got %lx)", tc[i].name,
               in.cb_addr, addr);
        off = page_changed(k, tc[i].lwpcb ? sizeof(snap) : 0);
        for (j = 0; j < MAX_RECORDS && !ring[j].event_id; j++) {
            continue;
        }
        if (tc[i].lwpcb) {
            report(off == 4096 && !cb_differs(&snap, (void *)alias(k)) &&
                   j == MAX_RECORDS, "%s: expect the page, the LWPCB and "
                   "the ring unchanged (got page change at %u, LWPCB %s, "
                   "record in slot %u)", tc[i].name, off,
                   cb_differs(&snap, (void *)alias(k)) ? "changed" : "same",
                   j);
        } else {
            report(off == 4096 && !cb_differs(&snap, &cb), "%s: expect the "
                   "page and the LWPCB unchanged (got page change at %u, "
                   "LWPCB %s)", tc[i].name, off,
                   cb_differs(&snap, &cb) ? "changed" : "same");
        }
        xs_map(k, k, PTE_P | PTE_W | PTE_U);
    }
    report_prefix_pop();
}

/* ---- 2: no threshold interrupt from XRSTOR; lazy re-read (7.4, 8.2.5) ---- */

static struct {
    volatile unsigned count;            /* volatile: the handler's */
    unsigned long rip[8];
} thr;

static void thr_handler(struct ex_regs *regs)
{
    if (thr.count < ARRAY_SIZE(thr.rip)) {
        thr.rip[thr.count] = regs->rip;
    }
    thr.count++;
    apic_write(APIC_EOI, 0);
}

static void test_xrstor_threshold(void)
{
    struct xs_area *a;
    struct xs_user u;
    const struct lwp_record *r = &ring[512 / RECORD_SIZE];
    int ret;

    report_prefix_push("XRSTOR threshold");
    if (!has(LWP_INT)) {
        report_skip("CPUID 0x8000001C EDX %x lacks LwpInt", lwp_edx);
        report_prefix_pop();
        return;
    }
    lwp_config(~0u);
    enable_apic();
    handle_irq(THR_VECTOR, thr_handler);

    /* Threshold = BufferSize: never reached (choice 22) */
    make_cb(&cb, LWP_IRE | LWP_INT, ring, min_ring, 1000);
    cb.event[EVENT_IRE - 1].interval = 1000;
    clear_ring();
    ret = run_in_user(xs_llwpcb_user, &cb);
    a = dirty_area(0, 0);
    xsave_to(a, XSTATE_LWP);
    lwp_stop();
    report(ret == 0 && (a->xstate_bv & XSTATE_LWP) && a->lwp.head == 0,
           "LLWPCB, Threshold = BufferSize, no record - expect XSAVE of LWP "
           "state with head 0 (got %x, %lx, %u)", ret, a->xstate_bv,
           a->lwp.head);

    /* head 512 restored; Threshold 64 only in the LWPCB (8.2.5) */
    a->lwp.head = 512;
    cb.threshold = 64;
    memset(&thr, 0, sizeof(thr));
    u = (struct xs_user){ .area = (uintptr_t)a, .mask_hi = 1u << 30 };
    ret = run_in_user_irq(xs_thr_user, &u);
    lwp_stop();
    report(ret == 0 && thr.count == 1 &&
           thr.rip[0] == (uintptr_t)xs_thr_ins_next,
           "XRSTOR of head 512 at CPL3 with IF = 1, LWPCB Threshold 64 and "
           "INT, %u NOPs, LWPINS - expect no interrupt from the XRSTOR, one "
           "after the LWPINS, at %p (got %x, %u interrupts, first at %lx)",
           XS_THR_NOPS, xs_thr_ins_next, ret, thr.count, thr.rip[0]);
    report(r->event_id == EVENT_INS && r->ip == (uintptr_t)xs_thr_ins,
           "LWPINS record - expect at offset 512, the restored head (got "
           "EventId %u, IP %lx)", r->event_id, r->ip);
    handle_irq(THR_VECTOR, NULL);
    report_prefix_pop();
}

static void test_xrstor_lazy(void)
{
    static struct xs_model m;
    struct xs_area *a;
    struct xs_user u;
    int ret;

    report_prefix_push("XRSTOR lazy");
    lwp_config(~0u);
    make_cb(&cb, LWP_IRE, ring, min_ring, 30);
    cb.event[EVENT_IRE - 1].interval = 9;
    clear_ring();
    model_init(&m, LWP_IRE, 9, 30, 0, 0);
    model_run(&m, xs_seq_a, xs_seq_a_end);
    ret = run_in_user(xs_llwpcb_user, &cb);
    a = dirty_area(0, 0);
    xsave_to(a, XSTATE_LWP);
    lwp_stop();
    report(ret == 0 && a->lwp.counter[EVENT_IRE - 1] == (u32)m.ctr[1] &&
           a->lwp.head == m.n * RECORD_SIZE, "interval 9, counter 30, %u "
           "instructions - expect XSAVE EventCounter2 %d, head %u (got %x, "
           "%d, %u)", (unsigned)(xs_seq_a_end - xs_seq_a), m.ctr[1],
           m.n * RECORD_SIZE, ret, a->lwp.counter[EVENT_IRE - 1],
           a->lwp.head);

    /* The new interval is in the LWPCB only */
    cb.event[EVENT_IRE - 1].interval = 2;
    m.interval[EVENT_IRE - 1] = 2;
    model_run(&m, xs_seq_b, xs_seq_b_end);
    ret = xrstor_user(a, &u);
    report(ret == 0 && u.out == (uintptr_t)&cb, "XRSTOR at CPL3 after "
           "EventInterval2 := 2 in the LWPCB - expect LWP enabled (got %x, "
           "SLWPCB %lx)", ret, u.out);
    report_records("records after the XRSTOR, interval 2", ring, MAX_RECORDS,
                   cb.head, &m);
    lwp_stop();
    report_prefix_pop();
}

/* ---- 5b, 5c: the next instruction sees the change ---- */

enum { CTL_NONE, CTL_WRMSR, CTL_XSETBV, CTL_TO_B, CTL_TO_A };
static volatile int ctl_action;         /* volatile: read by a handler */

static void switch_to_a(void);
static void switch_to_b(void);

static void ctl_handler(struct ex_regs *regs)
{
    (void)regs;
    switch (ctl_action) {
    case CTL_WRMSR:
        wrmsr(MSR_LWP_CBADDR, 0);
        break;
    case CTL_XSETBV:
        xsetbv_safe(0, XSTATE_FP_SSE_AVX);
        break;
    case CTL_TO_B:
        switch_to_b();
        break;
    case CTL_TO_A:
        switch_to_a();
        break;
    }
}

/* LLWPCB, seq c1, INT XS_CTL_VECTOR doing @action, seq c2 */
static void run_ctl(int action, struct xs_model *m, bool c2_counted)
{
    int ret;

    lwp_config(~0u);
    make_cb(&cb, LWP_IRE, ring, min_ring, 0);
    clear_ring();
    model_init(m, LWP_IRE, 1, 0, 0, 0);
    model_run(m, xs_seq_c1, xs_seq_c1_end);
    if (c2_counted) {
        model_run(m, xs_seq_c2, xs_seq_c2_end);
    }
    ctl_action = action;
    ret = run_in_user(xs_ctl_user, &cb);
    ctl_action = CTL_NONE;
    report(ret == 0, "CPL3 run - expect a normal return (got %x)", ret);
}

static void test_ctl(void)
{
    static struct xs_model m;
    u64 xcr0, addr, ea;
    u64 out = ~0ul;
    int ret;

    report_prefix_push("next instruction");
    run_ctl(CTL_NONE, &m, true);
    report_records("LWP on across INT n", ring, MAX_RECORDS, cb.head, &m);
    lwp_stop();

    run_ctl(CTL_WRMSR, &m, false);
    addr = cbaddr();
    report_records("WRMSR(LWP_CBADDR, 0) in the INT n handler", ring,
                   MAX_RECORDS, cb.head, &m);
    ea = slwpcb_user();
    report(addr == 0 && ea == 0, "after WRMSR(LWP_CBADDR, 0) - expect "
           "LWP_CBADDR 0, SLWPCB at CPL3 0 (got %lx, %lx)", addr, ea);

    run_ctl(CTL_XSETBV, &m, false);
    xcr0 = xgetbv(0);
    report_records("XSETBV clearing XCR0[62] in the INT n handler (4.1, "
                   "8.2.2)", ring, MAX_RECORDS, cb.head, &m);
    xsetbv_safe(0, XSTATE_FP_SSE_AVX | XSTATE_LWP);
    addr = cbaddr();
    ea = slwpcb_user();
    report(xcr0 == XSTATE_FP_SSE_AVX && addr == 0 && ea == 0,
           "XCR0[62] cleared while LWP was enabled, then set - expect "
           "LWP disabled: LWP_CBADDR 0, SLWPCB at CPL3 0 (4.1) (got XCR0 "
           "%lx, %lx, %lx)",
           xcr0, addr, ea);
    ret = run_in_user(xs_plain_user, &out);
    report_records("then CPL3 code", ring, MAX_RECORDS, cb.head, &m);
    report(ret == 0 && out == 0, "SLWPCB in that code - expect 0 (got %x, "
           "%lx)", ret, out);
    lwp_stop();
    report_prefix_pop();
}

/* ---- 7: the counters a flush stores (5.2, 7.3; choice 54) ---- */

static struct xs_flush flush_u;

/*
 * Whether the last run of xs_flush_user stored EventCounter2 @ire[k] and
 * EventCounter3 @bre[k] at flush k: SLWPCB, SLWPCB, XSAVE, XSAVE(OPT),
 * LLWPCB 0
 */
static bool flush_is(const int ire[5], const int bre[5])
{
    int got[5][2] = {
        { flush_u.out[0][0], flush_u.out[0][1] },
        { flush_u.out[1][0], flush_u.out[1][1] },
        { area[0].lwp.counter[EVENT_IRE - 1],
          area[0].lwp.counter[EVENT_BRE - 1] },
        { area[1].lwp.counter[EVENT_IRE - 1],
          area[1].lwp.counter[EVENT_BRE - 1] },
        { cb.event[EVENT_IRE - 1].counter, cb.event[EVENT_BRE - 1].counter },
    };
    unsigned k;

    for (k = 0; k < 5; k++) {
        if (got[k][0] != ire[k] || got[k][1] != bre[k]) {
            return false;
        }
    }
    return true;
}

/*
 * One run of xs_flush_user (or xs_flush_opt_user) with IRE and BRE at
 * @interval and counter @ctr.  Each flush stores the counters after the
 * instructions before it (its own table's start): the model's counters
 * after the tables before it.  Returns true when every flush, the final
 * LLWPCB 0 and the records match; @verbose reports the first difference.
 */
static bool run_flush(bool opt, u32 interval, u32 ctr, bool verbose)
{
    const struct xs_insn *t[4][2] = {
        { opt ? xs_seq_h1 : xs_seq_g1, opt ? xs_seq_h1_end : xs_seq_g1_end },
        { opt ? xs_seq_h2 : xs_seq_g2, opt ? xs_seq_h2_end : xs_seq_g2_end },
        { opt ? xs_seq_h3 : xs_seq_g3, opt ? xs_seq_h3_end : xs_seq_g3_end },
        { opt ? xs_seq_h4 : xs_seq_g4, opt ? xs_seq_h4_end : xs_seq_g4_end },
    };
    static const char *const what[5] = {
        "SLWPCB after LLWPCB", "SLWPCB mid-block", "XSAVE mid-block",
        "XSAVE(OPT) after JMP", "LLWPCB 0",
    };
    static struct xs_model m;
    struct xs_flush *u = &flush_u;
    int want[5][2], got[5][2];
    unsigned k, n;
    int ret;

    make_cb(&cb, LWP_IRE | LWP_BRE, ring, RING_BYTES, ctr);
    cb.event[EVENT_IRE - 1].interval = interval;
    cb.event[EVENT_BRE - 1].interval = interval;
    clear_ring();
    model_init(&m, LWP_IRE | LWP_BRE, interval, ctr, interval, ctr);
    for (k = 0; k < 5; k++) {
        want[k][0] = m.ctr[EVENT_IRE - 1];
        want[k][1] = m.ctr[EVENT_BRE - 1];
        if (k < 4) {
            model_run(&m, t[k][0], t[k][1]);
        }
    }
    memset(u, 0xee, sizeof(*u));
    u->cb = (uintptr_t)&cb;
    u->area = (uintptr_t)make_area(0, NULL, 0);
    make_area(1, NULL, 0);
    ret = run_in_user(opt ? xs_flush_opt_user : xs_flush_user, u);
    for (k = 0; k < 2; k++) {
        got[k][0] = u->out[k][0];
        got[k][1] = u->out[k][1];
        got[k + 2][0] = area[k].lwp.counter[EVENT_IRE - 1];
        got[k + 2][1] = area[k].lwp.counter[EVENT_BRE - 1];
    }
    got[4][0] = cb.event[EVENT_IRE - 1].counter;
    got[4][1] = cb.event[EVENT_BRE - 1].counter;
    for (k = 0; k < 5 && want[k][0] == got[k][0] && want[k][1] == got[k][1];
         k++) {
        continue;
    }
    n = 0;
    while (n < m.n && record_eq(&ring[n], &m.rec[n])) {
        n++;
    }
    if (verbose && (ret || k < 5 || n < m.n || cb.head != m.n * RECORD_SIZE)) {
        printf("info: interval %u, counter %u: return %x, %s: "
               "EventCounter2 %d, 3 %d - expect %d, %d; records %u of %u "
               "match, head %u\n", interval, ctr, ret, k < 5 ? what[k] : "-",
               k < 5 ? got[k][0] : 0, k < 5 ? got[k][1] : 0,
               k < 5 ? want[k][0] : 0, k < 5 ? want[k][1] : 0, n, m.n,
               cb.head);
    }
    return !ret && k == 5 && n == m.n && cb.head == m.n * RECORD_SIZE;
}

static void test_flush(void)
{
    bool opt = has_xsaveopt();
    static const u32 intervals[] = { 3, 1000 };
    static const int ire[5] = { 1000, 984, 979, 974, 969 };
    static const int bre[5] = { 1000, 1000, 1000, 999, 998 };
    unsigned i, bad;
    u32 c;

    report_prefix_push("flush");
    lwp_config(~0u);
    /* by hand: 16, 5, 5 and 5 instructions, a JMP and a JZ */
    report(run_flush(opt, 1000, 1000, true) && flush_is(ire, bre),
           "IRE, BRE counters 1000: SLWPCB first after LLWPCB stores 1000, "
           "1000; SLWPCB 16 instructions later 984, 1000; XSAVE 5 later 979, "
           "1000; %s after a JMP 974, 999; LLWPCB 0 969, 998",
           opt ? "XSAVEOPT" : "XSAVE");
    for (i = 0; i < ARRAY_SIZE(intervals); i++) {
        bad = 0;
        for (c = 0; c <= 34; c++) {
            if (!run_flush(opt, intervals[i], c, !bad)) {
                bad++;
            }
        }
        report(!bad, "IRE, BRE interval %u, counters 0-34 (records anywhere "
               "in the code): every flush stores the counters after the "
               "instructions before it, records as the model (%u runs "
               "differ)", intervals[i], bad);
    }
    lwp_stop();
    report_prefix_pop();
}

/* ---- 4, 6: a new thread; two tasks (8.2.1, 8.4, 8.7) ---- */

/*
 * The task switch of the INT XS_CTL_VECTOR handler, as an OS does it
 * (8.2.1): XSAVE the old task's LWP state, XRSTOR the new one's
 */
static struct {
    int vec_save, vec_rstor;
    u64 bv_old, cbaddr;
    struct lwpcb cb;
    struct lwp_record ring[MAX_RECORDS];
} sw;

static void switch_to_b(void)
{
    sw.vec_save = xsave_to(make_area(0, NULL, 0), XSTATE_LWP);
    sw.bv_old = area[0].xstate_bv;
    /* B is a new thread: the init state (8.4) */
    sw.vec_rstor = xrstor_from(make_area(1, NULL, 0), XSTATE_LWP);
    sw.cbaddr = cbaddr();
    sw.cb = cb;
    memcpy(sw.ring, ring, sizeof(ring));
}

static void switch_to_a(void)
{
    sw.vec_save = xsave_to(dirty_area(2, XSTATE_LWP), XSTATE_LWP);
    sw.bv_old = area[2].xstate_bv;
    sw.vec_rstor = xrstor_from(&area[0], XSTATE_LWP);
    sw.cbaddr = cbaddr();
}

static void test_tasks(void)
{
    static struct xs_model m;
    unsigned i;
    int ret;

    report_prefix_push("tasks");
    lwp_config(~0u);
    make_cb(&cb, LWP_IRE | LWP_BRE, ring, RING_BYTES, 0);
    cb.event[EVENT_IRE - 1].interval = 3;
    cb.event[EVENT_IRE - 1].counter = 1;
    clear_ring();
    model_init(&m, LWP_IRE | LWP_BRE, 3, 1, 1, 0);
    model_run(&m, xs_seq_f1, xs_seq_f1_end);

    /* A: LLWPCB and f1; switch to B; B runs f2 */
    memset(&sw, 0, sizeof(sw));
    xs_sw_out = ~0ul;
    ctl_action = CTL_TO_B;
    ret = run_in_user(xs_sw_user, &cb);
    ctl_action = CTL_NONE;
    report(ret == 0 && !sw.vec_save && (sw.bv_old & XSTATE_LWP) &&
           !sw.vec_rstor && sw.cbaddr == 0, "A -> B: XSAVE of A, XRSTOR "
           "of the init state for the new thread B - expect XSTATE_BV[62] = "
           "1, then LWP_CBADDR 0 (got %x, vectors %d %d, %lx, %lx)", ret,
           sw.vec_save, sw.vec_rstor, sw.bv_old, sw.cbaddr);
    report_records("A's records before the switch", sw.ring, MAX_RECORDS,
                   sw.cb.head, &m);
    for (i = 0; i < MAX_RECORDS && record_eq(&ring[i], &sw.ring[i]); i++) {
        continue;
    }
    report(xs_sw_out == 0 && !cb_differs(&sw.cb, &cb) && i == MAX_RECORDS,
           "B runs %u instructions - expect SLWPCB 0 in B, A's LWPCB and "
           "ring as they were at the switch (got %lx, LWPCB %s, ring slot "
           "%u)", (unsigned)(xs_seq_f2_end - xs_seq_f2), xs_sw_out,
           cb_differs(&sw.cb, &cb) ? "changed" : "same", i);
    report(area[0].lwp.head == m.n * RECORD_SIZE &&
           area[0].lwp.counter[EVENT_IRE - 1] == (u32)m.ctr[1] &&
           area[0].lwp.counter[EVENT_BRE - 1] == (u32)m.ctr[2],
           "A's XSAVE area - expect head %u, EventCounter2 %d, 3 %d (got "
           "%u, %d, %d)", m.n * RECORD_SIZE, m.ctr[1], m.ctr[2],
           area[0].lwp.head, area[0].lwp.counter[EVENT_IRE - 1],
           area[0].lwp.counter[EVENT_BRE - 1]);

    /* B (LWP off): f1; switch to A; A runs f2 */
    xs_sw_out = ~0ul;
    ctl_action = CTL_TO_A;
    ret = run_in_user(xs_sw_user, NULL);
    ctl_action = CTL_NONE;
    model_run(&m, xs_seq_f2, xs_seq_f2_end);
    report(ret == 0 && !sw.vec_save && !(sw.bv_old & XSTATE_LWP) &&
           !sw.vec_rstor && sw.cbaddr == (uintptr_t)&cb, "B -> A: XSAVE of "
           "B, XRSTOR of A - expect XSTATE_BV[62] = 0, then LWP_CBADDR %p "
           "(got %x, vectors %d %d, %lx, %lx)", &cb, ret, sw.vec_save,
           sw.vec_rstor, sw.bv_old, sw.cbaddr);
    report(xs_sw_out == (uintptr_t)&cb, "A runs %u instructions - expect "
           "SLWPCB %p (got %lx)", (unsigned)(xs_seq_f2_end - xs_seq_f2), &cb,
           xs_sw_out);
    report_records("A's ring: its records before and after B", ring,
                   MAX_RECORDS, cb.head, &m);
    lwp_stop();
    report_prefix_pop();
}

void test_xsave_lwp(void)
{
    struct cpuid r;

    report_prefix_push("xsave");
    if (!(cpuid(0x80000001).c & CPUID_EXT3_LWP) || !enable_osxsave()) {
        report_skip("no LWP: XSAVE component 62 tests");
        report_prefix_pop();
        return;
    }
    r = lwp_cpuid();
    lwp_edx = r.d;
    cb_size = (r.b & 0xff) * 8;
    min_ring = ((r.c >> 16) & 0xff) * 32 * RECORD_SIZE;
    if (min_ring < RECORD_SIZE) {
        min_ring = RECORD_SIZE;         /* choice 32 */
    }
    if (!has(LWP_IRE | LWP_BRE) || min_ring > 1024) {
        report_skip("CPUID 0x8000001C EDX %x, LwpMinBufferSize %u bytes: "
                    "need IRE, BRE and at most 1024", lwp_edx, min_ring);
        report_prefix_pop();
        return;
    }
    if (!xs_split()) {
        report(false, "the 2 MiB page of %p - expect a PDE with PS = 1",
               xs_mem);
        report_prefix_pop();
        return;
    }
    xs_map(ALIAS(PG_SUP), PG_SUP, PTE_P | PTE_W);
    xs_map(ALIAS(PG_RO), PG_RO, PTE_P | PTE_W);
    xs_map(ALIAS(PG_NP), PG_NP, PTE_P | PTE_W);
    handle_irq(XS_CTL_VECTOR, ctl_handler);
    allow_user_int(XS_CTL_VECTOR);

    lwp_config(~0u);
    test_xsave_disabled();
    test_xsave_enabled();
    test_xsave_pending();
    test_xrstor_rules();
    test_xrstor_user();
    test_xrstor_pages();
    test_xrstor_threshold();
    test_xrstor_lazy();
    test_ctl();
    test_tasks();
    test_flush();

    lwp_stop();
    wrmsr(MSR_LWP_CFG, 0);
    handle_irq(XS_CTL_VECTOR, NULL);
    xs_unsplit();
    report_prefix_pop();
}
