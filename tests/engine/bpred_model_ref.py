#!/usr/bin/env python3
# An independent implementation of the branch-predictor model, written
# from docs/branch-predictor.md alone (it shares nothing with
# tcg-helpers/bpred.cc).  It reads a stream file (docs/branch-predictor.md,
# "Tests"), recomputes every branch and every state dump, and compares
# them with the ones the file records.
#
# Unlike the engine, the counters and the BTB are dictionaries that hold
# only the slots that differ from RESET, and the index functions are
# computed bit by bit from their description ("bits 0 to n-1 of the index
# are bits 0 to n-1 of the address XORed with bits n to 2n-1").
#
#   python3 tests/engine/bpred_model_ref.py STREAM
#
# Exit status 0 when every result matches, 1 otherwise.
#
# SPDX-License-Identifier: GPL-2.0-or-later

import functools
import sys

ADDR_BITS = 64
ALL_ONES = (1 << ADDR_BITS) - 1
COND_BITS, BTB_BITS = 12, 9
RSB_DEPTH = 16
COUNTER_AT_RESET = 1


@functools.lru_cache(maxsize=1 << 16)
def fold(ip, n):
    """"Index functions": bit k of the index, for k < n, is bit k of the
    address XOR bit n + k."""
    index = 0
    for k in range(n):
        bit = ((ip >> k) & 1) ^ ((ip >> (n + k)) & 1)
        index |= bit << k
    return index


class Predictor:
    def __init__(self):
        self.reset()

    def reset(self):
        """"Reset"."""
        self.counters = {}  # index -> counter, when not COUNTER_AT_RESET
        self.btb = {}       # index -> (tag, target), when not (ALL_ONES, 0)
        self.stack = [0] * RSB_DEPTH
        self.top = 0

    def counter(self, i):
        return self.counters.get(i, COUNTER_AT_RESET)

    def cond(self, ip, taken):
        """"Conditional branches": the table of the four counter values."""
        i = fold(ip, COND_BITS)
        c = self.counter(i)
        predicted_taken = c in (2, 3)
        if taken:
            c = min(c + 1, 3)
        else:
            c = max(c - 1, 0)
        if c == COUNTER_AT_RESET:
            self.counters.pop(i, None)
        else:
            self.counters[i] = c
        return predicted_taken != taken

    def indirect(self, ip, target):
        """"Indirect branches"."""
        i = fold(ip, BTB_BITS)
        tag, predicted = self.btb.get(i, (ALL_ONES, 0))
        hit = tag == ip
        if (ip, target) == (ALL_ONES, 0):
            self.btb.pop(i, None)
        else:
            self.btb[i] = (ip, target)
        return not hit or predicted != target

    def call(self, return_ip):
        """"Return stack": push."""
        self.top = (self.top + 1) % RSB_DEPTH
        self.stack[self.top] = return_ip

    def ret(self, target):
        """"Return stack": pop, with no underflow check."""
        predicted = self.stack[self.top]
        self.top = (self.top - 1) % RSB_DEPTH
        return predicted != target

    def dump(self):
        """The `state` line of "Tests", without its keyword."""
        digits = ''.join('%x' % self.counter(i)
                         for i in range(1 << COND_BITS))
        btb = ','.join('%x:%x:%x' % (i, self.btb[i][0], self.btb[i][1])
                       for i in sorted(self.btb))
        return ' '.join(['%x' % self.top] +
                        ['%x' % e for e in self.stack] +
                        [digits, btb or '-'])


def first_difference(want, got):
    """The first field of two `state` lines that differs, named."""
    names = (['rsb_top'] + [f'rsb[{i}]' for i in range(RSB_DEPTH)] +
             ['counters', 'btb'])
    for name, a, b in zip(names, want, got):
        if a == b:
            continue
        if name == 'counters' and len(a) == len(b):
            i = next(k for k in range(len(a)) if a[k] != b[k])
            return f"cond[{i:#x}] {a[i]}", f"cond[{i:#x}] {b[i]}"
        return f"{name} {a[:120]}", f"{name} {b[:120]}"
    return f"{len(want)} fields", f"{len(got)} fields"


def check(path):
    model = Predictor()
    branches = bad = dumps = 0
    kinds = {'cond': [0, 0], 'ind': [0, 0], 'ret': [0, 0]}
    calls = resets = 0

    def report(lineno, what, engine, reference):
        if bad <= 10:
            print(f"{path}:{lineno}: {what}: engine {engine}, "
                  f"reference {reference}")

    with open(path) as f:
        for lineno, text in enumerate(f, 1):
            w = text.split()
            if not w or w[0].startswith('#'):
                continue
            op = w[0]
            if op == 'reset':
                model.reset()
                resets += 1
            elif op == 'call':
                model.call(int(w[1], 16))
                calls += 1
            elif op in kinds:
                args = w[1:-2]
                assert w[-2] == '->', f"{path}:{lineno}: bad {op}"
                want = int(w[-1], 16)
                v = [int(x, 16) for x in args]
                if op == 'cond':
                    got = model.cond(v[0], v[1] != 0)
                elif op == 'ind':
                    got = model.indirect(v[0], v[1])
                else:
                    got = model.ret(v[0])
                branches += 1
                kinds[op][0] += 1
                kinds[op][1] += int(got)
                if int(got) != want:
                    bad += 1
                    report(lineno, text.strip(), want, int(got))
            elif op == 'state':
                dumps += 1
                want = w[1:]
                got = model.dump().split()
                if got != want:
                    bad += 1
                    report(lineno, 'state', *first_difference(want, got))
            else:
                raise SystemExit(f"{path}:{lineno}: unknown operation {op}")
    detail = ', '.join(f"{k} {n} ({m} mispredicted)"
                       for k, (n, m) in kinds.items())
    print(f"bpred_model_ref: {branches} branches: {detail}; {calls} calls, "
          f"{resets} resets, {dumps} state dumps; {bad} mismatches")
    return bad == 0 and branches > 0


if __name__ == '__main__':
    if len(sys.argv) != 2:
        raise SystemExit("usage: bpred_model_ref.py STREAM")
    sys.exit(0 if check(sys.argv[1]) else 1)
