/*
 * The program whose LBR branch stacks tests/linux/run.sh compares with a
 * TCG plugin's branch trace (tests/linux/uinsn-plugin.c, brs=): N rounds
 * of a mix of near branch kinds whose directions depend on data, with no
 * system call in between: taken and not-taken Jcc, direct and indirect
 * CALL, RET, JMP through a table.  With two more arguments, K and S,
 * it then chases pointers through a ring of the 64-byte lines of K KiB,
 * S steps, one load each, for the load-latency samples (perf mem) that
 * run.sh compares with the plugin's loads through the reference cache
 * model (tests/linux/ll-oracle.py).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdlib.h>

typedef unsigned long (*step_fn)(unsigned long);

static __attribute__((noinline)) unsigned long f0(unsigned long x)
{
    return x * 3 + 1;
}

static __attribute__((noinline)) unsigned long f1(unsigned long x)
{
    return (x >> 1) ^ 0x5bd1e995;
}

static __attribute__((noinline)) unsigned long f2(unsigned long x)
{
    return x & 1 ? x + 7 : x - 3;
}

static __attribute__((noinline)) unsigned long f3(unsigned long x)
{
    return x ^ (x << 5);
}

static step_fn volatile table[4] = { f0, f1, f2, f3 };

/*
 * A ring through the lines of @kib KiB (a power of 2): line i points to
 * line i + 97 modulo their number, which visits every line once a round;
 * @steps loads from line 0 on
 */
static unsigned long chase(unsigned long kib, unsigned long steps)
{
    unsigned long lines = kib * 1024 / 64, i;
    void **ring = malloc(lines * 64), **p;

    if (!ring || !lines) {
        return 0;
    }
    for (i = 0; i < lines; i++) {
        ring[i * 8] = &ring[(i + 97) % lines * 8];
    }
    for (p = ring, i = 0; i < steps; i++) {
        p = *(void **volatile *)p;
    }
    return p == NULL;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1;
    unsigned long x = 12345, i, acc = 0;

    if (argc > 3) {
        acc = chase(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10));
    }

    for (i = 0; i < n; i++) {
        /* a linear congruential step: directions the data decide */
        x = x * 6364136223846793005ul + 1442695040888963407ul;
        acc += table[(x >> 33) & 3](x);
        switch ((x >> 40) & 7) {
        case 0:
            acc ^= f1(acc);
            break;
        case 1:
            acc += 3;
            break;
        case 2:
            acc = f3(acc);
            break;
        case 5:
            acc -= x;
            break;
        case 6:
            acc = f0(acc) + f2(x);
            break;
        default:
            acc |= 1;
            break;
        }
        if (acc & 0x100) {
            acc >>= 1;
        }
    }
    return acc == 42;
}
