#!/usr/bin/env bash
# The main job (README): build the patched QEMU, build an LWP-aware program
# with the host gcc, and show what it sees of LWP under qemu-x86_64 with
# the Family 15h profile and with -cpu max.
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
