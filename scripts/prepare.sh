#!/usr/bin/env bash
# Prepare the patched QEMU tree in build/qemu-src: unpack the cached Debian
# orig tarball, apply patches/*.patch in order, and link the project's new
# files (target/ hw/ include/ tcg-helpers/ tests/qtest/) into it.
#
# Incremental: the tree is rebuilt only when the tarball, a patch or the
# overlay file list changed, and then synchronised file by file (rsync -c)
# so that unchanged files keep their timestamps and ninja rebuilds little.
# A tree turned into a git repository by scripts/devel-tree.sh is left alone.
set -euo pipefail
. "$(dirname "$0")/common.sh"

tarball=$(qemu_tarball)
overlay_files() {
    (cd "$TOP" && for d in "${OVERLAY_DIRS[@]}"; do
        if [ -d "$d" ]; then find "$d" -type f ! -name '*.orig' ! -name '*.rej'; fi
    done | LC_ALL=C sort)
}
stamp=$( { basename "$tarball"; cat "$TOP"/patches/*.patch 2>/dev/null;
           overlay_files; } | sha256sum | cut -d' ' -f1)

# Link the overlay files into tree $1 (new files only; never over upstream)
link_overlay() {
    overlay_files | while read -r f; do
        if [ -e "$1/$f" ] && [ ! -L "$1/$f" ]; then
            die "overlay file $f would replace an upstream file: use a patch"
        fi
        mkdir -p "$1/$(dirname "$f")"
        ln -sfn "$TOP/$f" "$1/$f"
    done
}

if [ -d "$SRC/.git" ] && [ -f "$SRC/.qemu-lwp-devel" ]; then
    # A development tree: its files are the developer's; only keep the
    # overlay links current (drop dangling ones, add new ones).
    find "$SRC" -path "$SRC/.git" -prune -o -type l -lname "$TOP/*" ! -exec test -e {} \; -print0 |
        xargs -0r rm -f
    link_overlay "$SRC"
    { echo '/.qemu-lwp-*'; overlay_files | sed 's|^|/|'; } >"$SRC/.git/info/exclude"
    git -C "$SRC" ls-files --others --exclude-standard -z | grep -qz . && {
        git -C "$SRC" status --short | head -n 10
        log "warning: untracked files in the development tree (new overlay files"
        log "belong in the project, new upstream files in a patch)"
    }
    exit 0
fi
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
link_overlay "$stage"
echo "$stamp" >"$stage/.qemu-lwp-stamp"
mkdir -p "$SRC"
rsync -rlpc --delete "$stage/" "$SRC/"
rm -rf "$stage"
log "prepared $SRC"
