#!/usr/bin/env bash
# cudart's integrity check end to end without a GPU: a program playing cudart (integrity_app.c)
# through the real guest libcuda.so.1, the real Java cuda-server (host-memory backend) and its
# integrity oracles (host-tools/) loading the MOCK driver host-tools/test/mock_libcuda.c, whose
# made-up check covers pid, pthread_self, the two tables' addresses and the slot-1 word. Then:
# the oracles are gone once their processes are reclaimed.
# usage: tests/integrity/run.sh   (from the repository root, after the build)
# Prints "integrity: N passed, M failed"; exits non-zero when M > 0. Needs user+PID namespaces
# (root, or unprivileged user namespaces): without them it says so in one line and passes.
set -uo pipefail
. "$(dirname "$0")/../harness.sh"
harness_start integrity

oracle=$root/host-tools/target/ivcuda-integrity-oracle
mock=$root/host-tools/target/mock/libcuda.so.1
[ -x "$oracle" ] && [ -f "$mock" ] || { echo "integrity: build host-tools first ($oracle, $mock)"; exit 1; }
# the oracle's own test says whether namespaces work here
if ! probe=$(host-tools/target/tests/test_oracle "$oracle" "$mock" 2>&1); then
    if [ "$?" = 77 ]; then echo "integrity: skipped, $(echo "$probe" | grep '^skip' | head -1)"; exit 0; fi
fi
gcc -std=c11 -O2 -Wall -Werror -pthread -Ihost-tools/test -o "$work/app" tests/integrity/integrity_app.c \
    -Lguest/target -lcuda || exit 1

. tests/host-memory-server.sh
start_host_memory_server "$region" "$work/server.log" --set owner.timeout.ms=1500 \
    --set integrity.oracle="$oracle" --set integrity.driver="$mock" --set integrity.oracles=4 \
    --set integrity.timeout.ms=10000 || exit 1
export IVCUDA_REGION=$region LD_LIBRARY_PATH=$root/guest/target

if out=$(timeout 120 "$work/app" 2>&1); then pass "the mock's answers through guest, server and oracles"
else fail "the mock's answers: $(echo "$out" | grep -v '^ok' | tail -5)"; fi
echo "$out" | sed 's/^/     /'
started=$(grep -c 'integrity oracle for pid [0-9]* started' "$work/server.log")
[ "$started" = 2 ] && pass "two oracles: the process and its forked child" || fail "oracles started: $started (want 2)"

# reclaim kills them: the oracles' processes (named in the log) are gone
gone=1
for p in $(sed -n 's/.*integrity oracle for pid [0-9]* started (process \([0-9]*\)).*/\1/p' "$work/server.log"); do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && gone=0
done
[ $gone = 1 ] && pass "the oracles are gone once their processes are reclaimed" || fail "an oracle outlived its process"
kill -0 "$server_pid" 2>/dev/null && pass "server alive" || fail "server died: $(tail -3 "$work/server.log")"
echo "integrity: $passed passed, $failed failed"
[ "$failed" = 0 ]
