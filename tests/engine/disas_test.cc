// lwp_disas() (lwp-engine.h) against GNU objdump.
//
// DisasObjdump.Mode64/Mode32/Mode16 generate, from fixed seeds, some 50000
// byte sequences per mode around the four LWP encodings (spec 5.1-5.4): every
// prefix combination the rules name (none, each segment override, 67h,
// override + 67h, and 66/F2/F3/F0/REX, which make it #UD), XOP.R/X/B,
// map_select 8-0xB (and the other values), W, vvvv, L, pp, opcodes
// 0x11-0x13, every ModRM byte, all 256 SIB bytes for the SIB forms,
// displacements (zero, negative, large) and imm32 values 0..9, 10,
// 0x7fffffff, 0xffffffff.  Each candidate is written to its own 32-byte slot
// of one file, padded with 0x90 so that objdump starts afresh at every slot,
// and the file is disassembled with
//   objdump -D -z -b binary -m i386:x86-64|i386|i8086 --insn-width=16
// (objdump's i8086 agrees with the rules for the LWP instructions: imm32,
// 32-bit r/m and vvvv registers, 67h selecting 32-bit addressing).  The line
// at each slot's start gives objdump's mnemonic, its length (the bytes it
// printed) and its operands.  For every candidate, lwp_disas() is called on
// the whole 32-byte slot:
//   - n > 0: objdump must print the same mnemonic, the same length n, and
//     the same operands after the normalisation below; objdump may print no
//     prefix word other than a segment override, addr16 or addr32.
//   - 0: objdump must not print an LWP mnemonic, except for its laxities
//     documented in tests/user/xop-encoding.c: it decodes an XOP after
//     66/F2/F3/LOCK/REX (and older binutils accepted XOP.L = 1).  Those are
//     counted and printed; for the prefix one, lwp_disas() of the same bytes
//     without the 66/F2/F3/F0/REX bytes must agree with objdump's line.
//   - -1 (or anything else) for a whole 32-byte slot is a failure.
// In addition, for every candidate, lwp_disas() on the slot's first k bytes,
// k = 0..32, each in a heap buffer of exactly k bytes (the ASan build catches
// any read beyond it), returns -1 up to some k and then the same value as for
// the whole slot; for an LWP instruction of length n that k is n (every
// proper prefix is -1).  The text lwp_disas() writes must also follow the
// notation lwp-engine.h promises (checked on the raw text): operands
// separated by ", ", numbers in decimal up to 9 and in lowercase 0x-hex
// without leading zeros above, no zero displacement before "(".
//
// The normalisation, applied by the same function to objdump's operands and
// to lwp_disas()'s op_str, turns the text into a canonical operand list:
//   - objdump's "# 0x..." comment (RIP-relative target) is dropped, and all
//     white space (so ", " and ",", "(%bx, %si)" and "(%bx,%si)" are equal);
//   - every number is parsed to its value ("$0x7" = "$7", "-0x10" = -16);
//   - an index of %riz/%eiz (objdump's name for "no index") is dropped with
//     its scale; a missing scale is 1 ("(%rax,%rbx)" = "(%rax,%rbx,1)");
//   - a memory operand without a base and an index is an absolute address,
//     compared modulo 2^address-size (objdump itself prints the same 32-bit
//     address as "-0x10(,%eiz,1)" or "0xfffffff0" depending on the ModRM
//     form); one with a base or an index keeps its signed displacement, so
//     "0x0(%rax)" = "(%rax)" but "0xfffffff0(%eax)" != "-0x10(%eax)";
//   - a segment prefix word objdump prints before the mnemonic ("ds lwpins
//     $0x7,(%rax),%eax": it does that for CS/DS/ES/SS in 64-bit mode, and
//     for any override on a register-only instruction) moves onto the memory
//     operand as "%ds:"; with no memory operand it is dropped.  addr16 and
//     addr32 words are dropped (the registers already show the address size).
//
// One objdump bug is worked around, not ignored: in 16-bit and 32-bit code
// objdump applies XOP.X to a SIB index ("(%eax,%r8d,1)", "(,%r12d,8)"),
// although XOP.R/X/B are ignored outside 64-bit mode.  For such a line the
// reference is objdump's line for the same bytes with R/X/B cleared (run in
// a second objdump pass), and the count is printed.
//
// DisasHand pins the exact text of a few encodings worked out by hand from
// spec 5.1-5.4, the XOP rules of the APM and the notation of lwp-engine.h.
//
// objdump reads about 1.5 MB per mode; the three modes take some 3.5 s
// (5 s in the ASan build).  Without objdump on the PATH the objdump tests
// are skipped.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lwp-engine.hh"

namespace
{

using Bytes = std::vector<uint8_t>;

constexpr size_t kSlot = 32;

std::string fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char *f, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof(buf), f, ap);
    va_end(ap);
    return buf;
}

std::string hex(const Bytes &b)
{
    std::string s;
    for (uint8_t x : b) {
        s += fmt("%s%02x", s.empty() ? "" : " ", x);
    }
    return s;
}

Bytes parse_hex(const char *s)
{
    Bytes b;
    while (*s) {
        if (isxdigit((unsigned char)s[0]) && isxdigit((unsigned char)s[1])) {
            b.push_back(
                (uint8_t)strtoul(std::string(s, 2).c_str(), nullptr, 16));
            s += 2;
        } else {
            s++;
        }
    }
    return b;
}

// lwp_disas() on exactly the given bytes, in a heap buffer of exactly that
// size, with the output filled with garbage first.
int disas(const Bytes &b, size_t size, unsigned mode, LwpDisasInsn *insn)
{
    std::unique_ptr<uint8_t[]> buf(new uint8_t[size]);
    std::copy(b.begin(), b.begin() + size, buf.get());
    memset(insn, 0xa5, sizeof(*insn));
    return lwp_disas(buf.get(), size, mode, insn);
}

bool terminated(const LwpDisasInsn &insn)
{
    return memchr(insn.mnemonic, 0, sizeof(insn.mnemonic)) &&
           memchr(insn.op_str, 0, sizeof(insn.op_str));
}

std::string said(int n, const LwpDisasInsn &insn)
{
    if (n <= 0) {
        return fmt("%d", n);
    }
    if (!terminated(insn)) {
        return fmt("%d (unterminated text)", n);
    }
    return fmt("%d \"%s\" \"%s\"", n, insn.mnemonic, insn.op_str);
}

bool is_lwp(const std::string &m)
{
    return m == "llwpcb" || m == "slwpcb" || m == "lwpins" || m == "lwpval";
}

// ---------------------------------------------------------------------------
// Normalisation (see the header comment)

bool parse_num(const std::string &s, uint64_t *v)
{
    size_t i = 0;
    bool neg = false;
    if (i < s.size() && s[i] == '-') {
        neg = true;
        i++;
    }
    int base = 10;
    if (s.compare(i, 2, "0x") == 0) {
        base = 16;
        i += 2;
    }
    if (i >= s.size()) {
        return false;
    }
    uint64_t r = 0;
    for (; i < s.size(); i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9') {
            d = c - '0';
        } else if (base == 16 && c >= 'a' && c <= 'f') {
            d = c - 'a' + 10;
        } else {
            return false;
        }
        r = r * base + d;
    }
    *v = neg ? 0 - r : r;
    return true;
}

std::vector<std::string> split_top(const std::string &s)
{
    std::vector<std::string> out;
    std::string cur;
    int depth = 0;
    for (char c : s) {
        if (c == '(') {
            depth++;
        } else if (c == ')') {
            depth--;
        }
        if (c == ',' && depth == 0) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty() || !out.empty()) {
        out.push_back(cur);
    }
    return out;
}

std::string signed_hex(uint64_t v)
{
    return (int64_t)v < 0 ? fmt("-0x%" PRIx64, 0 - v) : fmt("0x%" PRIx64, v);
}

// A memory operand; "?" + the text where it does not parse.
std::string canon_mem(const std::string &op, std::string seg,
                      unsigned addr_bits)
{
    std::string rest = op;
    size_t colon = rest.find(':');
    if (colon != std::string::npos) {
        seg = rest.substr(0, colon);
        rest = rest.substr(colon + 1);
    }
    size_t paren = rest.find('(');
    uint64_t disp = 0;
    std::string dtext = rest.substr(0, paren);
    if (!dtext.empty() && !parse_num(dtext, &disp)) {
        return "?" + op;
    }
    std::vector<std::string> parts;
    if (paren != std::string::npos) {
        if (rest.back() != ')') {
            return "?" + op;
        }
        std::string inner = rest.substr(paren + 1, rest.size() - paren - 2);
        parts = split_top(inner);
        if (parts.empty() || parts.size() > 3) {
            return "?" + op;
        }
    }
    std::string base = parts.size() > 0 ? parts[0] : "";
    std::string index = parts.size() > 1 ? parts[1] : "";
    std::string scale = parts.size() > 2 ? parts[2] : "1";
    if (index == "%riz" || index == "%eiz") {
        index.clear();
    }
    uint64_t sc;
    if (!index.empty() && !parse_num(scale, &sc)) {
        return "?" + op;
    }
    std::string out = seg.empty() ? "" : seg + ":";
    if (base.empty() && index.empty()) {
        uint64_t mask = addr_bits == 64 ? ~0ull : (1ull << addr_bits) - 1;
        return out + fmt("abs:0x%" PRIx64, disp & mask);
    }
    out += signed_hex(disp) + "(" + base;
    if (!index.empty()) {
        out += "," + index + fmt(",%" PRIu64, sc);
    }
    return out + ")";
}

// The canonical operand list of @ops; @seg is a segment prefix word printed
// before the mnemonic ("fs"), or "".
std::string canon_ops(std::string ops, const std::string &seg,
                      unsigned addr_bits)
{
    ops = ops.substr(0, ops.find('#'));
    ops.erase(std::remove_if(ops.begin(), ops.end(),
                             [](char c) { return isspace((unsigned char)c); }),
              ops.end());
    std::string seg_word = seg.empty() ? "" : "%" + seg;
    std::string out;
    for (const std::string &op : split_top(ops)) {
        std::string c;
        uint64_t v;
        if (!op.empty() && op[0] == '$') {
            c = parse_num(op.substr(1), &v) ? fmt("$0x%" PRIx64, v) : "?" + op;
        } else if (!op.empty() && op[0] == '%' &&
                   op.find_first_of(":(") == std::string::npos) {
            c = op;
        } else {
            c = canon_mem(op, seg_word, addr_bits);
            seg_word.clear();
        }
        out += (out.empty() ? "" : ",") + c;
    }
    return out;
}

// What is wrong with lwp_disas()'s raw op_str against the notation
// lwp-engine.h promises, or "".
std::string notation_error(const std::string &s)
{
    int depth = 0;
    for (size_t i = 0; i < s.size(); i++) {
        char c = s[i];
        depth += c == '(' ? 1 : c == ')' ? -1 : 0;
        if (c == ',' && depth == 0 &&
            (i + 2 > s.size() || s[i + 1] != ' ' || s[i + 2] == ' ')) {
            return "operands not separated by \", \"";
        }
        if (!isdigit((unsigned char)c) ||
            (i > 0 && isalnum((unsigned char)s[i - 1]))) {
            continue;
        }
        size_t j = i;
        while (j < s.size() && isalnum((unsigned char)s[j])) {
            j++;
        }
        std::string num = s.substr(i, j - i);
        uint64_t v = 0;
        bool ok = parse_num(num, &v);
        if (!ok) {
            return "\"" + num + "\" is not a number";
        }
        if (num.compare(0, 2, "0x") == 0 ? v <= 9 || num[2] == '0'
                                         : num.size() != 1) {
            return "\"" + num + "\": decimal up to 9, 0x-hex above";
        }
        if (v == 0 && j < s.size() && s[j] == '(') {
            return "zero displacement printed";
        }
        i = j - 1;
    }
    return "";
}

// ---------------------------------------------------------------------------
// Candidates

struct Enc {
    Bytes pfx;
    unsigned rxb = 0; // R, X, B as in a REX prefix (XOP stores them inverted)
    unsigned map = 0xa, w = 0, vvvv = 0xf /* the raw field */, l = 0, pp = 0;
    uint8_t op = 0x12, modrm = 0xc0, sib = 0x24;
    uint32_t disp = 0, imm = 0;
};

struct Cand {
    Bytes bytes;
    size_t xop = 0;         // offset of the 8F byte
    unsigned addr_bits = 0; // address size of a memory operand
    bool bad_prefix = false;
    bool xop_l = false;
};

bool is_bad_prefix(unsigned mode, uint8_t p)
{
    return p == 0x66 || p == 0xf2 || p == 0xf3 || p == 0xf0 ||
           (mode == 64 && (p & 0xf0) == 0x40);
}

unsigned addr_bits(unsigned mode, const Bytes &pfx)
{
    bool a67 = std::find(pfx.begin(), pfx.end(), 0x67) != pfx.end();
    switch (mode) {
    case 64:
        return a67 ? 32 : 64;
    case 32:
        return a67 ? 16 : 32;
    default:
        return a67 ? 32 : 16;
    }
}

void put_le(Bytes *b, uint32_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        b->push_back((uint8_t)(v >> (8 * i)));
    }
}

// The bytes of @e: prefixes, XOP, opcode, ModRM, then a SIB byte and a
// displacement where the ModRM form takes them, then an imm32 unless the
// map is 9.  Only the candidate's layout depends on this; what the bytes
// mean is objdump's business.
Cand encode(unsigned mode, const Enc &e)
{
    Cand c;
    c.bytes = e.pfx;
    c.xop = e.pfx.size();
    c.addr_bits = addr_bits(mode, e.pfx);
    c.xop_l = e.l;
    for (uint8_t p : e.pfx) {
        c.bad_prefix |= is_bad_prefix(mode, p);
    }
    Bytes &b = c.bytes;
    b.push_back(0x8f);
    b.push_back((uint8_t)((~e.rxb & 7) << 5 | (e.map & 0x1f)));
    b.push_back((uint8_t)(e.w << 7 | (e.vvvv & 15) << 3 | e.l << 2 | e.pp));
    b.push_back(e.op);
    b.push_back(e.modrm);
    unsigned mod = e.modrm >> 6, rm = e.modrm & 7, disp = 0;
    if (mod != 3 && c.addr_bits == 16) {
        disp = mod == 1 ? 1 : (mod == 2 || rm == 6) ? 2 : 0;
    } else if (mod != 3) {
        unsigned base = rm;
        if (rm == 4) {
            b.push_back(e.sib);
            base = e.sib & 7;
        }
        disp = mod == 1 ? 1 : (mod == 2 || base == 5) ? 4 : 0;
    }
    put_le(&b, e.disp, disp);
    if (e.map != 9) {
        put_le(&b, e.imm, 4);
    }
    return c;
}

class Rng
{
  public:
    explicit Rng(uint64_t seed) : s_(seed)
    {
    }
    uint64_t next()
    {
        uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    unsigned below(unsigned n)
    {
        return (unsigned)(next() % n);
    }
    template <class T> const T &pick(const std::vector<T> &v)
    {
        return v[below((unsigned)v.size())];
    }

  private:
    uint64_t s_;
};

const std::vector<uint32_t> kImms = {
    0, 1, 2,  3,    4,      5,          6,          7,
    8, 9, 10, 0x10, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff};
const std::vector<uint32_t> kDisps = {
    0,      1,          9,          10,         0x7f,       0x80,
    0xf0,   0xff,       0x7fff,     0x8000,     0xfff0,     0x7fffffff,
    0xffff, 0x80000000, 0xfffffff0, 0xffffffff, 0x12345678, 0x10};

std::vector<Bytes> good_prefixes()
{
    std::vector<Bytes> v = {{}, {0x67}, {0x67, 0x64}, {0x67, 0x3e}};
    for (uint8_t s : {0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65}) {
        v.push_back({s});
        v.push_back({s, 0x67});
    }
    return v;
}

std::vector<Bytes> bad_prefixes(unsigned mode)
{
    std::vector<Bytes> v = {{0x66}, {0xf2},       {0xf3},
                            {0xf0}, {0x66, 0x67}, {0x64, 0xf0}};
    if (mode == 64) {
        for (Bytes p : std::vector<Bytes>{
                 {0x40}, {0x41}, {0x48}, {0x4f}, {0x64, 0x48}, {0x67, 0x41}}) {
            v.push_back(p);
        }
    }
    return v;
}

class Gen
{
  public:
    explicit Gen(unsigned mode) : mode_(mode), rng_(0x4c5750 + mode)
    {
    }

    // Map 9 or 0xA, opcode 0x12, @modrm; the fields a set does not sweep
    // are random.
    Enc base(unsigned map, unsigned modrm)
    {
        Enc e;
        e.map = map;
        e.modrm = (uint8_t)modrm;
        e.rxb = rng_.below(8);
        e.w = rng_.below(2);
        e.vvvv = map == 9 && rng_.below(4) ? 0xf : rng_.below(16);
        e.sib = (uint8_t)rng_.below(256);
        e.disp = rng_.below(4) ? rng_.pick(kDisps) : (uint32_t)rng_.next();
        e.imm = rng_.below(4) ? rng_.pick(kImms) : (uint32_t)rng_.next();
        return e;
    }

    void add(const Enc &e)
    {
        Cand c = encode(mode_, e);
        if (seen_.insert(c.bytes).second) {
            out_.push_back(c);
        }
    }

    void all_sets()
    {
        // Every ModRM byte with every vvvv, and with every R/X/B and W
        for (unsigned map : {9u, 0xau}) {
            for (unsigned modrm = 0; modrm < 256; modrm++) {
                for (unsigned v = 0; v < 16; v++) {
                    Enc e = base(map, modrm);
                    e.vvvv = v;
                    add(e);
                }
                for (unsigned rxbw = 0; rxbw < 16; rxbw++) {
                    Enc e = base(map, modrm);
                    e.rxb = rxbw & 7;
                    e.w = rxbw >> 3;
                    add(e);
                }
            }
        }
        // Maps 8-0xB x opcodes 0x11-0x13 x L x pp x ModRM.reg x mod
        for (unsigned map = 8; map <= 0xb; map++) {
            for (unsigned op = 0x11; op <= 0x13; op++) {
                for (unsigned lpp = 0; lpp < 8; lpp++) {
                    for (unsigned modreg = 0; modreg < 32; modreg++) {
                        for (bool v15 : {true, false}) {
                            Enc e = base(map, modreg << 3 | rng_.below(8));
                            e.op = (uint8_t)op;
                            e.l = lpp >> 2;
                            e.pp = lpp & 3;
                            e.vvvv = v15 ? 0xf : rng_.below(16);
                            add(e);
                        }
                    }
                }
            }
        }
        // All 256 SIB bytes in the SIB forms of 32/64-bit addressing
        Bytes sib_pfx = mode_ == 16 ? Bytes{0x67} : Bytes{};
        for (uint8_t modrm : {0x04, 0x0c, 0x44, 0x4c, 0x84, 0x8c}) {
            for (unsigned sib = 0; sib < 256; sib++) {
                for (unsigned xb = 0; xb < 4; xb++) {
                    Enc e = base(0xa, modrm);
                    e.pfx = sib_pfx;
                    e.sib = (uint8_t)sib;
                    e.rxb = (e.rxb & 4) | xb;
                    add(e);
                }
                if (mode_ == 64) {
                    Enc e = base(0xa, modrm);
                    e.pfx = {0x67};
                    e.sib = (uint8_t)sib;
                    add(e);
                }
            }
        }
        // Every prefix combination: every ModRM byte after the allowed
        // ones, a sample after those that make the instruction #UD
        for (const Bytes &p : good_prefixes()) {
            for (unsigned map : {9u, 0xau}) {
                for (unsigned modrm = 0; modrm < 256; modrm++) {
                    Enc e = base(map, modrm);
                    e.pfx = p;
                    add(e);
                }
            }
        }
        for (const Bytes &p : bad_prefixes(mode_)) {
            for (unsigned map : {9u, 0xau}) {
                for (unsigned modreg = 0; modreg < 8; modreg++) {
                    for (unsigned i = 0; i < 4; i++) {
                        Enc e =
                            base(map, (modreg >> 1) << 6 | (modreg & 1) << 3 |
                                          rng_.below(8));
                        e.pfx = p;
                        add(e);
                    }
                }
            }
        }
        // Displacements x immediates in each displacement form
        for (const Bytes &p : std::vector<Bytes>{{}, {0x67}, {0x64}}) {
            std::vector<std::pair<uint8_t, uint8_t>> forms; // ModRM, SIB
            if (addr_bits(mode_, p) == 16) {
                forms = {{0x40, 0}, {0x82, 0}, {0x06, 0},
                         {0x46, 0}, {0x8f, 0}, {0x4b, 0}};
            } else {
                forms = {{0x40, 0},    {0x80, 0},    {0x05, 0},
                         {0x04, 0x25}, {0x44, 0x8a}, {0x84, 0x60}};
            }
            for (auto f : forms) {
                for (uint32_t d : kDisps) {
                    for (uint32_t imm : kImms) {
                        Enc e = base(0xa, f.first | rng_.below(2) << 3);
                        e.pfx = p;
                        e.sib = f.second;
                        e.disp = d;
                        e.imm = imm;
                        add(e);
                    }
                }
            }
        }
        // Random: every field random, most of them near the LWP encodings
        std::vector<Bytes> pfx = good_prefixes();
        for (const Bytes &p : bad_prefixes(mode_)) {
            pfx.push_back(p);
        }
        for (int i = 0; i < 6000; i++) {
            Enc e = base(rng_.below(4) ? 9 + rng_.below(2) : 8 + rng_.below(4),
                         rng_.below(256));
            e.pfx = rng_.below(3) ? Bytes{} : rng_.pick(pfx);
            e.op = (uint8_t)(rng_.below(4) ? 0x12 : 0x11 + rng_.below(3));
            e.l = rng_.below(5) == 0;
            e.pp = rng_.below(5) ? 0 : rng_.below(4);
            add(e);
        }
        // 8F with map_select other than 9 and 0xA (below 8 it is POP Ev)
        for (unsigned b1 = 0; b1 < 256; b1++) {
            if ((b1 & 0x1f) == 9 || (b1 & 0x1f) == 0xa) {
                continue;
            }
            for (uint8_t modrm : {0xc0, 0x08}) {
                Enc e = base(b1 & 0x1f, modrm);
                e.rxb = ~b1 >> 5 & 7;
                add(e);
            }
        }
    }

    std::vector<Cand> take()
    {
        return std::move(out_);
    }

  private:
    unsigned mode_;
    Rng rng_;
    std::set<Bytes> seen_;
    std::vector<Cand> out_;
};

// ---------------------------------------------------------------------------
// objdump

struct ObjLine {
    bool seen = false;
    int len = 0;
    std::vector<std::string> words; // prefix words before the mnemonic
    std::string mnem, ops, text;
    bool twin = false; // the line for the bytes with XOP.R/X/B cleared
};

bool is_prefix_word(const std::string &w)
{
    static const std::set<std::string> words = {
        "cs",     "ds",     "es",      "fs",   "gs",       "ss",      "addr16",
        "addr32", "data16", "data32",  "lock", "rep",      "repz",    "repnz",
        "repe",   "repne",  "notrack", "bnd",  "xacquire", "xrelease"};
    return words.count(w) || w.compare(0, 3, "rex") == 0;
}

// A register only 64-bit mode has (%r8d, %r12, ...)
bool has_r_digit(const std::string &ops)
{
    for (size_t r = ops.find("%r"); r != std::string::npos;
         r = ops.find("%r", r + 1)) {
        if (r + 2 < ops.size() && isdigit((unsigned char)ops[r + 2])) {
            return true;
        }
    }
    return false;
}

bool is_seg_word(const std::string &w)
{
    return w == "cs" || w == "ds" || w == "es" || w == "fs" || w == "gs" ||
           w == "ss";
}

void parse_text(const std::string &text, ObjLine *o)
{
    o->text = text;
    size_t i = 0;
    for (;;) {
        while (i < text.size() && text[i] == ' ') {
            i++;
        }
        size_t j = text.find(' ', i);
        std::string w = text.substr(i, j == std::string::npos ? j : j - i);
        if (j != std::string::npos && is_prefix_word(w)) {
            o->words.push_back(w);
            i = j;
            continue;
        }
        o->mnem = w;
        if (j != std::string::npos) {
            size_t k = text.find_first_not_of(' ', j);
            o->ops = k == std::string::npos ? "" : text.substr(k);
        }
        return;
    }
}

std::string objdump_version()
{
    FILE *f = popen("objdump --version 2>/dev/null", "r");
    if (!f) {
        return "";
    }
    char line[256] = "";
    if (!fgets(line, sizeof(line), f)) {
        line[0] = 0;
    }
    pclose(f);
    std::string s = line;
    while (!s.empty() && isspace((unsigned char)s.back())) {
        s.pop_back();
    }
    return s;
}

const char *machine(unsigned mode)
{
    return mode == 64 ? "i386:x86-64" : mode == 32 ? "i386" : "i8086";
}

// objdump's line at the start of each candidate's slot; "" or an error.
std::string run_objdump(unsigned mode, const std::vector<Bytes> &cands,
                        std::vector<ObjLine> *lines)
{
    std::string path = testing::TempDir() + "lwp-disas-XXXXXX";
    int fd = mkstemp(&path[0]);
    if (fd < 0) {
        return "mkstemp " + path + ": " + strerror(errno);
    }
    Bytes image(cands.size() * kSlot, 0x90);
    for (size_t i = 0; i < cands.size(); i++) {
        std::copy(cands[i].begin(), cands[i].end(), image.begin() + i * kSlot);
    }
    bool wrote = write(fd, image.data(), image.size()) == (ssize_t)image.size();
    close(fd);
    if (!wrote) {
        unlink(path.c_str());
        return "cannot write " + path;
    }
    std::string cmd = fmt("objdump -D -z -b binary -m %s --insn-width=16 "
                          "'%s' 2>&1",
                          machine(mode), path.c_str());
    FILE *f = popen(cmd.c_str(), "r");
    if (!f) {
        unlink(path.c_str());
        return "popen " + cmd + " failed";
    }
    lines->assign(cands.size(), ObjLine());
    char buf[1024];
    std::string errors;
    while (fgets(buf, sizeof(buf), f)) {
        // "  1e0:\t8f ea 78 12 06 f0 ff 07 00 00 00   \tlwpins $0x7,..."
        char *end;
        unsigned long addr = strtoul(buf, &end, 16);
        if (end == buf || end[0] != ':' || end[1] != '\t') {
            if (strstr(buf, "objdump:")) {
                errors += buf;
            }
            continue;
        }
        if (addr % kSlot || addr / kSlot >= cands.size()) {
            continue;
        }
        ObjLine &o = (*lines)[addr / kSlot];
        char *bytes = end + 2;
        char *tab = strchr(bytes, '\t');
        std::string text = tab ? tab + 1 : "";
        while (!text.empty() && isspace((unsigned char)text.back())) {
            text.pop_back();
        }
        if (tab) {
            *tab = 0;
        }
        for (char *p = bytes; *p; p++) {
            o.len += isxdigit((unsigned char)p[0]) &&
                     isxdigit((unsigned char)p[1]) &&
                     (p == bytes || p[-1] == ' ');
        }
        o.seen = true;
        parse_text(text, &o);
    }
    int status = pclose(f);
    unlink(path.c_str());
    if (status != 0) {
        return fmt("%s: exit status %d %s", cmd.c_str(), status,
                   errors.c_str());
    }
    return "";
}

// ---------------------------------------------------------------------------
// The comparison

// Failures by kind: every one counted, the first few of each printed.
class Failures
{
  public:
    void add(const std::string &kind, const std::string &msg)
    {
        if (count_[kind]++ < 25) {
            ADD_FAILURE() << kind << ": " << msg;
        }
    }
    void summary() const
    {
        for (const auto &k : count_) {
            if (k.second > 25) {
                ADD_FAILURE() << k.first << ": " << k.second
                              << " failures in all (25 printed)";
            }
        }
    }

  private:
    std::map<std::string, size_t> count_;
};

struct Stats {
    size_t candidates = 0, bytes = 0, lwp = 0, not_lwp = 0;
    size_t lax_prefix = 0, lax_l = 0, x_bug = 0;
};

// An objdump line's mnemonic and canonical operands, as one string.
std::string canon_objdump(const ObjLine &o, unsigned addr_bits)
{
    std::string seg;
    for (const std::string &w : o.words) {
        if (is_seg_word(w)) {
            seg = w;
        }
    }
    return o.mnem + " " + canon_ops(o.ops, seg, addr_bits);
}

std::string canon_insn(const LwpDisasInsn &insn, unsigned addr_bits)
{
    return std::string(insn.mnemonic) + " " +
           canon_ops(insn.op_str, "", addr_bits);
}

// Checks that lwp_disas() on the first k bytes of @slot, k = 0..32, is -1
// up to some k and then @full, and that an instruction of length n > 0 is
// told at k = n exactly.
void check_sizes(unsigned mode, const Bytes &cand, const Bytes &slot, int full,
                 const LwpDisasInsn &full_insn, Failures *fail)
{
    int first = -1;
    for (size_t k = 0; k <= kSlot; k++) {
        LwpDisasInsn insn;
        int r = disas(slot, k, mode, &insn);
        if (r == -1 && first < 0) {
            continue;
        }
        if (first < 0) {
            first = (int)k;
        }
        if (r != full ||
            (r > 0 && (!terminated(insn) ||
                       strcmp(insn.mnemonic, full_insn.mnemonic) != 0 ||
                       strcmp(insn.op_str, full_insn.op_str) != 0))) {
            fail->add("size",
                      fmt("mode %u, bytes %s: with the first %zu bytes "
                          "lwp_disas said %s, with the 32-byte slot %s",
                          mode, hex(cand).c_str(), k, said(r, insn).c_str(),
                          said(full, full_insn).c_str()));
            return;
        }
        if (k > 17 && first >= 0) {
            break; // past the longest candidate, all 0x90 padding
        }
    }
    if (full > 0 && first != full) {
        fail->add("size",
                  fmt("mode %u, bytes %s: a %d-byte instruction, but the "
                      "first non-(-1) answer came with %d bytes",
                      mode, hex(cand).c_str(), full, first));
    }
}

void run_mode(unsigned mode)
{
    std::string version = objdump_version();
    if (version.empty()) {
        GTEST_SKIP() << "objdump (GNU binutils) is not on the PATH";
    }
    auto t0 = std::chrono::steady_clock::now();
    Gen gen(mode);
    gen.all_sets();
    std::vector<Cand> cands = gen.take();
    std::vector<Bytes> images;
    for (const Cand &c : cands) {
        ASSERT_LE(c.bytes.size(), 16u);
        images.push_back(c.bytes);
    }
    std::vector<ObjLine> lines;
    std::string err = run_objdump(mode, images, &lines);
    ASSERT_EQ(err, "");

    Stats st;
    st.candidates = cands.size();
    st.bytes = cands.size() * kSlot;

    // objdump's XOP.X bug outside 64-bit mode: the reference is the line
    // for the same bytes with R/X/B cleared (a second objdump pass).
    std::vector<size_t> twin_of;
    std::vector<Bytes> twins;
    if (mode != 64) {
        for (size_t i = 0; i < cands.size(); i++) {
            const ObjLine &o = lines[i];
            if (is_lwp(o.mnem) && has_r_digit(o.ops)) {
                Bytes t = cands[i].bytes;
                t[cands[i].xop + 1] |= 0xe0;
                twin_of.push_back(i);
                twins.push_back(t);
            }
        }
        if (!twins.empty()) {
            std::vector<ObjLine> tl;
            err = run_objdump(mode, twins, &tl);
            ASSERT_EQ(err, "");
            for (size_t j = 0; j < twins.size(); j++) {
                lines[twin_of[j]] = tl[j];
                lines[twin_of[j]].twin = true;
            }
            st.x_bug = twins.size();
        }
    }

    Failures fail;
    for (size_t i = 0; i < cands.size(); i++) {
        const Cand &c = cands[i];
        const ObjLine &o = lines[i];
        Bytes slot = c.bytes;
        slot.resize(kSlot, 0x90);
        LwpDisasInsn insn;
        int n = disas(slot, kSlot, mode, &insn);
        std::string where = fmt("mode %u, bytes %s: objdump (-m %s%s) said "
                                "%d bytes \"%s\", lwp_disas said %s",
                                mode, hex(c.bytes).c_str(), machine(mode),
                                o.twin ? ", R/X/B cleared" : "", o.len,
                                o.text.c_str(), said(n, insn).c_str());
        if (!o.seen) {
            fail.add("objdump", "no line at the slot's start; " + where);
            continue;
        }
        if (mode != 64 && is_lwp(o.mnem) && has_r_digit(o.ops)) {
            fail.add("objdump", "a 64-bit register in legacy mode even with "
                                "R/X/B cleared; " +
                                    where);
            continue;
        }
        check_sizes(mode, c.bytes, slot, n, insn, &fail);
        if (n > 0) {
            st.lwp++;
            if (!terminated(insn)) {
                fail.add("text", "unterminated mnemonic or op_str; " + where);
                continue;
            }
            std::string note = notation_error(insn.op_str);
            if (!note.empty()) {
                fail.add("notation", note + "; " + where);
            }
            std::string want = canon_objdump(o, c.addr_bits);
            std::string got = canon_insn(insn, c.addr_bits);
            bool words_ok = std::all_of(
                o.words.begin(), o.words.end(), [](const std::string &w) {
                    return is_seg_word(w) || w == "addr16" || w == "addr32";
                });
            if (n != o.len || want != got || !words_ok) {
                fail.add("mismatch", where + fmt("; normalised: objdump "
                                                 "\"%s\", lwp_disas \"%s\"",
                                                 want.c_str(), got.c_str()));
            }
        } else if (n == 0) {
            st.not_lwp++;
            if (!is_lwp(o.mnem)) {
                continue;
            }
            if (c.bad_prefix) {
                // The documented laxity: what objdump reads after the
                // prefix must be what lwp_disas reads without it.
                st.lax_prefix++;
                Bytes plain;
                for (size_t k = 0; k < c.bytes.size(); k++) {
                    if (k >= c.xop || !is_bad_prefix(mode, c.bytes[k])) {
                        plain.push_back(c.bytes[k]);
                    }
                }
                size_t dropped = c.bytes.size() - plain.size();
                plain.resize(kSlot, 0x90);
                LwpDisasInsn pi;
                int pn = disas(plain, kSlot, mode, &pi);
                std::string want = canon_objdump(o, c.addr_bits);
                std::string got = pn > 0 && terminated(pi)
                                      ? canon_insn(pi, c.addr_bits)
                                      : said(pn, pi);
                if (pn != o.len - (int)dropped || want != got) {
                    fail.add("laxity cross-check",
                             where + fmt("; without the 66/F2/F3/F0/REX "
                                         "bytes lwp_disas said %s; "
                                         "normalised: objdump \"%s\", "
                                         "lwp_disas \"%s\"",
                                         said(pn, pi).c_str(), want.c_str(),
                                         got.c_str()));
                }
            } else if (c.xop_l) {
                st.lax_l++;
            } else {
                fail.add("mismatch", where);
            }
        } else {
            fail.add("result",
                     "-1 or worse for a whole 32-byte slot; " + where);
        }
    }
    fail.summary();
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    printf("[ disas    ] %s, -m %s: %zu candidates (%zu bytes), %zu LWP by "
           "lwp_disas, %zu not; documented divergences: %zu XOP after "
           "66/F2/F3/F0/REX, %zu XOP.L=1; objdump's XOP.X bug worked around "
           "%zu times; %.2f s\n",
           version.c_str(), machine(mode), st.candidates, st.bytes, st.lwp,
           st.not_lwp, st.lax_prefix, st.lax_l, st.x_bug, secs);
}

TEST(DisasObjdump, Mode64)
{
    run_mode(64);
}

TEST(DisasObjdump, Mode32)
{
    run_mode(32);
}

TEST(DisasObjdump, Mode16)
{
    run_mode(16);
}

// The normalisation itself, on objdump's and capstone's spellings: objdump's
// operands (with the segment word it printed before the mnemonic) against
// the capstone-style text, and whether they must compare equal.
struct NormCase {
    const char *objdump, *seg;
    unsigned addr_bits;
    const char *capstone;
    bool equal;
};

const NormCase kNorm[] = {
    {"$0x7,0x0(%rax,%riz,1),%eax", "", 64, "$7, (%rax), %eax", true},
    {"$0x7,-0x10(%rip),%eax   # 0x1dd", "", 64, "$7, -0x10(%rip), %eax", true},
    {"$0x7,-0x10(,%eiz,1),%eax", "", 32, "$7, 0xfffffff0, %eax", true},
    {"$0x7,(%bx,%si),%eax", "", 16, "$7, (%bx, %si), %eax", true},
    {"$0x7,(%rax),%eax", "ds", 64, "$7, %ds:(%rax), %eax", true},
    {"$0x7,%eax,%eax", "fs", 64, "$7, %eax, %eax", true},
    {"$0xffffffff,(%rax),%eax", "", 64, "$-1, (%rax), %eax", false},
    {"$0x7,-0x10(%eax),%eax", "", 32, "$7, 0xfffffff0(%eax), %eax", false},
    {"$0x7,(%rax,%rbx,2),%eax", "", 64, "$7, (%rax, %rbx), %eax", false},
    {"$0x7,(%rax),%eax", "", 64, "$7, (%rax), %rax", false},
};

// Raw op_str texts and whether they follow the notation of lwp-engine.h.
const std::pair<const char *, bool> kNotation[] = {
    {"$5, %edi, %edi", true},       {"$0xa, %fs:-0x10(%r15), %r15d", true},
    {"$0x5, %edi, %edi", false},    {"$10, %edi, %edi", false},
    {"$5,%edi,%edi", false},        {"$5, 0(%rax), %edi", false},
    {"$0x0a, (%rax), %edi", false}, {"$0xA, (%rax), %edi", false},
};

TEST(DisasObjdump, Normalisation)
{
    for (const NormCase &c : kNorm) {
        std::string a = canon_ops(c.objdump, c.seg, c.addr_bits);
        std::string b = canon_ops(c.capstone, "", c.addr_bits);
        EXPECT_EQ(a == b, c.equal) << c.objdump << " -> " << a << "\n"
                                   << c.capstone << " -> " << b;
    }
    for (const auto &c : kNotation) {
        EXPECT_EQ(notation_error(c.first).empty(), c.second) << c.first;
    }
}

// ---------------------------------------------------------------------------
// Hand-written cases: the exact text, from spec 5.1-5.4, the XOP rules and
// the notation of lwp-engine.h.

struct HandCase {
    unsigned mode;
    const char *bytes;
    int ret;
    const char *mnemonic, *op_str;
};

const HandCase kHand[] = {
    // LLWPCB/SLWPCB: map 9, mod 11b, vvvv 1111b; W=1 is 64-bit in 64-bit
    // mode only; XOP.B extends r/m in 64-bit mode only
    {64, "8f e9 f8 12 c0", 5, "llwpcb", "%rax"},
    {64, "8f e9 78 12 c8", 5, "slwpcb", "%eax"},
    {64, "8f 89 f8 12 c9", 5, "slwpcb", "%r9"},
    {32, "8f e9 f8 12 c0", 5, "llwpcb", "%eax"},
    {32, "8f 09 78 12 c1", 5, "llwpcb", "%ecx"},
    {16, "8f e9 f8 12 cf", 5, "slwpcb", "%edi"},
    // A segment override before a register operand prints nothing
    {64, "64 8f e9 f8 12 c0", 6, "llwpcb", "%rax"},
    // LWPINS/LWPVAL: $imm, r/m32, vvvv register (4 bits and W in 64-bit
    // mode, 3 bits and always 32-bit elsewhere)
    {64, "8f ea 40 12 cf 05 00 00 00", 9, "lwpval", "$5, %edi, %edi"},
    {64, "8f ea 00 12 c0 07 00 00 00", 9, "lwpins", "$7, %eax, %r15d"},
    {64, "8f ea 80 12 c8 07 00 00 00", 9, "lwpval", "$7, %eax, %r15"},
    {64, "8f ca f8 12 c0 0a 00 00 00", 9, "lwpins", "$0xa, %r8d, %rax"},
    {32, "8f ea 00 12 c8 09 00 00 00", 9, "lwpval", "$9, %eax, %edi"},
    {32, "8f 0a f8 12 c0 0a 00 00 00", 9, "lwpins", "$0xa, %eax, %eax"},
    // Memory operands and immediates
    {64, "8f ea 78 12 40 f0 0a 00 00 00", 10, "lwpins",
     "$0xa, -0x10(%rax), %eax"},
    {64, "8f ea 78 12 40 00 07 00 00 00", 10, "lwpins", "$7, (%rax), %eax"},
    {64, "8f ea f8 12 00 ff ff ff ff", 9, "lwpins",
     "$0xffffffff, (%rax), %rax"},
    {64, "8f ea 78 12 08 ff ff ff 7f", 9, "lwpval",
     "$0x7fffffff, (%rax), %eax"},
    {64, "64 8f ea 78 12 05 10 00 00 00 07 00 00 00", 14, "lwpins",
     "$7, %fs:0x10(%rip), %eax"},
    {64, "67 8f ea 78 12 0d 10 00 00 00 09 00 00 00", 14, "lwpval",
     "$9, 0x10(%eip), %eax"},
    {64, "8f ea 78 12 05 00 00 00 00 07 00 00 00", 13, "lwpins",
     "$7, (%rip), %eax"},
    {64, "8f ea 78 12 04 25 10 00 00 00 07 00 00 00", 14, "lwpins",
     "$7, 0x10, %eax"},
    {64, "65 67 8f ea 78 12 44 24 80 0a 00 00 00", 13, "lwpins",
     "$0xa, %gs:-0x80(%esp), %eax"},
    {32, "8f ea 78 12 43 10 00 00 00 00", 10, "lwpins", "$0, 0x10(%ebx), %eax"},
    {32, "67 8f ea 78 12 00 07 00 00 00", 10, "lwpins", "$7, (%bx, %si), %eax"},
    {16, "8f ea 78 12 00 07 00 00 00", 9, "lwpins", "$7, (%bx, %si), %eax"},
    // capstone separates base, index and scale with ", " too
    {64, "8f ea 78 12 04 98 07 00 00 00", 10, "lwpins",
     "$7, (%rax, %rbx, 4), %eax"},
    {16, "26 8f ea 78 12 47 fe 01 00 00 00", 11, "lwpins",
     "$1, %es:-2(%bx), %eax"},
    {16, "67 8f ea 78 12 00 07 00 00 00", 10, "lwpins", "$7, (%eax), %eax"},
    // Not LWP: bad prefixes, mod, vvvv, L, pp, reg, map, opcode, POP
    {64, "66 8f e9 f8 12 c0", 0, nullptr, nullptr},
    {64, "f3 8f e9 f8 12 c0", 0, nullptr, nullptr},
    {64, "f0 8f ea 78 12 00 07 00 00 00", 0, nullptr, nullptr},
    {64, "48 8f e9 f8 12 c0", 0, nullptr, nullptr},
    {32, "f2 8f e9 78 12 c0", 0, nullptr, nullptr},
    {64, "8f e9 f8 12 00", 0, nullptr, nullptr},
    {64, "8f e9 b8 12 c0", 0, nullptr, nullptr},
    {32, "8f e9 38 12 c0", 0, nullptr, nullptr},
    {16, "8f e9 38 12 c0", 0, nullptr, nullptr},
    {64, "8f e9 fc 12 c0", 0, nullptr, nullptr},
    {64, "8f ea 79 12 c0 07 00 00 00", 0, nullptr, nullptr},
    {64, "8f e9 f8 12 d0", 0, nullptr, nullptr},
    {64, "8f ea 78 12 d0 07 00 00 00", 0, nullptr, nullptr},
    {64, "8f e8 f8 12 c0", 0, nullptr, nullptr},
    {64, "8f eb 78 12 c0 07 00 00 00", 0, nullptr, nullptr},
    {64, "8f ea 78 13 c0 07 00 00 00", 0, nullptr, nullptr},
    {64, "8f c0", 0, nullptr, nullptr},
    {32, "90", 0, nullptr, nullptr},
    // Too few bytes to tell
    {64, "", -1, nullptr, nullptr},
    {64, "8f", -1, nullptr, nullptr},
    {64, "64", -1, nullptr, nullptr},
    {64, "8f e9 f8 12", -1, nullptr, nullptr},
    {64, "8f ea 78 12 00 07 00 00", -1, nullptr, nullptr},
    {64, "8f ea 78 12 04", -1, nullptr, nullptr},
    {16, "8f ea 78 12 06 10", -1, nullptr, nullptr},
};

TEST(DisasHand, ExactText)
{
    for (const HandCase &h : kHand) {
        Bytes b = parse_hex(h.bytes);
        LwpDisasInsn insn;
        int n = disas(b, b.size(), h.mode, &insn);
        SCOPED_TRACE(fmt("mode %u, bytes %s", h.mode, h.bytes));
        ASSERT_EQ(n, h.ret) << "lwp_disas said " << said(n, insn);
        if (n > 0) {
            ASSERT_TRUE(terminated(insn));
            EXPECT_STREQ(insn.mnemonic, h.mnemonic);
            EXPECT_STREQ(insn.op_str, h.op_str);
        }
    }
}

} // namespace
