#!/usr/bin/env python3
# exitreq-check: no generated code writes the exit-request word.
#
#   exitreq-check.py STATUS QEMU ARGS...
#
# (STATUS: QEMU's expected exit status; a system-mode test kernel exits
# through isa-debug-exit, 1 when all passed)
# Every TB starts with the exit check: a 32-bit load of
# CPUState.neg.icount_decr, and a branch out if it is negative.  Another
# thread (a vCPU kick, an interrupt, the main loop) or a signal handler
# (qemu-x86_64's signals) requests an exit by writing its high half
# (cpu_exit).  If generated code stored to that word, an exit requested
# between its load and its store would be undone, and the interrupt or
# signal delayed until something requested it again.  With icount off,
# only accel/tcg writes icount_decr; generated code only reads it.
#
# Runs QEMU ARGS (a program or test kernel that enables LWP and counts
# events, so that TBs that count are translated) with -d op_opt, and
# reads the TCG ops of every TB: the offset of icount_decr is that of the
# exit check's load (the first op of a TB), and no store op with env as
# its base may touch any of its 4 bytes.
import os
import re
import subprocess
import sys
import tempfile

from tally import Tally

tally = Tally("exitreq")
report = tally.report

# " ld_i32 tmp0,env,$0xfffffffffffffff8" and the like
OP = re.compile(r"^\s+(ld\w*|st\w*)\s+([^,\s]+),env,\$(0x[0-9a-f]+)")
SIZE = {"8": 1, "16": 2, "32": 4, "64": 8, "128": 16}


def op_size(name):
    """The bytes a ld/st op of TCG's touches: 16, the most, for one this
    does not know (a vector store), so that it counts if it comes near"""
    m = re.match(r"(ld|st)(8|16|32)?[su]?_i(32|64|128)$", name)
    if not m:
        return 16
    return SIZE[m.group(2) or m.group(3)]


def signed(v):
    v = int(v, 16)
    return v - (1 << 64) if v >> 63 else v


def main():
    status, qemu, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "op.log")
        run = subprocess.run([qemu, "-d", "op_opt", "-D", log] + args,
                             stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, errors="replace")
        report(run.returncode == status, "%s exits %d under -d op_opt (%d)"
               % (" ".join(args[-3:]), status, run.returncode))
        tbs, first, checks, stores = 0, None, set(), []
        with open(log) as fh:
            for line in fh:
                if line.startswith("OP after optimization"):
                    tbs += 1
                    first = True
                    continue
                m = OP.match(line)
                if not m:
                    if line.strip() and not line.startswith(" insn_start"):
                        first = False
                    continue
                name, off = m.group(1), signed(m.group(3))
                if first and name == "ld_i32":
                    checks.add(off)
                first = False
                if name.startswith("st"):
                    stores.append((name, off, line.strip()))
    report(tbs > 1000, "the log holds the ops of %d TBs" % tbs)
    # icount_decr is below env, in CPUNegativeOffsetState
    neg = sorted(o for o in checks if o < 0)
    if not report(len(neg) == 1, "every TB's exit check loads one word "
                  "below env (offsets %s)" % [hex(o) for o in neg]):
        return
    ic = neg[0]
    bad = [s for s in stores if s[1] < ic + 4 and ic < s[1] + op_size(s[0])]
    report(not bad, "no op stores to icount_decr (env%+d): %d stores do%s"
           % (ic, len(bad), ", e.g. " + bad[0][2] if bad else ""))


main()
sys.exit(tally.finish())
