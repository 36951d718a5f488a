# Shared by tests/linux/run.sh and tests/linux/kernel.sh; sourced, not run.
# shellcheck shell=bash

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
