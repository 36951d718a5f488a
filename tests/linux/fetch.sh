#!/usr/bin/env bash
# Fetch Debian 12's own kernel and busybox-static for the linux test layer.
#
#   tests/linux/fetch.sh        prints the cache directory on stdout
#   tests/linux/fetch.sh perf   also Debian's perf for that kernel
#                               (linux-perf and the libraries it loads),
#                               unpacked; prints the tree (build/linux/perf)
#
# The packages are downloaded with `apt-get download` (never installed) and
# unpacked with `dpkg-deb -x` into build/linux/ (QEMU_LWP_BUILD moves build/).
# The kernel is whatever linux-image-amd64 depends on today: the versioned
# linux-image-6.1.0-NN-amd64 is read from the meta-package's own Depends, so
# nothing here names an ABI number.  Idempotent: once build/linux/packages
# exists, the script only checks the files and prints the directory, without
# touching the network.  `rm -rf build/linux` fetches the current kernel.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/common.sh
. "$(dirname "$0")/../../scripts/common.sh"

dir=$BUILD/linux
want=${1:-kernel}
case $want in
kernel | perf) ;;
*) die "usage: $0 [perf]" ;;
esac
if [ -s "$dir/packages" ] && [ -s "$dir/vmlinuz" ] && [ -x "$dir/busybox" ]; then
    if [ "$want" = kernel ]; then
        echo "$dir"
        exit 0
    fi
    if [ -s "$dir/perf/packages" ]; then
        echo "$dir/perf"
        exit 0
    fi
fi

for tool in apt-get dpkg-deb; do
    command -v "$tool" >/dev/null || die "fetch: $tool not found (Debian only)"
done
debs=$dir/debs
mkdir -p "$debs"
rm -f "$dir/packages"

refreshed=0
refresh_lists() { # once per run, when the package lists are missing or stale
    [ "$refreshed" = 0 ] && [ "$(id -u)" = 0 ] || return 1
    refreshed=1
    log "apt-get update (the package lists do not have what the test needs)"
    apt-get update -q >&2
}

# download PKG[=VERSION]: prints the .deb's path (under $debs)
download() {
    local tmpd f
    tmpd=$(mktemp -d "$debs/.download.XXXXXX")
    if ! (cd "$tmpd" && apt-get download -q "${sandbox[@]}" "$1" >&2) &&
       ! { refresh_lists && (cd "$tmpd" && apt-get download -q "${sandbox[@]}" "$1" >&2); }; then
        rm -rf "$tmpd"
        die "fetch: apt-get download $1 failed"
    fi
    for f in "$tmpd"/*.deb; do
        [ -f "$f" ] || die "fetch: apt-get download $1 left no .deb"
        mv -f "$f" "$debs/"
        echo "$debs/${f##*/}"
    done
    rm -rf "$tmpd"
}
# As root apt would hand the download to user _apt, who cannot write here
sandbox=()
if [ "$(id -u)" = 0 ]; then
    sandbox=(-o APT::Sandbox::User=root)
fi

apt-cache show linux-image-amd64 >/dev/null 2>&1 || refresh_lists || true

log "fetching linux-image-amd64 into $debs"
meta=$(download linux-image-amd64)
# Depends: linux-image-6.1.0-NN-amd64 (= VERSION); take the first
# linux-image-<version>-amd64 alternative, with its exact version if given
read -r kpkg kver < <(dpkg-deb -f "$meta" Depends | tr ',|' '\n' | awk '
    { sub(/^ +/, "") }
    $1 ~ /^linux-image-[0-9].*-amd64(-unsigned)?$/ {
        v = ""
        if ($2 == "(=") { v = $3; sub(/\)$/, "", v) }
        print $1, v
        exit
    }') || true
[ -n "${kpkg:-}" ] || die "fetch: no versioned kernel in $(basename "$meta")'s Depends"
log "linux-image-amd64 depends on $kpkg ${kver:+(= $kver)}"
kdeb=$(download "$kpkg${kver:+=$kver}")

log "fetching busybox-static"
bdeb=$(download busybox-static)

# Unpack into a scratch tree, keep the kernel image and busybox only
tmp=$dir/unpack
rm -rf "$tmp"
mkdir -p "$tmp/kernel" "$tmp/busybox"
dpkg-deb -x "$kdeb" "$tmp/kernel"
dpkg-deb -x "$bdeb" "$tmp/busybox"
vmlinuz=("$tmp"/kernel/boot/vmlinuz-*)
[ -f "${vmlinuz[0]}" ] || die "fetch: $(basename "$kdeb") has no boot/vmlinuz-*"
[ -x "$tmp/busybox/bin/busybox" ] || die "fetch: $(basename "$bdeb") has no bin/busybox"
cp "${vmlinuz[0]}" "$dir/vmlinuz"
cp "$tmp/kernel/boot/config-"* "$dir/config" 2>/dev/null || true
cp "$tmp/busybox/bin/busybox" "$dir/busybox"
rm -rf "$tmp"

# The stamp, written last: what the cache holds
for f in "$meta" "$kdeb" "$bdeb"; do
    dpkg-deb -f "$f" Package Version | paste -sd' ' | sed 's/Package: //; s/ Version: / /'
done >"$dir/packages.new"
mv "$dir/packages.new" "$dir/packages"
log "cached in $dir: $(paste -sd, "$dir/packages")"
if [ "$want" = kernel ]; then
    echo "$dir"
    exit 0
fi

# perf: linux-perf of the kernel's version, and the packages of the shared
# libraries it loads (the lib* and zlib packages of apt-cache's dependency
# closure; perl and python themselves are not needed to count), unpacked
# together into one tree.
kver=$(awk '$1 ~ /^linux-image-[0-9]/ { print $2; exit }' "$dir/packages")
[ -n "$kver" ] || die "fetch: no kernel version in $dir/packages"
pdir=$dir/perf
rm -rf "$pdir"
mkdir -p "$pdir/debs" "$pdir/root"
debs=$pdir/debs
log "fetching linux-perf=$kver and its libraries"
libs=$(apt-cache depends --recurse --no-recommends --no-suggests \
           --no-conflicts --no-breaks --no-replaces --no-enhances linux-perf |
       grep -E '^(lib|zlib)' | sort -u)
for p in "linux-perf=$kver" $libs; do
    dpkg-deb -x "$(download "$p")" "$pdir/root"
done
[ -x "$pdir/root/usr/bin/perf" ] || die "fetch: linux-perf has no usr/bin/perf"
for f in "$debs"/*.deb; do
    dpkg-deb -f "$f" Package Version | paste -sd' ' | sed 's/Package: //; s/ Version: / /'
done >"$pdir/packages.new"
mv "$pdir/packages.new" "$pdir/packages"
log "perf cached in $pdir: $(wc -l <"$pdir/packages") packages"
echo "$pdir"
