/*
 * lwp-hello: a Linux program that profiles itself with AMD LWP
 * (docs/quickstart-linux.md).  It counts Instructions Retired in a loop,
 * takes a record every 10,000 instructions into a ring buffer, drains the
 * ring in its SIGIO handler (the threshold signal) and once more at the
 * end, and prints what the records say.
 *
 *   gcc -O2 -static -mlwp -o lwp-hello docs/examples/lwp-hello.c
 *
 * Section numbers are those of the AMD Lightweight Profiling
 * Specification, publication 43724 rev 3.08; the ABI is docs/linux.md,
 * "The LWP ABI".  Self-contained: needs only GCC and glibc.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <x86intrin.h>

#define LWP_IRE   (1u << 2)   /* Flags bit and EventId 2: Instructions Retired */
#define LWP_INT   (1u << 31)  /* Flags: threshold interrupt (SIGIO) */
#define RECORDS   64          /* ring size; the minimum is 32 records */
#define THRESHOLD 16          /* SIGIO once 16 records wait in the ring */
#define INTERVAL  9999        /* a record every INTERVAL + 1 instructions */
#define LOOPS     1000000     /* work(): 2 instructions per iteration */

/* The LWPCB (spec 6, Figure 6-1), as far as EventId 6 */
struct lwpcb {
    uint32_t flags;           /* events asked for; LLWPCB writes back the enabled ones */
    uint32_t buffer_size;     /* ring size in bytes (bits 27:0) */
    uint64_t buffer_base;     /* ring address */
    uint32_t head;            /* BufferHeadOffset: LWP writes it */
    uint32_t reserved1;
    uint64_t missed;          /* MissedEvents: records lost to a full ring */
    uint32_t threshold;       /* bytes in the ring that raise the interrupt */
    uint32_t filters;
    uint64_t base_ip, limit_ip, reserved2;
    uint32_t tail;            /* BufferTailOffset: the program writes it */
    uint32_t reserved3;
    uint64_t software[2];
    uint8_t reserved4[0x80 - 0x58];
    struct {
        uint32_t interval;    /* EventIntervalN */
        uint32_t counter;     /* EventCounterN */
    } event[6];               /* event[n - 1] is EventId n */
};

/* An event record (spec 2, Figure 2-1) */
struct lwp_record {
    uint8_t event_id;
    uint8_t core_id;          /* under Linux: the CPU it was stored on */
    uint16_t flags;
    uint32_t data1;
    uint64_t ip;              /* the instruction that took the counter below 0 */
    uint64_t data2;
    uint64_t reserved;
};

static struct lwpcb cb __attribute__((aligned(64)));
static struct lwp_record ring[RECORDS] __attribute__((aligned(64)));

/* What the records said: distinct (EventId, CoreId, IP), with counts */
static struct {
    uint8_t event_id, core_id;
    uint64_t ip;
    unsigned long n;
} seen[16];
static unsigned long records, other;
static volatile sig_atomic_t sigio;

/* Take every record from BufferTailOffset to BufferHeadOffset */
static void drain(void)
{
    uint32_t head = __atomic_load_n(&cb.head, __ATOMIC_ACQUIRE);
    uint32_t tail = cb.tail;

    while (tail != head) {
        const struct lwp_record *r = &ring[tail / sizeof(*r)];
        unsigned i;

        for (i = 0; i < 16; i++) {
            if (seen[i].n == 0 || (seen[i].event_id == r->event_id &&
                                   seen[i].core_id == r->core_id &&
                                   seen[i].ip == r->ip)) {
                seen[i].event_id = r->event_id;
                seen[i].core_id = r->core_id;
                seen[i].ip = r->ip;
                seen[i].n++;
                break;
            }
        }
        other += i == 16;
        records++;
        tail = (tail + sizeof(*r)) % sizeof(ring);
    }
    __atomic_store_n(&cb.tail, tail, __ATOMIC_RELEASE);
}

/* The threshold signal: SIGIO, si_code POLL_IN (docs/linux.md) */
static void on_sigio(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code == POLL_IN) {
        sigio++;
        drain();
    }
}

/* The profiled code: LOOPS iterations of DEC and JNZ */
__attribute__((noinline)) static void work(unsigned long n)
{
    asm volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
}

int main(void)
{
    unsigned int eax, ebx, ecx, edx, flags, i;
    struct sigaction sa;

    /* CPUID 8000_001C EAX: the features LLWPCB can enable (spec 3.3) */
    if (__get_cpuid_max(0x80000000, NULL) < 0x8000001c) {
        printf("lwp-hello: no CPUID leaf 8000_001C: no LWP\n");
        return 1;
    }
    __cpuid(0x8000001c, eax, ebx, ecx, edx);
    printf("lwp-hello: CPUID 8000_001C EAX 0x%08x\n", eax);
    if ((eax & (1 | LWP_IRE | LWP_INT)) != (1 | LWP_IRE | LWP_INT)) {
        printf("lwp-hello: LWP with IRE and INT is not available\n");
        return 1;
    }

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigio;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGIO, &sa, NULL);

    cb.flags = LWP_IRE | LWP_INT;
    cb.buffer_size = sizeof(ring);
    cb.buffer_base = (uintptr_t)ring;
    cb.threshold = THRESHOLD * sizeof(struct lwp_record);
    cb.event[2 - 1].interval = INTERVAL;
    cb.event[2 - 1].counter = INTERVAL;   /* first record after INTERVAL + 1 */

    /*
     * GCC's __llwpcb() is not a memory clobber: without the barrier after
     * it, GCC folds the read of cb.flags below to the value stored above
     * (docs/examples/llwpcb-flags.c).  The barrier before it is a
     * precaution that keeps the stores to the LWPCB ahead of LLWPCB.
     */
    asm volatile("" : : : "memory");
    __llwpcb(&cb);                    /* LWP on */
    asm volatile("" : : : "memory");
    flags = cb.flags;                 /* what LLWPCB enabled (spec 5.1) */
    work(LOOPS);
    __llwpcb(NULL);                   /* LWP off: flushes BufferHeadOffset */
    asm volatile("" : : : "memory");
    drain();                          /* what the handler has not taken */

    printf("lwp-hello: LWPCB Flags after LLWPCB 0x%08x\n", flags);
    printf("lwp-hello: %lu records, MissedEvents %llu, %d SIGIO\n",
           records, (unsigned long long)cb.missed, (int)sigio);
    for (i = 0; i < 16 && seen[i].n; i++) {
        printf("lwp-hello: %lu records of EventId %u on CPU %u at IP 0x%llx\n",
               seen[i].n, seen[i].event_id, seen[i].core_id,
               (unsigned long long)seen[i].ip);
    }
    if (other) {
        printf("lwp-hello: %lu more records not listed\n", other);
    }
    printf("lwp-hello: work() is at %p\n", (void *)work);
    return 0;
}
