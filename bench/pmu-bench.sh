#!/usr/bin/env bash
# What the Intel PMU costs a guest: the system-mode benchmark of the PMU.
#
#   bench/pmu-bench.sh [-n ROUNDS] [-k KIB] [-u] [-o REPORT]
#   bench/pmu-bench.sh -s MODES [-n ROUNDS] [-k KIB] [-o REPORT]
#
# Boots Debian 12's own kernel (tests/linux/fetch.sh) with an initramfs of
# busybox and Debian's perf (bench/pmu-bench-init), which runs busybox
# gzip -9 and bzip2 -9 of a KIB-KiB input, alone or under perf, and times
# them by the guest's clock (QEMU without -icount: host time). Each run is
# one boot. The runs:
#   off     -cpu Nehalem: no PMU
#   on      -cpu Nehalem,pmu=on nmi_watchdog=0: no counter enabled; and
#   stat    the programs under `perf stat` (its default events),
#   stat0   `perf stat /bin/true`: perf's own start and finish,
#   cache   under `perf stat -e cache-references,cache-misses`, and
#   record  under `perf record -e instructions -c 100003`
#   cost    -cpu Nehalem,pmu=on,cost-model=detailed: stat again
#   wd      -cpu Nehalem,pmu=on: Linux's NMI watchdog keeps a cycles counter
#           enabled
#   up      with -u: upstream QEMU 10.0's qemu-system-x86_64 -cpu Nehalem
#           (scripts/build-upstream.sh with UPSTREAM_SYSTEM=1)
# Every round boots each once, in a new random order. The report gives
# medians and ratios. With -s MODES (a comma-separated list of the guest's
# modes: plain, stat, stat3 = perf stat -e cycles,instructions,branches,
# stat0, cache, record, lbr = record with LBR branch stacks (-b),
# pebs = record of instructions:pp, ll = perf mem record of the loads
# above 3 cycles, bts = perf record -S -e intel_bts//u (nopti),
# lbron = LBR recording on with no counter, llon and llall = the
# load-latency counter on with no perf, above 30 and 3 cycles (through the
# msr driver, bench/pmu-msr.c),
# record0 = perf record of /bin/true; insns,
# recinsns, rec0insns = plain, record, record0 under perf stat of the
# guest's instructions at CPL 3 and 0), each round is instead one pmu=on
# boot that runs the MODES in turn, so that they compare without the
# spread between boots; the report gives each mode against plain, and the
# median instruction counts of the *insns modes. PMU_BENCH_QEMU=PATH times
# that qemu-system-x86_64 instead of building build/qemu-system-x86_64.
# Wall time: run it on a quiet machine. A benchmark, not a test: it
# checks that every run produced the same output, never how long anything
# took. docs/benchmarks.md explains each row.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../scripts/common.sh
. "$TOP/scripts/common.sh"
# shellcheck source=../tests/linux/lib.sh
. "$TOP/tests/linux/lib.sh"

ROUNDS=3 KIB=2048 UPSTREAM=0 REPORT='' SAME=''
while getopts "n:k:uo:s:h" opt; do
    case $opt in
    n) ROUNDS=$OPTARG ;;
    k) KIB=$OPTARG ;;
    u) UPSTREAM=1 ;;
    o) REPORT=$OPTARG ;;
    s) SAME=$OPTARG ;;
    *) sed -n '3,4p' "$0" | sed 's/^# //' >&2; exit 2 ;;
    esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $KIB =~ ^[1-9][0-9]*$ ]] ||
    die "-n and -k want positive numbers"
modes_re='(plain|stat|stat3|stat0|cache|record|lbr|pebs|ll|bts|lbron|llon|llall|record0|insns|recinsns|rec0insns)'
[[ -z $SAME || $SAME =~ ^$modes_re(,$modes_re)*$ ]] ||
    die "-s wants modes among plain,stat,stat3,stat0,cache,record,lbr,pebs,ll,bts,lbron,llon,llall,record0,insns,recinsns,rec0insns"

# PMU_BENCH_QEMU: another build's qemu-system-x86_64 to time: a copy, so
# that a rebuild during the rounds does not change it, in build/qemu/,
# where it finds the firmware
if [ -n "${PMU_BENCH_QEMU:-}" ]; then
    OURS=$PMU_BENCH_QEMU
else
    "$TOP/scripts/build.sh" >/dev/null
    OURS=$BUILD/qemu-system-x86_64
fi
UP=
if [ "$UPSTREAM" = 1 ]; then
    UPSTREAM_SYSTEM=1 "$TOP/scripts/build-upstream.sh" >/dev/null
    UP=$BUILD/upstream/qemu-system-x86_64
fi
kdir=$("$TOP/tests/linux/fetch.sh")
pdir=$("$TOP/tests/linux/fetch.sh" perf)
B=$BUILD/pmu-bench
rm -rf "$B"
mkdir -p "$B"
perf_tree "$B/root" "$kdir/busybox" "$pdir"
install -m 755 "$TOP/bench/pmu-bench-init" "$B/root/init"
# lbron, llon and llall: the msr driver of Debian's kernel package, and the tool
gcc -static -O2 -Wall -Werror -o "$B/root/bin/pmu-msr" "$TOP/bench/pmu-msr.c"
dpkg-deb --fsys-tarfile "$(ls "$kdir"/debs/linux-image-[0-9]*.deb | head -n 1)" |
    tar -xO --wildcards './lib/modules/*/kernel/arch/x86/kernel/msr.ko' \
        >"$B/root/msr.ko"
[ -s "$B/root/msr.ko" ] || die "no msr.ko in $kdir/debs' kernel package"
(cd "$B/root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
    gzip -1 >"$B/initramfs.gz"

# boot CONFIG MODE ROUND: one boot; "CONFIG MODE SECONDS" appended to
# $B/times, the guest's evidence in $B/CONFIG.MODE.ROUND.ev
boot() {
    local log=$B/$1.$2.$3.serial st=0 qemu=$OURS cpu=Nehalem,pmu=on
    local append="bench.modes=$2 bench.rounds=1"
    # Linux offers intel_bts only without page-table isolation
    case ,$2, in *,bts,*) append+=" nopti" ;; esac
    case $1 in
    off) cpu=Nehalem ;;
    on) append+=" nmi_watchdog=0" ;;
    cost) cpu+=",cost-model=detailed" append+=" nmi_watchdog=0" ;;
    up) qemu=$UP cpu=Nehalem ;;
    esac
    timeout 1200 "$qemu" -M pc -accel tcg -cpu "$cpu" -m 512M -smp 1 \
        -no-reboot -display none -vga none -nic none -monitor none \
        -serial "file:$log" -kernel "$kdir/vmlinuz" \
        -initrd "$B/initramfs.gz" \
        -append "console=ttyS0 quiet panic=-1 bench.kib=$KIB $append" \
        </dev/null || st=$?
    tr -d '\r' <"$log" | grep -ao '@@.*' >"$B/$1.$2.$3.ev" || true
    grep -q '^@@end$' "$B/$1.$2.$3.ev" ||
        die "$1 $2 (round $3) did not finish (qemu status $st): see $log"
    ! grep '^@@error' "$B/$1.$2.$3.ev" ||
        die "$1 $2 (round $3) failed: see $log"
    awk -v c="$1" '$1 == "@@time" { print c, $2, $4 }' "$B/$1.$2.$3.ev" \
        >>"$B/times"
    sed -n 's/^@@sum //p' "$B/$1.$2.$3.ev" >>"$B/sums"
    sed -n 's/^@@insns //p' "$B/$1.$2.$3.ev" >>"$B/insns"
}
# median CONFIG MODE: the median seconds of those runs
median() {
    awk -v c="$1" -v m="$2" '$1 == c && $2 == m { print $3 }' "$B/times" |
        sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
             else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# range CONFIG MODE: the least and the most seconds of those runs
range() {
    awk -v c="$1" -v m="$2" '$1 == c && $2 == m { print $3 }' "$B/times" |
        sort -n | sed -n '1p;$p' | paste -sd- -
}
if [ -n "$SAME" ]; then
    for ((r = 1; r <= ROUNDS; r++)); do
        log "round $r/$ROUNDS: on $SAME"
        boot on "$SAME" "$r"
    done
    [ "$(sort -u "$B/sums" | wc -l)" = 1 ] ||
        die "the runs' outputs differ: $(sort -u "$B/sums" | tr '\n' ' ')"
    report=$(
        echo "bench/pmu-bench.sh -s $SAME -n $ROUNDS -k $KIB: $(date -u +%F), $(nproc) host CPUs; the programs' seconds by the guest's clock, medians of $ROUNDS boots, each running every mode"
        echo
        echo "| mode | seconds (least-most) | against plain |"
        echo "|---|---|---|"
        for m in ${SAME//,/ }; do
            a=$(median on "$m") b=$(median on plain)
            printf '| %s | %s s (%s) | %s |\n' "$m" "$a" "$(range on "$m")" \
                "$([ -z "$b" ] || awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')"
        done
        if [ -s "$B/insns" ]; then
            echo
            echo "| mode | instructions at CPL 3 | at CPL 0 |"
            echo "|---|---|---|"
            for m in ${SAME//,/ }; do
                for f in 3 4; do
                    awk -v m="$m" -v f="$f" '$1 == m { print $f }' "$B/insns" |
                        sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
                done | paste -sd' ' - |
                    awk -v m="$m" 'NF == 2 { printf "| %s | %s | %s |\n", m, $1, $2 }'
            done
        fi
    )
    echo "$report"
    [ -z "$REPORT" ] || echo "$report" >"$REPORT"
    exit 0
fi
runs=("off plain" "on plain" "on stat" "on stat0" "on cache" "on record"
      "wd plain" "cost stat")
[ -z "$UP" ] || runs+=("up plain")
for ((r = 1; r <= ROUNDS; r++)); do
    while read -r c m; do
        log "round $r/$ROUNDS: $c $m"
        boot "$c" "$m" "$r"
    done < <(printf '%s\n' "${runs[@]}" | shuf)
done
[ "$(sort -u "$B/sums" | wc -l)" = 1 ] ||
    die "the runs' outputs differ: $(sort -u "$B/sums" | tr '\n' ' ')"

row() { # LABEL CONFIG MODE BASECONFIG BASEMODE
    local a b
    a=$(median "$2" "$3") b=$(median "$4" "$5")
    printf '| %s | %s s (%s) | %s s (%s) | %s |\n' "$1" "$a" \
        "$(range "$2" "$3")" "$b" "$(range "$4" "$5")" \
        "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')"
}
report=$(
    echo "bench/pmu-bench.sh -n $ROUNDS -k $KIB${UP:+ -u}: $(date -u +%F), $(nproc) host CPUs; the programs' seconds by the guest's clock, medians of $ROUNDS boots"
    echo
    echo "| what | seconds (least-most) | against | ratio of medians |"
    echo "|---|---|---|---|"
    [ -z "$UP" ] || row "pmu=off against upstream" off plain up plain
    row "pmu=on, no counter enabled, against pmu=off" on plain off plain
    row "pmu=on with the NMI watchdog's counter, against pmu=off" wd plain off plain
    row "perf stat (default events) against no counter" on stat on plain
    echo "| perf stat /bin/true: perf's own start and finish | $(median on stat0) s ($(range on stat0)) | | |"
    row "perf stat -e cache-references,cache-misses against no counter" on cache on plain
    row "perf record -c 100003 against no counter" on record on plain
    row "perf stat with cost-model=detailed against perf stat" cost stat on stat
)
echo "$report"
[ -z "$REPORT" ] || echo "$report" >"$REPORT"
