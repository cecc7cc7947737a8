#!/usr/bin/env bash
# Cross-language test: C programs linked to the real guest libcuda.so.1 talk to the real
# Java cuda-server through a region file. The server runs the host-memory backend, which
# keeps "device memory" in host RAM: this tests the transport (framing, windows, pool,
# reclaim, validation), not the GPU path — that is gpu/validate.sh's job on a GPU.
#
# usage: tests/xlang/run.sh            (from the repository root, after mvn package)
# Prints "N passed, M failed" and exits non-zero when M > 0.
set -uo pipefail
. "$(dirname "$0")/../harness.sh"
harness_start xlang
expect_ok() { # name, command...
    local name=$1; shift
    if out=$(timeout 300 "$@" 2>&1); then pass "$name"; else fail "$name: $(echo "$out" | tail -3)"; fi
}

gcc -std=c11 -O2 -Wall -Werror -pthread -Iguest/include -o "$work/xfer" tests/xlang/xfer.c -Lguest/target -lcuda || exit 1
gcc -std=c11 -O2 -Wall -Werror -Iguest/target/generated -Iguest/include -o "$work/hostile" tests/xlang/hostile.c || exit 1
gcc -std=c11 -O2 -Wall -Werror -Iguest/include -o "$work/strided" tests/xlang/strided.c -Lguest/target -lcuda || exit 1
gcc -std=c11 -O2 -Wall -Werror -Iguest/include -o "$work/arrays" tests/xlang/arrays.c -Lguest/target -lcuda || exit 1
gcc -std=c11 -O2 -Wall -Werror -Iguest/include -o "$work/tensor_maps" tests/xlang/tensor_maps.c -Lguest/target -lcuda || exit 1
gcc -std=c11 -O2 -Wall -Werror -pthread -Iguest/include -o "$work/streams" tests/xlang/streams.c -Lguest/target -lcuda || exit 1
gcc -std=c11 -O2 -Wall -Werror -Iguest/include -o "$work/vmm" tests/xlang/vmm.c -Lguest/target -lcuda || exit 1
gcc -std=c11 -O2 -Wall -Werror -pthread -Iguest/include -o "$work/ordering" tests/xlang/ordering.c -Lguest/target -lcuda || exit 1
gcc -std=c11 -O2 -Wall -Werror -pthread -Iguest/include -o "$work/callback_threads" tests/xlang/callback_threads.c -Lguest/target -lcuda || exit 1
gcc -std=c11 -O2 -Wall -Werror -Iguest/target/generated -Iguest/include -o "$work/pinned" tests/xlang/pinned.c -Lguest/target -lcuda || exit 1
gcc -std=c11 -O2 -Wall -Werror -Iguest/include -o "$work/pointer_attrs" tests/xlang/pointer_attrs.c -Lguest/target -lcuda || exit 1
gcc -std=c11 -O2 -Wall -Werror -Iguest/include -o "$work/graph_update" tests/xlang/graph_update.c -Lguest/target -lcuda || exit 1
# the one wait for READY (guest/tools/ivcuda-region-wait.c, built with the guest library)
region_wait=guest/target/ivcuda-region-wait

# 1 GiB region: 256 MiB pinned buffers come from its pool.
. tests/host-memory-server.sh
start_host_memory_server "$region" "$work/server.log" --set region.size=1073741824 \
    --set owner.timeout.ms=1500 --set domain.name=xlang-test || exit 1
export IVCUDA_REGION=$region LD_LIBRARY_PATH=$root/guest/target
# the server's heartbeat moves (ivcuda-region-wait --show reads the header for scripts)
beat() { "$region_wait" --show "$region" | sed -n 's/.* heartbeat=\([0-9]*\)$/\1/p'; }
first_beat=$(beat); sleep 0.6
if [ -n "$first_beat" ] && [ "$(beat)" -gt "$first_beat" ]; then pass "the server's heartbeat moves"; else
    fail "the server's heartbeat: $first_beat, then $(beat)"; fi

# Sizes from 1 byte to 256 MiB, through every copy path, odd sizes included.
for n in 1 7 4096 65536 100003 1048576 16777215 268435456; do
    expect_ok "copy $n bytes, 1 thread" "$work/xfer" copy $n 1
done
expect_ok "copy 3 MiB+1, 8 threads" "$work/xfer" copy 3145729 8
# 2D/3D/peer/batch copies and 2D memsets, pageable and pinned (docs/memory.md)
expect_ok "strided copies and 2D memsets" "$work/strided"
# reserve, create, map, set access, copies over two mappings, unmap (docs/memory.md "Virtual memory")
expect_ok "virtual memory management" "$work/vmm"
# pinned pointers are device pointers: the region lies at the server's address (protocol §2a),
# and when that range is taken in the process the library keeps its own mapping and still works
expect_ok "pinned pointers are device pointers" "$work/pinned"
expect_ok "pinned pointers, the server's range occupied" "$work/pinned" occupy
# cuPointerGetAttributes: ten attributes at once of device, pinned, registered and unknown pointers, each value's
# size checked; careless numAttributes and arrays refused
expect_ok "pointer attributes of device, pool, pinned, registered and unknown pointers" "$work/pointer_attrs"
# cuGraphExecUpdate(_v2) of handles the server refuses: the result info the library writes
expect_ok "graph exec update: refused handles, CU_GRAPH_EXEC_UPDATE_ERROR" "$work/graph_update"
# arrays: copies to and from them, texture and surface objects minted and checked (docs/memory.md)
expect_ok "arrays, texture and surface objects" "$work/arrays"
# tensor maps: what the server holds to the process's memory before its backend (docs/memory.md)
expect_ok "tensor maps reach the server with their exact extents" "$work/tensor_maps"
# Several processes at once.
pids=()
for i in 1 2 3 4; do "$work/xfer" copy $((1048576 * i + i)) 2 >"$work/mp$i.out" 2>&1 & pids+=($!); done
mp_ok=1
for p in "${pids[@]}"; do wait "$p" || mp_ok=0; done
if [ $mp_ok = 1 ]; then pass "4 processes × 2 threads at once"; else fail "4 processes at once: $(cat "$work"/mp*.out | tail -3)"; fi

# A killed process's device memory comes back (protocol §7: reclaimed once another guest
# process's heartbeat shows the VM is running).
baseline=$("$work/xfer" meminfo | sed -n 's/^free=//p')
"$work/xfer" hold 67108864 >"$work/hold.out" 2>&1 &
hold_pid=$!
for _ in $(seq 50); do grep -q held "$work/hold.out" && break; sleep 0.1; done
held=$("$work/xfer" meminfo | sed -n 's/^free=//p')
if [ -n "$baseline" ] && [ -n "$held" ] && [ "$held" -lt "$baseline" ]; then pass "held memory is accounted"; else fail "held memory is accounted ($baseline → $held)"; fi
kill -9 $hold_pid
wait $hold_pid 2>/dev/null
expect_ok "killed process's 64 MiB reclaimed" "$work/xfer" free-equals "$baseline" 20

# Host functions and stream callbacks run in the guest process, in stream order (docs/graphs.md).
expect_ok "host functions, stream queries, stream memory operations" "$work/streams"
# a thread's queued work is in the stream before another thread it told calls (protocol §6)
expect_ok "order between threads" "$work/ordering"
# the simpleCallback pattern: threads exit right after queueing a stream callback, which starts a new
# thread; its hello often lands on a channel another thread of the same process just gave back
# (same token), while that channel's old worker is still leaving: it must be served, not refused
cb_ok=1
for _ in 1 2 3 4 5; do out=$(timeout 120 "$work/callback_threads" 100 8 2>&1) || { cb_ok=0; break; }; done
if [ $cb_ok = 1 ]; then pass "stream callbacks start threads as their launching threads exit"; else
    fail "stream callbacks start threads as their launching threads exit: $(echo "$out" | tail -3)"; fi

# A hostile guest: malformed requests get errors, the server keeps serving.
expect_ok "hostile guest" "$work/hostile" "$region"
if kill -0 "$server_pid" 2>/dev/null; then pass "server alive after all of it"; else fail "server died"; fi
expect_ok "normal program after the hostile one" "$work/xfer" copy 4097 2

# The guest NVML (docs/sharing.md) through the real server: the host-memory backend has no NVML
# and answers so; ivcuda-smi says NVML cannot start and why.
if out=$(timeout 60 guest/target/ivcuda-smi 2>&1); then
    fail "ivcuda-smi on the host-memory backend exited 0: $out"
else
    case "$out" in
        *"NVML cannot start: Not Supported (3)"*) pass "guest NVML: the host-memory backend says it has no NVML" ;;
        *) fail "ivcuda-smi on the host-memory backend: $out" ;;
    esac
fi

# The guest NVML end to end (docs/sharing.md): ivcuda-smi through the guest's libnvidia-ml.so.1 and
# libcuda's transport to a real server process whose backend answers the host's NVML with a
# stand-in (test only: NvmlStandInServer in cuda-server's test classes). What is checked is the
# server's and the library's own work — the device found, the VM's quota as its memory, the VM's
# process that holds memory with its pid and bytes — not NVML's figures.
nvml_region=/dev/shm/ivcuda-xlang-nvml-$$
if [ ! -f cuda-server/target/test-classes/io/ivcuda/server/NvmlStandInServer.class ]; then
    echo "skip guest NVML end to end: cuda-server's test classes are not built (mvn test-compile -pl cuda-server)"
else
    # (the jar's manifest opens jdk.internal.misc to Agrona; on a class path it is said here)
    java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
        -cp cuda-server/target/test-classes:cuda-server/target/cuda-server.jar io.ivcuda.server.NvmlStandInServer \
        region.path="$nvml_region" region.size=67108864 memory.quota=268435456 domain.name=xlang-nvml \
        >"$work/nvml-server.log" 2>&1 &
    nvml_pid=$!
    if "$region_wait" --pid "$nvml_pid" "$nvml_region" 30 >/dev/null; then
        IVCUDA_REGION=$nvml_region "$work/xfer" hold 67108864 >"$work/nvml-hold.out" 2>&1 &
        nvml_hold=$!
        for _ in $(seq 50); do grep -q held "$work/nvml-hold.out" && break; sleep 0.1; done
        out=$(IVCUDA_REGION=$nvml_region timeout 60 guest/target/ivcuda-smi 2>&1)
        smi_status=$?
        if [ "$smi_status" = 0 ] && grep -q "stand-in NVML device" <<<"$out" && grep -q "  64MiB / 256MiB  " <<<"$out" \
            && grep -Eq "^\| +$nvml_hold +64MiB +\|$" <<<"$out"; then
            pass "guest NVML through a real server: the device, the quota as memory, this VM's process"
        else
            fail "guest NVML through a real server (exit $smi_status): $out"
        fi
        kill -9 "$nvml_hold" 2>/dev/null
        wait "$nvml_hold" 2>/dev/null
    else
        fail "NVML stand-in server not READY: $(tail -3 "$work/nvml-server.log")"
    fi
    kill "$nvml_pid" 2>/dev/null
    wait "$nvml_pid" 2>/dev/null
fi
rm -f "$nvml_region"

# A compute share MPS does not enforce (the host-memory backend has no GPU, so no MPS) is refused
# at start: exit 4 and the reason first (docs/sharing.md), which the hook shows as the start error.
share_out=$(java -jar cuda-server/target/cuda-server.jar --set region.path=/dev/shm/ivcuda-xlang-share-$$ \
    --set backend=host-memory --set compute.share=30 2>&1)
share_status=$?
if [ "$share_status" = 4 ] && [ "$(echo "$share_out" | head -1 | cut -c1-54)" = "ivcuda-server: compute share 30 % cannot be enforced: " ]; then
    pass "a compute share without MPS is refused (exit 4, the reason first)"
else
    fail "a compute share without MPS: exit $share_status, $(echo "$share_out" | head -2)"
fi
rm -f /dev/shm/ivcuda-xlang-share-$$

# Metrics through `ivshmem-provisioner metrics`: tests/metrics/run.sh, run by the provisioner's
# module (this module builds before it, so its jar does not exist yet here).

# Doorbell mode (§8): the server is the ivshmem server on a socket; qemu_peer.py connects as QEMU
# and hands the guest library the server's vector eventfds (its "BAR0") and its own (the
# "MSI-X" vectors the server raises), so the library rings and sleeps as it would in a VM.
doorbell_region=/dev/shm/ivcuda-xlang-doorbell-$$
socket=$work/doorbell.sock
java -jar cuda-server/target/cuda-server.jar \
    --set region.path="$doorbell_region" --set region.size=268435456 --set backend=host-memory \
    --set mode=doorbell --set doorbell.socket="$socket" --set doorbell.vectors=32 --set channel.count=32 \
    --set domain.name=xlang-doorbell >"$work/doorbell.log" 2>&1 &
doorbell_pid=$!
# READY comes after the socket exists (architecture.md, Doorbell mode)
"$region_wait" --pid "$doorbell_pid" "$doorbell_region" 30 >/dev/null || fail "doorbell server not READY: $(tail -3 "$work/doorbell.log")"
# IVCUDA_SPIN_US=20: sleep on the interrupt after 20 us (not 2 ms), so that these short waits do.
if out=$(IVCUDA_DEBUG=1 IVCUDA_SPIN_US=20 IVCUDA_REGION=$doorbell_region timeout 300 \
        python3 bench/idle/qemu_peer.py "$socket" 32 "$work/xfer" copy 16777216 4 2>&1) \
    && woken=$(echo "$out" | sed -n 's/.*woken by an interrupt: \([0-9]*\).*/\1/p' | head -1) && [ "${woken:-0}" -gt 0 ]; then
    pass "doorbell: 16 MiB copies in 4 threads, the guest slept on its vectors (woken $woken times)"
else
    fail "doorbell with interrupts: $(echo "$out" | grep -v '^ivcuda\[' | tail -3) $(echo "$out" | grep -m1 'interrupt waits')"
fi
# QEMU left (qemu_peer's command exited): the server stops cleanly
for _ in $(seq 100); do kill -0 $doorbell_pid 2>/dev/null || break; sleep 0.1; done
if ! kill -0 $doorbell_pid 2>/dev/null && wait $doorbell_pid; then pass "doorbell server exited 0 after its peer left"; else
    fail "doorbell server after its peer left: $(tail -3 "$work/doorbell.log")"; kill $doorbell_pid 2>/dev/null; fi
# and its header says so (what a guest that still maps the region is told)
if out=$("$region_wait" --show "$doorbell_region") && [ "${out%% *}" = state=STOPPED ]; then
    pass "the stopped server's header says STOPPED"
else
    fail "the stopped server's header: $out"
fi
rm -f "$doorbell_region"

# A fatal GPU fault (docs/architecture.md, "Fault recovery"): the server poisons the VM, and once
# the faulting process exited it replaces its CUDA process by an exec of itself (same pid, epoch
# + 1); the next program, started at once, waits for it and works. The host-memory backend never
# faults: its test-only trigger (IVCUDA_HOST_MEMORY_FAULT, a file it removes when it answers one
# cuCtxSynchronize with CUDA_ERROR_ILLEGAL_ADDRESS) stands in for the kernel's fault; the poisoning,
# the refusals, the exec and the guest's wait are the real ones.
fault_region=/dev/shm/ivcuda-xlang-fault-$$
fault_trigger=$work/fault-once
gcc -std=c11 -O2 -Wall -Werror -Iguest/include -o "$work/fault" tests/xlang/fault.c -Lguest/target -lcuda || exit 1
# start_host_memory_server sets server_pid, which the harness's cleanup stops: it must stay the run's
# main server (the fault server is stopped below), or the main one outlives the run
main_server_pid=$server_pid
IVCUDA_HOST_MEMORY_FAULT=$fault_trigger start_host_memory_server "$fault_region" "$work/fault-server.log" \
    --set region.size=67108864 --set domain.name=xlang-fault || { kill "$server_pid" 2>/dev/null; server_pid=$main_server_pid; exit 1; }
fault_pid=$server_pid
server_pid=$main_server_pid
epoch_of() { "$region_wait" --show "$fault_region" | sed -n 's/.* epoch=\([0-9]*\) .*/\1/p'; }
epoch_before=$(epoch_of)
: >"$fault_trigger"
expect_ok "a program whose synchronisation faults (700)" env IVCUDA_REGION="$fault_region" "$work/fault"
expect_ok "the next program, started at once, works on the replaced CUDA process" \
    env IVCUDA_REGION="$fault_region" "$work/xfer" copy 4097 2
if kill -0 "$fault_pid" 2>/dev/null && grep -q "recovered: this is a new CUDA process" "$work/fault-server.log" \
    && [ "$(epoch_of)" = $((epoch_before + 1)) ]; then
    pass "the server re-executed itself: same pid, epoch $epoch_before -> $(epoch_of)"
else
    fail "the server's recovery: pid alive $(kill -0 "$fault_pid" 2>/dev/null && echo yes || echo no), epoch $epoch_before -> $(epoch_of), log: $(grep -m3 'FatalFault\|recover' "$work/fault-server.log")"
fi
kill "$fault_pid" 2>/dev/null
if wait "$fault_pid"; then pass "the recovered server stops cleanly"; else fail "the recovered server's stop: $(tail -3 "$work/fault-server.log")"; fi
rm -f "$fault_region" "$fault_trigger"

# limit.ring.bytes (docs/threat-model.md, "Limits"): a server with the smallest ring, 4 KiB, in the
# header's ring_size; the library follows it. Small async records wrap it many times; an inline
# async copy of 8 KiB is a record larger than the ring and goes as a request (protocol §6).
ring_region=/dev/shm/ivcuda-xlang-ring-$$
main_server_pid=$server_pid
start_host_memory_server "$ring_region" "$work/ring-server.log" --set region.size=67108864 \
    --set limit.ring.bytes=4096 --set domain.name=xlang-ring || { kill "$server_pid" 2>/dev/null; server_pid=$main_server_pid; exit 1; }
ring_pid=$server_pid
server_pid=$main_server_pid
ring_size=$(od -An -tu4 -j88 -N4 "$ring_region" | tr -d ' ')
if [ "$ring_size" = 4096 ]; then pass "limit.ring.bytes=4096 is the header's ring_size"; else fail "ring_size $ring_size, expected 4096"; fi
for n in 1 1000 4096 8192 65472 1048576; do
    expect_ok "4 KiB ring: copy $n bytes, 2 threads" env IVCUDA_REGION="$ring_region" "$work/xfer" copy $n 2
done
if out=$(IVCUDA_DEBUG=1 IVCUDA_REGION="$ring_region" timeout 60 "$work/xfer" copy 8192 1 2>&1) \
    && grep -q "record is larger than the 4096-byte ring: sent as a request" <<<"$out"; then
    pass "4 KiB ring: an 8 KiB async copy went as a request"
else
    fail "4 KiB ring: the 8 KiB async copy: $(echo "$out" | grep -v '^ivcuda\[' | tail -3)"
fi
expect_ok "4 KiB ring: host functions, stream queries, stream memory operations" env IVCUDA_REGION="$ring_region" "$work/streams"
expect_ok "4 KiB ring: order between threads" env IVCUDA_REGION="$ring_region" "$work/ordering"
if grep -q "poisoned" "$work/ring-server.log"; then fail "4 KiB ring: a channel was poisoned: $(grep -m1 poisoned "$work/ring-server.log")"; else
    pass "4 KiB ring: no channel poisoned"; fi
kill "$ring_pid" 2>/dev/null
if wait "$ring_pid"; then pass "the 4 KiB-ring server stops cleanly"; else fail "the 4 KiB-ring server's stop: $(tail -3 "$work/ring-server.log")"; fi
rm -f "$ring_region"

# The server inside gpu/unit-standin.sh, SERVER_SANDBOX=2's stand-in for the systemd unit's namespaces,
# mounts, device list and empty capability bounding set (docs/threat-model.md, "The server process";
# root only, as systemd is): the stand-in's own check of its sandbox, then a server in it serves a
# program over a region in /dev/shm, is the process that was started (the stand-in execs it) and
# stops with status 0 on SIGTERM.
if [ "$(id -u)" = 0 ]; then
    if out=$(gpu/unit-standin.sh --check 2>&1); then
        pass "unit stand-in: $(grep -c '^ok' <<<"$out") checks of its sandbox"
    else
        fail "unit stand-in --check: $(grep -E '^FAIL|FAILED' <<<"$out" | head -3)"
    fi
    standin_region=/dev/shm/ivcuda-xlang-standin-$$
    standin_cgroup=ivcuda-xlang-standin-$$
    gpu/unit-standin.sh --rw "$work" --ro "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" \
        --ro "$root/cuda-server/target" --cgroup "$standin_cgroup" -- \
        java -jar "$root/cuda-server/target/cuda-server.jar" --set region.path="$standin_region" \
        --set backend=host-memory --set region.size=67108864 --set domain.name=xlang-standin >"$work/standin.log" 2>&1 &
    standin_pid=$!
    if "$region_wait" --pid "$standin_pid" "$standin_region" 60 >/dev/null; then
        expect_ok "a server inside the unit stand-in serves a program" env IVCUDA_REGION="$standin_region" "$work/xfer" copy 1048577 2
        if [ "$(readlink "/proc/$standin_pid/exe")" = "$(readlink -f "$(command -v java)")" ] &&
            grep -q '^unit-standin: CapabilityBoundingSet=, AmbientCapabilities=: applied' "$work/standin.log"; then
            pass "the stand-in's pid is the server's (it execs it, capabilities dropped)"
        else
            fail "the stand-in's pid $standin_pid runs $(readlink "/proc/$standin_pid/exe"); $(grep -m3 'unit-standin' "$work/standin.log")"
        fi
    else
        fail "server inside the unit stand-in not READY: $(tail -5 "$work/standin.log")"
    fi
    kill "$standin_pid" 2>/dev/null
    if wait "$standin_pid"; then pass "the server inside the unit stand-in stops with status 0 on SIGTERM"; else
        fail "the server inside the unit stand-in on SIGTERM: $(tail -3 "$work/standin.log")"; fi
    gpu/unit-standin.sh --remove-cgroup "$standin_cgroup"
    rm -f "$standin_region"
else
    echo "skip the unit stand-in (gpu/unit-standin.sh): needs root"
fi

if [ $failed -gt 0 ]; then
    echo "--- server log (tail)"; tail -40 "$work/server.log"
    echo "--- doorbell server log (tail)"; tail -20 "$work/doorbell.log"
    echo "--- fault-recovery server log (tail)"; tail -20 "$work/fault-server.log"
    echo "--- 4 KiB-ring server log (tail)"; tail -20 "$work/ring-server.log"
    echo "--- unit stand-in server log (tail)"; tail -20 "$work/standin.log" 2>/dev/null
fi
echo "xlang: $passed passed, $failed failed"
[ $failed -eq 0 ]
