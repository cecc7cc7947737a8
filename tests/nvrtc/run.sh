#!/usr/bin/env bash
# NVRTC (CUDA 13's libnvrtc.so.13) run for real through the guest libcuda.so.1 against the Java
# cuda-server on its host-memory backend: tests/nvrtc/nvrtc_compile.c compiles a kernel to PTX
# and to a cubin, and a broken one to a compile error. libnvrtc 13 calls cuInit and asks the
# driver's compute cache (export table da9151d3) around each compile; the guest answers every
# lookup with a miss (docs/export-tables.md), so NVRTC compiles in the process. Checked: the
# outputs, that the cache was asked (IVCUDA_DEBUG trace: slots 1, 3 → 500, 4, 2) and that
# nothing was left unanswered (no "ivcuda:" line on stderr).
#
# libnvrtc.so.13: $NVRTC_LIB, else the nvidia-cuda-nvrtc 13 wheel in /opt/pypi-more/files
# (unpacked into a temporary directory), else the toolkit's or the system's. Absent: one line,
# not a failure. (CUDA 11.8's libnvrtc has no reference to libcuda at all: it never asks.)
#
# usage: tests/nvrtc/run.sh     (from the repository root, after mvn package)
set -uo pipefail
. "$(dirname "$0")/../harness.sh"
harness_start nvrtc

nvrtc=${NVRTC_LIB:-}
if [ -z "$nvrtc" ]; then
    wheel=$(ls /opt/pypi-more/files/nvidia_cuda_nvrtc-13.*.whl 2>/dev/null | head -1)
    if [ -n "$wheel" ] && python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
        "$wheel" "$work/wheel" 2>/dev/null; then
        nvrtc=$(find "$work/wheel" -name libnvrtc.so.13 | head -1)
    fi
fi
for candidate in /usr/local/cuda/lib64/libnvrtc.so.13 $(ldconfig -p 2>/dev/null | awk '/libnvrtc\.so\.13 /{print $NF}'); do
    [ -z "$nvrtc" ] && [ -f "$candidate" ] && nvrtc=$candidate
done
if [ -z "$nvrtc" ] || [ ! -f "$nvrtc" ]; then
    echo "nvrtc: no libnvrtc.so.13 (NVRTC_LIB, the nvidia-cuda-nvrtc wheel in /opt/pypi-more/files, the toolkit): not run"
    exit 0
fi

if ! ${CC:-cc} -O2 -Wall -Wextra -Werror -std=c11 -D_GNU_SOURCE -o "$work/nvrtc_compile" tests/nvrtc/nvrtc_compile.c -ldl; then
    echo "nvrtc: 0 passed, 1 failed (building tests/nvrtc/nvrtc_compile.c)"
    exit 1
fi

. tests/host-memory-server.sh
start_host_memory_server "$region" "$work/server.log" --set region.size=67108864 --set domain.name=nvrtc-test ||
    fail "host-memory server"

IVCUDA_DEBUG=1 IVCUDA_REGION=$region LD_LIBRARY_PATH=$root/guest/target:$(dirname "$nvrtc") timeout 300 \
    "$work/nvrtc_compile" "$nvrtc" >"$work/out" 2>"$work/err"
rc=$?
while read -r status what; do
    if [ "$status" = ok ]; then pass "$what"; else fail "$what"; fi
done <"$work/out"
[ $rc -eq 0 ] || fail "nvrtc_compile exited $rc"
# three compiles that reach the cache: PTX, then the cubin (PTX stage and cubin stage)
misses=$(grep -c 'compute cache slot 3 .* -> 500' "$work/err")
stores=$(grep -c 'compute cache slot 4 ' "$work/err")
keys=$(grep -c 'compute cache slot 1 ' "$work/err")
drops=$(grep -c 'compute cache slot 2 ' "$work/err")
if [ "$misses" -ge 3 ] && [ "$stores" -eq "$misses" ] && [ "$keys" -eq "$drops" ] && [ "$keys" -ge "$misses" ]; then
    pass "NVRTC asked the compute cache: $keys keys, $misses misses, $stores stores, every key dropped"
else
    fail "the compute cache: $keys keys, $misses misses, $stores stores, $drops drops"
fi
unanswered=$(grep '^ivcuda:' "$work/err")
if [ -z "$unanswered" ]; then
    pass "nothing unanswered on stderr"
else
    fail "stderr: $(echo "$unanswered" | head -3 | tr '\n' ' ')"
fi
if kill -0 "$server_pid" 2>/dev/null; then pass "server alive"; else fail "server died"; fi

if [ $failed -gt 0 ]; then
    echo "--- guest stderr (tail)"; grep -v 'cuGetProcAddress' "$work/err" | tail -15
    echo "--- server log (tail)"; tail -10 "$work/server.log"
fi
echo "nvrtc: $passed passed, $failed failed ($nvrtc)"
[ $failed -eq 0 ]
