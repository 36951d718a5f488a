/*
 * Minimal C library of the test kernel: types, serial printf and the
 * kvm-unit-tests style report API.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef LIBCFLAT_H
#define LIBCFLAT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#define BIT(n)          (1u << (n))
#define BIT_ULL(n)      ((u64)1 << (n))
#define ARRAY_SIZE(a)   (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b)       ((a) < (b) ? (a) : (b))

#define __printf(a, b)  __attribute__((format(printf, a, b)))

void *memset(void *s, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
int strcmp(const char *a, const char *b);

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...) __printf(3, 4);
void printf(const char *fmt, ...) __printf(1, 2);
void puts(const char *s);

void report(bool pass, const char *fmt, ...) __printf(2, 3);
void report_skip(const char *fmt, ...) __printf(1, 2);
void report_prefix_push(const char *prefix);
void report_prefix_pop(void);
int report_summary(void);

void setup_cmdline(u32 magic, u32 mbi);
bool cmdline_get(const char *key, char *val, size_t size);
int cmdline_choice(const char *key, const char *const *names, int n);

void exit(int code) __attribute__((noreturn));
void abort(void) __attribute__((noreturn));

#endif
