/*
 * The SMP LWP test (lwp-smp.c): numbers shared with its AP start-up
 * trampoline (smp-trampoline.S) and its CPL3 code, and the C side of
 * both.  The assembler includes this file too.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef LWP_SMP_H
#define LWP_SMP_H

/*
 * Where the real-mode part of the trampoline is copied: below 1 MiB, page
 * aligned, clear of the Multiboot structures QEMU puts at 0x9000 and of
 * the BIOS areas.  The STARTUP IPI's vector is its page number.
 */
#define SMP_TRAMP_BASE      0x8000
#define SMP_SIPI_VECTOR     (SMP_TRAMP_BASE >> 12)

/* The trampoline's own GDT, used until the AP loads its per-CPU one */
#define TRAMP_CS32          0x08
#define TRAMP_DS            0x10
#define TRAMP_CS64          0x18

/* DPL3 interrupt gate that ends the CPL3 code of every vCPU */
#define SMP_RET_VECTOR      0x83

/* Immediates of the CPL3 code; Flags is their low 16 bits (spec 5.3, 5.4) */
#define SMP_LOOP_INS_IMM    0x1b0bcafe
#define SMP_LOOP_VAL_IMM    0x7e57a11d
#define SMP_PROD_INS_IMM    0x0123beef
#define SMP_INIT_INS_IMM    0x55aa1234

#ifndef __ASSEMBLER__
#include "libcflat.h"

/* ---- CPL3 code (smp-trampoline.S) ---- */

/* Arguments of smp_loop_user() */
struct smp_loop_args {
    u64 cb;                             /* 0: LWPCB for LLWPCB */
    u32 outer, inner;                   /* 8, 12: trip counts, >= 1 */
    u64 ins_data2;                      /* 16: LWPINS vvvv register */
    u64 val_data2;                      /* 24: LWPVAL vvvv register */
};

/*
 * CPL3: LLWPCB a->cb; a->outer times { LWPINS $SMP_LOOP_INS_IMM with the
 * outer index (from 0) as r/m32 and a->ins_data2 as vvvv; a->inner times
 * LWPVAL $SMP_LOOP_VAL_IMM with the inner down-counter (a->inner .. 1) as
 * r/m32 and a->val_data2 as vvvv }; LLWPCB 0.  The counted instructions,
 * in program order, are at the labels below; see smp-trampoline.S.
 */
void smp_loop_user(void *a);
extern const u8 smp_l_ins[], smp_l_movi[], smp_l_val[], smp_l_decin[],
                smp_l_jnzin[], smp_l_inc[], smp_l_decout[], smp_l_jnzout[],
                smp_l_end[];

/* Arguments of smp_producer_user() */
struct smp_prod_args {
    u64 cb;                             /* 0 */
    u32 count;                          /* 8: >= 1 */
    u32 pad;
    u64 data2_base;                     /* 16: Data2 = data2_base + seq */
    u64 full;                           /* 24: out: LWPINS that set CF */
};

/*
 * CPL3: LLWPCB a->cb; for seq = 0 .. a->count - 1, LWPINS at smp_p_ins
 * with seq as r/m32 (Data1) and a->data2_base + seq as vvvv (Data2),
 * counting the CF = 1 results (ring full, spec 5.4) into a->full;
 * LLWPCB 0.
 */
void smp_producer_user(void *a);
extern const u8 smp_p_ins[];

/* Arguments of smp_init_user() */
struct smp_init_args {
    u64 cb;                             /* 0: 0 for no LLWPCB */
    u32 count;                          /* 8: LWPINS to execute, >= 1 */
    u32 cf;                             /* 12: out: LWPINS that left CF = 1 */
    u64 slwpcb;                         /* 16: out: SLWPCB after them */
};

/*
 * CPL3: LLWPCB a->cb unless it is 0; a->count times STC + LWPINS at
 * smp_i_ins ($SMP_INIT_INS_IMM, r/m32 = the down-counter a->count .. 1,
 * vvvv = a->cb), counting the CF = 1 results; SLWPCB.  Leaves LWP as it
 * is (enabled when a->cb != 0).
 */
void smp_init_user(void *a);
extern const u8 smp_i_ins[];

/*
 * run_in_user_at()'s entry on every vCPU: calls fn(arg) at CPL3, then INT
 * SMP_RET_VECTOR, whose handler calls user_return_at(*saved, 0).
 */
extern const u8 smp_user_entry[];

/* ---- the trampoline ---- */

/* Real-mode code to copy to SMP_TRAMP_BASE */
extern const u8 smp_tramp_start[], smp_tramp_end[];
/* Read by the AP in the trampoline: CR3 and its initial RSP */
extern u32 smp_boot_cr3;
extern u64 smp_boot_stack;
/* Where the trampoline lands in 64-bit mode, on smp_boot_stack */
void smp_ap_main(void) __attribute__((noreturn));

void test_lwp_smp(void);
#endif

#endif
