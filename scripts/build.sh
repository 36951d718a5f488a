#!/usr/bin/env bash
# Build the patched emulators: install dependencies, prepare the tree,
# configure (once) and build with ninja and ccache. The results are linked at
# build/qemu-x86_64 and build/qemu-system-x86_64; firmware from Debian's
# seabios, ipxe-qemu and qemu-system-data packages is linked into the build's
# qemu-bundle so that qemu-system-x86_64 -M pc starts without -L.
set -euo pipefail
. "$(dirname "$0")/common.sh"

"$TOP/scripts/install-deps.sh"
"$TOP/scripts/prepare.sh"

export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ccache}
export CCACHE_BASEDIR=$BUILD
if [ ! -f "$QBUILD/build.ninja" ]; then
    log "configuring QEMU in $QBUILD"
    mkdir -p "$QBUILD"
    (cd "$QBUILD" && "$SRC/configure" "${QEMU_CONFIGURE_ARGS[@]}") >"$BUILD/configure.log" 2>&1 ||
        { tail -n 30 "$BUILD/configure.log"; die "configure failed (see $BUILD/configure.log)"; }
fi
log "building QEMU (ninja -j$JOBS)"
# (execlog: the user layer's independent trace of DCache loads)
ninja -C "$QBUILD" -j"$JOBS" qemu-x86_64 qemu-system-x86_64 \
    contrib/plugins/libexeclog.so "$@" >"$BUILD/ninja.log" 2>&1 ||
    { grep -E -B2 -A12 'error|FAILED' "$BUILD/ninja.log" | head -n 80;
      die "build failed (see $BUILD/ninja.log)"; }

ln -sfn qemu/qemu-x86_64 "$BUILD/qemu-x86_64"
ln -sfn qemu/qemu-system-x86_64 "$BUILD/qemu-system-x86_64"

link_firmware "$QBUILD"
log "built $BUILD/qemu-x86_64 and $BUILD/qemu-system-x86_64"
