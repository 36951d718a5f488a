# Sourced by tests/linux/kernel.sh: Debian's perf drives the kernel's lwp
# PMU (docs/linux.md, "perf"), checked against a TCG plugin.
# shellcheck shell=bash disable=SC2154,SC2034  # kernel.sh's variables
#
# lwp_perf_boot: builds the guest (tests/linux/lwp-perf-init as /init,
# Debian's perf and its libraries as tests/linux/fetch.sh perf unpacks
# them, lwp-perf-work linked at 0x10000000, lwp-linux) and the plugin
# tests/linux/lwp-perf-plugin.c, boots -cpu max,+lwp -smp 2 (one TCG
# thread, so that the plugin sees one stream of instructions at a time)
# and checks what perf recorded against what the plugin saw.

lwp_perf_boot() {
    local r=$out/initramfs-perf pdir so glib exe
    local log=$logs/linux-lwp-perf.serial plog=$logs/linux-lwp-perf.plugin
    local qstatus=0 start secs why
    echo "=== our kernel, -cpu max,+lwp -smp 2: Debian's perf record -e lwp/.../u"
    rm -rf "$r"
    if ! pdir=$("$src/fetch.sh" perf) || ! perf_tree "$r" "$busybox" "$pdir" ||
       ! gcc -static -O2 -Wall -Werror -pthread -Wl,-Ttext-segment=0x10000000 \
            -o "$r/bin/lwp-perf-work" "$src/lwp-perf-work.c" ||
       ! cp "$root/bin/lwp-linux" "$r/bin/lwp-linux"; then
        ko "perf: the guest builds (Debian's perf from tests/linux/fetch.sh perf, lwp-perf-work)"
        return
    fi
    cp "$src/lwp-perf-init" "$r/init"
    chmod 755 "$r/init"
    cpio_gz "$r" >"$out/initramfs-perf.gz"
    so=$out/lwp-perf-plugin.so
    read -r -a glib <<<"$(pkg-config --cflags glib-2.0)"
    if ! gcc -shared -fPIC -O2 -Wall -Werror "${glib[@]}" -I "$SRC/include/qemu" \
            -o "$so" "$src/lwp-perf-plugin.c"; then
        ko "perf: tests/linux/lwp-perf-plugin.c builds"
        return
    fi
    exe=$r/bin/lwp-perf-work
    rm -f "$log" "$plog"
    start=$(date +%s)
    timeout "$boot_timeout" "$qemu" "${firmware[@]}" -M pc -accel tcg,thread=single \
        -cpu max,+lwp -m 512M -smp 2 -no-reboot \
        -display none -vga none -nic none -monitor none \
        -serial "file:$log" -kernel "$bz" -initrd "$out/initramfs-perf.gz" \
        -plugin "$so,$(plugin_span "$exe"),period=10007" -d plugin -D "$plog" \
        -append "console=ttyS0 quiet panic=-1 no_timer_check" </dev/null || qstatus=$?
    secs=$(($(date +%s) - start))
    [ -f "$log" ] || : >"$log"
    ev=$(tr -d '\r' <"$log" | grep -ao '@@.*' || true)
    why=$(boot_verdict "$qstatus" "$boot_timeout" "$ev" "$log")
    check "$(result test -z "$why")" "perf: boots, runs /init to its end and reboots, ${secs} s$why (log $log)"
    dmesg=$(sed -n 's/^@@dmesg //p' <<<"$ev")
    lwp_perf_checks "$exe" "$plog"
    clean_log perf
}

# lwp_perf_where EXE: the function of EXE at each hex address on stdin
# (binutils' addr2line, from the symbol table as perf does)
lwp_perf_where() {
    sed 's/^/0x/' | addr2line -f -e "$1" | awk 'NR % 2 == 1'
}

lwp_perf_checks() {
    local exe=$1 plog=$2 edx want got n run ips pips pby rep tids cpus
    local names=(x val ire bre dme cnh rnh) i
    edx=$(doc_edx max)
    want=
    for i in 1 2 3 4 5 6; do
        [ $((0x$edx >> i & 1)) = 0 ] || want+="${names[$i]} "
    done
    got=$(sed -n 's/^@@pmu //p' <<<"$ev")
    check "$(result grep -qE "^type [0-9]+ format config:0-7 events $(xargs -n 1 <<<"$want" | sort | tr '\n' ' ')\$" <<<"$got")" \
        "perf: the lwp PMU is registered with a dynamic type, format event=config:0-7 and the events of CPUID 8000_001C EDX $edx (${want% }) (got '$got')"
    for run in 1 2 3; do
        ips=$(sed -n "s/^@@r$run s .* \([0-9a-f]\{6,\}\) .*/\1/p" <<<"$ev")
        pips=$(sed -n "s/^$run ip //p" "$plog" 2>/dev/null)
        n=$(grep -c . <<<"$ips")
        check "$(result test -n "$ips" -a "$ips" = "$pips")" \
            "perf: run $run, each of perf script's $n samples has the address of every 10007th user instruction of the plugin's stream of the same run, in order ($(grep -c . <<<"$pips") there; first difference: $(diff <(echo "$ips") <(echo "$pips") | grep -m 1 '^[<>]' || echo none))"
        pby=$(lwp_perf_where "$exe" <<<"$pips" | sort | uniq -c | awk '{ print $2 "=" $1 }' | tr '\n' ' ')
        rep=$(sed -n "s/^@@r$run report [0-9.]*% *\([0-9]*\) *\[\.\] \([^ ]*\).*/\2=\1/p" <<<"$ev" | sort | tr '\n' ' ')
        if [ "$run" != 3 ]; then
            check "$(result test -n "$pby" -a "$rep" = "$pby")" \
                "perf: run $run, perf report's samples per function are the plugin's instructions per function / 10007, counted as above: $pby(perf report: ${rep:-nothing})"
        fi
        tids=$(sed -n "s/^@@r$run s *\([0-9]*\) .*/\1/p" <<<"$ev" | sort -u | wc -l)
        cpus=$(sed -n "s/^@@r$run s *[0-9]* *\[\([0-9]*\)\].*/\1/p" <<<"$ev" | sort -u | tr '\n' ' ')
        check "$(result test "$tids" = 1)" "perf: run $run, every sample has the program's one TID ($tids TIDs)"
        if [ "$run" = 3 ]; then
            check "$(result test "$(wc -w <<<"$cpus")" = 2)" \
                "perf: run 3, moved between CPUs ($(sed -n 's/^@@r3 ok moves //p' <<<"$ev") moves): samples with the CoreId of both CPUs (CPUs ${cpus:-none})"
        else
            check "$(result test -n "$cpus")" "perf: run $run, samples carry a CPU (${cpus:-none})"
        fi
    done
    lwp_perf_dme "$exe"
    lwp_perf_threads "$exe"
    lwp_perf_attach
    sed -n 's/^@@r[0-9]* error /    /p' <<<"$ev" | head -n 10
    n=$(grep -c '^@@r4 out PASS:' <<<"$ev")
    check "$(result test "$n" -gt 0 -a -z "$(grep '^@@r4 out FAIL:' <<<"$ev")")" \
        "perf: lwp-linux stress 250000 under perf record -e lwp/ire/u loads its own LWPCB and takes LWP over: its $n checks pass ($(sed -n 's/^@@r4 samples //p' <<<"$ev") samples before)"
    program_checks perf
    for e in lwp/ire/ lwp/ire/k lwp/event=7/u lwp/event=1000/u -F -c1; do
        got=$(sed -n "s|^@@refused $e ||p" <<<"$ev")
        check "$(result test -n "$got" -a "$got" != 0)" "perf: perf record $e is refused (exit status ${got:-none})"
    done
}

# Run 5, lwp/dme/u -c 1009 of lwp-perf-work dme (its header comment: 131072
# loads by work_m's MOVZBL, each missing every level of the default cache
# model, DRAM latency 256): the misses of the C library's start-up come
# first, so work_m gets 131072 / 1009 samples or one more; each names the
# MOVZBL, with WEIGHT 256 and as ADDR the first byte of a page of the
# mapping, 1009 pages (mod 16384) after the sample before
lwp_perf_dme() {
    local exe=$1 buf mov lines n bad=0 prev='' ip a w off
    buf=$(sed -n 's/^@@r5 out buf //p' <<<"$ev")
    mov=$(objdump -d --no-show-raw-insn --disassemble=work_m "$exe" |
        awk '$2 == "movzbl" { sub(":", "", $1); print $1; exit }')
    lines=$(sed -n 's/^@@r5 s [0-9]* *\[[0-9]*\] *\([0-9a-f]*\) *\([0-9]*\) *\([0-9a-f]*\) work_m$/\1 \2 \3/p' <<<"$ev")
    n=$(grep -c . <<<"$lines")
    while read -r a w ip; do
        [ -n "$a" ] || continue
        off=$((0x$a - buf))
        if [ "$ip" != "$mov" ] || [ "$w" != 256 ] || [ "$off" -lt 0 ] ||
           [ "$off" -ge $((16384 * 4096)) ] || [ $((off % 4096)) != 0 ] ||
           { [ -n "$prev" ] && [ $(((off - prev + 16384 * 4096) % (16384 * 4096))) != $((1009 * 4096)) ]; }; then
            bad=$((bad + 1))
        fi
        prev=$off
    done <<<"$lines"
    check "$(result test -n "$buf" -a -n "$mov" -a \( "$n" = 129 -o "$n" = 130 \) -a "$bad" = 0)" \
        "perf: run 5, lwp/dme/u -c 1009: work_m has 129 or 130 samples (got $n), each at its MOVZBL ($mov) with WEIGHT 256 (DRAM) and as ADDR a page of the mapping at ${buf:-none}, 1009 pages after the one before ($bad are not)"
}

# Run 6, lwp-perf-work threads A B C: work_a, work_b and work_c, each in
# its own thread, run A, B and C iterations of their loop (dec, jnz) and
# ret: 2 x iterations + 1 instructions in one stretch, which lwp-perf-init
# makes 59, 179 and 119 periods of 10007.  Each thread has its own LWPCB
# and counter, which stores a record at every 10007th user instruction of
# the thread; whatever the number of instructions the thread ran before,
# that many consecutive periods hold exactly that many records.  So each
# function gets exactly (2 x iterations + 1) / 10007 samples, all with one
# TID, a different one for each.  (The plugin's stream is that of all
# threads at once, so it cannot say more.)
lwp_perf_threads() {
    local exe=$1 f i=0 n got want tids all='' bad='' shape
    local -a it
    read -r -a it <<<"$(sed -n 's/^@@r6 iterations //p' <<<"$ev")"
    for f in work_a work_b work_c; do
        n=${it[$i]:-0}
        i=$((i + 1))
        # dec, jnz, ret: the 2n + 1 instructions above
        shape=$(objdump -d --no-show-raw-insn --disassemble=$f "$exe" |
            awk -v f="<$f>:" '$2 == f { on = 1; next } on && NF == 0 { exit }
                on { printf "%s ", $2 }')
        got=$(grep -c "^@@r6 s .* $f\$" <<<"$ev")
        tids=$(sed -n "s/^@@r6 s *\([0-9]*\) .* $f\$/\1/p" <<<"$ev" | sort -u)
        if [ "$n" -gt 0 ] && [ $(((2 * n + 1) % 10007)) = 0 ] &&
           [ "$shape" = "dec jne ret " ]; then
            want=$(((2 * n + 1) / 10007))
        else
            want="none (iterations '${n}', $f: '${shape}')"
        fi
        [ "$got" = "$want" ] && [ "$(grep -c . <<<"$tids")" = 1 ] || bad+="$f "
        all+="$f=$got of $want (TID ${tids//$'\n'/ }) "
    done
    [ "$(sed -n 's/^@@r6 s *\([0-9]*\) .* work_[abc]$/\1/p' <<<"$ev" | sort -u | wc -l)" = 3 ] ||
        bad+="TIDs "
    check "$(result test -z "$bad")" \
        "perf: run 6, three threads with inherited events: each thread's function has exactly (2 x iterations + 1) / 10007 samples, with the thread's own TID: ${all% }${bad:+ (wrong: ${bad% })}"
}

# Run 7, perf record -p of lwp-perf-work wait: attached to the program
# while it waits on a FIFO, its events enabled through perf's control
# FIFO (acknowledged) before the program is let go.  Its one thread then
# runs work_a, work_b and work_c for run 6's iterations, 59, 179 and 119
# periods of 10007 (run 6's check has their shape): the PMU maps the
# thread's LWPCB when the event first runs in it, a running thread it was
# not created with, and each function gets exactly that many samples, all
# with the program's PID as TID
lwp_perf_attach() {
    local f i=0 n got want pid tids all='' bad=''
    local -a it
    read -r -a it <<<"$(sed -n 's/^@@r6 iterations //p' <<<"$ev")"
    pid=$(sed -n 's/^@@r7 pid \([0-9]*\) ack ack$/\1/p' <<<"$ev")
    for f in work_a work_b work_c; do
        n=${it[$i]:-0}
        i=$((i + 1))
        if [ "$n" -gt 0 ] && [ $(((2 * n + 1) % 10007)) = 0 ]; then
            want=$(((2 * n + 1) / 10007))
        else
            want="none (iterations '$n')"
        fi
        got=$(grep -c "^@@r7 s .* $f\$" <<<"$ev")
        [ "$got" = "$want" ] || bad+="$f "
        all+="$f=$got of $want "
    done
    tids=$(sed -n 's/^@@r7 s *\([0-9]*\) .*/\1/p' <<<"$ev" | sort -u | tr '\n' ' ')
    [ -n "$pid" ] && [ "$tids" = "$pid " ] || bad+="TIDs "
    grep -q '^@@r7 program exit 0$' <<<"$ev" && grep -q '^@@r7 ok$' <<<"$ev" || bad+="exit "
    check "$(result test -z "$bad")" \
        "perf: run 7, perf record -p of the running program, enabled before it is let go: ${all}with its PID ${pid:-none} as TID (TIDs: ${tids:-none})${bad:+ (wrong: ${bad% })}"
}

