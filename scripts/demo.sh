#!/usr/bin/env bash
# The main job (README): build the patched QEMU, build an LWP-aware program
# with the host gcc, and show what it sees of LWP under qemu-x86_64 with
# the Family 15h profile and with -cpu max; then build Linux with the LWP
# series and show a program profiling itself in it under -cpu max,+lwp.
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

echo
echo "Linux 6.12 with linux/patches under build/qemu-system-x86_64 -cpu max,+lwp -smp 2:"
"$TOP/tests/linux/kernel.sh" --demo "$BUILD/qemu-system-x86_64" "$("$TOP/tests/linux/fetch.sh")/busybox"
