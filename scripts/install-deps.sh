#!/usr/bin/env bash
# Install every build and test dependency of qemu-lwp on Debian 12 (root).
# Idempotent: when everything is present it only checks and returns.
set -euo pipefail

PKGS=(
    build-essential gcc-multilib g++ ninja-build pkg-config ccache
    # scripts/build-linux.sh: the kernel of the linux test layer
    libelf-dev bc
    python3-venv python3-setuptools flex bison bzip2 xz-utils dpkg-dev
    libglib2.0-dev libpixman-1-dev zlib1g-dev libcapstone-dev libfdt-dev
    libslirp-dev binutils googletest libgtest-dev
    seabios ipxe-qemu clang-format rsync
    # tests/fuzz: clang-14 and libFuzzer, which clang only recommends (the
    # asan layer uses GCC's libasan8 and libubsan1, which g++ brings)
    clang libclang-rt-14-dev
    # tests/linux: the initramfs (the kernel and busybox are downloaded,
    # not installed, by tests/linux/fetch.sh); tests/linux/rr.sh builds
    # rr 5.9.0 from Debian's source package with these
    cpio cmake capnproto libcapnp-dev libzstd-dev
    # bench/host-insns.sh: cachegrind
    valgrind
    # tools/lwp-prof: symbols and source lines (libdw; libelf-dev is above),
    # the speedscope check of the prof layer (xz-utils, above: its real
    # program)
    libdw-dev python3-jsonschema
)
BPO_PKGS=(meson python3-pycotap qemu-system-data)

missing() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
            grep -q 'install ok installed' || echo "$p"
    done
}

need_root() {
    if [ "$(id -u)" != 0 ]; then
        echo "install-deps: run as root to install: $*" >&2
        exit 1
    fi
}

SRC_DIR=/etc/apt/sources.list.d
changed=0
# bookworm-backports: meson >= 1.5, python3-pycotap, qemu-system-data 10.0
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list $SRC_DIR; then
    need_root "bookworm-backports source"
    cat >$SRC_DIR/qemu-lwp-backports.sources <<EOT
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOT
    changed=1
fi
# trixie deb-src: the QEMU 10.0 source package (orig tarball only)
if ! grep -rqsE '^(Types: *deb-src|deb-src .* trixie)' /etc/apt/sources.list $SRC_DIR ||
   ! grep -rqs 'trixie' /etc/apt/sources.list $SRC_DIR; then
    need_root "trixie deb-src source"
    cat >$SRC_DIR/qemu-lwp-trixie-src.sources <<EOT
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOT
    changed=1
fi

want=$(missing "${PKGS[@]}" "${BPO_PKGS[@]}")
if [ "$changed" = 1 ] || [ -n "$want" ]; then
    need_root "$want"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
fi
want=$(missing "${PKGS[@]}")
if [ -n "$want" ]; then
    apt-get install -y -q --no-install-recommends $want
fi
want=$(missing "${BPO_PKGS[@]}")
if [ -n "$want" ]; then
    apt-get install -y -q --no-install-recommends -t bookworm-backports $want
fi
# meson must be >= 1.5 (QEMU 10.0's meson.build requires it)
if ! dpkg --compare-versions "$(dpkg-query -W -f='${Version}' meson)" ge 1.5; then
    apt-get install -y -q --no-install-recommends -t bookworm-backports meson
fi
