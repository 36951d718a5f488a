/*
 * The two CPL3 tasks of the preemptive two-task LWP test (lwp-tasks.h).
 *
 * Each task enables LWP itself with LLWPCB, runs a counted loop and traps
 * to the kernel with INT TASK_EXIT_VECTOR.  lwp-tasks.c derives the
 * number of instructions, branches, LWPVALs and LWPINSs that LWP counts
 * from the loop structure written here (the comments give the counts), so
 * any change to the code below must be reflected in task_a_counts() and
 * task_b_counts().  Check with "objdump -d lwp-tasks-user64.o".
 *
 * The LWPVAL and LWPINS records carry the task's tag in Data2 (the vvvv
 * register) and in Flags (the immediate), so that a record of one task
 * in the other's ring buffer is seen.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "lwp-tasks.h"

    .text
    .code64

/*
 * Task A, RDI = LWPCB.  Counted: 3 instructions before the loop; per
 * iteration i (0-based) LWPVAL, ADD, TEST, JNZ, DEC, JNZ (6 instructions,
 * 2 branches, 1 LWPVAL), and the LWPINS when ESI = 3 * (i + 1) is a
 * multiple of 8, i.e. in iterations 7, 15, 23, ...
 */
    .globl task_a_entry, task_a_text, task_a_body, task_a_body_end
    .globl task_a_text_end, task_a_exit
task_a_entry:
    llwpcb %rdi                 /* counted by neither LWP (choice 39) */
task_a_text:
    mov $TASK_A_LOOPS, %ecx
    mov $TASK_A_TAG, %edx
    xor %esi, %esi
task_a_body:
    lwpval $TASK_A_VAL_IMM, %esi, %edx  /* Data1 = ESI, Data2 = tag */
    add $3, %esi
    test $7, %esi
    jnz 1f
    lwpins $TASK_A_INS_IMM, %esi, %edx
1:
    dec %ecx
    jnz task_a_body
task_a_body_end:
task_a_text_end:
    int $TASK_EXIT_VECTOR       /* not counted (choice 39) */
task_a_exit:
    ud2

/*
 * Task B, RDI = LWPCB, on its own stack.  Counted: MOV, MOV, JMP before
 * the loop (3 instructions, 1 branch); per outer iteration MOV, then
 * TASK_B_INNER times LWPVAL, CALL, ADD, RET, LOOP (5 instructions, 3
 * branches, 1 LWPVAL), then LWPINS, DEC, JNZ (3 instructions, 1 branch,
 * 1 LWPINS).
 */
    .globl task_b_entry, task_b_text, task_b_body, task_b_body_end
    .globl task_b_text_end, task_b_exit
task_b_entry:
    llwpcb %rdi
task_b_text:
    mov $TASK_B_TAG, %r8d
    mov $TASK_B_OUTER, %r9d
    jmp 2f
task_b_body:
task_b_leaf:
    add %ecx, %eax
    ret
2:
    mov $TASK_B_INNER, %ecx
3:
    lwpval $TASK_B_VAL_IMM, %ecx, %r8d  /* Data1 = ECX, Data2 = tag */
    call task_b_leaf
    loop 3b
    lwpins $TASK_B_INS_IMM, %r9d, %r8d
    dec %r9d
    jnz 2b
task_b_body_end:
task_b_text_end:
    int $TASK_EXIT_VECTOR
task_b_exit:
    ud2

    .section .note.GNU-stack, "", @progbits
