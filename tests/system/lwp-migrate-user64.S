/*
 * The CPL3 loop of the LWP snapshot and migration workload
 * (lwp-migrate.h, lwp-migrate.c).  Everything it computes depends only on
 * the seed and the iteration count, never on time, so every run of the
 * same kernel retires the same instructions in the same order: an LWP
 * state that survives a snapshot or migration intact gives the records
 * of an uninterrupted run.  Check the code with
 * "objdump -d lwp-migrate-user64.o".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "desc.h"
#include "lwp-migrate.h"

    .text
    .code64

/* void mig_user(struct mig_args *a), CPL3 */
    .globl mig_user, mig_text, mig_text_end, mig_val_insn, mig_ins_insn
mig_user:
    mov %rdi, %r13
    mov MIG_ARGS_ITERS(%r13), %r15
    mov MIG_ARGS_SEED(%r13), %r14
    xor %r12d, %r12d            /* sequence number */
    xor %ebx, %ebx              /* taken-branch tally */
    xor %ebp, %ebp              /* LWPINS with CF = 1 */
    mov MIG_ARGS_CB(%r13), %rax
    llwpcb %rax                 /* counted by neither LWP (choice 39) */
mig_text:
1:
    inc %r12d
mig_val_insn:
    /* Data1 = sequence number, Data2 = generator (spec 5.3) */
    lwpval $MIG_VAL_IMM, %r12d, %r14
    /* xorshift64 (Marsaglia's 13, 7, 17) drives the branches below */
    mov %r14, %rax
    shl $13, %rax
    xor %rax, %r14
    mov %r14, %rax
    shr $7, %rax
    xor %rax, %r14
    mov %r14, %rax
    shl $17, %rax
    xor %rax, %r14
    test $1, %r14b
    jz 2f                       /* taken or not: Branches Retired */
    add $3, %ebx
    jmp 3f
2:
    sub $1, %ebx
3:
    mov %r14d, %ecx             /* an inner loop of 1 to 8 iterations */
    and $7, %ecx
    inc %ecx
4:
    dec %ecx
    jnz 4b
    call mig_leaf
    test $(MIG_INS_EVERY - 1), %r12d
    jnz 5f
    mov %r12d, %ecx
mig_ins_insn:
    /* Data1 = sequence number, Data2 = generator (spec 5.4) */
    lwpins $MIG_INS_IMM, %ecx, %r14
    adc $0, %rbp                /* CF = 1: the ring buffer was full */
5:
    test $(MIG_DRAIN_EVERY - 1), %r12d
    jnz 6f
    int $MIG_DRAIN_VECTOR       /* the consumer; not counted */
6:
    dec %r15
    jnz 1b
    mov %r12, MIG_ARGS_SEQ(%r13)
    mov %r14, MIG_ARGS_RNG(%r13)
    mov %rbx, MIG_ARGS_SUM(%r13)
    mov %rbp, MIG_ARGS_CARRY(%r13)
    int $USER_RET_VECTOR        /* not counted: LWP stays enabled */

mig_leaf:
    lea (%rbx, %r12), %rax
    ret
mig_text_end:

    .section .note.GNU-stack, "", @progbits
