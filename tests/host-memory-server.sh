# shellcheck shell=bash
# Sourced by tests/*/run.sh: the Java cuda-server on its host-memory backend over a region file,
# started in the background and waited for until its header says READY.
#   start_host_memory_server <region> <log> [--set key=value ...]   sets server_pid
start_host_memory_server() {
    local region=$1 log=$2
    shift 2
    java -jar cuda-server/target/cuda-server.jar --set region.path="$region" --set backend=host-memory "$@" \
        >"$log" 2>&1 &
    server_pid=$!
    for _ in $(seq 100); do
        if [ -e "$region" ] && python3 - "$region" <<'EOF_PY' 2>/dev/null; then return 0; fi
import struct, sys
with open(sys.argv[1], 'rb') as f:
    h = f.read(0x20)
sys.exit(0 if struct.unpack_from('<Q', h)[0] == 0x3130414455435649 and struct.unpack_from('<I', h, 0x18)[0] == 1 else 1)
EOF_PY
        sleep 0.1
    done
    echo "the server did not become READY in 10 s: $(tail -3 "$log")"
    return 1
}
