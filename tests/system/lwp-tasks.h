/*
 * The two CPL3 tasks of the preemptive two-task LWP test (lwp-tasks.c,
 * lwp-tasks-user64.S): their loop sizes, their tags and their labels.
 * The assembler includes it too, so the C part is under __ASSEMBLER__.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef LWP_TASKS_H
#define LWP_TASKS_H

/* DPL3 interrupt gate: a task that is done traps to the kernel with it */
#define TASK_EXIT_VECTOR    0x8a

/*
 * Task A: TASK_A_LOOPS iterations of LWPVAL, ADD, TEST, JNZ, DEC, JNZ,
 * with an LWPINS in every 8th iteration (lwp-tasks-user64.S)
 */
#define TASK_A_LOOPS        6000
#define TASK_A_TAG          0xaaaa0001  /* Data2 of its LWPVAL and LWPINS */
#define TASK_A_VAL_IMM      0xa1a1      /* Flags of its LWPVAL records */
#define TASK_A_INS_IMM      0xa2a2      /* Flags of its LWPINS records */

/*
 * Task B: TASK_B_OUTER times (MOV, TASK_B_INNER times (LWPVAL, CALL,
 * ADD, RET, LOOP), LWPINS, DEC, JNZ)
 */
#define TASK_B_OUTER        200
#define TASK_B_INNER        30
#define TASK_B_TAG          0xbbbb0002
#define TASK_B_VAL_IMM      0xb1b1
#define TASK_B_INS_IMM      0xb2b2

#ifndef __ASSEMBLER__
#include "libcflat.h"

/*
 * CPL3, RDI = the task's LWPCB: LLWPCB, the loop, then INT
 * TASK_EXIT_VECTOR with LWP still enabled; never returns.  Task B needs
 * a stack (CALL, RET), task A none.
 */
void task_a_entry(void *cb);
void task_b_entry(void *cb);

/*
 * task_x_text .. task_x_text_end: every instruction LWP counts (after the
 * LLWPCB); task_x_body .. task_x_body_end: the loop; task_x_exit: the
 * instruction after the INT TASK_EXIT_VECTOR (the RIP it pushes)
 */
extern const u8 task_a_text[], task_a_body[], task_a_body_end[],
                task_a_text_end[], task_a_exit[];
extern const u8 task_b_text[], task_b_body[], task_b_body_end[],
                task_b_text_end[], task_b_exit[];

void test_lwp_tasks(void);
#endif

#endif
