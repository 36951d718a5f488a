#!/usr/bin/env bash
# The prof test layer: lwp-prof (tools/lwp-prof, docs/lwp-prof.md) under
# build/qemu-x86_64.  Last line: "prof: N passed, N failed".
#
#   tools/lwp-prof/tests/run.sh [QEMU]
#
# Builds lwp-prof in build/lwp-prof, the test program prof-work.c and the
# TCG plugin insn-count.c, then checks that Instructions Retired samples
# per function equal the plugin's count of the same run divided by N+1
# at interval N, within one sample (also with a ring of 4 KiB); that two runs give the same report; that
# every thread of a threaded program is sampled; that the speedscope file
# is valid; that bad input gets a clear error; that a program's own
# SIGIO handler and its own LWPCB are reported, and one that waits for
# its own SIGIO gets it; that DCache Misses samples name the load that
# misses; that programs the program execs (directly, through a shell,
# posix_spawn or a #! script) are profiled exactly, and those that cannot
# be are counted with the reason; that record -g gives each caller its
# share, by hand; and that recordings without ASLR repeat.
set -uo pipefail
. "$(dirname "$0")/../../../scripts/common.sh"
QEMU=${1:-$BUILD/qemu-x86_64}
B=$BUILD/lwp-prof
OUT=$BUILD/prof-tests
HERE=$TOP/tools/lwp-prof/tests
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
pass=0 fail=0
ok() { echo "PASS $*"; pass=$((pass + 1)); }
nok() { echo "FAIL $*"; fail=$((fail + 1)); }
check() { # NAME COMMAND...: passes when the command succeeds
    local name=$1
    shift
    if "$@"; then ok "$name"; else nok "$name"; fi
}
finish() { echo "prof: $pass passed, $fail failed"; exit $((fail > 0)); }

mkdir -p "$OUT"
if ! build_lwp_prof "$OUT/build.log"; then
    tail -n 30 "$OUT/build.log"
    nok "build lwp-prof"; finish
fi
P=$B/tools/lwp-prof/lwp-prof
export LWP_PROF_QEMU=$QEMU
gcc -O2 -no-pie -mlwp -pthread -o "$OUT/prof-work" "$HERE/prof-work.c" &&
gcc -O2 -g -no-pie -mlwp -pthread -o "$OUT/prof-work-g" "$HERE/prof-work.c" &&
gcc -O2 -static -o "$OUT/prof-static" "$HERE/prof-work.c" -mlwp -pthread &&
gcc -O2 -shared -fPIC -Wall -Werror -I"$SRC/include/qemu" \
    $(pkg-config --cflags glib-2.0) -o "$OUT/insn-count.so" "$HERE/insn-count.c" ||
    { nok "build the test program and the plugin"; finish; }
W=$OUT/prof-work
I=10007     # the IRE interval: a record per 10008 instructions (N+1)

# --- the command line
check "--help exits 0" sh -c "'$P' --help >/dev/null"
"$P" frobnicate >/dev/null 2>"$OUT/err"; [ $? = 2 ] && grep -q "unknown command" "$OUT/err" &&
    ok "an unknown command exits 2" || nok "an unknown command exits 2"
"$P" record -- "$W" >/dev/null 2>"$OUT/err"; [ $? = 2 ] && grep -q -- "-o FILE is required" "$OUT/err" &&
    ok "record without -o exits 2" || nok "record without -o exits 2"
"$P" record -e ire:x -o "$OUT/x" -- "$W" >/dev/null 2>"$OUT/err"; [ $? = 2 ] &&
    grep -q "not a number" "$OUT/err" && ok "a bad interval exits 2" || nok "a bad interval exits 2"
"$P" record -e foo:5 -o "$OUT/x" -- "$W" >/dev/null 2>"$OUT/err"; [ $? = 2 ] &&
    grep -q "unknown event 'foo'" "$OUT/err" && ok "an unknown event exits 2" || nok "an unknown event exits 2"

# Samples per function from the report; instructions per function from the
# plugin's per-address counts and the program's symbols
samples() { # REPORT FUNCTION
    awk -v f="$2" '$5 == f && $2 ~ /%$/ {print $1; exit}' "$1"
}
insns() { # COUNTS FUNCTION
    local lo size
    read -r lo size < <(nm -S "$W" | awk -v f="$2" '$4 == f {print $1, $2}')
    awk -v lo=$((16#$lo)) -v size=$((16#$size)) \
        'BEGIN {n = 0} {if ($1 >= lo && $1 < lo + size) n += $2} END {print n}' "$1"
}
# A record covers N+1 events at interval N: the counter starts at N and a
# record is due when it goes negative (spec 1.1, "Count" and "Reset")
within_one() { # SAMPLES EVENTS PER: SAMPLES x PER is EVENTS within PER
    [ -n "$1" ] && [ $(($1 * $3 - $2)) -le "$3" ] && [ $(($2 - $1 * $3)) -le "$3" ]
}
exact() { # TAG REPORT COUNTS [N]: each work_ function's samples against the plugin
    local tag=$1 rep=$2 counts=$3 iv=${4:-$I} f n s want iters per
    per=$((iv + 1))
    for f in work_a work_b work_c; do
        n=$(insns "$counts" $f)
        s=$(samples "$rep" $f)
        case $f in work_a) iters=1000000 ;; work_b) iters=3000000 ;; work_c) iters=1500000 ;; esac
        want=$((2 * iters + 2))  # by hand: mov, iters x (dec, jnz), ret
        if [ "$n" = "$want" ] && within_one "$s" "$n" $per; then
            ok "$tag: $f: $s samples, plugin counted $n instructions (interval $iv: one per $per)"
        else
            nok "$tag: $f: ${s:-no} samples, plugin counted $n instructions, by hand $want (interval $iv: one per $per)"
        fi
    done
}

# --- exact: one thread, the plugin counting the same run
plug=(--qemu-arg -plugin --qemu-arg "$OUT/insn-count.so,out=$OUT/one.counts")
"$P" record -q -e ire:$I "${plug[@]}" -o "$OUT/one.lwpprof" -- "$W" >"$OUT/one.stdout" 2>"$OUT/one.stderr"
check "record exits with the program's status (0)" test $? = 0
"$P" report --top 0 -s "$OUT/one.json" "$OUT/one.lwpprof" >"$OUT/one.report" 2>&1
check "report exits 0" test $? = 0
exact "one thread" "$OUT/one.report" "$OUT/one.counts"

# --- exact: three threads (each runs one work_ function)
plug=(--qemu-arg -plugin --qemu-arg "$OUT/insn-count.so,out=$OUT/thr.counts")
"$P" record -q -e ire:$I,bre:1009 "${plug[@]}" -o "$OUT/thr.lwpprof" -- "$W" threads >/dev/null 2>&1
"$P" report --top 0 -s "$OUT/thr.json" "$OUT/thr.lwpprof" >"$OUT/thr.report" 2>&1
exact "threads" "$OUT/thr.report" "$OUT/thr.counts"
n=$(grep -cE '^    thread [0-9]+ \(tid [0-9]+\): ire [1-9]' "$OUT/thr.report")
check "threads: all 3 threads have Instructions Retired samples ($n)" test "$n" = 3
check "threads: branch statistics name the loops" \
    grep -qE '^ +[0-9]+ +[0-9.]+% +100\.0%  work_b\+0x7 +work_b\+0x5' "$OUT/thr.report"

# --- a ring of 4 KiB (127 records) at interval 10: the threshold signals
# that come while the preload library is still setting up the main thread
# must drain it.  One that is ignored leaves the ring to fill, and a full
# ring never signals again (LWP interrupts only when the head advances).
# At interval 10 a record covers 11 instructions: the N+1 is visible here
plug=(--qemu-arg -plugin --qemu-arg "$OUT/insn-count.so,out=$OUT/ring4.counts")
"$P" record -q --ring-kb 4 -e ire:10 "${plug[@]}" -o "$OUT/ring4.lwpprof" -- "$W" >/dev/null 2>&1
check "a 4 KiB ring at interval 10: record exits 0" test $? = 0
"$P" report --top 0 -s - "$OUT/ring4.lwpprof" >"$OUT/ring4.report" 2>&1
check "a 4 KiB ring at interval 10: no records missed" \
    grep -qE '^    thread 1 \(tid [0-9]+\): ire [0-9]+$' "$OUT/ring4.report"
exact "a 4 KiB ring" "$OUT/ring4.report" "$OUT/ring4.counts" 10

# --- two runs, one report (thread ids and file names aside).  One thread:
# in "threads", how many instructions main spends in pthread_join varies.
for i in 1 2; do
    "$P" record -q -e ire:$I,bre:1009 -o "$OUT/det$i.lwpprof" -- "$W" >/dev/null 2>&1
    "$P" report -s "$OUT/det$i.json" "$OUT/det$i.lwpprof" 2>&1 |
        sed -e 's/(tid [0-9]*)/(tid)/' -e "s|$OUT/det$i|FILE|g" >"$OUT/det$i.report"
done
check "two runs give identical reports" cmp -s "$OUT/det1.report" "$OUT/det2.report"

# --- diff: B runs work_b twice (prof-work b2: 6,000,002 more instructions
# in work_b, by hand).  Each side is within a sample of its count, so
# work_b's change is 6000002 / 10008 = 599.5 within two samples, the other
# functions' 0 within two.  B is another build, with debug info: its
# functions still match A's
fchange() { # DIFF FUNCTION: the change of FUNCTION's row
    sed -n '/^Functions by change/,/^$/p' "$1" | awk -v f="$2" '$6 == f {print $3; exit}'
}
between() { # VALUE LO HI
    [ -n "$1" ] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]
}
"$P" record -q -e ire:$I -o "$OUT/b2.lwpprof" -- "$OUT/prof-work-g" b2 >/dev/null 2>&1
"$P" diff --top 0 "$OUT/det1.lwpprof" "$OUT/b2.lwpprof" >"$OUT/diff.out" 2>&1
check "diff: exits 0" test $? = 0
c=$(fchange "$OUT/diff.out" work_b)
check "diff: work_b changes by ${c:-nothing}, 6000002 / 10008 within two" between "${c#+}" 598 601
check "diff: work_b is the biggest change" \
    sh -c "sed -n '/^Functions by change/,/^\$/p' '$OUT/diff.out' | sed -n 3p | grep -q ' work_b\$'"
for f in work_a work_c; do
    c=$(fchange "$OUT/diff.out" $f)
    check "diff: $f changes by ${c:-nothing}, 0 within two" between "${c#+}" -2 2
done
check "diff: the program's two builds are one module" \
    grep -qE '^ +[0-9]+ +[0-9]+ +\+[0-9]+ +[-+0-9.]+%  prof-work\|prof-work-g +work_b$' "$OUT/diff.out"
# per source line, both builds with debug info: work_b is one line
"$P" record -q -e ire:$I -o "$OUT/a-g.lwpprof" -- "$OUT/prof-work-g" >/dev/null 2>&1
"$P" diff "$OUT/a-g.lwpprof" "$OUT/b2.lwpprof" >"$OUT/diff-g.out" 2>&1
line=prof-work.c:$(grep -n '^__attribute__((noinline)) void work_b' "$HERE/prof-work.c" | cut -d: -f1)
c=$(sed -n '/^Source lines by change/,/^$/p' "$OUT/diff-g.out" | awk -v l="$line" '$5 == l {print $3; exit}')
check "diff: $line (work_b) changes by ${c:-nothing}, 599.5 within two" between "${c#+}" 598 601
# intervals that differ: compared in instructions, samples x (N+1); each
# side within N+1 of its count
"$P" record -q -e ire:1009 -o "$OUT/b2-1009.lwpprof" -- "$W" b2 >/dev/null 2>&1
"$P" diff "$OUT/det1.lwpprof" "$OUT/b2-1009.lwpprof" >"$OUT/diff-iv.out" 2>&1
c=$(fchange "$OUT/diff-iv.out" work_b)
check "diff: other intervals: work_b changes by ${c:-nothing} instructions, 6000002 within 10008 + 1010" \
    between "${c#+}" $((6000002 - 11018)) $((6000002 + 11018))
"$P" diff "$OUT/det1.lwpprof" "$OUT/det1.lwpprof" >"$OUT/diff-same.out" 2>&1
check "diff: a profile against itself: no change" \
    sh -c "grep -q '^  total: .* change +0\$' '$OUT/diff-same.out' &&
           ! sed -n '/^Functions by change/,\$p' '$OUT/diff-same.out' | awk '\$3 ~ /^[-+][0-9]/ && \$3 != \"+0\"' | grep -q ."

# --- Branches Retired samples: each work_ loop's JNZ (at +0x7: a 5-byte MOV
# and a 2-byte DEC before it) retires once per iteration, and at interval
# 1009 one branch in 1010 is sampled: samples = iterations / 1010, within one
for fi in work_a:1000000 work_b:3000000 work_c:1500000; do
    f=${fi%%:*} it=${fi#*:}
    s=$(awk -v b="$f+0x7" '$4 == b {print $1; exit}' "$OUT/det1.report")
    if within_one "$s" "$it" 1010; then
        ok "branches: $f+0x7: $s samples for $it branches at interval 1009"
    else
        nok "branches: $f+0x7: ${s:-no} samples, want $it / 1010 within one"
    fi
done

# --- the viewer file: valid, and its weights are the report's samples
# x (N+1)
valid_speedscope() { # NAME REPORT JSON [N]
    local total iv=${4:-$I}
    total=$(sed -n 's/^Top functions by .* samples (\([0-9]*\) samples.*/\1/p' "$2")
    check "$1 ($total samples of $((iv + 1)) events)" \
        "$PY" "$HERE/check-speedscope.py" "$3" $((total * (iv + 1)))
}
valid_speedscope "speedscope file is valid for speedscope's schema" "$OUT/thr.report" "$OUT/thr.json"
# its samples are aggregated (in at most 1000 slices of each thread):
# each function still weighs its samples x (N+1) in all
"$PY" "$HERE/check-speedscope.py" --functions "$OUT/thr.json" >"$OUT/thr.functions" 2>&1
for f in work_a work_b work_c; do
    s=$(samples "$OUT/thr.report" $f)
    got=$(awk -v f=$f '$1 == f {print $2}' "$OUT/thr.functions")
    check "speedscope: $f weighs its $s samples x $((I + 1)) (${got:-nothing})" test "${got:-0}" = $((${s:-0} * (I + 1)))
done
sed 's/"samples":\[\[/"samples":[[99999,/' "$OUT/one.json" >"$OUT/broken.json"
! "$PY" "$HERE/check-speedscope.py" "$OUT/broken.json" >/dev/null 2>&1
check "the validator rejects a frame index out of range" test $? = 0

# --- bad input
size=$(stat -c %s "$OUT/one.lwpprof")
head -c $((size / 2 + 3)) "$OUT/one.lwpprof" >"$OUT/cut.lwpprof"
"$P" report -s - "$OUT/cut.lwpprof" >/dev/null 2>"$OUT/err"; rc=$?
[ $rc = 1 ] && grep -q "truncated" "$OUT/err" && ok "a truncated file: exit 1, $(cat "$OUT/err")" ||
    nok "a truncated file (rc $rc: $(cat "$OUT/err"))"
head -c $((size - 16)) "$OUT/one.lwpprof" >"$OUT/noend.lwpprof"
"$P" report -s - "$OUT/noend.lwpprof" >/dev/null 2>"$OUT/err"; rc=$?
[ $rc = 1 ] && grep -q "no END chunk .*report --force" "$OUT/err" && ok "a file without END: exit 1, --force offered" ||
    nok "a file without END (rc $rc: $(cat "$OUT/err"))"
# --force: the whole chunks.  Without END, every record is there (END is
# the last chunk); cut in a chunk, the records before it
"$P" report --force --top 0 -s - "$OUT/noend.lwpprof" >"$OUT/noend.report" 2>&1; rc=$?
check "--force, no END: exit 0, the end unknown" \
    test $rc = 0 -a -n "$(grep '^  program: unknown end (--force: no END chunk' "$OUT/noend.report")"
check "--force, no END: the same samples as with END" \
    cmp -s <(grep -E '^ +[0-9]+ +[0-9.]+% ' "$OUT/noend.report") <(grep -E '^ +[0-9]+ +[0-9.]+% ' "$OUT/one.report")
"$P" report --force -s - "$OUT/cut.lwpprof" >"$OUT/cut.report" 2>&1; rc=$?
check "--force, cut in a chunk: exit 0, says where it stopped" \
    test $rc = 0 -a -n "$(grep '^  program: unknown end (--force: truncated: .*; read up to byte' "$OUT/cut.report")"
"$P" report -s "$OUT/no-such-dir/x.json" "$OUT/one.lwpprof" >"$OUT/bad-s.out" 2>"$OUT/err"; rc=$?
[ $rc = 1 ] && [ ! -s "$OUT/bad-s.out" ] && grep -q "no-such-dir/x.json: No such file" "$OUT/err" &&
    ok "-s into a missing directory: exit 1 before any report" || nok "-s into a missing directory (rc $rc, $(wc -l <"$OUT/bad-s.out") lines)"
"$P" report -s - /bin/true >/dev/null 2>"$OUT/err"; rc=$?
[ $rc = 1 ] && grep -q "not an lwp-prof record file" "$OUT/err" && ok "a foreign file: exit 1, $(cat "$OUT/err")" ||
    nok "a foreign file (rc $rc: $(cat "$OUT/err"))"
"$P" report -s - "$OUT/absent.lwpprof" >/dev/null 2>"$OUT/err"; rc=$?
[ $rc = 1 ] && grep -q "No such file" "$OUT/err" && ok "a missing record file: exit 1" ||
    nok "a missing record file (rc $rc)"
"$P" record -o "$OUT/x.lwpprof" -- "$OUT/no-such-program" >/dev/null 2>"$OUT/err"; rc=$?
[ $rc = 127 ] && grep -q "not found" "$OUT/err" && ok "a missing program: exit 127, $(cat "$OUT/err")" ||
    nok "a missing program (rc $rc: $(cat "$OUT/err"))"
"$P" record -o "$OUT/x.lwpprof" -- "$OUT/prof-static" >/dev/null 2>"$OUT/err"; rc=$?
[ $rc = 126 ] && grep -q "statically linked" "$OUT/err" && ok "a static program: exit 126, $(cat "$OUT/err")" ||
    nok "a static program (rc $rc: $(cat "$OUT/err"))"
"$P" record -q -o "$OUT/false.lwpprof" -- false >/dev/null 2>&1
check "record exits with the program's status (false: 1)" test $? = 1
"$P" record --qemu "$OUT/no-such-qemu" -o "$OUT/x.lwpprof" -- "$W" >/dev/null 2>"$OUT/err"; rc=$?
[ $rc = 125 ] && grep -q -- "--qemu $OUT/no-such-qemu: No such file" "$OUT/err" &&
    ok "--qemu of a missing file: exit 125, $(cat "$OUT/err")" || nok "--qemu of a missing file (rc $rc: $(cat "$OUT/err"))"
# max,+lwp offers ire, bre, dme, cnh and rnh (README.md); -lwp-dme takes dme
"$P" record --cpu max,+lwp,-lwp-dme -e ire,dme:1009 -o "$OUT/x.lwpprof" -- "$W" >/dev/null 2>"$OUT/err"; rc=$?
[ $rc = 125 ] && grep -q "events not available here: dme (this CPU's LWP offers ire, bre, cnh, rnh)" "$OUT/err" &&
    ok "an event LWP does not offer: exit 125, named" || nok "an event LWP does not offer (rc $rc: $(cat "$OUT/err"))"
# interval 0: LWP's minimum is 1 (LWP_ENGINE_MIN_INTERVAL), a record per 2
"$P" record -e ire:0 -o "$OUT/ire0.lwpprof" -- true >/dev/null 2>"$OUT/ire0.stderr"
check "ire:0: record says that LWP uses interval 1" \
    grep -q "^lwp-prof: ire:0: LWP uses interval 1, its minimum: a record per 2 events" "$OUT/ire0.stderr"
"$P" report -s - "$OUT/ire0.lwpprof" >"$OUT/ire0.report" 2>&1
check "ire:0: the report says a record per 2 instructions" \
    grep -q "^Top functions by Instructions Retired samples ([0-9]* samples, one per 2 instructions)" "$OUT/ire0.report"

# --- programs that use SIGIO or LWP themselves
"$P" record -e ire:$I -o "$OUT/sigio.lwpprof" -- "$W" sigio >"$OUT/sigio.stdout" 2>"$OUT/sigio.stderr"
"$P" report --top 0 -s - "$OUT/sigio.lwpprof" >"$OUT/sigio.report" 2>&1
check "own SIGIO handler: reported on stderr" grep -q "lwp-prof: sigio: the program installs its own SIGIO handler" "$OUT/sigio.stderr"
check "own SIGIO handler: reported in the file" grep -q "note: sigio:" "$OUT/sigio.report"
s=$(samples "$OUT/sigio.report" work_b)
check "own SIGIO handler: still profiled (work_b: $s samples)" test "$s" -ge 598 -a "$s" -le 601
"$P" record -q -e ire:$I -o "$OUT/sigioq.lwpprof" -- "$W" sigio >/dev/null 2>"$OUT/sigioq.stderr"
check "-q: nothing on stderr, not even a note ($(wc -c <"$OUT/sigioq.stderr") bytes)" \
    test ! -s "$OUT/sigioq.stderr"
check "-q: the note is in the file" \
    sh -c "'$P' report -s - '$OUT/sigioq.lwpprof' | grep -q '^  note: sigio:'"
"$P" record -e ire:$I -o "$OUT/lwp.lwpprof" -- "$W" lwp >/dev/null 2>"$OUT/lwp.stderr"
"$P" report -s - "$OUT/lwp.lwpprof" >"$OUT/lwp.report" 2>&1
check "own LWPCB: reported on stderr" grep -q "lwp-prof: lwp-in-use: thread" "$OUT/lwp.stderr"
check "own LWPCB: reported in the file" grep -q "note: lwp-in-use:" "$OUT/lwp.report"
# its own LWPCB with the threshold interrupt: reported at its first
# threshold signal, which goes to the program's handler, not lwp-prof's;
# with -q that warning is in the file only
"$P" record -e ire:$I -o "$OUT/lwpint.lwpprof" -- "$W" lwpint >"$OUT/lwpint.stdout" 2>"$OUT/lwpint.stderr"
check "own LWPCB with its threshold interrupt: record exits 0" test $? = 0
n=$(sed -n 's/^own threshold signals: //p' "$OUT/lwpint.stdout")
check "own LWPCB: the program gets its threshold signals (${n:-none}; 200 records / 32)" \
    test "${n:-0}" -ge 5 -a "${n:-0}" -le 7
check "own LWPCB: reported once, at its first threshold signal" \
    test "$(grep -c "lwp-prof: lwp-in-use: thread .*found at a threshold signal" "$OUT/lwpint.stderr")" = 1 \
    -a "$(grep -c "lwp-in-use" "$OUT/lwpint.stderr")" = 1
"$P" record -q -e ire:$I -o "$OUT/lwpintq.lwpprof" -- "$W" lwpint >/dev/null 2>"$OUT/lwpintq.stderr"
check "-q: a warning that a thread's records stop is not on stderr ($(wc -c <"$OUT/lwpintq.stderr") bytes)" \
    test ! -s "$OUT/lwpintq.stderr"
check "-q: that warning is in the file, once" \
    test "$("$P" report -s - "$OUT/lwpintq.lwpprof" | grep -c '^  note: lwp-in-use: thread .*found at a threshold signal')" = 1

# --- a program that blocks SIGIO, sends itself one and takes it with
# sigwaitinfo, then with sigtimedwait, then unblocks it with a handler,
# then has one pending for sigsuspend (prof-work sigwait; sigsuspend hung
# before it was hooked): it must do what it does under plain qemu-x86_64,
# and be profiled exactly meanwhile (a ring of 8 KiB at interval 100:
# about 850 drains while the program blocks SIGIO)
"$QEMU" -cpu max "$W" sigwait >"$OUT/sigwait.want" 2>&1
plug=(--qemu-arg -plugin --qemu-arg "$OUT/insn-count.so,out=$OUT/sigwait.counts")
timeout 120 "$P" record -q --ring-kb 8 -e ire:100 "${plug[@]}" -o "$OUT/sigwait.lwpprof" -- \
    "$W" sigwait >"$OUT/sigwait.stdout" 2>"$OUT/sigwait.stderr"
check "waits for its own SIGIO: record exits 0 within 120 s" test $? = 0
check "waits for its own SIGIO: the program prints what it prints without lwp-prof ($(grep -c . "$OUT/sigwait.want") lines, sigsuspend's too)" \
    cmp -s "$OUT/sigwait.want" "$OUT/sigwait.stdout"
"$P" report --top 0 -s - "$OUT/sigwait.lwpprof" >"$OUT/sigwait.report" 2>&1
check "waits for its own SIGIO: no records missed" \
    grep -qE '^    thread 1 \(tid [0-9]+\): ire [0-9]+$' "$OUT/sigwait.report"
exact "SIGIO blocked by the program" "$OUT/sigwait.report" "$OUT/sigwait.counts" 100

# --- the progress line (every 0.5 s on a terminal, which `script` gives)
# counts the records in the file, not its bytes / 32: sleep stores a
# record or two, written at exit (its MAPS and OBJECTS chunks alone are
# over a hundred 32-byte units), so no progress line says more records than
# the file ends with.  (A line can say them: qemu's own exit can take
# longer than the 0.1 s between the checks.)
script -qec "'$P' record -o '$OUT/sleep.lwpprof' -- sleep 1.2" /dev/null 2>&1 |
    tr '\r' '\n' | grep "records so far" >"$OUT/sleep.progress"
"$P" report -s - "$OUT/sleep.lwpprof" >"$OUT/sleep.report" 2>&1
n=$(sed -nE 's/^  records: ([0-9]+).*/\1/p' "$OUT/sleep.report")
check "progress: $(wc -l <"$OUT/sleep.progress") lines on a terminal, none with more than the file's ${n:-?} records" \
    sh -c "test -s '$OUT/sleep.progress' && test -n '$n' && ! awk '\$4 > $n {bad = 1} END {exit !bad}' '$OUT/sleep.progress'"

# --- other processes.  prof-work children forks two children that exit
# at once (followed), runs `true` (posix_spawnp: exec'd natively by qemu,
# run again under qemu by the preload library in it, profiled) and
# prof-static (posix_spawn: statically linked, so counted, not profiled);
# prof-work exec execs /bin/true, whose status becomes the program's
profile() { # TAG ARGS...: record prof-work ARGS (status in $rc), report
    local tag=$1
    shift
    "$P" record -e ire:$I -o "$OUT/$tag.lwpprof" -- "$W" "$@" >/dev/null 2>"$OUT/$tag.stderr"
    rc=$?
    "$P" report -s - "$OUT/$tag.lwpprof" >"$OUT/$tag.report" 2>&1
}
TRUE=$(readlink -f /bin/true)
line_after() { # RE1 FILE RE2: the line after one that matches RE1 matches RE2
    grep -A1 -E "$1" "$2" | tail -n 1 | grep -qE "$3"
}
profile children children "$OUT/prof-static"
check "children: record exits 0" test $rc = 0
check "children: record says 4 programs were profiled" \
    grep -q "^lwp-prof: 4 programs profiled" "$OUT/children.stderr"
check "children: record says that 1 process was not profiled: prof-static, statically linked" \
    grep -q "^lwp-prof: 1 process the program started was not profiled: prof-static (statically linked) 1$" "$OUT/children.stderr"
check "children: the report says so too" \
    grep -qE '^  not profiled: 1 process the program started: prof-static \(statically linked\) 1$' "$OUT/children.report"
check "children: the report lists the 2 forked children as processes" \
    test "$(grep -cE '^    process [0-9]+ \(forked by [0-9]+\)$' "$OUT/children.report")" = 2
check "children: the report lists true, which posix_spawnp ran, as a process with a thread" \
    line_after "^    process [0-9]+ \(child of [0-9]+\): $TRUE\$" "$OUT/children.report" \
    '^      thread 1 \(tid [0-9]+\): '
profile exec exec
check "exec: record exits with true's status (0)" test $rc = 0
check "exec: record says 2 programs were profiled" \
    grep -q "^lwp-prof: 2 programs profiled" "$OUT/exec.stderr"
main_tid=$(sed -nE 's/^    thread 1 \(tid ([0-9]+)\).*/\1/p' "$OUT/exec.report" | head -n 1)
check "exec: the report lists true's thread in the program's process (tid $main_tid)" \
    grep -qE "^    thread 1 \(tid ${main_tid:-x}\) in true: " "$OUT/exec.report"
check "exec: the report says the program exec'd it, profiled" \
    grep -q "^  the program exec'd $TRUE, profiled (above)$" "$OUT/exec.report"
check "exec: neither says 'did not run exit()' nor 'unprofiled'" \
    sh -c "! grep -qE 'did not run exit|unprofiled' '$OUT/exec.report' '$OUT/exec.stderr'"
check "exec: the thread that exec'd lost no records" \
    sh -c "! grep -q 'ended by exec' '$OUT/exec.report'"
# a statically linked program cannot load the recorder: counted, the
# records end at the exec, and its status is the program's
profile execstatic exec "$OUT/prof-static" 7
check "exec of a static program: record exits with its status (0)" test $rc = 0
check "exec of a static program: record says it ran unprofiled, statically linked" \
    grep -q "^lwp-prof: the program exec'd $OUT/prof-static, which ran unprofiled (statically linked): the records end there$" "$OUT/execstatic.stderr"
check "exec of a static program: so does the report" \
    grep -q "^  warning: the program exec'd $OUT/prof-static, which ran unprofiled (statically linked): the records end there$" "$OUT/execstatic.report"
check "exec of a static program: neither says 'did not run exit()'" \
    sh -c "! grep -q 'did not run exit' '$OUT/execstatic.report' '$OUT/execstatic.stderr'"
# followed exactly: prof-work exec prof-work runs work_a, work_b and
# work_c in the program that prof-work exec'd, under a second qemu-x86_64
# whose plugin counts it (exec does not run the first one's atexit)
plug=(--qemu-arg -plugin --qemu-arg "$OUT/insn-count.so,out=$OUT/execw.counts")
rm -f "$OUT/execw.counts"
"$P" record -e ire:$I "${plug[@]}" -o "$OUT/execw.lwpprof" -- "$W" exec "$W" >"$OUT/execw.stdout" 2>"$OUT/execw.stderr"
check "exec of prof-work: record exits 0" test $? = 0
"$P" report --top 0 -s - "$OUT/execw.lwpprof" >"$OUT/execw.report" 2>&1
check "exec of prof-work: the exec'd prof-work ran to its end" \
    grep -qx "prof-work  done" "$OUT/execw.stdout"
check "exec of prof-work: 1 process, 2 programs" \
    grep -qE '^  records: [0-9]+, ire [0-9]+ from 2 threads in 1 process, 2 programs$' "$OUT/execw.report"
exact "exec of prof-work" "$OUT/execw.report" "$OUT/execw.counts"
check "exec of prof-work: its samples are in the exec'd program's thread" \
    line_after "^    thread 1 \(tid [0-9]+\) in prof-work: ire [0-9]{1,3}$" "$OUT/execw.report" \
    '^    thread 1 \(tid [0-9]+\) in prof-work: ire [0-9]{4}$'
# a shell that execs a shell that execs prof-work, in one process: bash
# defines its own setenv and unsetenv, which the recorder must not use
plug=(--qemu-arg -plugin --qemu-arg "$OUT/insn-count.so,out=$OUT/bash.counts")
rm -f "$OUT/bash.counts"
"$P" record -e ire:$I "${plug[@]}" -o "$OUT/bash.lwpprof" -- /bin/bash -c "exec bash -c 'exec $W'" >"$OUT/bash.stdout" 2>"$OUT/bash.stderr"
check "bash execs bash execs prof-work: record exits 0" test $? = 0
"$P" report --top 0 -s - "$OUT/bash.lwpprof" >"$OUT/bash.report" 2>&1
check "bash execs bash execs prof-work: 1 process, 3 programs" \
    grep -qE '^  records: [0-9]+, ire [0-9]+ from 3 threads in 1 process, 3 programs$' "$OUT/bash.report"
exact "bash execs bash execs prof-work" "$OUT/bash.report" "$OUT/bash.counts"
# a #! script, run as the kernel runs it (its interpreter with the line's
# argument, then the script): it execs prof-work, profiled exactly
printf '#!/bin/sh -e\nexec "%s" "$@"\n' "$W" >"$OUT/work.sh"
chmod +x "$OUT/work.sh"
"$P" record -e ire:$I -o "$OUT/script.lwpprof" -- "$OUT/work.sh" >"$OUT/script.stdout" 2>"$OUT/script.stderr"
rc=$?
check "a #! script: record exits 0 ($rc) and the script ran ($(cat "$OUT/script.stdout"))" \
    sh -c "[ $rc = 0 ] && grep -qx 'prof-work  done' '$OUT/script.stdout'"
"$P" report -s - "$OUT/script.lwpprof" >"$OUT/script.report" 2>&1
check "a #! script: the report is of its interpreter, /bin/sh" \
    grep -qE "^lwp-prof report of .*: $(readlink -f /bin/sh)\$" "$OUT/script.report"
s=$(samples "$OUT/script.report" work_b)
check "a #! script: work_b, in the program it execs, has ${s:-no} samples for 6000002 instructions" \
    within_one "$s" 6000002 $((I + 1))
# an exec with an empty environment (env -i) cannot load the recorder:
# counted, with the reason, and the records end there (not "did not run
# exit()")
profile envi exec /usr/bin/env -i /bin/true
check "env -i: record says true ran unprofiled, its environment without LD_PRELOAD" \
    grep -q "^lwp-prof: the program exec'd /bin/true, which ran unprofiled (its environment lacks LD_PRELOAD or lwp-prof's variables): the records end there$" "$OUT/envi.stderr"
check "env -i: the report lists env, and says neither 'did not run exit()'" \
    sh -c "grep -qE '^    thread 1 \(tid [0-9]+\) in env: ' '$OUT/envi.report' && ! grep -q 'did not run exit' '$OUT/envi.report' '$OUT/envi.stderr'"
# --no-follow-exec: counted, not profiled, as before following
"$P" record --no-follow-exec -e ire:$I -o "$OUT/nofollow.lwpprof" -- "$W" exec >/dev/null 2>"$OUT/nofollow.stderr"
check "--no-follow-exec: the exec'd true is counted, not profiled" \
    grep -q "^lwp-prof: the program exec'd $TRUE, which ran unprofiled (record --no-follow-exec): the records end there$" "$OUT/nofollow.stderr"
# followed: prof-work fork runs work_b in a child that returns from main,
# work_c in one that calls _exit, work_a itself; each function's samples
# are its count by hand / (N+1), within one, the 3 processes have a thread
# each, and each ran exit() or _exit()
profile fork fork
check "fork: record exits 0" test $rc = 0
check "fork: record says 3 threads in 3 processes" \
    grep -q "^lwp-prof: .* from 3 threads in 3 processes, 0 missed" "$OUT/fork.stderr"
for fi in work_a:1000000 work_b:3000000 work_c:1500000; do
    f=${fi%%:*} it=${fi#*:}
    s=$(samples "$OUT/fork.report" $f)
    if within_one "$s" $((2 * it + 2)) $((I + 1)); then
        ok "fork: $f: $s samples for $((2 * it + 2)) instructions"
    else
        nok "fork: $f: ${s:-no} samples, want $((2 * it + 2)) / $((I + 1)) within one"
    fi
done
check "fork: the report lists 2 processes, each with a thread with samples" \
    test "$(grep -A1 -E '^    process [0-9]+ \(forked by [0-9]+\)$' "$OUT/fork.report" |
            grep -cE '^      thread 1 \(tid [0-9]+\): ire [1-9]')" = 2

# --- LWP's own instructions in a hot function: the annotated disassembly
# names them as binutils' objdump does for the same bytes.  work_l runs
# LWPINS once, then SLWPCB and LWPVAL in its loop (prof-work.c); the
# oracle is objdump -d of the same binary, at each instruction of work_l
# whose encoding starts with the XOP escape 8F (every LWP instruction's)
plug=(--qemu-arg -plugin --qemu-arg "$OUT/insn-count.so,out=$OUT/lwpinsn.counts")
"$P" record -q -e ire:$I "${plug[@]}" -o "$OUT/lwpinsn.lwpprof" -- "$W" lwpinsn >/dev/null 2>&1
check "LWP instructions: record exits 0" test $? = 0
"$P" report --top 3 --annotate 1 -s - "$OUT/lwpinsn.lwpprof" >"$OUT/lwpinsn.report" 2>&1
n=$(insns "$OUT/lwpinsn.counts" work_l)
s=$(samples "$OUT/lwpinsn.report" work_l)
want=$((4 * 200000 + 3))     # by hand: mov, lwpins, 200000 x (slwpcb, lwpval, dec, jnz), ret
[ "$n" = "$want" ] && within_one "$s" "$n" $((I + 1)) &&
    ok "LWP instructions: work_l: $s samples, plugin counted $n instructions (interval $I)" ||
    nok "LWP instructions: work_l: ${s:-no} samples, plugin counted $n instructions, by hand $want"
check "LWP instructions: the report counts LWPINS's one record" \
    grep -qE '^  records: [0-9]+, .*lwpins 1 from 1 thread$' "$OUT/lwpinsn.report"
check "LWP instructions: so does its thread's line" \
    grep -qE '^    thread 1 \(tid [0-9]+\): ire [0-9]+, lwpins 1$' "$OUT/lwpinsn.report"
start=$(nm "$W" | awk '$3 == "work_l" {print $1}')
objdump -d --disassemble=work_l "$W" |
    awk -F'\t' 'NF >= 3 && $2 ~ /^8f / {sub(/:$/, "", $1); split($3, m, " "); print $1, m[1]}' \
        >"$OUT/lwpinsn.objdump"
# the report's "+0xOFFSET MNEMONIC" lines of work_l's annotated disassembly
sed -n '/^work_l (prof-work)/,/^$/p' "$OUT/lwpinsn.report" |
    awk '{for (i = 1; i < NF; i++) if ($i ~ /^\+0x[0-9a-f]+$/) {print $i, $(i + 1); next}}' \
        >"$OUT/lwpinsn.annotated"
k=0
while read -r addr mn; do
    off=$(printf '+0x%x' $((16#$addr - 16#$start)))
    got=$(awk -v o="$off" '$1 == o {print $2}' "$OUT/lwpinsn.annotated")
    [ "$got" = "$mn" ] && ok "LWP instructions: work_l$off is '$got', as objdump names it" ||
        nok "LWP instructions: work_l$off is '${got:-missing}', objdump says '$mn'"
    k=$((k + 1))
done <"$OUT/lwpinsn.objdump"
check "LWP instructions: objdump finds 3 XOP instructions in work_l ($k)" test "$k" = 3

# --- DCache Misses: every load of work_m misses every level of the default
# cache model (prof-work.c says why), so its MOV has the samples, at
# DRAM's latency, 256 (docs/cache-model.md); 131072 misses at interval D
D=1009
"$P" record -q -e dme:$D -o "$OUT/dme.lwpprof" -- "$W" dme >/dev/null 2>&1
check "DCache Misses: record exits 0" test $? = 0
"$P" report -s - "$OUT/dme.lwpprof" >"$OUT/dme.report" 2>&1
read -r s share lat where < <(sed -n '/^DCache Misses: /,/^$/p' "$OUT/dme.report" |
    awk '$2 ~ /%$/ {print $1, $2, $3, $4; exit}')
start=$(nm "$W" | awk '$3 == "work_m" {print $1}')
mov=$(objdump -d --disassemble=work_m "$W" |
    awk -F'\t' '$3 ~ /^movzbl/ {sub(/:$/, "", $1); sub(/^ +/, "", $1); print $1; exit}')
want=$(printf 'work_m+0x%x' $((16#$mov - 16#$start)))
check "DCache Misses: the top load is work_m's MOV ($want: ${where:-none})" test "$where" = "$want"
check "DCache Misses: it has ${share:-no} of the samples, at least 99%" \
    awk -v x="${share%\%}" 'BEGIN {exit !(x + 0 >= 99)}'
check "DCache Misses: its average latency is DRAM's, 256 (${lat:-none})" test "$lat" = 256.0
check "DCache Misses: ${s:-no} samples, 131072 / $D = 129.9 within 2" \
    test "${s:-0}" -ge 128 -a "${s:-0}" -le 132
check "DCache Misses: the file has no other event: functions ranked by it" \
    grep -q '^Top functions by DCache Misses samples' "$OUT/dme.report"
check "DCache Misses: the annotation is of DCache Misses records" \
    grep -q 'instruction (samples: DCache Misses records)' "$OUT/dme.report"

# --- a file with CPU Clocks not Halted only: ranked by it.  The simple
# cost model (docs/implementation-choices.md, choice 48, --cpu max,+lwp)
# charges a clock per instruction and one more per branch: a work_
# function's clocks are its instructions (the plugin's count) plus its
# iterations' JNZ and its RET
plug=(--qemu-arg -plugin --qemu-arg "$OUT/insn-count.so,out=$OUT/cnh.counts")
"$P" record -q -e cnh:$I --cpu max,+lwp "${plug[@]}" -o "$OUT/cnh.lwpprof" -- "$W" >/dev/null 2>&1
"$P" report --top 5 --annotate 1 -s "$OUT/cnh.json" "$OUT/cnh.lwpprof" >"$OUT/cnh.report" 2>&1
check "cnh only: report exits 0" test $? = 0
check "cnh only: functions ranked by CPU Clocks not Halted" \
    grep -q '^Top functions by CPU Clocks not Halted samples ([0-9]* samples, one per 10008 clocks)' "$OUT/cnh.report"
check "cnh only: the annotation is of CPU Clocks not Halted records" \
    grep -q 'instruction (samples: CPU Clocks not Halted records)' "$OUT/cnh.report"
for fi in work_a:1000000 work_b:3000000 work_c:1500000; do
    f=${fi%%:*} it=${fi#*:}
    n=$(( $(insns "$OUT/cnh.counts" $f) + it + 1 ))
    s=$(samples "$OUT/cnh.report" $f)
    if within_one "$s" "$n" $((I + 1)); then
        ok "cnh only: $f: $s samples for $n clocks"
    else
        nok "cnh only: $f: ${s:-no} samples, want $n clocks / $((I + 1)) within one"
    fi
done
valid_speedscope "cnh only: the speedscope file holds them" "$OUT/cnh.report" "$OUT/cnh.json"
"$P" report --event ire -s - "$OUT/cnh.lwpprof" >/dev/null 2>"$OUT/err"; rc=$?
[ $rc = 2 ] && grep -q "has no ire records (it has cnh)" "$OUT/err" &&
    ok "cnh only: --event ire: exit 2, $(cat "$OUT/err")" || nok "cnh only: --event ire (rc $rc: $(cat "$OUT/err"))"
check "cnh only, --cpu max,+lwp: the report says the simple cost model" \
    grep -q "clocks of qemu-lwp's simple cost model" "$OUT/cnh.report"

# --- the clocks by default (record -e cnh: max,+lwp,cost-model=detailed,
# choice 70) rank like time: "prof-work mixed" runs work_m, 131072 loads
# that each wait for DRAM (5 instructions and a branch per load, 252
# clocks of stall each: the latency 256 less L1's 4), then work_b, 3
# million iterations of DEC and JNZ.  Instructions put work_b first, the
# clocks work_m, with its instructions (the plugin's count), its 131072
# JNZ and its RET, and the stalls, within 2 samples (its RET's load and
# two mispredicts are under 500 clocks)
plug=(--qemu-arg -plugin --qemu-arg "$OUT/insn-count.so,out=$OUT/time.counts")
"$P" record -q -e ire:$I,cnh:$I "${plug[@]}" -o "$OUT/time.lwpprof" -- "$W" mixed >/dev/null 2>&1
check "time: record -e ire,cnh exits 0" test $? = 0
"$P" report --top 5 -s - "$OUT/time.lwpprof" >"$OUT/time.report" 2>&1
"$P" report --top 5 --event ire -s - "$OUT/time.lwpprof" >"$OUT/time-ire.report" 2>&1
check "time: the clocks rank by default, of the detailed cost model" \
    sh -c "grep -q '^Top functions by CPU Clocks not Halted samples' '$OUT/time.report' &&
           grep -q \"clocks of qemu-lwp's detailed cost model\" '$OUT/time.report'"
top=$(awk '$2 ~ /%$/ {print $5; exit}' "$OUT/time.report")
topi=$(awk '$2 ~ /%$/ {print $5; exit}' "$OUT/time-ire.report")
check "time: work_m first by clocks (${top:-none}), work_b by instructions (${topi:-none})" \
    test "$top:$topi" = work_m:work_b
n=$(( $(insns "$OUT/time.counts" work_m) + 131072 + 1 + 131072 * 252 ))
s=$(samples "$OUT/time.report" work_m)
if [ -n "$s" ] && [ $((s * (I + 1) - n)) -le $((2 * (I + 1))) ] &&
    [ $((n - s * (I + 1))) -le $((2 * (I + 1))) ]; then
    ok "time: work_m: $s samples for $n clocks"
else
    nok "time: work_m: ${s:-no} samples, want $n clocks / $((I + 1)) within 2"
fi
"$P" diff "$OUT/det1.lwpprof" "$OUT/cnh.lwpprof" >/dev/null 2>"$OUT/err"; rc=$?
[ $rc = 2 ] && grep -q "have no event in common" "$OUT/err" &&
    ok "diff of ire,bre against cnh: exit 2, no event in common" || nok "diff with no event in common (rc $rc: $(cat "$OUT/err"))"

# --- names: a PLT stub is named as objdump names it (NAME@plt; the first
# entry, the lazy resolver's, is .plt), a symbol without its version
# (@@GLIBC_...).  At
# interval 1 (a record per 2 instructions) the stubs of what prof-work's
# main calls before it execs (strcmp, execl) have samples
"$P" record -q -e ire:1 -o "$OUT/plt.lwpprof" -- "$W" exec >/dev/null 2>&1
"$P" report --top 0 --annotate 0 -s - "$OUT/plt.lwpprof" >"$OUT/plt.report" 2>&1
objdump -d -j .plt "$W" | sed -n 's/^[0-9a-f]* <\(.*\)>:$/\1/p' | sort >"$OUT/plt.objdump"
awk '$4 == "prof-work" && $2 ~ /%$/ {print $5}' "$OUT/plt.report" | sort >"$OUT/plt.names"
grep -E '@plt$' "$OUT/plt.names" >"$OUT/plt.stubs"
check "names: prof-work's PLT samples are named NAME@plt ($(tr '\n' ' ' <"$OUT/plt.stubs"))" \
    grep -qx 'strcmp@plt' "$OUT/plt.stubs"
check "names: each of them is a stub objdump names in .plt" \
    sh -c "comm -23 '$OUT/plt.stubs' '$OUT/plt.objdump' | grep -q . && exit 1 || exit 0"
check "names: prof-work has no unnamed code ([prof-work+0x...])" \
    sh -c "! grep -q '^\[' '$OUT/plt.names'"
check "names: no symbol version in a name" sh -c "! grep -q '@@' '$OUT/plt.report' '$OUT/ring4.report'"
check "exec: the records up to the exec are in the file (main: $(samples "$OUT/plt.report" main) samples)" \
    test "$(samples "$OUT/plt.report" main)" -ge 1

# --- files that changed since the recording: the report checks each
# loaded object against the build-id the recording saw (size and mtime
# without one).  A rebuild with -O1 has other code, so another build-id
S=$OUT/stale
rm -rf "$S" && mkdir -p "$S/symfs$S" && cp "$W" "$S/pw" &&
    gcc -O2 -no-pie -mlwp -pthread -Wl,--build-id=none -o "$S/nb" "$HERE/prof-work.c"
"$P" record -q -e ire:$I -o "$S/pw.lwpprof" -- "$S/pw" >/dev/null 2>&1
"$P" report --top 3 -s - "$S/pw.lwpprof" >"$S/same.report" 2>&1
check "stale: the same file: no warning" sh -c "! grep -q '^  warning' '$S/same.report'"
cp "$S/pw" "$S/symfs$S/pw"
gcc -O1 -no-pie -mlwp -pthread -o "$S/pw" "$HERE/prof-work.c"
"$P" report --top 3 -s - "$S/pw.lwpprof" >"$S/rebuilt.report" 2>&1
check "stale: a rebuilt program is named in a warning" \
    grep -q "^  warning: $S/pw is not the file the program ran (build-id [0-9a-f]*, now [0-9a-f]*)" "$S/rebuilt.report"
check "stale: and its samples are not named from the new build" \
    sh -c "! grep -qE ' work_[abc]\$' '$S/rebuilt.report'"
"$P" report --top 3 --symfs "$S/symfs" -s - "$S/pw.lwpprof" >"$S/symfs.report" 2>&1
s=$(samples "$S/symfs.report" work_b)
if ! grep -q '^  warning' "$S/symfs.report" && within_one "$s" 6000002 $((I + 1)); then
    ok "stale: --symfs gives the file as it ran: no warning, work_b $s samples"
else
    nok "stale: --symfs: work_b ${s:-unnamed}, want 6000002 / 10008 within one, and no warning"
fi
rm -f "$S/pw"
"$P" report --top 3 -s - "$S/pw.lwpprof" >"$S/gone.report" 2>&1
check "stale: a deleted program is named in a warning" grep -q "^  warning: $S/pw is gone" "$S/gone.report"
"$P" record -q -e ire:$I -o "$S/nb.lwpprof" -- "$S/nb" >/dev/null 2>&1
touch -d 2001-01-01 "$S/nb"
"$P" report --top 3 -s - "$S/nb.lwpprof" >"$S/nb.report" 2>&1
check "stale: a program without build-id whose mtime changed is named in a warning" \
    grep -q "^  warning: $S/nb changed since the recording (size or mtime) and has no build-id" "$S/nb.report"

# a stripped program with its debug info apart, by build-id, in a
# directory given with --debug-dir: named, with its source lines
mkdir -p "$S/debug" && cp "$OUT/prof-work-g" "$S/pwg" &&
    id=$(readelf -n "$S/pwg" | sed -n 's/.*Build ID: //p') &&
    mkdir -p "$S/debug/.build-id/${id:0:2}" &&
    objcopy --only-keep-debug "$S/pwg" "$S/debug/.build-id/${id:0:2}/${id:2}.debug" &&
    strip "$S/pwg"
"$P" record -q -e ire:$I -o "$S/pwg.lwpprof" -- "$S/pwg" >/dev/null 2>&1
"$P" report --top 3 -s - --debug-dir "$S/debug" "$S/pwg.lwpprof" >"$S/pwg.report" 2>&1
check "--debug-dir: a stripped program's work_b is named, at its line in prof-work.c" \
    grep -qE "^ +[0-9]+ .* pwg +work_b \(prof-work.c:$(grep -n '^__attribute__((noinline)) void work_b' "$HERE/prof-work.c" | cut -d: -f1)\)$" "$S/pwg.report"
"$P" report --top 3 -s - "$S/pwg.lwpprof" >"$S/pwg-nodebug.report" 2>&1
check "--debug-dir: without it, work_b is not named" sh -c "! grep -q ' work_b ' '$S/pwg-nodebug.report'"

# --- a real program: xz, two threads
head -c 2000000 /dev/urandom | base64 >"$OUT/xz-input"
"$P" record -q -e ire:100003,bre:100003 -o "$OUT/xz.lwpprof" -- \
    xz -T2 --block-size=1MiB -k -c "$OUT/xz-input" >"$OUT/xz-input.xz" 2>"$OUT/xz.stderr"
check "xz -T2: record exits 0" test $? = 0
check "xz: the output decompresses" sh -c "xz -dc '$OUT/xz-input.xz' | cmp -s - '$OUT/xz-input'"
"$P" report -s "$OUT/xz.json" "$OUT/xz.lwpprof" >"$OUT/xz.report" 2>&1
check "xz: liblzma is the top module" \
    sh -c "grep -A1 '^   samples   share   cumul' '$OUT/xz.report' | tail -n 1 | grep -q liblzma"
n=$(grep -cE '^    thread [0-9]+ \(tid [0-9]+\): ire [1-9]' "$OUT/xz.report")
check "xz: samples from 3 threads (main and 2 workers: $n)" test "$n" -ge 3
check "xz: no missed records" sh -c "! grep -q MISSED '$OUT/xz.report'"
check "xz: liblzma blocks SIGIO in its threads, reported" grep -q "note: sigmask:" "$OUT/xz.report"
valid_speedscope "xz: speedscope file valid" "$OUT/xz.report" "$OUT/xz.json" 100003
"$PY" "$HERE/check-speedscope.py" --functions "$OUT/xz.json" >"$OUT/xz.functions" 2>&1
f=$(sed -n '/^   samples   share   cumul/{n;p;q}' "$OUT/xz.report" | awk '{print $5}')
s=$(samples "$OUT/xz.report" "$f")
got=$(awk -v f="$f" '$1 == f {print $2}' "$OUT/xz.functions")
check "xz: speedscope: the top function weighs its $s samples x 100004 (${got:-nothing})" \
    test "${got:-0}" = $((${s:-0} * 100004))
n=$(sed -n 's/^speedscope: 3 profiles, \([0-9]*\) samples.*/\1/p' "$OUT/xz.functions")
check "xz: speedscope: at most 1000 slices of each thread ($n samples for $(wc -l <"$OUT/xz.functions") frames)" \
    test "${n:-999999}" -le $((3 * 1000 * $(wc -l <"$OUT/xz.functions")))
# every annotated function of more than 80 instructions shows its hot
# regions: the samples of the lines shown add up to what its "hot regions"
# line says, which is at least 90% of the function's samples (its header)
read -r n bad < <(awk '
    /^Annotated disassembly/ {on = 1}
    on && /^[^ ].*: [0-9]+ samples$/ {all = $(NF - 1); sum = 0}
    on && /^ +[0-9]+ +[0-9.]+%  \+0x/ {sum += $1}
    on && /^  \(hot regions: / {n++; if ($3 != sum || $6 != all || $3 * 10 < all * 9) bad++}
    END {print n + 0, bad + 0}' "$OUT/xz.report")
check "xz: $n annotated functions show hot regions with 90% of their samples ($bad do not)" \
    test "$n" -ge 1 -a "$bad" = 0

# --- record -g: prof-work callers runs work_a once from call_once and
# twice from call_twice, each 2,000,002 instructions (by hand): at
# interval N, call_once holds 2000002 / (N+1) of work_a's samples and
# call_twice twice that, within one (two: two calls), every sample has
# its stack, and the speedscope file's stacks are main > call_once >
# work_a and main > call_twice > work_a
"$P" record -g -q -e ire:$I -o "$OUT/g.lwpprof" -- "$W" callers >/dev/null 2>&1
check "record -g: exits 0" test $? = 0
"$P" report --top 0 -s "$OUT/g.json" "$OUT/g.lwpprof" >"$OUT/g.report" 2>&1
check "report of record -g: exits 0" test $? = 0
s=$(samples "$OUT/g.report" work_a)
check "record -g: work_a has ${s:-no} samples for 6000006 instructions" within_one "$s" 6000006 $((I + 1))
check "record -g: all $s of work_a's samples have their call stack" \
    grep -qE "^  work_a \(prof-work\): $s samples, $s with a known stack$" "$OUT/g.report"
callers() { # FUNCTION: its samples under work_a's callers
    awk -v f="$1" 'on && $3 == f {print $1; exit} /^  work_a \(prof-work\)/ {on = 1}' "$OUT/g.report"
}
c1=$(callers call_once) c2=$(callers call_twice)
check "record -g: call_once calls work_a for ${c1:-no} samples (2000002 instructions)" \
    within_one "$c1" 2000002 $((I + 1))
check "record -g: call_twice calls work_a for ${c2:-no} samples (4000004 instructions)" \
    sh -c "[ -n '$c2' ] && [ \$(( $c2 * $((I + 1)) - 4000004 )) -le $((2 * (I + 1))) ] && [ \$(( 4000004 - $c2 * $((I + 1)) )) -le $((2 * (I + 1))) ]"
check "record -g: the speedscope file is valid ($("$PY" "$HERE/check-speedscope.py" "$OUT/g.json" 2>&1 | tail -n 1))" \
    "$PY" "$HERE/check-speedscope.py" "$OUT/g.json"
"$PY" - "$OUT/g.json" >"$OUT/g.stacks" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
names = [f["name"] for f in d["shared"]["frames"]]
w = {}
for p in d["profiles"]:
    for st, wt in zip(p["samples"], p["weights"]):
        k = " > ".join(names[i] for i in st)
        w[k] = w.get(k, 0) + wt
for k, v in sorted(w.items()):
    print(v, k)
PYEOF
n1=$(awk '/ main > call_once > work_a$/ {print $1}' "$OUT/g.stacks")
n2=$(awk '/ main > call_twice > work_a$/ {print $1}' "$OUT/g.stacks")
check "record -g: speedscope stacks main > call_once > work_a weigh ${n1:-0} (call_once's samples x (N+1)), main > call_twice > work_a ${n2:-0}" \
    test "${n1:-0}" = $((${c1:-1} * (I + 1))) -a "${n2:-0}" = $((${c2:-1} * (I + 1)))

# --- no address space randomisation by default: prof-work aslr runs
# work_a 1 to 4 times as its stack address says; five recordings must
# see the same addresses and give the same samples, and so must five of
# prof-work exec'ing it (its second qemu-x86_64 is set up as the first).
# --aslr keeps the randomisation: three recordings see at least two
# stack addresses
for i in 1 2 3 4 5; do
    "$P" record -q -e ire:$I -o "$OUT/aslr$i.lwpprof" -- "$W" aslr >"$OUT/aslr$i.stdout" 2>&1
    "$P" report -s - "$OUT/aslr$i.lwpprof" >"$OUT/aslr$i.report" 2>&1
    "$P" record -q -e ire:$I -o "$OUT/aslrx$i.lwpprof" -- "$W" exec "$W" aslr >"$OUT/aslrx$i.stdout" 2>&1
done
for i in 1 2 3; do
    "$P" record --aslr -q -e ire:$I -o "$OUT/aslr-on$i.lwpprof" -- "$W" aslr >"$OUT/aslr-on$i.stdout" 2>&1
done
n=$(for f in "$OUT"/aslr?.stdout; do head -n 1 "$f"; done | sort -u | wc -l)
check "no ASLR: five recordings see the same stack and heap ($(head -n 1 "$OUT/aslr1.stdout"); $n different)" \
    test "$n" = 1
n=$(for i in 1 2 3 4 5; do samples "$OUT/aslr$i.report" work_a; done | sort -u | tr '\n' ' ')
check "no ASLR: and give work_a the same samples ($n)" test "$(echo $n | wc -w)" = 1
n=$(for f in "$OUT"/aslrx?.stdout; do head -n 1 "$f"; done | sort -u | wc -l)
check "no ASLR: so do five of an exec'd prof-work aslr ($(head -n 1 "$OUT/aslrx1.stdout"); $n different)" \
    test "$n" = 1
n=$(cat "$OUT"/aslr-on?.stdout | grep -o 'stack 0x[0-9a-f]*' | sort -u | wc -l)
check "--aslr: three recordings see $n stack addresses (at least 2)" test "$n" -ge 2

# --- every report of the layer counts in English: no "1 samples"
bad=$(grep -hoE '(^|[^0-9.,])1 (samples|threads|processes|programs|branches|instructions|records)\b' \
    "$OUT"/*.report "$OUT"/*.stderr | sort -u | tr '\n' ' ')
check "reports say '1 sample', '1 branch' ... (${bad:-none says otherwise})" test -z "$bad"
finish
