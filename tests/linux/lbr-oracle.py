#!/usr/bin/env python3
"""Compare perf's LBR branch stacks with a TCG plugin's branch trace.

tests/linux/run.sh: the k-th sample of `perf record -b -e instructions:u
-c P` of a program (perf script -F ip,brstack, on stdin, each line
"@@brmix IP FROM/TO/M|P/... ...") against what tests/linux/uinsn-plugin.c
(brs=) printed for the same run at instructions k * P + 1 + D, D < W:
"brs K D A F>T ...", the branches taken before instruction A, newest
first.  The plugin knows nothing of the PMU: it sees the instructions
that TCG reports to plugins, and a branch taken is an instruction whose
mnemonic is a branch's followed by one that is not the next in memory.

A sample agrees when, at some D (a PMI taken exactly after instruction
k * P is at D = 0; Linux may program a period of at least 32 events
after a context switch, nhm_limit_period, so one may come up to 31
instructions late), the plugin's instruction is the sample's IP and its
newest branches are the sample's stack, entry by entry.  A stack has 16
entries, or 15 when an interrupt was one of them (perf drops it from a
user-only stack; the plugin does not see it).

Prints "samples N exact E late L bad B" and, for a bad one, the sample.
"""
import sys


def main():
    plugin = {}
    with open(sys.argv[1]) as f:
        for line in f:
            w = line.split()
            if len(w) < 4 or w[0] != "brs":
                continue
            k, d = int(w[1]), int(w[2])
            ring = [tuple(int(x, 16) for x in p.split(">")) for p in w[4:]]
            plugin.setdefault(k, {})[d] = (int(w[3], 16), ring)
    exact = late = 0
    bad = []
    samples = 0
    for line in sys.stdin:
        w = line.split()
        if len(w) < 2 or w[0] != "@@brmix":
            continue
        samples += 1
        ip = int(w[1], 16)
        stack = []
        for e in w[2:]:
            f = e.split("/")
            stack.append((int(f[0], 16), int(f[1], 16)))
        found = None
        for d, (a, ring) in sorted(plugin.get(samples, {}).items()):
            if a == ip and len(stack) >= 15 and ring[:len(stack)] == stack:
                found = d
                break
        if found == 0:
            exact += 1
        elif found is not None:
            late += 1
        else:
            bad.append(line.strip())
    print("samples %d exact %d late %d bad %d" %
          (samples, exact, late, len(bad)))
    for b in bad[:1]:
        print("first bad: " + b[:400])


if __name__ == "__main__":
    main()
