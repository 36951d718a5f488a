/*
 * Segments, interrupt vectors and the exception frame of the test kernel.
 * Included by cstart64.S as well.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef DESC_H
#define DESC_H

#define KERNEL_CS       0x08
#define KERNEL_DS       0x10
#define USER_DS         0x1b    /* GDT entry 3, RPL 3 */
#define USER_CS         0x23    /* GDT entry 4, RPL 3 */
#define TSS_SEL         0x28

#define DE_VECTOR       0
#define UD_VECTOR       6
#define GP_VECTOR       13
#define PF_VECTOR       14
#define SELF_IPI_VECTOR 0x40
#define USER_RET_VECTOR 0x80    /* DPL3 gate: CPL3 code returns to the kernel */
#define SPURIOUS_VECTOR 0xff

/* run_in_user() result when the CPL3 code died of an exception */
#define USER_EXCEPTION  0x100

#ifndef __ASSEMBLER__
#include "libcflat.h"

/* The stack built by the CPU and isr_common, lowest address first */
struct ex_regs {
    u64 r15, r14, r13, r12, r11, r10, r9, r8;
    u64 rbp, rdi, rsi, rdx, rcx, rbx, rax;
    u64 vector, error_code;
    u64 rip, cs, rflags, rsp, ss;
};

typedef void (*handler_fn)(struct ex_regs *regs);

/* Defined by cstart64.S and kernel.ld */
struct ex_table_entry {
    u64 rip, fixup;
};

extern const u64 isr_table[256];
extern u64 gdt64[];
extern char entry_stack_top[];
extern const struct ex_table_entry __ex_table_start[], __ex_table_end[];
void user_return(long ret) __attribute__((noreturn));
void do_handle_exception(struct ex_regs *regs);

void setup_desc(void);
void handle_irq(unsigned vector, handler_fn fn);

/*
 * Exception fixup: ASM_TRY(catch) records the address of the instruction
 * that follows it in the exception table; if that instruction faults, the
 * handler stores the vector in exception_vec and resumes at the label
 * "catch".  Works at CPL0 and CPL3.
 */
extern volatile unsigned exception_vec;

#define ASM_TRY(catch)                                  \
    "movl $0, exception_vec(%%rip)\n\t"                 \
    ".pushsection .ex_table, \"a\"\n\t"                 \
    ".quad 1111f, " catch "\n\t"                        \
    ".popsection\n\t"                                   \
    "1111:"

static inline unsigned exception_vector(void)
{
    return exception_vec;
}

/* Run one instruction; return the vector it raised, or 0 */
#define asm_safe(insn, inputs...)                       \
    ({                                                  \
        asm volatile(ASM_TRY("1f")                      \
                     insn "\n\t"                        \
                     "1:\n\t"                           \
                     : : inputs : "memory");            \
        exception_vector();                             \
    })

/*
 * Call fn(arg) at CPL3 on a user stack with interrupts disabled.
 * Returns 0 when fn returned, USER_EXCEPTION | vector when an exception
 * not covered by ASM_TRY ended it.  fn must not do I/O (no printf).
 */
int run_in_user(void (*fn)(void *), void *arg);
#endif

#endif
