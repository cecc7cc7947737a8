#!/usr/bin/env bash
# Metrics (docs/sharing.md, issue 15) as an admin reads them: a cuda-server on the host-memory
# backend serves a known workload of the guest library's (tests/xlang/xfer.c), then
# `ivshmem-provisioner metrics --output` asks it for its figures and the Prometheus client's own
# parser reads the file (tests/xlang/metrics_check.py). Run by ivshmem-provisioner's module at
# integration-test, after its jar is built (the guest's module, which runs tests/xlang, builds
# before it).
#
# usage: tests/metrics/run.sh          (from the repository root, after the guest library, the
#                                       server's and the provisioner's jars are built)
set -uo pipefail
. "$(dirname "$0")/../harness.sh"
harness_start metrics
gcc -std=c11 -O2 -Wall -Werror -pthread -Iguest/include -o "$work/xfer" tests/xlang/xfer.c -Lguest/target -lcuda || exit 1
region_wait=guest/target/ivcuda-region-wait
export LD_LIBRARY_PATH=$root/guest/target

# Metrics (docs/sharing.md, issue 15): a second server as the hook would leave one — its instance
# configuration in a runtime directory, its pidfile beside it; a share of 25 % that it runs
# unshared (mps.unavailable=unshared) — serves a known workload; then `ivshmem-provisioner metrics
# --output` (what node_exporter's textfile collector reads) asks it for its figures, and the
# Prometheus client's own parser (python3-prometheus-client) reads the file.
metrics_uuid=5e1f0000-0000-4000-8000-00000000a11c
metrics_region=/dev/shm/ivcuda-xlang-metrics-$$
mkdir -p "$work/run"
cat >"$work/run/$metrics_uuid.properties" <<EOF
region.path=$metrics_region
region.size=67108864
backend=host-memory
pidfile=$work/run/$metrics_uuid.pid
domain.name=xlang-metrics
domain.uuid=$metrics_uuid
memory.quota=33554432
compute.share=25
mps.unavailable=unshared
EOF
printf 'runtime.dir=%s\nlog.dir=%s\n' "$work/run" "$work" >"$work/host.properties"
prometheus_python=
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import prometheus_client.parser' 2>/dev/null; then prometheus_python=$p; break; fi
done
if [ -z "$prometheus_python" ] && [ "${CI:-}" != true ] && [ "${IVCUDA_CI:-}" != 1 ]; then
    echo "skip metrics through a Prometheus parser: no python3-prometheus-client here (apt-get install python3-prometheus-client; CI installs it)"
else
    java -jar cuda-server/target/cuda-server.jar --config "$work/run/$metrics_uuid.properties" >"$work/metrics.log" 2>&1 &
    metrics_pid=$!
    if "$region_wait" --pid "$metrics_pid" "$metrics_region" 30 >/dev/null; then
        # 4 copies each way of 1000003 bytes (pageable, pinned, pinned async, pageable async), then
        # a process that holds 1 MiB (one ivc_mem_alloc: its by-function series) while the figures are taken
        IVCUDA_REGION=$metrics_region "$work/xfer" copy 1000003 1 >/dev/null 2>&1
        IVCUDA_REGION=$metrics_region "$work/xfer" hold 1048576 >"$work/metrics-hold.out" 2>&1 &
        metrics_hold=$!
        for _ in $(seq 50); do grep -q held "$work/metrics-hold.out" && break; sleep 0.1; done
        vm="domain=\"xlang-metrics\",uuid=\"$metrics_uuid\""
        if java -jar ivshmem-provisioner/target/ivshmem-provisioner.jar --config "$work/host.properties" metrics \
                --output "$work/ivcuda.prom" >"$work/metrics.out" 2>&1 \
            && out=$("${prometheus_python:-python3}" tests/xlang/metrics_check.py "$work/ivcuda.prom" \
                counter:ivcuda_calls gauge:ivcuda_gpu_memory_held_bytes counter:ivcuda_process_requests \
                "ivcuda_copied_to_device_bytes_total{$vm}=4000012" "ivcuda_copied_to_host_bytes_total{$vm}=4000012" \
                "ivcuda_calls_total{$vm,function=\"ivc_mem_alloc\"}=3" "ivcuda_call_errors_total{$vm,function=\"ivc_mem_alloc\"}=0" \
                "ivcuda_gpu_memory_held_bytes{$vm}=1048576" "ivcuda_gpu_memory_quota_bytes{$vm}=33554432" \
                "ivcuda_guest_processes{$vm}=1" "ivcuda_process_gpu_memory_held_bytes{$vm}=1048576" \
                "ivcuda_compute_share_percent{$vm,state=\"unshared\"}=25" "ivcuda_busy_seconds_total{$vm}>0" \
                counter:ivcuda_process_calls "ivcuda_process_calls_total{$vm,function=\"ivc_mem_alloc\"}=1" 2>&1); then
            pass "metrics: ivshmem-provisioner metrics read by the Prometheus client's parser"
        else
            fail "metrics: $(cat "$work/metrics.out") $(echo "$out" | tail -5)"
        fi
        kill -9 "$metrics_hold" 2>/dev/null
        wait "$metrics_hold" 2>/dev/null
    else
        fail "metrics server not READY: $(tail -3 "$work/metrics.log")"
    fi
    kill "$metrics_pid" 2>/dev/null
    wait "$metrics_pid" 2>/dev/null
fi
rm -f "$metrics_region"

echo "metrics: $passed passed, $failed failed"
[ $failed -eq 0 ]
