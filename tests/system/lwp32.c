/*
 * System-mode tests of the AMD Lightweight Profiling (LWP) instructions in
 * legacy mode: 32-bit protected mode with EFER.LMA = 0, paging off (the
 * last tests turn on 2-level paging), plus virtual-8086 mode and CPL3.
 *
 * Expected values come from the AMD LWP specification (43724 rev 3.08,
 * sections 3, 5, 6 and 7), from the AMD64 architecture's XOP prefix rules
 * and from docs/implementation-choices.md where the spec leaves a choice
 * (rows 14, 21, 25, 29-31, 34 and 35); they are never read back from the
 * emulator.  The instructions are raw bytes (lwp32.h).  The command line
 * word config=NAME says which CPU model QEMU was started with:
 *
 *   nolwp  -cpu max             LWP absent
 *   g4     -cpu Opteron_G4,+lwp
 *   max    -cpu max,+lwp
 *   pmu    -cpu Nehalem,pmu=on  the Intel PMU in legacy mode (no LWP:
 *                               test_pmu_cs_base only)
 *   p6     -cpu pentium3,pmu=on the P6 family's last branch recording
 *                               (Intel SDM Vol. 3B 17.14; no LWP)
 *   nop6   -cpu pentium3        ... absent, as in upstream QEMU
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libcflat.h"
#include "desc.h"
#include "processor.h"
#include "lwp-guest.h"
#include "lwp32.h"

#define XSTATE_X87_SSE      0x3ull
#define CORE_ID             0xa7

#define X86_EFLAGS_CF       BIT(0)

/* GDT access bytes (present, DPL0) of the test segments */
#define SEG_DATA_RW         0x92
#define SEG_DATA_RO         0x90
#define SEG_DATA_RW_DOWN    0x96
#define SEG_CODE_RX         0x9a
#define SEG_DPL3            0x60

/* Virtual-8086 mode code and stack: VM86_SEG:0 and VM86_SEG:VM86_SP */
#define VM86_SEG            0x2000
#define VM86_SP             0xf000

/* Conventional memory for a 16-bit SS-relative operand (SS base 0) */
#define LOW_SCRATCH         0x7000

_Static_assert(__builtin_offsetof(struct insn_regs, eflags) == R_EFLAGS,
               "insn_regs");

enum config { CONFIG_NOLWP, CONFIG_G4, CONFIG_MAX, CONFIG_PMU, CONFIG_P6,
              CONFIG_NOP6 };

static const char *const config_names[] = { "nolwp", "g4", "max", "pmu",
                                            "p6", "nop6" };
static enum config config;

/*
 * The LWPCBs, rings and memory operands live in the arena, at offsets the
 * tests choose; segment bases are set relative to it.
 */
#define ARENA_SIZE          0x40000
static u8 arena[ARENA_SIZE] __attribute__((aligned(4096)));

/* The LWPCB and ring of run_one(), at flat (DS base 0) addresses */
#define CB0                 0x0000
#define RING0               0x1000
/* Memory operands of the memory operand tests */
#define DATA                0x8000

/* From CPUID 0x8000001C: LwpCbSize * 8 and the minimum ring size */
static u32 cb_bytes, ring_size;

static u32 lin(const void *p)
{
    return (uintptr_t)p;
}

static u8 *at(u32 off)
{
    return arena + off;
}

static struct lwpcb *cb_at(u32 off)
{
    return (struct lwpcb *)at(off);
}

static struct lwp_record *rec_at(u32 off)
{
    return (struct lwp_record *)at(off);
}

static void put32(u32 linear, u32 val)
{
    *(u32 *)(uintptr_t)linear = val;
}

/* ---- segments ---- */

/* GDT entry @sel; @limit in bytes, or in 4 KiB units with @gran */
static void set_seg(u16 sel, u32 base, u32 limit, u8 access, bool big,
                    bool gran)
{
    gdt[sel / 8] = (limit & 0xffff) | (u64)(base & 0xffffff) << 16 |
                   (u64)access << 40 | (u64)((limit >> 16) & 0xf) << 48 |
                   (u64)(big ? 0x4 : 0) << 52 | (u64)(gran ? 0x8 : 0) << 52 |
                   (u64)(base >> 24) << 56;
}

/* Base @base, limit 4 GiB - 1 */
static void set_based_seg(u16 sel, u32 base, u8 access)
{
    set_seg(sel, base, 0xfffff, access, true, true);
}

/* ---- running the instructions ---- */

static void init_regs(struct insn_regs *r, u16 seg)
{
    memset(r, 0, sizeof(*r));
    r->ds = r->es = r->fs = r->gs = seg;
}

/* LLWPCB EAX = @ea with DS = @ds; the vector */
static int llwpcb(u32 ea, u16 ds)
{
    struct insn_regs r;

    init_regs(&r, KERNEL_DS);
    r.eax = ea;
    r.ds = ds;
    return run_insn(llwpcb_eax, &r);
}

/* SLWPCB EAX with DS = @ds; EAX, or 0xdeadbeef after an exception */
static u32 slwpcb(u16 ds)
{
    struct insn_regs r;

    init_regs(&r, KERNEL_DS);
    r.eax = 0xdeadbeef;
    r.ds = ds;
    return run_insn(slwpcb_eax, &r) ? 0xdeadbeef : r.eax;
}

static u64 cbaddr(void)
{
    u64 val = ~0ull;

    rdmsr_safe(MSR_LWP_CBADDR, &val);
    return val;
}

/* Stop LWP without a flush (spec 4.3) */
static void lwp_stop(void)
{
    wrmsr(MSR_LWP_CBADDR, 0);
}

/*
 * A valid LWPCB at @linear: ring at effective address @ring, ring_size
 * bytes, @flags, LWPVAL interval 0 and counter 0, everything else 0.
 */
static struct lwpcb *put_lwpcb(u32 linear, u64 ring, u32 flags)
{
    struct lwpcb *cb = (struct lwpcb *)(uintptr_t)linear;

    memset(cb, 0, sizeof(*cb));
    cb->flags = flags;
    cb->buffer_size = ring_size;
    cb->buffer_base = ring;
    return cb;
}

/*
 * Load a fresh LWPCB (CB0, ring at RING0, VAL enabled, LWPVAL interval 0),
 * run @insn with @r, flush with SLWPCB and stop.  Returns the vector of
 * @insn; the records are at RING0, the head in cb_at(CB0)->head.
 */
static int run_one(const u8 *insn, struct insn_regs *r)
{
    int vec;

    put_lwpcb(lin(at(CB0)), lin(at(RING0)), LWP_VAL);
    memset(at(RING0), 0, ring_size);
    if (llwpcb(lin(at(CB0)), KERNEL_DS)) {
        printf("ABORT: LLWPCB of a valid LWPCB faulted\n");
        abort();
    }
    vec = run_insn(insn, r);
    slwpcb(KERNEL_DS);
    llwpcb(0, KERNEL_DS);
    return vec;
}

/* run_one(@insn, @r): expect one record with these Data1 and Data2 */
static void check_insn(const char *what, const u8 *insn, u8 id,
                       struct insn_regs *r, u32 data1, u32 data2)
{
    const struct lwp_record *rec = rec_at(RING0);
    int vec = run_one(insn, r);
    u32 head = cb_at(CB0)->head;

    report(!vec && head == RECORD_SIZE && rec->event_id == id &&
           rec->data1 == data1 && rec->data2 == data2 &&
           rec->ip == lin(insn) && rec->flags == (u16)LWP_IMM &&
           rec->core_id == CORE_ID,
           "%s - expect one record: EventId %u, Data1 %08x, Data2 %08x, "
           "IP %08x (got vector %d, head %u, EventId %u, Data1 %08x, "
           "Data2 %llx, IP %llx, Flags %x, CoreId %x)",
           what, id, data1, data2, lin(insn), vec, head, rec->event_id,
           rec->data1, rec->data2, rec->ip, rec->flags, rec->core_id);
}

/* Run @insn; expect #UD */
static void check_ud(const char *what, const u8 *insn)
{
    struct insn_regs r;
    int vec;

    init_regs(&r, KERNEL_DS);
    vec = run_insn(insn, &r);
    report(vec == UD_VECTOR, "%s - expect #UD (got vector %d)", what, vec);
}

/* ---- set-up ---- */

static void test_mode(void)
{
    unsigned long cr0 = read_cr0();
    u64 efer = 0;
    int vec = rdmsr_safe(MSR_EFER, &efer);

    report_prefix_push("mode");
    report((cr0 & X86_CR0_PE) && !(cr0 & X86_CR0_PG),
           "CR0 - expect PE = 1, PG = 0 (got %lx)", cr0);
    report(!vec && !(efer & (EFER_LME | EFER_LMA)),
           "EFER - expect LME = LMA = 0 (got vector %d, %llx)", vec, efer);
    report_prefix_pop();
}

/* CPUID, XCR0[62] and LWP_CFG as an OS sets them up (spec 3, 4) */
static bool setup_lwp(void)
{
    struct cpuid r;
    u64 cfg = LWP_VAL | LWP_CFG_COREID(CORE_ID);
    int vec;

    report_prefix_push("setup");
    report(cpuid(0x80000001).c & CPUID_EXT3_LWP,
           "CPUID 0x80000001 ECX[15] (LWP) - expect 1");
    if (!enable_osxsave()) {
        report(false, "CPUID.1:ECX.XSAVE - expect 1, LWP requires XSAVE");
        report_prefix_pop();
        return false;
    }
    vec = xsetbv_safe(0, XSTATE_X87_SSE | XSTATE_LWP);
    report(!vec, "XSETBV(0, 0x3 | 1<<62) - expect accepted (got vector %d)",
           vec);
    r = cpuid(LWP_LEAF);
    report(r.d & LWP_VAL, "0x8000001C EDX[1] LwpVAL - expect 1 (got EDX %x)",
           r.d);
    vec = wrmsr_safe(MSR_LWP_CFG, cfg);
    report(!vec, "WRMSR(LWP_CFG, %llx) - expect accepted (got vector %d)",
           cfg, vec);
    report_prefix_pop();
    report((r.b >> 24) == EVENT_OFFSET && ((r.b >> 8) & 0xff) == RECORD_SIZE,
           "0x8000001C EBX - expect LwpEventOffset 0x80, LwpEventSize 32 "
           "(got %x)", r.b);
    if (vec || (r.b >> 24) != EVENT_OFFSET ||
        ((r.b >> 8) & 0xff) != RECORD_SIZE) {
        printf("info: LWP cannot be set up, instruction tests skipped\n");
        return false;
    }
    cb_bytes = (r.b & 0xff) * 8;
    ring_size = ((r.c >> 16) & 0xff) * 32 * RECORD_SIZE;
    if (ring_size < RECORD_SIZE) {
        ring_size = RECORD_SIZE;        /* row 32 */
    }
    printf("info: LwpCbSize %u bytes, minimum ring %u bytes\n", cb_bytes,
           ring_size);
    return true;
}

/* ---- 1: LLWPCB, SLWPCB, LWPINS, LWPVAL ---- */

static void test_disabled(void)
{
    struct insn_regs r;
    u32 ea = slwpcb(KERNEL_DS);
    int vec;

    report(ea == 0, "SLWPCB, LWP disabled - expect 0 (got %x)", ea);
    memset(at(RING0), 0, ring_size);
    init_regs(&r, KERNEL_DS);
    vec = run_insn(lwpins_ecx, &r);
    report(!vec && !(r.eflags & X86_EFLAGS_CF) && !rec_at(RING0)->event_id,
           "LWPINS, LWP disabled - expect CF = 0, nothing stored (got "
           "vector %d, EFLAGS %x)", vec, r.eflags);
    vec = run_insn(lwpval_ecx, &r);
    report(!vec, "LWPVAL, LWP disabled - expect no effect (got vector %d)",
           vec);
}

static void test_llwpcb_lwpins(void)
{
    struct lwpcb *cb = put_lwpcb(lin(at(CB0)), lin(at(RING0)),
                                 LWP_VAL | LWP_IRE);
    const struct lwp_record *rec = rec_at(RING0);
    u32 nr = ring_size / RECORD_SIZE, last = (nr - 1) * RECORD_SIZE;
    u32 i, ea, ncf = 0;
    struct insn_regs r;
    int vec;

    memset(at(RING0), 0, ring_size);
    vec = llwpcb(lin(cb), KERNEL_DS);
    report(!vec, "LLWPCB of a valid LWPCB - expect no exception (got %d)",
           vec);
    report(cbaddr() == lin(cb), "LWP_CBADDR - expect the LWPCB's linear "
           "address %x (got %llx)", lin(cb), cbaddr());
    report(cb->flags == LWP_VAL, "LWPCB.Flags after LLWPCB - expect VAL | "
           "IRE AND LWP_CFG = %x (got %x)", LWP_VAL, cb->flags);
    ea = slwpcb(KERNEL_DS);
    report(ea == lin(cb), "SLWPCB - expect %x (got %x)", lin(cb), ea);

    init_regs(&r, KERNEL_DS);
    r.ecx = 0x13572468;
    r.edx = 0x89abcdef;
    vec = run_insn(lwpins_ecx, &r);
    report(!vec && !(r.eflags & X86_EFLAGS_CF),
           "LWPINS EDX, ECX, imm32 - expect CF = 0 (got vector %d, EFLAGS "
           "%x)", vec, r.eflags);
    report(r.ecx == 0x13572468 && r.edx == 0x89abcdef,
           "LWPINS - expect ECX, EDX unchanged (got %x, %x)", r.ecx, r.edx);
    slwpcb(KERNEL_DS);
    report(cb->head == RECORD_SIZE, "BufferHeadOffset after SLWPCB - expect "
           "32 (got %u)", cb->head);
    report(rec->event_id == EVENT_INS, "record EventId - expect 255 (got %u)",
           rec->event_id);
    report(rec->core_id == CORE_ID, "record CoreId - expect LWP_CFG[39:32] "
           "= %x (got %x)", CORE_ID, rec->core_id);
    report(rec->flags == (u16)LWP_IMM, "record Flags - expect imm32[15:0] = "
           "%x (got %x)", (u16)LWP_IMM, rec->flags);
    report(rec->data1 == 0x13572468, "record Data1 - expect ECX = 13572468 "
           "(got %x)", rec->data1);
    report(rec->ip == lin(lwpins_ecx), "record InstructionAddress - expect "
           "the LWPINS's EIP %x (got %llx)", lin(lwpins_ecx), rec->ip);
    report(rec->data2 == 0x89abcdef, "record Data2 - expect EDX zero-"
           "extended = 89abcdef (got %llx)", rec->data2);
    report(rec->reserved == 0, "record bytes 31-24 - expect 0 (got %llx)",
           rec->reserved);

    /* Fill the ring: the last slot is the one the full buffer rewrites */
    for (i = 1; i < nr - 1; i++) {
        r.ecx = i;
        vec |= run_insn(lwpins_ecx, &r);
        ncf += r.eflags & X86_EFLAGS_CF;
    }
    report(!vec && !ncf, "LWPINS 2 to %u of %u slots - expect CF = 0 every "
           "time (got vector %d, CF = 1 %u times)", nr - 1, nr, vec, ncf);
    r.ecx = 0x11111111;
    vec = run_insn(lwpins_ecx, &r);
    slwpcb(KERNEL_DS);
    report(!vec && (r.eflags & X86_EFLAGS_CF), "LWPINS with the ring full - "
           "expect CF = 1 (got vector %d, EFLAGS %x)", vec, r.eflags);
    report(cb->missed_events == 1 && cb->head == last, "ring full - expect "
           "MissedEvents 1, head %u (got %llu, %u)", last, cb->missed_events,
           cb->head);
    r.ecx = 0x22222222;
    run_insn(lwpins_ecx, &r);
    slwpcb(KERNEL_DS);
    report((r.eflags & X86_EFLAGS_CF) && cb->missed_events == 2 &&
           cb->head == last && rec_at(RING0 + last)->data1 == 0x22222222,
           "LWPINS again - expect CF = 1, MissedEvents 2, head %u, the last "
           "slot rewritten with Data1 22222222 (got EFLAGS %x, %llu, %u, %x)",
           last, r.eflags, cb->missed_events, cb->head,
           rec_at(RING0 + last)->data1);
    report(rec_at(RING0 + last - RECORD_SIZE)->data1 == nr - 2,
           "record before the last slot - expect Data1 %x kept (got %x)",
           nr - 2, rec_at(RING0 + last - RECORD_SIZE)->data1);

    /* The consumer frees two slots: the head wraps to 0 (spec 8.3) */
    cb->tail = 2 * RECORD_SIZE;
    r.ecx = 0x33333333;
    run_insn(lwpins_ecx, &r);
    slwpcb(KERNEL_DS);
    report(!(r.eflags & X86_EFLAGS_CF) && cb->head == 0 &&
           cb->missed_events == 2 &&
           rec_at(RING0 + last)->data1 == 0x33333333,
           "LWPINS after BufferTailOffset = 64 - expect CF = 0, head wraps "
           "to 0, MissedEvents 2 (got EFLAGS %x, head %u, %llu, Data1 %x)",
           r.eflags, cb->head, cb->missed_events,
           rec_at(RING0 + last)->data1);

    vec = llwpcb(0, KERNEL_DS);
    report(!vec && cbaddr() == 0 && slwpcb(KERNEL_DS) == 0,
           "LLWPCB 0 - expect LWP disabled: LWP_CBADDR 0, SLWPCB 0 (got "
           "vector %d, %llx)", vec, cbaddr());
}

static void test_lwpval(void)
{
    struct lwpcb *cb = put_lwpcb(lin(at(CB0)), lin(at(RING0)), LWP_VAL);
    const struct lwp_record *rec = rec_at(RING0);
    struct insn_regs r;
    u32 i;
    int vec;

    memset(at(RING0), 0, ring_size);
    llwpcb(lin(cb), KERNEL_DS);
    init_regs(&r, KERNEL_DS);
    r.edx = 0xfedcba98;
    for (i = 0; i < 3; i++) {
        r.ecx = 0x5000 + i;
        vec = run_insn(lwpval_ecx, &r);
        report(!vec && (r.eflags & X86_EFLAGS_CF), "LWPVAL %u, interval 0 "
               "- expect no exception, flags unchanged (got vector %d, "
               "EFLAGS %x)", i, vec, r.eflags);
    }
    slwpcb(KERNEL_DS);
    report(cb->head == 3 * RECORD_SIZE, "3 LWPVALs with EventInterval1 0 - "
           "expect 3 records (got head %u)", cb->head);
    report(rec->event_id == EVENT_VAL && rec->core_id == CORE_ID &&
           rec->flags == (u16)LWP_IMM && rec->data1 == 0x5000 &&
           rec->ip == lin(lwpval_ecx) && rec->data2 == 0xfedcba98 &&
           rec->reserved == 0,
           "LWPVAL record - expect EventId 1, CoreId %x, Flags %x, Data1 "
           "5000, IP %x, Data2 fedcba98 (got %u, %x, %x, %x, %llx, %llx)",
           CORE_ID, (u16)LWP_IMM, lin(lwpval_ecx), rec->event_id,
           rec->core_id, rec->flags, rec->data1, rec->ip, rec->data2);
    report(rec_at(RING0 + 64)->data1 == 0x5002, "third LWPVAL record - "
           "expect Data1 5002 (got %x)", rec_at(RING0 + 64)->data1);
    llwpcb(0, KERNEL_DS);

    /* Interval 2: a record every third LWPVAL, the first at once */
    put_lwpcb(lin(cb), lin(at(RING0)), LWP_VAL)->event[0].interval = 2;
    memset(at(RING0), 0, ring_size);
    llwpcb(lin(cb), KERNEL_DS);
    for (i = 0; i < 7; i++) {
        r.ecx = i;
        run_insn(lwpval_ecx, &r);
    }
    slwpcb(KERNEL_DS);
    report(cb->head == 3 * RECORD_SIZE && rec_at(RING0)->data1 == 0 &&
           rec_at(RING0 + 32)->data1 == 3 && rec_at(RING0 + 64)->data1 == 6,
           "7 LWPVALs, EventInterval1 2, EventCounter1 0 - expect records "
           "of the 1st, 4th and 7th (got head %u, Data1 %x %x %x)", cb->head,
           rec_at(RING0)->data1, rec_at(RING0 + 32)->data1,
           rec_at(RING0 + 64)->data1);
    llwpcb(0, KERNEL_DS);

    /* Table 6-1: a negative EventInterval1 becomes 0, written back */
    put_lwpcb(lin(cb), lin(at(RING0)), LWP_VAL)->event[0].interval = ~0u;
    llwpcb(lin(cb), KERNEL_DS);
    report(cb->event[0].interval == 0, "EventInterval1 -1 - expect LLWPCB to "
           "store 0 (got %x)", cb->event[0].interval);
    llwpcb(0, KERNEL_DS);

    /* VAL not enabled in Flags: LWPVAL does nothing (5.3) */
    put_lwpcb(lin(cb), lin(at(RING0)), 0);
    llwpcb(lin(cb), KERNEL_DS);
    run_insn(lwpval_ecx, &r);
    slwpcb(KERNEL_DS);
    report(cb->head == 0, "LWPVAL with Flags.VAL = 0 - expect no record (got "
           "head %u)", cb->head);
    llwpcb(0, KERNEL_DS);
}

/* ---- 2, 3: the vvvv, W and R/X/B fields in legacy mode ---- */

static void test_fields(void)
{
    struct insn_regs r;
    u32 cb = lin(at(CB0));
    int vec;

    report_prefix_push("fields");
    /* 5.1, 5.2: vvvv must be 1111b, all four bits */
    put_lwpcb(cb, lin(at(RING0)), LWP_VAL);
    init_regs(&r, KERNEL_DS);
    r.eax = cb;
    vec = run_insn(llwpcb_vvvv0111, &r);
    report(vec == UD_VECTOR && cbaddr() == 0, "LLWPCB with vvvv' = 0111b "
           "(8F E9 38 12 C0) - expect #UD, LWP still disabled (got vector "
           "%d, LWP_CBADDR %llx)", vec, cbaddr());
    lwp_stop();
    vec = run_insn(llwpcb_vvvv1110, &r);
    report(vec == UD_VECTOR && cbaddr() == 0, "LLWPCB with vvvv' = 1110b "
           "(8F E9 70 12 C0) - expect #UD, LWP still disabled (got vector "
           "%d, LWP_CBADDR %llx)", vec, cbaddr());
    lwp_stop();
    llwpcb(cb, KERNEL_DS);
    r.eax = 0x12345678;
    vec = run_insn(slwpcb_vvvv0111, &r);
    report(vec == UD_VECTOR && r.eax == 0x12345678, "SLWPCB with vvvv' = "
           "0111b (8F E9 38 12 C8) - expect #UD, EAX unchanged (got vector "
           "%d, %x)", vec, r.eax);
    vec = run_insn(slwpcb_vvvv1110, &r);
    report(vec == UD_VECTOR && r.eax == 0x12345678, "SLWPCB with vvvv' = "
           "1110b (8F E9 70 12 C8) - expect #UD, EAX unchanged (got vector "
           "%d, %x)", vec, r.eax);
    llwpcb(0, KERNEL_DS);
    r.eax = cb;
    vec = run_insn(llwpcb_mem, &r);
    report(vec == UD_VECTOR && cbaddr() == 0, "LLWPCB with mod = 00b - "
           "expect #UD (got vector %d)", vec);
    lwp_stop();
    check_ud("SLWPCB with mod = 00b", slwpcb_mem);

    /* LWPINS, LWPVAL: the top bit of vvvv does not exist in legacy mode */
    init_regs(&r, KERNEL_DS);
    r.eax = 0xaaaa0000;
    r.ecx = 0xc0c0c0c0;
    r.edx = 0xdddd1234;
    check_insn("LWPINS vvvv' = 0101b (8F EA 28): Data2 from EDX",
               lwpins_vvvv0101, EVENT_INS, &r, 0xc0c0c0c0, 0xdddd1234);
    check_insn("LWPVAL vvvv' = 0101b (8F EA 28): Data2 from EDX",
               lwpval_vvvv0101, EVENT_VAL, &r, 0xc0c0c0c0, 0xdddd1234);
    check_insn("LWPINS vvvv' = 1111b (8F EA 78): Data2 from EAX",
               lwpins_vvvv1111, EVENT_INS, &r, 0xc0c0c0c0, 0xaaaa0000);
    check_insn("LWPINS vvvv' = 0111b (8F EA 38): Data2 from EAX",
               lwpins_vvvv0111, EVENT_INS, &r, 0xc0c0c0c0, 0xaaaa0000);

    /* W = 1 does not select 64 bits outside 64-bit mode */
    init_regs(&r, KERNEL_DS);
    r.eax = cb;
    put_lwpcb(cb, lin(at(RING0)), LWP_VAL);
    vec = run_insn(llwpcb_w1, &r);
    report(!vec && cbaddr() == cb, "LLWPCB with W = 1 (8F E9 F8) - expect "
           "LWPCB %x loaded (got vector %d, LWP_CBADDR %llx)", cb, vec,
           cbaddr());
    r.eax = 0x5555aaaa;
    vec = run_insn(slwpcb_w1, &r);
    report(!vec && r.eax == cb, "SLWPCB with W = 1 - expect EAX = %x (got "
           "vector %d, %x)", cb, vec, r.eax);
    llwpcb(0, KERNEL_DS);
    init_regs(&r, KERNEL_DS);
    r.ecx = 0x0badf00d;
    r.edx = 0xf0000001;
    check_insn("LWPINS with W = 1: 32-bit Data2",
               lwpins_w1, EVENT_INS, &r, 0x0badf00d, 0xf0000001);
    check_insn("LWPVAL with W = 1: 32-bit Data2",
               lwpval_w1, EVENT_VAL, &r, 0x0badf00d, 0xf0000001);

    /* R, X, B are ignored outside 64-bit mode */
    init_regs(&r, KERNEL_DS);
    r.eax = 0x600d600d;
    r.ebx = cb;
    put_lwpcb(cb, lin(at(RING0)), LWP_VAL);
    vec = run_insn(llwpcb_rxb000, &r);
    report(!vec && cbaddr() == cb, "LLWPCB EBX with R'X'B' = 000 (8F 09) - "
           "expect LWPCB %x from EBX (got vector %d, LWP_CBADDR %llx)", cb,
           vec, cbaddr());
    r.ebx = 0;
    vec = run_insn(slwpcb_rxb000, &r);
    report(!vec && r.ebx == cb && r.eax == 0x600d600d, "SLWPCB EBX with "
           "R'X'B' = 000 - expect EBX = %x, EAX unchanged (got vector %d, "
           "%x, %x)", cb, vec, r.ebx, r.eax);
    llwpcb(0, KERNEL_DS);
    init_regs(&r, KERNEL_DS);
    r.ecx = 0x1c1c1c1c;
    r.edx = 0x2d2d2d2d;
    check_insn("LWPINS with R'X'B' = 000 (8F 0A): Data1 from ECX",
               lwpins_rxb000, EVENT_INS, &r, 0x1c1c1c1c, 0x2d2d2d2d);
    check_insn("LWPVAL with R'X'B' = 000 (8F 0A): Data1 from ECX",
               lwpval_rxb000, EVENT_VAL, &r, 0x1c1c1c1c, 0x2d2d2d2d);
    r.ebx = lin(at(DATA));
    r.esi = 5;
    put32(lin(at(DATA + 20)), 0x3e3e3e3e);
    check_insn("LWPINS [EBX + ESI * 4] with R'X'B' = 000",
               lwpins_rxb000_sib, EVENT_INS, &r, 0x3e3e3e3e, 0x2d2d2d2d);
    report_prefix_pop();
}

/* ---- XOP prefix rules ---- */

/*
 * 8F with a map field below 8 stays POP: here it pops the word on top of
 * run_insn()'s stack, the GS it saved (KERNEL_DS).
 */
static void check_pop(void)
{
    struct insn_regs r;
    int vec;

    init_regs(&r, KERNEL_DS);
    r.eax = 0xffffffff;
    vec = run_insn(pop_eax, &r);
    report(!vec && (r.eax & 0xffff) == KERNEL_DS, "8F C0 - expect POP EAX "
           "of the saved GS %x (got vector %d, EAX %x)", KERNEL_DS, vec,
           r.eax);
}

static void test_prefixes(void)
{
    report_prefix_push("xop");
    /* AMD64 APM vol. 3, VEX/XOP rules: XOP after 66h, F2h, F3h, LOCK: #UD */
    check_ud("66h LLWPCB", llwpcb_p66);
    check_ud("66h LWPINS", lwpins_p66);
    check_ud("F2h LWPINS", lwpins_pf2);
    check_ud("F3h LWPINS", lwpins_pf3);
    check_ud("LOCK LWPINS", lwpins_lock);
    /* 5.1-5.4: L = 0, pp = 00b; map 9 opcode 12h defines /0 and /1 only */
    check_ud("LLWPCB with L = 1 (8F E9 7C)", llwpcb_l1);
    check_ud("LLWPCB with pp = 01b (8F E9 79)", llwpcb_pp01);
    check_ud("LWPINS with L = 1 (8F EA 6C)", lwpins_l1);
    check_ud("LWPINS with pp = 01b (8F EA 69)", lwpins_pp01);
    check_ud("XOP map 9 opcode 12h /2 (8F E9 78 12 D0)", xop9_12_reg2);

    check_pop();
    report_prefix_pop();
}

/* ---- 4: DS base, limit and type ---- */

/* DS = @sel, LLWPCB @ea: expect #GP(0) and LWP disabled */
static void check_llwpcb_gp(const char *what, u32 ea, u16 sel)
{
    int vec;

    llwpcb(lin(at(CB0)), KERNEL_DS);        /* LWP enabled before */
    vec = llwpcb(ea, sel);
    report(vec == GP_VECTOR && exception_error_code == 0 && cbaddr() == 0,
           "%s - expect #GP(0), LWP left disabled (got vector %d, error "
           "code %lx, LWP_CBADDR %llx)", what, vec,
           vec ? exception_error_code : 0, cbaddr());
    lwp_stop();
}

/* DS = @sel, LLWPCB @ea: expect the LWPCB at linear @linear loaded */
static void check_llwpcb_ok(const char *what, u32 ea, u16 sel, u32 linear)
{
    int vec = llwpcb(ea, sel);

    report(!vec && cbaddr() == linear, "%s - expect LWPCB at linear %x "
           "loaded (got vector %d, LWP_CBADDR %llx)", what, linear, vec,
           cbaddr());
    lwp_stop();
}

static void test_ds_base(void)
{
    const u32 base = 0x10000, sel = TEST_SEL(0);
    u32 cb = lin(at(0x20000)), ring = lin(at(0x21000));
    u32 decoy = cb - base, decoy_ring = ring - base, ea;
    struct insn_regs r;
    int vec;

    /* The same LWPCB at linear cb and at linear cb - base */
    set_based_seg(sel, base, SEG_DATA_RW);
    put_lwpcb(cb, ring - base, LWP_VAL | LWP_IRE);
    put_lwpcb(decoy, ring - base, LWP_VAL | LWP_IRE);
    memset(at(0x21000), 0, ring_size);
    memset(at(0x11000), 0, ring_size);
    vec = llwpcb(cb - base, sel);
    report(!vec && cbaddr() == cb, "DS.base %x, LLWPCB %x - expect LWPCB at "
           "DS.base + EA = %x (got vector %d, LWP_CBADDR %llx)", base,
           cb - base, cb, vec, cbaddr());
    report(((struct lwpcb *)cb)->flags == LWP_VAL &&
           ((struct lwpcb *)decoy)->flags == (LWP_VAL | LWP_IRE),
           "Flags written back at DS.base + EA only - expect %x there, %x "
           "at EA (got %x, %x)", LWP_VAL, LWP_VAL | LWP_IRE,
           ((struct lwpcb *)cb)->flags, ((struct lwpcb *)decoy)->flags);
    ea = slwpcb(sel);
    report(ea == cb - base, "SLWPCB with DS.base %x - expect the effective "
           "address %x (got %x)", base, cb - base, ea);
    ea = slwpcb(KERNEL_DS);
    report(ea == cb, "SLWPCB with DS.base 0 - expect %x (got %x)", cb, ea);
    set_based_seg(TEST_SEL(1), 0xfff00000, SEG_DATA_RW);
    ea = slwpcb(TEST_SEL(1));
    report(ea == cb + 0x100000, "SLWPCB with DS.base fff00000 - expect "
           "(linear - DS.base) mod 2^32 = %x (got %x)", cb + 0x100000, ea);
    init_regs(&r, KERNEL_DS);
    vec = run_insn(lwpins_ecx, &r);
    report(!vec && rec_at(0x21000)->event_id == EVENT_INS &&
           !((struct lwp_record *)decoy_ring)->event_id,
           "LWPINS - expect the record at DS.base + BufferBase = %x (got "
           "vector %d, EventId %u there, %u at BufferBase)", ring, vec,
           rec_at(0x21000)->event_id,
           ((struct lwp_record *)decoy_ring)->event_id);
    llwpcb(0, KERNEL_DS);

    /* Linear addresses are 32 bits: DS.base + EA wraps at 4 GiB */
    set_based_seg(sel, 0xfff00000, SEG_DATA_RW);
    put_lwpcb(cb, ring + 0x100000, LWP_VAL);
    memset(at(0x21000), 0, ring_size);
    vec = llwpcb(cb + 0x100000, sel);
    report(!vec && cbaddr() == cb, "DS.base fff00000, LLWPCB %x - expect "
           "LWPCB at linear %x (got vector %d, LWP_CBADDR %llx)",
           cb + 0x100000, cb, vec, cbaddr());
    ea = slwpcb(sel);
    report(ea == cb + 0x100000, "SLWPCB with DS.base fff00000 - expect %x "
           "(got %x)", cb + 0x100000, ea);
    vec = run_insn(lwpins_ecx, &r);
    report(!vec && rec_at(0x21000)->event_id == EVENT_INS,
           "LWPINS - expect the record at linear %x (got vector %d, "
           "EventId %u)", ring, vec, rec_at(0x21000)->event_id);
    llwpcb(0, KERNEL_DS);
}

static void test_ds_limits(void)
{
    const u32 sel = TEST_SEL(0), b = lin(at(0x30000));
    u32 lim;

    put_lwpcb(lin(at(CB0)), lin(at(RING0)), LWP_VAL);

    /* Byte-granular limit: ring at EA 0, LWPCB at EA 400h */
    put_lwpcb(b + 0x400, 0, LWP_VAL);
    lim = 0x400 + cb_bytes - 1;
    set_seg(sel, b, lim, SEG_DATA_RW, true, false);
    check_llwpcb_ok("DS.limit = end of the LWPCB (LwpCbSize * 8 bytes)",
                    0x400, sel, b + 0x400);
    set_seg(sel, b, lim - 1, SEG_DATA_RW, true, false);
    check_llwpcb_gp("DS.limit one byte short of the LWPCB", 0x400, sel);

    /* LWPCB at EA 40h, ring at EA 200h */
    put_lwpcb(b + 0x40, 0x200, LWP_VAL);
    lim = 0x200 + ring_size - 1;
    set_seg(sel, b, lim, SEG_DATA_RW, true, false);
    check_llwpcb_ok("DS.limit = end of the ring", 0x40, sel, b + 0x40);
    set_seg(sel, b, lim - 1, SEG_DATA_RW, true, false);
    check_llwpcb_gp("DS.limit one byte short of the ring", 0x40, sel);

    /* Expand-down, B = 1, limit FFFh: offsets 1000h to FFFFFFFFh */
    set_seg(sel, b - 0x1000, 0xfff, SEG_DATA_RW_DOWN, true, false);
    put_lwpcb(b, 0x1800, LWP_VAL);
    check_llwpcb_ok("expand-down DS, LWPCB at EA 1000h", 0x1000, sel, b);
    put_lwpcb(b - 8, 0x1800, LWP_VAL);
    check_llwpcb_gp("expand-down DS, LWPCB at EA FF8h", 0xff8, sel);
    put_lwpcb(b, 0xe00, LWP_VAL);
    check_llwpcb_gp("expand-down DS, ring at EA E00h", 0x1000, sel);

    /* Expand-down, B = 0: offsets 1000h to FFFFh */
    set_seg(sel, b - 0x1000, 0xfff, SEG_DATA_RW_DOWN, false, false);
    put_lwpcb(b, 0x10000 - ring_size, LWP_VAL);
    check_llwpcb_ok("expand-down 16-bit DS, ring ending at FFFFh", 0x1000,
                    sel, b);
    put_lwpcb(b, 0x10000 - ring_size + RECORD_SIZE, LWP_VAL);
    check_llwpcb_gp("expand-down 16-bit DS, ring past FFFFh", 0x1000, sel);

    /* Row 31: the range must not pass 4 GiB - 1 (base b + 2000h) */
    set_based_seg(sel, b + 0x2000, SEG_DATA_RW);
    put_lwpcb(b + 0x2000 - cb_bytes, 0xffffe000, LWP_VAL);
    check_llwpcb_ok("LWPCB ending at EA FFFFFFFFh", -cb_bytes, sel,
                    b + 0x2000 - cb_bytes);
    put_lwpcb(b + 0x2000 - cb_bytes + 1, 0xffffe000, LWP_VAL);
    check_llwpcb_gp("LWPCB ending at EA 100000000h", -cb_bytes + 1, sel);
    put_lwpcb(b + 0x800, -ring_size + RECORD_SIZE, LWP_VAL);
    check_llwpcb_gp("ring ending past EA FFFFFFFFh", 0xffffe800, sel);
    put_lwpcb(b + 0x800, -ring_size, LWP_VAL);
    check_llwpcb_ok("ring ending at EA FFFFFFFFh", 0xffffe800, sel,
                    b + 0x800);

    /* 5.1: a ring below the minimum size */
    if (ring_size > RECORD_SIZE) {
        put_lwpcb(b, lin(at(RING0)), LWP_VAL)->buffer_size -= RECORD_SIZE;
        check_llwpcb_gp("BufferSize 32 below 32 * LwpMinBufferSize records",
                        b, KERNEL_DS);
    }

    /* Spec 6: BufferBase[63:32] must be 0 outside 64-bit mode */
    put_lwpcb(b, BIT_ULL(32) | lin(at(RING0)), LWP_VAL);
    check_llwpcb_gp("BufferBase with bit 32 set", b, KERNEL_DS);

    /* Row 31: DS must be usable and writable */
    put_lwpcb(b, lin(at(RING0)), LWP_VAL);
    set_based_seg(sel, 0, SEG_DATA_RO);
    check_llwpcb_gp("read-only DS", b, sel);
    set_based_seg(sel, 0, SEG_CODE_RX);
    check_llwpcb_gp("DS = readable code segment", b, sel);
    check_llwpcb_gp("null DS", b, 0);
}

/* ---- 5: memory operands ---- */

static void test_mem_operands(void)
{
    const u32 d = lin(at(DATA)), based = TEST_SEL(0);
    struct insn_regs r;

    report_prefix_push("operands");
    init_regs(&r, KERNEL_DS);
    r.edx = 0xeeee0001;

    r.ebx = d;
    put32(d + 0x10, 0xd0000010);
    check_insn("LWPINS [EBX + 10h]",
               lwpins_ebx_d8, EVENT_INS, &r, 0xd0000010, r.edx);
    check_insn("LWPVAL [EBX + 10h]",
               lwpval_ebx_d8, EVENT_VAL, &r, 0xd0000010, r.edx);

    r.esi = 3;
    put32(d + 12 + 0x100, 0xd000010c);
    check_insn("LWPINS [EBX + ESI * 4 + 100h]",
               lwpins_sib_d32, EVENT_INS, &r, 0xd000010c, r.edx);
    check_insn("LWPVAL [EBX + ESI * 4 + 100h]",
               lwpval_sib_d32, EVENT_VAL, &r, 0xd000010c, r.edx);

    r.esi = (d - 0x100) / 8 + 2;
    put32(d + 16, 0xd0000016);
    check_insn("LWPINS [ESI * 8 + 100h]",
               lwpins_sib_nobase, EVENT_INS, &r, 0xd0000016, r.edx);

    /* DS.base = d: [100h] reads d + 100h */
    set_based_seg(based, d, SEG_DATA_RW);
    r.ds = based;
    put32(d + 0x100, 0xd0000100);
    check_insn("LWPINS [100h], DS.base = data",
               lwpins_d32, EVENT_INS, &r, 0xd0000100, r.edx);

    /* 16-bit addressing: the effective address is 16 bits */
    r.ebx = 0xabcd0100;
    r.esi = 0x12340020;
    put32(d + 0x120, 0xd0000120);
    check_insn("67h LWPINS [BX + SI], DS.base = data",
               lwpins_a16_bx_si, EVENT_INS, &r, 0xd0000120, r.edx);
    check_insn("67h LWPVAL [BX + SI], DS.base = data",
               lwpval_a16_bx_si, EVENT_VAL, &r, 0xd0000120, r.edx);
    put32(d + 0x130, 0xd0000130);
    check_insn("67h LWPINS [BX + SI + 10h]",
               lwpins_a16_bx_si_d8, EVENT_INS, &r, 0xd0000130, r.edx);
    r.ebx = 0xfff0;
    put32(d + 0x10, 0xd0000010);
    put32(d + 0x10010, 0xd0010010);
    check_insn("67h LWPINS [BX + SI], BX + SI = 10010h wraps to 10h",
               lwpins_a16_bx_si, EVENT_INS, &r, 0xd0000010, r.edx);
    check_insn("67h LWPINS [100h]",
               lwpins_a16_d16, EVENT_INS, &r, 0xd0000100, r.edx);

    /* [EBP + disp], [BP + DI + disp] use SS (base 0), not DS */
    set_based_seg(based, 0x10000, SEG_DATA_RW);
    r.ebp = d;
    put32(d + 8, 0x55000008);
    put32(d + 0x10000 + 8, 0xd5000008);
    check_insn("LWPINS [EBP + 8] with DS.base 10000h: SS",
               lwpins_ebp_d8, EVENT_INS, &r, 0x55000008, r.edx);
    check_insn("LWPVAL [EBP + 8] with DS.base 10000h: SS",
               lwpval_ebp_d8, EVENT_VAL, &r, 0x55000008, r.edx);
    r.ebp = LOW_SCRATCH;
    r.edi = 0x10;
    put32(LOW_SCRATCH + 0x18, 0x55007018);
    put32(0x10000 + LOW_SCRATCH + 0x18, 0xd5007018);
    check_insn("67h LWPINS [BP + DI + 8] with DS.base 10000h: SS",
               lwpins_a16_bp_di_d8, EVENT_INS, &r, 0x55007018, r.edx);
    r.ebx = d + 0x50;
    put32(d + 0x50, 0x55000050);
    put32(d + 0x10000 + 0x50, 0xd5000050);
    check_insn("LWPINS SS:[EBX] with DS.base 10000h",
               lwpins_ss_ebx, EVENT_INS, &r, 0x55000050, r.edx);

    /* Segment overrides: FS, ES, GS based at d + 1000h, 2000h, 3000h */
    init_regs(&r, KERNEL_DS);
    r.edx = 0xeeee0002;
    set_based_seg(TEST_SEL(1), d + 0x1000, SEG_DATA_RW);
    set_based_seg(TEST_SEL(2), d + 0x2000, SEG_DATA_RW);
    set_based_seg(TEST_SEL(3), d + 0x3000, SEG_DATA_RW);
    r.fs = TEST_SEL(1);
    r.es = TEST_SEL(2);
    r.gs = TEST_SEL(3);
    r.ebx = 0x40;
    put32(d + 0x1040, 0xf5001040);
    put32(d + 0x2040, 0xe5002040);
    check_insn("LWPINS FS:[EBX]",
               lwpins_fs_ebx, EVENT_INS, &r, 0xf5001040, r.edx);
    check_insn("LWPVAL FS:[EBX]",
               lwpval_fs_ebx, EVENT_VAL, &r, 0xf5001040, r.edx);
    check_insn("LWPINS ES:[EBX]",
               lwpins_es_ebx, EVENT_INS, &r, 0xe5002040, r.edx);
    r.ebx = 0x100;
    r.esi = 0x20;
    put32(d + 0x3120, 0x95003120);
    check_insn("65h 67h LWPINS GS:[BX + SI]",
               lwpins_gs_a16_bx_si, EVENT_INS, &r, 0x95003120, r.edx);
    report_prefix_pop();
}

/* ---- 6: #UD while XCR0[62] = 0, or without LWP ---- */

static void check_all_ud(const char *why)
{
    char what[80];

    snprintf(what, sizeof(what), "LLWPCB, %s", why);
    check_ud(what, llwpcb_eax);
    snprintf(what, sizeof(what), "SLWPCB, %s", why);
    check_ud(what, slwpcb_eax);
    snprintf(what, sizeof(what), "LWPINS, %s", why);
    check_ud(what, lwpins_ecx);
    snprintf(what, sizeof(what), "LWPVAL, %s", why);
    check_ud(what, lwpval_ecx);
}

static void test_xcr0(void)
{
    int vec = xsetbv_safe(0, XSTATE_X87_SSE);

    report(!vec, "XSETBV(0, 0x3) - expect accepted (got vector %d)", vec);
    check_all_ud("XCR0[62] = 0");
    xsetbv_safe(0, XSTATE_X87_SSE | XSTATE_LWP);
    vec = llwpcb(0, KERNEL_DS);
    report(!vec, "LLWPCB 0 with XCR0[62] = 1 again - expect no exception "
           "(got vector %d)", vec);
}

static void test_absent(void)
{
    int vec;

    report_prefix_push("absent");
    report(!(cpuid(0x80000001).c & CPUID_EXT3_LWP),
           "CPUID 0x80000001 ECX[15] (LWP) - expect 0");
    if (enable_osxsave()) {
        vec = xsetbv_safe(0, XSTATE_X87_SSE);
        report(!vec, "XSETBV(0, 0x3) - expect accepted (got vector %d)",
               vec);
    }
    check_all_ud("LWP not supported");
    check_pop();
    report_prefix_pop();
}

/* ---- 7: virtual-8086 mode ---- */

static void check_vm86(const char *what, const u8 *entry, int vector,
                       u32 fault_ip)
{
    u32 ip = entry - vm86_code;
    u64 before = cbaddr();
    int ret = run_in_vm86(VM86_SEG, ip, VM86_SEG, VM86_SP);
    const struct ex_regs *f = &user_ex_regs;

    report(ret == (USER_EXCEPTION | vector) && f->rip == fault_ip &&
           f->cs == VM86_SEG && (f->rflags & X86_EFLAGS_VM) &&
           cbaddr() == before,
           "%s - expect vector %d at %x:%x in virtual-8086 mode, "
           "LWP_CBADDR unchanged (got %x at %lx:%lx, EFLAGS %lx, %llx)",
           what, vector, VM86_SEG, fault_ip, ret, f->cs, f->rip, f->rflags,
           cbaddr());
}

static void test_vm86(void)
{
    u32 ip_pop = vm86_pop_hlt - vm86_code;

    report_prefix_push("vm86");
    memcpy((void *)(VM86_SEG * 16), vm86_code, vm86_code_end - vm86_code);
    put_lwpcb(lin(at(CB0)), lin(at(RING0)), LWP_VAL);
    llwpcb(lin(at(CB0)), KERNEL_DS);
    check_vm86("HLT at IOPL 0", vm86_hlt, GP_VECTOR,
               vm86_hlt - vm86_code);
    check_vm86("8F C0 then HLT: POP AX runs", vm86_pop_hlt, GP_VECTOR,
               ip_pop + 2);
    report(user_ex_regs.rsp == VM86_SP + 2, "SP after POP AX - expect %x "
           "(got %lx)", VM86_SP + 2, user_ex_regs.rsp);
    check_vm86("LLWPCB bytes 8F E9 78 12 C0 (POP, ModRM.reg 5)", vm86_llwpcb,
               UD_VECTOR, vm86_llwpcb - vm86_code);
    check_vm86("SLWPCB bytes 8F E9 78 12 C8", vm86_slwpcb, UD_VECTOR,
               vm86_slwpcb - vm86_code);
    check_vm86("LLWPCB bytes 8F 09 78 12 C0 (ModRM.reg 1)",
               vm86_llwpcb_rxb000, UD_VECTOR,
               vm86_llwpcb_rxb000 - vm86_code);
    check_vm86("LWPINS bytes 8F EA 68 12 C1", vm86_lwpins, UD_VECTOR,
               vm86_lwpins - vm86_code);
    check_vm86("LWPVAL bytes 8F EA 68 12 C9", vm86_lwpval, UD_VECTOR,
               vm86_lwpval - vm86_code);
    llwpcb(0, KERNEL_DS);
    report_prefix_pop();
}

/* ---- 8: CPL3 ---- */

struct user_lwp {
    u32 cb, ea_based;
    u16 ds;
    int vec[5];
    u32 eflags[2], slwpcb, slwpcb_based;
};

static void user_lwp(void *arg)
{
    struct user_lwp *u = arg;
    struct insn_regs r;

    init_regs(&r, USER_DS);
    r.eax = u->cb;
    u->vec[0] = run_insn(llwpcb_eax, &r);
    r.ecx = 0x3333cccc;
    r.edx = 0x4444dddd;
    u->vec[1] = run_insn(lwpins_ecx, &r);
    u->eflags[0] = r.eflags;
    u->vec[2] = run_insn(lwpval_ecx, &r);
    u->eflags[1] = r.eflags;
    u->vec[3] = run_insn(slwpcb_eax, &r);
    u->slwpcb = r.eax;
    r.ds = u->ds;
    r.eax = 0;
    run_insn(llwpcb_eax, &r);
    r.eax = u->ea_based;
    u->vec[4] = run_insn(llwpcb_eax, &r);
    run_insn(slwpcb_eax, &r);
    u->slwpcb_based = r.eax;
}

static void test_cpl3(void)
{
    const u32 base = 0x10000;
    struct user_lwp u = {
        .cb = lin(at(CB0)), .ea_based = lin(at(CB0)) - base,
        .ds = TEST_SEL(0) | 3,
    };
    const struct lwp_record *rec = rec_at(RING0);
    int ret;

    report_prefix_push("CPL3");
    set_based_seg(TEST_SEL(0), base, SEG_DATA_RW | SEG_DPL3);
    put_lwpcb(u.cb, lin(at(RING0)), LWP_VAL);
    memset(at(RING0), 0, ring_size);
    ret = run_in_user(user_lwp, &u);
    report(ret == 0, "user function - expect a normal return (got %x)", ret);
    report(!u.vec[0] && !u.vec[1] && !u.vec[2] && !u.vec[3],
           "LLWPCB, LWPINS, LWPVAL, SLWPCB at CPL3 - expect no exception "
           "(got vectors %d %d %d %d)", u.vec[0], u.vec[1], u.vec[2],
           u.vec[3]);
    report(!(u.eflags[0] & X86_EFLAGS_CF), "LWPINS at CPL3 - expect CF = 0 "
           "(got EFLAGS %x)", u.eflags[0]);
    report(u.slwpcb == u.cb, "SLWPCB at CPL3 - expect %x (got %x)", u.cb,
           u.slwpcb);
    report(cb_at(CB0)->head == 2 * RECORD_SIZE, "head after SLWPCB - expect "
           "2 records (got %u)", cb_at(CB0)->head);
    report(rec[0].event_id == EVENT_INS && rec[0].data1 == 0x3333cccc &&
           rec[0].data2 == 0x4444dddd && rec[0].ip == lin(lwpins_ecx) &&
           rec[0].core_id == CORE_ID,
           "LWPINS record - expect EventId 255, Data1 3333cccc, Data2 "
           "4444dddd, IP %x (got %u, %x, %llx, %llx)", lin(lwpins_ecx),
           rec[0].event_id, rec[0].data1, rec[0].data2, rec[0].ip);
    report(rec[1].event_id == EVENT_VAL && rec[1].ip == lin(lwpval_ecx),
           "LWPVAL record - expect EventId 1, IP %x (got %u, %llx)",
           lin(lwpval_ecx), rec[1].event_id, rec[1].ip);
    report(!u.vec[4] && cbaddr() == u.cb && u.slwpcb_based == u.ea_based,
           "LLWPCB %x at CPL3 with a DPL3 DS based at %x - expect LWPCB %x, "
           "SLWPCB %x (got vector %d, %llx, %x)", u.ea_based, base, u.cb,
           u.ea_based, u.vec[4], cbaddr(), u.slwpcb_based);
    llwpcb(0, KERNEL_DS);
    report_prefix_pop();
}

/* ---- 8b: the counters a flush stores at CPL3 (5.2, 7.3; choice 54) ---- */

#define FLUSH_OUT           0x2f000
#define FLUSH_AREA          0x30000     /* two 4 KiB XSAVE areas */

static void user_flush(void *arg)
{
    struct insn_regs r;

    init_regs(&r, USER_DS);
    r.ebx = lin(at(CB0));
    r.esi = lin(at(FLUSH_OUT));
    r.edi = lin(at(FLUSH_AREA));
    r.edx = BIT(30);
    *(int *)arg = run_insn(flush32_seq, &r);
}

/* EventCounter @id in the XSAVE area at @off (Figure 7-1: bytes 64-87) */
static u32 area_counter(u32 off, unsigned id)
{
    return *(u32 *)at(off + 0x340 + 64 + 4 * (id - 1));
}

/*
 * flush32_seq with IRE and BRE counters 1000 (interval 1000): each flush
 * stores the counters after the instructions before it, its own not
 * counted; LLWPCB is counted by neither LWP
 */
static void test_flush(void)
{
    u64 cfg = LWP_VAL | LWP_IRE | LWP_BRE | LWP_CFG_COREID(CORE_ID);
    static const u32 ire[5] = { 1000, 985, 980, 975, 970 };
    static const u32 bre[5] = { 1000, 1000, 1000, 999, 998 };
    u32 got[5][2];
    struct lwpcb *cb;
    const u32 *out = (const u32 *)at(FLUSH_OUT);
    int ret, vec = -1, k;
    bool ok;

    report_prefix_push("CPL3 flush");
    if ((cpuid(LWP_LEAF).d & (LWP_IRE | LWP_BRE)) != (LWP_IRE | LWP_BRE) ||
        wrmsr_safe(MSR_LWP_CFG, cfg)) {
        report_skip("IRE and BRE not available");
        report_prefix_pop();
        return;
    }
    cb = put_lwpcb(lin(at(CB0)), lin(at(RING0)), LWP_IRE | LWP_BRE);
    for (k = EVENT_IRE; k <= EVENT_BRE; k++) {
        cb->event[k - 1].interval = 1000;
        cb->event[k - 1].counter = 1000;
    }
    memset(at(RING0), 0, ring_size);
    memset(at(FLUSH_OUT), 0xee, 16);
    memset(at(FLUSH_AREA), 0, 8192);
    ret = run_in_user(user_flush, &vec);
    for (k = 0; k < 2; k++) {
        got[k][0] = out[2 * k];
        got[k][1] = out[2 * k + 1];
        got[k + 2][0] = area_counter(FLUSH_AREA + 4096 * k, EVENT_IRE);
        got[k + 2][1] = area_counter(FLUSH_AREA + 4096 * k, EVENT_BRE);
    }
    got[4][0] = cb->event[EVENT_IRE - 1].counter;
    got[4][1] = cb->event[EVENT_BRE - 1].counter;
    ok = !ret && !vec && cb->head == 0;
    for (k = 0; k < 5; k++) {
        ok = ok && got[k][0] == ire[k] && got[k][1] == bre[k];
    }
    report(ok, "IRE, BRE counters 1000: SLWPCB first after LLWPCB stores "
           "1000, 1000; SLWPCB 15 instructions later 985, 1000; XSAVE 5 "
           "later 980, 1000; XSAVE after a JMP 975, 999; LLWPCB 0 970, 998, "
           "no record (got return %x, vector %d, %u %u, %u %u, %u %u, "
           "%u %u, %u %u, head %u)", ret, vec, got[0][0], got[0][1],
           got[1][0], got[1][1], got[2][0], got[2][1], got[3][0], got[3][1],
           got[4][0], got[4][1], cb->head);
    wrmsr(MSR_LWP_CFG, LWP_VAL | LWP_CFG_COREID(CORE_ID));
    report_prefix_pop();
}

/*
 * DCache Misses (spec 2.4, choice 55): QEMU loads BOUND's pair of bounds
 * in a helper, which counts it as one load.  With the IP filter on BOUND
 * alone and the counter at 0, its miss stores a record: the bounds are
 * on a line that no CPL3 code loaded with DME on before, so DRAM (SRC 3,
 * 256 cycles with the default model) supplies it.
 */
struct user_bound {
    u32 cb, bounds;
    int vec[3];
};

/* LLWPCB cb; BOUND 5 against [bounds]; LLWPCB 0 */
static void user_bound(void *arg)
{
    struct user_bound *u = arg;
    const struct {
        const u8 *insn;
        u32 eax, ecx;
    } step[3] = {
        { llwpcb_eax, u->cb, 0 },
        { bound_eax_mecx, 5, u->bounds },
        { llwpcb_eax, 0, 0 },
    };
    struct insn_regs r;

    init_regs(&r, USER_DS);
    for (int i = 0; i < 3; i++) {
        r.eax = step[i].eax;
        r.ecx = step[i].ecx;
        u->vec[i] = run_insn(step[i].insn, &r);
    }
}

static void test_dme_bound(void)
{
    u64 cfg = LWP_VAL | LWP_DME | LWP_CFG_COREID(CORE_ID);
    /* a line of the arena that no DME period loaded */
    u32 *bounds = (u32 *)at(DATA + 0x400);
    struct user_bound u = { .cb = lin(at(CB0)), .bounds = lin(bounds) };
    const struct lwp_record *rec = rec_at(RING0);
    struct lwpcb *cb;
    u32 w0;
    int ret;

    report_prefix_push("CPL3 DME");
    if (!(cpuid(LWP_LEAF).d & LWP_DME) ||
        !(cpuid(LWP_LEAF).c & (1u << 29)) || wrmsr_safe(MSR_LWP_CFG, cfg)) {
        report_skip("DME or IP filtering not available");
        report_prefix_pop();
        return;
    }
    bounds[0] = 1;
    bounds[1] = 9;
    cb = put_lwpcb(lin(at(CB0)), lin(at(RING0)), LWP_DME);
    cb->event[EVENT_DME - 1].interval = 1;
    cb->event[EVENT_DME - 1].counter = 0;
    cb->filters = 1u << 31;                 /* IPF */
    cb->base_ip = cb->limit_ip = lin(bound_eax_mecx);
    memset(at(RING0), 0, ring_size);
    ret = run_in_user(user_bound, &u);
    w0 = rec[0].event_id | rec[0].core_id << 8 | (u32)rec[0].flags << 16;
    report(!ret && !u.vec[0] && !u.vec[1] && !u.vec[2] &&
           cb->head == RECORD_SIZE && rec[0].event_id == EVENT_DME &&
           rec[0].ip == lin(bound_eax_mecx) && rec[0].data2 == u.bounds &&
           w0 >> 28 == (3 << 1 | 1) && rec[0].data1 == 256,
           "BOUND within its bounds - expect one record: EventId 4, IP %x, "
           "DAV, SRC 3, latency 256, address %x (got return %x, vectors "
           "%d %d %d, head %u, EventId %u, IP %llx, flags %x, latency %u, "
           "address %llx)", lin(bound_eax_mecx), u.bounds, ret, u.vec[0],
           u.vec[1], u.vec[2], cb->head, rec[0].event_id, rec[0].ip,
           w0 >> 28, rec[0].data1, rec[0].data2);
    wrmsr(MSR_LWP_CFG, LWP_VAL | LWP_CFG_COREID(CORE_ID));
    report_prefix_pop();
}

/* ---- 9: XSAVE and XRSTOR of the LWP state (spec 7) ---- */

#define XSAVE_LWP_OFF       0x340               /* CPUID 0xD.62 EBX */
#define XSTATE_BV_OFF       512

/* Figure 7-1 */
struct xsave_lwp {
    u64 cb_addr;
    u32 flags;
    u32 head;
    u64 buffer_base;
    u32 buffer_size;
    u32 filters;
};

static u8 xarea[4096] __attribute__((aligned(64)));

static struct xsave_lwp *xlwp(void)
{
    return (struct xsave_lwp *)(xarea + XSAVE_LWP_OFF);
}

static u64 *xstate_bv(void)
{
    return (u64 *)(xarea + XSTATE_BV_OFF);
}

/* XSAVE or XRSTOR SS:[xarea], EDX:EAX = 1 << 62, with DS = @ds */
static int xsave_op(const u8 *insn, u16 seg, u16 ds)
{
    struct insn_regs r;

    init_regs(&r, seg);
    r.ds = ds;
    r.ebx = lin(xarea);
    r.edx = BIT(30);
    return run_insn(insn, &r);
}

struct user_xrstor {
    u16 ds;
    int vec;
    u32 slwpcb;
};

static void user_xrstor(void *arg)
{
    struct user_xrstor *u = arg;
    struct insn_regs r;

    u->vec = xsave_op(xrstor_ss_ebx, USER_DS, u->ds);
    init_regs(&r, USER_DS);
    r.ds = u->ds;
    r.eax = 0xdeadbeef;
    run_insn(slwpcb_eax, &r);
    u->slwpcb = r.eax;
}

/* XRSTOR at CPL3 with DS = @ds: LWP enabled, or disabled without a fault */
static void check_user_xrstor(const char *what, u16 ds, u32 ds_base,
                              u32 cb, bool enabled)
{
    struct user_xrstor u = { .ds = ds, .vec = -1 };
    u32 want = enabled ? cb - ds_base : 0;
    int ret;

    lwp_stop();
    ret = run_in_user(user_xrstor, &u);
    report(!ret && !u.vec && cbaddr() == (enabled ? cb : 0) &&
           u.slwpcb == want,
           "XRSTOR at CPL3, %s - expect LWP %s, no exception, SLWPCB %x "
           "(got %x, vector %d, LWP_CBADDR %llx, SLWPCB %x)", what,
           enabled ? "enabled" : "disabled", want, ret, u.vec, cbaddr(),
           u.slwpcb);
}

static void test_xsave(void)
{
    const u32 base = 0x10000, cb = lin(at(0x22000)), ring = lin(at(0x23000));
    struct xsave_lwp *x = xlwp();
    struct insn_regs r;
    int vec;

    report_prefix_push("XSAVE");
    memset(xarea, 0, sizeof(xarea));
    *xstate_bv() = XSTATE_LWP;
    vec = xsave_op(xsave_ss_ebx, KERNEL_DS, KERNEL_DS);
    report(!vec && !(*xstate_bv() & XSTATE_LWP), "XSAVE, LWP disabled - "
           "expect XSTATE_BV[62] = 0 (got vector %d, %llx)", vec,
           *xstate_bv());

    set_based_seg(TEST_SEL(0), base, SEG_DATA_RW);
    put_lwpcb(cb, ring - base, LWP_VAL);
    llwpcb(cb - base, TEST_SEL(0));
    init_regs(&r, KERNEL_DS);
    run_insn(lwpins_ecx, &r);
    vec = xsave_op(xsave_ss_ebx, KERNEL_DS, KERNEL_DS);
    report(!vec && (*xstate_bv() & XSTATE_LWP), "XSAVE, LWP enabled - "
           "expect XSTATE_BV[62] = 1 (got vector %d, %llx)", vec,
           *xstate_bv());
    report(x->cb_addr == cb && x->buffer_base == ring,
           "XSAVE after LLWPCB with DS.base %x - expect the linear "
           "LWPCBAddress %x and BufferBase %x (got %llx, %llx)", base, cb,
           ring, x->cb_addr, x->buffer_base);
    report(x->head == RECORD_SIZE && x->buffer_size == ring_size &&
           (x->flags & 0x7e) == LWP_VAL,
           "XSAVE - expect BufferHeadOffset 32, BufferSize %x, Counter1 "
           "only (got %x, %x, Flags %x)", ring_size, x->head,
           x->buffer_size, x->flags);

    /* 7.4: at CPL0 XRSTOR does not check the addresses against DS */
    lwp_stop();
    set_seg(TEST_SEL(1), 0, 0xfff, SEG_DATA_RW, true, false);
    vec = xsave_op(xrstor_ss_ebx, KERNEL_DS, TEST_SEL(1));
    report(!vec && cbaddr() == cb, "XRSTOR at CPL0 with DS.limit fffh - "
           "expect LWPCB %x (got vector %d, LWP_CBADDR %llx)", cb, vec,
           cbaddr());

    /* 7.4: at CPL3 a failed Check disables LWP without a fault */
    set_based_seg(TEST_SEL(0), base, SEG_DATA_RW | SEG_DPL3);
    set_seg(TEST_SEL(1), 0, 0xfff, SEG_DATA_RW | SEG_DPL3, true, false);
    set_based_seg(TEST_SEL(2), 0, SEG_DATA_RO | SEG_DPL3);
    check_user_xrstor("flat DS", USER_DS, 0, cb, true);
    check_user_xrstor("DS.base 10000h", TEST_SEL(0) | 3, base, cb, true);
    check_user_xrstor("DS.limit fffh", TEST_SEL(1) | 3, 0, cb, false);
    check_user_xrstor("read-only DS", TEST_SEL(2) | 3, 0, cb, false);
    set_seg(TEST_SEL(1), 0, (ring >> 12) - 1, SEG_DATA_RW | SEG_DPL3, true,
            true);
    check_user_xrstor("DS.limit below the ring", TEST_SEL(1) | 3, 0, cb,
                      false);
    set_seg(TEST_SEL(1), 0, ring >> 12, SEG_DATA_RW | SEG_DPL3, true, true);
    check_user_xrstor("DS.limit covering the ring", TEST_SEL(1) | 3, 0, cb,
                      true);

    /* 7.5: XSTATE_BV[62] = 0 gives the processor supplied values */
    *xstate_bv() &= ~XSTATE_LWP;
    vec = xsave_op(xrstor_ss_ebx, KERNEL_DS, KERNEL_DS);
    report(!vec && cbaddr() == 0, "XRSTOR with XSTATE_BV[62] = 0 - expect "
           "LWP disabled (got vector %d, LWP_CBADDR %llx)", vec, cbaddr());
    report_prefix_pop();
}

/* ---- 10: 2-level paging: LWP's own accesses use CPL3 rights (row 34) ---- */

#define PTE_P               BIT(0)
#define PTE_RW              BIT(1)
#define PTE_US              BIT(2)
#define PDE_PS              BIT(7)
#define PF_P                BIT(0)
#define PF_W                BIT(1)
#define PF_U                BIT(2)

/* The page directory maps 4 MiB pages; pgtab maps the arena's 4 MiB */
static u32 pgdir[1024] __attribute__((aligned(4096)));
static u32 pgtab[1024] __attribute__((aligned(4096)));

static void set_pte(u32 linear, u32 flags)
{
    /* the stores before it go through the old mapping */
    asm volatile("" : : : "memory");
    pgtab[(linear >> 12) & 0x3ff] = (linear & ~0xfffu) | flags;
    asm volatile("invlpg (%0)" : : "r"(linear) : "memory");
}

static bool paging_on(void)
{
    u32 i, region = lin(arena) & ~0x3fffffu;

    if ((lin(arena) + ARENA_SIZE - 1) >> 22 != region >> 22) {
        return false;
    }
    for (i = 0; i < 1024; i++) {
        pgdir[i] = i << 22 | PDE_PS | PTE_US | PTE_RW | PTE_P;
        pgtab[i] = (region + (i << 12)) | PTE_US | PTE_RW | PTE_P;
    }
    pgdir[region >> 22] = lin(pgtab) | PTE_US | PTE_RW | PTE_P;
    write_cr4(read_cr4() | X86_CR4_PSE);
    write_cr3(lin(pgdir));
    write_cr0(read_cr0() | X86_CR0_PG);       /* CR0.WP stays 0 */
    return true;
}

/* Run @insn at CPL0; expect #PF with @err and CR2 in [@lo, @hi] */
static void check_pf(const char *what, const u8 *insn, struct insn_regs *r,
                     u32 err, u32 lo, u32 hi)
{
    int vec = run_insn(insn, r);
    unsigned long cr2 = read_cr2();

    report(vec == PF_VECTOR && exception_error_code == err && cr2 >= lo &&
           cr2 <= hi, "%s - expect #PF, error code %x, CR2 in %x-%x (got "
           "vector %d, error code %lx, CR2 %lx)", what, err, lo, hi, vec,
           vec ? exception_error_code : 0, cr2);
}

static void test_paging(void)
{
    const u32 cb = lin(at(0x24000)), ring = lin(at(0x25000));
    const u32 opnd = lin(at(0x26000));
    const struct lwp_record *rec = (struct lwp_record *)ring;
    struct lwpcb *c = (struct lwpcb *)cb;
    struct insn_regs r;
    int vec;

    report_prefix_push("paging");
    if (!paging_on()) {
        report_skip("the arena crosses a 4 MiB boundary");
        report_prefix_pop();
        return;
    }
    init_regs(&r, KERNEL_DS);
    r.eax = cb;
    put_lwpcb(cb, ring, LWP_VAL);
    memset((void *)ring, 0, ring_size);

    /* Row 14 (b), (f): the LWPCB is read, then written, as at CPL3 */
    set_pte(cb, PTE_RW | PTE_P);
    check_pf("LLWPCB, LWPCB on a supervisor page", llwpcb_eax, &r,
             PF_U | PF_P, cb, cb + cb_bytes - 1);
    report(cbaddr() == 0, "LWP after the #PF - expect disabled (got "
           "LWP_CBADDR %llx)", cbaddr());
    set_pte(cb, PTE_US | PTE_P);
    check_pf("LLWPCB, LWPCB on a read-only user page (CR0.WP = 0)",
             llwpcb_eax, &r, PF_U | PF_W | PF_P, cb, cb + cb_bytes - 1);
    set_pte(cb, PTE_US | PTE_RW | PTE_P);

    /* The ring: LWPINS faults, stores nothing and can be restarted */
    set_pte(ring, PTE_US | PTE_P);
    vec = run_insn(llwpcb_eax, &r);
    report(!vec && cbaddr() == cb, "LLWPCB, ring on a read-only page - "
           "expect LWPCB %x loaded (got vector %d, LWP_CBADDR %llx)", cb,
           vec, cbaddr());
    r.ecx = 0x77777777;
    check_pf("LWPINS, ring on a read-only user page", lwpins_ecx, &r,
             PF_U | PF_W | PF_P, ring, ring + RECORD_SIZE - 1);
    set_pte(ring, PTE_RW | PTE_P);
    check_pf("LWPINS, ring on a supervisor page", lwpins_ecx, &r,
             PF_U | PF_W | PF_P, ring, ring + RECORD_SIZE - 1);
    set_pte(ring, PTE_US | PTE_RW | PTE_P);
    vec = run_insn(lwpins_ecx, &r);
    slwpcb(KERNEL_DS);
    report(!vec && !(r.eflags & X86_EFLAGS_CF) && c->head == RECORD_SIZE &&
           rec->data1 == 0x77777777, "LWPINS once the ring is writable - "
           "expect exactly one record (got vector %d, EFLAGS %x, head %u, "
           "Data1 %x)", vec, r.eflags, c->head, rec->data1);
    llwpcb(0, KERNEL_DS);

    /* 5.3: LWPVAL reads its operand only when it stores a record */
    put_lwpcb(cb, ring, LWP_VAL)->event[0].interval = 1;
    c->event[0].counter = 1;
    memset((void *)ring, 0, ring_size);
    put32(opnd + 0x40, 0x0e0e0e0e);
    set_pte(opnd, 0);
    r.eax = cb;
    run_insn(llwpcb_eax, &r);
    r.ebx = opnd + 0x30;
    vec = run_insn(lwpval_ebx_d8, &r);
    report(!vec, "LWPVAL [EBX + 10h] on a not-present page, counter 1 - "
           "expect no #PF (got vector %d)", vec);
    check_pf("LWPVAL [EBX + 10h] on a not-present page, counter 0",
             lwpval_ebx_d8, &r, 0, opnd + 0x40, opnd + 0x40);
    set_pte(opnd, PTE_US | PTE_RW | PTE_P);
    vec = run_insn(lwpval_ebx_d8, &r);
    vec |= run_insn(lwpval_ebx_d8, &r);
    slwpcb(KERNEL_DS);
    report(!vec && c->head == RECORD_SIZE && rec->data1 == 0x0e0e0e0e,
           "LWPVAL restarted after the #PF, then once more - expect one "
           "record, Data1 0e0e0e0e (got vector %d, head %u, Data1 %x)", vec,
           c->head, rec->data1);
    llwpcb(0, KERNEL_DS);

    /* Row 35: LWPINS always reads its operand, also with LWP disabled */
    set_pte(opnd, 0);
    check_pf("LWPINS [EBX + 10h] on a not-present page, LWP disabled",
             lwpins_ebx_d8, &r, 0, opnd + 0x40, opnd + 0x40);
    set_pte(opnd, PTE_US | PTE_RW | PTE_P);

    write_cr0(read_cr0() & ~X86_CR0_PG);
    report_prefix_pop();
}

/* ---- the PMU in legacy mode (config=pmu, -cpu Nehalem,pmu=on) ---- */

#define MSR_IA32_PMC0               0xc1
#define MSR_IA32_PERFEVTSEL0        0x186
#define MSR_IA32_PERF_GLOBAL_CTRL   0x38f

/* ECX iterations of DEC/JNZ, then a far return (it is called far) */
void misp32_loop(void);
asm(".pushsection .text\n"
    ".globl misp32_loop\n"
    "misp32_loop:\n\t"
    "1: dec %ecx\n\t"
    "jnz 1b\n\t"
    "lret\n"
    ".popsection");

/*
 * misp32_loop's @n iterations, called far through code segment @sel of
 * base @base, while PMC0 counts: returns PMC0
 */
static u32 misp32_run(u32 sel, u32 base, u32 n)
{
    struct {
        u32 off;
        u16 sel;
    } __attribute__((packed)) fp = { (u32)misp32_loop - base, sel };

    wrmsr(MSR_IA32_PMC0, 0);
    asm volatile("mov $0x38f, %%ecx\n\t"
                 "mov $1, %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n\t"
                 "mov %%esi, %%ecx\n\t"
                 "lcall *%[fp]\n\t"
                 "mov $0x38f, %%ecx\n\t"
                 "xor %%eax, %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr"
                 : : "S"(n), [fp] "m"(fp) : "eax", "ecx", "edx", "memory");
    return rdmsr(MSR_IA32_PMC0);
}

/*
 * BR_MISP_RETIRED.CONDITIONAL (C5H 01H) at CPL 0.  The predictor model
 * finds a branch's counter by its linear address, CS base + EIP
 * (docs/branch-predictor.md, "Addresses"): the same loop run through a
 * code segment based at 64 KiB, then through the flat one, is one
 * branch, whose counter the first run trained (from 1 at RESET: taken,
 * mispredicted, then predicted up to 3; the exit mispredicted, 2); the
 * second run mispredicts only its exit.  Far CALL and RET are never
 * mispredicted.
 */
static void test_pmu_cs_base(void)
{
    const u32 base = 0x10000, sel = TEST_SEL(0), n = 1000;
    u32 first, second, third;

    report_prefix_push("BR_MISP");
    set_based_seg(sel, base, SEG_CODE_RX);
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    wrmsr(MSR_IA32_PERFEVTSEL0, 0x4201c5);     /* EN, OS, C5H 01H */
    first = misp32_run(sel, base, n);
    second = misp32_run(KERNEL_CS, 0, n);
    third = misp32_run(sel, base, n);
    wrmsr(MSR_IA32_PERFEVTSEL0, 0);
    report(first == 2 && second == 1 && third == 1,
           "a loop through CS.base %x, then 0, then %x - expect 2, 1, 1 "
           "mispredicted conditional branches (got %u, %u, %u)", base,
           base, first, second, third);
    report_prefix_pop();
}

/* ---- P6 last branch recording (config=p6, nop6; SDM Vol. 3B 17.14) ---- */

/*
 * The P6 family's DEBUGCTLMSR and its four last branch and last exception
 * MSRs (17.14.1, 17.14.2).  The code that branches is the assembly below:
 * each lbr_* routine sets DEBUGCTLMSR to lbr_on_val (WRMSR is not a
 * branch), takes the branches under test at labelled instructions, then
 * writes DEBUGCTLMSR = 0 before it returns, so the C code reads what the
 * labelled branches left.  The raw IDT handlers (lbr_*_handler) copy the
 * five MSRs, with straight-line RDMSRs, before their own IRET: their
 * copies are what the interrupt or exception itself recorded.  Every
 * expected value is a label's address (minus the code segment base, 17.14.2
 * "offsets into the current code segment").
 */
#define MSR_DEBUGCTLMSR         0x1d9
#define MSR_LASTBRANCHFROMIP    0x1db
#define MSR_LASTBRANCHTOIP      0x1dc
#define MSR_LASTINTFROMIP       0x1dd
#define MSR_LASTINTTOIP         0x1de
#define DEBUGCTL_LBR            BIT(0)
#define DEBUGCTL_BTF            BIT(1)
#define DEBUGCTL_PB_BITS        0x3c    /* PB0-PB3 */
#define DEBUGCTL_TR             BIT(6)
#define CPUID_1_ECX_PDCM        BIT(15)
#define CPUID_1_EDX_DS          BIT(21)
#define CPUID_1_EDX_APIC        BIT(9)
#define X86_EFLAGS_TF           BIT(8)
#define DR6_B0                  BIT(0)
#define DR6_BS                  BIT(14)
#define LBR_INT_VECTOR          0x41    /* INT n */
#define LBR_HW_VECTOR           0x42    /* self-IPI */
#define DB_VECTOR               1
#define BP_VECTOR               3
/* The code segment of the CS base tests: TEST_SEL(0), base LBR_CS_BASE */
#define LBR_CS_BASE             0x10000
#define LBR_CS_SEL              TEST_SEL(0)
#define LBR_STR(x)              #x
#define LBR_XSTR(x)             LBR_STR(x)

/* DEBUGCTLMSR and the four MSRs, as RDMSR returns them (EDX:EAX) */
struct lbr_msrs {
    u64 ctl, from, to, efrom, eto;
};

/* What the lbr_* routines write to DEBUGCTLMSR first */
u32 lbr_on_val = DEBUGCTL_LBR;
/*
 * The copies of the handlers: INT n and the self-IPI (lbr_in_int), #UD,
 * #GP and #BP (lbr_in_exc), #DB (lbr_in_db, with DR6 in lbr_db_dr6)
 */
struct lbr_msrs lbr_in_int, lbr_in_exc, lbr_in_db;
u32 lbr_db_dr6, lbr_db_count, lbr_gp_error, lbr_gp_resume;

/*
 * LBR_ON/LBR_OFF clobber EAX, ECX, EDX.  LBR_SAVE copies the five MSRs to
 * \dst (a struct lbr_msrs) and preserves every register.  The "ud2" after
 * a jump is never reached: a routine that reaches one has taken a branch
 * it must not take (#UD: the test aborts).
 */
asm(".pushsection .text\n"
    ".macro LBR_ON\n\t"
    "mov $" LBR_XSTR(MSR_DEBUGCTLMSR) ", %ecx\n\t"
    "mov lbr_on_val, %eax\n\t"
    "xor %edx, %edx\n\t"
    "wrmsr\n"
    ".endm\n"
    ".macro LBR_OFF\n\t"
    "mov $" LBR_XSTR(MSR_DEBUGCTLMSR) ", %ecx\n\t"
    "xor %eax, %eax\n\t"
    "xor %edx, %edx\n\t"
    "wrmsr\n"
    ".endm\n"
    ".macro LBR_RD msr, dst\n\t"
    "mov $\\msr, %ecx\n\t"
    "rdmsr\n\t"
    "mov %eax, \\dst\n\t"
    "mov %edx, \\dst + 4\n"
    ".endm\n"
    ".macro LBR_SAVE dst\n\t"
    "push %eax\n\t"
    "push %ecx\n\t"
    "push %edx\n\t"
    "LBR_RD " LBR_XSTR(MSR_DEBUGCTLMSR) ", \\dst\n\t"
    "LBR_RD " LBR_XSTR(MSR_LASTBRANCHFROMIP) ", \\dst + 8\n\t"
    "LBR_RD " LBR_XSTR(MSR_LASTBRANCHTOIP) ", \\dst + 16\n\t"
    "LBR_RD " LBR_XSTR(MSR_LASTINTFROMIP) ", \\dst + 24\n\t"
    "LBR_RD " LBR_XSTR(MSR_LASTINTTOIP) ", \\dst + 32\n\t"
    "pop %edx\n\t"
    "pop %ecx\n\t"
    "pop %eax\n"
    ".endm\n"

    /* rule 3: one branch of each kind */
    ".globl lbr_jmp, lbr_jmp_from, lbr_jmp_to\n"
    "lbr_jmp:\n\t"
    "LBR_ON\n"
    "lbr_jmp_from: jmp lbr_jmp_to\n\t"
    "ud2\n"
    "lbr_jmp_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* JMP rel32: 200 bytes away */
    ".globl lbr_jmp32, lbr_jmp32_from, lbr_jmp32_to\n"
    "lbr_jmp32:\n\t"
    "LBR_ON\n"
    "lbr_jmp32_from: jmp lbr_jmp32_to\n\t"
    ".fill 200, 1, 0xcc\n"
    "lbr_jmp32_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    ".globl lbr_jmpr, lbr_jmpr_from, lbr_jmpr_to\n"
    "lbr_jmpr:\n\t"
    "LBR_ON\n\t"
    "mov $lbr_jmpr_to, %eax\n"
    "lbr_jmpr_from: jmp *%eax\n\t"
    "ud2\n"
    "lbr_jmpr_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    ".globl lbr_jmpm, lbr_jmpm_from, lbr_jmpm_to\n"
    "lbr_jmpm:\n\t"
    "LBR_ON\n"
    "lbr_jmpm_from: jmp *lbr_jmpm_ptr\n\t"
    "ud2\n"
    "lbr_jmpm_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    ".globl lbr_call, lbr_call_from, lbr_call_to\n"
    "lbr_call:\n\t"
    "LBR_ON\n"
    "lbr_call_from: call lbr_call_to\n\t"
    "ud2\n"
    "lbr_call_to:\n\t"
    "LBR_OFF\n\t"
    "add $4, %esp\n\t"
    "ret\n"

    ".globl lbr_callr, lbr_callr_from, lbr_callr_to\n"
    "lbr_callr:\n\t"
    "LBR_ON\n\t"
    "mov $lbr_callr_to, %eax\n"
    "lbr_callr_from: call *%eax\n\t"
    "ud2\n"
    "lbr_callr_to:\n\t"
    "LBR_OFF\n\t"
    "add $4, %esp\n\t"
    "ret\n"

    ".globl lbr_ret, lbr_ret_from, lbr_ret_to\n"
    "lbr_ret:\n\t"
    "LBR_ON\n\t"
    "push $lbr_ret_to\n"
    "lbr_ret_from: ret\n\t"
    "ud2\n"
    "lbr_ret_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* RET imm16 */
    ".globl lbr_retn, lbr_retn_from, lbr_retn_to\n"
    "lbr_retn:\n\t"
    "LBR_ON\n\t"
    "push $0\n\t"
    "push $lbr_retn_to\n"
    "lbr_retn_from: ret $4\n\t"
    "ud2\n"
    "lbr_retn_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* JZ rel8 with ZF = 1 */
    ".globl lbr_jz, lbr_jz_from, lbr_jz_to\n"
    "lbr_jz:\n\t"
    "LBR_ON\n\t"
    "xor %eax, %eax\n"
    "lbr_jz_from: jz lbr_jz_to\n\t"
    "ud2\n"
    "lbr_jz_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* JNC rel32 (0F 83), 200 bytes away, CF = 0 */
    ".globl lbr_jnc32, lbr_jnc32_from, lbr_jnc32_to\n"
    "lbr_jnc32:\n\t"
    "LBR_ON\n\t"
    "clc\n"
    "lbr_jnc32_from: jnc lbr_jnc32_to\n\t"
    ".fill 200, 1, 0xcc\n"
    "lbr_jnc32_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* JNZ backwards, taken once (ECX 2 -> 1), then falls through */
    ".globl lbr_jback, lbr_jback_from, lbr_jback_to\n"
    "lbr_jback:\n\t"
    "LBR_ON\n\t"
    "mov $2, %ecx\n"
    "lbr_jback_to: dec %ecx\n"
    "lbr_jback_from: jnz lbr_jback_to\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* JNZ backwards 999 times (chained blocks), the last time not */
    ".globl lbr_jmany, lbr_jmany_from, lbr_jmany_to\n"
    "lbr_jmany:\n\t"
    "LBR_ON\n\t"
    "mov $1000, %ecx\n"
    "lbr_jmany_to: dec %ecx\n"
    "lbr_jmany_from: jnz lbr_jmany_to\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* 1000 CALLs of a RET in a LOOP: the last RET's pair */
    ".globl lbr_cmany, lbr_cmany_from, lbr_cmany_to\n"
    "lbr_cmany:\n\t"
    "LBR_ON\n\t"
    "mov $1000, %ecx\n"
    "1: call lbr_cmany_from\n"
    "lbr_cmany_to: loop 1b\n\t"
    "LBR_OFF\n\t"
    "ret\n"
    "lbr_cmany_from: ret\n"

    /* LOOP with ECX = 2: jumps */
    ".globl lbr_loop, lbr_loop_from, lbr_loop_to\n"
    "lbr_loop:\n\t"
    "LBR_ON\n\t"
    "mov $2, %ecx\n"
    "lbr_loop_from: loop lbr_loop_to\n\t"
    "ud2\n"
    "lbr_loop_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    ".globl lbr_jecxz, lbr_jecxz_from, lbr_jecxz_to\n"
    "lbr_jecxz:\n\t"
    "LBR_ON\n\t"
    "xor %ecx, %ecx\n"
    "lbr_jecxz_from: jecxz lbr_jecxz_to\n\t"
    "ud2\n"
    "lbr_jecxz_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /*
     * A JMP, then a JNZ, a LOOP, a JECXZ, a JC rel32 and a LOOPNE that do
     * not jump: the pair stays the JMP's
     */
    ".globl lbr_nt, lbr_nt_from, lbr_nt_to\n"
    "lbr_nt:\n\t"
    "LBR_ON\n"
    "lbr_nt_from: jmp lbr_nt_to\n\t"
    "ud2\n"
    "lbr_nt_to:\n\t"
    "xor %eax, %eax\n\t"
    "jnz lbr_nt_bad\n\t"
    "mov $1, %ecx\n\t"
    "loop lbr_nt_bad\n\t"
    "inc %ecx\n\t"
    "jecxz lbr_nt_bad\n\t"
    "clc\n\t"
    "jc lbr_nt_bad32\n\t"
    "xor %eax, %eax\n\t"
    "mov $5, %ecx\n\t"
    "loopne lbr_nt_bad\n\t"    /* ZF = 1 */
    "LBR_OFF\n\t"
    "ret\n"
    "lbr_nt_bad:\n\t"
    "LBR_OFF\n\t"
    "ret\n\t"
    ".fill 200, 1, 0xcc\n"
    "lbr_nt_bad32:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* Two branches: only the last pair is kept */
    ".globl lbr_two, lbr_two_from, lbr_two_to\n"
    "lbr_two:\n\t"
    "LBR_ON\n\t"
    "jmp 1f\n\t"
    "ud2\n"
    "1:\n"
    "lbr_two_from: call lbr_two_to\n\t"
    "ud2\n"
    "lbr_two_to:\n\t"
    "LBR_OFF\n\t"
    "add $4, %esp\n\t"
    "ret\n"

    ".globl lbr_ljmp, lbr_ljmp_from, lbr_ljmp_to\n"
    "lbr_ljmp:\n\t"
    "LBR_ON\n"
    "lbr_ljmp_from: ljmp $" LBR_XSTR(KERNEL_CS) ", $lbr_ljmp_to\n\t"
    "ud2\n"
    "lbr_ljmp_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    ".globl lbr_lcall, lbr_lcall_from, lbr_lcall_to\n"
    "lbr_lcall:\n\t"
    "LBR_ON\n"
    "lbr_lcall_from: lcall $" LBR_XSTR(KERNEL_CS) ", $lbr_lcall_to\n\t"
    "ud2\n"
    "lbr_lcall_to:\n\t"
    "LBR_OFF\n\t"
    "add $8, %esp\n\t"
    "ret\n"

    ".globl lbr_lret, lbr_lret_from, lbr_lret_to\n"
    "lbr_lret:\n\t"
    "LBR_ON\n\t"
    "push %cs\n\t"
    "push $lbr_lret_to\n"
    "lbr_lret_from: lret\n\t"
    "ud2\n"
    "lbr_lret_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    ".globl lbr_iret, lbr_iret_from, lbr_iret_to\n"
    "lbr_iret:\n\t"
    "LBR_ON\n\t"
    "pushf\n\t"
    "push %cs\n\t"
    "push $lbr_iret_to\n"
    "lbr_iret_from: iret\n\t"
    "ud2\n"
    "lbr_iret_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /*
     * CS base LBR_CS_BASE: a far JMP into the based segment, a near JMP
     * in it, a far JMP out of it
     */
    ".globl lbr_csin, lbr_csin_from, lbr_csin_to\n"
    "lbr_csin:\n\t"
    "LBR_ON\n"
    "lbr_csin_from: ljmp $" LBR_XSTR(LBR_CS_SEL) ", $lbr_csin_to - "
        LBR_XSTR(LBR_CS_BASE) "\n\t"
    "ud2\n"
    "lbr_csin_to:\n\t"
    "LBR_OFF\n\t"
    "ljmp $" LBR_XSTR(KERNEL_CS) ", $1f\n"
    "1: ret\n"

    ".globl lbr_csnear, lbr_csnear_from, lbr_csnear_to\n"
    "lbr_csnear:\n\t"
    "ljmp $" LBR_XSTR(LBR_CS_SEL) ", $1f - " LBR_XSTR(LBR_CS_BASE) "\n"
    "1:\n\t"
    "LBR_ON\n"
    "lbr_csnear_from: jmp lbr_csnear_to\n\t"
    "ud2\n"
    "lbr_csnear_to:\n\t"
    "LBR_OFF\n\t"
    "ljmp $" LBR_XSTR(KERNEL_CS) ", $1f\n"
    "1: ret\n"

    ".globl lbr_csout, lbr_csout_from, lbr_csout_to\n"
    "lbr_csout:\n\t"
    "ljmp $" LBR_XSTR(LBR_CS_SEL) ", $1f - " LBR_XSTR(LBR_CS_BASE) "\n"
    "1:\n\t"
    "LBR_ON\n"
    "lbr_csout_from: ljmp $" LBR_XSTR(KERNEL_CS) ", $lbr_csout_to\n\t"
    "ud2\n"
    "lbr_csout_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* rule 4: INT n after a JMP, returning by IRET */
    ".globl lbr_int, lbr_int_jmp, lbr_int_at, lbr_int_ret\n"
    "lbr_int:\n\t"
    "LBR_ON\n"
    "lbr_int_jmp: jmp lbr_int_at\n\t"
    "ud2\n"
    "lbr_int_at: int $" LBR_XSTR(LBR_INT_VECTOR) "\n"
    "lbr_int_ret:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    ".globl lbr_int_handler, lbr_int_iret\n"
    "lbr_int_handler:\n\t"
    "LBR_SAVE lbr_in_int\n"
    "lbr_int_iret: iret\n"

    /* ... the same in the segment of base LBR_CS_BASE */
    ".globl lbr_csint, lbr_csint_jmp, lbr_csint_at, lbr_csint_ret\n"
    "lbr_csint:\n\t"
    "ljmp $" LBR_XSTR(LBR_CS_SEL) ", $1f - " LBR_XSTR(LBR_CS_BASE) "\n"
    "1:\n\t"
    "LBR_ON\n"
    "lbr_csint_jmp: jmp lbr_csint_at\n\t"
    "ud2\n"
    "lbr_csint_at: int $" LBR_XSTR(LBR_INT_VECTOR) "\n"
    "lbr_csint_ret:\n\t"
    "LBR_OFF\n\t"
    "ljmp $" LBR_XSTR(KERNEL_CS) ", $1f\n"
    "1: ret\n"

    /* #UD (a fault) from UD2; the handler resumes at lbr_ud_ret */
    ".globl lbr_ud, lbr_ud_jmp, lbr_ud_at, lbr_ud_ret\n"
    "lbr_ud:\n\t"
    "LBR_ON\n"
    "lbr_ud_jmp: jmp lbr_ud_at\n\t"
    "ud2\n"
    "lbr_ud_at: ud2\n"
    "lbr_ud_ret:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    ".globl lbr_ud_handler, lbr_ud_iret\n"
    "lbr_ud_handler:\n\t"
    "LBR_SAVE lbr_in_exc\n\t"
    "movl $lbr_ud_ret, (%esp)\n"
    "lbr_ud_iret: iret\n"

    /*
     * #GP(FFF8h) (a fault) from MOV DS of a selector beyond the GDT's
     * limit; the handler resumes at lbr_gp_ret
     */
    ".globl lbr_gp, lbr_gp_jmp, lbr_gp_at, lbr_gp_ret\n"
    "lbr_gp:\n\t"
    "LBR_ON\n\t"
    "mov $0xfff8, %eax\n"
    "lbr_gp_jmp: jmp lbr_gp_at\n\t"
    "ud2\n"
    "lbr_gp_at: mov %eax, %ds\n"
    "lbr_gp_ret:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* A far JMP to selector FFF8h: #GP(FFF8h) at the JMP, not taken */
    ".globl lbr_gpj, lbr_gpj_jmp, lbr_gpj_at, lbr_gpj_ret\n"
    "lbr_gpj:\n\t"
    "LBR_ON\n"
    "lbr_gpj_jmp: jmp lbr_gpj_at\n\t"
    "ud2\n"
    "lbr_gpj_at: ljmp $0xfff8, $lbr_gpj_ret\n"
    "lbr_gpj_ret:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* #GP: resumes at lbr_gp_resume */
    ".globl lbr_gp_handler, lbr_gp_iret\n"
    "lbr_gp_handler:\n\t"
    "LBR_SAVE lbr_in_exc\n\t"
    "popl lbr_gp_error\n\t"
    "push %eax\n\t"
    "mov lbr_gp_resume, %eax\n\t"
    "mov %eax, 4(%esp)\n\t"
    "pop %eax\n"
    "lbr_gp_iret: iret\n"

    /* INT3: #BP, a trap, not a debug exception */
    ".globl lbr_bp, lbr_bp_jmp, lbr_bp_at, lbr_bp_ret\n"
    "lbr_bp:\n\t"
    "LBR_ON\n"
    "lbr_bp_jmp: jmp lbr_bp_at\n\t"
    "ud2\n"
    "lbr_bp_at: int3\n"
    "lbr_bp_ret:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    ".globl lbr_bp_handler, lbr_bp_iret\n"
    "lbr_bp_handler:\n\t"
    "LBR_SAVE lbr_in_exc\n"
    "lbr_bp_iret: iret\n"

    /*
     * A hardware interrupt: the self-IPI is pending (IF = 0); STI lets it
     * in after the NOP in the STI's shadow, before the CLI
     */
    ".globl lbr_hw, lbr_hw_jmp, lbr_hw_sti, lbr_hw_at\n"
    "lbr_hw:\n\t"
    "LBR_ON\n"
    "lbr_hw_jmp: jmp lbr_hw_sti\n\t"
    "ud2\n"
    "lbr_hw_sti: sti\n\t"
    "nop\n"
    "lbr_hw_at: cli\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* ... and STI; HLT: the interrupt ends the HLT */
    ".globl lbr_hlt, lbr_hlt_jmp, lbr_hlt_sti, lbr_hlt_at\n"
    "lbr_hlt:\n\t"
    "LBR_ON\n"
    "lbr_hlt_jmp: jmp lbr_hlt_sti\n\t"
    "ud2\n"
    "lbr_hlt_sti: sti\n\t"
    "hlt\n"
    "lbr_hlt_at: cli\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    ".globl lbr_hw_handler, lbr_hw_iret\n"
    "lbr_hw_handler:\n\t"
    "LBR_SAVE lbr_in_int\n\t"
    "movl $0, " LBR_XSTR(APIC_BASE + APIC_EOI) "\n"
    "lbr_hw_iret: iret\n"

    /*
     * rule 5: a JMP, INT n (and its IRET), then POPF sets TF: the JMP
     * after it is single-stepped, #DB before lbr_tf_to
     */
    ".globl lbr_tf, lbr_tf_j1, lbr_tf_int, lbr_tf_after, lbr_tf_j2, "
        "lbr_tf_to\n"
    "lbr_tf:\n\t"
    "LBR_ON\n"
    "lbr_tf_j1: jmp lbr_tf_int\n\t"
    "ud2\n"
    "lbr_tf_int: int $" LBR_XSTR(LBR_INT_VECTOR) "\n"
    "lbr_tf_after:\n\t"
    "pushf\n\t"
    "orl $" LBR_XSTR(X86_EFLAGS_TF) ", (%esp)\n\t"
    "popf\n"
    "lbr_tf_j2: jmp lbr_tf_to\n\t"
    "ud2\n"
    "lbr_tf_to:\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* The same with a DR0 breakpoint (a fault) at lbr_dr_at */
    ".globl lbr_dr, lbr_dr_j1, lbr_dr_int, lbr_dr_after, lbr_dr_j2, "
        "lbr_dr_at\n"
    "lbr_dr:\n\t"
    "LBR_ON\n"
    "lbr_dr_j1: jmp lbr_dr_int\n\t"
    "ud2\n"
    "lbr_dr_int: int $" LBR_XSTR(LBR_INT_VECTOR) "\n"
    "lbr_dr_after:\n"
    "lbr_dr_j2: jmp lbr_dr_at\n\t"
    "ud2\n"
    "lbr_dr_at: nop\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* ... and with ICEBP (INT1, F1h, a trap) at lbr_icebp_at */
    ".globl lbr_icebp, lbr_icebp_j1, lbr_icebp_int, lbr_icebp_after, "
        "lbr_icebp_j2, lbr_icebp_at\n"
    "lbr_icebp:\n\t"
    "LBR_ON\n"
    "lbr_icebp_j1: jmp lbr_icebp_int\n\t"
    "ud2\n"
    "lbr_icebp_int: int $" LBR_XSTR(LBR_INT_VECTOR) "\n"
    "lbr_icebp_after:\n"
    "lbr_icebp_j2: jmp lbr_icebp_at\n\t"
    "ud2\n"
    "lbr_icebp_at: .byte 0xf1\n\t"
    "LBR_OFF\n\t"
    "ret\n"

    /* #DB: TF cleared and RF set in the frame (RF: past the DR0 fault) */
    ".globl lbr_db_handler, lbr_db_iret\n"
    "lbr_db_handler:\n\t"
    "LBR_SAVE lbr_in_db\n\t"
    "push %eax\n\t"
    "mov %dr6, %eax\n\t"
    "mov %eax, lbr_db_dr6\n\t"
    "mov $0xffff0ff0, %eax\n\t"
    "mov %eax, %dr6\n\t"
    "pop %eax\n\t"
    "incl lbr_db_count\n\t"
    "andl $~" LBR_XSTR(X86_EFLAGS_TF) ", 8(%esp)\n\t"
    "orl $0x10000, 8(%esp)\n"
    "lbr_db_iret: iret\n"
    ".popsection\n"
    ".pushsection .rodata\n"
    "lbr_jmpm_ptr: .long lbr_jmpm_to\n"
    ".popsection");

#define LBR_ROUTINE(name) void name(void);
#define LBR_LABELS(...) extern const u8 __VA_ARGS__;
LBR_ROUTINE(lbr_jmp) LBR_ROUTINE(lbr_jmp32) LBR_ROUTINE(lbr_jmpr)
LBR_ROUTINE(lbr_jmpm) LBR_ROUTINE(lbr_call) LBR_ROUTINE(lbr_callr)
LBR_ROUTINE(lbr_ret) LBR_ROUTINE(lbr_retn) LBR_ROUTINE(lbr_jz)
LBR_ROUTINE(lbr_jnc32) LBR_ROUTINE(lbr_jback) LBR_ROUTINE(lbr_loop)
LBR_ROUTINE(lbr_jecxz) LBR_ROUTINE(lbr_nt) LBR_ROUTINE(lbr_two)
LBR_ROUTINE(lbr_ljmp) LBR_ROUTINE(lbr_lcall) LBR_ROUTINE(lbr_lret)
LBR_ROUTINE(lbr_iret) LBR_ROUTINE(lbr_csin) LBR_ROUTINE(lbr_csnear)
LBR_ROUTINE(lbr_csout) LBR_ROUTINE(lbr_int) LBR_ROUTINE(lbr_csint)
LBR_ROUTINE(lbr_ud) LBR_ROUTINE(lbr_gp) LBR_ROUTINE(lbr_bp)
LBR_ROUTINE(lbr_hw) LBR_ROUTINE(lbr_tf) LBR_ROUTINE(lbr_dr)
LBR_ROUTINE(lbr_icebp) LBR_ROUTINE(lbr_gpj) LBR_ROUTINE(lbr_jmany)
LBR_ROUTINE(lbr_cmany) LBR_ROUTINE(lbr_hlt)
LBR_LABELS(lbr_jmp_from[], lbr_jmp_to[], lbr_jmp32_from[], lbr_jmp32_to[],
           lbr_jmpr_from[], lbr_jmpr_to[], lbr_jmpm_from[], lbr_jmpm_to[],
           lbr_call_from[], lbr_call_to[], lbr_callr_from[], lbr_callr_to[],
           lbr_ret_from[], lbr_ret_to[], lbr_retn_from[], lbr_retn_to[],
           lbr_jz_from[], lbr_jz_to[], lbr_jnc32_from[], lbr_jnc32_to[],
           lbr_jback_from[], lbr_jback_to[], lbr_loop_from[],
           lbr_loop_to[], lbr_jecxz_from[], lbr_jecxz_to[], lbr_nt_from[],
           lbr_nt_to[], lbr_two_from[], lbr_two_to[], lbr_ljmp_from[],
           lbr_ljmp_to[], lbr_lcall_from[], lbr_lcall_to[],
           lbr_lret_from[], lbr_lret_to[], lbr_iret_from[], lbr_iret_to[],
           lbr_csin_from[], lbr_csin_to[], lbr_csnear_from[],
           lbr_csnear_to[], lbr_csout_from[], lbr_csout_to[])
LBR_LABELS(lbr_int_jmp[], lbr_int_at[], lbr_int_ret[], lbr_int_handler[],
           lbr_int_iret[], lbr_csint_jmp[], lbr_csint_at[],
           lbr_csint_ret[], lbr_ud_jmp[], lbr_ud_at[], lbr_ud_ret[],
           lbr_ud_handler[], lbr_ud_iret[], lbr_gp_jmp[], lbr_gp_at[],
           lbr_gp_ret[], lbr_gp_handler[], lbr_gp_iret[], lbr_bp_jmp[],
           lbr_bp_at[], lbr_bp_ret[], lbr_bp_handler[], lbr_bp_iret[],
           lbr_hw_jmp[], lbr_hw_sti[], lbr_hw_at[], lbr_hw_handler[],
           lbr_hw_iret[], lbr_tf_j1[], lbr_tf_int[], lbr_tf_after[],
           lbr_tf_j2[], lbr_tf_to[], lbr_dr_j1[], lbr_dr_int[],
           lbr_dr_after[], lbr_dr_j2[], lbr_dr_at[], lbr_icebp_j1[],
           lbr_icebp_int[], lbr_icebp_after[], lbr_icebp_j2[],
           lbr_icebp_at[], lbr_db_handler[], lbr_db_iret[])
LBR_LABELS(lbr_gpj_jmp[], lbr_gpj_at[], lbr_gpj_ret[], lbr_jmany_from[],
           lbr_jmany_to[], lbr_cmany_from[], lbr_cmany_to[], lbr_hlt_jmp[],
           lbr_hlt_sti[], lbr_hlt_at[])

/* EIP of a label in the segment of base LBR_CS_BASE */
static u32 cs_off(const u8 *label)
{
    return lin(label) - LBR_CS_BASE;
}

/*
 * RDMSR of the five MSRs; a vector other than 0 in *@vec (or'ed) and
 * ~0 in the value when one faulted
 */
static struct lbr_msrs read_lbr(int *vec)
{
    static const u32 idx[5] = {
        MSR_DEBUGCTLMSR, MSR_LASTBRANCHFROMIP, MSR_LASTBRANCHTOIP,
        MSR_LASTINTFROMIP, MSR_LASTINTTOIP,
    };
    u64 v[5];
    int i, e = 0;

    for (i = 0; i < 5; i++) {
        int x = rdmsr_safe(idx[i], &v[i]);

        if (x) {
            v[i] = ~0ull;
            e = x;
        }
    }
    if (vec) {
        *vec = e;
    }
    return (struct lbr_msrs){ v[0], v[1], v[2], v[3], v[4] };
}

static bool lbr_eq(const struct lbr_msrs *a, const struct lbr_msrs *b)
{
    return a->ctl == b->ctl && a->from == b->from && a->to == b->to &&
           a->efrom == b->efrom && a->eto == b->eto;
}

/* Five values as "DEBUGCTLMSR x, branch x -> x, exception x -> x" */
static const char *lbr_str(char *buf, size_t size, const struct lbr_msrs *m)
{
    snprintf(buf, size, "DEBUGCTLMSR %llx, branch %llx -> %llx, exception "
             "%llx -> %llx", m->ctl, m->from, m->to, m->efrom, m->eto);
    return buf;
}

/* @m holds these (EDX = 0 in all five) */
static void check_lbr(const char *what, const struct lbr_msrs *m, u32 ctl,
                      u32 from, u32 to, u32 efrom, u32 eto)
{
    char got[160];

    report(m->ctl == ctl && m->from == from && m->to == to &&
           m->efrom == efrom && m->eto == eto,
           "%s - expect DEBUGCTLMSR %x, branch %x -> %x, exception %x -> %x "
           "(got %s)", what, ctl, from, to, efrom, eto,
           lbr_str(got, sizeof(got), m));
}

/* Run @fn; the five MSRs after it, which must not fault */
static struct lbr_msrs run_lbr(void (*fn)(void))
{
    struct lbr_msrs m;
    int vec;

    fn();
    m = read_lbr(&vec);
    if (vec) {
        report(false, "RDMSR of DEBUGCTLMSR, 1DBH-1DEH - expect no fault "
               "(got vector %d)", vec);
    }
    return m;
}

/*
 * The INT n, #BP, #DB and self-IPI handlers of these tests.  The #UD and
 * #GP ones are in place only while lbr_ud and lbr_gp run (lbr_ud_run(),
 * lbr_gp_run()): the *_safe helpers need the usual ones.
 */
static void lbr_handlers(bool on)
{
    set_raw_handler(LBR_INT_VECTOR, on ? lin(lbr_int_handler) : 0);
    set_raw_handler(LBR_HW_VECTOR, on ? lin(lbr_hw_handler) : 0);
    set_raw_handler(BP_VECTOR, on ? lin(lbr_bp_handler) : 0);
    set_raw_handler(DB_VECTOR, on ? lin(lbr_db_handler) : 0);
}

/* lbr_ud and lbr_gp with their handlers (the C code runs with LBR clear) */
static void lbr_ud_run(void)
{
    set_raw_handler(UD_VECTOR, lin(lbr_ud_handler));
    lbr_ud();
    set_raw_handler(UD_VECTOR, 0);
}

static void lbr_gp_run(void)
{
    lbr_gp_resume = lin(lbr_gp_ret);
    set_raw_handler(GP_VECTOR, lin(lbr_gp_handler));
    lbr_gp();
    set_raw_handler(GP_VECTOR, 0);
}

static void lbr_gpj_run(void)
{
    lbr_gp_resume = lin(lbr_gpj_ret);
    set_raw_handler(GP_VECTOR, lin(lbr_gp_handler));
    lbr_gpj();
    set_raw_handler(GP_VECTOR, 0);
}

/* Rules 1, 2: DEBUGCTLMSR's bits, RESET values, the read-only four */
static void test_lbr_msrs(void)
{
    static const u32 ok[] = { 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40,
                              0x7f, 0x3c, 0x00 };
    struct lbr_msrs m = read_lbr(NULL);
    u32 i, nbad = 0, first_bad = 0;
    u64 got = 0;
    int vec;

    report_prefix_push("MSRs");
    check_lbr("after RESET", &m, 0, 0, 0, 0, 0);
    for (i = 0; i < ARRAY_SIZE(ok); i++) {
        vec = wrmsr_safe(MSR_DEBUGCTLMSR, ok[i]);
        got = ~0ull;
        rdmsr_safe(MSR_DEBUGCTLMSR, &got);
        report(!vec && got == ok[i], "WRMSR(DEBUGCTLMSR, %x) - expect "
               "accepted, read back (got vector %d, %llx)", ok[i], vec, got);
    }
    /* Bits 7-63: #GP, DEBUGCTLMSR unchanged (here PB0-3, TR, BTF set) */
    wrmsr(MSR_DEBUGCTLMSR, 0x7e);
    for (i = 7; i < 64; i++) {
        u64 val = 0x7e | BIT_ULL(i);

        vec = wrmsr_safe(MSR_DEBUGCTLMSR, val);
        got = ~0ull;
        rdmsr_safe(MSR_DEBUGCTLMSR, &got);
        if (vec != GP_VECTOR || got != 0x7e) {
            if (!nbad++) {
                first_bad = i;
            }
        }
    }
    report(!nbad, "WRMSR(DEBUGCTLMSR, 7eh | 1 << n), n = 7 to 63 - expect "
           "#GP, 7eh kept each time (got %u wrong, the first for bit %u)",
           nbad, first_bad);
    vec = wrmsr_safe(MSR_DEBUGCTLMSR, 0xffffffffffffffffull);
    got = ~0ull;
    rdmsr_safe(MSR_DEBUGCTLMSR, &got);
    report(vec == GP_VECTOR && got == 0x7e, "WRMSR(DEBUGCTLMSR, all ones) - "
           "expect #GP, 7eh kept (got vector %d, %llx)", vec, got);
    wrmsr(MSR_DEBUGCTLMSR, 0);
    report_prefix_pop();
}

/* Rule 2, after a branch left values in them: WRMSR #GPs, changes nothing */
static void test_lbr_readonly(void)
{
    static const u32 idx[4] = { MSR_LASTBRANCHFROMIP, MSR_LASTBRANCHTOIP,
                                MSR_LASTINTFROMIP, MSR_LASTINTTOIP };
    static const u64 vals[3] = { 0, 0x12345678, 0x400000 };
    struct lbr_msrs before = run_lbr(lbr_int), after;
    char got[160];
    u32 i, j;
    int vec;

    report_prefix_push("read-only");
    for (i = 0; i < 4; i++) {
        for (j = 0; j < 3; j++) {
            vec = wrmsr_safe(idx[i], vals[j]);
            after = read_lbr(NULL);
            report(vec == GP_VECTOR && lbr_eq(&before, &after),
                   "WRMSR(%x, %llx) - expect #GP, all five unchanged (got "
                   "vector %d, %s)", idx[i], vals[j], vec,
                   lbr_str(got, sizeof(got), &after));
        }
    }
    report_prefix_pop();
}

struct lbr_case {
    const char *what;
    void (*fn)(void);
    u32 from, to;
};

/* Rule 3 (and 6: no interrupt or exception recorded yet, so 0 -> 0) */
static void test_lbr_branches(void)
{
    const struct lbr_case cases[] = {
        { "JMP rel8", lbr_jmp, lin(lbr_jmp_from), lin(lbr_jmp_to) },
        { "JMP rel32", lbr_jmp32, lin(lbr_jmp32_from), lin(lbr_jmp32_to) },
        { "JMP EAX", lbr_jmpr, lin(lbr_jmpr_from), lin(lbr_jmpr_to) },
        { "JMP [m32]", lbr_jmpm, lin(lbr_jmpm_from), lin(lbr_jmpm_to) },
        { "CALL rel32", lbr_call, lin(lbr_call_from), lin(lbr_call_to) },
        { "CALL EAX", lbr_callr, lin(lbr_callr_from), lin(lbr_callr_to) },
        { "RET", lbr_ret, lin(lbr_ret_from), lin(lbr_ret_to) },
        { "RET 4", lbr_retn, lin(lbr_retn_from), lin(lbr_retn_to) },
        { "JZ rel8, ZF = 1", lbr_jz, lin(lbr_jz_from), lin(lbr_jz_to) },
        { "JNC rel32, CF = 0", lbr_jnc32, lin(lbr_jnc32_from),
          lin(lbr_jnc32_to) },
        { "JNZ backwards, taken once, then not", lbr_jback,
          lin(lbr_jback_from), lin(lbr_jback_to) },
        { "JNZ backwards, taken 999 times, then not", lbr_jmany,
          lin(lbr_jmany_from), lin(lbr_jmany_to) },
        { "1000 CALL; RET; LOOP: the last RET", lbr_cmany,
          lin(lbr_cmany_from), lin(lbr_cmany_to) },
        { "LOOP, ECX 2", lbr_loop, lin(lbr_loop_from), lin(lbr_loop_to) },
        { "JECXZ, ECX 0", lbr_jecxz, lin(lbr_jecxz_from),
          lin(lbr_jecxz_to) },
        { "JMP, then JNZ, LOOP, JECXZ, JC rel32, LOOPNE not taken: the "
          "JMP's pair", lbr_nt, lin(lbr_nt_from), lin(lbr_nt_to) },
        { "JMP, then CALL: the CALL's pair only", lbr_two,
          lin(lbr_two_from), lin(lbr_two_to) },
        { "far JMP", lbr_ljmp, lin(lbr_ljmp_from), lin(lbr_ljmp_to) },
        { "far CALL", lbr_lcall, lin(lbr_lcall_from), lin(lbr_lcall_to) },
        { "far RET", lbr_lret, lin(lbr_lret_from), lin(lbr_lret_to) },
        { "IRET", lbr_iret, lin(lbr_iret_from), lin(lbr_iret_to) },
        { "far JMP to CS.base 10000h: the target's offset", lbr_csin,
          lin(lbr_csin_from), cs_off(lbr_csin_to) },
        { "JMP in CS.base 10000h: offsets", lbr_csnear,
          cs_off(lbr_csnear_from), cs_off(lbr_csnear_to) },
        { "far JMP from CS.base 10000h: the source's offset", lbr_csout,
          cs_off(lbr_csout_from), lin(lbr_csout_to) },
    };
    struct lbr_msrs m;
    char what[120];
    u32 i;

    report_prefix_push("branches");
    for (i = 0; i < ARRAY_SIZE(cases); i++) {
        m = run_lbr(cases[i].fn);
        snprintf(what, sizeof(what), "%s", cases[i].what);
        check_lbr(what, &m, 0, cases[i].from, cases[i].to, 0, 0);
    }
    /*
     * Rule 1: PB0-PB3 and TR have no effect (on hardware, 17.14.1 leaves
     * the four MSRs undefined while TR is set: this is the emulation's
     * rule)
     */
    lbr_on_val = DEBUGCTL_LBR | DEBUGCTL_PB_BITS;
    m = run_lbr(lbr_jmp);
    check_lbr("JMP rel8 with PB0-PB3 set", &m, 0, lin(lbr_jmp_from),
              lin(lbr_jmp_to), 0, 0);
    lbr_on_val = DEBUGCTL_LBR | DEBUGCTL_TR;
    m = run_lbr(lbr_call);
    check_lbr("CALL rel32 with TR set (no effect)", &m, 0,
              lin(lbr_call_from), lin(lbr_call_to), 0, 0);
    lbr_on_val = DEBUGCTL_LBR;
    report_prefix_pop();
}

static void lbr_poison(void)
{
    memset(&lbr_in_int, 0xee, sizeof(lbr_in_int));
    memset(&lbr_in_exc, 0xee, sizeof(lbr_in_exc));
    memset(&lbr_in_db, 0xee, sizeof(lbr_in_db));
    lbr_db_dr6 = 0;
    lbr_db_count = 0;
    lbr_gp_error = ~0u;
}

/* Rule 4: the handler's copy, then the MSRs after its IRET */
static void test_lbr_interrupts(void)
{
    struct lbr_msrs m;

    report_prefix_push("interrupts");
    lbr_poison();
    m = run_lbr(lbr_int);
    check_lbr("INT 41h after a JMP, in the handler", &lbr_in_int,
              DEBUGCTL_LBR, lin(lbr_int_at), lin(lbr_int_handler),
              lin(lbr_int_jmp), lin(lbr_int_at));
    check_lbr("INT 41h, after the handler's IRET", &m, 0,
              lin(lbr_int_iret), lin(lbr_int_ret), lin(lbr_int_jmp),
              lin(lbr_int_at));

    lbr_poison();
    m = run_lbr(lbr_csint);
    check_lbr("INT 41h in CS.base 10000h, in the handler (CS.base 0)",
              &lbr_in_int, DEBUGCTL_LBR, cs_off(lbr_csint_at),
              lin(lbr_int_handler), cs_off(lbr_csint_jmp),
              cs_off(lbr_csint_at));
    check_lbr("INT 41h in CS.base 10000h, after the IRET", &m, 0,
              lin(lbr_int_iret), cs_off(lbr_csint_ret),
              cs_off(lbr_csint_jmp), cs_off(lbr_csint_at));

    lbr_poison();
    m = run_lbr(lbr_ud_run);
    check_lbr("#UD from UD2 after a JMP, in the handler", &lbr_in_exc,
              DEBUGCTL_LBR, lin(lbr_ud_at), lin(lbr_ud_handler),
              lin(lbr_ud_jmp), lin(lbr_ud_at));
    check_lbr("#UD, after the handler's IRET", &m, 0, lin(lbr_ud_iret),
              lin(lbr_ud_ret), lin(lbr_ud_jmp), lin(lbr_ud_at));

    lbr_poison();
    m = run_lbr(lbr_gp_run);
    report(lbr_gp_error == 0xfff8, "MOV DS, FFF8h - expect #GP(FFF8h) (got "
           "error code %x)", lbr_gp_error);
    check_lbr("#GP from MOV DS after a JMP, in the handler", &lbr_in_exc,
              DEBUGCTL_LBR, lin(lbr_gp_at), lin(lbr_gp_handler),
              lin(lbr_gp_jmp), lin(lbr_gp_at));
    check_lbr("#GP, after the handler's IRET", &m, 0, lin(lbr_gp_iret),
              lin(lbr_gp_ret), lin(lbr_gp_jmp), lin(lbr_gp_at));

    lbr_poison();
    m = run_lbr(lbr_gpj_run);
    report(lbr_gp_error == 0xfff8, "far JMP to FFF8h - expect #GP(FFF8h) "
           "(got error code %x)", lbr_gp_error);
    check_lbr("#GP from a far JMP after a JMP (the far JMP not taken), in "
              "the handler", &lbr_in_exc, DEBUGCTL_LBR, lin(lbr_gpj_at),
              lin(lbr_gp_handler), lin(lbr_gpj_jmp), lin(lbr_gpj_at));
    check_lbr("#GP from a far JMP, after the handler's IRET", &m, 0,
              lin(lbr_gp_iret), lin(lbr_gpj_ret), lin(lbr_gpj_jmp),
              lin(lbr_gpj_at));

    lbr_poison();
    m = run_lbr(lbr_bp);
    check_lbr("INT3 (#BP, not a debug exception: LBR stays set) after a "
              "JMP, in the handler", &lbr_in_exc, DEBUGCTL_LBR,
              lin(lbr_bp_at), lin(lbr_bp_handler), lin(lbr_bp_jmp),
              lin(lbr_bp_at));
    check_lbr("INT3, after the handler's IRET", &m, 0, lin(lbr_bp_iret),
              lin(lbr_bp_ret), lin(lbr_bp_jmp), lin(lbr_bp_at));

    if (!(cpuid(1).d & CPUID_1_EDX_APIC)) {
        report_skip("no local APIC: no hardware interrupt test");
        report_prefix_pop();
        return;
    }
    enable_apic();
    cli();
    apic_write(APIC_ICR, APIC_DEST_SELF | APIC_INT_ASSERT | APIC_DM_FIXED |
               LBR_HW_VECTOR);
    lbr_poison();
    report(apic_vector_bit(APIC_IRR, LBR_HW_VECTOR), "self-IPI %xh with IF "
           "= 0 - expect pending in the IRR", LBR_HW_VECTOR);
    m = run_lbr(lbr_hw);
    check_lbr("self-IPI taken after STI; NOP, in the handler: from the next "
              "instruction", &lbr_in_int, DEBUGCTL_LBR, lin(lbr_hw_at),
              lin(lbr_hw_handler), lin(lbr_hw_jmp), lin(lbr_hw_sti));
    check_lbr("self-IPI, after the handler's IRET", &m, 0, lin(lbr_hw_iret),
              lin(lbr_hw_at), lin(lbr_hw_jmp), lin(lbr_hw_sti));

    apic_write(APIC_ICR, APIC_DEST_SELF | APIC_INT_ASSERT | APIC_DM_FIXED |
               LBR_HW_VECTOR);
    lbr_poison();
    m = run_lbr(lbr_hlt);
    check_lbr("self-IPI pending at STI; HLT, in the handler: from the "
              "instruction after the HLT", &lbr_in_int, DEBUGCTL_LBR,
              lin(lbr_hlt_at), lin(lbr_hw_handler), lin(lbr_hlt_jmp),
              lin(lbr_hlt_sti));
    check_lbr("STI; HLT, after the handler's IRET", &m, 0, lin(lbr_hw_iret),
              lin(lbr_hlt_at), lin(lbr_hlt_jmp), lin(lbr_hlt_sti));
    report_prefix_pop();
}

/*
 * Rule 5: a JMP, INT 41h, its IRET, a JMP, then #DB.  In the #DB handler
 * LBR (and BTF) are clear; the branch pair is the second JMP, the
 * exception pair the first JMP (what INT 41h copied); the IRET of the
 * #DB handler is not recorded.
 */
static void check_db(const char *what, void (*fn)(void), u32 on, u32 j1,
                     u32 at_int, u32 j2, u32 to, u32 dr6_bit)
{
    char buf[160];
    struct lbr_msrs m;

    lbr_poison();
    lbr_on_val = on;
    m = run_lbr(fn);
    lbr_on_val = DEBUGCTL_LBR;
    snprintf(buf, sizeof(buf), "%s, DEBUGCTLMSR %x, in the #DB handler",
             what, on);
    check_lbr(buf, &lbr_in_db, on & ~(DEBUGCTL_LBR | DEBUGCTL_BTF), j2, to,
              j1, at_int);
    report(lbr_db_count == 1 && (lbr_db_dr6 & dr6_bit) == dr6_bit,
           "%s - expect one #DB, DR6 bits %x set (got %u, DR6 %x)", what,
           dr6_bit, lbr_db_count, lbr_db_dr6);
    snprintf(buf, sizeof(buf), "%s, after the #DB handler's IRET", what);
    check_lbr(buf, &m, 0, j2, to, j1, at_int);
}

static void test_lbr_debug(void)
{
    report_prefix_push("#DB");
    check_db("single-step (TF) after a JMP", lbr_tf, DEBUGCTL_LBR,
             lin(lbr_tf_j1), lin(lbr_tf_int), lin(lbr_tf_j2), lin(lbr_tf_to),
             DR6_BS);
    /* BTF as well: the JMP is the first branch after POPF either way */
    check_db("single-step (TF) after a JMP", lbr_tf,
             DEBUGCTL_LBR | DEBUGCTL_BTF | DEBUGCTL_PB_BITS,
             lin(lbr_tf_j1), lin(lbr_tf_int), lin(lbr_tf_j2), lin(lbr_tf_to),
             DR6_BS);
    asm volatile("mov %0, %%dr0\n\t"
                 "mov %1, %%dr7"        /* L0, execute, 1 byte */
                 : : "r"(lin(lbr_dr_at)), "r"(0x401) : "memory");
    check_db("DR0 breakpoint after a JMP", lbr_dr, DEBUGCTL_LBR,
             lin(lbr_dr_j1), lin(lbr_dr_int), lin(lbr_dr_j2), lin(lbr_dr_at),
             DR6_B0);
    asm volatile("mov %0, %%dr7" : : "r"(0x400) : "memory");
    check_db("ICEBP (INT1) after a JMP", lbr_icebp, DEBUGCTL_LBR,
             lin(lbr_icebp_j1), lin(lbr_icebp_int), lin(lbr_icebp_j2),
             lin(lbr_icebp_at), 0);
    report_prefix_pop();
}

/* Rule 6: with LBR clear nothing is recorded, by branches or interrupts */
static void test_lbr_off(void)
{
    /* what the handler copied, if there is one */
    static const struct {
        const char *what;
        void (*fn)(void);
        const struct lbr_msrs *copy;
    } runs[] = {
        { "JMP", lbr_jmp, NULL }, { "CALL", lbr_call, NULL },
        { "RET", lbr_ret, NULL }, { "JZ", lbr_jz, NULL },
        { "far CALL", lbr_lcall, NULL }, { "IRET", lbr_iret, NULL },
        { "INT 41h", lbr_int, &lbr_in_int },
        { "#UD", lbr_ud_run, &lbr_in_exc },
        { "#GP", lbr_gp_run, &lbr_in_exc }, { "INT3", lbr_bp, &lbr_in_exc },
        { "far JMP #GP", lbr_gpj_run, &lbr_in_exc },
        { "1000 CALL; RET; LOOP", lbr_cmany, NULL },
    };
    static const u32 ons[] = { 0, DEBUGCTL_BTF | DEBUGCTL_PB_BITS };
    u32 from = lin(lbr_ud_iret), to = lin(lbr_ud_ret);
    u32 efrom = lin(lbr_ud_jmp), eto = lin(lbr_ud_at);
    struct lbr_msrs m;
    char buf[120];
    u32 i, j;

    report_prefix_push("LBR clear");
    m = run_lbr(lbr_ud_run);
    check_lbr("#UD with LBR set first", &m, 0, from, to, efrom, eto);
    for (j = 0; j < ARRAY_SIZE(ons); j++) {
        for (i = 0; i < ARRAY_SIZE(runs); i++) {
            lbr_poison();
            lbr_on_val = ons[j];
            m = run_lbr(runs[i].fn);
            lbr_on_val = DEBUGCTL_LBR;
            snprintf(buf, sizeof(buf), "%s with DEBUGCTLMSR %x: nothing "
                     "recorded", runs[i].what, ons[j]);
            check_lbr(buf, &m, 0, from, to, efrom, eto);
            if (runs[i].copy) {
                snprintf(buf, sizeof(buf), "%s with DEBUGCTLMSR %x, in the "
                         "handler", runs[i].what, ons[j]);
                check_lbr(buf, runs[i].copy, ons[j], from, to, efrom, eto);
            }
        }
    }
    /* ... and the same code records again once LBR is set */
    m = run_lbr(lbr_jmp);
    check_lbr("JMP with LBR set again", &m, 0, lin(lbr_jmp_from),
              lin(lbr_jmp_to), efrom, eto);
    m = run_lbr(lbr_int);
    check_lbr("INT 41h with LBR set again", &m, 0, lin(lbr_int_iret),
              lin(lbr_int_ret), lin(lbr_int_jmp), lin(lbr_int_at));
    report_prefix_pop();
}

/*
 * Rule 7: what stays as upstream QEMU (TCG): CPUID.1 has neither PDCM nor
 * DS; MSRs C1H (PERFCTR0) and 186H (EVNTSEL0) are not implemented (WRMSR
 * ignored, RDMSR 0); RDPMC at CPL0 is #UD
 */
static void test_lbr_upstream(void)
{
    struct cpuid c = cpuid(1);
    u64 ctr = ~0ull, sel = ~0ull;
    u32 lo, hi;
    int v1, v2, v3, v4, vec;

    report_prefix_push("upstream");
    report(!(c.c & CPUID_1_ECX_PDCM) && !(c.d & CPUID_1_EDX_DS),
           "CPUID.1 - expect ECX[15] (PDCM) = 0, EDX[21] (DS) = 0 (got ECX "
           "%x, EDX %x)", c.c, c.d);
    v1 = wrmsr_safe(MSR_IA32_PERFEVTSEL0, 0x4300c0);    /* EN, OS, USR */
    v2 = wrmsr_safe(MSR_IA32_PMC0, 0x1234);
    v3 = rdmsr_safe(MSR_IA32_PMC0, &ctr);
    v4 = rdmsr_safe(MSR_IA32_PERFEVTSEL0, &sel);
    wrmsr_safe(MSR_IA32_PERFEVTSEL0, 0);
    report(!v1 && !v2 && !v3 && !v4 && ctr == 0 && sel == 0,
           "WRMSR 186H = 4300C0h, C1H = 1234h, then RDMSR - expect no "
           "fault, both read 0 (got vectors %d %d %d %d, C1H %llx, 186H "
           "%llx)", v1, v2, v3, v4, ctr, sel);
    asm volatile(ASM_TRY("1f") "rdpmc\n\t1:"
                 : "=a"(lo), "=d"(hi) : "c"(0) : "memory");
    vec = exception_vector();
    report(vec == UD_VECTOR, "RDPMC 0 - expect #UD (got vector %d)", vec);
    report_prefix_pop();
}

static void test_p6(void)
{
    report_prefix_push("LBR");
    test_lbr_msrs();
    set_based_seg(LBR_CS_SEL, LBR_CS_BASE, SEG_CODE_RX);
    test_lbr_branches();
    lbr_handlers(true);
    test_lbr_interrupts();
    test_lbr_readonly();
    test_lbr_debug();
    test_lbr_off();
    lbr_handlers(false);
    wrmsr(MSR_DEBUGCTLMSR, 0);
    report_prefix_pop();
    test_lbr_upstream();
}

/*
 * Rule 7, -cpu pentium3 without pmu=on: upstream QEMU ignores these MSRs
 * (RDMSR 0, or #GP would do too); no branch is ever recorded
 */
static void check_nop6(const char *what)
{
    struct lbr_msrs m = read_lbr(NULL);
    char got[160];

    /* ~0 is what read_lbr() gives for a RDMSR that faulted */
    report((m.from == 0 || m.from == ~0ull) && (m.to == 0 || m.to == ~0ull) &&
           (m.efrom == 0 || m.efrom == ~0ull) &&
           (m.eto == 0 || m.eto == ~0ull),
           "%s - expect 1DBH-1DEH to read 0 or fault (ffffffffffffffff "
           "here) (got %s)", what, lbr_str(got, sizeof(got), &m));
}

static void test_nop6(void)
{
    static const struct {
        const char *what;
        void (*fn)(void);
    } runs[] = {
        { "JMP", lbr_jmp }, { "CALL", lbr_call }, { "far JMP", lbr_ljmp },
        { "IRET", lbr_iret }, { "JZ", lbr_jz },
    };
    char buf[80], got[160];
    u32 i;
    int vec, rvec;

    report_prefix_push("LBR");
    check_nop6("after RESET");
    vec = wrmsr_safe(MSR_DEBUGCTLMSR, DEBUGCTL_LBR);
    read_lbr(&rvec);
    printf("info: WRMSR(DEBUGCTLMSR, 1): vector %d; RDMSR of the five: "
           "vector %d\n", vec, rvec);
    if (vec) {
        report_skip("DEBUGCTLMSR cannot be written: no branch to run");
    } else {
        for (i = 0; i < ARRAY_SIZE(runs); i++) {
            runs[i].fn();
            snprintf(buf, sizeof(buf), "%s with DEBUGCTLMSR.LBR written",
                     runs[i].what);
            check_nop6(buf);
        }
        if (!rvec) {
            /* the handlers read the MSRs: only when that cannot fault */
            lbr_poison();
            set_raw_handler(LBR_INT_VECTOR, lin(lbr_int_handler));
            lbr_int();
            set_raw_handler(LBR_INT_VECTOR, 0);
            report((lbr_in_int.from == 0 && lbr_in_int.to == 0 &&
                    lbr_in_int.efrom == 0 && lbr_in_int.eto == 0),
                   "INT 41h, in the handler - expect 1DBH-1DEH 0 (got "
                   "%s)", lbr_str(got, sizeof(got), &lbr_in_int));
            check_nop6("INT 41h with DEBUGCTLMSR.LBR written");
        }
        wrmsr_safe(MSR_DEBUGCTLMSR, 0);
    }
    report_prefix_pop();
    test_lbr_upstream();
}

int main(u32 magic, u32 mbi)
{
    int i;

    setup_cmdline(magic, mbi);
    setup_desc();
    i = cmdline_choice("config", config_names, ARRAY_SIZE(config_names));
    if (i < 0) {
        printf("ABORT: the command line needs "
               "config=nolwp|g4|max|pmu|p6|nop6\n");
        abort();
    }
    config = i;

    report_prefix_push("legacy");
    report_prefix_push(config_names[config]);
    test_mode();
    if (config == CONFIG_PMU) {
        test_pmu_cs_base();
    } else if (config == CONFIG_P6) {
        test_p6();
    } else if (config == CONFIG_NOP6) {
        test_nop6();
    } else if (config == CONFIG_NOLWP) {
        test_absent();
    } else if (setup_lwp()) {
        report_prefix_push("insns");
        test_disabled();
        test_llwpcb_lwpins();
        test_lwpval();
        report_prefix_pop();
        test_fields();
        test_prefixes();
        report_prefix_push("DS");
        test_ds_base();
        test_ds_limits();
        report_prefix_pop();
        test_mem_operands();
        report_prefix_push("XCR0");
        test_xcr0();
        report_prefix_pop();
        test_vm86();
        test_cpl3();
        test_flush();
        test_dme_bound();
        test_xsave();
        test_paging();
    }
    report_prefix_pop();
    report_prefix_pop();
    return report_summary();
}
