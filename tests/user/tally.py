"""PASS:/FAIL: lines and their counts, for the user layer's checkers
(dme-check.py, in-asm-check.py, trace-check.py).

SPDX-License-Identifier: GPL-2.0-or-later
"""


class Tally:
    def __init__(self, name):
        self.name = name
        self.passed = self.failed = 0

    def report(self, ok, msg):
        """Print a PASS: or FAIL: line for msg and count it; return ok"""
        print(("PASS: " if ok else "FAIL: ") + msg)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok

    def finish(self):
        """Print "NAME: N passed, N failed"; the exit status"""
        print(f"{self.name}: {self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
