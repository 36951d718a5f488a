/*
 * lwp-faults: LLWPCB's #GP checks, page faults and restart, and LWPVAL's
 * untouched memory operand
 *
 *   - LLWPCB raises #GP for an LWPCB that breaks the rules of spec 5.1 and
 *     6 (docs/implementation-choices.md row 14): BufferSize below the
 *     minimum of 32 records (also after rounding down to 32 bytes), a
 *     non-zero reserved field (bytes 20-23, 56-63, 68-71, 88..0x7F), a
 *     reserved Filters bit (24:13), a non-canonical LWPCB or ring buffer.
 *     In qemu-x86_64 #GP arrives as SIGSEGV with si_code SI_KERNEL (0x80)
 *     (row 37); REG_TRAPNO must be 13 where the emulator fills it in.
 *     After the #GP, LWP is disabled (the signal frame's LWP state has
 *     LWPCBAddress 0, also when it was enabled before; SLWPCB returns 0)
 *     and the LWPCB is unchanged.  Non-errors: the software
 *     bytes 72-87, reserved Flags bits, BufferSize not a multiple of 32.
 *   - An LWPCB on an unmapped page is a #PF (SEGV_MAPERR at that address).
 *   - Page-fault restart (5.1, row 25): with the LWPCB or the ring buffer on
 *     a read-only page, the SIGSEGV handler makes the page writable and
 *     returns; LLWPCB or LWPINS is retried and the record is stored exactly
 *     once, and nothing was written before the fault.  The same for a
 *     memory operand on a page the handler maps in.
 *   - LWPVAL's memory operand is not accessed unless LWPVAL stores a
 *     record (5.3): an inaccessible address gives no fault while LWP is
 *     disabled, while VAL is not enabled, or while the counter does not
 *     expire; when it does expire, LWPVAL faults without storing and
 *     without consuming the counter, so the restarted LWPVAL stores.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "lwp-test.h"

#define SI_KERNEL_CODE  0x80

static uint32_t avail;
static unsigned max_event;
static void *cb, *ring;

/* ---- #GP ----------------------------------------------------------------- */

struct gp_case {
    const char *what;
    unsigned off;       /* byte offset in the LWPCB */
    unsigned size;      /* 1, 4 or 8 */
    uint64_t value;
};

static int trapno_noted;

static void check_gp_fault(const char *what, int sig, const struct fault *f)
{
    report(sig == SIGSEGV && f->code == SI_KERNEL_CODE, "%s: #GP, i.e. "
           "SIGSEGV with si_code SI_KERNEL 0x80 (got %s, si_code 0x%x)", what,
           signame(sig), f->code);
    if (sig == SIGSEGV && f->trapno != -1) {
        report(f->trapno == 13, "%s: REG_TRAPNO is 13 (got %ld)", what,
               f->trapno);
    } else if (sig == SIGSEGV && !trapno_noted) {
        printf("note: REG_TRAPNO is -1: the emulator does not report the "
               "trap number, so only si_code is checked\n");
        trapno_noted = 1;
    }
}

static void gp_case(const struct gp_case *c, int enabled_before)
{
    uint8_t before[256];
    struct fault f;
    uint64_t v;
    char what[160];
    int sig;

    snprintf(what, sizeof(what), "%s%s", c->what,
             enabled_before ? " (LWP enabled before)" : "");
    lwp_off();
    if (enabled_before) {
        static uint8_t ring2[LT_RING_MIN] __attribute__((aligned(64)));
        static uint8_t cb2[256] __attribute__((aligned(64)));

        memset(cb2, 0, sizeof(cb2));
        wr32(cb2, LWPCB_BUFFER_SIZE, LT_RING_MIN);
        wr64(cb2, LWPCB_BUFFER_BASE, (uintptr_t)ring2);
        if (try_llwpcb(cb2, NULL)) {
            report(0, "%s: enabling a valid LWPCB first", what);
            return;
        }
        __lwpins64(1, 1, 1);
    }
    lwpcb_init(cb, ring, LT_RING_MIN, 0);
    memcpy((char *)cb + c->off, &c->value, c->size);
    memcpy(before, cb, sizeof(before));
    sig = try_llwpcb(cb, &f);
    check_gp_fault(what, sig, &f);
    /* the handler ran with LWP disabled (choice 43): see its frame */
    report(f.lwpcb == 0, "%s: the #GP disables LWP: the signal frame's LWP "
           "state has LWPCBAddress 0 (got 0x%llx)", what,
           (unsigned long long)f.lwpcb);
    sig = try_slwpcb(&v);
    report(sig == 0 && v == 0, "%s: LWP is left disabled (SLWPCB 0x%llx)",
           what, (unsigned long long)v);
    report(!memcmp(before, cb, sizeof(before)), "%s: the LWPCB is not "
           "written", what);
}

static void test_gp(void)
{
    static const struct gp_case cases[] = {
        { "BufferSize 0", LWPCB_BUFFER_SIZE, 4, 0 },
        { "BufferSize 992 (31 records)", LWPCB_BUFFER_SIZE, 4, 992 },
        { "BufferSize 1023 (992 after rounding down)",
          LWPCB_BUFFER_SIZE, 4, 1023 },
        { "reserved bytes 20-23 non-zero", 20, 4, 1 },
        { "reserved byte 60 (bytes 56-63) non-zero", 60, 1, 0x80 },
        { "reserved bytes 68-71 non-zero", 68, 4, 0x80000000u },
        { "reserved byte 88 (bytes 88..0x7F) non-zero", 88, 1, 1 },
        { "reserved byte 0x7F (bytes 88..0x7F) non-zero", 0x7f, 1, 1 },
        { "reserved Filters bit 13", LWPCB_FILTERS, 4, 1u << 13 },
        { "reserved Filters bit 24", LWPCB_FILTERS, 4, 1u << 24 },
        { "non-canonical BufferBase 0x0000800000000000", LWPCB_BUFFER_BASE,
          8, 0x0000800000000000ull },
        { "ring buffer 0x7ffffffffe00 + 1024 ends non-canonical",
          LWPCB_BUFFER_BASE, 8, 0x00007ffffffffe00ull },
    };
    struct fault f;
    uint64_t v;
    int sig;

    report_prefix("LLWPCB #GP");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gp_case(&cases[i], 0);
    }
    gp_case(&cases[1], 1);
    gp_case(&cases[3], 1);

    lwp_off();
    sig = try_llwpcb((void *)0x8000000000000000ull, &f);
    check_gp_fault("non-canonical LWPCB address 0x8000000000000000", sig, &f);
    sig = try_slwpcb(&v);
    report(sig == 0 && v == 0, "non-canonical LWPCB address: LWP is left "
           "disabled (SLWPCB 0x%llx)", (unsigned long long)v);

    report_prefix("LLWPCB accepts");
    {
        static const struct gp_case ok[] = {
            { "software bytes 72-87 non-zero", LWPCB_SOFTWARE, 8, ~0ull },
            { "software byte 87 non-zero", 87, 1, 0xff },
            { "BufferSize 1055 (1024 after rounding down)",
              LWPCB_BUFFER_SIZE, 4, 1055 },
            { "reserved Flags bits 0 and 7..30 set", LWPCB_FLAGS, 4,
              0x7fffff81u },
            { "Filters bits 25-31 without their capabilities", LWPCB_FILTERS,
              4, 0xfe000000u },
            { "Filters MinLatency and cache bits 0-12", LWPCB_FILTERS, 4,
              0x1fff },
        };

        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
            lwp_off();
            lwpcb_init(cb, ring, LT_RING_MIN, 0);
            memcpy((char *)cb + ok[i].off, &ok[i].value, ok[i].size);
            sig = try_llwpcb(cb, &f);
            v = 0;
            if (!sig) {
                try_slwpcb(&v);
            }
            report(sig == 0 && v == (uintptr_t)cb, "%s: no fault, LWP "
                   "enabled (got %s, si_code 0x%x)", ok[i].what, signame(sig),
                   f.code);
        }
        if (max_event >= 1) {
            lwp_off();
            lwpcb_init(cb, ring, LT_RING_MIN, 0);
            wr32(cb, LWPCB_INTERVAL(LWP_EVENT_OFFSET, 1), 0xfc000005u);
            wr32(cb, LWPCB_COUNTER(LWP_EVENT_OFFSET, 1), 0xfc000005u);
            sig = try_llwpcb(cb, &f);
            report(sig == 0, "EventInterval1/EventCounter1 reserved bits "
                   "31:26 set: no fault (row 14; got %s)", signame(sig));
        }
        if (avail & LWP_FEAT_VAL) {
            lwp_off();
            lwpcb_init(cb, ring, LT_RING_MIN, 0);
            wr32(cb, LWPCB_FLAGS, 0xffffffffu);
            wr32(cb, LWPCB_THRESHOLD, 0xffffffffu);
            sig = try_llwpcb(cb, &f);
            report(sig == 0 && rd32(cb, LWPCB_FLAGS) == (avail & ~1u),
                   "Flags 0xffffffff: no fault, written back as 0x%x (got 0x%x)",
                   avail & ~1u, rd32(cb, LWPCB_FLAGS));
        }
    }
    lwp_off();
}

/* ---- #PF and restart ----------------------------------------------------- */

static void *fix_page;          /* the page the hook makes accessible */
static int fix_count;
static uintptr_t fix_addr;
static int fix_code;
static int ring_clean_at_fault;
static uint32_t fix_fill;       /* value written into a newly mapped page */

static int fix_hook(const struct fault *f)
{
    uintptr_t p = (uintptr_t)fix_page;

    if (f->signo != SIGSEGV || !fix_page || f->addr < p ||
        f->addr >= p + 4096) {
        return 0;
    }
    fix_count++;
    fix_addr = f->addr;
    fix_code = f->code;
    ring_clean_at_fault = 1;
    for (unsigned i = 0; i < LT_RING_MIN; i++) {
        ring_clean_at_fault &= ((uint8_t *)ring)[i] == 0xa5;
    }
    mprotect(fix_page, 4096, PROT_READ | PROT_WRITE);
    if (fix_fill) {
        for (unsigned i = 0; i < 4096; i += 4) {
            wr32(fix_page, i, fix_fill);
        }
    }
    fix_page = NULL;            /* once only: a second fault is not fixed */
    return 1;
}

static void arm(void *page, uint32_t fill)
{
    fix_page = page;
    fix_count = 0;
    fix_addr = 0;
    fix_code = 0;
    fix_fill = fill;
}

static void test_pf(void)
{
    struct fault f;
    uint64_t v;
    uint8_t cf = 0xff;
    int sig;
    void *none = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    void *cb2 = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    report_prefix("page faults");
    lwp_off();
    sig = try_llwpcb(none, &f);
    report(sig == SIGSEGV && f.code != SI_KERNEL_CODE &&
           f.addr == (uintptr_t)none, "LLWPCB of an inaccessible LWPCB: #PF "
           "(SIGSEGV, si_addr %p; got %s, si_code 0x%x, si_addr 0x%lx)", none,
           signame(sig), f.code, (unsigned long)f.addr);

    /* an LWPCB whose last 64 bytes' successor page is inaccessible */
    munmap((char *)cb2 + 4096, 4096);
    mmap((char *)cb2 + 4096, 4096, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    {
        void *edge = (char *)cb2 + 4096 - 64;

        memset(edge, 0, 64);
        wr32(edge, LWPCB_BUFFER_SIZE, LT_RING_MIN);
        wr64(edge, LWPCB_BUFFER_BASE, (uintptr_t)ring);
        sig = try_llwpcb(edge, &f);
        report(sig == SIGSEGV && f.code != SI_KERNEL_CODE &&
               f.addr >= (uintptr_t)cb2 + 4096 && f.addr < (uintptr_t)cb2 +
               8192, "LLWPCB of an LWPCB that runs into an inaccessible page: "
               "#PF in that page (got %s, si_code 0x%x, si_addr 0x%lx)",
               signame(sig), f.code, (unsigned long)f.addr);
        try_slwpcb(&v);
        report(v == 0, "after the #PF LWP is disabled (SLWPCB 0x%llx)",
               (unsigned long long)v);
    }

    report_prefix("restart");
    install_fault_handlers(0);
    lt_hook = fix_hook;

    /* LLWPCB with the LWPCB read-only: the write-back faults */
    lwp_off();
    lwpcb_init(cb, ring, LT_RING_MIN, 0xffffffffu);
    wr32(cb, LWPCB_THRESHOLD, 0xffffffffu);
    mprotect(cb, 4096, PROT_READ);
    arm(cb, 0);
    sig = try_llwpcb(cb, &f);
    v = 0;
    if (!sig) {
        try_slwpcb(&v);
    }
    report(sig == 0 && fix_count == 1 && fix_code == SEGV_ACCERR &&
           v == (uintptr_t)cb, "LLWPCB of a read-only LWPCB: one write fault "
           "(SEGV_ACCERR) in the LWPCB, the handler makes it writable, the "
           "retry enables LWP (faults %d, si_code %d, %s, SLWPCB 0x%llx)",
           fix_count, fix_code, signame(sig), (unsigned long long)v);
    report(rd32(cb, LWPCB_FLAGS) == (0xffffffffu & avail & ~1u),
           "after the retry Flags is written back (0x%x, got 0x%x)",
           0xffffffffu & avail & ~1u, rd32(cb, LWPCB_FLAGS));
    lwp_off();

    /* LWPINS with the ring read-only */
    lwpcb_init(cb, ring, LT_RING_MIN, 0);
    if (try_llwpcb(cb, NULL)) {
        report(0, "LLWPCB of a valid LWPCB executes");
        goto out;
    }
    mprotect(ring, 4096, PROT_READ);
    arm(ring, 0);
    cf = __lwpins64(0x1234, 0x5678, 0x9abc);
    report(fix_count == 1 && fix_addr == (uintptr_t)ring &&
           fix_code == SEGV_ACCERR, "LWPINS into a read-only ring: one write "
           "fault at the head slot %p (faults %d at 0x%lx, si_code %d)", ring,
           fix_count, (unsigned long)fix_addr, fix_code);
    report(cf == 0 && rd32(cb, LWPCB_HEAD) == 32 && rd64(cb, LWPCB_MISSED) == 0
           && read_rec(ring, 0).data1 == 0x5678 &&
           read_rec(ring, 0).data2 == 0x1234 &&
           ((uint8_t *)ring)[32] == 0xa5, "after the retry exactly one "
           "record: CF 0, head 32, MissedEvents 0 (got CF %u, head %u, "
           "missed %llu)", cf, rd32(cb, LWPCB_HEAD),
           (unsigned long long)rd64(cb, LWPCB_MISSED));

    /* LWPINS with the LWPCB read-only: the head write faults */
    mprotect(cb, 4096, PROT_READ);
    arm(cb, 0);
    cf = __lwpins64(0x2222, 0x3333, 0x4444);
    report(fix_count == 1 && fix_code == SEGV_ACCERR, "LWPINS with a "
           "read-only LWPCB: one write fault in the LWPCB (faults %d, "
           "si_code %d)", fix_count, fix_code);
    report(cf == 0 && rd32(cb, LWPCB_HEAD) == 64 &&
           rd64(cb, LWPCB_MISSED) == 0 && read_rec(ring, 32).data1 == 0x3333 &&
           ((uint8_t *)ring)[64] == 0xa5, "after the retry exactly one more "
           "record at +32: head 64, MissedEvents 0 (got head %u, missed %llu)",
           rd32(cb, LWPCB_HEAD), (unsigned long long)rd64(cb, LWPCB_MISSED));
    lwp_off();

    /* nothing is written before the fault: check the ring at fault time */
    lwpcb_init(cb, ring, LT_RING_MIN, 0);
    try_llwpcb(cb, NULL);
    mprotect(cb, 4096, PROT_READ);
    arm(cb, 0);
    __lwpins64(1, 1, 1);
    report(fix_count == 1 && ring_clean_at_fault, "LWPINS that faults on the "
           "LWPCB has written nothing to the ring at the time of the fault");
    lwp_off();

    /* a two-page ring whose second page is read-only */
    {
        uint8_t *big = page_alloc(8192);
        unsigned i;

        lwpcb_init(cb, big, 8192, 0);
        wr32(cb, LWPCB_HEAD, 4096 - 32);
        wr32(cb, LWPCB_TAIL, 4096 - 32);
        try_llwpcb(cb, NULL);
        mprotect(big + 4096, 4096, PROT_READ);
        arm(big + 4096, 0);
        __lwpins64(7, 7, 7);            /* at 4064, page 1 */
        __lwpins64(8, 8, 8);            /* at 4096, page 2: faults */
        i = 0;
        while (i < 32 && big[4128 + i] == 0xa5) {
            i++;
        }
        report(fix_count == 1 && rd32(cb, LWPCB_HEAD) == 4128 &&
               read_rec(big, 4064).data1 == 7 &&
               read_rec(big, 4096).data1 == 8 && i == 32,
               "a record on a read-only second ring page: one fault, then "
               "stored once at +4096 (faults %d, head %u)", fix_count,
               rd32(cb, LWPCB_HEAD));
        lwp_off();
        munmap(big, 8192);
    }

    /* LWPINS with its memory operand on an inaccessible page */
    lwpcb_init(cb, ring, LT_RING_MIN, 0);
    try_llwpcb(cb, NULL);
    arm(none, 0x600df00d);
    {
        uint64_t ip;

        /* volatile: the operand is read although the compiler sees none */
        LWPINS64M_AT(cf, ip, 9, *(volatile uint32_t *)none, 9);
        report(fix_count == 1 && fix_addr == (uintptr_t)none &&
               rd32(cb, LWPCB_HEAD) == 32 &&
               read_rec(ring, 0).data1 == 0x600df00d &&
               read_rec(ring, 0).ip == ip && ((uint8_t *)ring)[32] == 0xa5,
               "LWPINS with an inaccessible memory operand: one fault at "
               "the operand, then one record with Data1 from the page the "
               "handler provided (faults %d, head %u, Data1 0x%x)", fix_count,
               rd32(cb, LWPCB_HEAD), read_rec(ring, 0).data1);
    }
    lwp_off();
    mprotect(none, 4096, PROT_NONE);

out:
    lt_hook = NULL;
    fix_page = NULL;
    munmap(none, 8192);
    munmap(cb2, 8192);
}

/* ---- LWPVAL's memory operand --------------------------------------------- */

/* volatile: LWPVAL reads through it, invisibly to the compiler */
static volatile uint32_t *val_op;

static void do_lwpval_mem(void *arg)
{
    uint64_t ip;

    LWPVAL64M_AT(ip, 0x77, *val_op, 0x11);
    *(uint64_t *)arg = ip;
}

static void test_lwpval_operand(void)
{
    const unsigned e = LWP_EVENT_OFFSET;
    void *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    uint32_t good = 0xc0ffee;
    uint64_t ip;
    struct fault f;
    int sig;

    report_prefix("LWPVAL operand");
    val_op = none;
    lwp_off();
    sig = guarded(do_lwpval_mem, &ip, &f);
    report(sig == 0, "LWP disabled: LWPVAL with an inaccessible memory "
           "operand does not touch it (got %s)", signame(sig));

    lwpcb_init(cb, ring, LT_RING_MIN, 0);
    try_llwpcb(cb, NULL);
    sig = guarded(do_lwpval_mem, &ip, &f);
    report(sig == 0 && rd32(cb, LWPCB_HEAD) == 0, "VAL not enabled: no "
           "access, no record (got %s)", signame(sig));
    lwp_off();

    if (!(avail & LWP_FEAT_VAL)) {
        report_skip("VAL not available: LWPVAL counting with an "
                    "inaccessible operand not checked");
        goto out;
    }
    /*
     * interval 2, counter 2: the 3rd LWPVAL expires.  The SIGSEGV handler
     * maps its operand in and returns, so the LWPVAL is restarted (a
     * handler left with siglongjmp would leave LWP disabled, choice 43).
     */
    lwpcb_init(cb, ring, LT_RING_MIN, LWP_FEAT_VAL);
    wr32(cb, LWPCB_INTERVAL(e, 1), 2);
    wr32(cb, LWPCB_COUNTER(e, 1), 2);
    try_llwpcb(cb, NULL);
    sig = guarded(do_lwpval_mem, &ip, &f);
    sig |= guarded(do_lwpval_mem, &ip, &f);
    report(sig == 0 && rd32(cb, LWPCB_HEAD) == 0, "counter not expiring: "
           "two LWPVAL with an inaccessible operand, no fault, no record "
           "(got %s)", signame(sig));
    lt_hook = fix_hook;
    arm(none, 0xc0ffee);
    sig = guarded(do_lwpval_mem, &ip, &f);
    lt_hook = NULL;
    report(sig == 0 && fix_count == 1 && fix_addr == (uintptr_t)none,
           "counter expiring: LWPVAL reads the operand, one #PF at %p (got "
           "%d at 0x%lx)", none, fix_count, (unsigned long)fix_addr);
    report(ring_clean_at_fault, "the faulting LWPVAL stores nothing before "
           "its fault");
    report(rd32(cb, LWPCB_HEAD) == 32 && read_rec(ring, 0).data1 == 0xc0ffee
           && read_rec(ring, 0).ip == ip && read_rec(ring, 0).event_id == 1,
           "the faulting LWPVAL did not consume the counter: restarted, it "
           "stores (head %u, Data1 0x%x)", rd32(cb, LWPCB_HEAD),
           read_rec(ring, 0).data1);
    val_op = &good;
    guarded(do_lwpval_mem, &ip, &f);
    guarded(do_lwpval_mem, &ip, &f);
    report(rd32(cb, LWPCB_HEAD) == 32, "then the counter restarts from the "
           "interval: the next two store nothing (head %u)",
           rd32(cb, LWPCB_HEAD));
    lwp_off();
    mprotect(none, 4096, PROT_NONE);

    /* restart: the handler maps the operand's page in */
    lwpcb_init(cb, ring, LT_RING_MIN, LWP_FEAT_VAL);
    try_llwpcb(cb, NULL);
    install_fault_handlers(0);
    lt_hook = fix_hook;
    arm(none, 0xabad1dea);
    val_op = none;
    sig = guarded(do_lwpval_mem, &ip, &f);
    report(sig == 0 && fix_count == 1 && rd32(cb, LWPCB_HEAD) == 32 &&
           read_rec(ring, 0).data1 == 0xabad1dea && read_rec(ring, 0).ip == ip,
           "interval 0, operand page made accessible by the handler: one "
           "fault, then exactly one record with Data1 0x%x (faults %d, head "
           "%u, Data1 0x%x)", 0xabad1dea, fix_count, rd32(cb, LWPCB_HEAD),
           read_rec(ring, 0).data1);
    lt_hook = NULL;
    lwp_off();
out:
    munmap(none, 4096);
}

int main(void)
{
    uint32_t a, b, c, d;

    setvbuf(stdout, NULL, _IOLBF, 0);
    install_fault_handlers(0);
    if (!lwp_supported()) {
        report(0, "LWP is supported (CPUID 8000_0001 ECX[15]): run with "
               "-cpu ...,+lwp");
        return report_summary("lwp-faults");
    }
    avail = lwp_available();
    __cpuid(LWP_CPUID_LEAF, a, b, c, d);
    max_event = (b >> LWP_CPUID_EBX_MAXEVENTS_SHIFT) & 0xff;
    cb = page_alloc(4096);
    ring = page_alloc(4096);
    if (!lwp_insns_work()) {
        return report_summary("lwp-faults");
    }
    test_gp();
    test_pf();
    test_lwpval_operand();
    report_prefix("");
    return report_summary("lwp-faults");
}
