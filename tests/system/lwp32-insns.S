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
