#!/usr/bin/env python3
"""A minimal QMP client for tests/migration/run.sh (standard library only).

  qmp.py SOCKET COMMAND [JSON-ARGUMENTS]  run one command, print its return
  qmp.py SOCKET hmp 'savevm s1'           human-monitor-command; fails when
                                          the output says "Error"
  qmp.py SOCKET wait-migration            poll query-migrate until the
                                          migration completed (exit 0) or
                                          failed (exit 1)
  qmp.py SOCKET wait-jobs                 poll query-jobs until every job
                                          concluded, dismiss them; exit 1
                                          if one had an error

Connects (retrying for up to 10 s while QEMU starts), negotiates
capabilities and prints the "return" value as JSON.  Exits 1 on an
"error" reply, 2 on a connection or protocol failure.

SPDX-License-Identifier: GPL-2.0-or-later
"""

import json
import socket
import sys
import time


class Qmp:
    def __init__(self, path, timeout=30.0):
        deadline = time.monotonic() + 10.0
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.settimeout(timeout)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.file = self.sock.makefile('rb')
        self.read()                     # the greeting
        self.command('qmp_capabilities')

    def read(self):
        line = self.file.readline()
        if not line:
            raise ConnectionError('QMP connection closed')
        return json.loads(line)

    def command(self, name, args=None):
        msg = {'execute': name}
        if args:
            msg['arguments'] = args
        self.sock.sendall(json.dumps(msg).encode() + b'\n')
        while True:
            reply = self.read()
            if 'event' in reply:
                continue
            if 'error' in reply:
                raise RuntimeError('%s: %s' % (name, reply['error']))
            return reply['return']


def poll(q, what, done, limit=60.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = q.command(what)
        if done(value):
            return value
        time.sleep(0.05)
    raise TimeoutError('%s: no end after %.0f s' % (what, limit))


def main(argv):
    path, cmd = argv[1], argv[2]
    q = Qmp(path)
    if cmd == 'hmp':
        out = q.command('human-monitor-command', {'command-line': argv[3]})
        print(out, end='')
        return 1 if 'Error' in out else 0
    if cmd == 'wait-migration':
        st = poll(q, 'query-migrate',
                  lambda r: r.get('status') in ('completed', 'failed',
                                                'cancelled'))
        print(json.dumps(st))
        return 0 if st['status'] == 'completed' else 1
    if cmd == 'wait-jobs':
        jobs = poll(q, 'query-jobs',
                    lambda r: all(j['status'] == 'concluded' for j in r))
        for j in jobs:
            q.command('job-dismiss', {'id': j['id']})
        print(json.dumps(jobs))
        return 1 if any('error' in j for j in jobs) else 0
    args = json.loads(argv[3]) if len(argv) > 3 else None
    print(json.dumps(q.command(cmd, args)))
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main(sys.argv))
    except RuntimeError as e:
        print('qmp.py: %s' % e, file=sys.stderr)
        sys.exit(1)
    except (OSError, ValueError, TimeoutError, ConnectionError) as e:
        print('qmp.py: %s' % e, file=sys.stderr)
        sys.exit(2)
