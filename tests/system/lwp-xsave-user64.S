/*
 * CPL3 code of the 64-bit XSAVE/XRSTOR tests of LWP state (lwp-xsave.h).
 *
 * Every instruction that LWP may count is written with one of the macros
 * below, which add an entry to the table of its sequence (xs_seq_<tab>)
 * in retirement order: the code only branches forward, and what a branch
 * skips is never listed.  So the expected InstructionAddress of every
 * record comes from the assembler's labels, not from the emulator.  Check
 * the code with "objdump -d lwp-xsave-user64.o".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "desc.h"
#include "lwp-xsave.h"

/* Add (ip, next, kind) to the table xs_seq_\tab */
.macro xs_entry tab, ip, next, kind
    .pushsection .rodata.xs_seq_\tab, "a"
    .quad \ip, \next, \kind
    .popsection
.endm

/* A counted instruction that is not a branch */
.macro x_insn tab, insn:vararg
990:
    \insn
991:
    xs_entry \tab, 990b, 991b, XS_INSN
.endm

/* A branch that is taken: the next instruction is at \target */
.macro x_taken tab, target, insn:vararg
990:
    \insn
    xs_entry \tab, 990b, \target, XS_TAKEN
.endm

/* Open and close the table xs_seq_\tab */
.macro xs_table_begin tab
    .pushsection .rodata.xs_seq_\tab, "a"
    .align 8
    .globl xs_seq_\tab
xs_seq_\tab:
    .popsection
.endm

.macro xs_table_end tab
    .pushsection .rodata.xs_seq_\tab, "a"
    .globl xs_seq_\tab\()_end
xs_seq_\tab\()_end:
    .popsection
.endm

/* EDX:EAX = u->mask, RCX = u->area, RBX = u */
.macro load_xrstor_args
    mov %rdi, %rbx
    mov XS_U_MASK_LO(%rbx), %eax
    mov XS_U_MASK_HI(%rbx), %edx
    mov XS_U_AREA(%rbx), %rcx
.endm

    .text
    .code64

/* void xs_llwpcb_user(void *cb): 21 instructions, one branch */
    xs_table_begin a
    .globl xs_llwpcb_user
xs_llwpcb_user:
    llwpcb %rdi                 /* counted by neither LWP (choice 39) */
    .rept 10
    x_insn a, nop
    .endr
    x_taken a, 1f, jmp 1f
    ud2
1:
    .rept 10
    x_insn a, nop
    .endr
    int $USER_RET_VECTOR        /* leaves CPL3: not counted */
    xs_table_end a

/* void xs_xrstor_user(struct xs_user *u): 18 instructions, one branch */
    xs_table_begin b
    .globl xs_xrstor_user, xs_xrstor_insn, xs_xrstor_next
xs_xrstor_user:
    load_xrstor_args
xs_xrstor_insn:
    xrstor (%rcx)
xs_xrstor_next:
    .rept 8
    x_insn b, nop
    .endr
    x_taken b, 1f, jmp 1f
    ud2
1:
    .rept 7
    x_insn b, nop
    .endr
    x_insn b, slwpcb %rax
    x_insn b, mov %rax, XS_U_OUT(%rbx)
    int $USER_RET_VECTOR
    xs_table_end b

/* void xs_thr_user(struct xs_user *u) */
    .globl xs_thr_user, xs_thr_ins, xs_thr_ins_next
xs_thr_user:
    load_xrstor_args
    xrstor (%rcx)
    .rept XS_THR_NOPS
    nop
    .endr
    xor %ecx, %ecx
    xor %edx, %edx
xs_thr_ins:
    lwpins $0x1234, %ecx, %edx
xs_thr_ins_next:
    .rept XS_THR_NOPS
    nop
    .endr
    int $USER_RET_VECTOR

/* void xs_plain_user(u64 *out): 16 instructions, one branch */
    xs_table_begin d
    .globl xs_plain_user
xs_plain_user:
    .rept 6
    x_insn d, nop
    .endr
    x_taken d, 1f, jmp 1f
    ud2
1:
    .rept 7
    x_insn d, nop
    .endr
    x_insn d, slwpcb %rax
    x_insn d, mov %rax, (%rdi)
    int $USER_RET_VECTOR
    xs_table_end d

/* void xs_ctl_user(void *cb) */
    xs_table_begin c1
    xs_table_begin c2
    .globl xs_ctl_user
xs_ctl_user:
    llwpcb %rdi
    .rept 5
    x_insn c1, nop
    .endr
    int $XS_CTL_VECTOR          /* not counted, not a branch */
    .rept 4
    x_insn c2, nop
    .endr
    x_taken c2, 1f, jmp 1f
    ud2
1:
    .rept 4
    x_insn c2, nop
    .endr
    int $USER_RET_VECTOR
    xs_table_end c1
    xs_table_end c2

/* void xs_sw_user(void *cb) */
    xs_table_begin f1
    xs_table_begin f2
    .globl xs_sw_user
xs_sw_user:
    llwpcb %rdi
    .rept 3
    x_insn f1, nop
    .endr
    x_taken f1, 1f, jmp 1f
    ud2
1:
    .rept 3
    x_insn f1, nop
    .endr
    int $XS_CTL_VECTOR          /* the task switch */
    .rept 5
    x_insn f2, nop
    .endr
    x_taken f2, 1f, jmp 1f
    ud2
1:
    .rept 5
    x_insn f2, nop
    .endr
    x_insn f2, slwpcb %rax
    x_insn f2, mov %rax, xs_sw_out(%rip)
    int $USER_RET_VECTOR
    xs_table_end f1
    xs_table_end f2

/*
 * void xs_flush_user(struct xs_flush *u), xs_flush_opt_user: the counters
 * that SLWPCB, XSAVE and XSAVEOPT store in the middle of straight-line
 * code.  Each flush is the first entry of its table \t\()1-4.
 */
.macro xs_flush_seq fn, t, opt
    xs_table_begin \t\()1
    xs_table_begin \t\()2
    xs_table_begin \t\()3
    xs_table_begin \t\()4
    .globl \fn
\fn:
    mov %rdi, %rbx
    mov XS_F_CB(%rbx), %rdi
    mov XS_F_AREA(%rbx), %rsi
    xor %eax, %eax
    mov $0x40000000, %edx       /* XSAVE: component 62 */
    llwpcb %rdi                 /* counted by neither LWP (choice 39) */
    x_insn \t\()1, slwpcb %rcx
    x_insn \t\()1, mov XS_CB_CTR_IRE(%rdi), %r8d
    x_insn \t\()1, mov %r8d, XS_F_OUT(%rbx)
    x_insn \t\()1, mov XS_CB_CTR_BRE(%rdi), %r8d
    x_insn \t\()1, mov %r8d, XS_F_OUT + 4(%rbx)
    x_insn \t\()1, mov $1, %r9d
    .rept 10
    x_insn \t\()1, nop
    .endr
    x_insn \t\()2, slwpcb %rcx
    x_insn \t\()2, mov XS_CB_CTR_IRE(%rdi), %r8d
    x_insn \t\()2, mov %r8d, XS_F_OUT + 8(%rbx)
    x_insn \t\()2, mov XS_CB_CTR_BRE(%rdi), %r8d
    x_insn \t\()2, mov %r8d, XS_F_OUT + 12(%rbx)
    x_insn \t\()3, xsave (%rsi)
    .rept 3
    x_insn \t\()3, nop
    .endr
    x_taken \t\()3, 1f, jmp 1f
    ud2
1:
    .if \opt
    x_insn \t\()4, xsaveopt XS_AREA_SIZE(%rsi)
    .else
    x_insn \t\()4, xsave XS_AREA_SIZE(%rsi)
    .endif
    .rept 2
    x_insn \t\()4, nop
    .endr
    x_insn \t\()4, xor %ecx, %ecx
    x_taken \t\()4, 1f, jz 1f
    ud2
1:
    llwpcb %rcx                 /* LLWPCB 0 flushes, then disables */
    int $USER_RET_VECTOR
    xs_table_end \t\()1
    xs_table_end \t\()2
    xs_table_end \t\()3
    xs_table_end \t\()4
.endm

    xs_flush_seq xs_flush_user, g, 0
    xs_flush_seq xs_flush_opt_user, h, 1

    .data
    .align 8
    .globl xs_sw_out
xs_sw_out:
    .quad 0

    .section .note.GNU-stack, "", @progbits
