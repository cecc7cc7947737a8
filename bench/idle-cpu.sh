#!/usr/bin/env bash
# Idle server CPU and wake-up latency, plain vs doorbell mode (issue 4). No GPU needed: the
# server runs the host-memory backend (the transport's costs are what is measured; the GPU
# backend adds nothing while idle). Per mode: start a cuda-server on a region file, attach
# CHANNELS guest threads through the guest library (one call each, then they sleep), read the
# server's CPU time over SECONDS, then time calls after 200 ms of idleness (a parked server's
# wake-up) and back-to-back calls (busy round trip). In doorbell mode qemu_peer.py connects to the
# server's socket as QEMU does and hands the guest library the server's eventfds to ring.
#
# usage: bench/idle-cpu.sh [CHANNELS] [SECONDS]     (defaults 8 and 30; after mvn package and make -C guest)
#        CHANNELS 0: no guest process attaches (only the idle window; no wake-up or busy figures)
#        MODES=doorbell bench/idle-cpu.sh   only the modes named (default "plain doorbell")
#        The server starts through the package's launcher (packaging/files/ivcuda-server), with its JVM options.
#        SERVER_JAVA_OPTS="-Xmx256m ..." bench/idle-cpu.sh   (more JVM options, after the launcher's)
#        SERVER_LAUNCHER=java bench/idle-cpu.sh   plain "java $SERVER_JAVA_OPTS -jar" instead, without the
#        launcher's options (JVM defaults unless SERVER_JAVA_OPTS says otherwise)
#        SERVER_JAR=/elsewhere/cuda-server.jar bench/idle-cpu.sh   another build of the server (to compare)
#        PIN=1 bench/idle-cpu.sh   server on CPU 0, guest program on CPU 1 (taskset): on a small or
#        busy machine the two may otherwise share one CPU, and each call then waits for the other's
#        spin budget to yield — in both modes alike.
# Prints a markdown table; raw output in $OUT (default ./out/idle-cpu).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
channels=${1:-8}
seconds=${2:-30}
out=${OUT:-$root/out}/idle-cpu
mkdir -p "$out"
work=$(mktemp -d /tmp/ivcuda-idle.XXXXXX)
server_pid=
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill "$server_pid"; wait "$server_pid" || true; fi
    rm -f /dev/shm/ivcuda-idle-$$-*
    rm -rf "$work"
}
trap cleanup EXIT

gcc -std=c11 -O2 -Wall -Werror -pthread -o "$work/idle_bench" bench/idle/idle_bench.c -Lguest/target -lcuda

region_wait=$root/guest/target/ivcuda-region-wait # the one wait for READY (built with the guest library)

modes=${MODES:-plain doorbell}
launcher=${SERVER_LAUNCHER:-package}
jar=${SERVER_JAR:-$root/cuda-server/target/cuda-server.jar}
if [ "$launcher" = java ]; then
    # shellcheck disable=SC2206 # the options are words on purpose
    server=(java ${SERVER_JAVA_OPTS:-} -jar "$jar")
else
    server=(env IVCUDA_HOME="$(dirname "$jar")" sh packaging/files/ivcuda-server)
    for option in ${SERVER_JAVA_OPTS:-}; do server+=("-J$option"); done
fi
for mode in $modes; do
    region=/dev/shm/ivcuda-idle-$$-$mode
    socket=$work/$mode.sock
    pin_server=(); pin_guest=()
    if [ "${PIN:-0}" = 1 ]; then pin_server=(taskset -c 0); pin_guest=(taskset -c 1); fi
    "${pin_server[@]}" "${server[@]}" --set region.path="$region" --set region.size=67108864 \
        --set backend=host-memory --set mode="$mode" --set doorbell.socket="$socket" --set doorbell.vectors=2 \
        --set channel.count=$((channels + 2)) >"$out/server-$mode.log" 2>&1 &
    server_pid=$!
    "$region_wait" --pid "$server_pid" "$region" 30 >/dev/null ||
        { echo "server ($mode) not ready; see $out/server-$mode.log"; exit 1; }
    run=("${pin_guest[@]}" "$work/idle_bench" "$server_pid" "$channels" "$seconds" 20 20000)
    if [ "$mode" = doorbell ]; then run=(python3 bench/idle/qemu_peer.py "$socket" 2 "${run[@]}"); fi
    IVCUDA_REGION=$region LD_LIBRARY_PATH=$root/guest/target "${run[@]}" >"$out/$mode.txt" 2>"$out/$mode.err"
    if [ "$mode" = doorbell ]; then
        # QEMU (qemu_peer's command) left: the server must stop by itself
        for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$server_pid" 2>/dev/null; then echo "doorbell server did not stop after its peer left"; exit 1; fi
        wait "$server_pid" && echo "doorbell server exited 0 after its peer left" >"$out/doorbell-exit.txt"
    else
        kill "$server_pid"; wait "$server_pid" || true
    fi
    server_pid=
done

value() { awk -v k="$2" '$1 == k {print $2}' "$out/$1.txt"; }
echo "| mode | idle CPU, % of a core (stat) | idle CPU (schedstat) | wake-up p50 / p90 / max µs | busy round trip p50 / p90 µs |"
echo "|---|---|---|---|---|"
for mode in $modes; do
    echo "| $mode | $(value "$mode" idle_cpu_stat_percent) | $(value "$mode" idle_cpu_schedstat_percent) |" \
         "$(value "$mode" wake_p50_us) / $(value "$mode" wake_p90_us) / $(value "$mode" wake_max_us) |" \
         "$(value "$mode" busy_p50_us) / $(value "$mode" busy_p90_us) |"
done
echo "($channels idle channels, ${seconds} s; server: $jar, $launcher launcher, JVM options ${SERVER_JAVA_OPTS:-none} beyond it; pinned: ${PIN:-0}; $(nproc) CPUs, $(uname -r), $(java -version 2>&1 | head -1))"
for mode in $modes; do
    echo "$mode server threads, ms of CPU (times run) in the idle window: $(awk '$1 == "idle_thread_ms" {printf "%s %s (%s), ", $2, $3, $4}' "$out/$mode.txt")"
done
