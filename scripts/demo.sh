#!/usr/bin/env bash
# The main job (README): build the patched QEMU, build an LWP-aware program
# with the host gcc, and show what it sees of LWP under qemu-x86_64 with
# the Family 15h profile and with -cpu max; profile a real program (xz)
# with lwp-prof (tools/lwp-prof) and show the head of its report; then
# build Linux with the LWP series and show a program profiling itself in
# it under -cpu max,+lwp.
set -euo pipefail
. "$(dirname "$0")/common.sh"

"$TOP/scripts/build.sh"
mkdir -p "$BUILD/demo"
gcc -O2 -static -mlwp -I"$TOP/include" -o "$BUILD/demo/lwpinfo" "$TOP/tests/user/lwpinfo.c"
for cpu in Opteron_G4,+lwp max,+lwp max; do
    echo
    echo "\$ build/qemu-x86_64 -cpu $cpu build/demo/lwpinfo"
    "$BUILD/qemu-x86_64" -cpu "$cpu" "$BUILD/demo/lwpinfo"
done

# lwp-prof: LWP in every thread of an unmodified xz, drained through SIGIO
build_lwp_prof "$BUILD/demo/lwp-prof-build.log" || die "lwp-prof does not build ($BUILD/demo/lwp-prof-build.log)"
seq 1 400000 | sed 's/$/ lightweight profiling/' >"$BUILD/demo/xz-input"
echo
echo "\$ build/lwp-prof/tools/lwp-prof/lwp-prof record -e ire:100003,bre:100003 -o build/demo/xz.lwpprof -- xz -T2 --block-size=4MiB -k -c build/demo/xz-input > build/demo/xz-input.xz"
LWP_PROF_QEMU=$BUILD/qemu-x86_64 "$BUILD/lwp-prof/tools/lwp-prof/lwp-prof" record \
    -e ire:100003,bre:100003 -o "$BUILD/demo/xz.lwpprof" -- \
    xz -T2 --block-size=4MiB -k -c "$BUILD/demo/xz-input" >"$BUILD/demo/xz-input.xz"
echo "\$ build/lwp-prof/tools/lwp-prof/lwp-prof report build/demo/xz.lwpprof | head -n 60"
"$BUILD/lwp-prof/tools/lwp-prof/lwp-prof" report "$BUILD/demo/xz.lwpprof" >"$BUILD/demo/xz.report"
head -n 60 "$BUILD/demo/xz.report"
echo "... (the whole report: build/demo/xz.report; speedscope: build/demo/xz.lwpprof.speedscope.json)"

echo
echo "Linux 6.12 with linux/patches under build/qemu-system-x86_64 -cpu max,+lwp -smp 2:"
"$TOP/tests/linux/kernel.sh" --demo "$BUILD/qemu-system-x86_64" "$("$TOP/tests/linux/fetch.sh")/busybox"
