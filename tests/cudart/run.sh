#!/usr/bin/env bash
# Runtime-API programs (tests/cudart/*.cu), built with nvcc's defaults (static cudart) by every
# CUDA toolkit found, run unmodified through the guest libcuda.so.1 (LD_LIBRARY_PATH=guest/target)
# against the Java cuda-server on its host-memory backend.
#
# What this backend lets them show: cudart's whole initialisation up to its integrity check
# (every lookup resolves, every export table it asks for is there and answers) and that the
# library survives cudart giving up and dlclosing it. The integrity check's answer is computed
# by the real driver over its version and device: the host-memory backend has neither, the guest
# library says so, and cudart stops there (cudaErrorNotSupported). So on this backend every
# program must stop at its first runtime call with that error and that one explanation, and
# nothing else unanswered on the way. NVIDIA's user-space driver alone (Debian's libcuda1 535)
# cannot answer it either without its kernel module: measured in docs/export-tables.md, "Why CI
# stops at the integrity check". On a GPU machine the same programs run to PASSED,
# natively and through ivcuda: gpu/cudart.sh.
#
# Toolkits: CUDA 13 (`nvcc` on PATH or /usr/local/cuda/bin), CUDA 11.8 (Debian's, unpacked by
# tests/cudart/unpack-cuda-11.8.sh into /opt/ivcuda-cuda-11.8; CUDA11_ROOT overrides). A toolkit
# that is absent is one line of output, not a failure.
#
# usage: tests/cudart/run.sh     (from the repository root, after mvn package)
set -uo pipefail
. "$(dirname "$0")/../harness.sh"
harness_start cudart

# name → nvcc of each toolkit present
declare -A nvcc
cuda13=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$cuda13" ] && "$cuda13" --version 2>/dev/null | grep -q 'release 13\.'; then
    nvcc[cuda-13]=$cuda13
else
    echo "cudart: no CUDA 13 nvcc (on PATH or /usr/local/cuda/bin): CUDA 13 programs not built"
fi
cuda11=${CUDA11_ROOT:-/opt/ivcuda-cuda-11.8}/usr/lib/nvidia-cuda-toolkit/bin/nvcc
[ -x "$cuda11" ] || cuda11=$(command -v nvcc-11.8 || true)
if [ -n "$cuda11" ] && [ -x "$cuda11" ] && "$cuda11" --version 2>/dev/null | grep -q 'release 11\.8'; then
    nvcc[cuda-11.8]=$cuda11
else
    echo "cudart: no CUDA 11.8 nvcc (tests/cudart/unpack-cuda-11.8.sh puts Debian's in /opt/ivcuda-cuda-11.8): CUDA 11.8 programs not built"
fi
if [ ${#nvcc[@]} -eq 0 ]; then
    echo "cudart: 0 passed, 0 failed (no toolkit)"
    exit 0
fi

for toolkit in "${!nvcc[@]}"; do
    if out=$(tests/cudart/build.sh "${nvcc[$toolkit]}" "$work/$toolkit" 2>&1); then
        pass "$toolkit: programs built ($(ls "$work/$toolkit" | tr '\n' ' '))"
    else
        fail "$toolkit: building the programs: $(echo "$out" | tail -3)"
        unset "nvcc[$toolkit]"
    fi
done

. tests/host-memory-server.sh
start_host_memory_server "$region" "$work/server.log" --set region.size=268435456 --set domain.name=cudart-test ||
    fail "host-memory server"

integrity="cudart's integrity check (export table d4082055 slot 1) needs the host's real driver"
for toolkit in "${!nvcc[@]}"; do
    for program in "$work/$toolkit"/*; do
        name="$toolkit/$(basename "$program")"
        IVCUDA_REGION=$region LD_LIBRARY_PATH=$root/guest/target timeout 120 "$program" >"$work/out" 2>"$work/err"
        rc=$?
        first=$(head -1 "$work/out")
        others=$(grep '^ivcuda:' "$work/err" | grep -vF "$integrity")
        if [ $rc -eq 1 ] && [[ "$first" == FAIL*" -> cudaErrorNotSupported" ]] && grep -qF "$integrity" "$work/err" \
            && [ -z "$others" ]; then
            pass "$name: initialisation reached cudart's integrity check and stopped there, as it must on this backend"
        else
            fail "$name: exit $rc, stdout '$first', stderr: $(grep -v '^ivcuda\[' "$work/err" | tail -3 | tr '\n' ' ')"
        fi
    done
done
if kill -0 "$server_pid" 2>/dev/null; then pass "server alive after all of it"; else fail "server died"; fi

if [ $failed -gt 0 ]; then
    echo "--- server log (tail)"; tail -20 "$work/server.log"
fi
echo "cudart: $passed passed, $failed failed (the host-memory backend cannot answer cudart's integrity check: the programs' own checks run on a GPU machine, gpu/cudart.sh)"
[ $failed -eq 0 ]
