#!/usr/bin/env bash
# A/B of qemu-x86_64 builds on one copy of gzip -6 (or xz -6) with DME
# (or other events): quicker than bench/qemu-bench.sh, for a change's
# effect.
#
#   bench/ab.sh [-n ROUNDS] [-e EVENTS] [-w gzip|xz] BINARY...
#
# Each round runs every BINARY once with LWP counting EVENTS (default
# dme; written as lwp-preload.so takes them, e.g. ire+bre) at interval
# 99,999, then the first BINARY once with LWP off, in that order; prints
# the min and median CPU time (user + sys) of each, and each binary's
# lwp-preload line of its last run (records must not differ).  Copy the
# binaries first (cp build/qemu-x86_64 /tmp/q-new): a rebuild during the
# rounds would change them.  Uses the input and lwp-preload.so of the
# last bench/qemu-bench.sh run (build/bench/).  On this project's shared
# 2-core VMs differences under about 5% need more rounds than the default
# 5 (docs/benchmarks.md).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../scripts/common.sh
. "$(dirname "$0")/../scripts/common.sh"

rounds=5
events=dme
workload=gzip
while getopts "n:e:w:h" opt; do
    case $opt in
    n) rounds=$OPTARG ;;
    e) events=$OPTARG ;;
    w) workload=$OPTARG ;;
    *) sed -n '5p' "$0" | sed 's/^# //' >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || die "usage: bench/ab.sh [-n ROUNDS] [-e EVENTS] [-w gzip|xz] BINARY..."
B=$BUILD/bench
case $workload in
gzip) prog=(/usr/bin/gzip -6 -c) ;;
xz) prog=(/usr/bin/xz -T1 -6 -c) ;;
*) die "unknown workload '$workload' (gzip or xz)" ;;
esac
for f in "$B/input-6m.tar" "$B/lwp-preload.so"; do
    [ -f "$f" ] || die "$f missing: run bench/qemu-bench.sh once"
done

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
TIMEFORMAT='%3U %3S'
for ((r = 0; r < rounds; r++)); do
    i=0
    for b in "$@"; do
        t=$({ time "$b" -cpu max,+lwp -E "LD_PRELOAD=$B/lwp-preload.so" \
                  -E "LWP_BENCH_EVENTS=$events" -E LWP_BENCH_INTERVAL=99999 \
                  -E "LWP_BENCH_OUT=$out/$i.lwp" \
                  "${prog[@]}" "$B/input-6m.tar" >/dev/null; } 2>&1)
        echo "$i $t" >>"$out/times"
        i=$((i + 1))
    done
    t=$({ time "$1" -cpu max "${prog[@]}" "$B/input-6m.tar" \
              >/dev/null; } 2>&1)
    echo "off $t" >>"$out/times"
done
i=0
for b in "$@" off; do
    key=$i
    [ "$b" = off ] && key=off
    awk -v k="$key" '$1 == k { print $2 + $3 }' "$out/times" | sort -n |
        awk -v name="$b" '{ v[NR] = $1 } END {
            printf "%-40s min %.2f s  median %.2f s  (%d runs)\n", name,
                   v[1], v[int((NR + 1) / 2)], NR }'
    if [ "$b" != off ]; then
        sed 's/^/    /' "$out/$i.lwp"
    fi
    i=$((i + 1))
done
