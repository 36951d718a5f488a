/*
 * CPU access helpers: CPUID, control registers, MSRs, XCRs, port I/O,
 * the local APIC, and the *_safe variants that return the exception
 * vector (0 when none) instead of faulting.  The *_safe functions work at
 * CPL0 and CPL3.
 *
 * Modelled on kvm-unit-tests lib/x86/processor.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PROCESSOR_H
#define PROCESSOR_H

#include "libcflat.h"
#include "desc.h"

#define X86_CR0_PE          BIT(0)
#define X86_CR0_MP          BIT(1)
#define X86_CR0_EM          BIT(2)
#define X86_CR0_TS          BIT(3)
#define X86_CR0_PG          BIT(31)
#define X86_CR4_PSE         BIT(4)
#define X86_CR4_OSFXSR      BIT(9)
#define X86_CR4_OSXMMEXCPT  BIT(10)
#define X86_CR4_OSXSAVE     BIT(18)
#define X86_FEATURE_XSAVE   BIT(26)     /* CPUID.1:ECX */

#define MSR_EFER            0xc0000080
#define EFER_LME            BIT(8)
#define EFER_LMA            BIT(10)
#define MSR_IA32_APICBASE   0x0000001b
#define APICBASE_ENABLE     BIT(11)
#define APICBASE_X2APIC     BIT(10)

#define APIC_BASE           0xfee00000ul
#define APIC_TASKPRI        0x80
#define APIC_EOI            0xb0
#define APIC_SPIV           0xf0
#define APIC_ISR            0x100
#define APIC_IRR            0x200
#define APIC_ICR            0x300
#define APIC_ICR2           0x310
#define APIC_SPIV_ENABLE    BIT(8)
#define APIC_DEST_SELF      (1u << 18)
#define APIC_INT_ASSERT     BIT(14)
#define APIC_DM_FIXED       0
/* Local APIC timer: LVT, initial count, divide configuration */
#define APIC_LVTT           0x320
#define APIC_TMICT          0x380
#define APIC_TDCR           0x3e0
#define APIC_LVT_MASKED     BIT(16)
#define APIC_LVT_PERIODIC   BIT(17)
#define APIC_TDCR_DIV1      0xb

struct cpuid {
    u32 a, b, c, d;
};

static inline struct cpuid cpuid_indexed(u32 leaf, u32 subleaf)
{
    struct cpuid r;

    asm volatile("cpuid"
                 : "=a"(r.a), "=b"(r.b), "=c"(r.c), "=d"(r.d)
                 : "0"(leaf), "2"(subleaf));
    return r;
}

static inline struct cpuid cpuid(u32 leaf)
{
    return cpuid_indexed(leaf, 0);
}

static inline unsigned long read_cr0(void)
{
    unsigned long val;

    asm volatile("mov %%cr0, %0" : "=r"(val));
    return val;
}

static inline void write_cr0(unsigned long val)
{
    asm volatile("mov %0, %%cr0" : : "r"(val) : "memory");
}

static inline unsigned long read_cr2(void)
{
    unsigned long val;

    asm volatile("mov %%cr2, %0" : "=r"(val));
    return val;
}

static inline void write_cr3(unsigned long val)
{
    asm volatile("mov %0, %%cr3" : : "r"(val) : "memory");
}

static inline unsigned long read_cr4(void)
{
    unsigned long val;

    asm volatile("mov %%cr4, %0" : "=r"(val));
    return val;
}

static inline void write_cr4(unsigned long val)
{
    asm volatile("mov %0, %%cr4" : : "r"(val) : "memory");
}

static inline unsigned long read_cs(void)
{
    unsigned long val;

    asm volatile("mov %%cs, %0" : "=r"(val));
    return val;
}

/* RDMSR or XGETBV: EDX:EAX = register ECX, or the exception vector */
#define READ_EDX_EAX_SAFE(insn, index, val) ({                     \
    u32 lo_ = 0, hi_ = 0;                                           \
    asm volatile(ASM_TRY("1f") insn "\n\t1:"                        \
                 : "+a"(lo_), "+d"(hi_) : "c"(index) : "memory");   \
    *(val) = lo_ | ((u64)hi_ << 32);                                \
    exception_vector();                                             \
})

static inline int rdmsr_safe(u32 msr, u64 *val)
{
    return READ_EDX_EAX_SAFE("rdmsr", msr, val);
}

static inline int wrmsr_safe(u32 msr, u64 val)
{
    return asm_safe("wrmsr", "c"(msr), "a"((u32)val), "d"((u32)(val >> 32)));
}

static inline int xgetbv_safe(u32 xcr, u64 *val)
{
    return READ_EDX_EAX_SAFE("xgetbv", xcr, val);
}

static inline int xsetbv_safe(u32 xcr, u64 val)
{
    return asm_safe("xsetbv", "c"(xcr), "a"((u32)val), "d"((u32)(val >> 32)));
}

static inline int ud2_safe(void)
{
    return asm_safe("ud2");
}

/* Unchecked variants for values that must exist; a fault here aborts */
static inline u64 rdmsr(u32 msr)
{
    u32 lo, hi;

    asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
    return lo | ((u64)hi << 32);
}

static inline void wrmsr(u32 msr, u64 val)
{
    asm volatile("wrmsr"
                 : : "c"(msr), "a"((u32)val), "d"((u32)(val >> 32))
                 : "memory");
}

static inline u64 xgetbv(u32 xcr)
{
    u32 lo, hi;

    asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(xcr));
    return lo | ((u64)hi << 32);
}

static inline void outb(u16 port, u8 val)
{
    asm volatile("outb %0, %1" : : "a"(val), "Nd"(port));
}

static inline u8 inb(u16 port)
{
    u8 val;

    asm volatile("inb %1, %0" : "=a"(val) : "Nd"(port));
    return val;
}

static inline void outl(u16 port, u32 val)
{
    asm volatile("outl %0, %1" : : "a"(val), "Nd"(port));
}

static inline void sti(void)
{
    asm volatile("sti" : : : "memory");
}

static inline void cli(void)
{
    asm volatile("cli" : : : "memory");
}

static inline void pause(void)
{
    asm volatile("pause" : : : "memory");
}

static inline u32 apic_read(u32 reg)
{
    /* MMIO: every access must reach the APIC */
    return *(volatile u32 *)(APIC_BASE + reg);
}

static inline void apic_write(u32 reg, u32 val)
{
    /* MMIO: every access must reach the APIC */
    *(volatile u32 *)(APIC_BASE + reg) = val;
}

/* Bit @vec of the 256-bit APIC register @reg (APIC_ISR, APIC_IRR) */
static inline bool apic_vector_bit(u32 reg, unsigned vec)
{
    return apic_read(reg + 0x10 * (vec / 32)) & BIT(vec % 32);
}

void enable_apic(void);
bool enable_osxsave(void);

#endif
