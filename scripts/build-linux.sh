#!/usr/bin/env bash
# Build the kernel of the linux test layer: Debian's own linux source
# package (trixie, Linux 6.12; docs/linux.md says why), the LWP series in
# linux/patches/, and the small configuration linux/lwp.config.
#
#   scripts/build-linux.sh          prints the bzImage's path on stdout
#   scripts/build-linux.sh FLAVOUR  the same kernel with linux/FLAVOUR.config
#                                   over linux/lwp.config, in
#                                   build/linux-obj-FLAVOUR: lockdep
#                                   (PREEMPT_RT with lock and preemption
#                                   debugging) or nolwp (CONFIG_X86_LWP=n)
#
# The source: `apt-get source --download-only` of linux $LINUX_PIN (the
# version the series was written against) into ~/.cache/qemu-lwp/linux/,
# falling back to any other 6.12 upload the archive still serves; only the
# orig tarball is used, as for QEMU.  Incremental: build/linux-src is
# re-patched (the old series reversed, the new one applied) only when
# linux/patches/ changed, so make rebuilds only what the changed patches
# touch; build/linux-obj is configured again only when linux/lwp.config
# changed.  ccache as for QEMU.  A build/linux-src with a .git directory is
# a development tree (scripts/linux-devel.sh) and is left as it is.
# Concurrent runs wait for each other (flock on build/linux-build.lock).
set -euo pipefail
. "$(dirname "$0")/common.sh"

LINUX_PIN=${LINUX_PIN:-6.12.107-1}
LSRC=$BUILD/linux-src
FLAVOUR=${1:-}
case $FLAVOUR in
'' | lockdep | nolwp) ;;
*) die "unknown kernel flavour '$FLAVOUR' (lockdep or nolwp)" ;;
esac
LOBJ=$BUILD/linux-obj${FLAVOUR:+-$FLAVOUR}
LCACHE=$CACHE/linux

# Print the cached linux 6.12 orig tarball, fetching it when missing.
linux_tarball() {
    local t v
    t=$(ls "$LCACHE"/linux_"${LINUX_PIN%-*}".orig.tar.xz 2>/dev/null || true)
    [ -n "$t" ] || t=$(ls "$LCACHE"/linux_6.12.*.orig.tar.xz 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -z "$t" ]; then
        mkdir -p "$LCACHE"
        for v in "$LINUX_PIN" $(apt-cache showsrc linux 2>/dev/null |
                sed -n 's/^Version: \(6\.12\..*\)/\1/p' | sort -rV); do
            log "fetching the linux $v source package into $LCACHE"
            if (cd "$LCACHE" && apt-get source -q --download-only "linux=$v" >&2); then
                break
            fi
        done
        t=$(ls "$LCACHE"/linux_6.12.*.orig.tar.xz 2>/dev/null | sort -V | tail -n 1 || true)
    fi
    [ -n "$t" ] || die "no linux 6.12 source package could be fetched (trixie deb-src)"
    echo "$t"
}

patches() { ls "$TOP"/linux/patches/*.patch 2>/dev/null | grep -v '/0000-' | LC_ALL=C sort; }

prepare_tree() {
    local tarball stamp applied p ok
    tarball=$(linux_tarball)
    stamp=$( { basename "$tarball"; patches | xargs -r cat; } | sha256sum | cut -d' ' -f1)
    [ -f "$LSRC/.qemu-lwp-stamp" ] && [ "$(cat "$LSRC/.qemu-lwp-stamp")" = "$stamp" ] && return
    applied=$LSRC/.qemu-lwp-applied
    ok=0
    if [ -d "$applied" ] && [ "$(cat "$LSRC/.qemu-lwp-tarball" 2>/dev/null)" = "$(basename "$tarball")" ]; then
        # Reverse the series that is in the tree, newest patch first
        ok=1
        for p in $(ls "$applied"/*.patch 2>/dev/null | LC_ALL=C sort -r); do
            patch -s -p1 -R -d "$LSRC" -r - <"$p" >/dev/null || { ok=0; break; }
        done
    fi
    if [ "$ok" = 0 ]; then
        log "unpacking $(basename "$tarball") into $LSRC"
        rm -rf "$LSRC"
        mkdir -p "$LSRC"
        tar -xJf "$tarball" -C "$LSRC" --strip-components=1
        basename "$tarball" >"$LSRC/.qemu-lwp-tarball"
    fi
    rm -rf "$applied"
    mkdir -p "$applied"
    for p in $(patches); do
        patch -s -p1 -N -d "$LSRC" -r - <"$p" || die "linux patch $(basename "$p") failed"
        cp "$p" "$applied/"
    done
    echo "$stamp" >"$LSRC/.qemu-lwp-stamp"
    log "prepared $LSRC ($(patches | wc -l) patches)"
}

# One build at a time: two makes in one O= directory delete each other's
# dependency files (fixdep: "error opening file ... .o.d")
mkdir -p "$BUILD"
exec 9>"$BUILD/linux-build.lock"
flock 9

[ -d "$LSRC/.git" ] || prepare_tree

export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ccache}
export CCACHE_BASEDIR=$BUILD
export KBUILD_BUILD_TIMESTAMP="2025-01-01" KBUILD_BUILD_USER=qemu-lwp KBUILD_BUILD_HOST=qemu-lwp
kmake() { make -s -C "$LSRC" O="$LOBJ" ARCH=x86_64 CC="ccache gcc" HOSTCC=gcc "$@"; }

# linux/lwp.config, and for a flavour its fragment, which replaces the
# options it names ("CONFIG_X=..." or "# CONFIG_X is not set")
mkdir -p "$LOBJ" "$BUILD/test-logs"
cfg=$LOBJ/qemu-lwp.allconfig
if [ -n "$FLAVOUR" ]; then
    frag=$TOP/linux/$FLAVOUR.config
    syms=$(sed -n 's/^\(# \)\{0,1\}\(CONFIG_[A-Z0-9_]*\)[= ].*/\2/p' "$frag" | paste -sd'|' -)
    { grep -vE "^($syms)=" "$TOP/linux/lwp.config"; cat "$frag"; } >"$cfg.new"
else
    cp "$TOP/linux/lwp.config" "$cfg.new"
fi
mv "$cfg.new" "$cfg"
cfgstamp=$(sha256sum "$cfg" | cut -d' ' -f1)
buildlog=$BUILD/test-logs/linux-build${FLAVOUR:+-$FLAVOUR}.log
if [ "$(cat "$LOBJ/.qemu-lwp-config" 2>/dev/null)" != "$cfgstamp" ] || [ ! -f "$LOBJ/.config" ]; then
    log "configuring the kernel in $LOBJ (allnoconfig + linux/lwp.config${FLAVOUR:+ + linux/$FLAVOUR.config})"
    kmake KCONFIG_ALLCONFIG="$cfg" allnoconfig >&2
    # Every option the fragments ask for must have survived Kconfig
    missing=$(grep -E '^CONFIG_' "$cfg" | while read -r l; do
        grep -qxF "$l" "$LOBJ/.config" || echo "$l"; done
        sed -n 's/^# \(CONFIG_[A-Z0-9_]*\) is not set$/\1/p' "$cfg" | while read -r o; do
        if grep -q "^$o=" "$LOBJ/.config"; then echo "$o is set"; fi; done)
    [ -z "$missing" ] || die "kernel config lacks: $missing"
    echo "$cfgstamp" >"$LOBJ/.qemu-lwp-config"
fi
log "building the kernel${FLAVOUR:+ ($FLAVOUR)} (make -j$JOBS bzImage)"
kmake -j"$JOBS" bzImage >"$buildlog" 2>&1 ||
    { grep -E -B2 -A10 'error|Error' "$buildlog" | head -n 60;
      die "kernel build failed (see $buildlog)"; }
echo "$LOBJ/arch/x86/boot/bzImage"
