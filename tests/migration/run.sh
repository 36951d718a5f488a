#!/bin/bash
#
# Snapshot and migration in the middle of an LWP profiling run (issue 6).
#
#   tests/migration/run.sh QEMU_SYSTEM_BINARY
#
# The guest is the 64-bit test kernel of tests/system with config=migrate
# (lwp-migrate.c): a deterministic CPL3 loop profiled by LWP, whose
# consumer folds every record into a hash and prints
# "LWPDIGEST records=N missed=M hash=0x...".  The expected digest is that
# of a run without snapshot or migration (spec 8.2.3: the saved state must
# let the guest go on as if nothing happened; implementation choice 12):
#
#   a. two uninterrupted runs: the reference, which both must print
#   b. migration to a file (migrate file:, migrate-incoming into a new
#      QEMU started with -incoming defer, cont), once while LWP_CFG is set
#      but LWP not yet enabled and then 3-5 times at random points of the
#      profiling run: the final digest must be the reference
#   c. savevm s1 mid-run (HMP, on a qcow2 image made with blockdev-create),
#      run on, stop, loadvm s1, cont: the final digest must be the
#      reference, so loadvm replaced the later LWP state with the saved one
#   d. the vmstate subsections are sent only when needed: a stream saved
#      before the guest touched LWP has no "cpu/lwp" and loads into a
#      QEMU whose CPU has no LWP, where the guest runs on; one saved with
#      LWP_CFG set but LWP disabled has "cpu/lwp" without "cpu/lwp/state";
#      one saved mid-run has both, and a CPU without LWP refuses it
#   e. system_reset in the middle of the run: the guest boots again with
#      LWP_CFG and LWP_CBADDR 0 (spec 4.2, 4.3; choice 5), and its new run
#      gives the reference digest
#   f. HMP "info lwp" (config=monitor, lwp-monitor.c): the guest saves its
#      LWP state with XSAVE, prints it and halts with LWP enabled; each
#      field "info lwp" shows must be what XSAVE stored, and MissedEvents
#      what the LWPCB holds
#   g. HMP "info lwp" while CPL 3 code runs (config=monitor-run): the vCPU
#      stopped at random points of an endless "INC %rbx; JMP" loop with
#      Instructions Retired and Branches Retired enabled, between TBs that
#      count them; the counters "info lwp" shows must be those after the
#      instructions that RBX and RIP say retired (monrun-check.py)
#   h. HMP "info pmu" (config=pmu-monitor, tests/system/pmu.c, under
#      -cpu Nehalem,pmu=on): the registers as the guest read them (the LBR
#      stack, IA32_DS_AREA and the PEBS MSRs included), before and after
#      a migration to a file; a CPU without pmu=on refuses that stream
#   i. the PMU's counts across migration (config=pmu-migrate,
#      tests/system/pmu.c, under -cpu Nehalem,pmu=on): a workload counted
#      by every counter, mispredicted branches and L1D_HIT (the cache
#      model) included, with a PMI every 100003 instructions and a PEBS
#      record of every 10007th branch, migrated to a file and back three
#      times at random points, prints the digest of an uninterrupted run
#
# The kernels are built in build/tests-system/ (or $TESTS_SYSTEM_BUILD).
# QEMU_DATADIR, when set, is passed as -L.  MIGRATION_SEED picks the
# random stop points (printed, so that a failure can be replayed).
# MIGRATION_KEEP=1 keeps the work directory (logs, streams, image).
# Prints PASS:/FAIL: lines and ends with "migration: N passed, N failed";
# exits 0 only when everything passed.
#
# SPDX-License-Identifier: GPL-2.0-or-later

set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 QEMU_SYSTEM_BINARY" >&2
    exit 2
fi
qemu=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../system
build=${TESTS_SYSTEM_BUILD:-$(cd "$here/../.." && pwd)/build/tests-system}

# Loop iterations (12.5-19 s of profiling in CI), and the length of
# the two windows before LWP is enabled, in millions of CPL0 loops
iters=1500000
spin=250
# Every QEMU run is bounded by this many seconds: the LWP run profiled
# for 12.5-19 s in CI, and reached only 4 of 16 progress marks in 90 s on
# a host busy with four other builds and guests
limit=300

passed=0
failed=0
pass() { echo "PASS: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
finish() {
    echo "migration: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
    exit
}

if ! make -s -C "$src" O="$build"; then
    echo "BUILD FAILED"
    failed=1
    finish
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/lwp-migration.XXXXXX")
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null
    done
    if [ -n "${MIGRATION_KEEP:-}" ]; then
        echo "work directory: $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

seed=${MIGRATION_SEED:-$((($(date +%s) ^ $$) % 32768))}
RANDOM=$seed
echo "random seed: MIGRATION_SEED=$seed"

firmware=()
if [ -n "${QEMU_DATADIR:-}" ]; then
    firmware=(-L "$QEMU_DATADIR")
fi

# -no-reboot, but for part e, where system_reset must reboot
reboot=(-no-reboot)

# start NAME CPU [QEMU ARGS...]: QEMU in the background, serial output in
# $work/NAME.log, QMP on $work/NAME.qmp; its pid in $qpid.  The kernel's
# command line is $append, by default the migrate workload's.
start() {
    local name=$1 cpu=$2
    shift 2
    rm -f "$work/$name.qmp" "$work/$name.log"
    timeout "$limit" "$qemu" "${firmware[@]}" -M pc -nographic \
        -serial "file:$work/$name.log" -monitor none \
        -qmp "unix:$work/$name.qmp,server=on,wait=off" \
        -device isa-debug-exit,iobase=0xf4,iosize=0x4 \
        -accel tcg "${reboot[@]}" -cpu "$cpu" \
        -kernel "$build/tests.elf" \
        -append "${append:-config=migrate iters=$iters spin=$spin}" \
        "$@" </dev/null >"$work/$name.out" 2>&1 &
    qpid=$!
    pids+=("$qpid")
}

# qmp NAME COMMAND [ARGS]: tests/migration/qmp.py on NAME's socket
qmp() {
    local name=$1
    shift
    python3 "$here/qmp.py" "$work/$name.qmp" "$@" >>"$work/$name.qmp.log" 2>&1
}

# quit NAME PID: ask QEMU to quit, wait for it
quit() {
    qmp "$1" quit
    wait "$2" 2>/dev/null
}

# seen NAME REGEX: the serial output so far has a line matching REGEX
seen() {
    grep -qa -- "$2" "$work/$1.log" 2>/dev/null
}

# wait_for NAME REGEX: up to $limit seconds, false if it never came
wait_for() {
    local end=$((SECONDS + limit))
    until seen "$1" "$2"; do
        [ $SECONDS -lt $end ] || return 1
        sleep 0.05
    done
}

# digest FILE...: the last LWPDIGEST line of the serial output, CRs dropped
digest() {
    cat "$@" 2>/dev/null | tr -d '\r' | grep -a '^LWPDIGEST ' | tail -n 1
}

# guest_fails FILE...: the guest's own FAIL lines
guest_fails() {
    cat "$@" 2>/dev/null | tr -d '\r' | grep -ac '^FAIL: '
}

# show NAME...: the serial output and QEMU's messages, for a failure
show() {
    local n
    for n in "$@"; do
        echo "--- $n: serial output (LWPMIGRATE, PASS/FAIL, LWPDIGEST lines)"
        tr -d '\r' <"$work/$n.log" 2>/dev/null |
            grep -a '^LWPMIGRATE\|^PASS\|^FAIL\|^LWPDIGEST\|^info\|^SUMMARY' |
            tail -n 40
        echo "--- $n: QEMU stderr and QMP replies"
        cat "$work/$n.out" "$work/$n.qmp.log" 2>/dev/null | tail -n 20
    done
}

# alive NAME PID WHAT: QEMU PID still runs; else a FAIL line saying how
# the guest ended, and false
alive() {
    local status how
    kill -0 "$2" 2>/dev/null && return 0
    wait "$2"
    status=$?
    if seen "$1" '^LWPDIGEST'; then
        how="its run had ended: slow host?"
    else
        how="it died at progress $(progress "$1") without a digest"
    fi
    fail "$3 - expect the guest still running (QEMU exit status" \
         "$status: $how)"
    show "$1"
    return 1
}

# random_delay: 0.2-1.5 s, two decimals
random_delay() {
    awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.2 + 1.3 * r / 32767 }'
}

# progress NAME: the last progress line of the serial output, or "start"
progress() {
    local p
    p=$(tr -d '\r' <"$work/$1.log" | grep -a '^LWPMIGRATE: progress' |
        tail -n 1 | awk '{print $3}')
    echo "${p:-0/16}"
}

# has_string FILE STRING: the migration stream contains STRING
has_string() {
    grep -qaF -- "$2" "$1"
}

# migrate_out NAME FILE: stop NAME's guest and migrate it to FILE
# (QEMU 10's file: URI); the source quits.  False if the migration failed.
migrate_out() {
    qmp "$1" migrate "{\"uri\": \"file:$2\"}" &&
        qmp "$1" wait-migration
}

# migrate_in NAME CPU FILE: start NAME with -incoming defer, load FILE;
# false if the load failed.  The guest is paused until "cont".
migrate_in() {
    start "$1" "$2" -incoming defer
    qmp "$1" migrate-incoming "{\"uri\": \"file:$3\"}" &&
        qmp "$1" wait-migration
}

# ---- a: the reference ----

ref=""
ref_time=0
for run in 1 2; do
    start "ref$run" max,+lwp
    wait_for "ref$run" '^LWPMIGRATE: running'
    t0=$EPOCHREALTIME
    wait "$qpid"
    status=$?
    t1=$EPOCHREALTIME
    d=$(digest "$work/ref$run.log")
    f=$(guest_fails "$work/ref$run.log")
    if [ $status -ne 1 ] || [ -z "$d" ] || [ "$f" -ne 0 ]; then
        fail "uninterrupted run $run - expect exit(0), a digest and no" \
             "FAIL line (got status $status, \"$d\", $f FAIL lines)"
        show "ref$run"
        continue
    fi
    if [ -z "$ref" ]; then
        ref=$d
        ref_time=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
        pass "uninterrupted run 1: $ref (${ref_time} s of profiling)"
    elif [ "$d" = "$ref" ]; then
        pass "uninterrupted run $run - expect the same digest (got it)"
    else
        fail "uninterrupted run $run - expect the same digest $ref" \
             "(got $d): the workload is not deterministic"
    fi
done
if [ -z "$ref" ]; then
    finish
fi

# ---- b: migration to a file, repeatedly during one run ----

hops=$((3 + RANDOM % 3))
delays=()
total=0
for ((i = 0; i < hops; i++)); do
    delays+=("$(random_delay)")
    total=$(awk -v t="$total" -v d="${delays[i]}" 'BEGIN { print t + d }')
done
# Every stop must fall inside the run: at most 60% of its length in all
scale=$(awk -v t="$total" -v r="$ref_time" \
            'BEGIN { s = 0.6 * r / t; print s < 1 ? s : 1 }')
for ((i = 0; i < hops; i++)); do
    delays[i]=$(awk -v d="${delays[i]}" -v s="$scale" \
                    'BEGIN { printf "%.2f", d * s }')
done
echo "migration: $hops stops during the run after ${delays[*]} s"

logs=()
seg=0
name=mig0
cpu=max,+lwp
ok=true
start "$name" "$cpu"
src_pid=$qpid
logs+=("$work/$name.log")
# hop 0: LWP_CFG set, LWP not enabled
if ! wait_for "$name" '^LWPMIGRATE: configured'; then
    fail "migration: the guest never reached its configured window"
    show "$name"
    ok=false
fi
last=$hops
$ok || last=-1
for ((hop = 0; hop <= last; hop++)); do
    if [ $hop -gt 0 ]; then
        sleep "${delays[hop - 1]}"
    fi
    if ! alive "$name" "$src_pid" "migration: stop $hop"; then
        ok=false
        break
    fi
    qmp "$name" stop
    if [ $hop -eq 0 ] && seen "$name" '^LWPMIGRATE: running'; then
        fail "migration: stop in the configured window - expect the" \
             "guest still before LLWPCB (it was past it: slow host?)"
        ok=false
        break
    fi
    if [ $hop -gt 0 ] && seen "$name" '^LWPDIGEST'; then
        fail "migration: stop $hop - expect the profiling run still" \
             "going (it had ended: slow host?)"
        ok=false
        break
    fi
    where=$(progress "$name")
    stream=$work/hop$hop.mig
    if ! migrate_out "$name" "$stream"; then
        fail "migration: stop $hop at progress $where - expect migrate" \
             "file: to complete"
        show "$name"
        ok=false
        break
    fi
    quit "$name" "$src_pid"
    seg=$((seg + 1))
    name=mig$seg
    if ! migrate_in "$name" "$cpu" "$stream"; then
        fail "migration: stop $hop at progress $where - expect" \
             "migrate-incoming to complete"
        show "$name"
        ok=false
        break
    fi
    src_pid=$qpid
    logs+=("$work/$name.log")
    qmp "$name" cont
    if [ $hop -eq 0 ]; then
        wait_for "$name" '^LWPMIGRATE: running'
    fi
    echo "info: migration $hop done at progress $where"
done
if $ok; then
    wait "$src_pid"
    status=$?
    d=$(digest "${logs[@]}")
    f=$(guest_fails "${logs[@]}")
    if [ $status -eq 1 ] && [ "$d" = "$ref" ] && [ "$f" -eq 0 ]; then
        pass "migration to a file at LWP_CFG set, then $hops times" \
             "mid-run - expect the reference digest, exit(0), no FAIL" \
             "line (got it)"
    else
        fail "migration to a file at LWP_CFG set, then $hops times" \
             "mid-run - expect $ref, exit(0), no FAIL line (got \"$d\"," \
             "status $status, $f FAIL lines)"
        show "$name"
    fi
fi

# ---- c: savevm / loadvm ----

name=snap
image=$work/snap.qcow2
start "$name" max,+lwp -S
snap_pid=$qpid
# A qcow2 image for the vmstate, without qemu-img
if qmp "$name" blockdev-create "{\"job-id\": \"c0\", \"options\":
        {\"driver\": \"file\", \"filename\": \"$image\", \"size\": 0}}" &&
   qmp "$name" wait-jobs &&
   qmp "$name" blockdev-add "{\"driver\": \"file\",
        \"node-name\": \"snapfile\", \"filename\": \"$image\"}" &&
   qmp "$name" blockdev-create "{\"job-id\": \"c1\", \"options\":
        {\"driver\": \"qcow2\", \"file\": \"snapfile\",
         \"size\": 67108864}}" &&
   qmp "$name" wait-jobs &&
   qmp "$name" blockdev-add "{\"driver\": \"qcow2\",
        \"node-name\": \"snapdisk\", \"file\": \"snapfile\"}" &&
   qmp "$name" cont; then
    ok=true
else
    fail "savevm: a qcow2 image through blockdev-create - expect it made"
    show "$name"
    ok=false
fi
if $ok && ! wait_for "$name" '^LWPMIGRATE: running'; then
    fail "savevm: the guest never started its profiling run"
    show "$name"
    ok=false
fi
if $ok; then
    delay=$(random_delay)
    sleep "$delay"
    alive "$name" "$snap_pid" "savevm after $delay s" || ok=false
fi
if $ok; then
    qmp "$name" stop
    saved=$(progress "$name")
    if seen "$name" '^LWPDIGEST'; then
        fail "savevm: expect the profiling run still going $delay s" \
             "after it started (it had ended: slow host?)"
        ok=false
    elif ! qmp "$name" hmp "savevm s1"; then
        fail "savevm s1 at progress $saved - expect it to succeed"
        show "$name"
        ok=false
    fi
    lines=$(wc -l <"$work/$name.log")
fi
if $ok; then
    qmp "$name" cont
    # run on: at least two more progress lines, so that LWP stores many
    # records after the snapshot
    step=${saved%/*}
    wait_for "$name" "^LWPMIGRATE: progress $((step + 2))/" ||
        wait_for "$name" '^LWPDIGEST'
    alive "$name" "$snap_pid" "loadvm" || ok=false
fi
if $ok; then
    qmp "$name" stop
    later=$(progress "$name")
    if seen "$name" '^LWPDIGEST'; then
        fail "loadvm: expect to stop the run before its end (it had" \
             "ended: slow host?)"
        ok=false
    elif ! qmp "$name" hmp "loadvm s1"; then
        fail "loadvm s1 at progress $later - expect it to succeed"
        show "$name"
        ok=false
    fi
fi
if $ok; then
    qmp "$name" cont
    wait "$snap_pid"
    status=$?
    d=$(digest "$work/$name.log")
    f=$(guest_fails "$work/$name.log")
    after=$(tail -n +"$((lines + 1))" "$work/$name.log" | tr -d '\r' |
            grep -ac "^LWPMIGRATE: progress ${later%/*}/")
    if [ $status -eq 1 ] && [ "$d" = "$ref" ] && [ "$f" -eq 0 ] &&
       [ "$after" -eq 2 ]; then
        pass "savevm at progress $saved, run on to $later, loadvm, cont" \
             "- expect progress $later printed twice, then the reference" \
             "digest (got it)"
    else
        fail "savevm at progress $saved, run on to $later, loadvm, cont" \
             "- expect progress $later printed twice, $ref, exit(0), no" \
             "FAIL line (got $after times, \"$d\", status $status, $f" \
             "FAIL lines)"
        show "$name"
    fi
else
    kill "$snap_pid" 2>/dev/null
    wait "$snap_pid" 2>/dev/null
fi

# ---- d: the subsections are sent only when needed ----

# Before the guest writes XCR0[62] or LWP_CFG: no LWP state at all
name=idle
start "$name" max,+lwp
idle_pid=$qpid
if wait_for "$name" '^LWPMIGRATE: idle'; then
    qmp "$name" stop
    if seen "$name" '^LWPMIGRATE: configured'; then
        fail "subsections: stop in the idle window - expect the guest" \
             "still before it configures LWP (it was past it: slow host?)"
    elif ! migrate_out "$name" "$work/idle.mig"; then
        fail "subsections: migrate file: in the idle window - expect" \
             "it to complete"
        show "$name"
    elif has_string "$work/idle.mig" "cpu/lwp"; then
        fail "subsections: LWP_CFG 0, LWP_CBADDR 0 - expect no" \
             "\"cpu/lwp\" in the stream (choice 12; found)"
    else
        pass "subsections: LWP_CFG 0, LWP_CBADDR 0 - expect no" \
             "\"cpu/lwp\" in the stream (none)"
        quit "$name" "$idle_pid"
        name=idle-nolwp
        if migrate_in "$name" max "$work/idle.mig" &&
           qmp "$name" cont; then
            wait "$qpid"
            status=$?
            if [ $status -eq 1 ] && seen "$name" '^LWPMIGRATE: no LWP'; then
                pass "subsections: that stream loads into -cpu max" \
                     "without lwp - expect the guest to run on and find" \
                     "no LWP (got it)"
            else
                fail "subsections: that stream loads into -cpu max" \
                     "without lwp - expect the guest to run on and find" \
                     "no LWP (status $status)"
                show "$name"
            fi
        else
            fail "subsections: that stream loads into -cpu max without" \
                 "lwp - expect migrate-incoming to complete"
            show "$name"
        fi
    fi
else
    fail "subsections: the guest never reached its idle window"
    show "$name"
fi

if [ -f "$work/hop0.mig" ]; then
    if has_string "$work/hop0.mig" "cpu/lwp" &&
       ! has_string "$work/hop0.mig" "cpu/lwp/state"; then
        pass "subsections: LWP_CFG set, LWP not enabled - expect" \
             "\"cpu/lwp\" without \"cpu/lwp/state\" (got it)"
    else
        fail "subsections: LWP_CFG set, LWP not enabled - expect" \
             "\"cpu/lwp\" without \"cpu/lwp/state\""
    fi
else
    fail "subsections: no stream of the configured window (see b)"
fi
if [ -f "$work/hop1.mig" ]; then
    if has_string "$work/hop1.mig" "cpu/lwp/state"; then
        pass "subsections: LWP enabled mid-run - expect \"cpu/lwp\" and" \
             "\"cpu/lwp/state\" (got them)"
    else
        fail "subsections: LWP enabled mid-run - expect \"cpu/lwp\" and" \
             "\"cpu/lwp/state\" (missing)"
    fi
    # LWP state cannot be loaded into a CPU without LWP (lwp_post_load)
    name=hop1-nolwp
    if migrate_in "$name" max "$work/hop1.mig"; then
        fail "subsections: the mid-run stream into -cpu max without lwp" \
             "- expect the load refused (it completed)"
    elif grep -q "LWP state for a CPU without LWP" "$work/$name.out"; then
        pass "subsections: the mid-run stream into -cpu max without lwp" \
             "- expect the load refused (got it)"
    else
        fail "subsections: the mid-run stream into -cpu max without lwp" \
             "- expect \"LWP state for a CPU without LWP\""
        show "$name"
    fi
    kill "$qpid" 2>/dev/null
    wait "$qpid" 2>/dev/null
else
    fail "subsections: no stream of the profiling run (see b)"
fi

# ---- e: system_reset mid-run ----

name=reset
reboot=()
start "$name" max,+lwp
reset_pid=$qpid
reboot=(-no-reboot)
if wait_for "$name" '^LWPMIGRATE: progress 2/' &&
   alive "$name" "$reset_pid" "system_reset"; then
    lines=$(wc -l <"$work/$name.log")
    qmp "$name" system_reset
    # the guest ends with isa-debug-exit, which ends QEMU
    wait "$reset_pid"
    boots=$(tr -d '\r' <"$work/$name.log" | grep -ac '^LWPMIGRATE: boot ')
    again=$(tail -n +"$((lines + 1))" "$work/$name.log" | tr -d '\r' |
            grep -a '^LWPMIGRATE: boot ' | head -n 1)
    d=$(digest "$work/$name.log")
    f=$(guest_fails "$work/$name.log")
    want="LWPMIGRATE: boot LWP_CFG=0 LWP_CBADDR=0"
    if [ "$boots" -eq 2 ] && [ "$again" = "$want" ]; then
        pass "system_reset at progress 2 - expect a second boot with" \
             "LWP_CFG and LWP_CBADDR 0 (got \"$again\")"
    else
        fail "system_reset at progress 2 - expect a second boot with" \
             "\"$want\" (got $boots boots, \"$again\")"
        show "$name"
    fi
    if [ "$d" = "$ref" ] && [ "$f" -eq 0 ]; then
        pass "system_reset: the run after the reset - expect the" \
             "reference digest, no FAIL line (got it)"
    else
        fail "system_reset: the run after the reset - expect $ref, no" \
             "FAIL line (got \"$d\", $f FAIL lines)"
        show "$name"
    fi
else
    fail "system_reset: the guest never reached progress 2"
    show "$name"
fi

# f. HMP "info lwp"
echo "=== f. info lwp"
name=monitor
append=config=monitor start "$name" max,+lwp
if wait_for "$name" '^LWPMONITOR '; then
    line=$(tr -d '\r' <"$work/$name.log" | grep -a '^LWPMONITOR ' | head -n 1)
    for kv in ${line#LWPMONITOR }; do
        declare "mon_${kv%%=*}=${kv#*=}"
    done
    python3 "$here/qmp.py" "$work/$name.qmp" hmp 'info lwp' >"$work/$name.info" 2>&1
    # each line "info lwp" must show, from what the guest printed
    # it halted at CPL 0, with LWP enabled: its state is loaded, and does
    # not count there
    want=(
        "CPL 0, halted"
        "LWP_CFG $mon_cfg (bit 0 reads 0: EventId 0 is no event)"
        "LWP_CBADDR $mon_cbaddr: LWP enabled, not counting (it counts at CPL 3 only"
        "Flags $mon_flags, "
        " head $mon_head, "
        "EventId 2 (Instructions Retired): interval 10, counter $mon_ire"
        "EventId 3 (Branches Retired): interval 7, counter $mon_bre"
        "MissedEvents $mon_missed (from the LWPCB)"
    )
    if [ "$mon_saved" = 0 ]; then
        want+=("pending record: none")
    else
        want+=("pending record: EventId $mon_saved,")
    fi
    for w in "${want[@]}"; do
        if grep -qF -- "$w" "$work/$name.info"; then
            pass "info lwp after XSAVE ($line) - expect \"$w\""
        else
            fail "info lwp after XSAVE ($line) - expect \"$w\""
            cat "$work/$name.info"
        fi
    done
    quit "$name" "$qpid"
else
    fail "info lwp: the guest never printed LWPMONITOR"
    show "$name"
fi

# g. HMP "info lwp" while CPL 3 code runs
echo "=== g. info lwp while CPL3 code runs"
name=monitor-run
append=config=monitor-run start "$name" max,+lwp
if wait_for "$name" '^LWPMONRUN '; then
    line=$(tr -d '\r' <"$work/$name.log" | grep -a '^LWPMONRUN ' | head -n 1)
    for kv in ${line#LWPMONRUN }; do
        declare "run_${kv%%=*}=${kv#*=}"
    done
    for stop in 1 2 3; do
        sleep "0.$((RANDOM % 9 + 1))"
        f=$work/$name.$stop
        if qmp "$name" stop &&
            python3 "$here/qmp.py" "$work/$name.qmp" hmp 'info registers' >"$f.regs" &&
            python3 "$here/qmp.py" "$work/$name.qmp" hmp 'info lwp' >"$f.info" &&
            qmp "$name" hmp "memsave $run_ring $run_size \"$f.ring\"" &&
            python3 "$here/monrun-check.py" "$f.regs" "$f.info" "$f.ring" \
                "$run_inc" "$run_jmp" "$run_interval" >"$f.check"; then
            pass "info lwp at stop $stop while CPL3 code runs: $(sed -n 's/^PASS: \(.*counter.*\)/\1;/p' "$f.check" | tr '\n' ' ')"
        else
            fail "info lwp at stop $stop while CPL3 code runs"
            cat "$f.check" "$f.info" 2>/dev/null
            grep -a 'RBX\|RIP' "$f.regs" 2>/dev/null
        fi
        qmp "$name" cont
    done
    quit "$name" "$qpid"
else
    fail "info lwp: the guest never printed LWPMONRUN"
    show "$name"
fi

# h. HMP "info pmu", and the PMU registers across migration
echo "=== h. info pmu, and the PMU registers across migration"
# pmu_check NAME WHEN: "info pmu" of NAME shows every register as the
# guest's RDMSR read it (the PMUMONITOR line)
pmu_check() {
    local w info=$work/$1.info
    python3 "$here/qmp.py" "$work/$1.qmp" hmp 'info pmu' >"$info" 2>&1
    for w in "${pmu_want[@]}"; do
        if grep -qF -- "$w" "$info"; then
            pass "info pmu $2 - expect \"$w\""
        else
            fail "info pmu $2 - expect \"$w\""
            cat "$info"
        fi
    done
}
name=pmu-monitor
append=config=pmu-monitor start "$name" Nehalem,pmu=on
if wait_for "$name" '^PMUMONITOR '; then
    line=$(tr -d '\r' <"$work/$name.log" | grep -a '^PMUMONITOR ' | head -n 1)
    for kv in ${line#PMUMONITOR }; do
        declare "pmu_${kv%%=*}=${kv#*=}"
    done
    # IA32_DS_AREA migrates in cpu/ds_area, the PEBS MSRs in cpu/pebs
    pmu_want=("GLOBAL_CTRL $pmu_ctrl, GLOBAL_STATUS 0x0, FIXED_CTR_CTRL $pmu_fixedctrl"
        "DEBUGCTL $pmu_debugctl, DS_AREA $(printf '0x%016x' "$pmu_dsarea")"
        "PEBS_ENABLE $pmu_pebs, LD_LAT_THRESHOLD $pmu_ldlat")
    for i in 0 1 2 3; do
        c=pmu_pmc$i e=pmu_evtsel$i
        pmu_want+=("PMC$i $(printf '0x%012x' "${!c}"), PERFEVTSEL$i ${!e}:")
    done
    for i in 0 1 2; do
        c=pmu_fixed$i
        pmu_want+=("FIXED_CTR$i $(printf '0x%012x' "${!c}"):")
    done
    # the LBR stack (cpu/lbr), its newest entry first
    pmu_want+=("LBR_SELECT $pmu_lbrsel, TOS $pmu_tos,"
        "LBR7 FROM $(printf '0x%016x' "$pmu_from7") TO $(printf '0x%016x' "$pmu_to7")"
        "LBR0 FROM $(printf '0x%016x' "$pmu_from0") TO $(printf '0x%016x' "$pmu_to0")")
    pmu_check "$name" "after the guest's WRMSRs"
    if migrate_out "$name" "$work/pmu.mig"; then
        quit "$name" "$qpid"
        if migrate_in pmu-in Nehalem,pmu=on "$work/pmu.mig"; then
            pmu_check pmu-in "after migration to a file and back"
        else
            fail "PMU migration: migrate-incoming - expect it to complete"
            show pmu-in
        fi
        quit pmu-in "$qpid"
        # the PMU's state cannot be loaded into a CPU without the PMU:
        # cpu/lbr's post_load refuses it (the trace names the section)
        name=pmu-nopmu
        append=config=pmu-monitor start "$name" Nehalem -incoming defer \
            -trace vmstate_load_state_end
        if qmp "$name" migrate-incoming "{\"uri\": \"file:$work/pmu.mig\"}" &&
            qmp "$name" wait-migration; then
            fail "PMU migration: the stream into -cpu Nehalem without" \
                 "pmu=on - expect the load refused (it completed)"
        elif grep -q "vmstate_load_state_end cpu/lbr end/-22" \
                "$work/$name.out"; then
            pass "PMU migration: the stream into -cpu Nehalem without" \
                 "pmu=on - expect cpu/lbr to refuse it (got it)"
        else
            fail "PMU migration: the stream into -cpu Nehalem without" \
                 "pmu=on - expect cpu/lbr to refuse it"
            show "$name"
        fi
        kill "$qpid" 2>/dev/null
        wait "$qpid" 2>/dev/null
    else
        fail "PMU migration: migrate file: - expect it to complete"
        show "$name"
        quit "$name" "$qpid"
    fi
else
    fail "info pmu: the guest never printed PMUMONITOR"
    show "$name"
fi

# ---- i: the PMU's counts across migration ----
echo "=== i. the PMU's counts and PMIs across migration"
# about 4 s counted when alone
pappend="config=pmu-migrate iters=3000000"
pref=""
append=$pappend start pmuref Nehalem,pmu=on
if wait_for pmuref '^LWPMIGRATE: running'; then
    t0=$EPOCHREALTIME
    wait "$qpid"
    status=$?
    t1=$EPOCHREALTIME
    pref=$(digest "$work/pmuref.log")
    f=$(guest_fails "$work/pmuref.log")
    ptime=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
    if [ $status -ne 1 ] || [ -z "$pref" ] || [ "$f" -ne 0 ]; then
        fail "PMU: uninterrupted run - expect exit(0), a digest and no" \
             "FAIL line (got status $status, \"$pref\", $f FAIL lines)"
        show pmuref
        pref=""
    else
        pass "PMU: uninterrupted run: $pref (${ptime} s counted)"
    fi
else
    fail "PMU: the guest never started its counted run"
    show pmuref
fi
if [ -n "$pref" ]; then
    # three stops, each after 5-15% of the run's length
    delays=()
    for hop in 1 2 3; do
        delays+=("$(awk -v r="$RANDOM" -v t="$ptime" \
                     'BEGIN { printf "%.2f", t * (0.05 + 0.1 * r / 32767) }')")
    done
    echo "PMU migration: stops after ${delays[*]} s"
    logs=()
    name=pmig0
    ok=true
    append=$pappend start "$name" Nehalem,pmu=on
    src_pid=$qpid
    logs+=("$work/$name.log")
    wait_for "$name" '^LWPMIGRATE: running' || ok=false
    for hop in 1 2 3; do
        $ok || break
        sleep "${delays[hop - 1]}"
        alive "$name" "$src_pid" "PMU migration: stop $hop" || { ok=false; break; }
        qmp "$name" stop
        where=$(progress "$name")
        if seen "$name" '^LWPDIGEST'; then
            fail "PMU migration: stop $hop - expect the counted run still" \
                 "going (it had ended: slow host?)"
            ok=false
            break
        fi
        if ! migrate_out "$name" "$work/pmu-hop$hop.mig"; then
            fail "PMU migration: stop $hop at progress $where - expect" \
                 "migrate file: to complete"
            show "$name"
            ok=false
            break
        fi
        quit "$name" "$src_pid"
        name=pmig$hop
        if ! migrate_in "$name" Nehalem,pmu=on "$work/pmu-hop$hop.mig"; then
            fail "PMU migration: stop $hop at progress $where - expect" \
                 "migrate-incoming to complete"
            show "$name"
            ok=false
            break
        fi
        src_pid=$qpid
        logs+=("$work/$name.log")
        qmp "$name" cont
        echo "info: PMU migration $hop done at progress $where"
    done
    if $ok; then
        wait "$src_pid"
        status=$?
        d=$(digest "${logs[@]}")
        f=$(guest_fails "${logs[@]}")
        if [ $status -eq 1 ] && [ "$d" = "$pref" ] && [ "$f" -eq 0 ]; then
            pass "PMU: migration to a file 3 times mid-run - expect the" \
                 "uninterrupted run's counts and PMIs (got them)"
        else
            fail "PMU: migration to a file 3 times mid-run - expect" \
                 "$pref, exit(0), no FAIL line (got \"$d\", status" \
                 "$status, $f FAIL lines)"
            show "$name"
        fi
    fi
fi

finish
