/*
 * The architectural PMU's CPUID leaf and MSRs, as the guest sees them:
 * config=pmu under -cpu Nehalem,pmu=on, config=nopmu under -cpu Nehalem
 * (and -cpu max,pmu=on, which has no PMU profile): nothing changes there.
 * The expected values are a real Nehalem's (CPUID 0AH of a Core i5 750:
 * EAX 0x07300403, EDX 0x603; PERF_CAPABILITIES 0x1c3) and the field
 * layouts of Intel SDM Vol. 3B 18.13 and Vol. 2B (RDPMC), written out by
 * hand; the probe is the one Linux's check_hw_exists() makes.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "pmu.h"
#include "processor.h"

#define X86_CR4_PCE                 BIT(8)
#define CPUID_1_ECX_PDCM            BIT(15)

#define MSR_IA32_PMC0               0xc1
#define MSR_IA32_PERFEVTSEL0        0x186
#define MSR_IA32_MISC_ENABLE        0x1a0
#define MSR_IA32_FIXED_CTR0         0x309
#define MSR_IA32_PERF_CAPABILITIES  0x345
#define MSR_IA32_FIXED_CTR_CTRL     0x38d
#define MSR_IA32_PERF_GLOBAL_STATUS 0x38e
#define MSR_IA32_PERF_GLOBAL_CTRL   0x38f
#define MSR_IA32_PERF_GLOBAL_OVF_CTRL 0x390
#define MSR_IA32_A_PMC0             0x4c1

struct rdpmc_probe {
    u32 ecx;
    unsigned vec;
    u64 val;
};

static void rdpmc_probe(struct rdpmc_probe *p)
{
    u32 lo = 0, hi = 0;

    asm volatile(ASM_TRY("1f") "rdpmc\n\t" "1:\n\t"
                 : "+a"(lo), "=d"(hi) : "c"(p->ecx) : "memory");
    p->vec = exception_vector();
    p->val = (u64)hi << 32 | lo;
}

static void user_rdpmc(void *arg)
{
    rdpmc_probe(arg);
}

static void test_cpuid(void)
{
    struct cpuid c = cpuid(1);
    u32 fms = c.a & 0x0fff0ff0;

    report(fms == 0x000106a0, "CPUID.1:EAX family/model - expect 06_1AH "
           "(got %x)", c.a);
    report(c.c & CPUID_1_ECX_PDCM, "CPUID.1:ECX.PDCM[15] - expect 1");
    c = cpuid_indexed(0xa, 0);
    report(c.a == 0x07300403, "CPUID.0AH:EAX - expect 0x07300403: version "
           "3, 4 counters, 48 bits, 7 events (got %x)", c.a);
    report(c.b == 0, "CPUID.0AH:EBX - expect 0: all 7 events (got %x)", c.b);
    report(c.c == 0, "CPUID.0AH:ECX - expect 0 (got %x)", c.c);
    report(c.d == 0x603, "CPUID.0AH:EDX - expect 0x603: 3 fixed counters, "
           "48 bits (got %x)", c.d);
}

static void test_reset_values(void)
{
    u64 v = 0;
    unsigned i, vec;
    bool zero = true;

    for (i = 0; i < 4; i++) {
        zero &= !rdmsr_safe(MSR_IA32_PMC0 + i, &v) && v == 0;
        zero &= !rdmsr_safe(MSR_IA32_PERFEVTSEL0 + i, &v) && v == 0;
    }
    for (i = 0; i < 3; i++) {
        zero &= !rdmsr_safe(MSR_IA32_FIXED_CTR0 + i, &v) && v == 0;
    }
    report(zero, "PMC0-3, PERFEVTSEL0-3, FIXED_CTR0-2 after RESET - "
           "expect 0");
    vec = rdmsr_safe(MSR_IA32_PERF_GLOBAL_CTRL, &v);
    report(!vec && v == 0xf,
           "PERF_GLOBAL_CTRL after RESET - expect 0xf, the general "
           "counters' enables (got %lx)", (unsigned long)v);
    report(!rdmsr_safe(MSR_IA32_FIXED_CTR_CTRL, &v) && v == 0,
           "FIXED_CTR_CTRL after RESET - expect 0");
    report(!rdmsr_safe(MSR_IA32_PERF_GLOBAL_STATUS, &v) && v == 0,
           "PERF_GLOBAL_STATUS after RESET - expect 0");
    vec = rdmsr_safe(MSR_IA32_PERF_CAPABILITIES, &v);
    report(!vec && v == 0x1c3,
           "PERF_CAPABILITIES - expect 0x1c3 (got %lx)", (unsigned long)v);
    vec = rdmsr_safe(MSR_IA32_MISC_ENABLE, &v);
    report(!vec && (v & 0x1880) == 0x80,
           "MISC_ENABLE bit 7 set, 11 and 12 clear - expect PMU available, "
           "BTS available, PEBS available (got %lx)", (unsigned long)v);
}

static void test_writes(void)
{
    u64 v = 0, misc = 0;
    unsigned i;

    /* check_hw_exists(): read, xor 0xffff, write, read back */
    rdmsr_safe(MSR_IA32_PMC0, &v);
    v ^= 0xffff;
    report(!wrmsr_safe(MSR_IA32_PMC0, v) &&
           !rdmsr_safe(MSR_IA32_PMC0, &v) && v == 0xffff,
           "PMC0 write and read back (Linux's probe) - expect 0xffff");
    wrmsr_safe(MSR_IA32_PMC0 + 1, 0x80000000ull);
    rdmsr_safe(MSR_IA32_PMC0 + 1, &v);
    report(v == 0xffff80000000ull, "PMC1 := 0x80000000 - expect bit 31 "
           "sign-extended to 48 bits, 0xffff80000000 (got %lx)",
           (unsigned long)v);
    wrmsr_safe(MSR_IA32_PMC0 + 3, 0xdead00001234ull);
    rdmsr_safe(MSR_IA32_PMC0 + 3, &v);
    report(v == 0x1234, "PMC3 := 0xdead00001234 - expect EDX ignored, "
           "0x1234 (got %lx)", (unsigned long)v);
    wrmsr_safe(MSR_IA32_FIXED_CTR0 + 2, ~0ull);
    rdmsr_safe(MSR_IA32_FIXED_CTR0 + 2, &v);
    report(v == 0xffffffffffffull, "FIXED_CTR2 := ~0 - expect 48 bits "
           "(got %lx)", (unsigned long)v);
    report(!wrmsr_safe(MSR_IA32_PERFEVTSEL0 + 2, 0xffffffffull) &&
           !rdmsr_safe(MSR_IA32_PERFEVTSEL0 + 2, &v) && v == 0xffffffff,
           "PERFEVTSEL2 := 0xffffffff - expect every field of bits 31:0 "
           "kept");
    report(!wrmsr_safe(MSR_IA32_FIXED_CTR_CTRL, 0xfff) &&
           !rdmsr_safe(MSR_IA32_FIXED_CTR_CTRL, &v) && v == 0xfff,
           "FIXED_CTR_CTRL := 0xfff - expect kept");
    report(!wrmsr_safe(MSR_IA32_PERF_GLOBAL_CTRL, 0x700000005ull) &&
           !rdmsr_safe(MSR_IA32_PERF_GLOBAL_CTRL, &v) && v == 0x700000005ull,
           "PERF_GLOBAL_CTRL := 0x700000005 - expect kept");
    report(!wrmsr_safe(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 0xe00000070000000full) &&
           !rdmsr_safe(MSR_IA32_PERF_GLOBAL_OVF_CTRL, &v) && v == 0,
           "PERF_GLOBAL_OVF_CTRL := every defined bit - expect it to read 0");

    /* MISC_ENABLE's performance-monitoring bits are read-only */
    rdmsr_safe(MSR_IA32_MISC_ENABLE, &misc);
    wrmsr_safe(MSR_IA32_MISC_ENABLE, misc & ~0x1880ull);
    rdmsr_safe(MSR_IA32_MISC_ENABLE, &v);
    report(v == misc, "MISC_ENABLE with bits 7, 11, 12 cleared - expect "
           "them unchanged, read-only (got %lx)", (unsigned long)v);

    /* what the profile does not have, and reserved bits: #GP */
    report(wrmsr_safe(MSR_IA32_PERFEVTSEL0, 1ull << 32) == GP_VECTOR,
           "PERFEVTSEL0 bit 32 - expect #GP");
    report(wrmsr_safe(MSR_IA32_FIXED_CTR_CTRL, 0x1000) == GP_VECTOR,
           "FIXED_CTR_CTRL bit 12 - expect #GP");
    report(wrmsr_safe(MSR_IA32_PERF_GLOBAL_CTRL, 0x10) == GP_VECTOR &&
           wrmsr_safe(MSR_IA32_PERF_GLOBAL_CTRL, 1ull << 35) == GP_VECTOR,
           "PERF_GLOBAL_CTRL bits 4 and 35 - expect #GP");
    report(wrmsr_safe(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 0x10) == GP_VECTOR,
           "PERF_GLOBAL_OVF_CTRL bit 4 - expect #GP");
    report(wrmsr_safe(MSR_IA32_PERF_GLOBAL_STATUS, 0) == GP_VECTOR,
           "PERF_GLOBAL_STATUS written - expect #GP (read-only)");
    report(wrmsr_safe(MSR_IA32_PERF_CAPABILITIES, 0x1c3) == GP_VECTOR,
           "PERF_CAPABILITIES written - expect #GP (read-only)");
    for (i = 0; i < 4; i++) {
        static const u32 absent[] = {
            MSR_IA32_PMC0 + 4, MSR_IA32_PERFEVTSEL0 + 4,
            MSR_IA32_FIXED_CTR0 + 3, MSR_IA32_A_PMC0,
        };
        report(rdmsr_safe(absent[i], &v) == GP_VECTOR &&
               wrmsr_safe(absent[i], 0) == GP_VECTOR,
               "RDMSR and WRMSR %x (not in the profile) - expect #GP",
               absent[i]);
    }
    report(rdmsr_safe(0x391, &v) == GP_VECTOR &&
           rdmsr_safe(0x392, &v) == GP_VECTOR,
           "version 4's GLOBAL_STATUS_SET and GLOBAL_INUSE - expect #GP");

    /* leave the counters off for the RDPMC test */
    wrmsr_safe(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    wrmsr_safe(MSR_IA32_FIXED_CTR_CTRL, 0);
    wrmsr_safe(MSR_IA32_PERFEVTSEL0 + 2, 0);
}

static void test_rdpmc(void)
{
    struct rdpmc_probe p;
    unsigned long cr4 = read_cr4();
    int ret;

    wrmsr_safe(MSR_IA32_PMC0 + 2, 0x87654321ull);
    wrmsr_safe(MSR_IA32_FIXED_CTR0 + 1, 0xba9876543210ull);

    p = (struct rdpmc_probe){ .ecx = 2 };
    rdpmc_probe(&p);
    report(!p.vec && p.val == 0xffff87654321ull, "RDPMC(2) at CPL0 - "
           "expect PMC2, 0xffff87654321 (got vector %u, %lx)", p.vec,
           (unsigned long)p.val);
    p = (struct rdpmc_probe){ .ecx = 0x40000001 };
    rdpmc_probe(&p);
    report(!p.vec && p.val == 0xba9876543210ull, "RDPMC(0x40000001) - "
           "expect FIXED_CTR1, 0xba9876543210 (got vector %u, %lx)", p.vec,
           (unsigned long)p.val);
    static const u32 bad[] = { 4, 0x40000003, 0x80000000, 0x80000002,
                               0x20000000, 0x10000 };
    for (unsigned i = 0; i < ARRAY_SIZE(bad); i++) {
        p = (struct rdpmc_probe){ .ecx = bad[i] };
        rdpmc_probe(&p);
        report(p.vec == GP_VECTOR, "RDPMC(%x) - expect #GP (got vector %u)",
               bad[i], p.vec);
    }

    write_cr4(cr4 & ~X86_CR4_PCE);
    p = (struct rdpmc_probe){ .ecx = 2 };
    ret = run_in_user(user_rdpmc, &p);
    report(!ret && p.vec == GP_VECTOR, "RDPMC at CPL3 with CR4.PCE = 0 - "
           "expect #GP (got vector %u)", p.vec);
    write_cr4(cr4 | X86_CR4_PCE);
    p = (struct rdpmc_probe){ .ecx = 0x40000001 };
    ret = run_in_user(user_rdpmc, &p);
    report(!ret && !p.vec && p.val == 0xba9876543210ull, "RDPMC at CPL3 "
           "with CR4.PCE = 1 - expect FIXED_CTR1 (got vector %u, %lx)",
           p.vec, (unsigned long)p.val);
    write_cr4(cr4);
}

/*
 * Counting.  The expected counts are those of the instructions below,
 * counted by hand: docs/pmu.md says which instructions around the
 * WRMSRs count (the WRMSR that writes a control is counted as the
 * controls were before it; RDMSR and RDPMC read the counts of the
 * instructions before them).
 */

/* WRMSR GLOBAL_CTRL := 1 (PMC0), MOV and %[m] iterations of DEC/JNZ */
#define ASM_ENABLE_PMC0_LOOP            \
    "mov $0x38f, %%ecx\n\t"             \
    "mov $1, %%eax\n\t"                 \
    "xor %%edx, %%edx\n\t"              \
    "wrmsr\n\t"                         \
    "mov %[m], %%rbx\n\t"               \
    "1: dec %%rbx\n\t"                  \
    "jnz 1b\n\t"
/* MOV, XOR, XOR, WRMSR GLOBAL_CTRL := 0 */
#define ASM_DISABLE_ALL                 \
    "mov $0x38f, %%ecx\n\t"             \
    "xor %%eax, %%eax\n\t"              \
    "xor %%edx, %%edx\n\t"              \
    "wrmsr\n\t"

/*
 * GLOBAL_CTRL := @enable, @n iterations of DEC/JNZ, GLOBAL_CTRL := 0.
 * Counted after the first WRMSR: MOV, 2n, MOV, XOR, XOR and the second
 * WRMSR, 2n + 5 instructions; n conditional branches; and as many cycles
 * as instructions plus one per branch, 3n + 5.
 */
static void counted_loop(u64 enable, u64 n)
{
    asm volatile("mov $0x38f, %%ecx\n\t"
                 "mov %[lo], %%eax\n\t"
                 "mov %[hi], %%edx\n\t"
                 "wrmsr\n\t"
                 "mov %[n], %%rbx\n\t"
                 "1: dec %%rbx\n\t"
                 "jnz 1b\n\t"
                 ASM_DISABLE_ALL
                 : : [lo] "r"((u32)enable), [hi] "r"((u32)(enable >> 32)),
                   [n] "r"(n)
                 : "rax", "rbx", "rcx", "rdx", "memory");
}

/* CPL3: @n iterations of DEC/JNZ */
static void user_loop(void *arg)
{
    asm volatile("1: dec %%rbx\n\t"
                 "jnz 1b\n\t"
                 : : "b"(*(u64 *)arg) : "memory");
}

static void pmu_zero(void)
{
    unsigned i;

    for (i = 0; i < 4; i++) {
        wrmsr(MSR_IA32_PMC0 + i, 0);
    }
    for (i = 0; i < 3; i++) {
        wrmsr(MSR_IA32_FIXED_CTR0 + i, 0);
    }
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 0x70000000full);
}

/* IA32_PERFEVTSEL0-3 := @sel */
static void evtsel_write(const u64 sel[4])
{
    unsigned i;

    for (i = 0; i < 4; i++) {
        wrmsr(MSR_IA32_PERFEVTSEL0 + i, sel[i]);
    }
}

/* @v := IA32_PMC0-3 */
static void pmc_read(u64 v[4])
{
    unsigned i;

    for (i = 0; i < 4; i++) {
        v[i] = rdmsr(MSR_IA32_PMC0 + i);
    }
}

static void test_counting_os(void)
{
    const u64 n = 1000;
    u64 v[7];
    unsigned i;

    /*
     * INST_RETIRED, BR_INST_RETIRED.CONDITIONAL and .NEAR_CALL, core
     * cycles, all OS; the fixed counters OS
     */
    wrmsr(MSR_IA32_PERFEVTSEL0, 0x4200c0);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 1, 0x4201c4);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 2, 0x4202c4);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 3, 0x42003c);
    wrmsr(MSR_IA32_FIXED_CTR_CTRL, 0x111);
    pmu_zero();
    counted_loop(0x70000000full, n);
    for (i = 0; i < 4; i++) {
        v[i] = rdmsr(MSR_IA32_PMC0 + i);
    }
    for (i = 0; i < 3; i++) {
        v[4 + i] = rdmsr(MSR_IA32_FIXED_CTR0 + i);
    }
    report(v[0] == 2 * n + 5, "CPL0 loop: INST_RETIRED - expect 2n + 5 = "
           "%lu (got %lu)", (unsigned long)(2 * n + 5), (unsigned long)v[0]);
    report(v[1] == n, "CPL0 loop: BR_INST_RETIRED.CONDITIONAL - expect n = "
           "%lu (got %lu)", (unsigned long)n, (unsigned long)v[1]);
    report(v[2] == 0, "CPL0 loop: BR_INST_RETIRED.NEAR_CALL - expect 0 "
           "(got %lu)", (unsigned long)v[2]);
    report(v[3] == 3 * n + 5, "CPL0 loop: core cycles - expect 3n + 5 = "
           "%lu (got %lu)", (unsigned long)(3 * n + 5), (unsigned long)v[3]);
    report(v[4] == 2 * n + 5 && v[5] == 3 * n + 5 && v[6] == 3 * n + 5,
           "CPL0 loop: FIXED_CTR0-2 - expect %lu, %lu, %lu (got %lu, %lu, "
           "%lu)", (unsigned long)(2 * n + 5), (unsigned long)(3 * n + 5),
           (unsigned long)(3 * n + 5), (unsigned long)v[4],
           (unsigned long)v[5], (unsigned long)v[6]);
    report(rdmsr(MSR_IA32_PMC0) == v[0], "PMC0 once disabled - expect it "
           "to stay %lu", (unsigned long)v[0]);
}

/*
 * EDGE, INV and CMASK over counted_loop's cycles (choice 66): 2n + 5
 * instructions in 3n + 5 cycles, the n JNZs' second cycles retiring
 * nothing
 */
static void test_per_cycle(void)
{
    static const struct {
        u64 evtsel[4];
        const char *what;
    } rounds[] = {
        { { 0x1c200c0, 0x2c200c0, 0x1c204c4, 0x04601c4 },
          "INST_RETIRED INV CMASK 1, INV CMASK 2; BR_INST_RETIRED.ALL INV "
          "CMASK 1; .CONDITIONAL EDGE" },
        { { 0x24200c0, 0x1c2003c, 0x1c600c0, 0x1c201c4 },
          "INST_RETIRED CMASK 2; core cycles INV CMASK 1; INST_RETIRED EDGE "
          "INV CMASK 1; BR_INST_RETIRED.CONDITIONAL INV CMASK 1" },
    };
    const u64 n = 1000;
    const u64 want[2][4] = {
        { n, 3 * n + 5, 2 * n + 5, n },
        { 0, 0, n, 0 },     /* the last: not modelled, 0 */
    };
    unsigned r, i;
    u64 v[4];

    for (r = 0; r < 2; r++) {
        evtsel_write(rounds[r].evtsel);
        pmu_zero();
        counted_loop(0xf, n);
        pmc_read(v);
        report(v[0] == want[r][0] && v[1] == want[r][1] &&
               v[2] == want[r][2] && v[3] == want[r][3],
               "%s - expect %lu %lu %lu "
               "%lu (got %lu %lu %lu %lu)", rounds[r].what,
               (unsigned long)want[r][0], (unsigned long)want[r][1],
               (unsigned long)want[r][2], (unsigned long)want[r][3],
               (unsigned long)v[0], (unsigned long)v[1],
               (unsigned long)v[2], (unsigned long)v[3]);
    }
    for (i = 0; i < 4; i++) {
        wrmsr(MSR_IA32_PERFEVTSEL0 + i, 0);
    }
}

/* USR and OS counters over run_in_user(user_loop, n) */
static void user_counts(u64 n, u64 v[4])
{
    unsigned i;

    pmu_zero();
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0x300000007ull);
    run_in_user(user_loop, &n);
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    for (i = 0; i < 3; i++) {
        v[i] = rdmsr(MSR_IA32_PMC0 + i);
    }
    v[3] = rdmsr(MSR_IA32_FIXED_CTR0);
}

static void test_counting_usr(void)
{
    u64 a[4], b[4];

    /*
     * INST_RETIRED USR, conditional branches USR, INST_RETIRED OS;
     * FIXED_CTR0 USR
     */
    wrmsr(MSR_IA32_PERFEVTSEL0, 0x4100c0);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 1, 0x4101c4);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 2, 0x4200c0);
    wrmsr(MSR_IA32_FIXED_CTR_CTRL, 0x2);
    user_counts(100, a);
    user_counts(1100, b);
    /* the same code around the loop, 1000 more iterations at CPL3 */
    report(b[0] - a[0] == 2000, "CPL3 loop, 1000 more iterations: "
           "INST_RETIRED USR - expect 2000 more (got %lu)",
           (unsigned long)(b[0] - a[0]));
    report(b[1] - a[1] == 1000, "CPL3 loop, 1000 more iterations: "
           "conditional branches USR - expect 1000 more (got %lu)",
           (unsigned long)(b[1] - a[1]));
    report(b[2] == a[2] && a[2] > 0, "CPL3 loop, 1000 more iterations: "
           "INST_RETIRED OS - expect the same count, not 0 (got %lu, %lu)",
           (unsigned long)a[2], (unsigned long)b[2]);
    report(b[3] - a[3] == 2000, "CPL3 loop, 1000 more iterations: "
           "FIXED_CTR0 USR - expect 2000 more (got %lu)",
           (unsigned long)(b[3] - a[3]));
}

/*
 * PMC0 counts OS instructions from 2^48 - @k.  After the WRMSR that
 * enables it: MOV, @m iterations of DEC/JNZ, MOV, then RDMSR of
 * GLOBAL_STATUS, which sees the counts of those 2m + 2 instructions.
 */
static u64 status_after(u64 k, u64 m)
{
    u32 lo, hi;

    wrmsr(MSR_IA32_PERFEVTSEL0, 0x4200c0);
    wrmsr(MSR_IA32_PMC0, -k);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1);
    asm volatile(ASM_ENABLE_PMC0_LOOP
                 "mov $0x38e, %%ecx\n\t"
                 "rdmsr\n\t"
                 "mov %%eax, %[lo]\n\t"
                 "mov %%edx, %[hi]\n\t"
                 ASM_DISABLE_ALL
                 : [lo] "=&r"(lo), [hi] "=&r"(hi) : [m] "r"(m)
                 : "rax", "rbx", "rcx", "rdx", "memory");
    return (u64)hi << 32 | lo;
}

static void test_overflow(void)
{
    u64 st;

    wrmsr(MSR_IA32_FIXED_CTR_CTRL, 0);
    /* 2 * 50 + 2 = 102 instructions before the RDMSR */
    st = status_after(103, 50);
    report(!(st & 1), "PMC0 103 events from overflow, RDMSR after 102 "
           "instructions - expect GLOBAL_STATUS bit 0 clear (got %lx)",
           (unsigned long)st);
    report(rdmsr(MSR_IA32_PERF_GLOBAL_STATUS) & 1, "... and set once the "
           "RDMSR retired, the 103rd");
    st = status_after(102, 50);
    report(st & 1, "PMC0 102 events from overflow, RDMSR after 102 "
           "instructions - expect GLOBAL_STATUS bit 0 set (got %lx)",
           (unsigned long)st);
    /* the RDMSR and the 6 instructions to the WRMSR that disables */
    report(rdmsr(MSR_IA32_PMC0) == 7, "... and PMC0 then 7: the RDMSR and "
           "the 6 instructions to the disabling WRMSR (got %lu)",
           (unsigned long)rdmsr(MSR_IA32_PMC0));
    st = status_after(2, 1);
    report(st & 1, "PMC0 2 events from overflow, RDMSR after 4 "
           "instructions - expect GLOBAL_STATUS bit 0 set");
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1);
    report(!(rdmsr(MSR_IA32_PERF_GLOBAL_STATUS) & 1), "OVF_CTRL bit 0 - "
           "expect GLOBAL_STATUS bit 0 clear");
}

/*
 * The PMI: PMC0 counts OS instructions from 2^48 - @k with INT, the LVT
 * performance counter entry a fixed vector.  After the WRMSR that enables
 * it: MOV, @m iterations of DEC/JNZ, then NOPs at pmi_a, pmi_b and
 * pmi_c.  The interrupt is taken after the instruction that overflows
 * the counter, the k-th: with k = 2m + 2, the NOP at pmi_a, so its
 * frame's RIP is pmi_b.
 */
#define PMI_VECTOR      0x51
#define APIC_LVTPC      0x340

/* labels of the asm in pmi_run() */
extern const char pmi_a[], pmi_b[], pmi_c[];
/* volatile: written by the interrupt handler, read by the test */
static volatile unsigned long pmi_rip;
static volatile unsigned pmi_count;
static volatile u64 pmi_status, pmi_pmc0, pmi_ctrl, pmi_debugctl, pmi_tos;

static void pmi_handler(struct ex_regs *regs)
{
    pmi_rip = regs->rip;
    pmi_count++;
    pmi_pmc0 = rdmsr(MSR_IA32_PMC0);
    pmi_ctrl = rdmsr(MSR_IA32_PERF_GLOBAL_CTRL);
    pmi_status = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
    pmi_debugctl = rdmsr(0x1d9);
    pmi_tos = rdmsr(0x1c9);
    apic_write(APIC_EOI, 0);
}

static void pmi_run(u64 k, u64 m)
{
    wrmsr(MSR_IA32_PERFEVTSEL0, 0x5200c0);
    wrmsr(MSR_IA32_PMC0, -k);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1);
    apic_write(APIC_LVTPC, PMI_VECTOR);
    pmi_count = 0;
    pmi_rip = 0;
    asm volatile("sti\n\t"
                 ASM_ENABLE_PMC0_LOOP
                 ".globl pmi_a\npmi_a: nop\n\t"
                 ".globl pmi_b\npmi_b: nop\n\t"
                 ".globl pmi_c\npmi_c: cli\n\t"
                 ASM_DISABLE_ALL
                 : : [m] "r"(m) : "rax", "rbx", "rcx", "rdx", "memory");
}

static void test_pmi(void)
{
    u32 lvt;

    enable_apic();
    handle_irq(PMI_VECTOR, pmi_handler);
    pmi_run(102, 50);
    lvt = apic_read(APIC_LVTPC);
    report(pmi_count == 1 && pmi_rip == (unsigned long)pmi_b,
           "PMI 102 instructions after the enabling WRMSR - expect one, "
           "taken after the NOP at pmi_a: RIP pmi_b %lx (got %u, RIP %lx)",
           (unsigned long)pmi_b, pmi_count, pmi_rip);
    report(pmi_status & 1, "PMI handler - expect GLOBAL_STATUS bit 0 set "
           "(got %lx)", (unsigned long)pmi_status);
    report(lvt & APIC_LVT_MASKED, "LVT performance counter entry after the "
           "PMI - expect masked (got %x)", lvt);
    pmi_run(101, 50);
    report(pmi_count == 1 && pmi_rip == (unsigned long)pmi_a,
           "PMI 101 instructions after it - expect it after the last JNZ: "
           "RIP pmi_a %lx (got %u, RIP %lx)", (unsigned long)pmi_a,
           pmi_count, pmi_rip);
    pmi_run(103, 50);
    report(pmi_count == 1 && pmi_rip == (unsigned long)pmi_c,
           "PMI 103 instructions after it - expect RIP pmi_c %lx (got %u, "
           "RIP %lx)", (unsigned long)pmi_c, pmi_count, pmi_rip);
    /* masked LVT entry: the counter overflows, no interrupt */
    apic_write(APIC_LVTPC, PMI_VECTOR | APIC_LVT_MASKED);
    wrmsr(MSR_IA32_PERFEVTSEL0, 0x5200c0);
    wrmsr(MSR_IA32_PMC0, -5ull);
    pmi_count = 0;
    counted_loop(1, 10);
    report(pmi_count == 0 && (rdmsr(MSR_IA32_PERF_GLOBAL_STATUS) & 1),
           "masked LVT entry - expect no PMI, GLOBAL_STATUS bit 0 set (got "
           "%u PMIs)", pmi_count);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1);
    /* INT clear: no PMI */
    apic_write(APIC_LVTPC, PMI_VECTOR);
    wrmsr(MSR_IA32_PERFEVTSEL0, 0x4200c0);
    wrmsr(MSR_IA32_PMC0, -5ull);
    asm volatile("sti");
    counted_loop(1, 10);
    asm volatile("cli");
    report(pmi_count == 0, "overflow without INT - expect no PMI (got %u)",
           pmi_count);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1);
}

/*
 * BR_MISP_RETIRED (C5H) against the branch-predictor model of
 * docs/branch-predictor.md, at CPL 0.  The model takes branches only
 * while a counter counts mispredictions, so each sequence below starts
 * from counters of 1 (RESET, weakly not taken) at its own branches'
 * slots (they are in one 4 KiB page, so no two share one), an empty BTB
 * entry, and a return stack that 20 calls overwrite entirely.
 * GLOBAL_CTRL := 0xf enables PMC0-3: C5H 00H (all), C5H 01H
 * (conditional), C5H 02H (near call) and C4H 00H (all branches retired).
 */
#define ASM_ENABLE_PMC0_3               \
    "mov $0x38f, %%ecx\n\t"             \
    "mov $0xf, %%eax\n\t"               \
    "xor %%edx, %%edx\n\t"              \
    "wrmsr\n\t"

static void misp_setup(void)
{
    static const u64 sel[4] = { 0x4200c5, 0x4201c5, 0x4202c5, 0x4200c4 };

    evtsel_write(sel);
    pmu_zero();
}

static void misp_report(const char *what, u64 all, u64 cond, u64 call,
                        u64 br)
{
    u64 v[4];

    pmc_read(v);
    report(v[0] == all && v[1] == cond && v[2] == call && v[3] == br,
           "%s - expect mispredicted %lu, conditional %lu, near call %lu; "
           "branches %lu (got %lu, %lu, %lu; %lu)", what,
           (unsigned long)all, (unsigned long)cond, (unsigned long)call,
           (unsigned long)br, (unsigned long)v[0], (unsigned long)v[1],
           (unsigned long)v[2], (unsigned long)v[3]);
}

/* @n iterations of DEC/JNZ, the same JNZ every call (not inlined) */
static void __attribute__((noinline)) misp_loop(u64 n)
{
    asm volatile(ASM_ENABLE_PMC0_3
                 "mov %[n], %%rbx\n\t"
                 "1: dec %%rbx\n\t"
                 "jnz 1b\n\t"
                 ASM_DISABLE_ALL
                 : : [n] "r"(n) : "rax", "rbx", "rcx", "rdx", "memory");
}

/*
 * @depth nested calls, each by its own CALL (to its own return
 * address), then their @depth returns: 2 * @depth + 1 branches
 */
#define MISP_CALL_CHAIN(depth)                          \
    asm volatile(ASM_ENABLE_PMC0_3                      \
                 "call 1f\n\t"                          \
                 "jmp 2f\n"                             \
                 ".rept " #depth " - 1\n"               \
                 "1: call 1f\n\t"                       \
                 "ret\n"                                \
                 ".endr\n"                              \
                 "1: ret\n"                             \
                 "2:\n\t"                               \
                 ASM_DISABLE_ALL                        \
                 : : : "rax", "rbx", "rcx", "rdx", "memory")

extern char misp_pmi_top[];

static void test_mispredicts(void)
{
    const u64 n = 1000;

    misp_setup();
    misp_loop(n);
    /* JNZ: T at counter 1 (mispredicted), T..., N at counter 3 (again) */
    misp_report("first run of a loop", 2, 2, 0, n);
    misp_setup();
    misp_loop(n);
    /* the counter is 2 after the first run: only the exit */
    misp_report("second run of the same loop", 1, 1, 0, n);

    misp_setup();
    /* JZ alternates T, N, T... from counter 1: every one mispredicted */
    asm volatile(ASM_ENABLE_PMC0_3
                 "mov %[n], %%rbx\n\t"
                 "1: test $1, %%bl\n\t"
                 "jz 2f\n\t"
                 "nop\n\t"
                 "2: dec %%rbx\n\t"
                 "jnz 1b\n\t"
                 ASM_DISABLE_ALL
                 : : [n] "r"(n) : "rax", "rbx", "rcx", "rdx", "memory");
    misp_report("a branch that alternates, in a loop", n + 2, n + 2, 0,
                2 * n);

    misp_setup();
    /* one indirect JMP, the same target each time: the first misses */
    asm volatile("lea 3f(%%rip), %%rsi\n\t"
                 ASM_ENABLE_PMC0_3
                 "mov %[n], %%rbx\n\t"
                 "1: jmp *%%rsi\n\t"
                 "3: dec %%rbx\n\t"
                 "jnz 1b\n\t"
                 ASM_DISABLE_ALL
                 : : [n] "r"(n) : "rax", "rbx", "rcx", "rdx", "rsi",
                   "memory");
    misp_report("an indirect JMP to one target", 3, 2, 0, 2 * n);

    misp_setup();
    /*
     * one indirect CALL to two targets in turn: every one mispredicted;
     * each RET returns where the return stack says
     */
    asm volatile("lea 4f(%%rip), %%rsi\n\t"
                 "lea 5f(%%rip), %%rdi\n\t"
                 ASM_ENABLE_PMC0_3
                 "mov %[n], %%rbx\n\t"
                 "1: xchg %%rsi, %%rdi\n\t"
                 "call *%%rsi\n\t"
                 "dec %%rbx\n\t"
                 "jnz 1b\n\t"
                 "jmp 6f\n\t"
                 "4: ret\n\t"
                 "5: ret\n\t"
                 "6:\n\t"
                 ASM_DISABLE_ALL
                 : : [n] "r"(n) : "rax", "rbx", "rcx", "rdx", "rsi", "rdi",
                   "memory");
    misp_report("an indirect CALL to two targets in turn", n + 2, 2, n,
                3 * n + 1);

    misp_setup();
    /*
     * one indirect CALL to one target: the first misses; the return
     * stack has each return address, as after a direct CALL
     */
    asm volatile("lea 4f(%%rip), %%rsi\n\t"
                 ASM_ENABLE_PMC0_3
                 "mov %[n], %%rbx\n\t"
                 "1: call *%%rsi\n\t"
                 "dec %%rbx\n\t"
                 "jnz 1b\n\t"
                 "jmp 6f\n\t"
                 "4: ret\n\t"
                 "6:\n\t"
                 ASM_DISABLE_ALL
                 : : [n] "r"(n) : "rax", "rbx", "rcx", "rdx", "rsi",
                   "memory");
    misp_report("an indirect CALL to one target", 3, 2, 1, 3 * n + 1);

    misp_setup();
    /*
     * 20 nested calls (one from outside, 19 recursive) and their 20
     * returns: the 16-entry return stack holds only the recursive calls'
     * return address when the last RET, to the outer call's, pops it; JZ
     * is not taken 19 times, then taken at counter 0
     */
    asm volatile(ASM_ENABLE_PMC0_3
                 "mov $20, %%esi\n\t"
                 "call 7f\n\t"
                 "jmp 9f\n\t"
                 "7: dec %%esi\n\t"
                 "jz 8f\n\t"
                 "call 7b\n\t"
                 "8: ret\n\t"
                 "9:\n\t"
                 ASM_DISABLE_ALL
                 : : : "rax", "rbx", "rcx", "rdx", "rsi", "memory");
    misp_report("20 nested calls and their returns", 2, 1, 0, 61);

    /* the return stack with a return address per entry */
    misp_setup();
    MISP_CALL_CHAIN(16);
    misp_report("16 nested calls from 16 CALLs and their returns", 0, 0, 0,
                33);
    misp_setup();
    MISP_CALL_CHAIN(18);
    /* the two outermost returns find the two innermost calls' entries */
    misp_report("18 nested calls from 18 CALLs and their returns", 2, 0, 0,
                37);

    /* a mispredicted branch that overflows the counter: the PMI */
    wrmsr(MSR_IA32_PERFEVTSEL0, 0x5201c5);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 1, 0);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 2, 0);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 3, 0);
    pmu_zero();
    wrmsr(MSR_IA32_PMC0, 0xffffffffffffull);
    apic_write(APIC_LVTPC, PMI_VECTOR);
    handle_irq(PMI_VECTOR, pmi_handler);
    pmi_count = 0;
    pmi_rip = 0;
    asm volatile("sti\n\t"
                 ASM_ENABLE_PMC0_3
                 "mov $10, %%rbx\n\t"
                 ".globl misp_pmi_top\nmisp_pmi_top: dec %%rbx\n\t"
                 "jnz misp_pmi_top\n\t"
                 "cli\n\t"
                 ASM_DISABLE_ALL
                 : : : "rax", "rbx", "rcx", "rdx", "memory");
    report(pmi_count == 1 && pmi_rip == (unsigned long)misp_pmi_top &&
           (pmi_status & 1),
           "PMC0 at 2^48 - 1 counting mispredicted conditional branches - "
           "expect one PMI, taken after the first JNZ, at its target %lx, "
           "GLOBAL_STATUS bit 0 (got %u, RIP %lx, status %lx)",
           (unsigned long)misp_pmi_top, pmi_count, pmi_rip,
           (unsigned long)pmi_status);
    wrmsr(MSR_IA32_PERFEVTSEL0, 0);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1);
}

/*
 * Sampling as perf does it: FIXED_CTR0 counts CPL3 instructions with a
 * PMI as an NMI every SAMPLE_PERIOD of them; the NMI handler reloads the
 * counter, acknowledges the overflow and unmasks the LVT entry.  Over
 * user_loop's 2n instructions (and the fixed code around them), the two
 * runs differ by exactly 2 * 500000 / SAMPLE_PERIOD NMIs, give or take
 * the one the remainders can shift.
 */
#define SAMPLE_PERIOD 10007
static volatile unsigned nmi_count;

static void sample_nmi(struct ex_regs *regs)
{
    (void)regs;
    nmi_count++;
    wrmsr(MSR_IA32_FIXED_CTR0, -(u64)SAMPLE_PERIOD);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1ull << 32);
    apic_write(APIC_LVTPC, 4 << 8);
}

static unsigned sample_run(u64 n, u64 *left)
{
    nmi_count = 0;
    wrmsr(MSR_IA32_FIXED_CTR0, -(u64)SAMPLE_PERIOD);
    wrmsr(MSR_IA32_FIXED_CTR_CTRL, 0xa);        /* USR, PMI */
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 1ull << 32);
    run_in_user(user_loop, &n);
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    *left = rdmsr(MSR_IA32_FIXED_CTR0);
    return nmi_count;
}

static void test_sampling(void)
{
    u64 left1, left2, total1, total2;
    unsigned s1, s2;

    handle_irq(2, sample_nmi);
    apic_write(APIC_LVTPC, 4 << 8);
    s1 = sample_run(1000000, &left1);
    s2 = sample_run(1500000, &left2);
    /* the events counted: whole periods, plus what the last one holds */
    total1 = (u64)s1 * SAMPLE_PERIOD +
             ((left1 + SAMPLE_PERIOD) & 0xffffffffffffull);
    total2 = (u64)s2 * SAMPLE_PERIOD +
             ((left2 + SAMPLE_PERIOD) & 0xffffffffffffull);
    report(total2 - total1 == 1000000, "sampling CPL3 instructions every "
           "%u with NMIs: 500000 more iterations, 1000000 more instructions "
           "in whole periods and the remainder (got %u and %u NMIs, %lu more)",
           SAMPLE_PERIOD, s1, s2, (unsigned long)(total2 - total1));
    report(s1 == total1 / SAMPLE_PERIOD && s2 == total2 / SAMPLE_PERIOD,
           "... one NMI per whole period (%lu and %lu instructions)",
           (unsigned long)total1, (unsigned long)total2);
    apic_write(APIC_LVTPC, APIC_LVT_MASKED);
}

/*
 * IA32_DEBUGCTL.FREEZE_PERFMON_ON_PMI (bit 12) clears the enable bits of
 * IA32_PERF_GLOBAL_CTRL on the PMI request (SDM 18.5.3.1): PMC0, which
 * overflowed to 0 at the k-th instruction, still reads 0 in the handler,
 * and GLOBAL_CTRL reads 0.  Without it, PMC0 counts the handler's
 * instructions before its RDMSR.  The bits Table 35-2 reserves raise #GP.
 */
#define MSR_IA32_DEBUGCTL       0x1d9
#define MSR_LBR_SELECT  0x1c8
#define MSR_LBR_TOS     0x1c9
#define MSR_LER_FROM    0x1dd
#define MSR_LER_TO      0x1de
#define MSR_LBR_FROM0   0x680
#define MSR_LBR_TO0     0x6c0
#define MSR_IA32_DS_AREA 0x600
#define MSR_IA32_PEBS_ENABLE 0x3f1
#define MSR_PEBS_LD_LAT 0x3f6
#define LBR_MISPRED     (1ull << 63)

static void test_freeze(void)
{
    u64 v = 0;

    bool ok = !wrmsr_safe(MSR_IA32_DEBUGCTL, 1ull << 12) &&
              !rdmsr_safe(MSR_IA32_DEBUGCTL, &v);

    report(ok && v == 1ull << 12,
           "DEBUGCTL := FREEZE_PERFMON_ON_PMI - expect kept (got %lx)",
           (unsigned long)v);
    report(wrmsr_safe(MSR_IA32_DEBUGCTL, 1ull << 14) &&
           wrmsr_safe(MSR_IA32_DEBUGCTL, 1ull << 2) &&
           wrmsr_safe(MSR_IA32_DEBUGCTL, 1ull << 15),
           "DEBUGCTL bits 14 (no PERF_CAPABILITIES[12]), 2 and 15 - "
           "expect #GP");
    handle_irq(PMI_VECTOR, pmi_handler);
    pmi_run(102, 50);
    report(pmi_count == 1 && pmi_rip == (unsigned long)pmi_b &&
           pmi_pmc0 == 0 && pmi_ctrl == 0,
           "PMI with FREEZE_PERFMON_ON_PMI - expect RIP pmi_b, PMC0 0 and "
           "GLOBAL_CTRL 0 in the handler (got %u, RIP %lx, PMC0 %lx, "
           "GLOBAL_CTRL %lx)", pmi_count, pmi_rip, (unsigned long)pmi_pmc0,
           (unsigned long)pmi_ctrl);
    wrmsr(MSR_IA32_DEBUGCTL, 0);
    pmi_run(102, 50);
    report(pmi_count == 1 && pmi_pmc0 > 0 && pmi_ctrl == 1,
           "PMI without it - expect PMC0 counting on in the handler and "
           "GLOBAL_CTRL 1 (got %u, PMC0 %lx, GLOBAL_CTRL %lx)", pmi_count,
           (unsigned long)pmi_pmc0, (unsigned long)pmi_ctrl);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1);
}

/*
 * A PMI due on an instruction that changes the CPL: FIXED_CTR0 counts
 * CPL3 instructions from 2^48 - 5 with a PMI as an NMI, and
 * run_in_user(pmu_user_ret) runs MOV, MOV, CALL (user_entry, cstart64.S),
 * RET (pmu_user_ret) and INT $USER_RET_VECTOR at CPL3: the fifth, the
 * INT, overflows the counter, and the NMI is taken right after it, before
 * the first instruction of the INT's handler, at CPL 0 where nothing
 * counts.
 */
void pmu_user_ret(void *arg);
asm(".pushsection .text\n\t"
    ".globl pmu_user_ret\n"
    "pmu_user_ret: ret\n\t"
    ".popsection");

static volatile unsigned long cpl_nmi_rip, cpl_nmi_cs;
static volatile unsigned cpl_nmi_count;

static void cpl_nmi(struct ex_regs *regs)
{
    cpl_nmi_rip = regs->rip;
    cpl_nmi_cs = regs->cs;
    cpl_nmi_count++;
    apic_write(APIC_LVTPC, 4 << 8);
}

static void test_pmi_cpl_change(void)
{
    handle_irq(2, cpl_nmi);
    apic_write(APIC_LVTPC, 4 << 8);
    wrmsr(MSR_IA32_FIXED_CTR0, -5ull);
    wrmsr(MSR_IA32_FIXED_CTR_CTRL, 0xa);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1ull << 32);
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 1ull << 32);
    run_in_user(pmu_user_ret, NULL);
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    report(cpl_nmi_count == 1 && cpl_nmi_rip == isr_table[USER_RET_VECTOR] &&
           (cpl_nmi_cs & 3) == 0, "PMI due on the INT that leaves CPL3 - "
           "expect it taken before the INT handler's first instruction, "
           "%lx at CPL0 (got %u, RIP %lx CS %lx)",
           isr_table[USER_RET_VECTOR], cpl_nmi_count, cpl_nmi_rip,
           cpl_nmi_cs);
    apic_write(APIC_LVTPC, APIC_LVT_MASKED);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1ull << 32);
}

static void test_no_pmu(void)
{
    struct cpuid c = cpuid_indexed(0xa, 0);
    struct rdpmc_probe p = { .ecx = 0 };
    u64 v = 1;

    report(!c.a && !c.b && !c.c && !c.d, "CPUID.0AH - expect 0 (got %x %x "
           "%x %x)", c.a, c.b, c.c, c.d);
    report(!(cpuid(1).c & CPUID_1_ECX_PDCM), "CPUID.1:ECX.PDCM - expect 0");
    /* upstream TCG: PMU MSRs ignore writes and read 0, RDPMC is #UD */
    report(!wrmsr_safe(MSR_IA32_PMC0, 0x1234) &&
           !rdmsr_safe(MSR_IA32_PMC0, &v) && v == 0,
           "PMC0 := 0x1234 - expect the write ignored, as upstream");
    rdpmc_probe(&p);
    report(p.vec == UD_VECTOR, "RDPMC(0) at CPL0 - expect #UD, as upstream "
           "(got vector %u)", p.vec);
}

/*
 * config=pmu-monitor, the guest of tests/migration/run.sh's "info pmu"
 * and PMU migration checks: set every register the profile has to a
 * value of its own (the counters disabled, so that none of them moves),
 * print what RDMSR reads back as
 *
 *   PMUMONITOR pmc0=0x... ... evtsel3=0x... fixed0=0x... ... ctrl=0x...
 *              ... pebs=0x... ldlat=N lbrsel=0x... tos=N from7=0x...
 *              to7=0x... from0=... to0=...
 *
 * and halt with interrupts off.  The LBR entries written are a user
 * branch with the mispredict flag (7) and a kernel one without (0).
 */
int pmu_monitor_main(void)
{
    static const u64 pmc[4] = {
        0x123456789abcull, 0x000000000001ull, 0xffffffff0000ull, 0x7fff0000ull,
    };
    /* INST_RETIRED, rr's conditional branches, LLC misses, loads; no EN */
    static const u64 evtsel[4] = { 0x1300c0, 0x1101c4, 0x03412e, 0x02010b };
    static const u64 fixed[3] = {
        0xfedcba987654ull, 0x000000010000ull, 0x800000000000ull,
    };
    u64 fixed_ctrl = 0xb2a, ctrl = 0;
    unsigned i;
    int bad = 0;

    for (i = 0; i < 4; i++) {
        bad |= wrmsr_safe(MSR_IA32_PMC0 + i, pmc[i]);
        bad |= wrmsr_safe(MSR_IA32_PERFEVTSEL0 + i, evtsel[i]);
    }
    for (i = 0; i < 3; i++) {
        bad |= wrmsr_safe(MSR_IA32_FIXED_CTR0 + i, fixed[i]);
    }
    bad |= wrmsr_safe(MSR_IA32_FIXED_CTR_CTRL, fixed_ctrl);
    bad |= wrmsr_safe(MSR_IA32_PERF_GLOBAL_CTRL, ctrl);
    bad |= wrmsr_safe(MSR_IA32_DEBUGCTL, 1ull << 12);
    bad |= wrmsr_safe(MSR_LBR_SELECT, 0x1a5);
    bad |= wrmsr_safe(MSR_LBR_TOS, 7);
    bad |= wrmsr_safe(MSR_LBR_FROM0 + 7, LBR_MISPRED | 0x401234);
    bad |= wrmsr_safe(MSR_LBR_TO0 + 7, 0x401240);
    bad |= wrmsr_safe(MSR_LBR_FROM0, 0x7fffffff81000010ull);
    bad |= wrmsr_safe(MSR_LBR_TO0, 0xffffffff81000020ull);
    bad |= wrmsr_safe(MSR_IA32_DS_AREA, 0xffff888001234000ull);
    bad |= wrmsr_safe(MSR_IA32_PEBS_ENABLE, 0x500000005ull);
    bad |= wrmsr_safe(MSR_PEBS_LD_LAT, 42);
    report(!bad, "pmu-monitor: every WRMSR - expect no #GP");
    printf("PMUMONITOR");
    for (i = 0; i < 4; i++) {
        printf(" pmc%u=0x%lx", i, (unsigned long)rdmsr(MSR_IA32_PMC0 + i));
    }
    for (i = 0; i < 4; i++) {
        printf(" evtsel%u=0x%lx", i,
               (unsigned long)rdmsr(MSR_IA32_PERFEVTSEL0 + i));
    }
    for (i = 0; i < 3; i++) {
        printf(" fixed%u=0x%lx", i,
               (unsigned long)rdmsr(MSR_IA32_FIXED_CTR0 + i));
    }
    printf(" fixedctrl=0x%lx ctrl=0x%lx debugctl=0x%lx dsarea=0x%lx",
           (unsigned long)rdmsr(MSR_IA32_FIXED_CTR_CTRL),
           (unsigned long)rdmsr(MSR_IA32_PERF_GLOBAL_CTRL),
           (unsigned long)rdmsr(MSR_IA32_DEBUGCTL),
           (unsigned long)rdmsr(MSR_IA32_DS_AREA));
    printf(" pebs=0x%lx ldlat=%lu",
           (unsigned long)rdmsr(MSR_IA32_PEBS_ENABLE),
           (unsigned long)rdmsr(MSR_PEBS_LD_LAT));
    printf(" lbrsel=0x%lx tos=%lu from7=0x%lx to7=0x%lx from0=0x%lx "
           "to0=0x%lx\n", (unsigned long)rdmsr(MSR_LBR_SELECT),
           (unsigned long)rdmsr(MSR_LBR_TOS),
           (unsigned long)rdmsr(MSR_LBR_FROM0 + 7),
           (unsigned long)rdmsr(MSR_LBR_TO0 + 7),
           (unsigned long)rdmsr(MSR_LBR_FROM0),
           (unsigned long)rdmsr(MSR_LBR_TO0));
    for (;;) {
        asm volatile("cli; hlt");
    }
}

/*
 * config=pmu-migrate: the PMU workload of tests/migration/run.sh part i.
 * At CPL 0 with interrupts on, PMC0-3 count instructions, branches,
 * mispredicted branches (the predictor model) and loads that hit L1
 * (the cache model), and the fixed counters theirs, OS and USR; PMC0
 * raises a PMI every MIG_PERIOD instructions, whose handler folds the
 * RIP it interrupted into a
 * 64-bit FNV-1a hash and reloads the counter.  PMC1 has PEBS (choice
 * 74): a record of every MIG_PEBS_PERIODth branch (the counter's reset
 * value in the DS save area is -(MIG_PEBS_PERIOD - 1)), with the
 * threshold at one record, so that the same handler folds each record
 * whole (RFLAGS, RIP, the 16 registers, the status) and empties the
 * buffer.  The work: iters=N
 * iterations (MIG_ITERS by default) of a linear congruential generator
 * whose bits choose a conditional branch, one of four functions called
 * through a table, and the depth of a recursion, with a progress line at
 * every sixteenth.  Then it folds every counter into the hash and
 * prints
 *
 *   LWPDIGEST records=<PMIs> missed=0 hash=0x...
 *
 * which every uninterrupted run prints, and which a run saved and
 * restored at any instruction must print too: the counters, the window
 * of generated code, the pending PMI, the predictor and the cache model
 * migrate, and PEBS: which counter is armed, and an assist due.
 */
#define MIG_PERIOD      100003ull
#define MIG_PEBS_PERIOD 10007ull
#define MIG_PEBS_QWORDS 22
#define MIG_ITERS       1000000ull
#define FNV_OFFSET      0xcbf29ce484222325ull
#define FNV_PRIME       0x100000001b3ull

static u64 mig_hash;
static volatile u64 mig_pmis;

static void mig_fold(u64 v)
{
    unsigned i;

    for (i = 0; i < 8; i++) {
        mig_hash = (mig_hash ^ ((v >> (8 * i)) & 0xff)) * FNV_PRIME;
    }
}

/* the DS save area and PMC1's PEBS buffer (room for two records) */
static u64 mig_ds[16] __attribute__((aligned(64)));
static u64 mig_pebs[2 * MIG_PEBS_QWORDS] __attribute__((aligned(64)));
static u64 mig_records;

static void mig_pmi(struct ex_regs *regs)
{
    u64 st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
    unsigned k;

    mig_fold(regs->rip);
    mig_pmis++;
    if (st & (1ull << 62)) {
        /* the record(s) up to the index, then the buffer emptied */
        for (k = 0; k < (mig_ds[5] - mig_ds[4]) / 8; k++) {
            mig_fold(mig_pebs[k]);
        }
        mig_records += (mig_ds[5] - mig_ds[4]) / (8 * MIG_PEBS_QWORDS);
        mig_ds[5] = mig_ds[4];
    }
    if (st & 1) {
        wrmsr(MSR_IA32_PMC0, -MIG_PERIOD & ((1ull << 48) - 1));
    }
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, st & ((1ull << 62) | 1));
    apic_write(APIC_LVTPC, PMI_VECTOR);
    apic_write(APIC_EOI, 0);
}

static u64 __attribute__((noinline)) mig_f0(u64 x)
{
    return x ^ (x >> 7);
}

static u64 __attribute__((noinline)) mig_f1(u64 x)
{
    return x + (x << 3);
}

static u64 __attribute__((noinline)) mig_f2(u64 x)
{
    return x & 1 ? x * 5 : x / 3;
}

static u64 __attribute__((noinline)) mig_f3(u64 x)
{
    return ~x;
}

static u64 (*mig_fns[4])(u64) = { mig_f0, mig_f1, mig_f2, mig_f3 };

static u64 __attribute__((noinline)) mig_rec(u64 d)
{
    u64 r = d ? mig_rec(d - 1) : 0;

    /* not a loop: the call and the RET stay */
    asm volatile("" : "+r"(r));
    return r + d;
}

int pmu_migrate_main(void)
{
    char val[24];
    static const u64 sel[4] = { 0x5300c0, 0x4300c4, 0x4300c5, 0x4301cb };
    u64 iters = MIG_ITERS, x = 1, acc = 0, i;
    u64 v[7];
    unsigned k;

    if (cmdline_get("iters", val, sizeof(val)) && val[0]) {
        iters = 0;
        for (k = 0; val[k] >= '0' && val[k] <= '9'; k++) {
            iters = iters * 10 + val[k] - '0';
        }
        iters = iters ? iters : MIG_ITERS;
    }
    report_prefix_push("pmu-migrate");
    mig_hash = FNV_OFFSET;
    enable_apic();
    handle_irq(PMI_VECTOR, mig_pmi);
    apic_write(APIC_LVTPC, PMI_VECTOR);
    evtsel_write(sel);
    wrmsr(MSR_IA32_FIXED_CTR_CTRL, 0x333);
    pmu_zero();
    wrmsr(MSR_IA32_PMC0, -MIG_PERIOD & ((1ull << 48) - 1));
    /* PEBS on PMC1 (branches): base, index, maximum, threshold, resets */
    mig_ds[4] = mig_ds[5] = (unsigned long)mig_pebs;
    mig_ds[6] = mig_ds[4] + sizeof(mig_pebs);
    mig_ds[7] = mig_ds[4] + 8 * MIG_PEBS_QWORDS;
    mig_ds[9] = -(MIG_PEBS_PERIOD - 1) & ((1ull << 48) - 1);
    wrmsr(MSR_IA32_DS_AREA, (unsigned long)mig_ds);
    wrmsr(MSR_IA32_PMC0 + 1, mig_ds[9]);
    wrmsr(MSR_IA32_PEBS_ENABLE, 2);
    printf("LWPMIGRATE: start iters=%lu\n", (unsigned long)iters);
    printf("LWPMIGRATE: running\n");
    asm volatile("sti");
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0x70000000full);
    for (i = 1; i <= iters; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        if (x >> 63) {
            acc += x >> 40;
        } else {
            acc ^= x;
        }
        acc += mig_fns[(x >> 50) & 3](acc);
        acc += mig_rec((x >> 33) & 15);
        if (i % ((iters + 15) / 16) == 0) {
            printf("LWPMIGRATE: progress %lu/16\n",
                   (unsigned long)(i / ((iters + 15) / 16)));
        }
    }
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    asm volatile("cli");
    wrmsr(MSR_IA32_PEBS_ENABLE, 0);
    wrmsr(MSR_IA32_DS_AREA, 0);
    pmc_read(v);
    for (k = 0; k < 3; k++) {
        v[4 + k] = rdmsr(MSR_IA32_FIXED_CTR0 + k);
    }
    for (k = 0; k < 7; k++) {
        mig_fold(v[k]);
    }
    mig_fold(acc);
    handle_irq(PMI_VECTOR, NULL);
    printf("info: PMC0-3 %lx %lu %lu %lu, fixed %lu %lu %lu, %lu PMIs, "
           "%lu PEBS records\n",
           (unsigned long)v[0], (unsigned long)v[1], (unsigned long)v[2],
           (unsigned long)v[3], (unsigned long)v[4], (unsigned long)v[5],
           (unsigned long)v[6], (unsigned long)mig_pmis,
           (unsigned long)mig_records);
    report(mig_pmis > 0 && v[2] > 0 && v[3] > 0 && mig_records > 0,
           "PMIs, mispredicted branches, L1D_HIT and PEBS records counted "
           "(%lu, %lu, %lu, %lu)", (unsigned long)mig_pmis,
           (unsigned long)v[2], (unsigned long)v[3],
           (unsigned long)mig_records);
    printf("LWPDIGEST records=%lu missed=0 hash=0x%016lx\n",
           (unsigned long)mig_pmis, (unsigned long)mig_hash);
    report_prefix_pop();
    return report_summary();
}

/*
 * MEM_INST_RETIRED.LOADS and .STORES (0BH 01H, 02H; choice 67): every
 * instruction that reads memory counts once as a load, every one that
 * writes it once as a store, however many accesses it makes.  ls_seq
 * runs @n iterations, with PMC0 counting loads, PMC1 stores and PMC2
 * instructions (GLOBAL_CTRL := 7, OS); each iteration's instructions are
 * marked by hand from the SDM's description of each:
 *   MOV r, m          load                 MOV m, r          store
 *   ADD m, r          load, store          PUSH              store
 *   POP               load                 LEA               neither
 *   CALL              store                JMP               neither
 *   RET               load                 XCHG m, r         load, store
 *   LOCK XADD m, r    load, store          CMP r, m          load
 *   MOVSQ             load, store          LEA, LEA, DEC, JNZ neither
 * 8 loads, 7 stores and 17 instructions an iteration; before and after
 * the loop, none (MOV, and the disabling MOV, XOR, XOR, WRMSR: 5
 * instructions).  The ls_* labels mark the instruction after each load
 * and store, where a PMI taken exactly after it lands.  The last check
 * counts calls: the TB after the CALL has none, and must still take the
 * PMI at its start.
 */
static u64 ls_buf[8] __attribute__((aligned(64)));

static void ls_seq(u64 enable, u64 n)
{
    u64 src = (u64)&ls_buf[0], dst = (u64)&ls_buf[2];

    asm volatile("mov $0x38f, %%ecx\n\t"
                 "mov %[lo], %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n\t"
                 "mov %[n], %%rbx\n\t"
                 "1: mov (%%rsi), %%rax\n\t"
                 ".globl ls_l1\nls_l1: mov %%rax, 8(%%rdi)\n\t"
                 ".globl ls_s1\nls_s1: add %%rax, 16(%%rdi)\n\t"
                 ".globl ls_l2\nls_l2: push %%rax\n\t"
                 ".globl ls_s3\nls_s3: pop %%rax\n\t"
                 ".globl ls_l3\nls_l3: lea 8(%%rsi), %%rax\n\t"
                 "call ls_ret\n\t"
                 ".globl ls_l4\nls_l4: jmp 3f\n\t"
                 ".globl ls_ret\nls_ret: ret\n\t"
                 "3: xchg %%rax, 24(%%rdi)\n\t"
                 ".globl ls_l5\nls_l5: lock xaddq %%rax, 32(%%rdi)\n\t"
                 ".globl ls_l6\nls_l6: cmp (%%rsi), %%rax\n\t"
                 ".globl ls_l7\nls_l7: movsq\n\t"
                 ".globl ls_l8\nls_l8: lea -8(%%rsi), %%rsi\n\t"
                 "lea -8(%%rdi), %%rdi\n\t"
                 "dec %%rbx\n\t"
                 "jnz 1b\n\t"
                 ASM_DISABLE_ALL
                 : "+S"(src), "+D"(dst)
                 : [lo] "r"((u32)enable), [n] "r"(n)
                 : "rax", "rbx", "rcx", "rdx", "memory");
}

/*
 * ls_seq with only PMC@c counting, as IA32_PERFEVTSEL@c := @sel says,
 * @k events from overflow, the LVT entry unmasked: its PMI's RIP in
 * pmi_rip
 */
static void ls_pmi(unsigned c, u64 sel, u64 k)
{
    static const u64 none[4];

    evtsel_write(none);
    wrmsr(MSR_IA32_PERFEVTSEL0 + c, sel);
    wrmsr(MSR_IA32_PMC0 + c, -k);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 0xf);
    apic_write(APIC_LVTPC, PMI_VECTOR);
    pmi_count = 0;
    pmi_rip = 0;
    asm volatile("sti");
    ls_seq(1u << c, 1000);
    asm volatile("cli");
    wrmsr(MSR_IA32_PERFEVTSEL0 + c, 0);
}

static void test_loads_stores(void)
{
    extern char ls_l3[], ls_l4[], ls_l8[], ls_s3[], ls_ret[];
    static const u64 sel[4] = { 0x42010b, 0x42020b, 0x4200c0, 0 };
    const struct {
        unsigned c;
        u64 sel, k;
        const char *rip, *what;
    } pmis[] = {
        { 0, 0x52010b, 8 * 5 + 3, ls_l3, "43rd load (POP of iteration 6)" },
        { 0, 0x52010b, 8 * 700 + 4, ls_l4,
          "5604th load (the RET of iteration 701)" },
        { 0, 0x52010b, 8 * 2 + 8, ls_l8, "24th load (MOVSQ of iteration 3)" },
        { 1, 0x52020b, 7 * 4 + 3, ls_s3, "31st store (PUSH of iteration 5)" },
        { 1, 0x5202c4, 5, ls_ret,
          "5th BR_INST_RETIRED.NEAR_CALL (before the RET after the CALL)" },
    };
    const u64 n = 1000;
    unsigned i;
    u64 v[4];

    evtsel_write(sel);
    pmu_zero();
    ls_seq(7, n);
    pmc_read(v);
    report(v[0] == 8 * n && v[1] == 7 * n && v[2] == 17 * n + 5,
           "CPL0 loads and stores: MEM_INST_RETIRED.LOADS, .STORES, "
           "INST_RETIRED - expect %lu, %lu, %lu (got %lu, %lu, %lu)",
           (unsigned long)(8 * n), (unsigned long)(7 * n),
           (unsigned long)(17 * n + 5), (unsigned long)v[0],
           (unsigned long)v[1], (unsigned long)v[2]);

    /* the PMI exactly after the instruction that overflows the counter */
    enable_apic();
    handle_irq(PMI_VECTOR, pmi_handler);
    for (i = 0; i < ARRAY_SIZE(pmis); i++) {
        ls_pmi(pmis[i].c, pmis[i].sel, pmis[i].k);
        report(pmi_count == 1 && pmi_rip == (unsigned long)pmis[i].rip,
               "PMI on the %s - expect RIP %lx (got %u, RIP %lx)",
               pmis[i].what, (unsigned long)pmis[i].rip, pmi_count, pmi_rip);
    }
    apic_write(APIC_LVTPC, PMI_VECTOR | APIC_LVT_MASKED);
    handle_irq(PMI_VECTOR, NULL);
}

/*
 * A hardware interrupt at an instruction breakpoint (Intel SDM Vol. 3B
 * 17.3.1.1): the RF image pushed for an interrupt that arrives between
 * instructions is EFLAGS.RF as it was, so the breakpoint on the
 * instruction it interrupted still fires after IRET, once.  The first
 * interrupt comes with RF 0, before the code breakpoint (priority 6
 * before 7, Vol. 3A Table 6-2); the second comes with RF 1, which the
 * #DB handler set to resume, and must push 1.  Linux's perf test
 * "Breakpoint overflow sampling" counts 10000 breakpoint hits and
 * misses one when the timer interrupts at the breakpoint with RF pushed
 * as 1.  Not PMU-specific: run in both configurations.
 */
#define BP_IRQ_VECTOR   0x41
#define X86_EFLAGS_RF   0x10000

static volatile unsigned bp_irqs, bp_dbs, bp_order;
static volatile unsigned long bp_irq_rip[2], bp_irq_rf[2], bp_db_rip;

static void bp_irq(struct ex_regs *regs)
{
    if (bp_irqs < 2) {
        bp_irq_rip[bp_irqs] = regs->rip;
        bp_irq_rf[bp_irqs] = regs->rflags & X86_EFLAGS_RF;
    }
    bp_irqs++;
    bp_order = bp_order * 10 + 1;
    apic_write(APIC_EOI, 0);
}

static void bp_db(struct ex_regs *regs)
{
    bp_dbs++;
    bp_db_rip = regs->rip;
    bp_order = bp_order * 10 + 2;
    /* pending until IRET sets IF, then taken before the resumed insn */
    apic_write(APIC_ICR, APIC_DEST_SELF | BP_IRQ_VECTOR);
    regs->rflags |= X86_EFLAGS_RF;
}

static void test_irq_at_breakpoint(void)
{
    extern char bp_target[];
    unsigned long t = (unsigned long)bp_target;

    enable_apic();
    handle_irq(1, bp_db);
    handle_irq(BP_IRQ_VECTOR, bp_irq);
    bp_irqs = bp_dbs = bp_order = 0;
    asm volatile("cli\n\t"
                 "mov %0, %%dr0\n\t"
                 "mov %1, %%dr7" /* L0, execute, 1 byte */
                 : : "r"(t), "r"(0x401ul) : "memory");
    /* pending: IF is 0 */
    apic_write(APIC_ICR, APIC_DEST_SELF | BP_IRQ_VECTOR);
    asm volatile("sti\n\t"
                 "nop\n\t"      /* in the STI's shadow */
                 ".globl bp_target\nbp_target: nop\n\t"
                 "cli\n\t"
                 "mov %0, %%dr7\n\t"
                 "mov %0, %%dr6"
                 : : "r"(0x400ul) : "memory");
    handle_irq(1, NULL);
    handle_irq(BP_IRQ_VECTOR, NULL);
    report(bp_order == 121 && bp_irqs == 2 && bp_dbs == 1,
           "interrupt, #DB, interrupt at a breakpoint - expect order 121, "
           "2 interrupts and 1 #DB (got %u, %u, %u)", bp_order, bp_irqs,
           bp_dbs);
    report(bp_irq_rip[0] == t && bp_irq_rf[0] == 0,
           "the first interrupt at the breakpoint pushes RF 0 - expect rip "
           "%lx, RF 0 (got %lx, %lx)", t, bp_irq_rip[0], bp_irq_rf[0]);
    report(bp_db_rip == t, "then the breakpoint fires - expect #DB at %lx "
           "(got %lx)", t, bp_db_rip);
    report(bp_irq_rip[1] == t && bp_irq_rf[1] == X86_EFLAGS_RF,
           "the interrupt after the #DB handler's IRET pushes RF 1 - expect "
           "rip %lx, RF %x (got %lx, %lx)", t, X86_EFLAGS_RF, bp_irq_rip[1],
           bp_irq_rf[1]);
}

/*
 * The cache events (choice 68): MEM_LOAD_RETIRED (CBH) by the level that
 * supplied each load, LLC References and Misses (2EH 4FH, 41H), from
 * the cache model of docs/cache-model.md with the Nehalem profile's
 * caches (L1D 32 KiB 8-way, L2 256 KiB 8-way, L3 8 MiB 16-way, 64-byte
 * lines).  The expected counts follow from its LRU rules by hand.
 * cache_walk empties the model (WBINVD), then makes @passes passes over
 * the first @lines lines of cache_buf, one 8-byte load per line:
 *   64 lines (4 KiB): pass 1 misses every level (DRAM), pass 2 hits L1;
 *   1024 lines (64 KiB): each of L1's 64 sets takes 16 lines in turn,
 *     so pass 2 misses L1 (8 ways, LRU) and hits L2 (2 lines a set);
 *   8192 lines (512 KiB): 16 lines a set of L2's 512, so pass 2 misses
 *     L2 and hits L3 (1 line a set of its 8192).
 * Counted at CPL 0 after the enabling WRMSR: a pass is MOV, MOV, @lines
 * times MOV, ADD, DEC, JNZ, then DEC, JNZ; then the 4 disabling
 * instructions.
 */
static u8 cache_buf[512 << 10] __attribute__((aligned(4096)));

static void cache_walk(u64 enable, u64 lines, u64 passes)
{
    asm volatile("wbinvd\n\t"
                 "mov $0x38f, %%ecx\n\t"
                 "mov %[lo], %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n\t"
                 "2: mov %[buf], %%rsi\n\t"
                 "mov %[lines], %%rbx\n\t"
                 "1: mov (%%rsi), %%rax\n\t"
                 "add $64, %%rsi\n\t"
                 "dec %%rbx\n\t"
                 "jnz 1b\n\t"
                 "dec %[passes]\n\t"
                 "jnz 2b\n\t"
                 ASM_DISABLE_ALL
                 : [passes] "+r"(passes)
                 : [lo] "r"((u32)enable), [buf] "r"(cache_buf),
                   [lines] "r"(lines)
                 : "rax", "rbx", "rcx", "rdx", "rsi", "memory");
}

/*
 * For the PMI: after WBINVD, two passes over 64 lines, each iteration a
 * load of the line and a CALL of a RET (a load of the stack, the last
 * instruction of its block).  Pass 1: each line misses to DRAM, the
 * first RET too, the 63 others hit L1; pass 2: every load hits L1.
 */
asm(".globl cache_ret\ncache_ret: ret\n");

static void cache_calls(u64 enable)
{
    asm volatile("wbinvd\n\t"
                 "mov $0x38f, %%ecx\n\t"
                 "mov %[lo], %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n\t"
                 "mov $2, %%rdi\n\t"
                 "2: mov %[buf], %%rsi\n\t"
                 "mov $64, %%rbx\n\t"
                 "1: mov (%%rsi), %%rax\n\t"
                 ".globl cache_c1\ncache_c1: call cache_ret\n\t"
                 ".globl cache_c2\ncache_c2: add $64, %%rsi\n\t"
                 "dec %%rbx\n\t"
                 "jnz 1b\n\t"
                 "dec %%rdi\n\t"
                 "jnz 2b\n\t"
                 ASM_DISABLE_ALL
                 : : [lo] "r"((u32)enable), [buf] "r"(cache_buf)
                 : "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "memory");
}

/*
 * For the PMI of an instruction that ends its block because the next one
 * crosses into the next page (the translator gives that one up): a load
 * that is the last instruction whose bytes are all in its page, then a
 * 10-byte MOVABS that starts 2 bytes before the page's end, then another
 * load.  The PMI of the first load's overflow comes before the MOVABS.
 */
asm(".pushsection .text.straddle, \"ax\"\n"
    ".balign 4096\n"
    "straddle_page:\n\t"
    "jmp 1f\n"
    ".org straddle_page + 4096 - 8\n"
    "1: mov %rsi, %rsi\n\t"
    "mov (%rsi), %rax\n"
    ".globl straddle_next\nstraddle_next: movabs $0x1122334455667788, %rcx\n\t"
    "mov 64(%rsi), %rdx\n\t"
    "ret\n"
    ".popsection\n");

static void cache_straddle(u64 enable)
{
    asm volatile("wbinvd\n\t"
                 "mov $0x38f, %%ecx\n\t"
                 "mov %[lo], %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n\t"
                 "mov %[buf], %%rsi\n\t"
                 "call straddle_page\n\t"
                 ASM_DISABLE_ALL
                 : : [lo] "r"((u32)enable), [buf] "r"(cache_buf)
                 : "rax", "rcx", "rdx", "rsi", "memory");
}

static volatile unsigned long cache_pmi_rsi;

static void cache_pmi(struct ex_regs *regs)
{
    cache_pmi_rsi = regs->rsi;
    pmi_handler(regs);
}

/*
 * @run(@arg) with interrupts on and the LVT entry unmasked, the counters
 * set up for a PMI: one PMI (cache_pmi) at RIP @rip with RSI @rsi
 */
static void cache_pmi_at(void (*run)(u64), u64 arg, const char *rip, u64 rsi,
                         const char *what)
{
    apic_write(APIC_LVTPC, PMI_VECTOR);
    pmi_count = 0;
    pmi_rip = 0;
    cache_pmi_rsi = 0;
    asm volatile("sti");
    run(arg);
    asm volatile("cli");
    report(pmi_count == 1 && pmi_rip == (unsigned long)rip &&
           cache_pmi_rsi == rsi, "PMI on the %s - expect RIP %lx, RSI %lx "
           "(got %u, RIP %lx, RSI %lx)", what, (unsigned long)rip,
           (unsigned long)rsi, pmi_count, pmi_rip, cache_pmi_rsi);
}

/*
 * At CPL3, after WBINVD: two loads of the first line of cache_buf (DRAM,
 * then L1) with, between them, nothing (base), a far JMP through that
 * line to the null selector, which loads the far pointer (an L1 hit)
 * and raises #GP (fault), or a third load (load).  The loads of an
 * instruction that does not retire count nothing.
 */
static void user_cache_base(void *arg)
{
    (void)arg;
    asm volatile("mov (%%rsi), %%rax\n\t"
                 ASM_TRY("1f")
                 "1: mov (%%rsi), %%rax\n\t"
                 : : "S"(cache_buf) : "rax", "rcx", "memory");
}

static void user_cache_fault(void *arg)
{
    (void)arg;
    asm volatile("mov (%%rsi), %%rax\n\t"
                 ASM_TRY("1f")
                 "ljmp *(%%rsi)\n\t"
                 "1: mov (%%rsi), %%rax\n\t"
                 : : "S"(cache_buf) : "rax", "rcx", "memory");
}

static void user_cache_load(void *arg)
{
    (void)arg;
    asm volatile("mov (%%rsi), %%rax\n\t"
                 ASM_TRY("1f")
                 "mov (%%rsi), %%rcx\n\t"
                 "1: mov (%%rsi), %%rax\n\t"
                 : : "S"(cache_buf) : "rax", "rcx", "memory");
}

/* L1D_HIT, L3_MISS and MEM_INST_RETIRED.LOADS, USR, over @fn at CPL3 */
static void user_cache_counts(void (*fn)(void *), u64 v[4])
{
    static const u64 sel[4] = { 0x4101cb, 0x4110cb, 0x41010b, 0 };

    evtsel_write(sel);
    pmu_zero();
    memset(cache_buf, 0, 64);
    asm volatile("wbinvd" : : : "memory");
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 7);
    run_in_user(fn, NULL);
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    pmc_read(v);
}

static void test_cache_events(void)
{
    extern char cache_c1[], cache_c2[], straddle_next[];
    static const u64 by_level[4] = { 0x4201cb, 0x4202cb, 0x4204cb, 0x4210cb };
    static const u64 llc[4] = { 0x424f2e, 0x42412e, 0x42010b, 0x4200c0 };
    static const u64 none[4];
    const struct {
        u64 lines;
        u64 expect[4];
        const char *what;
    } walks[] = {
        { 64, { 64, 0, 0, 64 }, "4 KiB: DRAM, then L1" },
        { 1024, { 0, 1024, 0, 1024 }, "64 KiB: DRAM, then L2" },
        { 8192, { 0, 0, 8192, 8192 }, "512 KiB: DRAM, then L3" },
    };
    const u64 b = (u64)cache_buf;
    const struct {
        u64 sel, k;
        const char *rip;
        u64 rsi;
        const char *what;
    } pmis[] = {
        { 0x5201cb, 5, cache_c2, b + 5 * 64,
          "5th L1D_HIT, the RET of pass 1's 6th iteration (block end)" },
        { 0x5201cb, 64, cache_c1, b,
          "64th L1D_HIT, pass 2's first load (mid-block)" },
        { 0x5201cb, 65, cache_c2, b, "65th L1D_HIT, pass 2's first RET" },
        { 0x5210cb, 3, cache_c1, b + 64,
          "3rd L3_MISS, the second line (mid-block)" },
    };
    unsigned i;
    u64 v[4], base[4], fault[4], load[4];

    for (i = 0; i < ARRAY_SIZE(walks); i++) {
        evtsel_write(by_level);
        pmu_zero();
        cache_walk(0xf, walks[i].lines, 2);
        pmc_read(v);
        report(v[0] == walks[i].expect[0] && v[1] == walks[i].expect[1] &&
               v[2] == walks[i].expect[2] && v[3] == walks[i].expect[3],
               "MEM_LOAD_RETIRED L1D_HIT, L2_HIT, L3_UNSHARED_HIT, L3_MISS "
               "over %s - expect %lu, %lu, %lu, %lu (got %lu, %lu, %lu, %lu)",
               walks[i].what, (unsigned long)walks[i].expect[0],
               (unsigned long)walks[i].expect[1],
               (unsigned long)walks[i].expect[2],
               (unsigned long)walks[i].expect[3], (unsigned long)v[0],
               (unsigned long)v[1], (unsigned long)v[2], (unsigned long)v[3]);
    }

    evtsel_write(llc);
    pmu_zero();
    cache_walk(0xf, 8192, 2);
    pmc_read(v);
    report(v[0] == 16384 && v[1] == 8192 && v[2] == 16384 &&
           v[3] == 2 * (4 + 4 * 8192) + 4,
           "LLC References, LLC Misses, MEM_INST_RETIRED.LOADS, INST_RETIRED "
           "over 512 KiB twice - expect 16384, 8192, 16384, %lu (got %lu, "
           "%lu, %lu, %lu)", (unsigned long)(2 * (4 + 4 * 8192) + 4),
           (unsigned long)v[0], (unsigned long)v[1], (unsigned long)v[2],
           (unsigned long)v[3]);

    user_cache_counts(user_cache_base, base);
    user_cache_counts(user_cache_fault, fault);
    user_cache_counts(user_cache_load, load);
    report(base[0] > 0 && base[1] > 0 && fault[0] == base[0] &&
           fault[1] == base[1] && fault[2] == base[2] &&
           load[0] == base[0] + 1 && load[1] == base[1] &&
           load[2] == base[2] + 1,
           "CPL3: a far JMP that loads its pointer and faults counts no load "
           "- expect L1D_HIT, L3_MISS, LOADS as without it, %lu, %lu, %lu "
           "(got %lu, %lu, %lu); one more load: %lu, %lu, %lu (got %lu, "
           "%lu, %lu)", (unsigned long)base[0], (unsigned long)base[1],
           (unsigned long)base[2], (unsigned long)fault[0],
           (unsigned long)fault[1], (unsigned long)fault[2],
           (unsigned long)(base[0] + 1), (unsigned long)base[1],
           (unsigned long)(base[2] + 1), (unsigned long)load[0],
           (unsigned long)load[1], (unsigned long)load[2]);

    /* the PMI exactly after the instruction whose load overflowed */
    enable_apic();
    handle_irq(PMI_VECTOR, cache_pmi);
    for (i = 0; i < ARRAY_SIZE(pmis); i++) {
        evtsel_write(none);
        wrmsr(MSR_IA32_PERFEVTSEL0, pmis[i].sel);
        wrmsr(MSR_IA32_PMC0, -pmis[i].k);
        wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 0xf);
        cache_pmi_at(cache_calls, 1, pmis[i].rip, pmis[i].rsi, pmis[i].what);
    }
    /* its block ends there: the next instruction crosses the page */
    evtsel_write(none);
    wrmsr(MSR_IA32_PERFEVTSEL0, 0x5210cb);
    wrmsr(MSR_IA32_PMC0, -1ull);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 0xf);
    cache_pmi_at(cache_straddle, 1, straddle_next, b,
                 "1st L3_MISS, a block's last load before an instruction "
                 "that crosses a page");
    wrmsr(MSR_IA32_PERFEVTSEL0, 0);
    apic_write(APIC_LVTPC, PMI_VECTOR | APIC_LVT_MASKED);
    handle_irq(PMI_VECTOR, NULL);
}

/*
 * cost-model=detailed (choice 69; config=pmu-cost): a cycle per
 * instruction and one more per branch, plus for each load the latency of
 * the level that supplied it less L1's (Nehalem: L2 6, L3 36, DRAM 196
 * more), plus 17 per mispredicted branch (docs/branch-predictor.md).
 * cost_walk: WBINVD, then GLOBAL_CTRL := PMC0-3 and FIXED_CTR1, MOV, MOV,
 * @lines iterations of a load of the next line, ADD, DEC, JNZ, then the
 * 4 disabling instructions.
 */
asm(".pushsection .text\n"
    ".globl cost_walk_asm\n"
    "cost_walk_asm:\n\t"
    "wbinvd\n\t"
    "mov %rdi, %r8\n\t"
    "mov $0x38f, %ecx\n\t"
    "mov $0xf, %eax\n\t"
    "mov $2, %edx\n\t"
    "wrmsr\n\t"
    "mov %rsi, %rsi\n\t"
    "mov %r8, %rbx\n"
    ".globl cost_l\ncost_l: mov (%rsi), %rax\n"
    ".globl cost_a\ncost_a: add $64, %rsi\n"
    ".globl cost_d\ncost_d: dec %rbx\n\t"
    "jnz cost_l\n"
    ".globl cost_e\ncost_e: mov $0x38f, %ecx\n\t"
    "xor %eax, %eax\n\t"
    "xor %edx, %edx\n\t"
    "wrmsr\n\t"
    "ret\n"
    ".popsection\n");

static void cost_walk(u64 lines)
{
    u8 *buf = cache_buf;

    asm volatile("call cost_walk_asm"
                 : "+D"(lines), "+S"(buf)
                 :
                 : "rax", "rbx", "rcx", "rdx", "r8", "memory");
}

static void test_cost(void)
{
    extern char cost_l[], cost_a[], cost_d[], cost_e[];
    static const u64 sel[4] = { 0x4200c0, 0x4210cb, 0x4200c5, 0x42003c };
    const u64 b = (u64)cache_buf, w = 2 + 64 * 201;
    const struct {
        u64 k;
        const char *rip;
        u64 rsi;
        const char *what;
    } pmis[] = {
        { 2, cost_l, b, "detailed cost's 2nd cycle, the second MOV" },
        { 150, cost_a, b, "detailed cost's 150th cycle, in a load's stall" },
        { 200, cost_d, b + 64,
          "detailed cost's 200th cycle, the ADD after that stall" },
        { w + 5, cost_e, b + 64 * 64,
          "detailed cost's cycle 5 of the last JNZ's mispredict stall" },
    };
    u64 v[4], f1;
    unsigned i;

    /*
     * the predictor and the cache model are as after RESET; GLOBAL_CTRL
     * too (PMC0-3 enabled), until now
     */
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    evtsel_write(sel);
    pmu_zero();
    wrmsr(MSR_IA32_FIXED_CTR_CTRL, 0x10);
    cost_walk(64);
    pmc_read(v);
    f1 = rdmsr(MSR_IA32_FIXED_CTR0 + 1);
    report(v[0] == 262 && v[1] == 64 && v[2] == 2 && v[3] == 12904 &&
           f1 == 12904, "cost-model=detailed: 64 loads from DRAM, 2 "
           "mispredicts - expect 262 instructions, 64 L3_MISS, 2 BR_MISP, "
           "12904 cycles twice (got %lu, %lu, %lu, %lu, %lu)",
           (unsigned long)v[0], (unsigned long)v[1], (unsigned long)v[2],
           (unsigned long)v[3], (unsigned long)f1);

    /* 64 KiB twice: L2 supplies pass 2 (cache_walk, fresh predictor) */
    pmu_zero();
    cache_walk(0xf, 1024, 2);
    pmc_read(v);
    report(v[0] == 8204 && v[2] == 5 &&
           v[3] == 8204 + 2050 + 1024 * 196 + 1024 * 6 + 5 * 17,
           "cost-model=detailed: 64 KiB twice, DRAM then L2 - expect 8204 "
           "instructions, 5 BR_MISP, %lu cycles (got %lu, %lu, %lu)",
           (unsigned long)(8204 + 2050 + 1024 * 196 + 1024 * 6 + 5 * 17),
           (unsigned long)v[0], (unsigned long)v[2], (unsigned long)v[3]);

    /*
     * CPL0 cycles on FIXED_CTR1 and PMC3 around a trip to CPL3: the IRET
     * that goes there loads its frame at CPL0 (DRAM, after WBINVD), and
     * both counters count its stalls, in its TB at CPL3
     */
    wrmsr(MSR_IA32_PERFEVTSEL0 + 3, 0x42003c);
    pmu_zero();
    asm volatile("wbinvd" : : : "memory");
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0x200000008ull);
    {
        u64 n = 10;

        run_in_user(user_loop, &n);
    }
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    v[3] = rdmsr(MSR_IA32_PMC0 + 3);
    f1 = rdmsr(MSR_IA32_FIXED_CTR0 + 1);
    report(v[3] == f1 && f1 > 200, "cost-model=detailed: CPL0 cycles "
           "around a trip to CPL3 - expect FIXED_CTR1 = PMC3, with stalls "
           "(got %lu, %lu)", (unsigned long)f1, (unsigned long)v[3]);

    /*
     * The PMI of FIXED_CTR1 right after the instruction whose cycles
     * overflow it: after the first run, each run mispredicts only its last
     * JNZ, and iteration i (from 1) takes cycles 2 + 201 * (i - 1) + 1 to
     * 2 + 201 * i: the load 197, ADD, DEC, JNZ 2
     */
    enable_apic();
    handle_irq(PMI_VECTOR, cache_pmi);
    wrmsr(MSR_IA32_FIXED_CTR_CTRL, 0x90);
    for (i = 0; i < ARRAY_SIZE(pmis); i++) {
        wrmsr(MSR_IA32_FIXED_CTR0 + 1, -pmis[i].k & ((1ull << 48) - 1));
        wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 0x70000000full);
        cache_pmi_at(cost_walk, 64, pmis[i].rip, pmis[i].rsi, pmis[i].what);
    }
    wrmsr(MSR_IA32_FIXED_CTR_CTRL, 0);
    apic_write(APIC_LVTPC, PMI_VECTOR | APIC_LVT_MASKED);
    handle_irq(PMI_VECTOR, NULL);
}

/*
 * Single-stepping on branches (Intel SDM Vol. 3B 17.4.3): with
 * IA32_DEBUGCTL.BTF (bit 1) and EFLAGS.TF, the single-step #DB comes only
 * after instructions that take a branch, with DR6.BS; the processor
 * clears BTF when it generates the #DB, so the handler sets it again, as
 * a debugger does.  btf_run sets TF with POPF (no trap after the
 * instruction that sets it), then runs a PAUSE, a JMP, a Jcc not taken,
 * a CALL, a RET, an indirect JMP, LOOP taken twice then not, and an
 * IRET, and clears TF with POPF.  The branches taken are 7, and their
 * targets are the labels below; with TF alone each of the 26
 * instructions from the NOP after the first POPF to the last POPF traps
 * (TF is checked at an instruction's start).
 */
static volatile unsigned btf_traps, btf_bad_dr6, btf_set_in_handler;
static volatile bool btf_rearm;
static volatile unsigned long btf_rip[8];

static void btf_db(struct ex_regs *regs)
{
    unsigned long dr6;

    asm volatile("mov %%dr6, %0" : "=r"(dr6));
    if (!(dr6 & (1ul << 14))) {
        btf_bad_dr6++;
    }
    asm volatile("mov %0, %%dr6" : : "r"(0xffff0ff0ul));
    if (btf_traps < ARRAY_SIZE(btf_rip)) {
        btf_rip[btf_traps] = regs->rip;
    }
    btf_traps++;
    if (rdmsr(MSR_IA32_DEBUGCTL) & 2) {
        btf_set_in_handler++;
    }
    if (btf_rearm) {
        wrmsr(MSR_IA32_DEBUGCTL, 2);
    }
}

static void btf_run(void)
{
    asm volatile("mov $3, %%ecx\n\t"
                 "pushfq\n\t"
                 "orq $0x100, (%%rsp)\n\t"
                 "popfq\n\t"
                 "nop\n\t"
                 "pause\n"
                 "btf_j: jmp btf_1\n"
                 "btf_1: nop\n\t"
                 "cmp $3, %%ecx\n\t"
                 "jne btf_never\n\t"
                 "call btf_f\n"
                 "btf_2: lea btf_3(%%rip), %%rax\n\t"
                 "jmp *%%rax\n"
                 "btf_3: loop btf_3\n\t"
                 /* IRET to btf_4, at CPL 0, with TF in its RFLAGS */
                 "mov %%rsp, %%rax\n\t"
                 "mov %%ss, %%rdx\n\t"
                 "push %%rdx\n\t"
                 "push %%rax\n\t"
                 "pushfq\n\t"
                 "mov %%cs, %%rdx\n\t"
                 "push %%rdx\n\t"
                 "lea btf_4(%%rip), %%rdx\n\t"
                 "push %%rdx\n\t"
                 "iretq\n"
                 "btf_4: pushfq\n\t"
                 "andq $~0x100, (%%rsp)\n\t"
                 "popfq\n\t"
                 "jmp btf_end\n"
                 "btf_f: ret\n"
                 "btf_never: ud2\n"
                 "btf_end:"
                 : : : "rax", "rcx", "rdx", "memory", "cc");
}

/*
 * A debug exception clears IA32_DEBUGCTL.LBR too, "before executing the
 * exception handler", and leaves the stack alone (SDM Vol. 3B 17.4.2):
 * btf_run with LBR and BTF: the first #DB, after its first JMP, finds
 * DEBUGCTL 0 and that JMP at the top of the stack; the #DB is not
 * recorded, and nothing is after it
 */
static volatile u64 lbr_db_ctl, lbr_db_from, lbr_db_to;
static volatile unsigned lbr_db_traps;

static void lbr_db(struct ex_regs *regs)
{
    u64 tos = rdmsr(MSR_LBR_TOS);

    (void)regs;
    asm volatile("mov %0, %%dr6" : : "r"(0xffff0ff0ul));
    if (!lbr_db_traps++) {
        lbr_db_ctl = rdmsr(MSR_IA32_DEBUGCTL);
        lbr_db_from = rdmsr(MSR_LBR_FROM0 + tos);
        lbr_db_to = rdmsr(MSR_LBR_TO0 + tos);
    }
}

static void test_lbr_db(void)
{
    extern char btf_j[], btf_1[];
    u64 tos, from, to;

    handle_irq(1, lbr_db);
    lbr_db_traps = 0;
    wrmsr(MSR_LBR_SELECT, 0);
    wrmsr(MSR_IA32_DEBUGCTL, 3);
    btf_run();
    tos = rdmsr(MSR_LBR_TOS);
    from = rdmsr(MSR_LBR_FROM0 + tos) & ~(1ull << 63);
    to = rdmsr(MSR_LBR_TO0 + tos);
    report(lbr_db_traps == 24 && lbr_db_ctl == 0 &&
           (lbr_db_from & ~(1ull << 63)) == (unsigned long)btf_j &&
           lbr_db_to == (unsigned long)btf_1,
           "LBR | BTF and TF: the first #DB - expect DEBUGCTL 0 in its "
           "handler and the JMP %lx -> %lx at the top of the stack, then "
           "23 single steps (got DEBUGCTL %lx, %lx -> %lx, %u #DBs)",
           (unsigned long)btf_j, (unsigned long)btf_1,
           (unsigned long)lbr_db_ctl, (unsigned long)lbr_db_from,
           (unsigned long)lbr_db_to, lbr_db_traps);
    report(from == (unsigned long)btf_j && to == (unsigned long)btf_1 &&
           rdmsr(MSR_IA32_DEBUGCTL) == 0,
           "... and after the run, nothing recorded since: the same JMP at "
           "the top, DEBUGCTL 0 (got %lx -> %lx)", (unsigned long)from,
           (unsigned long)to);
    wrmsr(MSR_IA32_DEBUGCTL, 0);
    handle_irq(1, NULL);
}

static void test_btf(void)
{
    extern char btf_1[], btf_2[], btf_3[], btf_4[], btf_f[];
    const unsigned long want[] = {
        (unsigned long)btf_1, (unsigned long)btf_f, (unsigned long)btf_2,
        (unsigned long)btf_3, (unsigned long)btf_3, (unsigned long)btf_3,
        (unsigned long)btf_4,
    };
    unsigned i;
    bool same = true, kept;
    u64 v = 0;

    kept = !wrmsr_safe(MSR_IA32_DEBUGCTL, 2) &&
           !rdmsr_safe(MSR_IA32_DEBUGCTL, &v) && v == 2;
    report(kept, "DEBUGCTL := BTF - expect kept (got %lx)", (unsigned long)v);
    handle_irq(1, btf_db);
    btf_traps = btf_bad_dr6 = btf_set_in_handler = 0;
    btf_rearm = true;
    btf_run();
    for (i = 0; i < ARRAY_SIZE(want); i++) {
        same &= btf_rip[i] == want[i];
    }
    report(btf_traps == 7 && same,
           "TF with BTF - expect 7 #DBs, at the 7 branch targets (got %u: "
           "%lx %lx %lx %lx %lx %lx %lx)", btf_traps, btf_rip[0],
           btf_rip[1], btf_rip[2], btf_rip[3], btf_rip[4], btf_rip[5],
           btf_rip[6]);
    report(btf_bad_dr6 == 0 && btf_set_in_handler == 0,
           "each with DR6.BS, and BTF clear in the handler - expect 0 and 0 "
           "(got %u, %u)", btf_bad_dr6, btf_set_in_handler);
    report(rdmsr(MSR_IA32_DEBUGCTL) == 2,
           "DEBUGCTL after the last #DB's handler set BTF again - expect 2");

    /* one #DB clears BTF: the rest of the run single-steps instructions */
    btf_traps = 0;
    btf_rearm = false;
    btf_run();
    report(btf_traps == 1 + 23 && btf_rip[0] == want[0],
           "BTF not set again - expect the #DB at %lx, then one after each "
           "of the 23 instructions that follow (got %u, first at %lx)",
           want[0], btf_traps, btf_rip[0]);

    wrmsr(MSR_IA32_DEBUGCTL, 0);
    btf_traps = 0;
    btf_run();
    report(btf_traps == 26,
           "TF without BTF - expect 26 #DBs (got %u)", btf_traps);
    handle_irq(1, NULL);
}

/*
 * The last branch records of the Core i7 (SDM 18.6.1, 18.6.2, 18.5.3.1;
 * choice 72).  lbr_seq enables LBR with a WRMSR, takes 8 branches, one of
 * each near kind and two RETs (and one JNE not taken, which is not
 * recorded), and disables it with a WRMSR: FROM and TO of each entry are
 * labels of the listing.  The mispredict flag (FROM bit 63) follows the
 * predictor model's rules (docs/branch-predictor.md) by hand: on the
 * third run every branch is predicted (the JE's counter has been taken
 * twice, the BTB holds both indirect branches, the return stack holds
 * both RETs' targets, direct branches are never mispredicted), except the
 * indirect JMP when its target changes (lbr_d2 instead of lbr_d).
 */

extern char lbr_j1[], lbr_a[], lbr_j2[], lbr_b[], lbr_j3[], lbr_c[];
extern char lbr_j4[], lbr_d[], lbr_d2[], lbr_j5[], lbr_e[], lbr_j6[];
extern char lbr_f[], lbr_end[], lbr_int[], lbr_isr[], lbr_after[];
extern char lbr_j0[], lbr_k[];

static void lbr_seq(unsigned long ind_target)
{
    asm volatile("mov $0x1d9, %%ecx\n\t"
                 "mov $1, %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n\t"
                 "mov %0, %%rdx\n"
                 "lbr_j1: jmp lbr_a\n"
                 "lbr_a: cmp %%eax, %%eax\n"
                 "lbr_j2: je lbr_b\n\t"
                 "ud2\n"
                 "lbr_b: jne lbr_never\n"
                 "lbr_j3: call lbr_f\n"
                 "lbr_c: nop\n"
                 "lbr_j4: jmp *%%rdx\n"
                 "lbr_d2: nop\n"
                 "lbr_d: lea lbr_f(%%rip), %%rdx\n"
                 "lbr_j5: call *%%rdx\n"
                 "lbr_e: nop\n"
                 "lbr_j6: jmp lbr_end\n"
                 "lbr_f: ret\n"
                 "lbr_never: ud2\n"
                 "lbr_end: mov $0x1d9, %%ecx\n\t"
                 "xor %%eax, %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr"
                 : : "r"(ind_target) : "rax", "rcx", "rdx", "memory", "cc");
}

/* INT $0x42 to lbr_isr, which only IRETs: the LER and far branches */
static void lbr_int_seq(void)
{
    asm volatile("mov $0x1d9, %%ecx\n\t"
                 "mov $1, %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n"
                 "lbr_j0: jmp lbr_k\n"
                 "lbr_k: nop\n"
                 "lbr_int: int $0x42\n"
                 "lbr_after: mov $0x1d9, %%ecx\n\t"
                 "xor %%eax, %%eax\n\t"
                 "wrmsr\n\t"
                 "jmp 1f\n"
                 "lbr_isr: iretq\n"
                 "1:"
                 : : : "rax", "rcx", "rdx", "memory", "cc");
}

/* The @n newest entries, oldest first, into @from and @to */
static void lbr_read(unsigned n, u64 *from, u64 *to)
{
    unsigned tos = rdmsr(MSR_LBR_TOS), i;

    for (i = 0; i < n; i++) {
        unsigned e = (tos + 16 - (n - 1 - i)) % 16;

        from[i] = rdmsr(MSR_LBR_FROM0 + e);
        to[i] = rdmsr(MSR_LBR_TO0 + e);
    }
}

static void test_lbr(void)
{
    const unsigned long want_from[8] = {
        (unsigned long)lbr_j1, (unsigned long)lbr_j2, (unsigned long)lbr_j3,
        (unsigned long)lbr_f, (unsigned long)lbr_j4, (unsigned long)lbr_j5,
        (unsigned long)lbr_f, (unsigned long)lbr_j6,
    };
    unsigned long want_to[8] = {
        (unsigned long)lbr_a, (unsigned long)lbr_b, (unsigned long)lbr_f,
        (unsigned long)lbr_c, (unsigned long)lbr_d, (unsigned long)lbr_f,
        (unsigned long)lbr_e, (unsigned long)lbr_end,
    };
    u64 from[8], to[8], v = 0, tos0;
    unsigned i, bad, misp;

    /* Linux's check_msr(): each MSR takes a value and reads it back */
    tos0 = rdmsr(MSR_LBR_TOS);
    report(!wrmsr_safe(MSR_LBR_TOS, tos0 ^ 3) &&
           !rdmsr_safe(MSR_LBR_TOS, &v) && v == (tos0 ^ 3) &&
           !wrmsr_safe(MSR_LBR_FROM0 + 15, 0xffff) &&
           !rdmsr_safe(MSR_LBR_FROM0 + 15, &v) && v == 0xffff &&
           !wrmsr_safe(MSR_LBR_TO0 + 15, 0xffff) &&
           !rdmsr_safe(MSR_LBR_TO0 + 15, &v) && v == 0xffff,
           "LBR TOS, FROM15, TO15 take a value and read it back");
    report(rdmsr_safe(MSR_LBR_FROM0 + 16, &v) &&
           rdmsr_safe(MSR_LBR_TO0 + 16, &v) &&
           wrmsr_safe(MSR_LBR_TOS, 16) &&
           wrmsr_safe(MSR_LBR_SELECT, 0x200) &&
           wrmsr_safe(MSR_LER_FROM, 0) &&
           wrmsr_safe(MSR_LBR_TO0, 1ull << 48) &&
           !wrmsr_safe(MSR_LBR_FROM0, LBR_MISPRED | 0xffff800000000000ull),
           "beyond the 16 entries, TOS 16, LBR_SELECT bit 9, LER write, "
           "TO bit 48 alone - expect #GP; FROM with the mispredict flag - "
           "kept");
    wrmsr(MSR_LBR_TOS, tos0);

    lbr_seq((unsigned long)lbr_d);
    lbr_seq((unsigned long)lbr_d);
    tos0 = rdmsr(MSR_LBR_TOS);
    lbr_seq((unsigned long)lbr_d);
    lbr_read(8, from, to);
    bad = 0;
    misp = 0;
    for (i = 0; i < 8; i++) {
        bad += (from[i] & ~LBR_MISPRED) != want_from[i] || to[i] != want_to[i];
        misp += !!(from[i] & LBR_MISPRED);
    }
    report(rdmsr(MSR_LBR_TOS) == (tos0 + 8) % 16 && bad == 0 && misp == 0,
           "LBR: 8 branches, JMP, JE, CALL, RET, JMP *, CALL *, RET, JMP - "
           "expect TOS + 8, each FROM and TO the listing's, none "
           "mispredicted (got TOS %lx after %lx, %u wrong, %u mispredicted; "
           "newest %lx -> %lx)", (unsigned long)rdmsr(MSR_LBR_TOS),
           (unsigned long)tos0, bad, misp, (unsigned long)from[7],
           (unsigned long)to[7]);
    lbr_seq((unsigned long)lbr_d2);
    lbr_read(8, from, to);
    want_to[4] = (unsigned long)lbr_d2;
    bad = 0;
    for (i = 0; i < 8; i++) {
        bad += (from[i] & ~LBR_MISPRED) != want_from[i] || to[i] != want_to[i];
    }
    report(bad == 0 && (from[4] & LBR_MISPRED) &&
           !((from[3] | from[5]) & LBR_MISPRED),
           "LBR: the JMP * to a new target - expect its FROM bit 63 set, "
           "its TO lbr_d2 (got %lx -> %lx, %u wrong)",
           (unsigned long)from[4], (unsigned long)to[4], bad);

    /* MSR_LBR_SELECT leaves kinds out, and CPLs */
    tos0 = rdmsr(MSR_LBR_TOS);
    wrmsr(MSR_LBR_SELECT, (1 << 2) | (1 << 5)); /* JCC, NEAR_RET */
    lbr_seq((unsigned long)lbr_d);
    lbr_read(5, from, to);
    report(rdmsr(MSR_LBR_TOS) == (tos0 + 5) % 16 &&
           (from[0] & ~LBR_MISPRED) == want_from[0] &&
           (from[1] & ~LBR_MISPRED) == want_from[2] &&
           (from[2] & ~LBR_MISPRED) == want_from[4] &&
           (from[3] & ~LBR_MISPRED) == want_from[5] &&
           (from[4] & ~LBR_MISPRED) == want_from[7],
           "LBR_SELECT JCC | NEAR_RET - expect the 5 others only (got TOS "
           "%lx after %lx)", (unsigned long)rdmsr(MSR_LBR_TOS),
           (unsigned long)tos0);
    tos0 = rdmsr(MSR_LBR_TOS);
    wrmsr(MSR_LBR_SELECT, 1); /* CPL_EQ_0 */
    lbr_seq((unsigned long)lbr_d);
    report(rdmsr(MSR_LBR_TOS) == tos0,
           "LBR_SELECT CPL_EQ_0 - expect nothing recorded at CPL 0");
    wrmsr(MSR_LBR_SELECT, 0);

    /* an interrupt: LER takes the last branch before it (18.6.1) */
    set_raw_handler(0x42, (unsigned long)lbr_isr);
    tos0 = rdmsr(MSR_LBR_TOS);
    lbr_int_seq();
    set_raw_handler(0x42, 0);
    lbr_read(3, from, to);
    report(rdmsr(MSR_LBR_TOS) == (tos0 + 3) % 16 &&
           from[0] == (unsigned long)lbr_j0 && to[0] == (unsigned long)lbr_k &&
           from[1] == (unsigned long)lbr_int &&
           to[1] == (unsigned long)lbr_isr &&
           from[2] == (unsigned long)lbr_isr &&
           to[2] == (unsigned long)lbr_after,
           "LBR: JMP, INT $0x42, IRETQ - expect the INT from itself to the "
           "handler and the IRETQ back (got %lx -> %lx, %lx -> %lx)",
           (unsigned long)from[1], (unsigned long)to[1],
           (unsigned long)from[2], (unsigned long)to[2]);
    report(rdmsr(MSR_LER_FROM) == (unsigned long)lbr_j0 &&
           rdmsr(MSR_LER_TO) == (unsigned long)lbr_k,
           "LER_FROM_LIP, LER_TO_LIP - expect the JMP before the INT "
           "(got %lx -> %lx)", (unsigned long)rdmsr(MSR_LER_FROM),
           (unsigned long)rdmsr(MSR_LER_TO));

    /* FREEZE_LBRS_ON_PMI: the PMI request clears DEBUGCTL.LBR */
    enable_apic();
    handle_irq(PMI_VECTOR, pmi_handler);
    wrmsr(MSR_IA32_DEBUGCTL, 0x801);
    pmi_run(102, 50);
    report(pmi_count == 1 && pmi_debugctl == 0x800 &&
           rdmsr(MSR_LBR_TOS) == pmi_tos,
           "PMI with FREEZE_LBRS_ON_PMI - expect DEBUGCTL 0x800 in the "
           "handler and nothing recorded after (got %u, %lx, TOS %lx then "
           "%lx)", pmi_count, (unsigned long)pmi_debugctl,
           (unsigned long)pmi_tos, (unsigned long)rdmsr(MSR_LBR_TOS));
    wrmsr(MSR_IA32_DEBUGCTL, 1);
    pmi_run(102, 50);
    wrmsr(MSR_IA32_DEBUGCTL, 0);
    report(pmi_count == 1 && pmi_debugctl == 1 &&
           rdmsr(MSR_LBR_TOS) != pmi_tos,
           "PMI without it - expect LBR on in the handler, and recording "
           "after (got %u, %lx)", pmi_count, (unsigned long)pmi_debugctl);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1);
}

/*
 * Branch Trace Store (SDM Vol. 3B 17.4.5, 17.4.9 "BTS and DS Save Area",
 * 17.4.9.1 (IA-32e mode DS save area), 17.4.9.3 "Setting Up the BTS
 * Buffer", Table 17-6 "CPL-Qualified Branch Trace Store Encodings";
 * 18.7.8 in older editions).  CPUID.1:EDX.DS[21] says the DS save area
 * exists, CPUID.1:ECX.DTES64[2] that it has the 64-bit layout and
 * CPUID.1:ECX.DS-CPL[4] that BTS_OFF_OS and BTS_OFF_USR exist;
 * IA32_MISC_ENABLE.BTS_UNAVAILABLE[11] is clear.  IA32_DS_AREA holds the
 * linear address of the buffer management area: BTS buffer base, BTS
 * index, BTS absolute maximum and BTS interrupt threshold, 8 bytes each,
 * then the PEBS fields.  With IA32_DEBUGCTL.TR[6] and BTS[7], each taken
 * branch, interrupt and exception is a branch trace message stored as a
 * 24-byte record at the BTS index: the address of the branch (or of the
 * instruction at which the interrupt or exception was taken), the
 * target (the handler's first instruction), and flags whose bit 4 says
 * the branch was predicted; the index moves by 24.  BTS_OFF_OS[9]
 * skips the BTMs of CPL 0, BTS_OFF_USR[10] those of CPL > 0.  A record
 * is stored only if it fits below the absolute maximum; once the index
 * has no room for another, BTINT[8] clear makes the buffer circular
 * (the index goes back to the base), BTINT set leaves it full and later
 * BTMs are dropped until software moves the index (17.4.9.5: "The
 * processor will not disable the DS save area when the buffer is full
 * and the circular mode has not been selected"; that nothing is written
 * past the maximum is the model's rule).  A store that leaves the index
 * at or beyond the interrupt threshold requests the DS interrupt, the
 * PMI of the LVT performance counter entry, with no
 * IA32_PERF_GLOBAL_STATUS bit
 * (17.4.9.5: "BTS ... buffer overflow would be the sources of the
 * interrupt if the buffer index matches/exceeds the interrupt
 * threshold"); a threshold beyond the maximum never does (17.4.9.3's
 * note).  Linux (arch/x86/events/intel/ds.c) lays the buffer out as
 * here: absolute maximum = base + n * 24, records read from the base
 * up to the index.
 *
 * Every expected record below is the from and to of a label of the
 * listing that runs; the expected slot and index values follow from the
 * rules above, by hand.
 */
#define DEBUGCTL_TR             BIT(6)
#define DEBUGCTL_BTS            BIT(7)
#define DEBUGCTL_BTINT          BIT(8)
#define DEBUGCTL_BTS_OFF_OS     BIT(9)
#define DEBUGCTL_BTS_OFF_USR    BIT(10)
#define CPUID_1_ECX_DTES64      BIT(2)
#define CPUID_1_ECX_DS_CPL      BIT(4)
#define CPUID_1_EDX_DS          BIT(21)
#define BTS_PREDICTED           BIT(4)
#define BTS_RECORD              24
#define BTS_SLOTS               16
#define BTS_FILL                0x5a5a5a5a00000000ull
#define MSR_STAR                0xc0000081
#define MSR_LSTAR               0xc0000082
#define MSR_SFMASK              0xc0000084
#define EFER_SCE                BIT(0)

struct bts_record {
    u64 from, to, flags;
};

struct bts_want {
    unsigned long from, to;
};

static struct bts_record bts_buf[BTS_SLOTS] __attribute__((aligned(64)));
/* the 64-bit DS buffer management area, and what follows it */
static u64 bts_ds[16] __attribute__((aligned(64)));
static u64 bts_ustack[64] __attribute__((aligned(16)));
static u64 bts_ksave;

/*
 * Fill the buffer and the DS area with a pattern, then BTS buffer base
 * and index := bts_buf, absolute maximum := @max records past it,
 * interrupt threshold := @thr records past it; IA32_DS_AREA := bts_ds
 */
static void bts_setup(u64 max, u64 thr)
{
    u64 *w = (u64 *)bts_buf;
    u64 base = (u64)bts_buf;
    unsigned i;

    for (i = 0; i < 3 * BTS_SLOTS; i++) {
        w[i] = BTS_FILL | i;
    }
    for (i = 0; i < 16; i++) {
        bts_ds[i] = BTS_FILL | 0x100 | i;
    }
    bts_ds[0] = base;
    bts_ds[1] = base;
    bts_ds[2] = base + max * BTS_RECORD;
    bts_ds[3] = base + thr * BTS_RECORD;
    wrmsr(MSR_IA32_DS_AREA, (u64)bts_ds);
}

/* the BTS index, in records from the base */
/* 5 GiB: no page-table entry maps it */
#define BTS_UNMAPPED            0x140000000ull

/* Whether the buffer still holds what bts_setup filled it with */
static bool bts_untouched(void)
{
    u64 *w = (u64 *)bts_buf;
    unsigned i;

    for (i = 0; i < 3 * BTS_SLOTS; i++) {
        if (w[i] != (BTS_FILL | i)) {
            return false;
        }
    }
    return true;
}

static long bts_index(void)
{
    return ((long)bts_ds[1] - (long)bts_buf) / BTS_RECORD;
}

/*
 * Slots 0 to @n - 1 hold @want's records (no flag but "predicted"),
 * the slots after them and the DS area but its index are as bts_setup
 * left them, and the index is @idx records past the base: the number of
 * differences, the first one's slot in *@first
 */
static unsigned bts_diff(const struct bts_want *want, unsigned n, long idx,
                         u64 max, u64 thr, unsigned *first)
{
    const u64 *w = (const u64 *)bts_buf;
    unsigned i, bad = 0;

    *first = ~0u;
    for (i = 0; i < n; i++) {
        if (bts_buf[i].from != want[i].from || bts_buf[i].to != want[i].to ||
            (bts_buf[i].flags & ~(u64)BTS_PREDICTED)) {
            bad++;
            *first = *first == ~0u ? i : *first;
        }
    }
    for (i = 3 * n; i < 3 * BTS_SLOTS; i++) {
        if (w[i] != (BTS_FILL | i)) {
            bad++;
            *first = *first == ~0u ? i / 3 : *first;
        }
    }
    bad += bts_index() != idx;
    bad += bts_ds[0] != (u64)bts_buf;
    bad += bts_ds[2] != (u64)bts_buf + max * BTS_RECORD;
    bad += bts_ds[3] != (u64)bts_buf + thr * BTS_RECORD;
    for (i = 4; i < 16; i++) {
        bad += bts_ds[i] != (BTS_FILL | 0x100 | i);
    }
    return bad;
}

static void bts_report(const char *what, const struct bts_want *want,
                       unsigned n, long idx, u64 max, u64 thr)
{
    unsigned first, bad = bts_diff(want, n, idx, max, thr, &first);
    unsigned s = first < BTS_SLOTS ? first : 0;

    report(!bad, "BTS: %s - expect %u records, index at record %ld, "
           "nothing else written (got %u differences, index %ld; slot %u: "
           "%lx -> %lx flags %lx)", what, n, idx, bad, bts_index(), s,
           (unsigned long)bts_buf[s].from, (unsigned long)bts_buf[s].to,
           (unsigned long)bts_buf[s].flags);
}

/*
 * bts_seq: DEBUGCTL := @debugctl, then a JMP, a JE taken, a JNE not
 * taken, a CALL, its RET, an indirect JMP, INT $0x42 to bts_isr, which
 * IRETQs, a UD2 whose #UD goes to bts_udh, which skips it and IRETQs,
 * and a JMP to the WRMSR that clears DEBUGCTL: 10 BTMs, all at CPL 0.
 */
extern char bts_j1[], bts_a[], bts_j2[], bts_b[], bts_j3[], bts_c[];
extern char bts_j4[], bts_d[], bts_int[], bts_after[], bts_ud[];
extern char bts_ud_after[], bts_j6[], bts_f[], bts_isr[], bts_udh[];
extern char bts_udiret[], bts_end[];

static void __attribute__((noinline, noclone)) bts_seq(u64 debugctl)
{
    asm volatile("lea bts_d(%%rip), %%rsi\n\t"
                 "mov $0x1d9, %%ecx\n\t"
                 "mov %[on], %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n"
                 "bts_j1: jmp bts_a\n"
                 "bts_a: cmp %%eax, %%eax\n"
                 "bts_j2: je bts_b\n\t"
                 "ud2\n"
                 "bts_b: jne bts_never\n"
                 "bts_j3: call bts_f\n"
                 "bts_c: nop\n"
                 "bts_j4: jmp *%%rsi\n\t"
                 "ud2\n"
                 "bts_d: nop\n"
                 "bts_int: int $0x42\n"
                 "bts_after: nop\n"
                 "bts_ud: ud2\n"
                 "bts_ud_after: nop\n"
                 "bts_j6: jmp bts_end\n"
                 "bts_f: ret\n"
                 "bts_isr: iretq\n"
                 "bts_udh: addq $2, (%%rsp)\n"
                 "bts_udiret: iretq\n"
                 "bts_never: ud2\n"
                 "bts_end: mov $0x1d9, %%ecx\n\t"
                 "xor %%eax, %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr"
                 : : [on] "r"((u32)debugctl)
                 : "rax", "rcx", "rdx", "rsi", "memory", "cc");
}

/*
 * bts_chain: DEBUGCTL := @debugctl, an indirect JMP to bts_c[8 - @n],
 * then the chain of JMPs, each to the next label, to bts_c7, the WRMSR
 * that clears DEBUGCTL: @n branches (1 to 8), each to its own target.
 */
extern char bts_cj[], bts_c0[], bts_c1[], bts_c2[], bts_c3[], bts_c4[];
extern char bts_c5[], bts_c6[], bts_c7[];

static void __attribute__((noinline, noclone)) bts_chain(u64 debugctl,
                                                         unsigned long tgt)
{
    asm volatile("mov $0x1d9, %%ecx\n\t"
                 "mov %[on], %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n"
                 "bts_cj: jmp *%[tgt]\n"
                 "bts_c0: jmp bts_c1\n"
                 "bts_c1: jmp bts_c2\n"
                 "bts_c2: jmp bts_c3\n"
                 "bts_c3: jmp bts_c4\n"
                 "bts_c4: jmp bts_c5\n"
                 "bts_c5: jmp bts_c6\n"
                 "bts_c6: jmp bts_c7\n"
                 "bts_c7: mov $0x1d9, %%ecx\n\t"
                 "xor %%eax, %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr"
                 : : [on] "r"((u32)debugctl), [tgt] "r"(tgt)
                 : "rax", "rcx", "rdx", "memory", "cc");
}

/* the @n records of bts_chain(@n), oldest first, into @want */
static void bts_chain_want(unsigned n, struct bts_want *want)
{
    const unsigned long c[8] = {
        (unsigned long)bts_c0, (unsigned long)bts_c1, (unsigned long)bts_c2,
        (unsigned long)bts_c3, (unsigned long)bts_c4, (unsigned long)bts_c5,
        (unsigned long)bts_c6, (unsigned long)bts_c7,
    };
    unsigned k = 8 - n, i;

    want[0] = (struct bts_want){ (unsigned long)bts_cj, c[k] };
    for (i = 1; i < n; i++) {
        want[i] = (struct bts_want){ c[k + i - 1], c[k + i] };
    }
}

static void bts_run_chain(u64 debugctl, unsigned n)
{
    const unsigned long c[8] = {
        (unsigned long)bts_c0, (unsigned long)bts_c1, (unsigned long)bts_c2,
        (unsigned long)bts_c3, (unsigned long)bts_c4, (unsigned long)bts_c5,
        (unsigned long)bts_c6, (unsigned long)bts_c7,
    };

    bts_chain(debugctl, c[8 - n]);
}

/*
 * bts_loop: DEBUGCTL := TR | BTS, 8 iterations of DEC/JNZ, DEBUGCTL := 0:
 * 7 BTMs of the JNZ back to bts_l.  The predictor model (SDM: "Branch
 * predicted") predicts the JNZ taken from its third iteration whatever
 * its counter was (docs/branch-predictor.md: two taken outcomes bring
 * any counter to 2 or more).
 */
extern char bts_l[], bts_lj[];

static void __attribute__((noinline, noclone)) bts_loop(void)
{
    asm volatile("mov $8, %%ebx\n\t"
                 "mov $0x1d9, %%ecx\n\t"
                 "mov %[on], %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n"
                 "bts_l: dec %%ebx\n"
                 "bts_lj: jnz bts_l\n\t"
                 "mov $0x1d9, %%ecx\n\t"
                 "xor %%eax, %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr"
                 : : [on] "r"((u32)(DEBUGCTL_TR | DEBUGCTL_BTS))
                 : "rax", "rbx", "rcx", "rdx", "memory", "cc");
}

/*
 * bts_user: DEBUGCTL := @debugctl at CPL 0, IRETQ (bts_kiret) to CPL 3
 * at bts_u0 with interrupts off, a JMP, a CALL, its RET and a UD2 at
 * CPL 3, whose #UD goes to bts_kent at CPL 0 (a raw IDT entry), which
 * clears DEBUGCTL before any branch and returns to the kernel's stack
 * and segments: 5 BTMs, the IRETQ taken at CPL 0, the other 4 at CPL 3.
 */
extern char bts_kiret[], bts_u0[], bts_u1[], bts_u2[], bts_uf[], bts_kent[];

static void __attribute__((noinline, noclone)) bts_user(u64 debugctl)
{
    asm volatile("mov %%rsp, %[ks]\n\t"
                 "mov $0x1d9, %%ecx\n\t"
                 "mov %[on], %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n\t"
                 "pushq %[uds]\n\t"
                 "push %[top]\n\t"
                 "pushq $2\n\t"
                 "pushq %[ucs]\n\t"
                 "lea bts_u0(%%rip), %%rax\n\t"
                 "push %%rax\n\t"
                 "mov %[uds], %%eax\n\t"
                 "mov %%eax, %%ds\n\t"
                 "mov %%eax, %%es\n"
                 "bts_kiret: iretq\n"
                 "bts_u0: jmp bts_u1\n"
                 "bts_u1: call bts_uf\n"
                 "bts_u2: ud2\n"
                 "bts_uf: ret\n"
                 "bts_kent: mov $0x1d9, %%ecx\n\t"
                 "xor %%eax, %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n\t"
                 "mov %[kds], %%eax\n\t"
                 "mov %%eax, %%ds\n\t"
                 "mov %%eax, %%es\n\t"
                 "mov %%eax, %%ss\n\t"
                 "mov %[ks], %%rsp"
                 : [ks] "+m"(bts_ksave)
                 : [on] "r"((u32)debugctl),
                   [top] "r"(&bts_ustack[ARRAY_SIZE(bts_ustack)]),
                   [uds] "i"(USER_DS), [ucs] "i"(USER_CS),
                   [kds] "i"(KERNEL_DS)
                 : "rax", "rcx", "rdx", "memory", "cc");
}

/*
 * bts_irq_seq: DEBUGCTL := TR | BTS, a JMP, STI, a NOP in its shadow,
 * then the self-IPI left pending (vector 0x43, a raw IDT entry at
 * bts_irqh, which writes the EOI and IRETQs) is taken at bts_h3; CLI,
 * a JMP to the WRMSR that clears DEBUGCTL: 4 BTMs, the interrupt's from
 * bts_h3, where it was taken, to bts_irqh.
 */
extern char bts_h0[], bts_h1[], bts_h3[], bts_h4[], bts_h5[];
extern char bts_irqh[], bts_irqiret[];

static void __attribute__((noinline, noclone)) bts_irq_seq(void)
{
    asm volatile("mov $0x1d9, %%ecx\n\t"
                 "mov %[on], %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n"
                 "bts_h0: jmp bts_h1\n"
                 "bts_h1: sti\n\t"
                 "nop\n"
                 "bts_h3: nop\n\t"
                 "cli\n"
                 "bts_h4: jmp bts_h5\n"
                 "bts_irqh: push %%rax\n\t"
                 "mov %[eoi], %%eax\n\t"
                 "movl $0, (%%rax)\n\t"
                 "pop %%rax\n"
                 "bts_irqiret: iretq\n"
                 "bts_h5: mov $0x1d9, %%ecx\n\t"
                 "xor %%eax, %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr"
                 : : [on] "r"((u32)(DEBUGCTL_TR | DEBUGCTL_BTS)),
                   [eoi] "i"(APIC_BASE + APIC_EOI)
                 : "rax", "rcx", "rdx", "memory", "cc");
}

/*
 * bts_sys_seq: DEBUGCTL := TR | BTS, SYSCALL at CPL 0 (IA32_STAR's
 * SYSCALL CS the kernel's, IA32_LSTAR bts_sysh, which returns with an
 * indirect JMP through RCX), a JMP to the WRMSR that clears DEBUGCTL:
 * 3 BTMs.
 */
extern char bts_s0[], bts_s1[], bts_s2[], bts_sysh[];

static void __attribute__((noinline, noclone)) bts_sys_seq(void)
{
    asm volatile("mov $0x1d9, %%ecx\n\t"
                 "mov %[on], %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr\n"
                 "bts_s0: syscall\n"
                 "bts_s1: jmp bts_s2\n"
                 "bts_sysh: jmp *%%rcx\n"
                 "bts_s2: mov $0x1d9, %%ecx\n\t"
                 "xor %%eax, %%eax\n\t"
                 "xor %%edx, %%edx\n\t"
                 "wrmsr"
                 : : [on] "r"((u32)(DEBUGCTL_TR | DEBUGCTL_BTS))
                 : "rax", "rcx", "rdx", "r11", "memory", "cc");
}

/* take a PMI left pending while interrupts were off: the count so far */
static unsigned bts_pending_pmis(void)
{
    asm volatile("sti\n\t"
                 "nop\n\t"
                 "cli" : : : "memory");
    return pmi_count;
}

static void bts_pmi_arm(void)
{
    apic_write(APIC_LVTPC, PMI_VECTOR);
    pmi_count = 0;
    pmi_rip = 0;
    pmi_status = ~0ull;
}

static void test_bts(void)
{
    const u64 tr_bts = DEBUGCTL_TR | DEBUGCTL_BTS;
    const struct bts_want seq[10] = {
        { (unsigned long)bts_j1, (unsigned long)bts_a },
        { (unsigned long)bts_j2, (unsigned long)bts_b },
        { (unsigned long)bts_j3, (unsigned long)bts_f },
        { (unsigned long)bts_f, (unsigned long)bts_c },
        { (unsigned long)bts_j4, (unsigned long)bts_d },
        { (unsigned long)bts_int, (unsigned long)bts_isr },
        { (unsigned long)bts_isr, (unsigned long)bts_after },
        { (unsigned long)bts_ud, (unsigned long)bts_udh },
        { (unsigned long)bts_udiret, (unsigned long)bts_ud_after },
        { (unsigned long)bts_j6, (unsigned long)bts_end },
    };
    const struct bts_want user[5] = {
        { (unsigned long)bts_kiret, (unsigned long)bts_u0 },
        { (unsigned long)bts_u0, (unsigned long)bts_u1 },
        { (unsigned long)bts_u1, (unsigned long)bts_uf },
        { (unsigned long)bts_uf, (unsigned long)bts_u2 },
        { (unsigned long)bts_u2, (unsigned long)bts_kent },
    };
    const struct bts_want sys[3] = {
        { (unsigned long)bts_s0, (unsigned long)bts_sysh },
        { (unsigned long)bts_sysh, (unsigned long)bts_s1 },
        { (unsigned long)bts_s1, (unsigned long)bts_s2 },
    };
    const struct bts_want irq[4] = {
        { (unsigned long)bts_h0, (unsigned long)bts_h1 },
        { (unsigned long)bts_h3, (unsigned long)bts_irqh },
        { (unsigned long)bts_irqiret, (unsigned long)bts_h3 },
        { (unsigned long)bts_h4, (unsigned long)bts_h5 },
    };
    static const u64 ctl_bits[] = {
        DEBUGCTL_TR, DEBUGCTL_BTS, DEBUGCTL_BTINT, DEBUGCTL_BTS_OFF_OS,
        DEBUGCTL_BTS_OFF_USR, DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_BTINT |
        DEBUGCTL_BTS_OFF_OS | DEBUGCTL_BTS_OFF_USR,
    };
    struct bts_want want[8], w[8];
    struct cpuid c = cpuid(1);
    u64 v = 0, all = BTS_SLOTS, never = BTS_SLOTS + 1;
    u64 efer, star, lstar, sfmask;
    unsigned i, bad, pred, pmis;
    bool kept;

    report((c.d & CPUID_1_EDX_DS) && (c.c & CPUID_1_ECX_DTES64) &&
           (c.c & CPUID_1_ECX_DS_CPL), "CPUID.1: EDX.DS[21], ECX.DTES64[2], "
           "ECX.DS-CPL[4] - expect set (got ECX %x EDX %x)", c.c, c.d);

    /* IA32_DS_AREA: 0 at RESET, any canonical address, #GP otherwise */
    kept = !rdmsr_safe(MSR_IA32_DS_AREA, &v);
    report(kept && v == 0, "IA32_DS_AREA after RESET - expect 0 (got %lx)",
           (unsigned long)v);
    kept = !wrmsr_safe(MSR_IA32_DS_AREA, 0xffff800000001000ull) &&
           !rdmsr_safe(MSR_IA32_DS_AREA, &v);
    report(kept && v == 0xffff800000001000ull,
           "IA32_DS_AREA := 0xffff800000001000 - expect kept (got %lx)",
           (unsigned long)v);
    kept = wrmsr_safe(MSR_IA32_DS_AREA, 0x0000800000000000ull) == GP_VECTOR &&
           wrmsr_safe(MSR_IA32_DS_AREA, 0x8000000000001000ull) == GP_VECTOR &&
           !rdmsr_safe(MSR_IA32_DS_AREA, &v);
    report(kept && v == 0xffff800000001000ull,
           "IA32_DS_AREA := 0x800000000000, 0x8000000000001000 (not "
           "canonical) - expect #GP, the MSR unchanged (got %lx)",
           (unsigned long)v);

    /*
     * DEBUGCTL's branch trace flags read back.  None of these values
     * stores a BTM (TR = 0, or BTS = 0, or both BTS_OFF bits): Table 17-6
     */
    bts_setup(all, never);
    kept = true;
    for (i = 0; i < ARRAY_SIZE(ctl_bits); i++) {
        kept &= !wrmsr_safe(MSR_IA32_DEBUGCTL, ctl_bits[i]) &&
                !rdmsr_safe(MSR_IA32_DEBUGCTL, &v) && v == ctl_bits[i];
    }
    wrmsr(MSR_IA32_DEBUGCTL, 0);
    report(kept, "DEBUGCTL := TR, BTS, BTINT, BTS_OFF_OS, BTS_OFF_USR, each "
           "alone and all five - expect each kept (got %lx)",
           (unsigned long)v);
    bts_report("those DEBUGCTL values (TR or BTS clear, or both BTS_OFF)",
               want, 0, 0, all, never);

    /* the listing's 10 BTMs, in order; the JNE not taken makes none */
    set_raw_handler(0x42, (unsigned long)bts_isr);
    set_raw_handler(UD_VECTOR, (unsigned long)bts_udh);
    bts_setup(all, never);
    bts_seq(tr_bts);
    bts_report("TR | BTS over JMP, JE, JNE not taken, CALL, RET, JMP *, "
               "INT $0x42, IRETQ, #UD, IRETQ, JMP", seq, 10, 10, all, never);
    bts_setup(all, never);
    bts_seq(tr_bts | DEBUGCTL_BTS_OFF_USR);
    bts_report("TR | BTS | BTS_OFF_USR over the same at CPL 0", seq, 10, 10,
               all, never);
    bts_setup(all, never);
    bts_seq(tr_bts | DEBUGCTL_BTS_OFF_OS);
    bts_report("TR | BTS | BTS_OFF_OS over the same at CPL 0", want, 0, 0,
               all, never);
    bts_setup(all, never);
    bts_seq(DEBUGCTL_TR);
    bts_report("TR without BTS (BTMs, not stored)", want, 0, 0, all, never);
    bts_setup(all, never);
    bts_seq(DEBUGCTL_BTS | DEBUGCTL_BTINT);
    bts_report("BTS | BTINT without TR (no BTMs)", want, 0, 0, all, never);
    /*
     * DS area faults (choice 73): a buffer, or a DS save area, that is
     * not mapped drops every message; nothing is written and no fault
     * is raised (a #PF here would end the test)
     */
    bts_setup(all, never);
    bts_ds[0] = bts_ds[1] = BTS_UNMAPPED;
    bts_ds[2] = BTS_UNMAPPED + all * BTS_RECORD;
    bts_ds[3] = BTS_UNMAPPED + never * BTS_RECORD;
    bts_seq(tr_bts);
    report(bts_ds[1] == BTS_UNMAPPED && bts_untouched(),
           "BTS: the buffer at %lx, not mapped, over the listing - expect "
           "its 10 messages dropped, the index unchanged and the buffer "
           "here untouched (got index %lx)", (unsigned long)BTS_UNMAPPED,
           (unsigned long)bts_ds[1]);
    bts_setup(all, never);
    wrmsr(MSR_IA32_DS_AREA, BTS_UNMAPPED);
    bts_seq(tr_bts);
    report(bts_ds[1] == (u64)bts_buf && bts_untouched(),
           "BTS: IA32_DS_AREA %lx, not mapped, over the listing - expect "
           "the messages dropped and nothing written (got the index of the "
           "area it had %lx)", (unsigned long)BTS_UNMAPPED,
           (unsigned long)bts_ds[1]);
    set_raw_handler(0x42, 0);
    set_raw_handler(UD_VECTOR, 0);

    /* the flags: only bit 4, and set once the predictor has the JNZ */
    bts_setup(all, never);
    bts_loop();
    for (i = 0; i < 7; i++) {
        want[i] = (struct bts_want){ (unsigned long)bts_lj,
                                     (unsigned long)bts_l };
    }
    bts_report("8 iterations of DEC/JNZ, the 7 JNZ taken", want, 7, 7, all,
               never);
    pred = 0;
    for (i = 2; i < 7; i++) {
        pred += !!(bts_buf[i].flags & BTS_PREDICTED);
    }
    report(pred == 5, "BTS: the JNZ's 3rd to 7th records - expect flags bit "
           "4, predicted (got %u of 5; flags %lx %lx %lx %lx %lx %lx %lx)",
           pred, (unsigned long)bts_buf[0].flags,
           (unsigned long)bts_buf[1].flags, (unsigned long)bts_buf[2].flags,
           (unsigned long)bts_buf[3].flags, (unsigned long)bts_buf[4].flags,
           (unsigned long)bts_buf[5].flags, (unsigned long)bts_buf[6].flags);

    /* SYSCALL */
    efer = rdmsr(MSR_EFER);
    star = rdmsr(MSR_STAR);
    lstar = rdmsr(MSR_LSTAR);
    sfmask = rdmsr(MSR_SFMASK);
    wrmsr(MSR_STAR, (u64)KERNEL_CS << 32);
    wrmsr(MSR_LSTAR, (unsigned long)bts_sysh);
    wrmsr(MSR_SFMASK, 0);
    wrmsr(MSR_EFER, efer | EFER_SCE);
    bts_setup(all, never);
    bts_sys_seq();
    wrmsr(MSR_EFER, efer);
    wrmsr(MSR_STAR, star);
    wrmsr(MSR_LSTAR, lstar);
    wrmsr(MSR_SFMASK, sfmask);
    bts_report("SYSCALL at CPL 0, JMP *%rcx back, JMP", sys, 3, 3, all,
               never);

    /* CPL 3: BTS_OFF_OS and BTS_OFF_USR by the CPL the branch is taken at */
    set_raw_handler(UD_VECTOR, (unsigned long)bts_kent);
    bts_setup(all, never);
    bts_user(tr_bts);
    bts_report("TR | BTS: IRETQ to CPL 3, JMP, CALL, RET, #UD at CPL 3",
               user, 5, 5, all, never);
    bts_setup(all, never);
    bts_user(tr_bts | DEBUGCTL_BTS_OFF_OS);
    bts_report("TR | BTS | BTS_OFF_OS: the 4 BTMs taken at CPL 3", user + 1,
               4, 4, all, never);
    bts_setup(all, never);
    bts_user(tr_bts | DEBUGCTL_BTS_OFF_USR);
    bts_report("TR | BTS | BTS_OFF_USR: the IRETQ taken at CPL 0", user, 1,
               1, all, never);
    bts_setup(all, never);
    bts_user(tr_bts | DEBUGCTL_BTS_OFF_OS | DEBUGCTL_BTS_OFF_USR);
    bts_report("TR | BTS | BTS_OFF_OS | BTS_OFF_USR at CPL 0 and 3", want, 0,
               0, all, never);
    set_raw_handler(UD_VECTOR, 0);

    enable_apic();
    handle_irq(PMI_VECTOR, pmi_handler);
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 0x70000000full);

    /* a hardware interrupt: from where it was taken to its handler */
    set_raw_handler(0x43, (unsigned long)bts_irqh);
    bts_setup(all, never);
    apic_write(APIC_ICR, APIC_DEST_SELF | 0x43);
    bts_irq_seq();
    set_raw_handler(0x43, 0);
    bts_report("JMP, STI, NOP, the self-IPI at bts_h3, IRETQ, JMP", irq, 4,
               4, all, never);

    /*
     * Circular (BTINT = 0), room for 3 records, the threshold beyond the
     * maximum: 5 BTMs.  1-3 fill slots 0-2; after the 3rd the index
     * (3 records) has no room for another and goes back to the base;
     * 4 and 5 go to slots 0 and 1, the index to 2.  No PMI.
     */
    bts_setup(3, 4);
    bts_pmi_arm();
    bts_run_chain(tr_bts, 5);
    bts_chain_want(5, w);
    want[0] = w[3];
    want[1] = w[4];
    want[2] = w[2];
    bts_report("circular, room for 3, 5 BTMs: 4, 5, 3 in slots 0-2", want,
               3, 2, 3, 4);
    pmis = bts_pending_pmis();
    report(pmis == 0, "BTS: ... threshold beyond the maximum "
           "- expect no PMI (got %u)", pmis);
    /* 6 BTMs: 4, 5, 6 in slots 0-2, and the index back at the base */
    bts_setup(3, 4);
    bts_run_chain(tr_bts, 6);
    bts_chain_want(6, w);
    bts_report("circular, room for 3, 6 BTMs: 4, 5, 6", w + 3, 3, 0, 3, 4);

    /*
     * Circular with the threshold at 2 records: the 2nd store leaves the
     * index at the threshold, a PMI (taken once interrupts are on), with
     * no GLOBAL_STATUS bit
     */
    bts_setup(3, 2);
    bts_pmi_arm();
    bts_run_chain(tr_bts, 2);
    bts_chain_want(2, w);
    bts_report("circular, threshold at record 2, 2 BTMs", w, 2, 2, 3, 2);
    pmis = bts_pending_pmis();
    report(pmis == 1 && pmi_status == 0,
           "BTS: ... index at the threshold, BTINT = 0 - expect one PMI, "
           "GLOBAL_STATUS 0 (got %u, status %lx)", pmis,
           (unsigned long)pmi_status);
    bts_setup(3, 2);
    bts_pmi_arm();
    bts_run_chain(tr_bts, 1);
    pmis = bts_pending_pmis();
    report(pmis == 0 && bts_index() == 1,
           "BTS: ... 1 BTM, index below the threshold - expect no PMI (got "
           "%u, index %ld)", pmis, bts_index());

    /*
     * BTINT = 1, room for 3, threshold at 2, interrupts off: 5 BTMs.
     * 1 and 2 stored (the 2nd reaches the threshold: PMI), 3 stored (the
     * index 3, still at or beyond it: PMI again, and full), 4 and 5
     * dropped.  The interrupt is taken once: the two requests come
     * before it is delivered.
     */
    bts_setup(3, 2);
    bts_pmi_arm();
    bts_run_chain(tr_bts | DEBUGCTL_BTINT, 5);
    bts_chain_want(5, w);
    bts_report("BTINT, room for 3, threshold at 2, 5 BTMs: 1-3, then full",
               w, 3, 3, 3, 2);
    pmis = bts_pending_pmis();
    report(pmis == 1 && pmi_status == 0,
           "BTS: ... BTINT, index at and beyond the threshold - expect one "
           "PMI, GLOBAL_STATUS 0 (got %u, status %lx)", pmis,
           (unsigned long)pmi_status);
    /* full: nothing stored until software moves the index */
    bts_pmi_arm();
    bts_run_chain(tr_bts | DEBUGCTL_BTINT, 2);
    bts_report("BTINT, the buffer full, 2 more BTMs: dropped", w, 3, 3, 3, 2);
    pmis = bts_pending_pmis();
    report(pmis == 0, "BTS: ... no store, no PMI (got %u)", pmis);
    bts_ds[1] = (u64)bts_buf;
    bts_run_chain(tr_bts | DEBUGCTL_BTINT, 1);
    bts_chain_want(1, want);
    want[1] = w[1];
    want[2] = w[2];
    bts_report("BTINT, the index moved back to the base, 1 BTM: in slot 0",
               want, 3, 1, 3, 2);
    pmis = bts_pending_pmis();
    report(pmis == 0, "BTS: ... index 1, below the threshold "
           "- expect no PMI (got %u)", pmis);

    /* the threshold exactly: 3 records below it, then at it */
    bts_setup(4, 3);
    bts_pmi_arm();
    bts_run_chain(tr_bts | DEBUGCTL_BTINT, 2);
    pmis = bts_pending_pmis();
    report(pmis == 0 && bts_index() == 2,
           "BTS: BTINT, threshold at 3, 2 BTMs - expect no PMI (got %u, "
           "index %ld)", pmis, bts_index());
    bts_setup(4, 3);
    bts_pmi_arm();
    bts_run_chain(tr_bts | DEBUGCTL_BTINT, 3);
    pmis = bts_pending_pmis();
    report(pmis == 1 && bts_index() == 3,
           "BTS: BTINT, threshold at 3, 3 BTMs - expect one PMI (got %u, "
           "index %ld)", pmis, bts_index());

    /*
     * Interrupts on, BTINT, room for 3, threshold at 3: the 3rd BTM's
     * store fills the buffer and reaches the threshold, and the PMI comes
     * right after that branch, at its target bts_c5 (the PMI as the
     * counters' one, after the instruction that requested it).  Its
     * delivery, the handler's branches and the IRET find the buffer
     * full and store nothing, nor do BTMs 4 and 5.
     */
    bts_chain_want(5, w);
    bts_setup(3, 3);
    bts_pmi_arm();
    sti();
    bts_run_chain(tr_bts | DEBUGCTL_BTINT, 5);
    asm volatile("cli");
    bts_report("BTINT, interrupts on, room for 3, threshold at 3, 5 BTMs: "
               "1-3", w, 3, 3, 3, 3);
    report(pmi_count == 1 && pmi_rip == (unsigned long)bts_c5 &&
           pmi_status == 0,
           "BTS: ... one PMI, after the 3rd BTM, at its target %lx, "
           "GLOBAL_STATUS 0 (got %u, RIP %lx, status %lx)",
           (unsigned long)bts_c5, pmi_count, pmi_rip,
           (unsigned long)pmi_status);

    /*
     * No room for a record (maximum = base), threshold at the base: no
     * BTM is stored, and without a store no PMI is requested.  The SDM
     * leaves a maximum below base + 1 + 24 undefined (17.4.9.3's note);
     * this is the rule of the model: a record is stored only if index +
     * 24 <= maximum.
     */
    bts_setup(0, 0);
    bts_pmi_arm();
    bts_run_chain(tr_bts, 3);
    bts_report("circular, no room for a record (maximum = base), 3 BTMs",
               want, 0, 0, 0, 0);
    bts_setup(0, 0);
    bts_run_chain(tr_bts | DEBUGCTL_BTINT, 3);
    bts_report("BTINT, no room for a record, 3 BTMs", want, 0, 0, 0, 0);
    pmis = bts_pending_pmis();
    report(pmis == 0, "BTS: ... no store, no PMI (got %u)", pmis);

    bad = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS) != 0;
    report(!bad, "BTS: GLOBAL_STATUS after the BTS PMIs - expect 0 (got %lx)",
           (unsigned long)rdmsr(MSR_IA32_PERF_GLOBAL_STATUS));
    wrmsr(MSR_IA32_DEBUGCTL, 0);
    wrmsr(MSR_IA32_DS_AREA, 0);
    apic_write(APIC_LVTPC, PMI_VECTOR | APIC_LVT_MASKED);
    handle_irq(PMI_VECTOR, NULL);
}

/*
 * PEBS with Nehalem's record format 1 and its load latency facility (SDM
 * Vol. 3B, the Intel Core i7 sections "Processor Event Based Sampling
 * (PEBS)" and "Load Latency Performance Monitoring Facility"; "BTS and DS
 * Save Area" for the DS area), as the model's rules give them:
 * IA32_PEBS_ENABLE (3F1H) bits 0-3 PEBS_EN_PMC0-3 and 32-35 LL_EN_PMC0-3,
 * MSR_PEBS_LD_LAT_THRESHOLD (3F6H) bits 15:0, any other bit #GP; both 0
 * at RESET.  A general counter is a PEBS counter when its PEBS_EN bit is
 * set and its event is C0H, C4H, C5H, CBH or 0BH; when it overflows,
 * PEBS is armed for it and its next counted event is its PEBS event.
 * Right after the instruction with that event retires, the assist reads
 * the DS area (+20H base, +28H index, +30H absolute maximum, +38H
 * interrupt threshold, +40H + 8i counter i's reset value) and, if index +
 * 0B0H <= maximum, writes a 176-byte record at the index: RFLAGS, RIP (of
 * the next instruction to execute: a taken branch's target), RAX, RBX,
 * RCX, RDX, RSI, RDI, RBP, RSP, R8-R15 as that instruction left them,
 * IA32_PERF_GLOBAL_STATUS before the assist, and load latency's data
 * linear address, data source and latency; the index moves by 0B0H;
 * every PEBS counter whose overflow bit is set (or that is armed) is
 * loaded with its reset value (48 bits) and its bit cleared; if the index
 * is then at or beyond the threshold, GLOBAL_STATUS bit 62 (OvfBuffer)
 * and a PMI (whose RIP is the record's).  A record that does not fit (or
 * whose buffer is not mapped) is not written, nothing is reloaded, the
 * status bits stay and PEBS is disarmed.  Load latency (event 0BH umask
 * 10H) counts the loads whose latency, fixed by the cache model's level
 * that supplied them (L1 4, L2 10, L3 40, DRAM 200 cycles), is above the
 * threshold; the record's last three fields are those of the last load a
 * counter with its LL_EN bit counted (source L1 01H, L2 03H, L3 04H, DRAM
 * 0CH), 0 until one has.
 *
 * Every expected RIP below is a label of the listing that runs, every
 * register a value the listing sets, and every count follows from the
 * instructions, branches or loads of the listing, counted by hand as in
 * the tests above (the enabling WRMSR is not counted, the disabling one
 * is).
 */
#define PEBS_RECORD             0xb0
#define PEBS_SLOTS              8
#define PEBS_FIELDS             22
#define PEBS_FILL               0xa5a5a5a500000000ull
#define PEBS_MASK48             0xffffffffffffull
#define PEBS_OVF_BUFFER         (1ull << 62)
#define PEBS_OVF_ALL            0xe00000070000000full
#define PEBS_UNMAPPED           0x140000000ull  /* 5 GiB: no PDPT entry */
#define PEBS_DEBUGCTL_FREEZE    (1ull << 12)
/* the record's quadwords */
#define PR_FLAGS                0
#define PR_IP                   1
#define PR_AX                   2
#define PR_BX                   3
#define PR_CX                   4
#define PR_DX                   5
#define PR_SI                   6
#define PR_DI                   7
#define PR_BP                   8
#define PR_SP                   9
#define PR_R8                   10
#define PR_STATUS               18
#define PR_DLA                  19
#define PR_DSE                  20
#define PR_LAT                  21
/* the arithmetic flags and bit 1, with and without IF */
#define PEBS_RFLAGS             0x8d7ull
#define PEBS_RFLAGS_IF          0xad7ull

/* the value pebs_regs_asm gives register @i (RAX 0 ... R15 15, not RSP) */
#define PEBS_VAL(i)     (0x5eb5000000000000ull + (u64)(i) * 0x0101010101ull)
#define PEBS_VAL_ASM(i) "$0x5eb5000000000000 + " #i " * 0x0101010101"

struct pebs_record {
    u64 q[PEBS_FIELDS];
};

static const char *const pebs_field[PEBS_FIELDS] = {
    "RFLAGS", "RIP", "RAX", "RBX", "RCX", "RDX", "RSI", "RDI", "RBP", "RSP",
    "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15",
    "GLOBAL_STATUS", "data address", "data source", "latency",
};

static struct pebs_record pebs_buf[PEBS_SLOTS] __attribute__((aligned(64)));
static u64 pebs_ds[16] __attribute__((aligned(64)));
static u64 pebs_ds_set[16];
static unsigned pebs_msr_faults;

/*
 * pebs_regs_asm(rflags, enable): GLOBAL_CTRL := enable (not counted),
 * then 25 counted instructions, pebs_r1 to pebs_r25: PUSH RDI, POPFQ
 * (RFLAGS := @rflags), MOVABS of PEBS_VAL(i) into RAX, RBX, RCX, RDX,
 * RSI, RDI, RBP and R8-R15 (pebs_r3-r17), LEA -88H(RSP), RSP (pebs_r18),
 * 3 NOPs, then the disabling MOV, XOR, XOR, WRMSR (pebs_r22-r25).
 * pebs_r_tab[k - 1] is the address of instruction k (pebs_r26: the one
 * after the disabling WRMSR).  pebs_saved_rsp: RSP before pebs_r1.
 */
extern const unsigned long pebs_r_tab[26];
extern u64 pebs_saved_rsp;
void pebs_regs_asm(u64 rflags, u64 enable);
asm(".pushsection .text\n"
    ".globl pebs_regs_asm\n"
    "pebs_regs_asm:\n\t"
    "push %rbx\n\t"
    "push %rbp\n\t"
    "push %r12\n\t"
    "push %r13\n\t"
    "push %r14\n\t"
    "push %r15\n\t"
    "mov %rsp, pebs_saved_rsp(%rip)\n\t"
    "mov $0x38f, %ecx\n\t"
    "mov %esi, %eax\n\t"
    "xor %edx, %edx\n\t"
    "wrmsr\n"
    "pebs_r1: push %rdi\n"
    "pebs_r2: popfq\n"
    "pebs_r3: movabs " PEBS_VAL_ASM(0) ", %rax\n"
    "pebs_r4: movabs " PEBS_VAL_ASM(1) ", %rbx\n"
    "pebs_r5: movabs " PEBS_VAL_ASM(2) ", %rcx\n"
    "pebs_r6: movabs " PEBS_VAL_ASM(3) ", %rdx\n"
    "pebs_r7: movabs " PEBS_VAL_ASM(4) ", %rsi\n"
    "pebs_r8: movabs " PEBS_VAL_ASM(5) ", %rdi\n"
    "pebs_r9: movabs " PEBS_VAL_ASM(6) ", %rbp\n"
    "pebs_r10: movabs " PEBS_VAL_ASM(8) ", %r8\n"
    "pebs_r11: movabs " PEBS_VAL_ASM(9) ", %r9\n"
    "pebs_r12: movabs " PEBS_VAL_ASM(10) ", %r10\n"
    "pebs_r13: movabs " PEBS_VAL_ASM(11) ", %r11\n"
    "pebs_r14: movabs " PEBS_VAL_ASM(12) ", %r12\n"
    "pebs_r15: movabs " PEBS_VAL_ASM(13) ", %r13\n"
    "pebs_r16: movabs " PEBS_VAL_ASM(14) ", %r14\n"
    "pebs_r17: movabs " PEBS_VAL_ASM(15) ", %r15\n"
    "pebs_r18: lea -0x88(%rsp), %rsp\n"
    "pebs_r19: nop\n"
    "pebs_r20: nop\n"
    "pebs_r21: nop\n"
    "pebs_r22: mov $0x38f, %ecx\n"
    "pebs_r23: xor %eax, %eax\n"
    "pebs_r24: xor %edx, %edx\n"
    "pebs_r25: wrmsr\n"
    "pebs_r26: mov pebs_saved_rsp(%rip), %rsp\n\t"
    "pop %r15\n\t"
    "pop %r14\n\t"
    "pop %r13\n\t"
    "pop %r12\n\t"
    "pop %rbp\n\t"
    "pop %rbx\n\t"
    "ret\n"
    ".popsection\n"
    ".pushsection .data\n"
    ".balign 8\n"
    ".globl pebs_r_tab\n"
    "pebs_r_tab:\n\t"
    ".quad pebs_r1, pebs_r2, pebs_r3, pebs_r4, pebs_r5, pebs_r6\n\t"
    ".quad pebs_r7, pebs_r8, pebs_r9, pebs_r10, pebs_r11, pebs_r12\n\t"
    ".quad pebs_r13, pebs_r14, pebs_r15, pebs_r16, pebs_r17, pebs_r18\n\t"
    ".quad pebs_r19, pebs_r20, pebs_r21, pebs_r22, pebs_r23, pebs_r24\n\t"
    ".quad pebs_r25, pebs_r26\n"
    ".globl pebs_saved_rsp\n"
    "pebs_saved_rsp: .quad 0\n"
    ".popsection\n");

/*
 * pebs_br_asm(enable): GLOBAL_CTRL := enable, then 6 branches: JMP to
 * pebs_b1, JE taken to pebs_b2, JNE not taken (on to pebs_b3), CALL
 * pebs_bf, its RET to pebs_b4, JMP *RSI to pebs_b6; then the 4 disabling
 * instructions.  pebs_b_tab[k - 1]: where branch k goes.
 */
extern const unsigned long pebs_b_tab[6];
void pebs_br_asm(u64 enable);
asm(".pushsection .text\n"
    ".globl pebs_br_asm\n"
    "pebs_br_asm:\n\t"
    "mov %rsp, pebs_saved_rsp(%rip)\n\t"
    "lea pebs_b6(%rip), %rsi\n\t"
    "mov $0x38f, %ecx\n\t"
    "mov %edi, %eax\n\t"
    "xor %edx, %edx\n\t"
    "wrmsr\n\t"
    "jmp pebs_b1\n\t"
    "ud2\n"
    "pebs_b1: cmp %eax, %eax\n\t"
    "je pebs_b2\n\t"
    "ud2\n"
    "pebs_b2: jne pebs_bnever\n"
    "pebs_b3: call pebs_bf\n"
    "pebs_b4: jmp *%rsi\n\t"
    "ud2\n"
    "pebs_bf: ret\n"
    "pebs_bnever: ud2\n"
    "pebs_b6: mov $0x38f, %ecx\n\t"
    "xor %eax, %eax\n\t"
    "xor %edx, %edx\n\t"
    "wrmsr\n\t"
    "ret\n"
    ".popsection\n"
    ".pushsection .data\n"
    ".balign 8\n"
    ".globl pebs_b_tab\n"
    "pebs_b_tab: .quad pebs_b1, pebs_b2, pebs_b3, pebs_bf, pebs_b4, pebs_b6\n"
    ".popsection\n");

/*
 * pebs_loop_asm(enable, n): GLOBAL_CTRL := enable, then XOR EAX (1), MOV
 * RBX := n (2) and n iterations of INC RAX (pebs_li), DEC RBX (pebs_ld),
 * JNZ pebs_li (pebs_lj), then the 4 disabling instructions (pebs_le):
 * 3n + 6 counted.  Instruction t >= 3 is iteration (t - 3) / 3 + 1's
 * INC, DEC or JNZ as t % 3 is 0, 1 or 2; after it RAX is t / 3 and RBX
 * n - (t - 1) / 3.
 */
extern char pebs_li[], pebs_ld[], pebs_lj[], pebs_le[];
void pebs_loop_asm(u64 enable, u64 n);
asm(".pushsection .text\n"
    ".globl pebs_loop_asm, pebs_li, pebs_ld, pebs_lj, pebs_le\n"
    "pebs_loop_asm:\n\t"
    "push %rbx\n\t"
    "mov $0x38f, %ecx\n\t"
    "mov %edi, %eax\n\t"
    "xor %edx, %edx\n\t"
    "wrmsr\n\t"
    "xor %eax, %eax\n\t"
    "mov %rsi, %rbx\n"
    "pebs_li: inc %rax\n"
    "pebs_ld: dec %rbx\n"
    "pebs_lj: jnz pebs_li\n"
    "pebs_le: mov $0x38f, %ecx\n\t"
    "xor %eax, %eax\n\t"
    "xor %edx, %edx\n\t"
    "wrmsr\n\t"
    "pop %rbx\n\t"
    "ret\n"
    ".popsection\n");

/*
 * pebs_ll_asm(enable, buf, stride): R8-R15 := buf + 1..8 * stride,
 * WBINVD (the cache model empty), GLOBAL_CTRL := enable, then 16 counted
 * instructions, pebs_ll_tab[k - 1] the address of instruction k:
 *   1     MOV RAX := [buf + 18H]        line 0: DRAM
 *   2-9   MOV RBX := [buf + (k-1) * stride]  (through R8-R15): DRAM
 *   10    MOV RCX := [buf + 18H]        line 0 again
 *   11    MOV RDX := [buf + 20H]        line 0 again: L1
 *   12    NOP
 *   13-16 the disabling MOV, XOR, XOR, WRMSR
 * With stride 1000H (4 KiB), loads 2-9 are the 8 ways of L1's set of
 * line 0 after it, so load 10 misses L1 (LRU) and hits L2 (whose set of
 * line 0 has only line 8000H besides): L1D_HIT, L2_HIT, L3_MISS 1, 1, 9;
 * load latency above a threshold T: 11 for T < 4, 10 for 4 <= T < 10, 9
 * for 10 <= T < 200, 0 from 200.  With stride 8000H (32 KiB), they are
 * also the 8 ways of L2's set of line 0 (512 sets), in 8 other sets of
 * L3 (8192): load 10 misses L1 and L2 and hits L3: L1D_HIT,
 * L3_UNSHARED_HIT, L3_MISS 1, 1, 9; load latency above T: 11 for T < 4,
 * 10 for 4 <= T < 40, 9 for 40 <= T < 200.  pebs_saved_rsp: RSP at
 * instruction 1.
 */
extern const unsigned long pebs_ll_tab[17];
void pebs_ll_asm(u64 enable, void *buf, u64 stride);
asm(".pushsection .text\n"
    ".globl pebs_ll_asm\n"
    "pebs_ll_asm:\n\t"
    "push %rbx\n\t"
    "push %r12\n\t"
    "push %r13\n\t"
    "push %r14\n\t"
    "push %r15\n\t"
    "mov %rsp, pebs_saved_rsp(%rip)\n\t"
    "lea (%rsi,%rdx), %r8\n\t"
    "lea (%r8,%rdx), %r9\n\t"
    "lea (%r9,%rdx), %r10\n\t"
    "lea (%r10,%rdx), %r11\n\t"
    "lea (%r11,%rdx), %r12\n\t"
    "lea (%r12,%rdx), %r13\n\t"
    "lea (%r13,%rdx), %r14\n\t"
    "lea (%r14,%rdx), %r15\n\t"
    "wbinvd\n\t"
    "mov $0x38f, %ecx\n\t"
    "mov %edi, %eax\n\t"
    "xor %edx, %edx\n\t"
    "wrmsr\n"
    "pebs_ll1: mov 0x18(%rsi), %rax\n"
    "pebs_ll2: mov (%r8), %rbx\n"
    "pebs_ll3: mov (%r9), %rbx\n"
    "pebs_ll4: mov (%r10), %rbx\n"
    "pebs_ll5: mov (%r11), %rbx\n"
    "pebs_ll6: mov (%r12), %rbx\n"
    "pebs_ll7: mov (%r13), %rbx\n"
    "pebs_ll8: mov (%r14), %rbx\n"
    "pebs_ll9: mov (%r15), %rbx\n"
    "pebs_ll10: mov 0x18(%rsi), %rcx\n"
    "pebs_ll11: mov 0x20(%rsi), %rdx\n"
    "pebs_ll12: nop\n"
    "pebs_ll13: mov $0x38f, %ecx\n"
    "pebs_ll14: xor %eax, %eax\n"
    "pebs_ll15: xor %edx, %edx\n"
    "pebs_ll16: wrmsr\n"
    "pebs_ll17: pop %r15\n\t"
    "pop %r14\n\t"
    "pop %r13\n\t"
    "pop %r12\n\t"
    "pop %rbx\n\t"
    "ret\n"
    ".popsection\n"
    ".pushsection .data\n"
    ".balign 8\n"
    ".globl pebs_ll_tab\n"
    "pebs_ll_tab:\n\t"
    ".quad pebs_ll1, pebs_ll2, pebs_ll3, pebs_ll4, pebs_ll5, pebs_ll6\n\t"
    ".quad pebs_ll7, pebs_ll8, pebs_ll9, pebs_ll10, pebs_ll11, pebs_ll12\n\t"
    ".quad pebs_ll13, pebs_ll14, pebs_ll15, pebs_ll16, pebs_ll17\n"
    ".popsection\n");

/*
 * pebs_cmps_asm(enable, buf): RSI := RDI := buf + 18H, WBINVD,
 * GLOBAL_CTRL := enable, then MOV RAX := [RSI] (1: line 0 from DRAM),
 * CMPSQ (2, at pebs_c2: two loads of buf + 18H, both from L1; RSI and RDI
 * then buf + 20H), NOP (3, pebs_c3) and the 4 disabling instructions.
 */
extern char pebs_c3[];
void pebs_cmps_asm(u64 enable, void *buf);
asm(".pushsection .text\n"
    ".globl pebs_cmps_asm, pebs_c3\n"
    "pebs_cmps_asm:\n\t"
    "mov %edi, %eax\n\t"
    "lea 0x18(%rsi), %rdi\n\t"
    "lea 0x18(%rsi), %rsi\n\t"
    "mov %rsp, pebs_saved_rsp(%rip)\n\t"
    "wbinvd\n\t"
    "mov $0x38f, %ecx\n\t"
    "xor %edx, %edx\n\t"
    "wrmsr\n\t"
    "mov (%rsi), %rax\n"
    "pebs_c2: cmpsq\n"
    "pebs_c3: nop\n\t"
    "mov $0x38f, %ecx\n\t"
    "xor %eax, %eax\n\t"
    "xor %edx, %edx\n\t"
    "wrmsr\n\t"
    "ret\n"
    ".popsection\n");

/*
 * CPL 3, called by user_entry (cstart64.S) after its MOV, MOV, CALL
 * (instructions 1-3): MOV RAX := RSP (4), LEA -18H(RSP), RSP (5), MOVABS
 * RBX := PEBS_VAL(1) (6, pebs_u6), LEA 18H(RSP), RSP (7, pebs_u7), RET
 * (8), then user_entry's INT $USER_RET_VECTOR (9): 9 CPL 3 instructions.
 */
extern char pebs_u7[];
void pebs_user_fn(void *arg);
asm(".pushsection .text\n"
    ".globl pebs_user_fn, pebs_u7\n"
    "pebs_user_fn:\n\t"
    "mov %rsp, %rax\n\t"
    "lea -0x18(%rsp), %rsp\n"
    "pebs_u6: movabs " PEBS_VAL_ASM(1) ", %rbx\n"
    "pebs_u7: lea 0x18(%rsp), %rsp\n\t"
    "ret\n"
    ".popsection\n");

static void pebs_wrmsr(u32 msr, u64 val)
{
    pebs_msr_faults += !!wrmsr_safe(msr, val);
}

/*
 * The buffer and the DS area filled with a pattern; PEBS buffer base and
 * index := pebs_buf, absolute maximum and interrupt threshold @max and
 * @thr bytes past it, reset values @reset; IA32_DS_AREA := pebs_ds
 */
static void pebs_setup(u64 max, u64 thr, const u64 reset[4])
{
    u64 *w = (u64 *)pebs_buf, base = (u64)pebs_buf;
    unsigned i;

    for (i = 0; i < PEBS_SLOTS * PEBS_FIELDS; i++) {
        w[i] = PEBS_FILL | i;
    }
    for (i = 0; i < 16; i++) {
        pebs_ds[i] = PEBS_FILL | 0x100 | i;
    }
    pebs_ds[4] = base;
    pebs_ds[5] = base;
    pebs_ds[6] = base + max;
    pebs_ds[7] = base + thr;
    for (i = 0; i < 4; i++) {
        pebs_ds[8 + i] = reset[i];
    }
    memcpy(pebs_ds_set, pebs_ds, sizeof(pebs_ds));
    wrmsr(MSR_IA32_DS_AREA, (u64)pebs_ds);
}

/*
 * The index @n records past where pebs_setup put it, nothing else of the
 * DS area written, and slots @n and beyond as pebs_setup left them
 */
static void pebs_buf_report(const char *what, unsigned n)
{
    const u64 *w = (const u64 *)pebs_buf;
    unsigned i, bad = 0, first = ~0u;

    for (i = n * PEBS_FIELDS; i < PEBS_SLOTS * PEBS_FIELDS; i++) {
        if (w[i] != (PEBS_FILL | i)) {
            bad++;
            first = first == ~0u ? i : first;
        }
    }
    for (i = 0; i < 16; i++) {
        if (i != 5 && pebs_ds[i] != pebs_ds_set[i]) {
            bad++;
        }
    }
    report(!bad && pebs_ds[5] == pebs_ds_set[5] + n * PEBS_RECORD,
           "PEBS: %s - expect %u records, the index %lx bytes past the "
           "base, nothing else written (got index %lx bytes past it, %u "
           "other differences, the first at slot %u, +%xH)", what, n,
           (unsigned long)(n * PEBS_RECORD),
           (unsigned long)(pebs_ds[5] - pebs_ds_set[5]), bad,
           first == ~0u ? 0 : first / PEBS_FIELDS,
           first == ~0u ? 0 : (first % PEBS_FIELDS) * 8);
}

/*
 * Slot @s holds @want in the fields of @known: one report, naming the
 * first field that differs
 */
static void pebs_rec_report(const char *what, unsigned s, const u64 *want,
                            u32 known)
{
    const u64 *got = pebs_buf[s].q;
    unsigned i, bad = 0, first = 0, more = 0;
    char diff[160] = "";

    for (i = 0; i < PEBS_FIELDS; i++) {
        more += !!(known & (1u << i)) && i != PR_IP && i != PR_STATUS;
        if ((known & (1u << i)) && got[i] != want[i]) {
            first = bad ? first : i;
            bad++;
        }
    }
    if (bad) {
        snprintf(diff, sizeof(diff), "; the first: %s expect %lx got %lx; "
                 "RIP %lx, status %lx", pebs_field[first],
                 (unsigned long)want[first], (unsigned long)got[first],
                 (unsigned long)got[PR_IP], (unsigned long)got[PR_STATUS]);
    }
    report(!bad, "PEBS: %s - expect record %u: RIP %lx, status %lx and %u "
           "more fields as the listing left them (got %u differences%s)",
           what, s, (unsigned long)want[PR_IP],
           (unsigned long)want[PR_STATUS], more, bad, diff);
}

/*
 * What record of pebs_regs_asm(@rflags, @enable) has when instruction @m
 * is the PEBS event: into @w, the known fields as the result (not the
 * status and load latency fields, the caller's)
 */
static u32 pebs_regs_want(unsigned m, u64 rflags, u64 enable, u64 *w)
{
    u64 rsp = pebs_saved_rsp;
    u32 known = 1u << PR_IP | 1u << PR_SP;
    unsigned f, k;

    w[PR_IP] = pebs_r_tab[m];
    /* RAX-RBP by pebs_r3-r9, R8-R15 by pebs_r10-r17 */
    for (f = PR_AX; f <= PR_R8 + 7; f++) {
        k = f <= PR_BP ? f + 1 : f;
        if (f != PR_SP && m >= k) {
            w[f] = PEBS_VAL(f - PR_AX);
            known |= 1u << f;
        }
    }
    /* before their MOVABS: what the enabling sequence left */
    if (m < 3) {
        w[PR_AX] = (u32)enable;
        known |= 1u << PR_AX;
    }
    if (m < 5) {
        w[PR_CX] = 0x38f;
        known |= 1u << PR_CX;
    }
    if (m < 6) {
        w[PR_DX] = 0;
        known |= 1u << PR_DX;
    }
    if (m < 7) {
        w[PR_SI] = enable;
        known |= 1u << PR_SI;
    }
    if (m < 8) {
        w[PR_DI] = rflags;
        known |= 1u << PR_DI;
    }
    /* the disabling sequence */
    if (m >= 22) {
        w[PR_CX] = 0x38f;
    }
    if (m >= 23) {
        w[PR_AX] = 0;
    }
    if (m >= 24) {
        w[PR_DX] = 0;
    }
    /* POPFQ's value until the disabling XORs */
    if (m >= 2 && m < 23) {
        w[PR_FLAGS] = rflags;
        known |= 1u << PR_FLAGS;
    }
    w[PR_SP] = m == 1 ? rsp - 8 : m >= 18 ? rsp - 0x88 : rsp;
    return known;
}

static void pebs_clear(void)
{
    static const u64 none[4];

    evtsel_write(none);
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    pebs_wrmsr(MSR_IA32_PEBS_ENABLE, 0);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, PEBS_OVF_ALL);
}

/* PMC0 := -@n, counting @sel, alone with PEBS_ENABLE := @pebs */
static void pebs_pmc0(u64 sel, u64 n, u64 pebs)
{
    pebs_clear();
    wrmsr(MSR_IA32_PERFEVTSEL0, sel);
    wrmsr(MSR_IA32_PMC0, -n);
    pebs_wrmsr(MSR_IA32_PEBS_ENABLE, pebs);
}

static void pebs_pmi_arm(void)
{
    apic_write(APIC_LVTPC, PMI_VECTOR);
    pmi_count = 0;
    pmi_rip = 0;
    pmi_status = ~0ull;
    pmi_pmc0 = ~0ull;
    pmi_ctrl = ~0ull;
}

static void test_pebs_msrs(void)
{
    static const u64 bad_en[] = {
        1ull << 4, 1ull << 31, 1ull << 36, 1ull << 63, 0xf0ull,
    };
    static const u64 bad_lat[] = { 1ull << 16, 1ull << 31, 1ull << 32,
                                   1ull << 63 };
    u64 v = ~0ull, w = ~0ull;
    unsigned i, vec, vec2;
    bool ok;

    vec = rdmsr_safe(MSR_IA32_PEBS_ENABLE, &v);
    vec2 = rdmsr_safe(MSR_PEBS_LD_LAT, &w);
    report(!vec && !vec2 && v == 0 && w == 0, "IA32_PEBS_ENABLE and "
           "MSR_PEBS_LD_LAT_THRESHOLD after RESET - expect 0, 0 (got vector "
           "%u, %lx; vector %u, %lx)", vec, (unsigned long)v, vec2,
           (unsigned long)w);
    vec = wrmsr_safe(MSR_IA32_PEBS_ENABLE, 0xf0000000full);
    v = ~0ull;
    rdmsr_safe(MSR_IA32_PEBS_ENABLE, &v);
    report(!vec && v == 0xf0000000full, "IA32_PEBS_ENABLE := 0xf0000000f "
           "(PEBS_EN_PMC0-3, LL_EN_PMC0-3) - expect kept (got vector %u, "
           "%lx)", vec, (unsigned long)v);
    vec = wrmsr_safe(MSR_IA32_PEBS_ENABLE, 0x200000004ull);
    v = ~0ull;
    rdmsr_safe(MSR_IA32_PEBS_ENABLE, &v);
    report(!vec && v == 0x200000004ull, "IA32_PEBS_ENABLE := 0x200000004 "
           "- expect kept (got vector %u, %lx)", vec, (unsigned long)v);
    for (i = 0; i < ARRAY_SIZE(bad_en); i++) {
        vec = wrmsr_safe(MSR_IA32_PEBS_ENABLE, bad_en[i] | 1);
        v = ~0ull;
        rdmsr_safe(MSR_IA32_PEBS_ENABLE, &v);
        report(vec == GP_VECTOR && v == 0x200000004ull,
               "IA32_PEBS_ENABLE := %lx (a reserved bit) - expect #GP, the "
               "MSR unchanged, 0x200000004 (got vector %u, %lx)",
               (unsigned long)(bad_en[i] | 1), vec, (unsigned long)v);
    }
    vec = wrmsr_safe(MSR_IA32_PEBS_ENABLE, 0);
    v = ~0ull;
    rdmsr_safe(MSR_IA32_PEBS_ENABLE, &v);
    report(!vec && v == 0, "IA32_PEBS_ENABLE := 0 - expect 0 (got vector "
           "%u, %lx)", vec, (unsigned long)v);

    vec = wrmsr_safe(MSR_PEBS_LD_LAT, 0xffff);
    v = ~0ull;
    rdmsr_safe(MSR_PEBS_LD_LAT, &v);
    report(!vec && v == 0xffff, "MSR_PEBS_LD_LAT_THRESHOLD := 0xffff - "
           "expect kept (got vector %u, %lx)", vec, (unsigned long)v);
    ok = true;
    for (i = 0; i < ARRAY_SIZE(bad_lat); i++) {
        vec = wrmsr_safe(MSR_PEBS_LD_LAT, bad_lat[i] | 0x1234);
        v = ~0ull;
        rdmsr_safe(MSR_PEBS_LD_LAT, &v);
        ok &= vec == GP_VECTOR && v == 0xffff;
        report(vec == GP_VECTOR && v == 0xffff, "MSR_PEBS_LD_LAT_THRESHOLD "
               ":= %lx (a bit above 15) - expect #GP, the MSR unchanged "
               "(got vector %u, %lx)", (unsigned long)(bad_lat[i] | 0x1234),
               vec, (unsigned long)v);
    }
    vec = wrmsr_safe(MSR_PEBS_LD_LAT, 0);
    v = ~0ull;
    rdmsr_safe(MSR_PEBS_LD_LAT, &v);
    report(!vec && v == 0, "MSR_PEBS_LD_LAT_THRESHOLD := 0 - expect 0 (got "
           "vector %u, %lx)", vec, (unsigned long)v);
}

/* instructions at CPL 0: the record of pebs_regs_asm */
static void test_pebs_insns(void)
{
    static const u64 reset[4] = { -1000ull, -2000ull, -3000ull, -4000ull };
    /* PMC0 := -N: instruction N overflows it, N + 1 is the PEBS event */
    static const unsigned ns[] = { 17, 1, 2, 5, 9, 20, 22, 23, 24 };
    const u64 two = 2 * PEBS_RECORD, one = PEBS_RECORD;
    const u64 r0 = reset[0] & PEBS_MASK48;
    u64 want[PEBS_FIELDS], pmc0, st, v[4];
    u32 known;
    unsigned i, m, pmis;
    u32 lvt;
    char what[160];

    enable_apic();
    handle_irq(PMI_VECTOR, pmi_handler);

    /*
     * Room for 2 records, the threshold at 2: one record, no PMI (IF set
     * by the POPFQ, the LVT entry unmasked).  PMC0 INST_RETIRED OS, no
     * INT.
     */
    pmis = 0;
    for (i = 0; i < ARRAY_SIZE(ns); i++) {
        m = ns[i] + 1;
        pebs_setup(two, two, reset);
        pebs_pmc0(0x4200c0, ns[i], 1);
        pebs_pmi_arm();
        pebs_regs_asm(PEBS_RFLAGS_IF, 1);
        asm volatile("cli");
        pmis += pmi_count;
        pmc0 = rdmsr(MSR_IA32_PMC0);
        st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
        known = pebs_regs_want(m, PEBS_RFLAGS_IF, 1, want);
        want[PR_STATUS] = 1;
        want[PR_DLA] = want[PR_DSE] = want[PR_LAT] = 0;
        known |= 1u << PR_STATUS | 1u << PR_DLA | 1u << PR_DSE |
                 1u << PR_LAT;
        snprintf(what, sizeof(what), "INST_RETIRED, PMC0 := -%u, the PEBS "
                 "event instruction %u of pebs_regs_asm", ns[i], m);
        pebs_buf_report(what, 1);
        pebs_rec_report(what, 0, want, known);
        report(pmc0 == ((r0 + 25 - m) & PEBS_MASK48) && st == 0,
               "PEBS: ... PMC0 reloaded with the reset value -1000 and the "
               "%u instructions after, its GLOBAL_STATUS bit cleared - "
               "expect PMC0 %lx, GLOBAL_STATUS 0 (got %lx, %lx)", 25 - m,
               (unsigned long)((r0 + 25 - m) & PEBS_MASK48),
               (unsigned long)pmc0, (unsigned long)st);
    }
    report(pmis == 0, "PEBS: those %u runs, index below the threshold, IF "
           "set - expect no PMI (got %u)", (unsigned)ARRAY_SIZE(ns), pmis);

    /* PMC2 the PEBS counter: its status bit, its reset value at +50H */
    pebs_setup(two, two, reset);
    pebs_clear();
    wrmsr(MSR_IA32_PERFEVTSEL0 + 2, 0x4200c0);
    wrmsr(MSR_IA32_PMC0 + 2, -17ull);
    pebs_wrmsr(MSR_IA32_PEBS_ENABLE, 4);
    pebs_regs_asm(PEBS_RFLAGS, 4);
    v[2] = rdmsr(MSR_IA32_PMC0 + 2);
    st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
    known = pebs_regs_want(18, PEBS_RFLAGS, 4, want);
    want[PR_STATUS] = 4;
    known |= 1u << PR_STATUS;
    pebs_buf_report("INST_RETIRED on PMC2, PMC2 := -17", 1);
    pebs_rec_report("INST_RETIRED on PMC2, PMC2 := -17", 0, want, known);
    report(v[2] == ((reset[2] + 7) & PEBS_MASK48) && st == 0,
           "PEBS: ... PMC2 reloaded with its reset value -3000 and the 7 "
           "instructions after, its bit cleared - expect %lx, GLOBAL_STATUS "
           "0 (got %lx, %lx)", (unsigned long)((reset[2] + 7) & PEBS_MASK48),
           (unsigned long)v[2], (unsigned long)st);

    /*
     * PMC1 (INST_RETIRED, INT, no PEBS) := -18 overflows at instruction
     * 18, PMC0's PEBS event: its PMI at that boundary comes after the
     * assist.  The record has both bits; the handler finds PMC1's alone.
     */
    pebs_setup(two, two, reset);
    pebs_pmc0(0x4200c0, 17, 1);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 1, 0x5200c0);
    wrmsr(MSR_IA32_PMC0 + 1, -18ull);
    pebs_pmi_arm();
    pebs_regs_asm(PEBS_RFLAGS_IF, 3);
    asm volatile("cli");
    known = pebs_regs_want(18, PEBS_RFLAGS_IF, 3, want);
    want[PR_STATUS] = 3;
    known |= 1u << PR_STATUS;
    pebs_buf_report("PMC0 := -17 PEBS, PMC1 := -18 with INT", 1);
    pebs_rec_report("PMC0 := -17 PEBS, PMC1 := -18 with INT: PMC1's "
                    "overflow in the status", 0, want, known);
    report(pmi_count == 1 && pmi_rip == pebs_r_tab[18] && pmi_status == 2,
           "PEBS: ... PMC1's PMI at the PEBS event's boundary - expect one, "
           "after the assist: RIP pebs_r19 %lx, GLOBAL_STATUS 2 (got %u, "
           "RIP %lx, status %lx)", pebs_r_tab[18], pmi_count, pmi_rip,
           (unsigned long)pmi_status);
    pebs_clear();

    /*
     * The threshold at one record: the PMI right after the assist, at
     * the record's RIP (pebs_r19), GLOBAL_STATUS only OvfBuffer: PMC0's
     * bit cleared by the assist.  Then with FREEZE_PERFMON_ON_PMI: in the
     * handler GLOBAL_CTRL 0 and PMC0 the reset value, nothing counted
     * after the assist.
     */
    pebs_setup(two, one, reset);
    pebs_pmc0(0x4200c0, 17, 1);
    pebs_pmi_arm();
    pebs_regs_asm(PEBS_RFLAGS_IF, 1);
    asm volatile("cli");
    lvt = apic_read(APIC_LVTPC);
    pebs_buf_report("threshold at one record, PMC0 := -17", 1);
    report(pmi_count == 1 && pmi_rip == pebs_r_tab[18] &&
           pmi_status == PEBS_OVF_BUFFER && pmi_ctrl == 1,
           "PEBS: ... the index reaches the threshold - expect one PMI at "
           "the record's RIP pebs_r19 %lx, GLOBAL_STATUS bit 62 alone, "
           "GLOBAL_CTRL 1 (got %u, RIP %lx, status %lx, GLOBAL_CTRL %lx)",
           pebs_r_tab[18], pmi_count, pmi_rip, (unsigned long)pmi_status,
           (unsigned long)pmi_ctrl);
    report(lvt & APIC_LVT_MASKED, "PEBS: ... LVT performance counter entry "
           "after the PMI - expect masked (got %x)", lvt);
    st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, PEBS_OVF_BUFFER);
    report(st == PEBS_OVF_BUFFER &&
           rdmsr(MSR_IA32_PERF_GLOBAL_STATUS) == 0,
           "PEBS: ... GLOBAL_STATUS after it - expect bit 62 alone, cleared "
           "by OVF_CTRL bit 62 (got %lx, then %lx)", (unsigned long)st,
           (unsigned long)rdmsr(MSR_IA32_PERF_GLOBAL_STATUS));

    wrmsr(MSR_IA32_DEBUGCTL, PEBS_DEBUGCTL_FREEZE);
    pebs_setup(two, one, reset);
    pebs_pmc0(0x4200c0, 17, 1);
    pebs_pmi_arm();
    pebs_regs_asm(PEBS_RFLAGS_IF, 1);
    asm volatile("cli");
    wrmsr(MSR_IA32_DEBUGCTL, 0);
    pmc0 = rdmsr(MSR_IA32_PMC0);
    known = pebs_regs_want(18, PEBS_RFLAGS_IF, 1, want);
    want[PR_STATUS] = 1;
    known |= 1u << PR_STATUS;
    pebs_buf_report("threshold at one record, FREEZE_PERFMON_ON_PMI", 1);
    pebs_rec_report("threshold at one record, FREEZE_PERFMON_ON_PMI", 0,
                    want, known);
    report(pmi_count == 1 && pmi_rip == pebs_r_tab[18] &&
           pmi_status == PEBS_OVF_BUFFER && pmi_ctrl == 0 &&
           pmi_pmc0 == r0 && pmc0 == r0,
           "PEBS: ... with FREEZE_PERFMON_ON_PMI - expect one PMI at %lx, "
           "GLOBAL_STATUS bit 62, GLOBAL_CTRL 0, PMC0 the reset value %lx "
           "in the handler and after (got %u, RIP %lx, status %lx, "
           "GLOBAL_CTRL %lx, PMC0 %lx and %lx)", pebs_r_tab[18],
           (unsigned long)r0, pmi_count, pmi_rip, (unsigned long)pmi_status,
           (unsigned long)pmi_ctrl, (unsigned long)pmi_pmc0,
           (unsigned long)pmc0);
    wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, PEBS_OVF_ALL);

    /*
     * Buffer full: the maximum 0AFH past the index.  Instruction 18 is
     * the PEBS event but nothing is written, PMC0 keeps counting from 0
     * (overflowed at instruction 17) to 8, its bit stays, no PMI though
     * the index is at the threshold.
     */
    pebs_setup(PEBS_RECORD - 1, 0, reset);
    pebs_pmc0(0x4200c0, 17, 1);
    pebs_pmi_arm();
    pebs_regs_asm(PEBS_RFLAGS_IF, 1);
    asm volatile("cli");
    pmc0 = rdmsr(MSR_IA32_PMC0);
    st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
    pebs_buf_report("the maximum 0AFH past the index (no room), PMC0 := -17",
                    0);
    report(pmc0 == 8 && st == 1 && pmi_count == 0,
           "PEBS: ... no record - expect PMC0 not reloaded, 8, GLOBAL_STATUS "
           "bit 0 kept, no PMI (got PMC0 %lx, status %lx, %u PMIs)",
           (unsigned long)pmc0, (unsigned long)st, pmi_count);
    /* exactly room for one: the maximum 0B0H past the index */
    pebs_setup(PEBS_RECORD, 2 * PEBS_RECORD, reset);
    pebs_pmc0(0x4200c0, 17, 1);
    pebs_regs_asm(PEBS_RFLAGS, 1);
    pmc0 = rdmsr(MSR_IA32_PMC0);
    known = pebs_regs_want(18, PEBS_RFLAGS, 1, want);
    want[PR_STATUS] = 1;
    known |= 1u << PR_STATUS;
    pebs_buf_report("the maximum 0B0H past the index (a later overflow "
                    "arms PEBS again)", 1);
    pebs_rec_report("the maximum 0B0H past the index", 0, want, known);
    report(pmc0 == ((r0 + 7) & PEBS_MASK48), "PEBS: ... PMC0 reloaded - "
           "expect %lx (got %lx)", (unsigned long)((r0 + 7) & PEBS_MASK48),
           (unsigned long)pmc0);

    /* the buffer, then the DS area, where nothing is mapped */
    pebs_setup(2 * PEBS_RECORD, 2 * PEBS_RECORD, reset);
    pebs_ds[4] = pebs_ds[5] = PEBS_UNMAPPED;
    pebs_ds[6] = pebs_ds[7] = PEBS_UNMAPPED + 2 * PEBS_RECORD;
    pebs_pmc0(0x4200c0, 17, 1);
    pebs_regs_asm(PEBS_RFLAGS, 1);
    pmc0 = rdmsr(MSR_IA32_PMC0);
    st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
    report(pebs_ds[5] == PEBS_UNMAPPED && pmc0 == 8 && st == 1,
           "PEBS: the buffer at %lx, not mapped - expect no record, the "
           "index kept, PMC0 not reloaded, 8, GLOBAL_STATUS bit 0 kept (got "
           "index %lx, PMC0 %lx, status %lx)", (unsigned long)PEBS_UNMAPPED,
           (unsigned long)pebs_ds[5], (unsigned long)pmc0, (unsigned long)st);
    pebs_setup(2 * PEBS_RECORD, 2 * PEBS_RECORD, reset);
    wrmsr(MSR_IA32_DS_AREA, PEBS_UNMAPPED);
    pebs_pmc0(0x4200c0, 17, 1);
    pebs_regs_asm(PEBS_RFLAGS, 1);
    pmc0 = rdmsr(MSR_IA32_PMC0);
    st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
    report(pmc0 == 8 && st == 1, "PEBS: IA32_DS_AREA %lx, not mapped - "
           "expect no record, PMC0 not reloaded, 8, GLOBAL_STATUS bit 0 "
           "kept (got PMC0 %lx, status %lx)", (unsigned long)PEBS_UNMAPPED,
           (unsigned long)pmc0, (unsigned long)st);

    /*
     * Which counters the assist reloads.  PMC0 INST_RETIRED PEBS := -17;
     * PMC1 INST_RETIRED without PEBS_EN := -2 (overflows at instruction
     * 2); PMC2 core cycles (3CH, not a precise event) with PEBS_EN := -3
     * (one cycle an instruction here: overflows at 3); PMC3 BR_INST_RETIRED
     * with PEBS_EN, overflowed (armed, its bit set) by counted_loop's JNZ
     * before, and no branch since.  The record at instruction 18 has
     * status 0xf; PMC0 and PMC3 are reloaded and their bits cleared, PMC1
     * and PMC2 count on and keep theirs.
     */
    pebs_clear();
    pebs_setup(2 * PEBS_RECORD, 2 * PEBS_RECORD, reset);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 3, 0x4200c4);
    wrmsr(MSR_IA32_PMC0 + 3, -1ull);
    pebs_wrmsr(MSR_IA32_PEBS_ENABLE, 0xd);
    counted_loop(8, 1);
    st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
    wrmsr(MSR_IA32_PERFEVTSEL0, 0x4200c0);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 1, 0x4200c0);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 2, 0x42003c);
    wrmsr(MSR_IA32_PMC0, -17ull);
    wrmsr(MSR_IA32_PMC0 + 1, -2ull);
    wrmsr(MSR_IA32_PMC0 + 2, -3ull);
    pebs_regs_asm(PEBS_RFLAGS, 0xf);
    pmc_read(v);
    known = pebs_regs_want(18, PEBS_RFLAGS, 0xf, want);
    want[PR_STATUS] = 0xf;
    known |= 1u << PR_STATUS;
    pebs_buf_report("PMC0 PEBS, PMC1 without PEBS_EN, PMC2 cycles, PMC3 "
                    "branches armed", 1);
    pebs_rec_report("PMC0 PEBS, PMC1 without PEBS_EN, PMC2 cycles, PMC3 "
                    "branches armed", 0, want, known);
    pmc0 = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
    report(st == 8 && v[0] == ((r0 + 7) & PEBS_MASK48) && v[1] == 23 &&
           v[2] == 22 && v[3] == (reset[3] & PEBS_MASK48) && pmc0 == 6,
           "PEBS: ... GLOBAL_STATUS before: PMC3's bit - expect 8 (got %lx); "
           "PMC0-3 after: PMC0 and PMC3 reloaded, PMC1 and PMC2 counting on "
           "- expect %lx, 23, 22, %lx, GLOBAL_STATUS 6: PMC1's and PMC2's "
           "bits (got %lx, %lu, %lu, %lx, %lx)",
           (unsigned long)st, (unsigned long)((r0 + 7) & PEBS_MASK48),
           (unsigned long)(reset[3] & PEBS_MASK48), (unsigned long)v[0],
           (unsigned long)v[1], (unsigned long)v[2], (unsigned long)v[3],
           (unsigned long)pmc0);
    pebs_clear();
    wrmsr(MSR_IA32_DEBUGCTL, 0);
}

/*
 * Several records: reset value -6, PMC0 := -6, pebs_loop_asm with n =
 * 11 (39 counted instructions): records at instructions 7, 14, 21, 28
 * and 35 (the last JNZ, not taken); 4 instructions after it, PMC0 ends
 * at 2^48 - 2.
 */
static void pebs_loop_want(u64 t, u64 n, u64 *w)
{
    unsigned long rip;

    switch (t % 3) {
    case 0:
        rip = (unsigned long)pebs_ld;
        break;
    case 1:
        rip = (unsigned long)pebs_lj;
        break;
    default:
        rip = n - (t - 1) / 3 ? (unsigned long)pebs_li :
                                (unsigned long)pebs_le;
    }
    w[PR_IP] = rip;
    w[PR_AX] = t / 3;
    w[PR_BX] = n - (t - 1) / 3;
    w[PR_STATUS] = 1;
}

/* Records 0 to @count - 1 of the loop of @n iterations: every 7th insn */
static void pebs_loop_records(const char *what, unsigned n, unsigned count,
                              u32 known)
{
    u64 want[PEBS_FIELDS];
    char buf[120];
    unsigned j;

    for (j = 0; j < count; j++) {
        pebs_loop_want(7 * (j + 1), n, want);
        snprintf(buf, sizeof(buf), "%s, record %u at instruction %u", what,
                 j, 7 * (j + 1));
        pebs_rec_report(buf, j, want, known);
    }
}

static void test_pebs_loop(void)
{
    const u64 n = 11, k = 6;
    const u64 reset[4] = { -k, -1000ull, -1000ull, -1000ull };
    const u32 known = 1u << PR_IP | 1u << PR_AX | 1u << PR_BX |
                      1u << PR_STATUS;
    u64 want[PEBS_FIELDS], pmc0, st;

    pebs_setup(PEBS_SLOTS * PEBS_RECORD, PEBS_SLOTS * PEBS_RECORD, reset);
    pebs_pmc0(0x4200c0, k, 1);
    pebs_loop_asm(1, n);
    pmc0 = rdmsr(MSR_IA32_PMC0);
    st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
    pebs_buf_report("reset value -6, 11 iterations of INC/DEC/JNZ: every "
                    "7th instruction", 5);
    pebs_loop_records("reset value -6", n, 5, known);
    report(pmc0 == PEBS_MASK48 - 1 && st == 0, "PEBS: ... PMC0 -6 + the 4 "
           "instructions after the last record - expect %lx, GLOBAL_STATUS "
           "0 (got %lx, %lx)", (unsigned long)(PEBS_MASK48 - 1),
           (unsigned long)pmc0, (unsigned long)st);

    /*
     * The threshold at 3 records, FREEZE_PERFMON_ON_PMI, interrupts on:
     * the PMI after the 3rd record (instruction 21, an INC: at pebs_ld),
     * nothing counted after it
     */
    wrmsr(MSR_IA32_DEBUGCTL, PEBS_DEBUGCTL_FREEZE);
    pebs_setup(PEBS_SLOTS * PEBS_RECORD, 3 * PEBS_RECORD, reset);
    pebs_pmc0(0x4200c0, k, 1);
    pebs_pmi_arm();
    sti();
    pebs_loop_asm(1, n);
    asm volatile("cli");
    wrmsr(MSR_IA32_DEBUGCTL, 0);
    pmc0 = rdmsr(MSR_IA32_PMC0);
    pebs_buf_report("reset value -6, the threshold at 3 records, "
                    "FREEZE_PERFMON_ON_PMI", 3);
    pebs_loop_records("threshold at 3", n, 3, known);
    report(pmi_count == 1 && pmi_rip == (unsigned long)pebs_ld &&
           pmi_status == PEBS_OVF_BUFFER && pmi_ctrl == 0 &&
           pmi_pmc0 == PEBS_MASK48 - 5 && pmc0 == PEBS_MASK48 - 5,
           "PEBS: ... one PMI after the 3rd record, at pebs_ld %lx, "
           "GLOBAL_STATUS bit 62, GLOBAL_CTRL 0, PMC0 the reset value %lx "
           "in the handler and after (got %u, RIP %lx, status %lx, "
           "GLOBAL_CTRL %lx, PMC0 %lx, %lx)", (unsigned long)pebs_ld,
           (unsigned long)(PEBS_MASK48 - 5), pmi_count, pmi_rip,
           (unsigned long)pmi_status, (unsigned long)pmi_ctrl,
           (unsigned long)pmi_pmc0, (unsigned long)pmc0);

    /*
     * BR_MISP_RETIRED (C5H 00H), the predictor model
     * (docs/branch-predictor.md) trained only while a counter counts
     * mispredictions: 11 iterations leave the JNZ's counter at 2 from
     * any value (10 taken saturate it at 3, the exit takes it to 2); one
     * iteration (not taken at 2: mispredicted) takes it to 1.  Then 11
     * iterations: the 1st JNZ (instruction 5, taken at 1) and the exit
     * (instruction 35, not taken at 3) are mispredicted: with PMC0 := -1
     * the first overflows it and the exit is the PEBS event, the record
     * at its fall-through pebs_le, RAX 11, RBX 0.
     */
    pebs_clear();
    wrmsr(MSR_IA32_PERFEVTSEL0, 0x4200c5);
    wrmsr(MSR_IA32_PMC0, 0);
    pebs_loop_asm(1, n);
    wrmsr(MSR_IA32_PMC0, 0);
    pebs_loop_asm(1, 1);
    pmc0 = rdmsr(MSR_IA32_PMC0);
    report(pmc0 == 1, "BR_MISP_RETIRED: one iteration of the trained loop "
           "- expect 1, the exit (got %lu)", (unsigned long)pmc0);
    pebs_setup(PEBS_SLOTS * PEBS_RECORD, PEBS_SLOTS * PEBS_RECORD, reset);
    pebs_pmc0(0x4200c5, 1, 1);
    pebs_loop_asm(1, n);
    pmc0 = rdmsr(MSR_IA32_PMC0);
    pebs_loop_want(35, n, want);
    pebs_buf_report("BR_MISP_RETIRED, PMC0 := -1, 11 iterations from "
                    "counter 1: the exit JNZ", 1);
    pebs_rec_report("BR_MISP_RETIRED, the mispredicted exit JNZ", 0, want,
                    known);
    report(pmc0 == PEBS_MASK48 - 5, "PEBS: ... PMC0 the reset value -6, "
           "no misprediction after - expect %lx (got %lx)",
           (unsigned long)(PEBS_MASK48 - 5), (unsigned long)pmc0);
    pebs_clear();
}

/* branches: BR_INST_RETIRED (C4H 00H), the record at the branch's target */
static void test_pebs_branches(void)
{
    static const u64 reset[4] = { -1000ull, 0, 0, 0 };
    const u64 r0 = reset[0] & PEBS_MASK48;
    static const char *const kind[5] = {
        "JE taken", "JNE not taken", "CALL", "RET", "JMP *%rsi",
    };
    u64 want[PEBS_FIELDS], pmc0;
    unsigned n;
    char what[120];

    for (n = 1; n <= 5; n++) {
        pebs_setup(2 * PEBS_RECORD, 2 * PEBS_RECORD, reset);
        pebs_pmc0(0x4200c4, n, 1);
        pebs_br_asm(1);
        pmc0 = rdmsr(MSR_IA32_PMC0);
        want[PR_IP] = pebs_b_tab[n];
        want[PR_SP] = pebs_saved_rsp - (n + 1 == 4 ? 8 : 0);
        want[PR_SI] = (u64)pebs_b_tab[5];
        want[PR_STATUS] = 1;
        snprintf(what, sizeof(what), "BR_INST_RETIRED, PMC0 := -%u: branch "
                 "%u, the %s", n, n + 1, kind[n - 1]);
        pebs_buf_report(what, 1);
        pebs_rec_report(what, 0, want, 1u << PR_IP | 1u << PR_SP |
                        1u << PR_SI | 1u << PR_STATUS);
        report(pmc0 == r0 + 5 - n, "PEBS: ... PMC0 the reset value and "
               "the %u branches after - expect %lx (got %lx)", 5 - n,
               (unsigned long)(r0 + 5 - n), (unsigned long)pmc0);
    }

    /*
     * The threshold at one record, FREEZE_PERFMON_ON_PMI: the PMI at the
     * record's RIP, the CALL's target pebs_bf
     */
    wrmsr(MSR_IA32_DEBUGCTL, PEBS_DEBUGCTL_FREEZE);
    pebs_setup(2 * PEBS_RECORD, PEBS_RECORD, reset);
    pebs_pmc0(0x4200c4, 3, 1);
    pebs_pmi_arm();
    sti();
    pebs_br_asm(1);
    asm volatile("cli");
    wrmsr(MSR_IA32_DEBUGCTL, 0);
    pebs_buf_report("BR_INST_RETIRED, PMC0 := -3, the threshold at one "
                    "record", 1);
    report(pmi_count == 1 && pmi_rip == pebs_b_tab[3] &&
           pebs_buf[0].q[PR_IP] == pebs_b_tab[3] &&
           pmi_status == PEBS_OVF_BUFFER && pmi_pmc0 == r0,
           "PEBS: ... one PMI, at the record's RIP, the CALL's target "
           "pebs_bf %lx, GLOBAL_STATUS bit 62, PMC0 the reset value (got "
           "%u, RIP %lx, record's RIP %lx, status %lx, PMC0 %lx)",
           pebs_b_tab[3], pmi_count, pmi_rip,
           (unsigned long)pebs_buf[0].q[PR_IP], (unsigned long)pmi_status,
           (unsigned long)pmi_pmc0);
    pebs_clear();
}

/* INST_RETIRED USR: the record of a PEBS event at CPL 3 */
static void test_pebs_user(void)
{
    static const u64 reset[4] = { -1000ull, 0, 0, 0 };
    const u64 r0 = reset[0] & PEBS_MASK48;
    u64 want[PEBS_FIELDS], pmc0;
    const u64 *got = pebs_buf[0].q;
    int ret;

    pebs_setup(2 * PEBS_RECORD, 2 * PEBS_RECORD, reset);
    pebs_pmc0(0x4100c0, 5, 1);
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 1);
    ret = run_in_user(pebs_user_fn, NULL);
    wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
    pmc0 = rdmsr(MSR_IA32_PMC0);
    want[PR_FLAGS] = 2;
    want[PR_IP] = (unsigned long)pebs_u7;
    want[PR_BX] = PEBS_VAL(1);
    want[PR_SP] = got[PR_AX] - 0x18;
    want[PR_STATUS] = 1;
    pebs_buf_report("INST_RETIRED USR, PMC0 := -5: CPL 3 instruction 6, "
                    "the MOVABS at pebs_u6", 1);
    pebs_rec_report("INST_RETIRED USR at CPL 3 (RSP: RAX, the RSP of "
                    "instruction 4, less 18H)", 0, want,
                    1u << PR_FLAGS | 1u << PR_IP | 1u << PR_BX |
                    1u << PR_SP | 1u << PR_STATUS);
    report(!ret && pmc0 == r0 + 3, "PEBS: ... PMC0 the reset value and "
           "the 3 CPL 3 instructions after - expect %lx (got %lx, "
           "run_in_user %d)", (unsigned long)(r0 + 3), (unsigned long)pmc0,
           ret);
    pebs_clear();
}

/* what pebs_ll_asm loads: values of their own at each of its addresses */
static u8 *pebs_ll_buf(void)
{
    u8 *a = cache_buf;
    unsigned k;

    *(u64 *)(a + 0x18) = 0x11a0000000000018ull;
    *(u64 *)(a + 0x20) = 0x11a0000000000020ull;
    for (k = 1; k <= 8; k++) {
        *(u64 *)(a + k * 0x1000) = 0x11a0000000000000ull | k << 12;
        *(u64 *)(a + k * 0x8000) = 0x11a0000000000000ull | k << 15;
    }
    return a;
}

/*
 * One run of pebs_ll_asm with @stride, PMC0 := -@n counting @sel and
 * PEBS_ENABLE := @pebs (if @write_pmc0), the threshold @thr, PMC1 := 0
 * counting @sel1: expect a record at instruction @m (0: none), with the
 * load at @dla (source @dse, latency @lat), register @reg (the one
 * instruction @m or before loaded from @dla) holding what is there
 */
static void pebs_ll_run(const char *what, u64 stride, u64 sel, u64 n,
                        u64 pebs, u64 thr, u64 sel1, unsigned m,
                        unsigned reg, u64 dla, u64 dse, u64 lat,
                        bool write_pmc0)
{
    static const u64 reset[4] = { -1000ull, 0, 0, 0 };
    u8 *a = pebs_ll_buf();
    u64 want[PEBS_FIELDS];

    pebs_setup(2 * PEBS_RECORD, 2 * PEBS_RECORD, reset);
    /* else PMC0, its control and PEBS_ENABLE as the run before left them */
    if (write_pmc0) {
        pebs_pmc0(sel, n, pebs);
    }
    wrmsr(MSR_IA32_PERFEVTSEL0 + 1, sel1);
    wrmsr(MSR_IA32_PMC0 + 1, 0);
    pebs_wrmsr(MSR_PEBS_LD_LAT, thr);
    pebs_ll_asm(sel1 ? 3 : 1, a, stride);
    pebs_buf_report(what, !!m);
    if (!m) {
        return;
    }
    want[PR_IP] = pebs_ll_tab[m];
    want[PR_SI] = (u64)a;
    want[PR_SP] = pebs_saved_rsp;
    want[reg] = *(u64 *)(dla & ~7ull);
    want[PR_STATUS] = 1;
    want[PR_DLA] = dla;
    want[PR_DSE] = dse;
    want[PR_LAT] = lat;
    pebs_rec_report(what, 0, want, 1u << PR_IP | 1u << PR_SI |
                    1u << PR_SP | 1u << reg | 1u << PR_STATUS |
                    1u << PR_DLA | 1u << PR_DSE | 1u << PR_LAT);
}

static void test_pebs_load_latency(void)
{
    /* PMC0 load latency; PMC1-3 L1D_HIT, L2_HIT or L3_UNSHARED_HIT, L3_MISS */
    static const struct {
        u64 stride, sel2, thr, want;
        const char *what;
    } thr[] = {
        { 0x1000, 0x4202cb, 0, 11, "L2_HIT" },
        { 0x1000, 0x4202cb, 3, 11, "L2_HIT" },
        { 0x1000, 0x4202cb, 4, 10, "L2_HIT" },
        { 0x1000, 0x4202cb, 9, 10, "L2_HIT" },
        { 0x1000, 0x4202cb, 10, 9, "L2_HIT" },
        { 0x1000, 0x4202cb, 199, 9, "L2_HIT" },
        { 0x1000, 0x4202cb, 200, 0, "L2_HIT" },
        { 0x1000, 0x4202cb, 0xffff, 0, "L2_HIT" },
        { 0x8000, 0x4204cb, 9, 10, "L3_UNSHARED_HIT" },
        { 0x8000, 0x4204cb, 39, 10, "L3_UNSHARED_HIT" },
        { 0x8000, 0x4204cb, 40, 9, "L3_UNSHARED_HIT" },
    };
    const u64 ll0 = 0x100000001ull;
    u8 *a = pebs_ll_buf();
    const u64 b = (u64)a;
    u64 v[4], st, pmc0;
    unsigned i;

    pebs_clear();
    for (i = 0; i < ARRAY_SIZE(thr); i++) {
        const u64 sel[4] = { 0x42100b, 0x4201cb, thr[i].sel2, 0x4210cb };

        evtsel_write(sel);
        pmu_zero();
        pebs_wrmsr(MSR_IA32_PEBS_ENABLE, ll0);
        pebs_wrmsr(MSR_PEBS_LD_LAT, thr[i].thr);
        pebs_ll_asm(0xf, a, thr[i].stride);
        pmc_read(v);
        report(v[0] == thr[i].want && v[1] == 1 && v[2] == 1 && v[3] == 9,
               "load latency (0BH 10H) above %lu cycles over 9 loads from "
               "DRAM (200), one from %s (%u), one from L1 (4) - expect %lu; "
               "L1D_HIT, %s, L3_MISS 1, 1, 9 (got %lu; %lu, %lu, %lu)",
               (unsigned long)thr[i].thr,
               thr[i].stride == 0x1000 ? "L2" : "L3",
               thr[i].stride == 0x1000 ? 10 : 40,
               (unsigned long)thr[i].want, thr[i].what,
               (unsigned long)v[0], (unsigned long)v[1], (unsigned long)v[2],
               (unsigned long)v[3]);
    }
    pebs_clear();

    /* PEBS on the load latency counter: the record of its PEBS load */
    pebs_ll_run("load latency above 9, PMC0 := -1: the 2nd load (DRAM)",
                0x1000, 0x42100b, 1, ll0, 9, 0, 2, PR_BX, b + 0x1000, 0x0c,
                200, true);
    pebs_ll_run("load latency above 9, PMC0 := -9: the 10th load (L2)",
                0x1000, 0x42100b, 9, ll0, 9, 0, 10, PR_CX, b + 0x18, 0x03, 10,
                true);
    pebs_ll_run("load latency above 9, stride 32 KiB, PMC0 := -9: the 10th "
                "load (L3)", 0x8000, 0x42100b, 9, ll0, 9, 0, 10, PR_CX,
                b + 0x18, 0x04, 40, true);
    pebs_ll_run("load latency above 3, PMC0 := -10: the 11th load (L1)",
                0x1000, 0x42100b, 10, ll0, 3, 0, 11, PR_DX, b + 0x20, 0x01, 4,
                true);
    /*
     * Above 10: the L2 and L1 loads do not count; the 9th overflows PMC0
     * (to 0) and no PEBS event follows: no record, PMC0 armed, its bit
     * set.  In the next run (PMC0, its control and PEBS_ENABLE not
     * written) the first load is its PEBS event.
     */
    pebs_ll_run("load latency above 10, PMC0 := -9: 9 loads count, no "
                "record", 0x1000, 0x42100b, 9, ll0, 10, 0, 0, 0, 0, 0, 0,
                true);
    pmc0 = rdmsr(MSR_IA32_PMC0);
    st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
    report(pmc0 == 0 && st == 1, "PEBS: ... PMC0 overflowed to 0, "
           "GLOBAL_STATUS bit 0 set - expect 0, 1 (got %lx, %lx)",
           (unsigned long)pmc0, (unsigned long)st);
    pebs_ll_run("... then again, PMC0 armed: the 1st load (DRAM) its PEBS "
                "event", 0x1000, 0x42100b, 0, ll0, 10, 0, 1, PR_AX, b + 0x18,
                0x0c, 200, false);
    pmc0 = rdmsr(MSR_IA32_PMC0);
    st = rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
    report(pmc0 == ((-1000ull + 8) & PEBS_MASK48) && st == 0,
           "PEBS: ... PMC0 the reset value and the 8 loads after, "
           "GLOBAL_STATUS 0 - expect %lx, 0 (got %lx, %lx)",
           (unsigned long)((-1000ull + 8) & PEBS_MASK48),
           (unsigned long)pmc0, (unsigned long)st);

    /*
     * PEBS on instructions (PMC0), load latency on PMC1 with LL_EN_PMC1:
     * the record has PMC1's last load, up to and with the PEBS event
     * instruction's own
     */
    pebs_ll_run("INST_RETIRED PEBS, PMC1 load latency above 9 with LL_EN: "
                "the NOP after the L1 load - its last load the L2 one",
                0x1000, 0x4200c0, 11, 0x200000001ull, 9, 0x42100b, 12, PR_CX,
                b + 0x18, 0x03, 10, true);
    v[1] = rdmsr(MSR_IA32_PMC0 + 1);
    report(v[1] == 10, "PEBS: ... PMC1 - expect 10 loads above 9 (got %lu)",
           (unsigned long)v[1]);
    pebs_ll_run("INST_RETIRED PEBS, PMC1 load latency above 9 with LL_EN: "
                "the 9th load's instruction (DRAM), its own load", 0x1000,
                0x4200c0, 8, 0x200000001ull, 9, 0x42100b, 9, PR_BX,
                b + 0x8000, 0x0c, 200, true);
    /*
     * LL_EN_PMC1 clear: PMC1 counts the L1 load (above 3), but the record
     * has the last load a counter with LL_EN counted: the L2 load at
     * instruction 10 of the run before
     */
    pebs_ll_run("INST_RETIRED PEBS, PMC1 load latency above 3 without "
                "LL_EN: the last LL_EN load before", 0x1000, 0x4200c0, 11, 1,
                3, 0x42100b, 12, PR_CX, b + 0x18, 0x03, 10, true);
    v[1] = rdmsr(MSR_IA32_PMC0 + 1);
    report(v[1] == 11, "PEBS: ... PMC1 - expect 11 loads above 3 (got %lu)",
           (unsigned long)v[1]);

    /*
     * Two events in one instruction: CMPSQ's two loads, both from L1.
     * Load latency above 3 with PMC0 := -2 (the MOV's load from DRAM, 1;
     * CMPSQ's first load, 2, overflows it): the second load of the CMPSQ
     * is the PEBS event, the record after it, at pebs_c3; L1D_HIT with
     * PMC0 := -1 the same.
     */
    pebs_clear();
    wrmsr(MSR_IA32_PERFEVTSEL0, 0x42100b);
    pebs_wrmsr(MSR_IA32_PEBS_ENABLE, ll0);
    pebs_wrmsr(MSR_PEBS_LD_LAT, 3);
    wrmsr(MSR_IA32_PERFEVTSEL0 + 1, 0x4201cb);
    pmu_zero();
    pebs_cmps_asm(3, a);
    pmc_read(v);
    report(v[0] == 3 && v[1] == 2, "MOV from DRAM, CMPSQ of two L1 loads: "
           "load latency above 3, L1D_HIT - expect 3, 2 (got %lu, %lu)",
           (unsigned long)v[0], (unsigned long)v[1]);
    for (i = 0; i < 2; i++) {
        static const u64 reset[4] = { -1000ull, 0, 0, 0 };
        u64 want[PEBS_FIELDS];
        u32 known = 1u << PR_IP | 1u << PR_SI | 1u << PR_DI | 1u << PR_SP |
                    1u << PR_STATUS;

        pebs_setup(2 * PEBS_RECORD, 2 * PEBS_RECORD, reset);
        pebs_pmc0(i ? 0x4201cb : 0x42100b, i ? 1 : 2, i ? 1 : ll0);
        pebs_wrmsr(MSR_PEBS_LD_LAT, 3);
        pebs_cmps_asm(1, a);
        pmc0 = rdmsr(MSR_IA32_PMC0);
        want[PR_IP] = (unsigned long)pebs_c3;
        want[PR_SI] = want[PR_DI] = b + 0x20;
        want[PR_SP] = pebs_saved_rsp;
        want[PR_STATUS] = 1;
        if (!i) {
            want[PR_DLA] = b + 0x18;
            want[PR_DSE] = 0x01;
            want[PR_LAT] = 4;
            known |= 1u << PR_DLA | 1u << PR_DSE | 1u << PR_LAT;
        }
        pebs_buf_report(i ? "L1D_HIT, PMC0 := -1: CMPSQ's 2nd load" :
                        "load latency above 3, PMC0 := -2: CMPSQ's 2nd load",
                        1);
        pebs_rec_report(i ? "L1D_HIT, CMPSQ's 2nd load" :
                        "load latency above 3, CMPSQ's 2nd load (L1)", 0,
                        want, known);
        report(pmc0 == (reset[0] & PEBS_MASK48), "PEBS: ... PMC0 the reset "
               "value, no load after - expect %lx (got %lx)",
               (unsigned long)(reset[0] & PEBS_MASK48), (unsigned long)pmc0);
    }

    /*
     * MEM_INST_RETIRED.LOADS (0BH 01H), PMC0 := -9: the 10th load
     * instruction.  No counter has LL_EN: the load latency fields are
     * still those of the last load one counted, the CMPSQ's second (L1).
     */
    pebs_ll_run("MEM_INST_RETIRED.LOADS, PMC0 := -9: the 10th load "
                "instruction, the fields of the CMPSQ's load before",
                0x1000, 0x42010b, 9, 1, 0, 0, 10, PR_CX, b + 0x18, 0x01, 4,
                true);
    pebs_wrmsr(MSR_PEBS_LD_LAT, 0);
    pebs_clear();
}

static void test_pebs(void)
{
    pebs_msr_faults = 0;
    test_pebs_msrs();
    test_pebs_insns();
    test_pebs_loop();
    test_pebs_branches();
    test_pebs_user();
    test_pebs_load_latency();
    report(pebs_msr_faults == 0, "PEBS: every WRMSR of IA32_PEBS_ENABLE and "
           "MSR_PEBS_LD_LAT_THRESHOLD with a valid value - expect no #GP "
           "(got %u)", pebs_msr_faults);
    pebs_clear();
    wrmsr(MSR_IA32_DS_AREA, 0);
    apic_write(APIC_LVTPC, PMI_VECTOR | APIC_LVT_MASKED);
    handle_irq(PMI_VECTOR, NULL);
}

int pmu_cost_main(void)
{
    report_prefix_push("pmu-cost");
    test_cost();
    report_prefix_pop();
    return report_summary();
}

int pmu_main(bool pmu)
{
    report_prefix_push(pmu ? "pmu" : "nopmu");
    if (pmu) {
        test_cpuid();
        test_reset_values();
        test_writes();
        test_rdpmc();
        test_counting_os();
        test_per_cycle();
        test_counting_usr();
        test_overflow();
        test_pmi();
        test_freeze();
        test_sampling();
        test_pmi_cpl_change();
        test_mispredicts();
        test_loads_stores();
        test_cache_events();
        test_btf();
        test_lbr();
        test_lbr_db();
        test_bts();
        test_pebs();
    } else {
        test_no_pmu();
    }
    test_irq_at_breakpoint();
    report_prefix_pop();
    return report_summary();
}
