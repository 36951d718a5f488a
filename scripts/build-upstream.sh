#!/usr/bin/env bash
# Build unpatched upstream QEMU for bench/qemu-bench.sh: the same Debian
# orig tarball as scripts/build.sh, unpacked without patches/ or the overlay
# into build/upstream-src, configured in build/upstream with build.sh's
# configure options (target list: x86_64-linux-user only; with
# UPSTREAM_SYSTEM=1 also x86_64-softmmu, for bench/pmu-bench.sh), built with
# ninja and ccache.  Also builds upstream's TCG test plugins libbb.so and
# libinsn.so (tests/tcg/plugins) and its cache model plugin libcache.so
# (contrib/plugins).
#
# Incremental: the tree is unpacked again only when the tarball changed,
# configure runs once, and ninja rebuilds only what is out of date.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

USRC=$BUILD/upstream-src
UBUILD=$BUILD/upstream
UTARGETS=x86_64-linux-user
UBINS=(qemu-x86_64)
# once configured with the system emulator, the build keeps it
if grep -qs -- "--target-list=$UTARGETS,x86_64-softmmu'" \
        "$UBUILD/config.status"; then
    UPSTREAM_SYSTEM=1
fi
if [ "${UPSTREAM_SYSTEM:-0}" = 1 ]; then
    UTARGETS+=,x86_64-softmmu
    UBINS+=(qemu-system-x86_64)
fi
PLUGINS=(tests/tcg/plugins/libbb.so tests/tcg/plugins/libinsn.so
         contrib/plugins/libcache.so)

"$TOP/scripts/install-deps.sh"

tarball=$(qemu_tarball)
stamp=$(basename "$tarball")
if [ ! -f "$USRC/.qemu-lwp-upstream" ] ||
   [ "$(cat "$USRC/.qemu-lwp-upstream")" != "$stamp" ]; then
    log "unpacking $stamp (unpatched) into $USRC"
    rm -rf "$USRC" "$UBUILD"
    mkdir -p "$USRC"
    tar -xJf "$tarball" -C "$USRC" --strip-components=1
    echo "$stamp" >"$USRC/.qemu-lwp-upstream"
fi

export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ccache}
export CCACHE_BASEDIR=$BUILD
# configured again, from scratch, when the target list changes
if [ -f "$UBUILD/config.status" ] &&
   ! grep -q -- "--target-list=$UTARGETS'" "$UBUILD/config.status"; then
    rm -rf "$UBUILD"
fi
if [ ! -f "$UBUILD/build.ninja" ]; then
    log "configuring upstream QEMU in $UBUILD"
    mkdir -p "$UBUILD"
    # scripts/build.sh's options, except the target list
    (cd "$UBUILD" && "$USRC/configure" \
        --python=/usr/bin/python3 \
        --target-list="$UTARGETS" \
        --enable-capstone --enable-plugins --enable-slirp \
        --disable-docs --disable-install-blobs --disable-werror \
        --enable-debug-info \
        --cc="ccache gcc" --cxx="ccache g++" --host-cc=gcc) \
        >"$BUILD/upstream-configure.log" 2>&1 ||
        { tail -n 30 "$BUILD/upstream-configure.log";
          die "configure failed (see $BUILD/upstream-configure.log)"; }
fi
# The configure arguments recorded in $1/config.status, without the source
# directory and --target-list
configure_args() {
    sed -n "s/^exec '[^']*' //p" "$1/config.status" | grep -o "'[^']*'" |
        grep -v "^'--target-list="
}
if [ -f "$QBUILD/config.status" ] &&
   [ "$(configure_args "$QBUILD")" != "$(configure_args "$UBUILD")" ]; then
    log "warning: $QBUILD and $UBUILD were configured differently:"
    diff <(configure_args "$QBUILD") <(configure_args "$UBUILD") >&2 || true
fi
log "building upstream ${UBINS[*]} and plugins (ninja -j$JOBS)"
ninja -C "$UBUILD" -j"$JOBS" "${UBINS[@]}" "${PLUGINS[@]}" \
    >"$BUILD/upstream-ninja.log" 2>&1 ||
    { grep -E -B2 -A12 'error|FAILED' "$BUILD/upstream-ninja.log" | head -n 80;
      die "upstream build failed (see $BUILD/upstream-ninja.log)"; }
[ "${UPSTREAM_SYSTEM:-0}" != 1 ] || link_firmware "$UBUILD"
log "built ${UBINS[*]} and ${PLUGINS[*]} in $UBUILD"
