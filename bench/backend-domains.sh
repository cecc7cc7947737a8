#!/usr/bin/env bash
# Round trip and bandwidth through a back-end domain against a host-served VM, in the same run
# on the same machine (docs/benchmarks/backend-domains.md). No GPU, no libvirt: QEMU directly,
# the host-memory backend, the same front-end guest and probe (vm/frontend-probe.c) both ways.
#
#   host-served:  front-end QEMU --region file-- cuda-server on the host (and again with the
#                 server's spin budget raised to 20 ms: see docs/benchmarks/backend-domains.md)
#   back-end:     front-end QEMU --region file-- back-end QEMU (1 GiB) -- cuda-server inside it,
#                 on the device's sysfs resource2 (the path a back-end domain's agent gives it)
#
# The back-end guest here runs the server itself instead of the agent (vm/build-backend-guest.sh
# with the server jar as its "agent"): the data path is the same; the agent's part, choosing and
# starting the server from the control region, is the integration test's (BackendDomainsIT).
#
# usage: bench/backend-domains.sh [--accel tcg|kvm] [--runs N] [--out DIR]
#   run from the repository root after `mvn -B -q package -DskipTests` (guest library and
#   cuda-server jar); QEMU (qemu-system-x86_64), gcc, and what vm/build-guest.sh needs.
#   --runs N (default 3): each path N times, alternating, so that the spread shows.
# Output: a markdown table on stdout and in DIR/backend-domains.md (default ./out), the consoles
# and server logs in DIR/logs. Exit status non-zero only if it could not measure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
accel=tcg
runs=3
out=$root/out
while [ $# -gt 0 ]; do
    case "$1" in
        --accel) accel=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "usage: $0 [--accel tcg|kvm] [--runs N] [--out DIR]" >&2; exit 2 ;;
    esac
done
jar=$root/cuda-server/target/cuda-server.jar
[ -f "$jar" ] && [ -f guest/target/libcuda.so.1 ] || { echo "$0: build first (mvn -B -q package -DskipTests)" >&2; exit 2; }
mkdir -p "$out/logs"
logs=$(cd "$out/logs" && pwd)
work=$(mktemp -d /tmp/ivcuda-bebench.XXXXXX)
region=/dev/shm/ivcuda-bebench-$$
size=64M
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -f "$region"
    rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=vm/backend-lib.sh
. vm/backend-lib.sh
# The same JVM options for the host's server and the back-end's (vm/build-backend-guest.sh's).
java_opts=$backend_java_opts
qemu=(qemu-system-x86_64 -accel "$accel" -nodefaults -display none -no-reboot)
[ "$accel" = kvm ] && qemu+=(-cpu host)

echo "== guests" >&2
frontend_guest "$work/frontend" "--rounds 2 --pause-ms 200" >&2
# QEMU's pc machine puts the first free slot at 00:02.0 (no other devices: -nodefaults); the
# back-end's ivshmem device is placed at 00:04.0 explicitly
vm/build-backend-guest.sh --java-opts "$java_opts" \
    --agent-args "--set region.path=/sys/bus/pci/devices/0000:00:04.0/resource2 --set region.size=67108864 --set region.kind=device --set backend=host-memory" \
    "$out/backend-guest" guest/target "$jar" "$jar" >&2

frontend() { # label: boots the front-end on $region, waits for its power-off
    "${qemu[@]}" -m 256 -serial "file:$logs/$1-frontend.log" \
        -kernel "$work/frontend/vmlinuz" -initrd "$work/frontend/initramfs.cpio.gz" -append "console=ttyS0 panic=-1 quiet" \
        -object "memory-backend-file,id=hm,mem-path=$region,size=$size,share=on" -device ivshmem-plain,memdev=hm &
    local qp=$!
    pids+=("$qp")
    wait "$qp" || true
    grep -aq IVCUDA-GUEST-DONE "$logs/$1-frontend.log" || { echo "$0: $1: the front-end did not finish" >&2; return 1; }
}

host_run() { # label [server settings]
    rm -f "$region"
    # shellcheck disable=SC2086
    java $java_opts -jar "$jar" --set region.path="$region" --set region.size=67108864 --set backend=host-memory ${2:-} \
        >"$logs/$1-server.log" 2>&1 &
    local sp=$!
    pids+=("$sp")
    wait_for "$logs/$1-server.log" "CudaServer: ready" 120
    frontend "$1"
    kill "$sp"
    wait "$sp" 2>/dev/null || true
}

backend_run() { # label
    rm -f "$region"
    truncate -s "$size" "$region"
    local t0=$SECONDS
    "${qemu[@]}" -m 1024 -serial "file:$logs/$1-backend.log" \
        -kernel "$out/backend-guest/vmlinuz" -initrd "$out/backend-guest/initramfs.cpio.gz" \
        -append "console=ttyS0 panic=-1 quiet" \
        -object "memory-backend-file,id=hm,mem-path=$region,size=$size,share=on" -device ivshmem-plain,memdev=hm,addr=0x4 &
    local bp=$!
    pids+=("$bp")
    wait_for "$logs/$1-backend.log" "CudaServer: ready" 600
    echo "$1: back-end boot to server ready: $((SECONDS - t0)) s" >&2
    echo "$((SECONDS - t0))" >"$logs/$1-backend-ready-seconds"
    frontend "$1"
    kill "$bp"
    wait "$bp" 2>/dev/null || true
}

field() { # log, pattern, key
    grep -a "$2" "$1" | head -1 | tr -d '\r' | tr ' ' '\n' | sed -n "s/^$3=//p"
}

echo "== runs ($accel, $runs each, alternating)" >&2
for ((r = 1; r <= runs; r++)); do
    host_run "host-$r"
    # the host's server spins 50 µs (wait.spin.us) before it backs off to sleeps of up to 1 ms;
    # a guest under TCG takes longer than that between two calls: this run spins for 20 ms
    host_run "hostspin-$r" "--set wait.spin.us=20000"
    backend_run "backend-$r"
done

{
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD), QEMU $accel, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "| run | path | cuCtxSynchronize p50 µs | mean µs | HtoD MB/s | DtoH MB/s | back-end boot to ready, s |"
    echo "|---|---|---|---|---|---|---|"
    for ((r = 1; r <= runs; r++)); do
        for path in host hostspin backend; do
            log=$logs/$path-$r-frontend.log
            ready=-
            [ "$path" = backend ] && ready=$(cat "$logs/$path-$r-backend-ready-seconds")
            case $path in
                host) what="host-served" ;;
                hostspin) what="host-served, wait.spin.us=20000" ;;
                backend) what="back-end domain" ;;
            esac
            echo "| $r | $what |" \
                "$(field "$log" "IVCUDA-BENCH roundtrip" p50_us) | $(field "$log" "IVCUDA-BENCH roundtrip" mean_us) |" \
                "$(field "$log" "dir=HtoD" MBps) | $(field "$log" "dir=DtoH" MBps) | $ready |"
        done
    done
} | tee "$out/backend-domains.md"
