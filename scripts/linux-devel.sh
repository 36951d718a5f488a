#!/usr/bin/env bash
# Developer workflow for the kernel series (linux/patches), as
# scripts/devel-tree.sh is for QEMU's:
#
#   scripts/linux-devel.sh init     build/linux-src becomes a git repository
#                                   in place: one "upstream" commit of the
#                                   orig tarball, then git am of each patch
#   (edit, scripts/build-linux.sh builds the tree as it is, commit with
#    git -C build/linux-src; rebase -i with fixups to change a patch)
#   scripts/linux-devel.sh export   git format-patch -> linux/patches/, then
#                                   checkpatch.pl on every patch
#   scripts/linux-devel.sh check    build every patch in turn (bisectable)
#   scripts/linux-devel.sh finish   export, then drop the repository so that
#                                   scripts/build-linux.sh manages the tree
#
# linux/patches/0000-cover-letter.patch is written by hand and kept.
set -euo pipefail
. "$(dirname "$0")/common.sh"
LSRC=$BUILD/linux-src
PDIR=$TOP/linux/patches

export_series() {
    local n
    [ -d "$LSRC/.git" ] || die "$LSRC is not a development tree (init first)"
    find "$PDIR" -name '[0-9][0-9][0-9][0-9]-*.patch' ! -name '0000-*' -delete
    git -C "$LSRC" format-patch -q --zero-commit --no-signature -N \
        -o "$PDIR" upstream..HEAD
    n=$(ls "$PDIR" | grep -vc '^0000-')
    log "exported $n patches to $PDIR"
    (cd "$LSRC" && ./scripts/checkpatch.pl --no-tree -q \
        $(ls "$PDIR"/*.patch | grep -v '/0000-')) || die "checkpatch.pl complains"
}

case "${1:-}" in
init)
    [ -d "$LSRC/.git" ] && die "$LSRC is already a git repository"
    "$TOP/scripts/build-linux.sh" >/dev/null
    for p in $(ls "$LSRC"/.qemu-lwp-applied/*.patch 2>/dev/null | LC_ALL=C sort -r); do
        patch -s -p1 -R -d "$LSRC" <"$p"
    done
    git -C "$LSRC" init -q
    git -C "$LSRC" config user.name "$(git -C "$TOP" config user.name || echo qemu-lwp)"
    git -C "$LSRC" config user.email "$(git -C "$TOP" config user.email || echo qemu-lwp@localhost)"
    printf '/.qemu-lwp-*\n' >"$LSRC/.git/info/exclude"
    git -C "$LSRC" add -A -f .
    git -C "$LSRC" commit -q -m "upstream: $(cat "$LSRC/.qemu-lwp-tarball")"
    git -C "$LSRC" tag upstream
    for p in $(ls "$PDIR"/*.patch | grep -v '/0000-'); do
        git -C "$LSRC" am -q "$p"
    done
    log "$LSRC is a development tree"
    ;;
export)
    export_series
    ;;
check)
    [ -d "$LSRC/.git" ] || die "$LSRC is not a development tree (init first)"
    export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ccache}
    export CCACHE_BASEDIR=$BUILD
    k="make -s O=$BUILD/linux-bisect ARCH=x86_64 CC='ccache gcc' HOSTCC=gcc"
    # build-linux.sh's lock: nobody builds the tree while it walks the series
    flock "$BUILD/linux-build.lock" git -C "$LSRC" rebase -x "$k KCONFIG_ALLCONFIG=$TOP/linux/lwp.config allnoconfig >/dev/null && $k -j$JOBS bzImage && echo \"built: \$(git log -1 --format=%s)\"" upstream
    ;;
finish)
    export_series
    rm -rf "$LSRC/.git" "$LSRC/.qemu-lwp-applied"
    mkdir -p "$LSRC/.qemu-lwp-applied"
    cp $(ls "$PDIR"/*.patch | grep -v '/0000-') "$LSRC/.qemu-lwp-applied/"
    rm -f "$LSRC/.qemu-lwp-stamp"   # build-linux.sh re-patches once
    log "$LSRC is managed by scripts/build-linux.sh again"
    ;;
*)
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
