#!/usr/bin/env bash
# gpu/integrity-probe.sh --dry-run against the MOCK driver and program of this directory, whose
# outcomes are known (mock_integrity.h: the answer covers the addresses of four tables), so
# that every experiment mode of cuda-trace, the helper, the probe and the report are tested
# without a GPU: a mode that placed a table wrongly, a helper that answered for the wrong
# process or a probe that compared the wrong runs gives a verdict other than the mock's.
#   check.sh <dir holding the built probe and helper>   (run by `make check`)
set -euo pipefail
dest=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
work=$dest/dry-run
rm -rf "$work"
OUT=$work/out INTEGRITY_WORK_DIR=$work/work PAR=4 "$repo/gpu/integrity-probe.sh" --dry-run >"$work.log" 2>&1 ||
    { cat "$work.log"; echo "integrity-probe check: the dry run failed"; exit 1; }
results=$work/out/results.tsv
failures=0
expect_run() { # expect_run <run> <verdict>
    local got
    got=$(awk -F'\t' -v n="mock.$1" '$1 == n { v = $6 } END { print v }' "$results")
    if [ "$got" = "$2" ]; then
        echo "ok   $1: $2"
    else
        echo "FAIL $1: expected '$2', got '${got:-no run}'"
        failures=$((failures + 1))
    fi
}
# the mock's check covers the addresses of 6bd5fb6c, c693336e, 263e8860 and d4082055
for r in native real inplace anon refuse-f8cff951 mirror mirror-exact mirror-slot3 mirror-exact-slot3 \
    mirror-refuse-f8cff951 mirror-needed; do
    expect_run "$r" pass
done
for r in deep shallow remote-own-tables remote-deep mirror-other-helper; do expect_run "$r" "fail 103"; done
for u in f8cff951 a094798c 42d85a81; do expect_run "only-shallow-$u" pass; expect_run "only-deep-$u" pass; done
for u in 6bd5fb6c c693336e 263e8860 d4082055; do
    expect_run "only-shallow-$u" "fail 103"
    expect_run "only-deep-$u" "fail 103"
done
expect() { # expect <description> <command...>
    local what=$1
    shift
    if "$@" >/dev/null 2>&1; then echo "ok   $what"; else echo "FAIL $what"; failures=$((failures + 1)); fi
}
answers=$work/out/probe-answers.tsv
last13002() { awk -F'\t' -v r="$1" '$1 == r && $5 == 13002 { v = $8 } END { print v }' "$answers"; }
expect "probe: the 13002 answers of two randomised processes differ (the mock hashes addresses)" \
    test "$(last13002 aslr-1)" != "$(last13002 aslr-2)"
expect "probe: 13000 is the same in every process" \
    test "$(awk -F'\t' '$5 == 13000 && $7 == 0 { print $8 }' "$answers" | sort -u | wc -l)" = 1
if grep -q 'aslr=off' "$work/work/probe/noaslr-2.out"; then
    expect "probe: without randomisation two processes agree" test "$(last13002 noaslr-1)" = "$(last13002 noaslr-2)"
    expect "probe: a driver kept from its place answers otherwise" test "$(last13002 noaslr-1)" != "$(last13002 noaslr-block)"
else
    echo "skip randomisation cannot be turned off here"
fi
expect "report written, with its sections" grep -q '^## M. The integrity check answered by another process' \
    "$work/out/integrity-report.md"
expect "at most 8 result files" test "$(find "$work/out" -type f | wc -l)" -le 8

# parts P and O against the mock whose answer also covers the pid and pthread_self()
# (MOCK_INTEGRITY_PROCESS): only an oracle with both, and the tables at its addresses, passes
po=$dest/dry-run-po
rm -rf "$po"
OUT=$po/out INTEGRITY_WORK_DIR=$po/work INTEGRITY_PARTS="P O" PAR=4 "$repo/gpu/integrity-probe.sh" --dry-run \
    >"$po.log" 2>&1 || { cat "$po.log"; echo "integrity-probe check: the P/O dry run failed"; exit 1; }
results=$po/out/results.tsv
for r in oracle-pid-self oracle-min oracle-all oracle-min-all; do expect_run "$r" pass; done
for r in oracle-pid oracle-self oracle-none oracle-deep; do expect_run "$r" "fail 103"; done
report=$po/out/oracle-report.md
expect "P: two processes with pid 4242, no randomisation, agree" \
    grep -q 'Two processes with pid 4242 (PID namespaces of their own), without randomisation .*main threads. answers equal; threads at 3e5a00100000: equal' "$report"
expect "P: pids 4242 and 4243 differ" grep -q 'pid 4242 and pid 4243.*answers different; threads at 3e5a00100000: different' "$report"
expect "P: threads at one pthread_self agree, at two differ" \
    grep -q 'twice: answers equal; at 3e5a00100000 and at 3e5a00300000: different' "$report"
expect "P: a fork()ed child answers otherwise (another pid)" grep -q 'fork().*different to the parent' "$report"
expect "P: another stack block at the same pthread_self answers the same (the mock ignores stacks)" \
    grep -q 'stack twice as large.*: equal to the thread' "$report"
if [ "$failures" = 0 ]; then echo "integrity-probe check: PASSED"; else echo "integrity-probe check: $failures FAILED"; fi
[ "$failures" = 0 ]
