/*
 * A TCG plugin for tests/linux/lwp-perf.sh: where every P-th user
 * instruction of one program is, run by run, as QEMU's plugin API sees
 * the program execute.  It is the oracle that the samples of the kernel's
 * lwp PMU are checked against: it uses nothing of LWP, only the
 * instructions that TCG reports to plugins, which are upstream QEMU's.
 *
 * The program is the only code in [lo, hi) (a static executable linked
 * there); a run starts each time its entry point executes.  As in
 * tests/linux/uinsn-plugin.c, the callback comes before an instruction
 * executes, so an instruction that runs again after a page fault, or a
 * REP string instruction's next chunk, gives its address twice in a row
 * and is counted once, as it retires once.  An instruction that leaves
 * CPL 3 (SYSCALL, SYSENTER, INT n, INT3, INT1, INTO, by their mnemonic)
 * is not counted: LWP counts only instructions that start and complete in
 * user mode (spec 2.2; docs/implementation-choices.md, choice 39).  Only
 * one vCPU may run the program at a time (the guest runs one instance).
 *
 * Arguments: lo=ADDRESS, hi=ADDRESS, entry=ADDRESS (ELF e_entry),
 * period=P.  Prints, at exit, for each run R:
 *   R ip A        for k = 1, 2...: the address of instruction k * P of run
 *                 R, the one whose retirement takes an LWP Instructions
 *                 Retired counter loaded with P - 1 below zero (AMD LWP
 *                 specification 5.1 step 7): the record's address
 *   R insns N     the run's instructions
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <inttypes.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

static uint64_t lo, hi, entry, period;
static uint64_t run, insns;
static uint64_t last = UINT64_MAX;
static GString *out;

/* Whether the disassembly @d (capstone's) is an instruction that leaves CPL 3 */
static bool leaves_user(const char *d)
{
    static const char *const names[] = {
        "syscall", "sysenter", "int ", "int3", "int1", "into", "icebp",
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(names); i++) {
        if (g_str_has_prefix(d, names[i])) {
            return true;
        }
    }
    return false;
}

static void run_end(void)
{
    if (run) {
        g_string_append_printf(out, "%" PRIu64 " insns %" PRIu64 "\n",
                               run, insns);
    }
    insns = 0;
    last = UINT64_MAX;
}

static void insn_exec(unsigned int cpu_index, void *udata)
{
    uint64_t pc = (uintptr_t)udata;

    if (pc == entry) {
        run_end();
        run++;
    }
    if (!run || pc == last) {
        return;
    }
    last = pc;
    insns++;
    if (period && insns % period == 0) {
        g_string_append_printf(out, "%" PRIu64 " ip %" PRIx64 "\n", run, pc);
    }
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t i, n = qemu_plugin_tb_n_insns(tb);

    for (i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t pc = qemu_plugin_insn_vaddr(insn);
        char *d;
        bool user;

        if (pc < lo || pc >= hi) {
            continue;
        }
        d = qemu_plugin_insn_disas(insn);
        user = !leaves_user(d);
        g_free(d);
        if (user) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_exec,
                                                   QEMU_PLUGIN_CB_NO_REGS,
                                                   (void *)(uintptr_t)pc);
        }
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
