/*
 * insn-count: a TCG plugin that counts how often each guest instruction
 * below 0x10000000 (a non-PIE program's own code) executes, the
 * independent count lwp-prof's samples are checked against.  Like
 * upstream's tests/tcg/plugins/insn.c, but per address.
 *
 *   qemu-x86_64 -plugin insn-count.so,out=FILE PROGRAM
 *
 * FILE gets one "address count" line (both decimal) per instruction.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define LIMIT 0x10000000u

typedef struct {
    uint64_t addr;
    uint64_t count;
} Insn;

static GHashTable *insns;
static GMutex lock;
static char *out_path;

static void on_exec(unsigned int vcpu, void *udata)
{
    (void)vcpu;
    __atomic_add_fetch(&((Insn *)udata)->count, 1, __ATOMIC_RELAXED);
}

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    for (size_t i = 0; i < qemu_plugin_tb_n_insns(tb); i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t a = qemu_plugin_insn_vaddr(insn);
        Insn *e;

        if (a >= LIMIT) {
            continue;
        }
        g_mutex_lock(&lock);
        e = g_hash_table_lookup(insns, &a);
        if (!e) {
            e = g_new0(Insn, 1);
            e->addr = a;
            g_hash_table_insert(insns, &e->addr, e);
        }
        g_mutex_unlock(&lock);
        qemu_plugin_register_vcpu_insn_exec_cb(insn, on_exec,
                                               QEMU_PLUGIN_CB_NO_REGS, e);
    }
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    GHashTableIter it;
    gpointer k, v;
    FILE *f = fopen(out_path, "w");

    (void)id;
    (void)p;
    if (!f) {
        return;
    }
    g_hash_table_iter_init(&it, insns);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        Insn *e = v;

        fprintf(f, "%" PRIu64 " %" PRIu64 "\n", e->addr, e->count);
    }
    fclose(f);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
                                           const qemu_info_t *info,
                                           int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "out=", 4)) {
            out_path = g_strdup(argv[i] + 4);
        }
    }
    if (!out_path) {
        fprintf(stderr, "insn-count: out=FILE is required\n");
        return -1;
    }
    insns = g_hash_table_new(g_int64_hash, g_int64_equal);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
