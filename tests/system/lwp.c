/*
 * System-mode tests of AMD Lightweight Profiling (LWP) detection and
 * configuration: CPUID, XCR0[62] and the LWP_CFG / LWP_CBADDR MSRs.
 *
 * Expected values come from the AMD LWP specification (43724 rev 3.08,
 * sections 3 and 4) and from real Family 15h parts; they are never read
 * back from the emulator.  The command line word config=NAME says which
 * CPU model QEMU was started with:
 *
 *   nolwp  -cpu max             LWP absent
 *   g4     -cpu Opteron_G4,+lwp exact Bulldozer values
 *   g5     -cpu Opteron_G5,+lwp exact Piledriver values (same as Bulldozer)
 *   max    -cpu max,+lwp        values checked against the spec formulas
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libcflat.h"
#include "desc.h"
#include "processor.h"
#include "lwp-guest.h"
#include "lwp-events.h"
#include "lwp-migrate.h"
#include "lwp-monitor.h"
#include "lwp-tasks.h"
#include "lwp-irq.h"
#include "lwp-dme-loads.h"
#include "pmu.h"
#include "lwp-xsave.h"
#include "lwp-smp.h"


/* Written without #GP but read back as 0, as on the AMD FX-8150 */
#define LWP_CFG_IGNORED     0xffff000000000001ul

/* CPUID 0x8000001C of Bulldozer and Piledriver (FX-8150, FX-8350, ...) */
#define FAM15H_LWP_EBX      0x80032013
#define FAM15H_LWP_ECX      0x00010200
#define FAM15H_LWP_EDX      0x8000000f

enum config { CONFIG_NOLWP, CONFIG_G4, CONFIG_G5, CONFIG_MAX, CONFIG_MIGRATE,
             CONFIG_SMP, CONFIG_MONITOR, CONFIG_MONITOR_RUN, CONFIG_IRQ,
             CONFIG_DME, CONFIG_PMU, CONFIG_NOPMU, CONFIG_PMU_MONITOR,
             CONFIG_PMU_MIGRATE, CONFIG_PMU_COST, CONFIG_DME_CLOCKS };

static const char *const config_names[] = {
    "nolwp", "g4", "g5", "max", "migrate", "smp", "monitor", "monitor-run",
    "irq", "dme", "pmu", "nopmu", "pmu-monitor", "pmu-migrate", "pmu-cost",
    "dme-clocks",
};
static enum config config;

static bool fam15h(void)
{
    return config == CONFIG_G4 || config == CONFIG_G5;
}

/* ---- harness self-tests ---- */

/* Incremented by the interrupt handler while the test waits */
static volatile unsigned irq_count;

static void self_ipi_handler(struct ex_regs *regs)
{
    (void)regs;
    irq_count++;
    apic_write(APIC_EOI, 0);
}

struct user_probe {
    u64 cs;
    u32 magic;
    int vec;
};

static void user_probe(void *arg)
{
    struct user_probe *p = arg;
    u64 val;

    p->cs = read_cs();
    p->magic = 0x600dcafe;
    p->vec = rdmsr_safe(MSR_EFER, &val);
}

static void user_ud2(void *arg)
{
    (void)arg;
    asm volatile("ud2");
}

/* INVD and WBINVD are privileged (APM vol. 3): #GP(0) at CPL 3 */
static void user_invd(void *arg)
{
    (void)arg;
    asm volatile("invd");
}

static void user_wbinvd(void *arg)
{
    (void)arg;
    asm volatile("wbinvd");
}

static void test_harness(void)
{
    struct user_probe probe = { 0, 0, -1 };
    char buf[64];
    int i, ret;

    report_prefix_push("harness");
    snprintf(buf, sizeof(buf), "%08x %016lx %d %u %c %s",
             0x1234u, 0xabcdeful, -42, 42u, 'z', "ok");
    report(!strcmp(buf, "00001234 0000000000abcdef -42 42 z ok"),
           "snprintf(\"%%08x %%016lx %%d %%u %%c %%s\") - expect "
           "\"00001234 0000000000abcdef -42 42 z ok\"");
    report(ud2_safe() == UD_VECTOR, "UD2 - expect #UD caught, vector 6");

    ret = run_in_user(user_probe, &probe);
    report(ret == 0 && probe.magic == 0x600dcafe,
           "CPL3 function stores 0x600dcafe - expect the kernel to see it");
    report((probe.cs & 3) == 3, "CS.RPL in the user function - expect 3");
    report(probe.vec == GP_VECTOR,
           "RDMSR(EFER) at CPL3 - expect #GP caught, vector 13");
    ret = run_in_user(user_ud2, NULL);
    report(ret == (USER_EXCEPTION | UD_VECTOR),
           "unguarded UD2 at CPL3 - expect run_in_user() to return "
           "USER_EXCEPTION | 6");
    ret = run_in_user(user_invd, NULL);
    report(ret == (USER_EXCEPTION | GP_VECTOR),
           "INVD at CPL3 - expect #GP, vector 13");
    ret = run_in_user(user_wbinvd, NULL);
    report(ret == (USER_EXCEPTION | GP_VECTOR),
           "WBINVD at CPL3 - expect #GP, vector 13");

    enable_apic();
    handle_irq(SELF_IPI_VECTOR, self_ipi_handler);
    irq_count = 0;
    apic_write(APIC_ICR2, 0);
    apic_write(APIC_ICR, APIC_DEST_SELF | APIC_INT_ASSERT | APIC_DM_FIXED |
               SELF_IPI_VECTOR);
    sti();
    for (i = 0; i < 100000; i++) {
        pause();
    }
    cli();
    report(irq_count == 1,
           "fixed self-IPI, vector 0x40 - expect the handler to run once");
    report(!apic_vector_bit(APIC_ISR, SELF_IPI_VECTOR),
           "APIC ISR bit of vector 0x40 after EOI - expect clear");
    report_prefix_pop();
}

/* ---- LWP absent ---- */

static const struct {
    u32 index;
    const char *name;
} lwp_msrs[] = {
    { MSR_LWP_CFG, "LWP_CFG" },
    { MSR_LWP_CBADDR, "LWP_CBADDR" },
};

static void test_nolwp(void)
{
    struct cpuid r;
    u64 xcr0, val;
    unsigned i;

    report_prefix_push("absent");
    report(!(cpuid(0x80000001).c & CPUID_EXT3_LWP),
           "CPUID 0x80000001 ECX[15] (LWP) - expect 0");
    report(!(cpuid_indexed(0xd, 0).d & BIT(30)),
           "CPUID 0xD.0 EDX[30] (XCR0[62] supported) - expect 0");
    if (enable_osxsave()) {
        xcr0 = xgetbv(0);
        report(xsetbv_safe(0, xcr0 | XSTATE_LWP) == GP_VECTOR,
               "XSETBV(0, XCR0 | 1<<62) - expect #GP");
        val = xgetbv(0);
        report(val == xcr0, "XCR0 after the failed XSETBV - expect "
               "unchanged %lx (got %lx)", xcr0, val);
    } else {
        report_skip("CPUID.1:ECX.XSAVE = 0: XSETBV checks");
    }
    for (i = 0; i < ARRAY_SIZE(lwp_msrs); i++) {
        report(rdmsr_safe(lwp_msrs[i].index, &val) == GP_VECTOR,
               "RDMSR(%s) - expect #GP", lwp_msrs[i].name);
        report(wrmsr_safe(lwp_msrs[i].index, 0) == GP_VECTOR,
               "WRMSR(%s, 0) - expect #GP", lwp_msrs[i].name);
    }
    if (cpuid(0x80000000).a >= LWP_LEAF) {
        r = cpuid(LWP_LEAF);
        report(!r.a && !r.b && !r.c && !r.d,
               "CPUID 0x8000001C - expect all zero (got %08x %08x %08x %08x)",
               r.a, r.b, r.c, r.d);
    } else {
        report_skip("CPUID 0x8000001C beyond the maximum extended leaf");
    }
    report_prefix_pop();
}

/* ---- LWP present: CPUID ---- */

static void test_lwp_cpuid(void)
{
    u32 max_ext = cpuid(0x80000000).a;
    struct cpuid r = lwp_cpuid();
    u32 max_events = 0;
    int bit;

    report_prefix_push("cpuid");
    report(cpuid(0x80000001).c & CPUID_EXT3_LWP,
           "CPUID 0x80000001 ECX[15] (LWP) - expect 1");
    report(max_ext >= LWP_LEAF,
           "CPUID 0x80000000 EAX - expect >= 0x8000001c (got %x)", max_ext);
    if (fam15h()) {
        report(r.b == FAM15H_LWP_EBX,
               "0x8000001C EBX - expect %08x (got %08x)", FAM15H_LWP_EBX, r.b);
        report(r.c == FAM15H_LWP_ECX,
               "0x8000001C ECX - expect %08x (got %08x)", FAM15H_LWP_ECX, r.c);
        report(r.d == FAM15H_LWP_EDX,
               "0x8000001C EDX - expect %08x (got %08x)", FAM15H_LWP_EDX, r.d);
    }
    report(r.a == 0,
           "0x8000001C EAX before XCR0[62] is set - expect 0 (got %x)", r.a);

    /* Spec 3.3, Table 3-1 */
    for (bit = 6; bit >= 1 && !max_events; bit--) {
        if (r.d & BIT(bit)) {
            max_events = bit;
        }
    }
    report(r.d & 1, "0x8000001C EDX[0] LwpAvail - expect 1");
    report(((r.b >> 8) & 0xff) == 32,
           "0x8000001C EBX[15:8] LwpEventSize - expect 32 (got %u)",
           (r.b >> 8) & 0xff);
    report((r.b >> 24) == 0x80,
           "0x8000001C EBX[31:24] LwpEventOffset - expect 0x80 (got %x)",
           r.b >> 24);
    report(((r.b >> 16) & 0xff) == max_events,
           "0x8000001C EBX[23:16] LwpMaxEvents - expect %u, the highest "
           "event in EDX[6:1] (got %u)", max_events, (r.b >> 16) & 0xff);
    report((r.b & 0xff) == 0x10 + max_events,
           "0x8000001C EBX[7:0] LwpCbSize - expect 0x80/8 + LwpMaxEvents = "
           "%u (got %u)", 0x10 + max_events, r.b & 0xff);
    report(((r.c >> 9) & 0x7f) == 1,
           "0x8000001C ECX[15:9] LwpVersion - expect 1 (got %u)",
           (r.c >> 9) & 0x7f);
    report(((r.c >> 16) & 0xff) == 1,
           "0x8000001C ECX[23:16] LwpMinBufferSize - expect 1 (got %u)",
           (r.c >> 16) & 0xff);

    /* Spec 3.1, 3.2 */
    r = cpuid_indexed(0xd, 0);
    report(r.d & BIT(30),
           "CPUID 0xD.0 EDX[30] (XCR0[62] supported) - expect 1");
    if (fam15h()) {
        report(r.a == 0x7, "CPUID 0xD.0 EAX - expect 0x7 (got %x)", r.a);
        report(r.d == 0x40000000,
               "CPUID 0xD.0 EDX - expect 0x40000000 (got %x)", r.d);
        report(r.c == 0x3c0,
               "CPUID 0xD.0 ECX, max size with LWP - expect 0x3c0 (got %x)",
               r.c);
    } else {
        report(r.c >= 0x3c0,
               "CPUID 0xD.0 ECX, max size - expect >= 0x3c0, the end of the "
               "LWP area (got %x)", r.c);
    }
    r = cpuid_indexed(0xd, 62);
    report(r.a == 0x80, "CPUID 0xD.62 EAX (size) - expect 0x80 (got %x)", r.a);
    report(r.b == 0x340,
           "CPUID 0xD.62 EBX (offset) - expect 0x340 (got %x)", r.b);
    report(r.c == 0 && r.d == 0,
           "CPUID 0xD.62 ECX, EDX - expect 0, 0 (got %x, %x)", r.c, r.d);
    report_prefix_pop();
}

/* ---- LWP present: reset values (spec 4.2, 4.3), before any write ---- */

static void test_lwp_reset(void)
{
    u64 got;
    unsigned i;
    int vec;

    report_prefix_push("reset");
    for (i = 0; i < ARRAY_SIZE(lwp_msrs); i++) {
        got = ~0ul;
        vec = rdmsr_safe(lwp_msrs[i].index, &got);
        report(!vec && got == 0, "RDMSR(%s) after reset - expect 0 "
               "(got vector %d, %lx)", lwp_msrs[i].name, vec, got);
    }
    report_prefix_pop();
}

/* ---- LWP present: XCR0[62] ---- */

static void test_lwp_xsave(void)
{
    u64 xcr0 = 0;
    u32 size, eax;
    int vec;

    report_prefix_push("xcr0");
    if (!enable_osxsave()) {
        report(false, "CPUID.1:ECX.XSAVE - expect 1, LWP requires XSAVE");
        report_prefix_pop();
        return;
    }
    report(xsetbv_safe(0, XSTATE_FP_SSE_AVX) == 0,
           "XSETBV(0, 0x7) - expect accepted");
    size = cpuid_indexed(0xd, 0).b;
    report(size == 0x340,
           "CPUID 0xD.0 EBX with XCR0 = 0x7 - expect 0x340 (got %x)", size);
    report(xsetbv_safe(0, XSTATE_FP_SSE_AVX | XSTATE_LWP) == 0,
           "XSETBV(0, 0x7 | 1<<62) - expect accepted");
    vec = xgetbv_safe(0, &xcr0);
    report(!vec && xcr0 == (XSTATE_FP_SSE_AVX | XSTATE_LWP),
           "XGETBV(0) - expect 0x4000000000000007 (got %lx)", xcr0);
    size = cpuid_indexed(0xd, 0).b;
    report(size == 0x3c0, "CPUID 0xD.0 EBX with XCR0 = 0x7 | 1<<62 - expect "
           "0x3c0 (got %x)", size);
    eax = lwp_cpuid().a;
    report(eax == 1, "0x8000001C EAX with XCR0[62] = 1, LWP_CFG = 0 - expect "
           "0x1 (got %x)", eax);
    report_prefix_pop();
}

/* ---- LWP present: the MSRs at CPL0 ---- */

static void check_cfg_ignored_bit(int bit, u64 known)
{
    u64 got = ~0ul;
    int vec;

    wrmsr_safe(MSR_LWP_CFG, known);
    vec = wrmsr_safe(MSR_LWP_CFG, BIT_ULL(bit));
    rdmsr_safe(MSR_LWP_CFG, &got);
    report(!vec && got == 0, "WRMSR(LWP_CFG, bit %d) - expect accepted, "
           "reads 0 (got vector %d, %lx)", bit, vec, got);
}

static void test_lwp_cfg(u32 edx)
{
    const u64 known = LWP_CFG_COREID(0x3c) | LWP_CFG_VECTOR(0xc3);
    static const u8 ids[][2] = {           /* COREID, VECTOR */
        { 0xa5, 0x5a }, { 0x5a, 0xa5 }, { 0xff, 0xff },
    };
    u64 v, got;
    int bit, vec;
    unsigned i;

    report_prefix_push("LWP_CFG");
    for (bit = 1; bit < 32; bit++) {
        v = BIT_ULL(bit);
        printf("trace-expect: lwp_wrmsr_cfg cpu 0 0x%lx\n", known);
        printf("trace-expect: lwp_wrmsr_cfg cpu 0 0x%lx\n", v);
        wrmsr_safe(MSR_LWP_CFG, known);
        vec = wrmsr_safe(MSR_LWP_CFG, v);
        got = ~0ul;
        rdmsr_safe(MSR_LWP_CFG, &got);
        if (edx & v) {
            report(!vec && got == v, "WRMSR(LWP_CFG, bit %d), set in EDX - "
                   "expect accepted, reads %lx (got vector %d, %lx)",
                   bit, v, vec, got);
        } else {
            report(vec == GP_VECTOR && got == known,
                   "WRMSR(LWP_CFG, bit %d), clear in EDX - expect #GP, MSR "
                   "unchanged (got vector %d, %lx)", bit, vec, got);
        }
    }
    check_cfg_ignored_bit(0, known);
    for (bit = 48; bit < 64; bit++) {
        check_cfg_ignored_bit(bit, known);
    }
    for (i = 0; i < ARRAY_SIZE(ids); i++) {
        v = LWP_CFG_COREID(ids[i][0]) | LWP_CFG_VECTOR(ids[i][1]);
        vec = wrmsr_safe(MSR_LWP_CFG, v);
        got = ~0ul;
        rdmsr_safe(MSR_LWP_CFG, &got);
        report(!vec && got == v, "WRMSR(LWP_CFG, COREID %02x VECTOR %02x) - "
               "expect exact read-back (got vector %d, %lx)",
               ids[i][0], ids[i][1], vec, got);
    }
    v = (edx & ~1u) | LWP_CFG_COREID(0xff) | LWP_CFG_VECTOR(0xff);
    vec = wrmsr_safe(MSR_LWP_CFG, v | LWP_CFG_IGNORED);
    got = ~0ul;
    rdmsr_safe(MSR_LWP_CFG, &got);
    report(!vec && got == v, "WRMSR(LWP_CFG, %016lx) - expect accepted, "
           "reads %016lx (got vector %d, %lx)", v | LWP_CFG_IGNORED, v,
           vec, got);
    wrmsr_safe(MSR_LWP_CFG, 0);
    report_prefix_pop();
}

static void test_lwp_cbaddr(void)
{
    static const u64 bad[] = { 1, 0x1000, BIT_ULL(63), ~0ul };
    u64 got = ~0ul;
    unsigned i;
    int vec;

    report_prefix_push("LWP_CBADDR");
    vec = rdmsr_safe(MSR_LWP_CBADDR, &got);
    report(!vec && got == 0, "RDMSR(LWP_CBADDR), no LWPCB loaded - expect 0 "
           "(got vector %d, %lx)", vec, got);
    /* run.sh finds each write, refused or not, in QEMU's trace log */
    printf("trace-expect: lwp_wrmsr_cbaddr cpu 0 0x0\n");
    report(wrmsr_safe(MSR_LWP_CBADDR, 0) == 0,
           "WRMSR(LWP_CBADDR, 0) - expect accepted");
    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        printf("trace-expect: lwp_wrmsr_cbaddr cpu 0 0x%lx\n", bad[i]);
        vec = wrmsr_safe(MSR_LWP_CBADDR, bad[i]);
        got = ~0ul;
        rdmsr_safe(MSR_LWP_CBADDR, &got);
        report(vec == GP_VECTOR && got == 0, "WRMSR(LWP_CBADDR, %lx) - expect "
               "#GP, reads 0 (got vector %d, %lx)", bad[i], vec, got);
    }
    report_prefix_pop();
}

/* ---- LWP present: CPUID 0x8000001C EAX mirrors XCR0[62] and LWP_CFG ---- */

static void check_avail(u32 edx, u64 cfg)
{
    u32 expect = 1 | (cfg & edx & 0xfffffffe);
    int vec = wrmsr_safe(MSR_LWP_CFG, cfg);
    u32 eax = lwp_cpuid().a;

    report(!vec && eax == expect, "LWP_CFG = %lx: 0x8000001C EAX - expect "
           "1 | (LWP_CFG & EDX & ~1) = %x (got vector %d, %x)",
           cfg, expect, vec, eax);
}

static void test_lwp_avail(u32 edx)
{
    u64 cfg = (edx & ~1u) | LWP_CFG_COREID(0xa5) | LWP_CFG_VECTOR(0x5a);
    u32 eax;
    int bit;

    report_prefix_push("avail");
    xsetbv_safe(0, XSTATE_FP_SSE_AVX | XSTATE_LWP);
    if (fam15h()) {
        wrmsr_safe(MSR_LWP_CFG, 0x8000000e);
        eax = lwp_cpuid().a;
        report(eax == 0x8000000f, "LWP_CFG = 0x8000000e: 0x8000001C EAX - "
               "expect 0x8000000f (got %x)", eax);
    }
    check_avail(edx, 0);
    for (bit = 1; bit < 32; bit++) {
        if (edx & BIT(bit)) {
            check_avail(edx, BIT(bit));
        }
    }
    check_avail(edx, cfg);
    report(xsetbv_safe(0, XSTATE_FP_SSE_AVX) == 0,
           "XSETBV(0, 0x7), clearing XCR0[62] - expect accepted");
    eax = lwp_cpuid().a;
    report(eax == 0, "XCR0[62] = 0, LWP_CFG = %lx: 0x8000001C EAX - expect 0 "
           "(got %x)", cfg, eax);
    wrmsr_safe(MSR_LWP_CFG, 0);
    report_prefix_pop();
}

/* ---- LWP present: CPL3 ---- */

struct user_lwp {
    int rd_cfg, wr_cfg, rd_cbaddr, wr_cbaddr, xsetbv;
    u32 eax;
};

static void user_lwp(void *arg)
{
    struct user_lwp *u = arg;
    u64 val;

    u->rd_cfg = rdmsr_safe(MSR_LWP_CFG, &val);
    u->wr_cfg = wrmsr_safe(MSR_LWP_CFG, 0);
    u->rd_cbaddr = rdmsr_safe(MSR_LWP_CBADDR, &val);
    u->wr_cbaddr = wrmsr_safe(MSR_LWP_CBADDR, 0);
    u->xsetbv = xsetbv_safe(0, XSTATE_FP_SSE_AVX);
    u->eax = lwp_cpuid().a;
}

static void test_lwp_user(u32 edx)
{
    struct user_lwp u = { -1, -1, -1, -1, -1, 0 };
    u64 cfg = (edx & ~1u) | LWP_CFG_COREID(0x11), got = 0, xcr0 = 0;
    u32 eax;
    int ret;

    report_prefix_push("CPL3");
    xsetbv_safe(0, XSTATE_FP_SSE_AVX | XSTATE_LWP);
    wrmsr_safe(MSR_LWP_CFG, cfg);
    eax = lwp_cpuid().a;
    ret = run_in_user(user_lwp, &u);
    report(ret == 0, "user function - expect a normal return (got %x)", ret);
    report(u.rd_cfg == GP_VECTOR, "RDMSR(LWP_CFG) at CPL3 - expect #GP");
    report(u.wr_cfg == GP_VECTOR, "WRMSR(LWP_CFG, 0) at CPL3 - expect #GP");
    report(u.rd_cbaddr == GP_VECTOR, "RDMSR(LWP_CBADDR) at CPL3 - expect #GP");
    report(u.wr_cbaddr == GP_VECTOR,
           "WRMSR(LWP_CBADDR, 0) at CPL3 - expect #GP");
    report(u.xsetbv == GP_VECTOR, "XSETBV(0, 0x7) at CPL3 - expect #GP");
    report(u.eax == eax, "0x8000001C EAX at CPL3 - expect %x as at CPL0 "
           "(got %x)", eax, u.eax);
    rdmsr_safe(MSR_LWP_CFG, &got);
    report(got == cfg, "LWP_CFG after the CPL3 WRMSR - expect unchanged %lx "
           "(got %lx)", cfg, got);
    xgetbv_safe(0, &xcr0);
    report(xcr0 == (XSTATE_FP_SSE_AVX | XSTATE_LWP), "XCR0 after the CPL3 "
           "XSETBV - expect unchanged 0x4000000000000007 (got %lx)", xcr0);
    wrmsr_safe(MSR_LWP_CFG, 0);
    report_prefix_pop();
}

static bool parse_config(void)
{
    int i = cmdline_choice("config", config_names, ARRAY_SIZE(config_names));

    config = i;
    return i >= 0;
}

int main(u32 magic, u32 mbi)
{
    u32 edx;

    setup_cmdline(magic, mbi);
    setup_desc();
    if (!parse_config()) {
        printf("ABORT: the command line needs config=nolwp|g4|g5|max\n");
        abort();
    }
    if (config == CONFIG_MIGRATE) {
        /* -cpu max,+lwp: tests/migration/run.sh (lwp-migrate.c) */
        return lwp_migrate_main();
    }
    if (config == CONFIG_MONITOR) {
        /* -cpu max,+lwp: HMP "info lwp" in tests/migration/run.sh */
        return lwp_monitor_main();
    }
    if (config == CONFIG_MONITOR_RUN) {
        /* -cpu max,+lwp: HMP "info lwp" in tests/migration/run.sh */
        return lwp_monitor_run_main();
    }
    if (config == CONFIG_IRQ) {
        /* -cpu max,+lwp: only the interrupt delays (exitreq-check.py) */
        report_prefix_push(config_names[config]);
        test_lwp_irq(true);
        report_prefix_pop();
        return report_summary();
    }
    if (config == CONFIG_DME || config == CONFIG_DME_CLOCKS) {
        /*
         * -cpu max,+lwp: the DME records of tests/user/dme-check.py;
         * with cost-model=detailed, the clock records of its --clocks
         */
        report_prefix_push(config_names[config]);
        if (config == CONFIG_DME) {
            test_lwp_dme_loads();
        } else {
            test_lwp_dme_clocks();
        }
        report_prefix_pop();
        return report_summary();
    }
    if (config == CONFIG_PMU_MONITOR) {
        /* -cpu Nehalem,pmu=on: "info pmu" in tests/migration/run.sh */
        return pmu_monitor_main();
    }
    if (config == CONFIG_PMU_MIGRATE) {
        /* -cpu Nehalem,pmu=on: part i of tests/migration/run.sh */
        return pmu_migrate_main();
    }
    if (config == CONFIG_PMU_COST) {
        /* -cpu Nehalem,pmu=on,cost-model=detailed: pmu.c */
        return pmu_cost_main();
    }
    if (config == CONFIG_PMU || config == CONFIG_NOPMU) {
        /* -cpu Nehalem,pmu=on, or a CPU without a PMU: pmu.c */
        return pmu_main(config == CONFIG_PMU);
    }
    if (config == CONFIG_SMP) {
        /* -cpu max,+lwp -smp 4, MTTCG: tests/system/lwp-smp.c */
        report_prefix_push(config_names[config]);
        test_lwp_smp();
        report_prefix_pop();
        return report_summary();
    }

    report_prefix_push(config_names[config]);
    test_harness();
    if (config == CONFIG_NOLWP) {
        test_nolwp();
    } else {
        edx = lwp_cpuid().d;
        test_lwp_cpuid();
        test_lwp_reset();
        test_lwp_xsave();
        test_lwp_cfg(edx);
        test_lwp_cbaddr();
        test_lwp_avail(edx);
        test_lwp_user(edx);
    }
    test_lwp_events();
    test_lwp_irq(config != CONFIG_NOLWP);
    if (config != CONFIG_NOLWP) {
        test_lwp_tasks();
        test_xsave_lwp();
    }
    report_prefix_pop();
    return report_summary();
}
