#!/usr/bin/env bash
# Run docs/quickstart-linux.md as written and check what it shows.
#
#   tests/linux/quickstart.sh QEMU_SYSTEM_BINARY [QEMU_USER_BINARY]
#
# The page's ```sh blocks are run in order, with four changes: no
# scripts/build.sh (the binaries are the arguments; the user binary
# defaults to the one next to the system binary), the working directory
# is build/quickstart instead of /tmp/lwp-qs, busybox comes from
# tests/linux/fetch.sh's cache (the same Debian busybox-static) instead
# of apt-get download, and each QEMU command's output goes to its own log
# (build/quickstart/boot-N.log, user-N.log), under `timeout`.  The
# expected values come from the spec's rules and the constants of
# docs/examples/lwp-hello.c, never from a run.  Prints one PASS:/FAIL:
# line per check, last line "quickstart: N passed, N failed".
#
# SPDX-License-Identifier: GPL-2.0-or-later
set -uo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 QEMU_SYSTEM_BINARY [QEMU_USER_BINARY]" >&2
    exit 2
fi
qsys=$(realpath "$1")
quser=$(realpath "${2:-$(dirname "$1")/qemu-x86_64}")
src=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/../../scripts/common.sh
. "$src/../../scripts/common.sh"
page=$TOP/docs/quickstart-linux.md
example=$TOP/docs/examples/lwp-hello.c
out=$BUILD/quickstart
boot_timeout=${LINUX_BOOT_TIMEOUT:-300}

passed=0
failed=0
check() { # STATUS TEXT...: STATUS 0 is a pass
    if [ "$1" = 0 ]; then
        shift
        echo "PASS: $*"
        passed=$((passed + 1))
    else
        shift
        echo "FAIL: $*"
        failed=$((failed + 1))
    fi
}
result() { if "$@"; then echo 0; else echo 1; fi; }
finish() {
    echo "quickstart: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
    exit
}

# 1. The page's commands, with the changes above
if ! dir=$("$src/fetch.sh"); then
    check 1 "Debian's busybox-static (tests/linux/fetch.sh)"
    finish
fi
rm -rf "$out"
mkdir -p "$out"
awk '/^```sh$/ { f = 1; next } /^```$/ { f = 0 } f' "$page" >"$out/page.sh"
# shellcheck disable=SC2016 # $q, $QS_DIR and $QS_BUSYBOX are for run.sh
sed -e '/^scripts\/build\.sh\( \|$\)/d' \
    -e 's|^q=/tmp/lwp-qs$|q=$QS_DIR|' \
    -e 's|^(cd \$q && apt-get download busybox-static && dpkg-deb -x busybox-static_\*\.deb bb)$|mkdir -p $q/bb/bin \&\& cp "$QS_BUSYBOX" $q/bb/bin/busybox|' \
    -e 's|^build/qemu-system-x86_64 |qs_boot |' \
    -e 's|^build/qemu-x86_64 |qs_user |' "$out/page.sh" >"$out/run.sh"
# Each change must have found its line: the page has the commands this
# script knows how to run
# shellcheck disable=SC2016
for pat in '^q=\$QS_DIR$' 'QS_BUSYBOX' '^qs_boot ' '^qs_user '; do
    if ! grep -q "$pat" "$out/run.sh"; then
        check 1 "the page's commands are the ones this script adapts (no line for /$pat/ in $out/run.sh)"
        finish
    fi
done
if grep -q 'build/qemu-\|apt-get\|/tmp/' "$out/run.sh"; then
    check 1 "the page has commands this script does not adapt: $(grep 'build/qemu-\|apt-get\|/tmp/' "$out/run.sh" | head -n 3)"
    finish
fi

# The QEMU commands, each to its own log; the page's commands run under
# bash -e, so the first one that fails stops the run
cat >"$out/prelude.sh" <<'EOF'
nb=0 nu=0
qs_boot() {
    local s=0
    nb=$((nb + 1))
    timeout "$QS_TIMEOUT" "$QS_SYSTEM" "$@" </dev/null >"$QS_OUT/boot-$nb.log" 2>&1 || s=$?
    echo "qs_boot $nb: exit status $s" >>"$QS_OUT/status"
    return "$s"
}
qs_user() {
    local s=0
    nu=$((nu + 1))
    "$QS_USER" "$@" </dev/null >"$QS_OUT/user-$nu.log" 2>&1 || s=$?
    echo "qs_user $nu: exit status $s" >>"$QS_OUT/status"
    return "$s"
}
EOF
rc=0
(cd "$TOP" && QS_DIR=$out/work QS_BUSYBOX=$dir/busybox QS_OUT=$out QS_TIMEOUT=$boot_timeout \
    QS_SYSTEM=$qsys QS_USER=$quser bash -e -c '. "$0"; . "$1"' "$out/prelude.sh" "$out/run.sh") \
    >"$out/run.log" 2>&1 || rc=$?
check "$rc" "the page's commands run (log $out/run.log)"
[ "$rc" = 0 ] || tail -n 20 "$out/run.log"
sed 's/^/    /' "$out/status" 2>/dev/null

# 2. lwp-hello: the spec's rules applied to the example's constants
def() { sed -n "s/^#define $1 *\([0-9]*\).*/\1/p" "$example"; }
loops=$(def LOOPS) interval=$(def INTERVAL) threshold=$(def THRESHOLD) ring=$(def RECORDS)
bin=$out/work/root/bin/lwp-hello
read -r work size < <(nm -S "$bin" 2>/dev/null | awk '$4 == "work" { print $1, $2 }') || true
if [ -z "${loops}${interval}${threshold}${ring}" ] || [ -z "${work:-}" ]; then
    check 1 "the constants of $example and work() in $bin"
    finish
fi
# work() retires 2 instructions per iteration; IRE with EventInterval2 =
# EventCounter2 = INTERVAL stores a record at every (INTERVAL + 1)-th
# (spec 5.1 step 7, 2.2); the instructions around the call are fewer
# than INTERVAL + 1, so the number of records is exact.  The ring holds
# RECORDS and the handler empties it at THRESHOLD records, so none is
# missed (spec 6, MissedEvents), and SIGIO comes once per THRESHOLD
# records (spec 6, Threshold; docs/linux.md).
records=$((2 * loops / (interval + 1)))
sigio=$((records / threshold))
if [ $((interval + 1)) -ge $((2 * loops)) ] || [ "$threshold" -ge "$ring" ]; then
    check 1 "the example's constants give records and a ring that never fills ($example)"
fi

hello() { # LOG WHERE MAXCPU
    local log=$1 where=$2 maxcpu=$3 eax flags line n total=0 bad="" ev cpu ip
    local -a f
    eax=$(tr -d '\r' <"$log" | sed -n 's/^lwp-hello: CPUID 8000_001C EAX 0x\([0-9a-f]*\)$/\1/p')
    flags=$(tr -d '\r' <"$log" | sed -n 's/^lwp-hello: LWPCB Flags after LLWPCB 0x\([0-9a-f]*\)$/\1/p')
    # spec 5.1 step 6: LLWPCB keeps the requested Flags (IRE | INT) that
    # are available, CPUID 8000_001C EAX (spec 3.3)
    check "$(result test -n "$eax" -a "$flags" = "$(printf '%08x' $((0x80000004 & 0x${eax:-0})))" -a $((0x${eax:-0} & 0x80000005)) = $((0x80000005)))" \
        "$where: LWP available (EAX ${eax:-none}) and LLWPCB enabled IRE and INT: Flags ${flags:-none} (want 80000004)"
    line=$(tr -d '\r' <"$log" | grep '^lwp-hello: [0-9]* records, MissedEvents' || true)
    check "$(result test "$line" = "lwp-hello: $records records, MissedEvents 0, $sigio SIGIO")" \
        "$where: $records records (2 x $loops instructions / $((interval + 1))), MissedEvents 0, $sigio SIGIO ($records / $threshold): got '${line#lwp-hello: }'"
    while read -r -a f; do
        # lwp-hello: N records of EventId E on CPU C at IP 0xX
        n=${f[1]} ev=${f[5]} cpu=${f[8]} ip=${f[11]}
        total=$((total + n))
        if [ "$ev" != 2 ] || [ "$cpu" -ge "$maxcpu" ] ||
           [ $((ip)) -lt $((0x$work)) ] || [ $((ip)) -ge $((0x$work + 0x$size)) ]; then
            bad+=" [$n of EventId $ev, CPU $cpu, IP $ip]"
        fi
    done < <(tr -d '\r' <"$log" | grep '^lwp-hello: [0-9]* records of EventId')
    if tr -d '\r' <"$log" | grep -q 'more records not listed'; then
        bad+=" [records not listed]"
    fi
    check "$(result test "$total" = "$records" -a -z "$bad")" \
        "$where: each record is EventId 2 (IRE), from CPU 0 to $((maxcpu - 1)), at an instruction of work() (0x$work, $((0x$size)) bytes): $total records listed${bad:+; not:$bad}"
}

log=$out/boot-1.log
if [ -f "$log" ]; then
    check "$(result grep -q '^qs_boot 1: exit status 0$' "$out/status")" "guest: QEMU exits by itself (-no-reboot, reboot -f)"
    check "$(result grep -aq '^init: /run finished' <(tr -d '\r' <"$log"))" "guest: /init runs /run to its end"
    hello "$log" "guest -smp 4" 4
else
    check 1 "guest: the page boots lwp-hello (no $log)"
fi
log=$out/user-1.log
if [ -f "$log" ]; then
    hello "$log" "qemu-x86_64" 1
else
    check 1 "qemu-x86_64: the page runs lwp-hello (no $log)"
fi

# 3. The pitfall: LLWPCB of IRE | DME where DME is not available leaves
# IRE (spec 5.1 step 6), which only the read after the barrier sees
log=$out/user-2.log
line=$(tr -d '\r' <"$log" 2>/dev/null | grep '^Flags without a barrier' || true)
check "$(result grep -q ', with one 0x4$' <<<"$line")" "llwpcb-flags under max,+lwp,-lwp-dme: Flags 0x4 after the barrier (${line:-no output})"

# 4. The conformance programs: every subcommand of lwp-linux but the
# stress run and perfown (the series' lwp perf PMU, which another kernel
# need not have) is in the page's list, each summary says 0 failed, no
# FAIL
mapfile -t want < <(sed -n 's/.*usage: lwp-linux \([a-z|]*\).*/\1/p' "$TOP/tests/linux/lwp-linux.c" |
    tr '|' '\n' | grep -vxE 'stress|perfown')
# shellcheck disable=SC2016
read -r -a listed < <(sed -n 's/^for t in \(.*\); do lwp-linux \$t; done$/\1/p' "$out/page.sh")
missing=$(comm -23 <(printf '%s\n' "${want[@]}" | sort) <(printf '%s\n' "${listed[@]}" | sort) | paste -sd' ')
check "$(result test ${#want[@]} -gt 0 -a -z "$missing")" \
    "conformance: the page runs every subcommand of lwp-linux's usage line but stress and perfown (${listed[*]:-none}${missing:+; missing: $missing})"
log=$out/boot-2.log
if [ -f "$log" ]; then
    check "$(result grep -q '^qs_boot 2: exit status 0$' "$out/status")" "conformance: QEMU exits by itself"
    for name in "${listed[@]}" lwp-sigabi; do
        line=$(tr -d '\r' <"$log" | grep -a "^$name: [0-9]* passed, [0-9]* failed" || true)
        check "$(result grep -q ' passed, 0 failed' <<<"$line")" "conformance: ${line:-$name printed no summary}"
    done
    bad=$(tr -d '\r' <"$log" | grep -a '^FAIL:' || true)
    check "$(result test -z "$bad")" "conformance: no FAIL line${bad:+: $bad}"
else
    check 1 "conformance: the page boots the programs (no $log)"
fi

# 5. The monitor section's long run boots and passes (info lwp itself is
# typed by hand)
log=$out/boot-3.log
line=$(tr -d '\r' <"$log" 2>/dev/null | grep -a '^selfprof: [0-9]* passed, [0-9]* failed' || true)
check "$(result grep -q '^qs_boot 3: exit status 0$' "$out/status")" "monitor section: QEMU exits by itself"
check "$(result grep -q ' passed, 0 failed' <<<"$line")" "monitor section: ${line:-selfprof printed no summary}"
finish
