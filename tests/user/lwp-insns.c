/*
 * lwp-insns: LLWPCB, SLWPCB, LWPINS and LWPVAL as a program sees them
 *
 * Built with gcc -mlwp: the intrinsics of <x86intrin.h> (__llwpcb,
 * __slwpcb, __lwpins32/64, __lwpval32/64) and, where the test needs the
 * address of the instruction, the same instructions in inline asm behind
 * a label.  Checks, with the spec section or the implementation choice
 * (docs/implementation-choices.md row N) each one follows:
 *   - SLWPCB returns 0 while LWP is disabled and the LWPCB's effective
 *     address while it is enabled (5.2); 32-bit forms truncate (5.1, 5.2);
 *   - LLWPCB writes back Flags AND the available features, each enabled
 *     event's interval raised to its minimum (0 for LWPVAL, 1 for the
 *     counted events), the sanitised head, and nothing else (5.1, rows
 *     15, 17, 24);
 *   - every field of LWPINS and LWPVAL records (2.1, 2.7, 5.3, 5.4):
 *     EventId, CoreId 0 (row 11), Flags = imm16, Data1 = reg/mem32,
 *     InstructionAddress = the instruction, Data2 = the vvvv register,
 *     zero-extended for the 32-bit forms, bytes 24-31 zero (row 29);
 *   - the head is in the LWPCB after every store (row 21);
 *   - a ring of 32 records (the minimum, 1024 bytes) holds 31; when full,
 *     LWPINS sets CF, overwrites the slot at the head and counts
 *     MissedEvents; a consumer that moves the tail makes room and the head
 *     wraps (5.4, 6, row 21);
 *   - LWPINS with LWP disabled only clears CF (5.4);
 *   - LWPVAL with interval 0 stores every time, with interval 2 every third
 *     time, and SLWPCB writes the counter back (5.3, 6, row 26); LWPVAL
 *     does nothing while VAL is not enabled or not available (5.3);
 *   - LLWPCB 0 after SLWPCB disables, and LLWPCB of the saved address
 *     resumes at the flushed head (5.1 notes).
 *
 * The LWPVAL checks need VAL to be available (CPUID 8000_001C EAX[1]):
 * run.sh runs this program with -cpu max,+lwp, Opteron_G4,+lwp and
 * max,+lwp,-lwp-val (where LWPVAL must do nothing).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "lwp-test.h"

static uint32_t avail;
static unsigned cb_size;        /* LwpCbSize * 8 */
static unsigned max_event;      /* LwpMaxEvents */

static void *cb, *ring;

/* every field of one record */
static void check_rec(const char *what, uint32_t off, uint8_t id,
                      uint16_t flags, uint32_t d1, uint64_t ip, uint64_t d2)
{
    struct rec r = read_rec(ring, off);
    int ok = r.event_id == id && r.core_id == 0 && r.flags == flags &&
             r.data1 == d1 && r.ip == ip && r.data2 == d2 && r.reserved == 0;

    report(ok, "%s: record at +%u is {EventId %u, CoreId 0, Flags 0x%x, "
           "Data1 0x%x, InstructionAddress 0x%llx, Data2 0x%llx, bytes 24-31 0}",
           what, off, id, flags, d1, (unsigned long long)ip,
           (unsigned long long)d2);
    if (!ok) {
        printf("    got {EventId %u, CoreId %u, Flags 0x%x, Data1 0x%x, "
               "InstructionAddress 0x%llx, Data2 0x%llx, bytes 24-31 0x%llx}\n",
               r.event_id, r.core_id, r.flags, r.data1,
               (unsigned long long)r.ip, (unsigned long long)r.data2,
               (unsigned long long)r.reserved);
    }
}

/* the slot at off was not written (still the 0xA5 fill) */
static int slot_untouched(uint32_t off)
{
    for (unsigned i = 0; i < LT_REC; i++) {
        if (((uint8_t *)ring)[off + i] != 0xa5) {
            return 0;
        }
    }
    return 1;
}

static uint32_t head(void)
{
    return rd32(cb, LWPCB_HEAD);
}

static uint64_t missed(void)
{
    return rd64(cb, LWPCB_MISSED);
}

/* LLWPCB of a fresh LWPCB; reports only when it faults */
static int enable(uint32_t flags, uint32_t size)
{
    struct fault f;
    int sig;

    lwp_off();
    lwpcb_init(cb, ring, size, flags);
    sig = try_llwpcb(cb, &f);
    if (sig) {
        report(0, "LLWPCB of a valid LWPCB (Flags 0x%x, BufferSize %u) "
               "executes (got %s, si_code 0x%x)", flags, size, signame(sig),
               f.code);
    }
    return sig == 0;
}

/* LLWPCB with a 32-bit register: "truncated to 32 bits" (5.1) */
static void llwpcb32(void *arg)
{
    __asm__ volatile("llwpcb %k0" : : "r"(*(uint64_t *)arg) : "memory");
}

static void test_slwpcb(void)
{
    uint64_t v;
    uint32_t v32 = 0x12345678;
    void *low;
    int sig;

    report_prefix("SLWPCB");
    lwp_off();
    sig = try_slwpcb(&v);
    report(sig == 0 && v == 0, "returns 0 while LWP is disabled "
           "(got 0x%llx, %s)", (unsigned long long)v, signame(sig));
    if (!enable(0, LT_RING_MIN)) {
        return;
    }
    sig = try_slwpcb(&v);
    report(sig == 0 && v == (uintptr_t)cb, "returns the LWPCB address %p "
           "while enabled (got 0x%llx)", cb, (unsigned long long)v);
    v = (uintptr_t)__slwpcb();
    report(v == (uintptr_t)cb, "__slwpcb() returns the LWPCB address %p "
           "(got 0x%llx)", cb, (unsigned long long)v);
    __asm__ volatile("slwpcb %0" : "+r"(v32));
    report(v32 == (uint32_t)(uintptr_t)cb, "the 32-bit form returns the low "
           "32 bits 0x%x (got 0x%x)", (uint32_t)(uintptr_t)cb, v32);

    /* LLWPCB with a 32-bit register: the address is truncated (5.1) */
    report_prefix("LLWPCB r32");
    low = mmap((void *)0x50000000, 4096, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (low == (void *)0x50000000) {
        static const uint64_t junk[] = {
            0x0000000150000000ull, 0xdead000050000000ull,
        };

        for (unsigned i = 0; i < 2; i++) {
            struct fault f;

            lwp_off();
            lwpcb_init(low, ring, LT_RING_MIN, 0);
            sig = guarded(llwpcb32, (void *)&junk[i], &f);
            v = sig ? 0 : (uintptr_t)__slwpcb();
            report(sig == 0 && v == 0x50000000, "LLWPCB with a 32-bit "
                   "register ignores RAX[63:32] (0x%llx -> LWPCB 0x50000000; "
                   "got %s%s, SLWPCB 0x%llx)", (unsigned long long)junk[i],
                   signame(sig), sig == SIGSEGV ? (f.code == 0x80 ?
                   " #GP" : " #PF") : "", (unsigned long long)v);
        }
        lwp_off();
        munmap(low, 4096);
    } else {
        report_skip("cannot map an LWPCB at 0x50000000: LLWPCB r32 not "
                    "checked");
    }
    report_prefix("SLWPCB");
    lwp_off();
    v = (uintptr_t)__slwpcb();
    report(v == 0, "returns 0 again after LLWPCB 0 (got 0x%llx)",
           (unsigned long long)v);
}

static void test_writeback(void)
{
    uint32_t want_flags = 0xffffffffu & avail & ~1u;
    const unsigned e = LWP_EVENT_OFFSET;
    uint32_t iv[LWP_NUM_EVENTS + 1];
    unsigned n;
    int ok;

    report_prefix("LLWPCB write-back");
    lwp_off();
    lwpcb_init(cb, ring, LT_RING_MIN + 31, 0xffffffffu);
    wr32(cb, LWPCB_HEAD, 0x41);
    wr32(cb, LWPCB_THRESHOLD, 0xffffffffu);     /* no interrupt ever */
    wr32(cb, LWPCB_TAIL, 0x40);
    wr32(cb, LWPCB_SOFTWARE, 0x5a5a5a5a);       /* never touched */
    for (n = 1; n <= max_event; n++) {
        /* VAL: -5 (negative); events 2..: 0 (below the minimum) */
        iv[n] = n == 1 ? 0xfffffffbu : 0;
        wr32(cb, LWPCB_INTERVAL(e, n), iv[n]);
        wr32(cb, LWPCB_COUNTER(e, n), LWPCB_INTERVAL_MAX);
    }
    if (try_llwpcb(cb, NULL)) {
        report(0, "LLWPCB of an LWPCB asking for every feature executes");
        return;
    }
    report(rd32(cb, LWPCB_FLAGS) == want_flags, "Flags 0xffffffff is written "
           "back as requested AND available (EAX 0x%x, bit 0 reserved): 0x%x "
           "(got 0x%x)", avail, want_flags, rd32(cb, LWPCB_FLAGS));
    report(head() == 0x40, "BufferHeadOffset 0x41 is written back rounded "
           "down to 0x40 (got 0x%x)", head());
    report(rd32(cb, LWPCB_BUFFER_SIZE) == LT_RING_MIN + 31 &&
           rd64(cb, LWPCB_BUFFER_BASE) == (uintptr_t)ring &&
           rd32(cb, LWPCB_TAIL) == 0x40 &&
           rd32(cb, LWPCB_SOFTWARE) == 0x5a5a5a5a &&
           rd32(cb, LWPCB_THRESHOLD) == 0xffffffffu,
           "BufferSize, BufferBase, BufferTailOffset, Threshold and the "
           "software bytes are not written");
    for (n = 1; n <= max_event; n++) {
        uint32_t got = rd32(cb, LWPCB_INTERVAL(e, n));
        int on = (want_flags >> n) & 1;
        uint32_t want = !on ? iv[n] : n == 1 ? 0 : 1;

        report(got == want, "EventInterval%u 0x%x is %s: 0x%x (got 0x%x)", n,
               iv[n], !on ? "left alone (event not available)"
               : n == 1 ? "negative, written back as 0 (LWPVAL minimum 0)"
               : "below the minimum, written back as 1", want, got);
    }
    lwp_off();

    if (!(avail & LWP_FEAT_VAL)) {
        report_skip("VAL not available: EventInterval1 0 and 7 with VAL "
                    "enabled not checked");
        return;
    }
    for (uint32_t v = 0; v <= 7; v += 7) {
        lwpcb_init(cb, ring, LT_RING_MIN, LWP_FEAT_VAL);
        wr32(cb, LWPCB_INTERVAL(e, 1), v);
        ok = try_llwpcb(cb, NULL) == 0;
        report(ok && rd32(cb, LWPCB_INTERVAL(e, 1)) == v, "EventInterval1 "
               "%u is kept with VAL enabled (the LWPVAL minimum is 0; got 0x%x)",
               v, rd32(cb, LWPCB_INTERVAL(e, 1)));
        lwp_off();
    }
}

static void test_lwpins(void)
{
    uint64_t ip;
    uint8_t cf = 0xff;
    uint32_t mem = 0x600dcafe;
    uint64_t v;

    report_prefix("LWPINS");
    if (!enable(0, LT_RING_MIN)) {
        return;
    }
    LWPINS64_AT(cf, ip, 0x1122334455667788ull, 0xcafebabe, 0x12345678);
    report(cf == 0, "CF is 0 when the record fits (got %u)", cf);
    check_rec("lwpins $0x12345678, r32, r64", 0, LWP_EVENT_ID_INS, 0x5678,
              0xcafebabe, ip, 0x1122334455667788ull);
    report(head() == 32, "the head in the LWPCB is 32 right after the store "
           "(got %u)", head());
    report(slot_untouched(32), "the next slot is not written");

    LWPINS32_AT(cf, ip, 0xffffffffdeadbeefull, 0x1, 0xffff);
    check_rec("lwpins $0xffff, r32, r32: Data2 zero-extended", 32,
              LWP_EVENT_ID_INS, 0xffff, 1, ip, 0xdeadbeef);

    LWPINS64M_AT(cf, ip, 0, mem, 0x10000);
    check_rec("lwpins $0x10000, m32, r64: Data1 from memory, Flags = imm "
              "bits 15:0", 64, LWP_EVENT_ID_INS, 0, 0x600dcafe, ip, 0);

    cf = __lwpins64(0x8000000000000001ull, 0x7fffffff, 0xabcd);
    report(cf == 0, "__lwpins64 returns CF 0 (got %u)", cf);
    {
        struct rec r = read_rec(ring, 96);

        report(r.event_id == 255 && r.flags == 0xabcd &&
               r.data1 == 0x7fffffff && r.data2 == 0x8000000000000001ull,
               "__lwpins64(0x8000000000000001, "
               "0x7fffffff, 0xabcd) stores EventId 255 and its operands");
    }
    cf = __lwpins32(0x87654321, 5, 7);
    {
        struct rec r = read_rec(ring, 128);

        report(cf == 0 && r.event_id == 255 && r.flags == 7 && r.data1 == 5 &&
               r.data2 == 0x87654321, "__lwpins32(0x87654321, 5, 7) stores "
               "EventId 255, Data2 0x87654321 and returns CF 0");
    }
    report(head() == 160 && missed() == 0, "after 5 records: head 160, "
           "MissedEvents 0 (got %u, %llu)", head(),
           (unsigned long long)missed());

    /* disable, re-enable at the flushed head (5.1 notes) */
    v = (uintptr_t)__slwpcb();
    __llwpcb(0);
    report((uintptr_t)__slwpcb() == 0, "LLWPCB 0 disables");
    __llwpcb((void *)(uintptr_t)v);
    LWPINS64_AT(cf, ip, 6, 6, 6);
    check_rec("re-enabled with the saved LWPCB: the next record follows "
              "the flushed head", 160, LWP_EVENT_ID_INS, 6, 6, ip, 6);
    lwp_off();

    /* disabled: CF cleared, nothing stored */
    memset(ring, 0xa5, LT_RING_MIN);
    __asm__ volatile("stc\n\t"
                     "lwpins $1, %%eax, %%rax\n\t"
                     "setc %0" : "=qm"(cf) : "a"(0) : "cc", "memory");
    report(cf == 0 && slot_untouched(0) && slot_untouched(160),
           "with LWP disabled it clears CF and stores nothing (CF %u)", cf);
}

static void test_ring(void)
{
    uint8_t cf;
    uint64_t ip;
    unsigned i, bad = 0;

    report_prefix("ring of 32 records");
    if (!enable(0, LT_RING_MIN)) {
        return;
    }
    for (i = 0; i < 31; i++) {
        cf = __lwpins64(i, i, 0);
        if (cf || head() != 32 * (i + 1)) {
            bad++;
        }
    }
    report(bad == 0 && head() == 992, "31 LWPINS fit, each with CF 0 and "
           "the head advanced by 32 (head %u)", head());
    LWPINS64_AT(cf, ip, 31, 31, 31);
    report(cf == 1, "the 32nd LWPINS (head + 32 would equal the tail) "
           "returns CF 1 (got %u)", cf);
    report(head() == 992 && missed() == 1, "the head stays at 992, "
           "MissedEvents is 1 (got %u, %llu)", head(),
           (unsigned long long)missed());
    check_rec("full: the record overwrites the slot at the head", 992,
              LWP_EVENT_ID_INS, 31, 31, ip, 31);
    cf = __lwpins64(32, 32, 32);
    report(cf == 1 && missed() == 2 && read_rec(ring, 992).data1 == 32,
           "again full: CF 1, MissedEvents 2, slot 992 holds the newest "
           "record (Data1 %u)", read_rec(ring, 992).data1);
    report(read_rec(ring, 960).data1 == 30, "the 31st record (+960) is kept");

    /* the consumer frees 10 records */
    wr32(cb, LWPCB_TAIL, 320);
    LWPINS64_AT(cf, ip, 33, 33, 33);
    report(cf == 0 && head() == 0, "after the tail moves to 320, LWPINS "
           "stores again (CF %u) and the head wraps to 0 (head %u)", cf,
           head());
    check_rec("stored at the end of the ring", 992, LWP_EVENT_ID_INS, 33, 33,
              ip, 33);
    bad = 0;
    for (i = 0; i < 9; i++) {
        cf = __lwpins64(100 + i, 100 + i, 0);
        if (cf || read_rec(ring, 32 * i).data1 != 100 + i) {
            bad++;
        }
    }
    report(bad == 0 && head() == 288, "9 more fit after the wrap, at +0.."
           "+256 (head %u)", head());
    cf = __lwpins64(200, 200, 0);
    report(cf == 1 && head() == 288 && missed() == 3, "then the ring is full "
           "again one record before the tail: CF 1, head 288, MissedEvents 3 "
           "(got %u, %u, %llu)", cf, head(), (unsigned long long)missed());
    report(read_rec(ring, 320).data1 == 10, "the unconsumed record at the "
           "tail (+320) is not overwritten");
    lwp_off();
}

static void test_lwpval(void)
{
    const unsigned e = LWP_EVENT_OFFSET;
    uint64_t ip, ips[10];
    uint32_t mem = 0x0badf00d;
    unsigned i, bad = 0;

    report_prefix("LWPVAL");
    if (!(avail & LWP_FEAT_VAL)) {
        /* 5.3: nothing happens, whatever the operands */
        if (!enable(LWP_FEAT_VAL, LT_RING_MIN)) {
            return;
        }
        report(!(rd32(cb, LWPCB_FLAGS) & LWP_FEAT_VAL), "VAL is not "
               "available, so LLWPCB clears it in Flags (got 0x%x)",
               rd32(cb, LWPCB_FLAGS));
        for (i = 0; i < 5; i++) {
            __lwpval64(i, i, i);
        }
        report(head() == 0 && slot_untouched(0), "LWPVAL does nothing while "
               "VAL is not available (head %u)", head());
        lwp_off();
        report_skip("VAL not available (CPUID 8000_001C EAX[1] = 0): LWPVAL "
                    "records not checked");
        return;
    }

    /* interval 0: every LWPVAL stores */
    lwp_off();
    lwpcb_init(cb, ring, LT_RING_MIN, LWP_FEAT_VAL);
    if (try_llwpcb(cb, NULL)) {
        report(0, "LLWPCB with Flags VAL executes");
        return;
    }
    LWPVAL64_AT(ip, 0xfedcba9876543210ull, 0x13579bdf, 0x2468ace0);
    check_rec("interval 0: lwpval $0x2468ace0, r32, r64", 0,
              LWP_EVENT_ID_VAL, 0xace0, 0x13579bdf, ip, 0xfedcba9876543210ull);
    LWPVAL32_AT(ip, 0xffffffff80000000ull, 2, 1);
    check_rec("interval 0: lwpval $1, r32, r32: Data2 zero-extended", 32,
              LWP_EVENT_ID_VAL, 1, 2, ip, 0x80000000);
    LWPVAL64M_AT(ip, 3, mem, 3);
    check_rec("interval 0: lwpval $3, m32, r64: Data1 from memory", 64,
              LWP_EVENT_ID_VAL, 3, 0x0badf00d, ip, 3);
    __lwpval64(4, 4, 4);
    __lwpval32(5, 5, 5);
    report(head() == 160 && read_rec(ring, 96).data1 == 4 &&
           read_rec(ring, 128).data1 == 5, "interval 0: each of 5 LWPVAL "
           "stores one record (head %u)", head());
    lwp_off();

    /* interval 2, counter 2: the 3rd, 6th and 9th LWPVAL store */
    lwpcb_init(cb, ring, LT_RING_MIN, LWP_FEAT_VAL);
    wr32(cb, LWPCB_INTERVAL(e, 1), 2);
    wr32(cb, LWPCB_COUNTER(e, 1), 2);
    if (try_llwpcb(cb, NULL)) {
        report(0, "LLWPCB with Flags VAL, interval 2 executes");
        return;
    }
    for (i = 1; i <= 10; i++) {
        LWPVAL64_AT(ips[i - 1], i, i, 0x77);
    }
    report(head() == 96, "interval 2: 10 LWPVAL store 3 records (head %u, "
           "expected 96)", head());
    for (i = 0; i < 3; i++) {
        struct rec r = read_rec(ring, 32 * i);

        if (r.event_id != 1 || r.data1 != 3 * (i + 1) ||
            r.ip != ips[3 * i + 2]) {
            bad++;
        }
    }
    report(bad == 0, "interval 2: the records are those of the 3rd, 6th and "
           "9th LWPVAL (Data1 %u, %u, %u)", read_rec(ring, 0).data1,
           read_rec(ring, 32).data1, read_rec(ring, 64).data1);
    __slwpcb();
    report((rd32(cb, LWPCB_COUNTER(e, 1)) & 0x3ffffff) == 1, "SLWPCB writes "
           "the counter back: 2 after the 9th, 1 after the 10th (got 0x%x)",
           rd32(cb, LWPCB_COUNTER(e, 1)));
    report(rd32(cb, LWPCB_INTERVAL(e, 1)) == 2, "EventInterval1 2 is kept "
           "(got 0x%x)", rd32(cb, LWPCB_INTERVAL(e, 1)));
    lwp_off();

    /* enabled, but VAL not in Flags: nothing */
    if (!enable(0, LT_RING_MIN)) {
        return;
    }
    for (i = 0; i < 5; i++) {
        __lwpval64(i, i, i);
    }
    report(head() == 0 && slot_untouched(0), "LWPVAL does nothing when VAL "
           "is not enabled in Flags (head %u)", head());
    lwp_off();
    __lwpval64(1, 1, 1);
    report(slot_untouched(0), "LWPVAL does nothing while LWP is disabled");
}

int main(void)
{
    uint32_t a, b, c, d;

    setvbuf(stdout, NULL, _IOLBF, 0);
    install_fault_handlers(0);
    if (!lwp_supported()) {
        report(0, "LWP is supported (CPUID 8000_0001 ECX[15]): run with "
               "-cpu ...,+lwp");
        return report_summary("lwp-insns");
    }
    avail = lwp_available();
    __cpuid(LWP_CPUID_LEAF, a, b, c, d);
    cb_size = (b & 0xff) * 8;
    max_event = (b >> LWP_CPUID_EBX_MAXEVENTS_SHIFT) & 0xff;
    printf("CPUID 8000_001C: EAX 0x%x EBX 0x%x "
           "(LWPCB %u bytes, events 1..%u)\n",
           a, b, cb_size, max_event);
    if (max_event > LWP_NUM_EVENTS) {
        max_event = LWP_NUM_EVENTS;
    }
    cb = page_alloc(4096);
    ring = page_alloc(4096);
    if (!lwp_insns_work()) {
        return report_summary("lwp-insns");
    }
    test_slwpcb();
    test_writeback();
    test_lwpins();
    test_ring();
    test_lwpval();
    report_prefix("");
    return report_summary("lwp-insns");
}
