#!/usr/bin/env python3
# The load-latency samples (PEBS, SDM 18.17.1.2; docs/pmu.md "PEBS") that
# a run of a program should give, from the reads that upstream QEMU's
# plugin API saw it make (tests/linux/uinsn-plugin.c, loads=R:R) and the
# independent cache model written from docs/cache-model.md
# (tests/engine/cache_model_ref.py) with the Nehalem profile's caches,
# compared with the samples perf gave.
#
#   python3 tests/linux/ll-oracle.py PLUGIN-LOG PERIOD RUN:THRESHOLD... <SAMPLES
#
# SAMPLES: one line per sample, "RUN ADDR WEIGHT LEVEL" (perf script's
# data address, weight and the LVL text of its data source, spaces as
# underscores).  The rules (choice
# 74): the counter counts each read of the run whose latency in the model
# exceeds THRESHOLD, when its instruction retires; perf programs it with
# PERIOD events to go, and reloads it with PERIOD from the DS save area
# after each record; PEBS is armed when it overflows and the next event is
# the sample's, whose record holds the last such read of that
# instruction (its address, level and latency); the events after it in
# that instruction are lost to the reload.  The model starts empty and
# sees only the reads of the runs given (the counter counts at CPL 3 only,
# the only cache event counting then), in order.
#
# Prints "samples N expected M exact E" and then each mismatch.
#
# SPDX-License-Identifier: GPL-2.0-or-later

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'engine'))
from cache_model_ref import Level, Model  # noqa: E402
from plugin_log import reads  # noqa: E402

NEHALEM = Model([Level(32 << 10, 8, 64, 4), Level(256 << 10, 8, 64, 10),
                 Level(8 << 20, 16, 64, 40)], 200)
# perf's text for the Nehalem data sources of those levels (Table 18-24:
# 01H, 03H, 04H, 0CH)
LEVELS = {1: 'L1', 2: 'L2', 3: 'L3', 4: 'RAM'}


def expected(path, thresholds, period):
    model = NEHALEM
    samples = []
    counted = 0
    cur = None        # the current instruction's run
    above = []        # its reads above the threshold: (addr, level, lat)

    def retire():
        nonlocal counted
        if cur not in thresholds or not above:
            return
        if counted + len(above) > period:
            addr, level, lat = above[-1]
            samples.append((cur, addr, lat, LEVELS[level]))
            counted = 0
        else:
            counted += len(above)

    for e in reads(path):
        if e[0] == 'i':
            retire()
            if e[1] != cur:
                counted = 0
            cur = e[1]
            above = []
        elif e[0] == 'l' and cur in thresholds:
            _, level, lat, _, _ = model.load(e[1], e[2])
            if lat > thresholds[cur]:
                above.append((e[1], level, lat))
        elif e[0] == 'drop':
            above = []
    retire()
    return samples


def main(path, period, runs):
    thresholds = {}
    for r in runs:
        run, thr = r.split(':')
        thresholds[int(run)] = int(thr, 0)
    want = expected(path, thresholds, period)
    got = []
    for text in sys.stdin:
        w = text.split()
        if len(w) >= 4:
            lvl = 'RAM' if 'RAM' in w[3] else w[3].split('_')[0]
            got.append((int(w[0]), int(w[1], 16), int(w[2]), lvl))
    exact = sum(1 for g, e in zip(got, want) if g == e)
    print(f"samples {len(got)} expected {len(want)} exact {exact}")
    for k, (g, e) in enumerate(zip(got, want)):
        if g != e:
            print(f"sample {k + 1}: got run {g[0]} {g[1]:x} {g[2]} {g[3]},"
                  f" want run {e[0]} {e[1]:x} {e[2]} {e[3]}")


if __name__ == '__main__':
    if len(sys.argv) < 4:
        raise SystemExit("usage: ll-oracle.py PLUGIN-LOG PERIOD "
                         "RUN:THRESHOLD... <SAMPLES")
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
