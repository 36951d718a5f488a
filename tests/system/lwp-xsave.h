/*
 * The CPL3 code of the 64-bit XSAVE/XRSTOR tests of LWP state
 * (lwp-xsave-user64.S) as C sees it, and the entry point of the tests
 * (lwp-xsave.c).  The numbers at the top are shared with the assembler.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef LWP_XSAVE_H
#define LWP_XSAVE_H

/* DPL3 interrupt gate: the CPL0 "kernel action" in the middle of xs_ctl */
#define XS_CTL_VECTOR       0x83

/* struct xs_user, for the assembler */
#define XS_U_AREA           0
#define XS_U_MASK_LO        8
#define XS_U_MASK_HI        12
#define XS_U_OUT            16
#define XS_U_CB             24

/* struct xs_flush, for the assembler */
#define XS_F_CB             0
#define XS_F_AREA           8
#define XS_F_OUT            16
/* EventCounter2 and 3 in the LWPCB (Table 6-1, E = 0x80) */
#define XS_CB_CTR_IRE       0x8c
#define XS_CB_CTR_BRE       0x94
/* sizeof(struct xs_area) */
#define XS_AREA_SIZE        4096

/* NOPs before and after the LWPINS of xs_thr_user() */
#define XS_THR_NOPS         8

/* struct xs_insn.kind: as SEQ_* of lwp-user64.h */
#define XS_INSN             0           /* not a branch */
#define XS_TAKEN            1           /* a branch, taken */

#ifndef __ASSEMBLER__
#include "libcflat.h"

/*
 * One counted instruction of a CPL3 sequence, in retirement order, from
 * the assembler's labels: its address, the next instruction's, its kind
 */
struct xs_insn {
    u64 ip, next, kind;
};

struct xs_user {
    u64 area;                           /* XSAVE area for XRSTOR */
    u32 mask_lo, mask_hi;               /* EDX:EAX of XRSTOR */
    u64 out;                            /* SLWPCB result */
    u64 cb;                             /* LWPCB for LLWPCB */
};

_Static_assert(__builtin_offsetof(struct xs_user, out) == XS_U_OUT, "xs");
_Static_assert(__builtin_offsetof(struct xs_user, cb) == XS_U_CB, "xs");

/* CPL3: LLWPCB cb, the sequence xs_seq_a[], INT USER_RET_VECTOR */
void xs_llwpcb_user(void *cb);
extern const struct xs_insn xs_seq_a[], xs_seq_a_end[];

/*
 * CPL3: XRSTOR u->area with EDX:EAX = u->mask (the instruction at
 * xs_xrstor_insn), then the sequence xs_seq_b[], whose last two
 * instructions are SLWPCB and the store of its result to u->out,
 * INT USER_RET_VECTOR
 */
void xs_xrstor_user(void *u);
extern const u8 xs_xrstor_insn[], xs_xrstor_next[];
extern const struct xs_insn xs_seq_b[], xs_seq_b_end[];

/*
 * CPL3: XRSTOR u->area with EDX:EAX = u->mask, XS_THR_NOPS NOPs, LWPINS
 * (at xs_thr_ins, the next instruction at xs_thr_ins_next), XS_THR_NOPS
 * NOPs, INT USER_RET_VECTOR
 */
void xs_thr_user(void *u);
extern const u8 xs_thr_ins[], xs_thr_ins_next[];

/*
 * CPL3: the sequence xs_seq_d[] (no LWP instruction but the last two,
 * SLWPCB and the store of its result to *out), INT USER_RET_VECTOR
 */
void xs_plain_user(void *out);
extern const struct xs_insn xs_seq_d[], xs_seq_d_end[];

/*
 * CPL3: LLWPCB cb, the sequence xs_seq_c1[], INT XS_CTL_VECTOR, the
 * sequence xs_seq_c2[] (no LWP instruction), INT USER_RET_VECTOR
 */
void xs_ctl_user(void *cb);
extern const struct xs_insn xs_seq_c1[], xs_seq_c1_end[];
extern const struct xs_insn xs_seq_c2[], xs_seq_c2_end[];

/*
 * CPL3: LLWPCB cb, the sequence xs_seq_f1[], INT XS_CTL_VECTOR (a task
 * switch), the sequence xs_seq_f2[], whose last two instructions are
 * SLWPCB and the store of its result to xs_sw_out, INT USER_RET_VECTOR
 */
void xs_sw_user(void *cb);
extern const struct xs_insn xs_seq_f1[], xs_seq_f1_end[];
extern const struct xs_insn xs_seq_f2[], xs_seq_f2_end[];
extern u64 xs_sw_out;

struct xs_flush {
    u64 cb;                             /* LWPCB for LLWPCB */
    u64 area;                           /* two XSAVE areas */
    u32 out[2][2];                      /* EventCounter2, 3 after SLWPCB */
};

_Static_assert(__builtin_offsetof(struct xs_flush, area) == XS_F_AREA, "xs");
_Static_assert(__builtin_offsetof(struct xs_flush, out) == XS_F_OUT, "xs");

/*
 * CPL3: LLWPCB u->cb, then straight-line code with four flushes of the
 * counters, each starting a table: xs_seq_g1[] (SLWPCB, the first
 * instruction after LLWPCB, and the copy of the LWPCB's EventCounter2
 * and 3 to u->out[0]), xs_seq_g2[] (SLWPCB in the middle of a block,
 * copied to u->out[1]), xs_seq_g3[] (XSAVE to u->area, in the middle of
 * a block that ends with a JMP), xs_seq_g4[] (XSAVE to the next area,
 * the first instruction after that JMP; a JZ taken), then LLWPCB 0, INT
 * USER_RET_VECTOR.  xs_flush_opt_user: the same with XSAVEOPT for the
 * second XSAVE, tables xs_seq_h1-4[].
 */
void xs_flush_user(void *u);
void xs_flush_opt_user(void *u);
extern const struct xs_insn xs_seq_g1[], xs_seq_g1_end[];
extern const struct xs_insn xs_seq_g2[], xs_seq_g2_end[];
extern const struct xs_insn xs_seq_g3[], xs_seq_g3_end[];
extern const struct xs_insn xs_seq_g4[], xs_seq_g4_end[];
extern const struct xs_insn xs_seq_h1[], xs_seq_h1_end[];
extern const struct xs_insn xs_seq_h2[], xs_seq_h2_end[];
extern const struct xs_insn xs_seq_h3[], xs_seq_h3_end[];
extern const struct xs_insn xs_seq_h4[], xs_seq_h4_end[];

void test_xsave_lwp(void);
#endif

#endif
