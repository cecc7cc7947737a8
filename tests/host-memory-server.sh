# shellcheck shell=bash
# Sourced by tests/*/run.sh (from the repository root): the Java cuda-server on its host-memory
# backend over a region file, started in the background and waited for until its header says
# READY, with the one wait for READY (guest/tools/ivcuda-region-wait.c, built with the guest
# library), which gives up as soon as the server is gone.
#   start_host_memory_server <region> <log> [--set key=value ...]   sets server_pid
start_host_memory_server() {
    local region=$1 log=$2
    shift 2
    java -jar cuda-server/target/cuda-server.jar --set region.path="$region" --set backend=host-memory "$@" \
        >"$log" 2>&1 &
    server_pid=$!
    guest/target/ivcuda-region-wait --pid "$server_pid" "$region" 30 >/dev/null || {
        echo "the server did not become READY: $(tail -3 "$log")"
        return 1
    }
}
