#!/usr/bin/env python3
# in-asm-check: QEMU's "-d in_asm" names the LWP instructions as GNU
# objdump does.
#
#   in-asm-check.py QEMU CPU PROGRAM
#
# Runs PROGRAM under QEMU with -d in_asm and disassembles the same file
# with the host's objdump (the oracle).  Every line of the log at an
# address where objdump sees an LWP instruction must show the same
# mnemonic and operands (in capstone's notation, compared after the
# normalisation below), every LWP mnemonic in the log must be at such an
# address, each of the four instructions must appear, and the log must
# not contain capstone's "Disassembler disagrees" complaint.
# Prints PASS:/FAIL: lines and a summary; exits 1 on any failure.
#
# SPDX-License-Identifier: GPL-2.0-or-later

import re
import subprocess
import sys
import tempfile

from tally import Tally

LWP = ("llwpcb", "slwpcb", "lwpins", "lwpval")


def normalise(ops):
    """capstone and objdump print the same operands differently:
    objdump writes every number in hex and a zero displacement as 0x0,
    adds '# address' comments and no space after a comma."""
    ops = ops.split("#")[0].strip().replace(", ", ",")
    ops = re.sub(r"(?<![%\w])(0x[0-9a-f]+|\d+)",
                 lambda m: str(int(m.group(1), 0)), ops)
    return re.sub(r"(?<![\w)])0\(", "(", ops)


def main():
    qemu, cpu, prog = sys.argv[1:4]
    tally = Tally("in-asm-check")
    report = tally.report

    dump = subprocess.run(["objdump", "-d", "-w", "--no-show-raw-insn", prog],
                          capture_output=True, text=True, check=True).stdout
    oracle = {}
    for m in re.finditer(r"^\s*([0-9a-f]+):\t(\S+)[ \t]*(.*)$", dump, re.M):
        if m.group(2) in LWP:
            oracle[int(m.group(1), 16)] = (m.group(2), normalise(m.group(3)))

    with tempfile.NamedTemporaryFile("r", suffix=".log") as log:
        run = subprocess.run([qemu, "-cpu", cpu, "-d", "in_asm", "-D",
                              log.name, prog], capture_output=True, text=True)
        report(run.returncode == 0,
               "%s under -cpu %s -d in_asm exits 0 (got %d)"
               % (prog, cpu, run.returncode))
        text = log.read()

    report("disagrees" not in text, "the -d in_asm log has no \"Disassembler "
           "disagrees\" line (capstone lost the instruction boundaries)")
    matched = {mnem: 0 for mnem in LWP}
    wrong = {mnem: 0 for mnem in LWP}
    line_re = r"^0x([0-9a-f]+):  (?:[0-9a-f]{2} )+\s+(\S+)[ \t]*(.*)$"
    for m in re.finditer(line_re, text, re.M):
        addr, mnem, ops = int(m.group(1), 16), m.group(2), m.group(3)
        want = oracle.get(addr)
        if want is None:
            if mnem in LWP:
                report(False, "0x%x: -d in_asm shows '%s %s' where objdump "
                       "sees no LWP instruction" % (addr, mnem, ops))
            continue
        got = (mnem, normalise(ops))
        if got == want:
            matched[want[0]] += 1
        else:
            wrong[want[0]] += 1
            print("    0x%x: -d in_asm shows '%s %s', objdump '%s %s' "
                  "(normalised)" % (addr, mnem, got[1], want[0], want[1]))
    for mnem in LWP:
        report(matched[mnem] > 0 and wrong[mnem] == 0,
               "-d in_asm names %s as objdump does wherever it was "
               "translated (%d lines agree, %d differ)"
               % (mnem, matched[mnem], wrong[mnem]))
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
