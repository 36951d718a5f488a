// qemu-lwp engine: disassembly of the four LWP instructions (spec 5.1-5.4)
//
// QEMU's "-d in_asm" disassembles guest code with the capstone library,
// which does not know the LWP instructions; the x86 target asks this
// decoder first.  It accepts exactly the encodings QEMU's translator
// executes (target/i386/tcg/decode-new.c.inc, decode_XOP9_12 and
// decode_XOPA_12) and prints them in capstone's AT&T notation.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <cstdio>
#include <cstring>

#include "lwp-engine.hh"

namespace lwp
{
namespace
{

constexpr size_t kMaxInsnLen = 15;

const char *const kReg64[16] = {
    "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
    "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15",
};
const char *const kReg32[16] = {
    "eax", "ecx", "edx",  "ebx",  "esp",  "ebp",  "esi",  "edi",
    "r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d",
};
const char *const kSeg[6] = {"es", "cs", "ss", "ds", "fs", "gs"};

// Appends printf-style text to a bounded buffer.
class Out
{
  public:
    Out(char *buf, size_t size) : buf_(buf), size_(size)
    {
        buf_[0] = 0;
    }

    template <typename... Args> void put(const char *fmt, Args... args)
    {
        size_t len = strlen(buf_);
        snprintf(buf_ + len, size_ - len, fmt, args...);
    }

    void put(const char *text)
    {
        put("%s", text);
    }

    // capstone's rule: decimal up to 9, hex above
    void number(uint64_t v)
    {
        if (v > 9) {
            put("0x%llx", static_cast<unsigned long long>(v));
        } else {
            put("%llu", static_cast<unsigned long long>(v));
        }
    }

    void signed_number(int64_t v)
    {
        if (v < 0) {
            put("-");
            number(0 - static_cast<uint64_t>(v));
        } else {
            number(static_cast<uint64_t>(v));
        }
    }

  private:
    char *buf_;
    size_t size_;
};

// A little-endian reader that knows how many bytes it may read
class Bytes
{
  public:
    Bytes(const uint8_t *code, size_t size) : code_(code), size_(size)
    {
    }

    bool has(size_t n) const
    {
        return pos_ + n <= size_;
    }
    size_t pos() const
    {
        return pos_;
    }

    uint8_t byte()
    {
        return code_[pos_++];
    }

    uint32_t le(size_t n)
    {
        uint32_t v = 0;
        for (size_t i = 0; i < n; i++) {
            v |= uint32_t{code_[pos_ + i]} << (8 * i);
        }
        pos_ += n;
        return v;
    }

  private:
    const uint8_t *code_;
    size_t size_;
    size_t pos_ = 0;
};

enum class Decode { kOk, kNotLwp, kShort };

struct Prefixes {
    int seg = -1;      // the last segment override, index into kSeg
    bool addr = false; // 67h
};

// Segment overrides and 67h may precede an XOP; 66, F2, F3, F0 and REX
// make it #UD (APM volume 3, 1.2.1 and the XOP prefix rules).
Decode prefixes(Bytes &in, Prefixes &p)
{
    for (;;) {
        if (!in.has(1)) {
            return Decode::kShort;
        }
        switch (in.byte()) {
        case 0x26:
            p.seg = 0;
            break;
        case 0x2e:
            p.seg = 1;
            break;
        case 0x36:
            p.seg = 2;
            break;
        case 0x3e:
            p.seg = 3;
            break;
        case 0x64:
            p.seg = 4;
            break;
        case 0x65:
            p.seg = 5;
            break;
        case 0x67:
            p.addr = true;
            break;
        case 0x8f:
            return Decode::kOk;
        default:
            return Decode::kNotLwp;
        }
        if (in.pos() >= kMaxInsnLen) {
            return Decode::kNotLwp;
        }
    }
}

// The ModRM memory operand with 32- or 64-bit addressing
Decode mem32(Bytes &in, unsigned mode_bits, unsigned addr_bits, uint8_t modrm,
             unsigned rex_x, unsigned rex_b, Out &out)
{
    const char *const *regs = addr_bits == 64 ? kReg64 : kReg32;
    unsigned mod = modrm >> 6, rm = modrm & 7;
    int base = -1, index = -1;
    unsigned scale = 0;
    bool rip = false;
    size_t disp_len = mod == 1 ? 1 : mod == 2 ? 4 : 0;

    if (rm == 4) {
        if (!in.has(1)) {
            return Decode::kShort;
        }
        uint8_t sib = in.byte();
        unsigned sib_index = ((sib >> 3) & 7) | rex_x;
        scale = 1u << (sib >> 6);
        if (sib_index != 4) {
            index = static_cast<int>(sib_index);
        }
        if ((sib & 7) == 5 && mod == 0) {
            disp_len = 4;
        } else {
            base = static_cast<int>((sib & 7) | rex_b);
        }
    } else if (rm == 5 && mod == 0) {
        disp_len = 4;
        rip = mode_bits == 64;
    } else {
        base = static_cast<int>(rm | rex_b);
    }
    if (!in.has(disp_len)) {
        return Decode::kShort;
    }
    uint32_t raw = in.le(disp_len);
    int64_t disp =
        disp_len == 1 ? static_cast<int8_t>(raw) : static_cast<int32_t>(raw);

    if (rip) {
        if (disp != 0) {
            out.signed_number(disp);
        }
        out.put(addr_bits == 64 ? "(%rip)" : "(%eip)");
        return Decode::kOk;
    }
    if (base < 0 && index < 0) {
        // an absolute address: disp32, sign-extended to 64 bits in 64-bit
        // addressing, as the translator computes it
        out.number(addr_bits == 64 ? static_cast<uint64_t>(disp) : raw);
        return Decode::kOk;
    }
    if (disp != 0) {
        out.signed_number(disp);
    }
    out.put("(");
    if (base >= 0) {
        out.put("%%%s", regs[base]);
    }
    if (index >= 0) {
        out.put(", %%%s, %u", regs[index], scale);
    }
    out.put(")");
    return Decode::kOk;
}

// The ModRM memory operand with 16-bit addressing
Decode mem16(Bytes &in, uint8_t modrm, Out &out)
{
    static const char *const pairs[8] = {
        "%bx, %si", "%bx, %di", "%bp, %si", "%bp, %di",
        "%si",      "%di",      "%bp",      "%bx",
    };
    unsigned mod = modrm >> 6, rm = modrm & 7;
    size_t disp_len = mod == 1 ? 1 : mod == 2 ? 2 : 0;
    bool absolute = mod == 0 && rm == 6;

    if (absolute) {
        disp_len = 2;
    }
    if (!in.has(disp_len)) {
        return Decode::kShort;
    }
    uint32_t raw = in.le(disp_len);
    if (absolute) {
        out.number(raw);
        return Decode::kOk;
    }
    int64_t disp =
        disp_len == 1 ? static_cast<int8_t>(raw) : static_cast<int16_t>(raw);
    if (disp != 0) {
        out.signed_number(disp);
    }
    out.put("(%s)", pairs[rm]);
    return Decode::kOk;
}

Decode decode(Bytes &in, unsigned mode_bits, LwpDisasInsn *insn)
{
    Prefixes p;
    Decode d = prefixes(in, p);
    if (d != Decode::kOk) {
        return d;
    }
    if (!in.has(1)) {
        return Decode::kShort;
    }
    // 8F with map_select < 8 is POP Ev: not ours
    uint8_t xop1 = in.byte();
    unsigned map = xop1 & 0x1f;
    if (map != 9 && map != 0xa) {
        return Decode::kNotLwp;
    }
    if (!in.has(3)) {
        return Decode::kShort;
    }
    uint8_t xop2 = in.byte();
    uint8_t opcode = in.byte();
    uint8_t modrm = in.byte();
    unsigned reg = (modrm >> 3) & 7;
    unsigned vvvv = (~xop2 >> 3) & 15;
    bool long64 = mode_bits == 64;
    // 5.1-5.4: opcode 12h, /0 or /1, XOP.L = 0, pp = 00
    if (opcode != 0x12 || reg > 1 || (xop2 & 4) || (xop2 & 3)) {
        return Decode::kNotLwp;
    }
    // R, X and B only exist in 64-bit mode; W selects 64 bits only there
    unsigned rex_x = long64 && !(xop1 & 0x40) ? 8 : 0;
    unsigned rex_b = long64 && !(xop1 & 0x20) ? 8 : 0;
    const char *const *regs = long64 && (xop2 & 0x80) ? kReg64 : kReg32;

    Out op(insn->op_str, sizeof(insn->op_str));
    if (map == 9) {
        // LLWPCB, SLWPCB: register form only, vvvv = 1111b (all 4 bits)
        if ((modrm >> 6) != 3 || vvvv != 0) {
            return Decode::kNotLwp;
        }
        snprintf(insn->mnemonic, sizeof(insn->mnemonic), "%s",
                 reg == 0 ? "llwpcb" : "slwpcb");
        op.put("%%%s", regs[(modrm & 7) | rex_b]);
        return Decode::kOk;
    }

    // LWPINS, LWPVAL: r/m32, then imm32; vvvv names Data2
    unsigned addr_bits = mode_bits == 64   ? (p.addr ? 32 : 64)
                         : mode_bits == 32 ? (p.addr ? 16 : 32)
                                           : (p.addr ? 32 : 16);
    char rm_text[48];
    Out rm(rm_text, sizeof(rm_text));
    if ((modrm >> 6) == 3) {
        rm.put("%%%s", kReg32[(modrm & 7) | rex_b]);
    } else {
        if (p.seg >= 0) {
            rm.put("%%%s:", kSeg[p.seg]);
        }
        d = addr_bits == 16
                ? mem16(in, modrm, rm)
                : mem32(in, mode_bits, addr_bits, modrm, rex_x, rex_b, rm);
        if (d != Decode::kOk) {
            return d;
        }
    }
    if (!in.has(4)) {
        return Decode::kShort;
    }
    uint32_t imm = in.le(4);
    if (in.pos() > kMaxInsnLen) {
        return Decode::kNotLwp;
    }
    snprintf(insn->mnemonic, sizeof(insn->mnemonic), "%s",
             reg == 0 ? "lwpins" : "lwpval");
    op.put("$");
    op.number(imm);
    op.put(", %s, %%%s", rm_text, regs[long64 ? vvvv : vvvv & 7]);
    return Decode::kOk;
}

} // namespace
} // namespace lwp

extern "C" {

int lwp_disas(const uint8_t *code, size_t size, unsigned mode_bits,
              LwpDisasInsn *insn)
{
    if (mode_bits != 16 && mode_bits != 32 && mode_bits != 64) {
        return 0;
    }
    lwp::Bytes in(code, size);
    LwpDisasInsn out{};
    switch (lwp::decode(in, mode_bits, &out)) {
    case lwp::Decode::kOk:
        *insn = out;
        return static_cast<int>(in.pos());
    case lwp::Decode::kShort:
        return size < lwp::kMaxInsnLen ? -1 : 0;
    case lwp::Decode::kNotLwp:
        break;
    }
    return 0;
}

} // extern "C"
