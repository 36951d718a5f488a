/*
 * Boot code of the 32-bit (legacy mode) test kernel.
 *
 * QEMU's Multiboot v1 loader (-kernel) enters "start" in 32-bit protected
 * mode, paging off, with EAX = 0x2BADB002 and EBX = the Multiboot
 * information.  We load our own GDT (flat 32-bit segments, a TSS and
 * NR_TEST_SEGS entries for the tests), clear .bss and call
 * main(magic, mbi).  The kernel stays in legacy protected mode: EFER.LME
 * is never set.
 *
 * Also here: the 256 interrupt entry stubs (cstart.inc), which all funnel
 * into do_handle_exception(), the CPL3 trampolines of run_in_user() and
 * the virtual-8086 mode entry run_in_vm86().
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "desc.h"
#include "cstart.inc"


    multiboot_header

    .text
    .code32
    .globl start
start:
    lgdt gdt_desc
    ljmp $KERNEL_CS, $1f
1:  mov $KERNEL_DS, %ecx
    mov %ecx, %ds
    mov %ecx, %es
    mov %ecx, %fs
    mov %ecx, %gs
    mov %ecx, %ss
    mov %eax, %esi              /* Multiboot magic; EBX stays untouched */

    cld
    mov $__bss_start, %edi
    mov $__bss_end, %ecx
    sub %edi, %ecx
    xor %eax, %eax
    rep stosb
    mov $stack_top, %esp
    push %ebx
    push %esi
    call main
    push %eax
    call exit

/*
 * Interrupt entry: stub N pushes a dummy error code (unless the CPU
 * pushed one) and N, then jumps to isr_common, which builds a struct
 * ex_regs (desc.h) and calls do_handle_exception(regs) with DS = ES =
 * KERNEL_DS.  The interrupted code's DS and ES come back on return (an
 * exception in virtual-8086 mode arrives with them null).  isr_table[N]
 * holds the address of stub N.
 */
    isr_stubs

isr_common:
    pushal
    push %ds
    push %es
    mov $KERNEL_DS, %eax
    mov %eax, %ds
    mov %eax, %es
    mov %esp, %eax
    cld
    push %eax
    call do_handle_exception
    add $4, %esp
    pop %es
    pop %ds
    popal
    add $8, %esp                /* vector, error code */
    iret

/*
 * int run_in_user(void (*fn)(void *), void *arg)
 *
 * iret to user_entry at CPL3 (interrupts off) on user_stack.  We come
 * back through user_return(ret), called from the "int $USER_RET_VECTOR"
 * handler (ret = 0) or from the handler of an exception the CPL3 code did
 * not expect (ret = USER_EXCEPTION | vector).  Exceptions taken at CPL3
 * run on the TSS ESP0 stack, not on this one, so the frame saved here
 * survives them.
 */
    .globl run_in_user
run_in_user:
    push %ebp
    push %ebx
    push %esi
    push %edi
    mov 20(%esp), %eax          /* fn */
    mov 24(%esp), %edx          /* arg */
    mov %esp, user_saved_esp
    pushl $USER_DS              /* SS */
    pushl $user_stack_top       /* ESP */
    pushl $0x2                  /* EFLAGS: IF = 0 */
    pushl $USER_CS              /* CS */
    pushl $user_entry           /* EIP */
    mov $USER_DS, %ecx
    mov %ecx, %ds
    mov %ecx, %es
    iret

user_entry:                     /* CPL3: EAX = fn, EDX = arg */
    push %edx
    call *%eax
    int $USER_RET_VECTOR
    ud2

/*
 * int run_in_vm86(u16 cs, u16 ip, u16 ss, u16 sp)
 *
 * iret to virtual-8086 mode (EFLAGS.VM = 1, IOPL 0, IF = 0).  Like
 * run_in_user(), it returns through user_return(USER_EXCEPTION | vector)
 * from the handler of the first exception.
 */
    .globl run_in_vm86
run_in_vm86:
    push %ebp
    push %ebx
    push %esi
    push %edi
    movzwl 20(%esp), %eax       /* cs */
    movzwl 24(%esp), %ecx       /* ip */
    movzwl 28(%esp), %edx       /* ss */
    movzwl 32(%esp), %ebx       /* sp */
    mov %esp, user_saved_esp
    push %eax                   /* GS */
    push %eax                   /* FS */
    push %eax                   /* DS */
    push %eax                   /* ES */
    push %edx                   /* SS */
    push %ebx                   /* ESP */
    pushl $(X86_EFLAGS_VM | 0x2)
    push %eax                   /* CS */
    push %ecx                   /* EIP */
    iret

    .globl user_return
user_return:                    /* void user_return(long ret), CPL0 */
    mov 4(%esp), %eax
    mov user_saved_esp, %esp
    mov $KERNEL_DS, %ecx
    mov %ecx, %ds
    mov %ecx, %es
    mov %ecx, %fs
    mov %ecx, %gs
    mov %ecx, %ss
    pop %edi
    pop %esi
    pop %ebx
    pop %ebp
    ret

    .data
    .align 16
    .globl gdt
gdt:
    .quad 0                     /* null */
    .quad 0x00cf9a000000ffff    /* KERNEL_CS: 32-bit code, DPL0 */
    .quad 0x00cf92000000ffff    /* KERNEL_DS: data, DPL0 */
    .quad 0x00cff2000000ffff    /* USER_DS: data, DPL3 */
    .quad 0x00cffa000000ffff    /* USER_CS: 32-bit code, DPL3 */
    .quad 0                     /* TSS_SEL: filled in by setup_desc() */
    .fill NR_TEST_SEGS, 8, 0    /* TEST_SEL(n): filled in by the tests */
gdt_end:

gdt_desc:
    .word gdt_end - gdt - 1
    .long gdt

    .bss
    .align 4096
    .space 16384
stack_top:
    .space 16384
    .globl entry_stack_top
entry_stack_top:                /* TSS ESP0: exceptions at CPL3 and in vm86 */
    .space 16384
user_stack_top:
user_saved_esp:
    .long 0

    .section .note.GNU-stack, "", @progbits
