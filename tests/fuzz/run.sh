#!/usr/bin/env bash
# Build the engine's libFuzzer target with Debian's clang and run a bounded,
# deterministic campaign (fixed seed and run count) from the checked-in
# corpus.  Last line: "fuzz: N passed, N failed" (1 passed when libFuzzer
# found no crash, sanitizer report or invariant violation).
#
#   tests/fuzz/run.sh                 the CI campaign (FUZZ_RUNS, FUZZ_TIME)
#   tests/fuzz/run.sh FILE...         run the target on these inputs only
#   tests/fuzz/run.sh --merge         add the inputs of the last campaign
#                                     that found new coverage to
#                                     tests/fuzz/corpus/
#
# The binary is build/fuzz/lwp_fuzz; a crash is saved as
# build/fuzz/artifacts/crash-<sha1>.  tests/fuzz/README.md has the rest.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

OUT=$BUILD/fuzz
CORPUS=$TOP/tests/fuzz/corpus
# ~40 s on the 2-core machine; FUZZ_TIME caps a slower one
RUNS=${FUZZ_RUNS:-500000}
TIME=${FUZZ_TIME:-60}
CXX=${FUZZ_CXX:-clang++}
# shellcheck disable=SC2054 # the commas are -fsanitize's
CXXFLAGS=(-std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined
          -fno-sanitize-recover=all -fno-exceptions
          -I"$TOP/include" -I"$TOP/tcg-helpers")

result() { # PASSED FAILED
    echo "fuzz: $1 passed, $2 failed"
    [ "$2" = 0 ]
}

build() {
    local src obj objs=() rc=0
    mkdir -p "$OUT/obj"
    command -v "$CXX" >/dev/null || { log "fuzz: $CXX not found (scripts/install-deps.sh)"; return 1; }
    for src in "$TOP"/tcg-helpers/*.cc "$TOP/tests/fuzz/lwp_fuzz.cc"; do
        obj=$OUT/obj/$(basename "${src%.cc}").o
        objs+=("$obj")
        # Rebuild when the source, a header or the flags are newer
        if [ -f "$obj" ] && [ "$obj" -nt "$src" ] && [ "$obj" -nt "$0" ] &&
           [ -z "$(find "$TOP/tcg-helpers" "$TOP/include" \( -name '*.h' -o -name '*.hh' \) -newer "$obj")" ]; then
            continue
        fi
        "$CXX" "${CXXFLAGS[@]}" -c "$src" -o "$obj" || rc=1
    done
    [ "$rc" = 0 ] || return 1
    "$CXX" "${CXXFLAGS[@]}" "${objs[@]}" -o "$OUT/lwp_fuzz"
}

log "fuzz: building $OUT/lwp_fuzz"
build || { result 0 1; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

if [ "${1:-}" = --merge ]; then
    "$OUT/lwp_fuzz" -merge=1 "$CORPUS" "$OUT/corpus"
    exit
fi
if [ $# -gt 0 ]; then
    if "$OUT/lwp_fuzz" "$@"; then result 1 0; else result 0 1; fi
    exit
fi

# The reproducers of engine bugs, one line each (they are in the corpus
# too, so the campaign below fails while one of them does)
for f in "$TOP"/tests/fuzz/crashes/*; do
    [ -f "$f" ] || continue
    if msg=$("$OUT/lwp_fuzz" "$f" 2>&1); then
        log "fuzz: $(basename "$f"): passes (fixed?)"
    else
        log "fuzz: $(basename "$f"): fails: $(echo "$msg" |
            grep -m1 -A1 -E 'INVARIANT VIOLATED|ERROR: |runtime error:' | tr -s ' \n' ' ')"
    fi
done

# A fresh working corpus each time, so that a run depends only on the
# checked-in inputs: libFuzzer adds what it finds to the first directory.
rm -rf "$OUT/corpus" "$OUT/artifacts"
mkdir -p "$OUT/corpus" "$OUT/artifacts"
log "fuzz: $RUNS runs, seed 1, at most ${TIME}s"
set +e
"$OUT/lwp_fuzz" -seed=1 -runs="$RUNS" -max_total_time="$TIME" -max_len=1024 \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$OUT/artifacts/" "$OUT/corpus" "$CORPUS" \
    >"$OUT/fuzz.log" 2>&1
rc=$?
set -e
grep -E '^#[0-9]+ +(INITED|DONE)|^Done [0-9]+ runs|^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' \
    "$OUT/fuzz.log" || true
crashes=$(find "$OUT/artifacts" -type f | wc -l)
if [ "$rc" != 0 ] || [ "$crashes" != 0 ] ||
   grep -qE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|runtime error:|INVARIANT VIOLATED' "$OUT/fuzz.log"; then
    # The report: the invariant or sanitizer message and its stack
    grep -E -A 40 'INVARIANT VIOLATED|ERROR: |runtime error:' "$OUT/fuzz.log" | head -n 80
    ls "$OUT/artifacts"/* 2>/dev/null || true
    log "fuzz: reproduce with: LWP_FUZZ_TRACE=1 $OUT/lwp_fuzz $OUT/artifacts/<file>"
    result 0 1
else
    result 1 0
fi
