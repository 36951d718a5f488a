#!/usr/bin/env bash
# Boot Debian 12's own kernel with a busybox-static initramfs under
# qemu-system-x86_64 (TCG) with LWP, once per CPU model, and check what the
# guest Linux sees (issue 6, "Booting Linux").  tests/linux/README.md says
# where every expected value comes from.
#
#   tests/linux/run.sh QEMU_SYSTEM_BINARY
#
# The kernel and busybox come from tests/linux/fetch.sh (apt-get download
# into build/linux/, cached).  Prints one PASS:/FAIL: line per check and
# ends with "linux: N passed, N failed"; exits 0 only when all passed.
# QEMU_DATADIR, when set, is passed as -L (for a copy of the binary that
# cannot find its firmware); LINUX_BOOT_TIMEOUT (seconds, default 120)
# bounds each boot.
#
# SPDX-License-Identifier: GPL-2.0-or-later
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 QEMU_SYSTEM_BINARY" >&2
    exit 2
fi
qemu=$1
src=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/../../scripts/common.sh
. "$src/../../scripts/common.sh"
# shellcheck source=SCRIPTDIR/lib.sh
. "$src/lib.sh"
boot_timeout=${LINUX_BOOT_TIMEOUT:-120}

# config  -cpu model
configs=(
    "g4 Opteron_G4,+lwp"
    "max max,+lwp"
)

# Expected values, "EAX EBX ECX EDX" in hex; "-" is a register not checked.
# Derivation: tests/linux/README.md.  Nothing here comes from a QEMU run.
declare -A want=(
    # CPUID 8000_001C: EAX is 0 while XCR0[62] = 0 (choice 1); EBX, ECX
    # and EDX are read below from the profile table of the docs
    # CPUID 0xD.0: EAX:EDX the supported XCR0 bits (EDX[30] = LWP, spec
    # 3.1), EBX the standard-format size of the XCR0 Linux enabled (LWP not
    # in it), ECX the size for every supported component (LWP's ends at 960)
    [g4:d.0]="00000007 00000340 000003c0 40000000"
    [max:d.0]="0000021f 00000a88 00000a88 40000000"
    # CPUID 0xD.1: the XSAVE extensions of the profile; no supervisor
    # (IA32_XSS) component, LWP included.  EBX, the compacted size, is not
    # architectural without XSAVEC or XSAVES, which neither profile has
    [g4:d.1]="00000000 - 00000000 00000000"
    [max:d.1]="00000005 - 00000000 00000000"
    # CPUID 0xD.62: 128 bytes at offset 832 (spec 3.2, 7.1), a user
    # component (ECX[0] = 0) that is not aligned in the compacted format
    [g4:d.62]="00000080 00000340 00000000 00000000"
    [max:d.62]="00000080 00000340 00000000 00000000"
    # XCR0 as Linux 6.1 sets it: every supported user component it knows
    # (x87, SSE, AVX, MPX, PKRU), never bit 62
    [g4:xcr0]="0000000000000007"
    [max:xcr0]="000000000000021f"
)

# CPUID 8000_001C EBX, ECX, EDX: the row of the "CPU profiles" table of
# docs/implementation-choices.md whose first cell names the model, as
# "| `MODEL,+lwp`... | `EDX` (...) | `EBX` | `ECX` ... |".  The table is the
# project's statement of each profile (tests/qtest/lwp-cpuid-test.c checks
# the same numbers); it changes when max,+lwp advertises more.
doc_leaf() { # NAME MODEL
    local row
    local -a hex
    row=$(grep -m 1 -F "| \`$2,+lwp\`" "$TOP/docs/implementation-choices.md" || true)
    mapfile -t hex < <(grep -oE "\`[0-9A-Fa-f]{8}\`" <<<"$row" | tr -d '`' | tr 'A-F' 'a-f')
    if [ ${#hex[@]} -eq 3 ]; then
        want[$1:8000001c.0]="00000000 ${hex[1]} ${hex[2]} ${hex[0]}"
    else
        want[$1:8000001c.0]="unreadable(docs/implementation-choices.md)"
    fi
}
doc_leaf g4 Opteron_G4
doc_leaf max max

passed=0
failed=0
check() { # STATUS TEXT...: STATUS 0 is a pass
    local ok=$1
    shift
    if [ "$ok" = 0 ]; then
        echo "PASS: $*"
        passed=$((passed + 1))
    else
        echo "FAIL: $*"
        failed=$((failed + 1))
    fi
}
finish() {
    echo "linux: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
    exit
}

# 1. The kernel and busybox (cached), the cpuid program, the initramfs
if ! dir=$("$src/fetch.sh"); then
    check 1 "fetch Debian's linux-image-amd64 and busybox-static (tests/linux/fetch.sh)"
    finish
fi
echo "kernel: $(sed -n 2p "$dir/packages"), busybox: $(sed -n 3p "$dir/packages" | cut -d' ' -f2)"
if ! command -v cpio >/dev/null; then
    check 1 "cpio not found: run scripts/install-deps.sh"
    finish
fi
if ! gcc -static -O2 -Wall -o "$dir/lwp-cpuid" "$src/lwp-cpuid.c"; then
    check 1 "build tests/linux/lwp-cpuid.c (gcc -static)"
    finish
fi
root=$dir/initramfs
rm -rf "$root"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev"
cp "$dir/busybox" "$root/bin/busybox"
cp "$dir/lwp-cpuid" "$root/bin/lwp-cpuid"
cp "$src/init" "$root/init"
chmod 755 "$root/init"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
    gzip -9 >"$dir/initramfs.gz"

# compare NAME KEY GOT...: GOT against want[NAME:KEY], "-" not compared
regs=(EAX EBX ECX EDX)
compare() {
    local name=$1 key=$2 i bad=""
    shift 2
    local -a exp got=("$@")
    read -r -a exp <<<"${want[$name:$key]}"
    if [ ${#exp[@]} -ne 4 ]; then
        echo "no expected value"
        return 1
    elif [ ${#got[@]} -ne 4 ]; then
        echo "the guest printed no line for it"
        return 1
    fi
    for ((i = 0; i < ${#exp[@]}; i++)); do
        if [ "${exp[i]}" != - ] && [ "${exp[i]}" != "${got[i]}" ]; then
            bad+=", ${regs[i]} ${got[i]} != ${exp[i]}"
        fi
    done
    [ -z "$bad" ] && return 0
    echo "${bad#, }"
    return 1
}
# result COMMAND...: prints 0 when it succeeds, 1 when it fails
result() { if "$@"; then echo 0; else echo 1; fi; }

# boot CPU LOG: Debian's kernel and the initramfs under -cpu CPU, the
# serial console in LOG; sets qstatus to QEMU's exit status
boot() {
    rm -f "$2"
    qstatus=0
    timeout "$boot_timeout" "$qemu" "${firmware[@]}" -M pc -accel tcg \
        -cpu "$1" -m 512M -smp 1 -no-reboot \
        -display none -vga none -nic none -monitor none \
        -serial "file:$2" \
        -kernel "$dir/vmlinuz" -initrd "$dir/initramfs.gz" \
        -append "console=ttyS0 quiet panic=-1" </dev/null || qstatus=$?
    [ -f "$2" ] || : >"$2"
}

# 2. One boot per CPU model
for c in "${configs[@]}"; do
    read -r name cpu <<<"$c"
    echo "=== linux -cpu $cpu"
    log=$BUILD/test-logs/linux-$name.serial
    mkdir -p "$(dirname "$log")"
    start=$(date +%s)
    boot "$cpu" "$log"
    secs=$(($(date +%s) - start))
    # The guest's evidence: lines that start with @@ (kernel console
    # messages may precede one on the same line); drop the serial CRs
    ev=$(tr -d '\r' <"$log" | grep -ao '@@.*' || true)
    echo "boot took ${secs} s (qemu exit status $qstatus; serial log $log)"

    # boot: /init ran to its end and the machine powered off in time
    why=$(boot_verdict "$qstatus" "$boot_timeout" "$ev" "$log")
    check "$(result test -z "$why")" \
        "$cpu: boots to the initramfs shell and powers off, ${secs} s$why"

    # /proc/cpuinfo: lwp among the flags
    flags=$(sed -n 's/^@@cpuinfo flags[[:space:]]*:[[:space:]]*//p' <<<"$ev")
    check "$(result grep -qw lwp <<<"$flags")" "$cpu: lwp in the flags of /proc/cpuinfo"
    echo "    flags: ${flags:-(the guest printed no flags line)}"

    # dmesg: no XSAVE/xstate warning, no WARNING or Call Trace at all
    dmesg=$(sed -n 's/^@@dmesg //p' <<<"$ev")
    if [ -z "$dmesg" ]; then
        check 1 "$cpu: kernel log has no xstate/XSAVE warning (no kernel log printed)"
    else
        bad=$(bad_kernel_lines "$dmesg")
        if [ -z "$bad" ]; then
            check 0 "$cpu: kernel log has no xstate/XSAVE warning, WARNING or Call Trace" \
                "($(wc -l <<<"$dmesg") lines)"
        else
            check 1 "$cpu: kernel log has no xstate/XSAVE warning, WARNING or Call Trace"
            mapfile -t lines <<<"$bad"
            printf '    %s\n' "${lines[@]:0:40}"
        fi
        grep -ai 'x86/fpu' <<<"$dmesg" | sed 's/^/    /' || true
    fi

    # The kernel's own summary of XSAVE agrees with the expected XCR0 and
    # 0xD.0 EBX: "x86/fpu: Enabled xstate features 0x..., context size is
    # N bytes, using 'standard' format."
    read -r -a d0 <<<"${want[$name:d.0]}"
    line="Enabled xstate features $(printf '0x%x' $((16#${want[$name:xcr0]}))), context size is $((16#${d0[1]})) bytes, using 'standard' format."
    check "$(result grep -qF "x86/fpu: $line" <<<"$dmesg")" "$cpu: kernel log says \"$line\""

    # The guest's cpuid program
    for key in 8000001c.0 d.0 d.1 d.62; do
        leaf=${key%.*} sub=${key#*.}
        read -r -a vals < <(awk -v l="$(printf '%08x' $((16#$leaf)))" -v s="$sub" \
            '$1 == "@@cpuid" && $2 == l && $3 == s { print $4, $5, $6, $7 }' <<<"$ev") ||
            vals=()
        rc=0
        msg=$(compare "$name" "$key" "${vals[@]}") || rc=$?
        check $rc "$cpu: guest cpuid $leaf.$sub = ${vals[*]:-nothing}" \
            "(want ${want[$name:$key]})${msg:+: $msg}"
    done
    xcr0=$(sed -n 's/^@@xcr0 //p' <<<"$ev")
    check "$(result test "$xcr0" = "${want[$name:xcr0]}")" \
        "$cpu: guest XCR0 = ${xcr0:-nothing} (want ${want[$name:xcr0]}, bit 62 clear)"
done

# 2b. The architectural PMU (-cpu Nehalem,pmu=on, tests/system/pmu.c for
# the registers): Debian's unmodified kernel finds it.  The expected lines
# are what its perf driver prints for CPUID 0AH of a Nehalem (version 3,
# four 48-bit counters, three fixed: event mask 0xf | 0x7 << 32); without
# pmu=on it must still find none, as upstream.
for cpu in Nehalem,pmu=on Nehalem; do
    echo "=== linux -cpu $cpu"
    log=$BUILD/test-logs/linux-${cpu//[,=]/-}.serial
    boot "$cpu" "$log"
    ev=$(tr -d '\r' <"$log" | grep -ao '@@.*' || true)
    why=$(boot_verdict "$qstatus" "$boot_timeout" "$ev" "$log")
    check "$(result test -z "$why")" "$cpu: boots and powers off$why"
    dmesg=$(sed -n 's/^@@dmesg //p' <<<"$ev")
    if [ "$cpu" = Nehalem ]; then
        line="Performance Events: unsupported p6 CPU model 26 no PMU driver, software events only."
        check "$(result grep -qF "$line" <<<"$dmesg")" "$cpu: kernel log says \"$line\""
        continue
    fi
    for line in "Performance Events: PEBS fmt1+, Nehalem events, 16-deep LBR, Intel PMU driver." \
                "... version:                3" \
                "... bit width:              48" \
                "... generic registers:      4" \
                "... value mask:             0000ffffffffffff" \
                "... fixed-purpose events:   3" \
                "... event mask:             000000070000000f"; do
        check "$(result grep -qF "] $line" <<<"$dmesg")" "$cpu: kernel log says \"$line\""
    done
    bad=$( (bad_kernel_lines "$dmesg"; grep -ai 'unchecked MSR\|PMU.*broken\|Broken PMU' <<<"$dmesg") || true)
    check "$(result test -z "$bad")" "$cpu: kernel log has no WARNING, Call Trace, unchecked MSR access or broken-PMU line${bad:+: $bad}"
    flags=$(sed -n 's/^@@cpuinfo flags[[:space:]]*:[[:space:]]*//p' <<<"$ev")
    check "$(result grep -qw arch_perfmon <<<"$flags")" "$cpu: arch_perfmon in the flags of /proc/cpuinfo"
    check "$(result grep -qw pdcm <<<"$flags")" "$cpu: pdcm in the flags of /proc/cpuinfo"
done

# 2c. Debian's perf in the PMU guest counts a program exactly: runs of
# tests/linux/perf-loop 100000 and 200000 iterations long differ by
# 2 * 100000 user instructions and 100000 branches, as its DEC/JNZ loop
# says, and a second run of 100000 counts the same as the first; perf
# record of the 1000000 run, a sample every 10007 user instructions (the
# PMI), takes exactly as many samples as perf stat's count of that run
# holds whole periods; a program that reads its own counter with RDPMC
# (tests/linux/rdpmc-self.c) counts its loop exactly; with more events
# than counters perf's scaled counts stay within 5% of the exact ones; a
# run moved between CPUs counts exactly; and the perf checks again with
# four vCPUs under MTTCG
echo "=== linux -cpu Nehalem,pmu=on: Debian's perf stat"
perf_init() { # ROOT: an initramfs tree with perf, its libraries, the loop
    local r=$1
    perf_tree "$r" "$dir/busybox" "$pdir" || return 1
    cp "$src/init-perf" "$r/init"
    cp "$src/init-perf-test" "$r/bin/init-perf-test"
    # linked away from busybox and rdpmc-self, so that the plugin knows
    # its instructions by their address
    gcc -static -O2 -Wall -Wl,-Ttext-segment=0x10000000 \
        -o "$r/bin/perf-loop" "$src/perf-loop.c" || return 1
    gcc -static -O2 -Wall -o "$r/bin/rdpmc-self" "$src/rdpmc-self.c" || return 1
    gcc -static -O2 -Wall -o "$r/bin/blockstep" "$src/blockstep.c" || return 1
    # and brmix away from both, for the plugin of the branch boot
    gcc -static -O2 -Wall -Wl,-Ttext-segment=0x20000000 \
        -o "$r/bin/brmix" "$src/brmix.c" || return 1
}
# blockstep_check TAG: PTRACE_SINGLEBLOCK, which sets IA32_DEBUGCTL.BTF
# (SDM Vol. 3B 17.4.3; tests/linux/blockstep.c): its stops inside work()
# are the targets of the branches work() takes, from its listing, and
# PTRACE_SINGLESTEP of the same function stops after each of its 13
# instructions
# brstack_check TAG: perf record -b of perf-loop 1000000, a sample every
# 100003 user instructions with its LBR branch stack (SDM 18.6): each
# sample is in the DEC/JNZ loop, and each stack holds only that loop's
# JNZ, from its address to the DEC it jumps back to, predicted ("P"); the
# loops are objdump's (GCC emits two copies of it), not the model's.  A
# stack has 16 entries, or 15 when an interrupt was one of them, which
# perf drops from a user-only stack
brstack_check() {
    local loops n bad
    loops=$(objdump -d --no-show-raw-insn "$dir/initramfs-perf/bin/perf-loop" |
        awk '$2 == "dec" { d = $1; sub(":", "", d); next }
             d != "" && $2 == "jne" && $3 == d {
                 j = $1; sub(":", "", j); printf "0x%s/0x%s ", j, d }
             { d = "" }')
    n=$(grep -c '^@@brstack ' <<<"$ev" || true)
    bad=$(grep '^@@brstack ' <<<"$ev" | awk -v loops=" $loops" '
        NR == 1 { split($3, e, "/"); loop = e[1] "/" e[2]
                  if (index(loops, " " loop " ") == 0) loop = "none" }
        { ok = ("0x" $2 == e[1] || "0x" $2 == e[2]); entries = 0
          for (i = 3; i <= NF; i++) {
              entries++
              if (index($i, loop "/P/") != 1) ok = 0
          }
          if (!ok || entries < 15) print }' | head -n 1)
    check "$(result test "${n:-0}" -ge 19 -a -n "$loops" -a -z "$bad")" "$1: perf record -b: $n samples, each in perf-loop's DEC/JNZ loop ($loops) with a branch stack of its JNZ only, predicted, 15 or 16 deep${bad:+ (got: ${bad:0:200})}"
}
blockstep_check() {
    local line bs_want='' bs_got='' bs_steps='' kv
    line=$(grep '^@@blockstep ' <<<"$ev" || true)
    for kv in ${line#@@blockstep }; do
        case $kv in
        want=*) bs_want=${kv#want=} ;;
        got=*) bs_got=${kv#got=} ;;
        steps=*) bs_steps=${kv#steps=} ;;
        esac
    done
    check "$(result test -n "$bs_want" -a "$bs_got" = "$bs_want")" "$1: PTRACE_SINGLEBLOCK stops after the branches taken only, at offsets $bs_want of work() (got ${bs_got:-${line:-nothing}})"
    check "$(result test "$bs_steps" = 13)" "$1: PTRACE_SINGLESTEP of work() stops after each of its 13 instructions (got ${bs_steps:-nothing})"
}
# plugin_for EXE ARGS: the -plugin argument of tests/linux/uinsn-plugin.c
# (built into $BUILD/test-logs) for the static program EXE: its address
# range and entry point, then ARGS; fails if the plugin does not build
plugin_for() {
    local so=$BUILD/test-logs/uinsn-plugin.so glib
    read -r -a glib <<<"$(pkg-config --cflags glib-2.0)"
    gcc -shared -fPIC -O2 -Wall -Werror "${glib[@]}" \
        -I "$SRC/include/qemu" -o "$so" "$src/uinsn-plugin.c" || return 1
    echo "$so,$(plugin_span "$1"),$2"
}
# branch_boot: the perf guest booted with "nopti perfbranch"
# (tests/linux/init-perf), under tests/linux/uinsn-plugin.c for brmix.
# BTS: Debian's perf records perf-loop 1000 through intel_bts (the Branch
# Trace Store, SDM 18.7.8, which Linux offers only without PTI): its
# trace holds the loop's JNZ to the DEC it jumps back to exactly 999
# times (the loops are objdump's, as for brstack_check), and that JNZ to
# nowhere else; and of brmix 300 every branch within its own code, in
# order, is the plugin's trace of the same run.  LBR: each of perf record -b's branch stacks of brmix
# 200000 is the plugin's last branches taken before the sample's
# instruction in the same run (tests/linux/lbr-oracle.py)
branch_boot() {
    local log=$BUILD/test-logs/linux-perf-branch.serial why qstatus=0 bev
    local plog=$BUILD/test-logs/linux-perf-branch.plugin loops n total=''
    local pargs=() res t ms arg want got exact late bad t3 t4
    rm -f "$log" "$plog"
    if arg=$(plugin_for "$dir/initramfs-perf/bin/brmix" \
                        period=100003,brs=1,window=32,loads=3:4,pebs=2:100003:i,pebs=5:100003:c,trace=6); then
        pargs=(-plugin "$arg" -d plugin -D "$plog")
    else
        check 1 "build tests/linux/uinsn-plugin.c"
    fi
    timeout "$boot_timeout" "$qemu" "${firmware[@]}" -M pc -accel tcg \
        -cpu Nehalem,pmu=on -m 512M -smp 1 -no-reboot \
        -display none -vga none -nic none -monitor none \
        -serial "file:$log" -kernel "$dir/vmlinuz" \
        -initrd "$dir/initramfs-perf.gz" \
        -append "console=ttyS0 quiet panic=-1 nopti perfbranch" \
        "${pargs[@]}" </dev/null || qstatus=$?
    [ -f "$log" ] || : >"$log"
    bev=$(tr -d '\r' <"$log" | grep -ao '@@.*' || true)
    why=$(boot_verdict "$qstatus" "$boot_timeout" "$bev" "$log")
    check "$(result test -z "$why")" "perf guest (nopti perfbranch) boots, runs its init to the end and powers off$why"
    loops=$(objdump -d --no-show-raw-insn "$dir/initramfs-perf/bin/perf-loop" |
        awk '$2 == "dec" { d = $1; sub(":", "", d); next }
             d != "" && $2 == "jne" && $3 == d {
                 j = $1; sub(":", "", j); printf "%s/%s ", j, d }
             { d = "" }')
    total=$(sed -n 's/^@@btsn //p' <<<"$bev")
    # "@@bts COUNT FROM => TO": the count of the pair that is a loop, and
    # how many pairs leave from a loop's JNZ
    n=$(grep '^@@bts ' <<<"$bev" | awk -v loops=" $loops" '
        { f[NR] = $3 }
        index(loops, " " $3 "/" $5 " ") { n = $2; jnz = $3 }
        END { k = 0; for (i = 1; i <= NR; i++) if (f[i] == jnz) k++
              print (n == "" ? "none" : n) " " k }' || true)
    check "$(result test -n "$loops" -a "$n" = "999 1")" "BTS: perf record -e intel_bts//u of perf-loop 1000: its JNZ back to its DEC ($loops) 999 times and to nowhere else, among ${total:-no} branches (got ${n:-nothing}$(grep -m1 '^@@error bts' <<<"$bev" | sed 's/^/; /'))"
    [ "${#pargs[@]}" -gt 0 ] || return 0
    res=$(grep '^@@brmix ' <<<"$bev" | python3 "$src/lbr-oracle.py" "$plog" 2>&1 || true)
    read -r _ n _ t _ _ _ ms <<<"$res"
    check "$(result test "${n:-0}" -ge 19 -a "${ms:-x}" = 0)" "LBR: perf record -b of brmix 200000, a sample every 100003 user instructions: every branch stack is the TCG plugin's last branches taken before the sample's instruction in the same run, the instruction after each 100003rd or at most 31 after it (got ${res:-nothing}$(grep -m1 '^@@error brmix' <<<"$bev" | sed 's/^/; /'))"
    sample_match "$plog" "pebs 2" "$(sed -n 's/^@@pebs //p' <<<"$bev")"
    check "$(result test "${#got[@]}" -ge 19 -a "${#got[@]}" = "${#want[@]}" -a -z "$bad")" "PEBS: perf record -e instructions:upp -c 100002 of brmix 200000: each of its ${#got[@]} samples, where Linux puts it from the record and LBR, on every 100003rd instruction of the plugin's stream of the same run (${#want[@]} there): $exact exactly, $late at most 31 after it (${bad:-no other}$(grep -m1 '^@@error pebs' <<<"$bev" | sed 's/^/; /'))"
    # cycles:pp is INST_RETIRED with INV and CMASK 16 on Nehalem: every
    # cycle of the cost model, one per instruction and one more per branch
    sample_match "$plog" "pebs 5" "$(sed -n 's/^@@pebscyc //p' <<<"$bev")"
    check "$(result test "${#got[@]}" -ge 19 -a "${#got[@]}" = "${#want[@]}" -a -z "$bad")" "PEBS: perf record -e cycles:upp -c 100002 of brmix 200000 (INST_RETIRED, INV, CMASK 16: the cost model's cycles): each of its ${#got[@]} samples on the instruction of every 100003rd cycle, as the plugin's stream of the same run gives them (${#want[@]} there): $exact exactly, $late at most 31 instructions after it (${bad:-no other}$(grep -m1 '^@@error pebscyc' <<<"$bev" | sed 's/^/; /'))"
    # BTS in order: the branches within brmix's own code (the others leave
    # it: system calls, interrupts) against the plugin's, one by one
    mapfile -t got < <(sed -n 's/^@@btsbr //p' <<<"$bev")
    mapfile -t want < <(sed -n 's/^t //p' "$plog" 2>/dev/null || true)
    for ((n = 0; n < ${#got[@]} && n < ${#want[@]}; n++)); do
        [ "${got[n]}" = "${want[n]}" ] || break
    done
    check "$(result test "${#got[@]}" -ge 1000 -a "${#got[@]}" = "${#want[@]}" -a "$n" = "${#got[@]}")" "BTS: perf record -e intel_bts//u of brmix 300: every branch it took within its own code, in order, is the TCG plugin's trace of the same run (${#got[@]} records, ${#want[@]} in the plugin's trace, the first $n the same$([ "$n" = "${#got[@]}" ] || echo "; then ${got[n]:-nothing} for ${want[n]:-nothing}")$(grep -m1 '^@@error btsbr' <<<"$bev" | sed 's/^/; /'))"
    t3=$(sed -n 's/^@@ldlat 3 //p' <<<"$bev") t4=$(sed -n 's/^@@ldlat 4 //p' <<<"$bev")
    res=$(sed -n 's/^@@ll //p' <<<"$bev" |
        python3 "$src/ll-oracle.py" "$plog" 997 "3:${t3:-0}" "4:${t4:-0}" 2>&1 || true)
    read -r _ n _ ms _ t <<<"$res"
    check "$(result test "${n:-0}" -ge 40 -a "$n" = "${ms:-x}" -a "$n" = "${t:-x}" -a -n "$t3" -a -n "$t4")" "PEBS load latency: perf mem record of brmix's pointer chases through 1 MiB and 64 KiB (thresholds $t3 and $t4), a sample every 997 loads above the threshold: each sample's data address, latency and data source are the plugin's read of the same run through the reference cache model (tests/linux/ll-oracle.py: ${res:-nothing}$(grep -m1 '^@@error mem' <<<"$bev" | sed 's/^/; /'))"
}
# perf_boot NAME SMP ACCEL [QEMU ARGUMENTS]: the perf guest with -smp SMP
# -accel ACCEL; its evidence lines in $ev, and one check that it ran to
# its end
perf_boot() {
    local log=$BUILD/test-logs/linux-perf-$1.serial why rate aslr qstatus=0
    rm -f "$log"
    timeout "$boot_timeout" "$qemu" "${firmware[@]}" -M pc -accel "$3" \
        -cpu Nehalem,pmu=on -m 512M -smp "$2" -no-reboot \
        -display none -vga none -nic none -monitor none \
        -serial "file:$log" -kernel "$dir/vmlinuz" \
        -initrd "$dir/initramfs-perf.gz" \
        -append "console=ttyS0 quiet panic=-1" "${@:4}" </dev/null || qstatus=$?
    [ -f "$log" ] || : >"$log"
    ev=$(tr -d '\r' <"$log" | grep -ao '@@.*' || true)
    why=$(boot_verdict "$qstatus" "$boot_timeout" "$ev" "$log")
    check "$(result test -z "$why")" "perf guest ($1) boots, runs its init to the end and powers off$why"
    grep '^@@error' <<<"$ev" | head -n 5 || true
    # without it the kernel's per-tick sample limit can drop periods
    rate=$(sed -n 's/^@@rate //p' <<<"$ev")
    check "$(result test "$rate" = 1000000)" "perf guest ($1): init-perf raised perf_event_max_sample_rate to 1000000 (got ${rate:-nothing})"
    # with it, a run's start-up can differ from the run before's
    aslr=$(sed -n 's/^@@aslr //p' <<<"$ev")
    check "$(result test "$aslr" = 0)" "perf guest ($1): init-perf turned address-space randomisation off (got ${aslr:-nothing})"
}
# perf_count RUN EVENT: what perf printed for EVENT in run RUN of the
# last perf_boot ("@@stat RUN COUNT,,EVENT,...")
perf_count() {
    awk -F, -v n="$1" -v e="$2" '{ split($1, a, " ") }
        a[1] == "@@stat" && a[2] == n && $3 == e { print a[3] }' <<<"$ev"
}
# perf_big NAME: the 100000000-iteration runs of the last perf_boot: with
# seven events on four general and one fixed counter, multiplexed, each
# scaled count within 15% of the exact one (run 6, alone): perf scales by
# the guest time each event ran, and TCG's guest clock follows the host's,
# so the host's timing moves the estimate (10.3% seen once); moved between
# CPUs, the exact counts (and on more than one CPU, moves that perf saw)
perf_big() {
    local ie be v5 mx bad m7 i7 b7
    ie=$(perf_count 6 instructions:u) be=$(perf_count 6 branches:u)
    v5=$(awk -F, '{ split($1, a, " ") }
        a[1] == "@@stat" && a[2] == 5 { print a[3], $3, $5 }' <<<"$ev")
    mx=$(awk -v ie="${ie:-0}" -v be="${be:-0}" '{ e = $2 ~ /^instr/ ? ie : be }
        e > 0 && $3 + 0 < 100 && ($1 - e) ^ 2 <= (e * 15 / 100) ^ 2' <<<"$v5" | wc -l)
    bad=$(awk '{ printf "%s %s (%s%%) ", $2, $1, $3 }' <<<"$v5")
    check "$(result test "$mx" = 7)" "perf stat, $1: instructions:u and six branch events on five counters, multiplexed, each scaled within 15% of perf-loop 100000000's $ie instructions and $be branches (got $bad)"
    i7=$(perf_count 7 instructions:u) b7=$(perf_count 7 branches:u)
    m7=$(perf_count 7 cpu-migrations)
    check "$(result test "${ie:-x} ${be:-x}" = "$i7 $b7")" "perf stat, $1: perf-loop 100000000 moved between CPUs with taskset, exact: $ie instructions and $be branches, as alone (got $i7 $b7, $m7 migrations)"
    if [ "$1" != smp1 ]; then
        check "$(result test "${m7:-0}" -gt 0 2>/dev/null)" "perf stat, $1: the loop migrated (cpu-migrations ${m7:-none})"
    fi
}
# perf_plugin: tests/linux/uinsn-plugin.c for perf-loop in the smp1 boot:
# its -plugin and -D arguments in $plugin_args (none if it does not
# build), its output in $plugin_log
perf_plugin() {
    local arg
    plugin_log=$BUILD/test-logs/linux-perf-smp1.plugin plugin_args=()
    rm -f "$plugin_log"
    # run 10 of init-perf is perf record's; 8 and 9 count cache events
    if ! arg=$(plugin_for "$dir/initramfs-perf/bin/perf-loop" \
                          period=10007,ips=10,window=32,loads=8:9); then
        check 1 "build tests/linux/uinsn-plugin.c"
        return
    fi
    plugin_args=(-plugin "$arg" -d plugin -D "$plugin_log")
}
# perf_plugin_check: each perf stat run of the smp1 boot that is exact
# (not run 5, multiplexed) counts what the plugin counted of the same
# run, and perf record's samples (run 10) are each on the instruction
# after every 10007th of the plugin's stream of that run, or at most 31
# instructions after it: Linux programs a Nehalem counter with at least
# 32 events left (nhm_limit_period), so a period that a context switch
# leaves with fewer ends late, and the next one makes up for it
perf_plugin_check() {
    local run pi pb pl ps want got exact late bad c1 c2 c3 c4
    [ "${#plugin_args[@]}" -gt 0 ] || return 0
    for run in 1 2 3 4 6 7; do
        read -r pi pb pl ps < <(awk -v r="$run" '$1 == "run" && $2 == r { print $4, $6, $8, $10 }' "$plugin_log" 2>/dev/null || true)
        check "$(result test "$(perf_count "$run" instructions:u) $(perf_count "$run" branches:u)" = "${pi:-x} ${pb:-x}")" "perf stat run $run: instructions:u and branches:u are the TCG plugin's count of the same run (perf $(perf_count "$run" instructions:u) $(perf_count "$run" branches:u), plugin ${pi:-nothing} ${pb:-nothing})"
        # MEM_INST_RETIRED.LOADS and .STORES against the instructions
        # that the plugin's memory callbacks saw read and write
        [ "$run" -le 4 ] || continue
        check "$(result test "$(perf_count "$run" r010b:u) $(perf_count "$run" r020b:u)" = "${pl:-x} ${ps:-x}")" "perf stat run $run: r010b:u and r020b:u (MEM_INST_RETIRED.LOADS, .STORES) are the TCG plugin's instructions that read and wrote memory in the same run (perf $(perf_count "$run" r010b:u) $(perf_count "$run" r020b:u), plugin ${pl:-nothing} ${ps:-nothing})"
    done
    # the cache events of runs 8 and 9 against the reads the plugin saw,
    # through the cache model written from docs/cache-model.md
    read -r c1 c2 c3 c4 < <(python3 "$src/cache-oracle.py" "$plugin_log" 2>/dev/null |
        awk '$2 == 8 { print $4, $6, $8, $10 }' || true)
    got="$(perf_count 8 r01cb:u) $(perf_count 8 r02cb:u) $(perf_count 8 r04cb:u) $(perf_count 8 r10cb:u)"
    check "$(result test "$got" = "${c1:-x} ${c2:-x} ${c3:-x} ${c4:-x}" -a "${c1:-0}" -gt 0 -a "${c3:-0}" -gt 0)" "perf stat run 8: r01cb:u, r02cb:u, r04cb:u, r10cb:u (MEM_LOAD_RETIRED L1D_HIT, L2_HIT, L3_UNSHARED_HIT, L3_MISS) are the plugin's reads of the same run through the reference cache model (perf $got, model ${c1:-nothing} ${c2:-} ${c3:-} ${c4:-})"
    read -r c1 c2 c3 c4 < <(python3 "$src/cache-oracle.py" "$plugin_log" 2>/dev/null |
        awk '$2 == 9 { print $4, $6, $8, $10 }' || true)
    pl=$(awk '$1 == "run" && $2 == 9 { print $8 }' "$plugin_log" 2>/dev/null || true)
    got="$(perf_count 9 cache-references:u) $(perf_count 9 cache-misses:u) $(perf_count 9 r010b:u)"
    check "$(result test "$got" = "$((${c3:-0} + ${c4:-0})) ${c4:-x} ${pl:-x}" -a "${c3:-0}" -gt 0)" "perf stat run 9: cache-references:u and cache-misses:u (LLC References and Misses, after run 8 filled the model) are the plugin's reads of the same run that reached L3 and DRAM in the reference cache model, r010b:u its loading instructions (perf $got, model and plugin $((${c3:-0} + ${c4:-0})) ${c4:-nothing} ${pl:-nothing})"
    sample_match "$plugin_log" ip "$(sed -n 's/^@@ip //p' <<<"$ev")"
    check "$(result test "${#got[@]}" -gt 0 -a "${#got[@]}" = "${#want[@]}" -a -z "$bad")" "perf record -e instructions:u -c 10007: each of its ${#got[@]} samples on the instruction after every 10007th of the plugin's stream of the same run (${#want[@]} there): $exact exactly, $late within Linux's 32-event minimum period (${bad:-no other})"
}
# sample_match PLUGIN_LOG PREFIX SAMPLES: the sample addresses SAMPLES
# (one per line, in $got) against the plugin's lines that start with
# PREFIX (in $want): $exact samples on the first address of their line,
# $late on a later one of it, $bad the others
sample_match() {
    local k
    mapfile -t want < <(sed -n "s/^$2 //p" "$1" 2>/dev/null || true)
    mapfile -t got < <(grep . <<<"$3" || true)
    exact=0 late=0 bad=
    for ((k = 0; k < ${#got[@]}; k++)); do
        if [ "${got[k]}" = "${want[k]%% *}" ]; then
            exact=$((exact + 1))
        elif [[ " ${want[k]:-} " == *" ${got[k]} "* ]]; then
            late=$((late + 1))
        else
            bad+="${bad:+, }sample $((k + 1)) at ${got[k]}, want ${want[k]%% *}"
        fi
    done
}
# perf_test: Debian's `perf test`, all of it, in the perf guest with two
# vCPUs (rdinit=/bin/init-perf-test); every test that fails must be one
# that docs/pmu.md's table "perf test" explains, by its name
perf_test() {
    local known fails bad line n
    known=$(sed -n '/^## perf test/,/^## /s/^| [0-9]* *| \(.*\) | .* |$/\1/p' \
                "$src/../../docs/pmu.md")
    boot_timeout=1200 perf_boot perftest 2 tcg,thread=multi \
        -append "console=ttyS0 quiet panic=-1 rdinit=/bin/init-perf-test"
    fails=$(sed -n 's/^@@test *\([0-9.]*\): \(.*[^ ]\) *: FAILED!$/\1 \2/p' <<<"$ev")
    n=$(grep -c '^@@test .*: \(Ok\|Skip\|FAILED!\)' <<<"$ev" || true)
    bad=
    while read -r line; do
        [ -n "$line" ] || continue
        grep -qxF -- "${line#* }" <<<"$known" || bad+="${bad:+; }$line"
    done <<<"$fails"
    echo "    perf test: $n results; failed: $(tr '\n' ';' <<<"$fails")"
    check "$(result test "$n" -ge 90 -a -z "$bad")" "perf test: $n results, and every test that failed is one docs/pmu.md explains (not explained: ${bad:-none})"
}
if pdir=$("$src/fetch.sh" perf) && perf_init "$dir/initramfs-perf"; then
    (cd "$dir/initramfs-perf" && find . | LC_ALL=C sort |
        cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$dir/initramfs-perf.gz"
    perf_plugin
    perf_boot smp1 1 tcg "${plugin_args[@]}"
    i1=$(perf_count 1 instructions:u) i2=$(perf_count 2 instructions:u)
    b1=$(perf_count 1 branches:u) b2=$(perf_count 2 branches:u)
    i3=$(perf_count 3 instructions:u) b3=$(perf_count 3 branches:u)
    k1=$(perf_count 1 instructions:k)
    echo "    perf stat: instructions:u $i1, $i2, $i3; branches:u $b1, $b2, $b3; instructions:k $k1"
    if [[ "$i1$i2$i3$b1$b2$b3" =~ ^[0-9]+$ ]]; then
        check "$(result test $((i2 - i1)) = 200000)" "perf stat -e instructions:u: 100000 more iterations, 200000 more instructions (got $((i2 - i1)))"
        check "$(result test $((b2 - b1)) = 100000)" "perf stat -e branches:u: 100000 more iterations, 100000 more branches (got $((b2 - b1)))"
        check "$(result test "$i3 $b3" = "$i1 $b1")" "perf stat: the same program twice, the same user counts ($i1 $b1, then $i3 $b3)"
    else
        check 1 "perf stat printed counts for instructions:u and branches:u"
    fi
    check "$(result test "${k1:-0}" -gt 0 2>/dev/null)" "perf stat -e instructions:k counts the kernel's instructions (got ${k1:-nothing})"
    perf_big smp1
    i4=$(perf_count 4 instructions:u)
    samples=$(sed -n 's/^@@samples //p' <<<"$ev")
    if [[ "$i4" =~ ^[0-9]+$ ]]; then
        check "$(result test "${samples:-x}" = $((i4 / 10007)))" "perf record -e instructions:u -c 10007: ${samples:-no} samples of a run of $i4 user instructions (want $((i4 / 10007)))"
    else
        check 1 "perf stat printed a count for the 1000000 run"
    fi
    perf_plugin_check
    # RDPMC at CPL 3, as a self-monitoring program does it: the count
    # across 300000 iterations exceeds that across 100000 by 400000
    line=$(grep '^@@rdpmc ' <<<"$ev" || true)
    for kv in ${line#@@rdpmc }; do
        declare "rdpmc_${kv%%=*}=${kv#*=}"
    done
    if [[ "${rdpmc_d1:-}${rdpmc_d2:-}" =~ ^[0-9]+$ ]]; then
        check "$(result test "${rdpmc_cap_user_rdpmc:-0} $((rdpmc_d2 - rdpmc_d1))" = "1 400000")" "RDPMC self-monitoring (perf_event_mmap_page, cap_user_rdpmc ${rdpmc_cap_user_rdpmc:-?}, index ${rdpmc_index:-?}): 200000 more iterations, 400000 more instructions (got $((rdpmc_d2 - rdpmc_d1)))"
    else
        check 1 "RDPMC self-monitoring: rdpmc-self printed its counts (${line:-nothing})"
    fi
    blockstep_check "block stepping, -smp 1"
    brstack_check "LBR, -smp 1"
    # Four vCPUs under MTTCG: the program may be preempted and migrate.
    # Its start-up runs more instructions with more CPUs than with one
    # (static glibc), so the checks are the loop's, as above
    perf_boot smp4 4 tcg,thread=multi
    i1=$(perf_count 1 instructions:u) i2=$(perf_count 2 instructions:u)
    b1=$(perf_count 1 branches:u) b2=$(perf_count 2 branches:u)
    i3=$(perf_count 3 instructions:u) b3=$(perf_count 3 branches:u)
    i4=$(perf_count 4 instructions:u)
    samples=$(sed -n 's/^@@samples //p' <<<"$ev")
    echo "    perf stat: instructions:u $i1, $i2, $i3, $i4; branches:u $b1, $b2, $b3; $samples samples"
    if [[ "$i1$i2$i3$i4$b1$b2$b3" =~ ^[0-9]+$ ]]; then
        check "$(result test "$((i2 - i1)) $((b2 - b1)) $i3 $b3 ${samples:-x}" = "200000 100000 $i1 $b1 $((i4 / 10007))")" "perf under -smp 4, MTTCG: 200000 more instructions and 100000 more branches, the same counts twice, one sample per whole period (got $((i2 - i1)), $((b2 - b1)), $i3 $b3 after $i1 $b1, ${samples:-no} samples of $i4)"
        perf_big smp4
        blockstep_check "block stepping, -smp 4"
        brstack_check "LBR, -smp 4"
    else
        check 1 "perf under -smp 4, MTTCG: perf stat printed its counts"
    fi
    branch_boot
    perf_test
else
    check 1 "fetch Debian's linux-perf and build the perf initramfs (tests/linux/fetch.sh perf)"
fi

# 2d. rr records and replays in the PMU guest (tests/linux/rr.sh: Debian's
# kernel and ours, -cpu Nehalem,pmu=on, -smp 1 and 2); its lines count here
while IFS= read -r line; do
    echo "$line"
    case $line in
    PASS:*) passed=$((passed + 1)) ;;
    FAIL:*) failed=$((failed + 1)) ;;
    esac
done < <("$src/rr.sh" "$qemu")

# 3. Our kernel with the LWP series, and LWP programs in it
while IFS= read -r line; do
    echo "$line"
    case $line in
    PASS:*) passed=$((passed + 1)) ;;
    FAIL:*) failed=$((failed + 1)) ;;
    esac
done < <("$src/kernel.sh" "$qemu" "$dir/busybox")

finish
