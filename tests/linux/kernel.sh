#!/usr/bin/env bash
# The linux layer's second part: our kernel (Debian's Linux 6.12 source +
# linux/patches, built by scripts/build-linux.sh) booted under
# qemu-system-x86_64 with LWP, running LWP programs (tests/linux/README.md,
# "Our kernel").  Called by tests/linux/run.sh, which adds its PASS:/FAIL:
# lines to the layer's count.
#
#   tests/linux/kernel.sh QEMU_SYSTEM_BINARY BUSYBOX
#   tests/linux/kernel.sh --demo QEMU_SYSTEM_BINARY BUSYBOX
#                           (scripts/demo.sh: one boot, what the guest says)
#
# SPDX-License-Identifier: GPL-2.0-or-later
set -uo pipefail

demo=0
if [ "${1:-}" = --demo ]; then
    demo=1
    shift
fi
qemu=$1
busybox=$2
src=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=SCRIPTDIR/../../scripts/common.sh
. "$src/../../scripts/common.sh"
# shellcheck source=SCRIPTDIR/lib.sh
. "$src/lib.sh"
# shellcheck source=SCRIPTDIR/lwp-perf.sh
. "$src/lwp-perf.sh"
boot_timeout=${LINUX_BOOT_TIMEOUT:-300}
out=$BUILD/linux-lwp
logs=$BUILD/test-logs
mkdir -p "$out" "$logs"

ok() { echo "PASS: $*"; }
ko() { echo "FAIL: $*"; }
check() { if [ "$1" = 0 ]; then shift; ok "$@"; else shift; ko "$@"; fi; }
result() { if "$@"; then echo 0; else echo 1; fi; }

# 1. The kernel, the programs, the initramfs
if ! bz=$(our_kernel); then
    ko "our kernel builds (scripts/build-linux.sh; log in $logs/linux-build.log)"
    exit 0
fi
ok "our kernel builds: $(our_kernel_name)"
cflags=(-static -O2 -g -Wall -Wextra -Werror -mlwp -pthread -I"$TOP/include")
root=$out/initramfs
rm -rf "$root"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev"
if ! gcc "${cflags[@]}" -o "$root/bin/lwp-linux" "$src/lwp-linux.c" ||
   ! gcc -static -O2 -Wall -o "$root/bin/lwp-cpuid" "$src/lwp-cpuid.c"; then
    ko "the guest programs build (gcc -static -mlwp)"
    exit 0
fi
if [ -f "$TOP/tests/user/lwp-sigabi.c" ]; then
    gcc "${cflags[@]}" -I"$TOP/tests/user" -o "$root/bin/lwp-sigabi" \
        "$TOP/tests/user/lwp-sigabi.c" || ko "tests/user/lwp-sigabi.c builds"
fi
# The series' kselftest, built by its own Makefile, static
mkdir -p "$out/kselftest"
if ! make -s -C "$BUILD/linux-src/tools/testing/selftests/x86" OUTPUT="$out/kselftest" \
        EXTRA_CFLAGS=-static "$out/kselftest/lwp_64" >"$logs/linux-kselftest-build.log" 2>&1 ||
   ! cp "$out/kselftest/lwp_64" "$root/bin/lwp_64"; then
    ko "tools/testing/selftests/x86/lwp.c builds (log $logs/linux-kselftest-build.log)"
fi
cp "$busybox" "$root/bin/busybox"
cp "$src/init-lwp" "$root/init"
chmod 755 "$root/init"
cpio_gz() { # DIR: DIR as a gzipped newc archive, on stdout
    (cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -9
}
cpio_gz "$root" >"$out/initramfs.gz"

# lwp-prof for the max boot, in a second archive that the kernel unpacks
# over the first (the other boots do without its 5 MB): lwp-prof, its
# preload library, the dynamic prof-work and the loader and libraries
# they need, at the paths ldd gives on the host (Debian 12, where they
# were built), and a static prof-work for record --perf;
# tests/linux/prof-guest runs them
prof=$out/initramfs-prof
rm -rf "$prof"
mkdir -p "$prof/bin" "$prof/tmp"
lp=$BUILD/lwp-prof/tools/lwp-prof
if build_lwp_prof "$logs/linux-lwp-prof-build.log" &&
   gcc -O2 -no-pie -mlwp -pthread -o "$prof/bin/prof-work" "$TOP/tools/lwp-prof/tests/prof-work.c" &&
   gcc -O2 -static -mlwp -pthread -o "$prof/bin/prof-work-static" "$TOP/tools/lwp-prof/tests/prof-work.c" &&
   strip -o "$prof/bin/lwp-prof" "$lp/lwp-prof" &&
   strip -o "$prof/bin/lwp-prof-preload.so" "$lp/lwp-prof-preload.so" &&
   cp "$src/prof-guest" "$prof/bin/prof-guest" &&
   libs=$(ldd "$prof/bin/lwp-prof" "$prof/bin/lwp-prof-preload.so" "$prof/bin/prof-work" |
       awk '$1 ~ /^\// && $1 !~ /:$/ {print $1} $2 == "=>" && $3 ~ /^\// {print $3}' | sort -u) &&
   [ -n "$libs" ]; then
    for l in $libs; do
        mkdir -p "$prof$(dirname "$l")"
        cp -L "$l" "$prof$l"
    done
    { cat "$out/initramfs.gz"; cpio_gz "$prof"; } >"$out/initramfs-max.gz"
else
    ko "lwp-prof and a dynamic prof-work for the guest build (log $logs/linux-lwp-prof-build.log)"
    cp "$out/initramfs.gz" "$out/initramfs-max.gz"
fi

# The profile table of docs/implementation-choices.md gives CPUID
# 8000_001C EDX; with XCR0[62] set and LWP_CFG = EDX (spec 8.7.1), EAX
# reads the same (spec 3.3: EAX[0] = XCR0[62], EAX[31:1] = LWP_CFG)
doc_edx() {
    grep -F "\`$1,+lwp\`" "$TOP/docs/implementation-choices.md" | grep -m 1 '^| ' |
        grep -oE "\`[0-9A-Fa-f]{8}\`" | head -n 1 | tr -d '`' | tr 'A-F' 'a-f'
}

# boot NAME CPU SMP MODE [EXTRA_APPEND]: boots, leaves the evidence in $ev
boot() {
    local name=$1 cpu=$2 smp=$3 mode=$4 extra=${5:-} start secs why qstatus=0
    local initrd=$out/initramfs.gz
    [ "$name" != max ] || initrd=$out/initramfs-max.gz
    log=$logs/linux-lwp-$name.serial
    trace=$logs/linux-lwp-$name.trace
    rm -f "$log" "$trace"
    # no_timer_check: on a loaded host the IO-APIC timer check can miss
    # its ticks and log "MP-BIOS bug: 8254 timer not connected" (seen in CI)
    echo "=== our kernel, -cpu $cpu -smp $smp, lwptest=$mode $extra"
    start=$(date +%s)
    timeout "$boot_timeout" "$qemu" "${firmware[@]}" -M pc -accel tcg,thread=multi \
        -cpu "$cpu" -m 512M -smp "$smp" -no-reboot \
        -display none -vga none -nic none -monitor none \
        -serial "file:$log" -kernel "$bz" -initrd "$initrd" \
        -trace 'lwp_wrmsr_*' -D "$trace" \
        -append "console=ttyS0 quiet panic=-1 no_timer_check lwptest=$mode $extra" </dev/null ||
        qstatus=$?
    secs=$(($(date +%s) - start))
    [ -f "$log" ] || : >"$log"
    ev=$(tr -d '\r' <"$log" | grep -ao '@@.*' || true)
    why=$(boot_verdict "$qstatus" "$boot_timeout" "$ev" "$log")
    check "$(result test -z "$why")" "$name: boots, runs /init to its end and reboots, ${secs} s$why (log $log)"
    dmesg=$(sed -n 's/^@@dmesg //p' <<<"$ev")
}

# The programs' own checks, as they reported them
program_checks() { # NAME
    local n
    n=$(grep -c '^@@t \(PASS\|FAIL\):' <<<"$ev")
    sed -n 's/^@@t \(PASS\|FAIL\): /\1: '"$1"': /p' <<<"$ev"
    check "$(result test "$n" -gt 0)" "$1: the LWP programs ran ($n checks)"
}

# The kselftest's verdict: WANT 0 (every test passed; their number from
# its TAP plan) or 4 (KSFT_SKIP, without LWP)
kselftest_check() { # NAME WANT
    local st plan ok bad
    st=$(sed -n 's/^@@kselftest //p' <<<"$ev")
    plan=$(sed -n 's/^@@k 1\.\.\([0-9]*\).*/\1/p' <<<"$ev")
    ok=$(grep -c '^@@k ok ' <<<"$ev")
    bad=$(grep '^@@k not ok ' <<<"$ev")
    if [ "$2" = 4 ]; then
        check "$(result test "$st" = 4 -a "$plan" = 0)" "$1: the lwp kselftest skips (exit ${st:-none}, $(sed -n 's/^@@k 1\.\.0 # //p' <<<"$ev"))"
    else
        check "$(result test "$st" = 0 -a -n "$plan" -a "$ok" = "$plan" -a -z "$bad")" \
            "$1: the lwp kselftest passes (exit ${st:-none}, $ok of ${plan:-no} tests ok)"
        [ -z "$bad" ] || printf '    %s\n' "${bad:0:2000}"
    fi
}

# No kernel warning at all, and none about xstate (any level)
clean_log() { # NAME
    local bad
    bad=$(bad_kernel_lines "$dmesg")
    check "$(result test -n "$dmesg" -a -z "$bad")" \
        "$1: kernel log has no xstate warning, WARNING, BUG, oops or segfault ($(wc -l <<<"$dmesg") lines)"
    [ -z "$bad" ] || printf '    %s\n' "${bad:0:4000}"
    # and no line of error level or worse (<N>, N mod 8 <= 3), such as
    # ACPI's "Unable to load the System Description Tables" without PCI
    bad=$(kernel_error_lines "$dmesg")
    check "$(result test -n "$dmesg" -a -z "$bad")" "$1: kernel log has no line of error level or worse"
    [ -z "$bad" ] || printf '    %s\n' "${bad:0:4000}"
}

# kernel_error_lines DMESG: the lines of a `dmesg -r` of level 0 to 3
kernel_error_lines() {
    awk 'match($0, /^<[0-9]+>/) && substr($0, 2, RLENGTH - 2) % 8 <= 3' <<<"$1"
}

# LWP set up as the series says: XCR0, the xstate lines, LWP_CFG, CPUID
lwp_setup() { # NAME CPU XCR0 SIZE
    local name=$1 cpu=$2 xcr0=$3 size=$4 edx got
    local line="Enabled xstate features 0x$xcr0, context size is $size bytes, using 'standard' format."
    check "$(result grep -qF "x86/fpu: $line" <<<"$dmesg")" "$name: kernel log says \"$line\""
    check "$(result grep -qF "x86/fpu: Supporting XSAVE feature 0x4000000000000000: 'AMD Lightweight Profiling'" <<<"$dmesg")" \
        "$name: kernel log lists XSAVE feature 0x4000000000000000, 'AMD Lightweight Profiling'"
    got=$(sed -n 's/^@@xcr0 //p' <<<"$ev")
    check "$(result test "$got" = "$(printf '%016x' "0x$xcr0")")" "$name: guest XCR0 = ${got:-nothing} (want $xcr0: bit 62 set)"
    edx=$(doc_edx "$cpu")
    check "$(result grep -qF "LWP: features 0x$edx, threshold interrupt vector 0xf5" <<<"$dmesg")" \
        "$name: kernel log says LWP_CFG features 0x$edx (CPUID 8000_001C EDX), vector 0xf5"
    got=$(awk '$1 == "@@cpuid" && $2 == "8000001c" && $3 == 0 { print $4, $7 }' <<<"$ev")
    check "$(result test "$got" = "$edx $edx")" \
        "$name: guest CPUID 8000_001C EAX = EDX = $edx (XCR0[62] and LWP_CFG set; got '${got:-nothing}')"
    check "$(result grep -qw lwp <<<"$(sed -n 's/^@@cpuinfo //p' <<<"$ev")")" "$name: lwp in /proc/cpuinfo"
    lwp_cfg_writes "$name" "$edx"
}

# LWP_CFG as QEMU's lwp_wrmsr_* trace events saw the kernel write it
# (WRMSR, in order): CPU 0's first LWP_CFG is VECTOR 0xf5 (47:40), COREID 0
# (39:32) and [31:0] = EDX's bits that spec 3.08 defines for LWP_CFG
# (6:1 and 31; bit 0 reserved); reboot -f ends with LWP_CBADDR = 0 and
# then LWP_CFG = 0 on one CPU (the syscore shutdown hook)
lwp_cfg_writes() { # NAME EDX
    local w want first tail2
    w=$(sed -n 's/.*\(lwp_wrmsr_[a-z]*\) cpu \([0-9]*\) \(0x[0-9a-f]*\).*/\1 \2 \3/p' "$trace" 2>/dev/null)
    want=$(printf '0x%x' $((0xf5 << 40 | (0x$2 & 0x8000007e))))
    first=$(awk '$1 == "lwp_wrmsr_cfg" && $2 == 0 { print $3; exit }' <<<"$w")
    check "$(result test "$first" = "$want")" "$1: CPU 0's LWP_CFG is $want (vector 0xf5, COREID 0, EDX $2's LWP_CFG bits; got ${first:-none})"
    tail2=$(tail -n 2 <<<"$w" | awk '{ print $1, $3 }' | tr '\n' ' ')
    check "$(result test "$tail2" = "lwp_wrmsr_cbaddr 0x0 lwp_wrmsr_cfg 0x0 ")" \
        "$1: reboot ends with LWP_CBADDR and then LWP_CFG written 0 (last writes: ${tail2:-none})"
}

# LWP hidden from the whole system: XCR0, /proc, CPUID as a program sees it
nolwp_checks() { # NAME
    local got
    got=$(sed -n 's/^@@xcr0 //p' <<<"$ev")
    check "$(result test "$got" = 000000000000021f)" "$1: guest XCR0 = ${got:-nothing} (want 21f: bit 62 clear)"
    check "$(result test -z "$(grep -w lwp <<<"$(sed -n 's/^@@cpuinfo //p' <<<"$ev")")")" "$1: no lwp in /proc/cpuinfo"
    check "$(result test -z "$(grep '^@@interrupts' <<<"$ev")")" "$1: no LWP line in /proc/interrupts"
    check "$(result grep -q '^@@t FAIL: LWP with IRE and INT is available' <<<"$ev")" \
        "$1: a program finds LWP unavailable (CPUID 8000_001C EAX has no IRE, INT)"
    # (the max boot's trace, of the same -trace option, has its writes)
    check "$(result test -f "$trace" -a -z "$(grep lwp_wrmsr "$trace")")" \
        "$1: the kernel never writes LWP_CFG or LWP_CBADDR (QEMU's lwp_wrmsr_* trace events)"
}

if [ "$demo" = 1 ]; then
    boot demo "max,+lwp" 2 demo >/dev/null
    tr -d '\r' <"$log" | sed -n 's/^.*@@demo //p'
    exit 0
fi

# 2. -cpu max,+lwp, 4 vCPUs under MTTCG: everything
boot max "max,+lwp" 4 full
# max under TCG: x87, SSE, AVX, MPX (2), PKRU and now LWP: 0x400000000000021f;
# the standard-format size is still PKRU's end, 2688 + 8 = 2696 (LWP is
# 832 + 128, below it): tests/linux/README.md
lwp_setup max max 400000000000021f 2696
program_checks max
kselftest_check max 0
irq=$(sed -n 's/^@@interrupts *LWP: *//p' <<<"$ev")
sum=0
for v in $irq; do
    case $v in [0-9]*) sum=$((sum + v)) ;; esac
done
check "$(result test "$sum" -gt 0)" "max: /proc/interrupts has an LWP line with the threshold interrupts taken ($sum)"
check "$(result grep -q '^@@online cpu1 after online: 1$' <<<"$ev")" "max: CPU 1 goes offline and online again"
clean_log max

# 3. The Family 15h profiles: LWP in use, no xstate warning
for m in Opteron_G4 Opteron_G5; do
    boot "$m" "$m,+lwp" 1 boot
    # x87, SSE, AVX and LWP; LWP ends the area at 832 + 128 = 960
    lwp_setup "$m" "$m" 4000000000000007 960
    program_checks "$m"
    kselftest_check "$m" 0
    clean_log "$m"
done

# 4. nolwp: the boot parameter turns LWP off for the whole system
boot nolwp "max,+lwp" 1 boot nolwp
nolwp_checks nolwp
kselftest_check nolwp 4
clean_log nolwp

# 5. Debian's perf drives the lwp PMU (tests/linux/lwp-perf.sh)
lwp_perf_boot

# 6. lockdep: the max boot's programs (stress on every CPU included) on a
# PREEMPT_RT kernel with lock and preemption debugging,
# linux/lockdep.config; a report of lockdep, of the wait-context check,
# of DEBUG_ATOMIC_SLEEP or of DEBUG_PREEMPT is a WARNING or BUG line that
# clean_log finds
if ! bz=$("$TOP/scripts/build-linux.sh" lockdep); then
    ko "the lockdep kernel builds (scripts/build-linux.sh lockdep; log $logs/linux-build-lockdep.log)"
else
    boot lockdep "max,+lwp" 4 full
    check "$(result grep -q 'Lock dependency validator' <<<"$dmesg")" \
        "lockdep: the kernel runs lockdep (its banner is in the log)"
    check "$(result grep -q '^<[0-9]*>Linux version .* PREEMPT_RT ' <<<"$dmesg")" \
        "lockdep: the kernel is a PREEMPT_RT one (its version line says so)"
    lwp_setup lockdep max 400000000000021f 2696
    program_checks lockdep
    kselftest_check lockdep 0
    clean_log lockdep
fi

# 7. nolwp-config: the series built with CONFIG_X86_LWP=n hides LWP as
# the nolwp parameter does (linux/nolwp.config)
if ! bz=$("$TOP/scripts/build-linux.sh" nolwp); then
    ko "the CONFIG_X86_LWP=n kernel builds (scripts/build-linux.sh nolwp; log $logs/linux-build-nolwp.log)"
else
    boot nolwp-config "max,+lwp" 1 boot
    nolwp_checks nolwp-config
    kselftest_check nolwp-config 4
    clean_log nolwp-config
fi
exit 0
