/*
 * A TCG plugin for tests/linux/run.sh: the instructions of one program in
 * a guest, as QEMU's plugin API sees them execute, run by run.  It is the
 * independent count that the PMU's counts of the same runs are checked
 * against: it uses nothing of the PMU, only the instructions that TCG
 * reports to plugins, which are upstream QEMU's.
 *
 * The program is the only code in [lo, hi) (a static executable linked
 * there); a run starts each time its entry point executes.  The plugin
 * API calls back before an instruction executes, not when it retires: an
 * instruction that faults (a page fault on its first touch of a page)
 * runs again after the fault, and a REP string instruction runs again
 * after an interrupt or between chunks of iterations.  Both give the same
 * address twice in a row in the program's stream, and both retire once,
 * so a repeat of the address before is not counted.  (A jump to itself
 * would be miscounted; the programs checked have none.)  Only for one
 * vCPU (-smp 1).
 *
 * Arguments: lo=ADDRESS, hi=ADDRESS, entry=ADDRESS (ELF e_entry),
 * period=P, ips=R, brs=R, window=W (default 1), pebs=R:Q:E (E i or c;
 * once per run), trace=R.  Prints, at exit, for
 * each run R:
 *   run R insns N branches B loads L stores S
 *                              the run's instructions that retired,
 *                              those of them that are branches by their
 *                              mnemonic (Jcc, JMP, CALL, RET, LOOP*,
 *                              JrCXZ, SYSCALL), and those that read
 *                              and that wrote memory, as the API's
 *                              memory callbacks of each saw it (once per
 *                              instruction, whatever the number of
 *                              accesses, its repeats merged)
 * and for run ips=R, for k = 1, 2...:
 *   ip A ...  the addresses of its instructions k * P + 1 to k * P + W:
 *             the first is where a PMI taken exactly after instruction
 *             k * P (a counter of user instructions with period P)
 *             interrupts
 * and for each run R of pebs=R:Q:E, a counter of its instructions (E i)
 * or of the cost model's cycles (E c: one per instruction, one more per
 * branch) that samples every Qth event and starts again after the
 * instruction of the sample (PEBS with a reset value of -(Q - 1): the
 * Q - 1st event overflows, the next is sampled, the reload drops the
 * rest of that instruction's):
 *   pebs R A ... the addresses of the sampled instruction and the W - 1
 *             after it
 * and, with brs=R, for run R, the branches taken before each of those
 * instructions (k * P + 1 + D, D below W), newest first, at most 16:
 *   brs K D A F>T ...  the instruction at A, and a branch taken from the
 *             instruction at F to the one at T: a JMP, CALL or RET, or
 *             a conditional branch followed by an instruction that is
 *             not the next in memory (LBR's stack at a PMI taken
 *             exactly after instruction k * P + D, as
 *             tests/linux/lbr-oracle.py compares it with perf's; a
 *             branch out of the program and back, a system call or an
 *             interrupt, is none here)
 * and, with trace=R, every branch taken of run R, in order, as brs= has
 * them (BTS's records of the program's own branches):
 *   t F T     a branch taken from the instruction at F to the one at T
 * and, with loads=R1:R2, for each instruction of runs R1 to R2 that
 * reads memory, in the order they execute (for tests/linux/cache-oracle.py):
 *   i R A     the run and address of the instruction, then
 *   l V S     each of its reads, of S bytes at virtual address V, and
 *   drop      when it runs again (it did not retire: it faulted after
 *             reading, or is a REP string instruction that continues)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

static uint64_t lo, hi, entry, period, ips_run, brs_run, window = 1;
static uint64_t trace_run;
/* pebs=: per run (at most PEBS_RUNS), the period and the weight */
#define PEBS_RUNS 4
static struct {
    uint64_t run, period, count, left;
    bool cycles;
} pebs[PEBS_RUNS];
static unsigned pebs_n;
static uint64_t loads_from, loads_to;
/* the instruction at last has printed "i" (loads=) */
static bool last_printed;
static bool line_open;
static uint64_t run, insns, branches, loads, stores;
static uint64_t last = UINT64_MAX;
/* The address after the instruction at last, and its branch_kind() */
static uint64_t last_next;
static unsigned last_br;
/* The branches taken of the run (brs=), the newest at ring[top] */
#define RING 16
static uint64_t ring_from[RING], ring_to[RING];
static unsigned ring_top, ring_n;
/* What the instruction at last did to memory so far: bit 0 read, 1 wrote */
static unsigned last_mem;
static GString *out;

/* What the disassembly @d (capstone's, AT&T or Intel) is */
enum {
    NOT_BRANCH,
    BRANCH_COND,    /* Jcc, JrCXZ, LOOPcc: taken if not to the next */
    BRANCH,         /* JMP, CALL, RET: always taken */
    BRANCH_SYSCALL, /* a branch out of the program (counts, not traced) */
};

static unsigned branch_kind(const char *d)
{
    static const char *const prefixes[] = {
        "rep ", "repz ", "repe ", "repnz ", "repne ", "bnd ", "notrack ",
    };
    static const char *const names[] = {
        "jmp", "call", "ret",
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(prefixes);) {
        if (g_str_has_prefix(d, prefixes[i])) {
            d += strlen(prefixes[i]);
            i = 0;
        } else {
            i++;
        }
    }
    for (i = 0; i < G_N_ELEMENTS(names); i++) {
        if (g_str_has_prefix(d, names[i])) {
            return BRANCH;
        }
    }
    if (g_str_has_prefix(d, "syscall")) {
        return BRANCH_SYSCALL;
    }
    if (d[0] == 'j' || g_str_has_prefix(d, "loop")) {
        return BRANCH_COND;
    }
    return NOT_BRANCH;
}

/* The instruction at last retired: count its accesses */
static void mem_retire(void)
{
    loads += last_mem & 1;
    stores += last_mem >> 1;
    last_mem = 0;
}

static void run_end(void)
{
    unsigned i;

    for (i = 0; i < pebs_n; i++) {
        if (pebs[i].left) {
            g_string_append_c(out, '\n');
            pebs[i].left = 0;
        }
    }
    if (line_open) {
        g_string_append_c(out, '\n');
        line_open = false;
    }
    mem_retire();
    if (run) {
        g_string_append_printf(out, "run %" PRIu64 " insns %" PRIu64
                               " branches %" PRIu64 " loads %" PRIu64
                               " stores %" PRIu64 "\n",
                               run, insns, branches, loads, stores);
    }
    insns = branches = loads = stores = 0;
    last = UINT64_MAX;
    ring_n = 0;
}

/* Print "brs K D A" and the run's last branches taken, newest first */
static void brs_print(uint64_t pc)
{
    unsigned i;

    g_string_append_printf(out, "brs %" PRIu64 " %" PRIu64 " %" PRIx64,
                           (insns - 1) / period, (insns - 1) % period, pc);
    for (i = 0; i < ring_n; i++) {
        unsigned j = (ring_top + RING - i) % RING;

        g_string_append_printf(out, " %" PRIx64 ">%" PRIx64, ring_from[j],
                               ring_to[j]);
    }
    g_string_append_c(out, '\n');
}

/* pebs=: count the instruction at @pc of the current run */
static void pebs_exec(uint64_t pc)
{
    unsigned i;

    for (i = 0; i < pebs_n; i++) {
        uint64_t w = 1 + (pebs[i].cycles && last_br != NOT_BRANCH);

        if (pebs[i].run != run) {
            continue;
        }
        if (pebs[i].left) {
            g_string_append_printf(out, " %" PRIx64, pc);
            if (!--pebs[i].left) {
                g_string_append_c(out, '\n');
            }
        }
        if (pebs[i].count + w < pebs[i].period) {
            pebs[i].count += w;
            continue;
        }
        if (pebs[i].left) {
            g_string_append_c(out, '\n');
        }
        g_string_append_printf(out, "pebs %" PRIu64 " %" PRIx64, run, pc);
        pebs[i].count = 0;
        pebs[i].left = window - 1;
        if (!pebs[i].left) {
            g_string_append_c(out, '\n');
        }
    }
}

static void insn_exec(unsigned int cpu_index, void *udata)
{
    uint64_t v = (uintptr_t)udata, pc = v >> 6;

    if (pc == entry) {
        run_end();
        run++;
    }
    if (run && pc == last && last_printed) {
        g_string_append(out, "drop\n");
        last_printed = false;
    }
    if (!run || pc == last) {
        return;
    }
    mem_retire();
    if (last != UINT64_MAX &&
        (last_br == BRANCH || (last_br == BRANCH_COND && pc != last_next))) {
        ring_top = (ring_top + 1) % RING;
        ring_from[ring_top] = last;
        ring_to[ring_top] = pc;
        ring_n = MIN(ring_n + 1, RING);
        if (run == trace_run) {
            g_string_append_printf(out, "t %" PRIx64 " %" PRIx64 "\n", last,
                                   pc);
        }
    }
    last = pc;
    last_next = pc + ((v >> 2) & 15);
    last_br = v & 3;
    last_printed = false;
    insns++;
    branches += last_br != NOT_BRANCH;
    if (run == brs_run && period && insns > period &&
        (insns - 1) % period < window) {
        brs_print(pc);
    }
    pebs_exec(pc);
    if (run == ips_run && period && insns > period &&
        (insns - 1) % period < window) {
        g_string_append_printf(out, line_open ? " %" PRIx64 : "ip %" PRIx64,
                               pc);
        line_open = (insns - 1) % period < window - 1;
        if (!line_open) {
            g_string_append_c(out, '\n');
        }
    }
}

/* After each access of an instruction in [lo, hi) */
static void mem_access(unsigned int cpu_index, qemu_plugin_meminfo_t info,
                       uint64_t vaddr, void *udata)
{
    bool store = qemu_plugin_mem_is_store(info);

    if (run) {
        last_mem |= store ? 2 : 1;
    }
    if (!store && run >= loads_from && run <= loads_to && loads_to) {
        if (!last_printed) {
            g_string_append_printf(out, "i %" PRIu64 " %" PRIx64 "\n", run,
                                   last);
            last_printed = true;
        }
        g_string_append_printf(out, "l %" PRIx64 " %u\n", vaddr,
                               1u << qemu_plugin_mem_size_shift(info));
    }
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t i, n = qemu_plugin_tb_n_insns(tb);

    for (i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t pc = qemu_plugin_insn_vaddr(insn);
        char *d;
        unsigned br;

        if (pc < lo || pc >= hi) {
            continue;
        }
        d = qemu_plugin_insn_disas(insn);
        br = branch_kind(d);
        g_free(d);
        /* the address, the length (at most 15) and the branch_kind() */
        qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_exec,
                                               QEMU_PLUGIN_CB_NO_REGS,
                                               (void *)(uintptr_t)
                                               (pc << 6 |
                                                qemu_plugin_insn_size(insn)
                                                << 2 | br));
        qemu_plugin_register_vcpu_mem_cb(insn, mem_access,
                                         QEMU_PLUGIN_CB_NO_REGS,
                                         QEMU_PLUGIN_MEM_RW, NULL);
    }
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    run_end();
    qemu_plugin_outs(out->str);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
                                           const qemu_info_t *info,
                                           int argc, char **argv)
{
    int i;

    for (i = 0; i < argc; i++) {
    char pebs_e;
        char **kv = g_strsplit(argv[i], "=", 2);
        uint64_t *arg = NULL;

        if (!g_strcmp0(kv[0], "lo")) {
            arg = &lo;
        } else if (!g_strcmp0(kv[0], "hi")) {
            arg = &hi;
        } else if (!g_strcmp0(kv[0], "entry")) {
            arg = &entry;
        } else if (!g_strcmp0(kv[0], "period")) {
            arg = &period;
        } else if (!g_strcmp0(kv[0], "ips")) {
            arg = &ips_run;
        } else if (!g_strcmp0(kv[0], "brs")) {
            arg = &brs_run;
        } else if (!g_strcmp0(kv[0], "trace")) {
            arg = &trace_run;
        } else if (!g_strcmp0(kv[0], "window")) {
            arg = &window;
        } else if (!g_strcmp0(kv[0], "pebs") && kv[1] && pebs_n < PEBS_RUNS &&
                   sscanf(kv[1], "%" SCNu64 ":%" SCNu64 ":%c",
                          &pebs[pebs_n].run, &pebs[pebs_n].period,
                          &pebs_e) == 3) {
            pebs[pebs_n++].cycles = pebs_e == 'c';
            g_strfreev(kv);
            continue;
        } else if (!g_strcmp0(kv[0], "loads") && kv[1] &&
                   sscanf(kv[1], "%" SCNu64 ":%" SCNu64, &loads_from,
                          &loads_to) == 2) {
            g_strfreev(kv);
            continue;
        }
        if (arg && kv[1]) {
            *arg = g_ascii_strtoull(kv[1], NULL, 0);
        }
        g_strfreev(kv);
        if (!arg) {
            return -1;
        }
    }
    out = g_string_new(NULL);
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
