/*
 * Boot code of the system-mode test kernel.
 *
 * QEMU's Multiboot v1 loader (-kernel) enters "start" in 32-bit protected
 * mode with EAX = 0x2BADB002 and EBX = the Multiboot information.  We
 * clear .bss, identity-map the first 4 GiB with 2 MiB pages (U=1
 * everywhere so that CPL3 code can use any kernel address; the top GiB,
 * which holds the local APIC, uncached), enter long mode and call
 * main(magic, mbi).
 *
 * Also here: the 256 interrupt entry stubs (cstart.inc), which all funnel
 * into do_handle_exception(), and the CPL3 trampolines of run_in_user().
 *
 * Modelled on kvm-unit-tests x86/cstart64.S.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "desc.h"
#include "cstart.inc"

#define MSR_EFER        0xc0000080
#define EFER_LME        (1 << 8)
#define CR0_PE          (1 << 0)
#define CR0_PG          (1 << 31)
#define CR4_PAE         (1 << 5)

#define PTE_P           (1 << 0)
#define PTE_RW          (1 << 1)
#define PTE_US          (1 << 2)
#define PTE_PWT         (1 << 3)
#define PTE_PCD         (1 << 4)
#define PTE_PS          (1 << 7)

    multiboot_header

    .text
    .code32
    .globl start
start:
    lgdt gdt_desc
    mov $KERNEL_DS, %ecx
    mov %ecx, %ds
    mov %ecx, %es
    mov %ecx, %ss
    mov %eax, %esi              /* Multiboot magic; EBX stays untouched */

    cld
    mov $__bss_start, %edi
    mov $__bss_end, %ecx
    sub %edi, %ecx
    xor %eax, %eax
    rep stosb
    mov %esi, mb_magic
    mov %ebx, mb_info
    mov $stack_top, %esp

    /* PML4[0] -> PDPT, PDPT[0..3] -> PD[0..3] */
    movl $(pdpt + PTE_P + PTE_RW + PTE_US), pml4
    mov $(pd + PTE_P + PTE_RW + PTE_US), %eax
    mov $pdpt, %edi
    mov $4, %ecx
1:  mov %eax, (%edi)
    add $0x1000, %eax
    add $8, %edi
    loop 1b

    /* 2048 2 MiB pages: 0..4 GiB, the last GiB (MMIO, local APIC) uncached */
    mov $(PTE_P + PTE_RW + PTE_US + PTE_PS), %eax
    mov $pd, %edi
    mov $2048, %ecx
2:  mov %eax, (%edi)
    cmp $0xc0000000, %eax
    jb 3f
    orl $(PTE_PWT + PTE_PCD), (%edi)
3:  add $0x200000, %eax
    add $8, %edi
    loop 2b

    mov %cr4, %eax
    or $CR4_PAE, %eax
    mov %eax, %cr4
    mov $pml4, %eax
    mov %eax, %cr3
    mov $MSR_EFER, %ecx
    rdmsr
    or $EFER_LME, %eax
    wrmsr
    mov %cr0, %eax
    or $(CR0_PG + CR0_PE), %eax
    mov %eax, %cr0
    ljmp $KERNEL_CS, $start64

    .code64
start64:
    mov $KERNEL_DS, %eax
    mov %eax, %ds
    mov %eax, %es
    mov %eax, %ss
    mov %eax, %fs
    mov %eax, %gs
    mov $stack_top, %rsp
    mov mb_magic(%rip), %edi
    mov mb_info(%rip), %esi
    call main
    mov %eax, %edi
    call exit

/*
 * Interrupt entry: stub N pushes a dummy error code (unless the CPU
 * pushed one) and N, then jumps to isr_common, which builds a struct
 * ex_regs (desc.h) and calls do_handle_exception(regs).  isr_table[N]
 * holds the address of stub N.
 */
    isr_stubs

isr_common:
    push %rax
    push %rbx
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %rbp
    push %r8
    push %r9
    push %r10
    push %r11
    push %r12
    push %r13
    push %r14
    push %r15
    mov %rsp, %rdi
    cld
    call do_handle_exception
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rbp
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rbx
    pop %rax
    add $16, %rsp               /* vector, error code */
    iretq

/*
 * int run_in_user(void (*fn)(void *), void *arg)
 *
 * iretq to user_entry at CPL3 (interrupts off; on for run_in_user_irq)
 * on user_stack.  We come back through user_return(ret), called from the
 * "int $USER_RET_VECTOR" handler (ret = 0) or from the handler of an
 * exception the CPL3 code did not expect (ret = USER_EXCEPTION | vector).
 * Exceptions and interrupts taken at CPL3 run on the TSS RSP0 stack, not
 * on this one, so the frame saved here survives them.
 */
    .globl run_in_user, run_in_user_irq, run_in_user_at
run_in_user_irq:                /* the same, with interrupts enabled */
    mov $0x202, %r9d            /* RFLAGS: IF = 1 */
    jmp 1f
run_in_user:
    mov $0x2, %r9d              /* RFLAGS: IF = 0 */
1:  lea user_saved_rsp(%rip), %rdx
    lea user_stack_top(%rip), %rcx
    lea user_entry(%rip), %r8
    /* fall through */

/*
 * long run_in_user_at(void (*fn)(void *), void *arg, u64 *saved,
 *                     void *ustack_top, const void *entry, u64 rflags)
 *
 * The general form (desc.h): the kernel stack pointer is saved in *saved,
 * the CPL3 stack is ustack_top, and entry calls fn(arg) and then leaves
 * CPL3 through an INT whose handler calls user_return_at(*saved, ret).
 */
run_in_user_at:
    push %rbp
    push %rbx
    push %r12
    push %r13
    push %r14
    push %r15
    mov %rsp, (%rdx)
    pushq $USER_DS              /* SS */
    push %rcx                   /* RSP */
    push %r9                    /* RFLAGS */
    pushq $USER_CS              /* CS */
    push %r8                    /* RIP */
    mov $USER_DS, %eax
    mov %eax, %ds
    mov %eax, %es
    iretq

user_entry:                     /* CPL3: RDI = fn, RSI = arg */
    mov %rdi, %rax
    mov %rsi, %rdi
    call *%rax
    int $USER_RET_VECTOR
    ud2

    .globl user_return, user_return_at
user_return:                    /* void user_return(long ret), CPL0 */
    mov %rdi, %rsi
    mov user_saved_rsp(%rip), %rdi
    /* fall through */
user_return_at:                 /* void user_return_at(u64 saved, long ret) */
    mov %rdi, %rsp
    mov $KERNEL_DS, %eax
    mov %eax, %ds
    mov %eax, %es
    mov %eax, %ss
    mov %rsi, %rax
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbx
    pop %rbp
    ret

    .data
    .align 16
    .globl gdt
gdt:
    .quad 0                     /* null */
    .quad 0x00af9a000000ffff    /* KERNEL_CS: 64-bit code, DPL0 */
    .quad 0x00cf92000000ffff    /* KERNEL_DS: data, DPL0 */
    .quad 0x00cff2000000ffff    /* USER_DS: data, DPL3 */
    .quad 0x00affa000000ffff    /* USER_CS: 64-bit code, DPL3 */
    .quad 0, 0                  /* TSS_SEL: filled in by setup_desc() */
    .quad 0, 0, 0, 0            /* TEST_GATE64_SEL(0), (1): for the tests */
gdt_end:

gdt_desc:
    .word gdt_end - gdt - 1
    .quad gdt

    .bss
    .align 4096
pml4:
    .space 4096
pdpt:
    .space 4096
pd:
    .space 4 * 4096
    .space 16384
stack_top:
    .space 16384
    .globl entry_stack_top
entry_stack_top:                /* TSS RSP0: exceptions taken at CPL3 */
    .space 16384
user_stack_top:
mb_magic:
    .long 0
mb_info:
    .long 0
user_saved_rsp:
    .quad 0

    .section .note.GNU-stack, "", @progbits
