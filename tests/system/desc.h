/*
 * Segments, interrupt vectors and the exception frame of the test kernels
 * (64-bit and 32-bit builds).  Included by the .S files as well.
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
#define X86_EFLAGS_FIXED 0x2     /* bit 1, always set */
#define X86_EFLAGS_VM   0x20000

/*
 * The 32-bit kernel's GDT has NR_TEST_SEGS more entries after its TSS,
 * TEST_SEL(0) to TEST_SEL(NR_TEST_SEGS - 1), for the tests to fill in.
 */
#define NR_TEST_SEGS    4
#define TEST_SEL(n)     (0x30 + 8 * (n))

/*
 * The 64-bit kernel's GDT has NR_TEST_GATES64 free 16-byte system
 * descriptor slots after its (16-byte) TSS, TEST_GATE64_SEL(0) to
 * TEST_GATE64_SEL(NR_TEST_GATES64 - 1), for the tests to fill in.
 */
#define NR_TEST_GATES64 2
#define TEST_GATE64_SEL(n) (0x38 + 16 * (n))

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

/*
 * The stack built by the CPU and isr_common, lowest address first.  The
 * register names are those of the 64-bit kernel in both builds, as in
 * kvm-unit-tests.
 */
#ifdef __x86_64__
struct ex_regs {
    unsigned long r15, r14, r13, r12, r11, r10, r9, r8;
    unsigned long rbp, rdi, rsi, rdx, rcx, rbx, rax;
    unsigned long vector, error_code;
    unsigned long rip, cs, rflags, rsp, ss;
};

#define ASM_TRY_CLEAR   "movl $0, exception_vec(%%rip)\n\t"
#define ASM_PTR         ".quad"

/* The 64-bit TSS: the stacks for CPL changes and the IST */
struct tss {
    u32 reserved0;
    u64 rsp[3];
    u64 reserved1;
    u64 ist[7];
    u64 reserved2;
    u16 reserved3;
    u16 iomap_base;
} __attribute__((packed));
#else
struct ex_regs {
    unsigned long es, ds;
    unsigned long rdi, rsi, rbp, esp_unused, rbx, rdx, rcx, rax;
    unsigned long vector, error_code;
    unsigned long rip, cs, rflags;
    unsigned long rsp, ss;              /* from CPL3 or virtual-8086 mode */
    unsigned long v86_es, v86_ds, v86_fs, v86_gs;   /* virtual-8086 mode */
};

#define ASM_TRY_CLEAR   "movl $0, %%ss:exception_vec\n\t"
#define ASM_PTR         ".long"

/* The 32-bit TSS: only the CPL0 stack is used */
struct tss {
    u32 link;
    u32 esp0, ss0;
    u32 unused[22];                     /* no hardware task switches */
    u16 trap;
    u16 iomap_base;
} __attribute__((packed));
#endif

typedef void (*handler_fn)(struct ex_regs *regs);

/* Defined by cstart64.S or cstart32.S, and kernel.ld */
struct ex_table_entry {
    unsigned long rip, fixup;
};

extern const unsigned long isr_table[256];
extern u64 gdt[];
extern char entry_stack_top[];
extern const struct ex_table_entry __ex_table_start[], __ex_table_end[];
void user_return(long ret) __attribute__((noreturn));
void do_handle_exception(struct ex_regs *regs);

void setup_desc(void);
void handle_irq(unsigned vector, handler_fn fn);
/* Point IDT entry @vector at code of its own (0: the usual stub again) */
void set_raw_handler(unsigned vector, unsigned long addr);

/*
 * Exception fixup: ASM_TRY(catch) records the address of the instruction
 * that follows it in the exception table; if that instruction faults, the
 * handler stores the vector in exception_vec, the error code in
 * exception_error_code and resumes at the label "catch".  Works at CPL0
 * and CPL3.  The 32-bit kernel clears exception_vec through SS, so that
 * ASM_TRY also works while a test has loaded DS with a segment of its own.
 */
extern volatile unsigned exception_vec;
extern volatile unsigned long exception_error_code;     /* volatile: ditto */

#define ASM_TRY(catch)                                  \
    ASM_TRY_CLEAR                                       \
    ".pushsection .ex_table, \"a\"\n\t"                 \
    ASM_PTR " 1111f, " catch "\n\t"                     \
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

/* 64-bit kernel only: run_in_user() with EFLAGS.IF = 1 at CPL3 */
int run_in_user_irq(void (*fn)(void *), void *arg);

/*
 * 64-bit kernel only: run_in_user() with the kernel stack pointer saved in
 * *@saved, the CPL3 stack @ustack_top, and @entry, which calls fn(arg) at
 * CPL3 and leaves through an INT whose handler calls user_return_at(*saved,
 * ret) (e.g. one per CPU); @rflags as at CPL3.
 */
long run_in_user_at(void (*fn)(void *), void *arg, u64 *saved,
                    void *ustack_top, const void *entry, u64 rflags);
void user_return_at(u64 saved, long ret) __attribute__((noreturn));

/* Make INT @vector usable at CPL3 (gate DPL 3), handled as handle_irq() */
void allow_user_int(unsigned vector);

/* The frame of the exception that ended the CPL3 or virtual-8086 code */
extern struct ex_regs user_ex_regs;

/*
 * 32-bit kernel only: enter virtual-8086 mode at cs:ip with the stack at
 * ss:sp, DS = ES = FS = GS = cs, IOPL 0 and interrupts disabled.  The code
 * comes back only through an exception: the result is USER_EXCEPTION |
 * vector, and user_ex_regs holds the exception's frame.
 */
int run_in_vm86(u16 cs, u16 ip, u16 ss, u16 sp);
#endif

#endif
