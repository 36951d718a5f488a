// Golden tests: each tests/engine/golden/<name>.in is a small scenario
// (context, memory, LWPCB, operations, dumps); running it prints the
// outcome of every operation and annotated hex dumps (one 8-byte row per
// line, field names as comments), which must equal <name>.out byte for
// byte.  The first .out files were written by hand from the spec.
//
// With LWP_GOLDEN_REBASE=1 the .out files are rewritten from the engine
// instead, and each test reports that it did (as a skip).
//
// Scenario language, one command per line, '#' starts a comment, numbers
// in C notation (0x..., negative allowed for counters):
//   ctx KEY=N ...          cfg edx ecx ds_base ds_limit ds_flags long64
//                          lma va_bits cpl (defaults: the unit tests' context)
//   map ADDR LEN rw|r|none page permissions
//   lwpcb ADDR KEY=N ...   write an LWPCB image: flags size random base
//                          head missed threshold filters baseip limitip
//                          tail i1..i6 c1..c6 (raw dwords); zero elsewhere
//   poke32 ADDR N, poke64 ADDR N
//   set counterN=V         LwpState.counter[N], as generated code does
//   llwpcb EA | slwpcb | sync
//   retire KEY=N ...       ip events=ire|bre|dme|cnh|rnh target
//                          kind=cond|rel|indirect taken predicted ok fused
//                          src dav latency daddr cycles ref
//   lwpins/lwpval ip= data1= data2= flags=
//   xarea OFFSET B0 .. B7  set 8 bytes of the XSAVE area buffer
//   xsave | xrstor | xrstor none
//   dump ring BASE FIRST COUNT | dump lwpcb ADDR | dump xsave
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fake_mem.h"

namespace
{

using namespace lwptest;

bool is_dir(const std::string &path)
{
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The golden directory: $LWP_GOLDEN_DIR, or next to this source file.
// Meson names the source relative to the build root, and the executable
// is <build root>/tests/engine/engine-tests.
std::string golden_dir()
{
    if (const char *env = getenv("LWP_GOLDEN_DIR")) {
        return env;
    }
    std::string src = __FILE__;
    size_t slash = src.rfind('/');
    std::string dir =
        (slash == std::string::npos ? "" : src.substr(0, slash + 1)) + "golden";
    if (dir[0] == '/' || is_dir(dir)) {
        return dir;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = 0;
        std::string e = exe;
        std::string candidate = e.substr(0, e.rfind('/') + 1) + "../../" + dir;
        if (is_dir(candidate)) {
            return candidate;
        }
    }
    return dir;
}

std::vector<std::string> scenarios()
{
    std::vector<std::string> names;
    std::string dir = golden_dir();
    if (DIR *d = opendir(dir.c_str())) {
        while (struct dirent *e = readdir(d)) {
            std::string f = e->d_name;
            if (f.size() > 3 && f.compare(f.size() - 3, 3, ".in") == 0) {
                names.push_back(f.substr(0, f.size() - 3));
            }
        }
        closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string read_file(const std::string &path, bool *ok)
{
    std::ifstream f(path, std::ios::binary);
    *ok = f.good();
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string fmt(const char *format, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char *format, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, format);
    vsnprintf(buf, sizeof(buf), format, ap);
    va_end(ap);
    return buf;
}

const char *status_name(LwpStatus st)
{
    switch (st) {
    case LWP_OK:
        return "OK";
    case LWP_FAULT_GP:
        return "GP";
    case LWP_FAULT_PF:
        return "PF";
    }
    return "?";
}

// ---------------------------------------------------------------------------
// Field names of the dumps (Figures 2-1..2-8, 6-1, 7-1)

std::string record_row_name(uint8_t event_id, unsigned row)
{
    switch (row) {
    case 0:
        switch (event_id) {
        case LWP_EVENT_ID_VAL:
        case LWP_EVENT_ID_INS:
            return "EventId CoreId Flags(imm16) Data1";
        case LWP_EVENT_ID_BRE:
            return "EventId CoreId Flags(byte 3: TKN PRD PRV FUS) Reserved";
        case LWP_EVENT_ID_DME:
            return "EventId CoreId Flags(byte 3: SRC DAV) Latency";
        default:
            return "EventId CoreId Flags Data1";
        }
    case 1:
        return "InstructionAddress";
    case 2:
        switch (event_id) {
        case LWP_EVENT_ID_VAL:
        case LWP_EVENT_ID_INS:
            return "Data2";
        case LWP_EVENT_ID_BRE:
            return "TargetAddress";
        case LWP_EVENT_ID_DME:
            return "DataAddress";
        default:
            return "Data2 (unused)";
        }
    default:
        return "Reserved";
    }
}

const char *event_name(uint8_t id)
{
    switch (id) {
    case 0:
        return "none";
    case LWP_EVENT_ID_VAL:
        return "programmed value sample";
    case LWP_EVENT_ID_IRE:
        return "instructions retired";
    case LWP_EVENT_ID_BRE:
        return "branches retired";
    case LWP_EVENT_ID_DME:
        return "DCache miss";
    case LWP_EVENT_ID_CNH:
        return "CPU clocks not halted";
    case LWP_EVENT_ID_RNH:
        return "CPU reference clocks not halted";
    case LWP_EVENT_ID_INS:
        return "programmed event (LWPINS)";
    }
    return "unknown";
}

std::string lwpcb_row_name(unsigned off)
{
    switch (off) {
    case 0:
        return "Flags | BufferSize[27:0] Random[31:28]";
    case 8:
        return "BufferBase";
    case 16:
        return "BufferHeadOffset | Reserved";
    case 24:
        return "MissedEvents";
    case 32:
        return "Threshold | Filters";
    case 40:
        return "BaseIP";
    case 48:
        return "LimitIP";
    case 56:
        return "Reserved";
    case 64:
        return "BufferTailOffset | Reserved";
    case 72:
    case 80:
        return "Software";
    }
    if (off < LWP_EVENT_OFFSET) {
        return "Reserved";
    }
    unsigned n = (off - LWP_EVENT_OFFSET) / 8 + 1;
    return fmt("EventInterval%u | EventCounter%u", n, n);
}

std::string xsave_row_name(unsigned off)
{
    switch (off) {
    case 0:
        return "LWPCBAddress";
    case 8:
        return "Flags(Counter n active) | BufferHeadOffset";
    case 16:
        return "BufferBase";
    case 24:
        return "BufferSize | Filters";
    case 32:
        return "SavedEventRecord: EventId CoreId Flags Data1";
    case 40:
        return "SavedEventRecord: InstructionAddress";
    case 48:
        return "SavedEventRecord: Data2";
    case 56:
        return "SavedEventRecord 31-24: generator state";
    case 64:
        return "EventCounter1 | EventCounter2";
    case 72:
        return "EventCounter3 | EventCounter4";
    case 80:
        return "EventCounter5 | EventCounter6";
    }
    return "Reserved";
}

std::string hex_row(const std::string &where, const uint8_t *b,
                    const std::string &name)
{
    std::string line = "  " + where + ":";
    for (int i = 0; i < 8; i++) {
        line += fmt(" %02x", b[i]);
    }
    return line + "  # " + name + "\n";
}

// ---------------------------------------------------------------------------
// The scenario interpreter

class Runner
{
  public:
    Runner()
    {
        lwp_state_init(&s_);
        ctx_.cfg = 0x0000002a8000007eull;
        ctx_.edx = 0x8000007f;
        ctx_.ecx = 0xf001032a;
        ctx_.ds_base = 0;
        ctx_.ds_limit = 0xffffffff;
        ctx_.ds_flags = LWP_DS_USABLE | LWP_DS_WRITABLE;
        ctx_.long64 = 1;
        ctx_.lma = 1;
        ctx_.va_bits = 48;
        ctx_.cpl = 3;
        area_.fill(0);
    }

    // Run @text; false (with *@err) for a malformed scenario
    bool run(const std::string &text, std::string *err)
    {
        std::istringstream in(text);
        std::string line;
        int lineno = 0;
        while (std::getline(in, line)) {
            lineno++;
            size_t hash = line.find('#');
            if (hash != std::string::npos) {
                line.erase(hash);
            }
            std::istringstream ls(line);
            std::vector<std::string> words;
            for (std::string w; ls >> w;) {
                words.push_back(w);
            }
            if (words.empty()) {
                continue;
            }
            error_.clear();
            command(words);
            if (!error_.empty()) {
                *err = fmt("line %d: ", lineno) + error_;
                return false;
            }
        }
        return true;
    }

    const std::string &output() const
    {
        return out_;
    }

  private:
    uint64_t num(const std::string &s)
    {
        const char *p = s.c_str();
        char *end = nullptr;
        uint64_t v = p[0] == '-' ? static_cast<uint64_t>(strtoll(p, &end, 0))
                                 : strtoull(p, &end, 0);
        if (end == p || *end != 0) {
            error_ = "bad number '" + s + "'";
        }
        return v;
    }

    // KEY=VALUE words from index @first on
    std::map<std::string, std::string> keys(const std::vector<std::string> &w,
                                            size_t first)
    {
        std::map<std::string, std::string> kv;
        for (size_t i = first; i < w.size(); i++) {
            size_t eq = w[i].find('=');
            if (eq == std::string::npos) {
                error_ = "expected KEY=VALUE, got '" + w[i] + "'";
                return kv;
            }
            kv[w[i].substr(0, eq)] = w[i].substr(eq + 1);
        }
        return kv;
    }

    uint32_t events(const std::string &list)
    {
        uint32_t ev = 0;
        std::istringstream ss(list);
        for (std::string e; std::getline(ss, e, '|');) {
            if (e == "val") {
                ev |= LWP_FEAT_VAL;
            } else if (e == "ire") {
                ev |= LWP_FEAT_IRE;
            } else if (e == "bre") {
                ev |= LWP_FEAT_BRE;
            } else if (e == "dme") {
                ev |= LWP_FEAT_DME;
            } else if (e == "cnh") {
                ev |= LWP_FEAT_CNH;
            } else if (e == "rnh") {
                ev |= LWP_FEAT_RNH;
            } else {
                ev |= static_cast<uint32_t>(num(e));
            }
        }
        return ev;
    }

    void need(const std::vector<std::string> &w, size_t n)
    {
        if (w.size() != n) {
            error_ = fmt("'%s' takes %zu operands", w[0].c_str(), n - 1);
        }
    }

    LwpMem mem()
    {
        res_ = LwpResult{};
        return m_.call();
    }

    void echo(const std::vector<std::string> &w)
    {
        std::string line;
        for (const std::string &x : w) {
            line += (line.empty() ? "" : " ") + x;
        }
        out_ += line + "\n";
    }

    void result(LwpStatus st, bool store)
    {
        std::string line = std::string("  => ") + status_name(st);
        if (st == LWP_FAULT_PF) {
            line += fmt(" addr=0x%" PRIx64 " len=%u write=%u", res_.fault_addr,
                        res_.fault_len, res_.fault_write);
        } else if (store && st == LWP_OK) {
            line += fmt(" full=%u interrupt=%u", res_.full, res_.interrupt);
        }
        out_ += line + "\n";
    }

    void command(const std::vector<std::string> &w)
    {
        const std::string &c = w[0];
        if (c == "ctx") {
            for (const auto &kv : keys(w, 1)) {
                uint64_t v = num(kv.second);
                if (kv.first == "cfg") {
                    ctx_.cfg = v;
                } else if (kv.first == "edx") {
                    ctx_.edx = static_cast<uint32_t>(v);
                } else if (kv.first == "ecx") {
                    ctx_.ecx = static_cast<uint32_t>(v);
                } else if (kv.first == "ds_base") {
                    ctx_.ds_base = v;
                } else if (kv.first == "ds_limit") {
                    ctx_.ds_limit = static_cast<uint32_t>(v);
                } else if (kv.first == "ds_flags") {
                    ctx_.ds_flags = static_cast<uint8_t>(v);
                } else if (kv.first == "long64") {
                    ctx_.long64 = static_cast<uint8_t>(v);
                } else if (kv.first == "lma") {
                    ctx_.lma = static_cast<uint8_t>(v);
                } else if (kv.first == "va_bits") {
                    ctx_.va_bits = static_cast<uint8_t>(v);
                } else if (kv.first == "cpl") {
                    ctx_.cpl = static_cast<uint8_t>(v);
                } else {
                    error_ = "unknown ctx key " + kv.first;
                }
            }
        } else if (c == "map") {
            need(w, 4);
            if (!error_.empty()) {
                return;
            }
            uint8_t perm = kNone;
            if (w[3] == "rw") {
                perm = kReadWrite;
            } else if (w[3] == "r") {
                perm = kRead;
            } else if (w[3] != "none") {
                error_ = "bad permission " + w[3];
                return;
            }
            m_.map(num(w[1]), num(w[2]), perm);
        } else if (c == "lwpcb") {
            lwpcb(w);
        } else if (c == "poke32" || c == "poke64") {
            need(w, 3);
            if (error_.empty()) {
                if (c == "poke32") {
                    m_.poke32(num(w[1]), static_cast<uint32_t>(num(w[2])));
                } else {
                    m_.poke64(num(w[1]), num(w[2]));
                }
            }
        } else if (c == "set") {
            for (const auto &kv : keys(w, 1)) {
                unsigned n = 0;
                if (sscanf(kv.first.c_str(), "counter%u", &n) != 1 || n < 1 ||
                    n > LWP_NUM_EVENTS) {
                    error_ = "unknown state field " + kv.first;
                    return;
                }
                s_.counter[n] = static_cast<int32_t>(num(kv.second));
            }
        } else if (c == "llwpcb") {
            need(w, 2);
            if (error_.empty()) {
                echo(w);
                LwpMem mm = mem();
                result(lwp_llwpcb(&s_, &ctx_, &mm, num(w[1]), &res_), false);
            }
        } else if (c == "slwpcb") {
            echo(w);
            LwpMem mm = mem();
            uint64_t ea = 0;
            LwpStatus st = lwp_slwpcb(&s_, &ctx_, &mm, &ea, &res_);
            result(st, false);
            if (st == LWP_OK) {
                out_ += fmt("  => ea=0x%" PRIx64 "\n", ea);
            }
        } else if (c == "sync") {
            echo(w);
            LwpMem mm = mem();
            result(lwp_sync(&s_, &ctx_, &mm, &res_), true);
        } else if (c == "retire") {
            retire(w);
        } else if (c == "lwpins" || c == "lwpval") {
            auto kv = keys(w, 1);
            uint64_t ip = num(kv["ip"]);
            uint32_t d1 = static_cast<uint32_t>(num(kv["data1"]));
            uint64_t d2 = num(kv["data2"]);
            uint32_t fl = static_cast<uint32_t>(num(kv["flags"]));
            if (!error_.empty()) {
                return;
            }
            echo(w);
            LwpMem mm = mem();
            LwpStatus st =
                c == "lwpins"
                    ? lwp_lwpins(&s_, &ctx_, &mm, ip, d1, d2, fl, &res_)
                    : lwp_lwpval(&s_, &ctx_, &mm, ip, d1, d2, fl, &res_);
            result(st, true);
        } else if (c == "xarea") {
            if (w.size() != 10) {
                error_ = "xarea OFFSET and 8 bytes";
                return;
            }
            uint64_t off = num(w[1]);
            if (off > LWP_XSAVE_SIZE - 8) {
                error_ = "xarea offset out of range";
                return;
            }
            for (int i = 0; i < 8; i++) {
                area_[off + i] = static_cast<uint8_t>(num(w[2 + i]));
            }
        } else if (c == "xsave") {
            echo(w);
            area_.fill(0);
            bool used = lwp_xsave(&s_, area_.data());
            out_ += fmt("  => in_use=%d\n", used);
        } else if (c == "xrstor") {
            echo(w);
            bool none = w.size() > 1 && w[1] == "none";
            bool en = lwp_xrstor(&s_, &ctx_, none ? nullptr : area_.data(),
                                 nullptr);
            out_ += fmt("  => enabled=%d\n", en);
        } else if (c == "dump") {
            dump(w);
        } else {
            error_ = "unknown command " + c;
        }
    }

    void lwpcb(const std::vector<std::string> &w)
    {
        if (w.size() < 2) {
            error_ = "lwpcb ADDR ...";
            return;
        }
        Lwpcb cb;
        uint64_t at = num(w[1]);
        for (const auto &kv : keys(w, 2)) {
            const std::string &k = kv.first;
            uint64_t v = num(kv.second);
            unsigned n = 0;
            if (k == "flags") {
                cb.flags = static_cast<uint32_t>(v);
            } else if (k == "size") {
                cb.buffer_size = static_cast<uint32_t>(v);
            } else if (k == "random") {
                cb.random = static_cast<uint8_t>(v);
            } else if (k == "base") {
                cb.buffer_base = v;
            } else if (k == "head") {
                cb.head = static_cast<uint32_t>(v);
            } else if (k == "missed") {
                cb.missed = v;
            } else if (k == "threshold") {
                cb.threshold = static_cast<uint32_t>(v);
            } else if (k == "filters") {
                cb.filters = static_cast<uint32_t>(v);
            } else if (k == "baseip") {
                cb.base_ip = v;
            } else if (k == "limitip") {
                cb.limit_ip = v;
            } else if (k == "tail") {
                cb.tail = static_cast<uint32_t>(v);
            } else if (k.size() == 2 && (k[0] == 'i' || k[0] == 'c') &&
                       (n = static_cast<unsigned>(k[1] - '0')) >= 1 &&
                       n <= LWP_NUM_EVENTS) {
                (k[0] == 'i' ? cb.interval : cb.counter)[n] =
                    static_cast<uint32_t>(v);
            } else {
                error_ = "unknown lwpcb key " + k;
            }
        }
        cb.write(m_, at);
    }

    void retire(const std::vector<std::string> &w)
    {
        LwpEventInfo info{};
        for (const auto &kv : keys(w, 1)) {
            const std::string &k = kv.first;
            if (k == "events") {
                info.events = events(kv.second);
                continue;
            }
            if (k == "kind") {
                info.branch_kind = kv.second == "cond"  ? LWP_BRANCH_COND
                                   : kv.second == "rel" ? LWP_BRANCH_REL
                                                        : LWP_BRANCH_INDIRECT;
                continue;
            }
            uint64_t v = num(kv.second);
            if (k == "ip") {
                info.ip = v;
            } else if (k == "target") {
                info.target = v;
            } else if (k == "taken") {
                info.taken = static_cast<uint8_t>(v);
            } else if (k == "predicted") {
                info.predicted = static_cast<uint8_t>(v);
            } else if (k == "ok") {
                info.predicted_ok = static_cast<uint8_t>(v);
            } else if (k == "fused") {
                info.fused = static_cast<uint8_t>(v);
            } else if (k == "src") {
                info.dme_source = static_cast<uint8_t>(v);
            } else if (k == "dav") {
                info.dme_addr_valid = static_cast<uint8_t>(v);
            } else if (k == "latency") {
                info.dme_latency = static_cast<uint32_t>(v);
            } else if (k == "daddr") {
                info.dme_addr = v;
            } else if (k == "cycles") {
                info.cycles = static_cast<uint32_t>(v);
            } else if (k == "ref") {
                info.ref_cycles = static_cast<uint32_t>(v);
            } else {
                error_ = "unknown retire key " + k;
            }
        }
        if (!error_.empty()) {
            return;
        }
        echo(w);
        LwpMem mm = mem();
        result(lwp_retire(&s_, &ctx_, &mm, &info, &res_), true);
    }

    void dump(const std::vector<std::string> &w)
    {
        if (w.size() >= 2 && w[1] == "ring" && w.size() == 5) {
            uint64_t base = num(w[2]);
            uint64_t first = num(w[3]);
            uint64_t count = num(w[4]);
            for (uint64_t n = first; n < first + count; n++) {
                uint64_t at = base + LWP_EVENT_RECORD_SIZE * n;
                uint8_t rec[LWP_EVENT_RECORD_SIZE];
                m_.peek(at, rec, sizeof(rec));
                out_ += fmt("ring slot %" PRIu64 ": EventId %u, %s\n", n,
                            rec[0], event_name(rec[0]));
                for (unsigned row = 0; row < 4; row++) {
                    out_ +=
                        hex_row(fmt("%016" PRIx64, at + 8 * row), rec + 8 * row,
                                record_row_name(rec[0], row));
                }
            }
        } else if (w.size() == 3 && w[1] == "lwpcb") {
            uint64_t at = num(w[2]);
            // LwpCbSize (Table 3-1): 0x80 / 8 + the highest EventId
            unsigned max = 0;
            for (unsigned n = 1; n <= LWP_NUM_EVENTS; n++) {
                if (ctx_.edx & (1u << n)) {
                    max = n;
                }
            }
            unsigned size = LWP_EVENT_OFFSET + 8 * max;
            out_ += fmt("lwpcb at 0x%" PRIx64 "\n", at);
            for (unsigned off = 0; off < size; off += 8) {
                uint8_t b[8];
                m_.peek(at + off, b, 8);
                out_ += hex_row(fmt("%016" PRIx64, at + off), b,
                                lwpcb_row_name(off));
            }
        } else if (w.size() == 2 && w[1] == "xsave") {
            out_ += "xsave area (component 62)\n";
            for (unsigned off = 0; off < LWP_XSAVE_SIZE; off += 8) {
                out_ += hex_row(fmt("+%02x", off), area_.data() + off,
                                xsave_row_name(off));
            }
        } else {
            error_ = "dump ring BASE FIRST COUNT | lwpcb ADDR | xsave";
        }
    }

    FakeMem m_;
    LwpState s_;
    LwpContext ctx_{};
    LwpResult res_{};
    std::array<uint8_t, LWP_XSAVE_SIZE> area_;
    std::string out_;
    std::string error_;
};

// ---------------------------------------------------------------------------

class Golden : public ::testing::TestWithParam<std::string>
{
};

TEST_P(Golden, OutputMatchesTheHandWrittenOut)
{
    // Byte-level scenarios; each .in cites its spec sections and doc rows
    const std::string dir = golden_dir();
    const std::string in_path = dir + "/" + GetParam() + ".in";
    const std::string out_path = dir + "/" + GetParam() + ".out";
    bool ok = false;
    std::string scenario = read_file(in_path, &ok);
    ASSERT_TRUE(ok) << "cannot read " << in_path;

    Runner r;
    std::string err;
    ASSERT_TRUE(r.run(scenario, &err)) << in_path << ": " << err;
    std::string got = "# " + GetParam() + ": the expected output of " +
                      GetParam() + ".in (LWP_GOLDEN_REBASE=1 rewrites it)\n" +
                      r.output();

    const char *rebase = getenv("LWP_GOLDEN_REBASE");
    if (rebase && std::string(rebase) == "1") {
        std::ofstream f(out_path, std::ios::binary | std::ios::trunc);
        f << got;
        ASSERT_TRUE(f.good()) << "cannot write " << out_path;
        GTEST_SKIP() << "LWP_GOLDEN_REBASE=1: rewrote " << out_path;
    }

    std::string want = read_file(out_path, &ok);
    ASSERT_TRUE(ok) << "cannot read " << out_path;
    if (got == want) {
        return;
    }
    // Every line that differs, numbered as in the .out file
    std::istringstream g(got), x(want);
    std::string report;
    int line = 0, shown = 0;
    while (true) {
        std::string gl, xl;
        bool gm = static_cast<bool>(std::getline(g, gl));
        bool xm = static_cast<bool>(std::getline(x, xl));
        line++;
        if (!gm && !xm) {
            break;
        }
        if (gm && xm && gl == xl) {
            continue;
        }
        if (++shown > 40) {
            report += "  ...\n";
            break;
        }
        report += fmt("%d:\n", line) + "  want: " + (xm ? xl : "<none>") +
                  "\n  got:  " + (gm ? gl : "<none>") + "\n";
    }
    ADD_FAILURE() << out_path << " differs from the engine's output "
                  << "(LWP_GOLDEN_REBASE=1 rewrites it):\n"
                  << report;
}

std::string scenario_name(const ::testing::TestParamInfo<std::string> &info)
{
    std::string n = info.param;
    for (char &c : n) {
        if (!isalnum(static_cast<unsigned char>(c))) {
            c = '_';
        }
    }
    return n;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Golden, ::testing::ValuesIn(scenarios()),
                         scenario_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Golden);

TEST(GoldenFiles, EveryScenarioHasItsOutput)
{
    // The runner finds its data: at least the four required scenarios
    const std::string dir = golden_dir();
    std::vector<std::string> names = scenarios();
    ASSERT_GE(names.size(), 4u) << "golden scenarios not found in " << dir;
    for (const std::string &n : names) {
        struct stat st;
        EXPECT_EQ(stat((dir + "/" + n + ".out").c_str(), &st), 0)
            << n << ".out is missing";
    }
}

} // namespace
