/*
 * rr in the guest (tests/linux/rr.sh): a single-threaded program for rr
 * record and rr replay.  Lines that start with "det " depend only on the
 * program (the guest runs it natively too and compares them); lines that
 * start with "nd " hold what differs from run to run (PID, time, TSC,
 * addresses), which a replay must still reproduce exactly.  Exits with
 * a status computed from its work (never 0), printed first as "det exit".
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

int main(void)
{
    /* work: a sieve and a hash, branches the ticks counter counts */
    static unsigned char composite[2000000];
    unsigned long primes = 0, i, j;
    uint32_t h = 2166136261u;
    for (i = 2; i < sizeof(composite); i++) {
        if (composite[i])
            continue;
        primes++;
        h = (h ^ (uint32_t)i) * 16777619u;
        for (j = i * i; j < sizeof(composite); j += i)
            composite[j] = 1;
    }
    printf("det primes below %zu: %lu, hash %08x\n", sizeof(composite), primes, h);

    /* file system calls: write, read back, stat */
    char path[] = "/tmp/rr-single.XXXXXX", buf[64] = "";
    int fd = mkstemp(path);
    if (fd < 0 || dprintf(fd, "%lu primes\n", primes) < 0 ||
        lseek(fd, 0, SEEK_SET) != 0 || read(fd, buf, sizeof(buf) - 1) <= 0) {
        perror("file");
        return 1;
    }
    struct stat st;
    fstat(fd, &st);
    close(fd);
    unlink(path);
    buf[strcspn(buf, "\n")] = 0;
    printf("det file held \"%s\", %lld bytes\n", buf, (long long)st.st_size);

    /* anonymous memory */
    char *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    for (i = 0; i < (1 << 20); i += 4096)
        m[i] = (char)(i >> 12);
    unsigned long s = 0;
    for (i = 0; i < (1 << 20); i += 4096)
        s += (unsigned char)m[i];
    printf("det mmap sum %lu\n", s);

    /* what differs from run to run: rr records it, replay gives it back */
    struct timeval tv;
    struct timespec ts;
    gettimeofday(&tv, NULL);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    unsigned long long tsc = __rdtsc();
    int urnd = 0;
    fd = open("/dev/urandom", O_RDONLY);
    if (fd < 0 || read(fd, &urnd, sizeof(urnd)) != sizeof(urnd)) {
        perror("urandom");
        return 1;
    }
    close(fd);
    printf("nd pid %d time %ld.%06ld mono %ld.%09ld tsc %llu urandom %08x mmap %p\n",
           (int)getpid(), (long)tv.tv_sec, (long)tv.tv_usec, (long)ts.tv_sec,
           ts.tv_nsec, tsc, urnd, (void *)m);

    int status = 1 + (int)(h % 100);
    printf("det exit %d\n", status);
    return status;
}
