/*
 * Runtime of the test kernel: COM1 output, printf, the report API, the
 * Multiboot command line, the IDT/TSS, exception dispatch and exit through
 * isa-debug-exit.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libcflat.h"
#include "desc.h"
#include "processor.h"

#define COM1            0x3f8
#define DEBUG_EXIT_PORT 0xf4
#define MB_BOOT_MAGIC   0x2badb002
#define MB_INFO_CMDLINE BIT(2)

/* ---- string helpers (gcc may emit calls to memset/memcpy) ---- */

void *memset(void *s, int c, size_t n)
{
    u8 *p = s;

    while (n--) {
        *p++ = c;
    }
    return s;
}

void *memcpy(void *dst, const void *src, size_t n)
{
    u8 *d = dst;
    const u8 *s = src;

    while (n--) {
        *d++ = *s++;
    }
    return dst;
}

int strcmp(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return (u8)*a - (u8)*b;
}

/* ---- serial port and printf ---- */

static void serial_putc(char c)
{
    while (!(inb(COM1 + 5) & 0x20)) {   /* LSR: THR empty */
        pause();
    }
    outb(COM1, c);
}

static void serial_init(void)
{
    outb(COM1 + 1, 0x00);               /* no interrupts */
    outb(COM1 + 3, 0x80);               /* DLAB */
    outb(COM1 + 0, 0x01);               /* 115200 baud */
    outb(COM1 + 1, 0x00);
    outb(COM1 + 3, 0x03);               /* 8N1 */
    outb(COM1 + 2, 0xc7);               /* FIFO on, cleared */
}

void puts(const char *s)
{
    while (*s) {
        serial_putc(*s++);
    }
}

struct outbuf {
    char *p, *end;
    int len;
};

static void out_char(struct outbuf *o, char c)
{
    if (o->p < o->end) {
        *o->p++ = c;
    }
    o->len++;
}

/*
 * *v /= base (at most 16); returns the remainder.  Only 32-bit divisions,
 * so that the 32-bit kernel needs no libgcc.
 */
static unsigned div_u64_rem(u64 *v, unsigned base)
{
    u32 hi = *v >> 32, lo = *v, rem, mid, low;

    rem = hi % base;
    hi /= base;
    mid = (rem << 16 | lo >> 16) / base;
    rem = (rem << 16 | lo >> 16) % base;
    low = (rem << 16 | (lo & 0xffff)) / base;
    rem = (rem << 16 | (lo & 0xffff)) % base;
    *v = (u64)hi << 32 | mid << 16 | low;
    return rem;
}

static void out_num(struct outbuf *o, u64 v, unsigned base, bool neg,
                    int width, char pad)
{
    char tmp[24];
    int n = 0;

    do {
        tmp[n++] = "0123456789abcdef"[div_u64_rem(&v, base)];
    } while (v);
    if (neg) {
        if (pad == '0') {
            out_char(o, '-');
        } else {
            tmp[n++] = '-';
        }
        width--;
    }
    for (; width > n; width--) {
        out_char(o, pad);
    }
    while (n) {
        out_char(o, tmp[--n]);
    }
}

/* Argument of a %d (@sign) or %u/%x conversion with @longs 'l's */
#define NUM_ARG(ap, longs, sign)                                        \
    ((longs) > 1 ? (u64)va_arg(ap, sign long long) :                    \
     (longs) ? (u64)va_arg(ap, sign long) : (u64)va_arg(ap, sign int))

/* %d %i %u %x %p %s %c %%, 'l'/'ll' sizes, width with optional 0 padding */
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
    struct outbuf o = { buf, buf + (size ? size - 1 : 0), 0 };

    for (; *fmt; fmt++) {
        int width = 0, longs = 0;
        char pad = ' ';
        const char *s;
        u64 v;

        if (*fmt != '%') {
            out_char(&o, *fmt);
            continue;
        }
        if (*++fmt == '0') {
            pad = '0';
            fmt++;
        }
        while (*fmt >= '0' && *fmt <= '9') {
            width = width * 10 + *fmt++ - '0';
        }
        while (*fmt == 'l') {
            longs++;
            fmt++;
        }
        switch (*fmt) {
        case 'd':
        case 'i':
            v = NUM_ARG(ap, longs, signed);
            out_num(&o, (long long)v < 0 ? -v : v, 10, (long long)v < 0,
                    width, pad);
            break;
        case 'u':
        case 'x':
            v = NUM_ARG(ap, longs, unsigned);
            out_num(&o, v, *fmt == 'u' ? 10 : 16, false, width, pad);
            break;
        case 'p':
            out_char(&o, '0');
            out_char(&o, 'x');
            out_num(&o, (uintptr_t)va_arg(ap, void *), 16, false, width, pad);
            break;
        case 's':
            for (s = va_arg(ap, const char *); *s; s++, width--) {
                out_char(&o, *s);
            }
            for (; width > 0; width--) {
                out_char(&o, ' ');
            }
            break;
        case 'c':
            out_char(&o, (char)va_arg(ap, int));
            break;
        case '%':
            out_char(&o, '%');
            break;
        default:
            out_char(&o, '%');
            out_char(&o, *fmt);
            break;
        }
        if (!*fmt) {
            break;
        }
    }
    if (size) {
        *o.p = 0;
    }
    return o.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n;
}

static void vprintf(const char *fmt, va_list ap)
{
    char buf[512];

    vsnprintf(buf, sizeof(buf), fmt, ap);
    puts(buf);
}

void printf(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

/* ---- report API ---- */

static const char *prefixes[8];
static int nr_prefixes, tests, failures, skips;

void report_prefix_push(const char *prefix)
{
    if (nr_prefixes < (int)ARRAY_SIZE(prefixes)) {
        prefixes[nr_prefixes] = prefix;
    }
    nr_prefixes++;
}

void report_prefix_pop(void)
{
    nr_prefixes--;
}

static void print_line(const char *kind, const char *fmt, va_list ap)
{
    int i;

    printf("%s: ", kind);
    for (i = 0; i < nr_prefixes && i < (int)ARRAY_SIZE(prefixes); i++) {
        printf("%s: ", prefixes[i]);
    }
    vprintf(fmt, ap);
    puts("\n");
}

void report(bool pass, const char *fmt, ...)
{
    va_list ap;

    tests++;
    failures += !pass;
    va_start(ap, fmt);
    print_line(pass ? "PASS" : "FAIL", fmt, ap);
    va_end(ap);
}

void report_skip(const char *fmt, ...)
{
    va_list ap;

    skips++;
    va_start(ap, fmt);
    print_line("SKIP", fmt, ap);
    va_end(ap);
}

int report_summary(void)
{
    printf("SUMMARY: %d tests, %d unexpected failures", tests, failures);
    if (skips) {
        printf(", %d skipped", skips);
    }
    puts("\n");
    return failures ? 1 : 0;
}

/* ---- Multiboot command line ---- */

static const char *cmdline = "";

void setup_cmdline(u32 magic, u32 mbi)
{
    const u32 *info = (const u32 *)(uintptr_t)mbi;

    serial_init();
    if (magic != MB_BOOT_MAGIC) {
        printf("ABORT: not booted by a Multiboot loader (EAX=%x)\n", magic);
        exit(1);
    }
    if (info[0] & MB_INFO_CMDLINE) {
        cmdline = (const char *)(uintptr_t)info[4];
    }
    printf("\ncmdline: %s\n", cmdline);
}

/* Find the word "key=value" and copy value; QEMU puts the kernel name first */
bool cmdline_get(const char *key, char *val, size_t size)
{
    const char *p = cmdline;

    while (*p) {
        const char *k = key;
        size_t n = 0;

        while (*p == ' ') {
            p++;
        }
        while (*k && *p == *k) {
            p++;
            k++;
        }
        if (!*k && *p == '=') {
            for (p++; *p && *p != ' ' && n + 1 < size; p++) {
                val[n++] = *p;
            }
            val[n] = 0;
            return true;
        }
        while (*p && *p != ' ') {
            p++;
        }
    }
    return false;
}

/* Index in @names of the value of "key=value", or -1 */
int cmdline_choice(const char *key, const char *const *names, int n)
{
    char val[32];
    int i;

    if (!cmdline_get(key, val, sizeof(val))) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (!strcmp(val, names[i])) {
            return i;
        }
    }
    return -1;
}

/* ---- exit ---- */

/* isa-debug-exit: QEMU exits with status (code << 1) | 1 */
void exit(int code)
{
    outl(DEBUG_EXIT_PORT, code);
    for (;;) {
        asm volatile("cli; hlt");
    }
}

void abort(void)
{
    exit(1);
}

/* ---- IDT, TSS, exceptions ---- */

/*
 * The 64-bit and the 32-bit IDT gate (the TSS is in desc.h).  TSS_SLOTS is
 * the number of GDT entries the TSS descriptor takes.
 */
#ifdef __x86_64__
struct idt_entry {
    u16 offset0;
    u16 selector;
    u8 ist;
    u8 type_attr;
    u16 offset1;
    u32 offset2;
    u32 reserved;
} __attribute__((packed));

#define TSS_SLOTS       2
#define TSS_SET_STACK(t, top)   ((t)->rsp[0] = (top))
#define IDT_SET_HIGH(e, addr)   ((e)->offset2 = (addr) >> 32)
#else
struct idt_entry {
    u16 offset0;
    u16 selector;
    u8 ist;                             /* reserved, 0 */
    u8 type_attr;
    u16 offset1;
} __attribute__((packed));

#define TSS_SLOTS       1
#define TSS_SET_STACK(t, top)   ((t)->esp0 = (top), (t)->ss0 = KERNEL_DS)
#define IDT_SET_HIGH(e, addr)   ((void)(addr))
#endif

/*
 * Set by the exception handler, read after the guarded instruction; the
 * frame that ended the CPL3 or virtual-8086 code
 */
volatile unsigned exception_vec;
volatile unsigned long exception_error_code;    /* volatile: as above */
struct ex_regs user_ex_regs;
static struct idt_entry idt[256] __attribute__((aligned(16)));
static struct tss tss __attribute__((aligned(16)));
static handler_fn handlers[256];

static void set_idt_entry(int vec, unsigned long addr, int dpl)
{
    struct idt_entry *e = &idt[vec];

    memset(e, 0, sizeof(*e));
    e->offset0 = addr;
    e->selector = KERNEL_CS;
    e->type_attr = 0x8e | (dpl << 5);   /* present, interrupt gate */
    e->offset1 = addr >> 16;
    IDT_SET_HIGH(e, addr);
}

static void user_ret_handler(struct ex_regs *regs)
{
    if ((regs->cs & 3) != 3) {
        printf("ABORT: int $0x%x at CPL0, rip %lx\n",
               USER_RET_VECTOR, regs->rip);
        abort();
    }
    user_return(0);
}

/* IDT with all 256 stubs, TSS (stack for CPL3 exceptions), 8259s masked */
void setup_desc(void)
{
    u64 base = (uintptr_t)&tss, limit = sizeof(tss) - 1;
    struct {
        u16 limit;
        unsigned long base;
    } __attribute__((packed)) idtr = { sizeof(idt) - 1, (uintptr_t)idt };
    int i;

    for (i = 0; i < 256; i++) {
        set_idt_entry(i, isr_table[i], i == USER_RET_VECTOR ? 3 : 0);
    }
    asm volatile("lidt %0" : : "m"(idtr));
    handle_irq(USER_RET_VECTOR, user_ret_handler);

    TSS_SET_STACK(&tss, (uintptr_t)entry_stack_top);
    tss.iomap_base = sizeof(tss);       /* no I/O bitmap */
    gdt[TSS_SEL / 8] = (limit & 0xffff) | (base & 0xffffff) << 16 |
                       0x89ull << 40 |          /* present, available TSS */
                       ((limit >> 16) & 0xf) << 48 |
                       ((base >> 24) & 0xff) << 56;
    if (TSS_SLOTS == 2) {
        gdt[TSS_SEL / 8 + 1] = base >> 32;
    }
    asm volatile("ltr %w0" : : "r"(TSS_SEL));

    /* Mask the 8259s: the BIOS left the timer IRQ0 at vector 8 (#DF) */
    outb(0x21, 0xff);
    outb(0xa1, 0xff);
}

void set_raw_handler(unsigned vector, unsigned long addr)
{
    set_idt_entry(vector, addr ? addr : isr_table[vector], 0);
}

void allow_user_int(unsigned vector)
{
    set_idt_entry(vector, isr_table[vector], 3);
}

void handle_irq(unsigned vector, handler_fn fn)
{
    handlers[vector] = fn;
}

void do_handle_exception(struct ex_regs *regs)
{
    const struct ex_table_entry *e;
    bool vm86 = regs->rflags & X86_EFLAGS_VM;

    if (handlers[regs->vector]) {
        handlers[regs->vector](regs);
        return;
    }
    if (regs->vector == SPURIOUS_VECTOR) {
        return;
    }
    if (regs->vector < 32 && !vm86) {
        for (e = __ex_table_start; e < __ex_table_end; e++) {
            if (e->rip == regs->rip) {
                exception_vec = regs->vector;
                exception_error_code = regs->error_code;
                regs->rip = e->fixup;
                return;
            }
        }
    }
    if ((regs->cs & 3) == 3 || vm86) {
        printf("run_in_user: %s code ended by vector %lu at %lx:%lx\n",
               vm86 ? "virtual-8086" : "CPL3", regs->vector, regs->cs,
               regs->rip);
        user_ex_regs = *regs;
        user_return(USER_EXCEPTION | regs->vector);
    }
    printf("ABORT: unexpected vector %lu at rip %016lx, error code %lx, "
           "cr2 %lx\n", regs->vector, regs->rip, regs->error_code,
           read_cr2());
    abort();
}

/* ---- CPU set-up ---- */

/* Set CR4.OSXSAVE if CPUID says XSAVE; false if it does not */
bool enable_osxsave(void)
{
    if (!(cpuid(1).c & X86_FEATURE_XSAVE)) {
        return false;
    }
    /* Says where we were if the MOV to CR4 never completes */
    printf("info: CPUID.1:ECX.XSAVE = 1, setting CR4.OSXSAVE\n");
    write_cr4(read_cr4() | X86_CR4_OSXSAVE);
    return true;
}

/* ---- local APIC ---- */

void enable_apic(void)
{
    u64 base = rdmsr(MSR_IA32_APICBASE);

    wrmsr(MSR_IA32_APICBASE, (base & ~APICBASE_X2APIC) | APICBASE_ENABLE);
    apic_write(APIC_SPIV, APIC_SPIV_ENABLE | SPURIOUS_VECTOR);
    apic_write(APIC_TASKPRI, 0);
}
