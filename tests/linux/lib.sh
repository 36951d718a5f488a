# Shared by tests/linux/run.sh, rr.sh and kernel.sh; sourced, not run.
# shellcheck shell=bash

# QEMU's arguments for its firmware: QEMU_DATADIR, when set, as -L (for a
# copy of the binary that cannot find its firmware)
# shellcheck disable=SC2034  # used by the scripts that source this file
firmware=()
if [ -n "${QEMU_DATADIR:-}" ]; then
    firmware=(-L "$QEMU_DATADIR")
fi

# boot_verdict QSTATUS TIMEOUT EVIDENCE LOG: prints why a boot failed
# (nothing when /init ran to its @@end line and QEMU exited by itself)
boot_verdict() {
    if [ "$1" -eq 124 ]; then
        echo " (timed out after $2 s)"
    elif [ "$1" -ne 0 ]; then
        echo " (qemu exit status $1)"
    elif ! grep -q '^@@end$' <<<"$3"; then
        echo " (no @@end line: the guest did not finish /init)"
    elif grep -aq 'Kernel panic' "$4"; then
        echo " (kernel panic)"
    fi
}

# our_kernel: builds our kernel (scripts/build-linux.sh: Debian's Linux
# 6.12 source with linux/patches and linux/lwp.config), prints the
# bzImage's path; our_kernel_name: that source's name
our_kernel() {
    "$TOP/scripts/build-linux.sh"
}
our_kernel_name() {
    echo "Debian's Linux $(cat "$BUILD/linux-src/.qemu-lwp-tarball" 2>/dev/null ||
        git -C "$BUILD/linux-src" log -1 --format=%s 2>/dev/null) with linux/patches"
}

# bad_kernel_lines DMESG: the lines of a `dmesg -r` that a clean boot has
# none of: a warning or worse (<N>, N mod 8 <= 4) about xstate/XSAVE, any
# line naming xstate trouble, and any WARNING, oops, BUG or panic
bad_kernel_lines() {
    awk '{
        lvl = 7
        if (match($0, /^<[0-9]+>/))
            lvl = substr($0, 2, RLENGTH - 2) % 8
        low = tolower($0)
        xs = low ~ /xstate|xsave|x86\/fpu/
        if ((xs && lvl <= 4) ||
            (xs && low ~ /warn|error|fail|mismatch|invalid|misorder|bad |unknown|problem|inconsisten|corrupt/) ||
            $0 ~ /WARNING|Call Trace|BUG:|Oops|Kernel panic|general protection|segfault/)
            print
    }' <<<"$1"
}

# perf_tree ROOT BUSYBOX PERFDIR: an initramfs tree in ROOT with busybox
# and Debian's perf from PERFDIR (tests/linux/fetch.sh perf) with the
# shared libraries it loads, recursively; ROOT/init is the caller's
perf_tree() {
    local r=$1 pdir=$3 lib todo=(usr/bin/perf) seen=" " f d
    mkdir -p "$r/bin" "$r/proc" "$r/sys" "$r/dev" "$r/tmp" \
        "$r/lib/x86_64-linux-gnu" "$r/lib64"
    cp "$2" "$r/bin/busybox"
    cp "$pdir/root/usr/bin/perf" "$r/bin/perf"
    cp "$pdir/root/lib64/ld-linux-x86-64.so.2" "$r/lib64/" 2>/dev/null ||
        cp -L "$pdir/root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$r/lib64/"
    while [ ${#todo[@]} -gt 0 ]; do
        f=${todo[0]}
        todo=("${todo[@]:1}")
        for lib in $(readelf -d "$pdir/root/$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            case $seen in *" $lib "*) continue ;; esac
            seen+="$lib "
            for d in lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu; do
                if [ -e "$pdir/root/$d/$lib" ]; then
                    cp -L "$pdir/root/$d/$lib" "$r/lib/x86_64-linux-gnu/"
                    todo+=("$d/$lib")
                    break
                fi
            done
        done
    done
}

# plugin_span EXE: "lo=A,hi=B,entry=E", the arguments with which the
# project's TCG plugins (uinsn-plugin.c, lwp-perf-plugin.c) find a static
# program: the span of EXE's LOAD segments and its entry point
plugin_span() {
    local lo='' hi='' t va ms
    while read -r t _ va _ _ ms _; do
        [ "$t" = LOAD ] || continue
        [ -n "$lo" ] && [ $((va)) -ge $((lo)) ] || lo=$((va))
        [ -n "$hi" ] && [ $((va + ms)) -le $((hi)) ] || hi=$((va + ms))
    done < <(readelf -lW "$1")
    echo "lo=$lo,hi=$hi,entry=$(readelf -h "$1" | awk '/Entry point/ { print $4 }')"
}
