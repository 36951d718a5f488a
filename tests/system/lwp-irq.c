/*
 * Timer interrupts reach CPL3 code that LWP counts as they reach code it
 * does not count.
 *
 * Nothing LWP adds to generated code may delay an exit request, so an
 * interrupt: the counting code never writes the word that requests exits
 * (tests/user/exitreq-check.py checks the ops, of this test too).  Here
 * the local APIC timer, in one-shot mode and re-armed by its handler,
 * interrupts a CPL3 loop of one short block (CMP of a flag, JZ back)
 * IRQ_TICKS times, with LWP off and then with LWP counting Instructions
 * Retired and Branches Retired (intervals 2^25, so the loop counts in
 * the 32-bit window of normal blocks).  The handler takes the time from
 * the HPET, which runs on the same clock as the APIC timer
 * (QEMU_CLOCK_VIRTUAL): its delay is the time since it armed the timer,
 * less the timer's IRQ_COUNT.  Every interrupt must be taken, and the
 * loop must end; the median and the largest delay of each setting are
 * printed (docs/benchmarks.md), and not checked, as they depend on the
 * host.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libcflat.h"
#include "processor.h"
#include "desc.h"
#include "lwp-guest.h"
#include "lwp-irq.h"

#define IRQ_VECTOR          0x6e
/* one-shot, in APIC counts: QEMU's APIC counts at 1 GHz, so 20 us */
#define IRQ_COUNT           20000
#define IRQ_TICKS           2000

/* QEMU's HPET (-M pc): capabilities, configuration, main counter */
#define HPET_BASE           0xfed00000ul
#define HPET_CAP            0x000
#define HPET_CONF           0x010
#define HPET_COUNTER        0x0f0
#define HPET_ENABLE         BIT(0)

#define RING_BYTES          (64 * RECORD_SIZE)

static struct lwpcb cb __attribute__((aligned(64)));
static struct lwp_record ring[RING_BYTES / RECORD_SIZE]
    __attribute__((aligned(4096)));

/* volatile: the timer handler writes them under the code that reads them */
static volatile u8 done;                /* the last tick was taken */
static volatile unsigned ticks;         /* ticks taken (volatile: above) */
static u64 armed;                       /* HPET count when armed */
static u64 hpet_fs;                     /* femtoseconds per HPET count */
static long delay_ns[IRQ_TICKS];

static u64 hpet_read(unsigned reg)
{
    /* MMIO: every access must reach the HPET */
    return *(volatile u64 *)(HPET_BASE + reg);
}

static void hpet_write(unsigned reg, u64 val)
{
    /* MMIO: every access must reach the HPET */
    *(volatile u64 *)(HPET_BASE + reg) = val;
}

static void arm(void)
{
    armed = hpet_read(HPET_COUNTER);
    apic_write(APIC_TMICT, IRQ_COUNT);
}

static void irq_handler(struct ex_regs *regs)
{
    u64 now = hpet_read(HPET_COUNTER);

    (void)regs;
    delay_ns[ticks] = (long)((now - armed) * hpet_fs / 1000000) -
                      IRQ_COUNT;
    apic_write(APIC_EOI, 0);
    if (++ticks == IRQ_TICKS) {
        done = 1;
    } else {
        arm();
    }
}

/* CPL3: LLWPCB @arg (if any), loop until the last tick, LLWPCB 0 */
static void spin_user(void *arg)
{
    if (arg) {
        asm volatile("llwpcb %0" : : "r"(arg) : "memory");
    }
    asm volatile("1: cmpb $0, %0\n"
                 "jz 1b"
                 : : "m"(done) : "memory", "cc");
    if (arg) {
        asm volatile("llwpcb %0" : : "r"(0ul) : "memory");
    }
}

/* The @n delays in ascending order (insertion: n is small) */
static void sort_delays(long *d, unsigned n)
{
    for (unsigned i = 1; i < n; i++) {
        long x = d[i];
        unsigned j = i;

        for (; j > 0 && d[j - 1] > x; j--) {
            d[j] = d[j - 1];
        }
        d[j] = x;
    }
}

static void run(const char *what, struct lwpcb *c)
{
    int ret;

    done = 0;
    ticks = 0;
    apic_write(APIC_TDCR, APIC_TDCR_DIV1);
    apic_write(APIC_LVTT, IRQ_VECTOR);      /* one-shot */
    arm();
    ret = run_in_user_irq(spin_user, c);
    apic_write(APIC_LVTT, APIC_LVT_MASKED | IRQ_VECTOR);
    apic_write(APIC_TMICT, 0);
    sort_delays(delay_ns, ticks);
    report(ret == 0 && ticks == IRQ_TICKS && done,
           "%s: the CPL3 loop takes all %u timer interrupts and ends "
           "(returned %d, %u taken); delay in ns: median %ld, max %ld",
           what, IRQ_TICKS, ret, ticks, ticks ? delay_ns[ticks / 2] : 0,
           ticks ? delay_ns[ticks - 1] : 0);
}

void test_lwp_irq(bool lwp)
{
    u32 want = LWP_IRE | LWP_BRE;

    report_prefix_push("interrupt delay");
    /* COUNTER_CLK_PERIOD: at most 100 ns (10^8 fs) in an HPET */
    hpet_fs = hpet_read(HPET_CAP) >> 32;
    if (!hpet_fs || hpet_fs > 100000000) {
        report_skip("no HPET (counter period %lu fs)", hpet_fs);
        report_prefix_pop();
        return;
    }
    hpet_write(HPET_CONF, hpet_read(HPET_CONF) | HPET_ENABLE);
    enable_apic();
    handle_irq(IRQ_VECTOR, irq_handler);
    run("LWP off", NULL);
    if (lwp && (lwp_cpuid().d & want) == want && enable_osxsave()) {
        xsetbv_safe(0, XSTATE_FP_SSE_AVX | XSTATE_LWP);
        wrmsr(MSR_LWP_CFG, want);
        memset(&cb, 0, sizeof(cb));
        cb.flags = want;
        cb.buffer_size = RING_BYTES;
        cb.buffer_base = (uintptr_t)ring;
        for (unsigned id = 2; id <= 3; id++) {
            cb.event[id - 1].interval = LWP_EVENT_MASK >> 1;
            cb.event[id - 1].counter = LWP_EVENT_MASK >> 1;
        }
        run("IRE+BRE counted", &cb);
        /* LLWPCB 0 flushed the counters (5.1); a record resets one */
        report((cb.flags & want) == want &&
               ((cb.event[1].counter < LWP_EVENT_MASK >> 1 &&
                 cb.event[2].counter < LWP_EVENT_MASK >> 1) || cb.head),
               "IRE+BRE counted: LLWPCB enabled both, and both counted "
               "(Flags %x, counters %u and %u, %u records)", cb.flags,
               cb.event[1].counter, cb.event[2].counter,
               cb.head / RECORD_SIZE);
        wrmsr(MSR_LWP_CFG, 0);
    } else if (lwp) {
        report_skip("IRE and BRE not available");
    }
    handle_irq(IRQ_VECTOR, NULL);
    report_prefix_pop();
}
