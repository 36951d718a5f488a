/*
 * CPL3 code of the 64-bit LWP event tests (lwp-events.h), and the CPL0
 * code it enters with SYSCALL.
 *
 * Every instruction that LWP counts in lwp_seq_user() is written with one
 * of the macros below, which add an entry to the table lwp_seq[] in the
 * order the instructions retire: the straight-line code only branches
 * forward, and what a branch skips is never listed.  The expected
 * InstructionAddress and TargetAddress of every record therefore come from
 * the assembler's labels, not from the emulator.  Check the code with
 * "objdump -d lwp-user64.o".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "desc.h"
#include "lwp-user64.h"

/* Add (ip, next, kind) to lwp_seq[] */
.macro seq_entry ip, next, kind
    .pushsection .rodata.lwp_seq, "a"
    .quad \ip, \next, \kind
    .popsection
.endm

/* A counted instruction that is not a branch */
.macro u_insn insn:vararg
990:
    \insn
991:
    seq_entry 990b, 991b, SEQ_INSN
.endm

/* A branch that is taken: the next instruction is at \target */
.macro u_taken target, insn:vararg
990:
    \insn
    seq_entry 990b, \target, SEQ_TAKEN
.endm

/* A conditional branch that is not taken: the next one falls through */
.macro u_nottaken insn:vararg
990:
    \insn
991:
    seq_entry 990b, 991b, SEQ_NOT_TAKEN
.endm

/*
 * A counted instruction that is not a branch but goes on at \target: far
 * CALL and far RET at CPL3 (choice 46)
 */
.macro u_far target, insn:vararg
990:
    \insn
    seq_entry 990b, \target, SEQ_INSN
.endm

/* RING0_LOOPS times DEC + JNZ on \reg */
.macro ring0_loop reg
    mov $RING0_LOOPS, \reg
9:
    dec \reg
    jnz 9b
.endm

    .pushsection .rodata.lwp_seq, "a"
    .align 8
    .globl lwp_seq
lwp_seq:
    .popsection

    .text
    .code64

/* void lwp_seq_user(void *cb), CPL3 */
    .globl lwp_seq_user, lwp_seq_text, lwp_seq_text_end
lwp_seq_user:
    llwpcb %rdi                 /* counted by neither LWP (choice 39) */
lwp_seq_text:
    u_insn nop
    u_insn nop
    u_insn xor %ecx, %ecx       /* RCX = 0, ZF = 1, CF = 0 */
    u_taken 1f, jz 1f
    ud2
1:
    u_nottaken jnz lwp_seq_bad
    u_taken 2f, jrcxz 2f
    ud2
2:
    u_insn mov $1, %ecx
    u_nottaken loop lwp_seq_bad /* RCX 1 -> 0 */
    u_taken 3f, jmp 3f
    ud2
3:
    u_insn nop
    syscall                     /* leaves CPL3: not counted, not a branch */
    u_insn nop
    u_taken 4f, call 4f
4:
    u_insn pop %rax
    u_insn lea 5f(%rip), %rdx
    u_taken 5f, jmp *%rdx
    ud2
5:
    u_insn lea 6f(%rip), %rax
    u_insn push %rax
    u_taken 6f, ret
    ud2
6:
    .rept 5
    u_insn nop
    .endr
    int $LWP_TEST_INT_VECTOR    /* not counted, not a branch */
    u_insn add $1, %eax
    u_insn lea 7f(%rip), %rdx
    u_taken 7f, call *%rdx
7:
    u_insn pop %rcx
    u_insn mov $3, %ecx
    u_insn sub $3, %ecx         /* ZF = 1 */
    u_taken 8f, je 8f
    ud2
8:
    .rept 7
    u_insn nop
    .endr
    syscall
    u_insn nop
    u_insn xor %eax, %eax       /* CF = 0 */
    u_nottaken jc lwp_seq_bad
    u_insn nop
    /*
     * Far CALL and far RET at CPL3 (spec 2.2, 2.3; choices 39, 46):
     * counted, never branches.  The callees sit here, skipped, so that
     * their records are in lwp_seq_text; each is listed where it runs.
     */
    u_taken 10f, jmp 10f
lwp_far_callee:                 /* from lwp_far_ptr: pushed CS:EIP */
    nop
lwp_far_callee_ret:
    lretl
lwp_gate_callee:                /* from LWP_GATE_USER_SEL: pushed CS:RIP */
    nop
lwp_gate_callee_ret:
    lretq
10:
    u_far lwp_far_callee, lcall *lwp_far_ptr(%rip)     /* USER_CS */
11:
    seq_entry lwp_far_callee, lwp_far_callee_ret, SEQ_INSN
    seq_entry lwp_far_callee_ret, 11b, SEQ_INSN
    u_insn nop
    u_far lwp_gate_callee, lcall *lwp_gate_user_ptr(%rip)
12:
    seq_entry lwp_gate_callee, lwp_gate_callee_ret, SEQ_INSN
    seq_entry lwp_gate_callee_ret, 12b, SEQ_INSN
    u_insn nop
    /*
     * Through a call gate to CPL0: leaves CPL3, so not counted (choice
     * 39); neither is lwp_gate_entry, nor its LRETQ back to CPL3, which
     * executes at CPL0
     */
    lcall *lwp_gate_kernel_ptr(%rip)
    u_insn nop
    u_insn nop
lwp_seq_text_end:
    int $USER_RET_VECTOR        /* not counted: LWP stays enabled */
lwp_seq_bad:
    ud2

    .pushsection .rodata.lwp_seq, "a"
    .globl lwp_seq_end
lwp_seq_end:
    .popsection

/* SYSCALL entry: CPL0 on the user stack, RCX = RIP, R11 = RFLAGS */
    .globl lwp_syscall_entry
lwp_syscall_entry:
    ring0_loop %r8d
    incl lwp_syscalls(%rip)
    sysretq

/* LWP_GATE_KERNEL_SEL's target: CPL0 on the TSS RSP0 stack */
    .globl lwp_gate_entry
lwp_gate_entry:
    ring0_loop %r8d
    incl lwp_gate_calls(%rip)
    lretq

    .globl lwp_ring0_loop
lwp_ring0_loop:
    ring0_loop %eax
    ret

/* void lwp_ins_user(struct lwp_ins_args *a), CPL3 */
    .globl lwp_ins_user, lwp_ins_insn, lwp_ins_next
lwp_ins_user:
    mov 8(%rdi), %esi           /* count */
    mov (%rdi), %rax            /* cb */
    llwpcb %rax
    mov $LWP_INS_DATA1, %ecx
    mov $LWP_INS_DATA2, %edx
1:
lwp_ins_insn:
    lwpins $LWP_INS_IMM, %ecx, %edx
lwp_ins_next:
    dec %esi
    jnz 1b
    xor %eax, %eax
    llwpcb %rax
    int $USER_RET_VECTOR

    .data
    .align 4
    .globl lwp_syscalls, lwp_gate_calls, lwp_gate_callee
lwp_syscalls:
    .long 0
lwp_gate_calls:
    .long 0

    .section .rodata
    .align 4
/* m16:32 far pointers; a call gate ignores the offset */
lwp_far_ptr:
    .long lwp_far_callee
    .word USER_CS
lwp_gate_user_ptr:
    .long 0
    .word LWP_GATE_USER_SEL
lwp_gate_kernel_ptr:
    .long 0
    .word LWP_GATE_KERNEL_SEL

    .section .note.GNU-stack, "", @progbits
