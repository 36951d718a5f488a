#!/usr/bin/env python3
# The cache events a program's runs should count, from the reads that
# upstream QEMU's plugin API saw them make (tests/linux/uinsn-plugin.c,
# loads=R1:R2) and the independent cache model written from
# docs/cache-model.md (tests/engine/cache_model_ref.py), with the Nehalem
# profile's caches (docs/pmu.md): each read goes through the model in
# order; an instruction's reads count, by the level that supplied each,
# when the instruction retires, and not when it ran again ("drop").  The
# model starts empty and sees only these runs' reads: the PMU's model
# sees the loads of the CPLs where a cache event counts, while one does
# (choice 68), and nothing else counts one in the guest.
#
#   python3 tests/linux/cache-oracle.py PLUGIN-LOG
#
# prints, for each run R: "run R L1 A L2 B L3 C DRAM D" (reads by the
# level that supplied them; LLC references are C + D, LLC misses D).
#
# SPDX-License-Identifier: GPL-2.0-or-later

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'engine'))
from cache_model_ref import Level, Model  # noqa: E402
from plugin_log import reads  # noqa: E402

# The Nehalem profile (tcg-helpers/pmu.cc, kNehalem): size, ways, line,
# latency per level; DRAM latency
NEHALEM = Model([Level(32 << 10, 8, 64, 4), Level(256 << 10, 8, 64, 10),
                 Level(8 << 20, 16, 64, 40)], 200)


def main(path):
    model = NEHALEM
    counts = {}     # run -> [L1, L2, L3, DRAM]
    run = None
    pending = [0, 0, 0, 0]

    def retire():
        if run is not None:
            c = counts.setdefault(run, [0, 0, 0, 0])
            for k in range(4):
                c[k] += pending[k]
        pending[:] = [0, 0, 0, 0]

    for e in reads(path):
        if e[0] == 'i':
            retire()
            run = e[1]
            counts.setdefault(run, [0, 0, 0, 0])
        elif e[0] == 'l':
            level = model.load(e[1], e[2])[1]
            pending[level - 1] += 1
        else:
            pending[:] = [0, 0, 0, 0]
    retire()
    for r in sorted(counts):
        c = counts[r]
        print(f"run {r} L1 {c[0]} L2 {c[1]} L3 {c[2]} DRAM {c[3]}")


if __name__ == '__main__':
    if len(sys.argv) != 2:
        raise SystemExit("usage: cache-oracle.py PLUGIN-LOG")
    main(sys.argv[1])
