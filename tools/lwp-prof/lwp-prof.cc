// lwp-prof: record a program with AMD LWP and report where its events are
//
//   lwp-prof record [-e ire:N,bre:N,...] -o FILE -- PROGRAM ARGS...
//   lwp-prof report [options] FILE
//
// docs/lwp-prof.md describes the commands, the record file and what works.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <tuple>
#include <vector>

#include <cpuid.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <capstone/capstone.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "lwp-engine.hh"
#include "lwp/lwp-arch.h"
#include "lwp-prof-format.h"

namespace {

const char *const kUsage =
    "usage: lwp-prof record [options] -o FILE -- PROGRAM [ARGS...]\n"
    "       lwp-prof report [options] FILE\n"
    "       lwp-prof diff [options] A B\n"
    "       lwp-prof --help | --version\n"
    "\n"
    "Profile an unmodified, dynamically linked x86-64 program with AMD\n"
    "Lightweight Profiling (LWP): `record` runs it with a preload library\n"
    "that enables LWP in every thread and writes LWP's records to FILE;\n"
    "`report` ranks functions, lines and instructions by the events LWP\n"
    "sampled: instructions, branches, DCache misses or the clocks of\n"
    "qemu-lwp's cost model.  docs/lwp-prof.md has the details.\n"
    "\n"
    "record options:\n"
    "  -o, --output FILE     the record file (required)\n"
    "  -e, --events LIST     events and intervals, e.g. ire:100000,bre:100000\n"
    "                        (ire, bre, dme, cnh, rnh; default ire:100000)\n"
    "      --ring-kb N       ring buffer per thread in KiB (default 1024)\n"
    "      --qemu PATH       run under this qemu-x86_64 (default: found next\n"
    "                        to lwp-prof, $LWP_PROF_QEMU or in PATH, unless\n"
    "                        the CPU has LWP)\n"
    "      --cpu MODEL       qemu's -cpu (default max,+lwp, and\n"
    "                        max,+lwp,cost-model=detailed with cnh or rnh)\n"
    "      --qemu-arg ARG    one more qemu argument (repeatable), e.g.\n"
    "                        --qemu-arg -plugin --qemu-arg lib.so\n"
    "      --native          run the program directly (a CPU or VM with LWP)\n"
    "      --perf            run it directly, sampled by the kernel's lwp perf\n"
    "                        PMU (one event; static programs too)\n"
    "      --preload PATH    the preload library (default: next to lwp-prof)\n"
    "      --no-follow-exec  count the programs an exec runs, do not profile\n"
    "                        them (forked children are followed either way)\n"
    "  -g, --call-graph      the call stack of each record where it is known\n"
    "                        exactly (a signal per record: slower)\n"
    "      --aslr            keep address space randomisation (by default the\n"
    "                        program runs without it, so that a program that\n"
    "                        hashes addresses repeats its work run after run)\n"
    "  -q, --quiet           nothing on stderr but lwp-prof's errors (the\n"
    "                        notes and warnings are in the file)\n"
    "  record's exit status is the program's (128+N if signal N ended it),\n"
    "  125 when lwp-prof fails, 126/127 when PROGRAM cannot run / is absent\n"
    "\n"
    "report options:\n"
    "      --top N           functions to list (default 20, 0: all)\n"
    "      --annotate N      hottest functions to disassemble (default 3)\n"
    "      --branches N      hot branches to list (default 10)\n"
    "      --event NAME      the event that ranks functions (default: cnh\n"
    "                        or rnh when FILE has them, else the first of\n"
    "                        ire, bre, dme in FILE)\n"
    "      --force           read a file whose recording did not finish:\n"
    "                        its whole chunks\n"
    "      --symfs DIR       read the program's file /path as DIR/path when\n"
    "                        that exists (an unstripped or the original\n"
    "                        build)\n"
    "      --debug-dir DIR   look for separate debug info in DIR too\n"
    "                        (repeatable)\n"
    "  -s, --speedscope OUT  write the speedscope profile there (default\n"
    "                        FILE.speedscope.json; '-' for none)\n"
    "  report exits 0, 1 on a bad file, 2 on bad usage\n"
    "\n"
    "diff: the change from profile A to profile B (two builds or inputs of\n"
    "a program) per function and per source line, biggest first, in\n"
    "samples of the first event both have (--event NAME), or in events\n"
    "when their intervals differ; --top N rows (default 20, 0: all);\n"
    "--symfs and --debug-dir as for report\n";

const char *const kEventNames[LWP_NUM_EVENTS + 1] = {
    nullptr, "val", "ire", "bre", "dme", "cnh", "rnh",
};
const char *const kEventLong[LWP_NUM_EVENTS + 1] = {
    nullptr, "Programmed Value", "Instructions Retired", "Branches Retired",
    "DCache Misses", "CPU Clocks not Halted", "Reference Clocks not Halted",
};
// What one event is: the unit of an interval
const char *const kEventUnits[LWP_NUM_EVENTS + 1] = {
    nullptr, "LWPVALs", "instructions", "branches", "DCache misses",
    "clocks", "reference clocks",
};
// What a ranking by the event measures (docs/lwp-prof.md, "Events")
const char *const kEventMeasures[LWP_NUM_EVENTS + 1] = {
    nullptr, "",
    "(where instructions retire: work done, not time; a cache miss or a "
    "mispredicted branch counts as one instruction)",
    "(where branches retire, taken or not)",
    "(loads that miss the DCache of qemu-lwp's cache model, "
    "docs/cache-model.md)",
    "(clocks of qemu-lwp's simple cost model: one per instruction and one "
    "more per branch; record them with --cpu ...,cost-model=detailed to "
    "charge cache misses and mispredicts)",
    "(clocks of qemu-lwp's simple cost model: one per instruction and one "
    "more per branch; record them with --cpu ...,cost-model=detailed to "
    "charge cache misses and mispredicts)",
};
// ... for the clocks recorded with cost-model=detailed
const char *const kClocksDetailed =
    "(clocks of qemu-lwp's detailed cost model: one per instruction and one "
    "more per branch, plus each load's latency above L1's in the cache "
    "model and 20 per mispredicted branch: where a modelled core spends "
    "its time, not the host's)";

[[noreturn]] void die(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("lwp-prof: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(status);
}

// A command's arguments, read in order: an option's value is the next one
class Args {
public:
    Args(const char *cmd, int argc, char **argv)
        : cmd_(cmd), argc_(argc), argv_(argv) {}
    bool more() const { return i_ < argc_; }
    std::string next() { return argv_[i_++]; }
    void back() { i_--; }
    const char *value(const char *opt)
    {
        if (i_ >= argc_) {
            die(2, "%s: %s needs a value (lwp-prof --help)", cmd_, opt);
        }
        return argv_[i_++];
    }
    unsigned long number(const char *opt)
    {
        const char *v = value(opt);
        char *end;
        errno = 0;
        unsigned long n = strtoul(v, &end, 10);
        if (!*v || *end || errno || v[0] == '-') {
            die(2, "%s: %s wants a number, not '%s'", cmd_, opt, v);
        }
        return n;
    }
    [[noreturn]] void unknown(const std::string &a) const
    {
        die(2, "%s: unknown option '%s' (lwp-prof --help)", cmd_, a.c_str());
    }

private:
    const char *cmd_;
    int argc_, i_ = 0;
    char **argv_;
};

// An EventId as the report names it: the event, LWPINS's 255, or "other"
const char *event_label(int id)
{
    return id <= LWP_NUM_EVENTS ? kEventNames[id]
           : id == LWP_EVENT_ID_INS ? "lwpins" : "other";
}

int event_id(const std::string &name)
{
    for (int id = 2; id <= LWP_NUM_EVENTS; id++) {
        if (name == kEventNames[id]) {
            return id;
        }
    }
    return -1;
}

std::string exe_dir()
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0) {
        return ".";
    }
    buf[n] = 0;
    std::string s(buf);
    return s.substr(0, s.rfind('/'));
}

std::string basename_of(const std::string &p)
{
    size_t s = p.rfind('/');
    return s == std::string::npos ? p : p.substr(s + 1);
}

bool is_exec(const std::string &p)
{
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           access(p.c_str(), X_OK) == 0;
}

std::string search_path(const std::string &name)
{
    if (name.find('/') != std::string::npos) {
        return name;
    }
    const char *path = getenv("PATH");
    std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
    size_t start = 0;
    for (;;) {
        size_t end = p.find(':', start);
        std::string dir = p.substr(start, end - start);
        std::string cand = (dir.empty() ? "." : dir) + "/" + name;
        if (is_exec(cand)) {
            return cand;
        }
        if (end == std::string::npos) {
            return "";
        }
        start = end + 1;
    }
}

std::string absolute(const std::string &p)
{
    if (!p.empty() && p[0] == '/') {
        return p;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd))) {
        return p;
    }
    return std::string(cwd) + "/" + p;
}

bool host_has_lwp()
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000001, &a, &b, &c, &d)) {
        return false;
    }
    return (c >> LWP_CPUID_EXT3_BIT) & 1;
}

// ---------------------------------------------------------------- the file

struct Record {
    uint8_t event;
    uint8_t core;
    uint16_t flags;
    uint32_t data1;
    uint64_t ip;            // with its address space (kSpaceShift)
    uint64_t data2;
    uint64_t thread;        // thread_key(image, tid)
    int32_t stack = -1;     // record -g: Profile::stacks, -1: none
    uint32_t raw0() const { return event | core << 8 | uint32_t(flags) << 16; }
};

struct MapEntry {
    uint64_t start, end, offset;
    std::string perms, path;
};

struct ThreadInfo {
    uint32_t tid = 0;
    uint32_t image = 0;     // the program it ran (Profile::images)
    uint32_t pid = 0;       // its process; 0: the program's (version 1)
    unsigned order = 0;     // 1, 2, ...: the order the file names it
    bool started = false, stopped = false;
    uint64_t missed = 0, records = 0;
    uint64_t by_event[256] = {};
};

struct Process {
    uint32_t pid = 0, ppid = 0, how = 0;
    std::string exe, why;   // why: what kept it from being profiled
};

// A program that ran in a process: the one lwp-prof record started
// (image 0), a forked child's copy of its parent, or one a profiled
// process exec'd.  Images with the same file mappings share an address
// space, in which their records' addresses are looked up.
struct Image {
    uint32_t pid = 0, ppid = 0, how = 0;    // how: 0 or LWPPROF_PROCESS_*
    std::string exe;
    std::vector<MapEntry> maps;
    uint32_t space = 0;
    std::string execd, why;     // it exec'd this, unprofiled for this
    bool execd_followed = false;    // it exec'd a program lwp-prof followed
};

// A record's address carries its address space above the 48 bits of a
// user-mode x86-64 address, so that equal addresses of two programs stay
// apart in every table keyed by address
constexpr int kSpaceShift = 48;
constexpr uint64_t kAddrMask = (uint64_t(1) << kSpaceShift) - 1;

uint64_t thread_key(uint32_t image, uint32_t tid)
{
    return uint64_t(image) << 32 | tid;
}

// A loaded object's file as the recording saw it (OBJECTS)
struct ObjectId {
    std::string build_id, size, mtime;
};

struct Profile {
    std::map<std::string, std::string> info;
    std::map<std::string, ObjectId> objects;    // by path
    std::vector<Process> processes;     // PROCESS chunks, in file order
    std::vector<Image> images = std::vector<Image>(1);
    std::vector<uint32_t> space_image;  // an image of each address space
    std::vector<Record> records;
    // record -g: where the signal after a record interrupted its thread,
    // and the return addresses above it, innermost first
    struct Stack {
        uint64_t rip;
        std::vector<uint64_t> rets;
    };
    std::vector<Stack> stacks;
    std::map<uint64_t, size_t> last_record;     // by thread key
    std::map<uint64_t, ThreadInfo> threads;     // by thread_key
    std::vector<std::string> notes;
    std::vector<uint32_t> exits;        // an image ran exit() or _exit()
    // while the chunks are read: the image each pid and tid runs now
    std::map<uint32_t, uint32_t> image_of_pid, image_of_tid;
    bool has_end = false;
    lwpprof_end end{};
};

uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

bool read_file(const std::string &path, std::vector<uint8_t> &data,
               std::string &err)
{
    FILE *f = fopen(path.c_str(), "rb");
    if (!f) {
        err = path + ": " + strerror(errno);
        return false;
    }
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        data.insert(data.end(), buf, buf + n);
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        err = path + ": read error";
        return false;
    }
    return true;
}

// The parts of @text between the @sep characters
std::vector<std::string> split(const std::string &text, char sep)
{
    std::vector<std::string> r;
    size_t a = 0;
    for (size_t t; (t = text.find(sep, a)) != std::string::npos; a = t + 1) {
        r.push_back(text.substr(a, t - a));
    }
    r.push_back(text.substr(a));
    return r;
}

void parse_maps(const std::string &text, std::vector<MapEntry> &out)
{
    for (const auto &line : split(text, '\n')) {
        unsigned long long s, e, off;
        char perms[8];
        int name_at = 0;
        if (sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &s, &e, perms,
                   &off, &name_at) < 4) {
            continue;
        }
        MapEntry m{s, e, off, perms,
                   name_at > 0 && size_t(name_at) <= line.size()
                       ? line.substr(name_at) : ""};
        bool dup = false;
        for (const auto &o : out) {
            dup |= o.start == m.start && o.path == m.path;
        }
        if (!dup) {
            out.push_back(m);
        }
    }
}

// The program's pid: the process that lwp-prof record started
uint32_t main_pid(const Profile &prof)
{
    auto it = prof.info.find("pid");
    return it == prof.info.end()
        ? 0 : uint32_t(strtoul(it->second.c_str(), nullptr, 10));
}

// The image process @pid runs now (0, the program, when it is not known)
uint32_t image_of(const Profile *prof, uint32_t pid)
{
    auto it = prof->image_of_pid.find(pid);
    return it == prof->image_of_pid.end() ? 0 : it->second;
}

// Walk the chunks: false and a reason when the file is not a whole record
// file.  *good_end is the end of the last whole chunk.
bool walk(const std::vector<uint8_t> &d, Profile *prof, size_t *good_end,
          std::string &err)
{
    *good_end = 0;
    if (d.size() < LWPPROF_HEADER_SIZE ||
        memcmp(d.data(), LWPPROF_MAGIC, 8) != 0) {
        err = "not an lwp-prof record file (no LWPPROF magic)";
        return false;
    }
    if (rd32(&d[8]) < 1 || rd32(&d[8]) > LWPPROF_VERSION) {
        err = "record file version " + std::to_string(rd32(&d[8])) +
              ", this lwp-prof reads versions 1 to " +
              std::to_string(LWPPROF_VERSION);
        return false;
    }
    if (rd32(&d[12]) != LWPPROF_HEADER_SIZE) {
        err = "bad header size";
        return false;
    }
    size_t off = LWPPROF_HEADER_SIZE;
    *good_end = off;
    while (off < d.size()) {
        if (d.size() - off < LWPPROF_CHUNK_HEADER) {
            err = "truncated: a chunk header is cut at byte " +
                  std::to_string(off);
            return false;
        }
        uint32_t type = rd32(&d[off]), size = rd32(&d[off + 4]);
        uint64_t padded = (uint64_t(size) + 7) & ~uint64_t(7);
        if (size > LWPPROF_CHUNK_MAX ||
            d.size() - off - LWPPROF_CHUNK_HEADER < padded) {
            err = "truncated: chunk at byte " + std::to_string(off) +
                  " (type " + std::to_string(type) + ", " +
                  std::to_string(size) + " bytes) goes past the end";
            return false;
        }
        const uint8_t *p = &d[off + LWPPROF_CHUNK_HEADER];
        std::string where = " at byte " + std::to_string(off);
        if (prof && prof->has_end) {
            err = "data after the END chunk" + where;
            return false;
        }
        if (prof) {
            switch (type) {
            case LWPPROF_INFO: {
                // the program's; an exec'd one's adds nothing new
                std::string text(reinterpret_cast<const char *>(p), size);
                for (const auto &line : split(text, '\n')) {
                    size_t eq = line.find('=');
                    if (eq != std::string::npos) {
                        prof->info.emplace(line.substr(0, eq),
                                           line.substr(eq + 1));
                    }
                }
                break;
            }
            case LWPPROF_MAPS: {
                // version 3: a first line "pid N"
                std::string text(reinterpret_cast<const char *>(p), size);
                unsigned long pid = 0;
                sscanf(text.c_str(), "pid %lu", &pid);
                parse_maps(text, prof->images[image_of(prof, uint32_t(pid))]
                                     .maps);
                break;
            }
            case LWPPROF_RECORDS: {
                if (size < 8 ||
                    uint64_t(rd32(p + 4)) * LWP_EVENT_RECORD_SIZE + 8 != size) {
                    err = "bad RECORDS chunk" + where;
                    return false;
                }
                uint32_t tid = rd32(p), n = rd32(p + 4);
                auto img = prof->image_of_tid.find(tid);
                uint32_t image = img == prof->image_of_tid.end() ? 0
                                                                : img->second;
                uint64_t key = thread_key(image, tid);
                ThreadInfo &ti = prof->threads[key];
                if (!ti.order) {
                    ti.order = 1000000 + unsigned(prof->threads.size());
                }
                ti.tid = tid;
                ti.image = image;
                for (uint32_t i = 0; i < n; i++) {
                    const uint8_t *r = p + 8 + i * LWP_EVENT_RECORD_SIZE;
                    Record rec{r[0], r[1], uint16_t(r[2] | r[3] << 8),
                               rd32(r + 4), rd64(r + 8), rd64(r + 16), key};
                    prof->records.push_back(rec);
                    ti.by_event[rec.event]++;
                }
                if (n) {
                    prof->last_record[key] = prof->records.size() - 1;
                }
                break;
            }
            case LWPPROF_THREAD: {
                if (size != sizeof(lwpprof_thread)) {
                    err = "bad THREAD chunk" + where;
                    return false;
                }
                lwpprof_thread t;
                memcpy(&t, p, sizeof(t));
                auto img = prof->image_of_tid.find(t.tid);
                uint32_t image = t.kind == LWPPROF_THREAD_START ||
                                 img == prof->image_of_tid.end()
                    ? image_of(prof, t.pid) : img->second;
                prof->image_of_tid[t.tid] = image;
                ThreadInfo &ti = prof->threads[thread_key(image, t.tid)];
                ti.order = t.seq;
                ti.tid = t.tid;
                ti.pid = t.pid;
                ti.image = image;
                if (t.kind == LWPPROF_THREAD_START) {
                    ti.started = true;
                } else {
                    ti.stopped = true;
                    ti.missed = t.missed;
                    ti.records = t.records;
                }
                break;
            }
            case LWPPROF_NOTE:
                prof->notes.emplace_back(reinterpret_cast<const char *>(p),
                                         size);
                break;
            case LWPPROF_EXIT: {
                if (size != sizeof(lwpprof_exit)) {
                    err = "bad EXIT chunk" + where;
                    return false;
                }
                lwpprof_exit e;
                memcpy(&e, p, sizeof(e));
                auto img = prof->image_of_tid.find(e.tid);
                prof->exits.push_back(img == prof->image_of_tid.end()
                                          ? 0 : img->second);
                break;
            }
            case LWPPROF_OBJECTS: {
                std::string text(reinterpret_cast<const char *>(p), size);
                for (const auto &line : split(text, '\n')) {
                    std::vector<std::string> f = split(line, '\t');
                    if (f.size() == 4) {
                        prof->objects[f[0]] = {f[1], f[2], f[3]};
                    }
                }
                break;
            }
            case LWPPROF_PROCESS: {
                if (size < sizeof(lwpprof_process)) {
                    err = "bad PROCESS chunk" + where;
                    return false;
                }
                lwpprof_process pr;
                memcpy(&pr, p, sizeof(pr));
                // the executable's path, then (version 3) "\n" and why it
                // was not profiled
                std::string text(reinterpret_cast<const char *>(p) +
                                     sizeof(pr), size - sizeof(pr));
                size_t nl = text.find('\n');
                prof->processes.push_back(
                    {pr.pid, pr.ppid, pr.how, text.substr(0, nl),
                     nl == std::string::npos ? "" : text.substr(nl + 1)});
                bool known = prof->image_of_pid.count(pr.pid) ||
                             pr.pid == main_pid(*prof);
                if (known && (pr.how == LWPPROF_PROCESS_EXECED ||
                              pr.how == LWPPROF_PROCESS_EXEC_FOLLOWED)) {
                    Image &old = prof->images[image_of(prof, pr.pid)];
                    old.execd = text.substr(0, nl);
                    old.why = prof->processes.back().why;
                    old.execd_followed =
                        pr.how == LWPPROF_PROCESS_EXEC_FOLLOWED;
                }
                if (pr.how == LWPPROF_PROCESS_FOLLOWED ||
                    pr.how == LWPPROF_PROCESS_EXEC_FOLLOWED) {
                    // a forked child starts as a copy of its parent
                    Image im;
                    im.pid = pr.pid;
                    im.ppid = pr.ppid;
                    im.how = pr.how;
                    im.exe = text.substr(0, nl);
                    if (pr.how == LWPPROF_PROCESS_FOLLOWED) {
                        im.maps = prof->images[image_of(prof, pr.ppid)].maps;
                    }
                    uint32_t image = uint32_t(prof->images.size());
                    prof->images.push_back(std::move(im));
                    prof->image_of_pid[pr.pid] = image;
                    prof->image_of_tid[pr.pid] = image;   // its main thread
                }
                break;
            }
            case LWPPROF_STACK: {
                lwpprof_stack h;
                if (size < sizeof(h)) {
                    err = "bad STACK chunk" + where;
                    return false;
                }
                memcpy(&h, p, sizeof(h));
                if (h.depth > LWPPROF_STACK_MAX ||
                    size != sizeof(h) + h.depth * 8) {
                    err = "bad STACK chunk" + where;
                    return false;
                }
                // the newest record of the thread's last drain
                auto img = prof->image_of_tid.find(h.tid);
                auto last = prof->last_record.find(thread_key(
                    img == prof->image_of_tid.end() ? 0 : img->second, h.tid));
                if (last != prof->last_record.end() &&
                    prof->records[last->second].ip == h.ip) {
                    Profile::Stack st{h.rip, {}};
                    for (uint32_t i = 0; i < h.depth; i++) {
                        st.rets.push_back(rd64(p + sizeof(h) + 8 * i));
                    }
                    prof->records[last->second].stack =
                        int32_t(prof->stacks.size());
                    prof->stacks.push_back(std::move(st));
                }
                break;
            }
            case LWPPROF_END:
                if (size != sizeof(lwpprof_end)) {
                    err = "bad END chunk" + where;
                    return false;
                }
                prof->has_end = true;
                memcpy(&prof->end, p, sizeof(lwpprof_end));
                break;
            default:
                err = "unknown chunk type " + std::to_string(type) + where;
                return false;
            }
        }
        off += LWPPROF_CHUNK_HEADER + padded;
        *good_end = off;
    }
    return true;
}

// Images that mapped the same files at the same addresses share an
// address space (a forked child, its parent); each record's addresses
// get theirs
void assign_spaces(Profile &prof)
{
    std::map<std::string, uint32_t> by_maps;
    for (size_t i = 0; i < prof.images.size(); i++) {
        std::set<std::string> files;
        for (const auto &m : prof.images[i].maps) {
            if (!m.path.empty() && m.path[0] == '/') {
                files.insert(std::to_string(m.start) + " " +
                             std::to_string(m.offset) + " " + m.path);
            }
        }
        std::string key;
        for (const auto &f : files) {
            key += f + "\n";
        }
        auto it = by_maps.emplace(key, uint32_t(prof.space_image.size()));
        if (it.second) {
            prof.space_image.push_back(uint32_t(i));
        }
        prof.images[i].space = it.first->second;
    }
    for (auto &r : prof.records) {
        uint64_t space = uint64_t(prof.images[r.thread >> 32].space)
                         << kSpaceShift;
        r.ip |= space;
        if (r.event == LWP_EVENT_ID_BRE) {
            r.data2 |= space;
        }
        if (r.stack >= 0) {
            Profile::Stack &st = prof.stacks[size_t(r.stack)];
            st.rip |= space;
            for (auto &a : st.rets) {
                a |= space;
            }
        }
    }
}

// With @force, a file cut short is read up to its last whole chunk, and
// one without END is read; *warning then says what is missing
bool load_profile(const std::string &path, Profile &prof, std::string &err,
                  bool force = false, std::string *warning = nullptr)
{
    std::vector<uint8_t> d;
    size_t good;
    if (!read_file(path, d, err)) {
        return false;
    }
    const char *retry = " (report --force reads what is whole)";
    if (!walk(d, &prof, &good, err)) {
        if (!force || err.compare(0, 10, "truncated:") != 0) {
            err = path + ": " + err +
                  (err.compare(0, 10, "truncated:") ? "" : retry);
            return false;
        }
        *warning = err + "; read up to byte " + std::to_string(good);
    } else if (!prof.has_end && force) {
        *warning = "no END chunk: the recording did not finish";
    }
    if (!prof.has_end && !force) {
        err = path + ": truncated: no END chunk (the recording did not "
              "finish, or the file was cut)" + retry;
        return false;
    }
    if (!prof.info.count("flags")) {
        err = path + ": no INFO chunk: the recorder never started in the "
              "program";
        return false;
    }
    assign_spaces(prof);
    return true;
}

// The EventInterval that LLWPCB wrote back for event @id, 0 when the
// file has no such event
uint64_t interval_of(const Profile &prof, int id)
{
    if (id < 2 || id > LWP_NUM_EVENTS) {
        return 0;
    }
    auto it = prof.info.find(std::string("interval.") + kEventNames[id]);
    return it == prof.info.end() ? 0 : strtoull(it->second.c_str(), nullptr, 10);
}

// Whether @image ran exit() or _exit() (an EXIT chunk of one of its
// threads)
bool exited(const Profile &prof, uint32_t image)
{
    return std::find(prof.exits.begin(), prof.exits.end(), image) !=
           prof.exits.end();
}

// Whether the report lists thread @ti: not the thread of a forked child
// that only exec'd (the copy of its parent, before the exec, no records)
bool listed(const Profile &prof, const ThreadInfo &ti)
{
    for (uint64_t n : ti.by_event) {
        if (n) {
            return true;
        }
    }
    return !prof.images[ti.image].execd_followed;
}

size_t thread_count(const Profile &prof)
{
    size_t n = 0;
    for (const auto &t : prof.threads) {
        n += listed(prof, t.second);
    }
    return n;
}

// How many processes ran the profiled programs
size_t process_count(const Profile &prof)
{
    std::set<uint32_t> pids;
    for (size_t i = 0; i < prof.images.size(); i++) {
        pids.insert(i ? prof.images[i].pid : main_pid(prof));
    }
    return pids.size();
}

// The processes the program started, which lwp-prof does not profile:
// the last PROCESS chunk of each (a forked child that execs writes two)
struct Unprofiled {
    size_t count = 0;
    std::string main_exec, main_why;    // the program itself exec'd this
    std::map<std::string, size_t> by_name;  // "true", "prof-work (forked)"
};

Unprofiled unprofiled(const Profile &prof)
{
    std::map<uint32_t, const Process *> last;
    for (const auto &pr : prof.processes) {
        last[pr.pid] = &pr;
    }
    Unprofiled u;
    for (const auto &kv : last) {
        const Process &pr = *kv.second;
        if (pr.pid == main_pid(prof)) {
            if (pr.how == LWPPROF_PROCESS_EXECED) {
                u.main_exec = pr.exe;
                u.main_why = pr.why;
            }
            continue;
        }
        if (pr.how == LWPPROF_PROCESS_FOLLOWED ||
            pr.how == LWPPROF_PROCESS_EXEC_FOLLOWED) {
            continue;
        }
        u.count++;
        u.by_name[basename_of(pr.exe) +
                  (pr.how == LWPPROF_PROCESS_FORKED ? " (forked)"
                   : pr.why.empty() ? "" : " (" + pr.why + ")")]++;
    }
    return u;
}

// "1 thread", "2 threads"; "1 process", "2 processes"
std::string plural(uint64_t n, const std::string &one,
                   const std::string &many = "")
{
    return std::to_string(n) + " " +
           (n == 1 ? one : many.empty() ? one + "s" : many);
}

// ---------------------------------------------------------------- record

struct RecordOpts {
    std::string output, events = "ire:100000", qemu, cpu = "max,+lwp",
                preload;
    unsigned ring_kb = 1024;
    bool native = false, force_qemu = false, quiet = false,
         follow_exec = true, stacks = false, aslr = false, cpu_given = false,
         perf = false, preload_given = false;
    std::vector<std::string> argv, qemu_args;
};

// Validate "ire:N,bre:N": a message, or "" when good; *asked gets each
// event's interval (100000 when not given)
std::string check_events(const std::string &spec,
                         std::map<int, unsigned long> *asked = nullptr)
{
    std::set<int> seen;
    size_t pos = 0;
    if (spec.empty()) {
        return "no events";
    }
    while (pos <= spec.size()) {
        size_t comma = spec.find(',', pos);
        std::string tok = spec.substr(pos, comma - pos);
        pos = comma == std::string::npos ? spec.size() + 1 : comma + 1;
        size_t colon = tok.find(':');
        std::string name = tok.substr(0, colon);
        int id = event_id(name);
        if (id < 0) {
            return "unknown event '" + name +
                   "' (ire, bre, dme, cnh or rnh)";
        }
        if (!seen.insert(id).second) {
            return "event '" + name + "' given twice";
        }
        if (asked) {
            (*asked)[id] = 100000;
        }
        if (colon != std::string::npos) {
            std::string num = tok.substr(colon + 1);
            char *end;
            errno = 0;
            unsigned long v = strtoul(num.c_str(), &end, 0);
            if (num.empty() || *end || errno || v > LWPCB_INTERVAL_MAX ||
                num[0] == '-') {
                return "interval '" + num + "' of " + name +
                       " is not a number up to 33554431 (0x1ffffff)";
            }
            if (asked) {
                (*asked)[id] = v;
            }
        }
    }
    return "";
}

// Static binaries and non-x86-64 files cannot take the preload library
// A script (#!): as the kernel runs it, its interpreter with the line's
// argument, if any, then the script's path and its arguments in *argv
bool script_interpreter(const std::string &path, std::vector<std::string> &argv)
{
    FILE *f = fopen(path.c_str(), "r");
    char line[256];
    bool is = f && fgets(line, sizeof(line), f) && !strncmp(line, "#!", 2);
    if (f) {
        fclose(f);
    }
    if (!is) {
        return false;
    }
    std::string l(line + 2);
    l = l.substr(0, l.find('\n'));
    size_t a = l.find_first_not_of(" \t");
    size_t b = l.find_first_of(" \t", a);
    if (a == std::string::npos) {
        die(126, "%s: a #! line without an interpreter", path.c_str());
    }
    std::vector<std::string> run{l.substr(a, b - a)};
    size_t c = b == std::string::npos ? b : l.find_first_not_of(" \t", b);
    if (c != std::string::npos) {
        size_t e = l.find_last_not_of(" \t");
        run.push_back(l.substr(c, e + 1 - c));
    }
    run.push_back(path);
    run.insert(run.end(), argv.begin() + 1, argv.end());
    argv = run;
    return true;
}

// @interp_needed: the program must be dynamically linked (the preload library)
void check_program(const std::string &path, bool interp_needed)
{
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        die(126, "%s: %s", path.c_str(), strerror(errno));
    }
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ, nullptr);
    GElf_Ehdr eh;
    if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
        die(126, "%s: not an ELF executable or a #! script (lwp-prof runs "
            "x86-64 ELF programs)", path.c_str());
    }
    if (eh.e_machine != EM_X86_64 || gelf_getclass(e) != ELFCLASS64) {
        die(126, "%s: not an x86-64 program", path.c_str());
    }
    size_t n = 0;
    bool interp = false;
    elf_getphdrnum(e, &n);
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, int(i), &ph) && ph.p_type == PT_INTERP) {
            interp = true;
        }
    }
    elf_end(e);
    close(fd);
    if (!interp && interp_needed) {
        die(126, "%s: statically linked: lwp-prof loads its recorder with "
            "LD_PRELOAD and needs a dynamically linked program",
            path.c_str());
    }
}

// The records in the file so far, for the progress line: the RECORDS
// chunks that are whole, read from where the last call stopped
class RecordCounter {
public:
    uint64_t count(const std::string &path)
    {
        int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            return records_;
        }
        if (!off_) {
            off_ = LWPPROF_HEADER_SIZE;
        }
        struct stat st;
        uint32_t h[4];
        while (fstat(fd, &st) == 0 &&
               pread(fd, h, sizeof(h), off_t(off_)) == ssize_t(sizeof(h))) {
            uint64_t next = off_ + LWPPROF_CHUNK_HEADER +
                            ((uint64_t(h[1]) + 7) & ~uint64_t(7));
            if (next > uint64_t(st.st_size)) {
                break;      // its writev is not done yet
            }
            if (h[0] == LWPPROF_RECORDS) {
                records_ += h[3];
            }
            off_ = next;
        }
        close(fd);
        return records_;
    }

private:
    uint64_t off_ = 0, records_ = 0;
};

volatile sig_atomic_t g_child = 0;

void forward_signal(int sig)
{
    if (g_child > 0) {
        kill(g_child, sig);
    }
}

// The signals that end a terminal's job go to the program (@forward), or
// are as they were (in the program)
void job_signals(bool forward)
{
    struct sigaction sa {};
    sa.sa_handler = forward ? forward_signal : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
        sigaction(s, &sa, nullptr);
    }
}

// In the program: no address space randomisation (record --aslr keeps
// it), as rr and gdb do; the programs it runs inherit it
void no_aslr()
{
    int pers = personality(0xffffffff);
    if (pers != -1) {
        personality(unsigned(pers) | ADDR_NO_RANDOMIZE);
    }
}

// The END chunk for the program's wait status, and record's exit status
lwpprof_end end_of(int status, int *rc)
{
    lwpprof_end end{};
    if (WIFEXITED(status)) {
        end.how = LWPPROF_END_EXITED;
        end.code = WEXITSTATUS(status);
        *rc = end.code;
    } else {
        end.how = LWPPROF_END_SIGNALED;
        end.code = WTERMSIG(status);
        *rc = 128 + end.code;
    }
    return end;
}

// A new record file's header
void write_header(int fd, const std::string &out)
{
    uint8_t hdr[LWPPROF_HEADER_SIZE] = {};
    memcpy(hdr, LWPPROF_MAGIC, 8);
    uint32_t v = LWPPROF_VERSION, hs = LWPPROF_HEADER_SIZE;
    memcpy(hdr + 8, &v, 4);
    memcpy(hdr + 12, &hs, 4);
    if (write(fd, hdr, sizeof(hdr)) != sizeof(hdr)) {
        die(125, "%s: write failed", out.c_str());
    }
}

std::string find_qemu(const RecordOpts &o)
{
    if (!o.qemu.empty()) {
        return o.qemu;
    }
    if (const char *q = getenv("LWP_PROF_QEMU")) {
        return q;
    }
    std::string dir = exe_dir();
    for (const char *rel : {"/qemu-x86_64", "/../../../qemu-x86_64",
                            "/../../qemu-x86_64", "/../qemu-x86_64"}) {
        if (is_exec(dir + rel)) {
            return dir + rel;
        }
    }
    return search_path("qemu-x86_64");
}

// ---------------------------------------------------------------- --perf

// record --perf: the kernel's lwp perf PMU (Linux series patch 0008,
// docs/linux.md "perf: the lwp PMU") samples the program, as `perf record
// -e lwp/EVENT/u -c PERIOD` does, through perf_event_open: one event per
// CPU for the program, inherited by its threads and children, enabled at
// its exec, with the mmap, comm and task side-band records; each sample
// becomes the LWP record it was made from, each mmap a MAPS line, each
// fork and exit a PROCESS or THREAD chunk, in time order.

const char kLwpPmu[] = "/sys/bus/event_source/devices/lwp";

std::string file_build_id(const std::string &path);

// The lwp PMU's perf type, -1 when the kernel has none
int lwp_pmu_type()
{
    FILE *f = fopen((std::string(kLwpPmu) + "/type").c_str(), "r");
    int t = -1;
    if (f) {
        if (fscanf(f, "%d", &t) != 1) {
            t = -1;
        }
        fclose(f);
    }
    return t;
}

// The online CPUs, from "0-3,5"
std::vector<int> online_cpus()
{
    std::vector<int> r;
    FILE *f = fopen("/sys/devices/system/cpu/online", "r");
    char buf[4096] = "";
    if (f) {
        if (!fgets(buf, sizeof(buf), f)) {
            buf[0] = 0;
        }
        fclose(f);
    }
    for (const auto &part : split(buf, ',')) {
        int a, b;
        int n = sscanf(part.c_str(), "%d-%d", &a, &b);
        if (n == 1) {
            b = a;
        }
        for (int c = a; n >= 1 && c <= b && c >= 0; c++) {
            r.push_back(c);
        }
    }
    if (r.empty()) {
        for (long c = 0; c < sysconf(_SC_NPROCESSORS_CONF); c++) {
            r.push_back(int(c));
        }
    }
    return r;
}

// One record of a perf ring, decoded
struct PerfEvent {
    uint32_t type = 0;
    uint16_t misc = 0;
    uint32_t pid = 0, tid = 0, ppid = 0, cpu = 0;
    uint64_t time = 0, seq = 0;
    uint64_t ip = 0, addr = 0, weight = 0;     // SAMPLE
    uint64_t start = 0, len = 0, pgoff = 0, ino = 0, lost = 0;
    uint32_t maj = 0, min = 0, prot = 0, flags = 0;
    std::string path;                           // MMAP2
};

class PerfRing {
public:
    PerfRing(int fd, int cpu, void *base, size_t size)
        : fd_(fd), cpu_(cpu), base_(static_cast<uint8_t *>(base)), size_(size)
    {
    }
    int fd() const { return fd_; }

    // Everything the ring holds, decoded into @out (@dme: samples carry
    // ADDR and WEIGHT)
    void drain(bool dme, std::vector<PerfEvent> &out, uint64_t &seq)
    {
        auto *pg = reinterpret_cast<perf_event_mmap_page *>(base_);
        uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = pg->data_tail;
        const uint8_t *data = base_ + pg->data_offset;
        uint64_t dsize = pg->data_size;
        std::vector<uint8_t> rec;
        while (head - tail >= sizeof(perf_event_header)) {
            perf_event_header h;
            copy(data, dsize, tail, &h, sizeof(h));
            if (h.size < sizeof(h) || h.size > head - tail) {
                break;
            }
            rec.resize(h.size);
            copy(data, dsize, tail, rec.data(), h.size);
            tail += h.size;
            PerfEvent e;
            if (decode(rec, dme, e)) {
                e.seq = seq++;
                out.push_back(std::move(e));
            }
        }
        __atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
    }

    void close_ring()
    {
        munmap(base_, size_);
        close(fd_);
    }

private:
    static void copy(const uint8_t *data, uint64_t dsize, uint64_t from,
                     void *to, size_t n)
    {
        uint8_t *d = static_cast<uint8_t *>(to);
        for (size_t i = 0; i < n;) {
            uint64_t at = (from + i) % dsize;
            size_t k = std::min<uint64_t>(n - i, dsize - at);
            memcpy(d + i, data + at, k);
            i += k;
        }
    }

    // sample_id_all's trailer of a side-band record: pid, tid; time;
    // cpu, res (PERF_SAMPLE_TID | TIME | CPU)
    static bool trailer(const std::vector<uint8_t> &r, PerfEvent &e)
    {
        if (r.size() < sizeof(perf_event_header) + 24) {
            return false;
        }
        const uint8_t *t = r.data() + r.size() - 24;
        e.time = rd64(t + 8);
        e.cpu = rd32(t + 16);
        return true;
    }

    bool decode(const std::vector<uint8_t> &r, bool dme, PerfEvent &e)
    {
        const uint8_t *p = r.data() + sizeof(perf_event_header);
        size_t body = r.size() - sizeof(perf_event_header);
        e.type = rd32(r.data());
        e.misc = uint16_t(r[4] | r[5] << 8);
        e.cpu = uint32_t(cpu_);
        switch (e.type) {
        case PERF_RECORD_SAMPLE:
            // IP, TID, TIME, [ADDR], CPU, [WEIGHT]
            if (body < (dme ? 48u : 32u)) {
                return false;
            }
            e.ip = rd64(p);
            e.pid = rd32(p + 8);
            e.tid = rd32(p + 12);
            e.time = rd64(p + 16);
            p += 24;
            if (dme) {
                e.addr = rd64(p);
                p += 8;
            }
            e.cpu = rd32(p);
            if (dme) {
                e.weight = rd64(p + 8);
            }
            return true;
        case PERF_RECORD_MMAP2: {
            if (body < 64 + 24 || !trailer(r, e)) {
                return false;
            }
            e.pid = rd32(p);
            e.tid = rd32(p + 4);
            e.start = rd64(p + 8);
            e.len = rd64(p + 16);
            e.pgoff = rd64(p + 24);
            e.maj = rd32(p + 32);
            e.min = rd32(p + 36);
            e.ino = rd64(p + 40);
            e.prot = rd32(p + 56);
            e.flags = rd32(p + 60);
            const char *s = reinterpret_cast<const char *>(p + 64);
            e.path.assign(s, strnlen(s, body - 64 - 24));
            return true;
        }
        case PERF_RECORD_COMM:
            if (body < 8 + 24 || !trailer(r, e)) {
                return false;
            }
            e.pid = rd32(p);
            e.tid = rd32(p + 4);
            return true;
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
            if (body < 24 + 24 || !trailer(r, e)) {
                return false;
            }
            e.pid = rd32(p);
            e.ppid = rd32(p + 4);
            e.tid = rd32(p + 8);
            e.time = rd64(p + 16);
            return true;
        case PERF_RECORD_LOST:
            if (body < 16) {
                return false;
            }
            e.lost = rd64(p + 8);
            trailer(r, e);
            return true;
        case PERF_RECORD_THROTTLE:
            trailer(r, e);
            return true;
        default:
            return false;
        }
    }

    int fd_, cpu_;
    uint8_t *base_;
    size_t size_;
};

// The record file's chunks, written in the order the events happened
class PerfWriter {
public:
    explicit PerfWriter(int fd) : fd_(fd) {}

    void chunk(uint32_t type, const void *p, size_t n)
    {
        std::vector<uint8_t> c(LWPPROF_CHUNK_HEADER + (n + 7) / 8 * 8);
        uint32_t h[2] = {type, uint32_t(n)};
        memcpy(c.data(), h, sizeof(h));
        memcpy(c.data() + LWPPROF_CHUNK_HEADER, p, n);
        if (write(fd_, c.data(), c.size()) != ssize_t(c.size())) {
            ok_ = false;
        }
    }
    void text(uint32_t type, const std::string &s)
    {
        chunk(type, s.data(), s.size());
    }
    bool ok() const { return ok_; }

private:
    int fd_;
    bool ok_ = true;
};

struct PerfProc {
    uint32_t ppid = 0;
    uint32_t seq = 0, live = 0;     // threads started, threads running
    uint64_t records = 0;           // samples of the process
    bool exec_pending = false;      // exec'd, its program not named yet
    std::string exe;
};

// What perf_chunks() knows of the recording so far
struct PerfState {
    std::map<uint32_t, PerfProc> procs;
    std::map<uint32_t, uint32_t> seq_of, pid_of;      // by tid
    std::map<uint32_t, uint64_t> records_of;          // by tid
    std::vector<uint8_t> batch;     // RECORDS of one thread, being built
    uint32_t batch_tid = 0;
    uint64_t samples = 0, lost = 0, throttled = 0;
    bool main_exec = false, started = false;
    std::set<std::string> files;    // the files mapped
};

// Turn @n events, in time order and after those of the calls before,
// into chunks; @last: the recording's end
void perf_chunks(PerfWriter &w, PerfState &st, const PerfEvent *ev, size_t n,
                 uint32_t main, const std::string &exe, int id, bool last)
{
    auto &procs = st.procs;
    auto &seq_of = st.seq_of;
    auto &pid_of = st.pid_of;
    auto &records_of = st.records_of;
    auto &batch = st.batch;
    auto &batch_tid = st.batch_tid;
    auto &main_exec = st.main_exec;
    auto &files = st.files;

    auto flush = [&]() {
        if (batch.size() > 8) {
            uint32_t n = uint32_t((batch.size() - 8) / LWP_EVENT_RECORD_SIZE);
            memcpy(batch.data(), &batch_tid, 4);
            memcpy(batch.data() + 4, &n, 4);
            w.chunk(LWPPROF_RECORDS, batch.data(), batch.size());
        }
        batch.assign(8, 0);
    };
    auto start_thread = [&](uint32_t pid, uint32_t tid) {
        flush();
        PerfProc &p = procs[pid];
        lwpprof_thread t{tid, LWPPROF_THREAD_START, ++p.seq, pid, 0, 0};
        p.live++;
        seq_of[tid] = t.seq;
        pid_of[tid] = pid;
        records_of[tid] = 0;
        w.chunk(LWPPROF_THREAD, &t, sizeof(t));
    };
    auto process = [&](uint32_t pid, uint32_t ppid, uint32_t how,
                       const std::string &path) {
        flush();
        std::vector<uint8_t> c(sizeof(lwpprof_process) + path.size());
        lwpprof_process pr{pid, ppid, how, 0};
        memcpy(c.data(), &pr, sizeof(pr));
        memcpy(c.data() + sizeof(pr), path.data(), path.size());
        w.chunk(LWPPROF_PROCESS, c.data(), c.size());
    };
    // a process that exec'd: named by the first file it maps (the
    // program: the kernel maps it after the stack, before the loader)
    auto named = [&](uint32_t pid, const std::string &path) {
        PerfProc &p = procs[pid];
        if (!p.exec_pending) {
            return;
        }
        p.exec_pending = false;
        p.exe = path;
        // the thread that exec'd ends its part in the old program: the
        // others ended before the exec, and one that was not the leader
        // took the leader's tid (de_thread) with its old one still here
        flush();
        for (auto it = pid_of.begin(); it != pid_of.end();) {
            if (it->second != pid) {
                ++it;
                continue;
            }
            lwpprof_thread t{it->first, LWPPROF_THREAD_STOP,
                             seq_of[it->first], pid, 0,
                             records_of[it->first]};
            w.chunk(LWPPROF_THREAD, &t, sizeof(t));
            it = pid_of.erase(it);
        }
        process(pid, p.ppid, LWPPROF_PROCESS_EXEC_FOLLOWED, path);
        p.seq = 0;
        p.live = 0;
        start_thread(pid, pid);
    };

    if (!st.started) {
        st.started = true;
        batch.assign(8, 0);
        procs[main].exe = exe;
        procs[main].ppid = uint32_t(getpid());
        start_thread(main, main);
    }
    struct {
        const PerfEvent *b, *e;
        const PerfEvent *begin() const { return b; }
        const PerfEvent *end() const { return e; }
    } range{ev, ev + n};
    for (const PerfEvent &e : range) {
        switch (e.type) {
        case PERF_RECORD_SAMPLE: {
            named(e.pid, procs[e.pid].exe);
            if (e.tid != batch_tid || batch.size() >= (1u << 20)) {
                flush();
                batch_tid = e.tid;
            }
            uint8_t r[LWP_EVENT_RECORD_SIZE] = {};
            uint32_t d1 = id == LWP_EVENT_ID_DME ? uint32_t(e.weight) : 0;
            uint16_t fl = id == LWP_EVENT_ID_DME && e.addr
                ? uint16_t(LWP_REC_DME_DAV >> 16) : 0;
            r[LWP_REC_EVENT_ID] = uint8_t(id);
            r[LWP_REC_CORE_ID] = uint8_t(e.cpu);
            memcpy(r + LWP_REC_FLAGS, &fl, 2);
            memcpy(r + LWP_REC_DATA1, &d1, 4);
            memcpy(r + LWP_REC_IP, &e.ip, 8);
            memcpy(r + LWP_REC_DATA2, &e.addr, 8);
            batch.insert(batch.end(), r, r + sizeof(r));
            records_of[e.tid]++;
            procs[e.pid].records++;
            st.samples++;
            break;
        }
        case PERF_RECORD_MMAP2: {
            // a file, or a special mapping ([vdso]); not anonymous memory
            // ("//anon"), which names nothing
            bool file = e.path.size() > 1 && e.path[0] == '/' &&
                        e.path[1] != '/';
            if (!file && (e.path.empty() || e.path[0] != '[')) {
                break;
            }
            if (file) {
                named(e.pid, e.path);
            }
            char line[128];
            snprintf(line, sizeof(line),
                     "%" PRIx64 "-%" PRIx64 " %c%c%c%c %08" PRIx64
                     " %02x:%02x %" PRIu64 " ", e.start, e.start + e.len,
                     e.prot & PROT_READ ? 'r' : '-',
                     e.prot & PROT_WRITE ? 'w' : '-',
                     e.prot & PROT_EXEC ? 'x' : '-',
                     e.flags & MAP_SHARED ? 's' : 'p', e.pgoff, e.maj,
                     e.min, e.ino);
            flush();
            w.text(LWPPROF_MAPS, "pid " + std::to_string(e.pid) + "\n" +
                                     line + e.path + "\n");
            if (file) {
                files.insert(e.path);
            }
            break;
        }
        case PERF_RECORD_COMM:
            if (!(e.misc & PERF_RECORD_MISC_COMM_EXEC) || e.pid != e.tid) {
                break;
            }
            if (e.pid == main && !main_exec) {
                main_exec = true;   // the exec that enabled the events
            } else {
                procs[e.pid].exec_pending = true;
            }
            break;
        case PERF_RECORD_FORK:
            if (e.pid != e.ppid) {
                // a child process: a copy of its parent, maps and all
                procs[e.pid].exe = procs[e.ppid].exe;
                procs[e.pid].ppid = e.ppid;
                process(e.pid, e.ppid, LWPPROF_PROCESS_FOLLOWED,
                        procs[e.ppid].exe);
            }
            start_thread(e.pid, e.tid);
            break;
        case PERF_RECORD_EXIT: {
            if (!pid_of.count(e.tid)) {
                break;
            }
            flush();
            PerfProc &p = procs[e.pid];
            lwpprof_thread t{e.tid, LWPPROF_THREAD_STOP, seq_of[e.tid], e.pid,
                             0, records_of[e.tid]};
            w.chunk(LWPPROF_THREAD, &t, sizeof(t));
            pid_of.erase(e.tid);
            if (p.live && --p.live == 0) {
                // the kernel drains a thread's ring before it exits: no
                // record is lost however the process ended
                lwpprof_exit x{e.tid, 0, p.records};
                w.chunk(LWPPROF_EXIT, &x, sizeof(x));
            }
            break;
        }
        case PERF_RECORD_LOST:
            st.lost += e.lost;
            break;
        case PERF_RECORD_THROTTLE:
            st.throttled++;
            break;
        }
    }
    flush();
    if (!last) {
        return;
    }
    if (st.lost) {
        w.text(LWPPROF_NOTE, "perf-lost: perf's ring lost " +
                                 std::to_string(st.lost) +
                                 " records (a larger --ring-kb keeps them)");
    }
    if (st.throttled) {
        w.text(LWPPROF_NOTE, "perf-throttled: the kernel throttled the "
                             "event " + std::to_string(st.throttled) +
                             " times (kernel.perf_event_max_sample_rate)");
    }
}

// record --perf: returns the program's exit status as record does
int record_perf(const RecordOpts &o, const std::string &prog, int id,
                unsigned long interval, const std::string &out)
{
    int type = lwp_pmu_type();
    if (type < 0) {
        die(125, "--perf: this kernel has no lwp perf PMU (%s)", kLwpPmu);
    }
    std::string evfile = std::string(kLwpPmu) + "/events/" + kEventNames[id];
    if (access(evfile.c_str(), F_OK) != 0) {
        die(2, "record: --perf: the lwp PMU has no event %s (this CPU's LWP "
            "lacks it)", kEventNames[id]);
    }
    bool dme = id == LWP_EVENT_ID_DME;
    int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        die(125, "%s: %s", out.c_str(), strerror(errno));
    }
    write_header(fd, out);

    int go[2];
    if (pipe2(go, O_CLOEXEC) != 0) {
        die(125, "pipe: %s", strerror(errno));
    }
    std::vector<char *> cargs;
    for (auto &s : o.argv) {
        cargs.push_back(const_cast<char *>(s.c_str()));
    }
    cargs.push_back(nullptr);
    job_signals(true);
    pid_t pid = fork();
    if (pid < 0) {
        die(125, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        char c;
        close(go[1]);
        job_signals(false);
        if (!o.aslr) {
            no_aslr();
        }
        // the events are open when lwp-prof writes a byte
        if (read(go[0], &c, 1) != 1) {
            _exit(125);
        }
        execv(prog.c_str(), cargs.data());
        fprintf(stderr, "lwp-prof: %s: %s\n", prog.c_str(), strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    close(go[0]);
    g_child = pid;

    perf_event_attr attr {};
    attr.size = sizeof(attr);
    attr.type = uint32_t(type);
    attr.config = uint64_t(id);
    attr.sample_period = interval + 1;   // the lwp PMU: interval + 1
    attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                       PERF_SAMPLE_CPU |
                       (dme ? PERF_SAMPLE_ADDR | PERF_SAMPLE_WEIGHT : 0);
    attr.disabled = 1;
    attr.inherit = 1;
    attr.enable_on_exec = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.mmap = 1;
    attr.mmap2 = 1;
    attr.mmap_data = 1;
    attr.comm = 1;
    attr.comm_exec = 1;
    attr.task = 1;
    attr.sample_id_all = 1;
    attr.watermark = 1;
    // one clock for all CPUs' rings, which are merged by time
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = 1;
    while (pages * size_t(page) < size_t(o.ring_kb) * 1024) {
        pages *= 2;
    }
    std::vector<PerfRing> rings;
    std::string why;
    for (int cpu : online_cpus()) {
        // an unprivileged user has perf_event_mlock_kb (516 KiB) for all
        // CPUs: a smaller ring then, its event opened again with a wakeup
        // watermark that fits it
        size_t n = pages;
        void *base = MAP_FAILED;
        int efd = -1;
        while (base == MAP_FAILED && n >= 1) {
            attr.wakeup_watermark = uint32_t(n * size_t(page) / 2);
            efd = int(syscall(SYS_perf_event_open, &attr, pid, cpu, -1,
                              PERF_FLAG_FD_CLOEXEC));
            if (efd < 0) {
                why = "perf_event_open(lwp/" +
                      std::string(kEventNames[id]) + "/u) on CPU " +
                      std::to_string(cpu) + ": " + strerror(errno);
                break;
            }
            base = mmap(nullptr, (n + 1) * size_t(page),
                        PROT_READ | PROT_WRITE, MAP_SHARED, efd, 0);
            if (base == MAP_FAILED) {
                int err = errno;
                close(efd);
                if (err != EPERM && err != ENOMEM) {
                    n = 0;
                }
                why = std::string("mmap of the perf ring: ") + strerror(err);
                n /= 2;
            }
        }
        if (base == MAP_FAILED) {
            break;
        }
        why.clear();
        pages = n;
        rings.emplace_back(efd, cpu, base, (n + 1) * size_t(page));
    }
    if (!why.empty() || rings.empty()) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        unlink(out.c_str());
        die(125, "--perf: %s", why.empty() ? "no CPU online" : why.c_str());
    }
    char info[1024];
    snprintf(info, sizeof(info),
             "cpu=native\nsource=perf\npid=%d\nexe=%s\nflags=0x%x\n"
             "interval.%s=%lu\nperf_ring_bytes=%zu\n", int(pid), prog.c_str(),
             1u << id, kEventNames[id], interval, pages * size_t(page));
    PerfWriter w(fd);
    w.text(LWPPROF_INFO, info);
    if (!w.ok()) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        die(125, "%s: write failed", out.c_str());
    }
    if (!o.quiet) {
        fprintf(stderr, "lwp-prof: recording %s (%s:%lu, native, the "
                "kernel's lwp perf PMU) into %s\n", o.argv[0].c_str(),
                kEventNames[id], interval, o.output.c_str());
    }
    // (the program may be gone already, killed by a forwarded signal)
    struct sigaction ign {}, old;
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old);
    if (write(go[1], "g", 1) != 1) {
        // gone: waitpid says how
    }
    sigaction(SIGPIPE, &old, nullptr);
    close(go[1]);

    // The records drained and not yet written, in time order.  perf
    // takes a record's time and writes it with preemption off: once a
    // drain has begun, a record older than a second before it is in a
    // ring already, and goes to the file with all before it.
    std::vector<PerfEvent> ev;
    PerfState st;
    uint64_t seq = 0;
    int status = 0;
    bool any = false;
    auto by_time = [](const PerfEvent &a, const PerfEvent &b) {
        return a.time != b.time ? a.time < b.time : a.seq < b.seq;
    };
    std::vector<pollfd> pfd;
    for (auto &r : rings) {
        pfd.push_back({r.fd(), POLLIN, 0});
    }
    for (;;) {
        struct timespec now;
        poll(pfd.data(), pfd.size(), 100);
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t ns = uint64_t(now.tv_sec) * 1000000000 +
                      uint64_t(now.tv_nsec);
        uint64_t mark = ns > 1000000000 ? ns - 1000000000 : 0;
        for (auto &r : rings) {
            r.drain(dme, ev, seq);
        }
        any |= !ev.empty();
        std::stable_sort(ev.begin(), ev.end(), by_time);
        size_t k = size_t(std::partition_point(
            ev.begin(), ev.end(),
            [mark](const PerfEvent &e) { return e.time < mark; }) -
            ev.begin());
        if (k) {
            perf_chunks(w, st, ev.data(), k, uint32_t(pid), prog, id, false);
            ev.erase(ev.begin(), ev.begin() + ptrdiff_t(k));
        }
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            break;
        }
        if (r < 0 && errno != EINTR) {
            die(125, "waitpid: %s", strerror(errno));
        }
    }
    g_child = 0;
    // what its last threads wrote, and the exits of any that outlived it
    for (auto &r : rings) {
        r.drain(dme, ev, seq);
        r.close_ring();
    }
    any |= !ev.empty();
    std::stable_sort(ev.begin(), ev.end(), by_time);
    int rc;
    lwpprof_end end = end_of(status, &rc);
    if (!any) {
        // enable_on_exec never fired: the program did not run (its exec
        // failed, with its message above, or a signal ended it first)
        close(fd);
        unlink(out.c_str());
        if (!o.quiet) {
            fprintf(stderr, "lwp-prof: %s did not start: nothing "
                    "recorded\n", o.argv[0].c_str());
        }
        return rc;
    }
    perf_chunks(w, st, ev.data(), ev.size(), uint32_t(pid), prog, id, true);
    uint64_t samples = st.samples;
    std::string objects;
    for (const auto &f : st.files) {
        struct stat st;
        if (stat(f.c_str(), &st) == 0) {
            char line[64];
            snprintf(line, sizeof(line), "\t%lld\t%lld.%09ld\n",
                     (long long)st.st_size, (long long)st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec);
            objects += f + "\t" + file_build_id(f) + line;
        }
    }
    if (!objects.empty()) {
        w.text(LWPPROF_OBJECTS, objects);
    }
    w.chunk(LWPPROF_END, &end, sizeof(end));
    if (!w.ok() || close(fd) != 0) {
        die(125, "%s: write failed", out.c_str());
    }
    if (!o.quiet) {
        fprintf(stderr, "lwp-prof: %s %s %d; %" PRIu64 " samples in %s\n",
                o.argv[0].c_str(), WIFEXITED(status) ? "exited with status"
                                                     : "was killed by signal",
                end.code, samples, o.output.c_str());
    }
    return rc;
}

int cmd_record(int argc, char **argv)
{
    RecordOpts o;
    Args in("record", argc, argv);
    while (in.more()) {
        std::string a = in.next();
        if (a == "--") {
            break;
        } else if (a == "-o" || a == "--output") {
            o.output = in.value("-o");
        } else if (a == "-e" || a == "--events") {
            o.events = in.value("-e");
        } else if (a == "--ring-kb") {
            unsigned long n = in.number("--ring-kb");
            if (n < 4 || n > 65536) {
                die(2, "record: --ring-kb is 4..65536");
            }
            o.ring_kb = unsigned(n);
        } else if (a == "--qemu") {
            o.qemu = in.value("--qemu");
            o.force_qemu = true;
        } else if (a == "--cpu") {
            o.cpu = in.value("--cpu");
            o.force_qemu = true;
            o.cpu_given = true;
        } else if (a == "--qemu-arg") {
            o.qemu_args.push_back(in.value("--qemu-arg"));
            o.force_qemu = true;
        } else if (a == "--native") {
            o.native = true;
        } else if (a == "--perf") {
            o.perf = true;
        } else if (a == "--no-follow-exec") {
            o.follow_exec = false;
        } else if (a == "-g" || a == "--call-graph") {
            o.stacks = true;
        } else if (a == "--aslr") {
            o.aslr = true;
        } else if (a == "--preload") {
            o.preload = in.value("--preload");
            o.preload_given = true;
        } else if (a == "-q" || a == "--quiet") {
            o.quiet = true;
        } else if (a == "-h" || a == "--help") {
            fputs(kUsage, stdout);
            return 0;
        } else if (a[0] == '-') {
            in.unknown(a);
        } else {
            in.back();
            break;
        }
    }
    while (in.more()) {
        o.argv.push_back(in.next());
    }
    if (o.output.empty()) {
        die(2, "record: -o FILE is required (lwp-prof --help)");
    }
    if (o.argv.empty()) {
        die(2, "record: no program to run (lwp-prof record -o FILE -- "
            "PROGRAM ARGS...)");
    }
    std::map<int, unsigned long> asked;
    std::string bad = check_events(o.events, &asked);
    if (!bad.empty()) {
        die(2, "record: -e %s: %s", o.events.c_str(), bad.c_str());
    }
    // the clocks charge cache misses and mispredicts (choice 70)
    if (!o.cpu_given && (asked.count(LWP_EVENT_ID_CNH) ||
                         asked.count(LWP_EVENT_ID_RNH))) {
        o.cpu = "max,+lwp,cost-model=detailed";
    }
    if (o.native && o.force_qemu) {
        die(2, "record: --native runs without qemu: not with --qemu, --cpu "
            "or --qemu-arg");
    }
    if (o.perf && (o.force_qemu || o.native || o.stacks || o.preload_given ||
                   !o.follow_exec)) {
        die(2, "record: --perf runs the program directly and follows what "
            "it runs, without call stacks: not with --qemu, --cpu, "
            "--qemu-arg, --native, --preload, --no-follow-exec or -g");
    }
    if (o.perf && asked.size() != 1) {
        die(2, "record: --perf: the lwp PMU samples one event per thread "
            "(-e EVENT:INTERVAL)");
    }

    std::string prog = search_path(o.argv[0]);
    if (prog.empty() || access(prog.c_str(), F_OK) != 0) {
        die(127, "%s: program not found", o.argv[0].c_str());
    }
    if (!is_exec(prog)) {
        die(126, "%s: not an executable file", prog.c_str());
    }
    if (script_interpreter(prog, o.argv)) {
        prog = o.argv[0];
    }
    check_program(prog, !o.perf);
    if (o.perf) {
        int id = asked.begin()->first;
        unsigned long iv = asked.begin()->second;
        if (iv < 1 && id != LWP_EVENT_ID_VAL) {
            die(2, "record: --perf: interval 0 (the lwp PMU's period is the "
                "interval plus one, at least 2)");
        }
        return record_perf(o, prog, id, iv, absolute(o.output));
    }

    std::string preload = o.preload;
    if (preload.empty()) {
        const char *p = getenv("LWP_PROF_PRELOAD");
        preload = p ? p : exe_dir() + "/lwp-prof-preload.so";
    }
    preload = absolute(preload);
    if (access(preload.c_str(), R_OK) != 0) {
        die(125, "%s: the preload library is missing (--preload PATH)",
            preload.c_str());
    }
    bool native = o.native || (!o.force_qemu && host_has_lwp());
    std::string qemu;
    if (!native) {
        qemu = find_qemu(o);
        if (!o.qemu.empty() && !is_exec(qemu)) {
            die(125, "--qemu %s: %s", qemu.c_str(),
                access(qemu.c_str(), F_OK) ? strerror(errno)
                                           : "not an executable file");
        }
        if (qemu.empty() || !is_exec(qemu)) {
            die(125, "no qemu-x86_64 found: this CPU has no LWP; give "
                "--qemu PATH to qemu-lwp's build/qemu-x86_64");
        }
        if (preload.find(',') != std::string::npos) {
            die(125, "%s: qemu's -E cannot pass a path with a comma",
                preload.c_str());
        }
    }

    std::string out = absolute(o.output);
    int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        die(125, "%s: %s", out.c_str(), strerror(errno));
    }
    write_header(fd, out);
    // an INFO chunk of the recorder's own: what the clocks counted
    std::string info = "cpu=" + (native ? std::string("native") : o.cpu) +
                       "\n";
    std::vector<uint8_t> chunk(LWPPROF_CHUNK_HEADER + (info.size() + 7) / 8 * 8);
    uint32_t type = LWPPROF_INFO, size = uint32_t(info.size());
    memcpy(chunk.data(), &type, 4);
    memcpy(chunk.data() + 4, &size, 4);
    memcpy(chunk.data() + LWPPROF_CHUNK_HEADER, info.data(), info.size());
    if (write(fd, chunk.data(), chunk.size()) != ssize_t(chunk.size())) {
        die(125, "%s: write failed", out.c_str());
    }
    close(fd);

    std::string ld = preload;
    if (const char *old = getenv("LD_PRELOAD")) {
        if (*old) {
            ld += std::string(":") + old;
        }
    }
    std::vector<std::string> args;
    bool arena = false;
    if (!native) {
        args = {qemu, "-cpu", o.cpu, "-E", "LD_PRELOAD=" + ld};
        // Without ASLR, qemu-x86_64 still places the program's stack
        // where its own mappings leave room, and a glibc arena of one of
        // its threads comes before or after it: with one arena (not the
        // program's, -U) the program's addresses repeat
        if (!o.aslr && !getenv("MALLOC_ARENA_MAX")) {
            arena = true;
            args.insert(args.end(), {"-U", "MALLOC_ARENA_MAX"});
        }
        args.insert(args.end(), o.qemu_args.begin(), o.qemu_args.end());
        args.push_back(prog);
    } else {
        args = {prog};
    }
    args.insert(args.end(), o.argv.begin() + 1, o.argv.end());
    std::vector<char *> cargs;
    for (auto &s : args) {
        cargs.push_back(const_cast<char *>(s.c_str()));
    }
    cargs.push_back(nullptr);

    job_signals(true);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        die(125, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setenv("LWP_PROF_OUT", out.c_str(), 1);
        setenv("LWP_PROF_PROCESSES", out.c_str(), 1);
        setenv("LWP_PROF_EVENTS", o.events.c_str(), 1);
        setenv("LWP_PROF_RING_KB", std::to_string(o.ring_kb).c_str(), 1);
        setenv("LWP_PROF_THRESHOLD_KB", std::to_string(o.ring_kb / 2).c_str(),
               1);
        if (native) {
            setenv("LD_PRELOAD", ld.c_str(), 1);
        } else {
            // a program the profiled one execs runs natively: the preload
            // library in it runs it again under this qemu (run_with_lwp)
            std::string cmd;
            for (size_t i = 0; i + 1 < args.size() && args[i] != "-E"; i++) {
                cmd += (i ? args[i] : absolute(args[i])) + "\n";
            }
            if (arena) {
                cmd += "-U\nMALLOC_ARENA_MAX\n";
                setenv("MALLOC_ARENA_MAX", "1", 1);  // qemu's, not the guest's
                setenv("LWP_PROF_QEMU_ENV", "MALLOC_ARENA_MAX=1", 1);
            }
            for (const auto &q : o.qemu_args) {
                cmd += q + "\n";
            }
            setenv("LWP_PROF_QEMU_CMD", cmd.c_str(), 1);
        }
        if (!o.follow_exec) {
            setenv("LWP_PROF_NO_FOLLOW_EXEC", "1", 1);
        }
        // the program's recorder makes it 1 for what the program execs
        setenv("LWP_PROF_EXECED", "0", 1);
        if (o.stacks) {
            setenv("LWP_PROF_STACKS", "1", 1);
        }
        if (!o.aslr) {
            no_aslr();
        }
        if (o.quiet) {
            setenv("LWP_PROF_QUIET", "1", 1);
        }
        job_signals(false);
        execv(cargs[0], cargs.data());
        fprintf(stderr, "lwp-prof: %s: %s\n", cargs[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    g_child = pid;
    if (!o.quiet) {
        fprintf(stderr, "lwp-prof: recording %s (%s%s) into %s\n",
                o.argv[0].c_str(), o.events.c_str(),
                native ? ", native" : (", " + qemu + " -cpu " + o.cpu).c_str(),
                o.output.c_str());
    }
    bool tty = isatty(2);
    int status = 0;
    double last = 0;
    RecordCounter counter;
    for (;;) {
        // the records of a program that ended are not "so far"
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, nullptr);
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            break;
        }
        if (r < 0 && errno != EINTR) {
            die(125, "waitpid: %s", strerror(errno));
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        double el = double(now.tv_sec - t0.tv_sec) +
                    double(now.tv_nsec - t0.tv_nsec) / 1e9;
        if (!o.quiet && el - last >= (tty ? 0.5 : 10.0)) {
            last = el;
            fprintf(stderr, "%slwp-prof: %.0f s, %" PRIu64 " records so far%s",
                    tty ? "\r" : "", el, counter.count(out),
                    tty ? "" : "\n");
        }
    }
    if (tty && !o.quiet && last > 0) {
        fputc('\n', stderr);
    }
    g_child = 0;

    // Check what the program's side wrote, then close the file with END
    std::vector<uint8_t> d;
    std::string err;
    size_t good = 0;
    if (!read_file(out, d, err)) {
        die(125, "%s", err.c_str());
    }
    Profile prof;
    if (!walk(d, &prof, &good, err)) {
        fprintf(stderr, "lwp-prof: %s: %s; cut at byte %zu\n", out.c_str(),
                err.c_str(), good);
        if (truncate(out.c_str(), off_t(good)) != 0) {
            die(125, "%s: %s", out.c_str(), strerror(errno));
        }
    }
    int rc;
    lwpprof_end end = end_of(status, &rc);
    uint32_t ch[2] = {LWPPROF_END, sizeof(end)};
    fd = open(out.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0 || write(fd, ch, sizeof(ch)) != sizeof(ch) ||
        write(fd, &end, sizeof(end)) != sizeof(end) || close(fd) != 0) {
        die(125, "%s: cannot finish the file", out.c_str());
    }
    if (prof.info.empty()) {
        die(125, "%s: the recorder did not start in %s (see the messages "
            "above)", out.c_str(), o.argv[0].c_str());
    }
    if (!o.quiet) {
        uint64_t missed = 0;
        for (auto &t : prof.threads) {
            missed += t.second.missed;
        }
        std::string how = WIFEXITED(status)
            ? "exited with status " + std::to_string(end.code)
            : "was killed by signal " + std::to_string(end.code);
        Unprofiled u = unprofiled(prof);
        size_t nproc = process_count(prof);
        fprintf(stderr, "lwp-prof: %s %s; %s from %s%s, %" PRIu64 " missed, "
                "in %s\n", o.argv[0].c_str(), how.c_str(),
                plural(prof.records.size(), "record").c_str(),
                plural(thread_count(prof), "thread").c_str(),
                nproc > 1 ? (" in " + plural(nproc, "process", "processes"))
                                .c_str() : "",
                missed, o.output.c_str());
        std::map<int, unsigned long> asked;
        check_events(o.events, &asked);
        for (const auto &a : asked) {
            auto it = prof.info.find(std::string("interval.") +
                                     kEventNames[a.first]);
            unsigned long used = it == prof.info.end()
                ? a.second : strtoul(it->second.c_str(), nullptr, 10);
            if (used != a.second) {
                fprintf(stderr, "lwp-prof: %s:%lu: LWP uses interval %lu, "
                        "its minimum: a record per %lu events\n",
                        kEventNames[a.first], a.second, used, used + 1);
            }
        }
        if (prof.images.size() > 1) {
            fprintf(stderr, "lwp-prof: %s profiled (the report lists them)"
                    "\n", plural(prof.images.size(), "program").c_str());
        }
        if (u.count) {
            fprintf(stderr, "lwp-prof: %s the program started %s not "
                    "profiled:", plural(u.count, "process", "processes")
                                     .c_str(), u.count == 1 ? "was" : "were");
            const char *sep = " ";
            for (const auto &n : u.by_name) {
                fprintf(stderr, "%s%s %zu", sep, n.first.c_str(), n.second);
                sep = ", ";
            }
            fputc('\n', stderr);
        }
        if (!u.main_exec.empty()) {
            fprintf(stderr, "lwp-prof: the program exec'd %s, which ran "
                    "unprofiled (%s): the records end there\n",
                    u.main_exec.c_str(), u.main_why.c_str());
        } else if (!exited(prof, image_of(&prof, main_pid(prof)))) {
            fprintf(stderr, "lwp-prof: the program did not run exit(): "
                    "records since each thread's last drain are lost\n");
        }
    }
    return rc;
}

// ---------------------------------------------------------------- symbols

struct SymInfo {
    std::string func;       // demangled, or "[unknown]"
    std::string module;     // basename of the mapped file, or "[anon]"
    uint64_t func_start = 0, func_size = 0;
    uint64_t func_vaddr = 0;    // func_start in its file
    bool has_sym = false;
    std::string file;       // source file of the address, "" if none
    int line = 0;
    Dwfl_Module *mod = nullptr;
};

std::string demangle(const char *name)
{
    int st = 0;
    char *d = abi::__cxa_demangle(name, nullptr, nullptr, &st);
    if (st == 0 && d) {
        std::string r(d);
        free(d);
        return r;
    }
    return name;
}

// Where the report finds the program's files: --symfs DIR (the file
// /path as DIR/path, when there), --debug-dir DIR (separate debug info)
struct SymOpts {
    std::string symfs;
    std::vector<std::string> debug_dirs;
};

// The GNU build-id of an ELF file in hex, "" when it has none
std::string file_build_id(const std::string &path)
{
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return "";
    }
    std::string r;
    Elf *e = elf_begin(fd, ELF_C_READ, nullptr);
    const void *id = nullptr;
    ssize_t n = e ? dwelf_elf_gnu_build_id(e, &id) : -1;
    for (ssize_t i = 0; i < n; i++) {
        char b[3];
        snprintf(b, sizeof(b), "%02x", static_cast<const uint8_t *>(id)[i]);
        r += b;
    }
    if (e) {
        elf_end(e);
    }
    close(fd);
    return r;
}

// The symbols of one address space (the files an image mapped)
class SpaceSymbols {
public:
    // Each loaded object the recording saw is checked against its file
    // now: one that is gone or was rebuilt (another build-id) is not used,
    // and one without a build-id whose size or mtime changed is used with
    // a warning (*warnings)
    SpaceSymbols(const std::vector<MapEntry> &maps, const Profile &prof,
                 const SymOpts &opts, std::vector<std::string> *warnings)
        : maps_(maps)
    {
        debuginfo_path_ = ":.debug:/usr/lib/debug";
        for (const auto &d : opts.debug_dirs) {
            debuginfo_path_ += ":" + d;
        }
        debuginfo_ = &debuginfo_path_[0];
        cb_.find_elf = dwfl_build_id_find_elf;
        cb_.find_debuginfo = dwfl_standard_find_debuginfo;
        cb_.section_address = dwfl_offline_section_address;
        cb_.debuginfo_path = &debuginfo_;
        dwfl_ = dwfl_begin(&cb_);
        elf_version(EV_CURRENT);
        dwfl_report_begin(dwfl_);
        std::set<std::string> done;
        for (const auto &m : maps_) {
            if (m.path.empty() || m.path[0] != '/' || done.count(m.path)) {
                continue;
            }
            done.insert(m.path);
            std::string file = m.path;
            if (!opts.symfs.empty() && is_file(opts.symfs + m.path)) {
                file = opts.symfs + m.path;
            }
            auto obj = prof.objects.find(m.path);
            if (obj != prof.objects.end() &&
                !still_there(m.path, file, obj->second, warnings)) {
                continue;
            }
            uint64_t bias;
            if (bias_of(file, m.path, &bias)) {
                dwfl_report_elf(dwfl_, m.path.c_str(), file.c_str(), -1,
                                bias, true);
            }
        }
        dwfl_report_end(dwfl_, nullptr, nullptr);
    }
    ~SpaceSymbols() { dwfl_end(dwfl_); }
    SpaceSymbols(const SpaceSymbols &) = delete;
    SpaceSymbols &operator=(const SpaceSymbols &) = delete;

    const SymInfo &lookup(uint64_t ip)
    {
        auto it = cache_.find(ip);
        if (it != cache_.end()) {
            return it->second;
        }
        SymInfo si;
        Dwfl_Module *mod = dwfl_addrmodule(dwfl_, ip);
        if (mod) {
            si.mod = mod;
            const char *mname = dwfl_module_info(mod, nullptr, nullptr,
                                                 nullptr, nullptr, nullptr,
                                                 nullptr, nullptr);
            si.module = basename_of(mname ? mname : "?");
            GElf_Off off;
            GElf_Sym sym;
            const char *name = dwfl_module_addrinfo(mod, ip, &off, &sym,
                                                    nullptr, nullptr, nullptr);
            if (plt_entry(mod, ip, si)) {
                // a PLT stub, named as objdump names it
            } else if (name && (sym.st_size == 0 || off < sym.st_size)) {
                // without the symbol version (memcpy@@GLIBC_2.14)
                std::string n = name;
                si.func = demangle(n.substr(0, n.find('@')).c_str());
                si.func_start = ip - off;
                si.func_size = sym.st_size;
                si.has_sym = true;
            } else {
                // A stripped file: functions start where .eh_frame_hdr's
                // sorted table of FDEs says
                uint64_t lo, hi;
                if (fde_range(mod, ip, &lo, &hi)) {
                    Dwarf_Addr mstart = 0;
                    dwfl_module_info(mod, nullptr, &mstart, nullptr, nullptr,
                                     nullptr, nullptr, nullptr);
                    char b[64];
                    snprintf(b, sizeof(b), "[%s+0x%" PRIx64 "]",
                             si.module.c_str(), lo - mstart);
                    si.func = b;
                    si.func_start = lo;
                    si.func_size = hi - lo;
                    si.has_sym = true;
                }
            }
            if (Dwfl_Line *l = dwfl_module_getsrc(mod, ip)) {
                int line = 0;
                const char *f = dwfl_lineinfo(l, nullptr, &line, nullptr,
                                              nullptr, nullptr);
                if (f) {
                    si.file = f;
                    si.line = line;
                }
            }
        } else {
            si.module = module_of(ip);
        }
        if (!si.has_sym) {
            si.func = "[unknown]";
        } else {
            GElf_Addr bias = 0;
            dwfl_module_getelf(si.mod, &bias);
            si.func_vaddr = si.func_start - bias;
        }
        return cache_.emplace(ip, si).first->second;
    }

    // The bytes of [addr, addr+size) from the module's ELF file
    bool code(Dwfl_Module *mod, uint64_t addr, uint64_t size,
              std::vector<uint8_t> &out, uint64_t *biasp)
    {
        GElf_Addr bias = 0;
        Elf *e = dwfl_module_getelf(mod, &bias);
        if (!e) {
            return false;
        }
        *biasp = bias;
        uint64_t a = (addr & kAddrMask) - bias;
        Elf_Scn *scn = nullptr;
        while ((scn = elf_nextscn(e, scn))) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
                a < sh.sh_addr || a + size > sh.sh_addr + sh.sh_size) {
                continue;
            }
            Elf_Data *data = elf_getdata(scn, nullptr);
            if (!data || !data->d_buf || data->d_size < sh.sh_size) {
                return false;
            }
            const uint8_t *p = static_cast<const uint8_t *>(data->d_buf);
            out.assign(p + (a - sh.sh_addr), p + (a - sh.sh_addr) + size);
            return true;
        }
        return false;
    }

private:
    // A PLT entry (.plt, .plt.sec) as objdump names it: the symbol of its
    // R_X86_64_JUMP_SLOT relocation in .rela.plt, "@plt"; "*ABS*+0xADDR@plt"
    // for an IRELATIVE one.  In .plt, entry 0 is the lazy resolver's
    // (".plt", which objdump names after the next stub) and entry k the
    // stub of relocation k-1; in .plt.sec,
    // entry k is relocation k's.
    bool plt_entry(Dwfl_Module *mod, uint64_t ip, SymInfo &si)
    {
        GElf_Addr bias = 0;
        Elf *e = dwfl_module_getelf(mod, &bias);
        size_t shstr;
        if (!e || elf_getshdrstrndx(e, &shstr) != 0) {
            return false;
        }
        uint64_t a = ip - bias, start = 0, entsize = 16;
        bool sec = false, found = false;
        Elf_Scn *scn = nullptr, *rela = nullptr;
        GElf_Shdr rsh{};
        while ((scn = elf_nextscn(e, scn))) {
            GElf_Shdr sh;
            const char *name;
            if (!gelf_getshdr(scn, &sh) ||
                !(name = elf_strptr(e, shstr, sh.sh_name))) {
                continue;
            }
            if (!strcmp(name, ".rela.plt")) {
                rela = scn;
                rsh = sh;
            } else if ((!strcmp(name, ".plt") || !strcmp(name, ".plt.sec")) &&
                       a >= sh.sh_addr && a < sh.sh_addr + sh.sh_size) {
                start = sh.sh_addr;
                entsize = sh.sh_entsize ? sh.sh_entsize : 16;
                sec = !strcmp(name, ".plt.sec");
                found = true;
            }
        }
        if (!found) {
            return false;
        }
        uint64_t k = (a - start) / entsize;
        si.func_start = start + k * entsize + bias;
        si.func_size = entsize;
        si.has_sym = true;
        if (!sec && k == 0) {
            si.func = ".plt";
            return true;
        }
        uint64_t r = sec ? k : k - 1;
        Elf_Data *rd = rela ? elf_getdata(rela, nullptr) : nullptr;
        GElf_Rela rel;
        if (!rd || !gelf_getrela(rd, int(r), &rel)) {
            si.func = ".plt";
            return true;
        }
        char b[64];
        size_t symi = GELF_R_SYM(rel.r_info);
        Elf_Scn *dyn = elf_getscn(e, rsh.sh_link);
        GElf_Shdr dsh;
        Elf_Data *dd = dyn ? elf_getdata(dyn, nullptr) : nullptr;
        GElf_Sym sym;
        const char *n = nullptr;
        if (symi && dd && gelf_getshdr(dyn, &dsh) && gelf_getsym(dd, int(symi), &sym)) {
            n = elf_strptr(e, dsh.sh_link, sym.st_name);
        }
        if (n && *n) {
            si.func = demangle(n) + "@plt";
        } else {
            snprintf(b, sizeof(b), "*ABS*+0x%" PRIx64 "@plt",
                     uint64_t(rel.r_addend));
            si.func = b;
        }
        return true;
    }

    // The FDE start addresses of a module, from the binary search table
    // of .eh_frame_hdr (LSB 10.6.2) that the linker writes even into
    // stripped files: udata4 count and datarel sdata4 pairs, what GNU ld
    // and lld emit.  Module addresses, sorted.
    const std::vector<uint64_t> &fde_starts(Dwfl_Module *mod)
    {
        auto it = fdes_.find(mod);
        if (it != fdes_.end()) {
            return it->second;
        }
        std::vector<uint64_t> v;
        GElf_Addr bias = 0;
        Elf *e = dwfl_module_getelf(mod, &bias);
        size_t shstr;
        Elf_Scn *scn = nullptr;
        if (e && elf_getshdrstrndx(e, &shstr) == 0) {
            while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr sh;
                const char *name;
                if (!gelf_getshdr(scn, &sh) ||
                    !(name = elf_strptr(e, shstr, sh.sh_name)) ||
                    strcmp(name, ".eh_frame_hdr") != 0) {
                    continue;
                }
                Elf_Data *d = elf_getdata(scn, nullptr);
                if (!d || !d->d_buf || d->d_size < 12) {
                    break;
                }
                const uint8_t *p = static_cast<const uint8_t *>(d->d_buf);
                if (p[0] != 1 || p[1] != 0x1b || p[2] != 0x03 ||
                    p[3] != 0x3b) {
                    break;
                }
                uint32_t n = rd32(p + 8);
                if (12 + uint64_t(n) * 8 > d->d_size) {
                    break;
                }
                for (uint32_t k = 0; k < n; k++) {
                    int32_t rel;
                    memcpy(&rel, p + 12 + k * 8, 4);
                    v.push_back(sh.sh_addr + int64_t(rel) + bias);
                }
                std::sort(v.begin(), v.end());
                break;
            }
        }
        return fdes_.emplace(mod, std::move(v)).first->second;
    }

    bool fde_range(Dwfl_Module *mod, uint64_t ip, uint64_t *lo, uint64_t *hi)
    {
        const std::vector<uint64_t> &v = fde_starts(mod);
        auto it = std::upper_bound(v.begin(), v.end(), ip);
        if (it == v.begin()) {
            return false;
        }
        *lo = *(it - 1);
        if (it != v.end()) {
            *hi = *it;
        } else {
            Dwarf_Addr mend = 0;
            dwfl_module_info(mod, nullptr, nullptr, &mend, nullptr, nullptr,
                             nullptr, nullptr);
            *hi = mend;
        }
        return true;
    }

    std::string module_of(uint64_t ip) const
    {
        for (const auto &m : maps_) {
            if (ip >= m.start && ip < m.end) {
                return m.path.empty() ? "[anon]" : basename_of(m.path);
            }
        }
        return "[unmapped]";
    }

    static bool is_file(const std::string &p)
    {
        struct stat st;
        return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    }

    // Whether @file is the object @path that the recording loaded
    static bool still_there(const std::string &path, const std::string &file,
                            const ObjectId &id,
                            std::vector<std::string> *warnings)
    {
        struct stat st;
        if (stat(file.c_str(), &st) != 0) {
            warnings->push_back(path + " is gone: its samples are unnamed "
                                "(--symfs DIR finds it as DIR" + path + ")");
            return false;
        }
        if (!id.build_id.empty()) {
            std::string now = file_build_id(file);
            if (now != id.build_id) {
                warnings->push_back(
                    file + " is not the file the program ran (build-id " +
                    id.build_id + ", now " + (now.empty() ? "none" : now) +
                    "): its samples are unnamed (--symfs DIR finds it as DIR" +
                    path + ")");
                return false;
            }
            return true;
        }
        char mtime[64];
        snprintf(mtime, sizeof(mtime), "%lld.%09ld",
                 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        if (file == path &&
            (id.size != std::to_string(st.st_size) || id.mtime != mtime)) {
            warnings->push_back(path + " changed since the recording (size "
                                "or mtime) and has no build-id: its names "
                                "may be wrong");
        }
        return true;
    }

    // The load bias of @path: where the mapping of offset 0's page put
    // p_vaddr 0, from the program headers of @file (@path or its --symfs
    // copy)
    bool bias_of(const std::string &file, const std::string &path,
                 uint64_t *bias) const
    {
        int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            return false;
        }
        Elf *e = elf_begin(fd, ELF_C_READ, nullptr);
        bool ok = false;
        size_t n = 0;
        if (e && elf_kind(e) == ELF_K_ELF && elf_getphdrnum(e, &n) == 0) {
            for (size_t i = 0; i < n && !ok; i++) {
                GElf_Phdr ph;
                if (!gelf_getphdr(e, int(i), &ph) || ph.p_type != PT_LOAD) {
                    continue;
                }
                uint64_t page_off = ph.p_offset & ~uint64_t(0xfff);
                for (const auto &m : maps_) {
                    if (m.path == path && m.offset == page_off) {
                        *bias = m.start - (ph.p_vaddr & ~uint64_t(0xfff));
                        ok = true;
                        break;
                    }
                }
            }
        }
        if (e) {
            elf_end(e);
        }
        close(fd);
        return ok;
    }

    const std::vector<MapEntry> &maps_;
    std::string debuginfo_path_;
    char *debuginfo_ = nullptr;
    Dwfl_Callbacks cb_{};
    Dwfl *dwfl_ = nullptr;
    std::unordered_map<uint64_t, SymInfo> cache_;
    std::map<Dwfl_Module *, std::vector<uint64_t>> fdes_;
};

// ---------------------------------------------------------------- report

// The symbols of every address space of a profile: an address with its
// space (kSpaceShift) is looked up in that space's files
class Symbolizer {
public:
    Symbolizer(const Profile &prof, const SymOpts &opts,
               std::vector<std::string> *warnings)
    {
        std::vector<std::string> all;
        for (uint32_t image : prof.space_image) {
            spaces_.push_back(std::make_unique<SpaceSymbols>(
                prof.images[image].maps, prof, opts, &all));
        }
        std::set<std::string> seen;     // a file once, whatever its spaces
        for (const auto &w : all) {
            if (seen.insert(w).second) {
                warnings->push_back(w);
            }
        }
    }

    const SymInfo &lookup(uint64_t addr)
    {
        auto it = cache_.find(addr);
        if (it != cache_.end()) {
            return it->second;
        }
        uint64_t space = addr >> kSpaceShift;
        SymInfo si = space < spaces_.size()
            ? spaces_[space]->lookup(addr & kAddrMask) : SymInfo{};
        if (space >= spaces_.size()) {
            si.func = "[unknown]";
            si.module = "[unmapped]";
        }
        si.func_start |= space << kSpaceShift;
        return cache_.emplace(addr, si).first->second;
    }

    // The bytes of [addr, addr+size) from the module's ELF file
    bool code(Dwfl_Module *mod, uint64_t addr, uint64_t size,
              std::vector<uint8_t> &out, uint64_t *biasp)
    {
        return !spaces_.empty() &&
               spaces_[0]->code(mod, addr & kAddrMask, size, out, biasp);
    }

private:
    std::vector<std::unique_ptr<SpaceSymbols>> spaces_;
    std::unordered_map<uint64_t, SymInfo> cache_;
};

// --symfs DIR and --debug-dir DIR, of report and diff
bool sym_option(Args &args, const std::string &a, SymOpts &o)
{
    if (a == "--symfs") {
        o.symfs = args.value("--symfs");
        return true;
    }
    if (a == "--debug-dir") {
        o.debug_dirs.push_back(args.value("--debug-dir"));
        return true;
    }
    return false;
}

struct Func {
    std::string name, module, file;
    int line = 0;
    uint64_t start = 0, size = 0, vaddr = 0;
    bool has_sym = false;
    Dwfl_Module *mod = nullptr;
    uint64_t samples = 0;
    std::map<uint64_t, uint64_t> by_ip;     // by offset in the function
};

// A function's samples in every address space are one function's
std::string func_key(const SymInfo &s)
{
    return s.module + "\t" + s.func + "\t" +
           (s.has_sym ? std::to_string(s.func_vaddr) : "");
}

std::string location(const SymInfo &s, uint64_t ip)
{
    char buf[64];
    std::string r = s.func;
    if (s.has_sym) {
        snprintf(buf, sizeof(buf), "+0x%" PRIx64, ip - s.func_start);
        r += buf;
    } else {
        snprintf(buf, sizeof(buf), " 0x%" PRIx64, ip & kAddrMask);
        r += buf;
    }
    return r;
}

std::string src_of(const SymInfo &s)
{
    if (s.file.empty()) {
        return "";
    }
    return basename_of(s.file) + ":" + std::to_string(s.line);
}

// record -g: the return addresses of the callers of record @r's function,
// innermost first, when its stack shows them.  The signal came after the
// record's instruction, in the same translation block: the interrupted
// pc is in the record's function, or the block ended with a call (the pc
// is the callee's, the first return address the record's function's), or
// with the function's return (the pc follows a direct call of it).  Else
// (a jump into another function, an indirect call's return) the stack is
// not known.
bool callers_of(Symbolizer &sym, const Profile &prof, const Record &r,
                std::vector<uint64_t> &out)
{
    out.clear();
    if (r.stack < 0) {
        return false;
    }
    const Profile::Stack &st = prof.stacks[size_t(r.stack)];
    const SymInfo f = sym.lookup(r.ip);
    if (!f.has_sym) {
        return false;
    }
    auto in_f = [&](uint64_t a) {
        const SymInfo &s = sym.lookup(a);
        return s.has_sym && s.func_start == f.func_start;
    };
    if (in_f(st.rip)) {
        out = st.rets;
        return true;
    }
    if (!st.rets.empty() && in_f(st.rets[0] - 1)) {
        out.assign(st.rets.begin() + 1, st.rets.end());
        return true;
    }
    const SymInfo &c = sym.lookup(st.rip - 5);
    std::vector<uint8_t> call;
    uint64_t bias;
    int32_t rel;
    if (c.mod && sym.code(c.mod, st.rip - 5, 5, call, &bias) &&
        call[0] == 0xe8) {
        memcpy(&rel, &call[1], 4);
        if (st.rip + uint64_t(int64_t(rel)) == f.func_start) {
            out.push_back(st.rip);
            out.insert(out.end(), st.rets.begin(), st.rets.end());
            return true;
        }
    }
    return false;
}

std::string json_str(const std::string &s)
{
    std::string r = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            r += '\\';
            r += char(c);
        } else if (c < 0x20) {
            char b[8];
            snprintf(b, sizeof(b), "\\u%04x", c);
            r += b;
        } else {
            r += char(c);
        }
    }
    return r + "\"";
}

// record -g: the direct callers of the @n hottest functions, by samples
void callers_section(Symbolizer &sym, const Profile &prof, int ev,
                     const std::vector<const Func *> &order, unsigned long n)
{
    std::map<std::string, std::map<std::string, uint64_t>> by_func;
    std::map<std::string, uint64_t> known;
    uint64_t total = 0, with = 0;
    std::vector<uint64_t> callers;
    for (const auto &r : prof.records) {
        if (r.event != ev) {
            continue;
        }
        total++;
        if (!callers_of(sym, prof, r, callers)) {
            continue;
        }
        with++;
        std::string key = func_key(sym.lookup(r.ip));
        known[key]++;
        std::string name = "[no caller: the thread's first function]";
        if (!callers.empty()) {
            const SymInfo &c = sym.lookup(callers[0] - 1);
            name = c.func;
            std::string src = src_of(c);
            if (!src.empty()) {
                name += " (" + src + ")";
            }
        }
        by_func[key][name]++;
    }
    n = std::min<unsigned long>(n, order.size());
    printf("\nCallers of the %s (record -g: %" PRIu64 " of the %s have "
           "a known call stack)\n",
           n == 1 ? "hottest function" :
               ("hottest " + std::to_string(n) + " functions").c_str(),
           with, plural(total, "sample").c_str());
    for (size_t i = 0; i < order.size() && i < n; i++) {
        const Func &f = *order[i];
        std::string key = f.module + "\t" + f.name + "\t" +
                          (f.has_sym ? std::to_string(f.vaddr) : "");
        auto it = by_func.find(key);
        printf("  %s (%s): %s, %" PRIu64 " with a known stack\n",
               f.name.c_str(), f.module.c_str(),
               plural(f.samples, "sample").c_str(),
               it == by_func.end() ? 0 : known[key]);
        if (it == by_func.end()) {
            continue;
        }
        std::vector<std::pair<std::string, uint64_t>> cv(it->second.begin(),
                                                          it->second.end());
        std::stable_sort(cv.begin(), cv.end(), [](const auto &a,
                                                  const auto &b) {
            return a.second > b.second;
        });
        for (const auto &c : cv) {
            printf("  %8" PRIu64 " %5.1f%%  %s\n", c.second,
                   100.0 * double(c.second) / double(known[key]),
                   c.first.c_str());
        }
    }
}

void annotate(Symbolizer &sym, const Func &f, const char *evlong)
{
    printf("\n%s (%s", f.name.c_str(), f.module.c_str());
    if (!f.file.empty()) {
        printf(", %s:%d", basename_of(f.file).c_str(), f.line);
    }
    printf("): %s\n", plural(f.samples, "sample").c_str());
    std::vector<uint8_t> code;
    uint64_t bias = 0;
    if (!f.has_sym || !f.size || !f.mod ||
        !sym.code(f.mod, f.start, f.size, code, &bias)) {
        printf("  (no code: the symbol has no size or its file is not "
               "readable)\n");
        return;
    }
    csh cs;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
        printf("  (capstone failed to open)\n");
        return;
    }
    cs_option(cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
    struct Line {
        uint64_t addr, samples;
        std::string text, src;
    };
    std::vector<Line> lines;
    size_t off = 0;
    std::string last_src;
    while (off < code.size()) {
        uint64_t addr = f.start + off;
        std::string text;
        size_t len;
        LwpDisasInsn li;
        int n = lwp_disas(code.data() + off, code.size() - off, 64, &li);
        if (n > 0) {
            text = std::string(li.mnemonic) + "\t" + li.op_str;
            len = size_t(n);
        } else {
            cs_insn *insn;
            // At the file's addresses: the same text whatever the load
            // address was
            size_t cnt = cs_disasm(cs, code.data() + off, code.size() - off,
                                   (addr & kAddrMask) - bias, 1, &insn);
            if (cnt == 1) {
                text = std::string(insn[0].mnemonic) + "\t" + insn[0].op_str;
                len = insn[0].size;
                cs_free(insn, cnt);
            } else {
                char b[32];
                snprintf(b, sizeof(b), "(bad)\t.byte 0x%02x", code[off]);
                text = b;
                len = 1;
            }
        }
        auto it = f.by_ip.find(off);
        const SymInfo &si = sym.lookup(addr);
        std::string src = src_of(si);
        lines.push_back({addr, it == f.by_ip.end() ? 0 : it->second, text,
                         src != last_src ? src : ""});
        last_src = src;
        off += len;
    }
    cs_close(&cs);
    // Whole functions up to 80 instructions; else the hot regions: the
    // instructions with the most samples (most first, equal counts in
    // address order) until they hold 90% of the function's samples, each
    // with 3 instructions around it
    std::vector<bool> show(lines.size(), lines.size() <= 80);
    if (lines.size() > 80) {
        std::vector<size_t> hot;
        for (size_t i = 0; i < lines.size(); i++) {
            if (lines[i].samples) {
                hot.push_back(i);
            }
        }
        std::stable_sort(hot.begin(), hot.end(), [&](size_t a, size_t b) {
            return lines[a].samples > lines[b].samples;
        });
        uint64_t held = 0;
        for (size_t i : hot) {
            if (held * 10 >= f.samples * 9) {
                break;
            }
            held += lines[i].samples;
            for (size_t j = i >= 3 ? i - 3 : 0;
                 j < std::min(lines.size(), i + 4); j++) {
                show[j] = true;
            }
        }
    }
    printf("  %8s %6s  %-8s instruction (samples: %s records)\n", "samples",
           "share", "offset", evlong);
    bool gap = false;
    for (size_t i = 0; i < lines.size(); i++) {
        if (!show[i]) {
            gap = true;
            continue;
        }
        if (gap) {
            printf("  %8s\n", "...");
            gap = false;
        }
        const Line &l = lines[i];
        if (!l.src.empty()) {
            printf("  %24s %s\n", "", l.src.c_str());
        }
        if (l.samples) {
            printf("  %8" PRIu64 " %5.1f%%  +0x%-5" PRIx64 " %s\n", l.samples,
                   100.0 * double(l.samples) / double(f.samples),
                   l.addr - f.start, l.text.c_str());
        } else {
            printf("  %8s %6s  +0x%-5" PRIx64 " %s\n", "", "",
                   l.addr - f.start, l.text.c_str());
        }
    }
    if (gap) {
        printf("  %8s\n", "...");
    }
    if (lines.size() > 80) {
        uint64_t shown = 0;
        size_t n = 0;
        for (size_t i = 0; i < lines.size(); i++) {
            shown += show[i] ? lines[i].samples : 0;
            n += show[i];
        }
        printf("  (hot regions: %" PRIu64 " of its %s in %zu of its %zu "
               "instructions)\n", shown, plural(f.samples, "sample").c_str(),
               n, lines.size());
    }
}

int cmd_report(int argc, char **argv)
{
    std::string file, speedscope, event;
    unsigned long top = 20, nannotate = 3, nbranches = 10;
    bool speedscope_set = false, force = false;
    SymOpts sopts;
    Args args("report", argc, argv);
    while (args.more()) {
        std::string a = args.next();
        if (a == "--top") {
            top = args.number("--top");
        } else if (a == "--annotate") {
            nannotate = args.number("--annotate");
        } else if (a == "--branches") {
            nbranches = args.number("--branches");
        } else if (a == "--event") {
            event = args.value("--event");
            if (event_id(event) < 0) {
                die(2, "report: unknown event '%s' (ire, bre, dme, cnh, rnh)",
                    event.c_str());
            }
        } else if (a == "-s" || a == "--speedscope") {
            speedscope = args.value("-s");
            speedscope_set = true;
        } else if (a == "--force") {
            force = true;
        } else if (sym_option(args, a, sopts)) {
            // --symfs or --debug-dir, read
        } else if (a == "-h" || a == "--help") {
            fputs(kUsage, stdout);
            return 0;
        } else if (a[0] == '-' && a != "-") {
            args.unknown(a);
        } else if (file.empty()) {
            file = a;
        } else {
            die(2, "report: one FILE only (lwp-prof --help)");
        }
    }
    if (file.empty()) {
        die(2, "report: no FILE (lwp-prof report FILE)");
    }
    if (!speedscope_set) {
        speedscope = file + ".speedscope.json";
    }

    Profile prof;
    std::string err, warning;
    if (!load_profile(file, prof, err, force, &warning)) {
        die(1, "%s", err.c_str());
    }
    // The event that ranks: --event, else the clocks (time, with the
    // detailed cost model), else the first the file has
    std::string recorded, first;
    for (int id = 2; id <= LWP_NUM_EVENTS; id++) {
        if (interval_of(prof, id)) {
            if (first.empty()) {
                first = kEventNames[id];
            }
            recorded += std::string(recorded.empty() ? "" : ", ") +
                        kEventNames[id];
        }
    }
    for (int id : {LWP_EVENT_ID_CNH, LWP_EVENT_ID_RNH}) {
        if (interval_of(prof, id)) {
            first = kEventNames[id];
            break;
        }
    }
    if (event.empty()) {
        event = first;
    }
    if (event.empty()) {
        event = "ire";
    } else if (!interval_of(prof, event_id(event))) {
        die(2, "report: %s has no %s records (it has %s)", file.c_str(),
            event.c_str(), recorded.empty() ? "none" : recorded.c_str());
    }
    int ev = event_id(event);
    uint64_t interval = interval_of(prof, ev);
    // Before anything is printed: a report that cannot be written whole
    // is not started
    FILE *ss = nullptr;
    if (speedscope != "-") {
        ss = fopen(speedscope.c_str(), "w");
        if (!ss) {
            die(1, "%s: %s", speedscope.c_str(), strerror(errno));
        }
    }
    std::vector<std::string> sym_warnings;
    Symbolizer sym(prof, sopts, &sym_warnings);

    // Header
    uint64_t by_event[256] = {};
    for (const auto &r : prof.records) {
        by_event[r.event]++;
    }
    printf("lwp-prof report of %s: %s\n", file.c_str(),
           prof.info["exe"].c_str());
    bool perf = prof.info["source"] == "perf";
    if (perf) {
        printf("  settings: the kernel's lwp perf PMU");
    } else {
        printf("  settings: LWPCB.Flags %s", prof.info["flags"].c_str());
    }
    for (int id = 2; id <= LWP_NUM_EVENTS; id++) {
        if (uint64_t iv = interval_of(prof, id)) {
            printf(", %s interval %" PRIu64 " (a record per %" PRIu64 " %s)",
                   kEventNames[id], iv, iv + 1, kEventUnits[id]);
        }
    }
    if (perf) {
        printf("; perf ring %s bytes per CPU\n",
               prof.info["perf_ring_bytes"].c_str());
    } else {
        printf("; ring %s bytes per thread\n", prof.info["ring_bytes"].c_str());
    }
    if (!prof.has_end) {
        printf("  program: unknown end (--force: %s)\n", warning.c_str());
    } else {
        printf("  program: %s %d\n",
               prof.end.how == LWPPROF_END_EXITED ? "exited with status"
                                                  : "killed by signal",
               prof.end.code);
        if (!warning.empty()) {
            printf("  warning (--force): %s\n", warning.c_str());
        }
    }
    printf("  records: %zu", prof.records.size());
    for (int id = 1; id < 256; id++) {
        if (by_event[id]) {
            printf(", %s %" PRIu64,
                   event_label(id), by_event[id]);
        }
    }
    size_t nproc = process_count(prof);
    printf(" from %s", plural(thread_count(prof), "thread").c_str());
    if (nproc > 1 || prof.images.size() > 1) {
        printf(" in %s", plural(nproc, "process", "processes").c_str());
    }
    if (prof.images.size() > nproc) {
        printf(", %s", plural(prof.images.size(), "program").c_str());
    }
    printf("\n");
    Unprofiled unp = unprofiled(prof);
    // the program's threads, then each followed process's, a process's
    // programs in the order it exec'd them
    std::map<uint32_t, std::vector<uint32_t>> of_pid;  // its images
    std::map<uint32_t, size_t> pid_order;
    for (uint32_t i = 0; i < prof.images.size(); i++) {
        uint32_t pid = i ? prof.images[i].pid : main_pid(prof);
        of_pid[pid].push_back(i);
        pid_order.emplace(pid, pid_order.size());
    }
    auto pid_of_image = [&](uint32_t i) {
        return i ? prof.images[i].pid : main_pid(prof);
    };
    auto exe_of = [&](uint32_t i) {
        return i ? prof.images[i].exe : prof.info["exe"];
    };
    std::vector<const ThreadInfo *> tord;
    for (const auto &t : prof.threads) {
        if (listed(prof, t.second)) {
            tord.push_back(&t.second);
        }
    }
    std::sort(tord.begin(), tord.end(), [&](const auto *a, const auto *b) {
        size_t pa = pid_order[pid_of_image(a->image)],
               pb = pid_order[pid_of_image(b->image)];
        return pa != pb ? pa < pb
               : a->image != b->image ? a->image < b->image
               : a->order != b->order ? a->order < b->order : a->tid < b->tid;
    });
    auto image_end = [&](uint32_t i) -> std::string {
        const Image &im = prof.images[i];
        if (!im.execd.empty() && !im.execd_followed) {
            return "; it exec'd " + im.execd + ", which ran unprofiled (" +
                   im.why + ")";
        }
        return exited(prof, i) || !im.execd.empty() ? ""
               : "; it did not run exit() or _exit(): records since each "
                 "thread's last drain are lost";
    };
    uint32_t in_pid = main_pid(prof);
    for (const ThreadInfo *tp : tord) {
        const ThreadInfo &ti = *tp;
        const Image &im = prof.images[ti.image];
        uint32_t pid = pid_of_image(ti.image);
        const std::vector<uint32_t> &imgs = of_pid[pid];
        if (pid != in_pid) {
            in_pid = pid;
            const Image &first = prof.images[imgs[0]];
            std::string progs;
            for (uint32_t i : imgs) {
                if (prof.images[i].how == LWPPROF_PROCESS_EXEC_FOLLOWED) {
                    progs += (progs.empty() ? "" : ", then ") +
                             prof.images[i].exe;
                }
            }
            printf("    process %u (%s %u)%s%s%s\n", pid,
                   first.how == LWPPROF_PROCESS_FOLLOWED ? "forked by"
                                                         : "child of",
                   first.ppid,
                   progs.empty() ? ""
                   : first.how == LWPPROF_PROCESS_FOLLOWED ? ", exec'd "
                                                           : ": ",
                   progs.c_str(), image_end(imgs.back()).c_str());
        }
        printf("%s    thread %u (tid %u)", pid != main_pid(prof) ? "  " : "",
               ti.order, ti.tid);
        if (imgs.size() > 1) {
            printf(" in %s", basename_of(exe_of(ti.image)).c_str());
        }
        printf(": ");
        bool first = true;
        for (int id = 1; id < 256; id++) {
            if (ti.by_event[id]) {
                printf("%s%s %" PRIu64, first ? "" : ", ",
                       event_label(id), ti.by_event[id]);
                first = false;
            }
        }
        if (first) {
            printf("no records");
        }
        if (ti.missed) {
            printf("; %" PRIu64 " MISSED (the ring was full)", ti.missed);
        }
        if (!ti.stopped) {
            printf("; %s: records after its last drain are lost",
                   im.execd.empty() ? "still running at exit"
                                    : "ended by exec");
        }
        printf("\n");
    }
    if (prof.images.size() > 1 && !prof.images[0].execd.empty()) {
        printf("  the program exec'd %s%s\n", prof.images[0].execd.c_str(),
               prof.images[0].execd_followed ? ", profiled (above)" : "");
    }
    if (!unp.main_exec.empty()) {
        printf("  warning: the program exec'd %s, which ran unprofiled (%s): "
               "the records end there\n", unp.main_exec.c_str(),
               unp.main_why.c_str());
    } else if (!exited(prof, image_of(&prof, main_pid(prof)))) {
        printf("  warning: the program did not run exit(); records since "
               "each thread's last drain are lost\n");
    }
    if (unp.count) {
        printf("  not profiled: %s the program started:",
               plural(unp.count, "process", "processes").c_str());
        const char *sep = " ";
        for (const auto &n : unp.by_name) {
            printf("%s%s %zu", sep, n.first.c_str(), n.second);
            sep = ", ";
        }
        printf("\n");
    }
    for (const auto &w : sym_warnings) {
        printf("  warning: %s\n", w.c_str());
    }
    for (const auto &n : prof.notes) {
        printf("  note: %s\n", n.c_str());
    }

    // Top functions
    std::map<std::string, Func> funcs;
    uint64_t total = 0;
    for (const auto &r : prof.records) {
        if (r.event != ev) {
            continue;
        }
        const SymInfo &si = sym.lookup(r.ip);
        Func &f = funcs[func_key(si)];
        if (!f.samples) {
            f.name = si.func;
            f.module = si.module;
            f.start = si.func_start;
            f.vaddr = si.func_vaddr;
            f.size = si.func_size;
            f.has_sym = si.has_sym;
            f.mod = si.mod;
            if (si.has_sym) {
                const SymInfo &s0 = sym.lookup(si.func_start);
                f.file = s0.file;
                f.line = s0.line;
            }
        }
        f.samples++;
        f.by_ip[r.ip - si.func_start]++;
        total++;
    }
    std::vector<const Func *> order;
    for (const auto &f : funcs) {
        order.push_back(&f.second);
    }
    std::sort(order.begin(), order.end(), [](const Func *a, const Func *b) {
        return a->samples != b->samples ? a->samples > b->samples
                                        : a->name < b->name;
    });
    const char *evlong = kEventLong[ev];
    printf("\nTop functions by %s samples (%s", evlong,
           plural(total, "sample").c_str());
    if (interval) {
        printf(", one per %" PRIu64 " %s", interval + 1, kEventUnits[ev]);
    }
    bool detailed = (ev == LWP_EVENT_ID_CNH || ev == LWP_EVENT_ID_RNH) &&
                    prof.info["cpu"].find("cost-model=detailed") !=
                        std::string::npos;
    printf(")\n  %s\n", detailed ? kClocksDetailed : kEventMeasures[ev]);
    if (!total) {
        printf("  no %s records\n", event.c_str());
    } else {
        // the module column as wide as the widest module listed
        size_t nshow = top ? std::min<size_t>(top, order.size()) : order.size();
        int mw = 6;
        for (size_t i = 0; i < nshow; i++) {
            mw = std::max(mw, int(order[i]->module.size()));
        }
        printf("  %8s %7s %7s  %-*s %s\n", "samples", "share", "cumul", mw,
               "module", "function (source)");
        uint64_t cum = 0;
        for (size_t i = 0; i < nshow; i++) {
            const Func *f = order[i];
            cum += f->samples;
            std::string src;
            if (!f->file.empty()) {
                src = " (" + basename_of(f->file) + ":" +
                      std::to_string(f->line) + ")";
            }
            printf("  %8" PRIu64 " %6.2f%% %6.2f%%  %-*s %s%s\n", f->samples,
                   100.0 * double(f->samples) / double(total),
                   100.0 * double(cum) / double(total), mw, f->module.c_str(),
                   f->name.c_str(), src.c_str());
        }
        // Hot source lines
        std::map<std::string, uint64_t> lines;
        for (const auto &r : prof.records) {
            if (r.event == ev) {
                const SymInfo &si = sym.lookup(r.ip);
                if (!si.file.empty()) {
                    lines[si.file + ":" + std::to_string(si.line) + "\t" +
                          si.func]++;
                }
            }
        }
        if (!lines.empty()) {
            std::vector<std::pair<std::string, uint64_t>> lv(lines.begin(),
                                                              lines.end());
            std::sort(lv.begin(), lv.end(), [](const auto &a, const auto &b) {
                return a.second != b.second ? a.second > b.second
                                            : a.first < b.first;
            });
            printf("\nHot source lines (where debug info exists)\n");
            printf("  %8s %7s  %s\n", "samples", "share", "line (function)");
            for (size_t i = 0; i < lv.size() && i < 10; i++) {
                size_t tab = lv[i].first.find('\t');
                printf("  %8" PRIu64 " %6.2f%%  %s (%s)\n", lv[i].second,
                       100.0 * double(lv[i].second) / double(total),
                       lv[i].first.substr(0, tab).c_str(),
                       lv[i].first.substr(tab + 1).c_str());
            }
        }
        // Callers (record -g)
        if (!prof.stacks.empty()) {
            callers_section(sym, prof, ev, order, nannotate ? nannotate : 3);
        }
        // Annotated disassembly
        if (nannotate) {
            unsigned long n = std::min<unsigned long>(nannotate, order.size());
            if (n == 1) {
                printf("\nAnnotated disassembly of the hottest function\n");
            } else {
                printf("\nAnnotated disassembly of the %lu hottest functions\n",
                       n);
            }
        }
        for (size_t i = 0; i < order.size() && i < nannotate; i++) {
            annotate(sym, *order[i], evlong);
        }
    }

    // Branches
    struct Br {
        uint64_t n = 0, taken = 0, prv = 0, mispred = 0;
        std::map<uint64_t, uint64_t> targets;
    };
    std::map<uint64_t, Br> brs;
    uint64_t nbr = 0, ntaken = 0, nprv = 0, nmis = 0;
    for (const auto &r : prof.records) {
        if (r.event != LWP_EVENT_ID_BRE) {
            continue;
        }
        Br &b = brs[r.ip];
        uint32_t w = r.raw0();
        bool tkn = w & LWP_REC_BRE_TKN, prv = w & LWP_REC_BRE_PRV,
             prd = w & LWP_REC_BRE_PRD;
        b.n++;
        b.taken += tkn;
        b.prv += prv;
        b.mispred += prv && !prd;
        b.targets[r.data2]++;
        nbr++;
        ntaken += tkn;
        nprv += prv;
        nmis += prv && !prd;
    }
    printf("\nBranches Retired: ");
    if (!nbr) {
        printf("no records (record with -e bre:N)\n");
    } else {
        printf("%s at %s", plural(nbr, "sample").c_str(),
               plural(brs.size(), "branch", "branches").c_str());
        if (perf) {
            printf(" (the lwp PMU's samples carry no taken flag or target)");
        } else {
            printf(", %.1f%% taken", 100.0 * double(ntaken) / double(nbr));
        }
        if (nprv) {
            printf(", %.1f%% of predicted-valid mispredicted",
                   100.0 * double(nmis) / double(nprv));
        }
        printf("\n");
        // equal counts in the order of the printed locations, which do
        // not depend on where the loader put each module
        std::vector<std::tuple<uint64_t, std::string, const Br *>> bv;
        for (const auto &b : brs) {
            bv.emplace_back(b.first, location(sym.lookup(b.first), b.first),
                            &b.second);
        }
        std::sort(bv.begin(), bv.end(), [](const auto &a, const auto &b) {
            const Br *x = std::get<2>(a), *y = std::get<2>(b);
            return x->n != y->n ? x->n > y->n : std::get<1>(a) < std::get<1>(b);
        });
        // the branch column as wide as the widest branch listed
        size_t nshow = std::min<size_t>(nbranches, bv.size());
        std::vector<std::string> wheres;
        int bw = 6;
        for (size_t i = 0; i < nshow; i++) {
            std::string where = std::get<1>(bv[i]);
            std::string src = src_of(sym.lookup(std::get<0>(bv[i])));
            if (!src.empty()) {
                where += " (" + src + ")";
            }
            wheres.push_back(where);
            bw = std::max(bw, int(where.size()));
        }
        if (perf) {
            printf("  %8s %7s  %s\n", "samples", "share", "branch");
        } else {
            printf("  %8s %7s %7s  %-*s %s\n", "samples", "share", "taken",
                   bw, "branch", "most frequent target");
        }
        for (size_t i = 0; i < nshow; i++) {
            const Br &b = *std::get<2>(bv[i]);
            const std::string &where = wheres[i];
            if (perf) {
                printf("  %8" PRIu64 " %6.2f%%  %s\n", b.n,
                       100.0 * double(b.n) / double(nbr), where.c_str());
                continue;
            }
            auto tgt = std::max_element(
                b.targets.begin(), b.targets.end(),
                [](const auto &x, const auto &y) { return x.second < y.second; });
            const SymInfo &ti = sym.lookup(tgt->first);
            printf("  %8" PRIu64 " %6.2f%% %6.1f%%  %-*s %s\n", b.n,
                   100.0 * double(b.n) / double(nbr),
                   100.0 * double(b.taken) / double(b.n), bw, where.c_str(),
                   location(ti, tgt->first).c_str());
        }
    }

    // DCache misses
    std::map<uint64_t, std::pair<uint64_t, uint64_t>> dm;   // n, latency sum
    uint64_t ndm = 0;
    for (const auto &r : prof.records) {
        if (r.event == LWP_EVENT_ID_DME) {
            auto &e = dm[r.ip];
            e.first++;
            e.second += r.data1;
            ndm++;
        }
    }
    printf("\nDCache Misses: ");
    if (!ndm) {
        printf("no records (record with -e dme:N where LWP offers it)\n");
    } else {
        printf("%s at %s\n", plural(ndm, "sample").c_str(),
               plural(dm.size(), "instruction").c_str());
        std::vector<std::pair<uint64_t, std::pair<uint64_t, uint64_t>>> dv(
            dm.begin(), dm.end());
        // equal counts in the order of their printed locations
        std::stable_sort(dv.begin(), dv.end(),
                         [&](const auto &a, const auto &b) {
                             if (a.second.first != b.second.first) {
                                 return a.second.first > b.second.first;
                             }
                             return location(sym.lookup(a.first), a.first) <
                                    location(sym.lookup(b.first), b.first);
                         });
        printf("  %8s %7s %12s  %s\n", "samples", "share", "avg latency",
               "load");
        for (size_t i = 0; i < dv.size() && i < 10; i++) {
            const SymInfo &si = sym.lookup(dv[i].first);
            printf("  %8" PRIu64 " %6.2f%% %12.1f  %s %s\n", dv[i].second.first,
                   100.0 * double(dv[i].second.first) / double(ndm),
                   double(dv[i].second.second) / double(dv[i].second.first),
                   location(si, dv[i].first).c_str(), src_of(si).c_str());
        }
    }

    // speedscope: one sampled profile per thread, stacks [module, function]
    // in the order LWP stored them, in at most kSlices slices of equal
    // length: a slice holds each of its stacks once, in the order they
    // first came in it, weighted by the events of its samples (equal
    // neighbours become one)
    if (ss) {
        const size_t kSlices = 1000;
        FILE *out = ss;
        std::map<std::string, size_t> frame_ix;
        std::vector<std::string> frames;
        auto frame = [&](const std::string &json_key,
                         const std::string &json) {
            auto it = frame_ix.find(json_key);
            if (it != frame_ix.end()) {
                return it->second;
            }
            frames.push_back(json);
            return frame_ix[json_key] = frames.size() - 1;
        };
        // a function's frame, named with its module, file and line
        auto func_frame = [&](const SymInfo &si) {
            std::string fj = "{\"name\":" + json_str(si.func);
            if (si.has_sym) {
                const SymInfo &s0 = sym.lookup(si.func_start);
                if (!s0.file.empty()) {
                    fj += ",\"file\":" + json_str(s0.file) +
                          ",\"line\":" + std::to_string(s0.line);
                }
            }
            return frame("f\t" + func_key(si), fj + "}");
        };
        // [module, function]; with record -g [callers..., function], the
        // outermost first, or ["[stack unknown]", function]
        using Stack = std::vector<size_t>;
        std::map<uint64_t, std::vector<Stack>> stacks;     // per thread
        std::vector<uint64_t> callers;
        for (const auto &r : prof.records) {
            if (r.event != ev) {
                continue;
            }
            const SymInfo &si = sym.lookup(r.ip);
            Stack st;
            if (prof.stacks.empty()) {
                st.push_back(frame("m\t" + si.module,
                                   "{\"name\":" + json_str(si.module) + "}"));
            } else if (!callers_of(sym, prof, r, callers)) {
                st.push_back(frame("u", "{\"name\":\"[stack unknown]\"}"));
            }
            for (auto c = callers.rbegin(); c != callers.rend(); ++c) {
                st.push_back(func_frame(sym.lookup(*c - 1)));
            }
            st.push_back(func_frame(si));
            stacks[r.thread].push_back(std::move(st));
        }
        // per thread: the stacks and the samples each stands for
        std::map<uint64_t, std::vector<std::pair<Stack, uint64_t>>> samples;
        for (const auto &t : stacks) {
            const std::vector<Stack> &v = t.second;
            auto &outv = samples[t.first];
            size_t per = (v.size() + kSlices - 1) / kSlices;
            for (size_t start = 0; start < v.size(); start += per) {
                std::vector<std::pair<Stack, uint64_t>> slice;
                std::map<Stack, size_t> at;
                for (size_t i = start; i < std::min(v.size(), start + per);
                     i++) {
                    auto it = at.find(v[i]);
                    if (it != at.end()) {
                        slice[it->second].second++;
                    } else {
                        at[v[i]] = slice.size();
                        slice.push_back({v[i], 1});
                    }
                }
                for (const auto &x : slice) {
                    if (!outv.empty() && outv.back().first == x.first) {
                        outv.back().second += x.second;
                    } else {
                        outv.push_back(x);
                    }
                }
            }
        }
        uint64_t w = interval + 1;      // events per sample
        fprintf(out, "{\"$schema\":\"https://www.speedscope.app/"
                "file-format-schema.json\",\"exporter\":\"lwp-prof\","
                "\"name\":%s,\"activeProfileIndex\":0,\"shared\":{\"frames\":[",
                json_str(basename_of(prof.info["exe"]) + " (" + evlong +
                         ")").c_str());
        for (size_t i = 0; i < frames.size(); i++) {
            fprintf(out, "%s%s", i ? "," : "", frames[i].c_str());
        }
        fprintf(out, "]},\"profiles\":[");
        bool firstp = true;
        for (const auto &t : samples) {
            uint64_t n = 0;
            for (const auto &run : t.second) {
                n += run.second;
            }
            fprintf(out, "%s{\"type\":\"sampled\",\"name\":\"thread %u\","
                    "\"unit\":\"none\",\"startValue\":0,\"endValue\":%" PRIu64
                    ",\"samples\":[", firstp ? "" : ",", uint32_t(t.first),
                    n * w);
            firstp = false;
            for (size_t i = 0; i < t.second.size(); i++) {
                const Stack &st = t.second[i].first;
                for (size_t j = 0; j < st.size(); j++) {
                    fprintf(out, "%s%zu", j ? "," : i ? ",[" : "[", st[j]);
                }
                fputc(']', out);
            }
            fprintf(out, "],\"weights\":[");
            for (size_t i = 0; i < t.second.size(); i++) {
                fprintf(out, "%s%" PRIu64, i ? "," : "", t.second[i].second * w);
            }
            fprintf(out, "]}");
        }
        fprintf(out, "]}\n");
        if (fclose(out) != 0) {
            die(1, "%s: write failed", speedscope.c_str());
        }
        printf("\nspeedscope profile: %s (open it at https://www.speedscope.app"
               " or with `speedscope FILE`)\n", speedscope.c_str());
    }
    return 0;
}

// ---------------------------------------------------------------- diff

// One profile's samples of event @ev per function ("module\tfunction") and
// per source line ("file:line\tfunction").  The program's own module is
// @exe, whatever its file is called, so that two builds of it match
void tally(Profile &prof, Symbolizer &sym, int ev, const std::string &exe,
           std::map<std::string, uint64_t> &funcs,
           std::map<std::string, uint64_t> &lines)
{
    std::string own = basename_of(prof.info["exe"]);
    for (const auto &r : prof.records) {
        if (r.event != ev) {
            continue;
        }
        const SymInfo &si = sym.lookup(r.ip);
        funcs[(si.module == own ? exe : si.module) + "\t" + si.func]++;
        if (!si.file.empty()) {
            lines[basename_of(si.file) + ":" + std::to_string(si.line) + "\t" +
                  si.func]++;
        }
    }
}

// The rows of A and B by change, biggest first (equal changes by name):
// A's and B's counts scaled by @wa and @wb
void print_changes(const char *title, const char *head,
                   const std::map<std::string, uint64_t> &a,
                   const std::map<std::string, uint64_t> &b, uint64_t wa,
                   uint64_t wb, unsigned long top, bool module_column)
{
    struct Row {
        std::string key;
        int64_t a, b;
    };
    std::vector<Row> rows;
    for (const auto &x : a) {
        auto it = b.find(x.first);
        rows.push_back({x.first, int64_t(x.second * wa),
                        it == b.end() ? 0 : int64_t(it->second * wb)});
    }
    for (const auto &x : b) {
        if (!a.count(x.first)) {
            rows.push_back({x.first, 0, int64_t(x.second * wb)});
        }
    }
    std::sort(rows.begin(), rows.end(), [](const Row &x, const Row &y) {
        int64_t dx = std::llabs(x.b - x.a), dy = std::llabs(y.b - y.a);
        return dx != dy ? dx > dy : x.key < y.key;
    });
    size_t n = top ? std::min<size_t>(top, rows.size()) : rows.size();
    int mw = 6;
    for (size_t i = 0; module_column && i < n; i++) {
        mw = std::max(mw, int(rows[i].key.find('\t')));
    }
    printf("\n%s\n", title);
    if (module_column) {
        printf("  %10s %10s %10s %8s  %-*s %s\n", "A", "B", "change", "change%",
               mw, "module", head);
    } else {
        printf("  %10s %10s %10s %8s  %s\n", "A", "B", "change", "change%",
               head);
    }
    for (size_t i = 0; i < n; i++) {
        const Row &r = rows[i];
        size_t tab = r.key.find('\t');
        std::string pct = "new";
        char b[32];
        if (r.a) {
            snprintf(b, sizeof(b), "%+.1f%%",
                     100.0 * double(r.b - r.a) / double(r.a));
            pct = b;
        }
        printf("  %10" PRId64 " %10" PRId64 " %+10" PRId64 " %8s  ", r.a, r.b,
               r.b - r.a, pct.c_str());
        if (module_column) {
            printf("%-*s %s\n", mw, r.key.substr(0, tab).c_str(),
                   r.key.substr(tab + 1).c_str());
        } else {
            printf("%s (%s)\n", r.key.substr(0, tab).c_str(),
                   r.key.substr(tab + 1).c_str());
        }
    }
    if (!n) {
        printf("  (none)\n");
    }
}

int cmd_diff(int argc, char **argv)
{
    std::string event;
    std::vector<std::string> files;
    unsigned long top = 20;
    SymOpts sopts;
    Args args("diff", argc, argv);
    while (args.more()) {
        std::string a = args.next();
        if (a == "--top") {
            top = args.number("--top");
        } else if (a == "--event") {
            event = args.value("--event");
            if (event_id(event) < 0) {
                die(2, "diff: unknown event '%s' (ire, bre, dme, cnh, rnh)",
                    event.c_str());
            }
        } else if (sym_option(args, a, sopts)) {
            // --symfs or --debug-dir, read
        } else if (a == "-h" || a == "--help") {
            fputs(kUsage, stdout);
            return 0;
        } else if (a[0] == '-') {
            args.unknown(a);
        } else {
            files.push_back(a);
        }
    }
    if (files.size() != 2) {
        die(2, "diff: two files, A and B (lwp-prof diff A B)");
    }
    Profile pa, pb;
    std::string err;
    if (!load_profile(files[0], pa, err) || !load_profile(files[1], pb, err)) {
        die(1, "%s", err.c_str());
    }
    // The event: --event, else the first that both files have
    int ev = event.empty() ? -1 : event_id(event);
    for (int id = 2; ev < 0 && id <= LWP_NUM_EVENTS; id++) {
        if (interval_of(pa, id) && interval_of(pb, id)) {
            ev = id;
        }
    }
    if (ev < 0 || !interval_of(pa, ev) || !interval_of(pb, ev)) {
        die(2, "diff: %s and %s have %s in common", files[0].c_str(),
            files[1].c_str(), event.empty() ? "no event"
                              : ("no " + event + " records").c_str());
    }
    // Samples when both intervals are equal; else the events they stand
    // for, samples x (N+1)
    uint64_t na = interval_of(pa, ev) + 1, nb = interval_of(pb, ev) + 1;
    uint64_t wa = na == nb ? 1 : na, wb = na == nb ? 1 : nb;
    std::vector<std::string> warn_a, warn_b;
    Symbolizer sa(pa, sopts, &warn_a), sb(pb, sopts, &warn_b);
    std::map<std::string, uint64_t> fa, fb, la, lb;
    // the program's module: its name, or both names when they differ
    std::string ea = basename_of(pa.info["exe"]), eb = basename_of(pb.info["exe"]);
    std::string exe = ea == eb ? ea : ea + "|" + eb;
    tally(pa, sa, ev, exe, fa, la);
    tally(pb, sb, ev, exe, fb, lb);
    uint64_t ta = 0, tb = 0;
    for (const auto &x : fa) {
        ta += x.second * wa;
    }
    for (const auto &x : fb) {
        tb += x.second * wb;
    }
    printf("lwp-prof diff of A = %s (%s) and B = %s (%s)\n", files[0].c_str(),
           pa.info["exe"].c_str(), files[1].c_str(), pb.info["exe"].c_str());
    std::string unit = na == nb ? "samples" : kEventUnits[ev];
    if (na == nb) {
        printf("  %s samples, one per %" PRIu64 " %s in both\n", kEventLong[ev],
               na, kEventUnits[ev]);
    } else {
        printf("  %s: A has a sample per %" PRIu64 ", B per %" PRIu64 " %s: "
               "compared as %s, samples x (N+1)\n", kEventLong[ev], na, nb,
               kEventUnits[ev], kEventUnits[ev]);
    }
    printf("  total: A %" PRIu64 ", B %" PRIu64 " %s, change %+" PRId64 "\n",
           ta, tb, unit.c_str(), int64_t(tb) - int64_t(ta));
    for (const auto &w : warn_a) {
        printf("  warning (A): %s\n", w.c_str());
    }
    for (const auto &w : warn_b) {
        printf("  warning (B): %s\n", w.c_str());
    }
    std::string title = "Functions by change (B - A, " + unit + ")";
    print_changes(title.c_str(), "function", fa, fb, wa, wb, top, true);
    if (!la.empty() || !lb.empty()) {
        title = "Source lines by change (B - A, " + unit +
                ", where debug info exists)";
        print_changes(title.c_str(), "line (function)", la, lb, wa, wb, top,
                      false);
    }
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(kUsage, stderr);
        return 2;
    }
    std::string cmd = argv[1];
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
        fputs(kUsage, stdout);
        return 0;
    }
    if (cmd == "--version") {
        printf("lwp-prof 0.1 (record file version %d)\n", LWPPROF_VERSION);
        return 0;
    }
    if (cmd == "record") {
        return cmd_record(argc - 2, argv + 2);
    }
    if (cmd == "report") {
        return cmd_report(argc - 2, argv + 2);
    }
    if (cmd == "diff") {
        return cmd_diff(argc - 2, argv + 2);
    }
    die(2, "unknown command '%s' (lwp-prof --help)", cmd.c_str());
}
