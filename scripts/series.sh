#!/usr/bin/env bash
# The series as a reviewer gets it (patches/, git format-patch form against
# the pristine tarball), checked one step at a time:
#
#   scripts/series.sh check            checkpatch.pl on every patch
#   scripts/series.sh build [FIRST [LAST]]
#                                      apply the patches one by one to the
#                                      pristine tree in build/series/qemu-src
#                                      and build each step (incremental,
#                                      ccache) in build/series/qemu, then run
#                                      its quick tests; compiler warnings
#                                      of the step are reported
#   scripts/series.sh nolwp            build the final tree (build/qemu-src)
#                                      with --disable-lwp in
#                                      build/series/nolwp: no C++ engine, and
#                                      +lwp is refused as unsupported
#
# All three append to build/series/report.txt, one line per patch (or
# run); build's last line is "N steps: N built, N failed".  build took
# about 10 minutes for all steps on 2 cores with a warm ccache (each step
# 3 s to 2 min), 19 minutes when most steps' code is new to ccache.  CI
# builds only the final tree (scripts/build.sh).  check rewrites build/series/patches, which a
# running build reads: run one at a time.
set -euo pipefail
. "$(dirname "$0")/common.sh"

OUT=$BUILD/series
# The same relative layout as build/qemu-src and build/qemu, so that
# ccache (base directory build/series) serves what those built
S=$OUT/qemu-src
B=$OUT/qemu
REPORT=$OUT/report.txt
mkdir -p "$OUT"
# A copy, so that the run is of one version of the series
rm -rf "$OUT/patches"
cp -r "$TOP/patches" "$OUT/patches"
mapfile -t PATCHES < <(ls "$OUT"/patches/*.patch)

pristine() { # the pristine tree in $S, as a git repository
    local tarball
    tarball=$(qemu_tarball)
    rm -rf "$S"
    mkdir -p "$S"
    # --touch: newer than what an earlier run built from another step
    tar -xJf "$tarball" -C "$S" --strip-components=1 --touch
    git -C "$S" init -q
    git -C "$S" config user.name qemu-lwp
    git -C "$S" config user.email qemu-lwp@localhost
    git -C "$S" add -A -f .
    git -C "$S" commit -q -m "upstream: $(basename "$tarball")"
}

# configure_qemu SRC BUILD LOG [ARGS...]: a fresh build directory
configure_qemu() {
    local src=$1 b=$2 log=$3
    shift 3
    rm -rf "$b"
    mkdir -p "$b"
    (cd "$b" && "$src/configure" "${QEMU_CONFIGURE_ARGS[@]}" "$@") >"$log" 2>&1 ||
        die "configure failed (see $log)"
}

# The tests a step can run quickly: what every step must keep working, and
# the step's own qtest once it exists
quick_tests() {
    local t
    "$B/qemu-x86_64" -cpu max /bin/true || { echo "qemu-x86_64 /bin/true"; return 1; }
    "$B/qemu-system-x86_64" -cpu help >/dev/null || { echo "-cpu help"; return 1; }
    for t in lwp-cpuid-test; do
        [ -e "$S/tests/qtest/$t.c" ] || continue
        ninja -C "$B" "tests/qtest/$t" >>"$OUT/step.log" 2>&1 || { echo "build $t"; return 1; }
        QTEST_QEMU_BINARY=$B/qemu-system-x86_64 "$B/tests/qtest/$t" >>"$OUT/step.log" 2>&1 ||
            { echo "$t"; return 1; }
    done
}

case "${1:-}" in
check)
    tarball=$(qemu_tarball)
    cp=$OUT/checkpatch.pl
    top=$(basename "$tarball" | sed "s/_/-/; s/+ds.orig.tar.xz//")
    tar -xJf "$tarball" -O "$top/scripts/checkpatch.pl" >"$cp"
    bad=0
    for p in "${PATCHES[@]}"; do
        r=$(perl "$cp" --no-tree "$p" 2>&1 | grep -E '^total:' || true)
        echo "$(basename "$p" | cut -c1-4) checkpatch $r" | tee -a "$REPORT"
        case "$r" in "total: 0 errors, 0 warnings"*) ;; *) bad=$((bad + 1)) ;; esac
    done
    echo "${#PATCHES[@]} patches: $((${#PATCHES[@]} - bad)) clean, $bad with errors or warnings"
    ;;
build)
    first=$((10#${2:-1}))
    last=$((10#${3:-${#PATCHES[@]}}))
    pristine
    export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ccache}
    export CCACHE_BASEDIR=$OUT
    built=0 failed=0
    for ((i = 1; i <= last; i++)); do
        p=${PATCHES[$((i - 1))]}
        git -C "$S" am -q --keep-cr "$p" || die "git am $(basename "$p") failed"
        [ "$i" -ge "$first" ] || continue
        if [ ! -f "$B/build.ninja" ]; then
            configure_qemu "$S" "$B" "$OUT/configure.log"
            link_firmware "$B"
        fi
        t0=$(date +%s)
        # and the execlog plugin, which tests/user's dme-check needs: a
        # step's binaries can run the project's tests (tests/user/run.sh
        # build/series/qemu/qemu-x86_64)
        if ninja -C "$B" -j"$JOBS" qemu-x86_64 qemu-system-x86_64 \
            contrib/plugins/libexeclog.so >"$OUT/step.log" 2>&1; then
            w=$(grep -c 'warning:' "$OUT/step.log" || true)
            if why=$(quick_tests 2>&1); then res="built, tests pass"; else res="built, test FAIL: $why"; fi
            [ "$w" -eq 0 ] || res="$res, $w compiler warnings"
            built=$((built + 1))
        else
            res="build FAIL: $(grep -m1 -E 'error:|ERROR:' "$OUT/step.log" | cut -c1-160)"
            cp "$OUT/step.log" "$OUT/step-$(printf %04d "$i").log"
            failed=$((failed + 1))
        fi
        echo "$(basename "$p" | cut -c1-4) $res ($(($(date +%s) - t0)) s)" | tee -a "$REPORT"
    done
    echo "$((built + failed)) steps: $built built, $failed failed"
    ;;
nolwp)
    "$TOP/scripts/prepare.sh"
    NB=$OUT/nolwp
    export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ccache}
    export CCACHE_BASEDIR=$BUILD
    [ -f "$NB/build.ninja" ] ||
        configure_qemu "$SRC" "$NB" "$OUT/nolwp-configure.log" --disable-lwp
    grep -q "x86 LWP *: NO" "$OUT/nolwp-configure.log" || die "configure did not disable LWP"
    ninja -C "$NB" -j"$JOBS" qemu-x86_64 qemu-system-x86_64 >"$OUT/nolwp.log" 2>&1 ||
        die "build failed (see $OUT/nolwp.log)"
    ! grep -q 'tcg-helpers/[a-z]*\.cc' "$NB/build.ninja" || die "the engine is in the build"
    # TCG reports the feature as unsupported and runs without it
    w=$("$NB/qemu-x86_64" -cpu max,+lwp /bin/true 2>&1) || die "qemu-x86_64 failed: $w"
    case "$w" in *"CPUID.80000001H:ECX.lwp [bit 15]"*) ;; *) die "no warning for +lwp: '$w'" ;; esac
    w=$(echo quit | "$NB/qemu-system-x86_64" -L /usr/share/seabios -L /usr/share/qemu \
        -M pc -S -nodefaults -display none -cpu max,+lwp -monitor stdio 2>&1) ||
        die "qemu-system-x86_64 failed: $w"
    case "$w" in *"CPUID.80000001H:ECX.lwp [bit 15]"*) ;; *) die "no warning for +lwp: '$w'" ;; esac
    echo "nolwp: built without the engine; +lwp is refused as unsupported" | tee -a "$REPORT"
    ;;
*)
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
