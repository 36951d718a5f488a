#!/bin/sh
# rr in the guest (tests/linux/rr.sh): a shell script that runs several
# processes (busybox applets, a pipeline, subshells, a background job,
# a dynamic program), whose output is the same in every run.
echo "script start"
seq 1 200 | sort -rn | head -n 3 | tr '\n' ' '; echo
( echo sub1; exit 4 ); echo "subshell exit $?"
sh -c 'exit 7'; echo "sh -c exit $?"
for i in 1 2 3; do
    echo "job $i" >/tmp/rr-script.$i &
done
wait
# sed, not cat: busybox cat copies with sendfile(), whose output rr
# replay -a does not echo (it echoes what the program write()s)
sed -n p /tmp/rr-script.1 /tmp/rr-script.2 /tmp/rr-script.3
rm -f /tmp/rr-script.[123]
echo abc | md5sum
awk 'BEGIN { s = 0; for (i = 1; i <= 10000; i++) s += i * i; print "awk", s }'
/bin/rr-single | grep '^det primes'
echo "script end"
exit 5
