# The reads in a log of tests/linux/uinsn-plugin.c (loads=R1:R2), for the
# oracles that run them through the reference cache model
# (cache-oracle.py, ll-oracle.py).
#
# SPDX-License-Identifier: GPL-2.0-or-later


def reads(path):
    """Each line about reads, in order: ('i', run) when an instruction
    that reads memory starts, ('l', addr, size) for each of its reads, and
    ('drop',) when it runs again without having retired (its reads so far
    count nothing, though the cache saw them)."""
    with open(path) as f:
        for text in f:
            w = text.split()
            if not w:
                continue
            if w[0] == 'i':
                yield ('i', int(w[1]))
            elif w[0] == 'l':
                yield ('l', int(w[1], 16), int(w[2]))
            elif w[0] == 'drop':
                yield ('drop',)
