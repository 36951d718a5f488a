/*
 * The LWP instructions of the legacy-mode tests (lwp32.h) and run_insn(),
 * which runs one of them with the registers a test asks for.
 *
 * Each snippet is one instruction followed by a jump to run_insn_done,
 * with an exception table entry that also resumes there.  Check the
 * encodings with "objdump -d -M i386 lwp32-insns.o".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "desc.h"
#include "lwp32.h"

    .text
    .code32

/*
 * int run_insn(const u8 *insn, struct insn_regs *r)
 *
 * Everything after the test's DS is loaded goes through SS, which is
 * always flat.
 */
    .globl run_insn
run_insn:
    push %ebp
    push %ebx
    push %esi
    push %edi
    push %ds
    push %es
    push %fs
    push %gs
    mov 36(%esp), %eax          /* insn */
    mov 40(%esp), %ecx          /* r */
    mov %eax, run_target
    mov %ecx, run_regs
    mov %esp, run_saved_esp
    movl $0, exception_vec
    pushl $0x3                  /* CF = 1, everything else 0 */
    popfl
    mov %ss:R_ES(%ecx), %es
    mov %ss:R_FS(%ecx), %fs
    mov %ss:R_GS(%ecx), %gs
    mov %ss:R_DS(%ecx), %ds
    mov %ss:R_EAX(%ecx), %eax
    mov %ss:R_EBX(%ecx), %ebx
    mov %ss:R_EDX(%ecx), %edx
    mov %ss:R_ESI(%ecx), %esi
    mov %ss:R_EDI(%ecx), %edi
    mov %ss:R_EBP(%ecx), %ebp
    mov %ss:R_ECX(%ecx), %ecx
    jmp *%ss:run_target

run_insn_done:
    pushfl
    push %ecx
    mov %ss:run_regs, %ecx
    popl %ss:R_ECX(%ecx)
    popl %ss:R_EFLAGS(%ecx)
    mov %eax, %ss:R_EAX(%ecx)
    mov %ebx, %ss:R_EBX(%ecx)
    mov %edx, %ss:R_EDX(%ecx)
    mov %esi, %ss:R_ESI(%ecx)
    mov %edi, %ss:R_EDI(%ecx)
    mov %ebp, %ss:R_EBP(%ecx)
    mov %ss:run_saved_esp, %esp
    pop %gs
    pop %fs
    pop %es
    pop %ds
    mov exception_vec, %eax
    pop %edi
    pop %esi
    pop %ebx
    pop %ebp
    ret

#define EMIT_SNIPPET(name, ...)                                 \
    .globl name; name: .byte __VA_ARGS__; jmp run_insn_done;    \
    .pushsection .ex_table, "a"; .long name, run_insn_done; .popsection;
#define EMIT_SNIPPET_IMM(name, ...)                             \
    .globl name; name: .byte __VA_ARGS__; .long LWP_IMM;        \
    jmp run_insn_done;                                          \
    .pushsection .ex_table, "a"; .long name, run_insn_done; .popsection;

    .align 16
LWP32_SNIPPETS(EMIT_SNIPPET, EMIT_SNIPPET_IMM)

/*
 * flush32_seq, run by run_insn at CPL3 (lwp32.c, test_flush): EBX = the
 * LWPCB, ESI = u32 out[4], EDI = two XSAVE areas 4 KiB apart, EDX:EAX =
 * 1 << 62.  LLWPCB EBX, straight-line code with four flushes of the
 * counters, LLWPCB 0.  The counts in lwp32.c come from this listing.
 */
    .globl flush32_seq
flush32_seq:
    llwpcb %ebx                 /* counted by neither LWP (row 39) */
    slwpcb %ecx                 /* 1: the first instruction after it */
    mov 0x8c(%ebx), %ecx        /* EventCounter2 */
    mov %ecx, (%esi)
    mov 0x94(%ebx), %ecx        /* EventCounter3 */
    mov %ecx, 4(%esi)
    .rept 10
    nop
    .endr
    slwpcb %ecx                 /* 2: 15 instructions later */
    mov 0x8c(%ebx), %ecx
    mov %ecx, 8(%esi)
    mov 0x94(%ebx), %ecx
    mov %ecx, 12(%esi)
    xsave (%edi)                /* 3: 5 instructions later */
    .rept 3
    nop
    .endr
    jmp 1f
    ud2
1:
    xsave 4096(%edi)            /* 4: 5 instructions (one JMP) later */
    nop
    nop
    xor %ecx, %ecx
    jz 1f
    ud2
1:
    llwpcb %ecx                 /* 5 (one JZ) later: flushes, then off */
    jmp run_insn_done

/* Virtual-8086 mode code: lwp32.c copies it below 1 MiB */
    .code16
    .globl vm86_code, vm86_code_end, vm86_pop_hlt, vm86_hlt, vm86_llwpcb
    .globl vm86_slwpcb, vm86_llwpcb_rxb000, vm86_lwpins, vm86_lwpval
vm86_code:
vm86_pop_hlt:
    .byte 0x8f, 0xc0                            /* POP AX */
vm86_hlt:
    hlt
vm86_llwpcb:
    .byte 0x8f, 0xe9, 0x78, 0x12, 0xc0          /* LLWPCB EAX bytes */
    hlt
vm86_slwpcb:
    .byte 0x8f, 0xe9, 0x78, 0x12, 0xc8          /* SLWPCB EAX bytes */
    hlt
vm86_llwpcb_rxb000:
    .byte 0x8f, 0x09, 0x78, 0x12, 0xc0          /* R'X'B' = 000 */
    hlt
vm86_lwpins:
    .byte 0x8f, 0xea, 0x68, 0x12, 0xc1
    .long LWP_IMM
    hlt
vm86_lwpval:
    .byte 0x8f, 0xea, 0x68, 0x12, 0xc9
    .long LWP_IMM
    hlt
vm86_code_end:
    .code32

    .bss
    .align 4
run_target:
    .long 0
run_regs:
    .long 0
run_saved_esp:
    .long 0

    .section .note.GNU-stack, "", @progbits
