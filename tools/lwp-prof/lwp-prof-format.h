/*
 * lwp-prof: the record file (docs/lwp-prof.md, "The record file")
 *
 * Shared by the preload library (C, runs inside the profiled program) and
 * the lwp-prof tool (C++).  Every number is little-endian.
 *
 *   file   = header chunk*
 *   header = magic[8] "LWPPROF\0", u32 version (3), u32 header size (16)
 *   chunk  = u32 type, u32 size, payload[size], zero padding to 8 bytes
 *
 * lwp-prof record writes the header and, after the program has ended,
 * the END chunk; the preload library appends everything in between with
 * O_APPEND, one write per chunk, from every thread.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef LWP_PROF_FORMAT_H
#define LWP_PROF_FORMAT_H

#include <stdint.h>

#define LWPPROF_MAGIC           "LWPPROF"   /* 8 bytes with its NUL */
#define LWPPROF_VERSION         3   /* 2 added PROCESS, OBJECTS; 3 exec'd
                                       programs (PROCESS_EXEC_FOLLOWED, MAPS'
                                       pid line, PROCESS's why), STACK;
                                       1, 2 read */
#define LWPPROF_HEADER_SIZE     16
#define LWPPROF_CHUNK_HEADER    8
#define LWPPROF_CHUNK_MAX       (256u << 20)

enum {
    /* text, "key=value" lines: the settings as LLWPCB wrote them back */
    LWPPROF_INFO = 1,
    /* text: "pid N" (version 3), then the process's /proc/self/maps (at
     * start, after each dlopen, at exit) */
    LWPPROF_MAPS = 2,
    /* u32 tid, u32 count, count records of 32 bytes (spec Figure 2-1) */
    LWPPROF_RECORDS = 3,
    /* struct lwpprof_thread */
    LWPPROF_THREAD = 4,
    /* text, one line: something lwp-prof detected ("sigio: ...") */
    LWPPROF_NOTE = 5,
    /* struct lwpprof_exit: the process ran exit() (the preload library's
     * destructor) or _exit() */
    LWPPROF_EXIT = 6,
    /* struct lwpprof_end: written by lwp-prof record, always last */
    LWPPROF_END = 7,
    /* struct lwpprof_process, then the executable's path (text) and,
     * when it is not profiled, "\n" and why (version 3): a process the
     * program started, profiled (*FOLLOWED) or not */
    LWPPROF_PROCESS = 8,
    /* text, a line per loaded object: "path\tbuild-id\tsize\tmtime"
     * (build-id in hex, "" when it has none; mtime "seconds.nanoseconds"),
     * with MAPS */
    LWPPROF_OBJECTS = 9,
    /* struct lwpprof_stack, then depth u64 return addresses, innermost
     * first: record -g, the call stack of the newest record of a drain,
     * unwound from the threshold signal's frame */
    LWPPROF_STACK = 10,
};

#define LWPPROF_STACK_MAX       126

struct lwpprof_stack {
    uint32_t tid;
    uint32_t depth;         /* return addresses after the header */
    uint64_t ip;            /* the record's InstructionAddress */
    uint64_t rip;           /* where the signal interrupted the thread */
};

#define LWPPROF_THREAD_START    1
#define LWPPROF_THREAD_STOP     2

struct lwpprof_thread {
    uint32_t tid;
    uint32_t kind;          /* LWPPROF_THREAD_START or _STOP */
    uint32_t seq;           /* 1: the main thread; then pthread_create's
                               calls in the order they were made (in
                               each process) */
    uint32_t pid;           /* the thread's process (0 in version 1) */
    uint64_t missed;        /* STOP: LWPCB.MissedEvents */
    uint64_t records;       /* STOP: records this thread wrote */
};

struct lwpprof_exit {
    uint32_t tid;           /* the thread that ran exit() */
    uint32_t threads;       /* threads still profiled at exit */
    uint64_t records;       /* records written by every thread */
};

#define LWPPROF_PROCESS_FORKED  1   /* a child of fork(), not profiled */
#define LWPPROF_PROCESS_EXECED  2   /* a program that execve() started */
#define LWPPROF_PROCESS_FOLLOWED 3  /* a child of fork(), profiled: its
                                       THREAD chunks carry its pid */
#define LWPPROF_PROCESS_EXEC_FOLLOWED 4 /* a program a profiled process
                                       exec'd, profiled: the pid's chunks
                                       after this one are the new
                                       program's */

struct lwpprof_process {
    uint32_t pid;
    uint32_t ppid;
    uint32_t how;           /* LWPPROF_PROCESS_* */
    uint32_t reserved;      /* 0 */
};

#define LWPPROF_END_EXITED      1   /* code: exit status */
#define LWPPROF_END_SIGNALED    2   /* code: signal number */

struct lwpprof_end {
    uint32_t how;           /* LWPPROF_END_* */
    int32_t code;
};

#endif /* LWP_PROF_FORMAT_H */
