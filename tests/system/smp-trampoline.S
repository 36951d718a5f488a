/*
 * The SMP LWP test (lwp-smp.c): the application processors' start-up
 * trampoline, the CPL3 entry and exit used on every vCPU, and the CPL3
 * code that the vCPUs profile.
 *
 * An AP that receives INIT and then a STARTUP IPI with vector
 * SMP_SIPI_VECTOR starts in real mode at CS:IP = SMP_TRAMP_BASE >> 4 : 0,
 * where the BSP has copied smp_tramp_start .. smp_tramp_end.  That code
 * loads the trampoline GDT and jumps to smp_pm32, in the kernel image at
 * its link address (flat segments, paging off).  smp_pm32 turns on PAE,
 * loads the BSP's page tables (smp_boot_cr3), sets EFER.LME and CR0.PG
 * and jumps to 64-bit code, which takes smp_boot_stack and calls
 * smp_ap_main().  The BSP starts one AP at a time, so one copy of those
 * two variables serves them all.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "desc.h"
#include "lwp-smp.h"

#define MSR_EFER        0xc0000080
#define EFER_LME        (1 << 8)
#define CR0_PE          (1 << 0)
#define CR0_NW          (1 << 29)
#define CR0_CD          (1 << 30)
#define CR0_PG          (1 << 31)
#define CR4_PAE         (1 << 5)

/* Offset of @sym in the copy at SMP_TRAMP_BASE, addressed through DS = CS */
#define TRAMP_OFF(sym)  ((sym) - smp_tramp_start)

    .text
    .code16
    .globl smp_tramp_start, smp_tramp_end
smp_tramp_start:
    cli
    mov %cs, %ax
    mov %ax, %ds
    lgdtl TRAMP_OFF(tramp_gdtr)
    mov %cr0, %eax
    and $~(CR0_CD | CR0_NW), %eax       /* INIT leaves caching disabled */
    or $CR0_PE, %eax
    mov %eax, %cr0
    ljmpl $TRAMP_CS32, $smp_pm32
    .align 4
tramp_gdtr:
    .word tramp_gdt_end - tramp_gdt - 1
    .long tramp_gdt
smp_tramp_end:

    .code32
smp_pm32:
    mov $TRAMP_DS, %eax
    mov %eax, %ds
    mov %eax, %es
    mov %eax, %ss
    mov %cr4, %eax
    or $CR4_PAE, %eax
    mov %eax, %cr4
    mov smp_boot_cr3, %eax
    mov %eax, %cr3
    mov $MSR_EFER, %ecx
    rdmsr
    or $EFER_LME, %eax
    wrmsr
    mov %cr0, %eax
    or $CR0_PG, %eax
    mov %eax, %cr0
    ljmp $TRAMP_CS64, $smp_lm64

    .code64
smp_lm64:
    mov smp_boot_stack(%rip), %rsp
    call smp_ap_main
    ud2

/*
 * CPL3 entry of run_in_user_at() (cstart64.S) on every vCPU: the return
 * INT has a vector of its own, whose handler finds the vCPU's saved stack.
 */
    .globl smp_user_entry
smp_user_entry:                 /* CPL3: RDI = fn, RSI = arg */
    mov %rdi, %rax
    mov %rsi, %rdi
    call *%rax
    int $SMP_RET_VECTOR
    ud2

/*
 * void smp_loop_user(struct smp_loop_args *a), CPL3 (lwp-smp.h)
 *
 * Between the two LLWPCBs, which neither LWP counts (choice 39), only
 * the instructions at the smp_l_* labels execute, in this order:
 *
 *   outer times:  smp_l_ins  LWPINS           Data1 = R8D, Data2 = R10
 *                 smp_l_movi MOV
 *                 inner times: smp_l_val   LWPVAL  Data1 = EDX, Data2 = R11
 *                              smp_l_decin DEC
 *                              smp_l_jnzin JNZ (to smp_l_val; falls
 *                                          through the last time)
 *                 smp_l_inc  INC
 *                 smp_l_decout DEC
 *                 smp_l_jnzout JNZ (to smp_l_ins; falls through to
 *                              smp_l_end the last time)
 *
 * lwp-smp.c models the records from this list, the trip counts and the
 * intervals.  Check with "objdump -d smp-trampoline.o".
 */
    .globl smp_loop_user, smp_l_ins, smp_l_movi, smp_l_val, smp_l_decin
    .globl smp_l_jnzin, smp_l_inc, smp_l_decout, smp_l_jnzout, smp_l_end
smp_loop_user:
    mov 8(%rdi), %ecx           /* outer */
    mov 12(%rdi), %ebx          /* inner */
    mov 16(%rdi), %r10
    mov 24(%rdi), %r11
    mov (%rdi), %rax
    xor %r8d, %r8d              /* outer index */
    xor %r9d, %r9d
    llwpcb %rax
smp_l_ins:
    lwpins $SMP_LOOP_INS_IMM, %r8d, %r10
smp_l_movi:
    mov %ebx, %edx
smp_l_val:
    lwpval $SMP_LOOP_VAL_IMM, %edx, %r11
smp_l_decin:
    dec %edx
smp_l_jnzin:
    jnz smp_l_val
smp_l_inc:
    inc %r8d
smp_l_decout:
    dec %ecx
smp_l_jnzout:
    jnz smp_l_ins
smp_l_end:
    llwpcb %r9
    int $SMP_RET_VECTOR
    ud2

/* void smp_producer_user(struct smp_prod_args *a), CPL3 (lwp-smp.h) */
    .globl smp_producer_user, smp_p_ins
smp_producer_user:
    mov 8(%rdi), %ecx           /* count */
    mov 16(%rdi), %rdx          /* Data2 = data2_base + seq */
    mov (%rdi), %rax
    xor %esi, %esi              /* seq, Data1 */
    xor %r8d, %r8d              /* LWPINS that set CF */
    xor %r9d, %r9d
    llwpcb %rax
1:
smp_p_ins:
    lwpins $SMP_PROD_INS_IMM, %esi, %rdx
    adc $0, %r8
    inc %esi
    inc %rdx
    dec %ecx
    jnz 1b
    llwpcb %r9
    mov %r8, 24(%rdi)
    int $SMP_RET_VECTOR
    ud2

/* void smp_init_user(struct smp_init_args *a), CPL3 (lwp-smp.h) */
    .globl smp_init_user, smp_i_ins
smp_init_user:
    mov (%rdi), %rax
    mov 8(%rdi), %ecx
    xor %r8d, %r8d              /* LWPINS that left CF = 1 */
    test %rax, %rax
    jz 1f
    llwpcb %rax
1:
    stc
smp_i_ins:
    lwpins $SMP_INIT_INS_IMM, %ecx, %rax
    adc $0, %r8d
    dec %ecx
    jnz 1b
    slwpcb %rax
    mov %r8d, 12(%rdi)
    mov %rax, 16(%rdi)
    int $SMP_RET_VECTOR
    ud2

    .data
    .align 8
tramp_gdt:
    .quad 0
    .quad 0x00cf9a000000ffff    /* TRAMP_CS32: 32-bit code */
    .quad 0x00cf92000000ffff    /* TRAMP_DS: data */
    .quad 0x00af9a000000ffff    /* TRAMP_CS64: 64-bit code */
tramp_gdt_end:

    .section .note.GNU-stack, "", @progbits
