/*
 * pmu-msr: read and write model-specific registers of CPU 0 through
 * Linux's /dev/cpu/0/msr (the msr driver), so that bench/pmu-bench-init
 * can turn a facility on without perf: LBR recording (lbron) or the
 * load-latency counter (llon), the costs that issue 34's targets compare
 * with the PMU with no counter.
 *
 *   pmu-msr ADDR=VALUE...   write each MSR in turn (hexadecimal)
 *   pmu-msr ADDR            print the MSR's value (hexadecimal)
 *
 * Exit status 1, with a message, when the driver refuses an access (a
 * #GP of the MSR gives EIO).
 *
 * Copyright (c) 2026 qemu-lwp contributors
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int fd = open("/dev/cpu/0/msr", O_RDWR);

    if (fd < 0) {
        fprintf(stderr, "pmu-msr: /dev/cpu/0/msr: %s\n", strerror(errno));
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        char *eq, *end;
        uint64_t addr = strtoull(argv[i], &eq, 16), val;

        if (eq == argv[i] || (*eq && *eq != '=')) {
            fprintf(stderr, "pmu-msr: bad argument '%s'\n", argv[i]);
            return 1;
        }
        if (!*eq) {
            if (pread(fd, &val, 8, (off_t)addr) != 8) {
                fprintf(stderr, "pmu-msr: rdmsr %" PRIx64 ": %s\n", addr,
                        strerror(errno));
                return 1;
            }
            printf("%" PRIx64 "\n", val);
            continue;
        }
        val = strtoull(eq + 1, &end, 16);
        if (end == eq + 1 || *end) {
            fprintf(stderr, "pmu-msr: bad value in '%s'\n", argv[i]);
            return 1;
        }
        if (pwrite(fd, &val, 8, (off_t)addr) != 8) {
            fprintf(stderr, "pmu-msr: wrmsr %" PRIx64 " %" PRIx64 ": %s\n",
                    addr, val, strerror(errno));
            return 1;
        }
    }
    return 0;
}
