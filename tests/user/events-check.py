#!/usr/bin/env python3
# events-check: Instructions Retired (EventId 2) and Branches Retired
# (EventId 3) records of lwp-events under qemu-x86_64, checked against an
# oracle nobody here wrote: the host CPU.
#
#   events-check.py QEMU LWP_EVENTS NATIVE_TRACE CPU@FEATURES...
#
# e.g.  events-check.py build/qemu-x86_64 lwp-events native-trace \
#           'max,+lwp@val,ire,bre,ipf' 'Opteron_G4,+lwp@val,ire,bre'
#
# FEATURES is what the CPU profile must make available (val, ire, bre and
# ipf for CPUID 8000_001C ECX LwpIpFiltering); the model enables exactly
# those of the requested events, and ignores IPF without ipf (Table 6-2).
#
# The expected records come from three sources only:
#   - native-trace: lwp-events --native single-stepped on the host CPU,
#     from ev_X_start to ev_X_stop: the address of every instruction that
#     retired, in order, and of every one that faulted (so every next
#     instruction executed is known, also across a signal);
#   - GNU objdump's disassembly of the same binary: the kind of each
#     instruction and its length (fall-through address);
#   - the spec's rules, written out below (spec 43724 rev 3.08, and
#     docs/implementation-choices.md where the spec leaves a choice).
# Nothing expected is taken from QEMU's output.  The straight-line ev_val
# block (LWPVAL and LWPINS, which the host cannot run) is modelled from
# objdump alone.
#
# The model (spec 1.1, 2.2, 2.3, 5.3, 5.4, 6):
#   - an instruction retired at CPL 3 is an IRE event, except SYSCALL,
#     SYSENTER and INT n, which leave CPL 3 (choice 39); LLWPCB is never
#     inside the range;
#   - a BRE event is a near branch: Jcc, JrCXZ, LOOP/LOOPE/LOOPNE are
#     conditional (filtered by NCB), JMP rel, CALL rel and every RET are
#     unconditional relative (NRB), JMP and CALL FF /4, FF /2 are absolute
#     (NAB); far JMP/RET, SYSCALL and INT are not branches;
#   - with IPF (and LwpIpFiltering), an instruction is eligible only when
#     BaseIP <= address <= LimitIP, with IPI only when outside;
#   - each eligible event decrements its counter; when it goes negative a
#     record naming that instruction is stored and the counter is reset
#     to the interval (Random 0): the (EventCounter+1)-th eligible event,
#     then every (EventInterval+1)-th.  Records of one instruction are in
#     ascending EventId order (choice 20), after the instruction's own
#     LWPVAL/LWPINS record (5.3, 5.4 notes);
#   - a signal handler runs with LWP disabled and rt_sigreturn restores
#     the LWP state from the frame, so nothing from the signal to the
#     rt_sigreturn counts, and a faulting instruction counts once, when
#     it retires after the handler (SIGNAL_HANDLER_COUNTS, choice 43);
#   - CNH and RNH (choice 48): the cost model charges one clock to every
#     instruction IRE counts and one more to each near branch (BRE's
#     kinds, whatever the NCB/NRB/NAB filters say); a reference clock is
#     a core clock.  A branch can take a counter from 0 to -2: the record
#     names it and the overrun shortens the next interval (spec 1.1 step
#     5, choice 19).  The records are generic (EventId, CoreId,
#     InstructionAddress);
#   - BRE record: Flags TKN = 1 for unconditional branches and for taken
#     conditional ones (next instruction != fall-through), FUS = 0, PRV =
#     PRD = 0 (no LwpBranchPrediction); TargetAddress (Data2) = the next
#     instruction executed;
#   - LLWPCB writes back Flags = requested AND available, and each enabled
#     event's EventInterval raised to the minimum (MIN_INTERVAL, 0 for
#     LWPVAL); a negative EventCounter counts as 0; LLWPCB 0 flushes the
#     counters (choices 15, 16, 17, 26).
# Every configuration runs twice: the outputs must be identical.  Prints
# PASS:/FAIL: lines and "events-check: N passed, N failed".
#
# SPDX-License-Identifier: GPL-2.0-or-later

import os
import re
import subprocess
import sys
import tempfile

# The implementation's minimum EventInterval for EventIds 2..6 (choice
# 17); LWPVAL's is 0 (Table 6-1)
MIN_INTERVAL = 1

# LWP state across a signal (choice 43): Linux's user-xstate rule.  The
# frame's XSAVE area receives the LWP state, the handler runs with LWP
# disabled and rt_sigreturn restores the state from the frame, so a
# SIGSEGV handler's instructions, its C library restorer and rt_sigreturn
# do not count, and the faulting instruction counts once, when it retires
# after the handler.  True would model a handler counted like other code.
SIGNAL_HANDLER_COUNTS = False

MASK26 = (1 << 26) - 1
VAL, IRE, BRE, CNH, RNH, INS = 1, 2, 3, 5, 6, 255
EVENTS = (VAL, IRE, BRE, CNH, RNH)
FEATURE_BIT = {"val": 1 << 1, "ire": 1 << 2, "bre": 1 << 3, "cnh": 1 << 5,
               "rnh": 1 << 6}
EVENT_NAME = {VAL: "VAL", IRE: "IRE", BRE: "BRE", CNH: "CNH", RNH: "RNH"}
CAP_IPF = 1 << 29
FILTER_BIT = {"NAB": 1 << 27, "NCB": 1 << 28, "NRB": 1 << 29,
              "IPI": 1 << 30, "IPF": 1 << 31}
KIND_FILTER = {"cond": "NCB", "rel": "NRB", "ind": "NAB"}
REC_TKN = 0x8000        # bit 31 of the first dword, bit 15 of Flags

# Trip counts: ev_main's branches depend on trips % 4; ev_dense is long
# enough for three records at interval 99999 (counter 5000)
TRIPS = {"main": 30, "dense": 35000, "sig": 4, "smc": 40}

# ---- objdump -------------------------------------------------------------

PREFIXES = {"rep", "repz", "repe", "repnz", "repne", "lock", "bnd",
            "notrack", "data16", "data32", "addr32", "cs", "ds", "es", "ss",
            "fs", "gs"}
JCC = re.compile(r"^j(n?(a|ae|b|be|c|e|g|ge|l|le|o|p|s|z)|pe|po|rcxz|ecxz"
                 r"|cxz)$")
LOOPS = {"loop", "loope", "loopz", "loopne", "loopnz"}
RETS = {"ret", "retq", "retl", "retw"}
LEAVE_CPL3 = {"syscall", "sysenter", "int", "int3", "int1", "icebp"}


class Insn:
    def __init__(self, addr, length, text):
        self.addr = addr
        self.length = length
        self.text = text
        toks = text.split("#")[0].split()
        while toks and (toks[0] in PREFIXES or toks[0].startswith("rex")):
            toks.pop(0)
        self.mnem = toks[0] if toks else ""
        self.ops = "".join(toks[1:])
        self.comment = text.split("#", 1)[1].strip() if "#" in text else ""
        m = self.mnem
        if m in ("jmpq", "callq"):
            m = m[:-1]
        if m in ("jmp", "call"):
            self.kind = "ind" if self.ops.startswith("*") else "rel"
        elif m in RETS:
            self.kind = "rel"
        elif JCC.match(m) or m in LOOPS:
            self.kind = "cond"
        else:
            self.kind = None        # not a branch (far transfers included)
        self.ire = m not in LEAVE_CPL3

    @property
    def fall(self):
        return self.addr + self.length


def disassemble(prog):
    out = subprocess.run(["objdump", "-d", "-w", "--insn-width=16", prog],
                         capture_output=True, text=True, check=True).stdout
    insns = {}
    for m in re.finditer(r"^ *([0-9a-f]+):\t([0-9a-f ]+)\t(.*)$", out, re.M):
        addr = int(m.group(1), 16)
        insns[addr] = Insn(addr, len(m.group(2).split()), m.group(3))
    return insns


def symbols(prog):
    out = subprocess.run(["nm", prog], capture_output=True, text=True,
                         check=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3:
            syms[f[2]] = int(f[0], 16)
    return syms


def read_u32(prog, addr):
    out = subprocess.run(["objdump", "-s", "--start-address=%#x" % addr,
                          "--stop-address=%#x" % (addr + 4), prog],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(r"^ [0-9a-f]+ ([0-9a-f]{8})", out, re.M)
    return int.from_bytes(bytes.fromhex(m.group(1)), "little")


# ---- the native trace ----------------------------------------------------

def native_trace(tracer, prog, block, syms):
    """[(address, next address executed)] of the retired instructions"""
    start, stop = syms["ev_%s_start" % block], syms["ev_%s_stop" % block]
    with tempfile.NamedTemporaryFile(mode="r") as f:
        r = subprocess.run([tracer, "-o", f.name, "%x" % start, "%x" % stop,
                            prog, "--native", "--block", block, "--trips",
                            str(TRIPS[block])],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            return None, (r.stderr + r.stdout).strip()
        lines = f.read().splitlines()
    events = []             # (kind, address): R retired, F faulted
    for line in lines:
        if line.startswith("# fault "):
            events.append(("F", int(line.split()[2], 16)))
        elif not line.startswith("#"):
            events.append(("R", int(line, 16)))
    retired = []
    restart = None          # in a handler until the faulting insn retires
    for i, (kind, addr) in enumerate(events):
        if kind == "F":
            restart = addr
        elif restart == addr:
            restart = None
        if kind == "R" and (restart is None or SIGNAL_HANDLER_COUNTS):
            nxt = events[i + 1][1] if i + 1 < len(events) else stop
            retired.append((addr, nxt))
    return retired, "%d instructions retired, %d faults" % (
        sum(k == "R" for k, _ in events), sum(k == "F" for k, _ in events))


def coverage(retired, insns):
    """The kinds of transfer a trace exercises"""
    seen = set()
    for addr, nxt in retired:
        i = insns[addr]
        name = i.mnem + ("." + str(i.length) if i.mnem in ("jmp", "jne", "je")
                         else "")
        if i.kind == "cond":
            seen.add(name + (" taken" if nxt != i.fall else " not taken"))
        elif i.kind == "ind":
            seen.add(i.mnem + (" *reg" if i.ops.startswith("*%") else
                               " *mem"))
        elif i.kind == "rel":
            seen.add(name + (" imm16" if i.mnem in RETS and i.ops else ""))
        elif i.text.startswith("rep"):
            seen.add("rep " + i.mnem)
        else:
            seen.add(i.mnem)
    return seen


MAIN_KINDS = ["je.2 taken", "je.2 not taken", "jne.6 taken",
              "jne.6 not taken", "jrcxz taken", "jrcxz not taken",
              "jecxz taken", "jecxz not taken", "loop taken",
              "loop not taken", "loope taken", "loope not taken",
              "loopne taken", "loopne not taken", "jmp.2", "jmp.5",
              "jmp *reg", "jmp *mem", "call", "call *reg", "call *mem",
              "ret", "ret imm16", "lretq", "ljmp", "syscall", "rep movsb",
              "rep stos"]


# ---- ev_val, from objdump alone ------------------------------------------

REG64 = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp"] + \
    ["r%d" % n for n in range(8, 16)]


def reg_name(r):
    """(64-bit register, width) of an AT&T register operand"""
    r = r.lstrip("%")
    if r in REG64:
        return r, 64
    if r.startswith("e") and "r" + r[1:] in REG64:
        return "r" + r[1:], 32
    if r.endswith("d") and r[:-1] in REG64:
        return r[:-1], 32
    raise ValueError("register " + r)


def val_block(prog, insns, syms):
    """[(address, next, (EventId, Flags, Data1, Data2) or None)]"""
    regs = {}
    start, stop = syms["ev_val_start"], syms["ev_val_stop"]
    addr = syms["ev_val"]
    seq = []
    while addr != stop:
        i = insns[addr]
        if i.kind or not i.ire:
            raise ValueError("ev_val is not straight-line at %#x" % addr)
        rec = None
        m = re.match(r"^\$(0x[0-9a-f]+),(.+),(%\w+)$", i.ops)
        if i.mnem in ("mov", "movabs") and m is None:
            mm = re.match(r"^\$(0x[0-9a-f]+),(%\w+)$", i.ops)
            r, w = reg_name(mm.group(2))
            regs[r] = int(mm.group(1), 16) & ((1 << w) - 1)
        elif i.mnem in ("lwpval", "lwpins"):
            if m.group(2).startswith("%"):
                r, _ = reg_name(m.group(2))
                d1 = regs[r] & 0xffffffff
            else:
                d1 = read_u32(prog, int(i.comment.split()[0], 16))
            r, w = reg_name(m.group(3))
            d2 = regs[r] & ((1 << w) - 1)
            rec = (VAL if i.mnem == "lwpval" else INS,
                   int(m.group(1), 16) & 0xffff, d1, d2)
        else:
            dest = i.ops.split(",")[-1]
            if dest.startswith("%"):
                regs.pop(reg_name(dest)[0], None)
        if addr >= start:
            seq.append((addr, i.fall, rec))
        addr = i.fall
    return seq


# ---- the model -----------------------------------------------------------

def sext26(v):
    v &= MASK26
    return v - (1 << 26) if v & (1 << 25) else v


def model(case, seq, insns, features):
    """Expected (Flags, {n: (interval, counter)}, records)"""
    asked = case["events"]
    avail = sum(FEATURE_BIT[f] for f in features if f in FEATURE_BIT)
    flags = sum(1 << n for n in asked) & avail
    on = {n for n in asked if flags & (1 << n)}
    interval, counter = {}, {}
    for n, (i, c) in asked.items():
        if n in on:
            interval[n] = max(sext26(i), 0 if n == VAL else MIN_INTERVAL)
            counter[n] = max(sext26(c), 0)
    filt = case["filters"]
    ipf = "IPF" in filt and "ipf" in features
    ipi = "IPI" in filt
    base, limit = case["base_ip"], case["limit_ip"]
    recs = []

    def count(n, ip, rec, w=1):
        counter[n] -= w
        if counter[n] < 0:
            recs.append(rec)
            counter[n] = interval[n] + counter[n] + 1

    for addr, nxt, own in seq:
        i = insns[addr]
        ok = not ipf or ((base <= addr <= limit) != ipi)
        if own and own[0] == INS:
            recs.append((INS, 0, own[1], own[2], addr, own[3], 0))
        if own and own[0] == VAL and VAL in on and ok:
            count(VAL, addr, (VAL, 0, own[1], own[2], addr, own[3], 0))
        if IRE in on and i.ire and ok:
            count(IRE, addr, (IRE, 0, 0, 0, addr, 0, 0))
        if BRE in on and i.kind and ok and KIND_FILTER[i.kind] not in filt:
            tkn = i.kind != "cond" or nxt != i.fall
            count(BRE, addr, (BRE, 0, REC_TKN if tkn else 0, 0, addr, nxt,
                              0))
        for n in (CNH, RNH):
            if n in on and i.ire and ok:
                count(n, addr, (n, 0, 0, 0, addr, 0, 0),
                      2 if i.kind else 1)
    wb = {}
    for n in EVENTS:
        i, c = asked.get(n, (0, 0))
        if n in on:
            wb[n] = (interval[n] & MASK26, counter[n] & MASK26)
        else:
            wb[n] = (i & MASK26, c & MASK26)
    return flags, wb, recs


# ---- running lwp-events under QEMU ---------------------------------------

def run(qemu, cpu, prog, args):
    try:
        r = subprocess.run([qemu, "-cpu", cpu, prog] + args,
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None
    out = {"rc": r.returncode, "text": r.stdout, "recs": [], "events": {},
           "stderr": r.stderr}
    for line in r.stdout.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "CPUID":
            out["cpuid"] = [int(x.split("=")[1], 16) for x in f[2:6]]
        elif f[0] == "FLAGS":
            out["flags"] = int(f[1], 16)
            out["filters"] = [int(x, 16) for x in f[3:8:2]]
        elif f[0] == "EVENT":
            out["events"][int(f[1])] = (int(f[3], 16), int(f[5], 16))
        elif f[0] == "REC":
            out["recs"].append(tuple(int(x, 0) for x in f[1:]))
        elif f[0] in ("HEAD", "MISSED"):
            out[f[0].lower()] = int(f[1])
    return out


def kind_label(i):
    m = i.mnem.rstrip("q") if i.mnem in ("jmpq", "callq") else i.mnem
    if m in ("jrcxz", "jecxz", "jcxz"):
        return "JrCXZ"
    if m in LOOPS:
        return "LOOPcc"
    if i.kind == "cond":
        return "Jcc"
    if m in RETS:
        return "RET"
    return m.upper() + (" ind" if i.kind == "ind" else " rel")


def bre_kinds(recs, insns):
    """'kind got/want' for the BRE records of each branch kind"""
    def count(rs):
        n = {}
        for r in rs:
            if r[0] == BRE and r[4] in insns:
                k = kind_label(insns[r[4]])
                n[k] = n.get(k, 0) + 1
        return n
    got, want = count(recs[0]), count(recs[1])
    return ", ".join("%s %d/%d" % (k, got.get(k, 0), want.get(k, 0))
                     for k in sorted(set(got) | set(want)))


def fmt_rec(r):
    if r is None:
        return "none"
    return ("{EventId %d, CoreId %d, Flags 0x%04x, Data1 0x%x, IP 0x%x, "
            "Data2 0x%x, rsvd 0x%x}" % r)


def names(bits):
    return ", ".join(EVENT_NAME[n] for n in EVENTS
                     if bits & (1 << n)) or "none"


def case_args(case):
    args = ["--block", case["block"], "--trips",
            str(TRIPS.get(case["block"], 1))]
    for n, opt in ((VAL, "--val"), (IRE, "--ire"), (BRE, "--bre"),
                   (CNH, "--cnh"), (RNH, "--rnh")):
        if n in case["events"]:
            args += [opt, "%d:%d" % case["events"][n]]
    if case["filters"]:
        args += ["--filters", ",".join(case["filters"])]
    if case["base"]:
        args += ["--base", case["base"], "--limit", case["limit"]]
    return args


def case_name(case):
    ev = " ".join("%s %d:%d" % ((EVENT_NAME[n],) + case["events"][n])
                  for n in sorted(case["events"]))
    s = "%s, %s" % (case["block"], ev)
    if case["filters"]:
        s += ", " + "+".join(case["filters"])
    if case["base"]:
        s += " [%s, %s]" % (case["base"], case["limit"])
    return s


def cases():
    out = []

    def add(block, events, filters=(), base=None, limit=None):
        out.append({"block": block, "events": events,
                    "filters": list(filters), "base": base,
                    "limit": limit})

    # intervals: 0 (raised to the minimum), 1, 2, 7; each event alone and
    # both together
    for i in (0, 1, 2, 7):
        for ev in ((IRE,), (BRE,), (IRE, BRE)):
            add("main", {n: (i, i) for n in ev})
    # 99999: one early record (counter 100), then the flushed counter
    # shows the count went on; ev_dense: three records of each
    for ev in ((IRE,), (BRE,), (IRE, BRE)):
        add("main", {n: (99999, 100) for n in ev})
        add("dense", {n: (99999, 5000) for n in ev})
    # negative values: interval -> minimum, counter -> 0
    add("main", {IRE: (-1, -3), BRE: (-5, -1)})
    # the clock events: alone, with the others, odd intervals so that
    # branches (two clocks) take the counter to -2 now and then
    for i in (0, 1, 2, 7):
        add("main", {CNH: (i, i)})
        add("main", {RNH: (i, i + 1)})
    for i in (1, 4):
        add("main", {IRE: (i, i), BRE: (i, i), CNH: (i, i + 1),
                     RNH: (i + 2, i)})
    add("dense", {CNH: (99999, 5000), RNH: (99999, 4999)})
    add("dense", {IRE: (99999, 5000), BRE: (99999, 5000),
                  CNH: (99999, 5000)})
    add("main", {CNH: (2, 2), BRE: (0, 0)}, ("NCB", "NRB", "NAB"))
    # filters; counters 0 and 1 together record every other eligible event
    ranges = (("IPF",), "ev_ipf_a", "ev_ipf_b"), \
        (("IPF",), "ev_ipf_b", "ev_ipf_c"), \
        (("IPF", "IPI"), "ev_ipf_a", "ev_ipf_b"), \
        (("IPF",), "ev_ipf_a+1", "ev_ipf_c+1"), \
        (("IPF", "IPI"), "ev_ipf_a+1", "ev_ipf_c+1"), \
        (("IPF", "NRB"), "ev_ipf_a", "ev_ipf_c")
    for c in (0, 1):
        for f in (("NCB",), ("NRB",), ("NAB",), ("NCB", "NRB", "NAB")):
            add("main", {IRE: (2, 2), BRE: (0, c)}, f)
        for f, b, lim in ranges:
            add("main", {IRE: (0, c), BRE: (0, c)}, f, b, lim)
    for f, b, lim in ranges:
        add("main", {IRE: (0, 0)}, f, b, lim)
        add("main", {CNH: (0, 1), RNH: (2, 0)}, f, b, lim)
    # a SIGSEGV handler and a restarted store
    for c in (0, 1):
        add("sig", {IRE: (0, c), BRE: (0, c)})
    add("sig", {IRE: (7, 7), BRE: (2, 2)})
    for c in (0, 1, 2):
        add("sig", {CNH: (0, c), RNH: (2, c)})
    # stores into the running translation block (self-modifying code)
    for i in (0, 1, 2, 7):
        add("smc", {IRE: (i, i), BRE: (i, i)})
    add("smc", {IRE: (3, 3), BRE: (1, 1), CNH: (4, 4)})
    # LWPVAL and LWPINS (objdump-only model)
    add("val", {VAL: (0, 0), IRE: (0, 0)})
    add("val", {VAL: (0, 0), IRE: (0, 1)})
    add("val", {VAL: (1, 0), IRE: (2, 0)})
    add("val", {VAL: (2, 1)})
    add("val", {VAL: (-3, -1), IRE: (1, 1)})
    add("val", {IRE: (0, 0)})
    add("val", {VAL: (0, 0), CNH: (0, 0), RNH: (1, 1)})
    add("val", {VAL: (0, 0), IRE: (0, 0)}, ("IPF",), "ev_val_start+1",
        "ev_val_mid")
    return out


def resolve(sym, syms):
    name, _, off = sym.partition("+")
    return syms[name] + (int(off, 0) if off else 0)


class Checker:
    def __init__(self):
        self.passed = self.failed = 0

    def report(self, ok, msg):
        print(("PASS: " if ok else "FAIL: ") + msg)
        sys.stdout.flush()
        self.passed += bool(ok)
        self.failed += not ok


def check_case(ck, qemu, cpu, features, prog, case, seq, insns):
    label = "[%s] %s" % (cpu, case_name(case))
    if "IPF" in case["filters"] and "ipf" not in features:
        label += " (IPF ignored: no LwpIpFiltering)"
    if seq is None:
        ck.report(False, "%s: no native trace of ev_%s" % (label,
                                                         case["block"]))
        return
    flags, wb, want = model(case, seq, insns, features)
    args = case_args(case)
    runs = [run(qemu, cpu, prog, args) for _ in range(2)]
    got = runs[0]
    if got is None or got["rc"] != 0 or "missed" not in got:
        ck.report(False, "%s: lwp-events %s runs to the end (%s)" % (
            label, " ".join(args), "timeout" if got is None else
            "exit %d: %s" % (got["rc"], (got["text"] + got["stderr"])
                             .strip()[-300:])))
        return
    # what LLWPCB wrote back
    asked = sum(1 << n for n in case["events"])
    bad = []
    if got["flags"] != flags:
        cpuid = got.get("cpuid", [0, 0, 0, 0])
        bad.append("Flags 0x%08x, expected 0x%08x: %s %s (CPUID 8000_001C "
                   "EAX=0x%08x: -cpu %s makes %s available; this test "
                   "needs %s)" % (
                       got["flags"], flags, names(flags & ~got["flags"]),
                       "masked out by LLWPCB" if flags & ~got["flags"]
                       else "", cpuid[0], cpu, names(cpuid[0]),
                       names(asked)))
    for n in EVENTS:
        if got["events"].get(n, (None,))[0] != wb[n][0]:
            bad.append("EventInterval%d 0x%08x, expected 0x%08x%s" % (
                n, got["events"].get(n, (-1,))[0], wb[n][0],
                " (requested %d; the minimum is %d)" % (
                    case["events"][n][0], 0 if n == VAL else MIN_INTERVAL)
                if n in case["events"] else ""))
    want_f = [sum(FILTER_BIT[b] for b in case["filters"]),
              case["base_ip"], case["limit_ip"]]
    if got["filters"] != want_f:
        bad.append("Filters, BaseIP, LimitIP changed from 0x%x, 0x%x, 0x%x "
                   "to 0x%x, 0x%x, 0x%x" % tuple(want_f + got["filters"]))
    ck.report(not bad, "%s: LLWPCB writes back Flags 0x%08x (%s) and the "
              "intervals raised to the minimum, nothing else%s" % (
                  label, flags, names(flags), ": " + "; ".join(bad)
                  if bad else ""))
    # the records, and the counters LLWPCB 0 flushed
    recs = got["recs"]
    bad = ["EventCounter%d 0x%08x, expected 0x%08x" % (
        n, got["events"].get(n, (0, -1))[1], wb[n][1])
        for n in EVENTS
        if got["events"].get(n, (0, None))[1] != wb[n][1]]
    if recs != want:
        first = next((k for k, (a, b) in enumerate(zip(recs, want))
                      if a != b), min(len(recs), len(want)))
        bad.insert(0, "got %d records; first difference at record %d: got "
                   "%s, want %s" % (
                       len(recs), first,
                       fmt_rec(recs[first] if first < len(recs) else None),
                       fmt_rec(want[first] if first < len(want) else None)))
        if BRE in case["events"]:
            bad.insert(1, "BRE records by kind, got/want: " +
                       bre_kinds((recs, want), insns))
    if got["missed"] != 0 or got["head"] != 32 * len(recs):
        bad.append("BufferHeadOffset %d, MissedEvents %d" % (
            got["head"], got["missed"]))
    ck.report(not bad, "%s: %d records (%s) as the native trace and the "
              "spec model give, MissedEvents 0, and LLWPCB 0 flushes the "
              "counters%s" % (
                  label, len(want), ", ".join(
                      "%d x EventId %d" % (sum(r[0] == n for r in want), n)
                      for n in sorted({r[0] for r in want})) or "none",
                  " (" + "; ".join(bad) + ")" if bad else ""))
    same = runs[1] is not None and runs[1]["text"] == got["text"]
    ck.report(same, "%s: a second run prints the same records" % label)


def main():
    if len(sys.argv) < 5:
        print("usage: events-check.py QEMU LWP_EVENTS NATIVE_TRACE "
              "CPU@FEATURES...", file=sys.stderr)
        return 2
    qemu, prog, tracer = sys.argv[1:4]
    profiles = [(p.split("@")[0], p.split("@")[1].split(","))
                for p in sys.argv[4:]]
    ck = Checker()
    insns = disassemble(prog)
    syms = symbols(prog)

    # the oracle
    seqs = {}
    for block in ("main", "dense", "sig", "smc"):
        retired, info = native_trace(tracer, prog, block, syms)
        if retired is None:
            ck.report(False, "native-trace single-steps ev_%s on the host "
                      "(%s)" % (block, info))
            seqs[block] = None
            continue
        unknown = [a for a, _ in retired if a not in insns]
        lw = [a for a, _ in retired if a in insns and
              insns[a].mnem == "llwpcb"]
        ck.report(not unknown and not lw, "native-trace single-steps ev_%s "
                  "on the host: %s, each at an instruction objdump "
                  "decodes, no LLWPCB%s" % (
                      block, info, "" if not unknown and not lw else
                      " (unknown %s, llwpcb %s)" % (unknown[:3], lw[:3])))
        seqs[block] = None if unknown or lw else [
            (a, n, None) for a, n in retired]
    if seqs["main"]:
        seen = coverage([(a, n) for a, n, _ in seqs["main"]], insns)
        missing = [k for k in MAIN_KINDS if k not in seen]
        ck.report(not missing, "the native trace of ev_main has every "
                  "branch kind taken and not taken, far RET and JMP, "
                  "SYSCALL and REP strings%s" % (
                      ": missing " + ", ".join(missing) if missing else ""))
    try:
        seqs["val"] = val_block(prog, insns, syms)
    except (KeyError, ValueError, AttributeError) as e:
        ck.report(False, "objdump model of ev_val: %s" % e)
        seqs["val"] = None

    for cpu, features in profiles:
        r = run(qemu, cpu, prog, ["--block", "val"])
        cpuid = (r or {}).get("cpuid", [0, 0, 0, 0])
        want_eax = 1 | sum(FEATURE_BIT[f] for f in features
                           if f in FEATURE_BIT)
        ok = (cpuid[0] & 0x6e) == (want_eax & 0x6e) and cpuid[0] & 1 and \
            bool(cpuid[2] & CAP_IPF) == ("ipf" in features)
        ck.report(ok, "[%s] CPUID 8000_001C makes %s available%s (EAX=0x%08x"
                  " ECX=0x%08x)" % (
                      cpu, names(want_eax), " and LwpIpFiltering" if "ipf"
                      in features else ", no LwpIpFiltering", cpuid[0],
                      cpuid[2]))
        for case in cases():
            case = dict(case)
            if case["base"]:
                case["base_ip"] = resolve(case["base"], syms)
                case["limit_ip"] = resolve(case["limit"], syms)
            else:
                case["base_ip"] = case["limit_ip"] = 0
            check_case(ck, qemu, cpu, features, prog, case,
                       seqs[case["block"]], insns)
    print("events-check: %d passed, %d failed" % (ck.passed, ck.failed))
    return 1 if ck.failed else 0


if __name__ == "__main__":
    sys.exit(main())
