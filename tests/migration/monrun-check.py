#!/usr/bin/env python3
"""Part g of tests/migration/run.sh: HMP "info lwp" of a vCPU stopped in
the CPL 3 loop of config=monitor-run (tests/system/lwp-monitor.c).

  monrun-check.py REGS INFO RING INC JMP INTERVAL

REGS is the output of "info registers", INFO that of "info lwp", RING the
ring buffer saved with memsave; INC and JMP the addresses of the loop's
two instructions, INTERVAL the interval (and initial counter) of both
events.  From RBX and RIP, the instructions and branches that retired
since LLWPCB; from the spec, the counter each leaves:

  1.1 steps 1-5: an event decrements the counter; the event that takes
  it below 0 stores a record (EventId at byte 0, 8.1), and the counter is
  reset to the interval (Random = 0).  Starting at INTERVAL, every
  (INTERVAL + 1)-th event stores one: after E events the ring holds
  E // (INTERVAL + 1) records of the event and the counter is
  INTERVAL - E % (INTERVAL + 1).

Prints one PASS:/FAIL: line per check; exits 1 if one failed.

SPDX-License-Identifier: GPL-2.0-or-later
"""

import re
import sys


def main(argv):
    regs, info = open(argv[1]).read(), open(argv[2]).read()
    ring = open(argv[3], 'rb').read()
    inc, jmp, interval = (int(a, 0) for a in argv[4:7])
    rbx = int(re.search(r'RBX=([0-9a-f]+)', regs).group(1), 16)
    rip = int(re.search(r'RIP=([0-9a-f]+)', regs).group(1), 16)
    ok = True

    def check(cond, what):
        nonlocal ok
        print('%s: %s' % ('PASS' if cond else 'FAIL', what))
        ok = ok and cond

    check(rip in (inc, jmp), 'stopped in the loop (RIP 0x%x)' % rip)
    # the loop runs at CPL 3, where LWP counts
    check('CPL 3, running' in info and
          'LWP enabled, counting (CPL 3)' in info,
          'info lwp: "CPL 3, running" and "LWP enabled, counting (CPL 3)"')
    at_jmp = rip == jmp
    head = int(re.search(r'head (\d+),', info).group(1))
    missed = int(re.search(r'MissedEvents (\d+)', info).group(1))
    check(missed == 0 and head < len(ring),
          'the ring held every record (head %d, MissedEvents %d)'
          % (head, missed))
    ids = [ring[i] for i in range(0, head, 32)]
    for eid, name, events in ((2, 'Instructions Retired',
                               2 * rbx - at_jmp),
                              (3, 'Branches Retired', rbx - at_jmp)):
        r, want = divmod(events, interval + 1)
        want = interval - want
        check(ids.count(eid) == r, '%s records in the ring %d, expected %d'
              % (name, ids.count(eid), r))
        m = re.search(r'EventId %d \(%s\): interval (\d+), counter (-?\d+)'
                      % (eid, name), info)
        got = int(m.group(2)) if m else None
        check(got == want,
              '%s counter %s, expected %d (RBX %d, at %s)'
              % (name, got, want, rbx, 'jmp' if at_jmp else 'inc'))
    check(ids.count(2) + ids.count(3) == len(ids),
          'only IRE and BRE records in the ring')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
