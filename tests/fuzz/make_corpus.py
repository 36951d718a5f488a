#!/usr/bin/env python3
"""Write the seed corpus of tests/fuzz/lwp_fuzz.cc into tests/fuzz/corpus/.

Each seed is a scenario in the target's input format (tests/fuzz/README.md):
the header, the LWPCB image, the XSAVE area, then operations.  libFuzzer
mutates from these, so each one reaches a different part of the engine.

    python3 tests/fuzz/make_corpus.py      # rewrites the seed-* files

SPDX-License-Identifier: GPL-2.0-or-later
"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")

(LLWPCB, SLWPCB, LWPINS, LWPVAL, RETIRE, STORE_EVENTS, COUNTDOWN, TAIL, SYNC,
 XSAVE, XRSTOR, PERM, POKE, CPL, MODE, CFG, CBADDR, NEXT_INTERVAL) = range(18)

IRE, BRE, DME, CNH, RNH = 1 << 2, 1 << 3, 1 << 4, 1 << 5, 1 << 6
ALL_EVENTS = 0x7E
INT = 1 << 31
IPF, IPI, CLF = 1 << 31, 1 << 30, 1 << 8
CAP_IP_FILTERING = 1 << 29
CAP_BRANCH_PREDICTION = 1 << 28
CAP_CACHE_LEVELS, CAP_CACHE_LATENCY = 1 << 30, 1 << 31
CAP_DATA_ADDRESS = 1 << 5
PERM_RW, PERM_R, PERM_NONE = 0, 1, 2


def u8(v):
    return struct.pack("<B", v & 0xFF)


def u16(v):
    return struct.pack("<H", v & 0xFFFF)


def u32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def u64(v):
    return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


def lwpcb(flags=ALL_EVENTS | INT, size=0, random=0, base=0, head=0,
          threshold=0, filters=0, base_ip=0, limit_ip=0, tail=0,
          intervals=(0,) * 6, counters=(0,) * 6):
    """An LWPCB image (0xb0 bytes); BufferBase/Size are usually fixed up."""
    cb = bytearray(0xB0)
    struct.pack_into("<IIQI", cb, 0, flags, size | random << 28, base, head)
    struct.pack_into("<IIQQ", cb, 0x20, threshold, filters, base_ip,
                     limit_ip)
    struct.pack_into("<I", cb, 0x40, tail)
    for n in range(6):
        struct.pack_into("<II", cb, 0x80 + 8 * n, intervals[n], counters[n])
    return bytes(cb)


def header(long64=True, cpl=3, ds_flags=3, featsel=4, edx=0, ecx=0, cfg=0,
           ds_base=0, ds_limit=0xFFFFFFFF, cb=(0, 0), ring=(0, 0x1000),
           ring_recs=63, fixup=0x7F, perms=0, image=None, area=bytes(128),
           va57=False):
    mode = int(long64) | int(va57) << 1 | cpl << 2 | ds_flags << 4
    h = u8(mode) + u8(featsel) + u32(edx) + u32(ecx) + u64(cfg)
    h += u32(ds_base) + u32(ds_limit)
    h += u8(cb[0]) + u16(cb[1]) + u8(ring[0]) + u16(ring[1])
    h += u8(ring_recs) + u8(fixup) + u8(perms)
    image = image if image is not None else lwpcb(
        intervals=(0x100,) * 6, counters=(3,) * 6, threshold=0x200)
    assert len(image) == 0xB0 and len(area) == 128
    return h + image + area


def ip_small(v):
    return u8(2) + u8(0) + u16(v)


def ip_raw(v):
    return u8(3) + u8(0) + u64(v)


def op_llwpcb(sel=1, arg=None):
    b = u8(LLWPCB) + u8(sel)
    if sel == 2:
        b += u8(arg)
    elif sel == 3:
        b += u64(arg)
    return b


def op_ins(ip=ip_small(0x10), data1=0x1234, data2=0x5678, flags=0xABCD,
           val=False):
    return u8(LWPVAL if val else LWPINS) + ip + u32(data1) + u64(data2) + \
        u32(flags)


def op_retire(events, ip=ip_small(0x20), cycles=3, ref=2, bits=0x1C,
              generated=False, target=ip_small(0x40), dme=(3, 200, 0x8000)):
    b = u8(STORE_EVENTS if generated else RETIRE) + ip + u8(events) + \
        u8(cycles) + u8(ref) + u8(bits)
    if events & BRE:
        b += target
    if events & DME:
        b += u8(dme[0]) + u16(dme[1]) + u64(dme[2])
    return b


def op_countdown(event=7, value=-1):
    return u8(COUNTDOWN) + u8((event - 1 if event != 7 else 7) |
                              (value + 2) << 3)


def op_tail(sel=0, arg=0):
    b = u8(TAIL) + u8(sel)
    if sel == 1:
        b += u8(arg)
    elif sel == 2:
        b += u32(arg)
    return b


def op_perm(which, perm, arg=0):
    b = u8(PERM) + u8(which | perm << 3)
    if which == 6:
        b += u8(arg)
    return b


def op_xrstor(sel, off=0, xor=0):
    b = u8(XRSTOR) + u8(sel)
    if sel == 1:
        b += u8(off) + u8(xor)
    return b


def op_cpl(c):
    return u8(CPL) + u8(c)


def op(code, *args):
    return u8(code) + b"".join(args)


def events_round():
    """Every kind of store once, with tail moves."""
    s = op_llwpcb(1)
    s += op_ins() * 3
    s += op_countdown(7, -1)
    s += op_retire(IRE | BRE | CNH | RNH, generated=True)
    s += op_countdown(7, -1)
    s += op_retire(ALL_EVENTS)
    s += op_tail(0)
    s += op_countdown(1, -1) + op_ins(val=True)
    s += op(SYNC) + op(NEXT_INTERVAL, u8(1))
    return s


SEEDS = {}

SEEDS["seed-64bit-basic"] = header() + events_round() + op(SLWPCB) + \
    op_llwpcb(0)

SEEDS["seed-legacy-ds"] = header(
    long64=False, featsel=1 | 4, ds_base=0x1000, cb=(0, 0x2000),
    ring=(0, 0x3000)) + events_round() + op(SLWPCB) + op(XSAVE, u8(0)) + \
    op_llwpcb(0)

SEEDS["seed-compat-mode"] = header(
    long64=False, featsel=4 | 8, ds_base=0, cb=(1, 0xFF80), ring=(1, 0x8000)
) + events_round() + op(MODE) + op_ins() + op(MODE) + \
    op(SLWPCB)

# 32 records and no consumer: the ring fills, MissedEvents counts
SEEDS["seed-ring-full"] = header(ring_recs=31) + op_llwpcb(1) + \
    op_ins() * 40 + op_tail(1, 4) + op_ins() * 8 + op_tail(3) + \
    op_countdown(7, -2) + op_retire(ALL_EVENTS) + op(SLWPCB)

# Page faults: the ring page becomes read-only, a record stays pending
SEEDS["seed-page-faults"] = header(cb=(0, 0xFF80), ring=(0, 0x1FC0),
                                   ring_recs=63) + op_llwpcb(1) + \
    op_ins() * 2 + op_perm(5, PERM_R) + op_ins() + op_countdown(7, -1) + \
    op_retire(IRE | BRE) + op_perm(5, PERM_RW) + op(SYNC) + \
    op_perm(1, PERM_R) + op(SLWPCB) + op_perm(1, PERM_RW) + op(SLWPCB) + \
    op_perm(0, PERM_NONE) + op_llwpcb(1) + op_cpl(0) + op_perm(5, PERM_R) + \
    op_countdown(7, -1) + op_retire(IRE) + op_ins() + op_llwpcb(0)


def saved_area(cb_addr, base, size, flags=ALL_EVENTS, head=0, pending=None,
               counters=(5,) * 6):
    a = bytearray(128)
    struct.pack_into("<QIIQII", a, 0, cb_addr, flags, head, base, size, 0)
    if pending:
        a[32:32 + len(pending)] = pending
    for n in range(6):
        struct.pack_into("<i", a, 64 + 4 * n, counters[n])
    return bytes(a)


# Context switches: XSAVE/XRSTOR at CPL 0, the lazy reload in ring 3
SEEDS["seed-xsave-xrstor"] = header(
    area=saved_area(0x10000, 0x11000, 0x800, head=0x40,
                    pending=bytes([2, 0, 0, 0]) + bytes(4) + u64(0x401000))
) + op_llwpcb(1) + op_ins() * 2 + op_cpl(0) + op(XSAVE, u8(1)) + \
    op_xrstor(3) + op_xrstor(0) + op_cpl(3) + op(SYNC) + op_ins() + \
    op_cpl(0) + op(XSAVE, u8(0)) + op_xrstor(1, 16, 0x40) + op_cpl(3) + \
    op_ins() + op_cpl(0) + op_xrstor(2) + op_cpl(3) + op_ins() + op(SLWPCB)

# Threshold interrupts, IP filtering, branch and DCache filters
SEEDS["seed-filters-threshold"] = header(
    ecx=CAP_IP_FILTERING | CAP_BRANCH_PREDICTION | CAP_CACHE_LEVELS |
    CAP_CACHE_LATENCY | CAP_DATA_ADDRESS | 0x1F | 2 << 6,
    fixup=0x7F & ~0x40,
    image=lwpcb(threshold=0x40, filters=IPF | CLF | 1 << 11 | 4,
                base_ip=0x400000, limit_ip=0x400100,
                intervals=(0x100,) * 6, counters=(1,) * 6)
) + op_llwpcb(1) + op_ins() * 4 + op_countdown(7, -1) + \
    op_retire(ALL_EVENTS, ip=u8(0) + u8(0x10), generated=True) + \
    op_countdown(7, -1) + \
    op_retire(ALL_EVENTS, ip=u8(1) + u8(0x10)) + op_countdown(7, -1) + \
    op_retire(BRE | DME, ip=u8(0) + u8(4), bits=0x19) + \
    op_tail(0) + op_ins(val=True, ip=u8(0) + u8(8)) + \
    op(CFG, u64(0x8000000F)) + op_ins()

# #GP paths: non-canonical LWPCB, reserved fields, small buffers, WRMSR
SEEDS["seed-gp"] = header(cb=(1, 0xFFC0), va57=False) + op_llwpcb(1) + \
    op_llwpcb(3, 0x800000000000) + op(MODE) + op_llwpcb(1) + \
    op(CBADDR, u8(1), u64(0x1000)) + op(CBADDR, u8(0)) + \
    op(POKE, u8(5), u32(1)) + op_llwpcb(1) + op(POKE, u8(1), u32(0x20)) + \
    op_llwpcb(1) + op_llwpcb(2, 0xF0)

# LLWPCB while enabled: the flush, then a second LWPCB
SEEDS["seed-reload-lwpcb"] = header(featsel=0) + op_llwpcb(1) + \
    op_ins() * 3 + op_countdown(7, -1) + op_retire(IRE) + \
    op(POKE, u8(0x80 // 4), u32(0x300)) + op_llwpcb(1) + op_ins() + \
    op_llwpcb(2, 0x40) + op_llwpcb(1) + op_perm(4, PERM_R) + op_llwpcb(0) + \
    op_perm(4, PERM_RW) + op_llwpcb(0)


# Reproducers of engine bugs the fuzzer found (tests/fuzz/README.md): in
# crashes/ and, so that every campaign runs them first, in corpus/ too.
CRASHES = {}

# XRSTOR at CPL 0 does not check the pointers (choice 30); the lazy reload
# in ring 3 then reads the LWPCB through a range that wraps at 2^64.
CRASHES["crash-xrstor-cpl0-range-wraps"] = header(
    cpl=0, area=saved_area(0xFFFFFFFFFFFFFFF0, 0x11000, 0x800)
) + op_xrstor(2) + op_cpl(3) + op_ins()

# Legacy mode, DS.base 0x100000: LLWPCB 0xfff00000 puts the LWPCB at linear
# address 0, i.e. LWP_CBADDR 0: the call succeeds and writes the LWPCB, but
# leaves LWP disabled with the new LWPCB's fields in the state.
CRASHES["crash-llwpcb-linear-zero"] = header(
    long64=False, ds_base=0x100000, cb=(3, 0), ring=(0, 0x1000)
) + op_llwpcb(1) + op(SLWPCB)

# A record is pending (its ring slot was read-only); at CPL 0 SLWPCB's flush
# stores it, then faults on the LWPCB's second page: #PF after writes.
CRASHES["crash-flush-fault-after-writes"] = header(cb=(0, 0xFF80)) + \
    op_llwpcb(1) + op_perm(5, PERM_R) + op_countdown(2, -1) + \
    op_retire(IRE) + op_perm(5, PERM_RW) + op_cpl(0) + op_perm(7, PERM_R) + \
    op(SLWPCB)

# The same for LWPINS at CPL 0: the pending record goes to the slot at
# 0x11fe0, LWPINS's own record to the read-only page at 0x12000.
CRASHES["crash-lwpins-fault-after-writes"] = header(
    ring=(0, 0x1FE0), ring_recs=63) + op_llwpcb(1) + op_perm(2, PERM_R) + \
    op_countdown(2, -1) + op_retire(IRE) + op_perm(2, PERM_RW) + \
    op_perm(3, PERM_R) + op_cpl(0) + op_ins()


def write(directory, name, data):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def main():
    for name, data in SEEDS.items():
        write(OUT, name, data)
        print("%-34s %4d bytes" % (name, len(data)))
    for name, data in CRASHES.items():
        write(os.path.join(HERE, "crashes"), name, data)
        write(OUT, name, data)
        print("%-34s %4d bytes (crashes/ and corpus/)" % (name, len(data)))


if __name__ == "__main__":
    main()
