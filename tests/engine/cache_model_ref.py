#!/usr/bin/env python3
# An independent implementation of the data cache model, written from
# docs/cache-model.md alone (it shares nothing with tcg-helpers/cache.cc).
# It reads a stream file (docs/cache-model.md, "Tests"), recomputes every
# load and compares its result with the one the file records.
#
# Unlike the engine, each set is a dict from line number to the time of
# its last use; the least recently used line has the smallest time.
#
#   python3 tests/engine/cache_model_ref.py STREAM
#
# Exit status 0 when every result matches, 1 otherwise.
#
# SPDX-License-Identifier: GPL-2.0-or-later

import sys

L1, L2, L3, DRAM = 1, 2, 3, 4
TOP = 2**64 - 1


class Level:
    """One level: "Levels" and "LRU" of docs/cache-model.md."""

    def __init__(self, size, ways, line, latency):
        self.ways = ways
        self.line = line
        self.latency = latency
        self.sets = size // (ways * line)
        assert self.sets * ways * line == size, "size is not sets*ways*line"
        assert self.sets & (self.sets - 1) == 0, "sets not a power of two"
        self.content = {}  # set index -> {line number: last use}
        self.clock = 0

    def _set(self, addr):
        n = addr // self.line
        return n, self.content.setdefault(n % self.sets, {})

    def lookup(self, addr):
        n, s = self._set(addr)
        if n not in s:
            return False
        self.clock += 1
        s[n] = self.clock
        return True

    def fill(self, addr):
        n, s = self._set(addr)
        assert n not in s
        if len(s) == self.ways:
            victim = min(s, key=lambda k: s[k])
            del s[victim]
        self.clock += 1
        s[n] = self.clock

    def invalidate(self, addr):
        n, s = self._set(addr)
        s.pop(n, None)


class Model:
    def __init__(self, levels, dram_latency):
        self.levels = levels
        self.dram_latency = dram_latency

    def line_access(self, addr):
        """"Lookup and fill": the index of the supplying level (len = DRAM)."""
        for i, lv in enumerate(self.levels):
            if lv.lookup(addr):
                break
        else:
            i = len(self.levels)
        for lv in self.levels[:i]:
            lv.fill(addr)
        return i

    def load(self, addr, size):
        """"Loads and line-crossing loads": (miss, level, latency, addr,
        misses)."""
        size = max(size, 1)
        last = min(addr + size - 1, TOP)
        step = self.levels[0].line
        first_line = addr // step * step
        last_line = last // step * step
        result = None
        misses = 0
        for a in range(first_line, last_line + 1, step):
            i = self.line_access(a)
            if i == 0:
                continue
            misses += 1
            if result is None:
                if i < len(self.levels):
                    level, latency = L1 + i, self.levels[i].latency
                else:
                    level, latency = DRAM, self.dram_latency
                result = (level, latency, max(a, addr))
        if result is None:
            return (0, L1, self.levels[0].latency, addr, 0)
        return (1, result[0], result[1], result[2], misses)

    def flush(self):
        for lv in self.levels:
            lv.content.clear()

    def flush_line(self, addr):
        for lv in self.levels:
            lv.invalidate(addr)


def check(path):
    model = None
    loads = bad = 0
    per_level = {}
    with open(path) as f:
        for lineno, text in enumerate(f, 1):
            w = text.split()
            if not w or w[0].startswith('#'):
                continue
            if w[0] == 'config':
                v = [int(x, 16) for x in w[1:]]
                n, dram = v[0], v[1]
                assert len(v) == 2 + 4 * n, f"{path}:{lineno}: bad config"
                model = Model([Level(*v[2 + 4 * i:6 + 4 * i])
                               for i in range(n)], dram)
                print(f"config {' '.join(w[1:])}")
            elif w[0] == 'load':
                assert w[3] == '->', f"{path}:{lineno}: bad load"
                addr, size = int(w[1], 16), int(w[2], 16)
                want = tuple(int(x, 16) for x in w[4:9])
                got = model.load(addr, size)
                loads += 1
                per_level[got[1]] = per_level.get(got[1], 0) + 1
                if got != want:
                    bad += 1
                    if bad <= 10:
                        print(f"{path}:{lineno}: load {addr:x} {size:x}: "
                              f"engine {' '.join('%x' % x for x in want)}, "
                              f"reference {' '.join('%x' % x for x in got)}")
            elif w[0] == 'flush':
                model.flush()
            elif w[0] == 'flushline':
                model.flush_line(int(w[1], 16))
            else:
                raise SystemExit(f"{path}:{lineno}: unknown operation {w[0]}")
    levels = ' '.join(f"{k}:{per_level[k]}" for k in sorted(per_level))
    print(f"cache_model_ref: {loads} loads (by level {levels}), "
          f"{bad} mismatches")
    return bad == 0 and loads > 0


if __name__ == '__main__':
    if len(sys.argv) != 2:
        raise SystemExit("usage: cache_model_ref.py STREAM")
    sys.exit(0 if check(sys.argv[1]) else 1)
