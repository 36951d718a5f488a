/*
 * The guest of the HMP "info lwp" check in tests/migration/run.sh
 * (config=monitor of the 64-bit kernel, -cpu max,+lwp).
 *
 * At CPL3 it enables LWP with Instructions Retired (interval 10) and
 * Branches Retired (interval 7) on a ring of 96 records (max's minimum is
 * 32, CPUID 8000_001C ECX, spec 3.3), inserts an LWPINS record, runs a
 * loop of MON_ITERS iterations that fills the ring, so that MissedEvents
 * counts (spec 8.3), inserts another, flushes with SLWPCB (spec 5.2: the
 * LWPCB then holds BufferHeadOffset, MissedEvents and each EventCounter)
 * and ends with UD2, which raises #UD and so does not retire.  The kernel
 * saves the LWP state with XSAVE (spec 7.2, 7.3; XSAVE leaves LWP as it
 * is) and prints it with MissedEvents from the LWPCB,
 *
 *   LWPMONITOR cbaddr=0x... flags=0x... head=N ire=N bre=N saved=N missed=N
 *              cfg=0x... (LWP_CFG as RDMSR reads it)
 *
 * (saved: the EventId of the SavedEventRecord, 0 for none), then halts
 * with interrupts off and LWP still enabled: HMP "info lwp" must show the
 * same state.
 *
 * config=monitor-run: "info lwp" while CPL 3 code runs, between the TBs
 * that count LWP events, which is when the counters can lag behind the
 * instructions retired.  The guest enables Instructions Retired and
 * Branches Retired, each with the largest interval (2^25 - 1, Table 6-1)
 * and its counter starting at it, on a ring of MONRUN_RECORDS records,
 * prints
 *
 *   LWPMONRUN ring=0x... size=N interval=N inc=0x... jmp=0x...
 *
 * and runs "LLWPCB; 1: INC %rbx; JMP 1b" at CPL 3, interrupts off, from
 * RBX = 0, for ever.  LLWPCB is not counted (choice 39), so when the vCPU
 * is stopped at "inc", 2 * RBX instructions and RBX branches retired since
 * LWP was enabled; at "jmp", one instruction and one branch fewer.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libcflat.h"
#include "desc.h"
#include "processor.h"
#include "lwp-guest.h"
#include "lwp-monitor.h"

#define RING_RECORDS        96
#define MON_ITERS           1000

/* The standard-format XSAVE area up to the LWP component (choice 9) */
struct mon_area {
    u8 legacy[512];
    u64 xstate_bv;
    u64 xcomp_bv;
    u8 header_rsvd[48];
    u8 avx[256];
    struct xs_lwp lwp;
};

_Static_assert(__builtin_offsetof(struct mon_area, lwp) == 0x340, "LWP area");

static struct mon_area area __attribute__((aligned(64)));
static struct lwpcb cb __attribute__((aligned(64)));
static struct lwp_record ring[RING_RECORDS] __attribute__((aligned(32)));

/*
 * XCR0 and LWP_CFG for Instructions Retired and Branches Retired, and an
 * LWPCB @c for them with these intervals on @ring, without a threshold
 * interrupt
 */
static void monitor_setup(struct lwpcb *c, void *ring, u32 size, u32 ire,
                          u32 bre)
{
    write_cr4(read_cr4() | X86_CR4_OSXSAVE);
    xsetbv_safe(0, XSTATE_FP_SSE_AVX | XSTATE_LWP);
    wrmsr_safe(MSR_LWP_CFG, LWP_IRE | LWP_BRE);
    c->flags = LWP_IRE | LWP_BRE;
    c->buffer_size = size;
    c->buffer_base = (u64)ring;
    c->threshold = size;
    c->event[EVENT_IRE - 1].interval = ire;
    c->event[EVENT_BRE - 1].interval = bre;
}

static void monitor_user(void *arg)
{
    u64 n = MON_ITERS;

    (void)arg;
    asm volatile("llwpcb %[cb]\n"
                 "lwpins $1, %%ecx, %%edx\n"
                 "1: dec %[n]\n"
                 "jnz 1b\n"
                 "lwpins $2, %%ecx, %%edx\n"
                 "slwpcb %%rax\n"
                 "ud2"
                 : [n] "+r"(n) : [cb] "r"(&cb)
                 : "rax", "rcx", "rdx", "memory", "cc");
}

int lwp_monitor_main(void)
{
    int ret;

    monitor_setup(&cb, ring, sizeof(ring), 10, 7);
    ret = run_in_user(monitor_user, NULL);
    if (ret != (USER_EXCEPTION | UD_VECTOR)) {
        printf("FAIL: the CPL3 code ended with %x, not #UD\n", ret);
        return 1;
    }
    asm volatile("xsave %0" : "+m"(area) : "a"(0), "d"(XSTATE_LWP >> 32)
                 : "memory");
    if (!(area.xstate_bv & XSTATE_LWP)) {
        printf("FAIL: XSAVE says the LWP component is not in use\n");
        return 1;
    }
    printf("LWPMONITOR cbaddr=0x%lx flags=0x%x head=%u ire=%u bre=%u "
           "saved=%u missed=%lu cfg=0x%lx\n", area.lwp.cb_addr,
           area.lwp.flags, area.lwp.head, area.lwp.counter[EVENT_IRE - 1],
           area.lwp.counter[EVENT_BRE - 1], area.lwp.saved[0],
           cb.missed_events, rdmsr(MSR_LWP_CFG));
    asm volatile("cli");
    for (;;) {
        asm volatile("hlt");
    }
}

#define MONRUN_INTERVAL     0x1ffffff
#define MONRUN_RECORDS      1024

static struct lwpcb run_cb __attribute__((aligned(64)));
static struct lwp_record run_ring[MONRUN_RECORDS] __attribute__((aligned(32)));

static void monitor_run_user(void *arg)
{
    (void)arg;
    asm volatile("xor %%ebx, %%ebx\n"
                 "llwpcb %[cb]\n"
                 ".global monrun_inc\n"
                 "monrun_inc: inc %%rbx\n"
                 ".global monrun_jmp\n"
                 "monrun_jmp: jmp monrun_inc"
                 : : [cb] "r"(&run_cb) : "rbx", "memory", "cc");
}

int lwp_monitor_run_main(void)
{
    u64 inc, jmp;
    int ret;

    /* the labels of monitor_run_user's loop */
    asm("lea monrun_inc(%%rip), %0\n"
        "lea monrun_jmp(%%rip), %1" : "=r"(inc), "=r"(jmp));
    monitor_setup(&run_cb, run_ring, sizeof(run_ring), MONRUN_INTERVAL,
                  MONRUN_INTERVAL);
    run_cb.event[EVENT_IRE - 1].counter = MONRUN_INTERVAL;
    run_cb.event[EVENT_BRE - 1].counter = MONRUN_INTERVAL;
    printf("LWPMONRUN ring=0x%lx size=%u interval=%u inc=0x%lx jmp=0x%lx\n",
           (u64)run_ring, (unsigned)sizeof(run_ring), MONRUN_INTERVAL, inc,
           jmp);
    ret = run_in_user(monitor_run_user, NULL);
    printf("FAIL: the CPL3 loop ended with %x\n", ret);
    return 1;
}
