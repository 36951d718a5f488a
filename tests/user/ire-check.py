#!/usr/bin/env python3
# ire-check: the Instructions Retired records of lwp-ire, checked against
# a model built from GNU objdump's disassembly of the same binary.
#
#   ire-check.py QEMU CPU LWP_IRE_BINARY
#
# The model: ire_block executes the instructions between its first LLWPCB
# and the loop's label once, the loop body (label .. JNZ) TRIPS times, then
# the instructions up to the final LLWPCB once; neither LLWPCB is counted
# (choice 39).  With Random = 0 and EventCounter2 = EventInterval2 = I,
# the record for event m is stored when m is a multiple of I + 1 (spec
# 1.1: the counter is decremented per event and a record is stored when
# it goes negative, then it is reset to I), and names the m-th
# instruction.  The EventCounter2 that the final LLWPCB flushes (spec
# 5.1) is then I - (N mod (I + 1)) for N counted instructions.
#
# "lwp-ire rep" runs ire_rep_block instead: straight-line code, every
# instruction between the two LLWPCBs executed once, with REP STOSB and
# REP MOVSB of RCX = COUNT bytes.  A REP string instruction retires once,
# whatever its count (spec 2.2; choices 39 and 45), also when QEMU runs it
# in chunks of 65536 iterations, so the model counts it as one instruction
# like any other.  Each configuration runs twice: the records must be
# identical (determinism).  Prints PASS:/FAIL: lines and a summary.
#
# SPDX-License-Identifier: GPL-2.0-or-later

import re
import subprocess
import sys

# (EventInterval2, loop trips): the minimum interval 1 (choice 17), small
# intervals that split most translation blocks, intervals whose records
# fall on every position of the loop, and a large one
CASES = [("ire_block", i, t) for i, t in
         [(1, 200), (2, 200), (7, 300), (0xff, 3000), (256, 2000),
          (300, 1000), (1001, 5000), (99999, 200000)]]
# (EventInterval2, RCX) for ire_rep_block: no iteration, one, exactly one
# chunk of 65536, just over it (QEMU's translator runs the first 65537
# iterations in one go, so 65538 is the first count that goes back to the
# instruction between chunks), several chunks
CASES += [("ire_rep_block", i, c) for c in
          (0, 1, 65536, 65537, 65538, 200000, 1000000) for i in (1, 2, 7)]


def block(prog, sym):
    """Addresses and mnemonics of the function sym, in address order"""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn",
                          "--disassemble=" + sym, prog],
                         capture_output=True, text=True, check=True).stdout
    insns = []
    for m in re.finditer(r"^ *([0-9a-f]+):\t(\S+)[ \t]*(.*)$", out, re.M):
        insns.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return insns


def expected(insns, interval, trips):
    llwpcb = [i for i, x in enumerate(insns) if x[1] == "llwpcb"]
    jnz = [i for i, x in enumerate(insns) if x[1] in ("jne", "jnz")]
    assert len(llwpcb) == 2 and len(jnz) <= 1, "unexpected block shape"
    if not jnz:
        # straight-line: every instruction once, trips is a REP count
        jnz, trips = [llwpcb[1] - 1], 1
        label = llwpcb[0] + 1
    else:
        target = int(insns[jnz[0]][2].split()[0], 16)
        label = [i for i, x in enumerate(insns) if x[0] == target][0]
    pre = [x[0] for x in insns[llwpcb[0] + 1:label]]
    body = [x[0] for x in insns[label:jnz[0] + 1]]
    post = [x[0] for x in insns[jnz[0] + 1:llwpcb[1]]]
    total = len(pre) + len(body) * trips + len(post)
    recs = []
    for m in range(interval + 1, total + 1, interval + 1):
        k = m - 1
        if k < len(pre):
            recs.append(pre[k])
        elif k < len(pre) + len(body) * trips:
            recs.append(body[(k - len(pre)) % len(body)])
        else:
            recs.append(post[k - len(pre) - len(body) * trips])
    return recs, interval - total % (interval + 1)


def main():
    qemu, cpu, prog = sys.argv[1:4]
    passed = failed = 0
    insns = {sym: block(prog, sym) for sym, _, _ in CASES}
    for sym, interval, trips in CASES:
        want, want_counter = expected(insns[sym], interval, trips)
        rep = ["rep"] if sym == "ire_rep_block" else []
        what = ("%s, interval %d, %s %d" %
                (sym, interval, "RCX" if rep else "trips", trips))
        runs = []
        for _ in range(2):
            r = subprocess.run([qemu, "-cpu", cpu, prog] + rep +
                               [str(interval), str(trips)],
                               capture_output=True, text=True)
            recs = [(int(a), int(b, 16)) for a, b in
                    re.findall(r"^REC (\d+) (0x[0-9a-f]+)$", r.stdout, re.M)]
            missed = re.search(r"^MISSED (\d+)$", r.stdout, re.M)
            counter = re.search(r"^COUNTER (\d+)$", r.stdout, re.M)
            runs.append((r.returncode, recs, missed and int(missed.group(1)),
                         counter and int(counter.group(1))))
        rc, recs, missed, counter = runs[0]
        got = [ip for _, ip in recs]
        ok = (rc == 0 and missed == 0 and got == want
              and counter == want_counter
              and all(e == 2 for e, _ in recs))
        first_bad = next((i for i, (a, b) in enumerate(zip(got, want))
                          if a != b), min(len(got), len(want)))
        msg = ("%s: %d IRE records (EventId 2) at the instructions the "
               "objdump model names, MissedEvents 0, EventCounter2 %d "
               "(exit %d, got %d records, want %d, first difference at "
               "record %d: got %s, want %s, missed %s, counter %s)"
               % (what, len(want), want_counter, rc, len(got), len(want),
                  first_bad,
                  hex(got[first_bad]) if first_bad < len(got) else "-",
                  hex(want[first_bad]) if first_bad < len(want) else "-",
                  missed, counter))
        print(("PASS: " if ok else "FAIL: ") + msg)
        passed += ok
        failed += not ok
        same = runs[0] == runs[1]
        print(("PASS: " if same else "FAIL: ") + "%s: a second "
              "run stores the same records" % what)
        passed += same
        failed += not same
    print("ire-check: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
