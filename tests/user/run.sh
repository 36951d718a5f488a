#!/usr/bin/env bash
# User-mode guest tests: programs built by the host gcc (-mlwp, static) run
# under the patched qemu-x86_64; pass/fail by exit status and output.
# Usage: tests/user/run.sh QEMU_X86_64.  Last line: "user: N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
qemu=${1:?usage: run.sh QEMU_X86_64}
out=${BUILD_DIR:-$top/build}/tests-user
mkdir -p "$out"
pass=0 fail=0

ok() { pass=$((pass + 1)); echo "PASS: $*"; }
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }

CFLAGS=(-O2 -g -Wall -Wextra -Werror -static -mlwp -I"$top/include")
if ! gcc "${CFLAGS[@]}" -o "$out/lwpinfo" "$here/lwpinfo.c"; then
    ko "lwpinfo builds"
    echo "user: $pass passed, $fail failed"
    exit 1
fi

# expect NAME CPU LINE...: every LINE must appear in the output of lwpinfo
expect() {
    local name=$1 cpu=$2 line o
    shift 2
    if ! o=$("$qemu" -cpu "$cpu" "$out/lwpinfo" 2>&1); then
        ko "$name: lwpinfo exits 0 under -cpu $cpu"
        printf '%s\n' "$o" | sed 's/^/    /'
        return
    fi
    for line in "$@"; do
        if printf '%s\n' "$o" | grep -qxF -- "$line"; then
            ok "$name: '$line'"
        else
            ko "$name: expected '$line' under -cpu $cpu, got:"
            printf '%s\n' "$o" | sed 's/^/    /'
        fi
    done
}

# Family 15h values (notes/prior-art.md); in user mode the "OS" has set
# XCR0[62] and made every supported feature available (LWP_CFG = EDX), so
# EAX = EDX (spec 3.3: EAX bit 0 = XCR0[62], bits 31:1 = LWP_CFG).
for cpu in Opteron_G4 Opteron_G5; do
    expect "$cpu" "$cpu,+lwp" \
        "LWP supported (CPUID 8000_0001 ECX[15]): 1" \
        "CPUID 8000_001C: EAX=8000000f EBX=80032013 ECX=00010200 EDX=8000000f" \
        "available: avail val ire bre int" \
        "LWPCB size: 152 bytes, event record: 32 bytes, max EventId: 3, event area at +0x80" \
        "version 1, minimum ring buffer 32 records"
done
# XCR0 bit 62 set at start, next to x87/SSE/AVX (Opteron_G4 has no PKRU)
expect "Opteron_G4 XCR0" "Opteron_G4,+lwp" "XCR0: 4000000000000007"
# -cpu max,+lwp: LwpAvail, VAL, IRE, BRE, DME, CNH, RNH and Int, IP
# filtering and the DCache miss capabilities (docs/implementation-choices.md):
# EventIds up to 6, so LwpCbSize 0x16 and LwpMaxEvents 6 (spec 3.3); ECX
# LwpCacheLatency, LwpCacheLevels, LwpIpFiltering (bits 31-29),
# LwpDataAddress (5), LwpLatencyMax 16
expect "max,+lwp" "max,+lwp" \
    "LWP supported (CPUID 8000_0001 ECX[15]): 1" \
    "CPUID 8000_001C: EAX=8000007f EBX=80062016 ECX=e0010230 EDX=8000007f" \
    "available: avail val ire bre dme cnh rnh int" \
    "LWPCB size: 176 bytes, event record: 32 bytes, max EventId: 6, event area at +0x80"
# LwpLatencyRnd (ECX 8:6) and LwpLatencyMax (4:0) are CPU properties
expect "max,+lwp latency fields" \
    "max,+lwp,lwp-latency-rnd=4,lwp-latency-max=10" \
    "CPUID 8000_001C: EAX=8000007f EBX=80062016 ECX=e001032a EDX=8000007f"
# LWP is opt-in
expect "max" "max" "LWP supported (CPUID 8000_0001 ECX[15]): 0"
expect "Opteron_G4 without lwp" "Opteron_G4" \
    "LWP supported (CPUID 8000_0001 ECX[15]): 0"

# ---- LWP instruction programs -------------------------------------------
# Each prints PASS:/FAIL:/SKIP: lines and ends with "NAME: N passed, N
# failed"; its PASS/FAIL lines are added to the totals here.  A program
# that dies before its summary line (a crash, SIGILL outside a guarded
# region) counts as one more failure.
PCFLAGS=(-O1 -g -Wall -Wextra -Werror -static -mlwp -pthread -I"$top/include")
progs=(xop-encoding lwp-insns lwp-faults lwp-threads lwp-ire lwp-int lwp-exits
       lwp-sigabi lwp-flush lwp-dme lwp-trace lwp-profiles)
built=()
for p in "${progs[@]}"; do
    if gcc "${PCFLAGS[@]}" -o "$out/$p" "$here/$p.c"; then
        built+=("$p")
    else
        ko "$p builds"
    fi
done
has() { local x; for x in "${built[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }

# run_prog NAME LABEL COMMAND...: run, show the output, add up its checks
run_prog() {
    local name=$1 label=$2 o rc np nf
    shift 2
    o=$("$@" 2>&1)
    rc=$?
    o=$(printf '%s\n' "$o" | grep -v "warning: TCG doesn't support requested feature")
    printf '%s\n' "$o" | sed "s/^/[$label] /"
    np=$(printf '%s\n' "$o" | grep -c '^PASS:')
    nf=$(printf '%s\n' "$o" | grep -c '^FAIL:')
    pass=$((pass + np))
    fail=$((fail + nf))
    if ! printf '%s\n' "$o" | grep -q "^$name.*: [0-9]* passed, [0-9]* failed"; then
        ko "$label: $name ran to its summary line (exit status $rc)"
    elif [ "$rc" != 0 ] && [ "$nf" = 0 ]; then
        ko "$label: $name exits 0 when no check failed (exit status $rc)"
    fi
}

# XOP encodings: with LWP (spec table), without LWP (all #UD); and the
# host's objdump on the same bytes (nothing executed, no emulator)
if has xop-encoding; then
    run_prog xop-encoding "xop-encoding max,+lwp" \
        "$qemu" -cpu max,+lwp "$out/xop-encoding"
    run_prog xop-encoding "xop-encoding max" \
        "$qemu" -cpu max "$out/xop-encoding"
    if command -v objdump >/dev/null; then
        run_prog xop-encoding "xop-encoding objdump" \
            "$out/xop-encoding" --objdump
    else
        echo "SKIP: objdump not installed: encoding cross-check not run"
    fi
fi
# VAL is available in max,+lwp and in the Family 15h profile; with
# -lwp-val it is not, and LWPVAL must do nothing
for cpu in max,+lwp Opteron_G4,+lwp max,+lwp,-lwp-val; do
    has lwp-insns && run_prog lwp-insns "lwp-insns $cpu" \
        "$qemu" -cpu "$cpu" "$out/lwp-insns"
done
# -d in_asm names the LWP instructions as objdump does (capstone alone
# does not know them)
has lwp-insns && run_prog in-asm-check "in-asm-check max,+lwp" \
    python3 "$here/in-asm-check.py" "$qemu" max,+lwp "$out/lwp-insns"
for cpu in max,+lwp max,+lwp,-lwp-val; do
    has lwp-faults && run_prog lwp-faults "lwp-faults $cpu" \
        "$qemu" -cpu "$cpu" "$out/lwp-faults"
done
# Instructions Retired records against a model from objdump
for cpu in max,+lwp Opteron_G4,+lwp; do
    has lwp-ire && run_prog ire-check "ire-check $cpu" \
        python3 "$here/ire-check.py" "$qemu" "$cpu" "$out/lwp-ire"
done
# The threshold interrupt as SIGIO (choice 42); without LwpInt in
# LWP_CFG there is none
for cpu in max,+lwp max,+lwp,-lwp-int; do
    has lwp-int && run_prog lwp-int "lwp-int $cpu" \
        "$qemu" -cpu "$cpu" "$out/lwp-int"
done
# LWP across signals, fork, threads and execve, as Linux gives user
# xstate (choice 43); progress with INT and an undrained ring (choice 42).
# Under timeout, so that a livelock is a failure; the exec'd image runs
# on the host unless it is sent to the emulator.
for cpu in max,+lwp Opteron_G4,+lwp max,+lwp,-lwp-int; do
    has lwp-sigabi && run_prog lwp-sigabi "lwp-sigabi $cpu" \
        env LWP_SIGABI_EXEC_VIA="$qemu -cpu $cpu" \
        timeout 120 "$qemu" -cpu "$cpu" "$out/lwp-sigabi"
done
# Instructions and Branches Retired records, every branch kind, filters,
# intervals down to the minimum, a signal handler, LWPVAL/LWPINS: checked
# against the host CPU, which native-trace single-steps through the same
# static binary (events-check.py).  LWP_EVENTS_TESTS=0 leaves it out
# (it single-steps about a million instructions natively: ~30 s).
if [ "${LWP_EVENTS_TESTS:-1}" = 1 ]; then
    if ! gcc "${PCFLAGS[@]}" -no-pie -o "$out/lwp-events" \
            "$here/lwp-events.c"; then
        ko "lwp-events builds"
    elif ! g++ -std=c++17 -O2 -Wall -Wextra -Werror \
            -o "$out/native-trace" "$here/native-trace.cc"; then
        ko "native-trace builds"
    else
        run_prog events-check "events-check" \
            python3 "$here/events-check.py" "$qemu" "$out/lwp-events" \
            "$out/native-trace" 'max,+lwp@val,ire,bre,cnh,rnh,ipf' \
            'Opteron_G4,+lwp@val,ire,bre'
    fi
fi
has lwp-threads && run_prog lwp-threads "lwp-threads max,+lwp" \
    "$qemu" -cpu max,+lwp "$out/lwp-threads"
# ten LWP profiles at once, more than the TB key has ids for (choice 56)
has lwp-profiles && run_prog lwp-profiles "lwp-profiles max,+lwp" \
    "$qemu" -cpu max,+lwp "$out/lwp-profiles"

# the counters that SLWPCB, XSAVE, XSAVEOPT and LLWPCB store in the middle
# of straight-line code are those after the instructions before them
# (choice 53), against a model of the code's table
for cpu in max,+lwp Opteron_G4,+lwp; do
    has lwp-flush && run_prog lwp-flush "lwp-flush $cpu" \
        "$qemu" -cpu "$cpu" "$out/lwp-flush"
done

# DCache Miss records of pointer chases against the documented cache model
# (tests/engine/cache_model_ref.py) fed the loads that upstream's execlog
# plugin saw in the same run; the chases' own checks of each level's SRC
# and latency (docs/cache-model.md defaults); determinism
execlog=${EXECLOG_PLUGIN:-$(dirname "$(readlink -f "$qemu")")/contrib/plugins/libexeclog.so}
if ! has lwp-dme; then
    :
elif [ -f "$execlog" ]; then
    run_prog dme "dme-check max,+lwp" \
        python3 "$here/dme-check.py" "$qemu" "$execlog" "$out/lwp-dme"
    # the clock events with cost-model=detailed (choice 70), the same way
    run_prog dme-clocks "dme-check --clocks max,+lwp,cost-model=detailed" \
        python3 "$here/dme-check.py" --clocks "$qemu" "$execlog" \
        "$out/lwp-dme"
    # latencies rounded to 16 cycles (spec 2.4.1)
    run_prog lwp-dme "lwp-dme max,+lwp,lwp-latency-rnd=4" \
        "$qemu" -cpu max,+lwp,lwp-latency-rnd=4,lwp-latency-max=10 \
        "$out/lwp-dme"
else
    ko "dme-check: the execlog plugin is built ($execlog)"
fi
# the cache geometry is checked when the CPU is created
if o=$("$qemu" -cpu max,+lwp,lwp-l1-size=1000 "$out/lwpinfo" 2>&1); then
    ko "lwp-l1-size=1000 (not sets * ways * line) is refused"
elif printf '%s\n' "$o" | grep -q "invalid cache geometry"; then
    ok "lwp-l1-size=1000 (not sets * ways * line) is refused"
else
    ko "lwp-l1-size=1000 is refused with a message, got: $o"
fi

# the LWP trace events (target/i386/tcg/trace-events) against what the
# program saw of its LWPCB, ring and signals
has lwp-trace && run_prog trace-check "trace-check max,+lwp" \
    python3 "$here/trace-check.py" "$qemu" max,+lwp "$out/lwp-trace"

# a signal reaches a thread spinning in counted code; a lost exit shows
# as late signals.  No TB's code, counting or not, writes the
# exit-request word.
has lwp-exits && run_prog lwp-exits "lwp-exits max,+lwp" \
    "$qemu" -cpu max,+lwp "$out/lwp-exits"
has lwp-exits && run_prog exitreq "exitreq-check max,+lwp" \
    python3 "$here/exitreq-check.py" 0 "$qemu" -cpu max,+lwp "$out/lwp-exits"

# The linux layer's lwp-linux (tests/linux/lwp-linux.c, built as
# tests/linux/kernel.sh builds it): qemu-x86_64 gives programs the ABI of
# our kernel series.  Not run here: coreid compares each record's CoreId
# with the host CPU a thread is pinned to, and under qemu-x86_64 it is
# LWP_CFG[39:32], 0 for every thread (choice 33); ptrace needs
# PTRACE_GETREGSET of an emulated child, which qemu-x86_64 does not
# emulate.  nolwp's exec would run the static binary on the host,
# without LWP: LWP_LINUX_NO_EXEC makes it a reported skip (choice 52).
if gcc -static -O2 -g -Wall -Wextra -Werror -mlwp -pthread -I"$top/include" \
        -o "$out/lwp-linux" "$top/tests/linux/lwp-linux.c"; then
    for c in selfprof two badcb nolwp; do
        run_prog "$c" "lwp-linux $c max,+lwp" \
            env LWP_LINUX_NO_EXEC=1 \
            timeout 120 "$qemu" -cpu max,+lwp "$out/lwp-linux" "$c"
    done
else
    ko "lwp-linux builds"
fi

echo "user: $pass passed, $fail failed"
[ "$fail" = 0 ]
