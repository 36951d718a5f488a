/*
 * lwp-flush: the assembly sequences lwp-flush.c runs, and the tables of
 * their instructions
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef LWP_FLUSH_H
#define LWP_FLUSH_H

#include <stdint.h>

/* one instruction of a sequence: its address and FL_* kind */
struct fl_entry {
    uint64_t ip;
    uint64_t kind;
};

/* what a sequence gets in rdi */
struct fl_args {
    void *cb, *out, *xs;
};

extern const struct fl_entry fl_tab_xsave[], fl_tab_xsave_end[];
extern const struct fl_entry fl_tab_opt[], fl_tab_opt_end[];
void fl_run_xsave(struct fl_args *a);
void fl_run_opt(struct fl_args *a);

#endif
