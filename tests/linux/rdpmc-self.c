/*
 * Self-monitoring through RDPMC, as perf_event_open(2) describes it: the
 * program counts its own user instructions with a perf event it mmaps,
 * and reads the counter with RDPMC at CPL 3 (Linux sets CR4.PCE for it).
 * It prints the count across N iterations of DEC/JNZ for two N, which
 * differ by exactly 2 * (N2 - N1) (tests/linux/run.sh checks it):
 *
 *   rdpmc cap_user_rdpmc=1 index=I width=W n1=N1 d1=D1 n2=N2 d2=D2
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* volatile: the kernel updates the page while the program reads it */
static volatile struct perf_event_mmap_page *pc;

static uint64_t rdpmc(uint32_t counter)
{
    uint32_t lo, hi;

    asm volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(counter));
    return (uint64_t)hi << 32 | lo;
}

/* The event's count, read as perf_event_mmap_page's comment says */
static uint64_t self_count(void)
{
    uint32_t seq, idx;
    uint64_t count;

    do {
        seq = pc->lock;
        asm volatile("" : : : "memory");
        idx = pc->index;
        count = pc->offset;
        if (pc->cap_user_rdpmc && idx) {
            int64_t pmc = rdpmc(idx - 1);

            pmc <<= 64 - pc->pmc_width;
            pmc >>= 64 - pc->pmc_width;
            count += pmc;
        }
        asm volatile("" : : : "memory");
    } while (pc->lock != seq);
    return count;
}

static uint64_t across(unsigned long n)
{
    uint64_t c0 = self_count();

    asm volatile("1: dec %0\n\t"
                 "jnz 1b"
                 : "+r"(n));
    return self_count() - c0;
}

int main(void)
{
    struct perf_event_attr attr;
    uint64_t d1, d2;
    int fd;

    memset(&attr, 0, sizeof(attr));
    attr.type = PERF_TYPE_HARDWARE;
    attr.size = sizeof(attr);
    attr.config = PERF_COUNT_HW_INSTRUCTIONS;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
    if (fd < 0) {
        perror("perf_event_open");
        return 1;
    }
    pc = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
    if (pc == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    d1 = across(100000);
    d2 = across(300000);
    printf("rdpmc cap_user_rdpmc=%u index=%u width=%u n1=100000 d1=%llu "
           "n2=300000 d2=%llu\n", (unsigned)pc->cap_user_rdpmc,
           (unsigned)pc->index, (unsigned)pc->pmc_width,
           (unsigned long long)d1, (unsigned long long)d2);
    return 0;
}
