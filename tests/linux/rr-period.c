/*
 * rr in the guest (tests/linux/rr.sh): what rr's start-up asks of the
 * kernel's perf events, reduced to a few system calls on rr's counter,
 * raw event 0x5101c4 (BR_INST_RETIRED.CONDITIONAL, user mode only):
 *   - "ioc1" / "ioc32": PERF_EVENT_IOC_PERIOD to 1, then to 32, on a
 *     sampling counter opened with period 0xffffffff: the first thing
 *     rr does (check_for_ioc_period_bug in src/PerfCounters.cc).  Linux
 *     limits a Nehalem counter's period to at least 32 (nhm_limit_period,
 *     an erratum workaround) and x86_pmu_check_period refuses a smaller
 *     one with EINVAL; rr before 5.9.0 stops there (rr issue #3848);
 *   - "open31" / "open32": perf_event_open with sample_period 31 and 32;
 *   - "delta": the counter across DEC/JNZ loops of 1000 and 3000
 *     iterations, read the same way: 2000 more conditional branches
 *     (after a first loop that has the dynamic linker resolve read(),
 *     69 more conditional branches when this was written).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int open_counter(uint64_t period)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.type = PERF_TYPE_RAW;
    a.size = sizeof(a);
    a.config = 0x5101c4;
    a.exclude_kernel = 1;
    a.exclude_guest = 1;
    a.sample_period = period;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static const char *res(int r)
{
    return r < 0 ? strerror(errno) : "ok";
}

static int64_t loop(int fd, unsigned long n)
{
    int64_t v = -1;
    ioctl(fd, PERF_EVENT_IOC_RESET, 0);
    asm volatile("1: dec %0\n\tjnz 1b" : "+r"(n));
    if (read(fd, &v, sizeof(v)) != sizeof(v))
        return -1;
    return v;
}

int main(void)
{
    uint64_t p;
    int fd = open_counter(0xffffffff);
    if (fd < 0) {
        printf("open %s\n", res(fd));
        return 1;
    }
    p = 1;
    printf("ioc1 %s\n", res(ioctl(fd, PERF_EVENT_IOC_PERIOD, &p)));
    p = 32;
    printf("ioc32 %s\n", res(ioctl(fd, PERF_EVENT_IOC_PERIOD, &p)));
    close(fd);
    fd = open_counter(31);
    printf("open31 %s\n", res(fd));
    if (fd >= 0)
        close(fd);
    fd = open_counter(32);
    printf("open32 %s\n", res(fd));
    if (fd >= 0)
        close(fd);
    fd = open_counter(0);
    if (fd < 0) {
        printf("open0 %s\n", res(fd));
        return 1;
    }
    /* the first call resolves read() lazily, user code that branches */
    loop(fd, 1000);
    int64_t a = loop(fd, 1000), b = loop(fd, 3000);
    printf("delta %lld (%lld, %lld)\n", (long long)(b - a), (long long)a, (long long)b);
    return 0;
}
