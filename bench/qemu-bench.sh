#!/usr/bin/env bash
# qemu-x86_64 against upstream: the speed benchmark of issue 5.
#
#   bench/qemu-bench.sh [-n REPS] [-w gzip,xz,sha256] [-o REPORT]
#
# Runs CPU-bound real programs under upstream QEMU 10.0 (built by
# scripts/build-upstream.sh from the same tarball with the same configure
# options), under ours with LWP off, supported but never enabled, and
# enabled by bench/lwp-preload.so, and under upstream with its inline
# counting plugins.  Each of REPS rounds runs every configuration once, in
# a new random order; the report gives medians of CPU time (user + sys of
# the qemu process) and wall time, with ratios.  A benchmark, not a test: it checks that every
# run's output is identical to the native program's and that LWP set up,
# never how long anything took.  docs/benchmarks.md explains each row.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../scripts/common.sh
. "$TOP/scripts/common.sh"

# The CPU model of the LWP configurations: `-cpu $LWP_CPU,+lwp`.  Use
# Opteron_G4 when `max,+lwp` does not advertise IRE and BRE.
LWP_CPU=${LWP_CPU:-max}
REPS=5
WORKLOADS=gzip,xz,sha256
# Sizes: each full run takes 2-5 s under QEMU on the reference machine
GZIP_COPIES=${GZIP_COPIES:-8}       # gzip -6 -c of the 6 MiB input, N times
SHA_N=${SHA_N:-3000000}             # sha256-chain iterations
# Inputs of the minimum-interval runs (one record every other instruction)
GZIP_SMALL=${GZIP_SMALL:-524288}    # bytes of the input
XZ_SMALL=${XZ_SMALL:-49152}
SHA_SMALL=${SHA_SMALL:-15000}
RING_KB=${RING_KB:-32768}
MAX_WAIT=${MAX_WAIT:-1800}          # seconds to wait for builds to finish

usage() {
    sed -n '3,4p' "$0" | sed 's/^# //' >&2
    exit 2
}
REPORT=
while getopts "n:w:o:h" opt; do
    case $opt in
    n) REPS=$OPTARG ;;
    w) WORKLOADS=$OPTARG ;;
    o) REPORT=$OPTARG ;;
    *) usage ;;
    esac
done
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive number"
IFS=, read -r -a WLS <<<"$WORKLOADS"
for w in "${WLS[@]}"; do
    case $w in gzip | xz | sha256) ;; *) die "unknown workload '$w'" ;; esac
done

"$TOP/scripts/build-upstream.sh"

B=$BUILD/bench
RUNS=$B/runs
UP=$BUILD/upstream/qemu-x86_64
PLUGDIR=$BUILD/upstream/tests/tcg/plugins
OURS=$B/qemu-x86_64-ours
PRELOAD=$B/lwp-preload.so
REPORT=${REPORT:-$B/report.md}
mkdir -p "$B"
rm -rf "$RUNS"
mkdir -p "$RUNS"

# ---- wait for an idle machine ---------------------------------------------
builds_running() {
    pgrep -x ninja >/dev/null || pgrep -x cc1 >/dev/null ||
        pgrep -x cc1plus >/dev/null
}
busy_rounds=0
wait_idle() {
    local waited=0
    while builds_running && [ "$waited" -lt "$MAX_WAIT" ]; do
        if [ "$waited" = 0 ]; then
            log "a build is running (ninja/cc1/cc1plus): waiting"
        fi
        sleep 5
        waited=$((waited + 5))
    done
    if builds_running; then
        log "warning: still building after ${MAX_WAIT}s; measuring anyway"
        busy_rounds=$((busy_rounds + 1))
    elif [ "$waited" -gt 0 ]; then
        log "waited ${waited}s for builds to finish"
    fi
    total_wait=$((total_wait + waited))
}
total_wait=0
wait_idle

# ---- binaries and inputs --------------------------------------------------
# A private copy of ours: build/qemu-x86_64 is rebuilt by others meanwhile
[ -x "$BUILD/qemu-x86_64" ] ||
    die "build/qemu-x86_64 missing: run scripts/build.sh"
cp "$(readlink -f "$BUILD/qemu-x86_64")" "$OURS.tmp"
mv -f "$OURS.tmp" "$OURS"
"$OURS" -version >/dev/null || die "$OURS does not run"
gcc -O2 -Wall -Wextra -Werror -mlwp -shared -fPIC -pthread \
    -I"$TOP/include" -o "$PRELOAD" "$TOP/bench/lwp-preload.c"
gcc -O2 -Wall -Wextra -Werror -o "$B/sha256-chain" "$TOP/bench/sha256-chain.c"

INPUT=$B/input-6m.tar
if [ ! -f "$INPUT" ] || [ "$(stat -c %s "$INPUT")" != 6291456 ]; then
    log "generating $INPUT: the first 6 MiB of the QEMU source tar"
    tarball=$(qemu_tarball)
    # head closes the pipe early: xz's SIGPIPE is expected
    (xz -dc "$tarball" || true) | head -c 6291456 >"$INPUT.tmp"
    mv "$INPUT.tmp" "$INPUT"
fi
head -c "$GZIP_SMALL" "$INPUT" >"$B/input-gzip-small.tar"
head -c "$XZ_SMALL" "$INPUT" >"$B/input-xz-small.tar"

# workload_cmd WORKLOAD SIZE: the guest command line (SIZE: full or small)
# in the array CMD
workload_cmd() {
    local i
    case $1/$2 in
    gzip/full)
        CMD=(/usr/bin/gzip -6 -c)
        for ((i = 0; i < GZIP_COPIES; i++)); do CMD+=("$INPUT"); done ;;
    gzip/small) CMD=(/usr/bin/gzip -6 -c "$B/input-gzip-small.tar") ;;
    xz/full) CMD=(/usr/bin/xz -T1 -6 -c "$INPUT") ;;
    xz/small) CMD=(/usr/bin/xz -T1 -6 -c "$B/input-xz-small.tar") ;;
    sha256/full) CMD=("$B/sha256-chain" "$SHA_N") ;;
    sha256/small) CMD=("$B/sha256-chain" "$SHA_SMALL") ;;
    esac
}

# The command line for the report: paths relative to build/, copies counted
workload_desc() {
    workload_cmd "$1" "$2"
    echo "${CMD[*]}" | sed "s|$BUILD/||g" |
        sed "s|\( bench/input-6m.tar\)\{2,\}| bench/input-6m.tar (x$GZIP_COPIES)|"
}

# Configurations: name, input size, emulator command line.  BENCH_CONFIGS
# (space-separated) measures only those; BEFORE=BINARY adds b_off,
# b_irebre, b_dme, b_off_small and b_min_small: another build of ours (a
# copy of it, like ours), LWP off, IRE+BRE, DME, and the record cost at
# the minimum interval, to compare two versions in one run.
ALL_CONFIGS=(up off never irebre thread ire val dme bb insn cache off_small
             min_small)
read -r -a CONFIGS <<<"${BENCH_CONFIGS:-${ALL_CONFIGS[*]}}"
if [ -n "${BEFORE:-}" ]; then
    cp "$BEFORE" "$B/qemu-x86_64-before.tmp"
    mv -f "$B/qemu-x86_64-before.tmp" "$B/qemu-x86_64-before"
    "$B/qemu-x86_64-before" -version >/dev/null || die "$BEFORE does not run"
    CONFIGS+=(b_off b_irebre b_dme b_off_small b_min_small)
fi
for c in "${CONFIGS[@]}"; do
    case " ${ALL_CONFIGS[*]} b_off b_irebre b_dme b_off_small b_min_small " in
    *" $c "*) ;;
    *) die "unknown configuration '$c'" ;;
    esac
done
lwp_env() {
    QEMU+=(-E "LD_PRELOAD=$PRELOAD" -E "LWP_BENCH_EVENTS=$1"
           -E "LWP_BENCH_INTERVAL=$2" -E "LWP_BENCH_RING_KB=$RING_KB"
           -E "LWP_BENCH_OUT=$3.lwp")
}
config_size() {
    case $1 in *_small) echo small ;; *) echo full ;; esac
}
# config_qemu CONFIG RUN-PREFIX: the emulator and its options in QEMU
config_qemu() {
    case $1 in
    up) QEMU=("$UP" -cpu max) ;;
    off) QEMU=("$OURS" -cpu max) ;;
    never | off_small) QEMU=("$OURS" -cpu "$LWP_CPU,+lwp") ;;
    irebre | ire | val | dme)
        QEMU=("$OURS" -cpu "$LWP_CPU,+lwp")
        lwp_env "${1/irebre/ire+bre}" 99999 "$2" ;;
    thread)
        QEMU=("$OURS" -cpu "$LWP_CPU,+lwp")
        lwp_env ire+bre 99999 "$2"
        QEMU+=(-E LWP_BENCH_CONSUMER=thread) ;;
    min_small)
        QEMU=("$OURS" -cpu "$LWP_CPU,+lwp")
        lwp_env ire 0 "$2" ;;
    b_off) QEMU=("$B/qemu-x86_64-before" -cpu max) ;;
    b_off_small) QEMU=("$B/qemu-x86_64-before" -cpu "$LWP_CPU,+lwp") ;;
    b_min_small)
        QEMU=("$B/qemu-x86_64-before" -cpu "$LWP_CPU,+lwp")
        lwp_env ire 0 "$2" ;;
    b_irebre | b_dme)
        QEMU=("$B/qemu-x86_64-before" -cpu "$LWP_CPU,+lwp")
        lwp_env "$(sed 's/^b_//; s/irebre/ire+bre/' <<<"$1")" 99999 "$2" ;;
    bb | insn)
        QEMU=("$UP" -cpu max -plugin "$PLUGDIR/lib$1.so,inline=on"
              -d plugin -D "$2.plugin") ;;
    cache)
        QEMU=("$UP" -cpu max -plugin "$BUILD/upstream/contrib/plugins/libcache.so"
              -d plugin -D "$2.plugin") ;;
    esac
}

# Reference outputs: the native programs
for w in "${WLS[@]}"; do
    for size in full small; do
        workload_cmd "$w" "$size"
        "${CMD[@]}" >"$RUNS/$w.$size.native" ||
            die "native $w ($size) failed"
        sha256sum <"$RUNS/$w.$size.native" | cut -d' ' -f1 >"$RUNS/$w.$size.sum"
    done
done

# run_one WORKLOAD CONFIG REP: time one run, check its output
TIMEFORMAT='%3R %3U %3S'
run_one() {
    local w=$1 c=$2 rep=$3 p size sum rc=0 wall user sys
    p=$RUNS/$w.$c.$rep
    size=$(config_size "$c")
    rm -f "$p.lwp"
    config_qemu "$c" "$p"
    workload_cmd "$w" "$size"
    if builds_running; then busy_runs=$((busy_runs + 1)); fi
    { time "${QEMU[@]}" "${CMD[@]}" >"$p.out" 2>"$p.err"; } 2>"$p.time" ||
        rc=$?
    if [ "$rc" != 0 ]; then
        tail -n 5 "$p.err" >&2
        die "$w/$c run $rep exited with $rc (see $p.err)"
    fi
    sum=$(sha256sum <"$p.out" | cut -d' ' -f1)
    if [ "$sum" != "$(cat "$RUNS/$w.$size.sum")" ]; then
        die "$w/$c run $rep: output differs from the native program's ($p.out)"
    fi
    case $c in
    irebre | thread | ire | val | dme | min_small | b_irebre | b_dme | b_min_small)
        [ -s "$p.lwp" ] ||
            die "$w/$c run $rep: no lwp-preload report ($p.err)" ;;
    esac
    read -r wall user sys <"$p.time"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$c" "$rep" "$wall" "$user" "$sys" \
        >>"$RUNS/times.tsv"
    rm -f "$p.out"
}

ncfg=${#CONFIGS[@]}
busy_runs=0
log "measuring: $REPS rounds of ${WLS[*]} x ${CONFIGS[*]}"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s)
for ((rep = 1; rep <= REPS; rep++)); do
    [ "$rep" = 1 ] || wait_idle
    for w in "${WLS[@]}"; do
        # every configuration once per round, in a new random order, so
        # that no configuration always follows the same one
        for c in $(shuf -e "${CONFIGS[@]}"); do
            run_one "$w" "$c" "$rep"
        done
    done
    log "round $rep/$REPS done ($(($(date +%s) - start))s)"
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report -----------------------------------------------------------------
ours_src=$(readlink -f "$BUILD/qemu-x86_64")
{
    echo "qemu-bench: $(date -u +%Y-%m-%d) $(uname -m), $(nproc) cores," \
         "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
    echo "ours: copy of $ours_src" \
         "(built $(date -u -r "$ours_src" '+%Y-%m-%d %H:%M') UTC," \
         "HEAD $(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo '?'))," \
         "upstream: $(basename "$(qemu_tarball)"); LWP_CPU=$LWP_CPU"
    for w in "${WLS[@]}"; do
        echo "- $w: \`$(workload_desc "$w" full)\`;" \
             "small input: \`$(workload_desc "$w" small)\`"
    done
    echo "$REPS rounds; load average before $load_start, after $load_end;" \
         "waited ${total_wait}s for builds;" \
         "rounds started while a build ran: $busy_rounds," \
         "runs started while a build ran: $busy_runs of $((REPS * ncfg * ${#WLS[@]}))"
    echo
    python3 - "$RUNS" "${WLS[@]}" <<'EOF'
import glob, os, re, statistics, sys

runs, wls = sys.argv[1], sys.argv[2:]
t = {}
by_round = {}
for line in open(os.path.join(runs, "times.tsv")):
    w, c, rep, wall, user, syst = line.split("\t")
    t.setdefault((w, c), []).append((float(user) + float(syst), float(wall)))
    by_round[(w, c, rep)] = float(user) + float(syst)

def med(w, c, k=0):
    return statistics.median(x[k] for x in t[(w, c)])

def spread(w, c, k=0):
    v = [x[k] for x in t[(w, c)]]
    return (max(v) - min(v)) / statistics.median(v) * 100

def lwp(w, c):
    """The lwp-preload lines of every run, as dicts."""
    out = []
    for f in sorted(glob.glob(os.path.join(runs, f"{w}.{c}.*.lwp"))):
        out.append(dict(re.findall(r"(\w+)=(\w+)", open(f).read())))
    return out

def pct(a, b):
    return f"{(a / b - 1) * 100:+.1f}%"

def paired(w, a, b):
    """The median of the CPU-time ratios of a and b within each round."""
    r = [by_round[(w, a, rep)] / by_round[(w, b, rep)]
         for (w2, c, rep) in by_round if w2 == w and c == a]
    return f"{(statistics.median(r) - 1) * 100:+.1f}%"

def events(flags):
    names = ["", "VAL", "IRE", "BRE", "DME", "CNH", "RNH"]
    f = int(flags, 16)
    on = [n for i, n in enumerate(names) if i and f >> i & 1]
    return "+".join(on) or "none"

rows = [
    ("up", "upstream `-cpu max`"),
    ("off", "ours `-cpu max` (LWP off)"),
    ("never", "ours `+lwp`, never enabled"),
    ("irebre", "ours, IRE+BRE interval 99,999"),
    ("thread", "ours, IRE+BRE interval 99,999, consumer thread"),
    ("ire", "ours, IRE only, interval 99,999"),
    ("val", "ours, LWP enabled, no event counted (VAL only)"),
    ("dme", "ours, DME only, interval 99,999"),
    ("bb", "upstream, libbb.so inline"),
    ("insn", "upstream, libinsn.so inline"),
    ("cache", "upstream, libcache.so (its cache model)"),
    ("off_small", "ours `+lwp` never enabled, small input"),
    ("min_small", "ours, IRE minimum interval, small input"),
    ("b_off", "before (BEFORE=), LWP off"),
    ("b_irebre", "before, IRE+BRE interval 99,999"),
    ("b_dme", "before, DME only, interval 99,999"),
    ("b_off_small", "before, `+lwp` never enabled, small input"),
    ("b_min_small", "before, IRE minimum interval, small input"),
]
print("Medians: CPU seconds (user+sys) / wall seconds, and the spread "
      "(max-min)/median of the CPU times.\n")
print("| configuration | " + " | ".join(wls) + " |")
print("|---|" + "---:|" * len(wls))
for c, name in rows:
    if (wls[0], c) not in t:
        continue
    cells = [f"{med(w, c):.3f} / {med(w, c, 1):.3f} (±{spread(w, c) / 2:.1f}%)"
             for w in wls]
    print(f"| {name} | " + " | ".join(cells) + " |")

print("\nRatios: of the CPU-time medians [median of the per-round CPU-time "
      "ratios] (of the wall-time medians):\n")
print("| ratio | " + " | ".join(wls) + " | budget |")
print("|---|" + "---:|" * len(wls) + "---|")
ratios = [
    ("ours LWP off vs upstream", "off", "up", "at most +1%"),
    ("ours +lwp never enabled vs upstream", "never", "up", "at most +1%"),
    ("IRE+BRE 99,999 vs ours LWP off", "irebre", "off", "at most +10%"),
    ("IRE+BRE 99,999 vs +lwp never enabled", "irebre", "never", ""),
    ("IRE+BRE 99,999, consumer thread, vs ours LWP off", "thread", "off",
     ""),
    ("IRE only 99,999 vs ours LWP off", "ire", "off", ""),
    ("LWP enabled, VAL only vs ours LWP off", "val", "off", ""),
    ("libbb.so inline vs upstream", "bb", "up", "issue: ~+42% on gzip"),
    ("libinsn.so inline vs upstream", "insn", "up", "issue: ~+74% on gzip"),
    ("DME 99,999 vs ours LWP off", "dme", "off", "at most 4x (+300%)"),
    ("libcache.so vs upstream", "cache", "up", "issue: about 33x"),
    ("before: LWP off vs upstream", "b_off", "up", ""),
    ("before: IRE+BRE 99,999 vs its LWP off", "b_irebre", "b_off", ""),
    ("before: DME 99,999 vs its LWP off", "b_dme", "b_off", ""),
    ("IRE+BRE 99,999: ours vs before", "irebre", "b_irebre", ""),
    ("DME 99,999: ours vs before", "dme", "b_dme", ""),
]
for name, a, b, budget in ratios:
    if (wls[0], a) not in t or (wls[0], b) not in t:
        continue
    cells = [f"{pct(med(w, a), med(w, b))} [{paired(w, a, b)}] "
             f"({pct(med(w, a, 1), med(w, b, 1))})" for w in wls]
    print(f"| {name} | " + " | ".join(cells) + f" | {budget} |")

warn = []
print("\nLWP records (per run; LWPCB values read back after LLWPCB):\n")
print("| run | enabled (Flags) | EventInterval1/2/3 read back | records "
      "| IRE | BRE | MissedEvents | drains | ns per record |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
for w in wls:
    for c, label in (("irebre", "IRE+BRE 99,999"),
                     ("thread", "IRE+BRE 99,999, thread"),
                     ("ire", "IRE 99,999"),
                     ("val", "VAL only"), ("dme", "DME 99,999"),
                     ("min_small", "IRE minimum"),
                     ("b_irebre", "before, IRE+BRE 99,999"),
                     ("b_dme", "before, DME 99,999"),
                     ("b_min_small", "before, IRE minimum")):
        r = lwp(w, c)
        if not r:
            continue
        recs = statistics.median(int(x["records"]) for x in r)
        iv = sorted({"/".join(x.get(f"interval{i}", "-") for i in (1, 2, 3))
                     for x in r})
        missed = max(int(x["missed"]) for x in r)
        ev2 = statistics.median(int(x["ev2"]) for x in r)
        ev3 = statistics.median(int(x["ev3"]) for x in r)
        drains = statistics.median(int(x["drains"]) for x in r)
        flags = sorted({events(x["flags"]) for x in r})
        cost = "-"
        base = {"min_small": "off_small", "b_min_small": "b_off_small"}.get(c)
        if base and recs and (w, base) in t:
            cpu = (med(w, c) - med(w, base)) / recs * 1e9
            wall = (med(w, c, 1) - med(w, base, 1)) / recs * 1e9
            cost = f"{cpu:.0f} (wall {wall:.0f})"
        print(f"| {w}, {label} | {', '.join(flags)} | {', '.join(iv)} "
              f"| {recs:.0f} | {ev2:.0f} | {ev3:.0f} | {missed} "
              f"| {drains:.0f} | {cost} |")
        want = {"irebre": "IRE+BRE", "thread": "IRE+BRE", "ire": "IRE",
                "val": "VAL", "dme": "DME", "min_small": "IRE",
                "b_irebre": "IRE+BRE", "b_dme": "DME",
                "b_min_small": "IRE"}[c]
        if flags != [want]:
            warn.append(f"{w}, {label}: LLWPCB enabled {', '.join(flags)}, "
                        f"not {want} (try LWP_CPU=Opteron_G4)")

insns = []
for w in wls:
    f = glob.glob(os.path.join(runs, f"{w}.insn.*.plugin"))
    m = re.search(r"total insns: (\d+)", open(f[0]).read()) if f else None
    if m:
        insns.append(f"{w} {int(m.group(1)) / 1e6:.0f}M")
print("\nGuest instructions per full run (libinsn.so): " + ", ".join(insns))
for x in warn:
    print(f"\nWARNING: {x}")
EOF
} | tee "$REPORT"
log "report written to $REPORT; raw times in $RUNS/times.tsv"
