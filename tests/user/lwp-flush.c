/*
 * lwp-flush: the counter values that SLWPCB, XSAVE, XSAVEOPT and LLWPCB
 * write to memory in the middle of straight-line code
 *
 * Spec 5.2: SLWPCB "stores the internal event counters for active events"
 * into the LWPCB, the "current value" of Table 6-1's EventCounter n; 7.3:
 * XSAVE stores "the various internal LWP values".  The current value is
 * the one after the instructions retired so far: 2.2 and 2.3 decrement a
 * counter "each time an instruction retires", and the instruction that
 * flushes has not retired when it flushes, so its own event is not in
 * the value it stores (docs/implementation-choices.md, row 54).  LLWPCB,
 * counted by neither LWP (row 39), flushes the counters after the
 * instructions before it.
 *
 * Each sequence below enables LWP with LLWPCB, runs straight-line code
 * with flushes at the start of a block, in its middle, right before a
 * branch and several in one block, and disables LWP with LLWPCB 0.  Its
 * instructions are written with macros that add each one to a table in
 * retirement order, so the expected counters and records come from the
 * assembler's labels and the spec (1.1, 2.2, 2.3, choices 17, 19, 20, 48),
 * never from the emulator.  The counters are checked at every flush and
 * in the LWPCB after the final LLWPCB, with the events alone and
 * together (the merged window of the deferred records, the clock events,
 * the branch and IP filters, which translate other kinds of blocks), and
 * with counters that go negative at every point of the sequence (exact
 * blocks split by a record).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "lwp-test.h"
#include "lwp-flush.h"

/* Table kinds: an instruction, a near branch, a flush into slot n */
#define FL_INSN         0
#define FL_COND         1       /* conditional branch (NCB) */
#define FL_REL          2       /* unconditional relative branch (NRB) */
#define FL_SLWPCB       0x100   /* | slot: the LWPCB is copied to out[slot] */
#define FL_XSAVE        0x200   /* | slot: the area is xs + slot * 4096 */
#define FL_SLOTS        12
#define FL_CB_COPY      48      /* EventInterval/Counter 1-6 of the LWPCB */

/*
 * The sequences.  rdi -> struct fl_args { cb, out, xs }.  EDX:EAX =
 * 4000_0000:0 (component 62) for XSAVE; rbx = cb, rsi = out, r12 = xs.
 * save_cb copies the LWPCB's event area (0x80-0xaf) to out[slot] after
 * an SLWPCB: six counted instructions.
 */
__asm__(
    ".macro fl_entry tab, ip, kind\n"
    "    .pushsection .rodata.fl_\\tab, \"a\"\n"
    "    .quad \\ip, \\kind\n"
    "    .popsection\n"
    ".endm\n"
    ".macro x_insn tab, insn:vararg\n"
    "990: \\insn\n"
    "    fl_entry \\tab, 990b, 0\n"
    ".endm\n"
    ".macro x_br tab, kind, insn:vararg\n"
    "990: \\insn\n"
    "    fl_entry \\tab, 990b, \\kind\n"
    ".endm\n"
    ".macro x_slwpcb tab, slot\n"
    "990: slwpcb %rcx\n"
    "    fl_entry \\tab, 990b, 0x100 + \\slot\n"
    "    x_insn \\tab, movdqu 0x80(%rbx), %xmm0\n"
    "    x_insn \\tab, movdqu %xmm0, (\\slot * 48)(%rsi)\n"
    "    x_insn \\tab, movdqu 0x90(%rbx), %xmm0\n"
    "    x_insn \\tab, movdqu %xmm0, (\\slot * 48 + 16)(%rsi)\n"
    "    x_insn \\tab, movdqu 0xa0(%rbx), %xmm0\n"
    "    x_insn \\tab, movdqu %xmm0, (\\slot * 48 + 32)(%rsi)\n"
    ".endm\n"
    /* XSAVE, or XSAVEOPT when \\opt */
    ".macro x_xsave tab, slot, opt\n"
    "990:\n"
    "    .if \\opt\n"
    "    xsaveopt (\\slot * 4096)(%r12)\n"
    "    .else\n"
    "    xsave (\\slot * 4096)(%r12)\n"
    "    .endif\n"
    "    fl_entry \\tab, 990b, 0x200 + \\slot\n"
    ".endm\n"
    ".macro fl_seq tab, opt\n"
    "    .pushsection .rodata.fl_\\tab, \"a\"\n"
    "    .balign 8\n"
    "    .globl fl_tab_\\tab\n"
    "fl_tab_\\tab:\n"
    "    .popsection\n"
    "    .text\n"
    "    .globl fl_run_\\tab\n"
    "fl_run_\\tab:\n"
    "    push %rbx\n"
    "    push %r12\n"
    "    mov 0(%rdi), %rbx\n"
    "    mov 8(%rdi), %rsi\n"
    "    mov 16(%rdi), %r12\n"
    "    xor %eax, %eax\n"
    "    mov $0x40000000, %edx\n"
    "    llwpcb %rbx\n"              /* counted by neither LWP */
    "    x_slwpcb \\tab, 0\n"        /* first in its block: nothing yet */
    "    .rept 3\n"
    "    x_insn \\tab, nop\n"
    "    .endr\n"
    "    x_insn \\tab, mov $1, %r8d\n"
    "    .rept 10\n"
    "    x_insn \\tab, nop\n"
    "    .endr\n"
    "    x_slwpcb \\tab, 1\n"        /* mid-block */
    "    x_xsave \\tab, 2, 0\n"      /* two flushes in one block */
    "    .rept 2\n"
    "    x_insn \\tab, nop\n"
    "    .endr\n"
    "    x_br \\tab, 2, jmp 1f\n"
    "    ud2\n"
    "1:  x_xsave \\tab, 3, \\opt\n" /* first after a branch */
    "    .rept 4\n"
    "    x_insn \\tab, nop\n"
    "    .endr\n"
    "    x_slwpcb \\tab, 4\n"
    "    x_insn \\tab, xor %r8d, %r8d\n"
    "    x_br \\tab, 1, jnz 1f\n"    /* not taken: still a branch */
    "1:  .rept 3\n"
    "    x_insn \\tab, nop\n"
    "    .endr\n"
    "    x_xsave \\tab, 5, 0\n"      /* right before a branch */
    "    x_br \\tab, 2, jmp 1f\n"
    "    ud2\n"
    "1:  .rept 5\n"
    "    x_insn \\tab, nop\n"
    "    .endr\n"
    "    x_slwpcb \\tab, 6\n"        /* right before a branch */
    "    x_br \\tab, 2, jmp 1f\n"
    "    ud2\n"
    "1:  x_xsave \\tab, 7, \\opt\n"
    "    x_slwpcb \\tab, 8\n"
    "    .rept 2\n"
    "    x_insn \\tab, nop\n"
    "    .endr\n"
    "    x_xsave \\tab, 9, \\opt\n"
    "    x_insn \\tab, test %r8d, %r8d\n"
    "    x_br \\tab, 1, jz 1f\n"     /* taken */
    "    ud2\n"
    "1:  x_insn \\tab, xor %ecx, %ecx\n"
    "    llwpcb %rcx\n"              /* flushes the counters, then off */
    "    pop %r12\n"
    "    pop %rbx\n"
    "    ret\n"
    "    .pushsection .rodata.fl_\\tab, \"a\"\n"
    "    .globl fl_tab_\\tab\\()_end\n"
    "fl_tab_\\tab\\()_end:\n"
    "    .popsection\n"
    ".endm\n"
    "    fl_seq xsave, 0\n"
    "    fl_seq opt, 1\n");

#define RING_SIZE   (128 * LT_REC)
#define MAX_RECS    128

/* What the spec says one run stores */
struct fl_model {
    int32_t flush[FL_SLOTS][LWP_NUM_EVENTS + 1];
    int has_flush[FL_SLOTS];
    int32_t final[LWP_NUM_EVENTS + 1];
    unsigned nrec;
    struct { uint8_t id; uint64_t ip; } rec[MAX_RECS];
};

/*
 * Count the sequence: every instruction retires at CPL 3 and is one
 * Instructions Retired event and one clock, a near branch one Branches
 * Retired event (unless the Filters leave its kind out) and one more
 * clock (choice 48); a flush stores the counters before its own event.
 * A counter that goes below 0 stores a record naming the instruction and
 * becomes interval + (c + 1), at least 0 (1.1 step 5, choice 19); the
 * records of one instruction are in EventId order (choice 20).
 */
static void fl_expect(const struct fl_entry *t, const struct fl_entry *end,
                      uint32_t flags, uint32_t filters, int32_t interval,
                      int32_t counter, struct fl_model *m)
{
    int32_t c[LWP_NUM_EVENTS + 1] = { 0 };

    memset(m, 0, sizeof(*m));
    for (int id = 2; id <= LWP_NUM_EVENTS; id++) {
        c[id] = counter;
    }
    for (; t < end; t++) {
        int br = t->kind == FL_COND || t->kind == FL_REL;
        int bre = (t->kind == FL_COND && !(filters & LWP_FILTER_NCB)) ||
                  (t->kind == FL_REL && !(filters & LWP_FILTER_NRB));
        int32_t w[LWP_NUM_EVENTS + 1] = { 0 };

        if (t->kind & (FL_SLWPCB | FL_XSAVE)) {
            unsigned slot = t->kind & 0xff;

            memcpy(m->flush[slot], c, sizeof(c));
            m->has_flush[slot] = 1;
        }
        w[LWP_EVENT_ID_IRE] = 1;
        w[LWP_EVENT_ID_BRE] = bre;
        w[LWP_EVENT_ID_CNH] = w[LWP_EVENT_ID_RNH] = 1 + br;
        for (int id = 2; id <= LWP_NUM_EVENTS; id++) {
            if (!(flags & (1u << id)) || !w[id]) {
                continue;
            }
            c[id] -= w[id];
            if (c[id] < 0) {
                if (m->nrec < MAX_RECS) {
                    m->rec[m->nrec].id = id;
                    m->rec[m->nrec].ip = t->ip;
                }
                m->nrec++;
                c[id] = interval + c[id] + 1;
                if (c[id] < 0) {
                    c[id] = 0;
                }
            }
        }
    }
    memcpy(m->final, c, sizeof(c));
}

static void *cb, *ring, *out, *xs;

/*
 * Run @run with @flags, @filters, every counter @counter and interval
 * @interval; returns 1 when everything matches the model, else prints
 * the first difference (when @verbose) and returns 0.
 */
static int fl_one(void (*run)(struct fl_args *), const struct fl_entry *t,
                  const struct fl_entry *end, uint32_t flags,
                  uint32_t filters, int32_t interval, int32_t counter,
                  int verbose)
{
    uint32_t e = LWP_EVENT_OFFSET;
    struct fl_args a = { cb, out, xs };
    struct fl_model m;
    uint32_t head;
    int ok = 1;

    fl_expect(t, end, flags, filters, interval, counter, &m);
    lwpcb_init(cb, ring, RING_SIZE, flags);
    wr32(cb, LWPCB_FILTERS, filters);
    wr64(cb, LWPCB_BASE_IP, 0);
    wr64(cb, LWPCB_LIMIT_IP, ~0ull);
    for (int id = 1; id <= LWP_NUM_EVENTS; id++) {
        wr32(cb, LWPCB_INTERVAL(e, id), interval);
        wr32(cb, LWPCB_COUNTER(e, id), counter);
    }
    memset(out, 0xee, FL_SLOTS * FL_CB_COPY);
    memset(xs, 0xee, FL_SLOTS * 4096);
    run(&a);

    for (unsigned s = 0; s < FL_SLOTS && ok; s++) {
        int is_xsave = 0;

        if (!m.has_flush[s]) {
            continue;
        }
        for (const struct fl_entry *p = t; p < end; p++) {
            if ((p->kind & FL_XSAVE) && (p->kind & 0xff) == s) {
                is_xsave = 1;
            }
        }
        for (int id = 2; id <= LWP_NUM_EVENTS && ok; id++) {
            uint32_t got;

            if (!(flags & (1u << id))) {
                continue;
            }
            if (is_xsave) {
                /* Figure 7-1: EventCounter n at byte 64 + 4 (n - 1) */
                got = rd32((char *)xs + s * 4096, LWP_XSAVE_OFFSET + 64 +
                           4 * (id - 1));
            } else {
                got = rd32((char *)out + s * FL_CB_COPY,
                           LWPCB_COUNTER(0, id)) & 0x3ffffff;
            }
            if (got != (uint32_t)m.flush[s][id]) {
                if (verbose) {
                    printf("    flush %u (%s): EventCounter%d %u, "
                           "expected %d\n", s, is_xsave ? "XSAVE" : "SLWPCB",
                           id, got, m.flush[s][id]);
                }
                ok = 0;
            }
        }
    }
    for (int id = 2; id <= LWP_NUM_EVENTS && ok; id++) {
        uint32_t got = rd32(cb, LWPCB_COUNTER(e, id)) & 0x3ffffff;

        if ((flags & (1u << id)) && got != (uint32_t)m.final[id]) {
            if (verbose) {
                printf("    LLWPCB 0: EventCounter%d %u, expected %d\n", id,
                       got, m.final[id]);
            }
            ok = 0;
        }
    }
    head = rd32(cb, LWPCB_HEAD);
    if (ok && head != m.nrec * LT_REC) {
        if (verbose) {
            printf("    head %u, expected %u records\n", head, m.nrec);
        }
        ok = 0;
    }
    for (unsigned i = 0; i < m.nrec && ok; i++) {
        struct rec r = read_rec(ring, i * LT_REC);

        if (r.event_id != m.rec[i].id || r.ip != m.rec[i].ip) {
            if (verbose) {
                printf("    record %u: EventId %u IP 0x%lx, expected %u "
                       "0x%lx\n", i, r.event_id, (unsigned long)r.ip,
                       m.rec[i].id, (unsigned long)m.rec[i].ip);
            }
            ok = 0;
        }
    }
    return ok;
}

static int xsaveopt_supported(void)
{
    uint32_t a, b, c, d;

    __cpuid_count(0xd, 1, a, b, c, d);
    (void)b;
    (void)c;
    (void)d;
    return a & 1;
}

int main(void)
{
    static const struct {
        uint32_t flags, filters;
        const char *what;
    } cfg[] = {
        { LWP_FEAT_IRE | LWP_FEAT_BRE, 0, "IRE+BRE (merged window)" },
        { LWP_FEAT_IRE, 0, "IRE" },
        { LWP_FEAT_BRE, 0, "BRE" },
        { LWP_FEAT_IRE | LWP_FEAT_BRE | LWP_FEAT_CNH | LWP_FEAT_RNH, 0,
          "IRE+BRE+CNH+RNH" },
        { LWP_FEAT_CNH, 0, "CNH" },
        { LWP_FEAT_IRE | LWP_FEAT_BRE, LWP_FILTER_NCB,
          "IRE+BRE, Filters NCB" },
        { LWP_FEAT_IRE | LWP_FEAT_BRE, LWP_FILTER_IPF,
          "IRE+BRE, IP filter [0, ~0]" },
    };
    static const int32_t intervals[] = { 5, 0x100000 };
    uint32_t avail = lwp_available();
    int opt = xsaveopt_supported();
    void (*run)(struct fl_args *) = opt ? fl_run_opt : fl_run_xsave;
    const struct fl_entry *t = opt ? fl_tab_opt : fl_tab_xsave;
    const struct fl_entry *end = opt ? fl_tab_opt_end : fl_tab_xsave_end;
    unsigned n = end - t;

    if (!(avail & LWP_FEAT_AVAIL)) {
        report_skip("LWP not available");
        return report_summary("lwp-flush");
    }
    install_fault_handlers(0);
    cb = page_alloc(4096);
    ring = page_alloc(RING_SIZE);
    out = page_alloc(4096);
    xs = page_alloc(FL_SLOTS * 4096);
    printf("sequence of %u instructions, with %s\n", n,
           opt ? "XSAVE and XSAVEOPT" : "XSAVE (no XSAVEOPT)");

    /* the case of the issue, by hand: 1 + 6 + 3 + 1 + 10 instructions */
    if ((avail & LWP_FEAT_IRE) && fl_one(run, t, end, LWP_FEAT_IRE, 0,
                                         0x100000, 1000, 0)) {
        report(rd32(out, LWPCB_COUNTER(0, LWP_EVENT_ID_IRE)) == 1000 &&
               rd32(out, FL_CB_COPY + LWPCB_COUNTER(0, LWP_EVENT_ID_IRE)) ==
               1000 - 21, "SLWPCB first after LLWPCB flushes EventCounter2 "
               "1000; 21 instructions later, the next SLWPCB flushes 979");
    } else if (avail & LWP_FEAT_IRE) {
        fl_one(run, t, end, LWP_FEAT_IRE, 0, 0x100000, 1000, 1);
        report(0, "SLWPCB first after LLWPCB flushes EventCounter2 1000; 21 "
               "instructions later, the next SLWPCB flushes 979 (got %u, %u)",
               rd32(out, LWPCB_COUNTER(0, LWP_EVENT_ID_IRE)) & 0x3ffffff,
               rd32(out, FL_CB_COPY + LWPCB_COUNTER(0, LWP_EVENT_ID_IRE)) &
               0x3ffffff);
    }

    for (unsigned i = 0; i < sizeof(cfg) / sizeof(cfg[0]); i++) {
        uint32_t need = cfg[i].flags | LWP_FEAT_AVAIL;

        if ((cfg[i].filters & LWP_FILTER_IPF) &&
            !(lwp_cpuid_ecx() & LWP_CAP_IP_FILTERING)) {
            report_skip("%s: no LwpIpFiltering", cfg[i].what);
            continue;
        }
        if ((avail & need) != need) {
            report_skip("%s: not available", cfg[i].what);
            continue;
        }
        for (unsigned k = 0; k < 2; k++) {
            unsigned bad = 0, runs = 0;
            int32_t first_bad = -1;

            /* every counter from 0 past the sequence: records anywhere */
            for (int32_t c = 0; c <= (int32_t)n * 2 + 2; c++) {
                runs++;
                if (!fl_one(run, t, end, cfg[i].flags, cfg[i].filters,
                            intervals[k], c, 0)) {
                    if (!bad++) {
                        first_bad = c;
                    }
                }
            }
            if (bad) {
                printf("  %s, interval %d, counter %d:\n", cfg[i].what,
                       intervals[k], first_bad);
                fl_one(run, t, end, cfg[i].flags, cfg[i].filters,
                       intervals[k], first_bad, 1);
            }
            report(!bad, "%s, interval %d, counters 0-%u: the counters at "
                   "every SLWPCB, XSAVE%s and the final LLWPCB are those "
                   "after the instructions before it; records as the spec "
                   "(%u of %u runs differ)", cfg[i].what, intervals[k],
                   2 * n + 2, opt ? ", XSAVEOPT" : "", bad, runs);
        }
    }
    lwp_off();
    return report_summary("lwp-flush");
}
