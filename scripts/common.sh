# Shared settings for the qemu-lwp scripts; sourced, not run.
# shellcheck shell=bash
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${QEMU_LWP_BUILD:-$TOP/build}
# The prepared QEMU tree (tarball + patches/ + overlay) and its build dir
SRC=$BUILD/qemu-src
QBUILD=$BUILD/qemu
# Downloaded tarballs survive `rm -rf build` and fresh clones
CACHE=${QEMU_LWP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qemu-lwp}
JOBS=${JOBS:-2}
# The overlay: the project's new files, linked into the tree at these paths
OVERLAY_DIRS=(target hw include tcg-helpers tests/qtest)
QEMU_TARGETS=x86_64-softmmu,x86_64-linux-user

log() { printf '[qemu-lwp] %s\n' "$*" >&2; }
die() { printf '[qemu-lwp] error: %s\n' "$*" >&2; exit 1; }

# Print the cached QEMU 10.0.x orig tarball, fetching it when missing.
qemu_tarball() {
    local t
    t=$(ls "$CACHE"/qemu_10.0.*+ds.orig.tar.xz 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -z "$t" ]; then
        mkdir -p "$CACHE"
        log "fetching qemu/trixie source package into $CACHE"
        (cd "$CACHE" && apt-get source --download-only qemu/trixie >&2) ||
            die "apt-get source --download-only qemu/trixie failed"
        t=$(ls "$CACHE"/qemu_*.orig.tar.xz 2>/dev/null | sort -V | tail -n 1 || true)
    fi
    case "$(basename "$t")" in
    qemu_10.0.*+ds.orig.tar.xz) ;;
    *) die "need QEMU 10.0.x, found '${t:-nothing}'" ;;
    esac
    echo "$t"
}

# Build lwp-prof and its preload library in $BUILD/lwp-prof (the prof
# layer, the linux layer's guest and the demo use them); the output of
# meson and ninja goes to LOG.  Prints nothing; fails when the build does.
build_lwp_prof() { # LOG
    { [ -f "$BUILD/lwp-prof/build.ninja" ] || meson setup "$BUILD/lwp-prof" "$TOP"; } >"$1" 2>&1 &&
        ninja -C "$BUILD/lwp-prof" -j"$JOBS" tools/lwp-prof/lwp-prof \
            tools/lwp-prof/lwp-prof-preload.so >>"$1" 2>&1
}
