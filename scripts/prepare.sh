#!/usr/bin/env bash
# Prepare the patched QEMU tree in build/qemu-src: unpack the cached Debian
# orig tarball and apply patches/*.patch, the series, in order.  The series
# adds the new files too; those under the overlay directories (target/ hw/
# include/ tcg-helpers/ tests/qtest/) are also kept in this repository, where
# the project's own builds use them, and must be the files the series ends
# with: the script fails when one differs.
#
# Incremental: the tree is rebuilt only when the tarball, a patch or an
# overlay file changed, and then synchronised file by file (rsync -c) so
# that unchanged files keep their timestamps and ninja rebuilds little.
# A tree turned into a git repository by scripts/devel-tree.sh is the
# developer's: this script only copies into it the overlay files edited in
# the repository since (see docs/developing.md).
set -euo pipefail
. "$(dirname "$0")/common.sh"

tarball=$(qemu_tarball)

if [ -d "$SRC/.git" ] && [ -f "$SRC/.qemu-lwp-devel" ]; then
    # Not while a rebase rewrites earlier steps of the series
    if rebase_in_progress; then
        exit 0
    fi
    overlay_files | while read -r f; do
        if cmp -s "$TOP/$f" "$SRC/$f"; then continue; fi
        if [ -e "$SRC/$f" ] && ! git -C "$SRC" diff --quiet HEAD -- "$f" 2>/dev/null; then
            die "$f is edited both here and in $SRC: keep one (the project's is copied)"
        fi
        mkdir -p "$SRC/$(dirname "$f")"
        cp "$TOP/$f" "$SRC/$f"
        log "copied $f into the development tree"
    done
    new=$(git -C "$SRC" diff --name-only --diff-filter=A upstream HEAD -- "${OVERLAY_DIRS[@]}")
    for f in $new; do
        [ -e "$TOP/$f" ] || log "warning: the series adds $f, which the project lacks"
    done
    exit 0
fi

stamp=$( { basename "$tarball"; cat "$TOP"/patches/*.patch 2>/dev/null;
           overlay_files | (cd "$TOP" && xargs -r sha256sum); } |
         sha256sum | cut -d' ' -f1)
if [ -f "$SRC/.qemu-lwp-stamp" ] && [ "$(cat "$SRC/.qemu-lwp-stamp")" = "$stamp" ]; then
    exit 0
fi

log "preparing $SRC from $(basename "$tarball")"
stage=$BUILD/qemu-src.stage
rm -rf "$stage"
mkdir -p "$stage"
tar -xJf "$tarball" -C "$stage" --strip-components=1
for p in "$TOP"/patches/*.patch; do
    [ -e "$p" ] || continue
    patch -s -p1 -d "$stage" -N -r - <"$p" || die "patch $(basename "$p") failed"
done
if ! check_overlay "$stage"; then
    msg="the series and the repository's files differ (docs/developing.md)"
    if [ "${QEMU_LWP_OVERLAY_CHECK:-}" = warn ]; then log "warning: $msg"; else die "$msg"; fi
fi
echo "$stamp" >"$stage/.qemu-lwp-stamp"
mkdir -p "$SRC"
rsync -rlpc --delete "$stage/" "$SRC/"
rm -rf "$stage"
log "prepared $SRC"
