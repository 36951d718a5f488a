/*
 * System-mode tests of LWP on four vCPUs under MTTCG (config=smp:
 * -cpu max,+lwp -smp 4 -accel tcg,thread=multi).
 *
 * The BSP starts the three APs with INIT and STARTUP IPIs through its
 * local APIC (smp-trampoline.S).  QEMU's pc machine numbers the local
 * APICs 0..3, so the APIC ID is the CPU index here (checked).  SeaBIOS
 * leaves the APs halted in real mode after counting them; INIT puts them
 * back into wait-for-SIPI, so every AP task starts with INIT-SIPI-SIPI,
 * and an AP halts (CLI; HLT) when its task is done.
 *
 * 1. Four vCPUs profiling at once: each writes its own LWP_CFG with COREID
 *    0x10 + its APIC ID (spec 4.2) and runs smp_loop_user() at CPL3 with
 *    its own LWPCB and ring buffer, trip counts and intervals, with
 *    LWPINS, LWPVAL, Instructions Retired and Branches Retired.  The BSP
 *    checks every record of every vCPU against a model of the loop built
 *    from the assembler's labels, the trip counts and the intervals (spec
 *    1.1, 2.1-2.3, 2.7, 5.3, 5.4; choices 19, 20, 40), the CoreId of every
 *    record (spec 2), that no record lands in another vCPU's ring, and the
 *    counters that LLWPCB 0 flushes (spec 5.1 step 2).
 * 2. Producer and consumer on different vCPUs (spec 1.1, 6, 8.3): AP 1
 *    runs 200,000 LWPINS with the sequence number in Data1 (r/m32) and
 *    base + sequence in Data2 (vvvv) into a ring of LwpMinBufferSize,
 *    while the BSP drains it with the lockless protocol: read the head
 *    from the LWPCB, read the records from the tail up to that head, then
 *    write the tail.  Every sequence number must arrive once and in order;
 *    the gaps must add up to MissedEvents and to the LWPINS that set CF
 *    (spec 5.4, choice 21); no record may be torn.
 * 3. INIT of an AP with LWP enabled (choice 5): afterwards LWP_CBADDR
 *    reads 0 and LWP_CFG keeps its value, and LWPINS on the restarted
 *    vCPU stores nothing into the old ring (spec 5.4: it only clears CF
 *    while LWP is not enabled; SLWPCB gives 0, spec 5.2).
 *
 * The APs never print and never use the *_safe helpers (exception_vec is
 * global); only the BSP reports.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libcflat.h"
#include "desc.h"
#include "processor.h"
#include "lwp-guest.h"
#include "lwp-smp.h"

#define NR_CPUS             4
#define STACK_SIZE          8192

#define APIC_ID             0x20
#define APIC_DM_INIT        0x500
#define APIC_DM_STARTUP     0x600
#define APIC_INT_LEVELTRIG  BIT(15)

/* TSC ticks; QEMU's TSC follows the host's, a few GHz */
#define TIMEOUT_TICKS       10000000000ull
#define PROD_TIMEOUT_TICKS  30000000000ull

#define COREID_BASE         0x10
#define LOOP_EVENTS         (LWP_VAL | LWP_IRE | LWP_BRE)
#define LOOP_RING_RECORDS   1024
#define PROD_RECORDS        200000u
#define PROD_DATA2_BASE     0x5eed000000000000ul
#define PROD_CPU            1
#define INIT_CPU            3
#define INIT_COREID         0x13
#define INIT_VECTOR         0x5c
#define INIT_RECORDS        3
#define INIT_PROBES         5
#define SMALL_RING_RECORDS  256             /* room for LwpMinBufferSize */

/* shared with other vCPUs: one access each, never cached in a register */
#define READ_ONCE(x)        (*(volatile __typeof__(x) *)&(x)) /* shared */
#define WRITE_ONCE(x, v)    (*(volatile __typeof__(x) *)&(x) = (v)) /* shared */
#define barrier()           asm volatile("" : : : "memory")

enum smp_task {
    TASK_NONE,
    TASK_LOOP,                          /* check 1 */
    TASK_PRODUCER,                      /* check 2 */
    TASK_INIT_BEFORE,                   /* check 3: enable LWP, halt */
    TASK_INIT_AFTER,                    /* check 3: after INIT + SIPI */
};

/* Per-CPU state; index = APIC ID */
struct smp_cpu {
    u64 gdt[7];                         /* null .. USER_CS, 16-byte TSS */
    struct tss tss;
    u64 saved_rsp;                      /* run_in_user_at() */
    u32 task;
    u32 started, ready, done;           /* AP -> BSP */
    u32 apic_id;
    long ret;                           /* run_in_user_at()'s result */
    u64 tsc[2];                         /* around the CPL3 loop */
    u64 cfg;                            /* LWP_CFG read back after WRMSR */
    u64 cbaddr, cfg_after;              /* check 3 */
} __attribute__((aligned(64)));

static struct smp_cpu cpus[NR_CPUS];
static u8 kstack[NR_CPUS][STACK_SIZE] __attribute__((aligned(16)));
static u8 istack[NR_CPUS][STACK_SIZE] __attribute__((aligned(16)));
static u8 ustack[NR_CPUS][STACK_SIZE] __attribute__((aligned(16)));

u32 smp_boot_cr3;
u64 smp_boot_stack;
static u32 smp_boot_cpu;
static u32 go;                          /* BSP -> APs: start the loops */
static struct {
    u16 limit;
    u64 base;
} __attribute__((packed)) smp_idtr;

static u32 lwp_edx;                     /* CPUID 0x8000001C EDX */
static u32 min_ring;                    /* LwpMinBufferSize in bytes */

/* ---- helpers ---- */

static inline u64 rdtsc(void)
{
    u32 lo, hi;

    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return lo | (u64)hi << 32;
}

static inline unsigned long read_cr3(void)
{
    unsigned long val;

    asm volatile("mov %%cr3, %0" : "=r"(val));
    return val;
}

static inline void xsetbv(u32 xcr, u64 val)
{
    asm volatile("xsetbv"
                 : : "c"(xcr), "a"((u32)val), "d"((u32)(val >> 32))
                 : "memory");
}

static unsigned this_cpu(void)
{
    return apic_read(APIC_ID) >> 24;
}

/* Wait until *@p == @want, at most @ticks TSC ticks; true if it did */
static bool wait_for(u32 *p, u32 want, u64 ticks)
{
    u64 start = rdtsc();

    while (READ_ONCE(*p) != want) {
        if (rdtsc() - start > ticks) {
            return false;
        }
        pause();
    }
    barrier();
    return true;
}

/* XCR0[62] and LWP_CFG on the calling CPU (spec 8.7.1) */
static void lwp_setup_cpu(u64 cfg)
{
    write_cr4(read_cr4() | X86_CR4_OSXSAVE);
    xsetbv(0, XSTATE_FP_SSE_AVX | XSTATE_LWP);
    wrmsr(MSR_LWP_CFG, cfg);
}

static long run_user(unsigned cpu, void (*fn)(void *), void *arg)
{
    return run_in_user_at(fn, arg, &cpus[cpu].saved_rsp,
                          &ustack[cpu][STACK_SIZE], smp_user_entry,
                          X86_EFLAGS_FIXED);
}

/* INT SMP_RET_VECTOR from the CPL3 code of any vCPU */
static void smp_ret_handler(struct ex_regs *regs)
{
    unsigned cpu = this_cpu();

    if ((regs->cs & 3) != 3 || cpu >= NR_CPUS) {
        printf("ABORT: int $0x%x from cs %lx on APIC ID %u\n",
               SMP_RET_VECTOR, regs->cs, cpu);
        abort();
    }
    user_return_at(cpus[cpu].saved_rsp, 0);
}

/* ---- check 1: the CPL3 loop on every vCPU ---- */

/*
 * An outer iteration retires 3 * inner + 5 instructions (LWPINS first, the
 * first LWPVAL third, JNZ to smp_l_ins last) and inner + 1 branches (the
 * JNZ of the inner loop not taken is the inner-th).  Some intervals are
 * multiples of those, so that records of two events fall on one
 * instruction and test the order of choice 20 and spec 5.4:
 *   cpu 0: IRE on LWPINS every 2nd outer iteration (4809 = 2 * 2405 - 1)
 *   cpu 1: IRE on the first LWPVAL every 3rd (7574 = 3 * 2525 - 1), VAL
 *          there every 2nd (1679 = 2 * 840 - 1)
 *   cpu 2: IRE on the outer JNZ every 4th (9139 = 4 * 2285 - 1), BRE
 *          there every 2nd (1521 = 2 * 761 - 1)
 *   cpu 3: BRE on the inner JNZ not taken every 3rd (2762 = 3 * 921 - 1),
 *          the others at intervals that share no factor with the loop
 * A counter of c stores at the (c + 1)-th event: the EventCounters start
 * the records there.
 */
static const struct loop_param {
    u32 outer, inner;
    u32 interval[3], counter[3];        /* VAL, IRE, BRE */
} loop_params[NR_CPUS] = {
    { 300, 800, { 1999, 4809, 1999 }, { 17, 0, 250 } },
    { 280, 840, { 1679, 7574, 1733 }, { 0, 2, 100 } },
    { 320, 760, { 2401, 9139, 1521 }, { 600, 2284, 760 } },
    { 260, 920, { 1777, 7547, 2762 }, { 7, 33, 919 } },
};

static const u8 loop_ids[3] = { EVENT_VAL, EVENT_IRE, EVENT_BRE };

static struct lwpcb loop_cb[NR_CPUS] __attribute__((aligned(64)));
static struct lwp_record loop_ring[NR_CPUS][LOOP_RING_RECORDS]
    __attribute__((aligned(4096)));
static struct smp_loop_args loop_args[NR_CPUS];

static u64 loop_ins_data2(unsigned cpu)
{
    return 0x1115000000000000ull | (u64)cpu << 32 | 0xa0a0;
}

static u64 loop_val_data2(unsigned cpu)
{
    return 0x7a1000000000000ull | (u64)cpu << 40 | 0x0b0b;
}

struct loop_model {
    struct lwp_record rec[LOOP_RING_RECORDS];
    unsigned n;
    unsigned pairs[3];                  /* two records: INS, VAL, branch */
    unsigned not_taken;                 /* BRE records without TKN */
    bool overflow;
    int ctr[3];
    u8 core_id;
    const struct loop_param *p;
};

static void model_store(struct loop_model *m, u8 id, const u8 *ip,
                        u16 flags, u32 data1, u64 data2)
{
    struct lwp_record *r;

    if (m->n >= LOOP_RING_RECORDS - 1) {
        m->overflow = true;
        return;
    }
    r = &m->rec[m->n++];
    memset(r, 0, sizeof(*r));
    r->event_id = id;
    r->core_id = m->core_id;
    r->flags = flags;
    r->data1 = data1;
    r->ip = (uintptr_t)ip;
    r->data2 = data2;
}

/*
 * One event of counter @k (0 VAL, 1 IRE, 2 BRE): count down; below 0
 * store the record and reset the counter to the interval less the
 * overrun (spec 1.1 steps 2-5; choice 19)
 */
static void model_count(struct loop_model *m, unsigned k, const u8 *ip,
                        u16 flags, u32 data1, u64 data2)
{
    int *c = &m->ctr[k];

    if (--*c >= 0) {
        return;
    }
    model_store(m, loop_ids[k], ip, flags, data1, data2);
    *c += (int)m->p->interval[k] + 1;
    if (*c < 0) {
        *c = 0;
    }
}

enum insn_kind { K_PLAIN, K_INS, K_VAL, K_BRANCH };

/*
 * One retired CPL3 instruction at @ip.  LWPINS stores its record, then
 * counts as retired (spec 5.4); LWPVAL's record comes before the IRE
 * record of the same instruction (choice 20, ascending EventId), and so
 * does IRE's before BRE's.  A branch's BRE record (Figure 2-4) has TKN
 * when taken and the next instruction as TargetAddress (choice 40).
 */
static void model_insn(struct loop_model *m, unsigned cpu, const u8 *ip,
                       enum insn_kind kind, u32 data1, bool taken,
                       const u8 *next)
{
    unsigned n = m->n;

    if (kind == K_INS) {
        model_store(m, EVENT_INS, ip, (u16)SMP_LOOP_INS_IMM, data1,
                    loop_ins_data2(cpu));
    } else if (kind == K_VAL) {
        model_count(m, 0, ip, (u16)SMP_LOOP_VAL_IMM, data1,
                    loop_val_data2(cpu));
    }
    model_count(m, 1, ip, 0, 0, 0);
    if (kind == K_BRANCH) {
        model_count(m, 2, ip, taken ? BRE_FLAG_TKN : 0, 0, (uintptr_t)next);
        m->not_taken += m->n > n && !taken &&
                        m->rec[m->n - 1].event_id == EVENT_BRE;
    }
    if (m->n - n == 2) {
        m->pairs[kind == K_INS ? 0 : kind == K_VAL ? 1 : 2]++;
    }
}

/* The records of smp_loop_user() on @cpu (smp-trampoline.S lists them) */
static void model_loop(struct loop_model *m, unsigned cpu)
{
    const struct loop_param *p = &loop_params[cpu];
    u32 o, i;
    bool more;
    unsigned k;

    memset(m, 0, sizeof(*m));
    m->p = p;
    m->core_id = COREID_BASE + cpu;
    for (k = 0; k < 3; k++) {
        m->ctr[k] = p->counter[k];
    }
    for (o = 0; o < p->outer; o++) {
        model_insn(m, cpu, smp_l_ins, K_INS, o, false, NULL);
        model_insn(m, cpu, smp_l_movi, K_PLAIN, 0, false, NULL);
        for (i = p->inner; i >= 1; i--) {
            model_insn(m, cpu, smp_l_val, K_VAL, i, false, NULL);
            model_insn(m, cpu, smp_l_decin, K_PLAIN, 0, false, NULL);
            more = i > 1;
            model_insn(m, cpu, smp_l_jnzin, K_BRANCH, 0, more,
                       more ? smp_l_val : smp_l_inc);
        }
        model_insn(m, cpu, smp_l_inc, K_PLAIN, 0, false, NULL);
        model_insn(m, cpu, smp_l_decout, K_PLAIN, 0, false, NULL);
        more = o + 1 < p->outer;
        model_insn(m, cpu, smp_l_jnzout, K_BRANCH, 0, more,
                   more ? smp_l_ins : smp_l_end);
    }
}

static bool record_eq(const struct lwp_record *a, const struct lwp_record *b)
{
    return a->event_id == b->event_id && a->core_id == b->core_id &&
           a->flags == b->flags && a->data1 == b->data1 && a->ip == b->ip &&
           a->data2 == b->data2 && a->reserved == b->reserved;
}

static bool record_zero(const struct lwp_record *r)
{
    return !r->event_id && !r->core_id && !r->flags && !r->data1 &&
           !r->ip && !r->data2 && !r->reserved;
}

/* LWPCB and ring of @cpu for the loop; run on the BSP before any start */
static void loop_prepare(unsigned cpu)
{
    const struct loop_param *p = &loop_params[cpu];
    struct lwpcb *cb = &loop_cb[cpu];
    unsigned k;

    memset(cb, 0, sizeof(*cb));
    memset(loop_ring[cpu], 0, sizeof(loop_ring[cpu]));
    cb->flags = LOOP_EVENTS;
    cb->buffer_size = sizeof(loop_ring[cpu]);
    cb->buffer_base = (uintptr_t)loop_ring[cpu];
    for (k = 0; k < 3; k++) {
        cb->event[loop_ids[k] - 1].interval = p->interval[k];
        cb->event[loop_ids[k] - 1].counter = p->counter[k];
    }
    loop_args[cpu].cb = (uintptr_t)cb;
    loop_args[cpu].outer = p->outer;
    loop_args[cpu].inner = p->inner;
    loop_args[cpu].ins_data2 = loop_ins_data2(cpu);
    loop_args[cpu].val_data2 = loop_val_data2(cpu);
}

/* Check 1's part of every vCPU, the BSP's included */
static void task_loop(unsigned cpu)
{
    struct smp_cpu *c = &cpus[cpu];

    lwp_setup_cpu((lwp_edx & LOOP_EVENTS) |
                  LWP_CFG_COREID(COREID_BASE + this_cpu()));
    c->cfg = rdmsr(MSR_LWP_CFG);
    WRITE_ONCE(c->ready, 1);
    while (!READ_ONCE(go)) {
        pause();
    }
    c->tsc[0] = rdtsc();
    c->ret = run_user(cpu, smp_loop_user, &loop_args[cpu]);
    c->tsc[1] = rdtsc();
}

/* ---- check 2: producer and consumer ---- */

static struct lwpcb prod_cb __attribute__((aligned(64)));
static struct lwp_record prod_ring[SMALL_RING_RECORDS]
    __attribute__((aligned(4096)));
static struct smp_prod_args prod_args;

static void task_producer(unsigned cpu)
{
    struct smp_cpu *c = &cpus[cpu];

    lwp_setup_cpu((lwp_edx & LOOP_EVENTS) |
                  LWP_CFG_COREID(COREID_BASE + this_cpu()));
    c->cfg = rdmsr(MSR_LWP_CFG);
    c->ret = run_user(cpu, smp_producer_user, &prod_args);
}

/* ---- check 3: INIT ---- */

static struct lwpcb init_cb __attribute__((aligned(64)));
static struct lwp_record init_ring[SMALL_RING_RECORDS]
    __attribute__((aligned(4096)));
static struct smp_init_args init_args[2];

static u64 init_cfg(void)
{
    return (lwp_edx & LOOP_EVENTS) | LWP_CFG_COREID(INIT_COREID) |
           LWP_CFG_VECTOR(INIT_VECTOR);
}

/* LWPINS into init_cb's ring, then halt with LWP enabled */
static void task_init_before(unsigned cpu)
{
    struct smp_cpu *c = &cpus[cpu];

    lwp_setup_cpu(init_cfg());
    c->cfg = rdmsr(MSR_LWP_CFG);
    c->ret = run_user(cpu, smp_init_user, &init_args[0]);
    c->cbaddr = rdmsr(MSR_LWP_CBADDR);
}

/* First thing after INIT + SIPI: the MSRs; then LWPINS without LLWPCB */
static void task_init_after(unsigned cpu)
{
    struct smp_cpu *c = &cpus[cpu];

    c->cbaddr = rdmsr(MSR_LWP_CBADDR);
    c->cfg_after = rdmsr(MSR_LWP_CFG);
    write_cr4(read_cr4() | X86_CR4_OSXSAVE);
    xsetbv(0, XSTATE_FP_SSE_AVX | XSTATE_LWP);
    c->ret = run_user(cpu, smp_init_user, &init_args[1]);
}

/* ---- AP start-up ---- */

/* Per-CPU GDT (the kernel's segments and a TSS of its own) and the IDT */
static void ap_setup_desc(unsigned cpu)
{
    struct smp_cpu *c = &cpus[cpu];
    u64 base = (uintptr_t)&c->tss, limit = sizeof(c->tss) - 1;
    struct {
        u16 limit;
        u64 base;
    } __attribute__((packed)) gdtr = { sizeof(c->gdt) - 1,
                                       (uintptr_t)c->gdt };
    unsigned i;

    for (i = 0; i < TSS_SEL / 8; i++) {
        c->gdt[i] = gdt[i];
    }
    memset(&c->tss, 0, sizeof(c->tss));
    c->tss.rsp[0] = (uintptr_t)&istack[cpu][STACK_SIZE];
    c->tss.iomap_base = sizeof(c->tss);
    /* available (not busy) again after every start: LTR sets busy */
    c->gdt[TSS_SEL / 8] = (limit & 0xffff) | (base & 0xffffff) << 16 |
                          0x89ull << 40 | ((limit >> 16) & 0xf) << 48 |
                          ((base >> 24) & 0xff) << 56;
    c->gdt[TSS_SEL / 8 + 1] = base >> 32;
    asm volatile("lgdt %0\n\t"
                 "pushq %1\n\t"
                 "lea 1f(%%rip), %%rax\n\t"
                 "pushq %%rax\n\t"
                 "lretq\n"
                 "1:\n\t"
                 "mov %2, %%ds\n\t"
                 "mov %2, %%es\n\t"
                 "mov %2, %%ss\n\t"
                 "mov %2, %%fs\n\t"
                 "mov %2, %%gs\n\t"
                 "ltr %w3\n\t"
                 "lidt %4"
                 : : "m"(gdtr), "i"(KERNEL_CS), "r"(KERNEL_DS),
                     "r"(TSS_SEL), "m"(smp_idtr)
                 : "rax", "memory");
}

void smp_ap_main(void)
{
    unsigned cpu = READ_ONCE(smp_boot_cpu);
    struct smp_cpu *c = &cpus[cpu];

    ap_setup_desc(cpu);
    c->apic_id = this_cpu();
    barrier();
    WRITE_ONCE(c->started, 1);
    switch (READ_ONCE(c->task)) {
    case TASK_LOOP:
        task_loop(cpu);
        break;
    case TASK_PRODUCER:
        task_producer(cpu);
        break;
    case TASK_INIT_BEFORE:
        task_init_before(cpu);
        break;
    case TASK_INIT_AFTER:
        task_init_after(cpu);
        break;
    default:
        break;
    }
    barrier();
    WRITE_ONCE(c->done, 1);
    for (;;) {
        asm volatile("cli; hlt");
    }
}

static void send_ipi(unsigned apic_id, u32 icr)
{
    apic_write(APIC_ICR2, apic_id << 24);
    apic_write(APIC_ICR, icr);
    while (apic_read(APIC_ICR) & BIT(12)) {     /* delivery status */
        pause();
    }
}

/*
 * INIT (assert, de-assert), then two STARTUP IPIs with the trampoline's
 * vector, as the MP start-up protocol has it; wait for the AP to reach
 * smp_ap_main().  False if it did not within the timeout.
 */
static bool start_ap(unsigned cpu, enum smp_task task)
{
    struct smp_cpu *c = &cpus[cpu];
    int i, j;

    c->task = task;
    c->started = 0;
    c->ready = 0;
    c->done = 0;
    c->ret = -1;
    smp_boot_cpu = cpu;
    smp_boot_stack = (uintptr_t)&kstack[cpu][STACK_SIZE];
    barrier();
    send_ipi(cpu, APIC_INT_LEVELTRIG | APIC_INT_ASSERT | APIC_DM_INIT);
    send_ipi(cpu, APIC_INT_LEVELTRIG | APIC_DM_INIT);
    for (i = 0; i < 2; i++) {
        for (j = 0; j < 1000; j++) {
            pause();
        }
        send_ipi(cpu, APIC_DM_STARTUP | SMP_SIPI_VECTOR);
    }
    return wait_for(&c->started, 1, TIMEOUT_TICKS);
}

static bool start_report(unsigned cpu, enum smp_task task, const char *what)
{
    bool ok = start_ap(cpu, task);

    report(ok, "%s: INIT, STARTUP IPI to APIC ID %u - expect the AP in 64-bit "
           "mode within the timeout", what, cpu);
    return ok;
}

/* ---- the tests, on the BSP ---- */

/* Over all vCPUs' models: instructions with two records, BRE not taken */
static unsigned loop_pairs[3], loop_not_taken;

static void report_loop_cpu(unsigned cpu, bool ran)
{
    static struct loop_model m;
    struct lwpcb *cb = &loop_cb[cpu];
    struct lwp_record *ring = loop_ring[cpu];
    struct smp_cpu *c = &cpus[cpu];
    unsigned i, n, want_core = COREID_BASE + cpu, bad_core, foreign, k;
    u64 want_cfg = (lwp_edx & LOOP_EVENTS) | LWP_CFG_COREID(want_core);
    u32 want_ctr, got_ctr;
    bool ctr_ok = true;
    char prefix[8];

    snprintf(prefix, sizeof(prefix), "cpu %u", cpu);
    report_prefix_push(prefix);
    report(c->apic_id == cpu, "local APIC ID - expect %u (got %u)", cpu,
           c->apic_id);
    report(c->cfg == want_cfg, "LWP_CFG written on this vCPU - expect %lx, "
           "COREID 0x%x (got %lx)", want_cfg, want_core, c->cfg);
    if (!ran) {
        report(false, "CPL3 loop - expect it to finish within the timeout");
        report_prefix_pop();
        return;
    }
    model_loop(&m, cpu);
    report(!m.overflow, "model - expect fewer than %u records (test set-up)",
           LOOP_RING_RECORDS);
    printf("info: model: %u records; two on one LWPINS %u, LWPVAL %u, "
           "branch %u; %u BRE not taken\n", m.n, m.pairs[0], m.pairs[1],
           m.pairs[2], m.not_taken);
    for (k = 0; k < 3; k++) {
        loop_pairs[k] += m.pairs[k];
    }
    loop_not_taken += m.not_taken;
    n = cb->head / RECORD_SIZE;
    report(c->ret == 0 && cb->flags == (lwp_edx & LOOP_EVENTS) &&
           cb->head == m.n * RECORD_SIZE && cb->missed_events == 0,
           "CPL3 loop of %u x %u - expect a normal return, Flags %x, %u "
           "records, none missed (got ret %lx, Flags %x, head %u, %lu "
           "missed)", m.p->outer, m.p->inner, lwp_edx & LOOP_EVENTS, m.n,
           c->ret, cb->flags, cb->head, cb->missed_events);

    bad_core = foreign = 0;
    for (i = 0; i < LOOP_RING_RECORDS; i++) {
        if (record_zero(&ring[i])) {
            continue;
        }
        bad_core += ring[i].core_id != want_core;
        foreign += ring[i].core_id != want_core &&
                   ring[i].core_id >= COREID_BASE &&
                   ring[i].core_id < COREID_BASE + NR_CPUS;
    }
    report(!bad_core, "CoreId of every record - expect 0x%x, this vCPU's "
           "LWP_CFG COREID (got %u others, %u of them another vCPU's)",
           want_core, bad_core, foreign);

    for (i = 0; i < n && i < m.n && record_eq(&ring[i], &m.rec[i]); i++) {
        continue;
    }
    if (i < MIN(n, m.n)) {
        report(false, "record %u of %u - expect EventId %u, CoreId %x, "
               "Flags %x, Data1 %x, IP %lx, Data2 %lx (got %u, %x, %x, %x, "
               "%lx, %lx)", i, m.n, m.rec[i].event_id, m.rec[i].core_id,
               m.rec[i].flags, m.rec[i].data1, m.rec[i].ip, m.rec[i].data2,
               ring[i].event_id, ring[i].core_id, ring[i].flags,
               ring[i].data1, ring[i].ip, ring[i].data2);
    } else {
        report(n == m.n && m.n > 0, "every record - expect the model's "
               "EventId, CoreId, Flags, Data1, IP and Data2 (%u records)",
               m.n);
    }
    for (i = m.n; i < LOOP_RING_RECORDS && record_zero(&ring[i]); i++) {
        continue;
    }
    report(i == LOOP_RING_RECORDS, "ring after the model's last record - "
           "expect untouched, all zero (first record found in slot %u of "
           "%u)", i, LOOP_RING_RECORDS);

    for (k = 0; k < 3; k++) {
        want_ctr = m.ctr[k];
        got_ctr = cb->event[loop_ids[k] - 1].counter & LWP_EVENT_MASK;
        ctr_ok &= want_ctr == got_ctr;
        if (want_ctr != got_ctr) {
            printf("info: EventCounter%u - expect %u, got %u\n",
                   loop_ids[k], want_ctr, got_ctr);
        }
    }
    report(ctr_ok, "EventCounter 1-3 flushed by LLWPCB 0 - expect the "
           "model's %d, %d, %d", m.ctr[0], m.ctr[1], m.ctr[2]);
    report_prefix_pop();
}

static void test_loops(void)
{
    bool started[NR_CPUS] = { true }, ran[NR_CPUS];
    unsigned cpu;

    report_prefix_push("four vCPUs");
    for (cpu = 0; cpu < NR_CPUS; cpu++) {
        loop_prepare(cpu);
    }
    go = 0;
    for (cpu = 1; cpu < NR_CPUS; cpu++) {
        started[cpu] = start_report(cpu, TASK_LOOP, "loop");
    }
    for (cpu = 1; cpu < NR_CPUS; cpu++) {
        if (started[cpu] &&
            !wait_for(&cpus[cpu].ready, 1, TIMEOUT_TICKS)) {
            printf("info: APIC ID %u not ready\n", cpu);
        }
    }
    cpus[0].apic_id = this_cpu();
    WRITE_ONCE(go, 1);
    task_loop(0);
    ran[0] = true;
    for (cpu = 1; cpu < NR_CPUS; cpu++) {
        ran[cpu] = started[cpu] &&
                   wait_for(&cpus[cpu].done, 1, TIMEOUT_TICKS);
    }
    for (cpu = 0; cpu < NR_CPUS; cpu++) {
        printf("info: cpu %u loop: TSC %ld to %ld from the BSP's start\n",
               cpu, (long)(cpus[cpu].tsc[0] - cpus[0].tsc[0]),
               (long)(cpus[cpu].tsc[1] - cpus[0].tsc[0]));
    }
    for (cpu = 0; cpu < NR_CPUS; cpu++) {
        report_loop_cpu(cpu, ran[cpu]);
    }
    report(loop_pairs[0] && loop_pairs[1] && loop_pairs[2] &&
           loop_not_taken, "models - expect LWPINS + IRE, LWPVAL + IRE "
           "and IRE + BRE records on one instruction, and BRE records of a "
           "branch not taken (test set-up; got %u, %u, %u, %u)",
           loop_pairs[0], loop_pairs[1], loop_pairs[2], loop_not_taken);
    report_prefix_pop();
}

static void test_prodcons(void)
{
    struct smp_cpu *c = &cpus[PROD_CPU];
    const u32 size = min_ring, nr = min_ring / RECORD_SIZE;
    u64 start, missed, gaps = 0, received = 0, bad = 0, disorder = 0;
    u32 head, tail = 0, expect = 0, batches = 0, max_batch = 0, batch;
    struct lwp_record r, first_bad = { 0 };
    bool done, timeout = false;

    report_prefix_push("producer-consumer");
    memset(&prod_cb, 0, sizeof(prod_cb));
    memset(prod_ring, 0, sizeof(prod_ring));
    prod_cb.buffer_size = size;         /* Flags 0: LWPINS only (5.1) */
    prod_cb.buffer_base = (uintptr_t)prod_ring;
    prod_args.cb = (uintptr_t)&prod_cb;
    prod_args.count = PROD_RECORDS;
    prod_args.data2_base = PROD_DATA2_BASE;
    prod_args.full = ~0ull;
    if (!start_report(PROD_CPU, TASK_PRODUCER, "producer")) {
        report_prefix_pop();
        return;
    }

    /*
     * The consumer (spec 1.1, 8.3): take the head from the LWPCB, read
     * the records from the tail up to it (the region LWP never writes),
     * then give them back by writing the tail.  x86 keeps loads in order
     * with loads and stores after loads; barrier() keeps the compiler
     * from reordering them.
     */
    start = rdtsc();
    for (;;) {
        done = READ_ONCE(c->done);      /* before the head: then it is final */
        barrier();
        head = READ_ONCE(prod_cb.head);
        barrier();
        batch = 0;
        while (tail != head && tail < size) {
            /* the producer's vCPU may be storing the next records */
            r = *(volatile struct lwp_record *)   /* read from memory */
                &prod_ring[tail / RECORD_SIZE];
            if (r.event_id != EVENT_INS || r.core_id != COREID_BASE +
                PROD_CPU || r.flags != (u16)SMP_PROD_INS_IMM ||
                r.ip != (uintptr_t)smp_p_ins ||
                r.data2 != PROD_DATA2_BASE + r.data1 || r.reserved) {
                if (!bad++) {
                    first_bad = r;
                }
            } else if (r.data1 < expect) {
                disorder++;
            } else {
                gaps += r.data1 - expect;
                expect = r.data1 + 1;
            }
            received++;
            batch++;
            tail = (tail + RECORD_SIZE) % size;
        }
        barrier();
        WRITE_ONCE(prod_cb.tail, tail);
        batches += batch != 0;
        max_batch = batch > max_batch ? batch : max_batch;
        if (done && tail == head) {
            break;
        }
        if (rdtsc() - start > PROD_TIMEOUT_TICKS || tail >= size) {
            timeout = true;
            break;
        }
    }
    barrier();
    missed = prod_cb.missed_events;
    gaps += PROD_RECORDS - expect;      /* the last ones, all missed */
    printf("info: %lu records read in %u batches (largest %u), %lu missed, "
           "ring of %u records\n", received, batches, max_batch, missed, nr);

    report(!timeout && c->ret == 0, "producer of %u LWPINS, consumer - "
           "expect both to finish within the timeout (got ret %lx, tail %u)",
           PROD_RECORDS, c->ret, tail);
    report(!bad, "every record read - expect EventId 255, CoreId 0x%x, "
           "Flags %x, IP %p, Data2 = %lx + Data1, Reserved 0 (got %lu "
           "others; first: %u, %x, %x, %lx, Data1 %x, Data2 %lx)",
           COREID_BASE + PROD_CPU, (u16)SMP_PROD_INS_IMM, smp_p_ins,
           PROD_DATA2_BASE, bad, first_bad.event_id, first_bad.core_id,
           first_bad.flags, first_bad.ip, first_bad.data1, first_bad.data2);
    report(!disorder, "sequence numbers (Data1) - expect each at most once, "
           "in increasing order (got %lu repeated or out of order)",
           disorder);
    report(gaps == missed && received + missed == PROD_RECORDS,
           "gaps in the sequence - expect their total, %u - records read, "
           "to equal MissedEvents (got gaps %lu, read %lu, MissedEvents %lu)",
           PROD_RECORDS, gaps, received, missed);
    report(prod_args.full == missed, "LWPINS that set CF (ring full, spec "
           "5.4) - expect MissedEvents %lu (got %lu)", missed,
           prod_args.full);
    report(received > nr, "records read - expect more than one ring of %u "
           "(the consumer drains while the producer runs; got %lu)", nr,
           received);
    report(prod_cb.head == tail, "BufferHeadOffset after LLWPCB 0 - expect "
           "the consumer's final tail %u (got %u)", tail, prod_cb.head);
    report_prefix_pop();
}

static void test_init(void)
{
    struct smp_cpu *c = &cpus[INIT_CPU];
    u64 cfg = init_cfg(), cb = (uintptr_t)&init_cb;
    unsigned i;
    bool ok;

    report_prefix_push("INIT");
    memset(&init_cb, 0, sizeof(init_cb));
    memset(init_ring, 0, sizeof(init_ring));
    init_cb.buffer_size = min_ring;
    init_cb.buffer_base = (uintptr_t)init_ring;
    init_args[0].cb = cb;
    init_args[0].count = INIT_RECORDS;
    init_args[0].cf = ~0u;
    init_args[0].slwpcb = ~0ull;
    init_args[1].cb = 0;
    init_args[1].count = INIT_PROBES;
    init_args[1].cf = ~0u;
    init_args[1].slwpcb = ~0ull;

    if (!start_report(INIT_CPU, TASK_INIT_BEFORE, "before") ||
        !wait_for(&c->done, 1, TIMEOUT_TICKS)) {
        report(false, "AP with LWP enabled - expect it to halt in time");
        report_prefix_pop();
        return;
    }
    report(c->ret == 0 && c->cfg == cfg && c->cbaddr == cb &&
           init_args[0].slwpcb == cb && init_args[0].cf == 0 &&
           init_cb.head == INIT_RECORDS * RECORD_SIZE,
           "before INIT: %u LWPINS at CPL3 - expect LWP_CFG %lx, LWP_CBADDR "
           "and SLWPCB %lx, CF 0, head %u (got ret %lx, %lx, %lx, %lx, CF "
           "%u times, head %u)", INIT_RECORDS, cfg, cb, INIT_RECORDS *
           RECORD_SIZE, c->ret, c->cfg, c->cbaddr, init_args[0].slwpcb,
           init_args[0].cf, init_cb.head);

    ok = start_report(INIT_CPU, TASK_INIT_AFTER, "after") &&
         wait_for(&c->done, 1, TIMEOUT_TICKS);
    report(ok && c->cbaddr == 0, "LWP_CBADDR after INIT - expect 0, LWP "
           "disabled (choice 5; got %lx)", c->cbaddr);
    report(ok && c->cfg_after == cfg, "LWP_CFG after INIT - expect %lx kept "
           "(choice 5; got %lx)", cfg, c->cfg_after);
    report(ok && c->ret == 0 && init_args[1].cf == 0 &&
           init_args[1].slwpcb == 0,
           "%u STC + LWPINS, then SLWPCB, at CPL3 after INIT - expect CF "
           "cleared every time, SLWPCB 0 (spec 5.2, 5.4; got ret %lx, CF "
           "%u times, SLWPCB %lx)", INIT_PROBES, c->ret, init_args[1].cf,
           init_args[1].slwpcb);
    for (i = 0; i < INIT_RECORDS; i++) {
        struct lwp_record *r = &init_ring[i];

        if (r->event_id != EVENT_INS || r->core_id != INIT_COREID ||
            r->flags != (u16)SMP_INIT_INS_IMM ||
            r->data1 != INIT_RECORDS - i || r->data2 != cb ||
            r->ip != (uintptr_t)smp_i_ins || r->reserved) {
            break;
        }
    }
    report(i == INIT_RECORDS, "the %u records stored before INIT - expect "
           "EventId 255, CoreId 0x%x, Flags %x, Data1 %u..1, Data2 %lx, IP "
           "%p (first difference: record %u)", INIT_RECORDS, INIT_COREID,
           (u16)SMP_INIT_INS_IMM, INIT_RECORDS, cb, smp_i_ins, i);
    for (i = INIT_RECORDS; i < SMALL_RING_RECORDS &&
         record_zero(&init_ring[i]); i++) {
        continue;
    }
    report(i == SMALL_RING_RECORDS && init_cb.head ==
           INIT_RECORDS * RECORD_SIZE && init_cb.missed_events == 0,
           "old ring after the LWPINS that followed INIT - expect nothing "
           "more stored, head %u (first record found in slot %u of %u, "
           "head %u, %lu missed)", INIT_RECORDS * RECORD_SIZE, i,
           SMALL_RING_RECORDS, init_cb.head, init_cb.missed_events);
    report_prefix_pop();
}

void test_lwp_smp(void)
{
    struct cpuid r;

    if (!(cpuid(0x80000001).c & CPUID_EXT3_LWP) || !enable_osxsave()) {
        report(false, "CPUID LWP and XSAVE - expect both with -cpu max,+lwp");
        return;
    }
    r = lwp_cpuid();
    lwp_edx = r.d;
    min_ring = ((r.c >> 16) & 0xff) * 32 * RECORD_SIZE;
    if (min_ring < 32 * RECORD_SIZE) {
        min_ring = 32 * RECORD_SIZE;
    }
    if (min_ring > sizeof(prod_ring) ||
        (lwp_edx & LOOP_EVENTS) != LOOP_EVENTS) {
        report(false, "CPUID 0x8000001C - expect VAL, IRE, BRE and "
               "LwpMinBufferSize <= %u records (got EDX %x, ECX %x)",
               SMALL_RING_RECORDS, r.d, r.c);
        return;
    }

    enable_apic();
    allow_user_int(SMP_RET_VECTOR);
    handle_irq(SMP_RET_VECTOR, smp_ret_handler);
    asm volatile("sidt %0" : "=m"(smp_idtr));
    smp_boot_cr3 = read_cr3();
    memcpy((void *)SMP_TRAMP_BASE, smp_tramp_start,
           smp_tramp_end - smp_tramp_start);

    test_loops();
    test_prodcons();
    test_init();

    wrmsr(MSR_LWP_CBADDR, 0);
    wrmsr(MSR_LWP_CFG, 0);
    handle_irq(SMP_RET_VECTOR, NULL);
}
