#!/usr/bin/env bash
# Developer workflow for the series (patches/):
#
#   scripts/devel-tree.sh init     turn build/qemu-src into a git repository:
#                                  one "upstream" commit of the tarball, then
#                                  one commit per patch (git am), in place, so
#                                  the build stays incremental
#   (edit, build with scripts/build.sh, commit with git -C build/qemu-src;
#    git commit --fixup / rebase -i --autosquash to change an existing patch)
#   scripts/devel-tree.sh export   regenerate patches/ with git format-patch
#   scripts/devel-tree.sh finish   export, then drop the git repository so
#                                  scripts/prepare.sh manages the tree again
#   scripts/devel-tree.sh restep CMD...
#                                  make every patch again: each step's tree
#                                  as it is, edited by CMD (run at the top
#                                  of the tree, RESTEP_SUBJECT set to the
#                                  patch's subject), committed with the
#                                  patch's message and author; the old
#                                  series stays as the tag restep-old
#
# Nobody edits .patch files by hand.  The series adds the project's new
# files; the overlay files (the repository's copies, which the project's
# own builds use) are edited in the repository: prepare.sh (so build.sh)
# copies an edited one into the tree, where it is committed to the patch
# that introduced it.  export checks that the series ends with them.
set -euo pipefail
. "$(dirname "$0")/common.sh"

cmd=${1:-}
case "$cmd" in
init)
    if [ -d "$SRC/.git" ]; then die "$SRC is already a git repository"; fi
    # The series as it is; overlay files edited since come in below
    QEMU_LWP_OVERLAY_CHECK=warn "$TOP/scripts/prepare.sh"
    tarball=$(qemu_tarball)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    tar -xJf "$tarball" -C "$tmp" --strip-components=1
    export GIT_DIR=$SRC/.git GIT_WORK_TREE=$tmp
    git init -q
    git config user.name "${GIT_AUTHOR_NAME:-$(git -C "$TOP" config user.name || echo qemu-lwp)}"
    git config user.email "${GIT_AUTHOR_EMAIL:-$(git -C "$TOP" config user.email || echo qemu-lwp@localhost)}"
    git config core.autocrlf false
    # Local stamps are not upstream
    echo '/.qemu-lwp-*' >"$GIT_DIR/info/exclude"
    git add -A -f .
    git commit -q -m "upstream: $(basename "$tarball")"
    git tag upstream
    for p in "$TOP"/patches/*.patch; do
        [ -e "$p" ] || continue
        git am -q --keep-cr "$p" || die "git am $(basename "$p") failed"
    done
    # The prepared tree already holds exactly these contents: only the index
    # moves to it, no file in $SRC is rewritten.
    unset GIT_DIR GIT_WORK_TREE
    git -C "$SRC" config --unset core.worktree || true
    git -C "$SRC" reset -q
    dirty=$(git -C "$SRC" status --porcelain | head -n 5)
    [ -z "$dirty" ] || { echo "$dirty"; die "tree differs from the series"; }
    touch "$SRC/.qemu-lwp-devel"
    "$TOP/scripts/prepare.sh"
    log "$SRC is a git repository: $(git -C "$SRC" rev-list --count upstream..HEAD) patches on 'upstream'"
    ;;
export | finish)
    [ -d "$SRC/.git" ] || die "$SRC is not a development tree (run: $0 init)"
    [ -z "$(git -C "$SRC" status --porcelain --untracked-files=no)" ] ||
        die "uncommitted changes in $SRC: commit them first"
    if rebase_in_progress; then
        die "a rebase is in progress in $SRC"
    fi
    rm -f "$TOP"/patches/*.patch
    git -C "$SRC" format-patch -q --zero-commit --no-signature \
        -o "$TOP/patches" upstream..HEAD
    log "exported $(ls "$TOP"/patches/*.patch 2>/dev/null | wc -l) patches to patches/"
    check_overlay "$SRC" || die "commit the overlay files to the series (or copy them back)"
    if [ "$cmd" = finish ]; then
        rm -rf "$SRC/.git" "$SRC/.qemu-lwp-devel"
        "$TOP/scripts/prepare.sh"
    fi
    ;;
restep)
    # A change to what several patches hold (a file split, a rename) made
    # in every step at once: CMD edits whatever of it the step has, so each
    # step keeps building and no patch rewrites an earlier one's lines
    shift
    [ $# -gt 0 ] || die "usage: $0 restep CMD..."
    [ -d "$SRC/.git" ] || die "$SRC is not a development tree (run: $0 init)"
    [ -z "$(git -C "$SRC" status --porcelain --untracked-files=no)" ] ||
        die "uncommitted changes in $SRC: commit them first"
    ! rebase_in_progress || die "a rebase is in progress in $SRC"
    old=$(git -C "$SRC" rev-parse HEAD)
    wt=$(mktemp -d)
    git -C "$SRC" worktree add -q --detach "$wt" upstream
    for c in $(git -C "$SRC" rev-list --reverse upstream.."$old"); do
        subject=$(git -C "$SRC" log -1 --format=%s "$c")
        (cd "$wt" && git read-tree -u --reset "$c" &&
            RESTEP_SUBJECT=$subject "$@" && git add -A &&
            git commit -q --no-verify --allow-empty -C "$c") ||
            die "restep failed at: $subject (the old series is $old)"
    done
    new=$(git -C "$wt" rev-parse HEAD)
    git -C "$SRC" worktree remove --force "$wt"
    git -C "$SRC" tag -f restep-old "$old" >/dev/null
    # only the files that differ are rewritten: the build stays incremental
    git -C "$SRC" reset -q --hard "$new"
    log "made $(git -C "$SRC" rev-list --count upstream..HEAD) patches again; git diff restep-old HEAD shows the final tree's change"
    ;;
*)
    sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
