/*
 * sha256-chain: a deterministic, CPU-bound guest program for
 * bench/qemu-bench.sh
 *
 *   sha256-chain [N]
 *
 * Computes h = SHA-256("qemu-lwp"), then N - 1 times h = SHA-256(h), and
 * prints "sha256-chain N <hex of h>".  With N = 1 the line can be checked
 * against `printf qemu-lwp | sha256sum`.  All integer arithmetic (rotates,
 * adds, table loads), a short inner loop per round and no system calls:
 * the opposite of gzip and xz, whose time goes into branchy byte handling.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const uint32_t k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static const uint32_t h_init[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

static uint32_t ror(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static uint32_t load_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | p[3];
}

static void store_be32(uint8_t *p, uint32_t v)
{
    p[0] = v >> 24;
    p[1] = v >> 16;
    p[2] = v >> 8;
    p[3] = v;
}

/* One 64-byte block into state h */
static void compress(uint32_t h[8], const uint8_t block[64])
{
    uint32_t w[64], s[8];
    int i;

    for (i = 0; i < 16; i++) {
        w[i] = load_be32(block + 4 * i);
    }
    for (i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^
                      (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^
                      (w[i - 2] >> 10);

        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(s, h, sizeof(s));
    for (i = 0; i < 64; i++) {
        uint32_t e = s[4], a = s[0];
        uint32_t t1 = s[7] + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
                      ((e & s[5]) ^ (~e & s[6])) + k[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +
                      ((a & s[1]) ^ (a & s[2]) ^ (s[1] & s[2]));

        s[7] = s[6];
        s[6] = s[5];
        s[5] = e;
        s[4] = s[3] + t1;
        s[3] = s[2];
        s[2] = s[1];
        s[1] = a;
        s[0] = t1 + t2;
    }
    for (i = 0; i < 8; i++) {
        h[i] += s[i];
    }
}

/* SHA-256 of a message shorter than 56 bytes (one block) */
static void sha256_short(uint8_t out[32], const uint8_t *msg, size_t len)
{
    uint8_t block[64] = { 0 };
    uint32_t h[8];
    int i;

    memcpy(h, h_init, sizeof(h));
    memcpy(block, msg, len);
    block[len] = 0x80;
    store_be32(block + 60, (uint32_t)len * 8);
    compress(h, block);
    for (i = 0; i < 8; i++) {
        store_be32(out + 4 * i, h[i]);
    }
}

int main(int argc, char **argv)
{
    uint64_t n = 2000000, i;
    uint8_t h[32];

    if (argc > 2 || (argc == 2 && (sscanf(argv[1], "%" SCNu64, &n) != 1 ||
                                   n == 0))) {
        fprintf(stderr, "usage: sha256-chain [N >= 1]\n");
        return 2;
    }
    sha256_short(h, (const uint8_t *)"qemu-lwp", 8);
    for (i = 1; i < n; i++) {
        sha256_short(h, h, sizeof(h));
    }
    printf("sha256-chain %" PRIu64 " ", n);
    for (i = 0; i < sizeof(h); i++) {
        printf("%02x", h[i]);
    }
    printf("\n");
    return 0;
}
