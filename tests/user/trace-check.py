#!/usr/bin/env python3
"""trace-check: the target/i386/tcg trace events of LWP, against what the
guest program lwp-trace saw.

Usage: trace-check.py QEMU_X86_64 CPU LWP_TRACE

Runs LWP_TRACE under QEMU_X86_64 -cpu CPU -d trace:lwp_*,guest_errors and
checks:
  - the lwp_llwpcb, lwp_threshold, lwp_flush, lwp_fault,
    lwp_llwpcb_disable, lwp_llwpcb_gp and lwp_xrstor_off lines of the log
    are exactly the
    program's "expect: " lines, in order (each built from the program's
    own view of its LWPCB, ring and signals);
  - each "expect-count: EVENT LWPCB N" line: N lines of EVENT name that
    LWPCB (lwp_xsave and lwp_xrstor: one per signal delivered while LWP
    was on, and one per sigreturn);
  - guest_errors: an "LLWPCB ... raises #GP: REASON" line for each
    lwp_llwpcb_gp, and an "XRSTOR of LWPCB ... disables LWP: REASON" line
    for each lwp_xrstor_off, with its reason.
Prints PASS:/FAIL: lines, the program's own among them, and a summary.

SPDX-License-Identifier: GPL-2.0-or-later
"""

import os
import re
import subprocess
import sys
import tempfile

from tally import Tally

ORDERED = ("lwp_llwpcb", "lwp_threshold", "lwp_flush", "lwp_fault",
           "lwp_llwpcb_disable", "lwp_llwpcb_gp", "lwp_xrstor_off")


def main():
    qemu, cpu, prog = sys.argv[1:4]
    tally = Tally("trace-check")
    report = tally.report

    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "trace.log")
        run = subprocess.run([qemu, "-cpu", cpu, "-d",
                              "trace:lwp_*,guest_errors", "-D", log, prog],
                             capture_output=True, text=True, check=False)
        out = run.stdout.splitlines()
        try:
            with open(log, encoding="ascii") as f:
                events = [l.rstrip("\n") for l in f]
        except OSError:
            events = []

    for line in out:
        if line.startswith(("PASS:", "FAIL:", "SKIP:")):
            print(line)
    report(run.returncode == 0,
           f"lwp-trace exits 0 (status {run.returncode})")
    if any(l.startswith("SKIP:") for l in out):
        return tally.finish()

    expect = [l[len("expect: "):] for l in out if l.startswith("expect: ")]
    got = [e for e in events if e.split(" ", 1)[0] in ORDERED]
    report(len(expect) > 100, f"lwp-trace printed its expected events "
           f"({len(expect)})")
    same = got == expect
    detail = ""
    if not same:
        for i, (g, e) in enumerate(zip(got + [""] * len(expect),
                                       expect + [""] * len(got))):
            if g != e:
                detail = f"; first difference at {i}: got '{g}', " \
                         f"expected '{e}'"
                break
    report(same, f"the log's {', '.join(ORDERED)} lines are the {len(expect)}"
           f" the program expects, in its order (got {len(got)}){detail}")

    for line in out:
        m = re.fullmatch(r"expect-count: (\S+) (0x[0-9a-f]+) (\d+)", line)
        if not m:
            continue
        name, cb, n = m.group(1), m.group(2), int(m.group(3))
        count = sum(1 for e in events
                    if re.match(rf"{name} cpu \d+ LWPCB {cb} ", e))
        report(count == n, f"{n} {name} lines with LWPCB {cb} (got {count})")

    # XSAVE and XRSTOR of component 62 with LWP disabled are not traced
    idle = [e for e in events if re.match(r"lwp_x(save|rstor) cpu \d+ LWPCB 0x0 ", e)]
    report(not idle, f"no lwp_xsave or lwp_xrstor line with LWP disabled "
           f"(got {len(idle)}, the #GP's signal among them)")

    # -d guest_errors: each LLWPCB that raised #GP and each XRSTOR that
    # left LWP disabled, with the same reason
    want = [re.sub(r"^lwp_llwpcb_gp cpu \d+ LWPCB (0x[0-9a-f]+): ",
                   r"LLWPCB \1 raises #GP: ", e)
            for e in expect if e.startswith("lwp_llwpcb_gp ")]
    want += [re.sub(r"^lwp_xrstor_off cpu \d+ LWPCB (0x[0-9a-f]+): ",
                    r"XRSTOR of LWPCB \1 disables LWP: ", e)
             for e in expect if e.startswith("lwp_xrstor_off ")]
    errors = [e for e in events if e.startswith(("LLWPCB ", "XRSTOR "))]
    report(want and errors == want, f"-d guest_errors: {want} (got {errors})")

    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
