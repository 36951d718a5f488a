/*
 * DCache Misses (EventId 4, spec 2.4) of every kind of load that
 * generated code makes, at CPL3 in system mode (config=dme): the
 * routines of tests/user/lwp-dme-loads.c.inc, run as tests/user/lwp-dme.c
 * runs them (the stack loads twice, EventCounter 0 then 1; each other
 * kind twice, on two copies of its lines), each run's records printed on
 * the serial line for tests/user/dme-check.py, which checks them against
 * the model fed the execlog trace of the same boot (physical addresses,
 * equal to linear ones under the identity map).  config=dme-clocks, under
 * -cpu max,+lwp,cost-model=detailed, runs pointer chases with CPU Clocks
 * not Halted and Reference Clocks not Halted instead, as "lwp-dme clocks"
 * does, for dme-check.py --system --clocks.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libcflat.h"
#include "processor.h"
#include "desc.h"
#include "lwp-guest.h"
#include "lwp-dme-loads.h"
#include "../user/lwp-dme.h"
#include "../user/lwp-dme-loads.c.inc"

#define STACK_STEPS         64          /* as lwp-dme.c */
#define STACK_BYTES         (4ul << 20)
#define KINDS_BYTES         (64ul * 4096)
#define RING_BYTES          (1024 * RECORD_SIZE)

static struct lwpcb cb __attribute__((aligned(64)));
static struct lwp_record ring[RING_BYTES / RECORD_SIZE]
    __attribute__((aligned(4096)));
static u8 stack_area[STACK_BYTES] __attribute__((aligned(4096)));
static u8 kinds_area[2][KINDS_BYTES] __attribute__((aligned(4096)));
static const u32 gather_idx[4] = { 0, 64, 128, 192 };
/* the chases' lists: 8 KiB (L1), 16 and 1024 lines a page apart */
static u8 l1_area[8192] __attribute__((aligned(4096)));
static u8 l2_area[16 * 4096] __attribute__((aligned(4096)));
static u8 l3_area[1024 * 4096] __attribute__((aligned(4096)));

struct dme_run {
    void (*fn)(struct dme_run *r);
    void *start;
    u64 n;
};

static void stack_fn(struct dme_run *r)
{
    dme_stack(&cb, r->start, r->n);
}

static void kinds_fn(struct dme_run *r)
{
    dme_kinds(&cb, r->start, gather_idx);
}

static void chase_fn(struct dme_run *r)
{
    dme_chase(&cb, r->start, r->n);
}

static void run_user(void *arg)
{
    struct dme_run *r = arg;

    r->fn(r);
}

/*
 * One run at CPL3, DME at interval 1 from EventCounter @counter (and
 * LWPVAL at interval 0, as lwp-dme.c); with @iv, CPU Clocks not Halted at
 * @iv and Reference Clocks not Halted at @iv + 1 instead of DME (mode 2
 * of lwp-dme.c).  Prints it as lwp-dme.c does, each record on a REC line.
 * Returns the number of records.
 */
static unsigned run(const char *name, struct dme_run *r, u32 counter,
                    u32 iv)
{
    u32 flags = iv ? LWP_CNH | LWP_RNH | LWP_VAL : LWP_DME | LWP_VAL;
    unsigned k;
    int ret;

    memset(&cb, 0, sizeof(cb));
    memset(ring, 0, sizeof(ring));
    cb.flags = flags;
    cb.buffer_size = RING_BYTES;
    cb.buffer_base = (uintptr_t)ring;
    if (iv) {
        cb.event[EVENT_CNH - 1].interval = iv;
        cb.event[EVENT_CNH - 1].counter = counter;
        cb.event[EVENT_RNH - 1].interval = iv + 1;
        cb.event[EVENT_RNH - 1].counter = counter;
    } else {
        cb.event[EVENT_DME - 1].interval = 1;
        cb.event[EVENT_DME - 1].counter = counter;
    }
    ret = run_in_user(run_user, r);
    k = cb.head / RECORD_SIZE;
    printf("CHASE %s %lu %u 0x0 %d %u\n", name, r->n, iv ? iv : 1,
           iv ? 2 : 0, counter);
    for (unsigned i = 0; i < k; i++) {
        const u8 *b = (const u8 *)&ring[i];
        char hex[2 * RECORD_SIZE + 1];

        for (unsigned j = 0; j < RECORD_SIZE; j++) {
            snprintf(hex + 2 * j, 3, "%02x", b[j]);
        }
        printf("REC %s\n", hex);
    }
    printf("END %u\n", k);
    report(ret == 0 && cb.flags == flags && k > 0,
           "%s: %s and LWPVAL enabled at CPL3, the routine returns, "
           "records stored (Flags %x, returned %d, %u records)", name,
           iv ? "CNH, RNH" : "DME", cb.flags, ret, k);
    return k;
}

/* A cyclic list of @count pointers @stride bytes apart from @base */
static void make_list(u8 *base, u64 stride, u64 count)
{
    for (u64 i = 0; i < count; i++) {
        *(void **)(base + i * stride) = base + ((i + 1) % count) * stride;
    }
}

void test_lwp_dme_loads(void)
{
    u32 want = LWP_DME | LWP_VAL;
    struct dme_run r;

    report_prefix_push("DME loads");
    if ((lwp_cpuid().d & want) != want || !enable_osxsave()) {
        report_skip("DME or LWPVAL not available");
        report_prefix_pop();
        return;
    }
    /* SSE and AVX at CPL3: dme_kinds uses them */
    write_cr0((read_cr0() & ~(X86_CR0_EM | X86_CR0_TS)) | X86_CR0_MP);
    write_cr4(read_cr4() | X86_CR4_OSFXSR | X86_CR4_OSXMMEXCPT);
    xsetbv_safe(0, XSTATE_FP_SSE_AVX | XSTATE_LWP);
    wrmsr(MSR_LWP_CFG, want);

    r = (struct dme_run){ stack_fn, stack_area + STACK_BYTES - 4096,
                          STACK_STEPS };
    run("stack", &r, 0, 0);
    run("stack-again", &r, 1, 0);
    r = (struct dme_run){ kinds_fn, kinds_area[0], 1 };
    run("kinds", &r, 0, 0);
    r.start = kinds_area[1];
    run("kinds-1", &r, 1, 0);

    wrmsr(MSR_LWP_CFG, 0);
    report_prefix_pop();
}

/*
 * config=dme-clocks (-cpu max,+lwp,cost-model=detailed): the chases of
 * "lwp-dme clocks" from L1, L2 and L3 (each list's first chase from
 * DRAM), whose records dme-check.py --system --clocks checks against the
 * reference models; here, the chase from L1 by hand, as lwp-dme.c does
 * it: 534 clocks, 5 CNH records at interval 104 and 5 RNH at 105
 */
void test_lwp_dme_clocks(void)
{
    u32 want = LWP_CNH | LWP_RNH | LWP_VAL;
    struct dme_run r = { chase_fn, l1_area, 128 };
    unsigned k, cnh = 0, rnh = 0;

    report_prefix_push("clocks");
    if ((lwp_cpuid().d & want) != want || !enable_osxsave()) {
        report_skip("CNH, RNH or LWPVAL not available");
        report_prefix_pop();
        return;
    }
    xsetbv_safe(0, XSTATE_FP_SSE_AVX | XSTATE_LWP);
    wrmsr(MSR_LWP_CFG, want);
    make_list(l1_area, 64, 128);
    make_list(l2_area, 4096, 16);
    make_list(l3_area, 4096, 1024);
    run("clk-l1-first", &r, 0, 999);
    k = run("clk-l1-second", &r, 104, 104);
    for (unsigned i = 0; i < k; i++) {
        cnh += ring[i].event_id == EVENT_CNH;
        rnh += ring[i].event_id == EVENT_RNH;
    }
    report(k == 10 && cnh == 5 && rnh == 5, "a chase from L1 with a "
           "mispredicted exit: 534 clocks, 5 CNH records at interval 104 "
           "and 5 RNH at 105 (%u and %u of %u)", cnh, rnh, k);
    r = (struct dme_run){ chase_fn, l2_area, 16 };
    run("clk-l2", &r, 0, 99);
    run("clk-l2-again", &r, 3, 7);
    r = (struct dme_run){ chase_fn, l3_area, 1024 };
    run("clk-l3", &r, 0, 1000);
    run("clk-l3-again", &r, 5, 150);
    wrmsr(MSR_LWP_CFG, 0);
    report_prefix_pop();
}
