# shellcheck shell=bash
# shellcheck disable=SC2034 # RUN_RC, RUN_WALL... are read by the sourcing scripts
# Shared steps of gpu/validate.sh and bench/run.sh: tools, kernels, programs, the
# guest library, the cuda-server and running a program natively or through ivcuda.
# Sourced, not run. Every step that can block runs under `timeout`.
#
# Settings (environment; defaults in brackets):
#   OUT                    results and logs [./out]
#   CUDA_HOME              CUDA toolkit [/usr/local/cuda]
#   GPU_ARCH               nvcc target [sm_90]
#   BUILD_DIR              scratch build directory [mktemp under /tmp]
#   IVCUDA_GUEST_LIB_DIR   a directory that already holds the guest libcuda.so.1: skip building it
#   GUEST_MAKE             how build_guest runs make [make -C guest GEN=<generated dir>]
#   REGION_PATH            region file [/dev/shm/ivcuda-gpu-test]
#   REGION_SIZE            region bytes [1073741824]
#   SERVER_JAR             [cuda-server/target/cuda-server.jar]
#   SERVER_EXTRA_ARGS      more `--set key=value` for the server (word-split)
#   IVCUDA_MODE            plain or doorbell [plain]: in doorbell mode the server is an ivshmem
#                          server and each ivcuda run happens under bench/idle/qemu_peer.py, which
#                          connects as QEMU does and hands the guest library the doorbell and
#                          interrupt eventfds; the server stops when that peer leaves, so
#                          start_server comes before each run
#   PROGRAM_TIMEOUT_S      per program run [120]
#   IVCUDA_VIA             host (a cuda-server on this host) or backend (a back-end domain stood in
#                          on this host: its hook, agent and slot server, gpu/backend_standin.sh) [host]
#   IVCUDA_COMMIT          the commit to stamp when the tree has no git metadata
#   SERVER_SANDBOX         1: the server runs as the hook's direct launcher starts it (setpriv
#                          --no-new-privs, host-tools' ivcuda-syscall-filter --require with the
#                          unit's system-call allow-list, no core file, umask 027): whether the
#                          real driver works inside that sandbox [0]
#                          2: all of 1 inside gpu/unit-standin.sh, a stand-in for the systemd unit's
#                          namespaces, mounts, device list, MemoryMax and empty capability bounding
#                          set (util-linux, root; its lines "unit-standin: ..." in logs/server.log)
#   LIBCUDA_LINK_DIR       a directory with a libcuda.so to link against [the toolkit's stubs]

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$REPO_ROOT/out}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
GPU_ARCH=${GPU_ARCH:-sm_90}
# The driver-API validation programs (gpu/programs/<name>.c), in the order they run: one list for
# the host (gpu/validate.sh) and the VM (vm/gpu-vm.sh)
GPU_PROGRAMS=(queries vector_add matmul streams_events pinned_async multi_context_threads kernel_path memory_objects
              graphs_streams device_printf graph_nodes graph_mem_nodes vmm_pools arrays_textures tensor_map nvml_view jit_logs
              pinned_kernel busy_reclaim fault_recovery process_isolation) # last: through ivcuda its fault still breaks what runs beside it
BUILD_DIR=${BUILD_DIR:-$(mktemp -d /tmp/ivcuda-gpu.XXXXXX)}
REGION_PATH=${REGION_PATH:-/dev/shm/ivcuda-gpu-test}
REGION_SIZE=${REGION_SIZE:-1073741824}
IVCUDA_MODE=${IVCUDA_MODE:-plain}
IVCUDA_VIA=${IVCUDA_VIA:-host}
# The driver's JIT cache (~/.nv/ComputeCache) makes a program's output depend on which run compiled
# a PTX first: ptxas's lines in a verbose JIT log ("ptxas info : Compiling entry function ...") are
# written only when ptxas runs, not on a cache hit (ptxjit.static and device_printf differed in
# exactly those lines). Off for every run and every server (they inherit it).
export CUDA_CACHE_DISABLE=1
# shellcheck source=gpu/backend_standin.sh
. "$REPO_ROOT/gpu/backend_standin.sh"
DOORBELL_SOCKET=${BUILD_DIR}/doorbell.sock
DOORBELL_VECTORS=32
SERVER_JAR=${SERVER_JAR:-$REPO_ROOT/cuda-server/target/cuda-server.jar}
SERVER_EXTRA_ARGS=${SERVER_EXTRA_ARGS:-}
PROGRAM_TIMEOUT_S=${PROGRAM_TIMEOUT_S:-120}
SERVER_PID=
STANDIN_CGROUP=
GUEST_LIB_DIR=
# Results of run_program, read by the scripts that source this file.
# shellcheck disable=SC2034
RUN_RC=""
RUN_WALL=""
LINK_FLAGS=()
STEPS_LOG=$OUT/steps.log

log() {
    printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$STEPS_LOG" >&2
}

now_s() { date +%s.%N; }

elapsed_s() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

git_commit() {
    local commit
    if [ -n "${IVCUDA_COMMIT:-}" ]; then
        echo "$IVCUDA_COMMIT"
        return
    fi
    commit=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null) || { echo "unknown (no git metadata)"; return; }
    if [ -n "$(git -C "$REPO_ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
        commit="$commit+dirty"
    fi
    echo "$commit"
}

gpu_identity() {
    timeout 30 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 ||
        echo "nvidia-smi unavailable"
}

# java on PATH, or the runtime carried in .jre/ unpacked to /tmp/jre: jre.tgz as
# ../shared/tools/device-jre.sh packs it, or jre.tar.xz (jlink --compress=0, then xz: 17 MB instead
# of 32 MB, which leaves room in a device call's 64 MiB for the corpus, .vmcarry and the server).
setup_java() {
    if command -v java >/dev/null 2>&1; then
        return 0
    fi
    local archive
    for archive in "$REPO_ROOT/.jre/jre.tar.xz" "$REPO_ROOT/.jre/jre.tgz" ""; do
        [ -z "$archive" ] || [ -f "$archive" ] && break
    done
    if [ -z "$archive" ]; then
        log "no java on PATH and no .jre/jre.tar.xz or .jre/jre.tgz"
        return 1
    fi
    mkdir -p /tmp/jre
    timeout 120 tar xf "$archive" -C /tmp/jre || { log "unpacking $archive failed"; return 1; }
    local java_bin
    java_bin=$(find /tmp/jre -path '*/bin/java' -type f 2>/dev/null | head -1)
    if [ -z "$java_bin" ]; then
        log "no bin/java inside $archive"
        return 1
    fi
    PATH=$(dirname "$java_bin"):$PATH
    export PATH
    log "java: $(java -version 2>&1 | head -1)"
}

# nvcc each kernels/*.cu to PTX, cubin and fatbin (SASS + PTX) in $1.
build_kernels() {
    local dest=$1 src name
    shift
    mkdir -p "$dest"
    for src in "$@"; do
        name=$(basename "$src" .cu)
        if ! { timeout 180 "$CUDA_HOME/bin/nvcc" -ptx -arch="$GPU_ARCH" "$src" -o "$dest/$name.ptx" &&
            timeout 180 "$CUDA_HOME/bin/nvcc" -cubin -arch="$GPU_ARCH" "$src" -o "$dest/$name.cubin" &&
            timeout 180 "$CUDA_HOME/bin/nvcc" -fatbin \
                -gencode "arch=compute_${GPU_ARCH#sm_},code=[$GPU_ARCH,compute_${GPU_ARCH#sm_}]" \
                "$src" -o "$dest/$name.fatbin"; }; then
            log "nvcc failed for $src"
            return 1
        fi
    done
    log "kernels built in $dest"
}

# How the programs link libcuda.so.1: the toolkit's stub (SONAME libcuda.so.1), else
# the driver's library itself, else a stub generated from the programs' undefined cu*
# symbols. Any of them is fine: the binary records only NEEDED libcuda.so.1 (the
# driver's library has no symbol versions), so LD_LIBRARY_PATH decides at run time
# whether it gets NVIDIA's library or ivcuda's.
choose_libcuda_link() {
    local dir
    for dir in ${LIBCUDA_LINK_DIR:+"$LIBCUDA_LINK_DIR"} "$CUDA_HOME/lib64/stubs" "$CUDA_HOME/targets/x86_64-linux/lib/stubs" "$CUDA_HOME/lib/stubs"; do
        if [ -f "$dir/libcuda.so" ]; then
            LINK_FLAGS=(-L"$dir" -lcuda)
            log "linking against $dir/libcuda.so"
            return 0
        fi
    done
    local driver_lib
    driver_lib=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 / { print $NF; exit }')
    if [ -n "$driver_lib" ]; then
        LINK_FLAGS=(-L"$(dirname "$driver_lib")" -l:libcuda.so.1)
        log "linking against the driver's $driver_lib"
        return 0
    fi
    LINK_FLAGS=()
    log "no toolkit stub and no driver library: linking against a generated stub"
}

# A libcuda.so.1 whose every function returns CUDA_ERROR_NOT_SUPPORTED, made from the
# cu* symbols the objects in $2.. need, in directory $1: only for linking.
make_stub_libcuda() {
    local dest=$1 sym
    shift
    mkdir -p "$dest"
    {
        echo "/* generated: every entry point fails with CUDA_ERROR_NOT_SUPPORTED (801) */"
        nm -u "$@" | awk '$NF ~ /^cu/ { print $NF }' | sort -u | while read -r sym; do
            echo "int $sym(void) { return 801; }"
        done
    } >"$dest/stub_libcuda.c"
    gcc -shared -fPIC -Wl,-soname,libcuda.so.1 "$dest/stub_libcuda.c" -o "$dest/libcuda.so.1" &&
        ln -sf libcuda.so.1 "$dest/libcuda.so"
}

# Compile each program source $3.. into directory $2 with include dir $1 (common.h).
build_programs() {
    local include=$1 dest=$2 src name objs=() ok=0
    shift 2
    mkdir -p "$dest"
    for src in "$@"; do
        name=$(basename "$src" .c)
        timeout 120 gcc -O2 -std=c11 -Wall -Wextra -I"$include" -I"$CUDA_HOME/include" \
            -c "$src" -o "$dest/$name.o" || { log "compiling $src failed"; ok=1; continue; }
        objs+=("$dest/$name.o")
    done
    [ "$ok" = 0 ] || return 1
    if [ "${#LINK_FLAGS[@]}" = 0 ]; then
        make_stub_libcuda "$dest/stub" "${objs[@]}" || return 1
        LINK_FLAGS=(-L"$dest/stub" -lcuda)
    fi
    local obj
    for obj in "${objs[@]}"; do
        name=$(basename "$obj" .o)
        timeout 120 gcc "$obj" -o "$dest/$name" "${LINK_FLAGS[@]}" -lpthread -lm -ldl || { log "linking $name failed"; ok=1; }
    done
    [ "$ok" = 0 ] && log "programs built in $dest: $(cd "$dest" && find . -maxdepth 1 -type f -perm -u+x | sort | tr '\n' ' ')"
    return "$ok"
}

# The guest library: generate the C stubs from the API description, make the library
# (and beside it ivcuda-region-wait, which start_server waits with), and set GUEST_LIB_DIR
# to the directory holding both. Adjust GUEST_MAKE (or
# set IVCUDA_GUEST_LIB_DIR) if the guest build changes shape.
build_guest() {
    if [ -n "${IVCUDA_GUEST_LIB_DIR:-}" ]; then
        GUEST_LIB_DIR=$IVCUDA_GUEST_LIB_DIR
        log "guest library: using IVCUDA_GUEST_LIB_DIR=$GUEST_LIB_DIR"
    else
        local gen=$BUILD_DIR/guest-gen
        mkdir -p "$gen"
        if [ ! -d "$REPO_ROOT/api/target/classes" ]; then
            log "guest library: api/target/classes missing (build api first)"
            return 1
        fi
        timeout 120 java -cp "$REPO_ROOT/api/target/classes" io.ivcuda.api.Generate \
            "$REPO_ROOT/api/cuda-driver.api" --c "$gen" >"$OUT/logs/guest-generate.log" 2>&1 ||
            { log "guest library: generating C failed (logs/guest-generate.log)"; return 1; }
        local make_cmd=${GUEST_MAKE:-make -C $REPO_ROOT/guest GEN=$gen}
        # shellcheck disable=SC2086 # GUEST_MAKE is a command line on purpose
        timeout 300 $make_cmd >"$OUT/logs/guest-make.log" 2>&1 ||
            { log "guest library: '$make_cmd' failed (logs/guest-make.log)"; return 1; }
        local lib
        lib=$(find "$REPO_ROOT/guest" "$gen" -name libcuda.so.1 \( -type f -o -type l \) -printf '%T@ %p\n' 2>/dev/null |
            sort -rn | head -1 | cut -d' ' -f2-)
        if [ -z "$lib" ]; then
            log "guest library: make succeeded but no libcuda.so.1 under guest/"
            return 1
        fi
        GUEST_LIB_DIR=$(dirname "$lib")
    fi
    if [ ! -e "$GUEST_LIB_DIR/libcuda.so.1" ] || [ ! -x "$GUEST_LIB_DIR/ivcuda-region-wait" ]; then
        log "guest library: $GUEST_LIB_DIR/libcuda.so.1 or ivcuda-region-wait does not exist"
        return 1
    fi
    GUEST_LIB_DIR=$(cd "$GUEST_LIB_DIR" && pwd)
    log "guest library: $GUEST_LIB_DIR/libcuda.so.1 ($(readelf -d "$GUEST_LIB_DIR/libcuda.so.1" 2>/dev/null | awk '/SONAME/ { print $NF }'))"
}

# Java (which generates the guest library's stubs and runs the server) and the guest library: JAVA_OK and
# GUEST_OK are 1 for what is there, 0 otherwise; without Java, IVCUDA_GUEST_LIB_DIR can still name a built
# library. Fails when there is no guest library.
setup_java_and_guest() {
    JAVA_OK=0
    setup_java && JAVA_OK=1
    GUEST_OK=0
    if [ "$JAVA_OK" = 1 ] || [ -n "${IVCUDA_GUEST_LIB_DIR:-}" ]; then
        build_guest && GUEST_OK=1
    fi
    [ "$GUEST_OK" = 1 ]
}

# Refuses to call a run "ivcuda" unless the program really loads our library.
check_guest_is_loaded() {
    local prog=$1 resolved
    resolved=$(LD_LIBRARY_PATH=$GUEST_LIB_DIR timeout 30 ldd "$prog" 2>/dev/null | awk '$1 == "libcuda.so.1" { print $3 }')
    echo "$prog: libcuda.so.1 => $resolved" >>"$OUT/logs/ldd-ivcuda.log"
    if [ "$(readlink -f "$resolved" 2>/dev/null)" != "$(readlink -f "$GUEST_LIB_DIR/libcuda.so.1")" ]; then
        log "$(basename "$prog") would load '$resolved', not the guest library in $GUEST_LIB_DIR"
        return 1
    fi
}

# Records which libcuda.so.1 a native run loads, and refuses the guest library there
# (a stray LD_LIBRARY_PATH would make "native" a second ivcuda run).
check_native_driver() {
    local prog=$1 resolved
    resolved=$(timeout 30 ldd "$prog" 2>/dev/null | awk '$1 == "libcuda.so.1" { print $3 }')
    echo "$prog: libcuda.so.1 => ${resolved:-not found}" >>"$OUT/logs/ldd-native.log"
    if [ -n "$GUEST_LIB_DIR" ] && [ -n "$resolved" ] &&
        [ "$(readlink -f "$resolved")" = "$(readlink -f "$GUEST_LIB_DIR/libcuda.so.1")" ]; then
        log "$(basename "$prog"): the native run would load the guest library $resolved"
        return 1
    fi
}

# cudart's integrity check: the server starts host-tools' oracle per guest process; from the
# tree it is built here (gcc only) and its path printed (nothing when it could not be built), the
# installed default being /usr/libexec/ivcuda. Servers give it as --set integrity.oracle=PATH.
integrity_oracle() {
    local oracle=$BUILD_DIR/host-tools/ivcuda-integrity-oracle
    # gpu/apps.sh starts several servers at once: one build, the others wait for it (without the lock
    # a server that found the oracle half-written ran without one: histogram.static answered 103)
    mkdir -p "$BUILD_DIR"
    if ! flock "$BUILD_DIR/host-tools.lock" sh -c '[ -x "$1" ] || make -s -C "$2/host-tools" BUILD="$3/host-tools" "$1"' \
        sh "$oracle" "$REPO_ROOT" "$BUILD_DIR" >>"$OUT/logs/build-host-tools.log" 2>&1; then
        log "server: ivcuda-integrity-oracle not built (logs/build-host-tools.log): runtime-API programs will fail with 103"
    fi
    [ -x "$oracle" ] && echo "$oracle"
    return 0
}

# Starts the cuda-server in the background (under timeout $1 seconds as a safety net)
# and waits for READY. Extra `--set` arguments follow.
start_server() {
    local max_s=$1
    shift
    if [ "$IVCUDA_VIA" = backend ]; then
        standin_start "$max_s"
        return
    fi
    if [ ! -f "$SERVER_JAR" ]; then
        log "server: $SERVER_JAR missing"
        return 1
    fi
    rm -f "$REGION_PATH"
    # A container's /dev/shm is often 64 MiB: a region that does not fit would SIGBUS
    # when touched, so it moves to a plain file (slower page cache, same semantics).
    local shm_free
    shm_free=$(df -B1 --output=avail "$(dirname "$REGION_PATH")" 2>/dev/null | tail -1 | tr -d ' ')
    if [ -n "$shm_free" ] && [ "$shm_free" -lt $((REGION_SIZE + (64 << 20))) ]; then
        log "server: only $shm_free bytes free in $(dirname "$REGION_PATH"); region moves to $BUILD_DIR/ivcuda-region"
        REGION_PATH=$BUILD_DIR/ivcuda-region
        rm -f "$REGION_PATH"
    fi
    local mode_args=()
    local oracle
    oracle=$(integrity_oracle)
    [ -n "$oracle" ] && mode_args+=(--set "integrity.oracle=$oracle")
    if [ "$IVCUDA_MODE" = doorbell ]; then
        rm -f "$DOORBELL_SOCKET"
        mode_args+=(--set mode=doorbell --set "doorbell.socket=$DOORBELL_SOCKET"
                   --set "doorbell.vectors=$DOORBELL_VECTORS" --set "channel.count=$DOORBELL_VECTORS")
    fi
    # the direct launcher's sandbox (libvirt-hook DirectLauncher, docs/threat-model.md), here without
    # setsid and another user: what it leaves the real driver is the point
    local sandbox=()
    if [ "${SERVER_SANDBOX:-0}" = 1 ] || [ "${SERVER_SANDBOX:-0}" = 2 ]; then
        local filter=$BUILD_DIR/host-tools/ivcuda-syscall-filter
        if ! flock "$BUILD_DIR/host-tools.lock" sh -c '[ -x "$1" ] || make -s -C "$2/host-tools" BUILD="$3/host-tools" "$1"' \
            sh "$filter" "$REPO_ROOT" "$BUILD_DIR" >>"$OUT/logs/build-host-tools.log" 2>&1; then
            log "server: SERVER_SANDBOX=$SERVER_SANDBOX but ivcuda-syscall-filter not built (logs/build-host-tools.log)"
            return 1
        fi
        sandbox=(setpriv --no-new-privs -- "$filter" --require -- sh -c 'ulimit -c 0 && umask 027 && exec "$@"' ivcuda-server)
        log "server: sandboxed as the direct launcher does: ${sandbox[*]}"
    fi
    if [ "${SERVER_SANDBOX:-0}" = 2 ]; then
        # The unit's sandbox stood in (gpu/unit-standin.sh): the server writes only BUILD_DIR (doorbell
        # socket, oracle scratch; the unit's ReadWritePaths=/run/ivcuda), its region's directory and
        # an MPS pipe directory (ReadWritePaths=-/run/ivcuda-mps); it reads its JRE and jar, which a
        # test tree keeps where PrivateTmp=/ProtectHome= would hide them. The script execs the rest:
        # SERVER_PID stays the pid stop_server signals.
        local java_home keep=(--rw "$BUILD_DIR")
        [ "$(dirname "$REGION_PATH")" = /dev/shm ] || keep+=(--rw "$(dirname "$REGION_PATH")")
        java_home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
        keep+=(--ro "$java_home" --ro "$(dirname "$(readlink -f "$SERVER_JAR")")")
        [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && [ -d "$CUDA_MPS_PIPE_DIRECTORY" ] && keep+=(--rw "$CUDA_MPS_PIPE_DIRECTORY")
        STANDIN_CGROUP=ivcuda-standin-$$-$RANDOM
        sandbox=("$REPO_ROOT/gpu/unit-standin.sh" "${keep[@]}" --cgroup "$STANDIN_CGROUP" -- "${sandbox[@]}")
        log "server: inside the unit's stand-in: ${sandbox[*]:0:$((${#keep[@]} + 4))} (its lines: logs/server.log)"
    fi
    # shellcheck disable=SC2086 # SERVER_EXTRA_ARGS is a list of --set options on purpose
    timeout -s TERM -k 10 "$max_s" "${sandbox[@]}" java -jar "$SERVER_JAR" --set "region.path=$REGION_PATH" \
        --set "region.size=$REGION_SIZE" "${mode_args[@]}" "$@" $SERVER_EXTRA_ARGS >>"$OUT/logs/server.log" 2>&1 &
    SERVER_PID=$!
    log "server: started (pid $SERVER_PID), waiting for READY in $REGION_PATH"
    local t0 rc
    t0=$(now_s)
    # the one wait for READY: guest/tools/ivcuda-region-wait.c, built by build_guest with the library
    "$GUEST_LIB_DIR/ivcuda-region-wait" --pid "$SERVER_PID" "$REGION_PATH" 90 >"$OUT/logs/region-wait.log" 2>&1
    rc=$?
    case $rc in
        0) log "server: READY after ~$(elapsed_s "$t0" "$(now_s)") s"; return 0 ;;
        3) wait "$SERVER_PID"
           log "server: exited with status $? before READY; $(cat "$OUT/logs/region-wait.log")"
           SERVER_PID=
           remove_standin_cgroup
           return 1 ;;
        *) log "server: not READY after 90 s (ivcuda-region-wait exit $rc); $(cat "$OUT/logs/region-wait.log")"
           return 1 ;;
    esac
}

# A doorbell-mode server serves one peer (one run) and stops when it leaves: a fresh one
# before each ivcuda run, stopped after it. No-ops in plain mode (one server for all runs).
server_for_run() {
    if [ "$IVCUDA_MODE" = doorbell ] && [ -z "$SERVER_PID" ]; then start_server "$1"; fi
}
end_of_run() {
    if [ "$IVCUDA_MODE" = doorbell ]; then stop_server; fi
    return 0
}

# The cgroup SERVER_SANDBOX=2 made for MemoryMax, once its server is gone.
remove_standin_cgroup() {
    [ -n "$STANDIN_CGROUP" ] || return 0
    "$REPO_ROOT/gpu/unit-standin.sh" --remove-cgroup "$STANDIN_CGROUP"
    STANDIN_CGROUP=
}

stop_server() {
    if [ "$IVCUDA_VIA" = backend ]; then
        standin_stop
        return 0
    fi
    [ -n "$SERVER_PID" ] || return 0
    local pid=$SERVER_PID status
    SERVER_PID=
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "server: still running 10 s after SIGTERM, killing it"
        kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    status=$?
    log "server: stopped, exit status $status"
    remove_standin_cgroup
    rm -f "$REGION_PATH"
    # A chatty server log must not push the results over what a device run brings back.
    local server_log=$OUT/logs/server.log
    if [ -f "$server_log" ] && [ "$(stat -c %s "$server_log")" -gt $((16 << 20)) ]; then
        { head -c $((4 << 20)) "$server_log"; printf '\n[... %s bytes cut ...]\n' "$(stat -c %s "$server_log")";
          tail -c $((8 << 20)) "$server_log"; } >"$server_log.trimmed" && mv "$server_log.trimmed" "$server_log"
        log "server: log trimmed to its first 4 MiB and last 8 MiB"
    fi
    return 0
}

# run_program <native|ivcuda> <binary> <log prefix> [args...]: runs under timeout,
# stdout to <prefix>.out, stderr to <prefix>.err; sets RUN_RC and RUN_WALL.
run_program() {
    local mode=$1 prog=$2 prefix=$3 t0 t1
    shift 3
    t0=$(now_s)
    if [ "$mode" = ivcuda ]; then
        local peer=()
        [ "$IVCUDA_MODE" = doorbell ] && peer=(python3 "$REPO_ROOT/bench/idle/qemu_peer.py" "$DOORBELL_SOCKET" "$DOORBELL_VECTORS")
        IVCUDA_REGION=$REGION_PATH LD_LIBRARY_PATH=$GUEST_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} IVCUDA_STATS=1 \
            timeout -k 5 "$PROGRAM_TIMEOUT_S" "${peer[@]}" "$prog" "$@" >"$prefix.out" 2>"$prefix.err"
    else
        timeout -k 5 "$PROGRAM_TIMEOUT_S" "$prog" "$@" >"$prefix.out" 2>"$prefix.err"
    fi
    RUN_RC=$?
    t1=$(now_s)
    RUN_WALL=$(elapsed_s "$t0" "$t1")
    [ "$RUN_RC" = 124 ] && echo "TIMEOUT after $PROGRAM_TIMEOUT_S s" >>"$prefix.err"
    return 0
}

# The part of a program's stdout that must be equal: everything but `time:`/`info:` lines.
comparable_output() {
    grep -v -E '^(time|info):' "$1"
}


# The CPU stand-in for libcuda.so.1 (gpu/tools/mock_libcuda.c) in $BUILD_DIR/mock, for
# dry runs: it checks the programs' own logic, never ivcuda or a driver.
MOCK_DIR=$BUILD_DIR/mock
build_mock_libcuda() {
    mkdir -p "$MOCK_DIR"
    timeout 60 gcc -O2 -std=c11 -Wall -Wextra -shared -fPIC -Wl,-soname,libcuda.so.1 -I"$CUDA_HOME/include" \
        "$REPO_ROOT/gpu/tools/mock_libcuda.c" -o "$MOCK_DIR/libcuda.so.1"
}

# The driver functions program $1 imports that the CPU mock does not define, one line, sorted:
# such a program cannot run against the mock (it stops at its first call of one, or the loader
# refuses it), so the dry run says which instead of counting a failure the mock causes.
mock_lacks() {
    comm -23 <(nm -D --undefined-only "$1" 2>/dev/null | awk '{ sub(/@.*/, "", $2); print $2 }' | grep '^cu' | sort -u) \
        <(nm -D --defined-only "$MOCK_DIR/libcuda.so.1" 2>/dev/null | awk '{ print $3 }' | sort -u) | tr '\n' ' ' | sed 's/ $//'
}

# ---- shared by the validation scripts (gpu/validate.sh, vm/gpu-vm.sh, gpu/cudart.sh) ------------
# They set DEADLINE_S (epoch seconds no step may outlast) and keep PROBLEMS, NATIVE_RC, EQUAL.

problem() {
    PROBLEMS+=("$*")
    log "PROBLEM: $*"
}

# The kernels (gpu/kernels/*.cu) into $KERNELS and the programs named in PROGRAMS (gpu/programs/<name>.c)
# into $BIN, linked as choose_libcuda_link decides; a problem where either fails.
build_kernels_and_programs() {
    local p sources=()
    build_kernels "$KERNELS" "$REPO_ROOT"/gpu/kernels/*.cu || problem "building kernels failed"
    choose_libcuda_link
    for p in "${PROGRAMS[@]}"; do sources+=("$REPO_ROOT/gpu/programs/$p.c"); done
    build_programs "$REPO_ROOT/gpu/programs" "$BIN" "${sources[@]}" || problem "building the programs failed"
}

# Each program of PROGRAMS in $BIN on NVIDIA's driver, its kernels' directory as argument, each under
# NATIVE_TIMEOUT_S or what is left before DEADLINE_S: NATIVE_RC and NATIVE_WALL get its result, or why it
# was skipped; the outputs go to logs/<program>.native.*.
run_programs_natively() {
    local p t
    for p in "${PROGRAMS[@]}"; do
        [ -x "$BIN/$p" ] || { NATIVE_RC[$p]="skipped (not built)"; continue; }
        check_native_driver "$BIN/$p" || { NATIVE_RC[$p]="skipped (would load the guest library)"; continue; }
        t=$(bounded_timeout "$NATIVE_TIMEOUT_S")
        if [ "$t" -lt 5 ]; then NATIVE_RC[$p]="skipped (time budget)"; continue; fi
        PROGRAM_TIMEOUT_S=$t run_program native "$BIN/$p" "$OUT/logs/$p.native" "$KERNELS"
        NATIVE_RC[$p]=$RUN_RC; NATIVE_WALL[$p]=$RUN_WALL
        log "native $p: rc=$RUN_RC wall=${RUN_WALL}s"
    done
}

# Seconds a step may still take, so the whole command ends before DEADLINE_S.
time_left() { echo $((DEADLINE_S - $(date +%s))); }

bounded_timeout() {
    local wanted=$1 left
    left=$(($(time_left) - 10))
    [ "$left" -lt "$wanted" ] && wanted=$left
    echo "$wanted"
}

# A program's stderr ($1) without the statistics the guest library prints at exit with
# IVCUDA_STATS=1 ("ivcuda: call profile ...", then "ivcuda:   <function>: ...", and "ivcuda:
# interrupt waits: ..."): they would otherwise stand in for the program's own last words.
without_exit_stats() {
    grep -v -e '^ivcuda: call profile' -e '^ivcuda:   ' -e '^ivcuda: interrupt waits' "$1" 2>/dev/null
}

# One line for the table: "ok", or why not, from rc and the program's FAIL line.
verdict() {
    local rc=$1 prefix=$2 first_fail guest_says
    case "$rc" in
        0) echo "ok" ;;
        skipped* | not*) echo "$rc" ;;
        124 | 137) echo "TIMEOUT" ;;
        *)
            first_fail=$(grep -m1 -E 'FAIL|WRONG' "$prefix.out" 2>/dev/null)
            [ -n "$first_fail" ] || first_fail=$(without_exit_stats "$prefix.err" | grep -v '^ *$' | tail -1)
            # The guest library explains refusals (handshake, region) on stderr as "ivcuda: ...".
            guest_says=$(without_exit_stats "$prefix.err" | grep -m1 '^ivcuda:' | cut -c1-200)
            [ -n "$guest_says" ] && first_fail="$first_fail; $guest_says"
            echo "failed rc=$rc${first_fail:+: $(printf '%s' "$first_fail" | cut -c1-200 | tr '|' '/')}"
            ;;
    esac
}

# Compares every program's native stdout with its run the other way (log suffix $1, e.g.
# ivcuda or vm; result codes in the associative array named $2, described as $3 in problems):
# fills EQUAL and records problems.
compare_with_native() {
    local suffix=$1 where=$3 p
    local -n other_rc=$2
    for p in "${PROGRAMS[@]}"; do
        if [ -f "$OUT/logs/$p.native.out" ] && [ -f "$OUT/logs/$p.$suffix.out" ]; then
            if diff <(comparable_output "$OUT/logs/$p.native.out") <(comparable_output "$OUT/logs/$p.$suffix.out") \
                >"$OUT/logs/$p.diff"; then
                EQUAL[$p]="yes"
                rm -f "$OUT/logs/$p.diff"
            else
                EQUAL[$p]="**NO** (logs/$p.diff)"
            fi
        fi
        [ "${NATIVE_RC[$p]}" = 0 ] || problem "$p native: $(verdict "${NATIVE_RC[$p]}" "$OUT/logs/$p.native")"
        [ "${other_rc[$p]}" = 0 ] || problem "$p $where: $(verdict "${other_rc[$p]}" "$OUT/logs/$p.$suffix")"
        [ "${EQUAL[$p]}" = yes ] || problem "$p: outputs not equal or not both present"
    done
}

# The head of a report: the title $1, then the rows every report's table starts with (date, GPU and
# driver, commit); the script's own rows follow.
report_head() {
    echo "# $1"
    echo
    echo "| | |"
    echo "|---|---|"
    echo "| date | $(date -u '+%Y-%m-%d %H:%M:%S UTC') |"
    echo "| GPU, driver | $(gpu_identity) |"
    echo "| commit | $(git_commit) |"
}

# A report's checked lines (gpu/busy-shutdown.sh, gpu/module-globals.sh): LINES holds them as "PASS ..."
# or "FAIL ..."; a FAIL is a problem too.
pass() { LINES+=("PASS $*"); log "PASS $*"; }
fail() { LINES+=("FAIL $*"); problem "$*"; }
check() { # check <condition status> <text>
    if [ "$1" = 0 ]; then pass "$2"; else fail "$2"; fi
}

# The report's verdict lines from PROBLEMS.
result_lines() {
    local msg
    if [ "${#PROBLEMS[@]}" = 0 ]; then
        echo "**Result: PASS**"
    else
        echo "**Result: FAIL** (${#PROBLEMS[@]} problems)"
        echo
        for msg in "${PROBLEMS[@]}"; do echo "- $msg"; done
    fi
}
