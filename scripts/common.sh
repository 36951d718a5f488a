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
# ccache: the scripts give it paths relative to build/ (CCACHE_BASEDIR);
# without the build directory in the hash too, a clean clone's build
# (CI), a series step's and build/qemu's serve each other (only the
# debug info's compilation directory may name the other one)
export CCACHE_NOHASHDIR=1
# The overlay: the series' new files that the project keeps too (prepare.sh)
OVERLAY_DIRS=(target hw include tcg-helpers tests/qtest)
QEMU_TARGETS=x86_64-softmmu,x86_64-linux-user
# configure's arguments for every build of the patched tree (build.sh,
# series.sh): the same, so that ccache serves one from the other
QEMU_CONFIGURE_ARGS=(--python=/usr/bin/python3 --target-list="$QEMU_TARGETS"
    --enable-capstone --enable-plugins --enable-slirp
    --disable-docs --disable-install-blobs --disable-werror --enable-debug-info
    --cc="ccache gcc" --cxx="ccache g++" --host-cc=gcc)

# The overlay files, relative to $TOP
overlay_files() {
    (cd "$TOP" && for d in "${OVERLAY_DIRS[@]}"; do
        if [ -d "$d" ]; then find "$d" -type f ! -name '*.orig' ! -name '*.rej'; fi
    done | LC_ALL=C sort)
}

# The files under the overlay directories that patches/ adds, sorted
series_new_files() {
    local d
    cat "$TOP"/patches/*.patch 2>/dev/null |
        awk '/^--- \/dev\/null/ { getline; sub(/^\+\+\+ b\//, ""); print }' |
        while read -r f; do
            for d in "${OVERLAY_DIRS[@]}"; do
                case "$f" in "$d"/*) echo "$f" ;; esac
            done
        done | LC_ALL=C sort -u
}

# Check that the tree $1, the series applied, holds the overlay files as
# they are in the repository, and that the series adds no others there
check_overlay() { # TREE
    local f bad=0
    while read -r f; do
        if [ ! -e "$1/$f" ]; then
            log "$f: in the repository, not added by the series"; bad=1
        elif ! cmp -s "$TOP/$f" "$1/$f"; then
            log "$f: differs from the version the series ends with"; bad=1
        fi
    done < <(overlay_files)
    while read -r f; do
        [ -e "$TOP/$f" ] || { log "$f: added by the series, missing here"; bad=1; }
    done < <(series_new_files)
    return $bad
}

# Whether a rebase is rewriting the development tree's series
rebase_in_progress() {
    [ -d "$SRC/.git/rebase-merge" ] || [ -d "$SRC/.git/rebase-apply" ]
}

# Firmware for the build directory $1: the +ds tarball ships none
# (integration map, section 13), so Debian's is linked into its
# qemu-bundle, where QEMU looks relative to its binary
link_firmware() { # BUILD_DIR
    local fw=$1/qemu-bundle/usr/local/share/qemu f
    mkdir -p "$fw"
    for f in /usr/share/seabios/*.bin /usr/lib/ipxe/qemu/*.rom \
             /usr/share/qemu/*.bin /usr/share/qemu/*.rom; do
        [ -e "$f" ] || continue
        [ -e "$fw/$(basename "$f")" ] || ln -sfn "$f" "$fw/$(basename "$f")"
    done
}

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
