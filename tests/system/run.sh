#!/bin/bash
#
# Build the system-mode test kernels and boot each once per CPU
# configuration.
#
#   tests/system/run.sh QEMU_SYSTEM_BINARY
#
# The kernels are built in build/tests-system/ (or $TESTS_SYSTEM_BUILD).
# Prints each boot's serial output, then one line
# "system: N passed, N failed", where "failed" counts FAIL lines plus
# boots that crashed, timed out or ended without a SUMMARY line.
# Exits 0 only when everything passed.  QEMU_DATADIR, when set, is passed
# as -L (for a copy of the binary that cannot find its firmware).
#
# SPDX-License-Identifier: GPL-2.0-or-later

set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 QEMU_SYSTEM_BINARY" >&2
    exit 2
fi
qemu=$1
src=$(cd "$(dirname "$0")" && pwd)
build=${TESTS_SYSTEM_BUILD:-$(cd "$src/../.." && pwd)/build/tests-system}

# kernel  config=NAME (what the kernel expects)  -cpu model.  tests.elf
# runs in long mode, tests32.elf in legacy protected mode.  Words after
# the model replace the default "-accel tcg" (e.g. -smp and MTTCG).
configs=(
    "tests.elf   nolwp max"
    "tests.elf   g4    Opteron_G4,+lwp"
    "tests.elf   g5    Opteron_G5,+lwp"
    "tests.elf   max   max,+lwp"
    "tests32.elf nolwp max"
    "tests32.elf g4    Opteron_G4,+lwp"
    "tests32.elf max   max,+lwp"
    "tests32.elf pmu   Nehalem,pmu=on"
    "tests32.elf p6    pentium3,pmu=on"
    "tests32.elf nop6  pentium3"
    "tests.elf   smp   max,+lwp -smp 4 -accel tcg,thread=multi"
    "tests.elf   pmu   Nehalem,pmu=on"
    "tests.elf   pmu-cost Nehalem,pmu=on,cost-model=detailed"
    "tests.elf   nopmu Nehalem"
    "tests.elf   nopmu max,pmu=on"
)

if ! make -s -C "$src" O="$build"; then
    echo "BUILD FAILED"
    echo "system: 0 passed, 1 failed"
    exit 1
fi

firmware=()
if [ -n "${QEMU_DATADIR:-}" ]; then
    firmware=(-L "$QEMU_DATADIR")
fi

passed=0
failed=0
for c in "${configs[@]}"; do
    read -r kernel name cpu machine <<<"$c"
    accel=(-accel tcg)
    if [ -n "$machine" ]; then
        read -r -a accel <<<"$machine"
    fi
    boot="$kernel config=$name"
    # the LWP MSR and fault trace events of the 64-bit max run (lwp.c and
    # lwp-xsave.c trace-expect)
    trace=()
    log=$build/trace-$kernel-$name.log
    rm -f "$log"
    if [ "$kernel $name" = "tests.elf max" ]; then
        trace=(-d trace:lwp_wrmsr_cfg,trace:lwp_wrmsr_cbaddr,trace:lwp_fault
               -D "$log")
    fi
    echo "=== $boot -cpu $cpu${machine:+ $machine}"
    # a guard against hangs, not a time limit: config=max took 7.5 s to
    # 111 s of wall time in three runs of one build on one machine
    out=$(timeout 300 "$qemu" "${firmware[@]}" -M pc -nographic \
              -serial stdio -monitor none \
              -device isa-debug-exit,iobase=0xf4,iosize=0x4 \
              "${accel[@]}" -no-reboot -cpu "$cpu" "${trace[@]}" \
              -kernel "$build/$kernel" -append "config=$name" \
              2>&1 </dev/null)
    status=$?
    # drop SeaBIOS's terminal escapes
    printf '%s\n' "$out" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g'

    pass=$(grep -c '^PASS: ' <<<"$out")
    fail=$(grep -c '^FAIL: ' <<<"$out")
    if [ ${#trace[@]} -gt 0 ]; then
        # each trace-expect line, in order, among the log's lines
        n=$(grep -c '^trace-expect: ' <<<"$out")
        if grep '^trace-expect: ' <<<"$out" | tr -d '\r' |
                sed 's/^trace-expect: //' |
                awk -v file="$log" 'BEGIN { while ((getline l < file) > 0) t[++m] = l }
                     { while (++i <= m && t[i] != $0) ; if (i > m) exit 1 }' &&
                [ "$n" -gt 0 ]; then
            echo "PASS: the $n LWP MSR writes and faults lwp.c expects, in order, in the trace log"
            passed=$((passed + 1))
        else
            echo "FAIL: the $n LWP MSR writes and faults lwp.c expects, in order, in the trace log ($log)"
            failed=$((failed + 1))
        fi
    fi
    passed=$((passed + pass))
    failed=$((failed + fail))

    # isa-debug-exit: exit(0) gives status 1, exit(1) gives status 3
    if [ "$fail" -eq 0 ]; then want=1; else want=3; fi
    if [ $status -eq 124 ]; then
        echo "BOOT FAILED: $boot timed out after 300 s"
        failed=$((failed + 1))
    elif ! grep -q '^SUMMARY: ' <<<"$out"; then
        echo "BOOT FAILED: $boot printed no SUMMARY" \
             "(exit status $status)"
        failed=$((failed + 1))
    elif [ $status -ne $want ]; then
        echo "BOOT FAILED: $boot exit status $status, expected $want"
        failed=$((failed + 1))
    fi
done

# checker SUMMARY-WORD TIMEOUT COMMAND...: run a checker script, show its
# output and add up its PASS/FAIL lines; it must reach its summary line
checker() {
    local word=$1 out
    shift
    out=$(timeout "$@" 2>&1)
    printf '%s\n' "$out"
    passed=$((passed + $(grep -c '^PASS: ' <<<"$out")))
    failed=$((failed + $(grep -c '^FAIL: ' <<<"$out")))
    if ! grep -q "^$word: " <<<"$out"; then
        echo "FAIL: $word check ran to its summary line"
        failed=$((failed + 1))
    fi
}

# No TB's code writes the word that requests exits (interrupts), whether
# it counts or not: the irq config (lwp-irq.c: a CPL3 loop under the
# timer, with LWP off and counting) under -d op_opt
echo "=== exitreq-check: tests.elf config=irq -cpu max,+lwp"
checker exitreq 120 python3 "$src/../user/exitreq-check.py" 1 "$qemu" \
    "${firmware[@]}" -M pc -nographic -serial stdio -monitor none \
    -device isa-debug-exit,iobase=0xf4,iosize=0x4 -accel tcg \
    -no-reboot -cpu max,+lwp -kernel "$build/tests.elf" -append config=irq

# The DCache Miss records of every kind of load at CPL3 (config=dme,
# lwp-dme-loads.c) against the model fed the execlog trace of the boot
execlog=${EXECLOG_PLUGIN:-$(dirname "$(readlink -f "$qemu")")/contrib/plugins/libexeclog.so}
echo "=== dme-check --system: tests.elf config=dme -cpu max,+lwp"
checker dme 300 python3 "$src/../user/dme-check.py" --system \
    "$qemu" "$execlog" "$build/tests.elf" "${firmware[@]}"
# ... and the clock records of pointer chases at CPL3, timer interrupts
# and all, with cost-model=detailed (config=dme-clocks, choice 70)
echo "=== dme-check --system --clocks: tests.elf config=dme-clocks -cpu max,+lwp,cost-model=detailed"
checker dme-clocks 300 python3 "$src/../user/dme-check.py" --system --clocks \
    "$qemu" "$execlog" "$build/tests.elf" "${firmware[@]}"

echo "system: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
