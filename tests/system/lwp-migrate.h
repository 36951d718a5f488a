/*
 * The LWP workload for snapshot and migration tests (config=migrate):
 * numbers shared by its CPL3 loop (lwp-migrate-user64.S) and its CPL0
 * side (lwp-migrate.c).  The C declarations are hidden from the
 * assembler.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef LWP_MIGRATE_H
#define LWP_MIGRATE_H

/* DPL3 gate the CPL3 loop raises every MIG_DRAIN_EVERY iterations */
#define MIG_DRAIN_VECTOR    0x83
/* The threshold interrupt (LWP_CFG[47:40]) */
#define MIG_THR_VECTOR      0x53

/* Power-of-two periods, in loop iterations */
#define MIG_INS_EVERY       8           /* one LWPINS */
#define MIG_DRAIN_EVERY     64          /* one INT MIG_DRAIN_VECTOR */

/* The immediates of the loop's LWPVAL and LWPINS (Flags = low 16 bits) */
#define MIG_VAL_IMM         0x7a11c0de
#define MIG_INS_IMM         0x1e55f00d

/* Offsets in struct mig_args */
#define MIG_ARGS_CB         0
#define MIG_ARGS_ITERS      8
#define MIG_ARGS_SEED       16
#define MIG_ARGS_SEQ        24
#define MIG_ARGS_RNG        32
#define MIG_ARGS_SUM        40
#define MIG_ARGS_CARRY      48

#ifndef __ASSEMBLER__
#include "libcflat.h"

/* In: cb, iters, seed.  Out (stored by the CPL3 loop): the rest */
struct mig_args {
    u64 cb;                             /* LWPCB for LLWPCB */
    u64 iters;                          /* loop iterations, > 0 */
    u64 seed;                           /* xorshift64 state, non-zero */
    u64 seq;                            /* final sequence number */
    u64 rng;                            /* final xorshift64 state */
    u64 sum;                            /* EBX: taken-branch tally */
    u64 carry;                          /* LWPINS that returned CF = 1 */
};

_Static_assert(__builtin_offsetof(struct mig_args, carry) == MIG_ARGS_CARRY,
               "mig_args");

/*
 * CPL3: LLWPCB a->cb, then a->iters iterations of the loop, and back
 * through INT USER_RET_VECTOR with LWP still enabled.  Iteration s
 * (s = 1, 2, ...) executes LWPVAL with Data1 = s and, when s is a
 * multiple of MIG_INS_EVERY, LWPINS with Data1 = s; when s is a multiple
 * of MIG_DRAIN_EVERY it ends with INT MIG_DRAIN_VECTOR (R12 = s).
 */
void mig_user(void *a);
extern const u8 mig_text[], mig_text_end[];
extern const u8 mig_val_insn[], mig_ins_insn[];

int lwp_migrate_main(void);
#endif

#endif
