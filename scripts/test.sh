#!/usr/bin/env bash
# Run every test layer (README: "the test command").  Builds what it needs
# first.  Ends with one line: "N passed, N failed" over all layers.
#
#   engine   GoogleTest unit tests of tcg-helpers/
#   asan     the same tests built with ASan+UBSan (build/engine-asan)
#   fuzz     a bounded libFuzzer campaign on the engine (tests/fuzz)
#   user     guest programs under build/qemu-x86_64 (tests/user)
#   system   bare-metal guest kernel under build/qemu-system-x86_64
#            (tests/system)
#   migration  the system-mode guest profiling across migrate-to-file and
#            savevm/loadvm, against an uninterrupted run (tests/migration)
#   linux    Debian 12's kernel, then ours (linux/patches, built by
#            scripts/build-linux.sh) running LWP programs, booted under
#            build/qemu-system-x86_64 with +lwp (tests/linux)
#   qtest    lwp-cpuid-test and upstream's test-x86-cpuid-compat
#   tcg      upstream's x86_64-linux-user and x86_64-softmmu check-tcg
#            programs, with the series' PMU test (run-pmu)
#   prof     lwp-prof (tools/lwp-prof) recording programs under
#            build/qemu-x86_64: exact samples, threads, speedscope, errors
#
# LAYERS="engine user" scripts/test.sh runs a subset.
set -uo pipefail
. "$(dirname "$0")/common.sh"
LAYERS=${LAYERS:-engine asan fuzz user system migration linux qtest tcg prof}
total_pass=0 total_fail=0
summary=()

count() { # LAYER PASSED FAILED
    total_pass=$((total_pass + $2))
    total_fail=$((total_fail + $3))
    summary+=("$(printf '%-7s %4d passed, %d failed' "$1" "$2" "$3")")
}
has() { [[ " $LAYERS " == *" $1 "* ]]; }

"$TOP/scripts/build.sh" || { echo "build: 0 passed, 1 failed"; echo "0 passed, 1 failed"; exit 1; }
logs=$BUILD/test-logs
mkdir -p "$logs"

# gtest_count LAYER LOG STATUS: count a GoogleTest run.  --gtest_brief=1
# prints no "N FAILED TESTS" summary, only a line per failed test; a run
# that exits non-zero fails however little it printed.
gtest_count() {
    local p f
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$2")
    f=$(grep -cE '^\[  FAILED  \] [A-Za-z_][A-Za-z0-9_/]*\.' "$2" || true)
    if [ "$3" != 0 ] && [ "${f:-0}" = 0 ]; then
        f=1
    fi
    count "$1" "${p:-0}" "${f:-0}"
}

if has engine; then
    log "engine unit tests"
    [ -f "$BUILD/engine/build.ninja" ] || meson setup "$BUILD/engine" "$TOP" >"$logs/engine-setup.log"
    if ninja -C "$BUILD/engine" >"$logs/engine-build.log" 2>&1; then
        "$BUILD/engine/tests/engine/engine-tests" --gtest_brief=1 2>&1 | tee "$logs/engine.log"
        gtest_count engine "$logs/engine.log" "${PIPESTATUS[0]}"
    else
        cat "$logs/engine-build.log"; count engine 0 1
    fi
fi

if has asan; then
    # The engine unit tests under AddressSanitizer and UBSan (GCC's)
    log "engine unit tests, ASan+UBSan"
    [ -f "$BUILD/engine-asan/build.ninja" ] ||
        meson setup "$BUILD/engine-asan" "$TOP" -Db_sanitize=address,undefined \
            -Db_lundef=false >"$logs/asan-setup.log" 2>&1
    if ninja -C "$BUILD/engine-asan" tests/engine/engine-tests >"$logs/asan-build.log" 2>&1; then
        ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
            "$BUILD/engine-asan/tests/engine/engine-tests" --gtest_brief=1 2>&1 | tee "$logs/asan.log"
        gtest_count asan "$logs/asan.log" "${PIPESTATUS[0]}"
        # A sanitizer report stops the run: no summary, or a report after it
        if ! grep -q '^\[  PASSED  \]' "$logs/asan.log" ||
            grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$logs/asan.log"; then
            count asan 0 1
        fi
    else
        cat "$logs/asan-setup.log" "$logs/asan-build.log" 2>/dev/null | tail -n 30; count asan 0 1
    fi
fi

layer_script() { # LAYER SCRIPT ARGS...: the script's last line is "X: N passed, N failed"
    local name=$1 line
    shift
    log "$name tests"
    "$@" 2>&1 | tee "$logs/$name.log"
    line=$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed" "$logs/$name.log" | tail -n 1)
    if [ -z "$line" ]; then
        count "$name" 0 1
    else
        count "$name" "$(echo "$line" | awk '{print $2}')" "$(echo "$line" | awk '{print $4}')"
    fi
}
has fuzz && layer_script fuzz "$TOP/tests/fuzz/run.sh"
has user && layer_script user "$TOP/tests/user/run.sh" "$BUILD/qemu-x86_64"
has system && layer_script system "$TOP/tests/system/run.sh" "$BUILD/qemu-system-x86_64"
has migration && layer_script migration "$TOP/tests/migration/run.sh" "$BUILD/qemu-system-x86_64"
has linux && layer_script linux "$TOP/tests/linux/run.sh" "$BUILD/qemu-system-x86_64"
has linux && layer_script quickstart "$TOP/tests/linux/quickstart.sh" "$BUILD/qemu-system-x86_64"
has prof && layer_script prof "$TOP/tools/lwp-prof/tests/run.sh" "$BUILD/qemu-x86_64"

if has qtest; then
    log "qtests"
    qt=(lwp-cpuid-test test-x86-cpuid-compat)
    if ninja -C "$QBUILD" -j"$JOBS" "${qt[@]/#/tests/qtest/}" >"$logs/qtest-build.log" 2>&1; then
        (cd "$QBUILD" && meson test --no-rebuild --print-errorlogs \
            "${qt[@]/#/qtest-x86_64/}") 2>&1 | tee "$logs/qtest.log"
        p=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$logs/qtest.log")
        f=$(awk '/^(Fail|Unexpected Pass|Timeout):/ {n += $NF} END {print n + 0}' "$logs/qtest.log")
        count qtest "${p:-0}" "$f"
    else
        tail -n 30 "$logs/qtest-build.log"; count qtest 0 1
    fi
fi

if has tcg; then
    log "upstream check-tcg, x86_64-linux-user and x86_64-softmmu"
    # (check-tcg runs some programs under upstream's test plugins; the
    # softmmu tests include the series' PMU test, run-pmu)
    { ninja -C "$QBUILD" -j"$JOBS" test-plugins &&
      make -C "$QBUILD" -k -j"$JOBS" run-tcg-tests-x86_64-linux-user \
          run-tcg-tests-x86_64-softmmu; } >"$logs/tcg.log" 2>&1
    run=$(grep -cE '^ +TEST +' "$logs/tcg.log")
    f=$(grep -cE '\*\*\* .*(run-[^]]*\] Error|No rule to make target)' "$logs/tcg.log")
    grep -E '^ +TEST |Error' "$logs/tcg.log" | tail -n 5
    count tcg $((run - f)) "$f"
    [ "$run" -gt 0 ] || count tcg 0 1
fi

echo
printf '%s\n' "${summary[@]}"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
