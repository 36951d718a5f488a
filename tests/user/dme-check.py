#!/usr/bin/env python3
# dme-check: DCache Miss records (EventId 4, spec 2.4) of lwp-dme under
# qemu-x86_64 -cpu max,+lwp, or of the system test kernel's config=dme
# (tests/system/lwp-dme-loads.c, the same routines at CPL3), checked
# against a model fed by tools nobody here wrote.
#
#   dme-check.py QEMU LIBEXECLOG LWP_DME
#   dme-check.py --clocks QEMU LIBEXECLOG LWP_DME
#   dme-check.py --system [--clocks] QEMU_SYSTEM LIBEXECLOG TESTS_ELF
#                [QEMU_ARGS...]
#
# Runs the test twice: once plainly, once with upstream QEMU's execlog
# plugin logging every instruction and its memory accesses (in system
# mode, those of the routines only, by address from GNU objdump, and the
# addresses of loads are physical: the kernel maps itself 1:1).  The
# records come from lwp-dme's dump file, or the kernel's REC lines.  The
# expected
# records come from:
#   - the execlog trace: every instruction of dme_chase, dme_stack and
#     dme_kinds (their ranges from GNU nm), in order, and the address of
#     each load it made;
#   - tests/engine/cache_model_ref.py, the model written from
#     docs/cache-model.md alone, with the documented defaults, fed exactly
#     those loads: every load in dme_chase is "mov (%rax), %rax" (8
#     bytes), dme_stack's are 64-bit stack loads (POP, POPF, RET, RET
#     imm16, LEAVE, PUSH m64, POP m64, ENTER), and in dme_kinds the label
#     dk<SIZE>_<K> before an instruction gives the size of its loads (for
#     example two of 16 bytes for a 256-bit AVX load, as QEMU makes it);
#   - the spec's rules: each miss whose SRC and latency pass the Filters
#     (Table 6-2: CLF by level, MinLatency x 16 cycles) is an event; the
#     counter starts at EventCounter (the last field of the CHASE line)
#     and the (counter+1)-th event stores a record naming the load
#     instruction (one an instruction, choice 19),
#     with DAV, the missing address, SRC (Figure 2-5: L3 1, DRAM 3, L2 0)
#     and the latency of the level (CPUID LwpLatencyRnd 0, so unrounded);
#     the counter is then reset to the interval (Random 0).  With
#     Instructions Retired enabled as well, every instruction after
#     LLWPCB is an event of it, and an instruction's records are stored in
#     EventId order (2 before 4).  LWPVAL, at interval 0, stores a record
#     (EventId 1, its operands all 0 in dme_kinds) before its DME record,
#     and only then reads its operand (5.3).
# With --clocks, lwp-dme (or the kernel's config=dme-clocks) runs its
# chases with CPU Clocks not Halted and Reference Clocks not Halted
# (EventIds 5 and 6) under -cpu max,+lwp,cost-model=detailed, and the
# expected records come from
# the same trace and cache model, tests/engine/bpred_model_ref.py (the
# predictor model written from docs/branch-predictor.md alone) fed the
# chase's "jnz" (taken when the next instruction is the load again), and
# the cost model of docs/implementation-choices.md (choices 48, 70): an
# instruction takes a clock, a near branch one more, a load the latency
# of the level that supplied it less L1's (4), a mispredicted branch 20;
# each counter starts at EventCounter, the instruction that takes it
# below 0 stores a record (CNH before RNH) and it is reset to the
# interval less the overrun, at least 0.
# Both runs must store the same records, byte for byte (determinism: the
# plugin changes nothing LWP sees), and every record of the traced run
# must be the model's, field for field.
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "engine"))
import bpred_model_ref as bpred  # noqa: E402
import cache_model_ref as ref  # noqa: E402
from tally import Tally  # noqa: E402

SRC = {ref.L2: 0, ref.L3: 1, ref.DRAM: 3}
CLF, NBC, RDC, RAM, OTH = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
CLF_BIT = {0: None, 1: NBC, 2: RDC, 3: RAM, 7: OTH}
VAL, IRE, DME, CNH, RNH = 1, 2, 4, 5, 6
MISPREDICT = 20

tally = Tally("dme-clocks" if "--clocks" in sys.argv[1:3] else "dme")
report = tally.report


def symbols(prog):
    """GNU nm's addresses of the defined symbols (POSIX format)"""
    out = subprocess.run(["nm", "-P", "--defined-only", prog], check=True,
                         capture_output=True, text=True).stdout
    return {f[0]: int(f[2], 16) for f in map(str.split, out.splitlines())}


def parse_output(text, dump):
    """The CHASE blocks: [(name, iv, filters, ire, counter, [records])],
    each record (EventId, ip, SRC, DAV, Latency, DataAddress) from the
    dump (Figure 2-5: bytes 0, 8-15, bits 31:29 and 28 of the first
    dword, 4-7, 16-23)"""
    chases = []
    if dump:
        with open(dump, "rb") as fh:
            data = fh.read()
    else:
        data = b"".join(bytes.fromhex(x.split()[1]) for x in text.splitlines()
                        if x.startswith("REC "))
    pos = 0
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == "CHASE":
            chases.append((f[1], int(f[3]), int(f[4], 16), int(f[5]),
                           int(f[6]), []))
        elif f and f[0] == "END":
            for _ in range(int(f[1])):
                r = data[pos:pos + 32]
                pos += 32
                dw0 = int.from_bytes(r[0:4], "little")
                chases[-1][5].append((r[0], int.from_bytes(r[8:16], "little"),
                                      dw0 >> 29 if r[0] == DME else 0,
                                      dw0 >> 28 & 1 if r[0] == DME else 0,
                                      int.from_bytes(r[4:8], "little"),
                                      int.from_bytes(r[16:24], "little")))
    report(pos == len(data), "the dump holds the records of every chase")
    return chases


def parse_trace(path, ranges):
    """Each run of a routine of @ranges ([(lo, hi)]), in execution order:
    [(pc, [load addresses], line)]"""
    runs, cur = [], None
    with open(path) as fh:
        for line in fh:
            f = [x.strip() for x in line.split(",")]
            if len(f) < 3 or not f[1].startswith("0x"):
                continue
            pc = int(f[1], 16)
            if not any(lo <= pc < hi for lo, hi in ranges):
                cur = None
                continue
            if any(pc == lo for lo, _ in ranges):
                cur = []
                runs.append(cur)
            loads = [int(f[i + 1], 16) for i in range(len(f) - 1)
                     if f[i] == "load"]
            cur.append((pc, loads, line))
    return runs


def eligible(level, latency, filters):
    src = SRC[level]
    mlat = filters & 0xff
    if mlat and latency < mlat * 16:
        return False
    if filters & CLF:
        bit = CLF_BIT.get(src)
        if not bit or not filters & bit:
            return False
    return True


def expected(chases, runs, syms, system):
    """The records of each run, from the model fed its loads"""
    load_pc, stack_lo = syms.get("dme_chase_load"), syms["dme_stack"]
    kinds_lo, lwpval = syms["dme_kinds"], syms["dme_kinds_lwpval"]
    # dme_kinds: the size of each labelled instruction's loads
    sizes = {a: int(m.group(1)) for m, a in
             ((re.match(r"dk(\d+)_\d+$", n), a) for n, a in syms.items())
             if m}
    model = ref.Model([ref.Level(16384, 4, 64, 4),
                       ref.Level(2 << 20, 16, 64, 20),
                       ref.Level(8 << 20, 64, 64, 64)], 256)
    predictor = bpred.Predictor()
    out = []
    for (name, iv, filters, ire, counter, _), run in zip(chases, runs):
        if ire == 2:
            out.append(expected_clocks(run, iv, counter, model, predictor,
                                       load_pc, system))
            continue
        recs = []
        cdme, cire = counter, iv
        # instructions after the first LLWPCB, before the last one: in
        # dme_stack, after the three that switch to its stack, and in
        # dme_kinds after the two that set its registers
        start = {stack_lo: 4, kinds_lo: 3}.get(run[0][0], 1)
        for pc, loads, line in run[start:-2]:
            if ire:
                cire -= 1
                if cire < 0:
                    recs.append((IRE, pc, 0, 0, 0, 0))
                    cire = iv
            due = None
            if pc == lwpval:
                # interval 0 (lwp-dme.c): a record, fields all 0, first
                recs.append((VAL, pc, 0, 0, 0, 0))
            for a in loads:
                if run[0][0] == kinds_lo:
                    if pc not in sizes:
                        raise SystemExit("unlabelled load in dme_kinds: "
                                         + line)
                    size = sizes[pc]
                elif run[0][0] == stack_lo or (pc == load_pc and
                                               "mov" in line):
                    size = 8
                else:
                    raise SystemExit("unexpected load in dme_chase: " + line)
                miss, level, lat, addr, _ = model.load(a, size)
                if miss and eligible(level, lat, filters):
                    cdme -= 1
                    if cdme < 0 and due is None:
                        due = (DME, pc, SRC[level], 1, lat, addr)
            if due:
                recs.append(due)
                cdme = iv + cdme + 1
        out.append(recs)
    return out


def expected_clocks(run, iv, counter, model, predictor, load_pc, system):
    """The clock records of a dme_chase run (lwp-dme clocks): CNH at
    interval @iv, RNH at @iv + 1, both from EventCounter @counter.  In
    system mode, execlog gives an instruction after which an interrupt
    came the accesses of its delivery (the IDT, the stack at CPL 0) too:
    the chase's MOV makes the first of its loads, and no other instruction
    of the chase loads."""
    recs = []
    cnt = {CNH: counter, RNH: counter}
    ivs = {CNH: iv, RNH: iv + 1}
    for i in range(1, len(run) - 2):
        pc, loads, line = run[i]
        clocks = 1
        if system:
            loads = loads[:1] if pc == load_pc else []
        for a in loads:
            if pc != load_pc:
                raise SystemExit("unexpected load in dme_chase: " + line)
            _, _, lat, _, _ = model.load(a, 8)
            clocks += lat - model.levels[0].latency
        if re.search(r"\bj(ne|nz)\b", line):
            clocks += 1
            if predictor.cond(pc, run[i + 1][0] == load_pc):
                clocks += MISPREDICT
        for ev in (CNH, RNH):
            cnt[ev] -= clocks
            if cnt[ev] < 0:
                recs.append((ev, pc, 0, 0, 0, 0))
                cnt[ev] = max(0, ivs[ev] + cnt[ev] + 1)
    return recs


def insn_addresses(prog, ranges):
    """GNU objdump's address of every instruction in @ranges"""
    out = subprocess.run(["objdump", "-d", prog], check=True,
                         capture_output=True, text=True).stdout
    addrs = []
    for line in out.splitlines():
        f = line.split(":\t", 1)
        if len(f) == 2 and f[0].strip() and f[1].split("\t")[-1].strip():
            try:
                a = int(f[0].strip(), 16)
            except ValueError:
                continue
            if any(lo <= a < hi for lo, hi in ranges):
                addrs.append(a)
    return addrs


def run_both(cmd_plain, cmd_logged, status):
    """Both runs; their records (the dump files in user mode, the REC
    lines in system mode) must be the same"""
    plain = subprocess.run(cmd_plain, capture_output=True, text=True,
                           errors="replace", stdin=subprocess.DEVNULL)
    logged = subprocess.run(cmd_logged, capture_output=True, text=True,
                            errors="replace", stdin=subprocess.DEVNULL)
    report(plain.returncode == status and logged.returncode == status,
           "the test exits %d, with and without the execlog plugin (%d, %d)"
           % (status, plain.returncode, logged.returncode))
    return plain, logged


def lines_of(text):
    return [x for x in text.splitlines()
            if x.startswith(("CHASE", "REC", "END", "PASS:", "FAIL:"))]


def main():
    system = sys.argv[1] == "--system"
    clocks = sys.argv[1 + system] == "--clocks"
    first = 1 + system + clocks
    qemu, plugin, prog = sys.argv[first:first + 3]
    syms = symbols(prog)
    funcs = [f for f in ("dme_chase", "dme_stack", "dme_kinds") if f in syms]
    ranges = [(syms[f], syms[f + "_end"]) for f in funcs]
    trace, d1, d2 = prog + ".execlog", prog + ".dump1", prog + ".dump2"
    if system:
        # the test kernel (config=dme) under -cpu max,+lwp; execlog logs
        # only the routines' instructions (the boot is millions more)
        cmd = [qemu] + sys.argv[first + 3:] + [
            "-M", "pc", "-nographic", "-serial", "stdio", "-monitor", "none",
            "-device", "isa-debug-exit,iobase=0xf4,iosize=0x4",
            "-accel", "tcg", "-no-reboot", "-cpu",
            "max,+lwp,cost-model=detailed" if clocks else "max,+lwp",
            "-kernel", prog, "-append",
            "config=dme-clocks" if clocks else "config=dme"]
        filt = ",".join("afilter=0x%x" % a
                        for a in insn_addresses(prog, ranges))
        plain, logged = run_both(cmd, cmd + [
            "-plugin", plugin + "," + filt, "-d", "plugin", "-D", trace], 1)
        same = lines_of(plain.stdout) == lines_of(logged.stdout)
        dump = None
    else:
        cpu = [qemu, "-cpu", "max,+lwp" + (",cost-model=detailed"
                                           if clocks else "")]
        mode = ["clocks"] if clocks else []
        plain, logged = run_both(cpu + [prog, d1] + mode, cpu + [
            "-plugin", plugin, "-d", "plugin", "-D", trace, prog, d2] + mode,
            0)
        with open(d1, "rb") as a, open(d2, "rb") as b:
            same = a.read() == b.read() and plain.stdout == logged.stdout
        dump = d2
    report(same, "the same records, byte for byte, in both runs "
           "(deterministic)")
    for line in plain.stdout.splitlines():
        if line.startswith(("PASS:", "FAIL:", "SKIP:")):
            report(line.startswith("PASS:"), "the test: " + line[6:])
    chases = parse_output(logged.stdout, dump)
    runs = parse_trace(trace, ranges)
    if not report(len(runs) == len(chases) and len(chases) > 0,
                  "execlog saw every run (%d runs, %d printed)"
                  % (len(runs), len(chases))):
        return
    exp = expected(chases, runs, syms, system)
    total = 0
    for (name, _, _, _, _, got), want in zip(chases, exp):
        total += len(want)
        if got != want:
            first = next((i for i in range(min(len(got), len(want)))
                          if got[i] != want[i]), min(len(got), len(want)))
            report(False, "%s: %d records, model %d; first difference at "
                   "%d: %s vs %s" % (name, len(got), len(want), first,
                                     got[first:first + 1],
                                     want[first:first + 1]))
        else:
            report(True, "%s: %d records, each as the model gives it"
                   % (name, len(got)))
    least = (1000 if clocks else 500) if system else \
        (4000 if clocks else 5000)
    report(total > least, "the runs made %d records in all (more than %d)"
           % (total, least))
    for f in (trace, d1, d2):
        if os.path.exists(f):
            os.unlink(f)


main()
sys.exit(tally.finish())
