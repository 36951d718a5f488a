#!/usr/bin/env bash
# Host instructions of qemu-x86_64 per configuration: the deterministic
# companion of bench/qemu-bench.sh.
#
#   bench/host-insns.sh [-w gzip,xz,sha256] [-c up,off,never,val,irebre,ire]
#
# Runs each workload once per configuration under valgrind's cachegrind
# (--cache-sim=no) and reports the host instructions executed (Ir) by the
# whole qemu process, generated code included, with ratios.  Unlike CPU
# time, the count does not depend on what else the machine runs, so it
# shows what a change to the generated code costs even on a noisy
# machine.  It is not a time: an instruction that waits for memory costs
# more than one that does not.  Times a copy of build/qemu-x86_64 and
# upstream's, with the inputs and lwp-preload.so of the last
# bench/qemu-bench.sh run (build/bench/) and its configurations.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../scripts/common.sh
. "$(dirname "$0")/../scripts/common.sh"

LWP_CPU=${LWP_CPU:-max}
GZIP_COPIES=${GZIP_COPIES:-8}
SHA_N=${SHA_N:-3000000}
WORKLOADS=gzip,xz,sha256
CFGS=up,off,never,val,irebre,ire
while getopts "w:c:h" opt; do
    case $opt in
    w) WORKLOADS=$OPTARG ;;
    c) CFGS=$OPTARG ;;
    *) sed -n '5p' "$0" | sed 's/^# //' >&2; exit 2 ;;
    esac
done
IFS=, read -r -a WLS <<<"$WORKLOADS"
IFS=, read -r -a CS <<<"$CFGS"

B=$BUILD/bench
OUT=$B/insns
UP=$BUILD/upstream/qemu-x86_64
OURS=$OUT/qemu-x86_64-ours
PRELOAD=$B/lwp-preload.so
for f in "$UP" "$BUILD/qemu-x86_64" "$PRELOAD" "$B/input-6m.tar" \
         "$B/sha256-chain"; do
    [ -e "$f" ] || die "$f missing: run bench/qemu-bench.sh first"
done
command -v valgrind >/dev/null || die "valgrind missing: scripts/install-deps.sh"
rm -rf "$OUT"
mkdir -p "$OUT"
cp "$(readlink -f "$BUILD/qemu-x86_64")" "$OURS"

# count WORKLOAD CONFIG: run it under cachegrind, leave Ir in $OUT/W.C.ir
count() {
    local w=$1 c=$2 i q=()
    local -a cmd
    case $w in
    gzip)
        cmd=(/usr/bin/gzip -6 -c)
        for ((i = 0; i < GZIP_COPIES; i++)); do cmd+=("$B/input-6m.tar"); done ;;
    xz) cmd=(/usr/bin/xz -T1 -6 -c "$B/input-6m.tar") ;;
    sha256) cmd=("$B/sha256-chain" "$SHA_N") ;;
    *) die "unknown workload '$w'" ;;
    esac
    case $c in
    up) q=("$UP" -cpu max) ;;
    off) q=("$OURS" -cpu max) ;;
    never) q=("$OURS" -cpu "$LWP_CPU,+lwp") ;;
    val | irebre | ire)
        q=("$OURS" -cpu "$LWP_CPU,+lwp" -E "LD_PRELOAD=$PRELOAD"
           -E "LWP_BENCH_EVENTS=${c/irebre/ire+bre}"
           -E LWP_BENCH_INTERVAL=99999 -E "LWP_BENCH_OUT=$OUT/$w.$c.lwp") ;;
    *) die "unknown configuration '$c'" ;;
    esac
    valgrind --tool=cachegrind --cache-sim=no \
        --cachegrind-out-file=/dev/null "${q[@]}" "${cmd[@]}" \
        >/dev/null 2>"$OUT/$w.$c.err" ||
        die "$w/$c failed (see $OUT/$w.$c.err)"
    sed -n 's/.*I *refs: *//p' "$OUT/$w.$c.err" | tr -d , >"$OUT/$w.$c.ir"
    [ -s "$OUT/$w.$c.ir" ] || die "$w/$c: no Ir in $OUT/$w.$c.err"
}

# two at a time, one per core
jobs=()
for w in "${WLS[@]}"; do
    for c in "${CS[@]}"; do
        jobs+=("$w $c")
    done
done
for ((i = 0; i < ${#jobs[@]}; i += 2)); do
    # shellcheck disable=SC2086
    count ${jobs[i]} &
    a=$!
    if ((i + 1 < ${#jobs[@]})); then
        # shellcheck disable=SC2086
        count ${jobs[i + 1]}
    fi
    wait "$a"
done

python3 - "$OUT" "$WORKLOADS" "$CFGS" <<'EOF'
import os, sys
out, wls, cs = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
ir = {(w, c): int(open(os.path.join(out, "%s.%s.ir" % (w, c))).read())
      for w in wls for c in cs}
print("| configuration | " + " | ".join(wls) + " |")
print("|---|" + "---:|" * len(wls))
for c in cs:
    print("| %s | %s |" % (c, " | ".join("%.3f G" % (ir[(w, c)] / 1e9)
                                         for w in wls)))
print()
pairs = [("off", "up"), ("never", "up"), ("irebre", "val"), ("ire", "val"),
         ("irebre", "off"), ("val", "off")]
print("| ratio of host instructions | " + " | ".join(wls) + " |")
print("|---|" + "---:|" * len(wls))
for a, b in pairs:
    if a in cs and b in cs:
        print("| %s vs %s | %s |" % (a, b, " | ".join(
            "%+.1f%%" % (100.0 * ir[(w, a)] / ir[(w, b)] - 100) for w in wls)))
EOF
