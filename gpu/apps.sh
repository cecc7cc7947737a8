#!/usr/bin/env bash
# Real CUDA software, natively and through ivcuda (issue 12), in one command on the GPU
# machine: the 52 programs of NVIDIA's CUDA samples (the corpus, carried as
# .corpus/cuda-samples), each built with its own CMake files twice (default static cudart,
# and -DCMAKE_CUDA_RUNTIME_LIBRARY=Shared), and the PyTorch scripts of gpu/pytorch, each run
# in the chosen modes:
#   native    NVIDIA's libcuda.so.1
#   native2   the same again, to see how far a program differs from itself
#   trace     through gpu/tools/cuda-trace (a libcuda.so.1 that forwards to NVIDIA's and logs
#             lookups, export tables and calls): the facts docs/export-tables.md is made of
#   ivcuda    the guest libcuda.so.1 + a cuda-server on a region file (host loopback), a
#             server per run, as gpu/validate.sh does
#   vm        the corpus inside test guests under QEMU (TCG), a cuda-server per guest, as
#             vm/gpu-vm.sh does for the driver-API programs; as soon as every build and native run
#             is done, dealt to the guests by their expected time there, each guest's fastest
#             first, as many as the budget allows (gpu/apps-vm.sh, its settings there), beside the
#             loopback runs and the PyTorch scripts that are still going
# then compares each mode's output with native (timings taken out by
# gpu/normalize_output.py; PyTorch values within the spread of the two native runs:
# gpu/pytorch/compare.py) and writes the table docs/compatibility.md is made of: per program
# each mode's run and, after each of trace, ivcuda and vm, whether it equals native. The report is
# compatibility.md (copied to docs/ on the machine) unless vm is the only mode compared with
# native: then compatibility-vm.md.
#
# Issue 12's acceptance, everything in one device call (budget 510 s, then ~20 s of report and
# packing; the parts measured on the H200 suggest ~400 s from a cold build directory):
#   CORPUS_ARCH=90 gpu/apps.sh --modes native,native2,ivcuda,vm
# The corpus builds (CPU-bound) with its native runs first; the loopback runs follow each program
# as soon as its native run is done, in a lane of their own, so no build waits for them; the guests
# boot once the last build and native run ended (the builds use every core: guests under TCG beside
# them would only take cores from them) and run beside the loopback runs and the PyTorch lane that
# are still going (the GPU's work, not the CPU's).
#
# Options:
#   --modes LIST      comma-separated, from native,native2,trace,ivcuda,vm [native,native2,trace]
#   --variants LIST   static,shared [both]
#   --only REGEX      only samples/scripts whose name matches (extended regex)
#   --no-corpus, --no-pytorch
#   --report-only     no build and no run: the report again from the runs in APPS_WORK_DIR (after a
#                     change to the report, or from a run's unpacked logs.tar.xz)
# Settings (environment; defaults in brackets), besides those of gpu/lib.sh:
#   OUT               where the results go: at most 8 files, most important first [./out]
#   TOTAL_BUDGET_S    no build or run starts after it or outlasts it; the report, the traces'
#                     summary and the packing follow (up to ~90 s with traces, ~20 s without)
#                     [480; 510 with vm, whose builds and native runs end VM_RESERVE_S before it]
#   CORPUS_DIR        the samples [.corpus/cuda-samples, else ../shared/corpus/cuda-samples]
#   CORPUS_BUILD_DIR  kept between calls on a warm machine and reused [/tmp/ivcuda-corpus-build]
#   CORPUS_ARCH       own: the samples' nine architectures; or a list such as 90, set through
#                     gpu/corpus-arch.cmake [own]
#   BUILD_PAR         samples built at once [8]; BUILD_JOBS: cmake --build -j [2];
#   NVCC_THREADS      nvcc --threads for its per-architecture work [4]
#   GPU_SLOTS         programs running at once [4]
#   CORPUS_TIMEOUT_S  per corpus run [60; ivcuda x2]
#   CORPUS_NATIVE2    1: the corpus runs in mode native2 too [0: only the PyTorch scripts, whose
#                     comparison is within the two native runs' spread; the corpus compares its
#                     output without timings exactly, and a second native run only costs GPU slots]
#   TORCH_TIMEOUT_S   per PyTorch run [300]
#   TORCH_PAR         PyTorch scripts at once [2]
#   PYTHON            the Python with PyTorch [python3]
#   CUDA_TRACE_REAL   NVIDIA's libcuda.so.1 [from ldconfig -p]
#   APPS_WORK_DIR     scratch for runs, logs and traces [/tmp/ivcuda-apps]
set -uo pipefail
set -m # each background job in its own process group, so the watchdog can stop one whole

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
RESULT_DIR=${OUT:-$REPO/out}
mkdir -p "$RESULT_DIR"
RESULT_DIR=$(cd "$RESULT_DIR" && pwd)
WORK=${APPS_WORK_DIR:-/tmp/ivcuda-apps}

MODES=native,native2,trace
VARIANTS=static,shared
ONLY=
DRY_RUN=0
DO_CORPUS=1
DO_TORCH=1
REPORT_ONLY=0
while [ $# -gt 0 ]; do
    case "$1" in
        --modes) MODES=$2; shift 2 ;;
        --variants) VARIANTS=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        --no-corpus) DO_CORPUS=0; shift ;;
        --no-pytorch) DO_TORCH=0; shift ;;
        --dry-run) DRY_RUN=1; shift ;;
        --report-only) REPORT_ONLY=1; shift ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "$0: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
IFS=, read -r -a MODE_LIST <<<"$MODES"
IFS=, read -r -a VARIANT_LIST <<<"$VARIANTS"
for m in "${MODE_LIST[@]}"; do
    case "$m" in native | native2 | trace | ivcuda | vm) ;; *) echo "$0: unknown mode $m" >&2; exit 2 ;; esac
done
for v in "${VARIANT_LIST[@]}"; do
    case "$v" in static | shared) ;; *) echo "$0: unknown variant $v" >&2; exit 2 ;; esac
done
has_mode() { [[ ",$MODES," == *",$1,"* ]]; }
if ! has_mode native; then echo "$0: every comparison is with native: --modes must include native" >&2; exit 2; fi
# The modes whose equality with native the table shows, each in a column after its own.
COMPARED=()
for m in trace ivcuda vm; do has_mode "$m" && COMPARED+=("$m"); done
is_compared() { [[ " ${COMPARED[*]} " == *" $1 "* ]]; }
# The modes run after a corpus program's build and native run, in the loopback lane.
LOOPBACK_MODES=()
for m in "${MODE_LIST[@]}"; do
    case "$m" in trace | ivcuda) LOOPBACK_MODES+=("$m") ;; esac
done

if [ "$REPORT_ONLY" = 1 ]; then
    [ -d "$WORK/runs" ] || { echo "$0: no runs in $WORK/runs (APPS_WORK_DIR)" >&2; exit 2; }
    rm -rf "$WORK/pack"
    mkdir -p "$WORK/logs" "$WORK/pack"
else
    rm -rf "$WORK/runs" "$WORK/logs" "$WORK/pack" "$WORK/slots" "$WORK/bisect" "$WORK/breaker" "$WORK/vm" "$WORK/ready"
    mkdir -p "$WORK/runs" "$WORK/logs" "$WORK/pack" "$WORK/slots" "$WORK/breaker" "$WORK/ready"
fi
# gpu/lib.sh keeps its logs (server, guest build) and steps.log under its OUT: the scratch
# directory here; only the packed results go to RESULT_DIR.
OUT=$WORK
# shellcheck source=gpu/lib.sh source-path=SCRIPTDIR
. "$HERE/lib.sh"
[ "$REPORT_ONLY" = 1 ] || : >"$STEPS_LOG"

START_S=$(date +%s)
if [ "$REPORT_ONLY" = 1 ]; then
    START_S=$(stat -c %Y "$WORK/started" 2>/dev/null || echo "$START_S")
else
    : >"$WORK/started"
fi
# with vm 30 s more: the guests come after the builds (gpu/apps-vm.sh's VM_RESERVE_S)
BUDGET_S=${TOTAL_BUDGET_S:-480}
has_mode vm && [ -z "${TOTAL_BUDGET_S:-}" ] && BUDGET_S=510
DEADLINE_S=$((START_S + BUDGET_S))
CORPUS_BUILD_DIR=${CORPUS_BUILD_DIR:-/tmp/ivcuda-corpus-build}
CORPUS_ARCH=${CORPUS_ARCH:-own}
BUILD_PAR=${BUILD_PAR:-8}
BUILD_JOBS=${BUILD_JOBS:-2}
NVCC_THREADS=${NVCC_THREADS:-4}
GPU_SLOTS=${GPU_SLOTS:-4}
CORPUS_TIMEOUT_S=${CORPUS_TIMEOUT_S:-60}
TORCH_TIMEOUT_S=${TORCH_TIMEOUT_S:-300}
TORCH_PAR=${TORCH_PAR:-2}
PYTHON=${PYTHON:-python3}
SHIM_DIR=$WORK/cuda-trace
CORPUS_NATIVE2=${CORPUS_NATIVE2:-0}
REPORT=$WORK/compatibility.md
[ "${COMPARED[*]}" = vm ] && REPORT=$WORK/compatibility-vm.md
FACTS=$WORK/facts.md

if [ -z "${CORPUS_DIR:-}" ]; then
    CORPUS_DIR=$REPO/.corpus/cuda-samples
    [ -d "$CORPUS_DIR" ] || CORPUS_DIR=$REPO/../shared/corpus/cuda-samples
fi
TRACE_REAL_GIVEN=${CUDA_TRACE_REAL:-}
if [ -z "${CUDA_TRACE_REAL:-}" ]; then
    CUDA_TRACE_REAL=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ { print $NF; exit }')
    [ -n "$CUDA_TRACE_REAL" ] || CUDA_TRACE_REAL=/usr/lib/x86_64-linux-gnu/libcuda.so.1
fi
if ! command -v nvcc >/dev/null 2>&1 && [ -x "$CUDA_HOME/bin/nvcc" ]; then
    PATH=$CUDA_HOME/bin:$PATH
    export PATH
fi

# CUDA_CACHE_DISABLE=1 comes from gpu/lib.sh: every run compiles its PTX and logs alike.

trap 'log "interrupted"; exit 130' INT TERM
# shellcheck source=gpu/apps-vm.sh source-path=SCRIPTDIR
. "$HERE/apps-vm.sh"

# ---- the programs -----------------------------------------------------------------------------

SAMPLES=()
declare -A SAMPLE_MASK SAMPLE_ARGS SAMPLE_NOTE SAMPLE_DIR
load_samples() {
    local name cost mask args note dir
    while IFS='|' read -r name cost mask args note; do
        [[ -z "$name" || "$name" == \#* ]] && continue
        : "$cost"
        [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]] && continue
        dir=$(find "$CORPUS_DIR/Samples" -mindepth 2 -maxdepth 2 -type d -name "$name" 2>/dev/null | head -1)
        SAMPLE_DIR[$name]=$dir
        SAMPLE_MASK[$name]=$mask
        SAMPLE_ARGS[$name]=$args
        SAMPLE_NOTE[$name]=$note
        SAMPLES+=("$name")
    done <"$HERE/corpus-samples.txt"
}

SCRIPTS=()
load_scripts() {
    local f name
    for f in "$HERE"/pytorch/t[0-9]*.py; do
        name=$(basename "$f" .py)
        [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]] && continue
        SCRIPTS+=("$name")
    done
}

# ---- running one program in one mode ----------------------------------------------------------

# Runs "$@" holding one of GPU_SLOTS slots, so at most GPU_SLOTS programs share the GPU at a
# time (builds are not limited by it). A slot is a directory that mkdir creates atomically:
# unlike a lock on a descriptor, nothing the program leaves running can keep holding it.
# Returns 125 without running if the time budget ends while it waits.
# shellcheck disable=SC2317 # called through run_on_gpu and run_with_server
with_gpu_slot() {
    local i rc
    while [ "$(time_left)" -gt 15 ]; do
        for ((i = 0; i < GPU_SLOTS; i++)); do
            if mkdir "$WORK/slots/$i" 2>/dev/null; then
                "$@"
                rc=$?
                rmdir "$WORK/slots/$i"
                return "$rc"
            fi
        done
        sleep 0.2
    done
    return 125
}

# A mode (other than native) whose first BREAKER_TIMEOUTS runs all time out is given up:
# a shim or a server that hangs every program must not eat the budget of everything else.
BREAKER_TIMEOUTS=3
# shellcheck disable=SC2317 # called from run_one
breaker_count() { # breaker_count <mode> <rc>
    case "$1" in native | native2) return ;; esac
    case "$2" in
        0) : >"$WORK/breaker/$1.passed" ;;
        124 | 137) echo x >>"$WORK/breaker/$1.timeouts" ;;
    esac
}
breaker_open() { # breaker_open <mode>: true when the mode is given up
    [ -f "$WORK/breaker/$1.passed" ] && return 1
    [ -f "$WORK/breaker/$1.timeouts" ] && [ "$(wc -l <"$WORK/breaker/$1.timeouts")" -ge "$BREAKER_TIMEOUTS" ]
}

# run_one <program> <mode> <cwd> <timeout> <command...>: stdout, stderr, exit status and wall
# seconds in runs/<program>/<mode>.{out,err,rc,wall}; under trace, the traces beside them.
# shellcheck disable=SC2317 # called through with_gpu_slot
run_one() {
    local prog=$1 mode=$2 cwd=$3 limit=$4 cap
    shift 4
    # the wait for a slot (or a server) may have taken part of the time left
    cap=$(bounded_timeout "$limit")
    [ "$cap" -lt "$limit" ] && limit=$cap
    local dir=$WORK/runs/$prog
    local prefix=$dir/$mode t0 rc
    local envs=()
    case "$mode" in
        trace | trace-plain | bisect-*)
            envs=(LD_LIBRARY_PATH="$SHIM_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CUDA_TRACE_REAL="$CUDA_TRACE_REAL"
                  CUDA_TRACE_OUT="$dir/$mode.trace.%p.log" TRITON_LIBCUDA_PATH="$SHIM_DIR" "${TRACE_ENV[@]}")
            ;;
        ivcuda)
            envs=(LD_LIBRARY_PATH="$GUEST_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" IVCUDA_REGION="$REGION_PATH"
                  TRITON_LIBCUDA_PATH="$GUEST_LIB_DIR" IVCUDA_STATS=1)
            ;;
    esac
    t0=$(now_s)
    (cd "$cwd" && exec env "${envs[@]}" timeout -k 5 "$limit" "$@") >"$prefix.out" 2>"$prefix.err" </dev/null
    rc=$?
    [ "$rc" = 124 ] && echo "TIMEOUT after $limit s" >>"$prefix.err"
    echo "$rc" >"$prefix.rc"
    breaker_count "$mode" "$rc"
    elapsed_s "$t0" "$(now_s)" >"$prefix.wall"
    log "$prog $mode: rc=$rc wall=$(cat "$prefix.wall")s"
}

# run_mode <program> <mode> <cwd> <timeout> <command...>: run_one within the time budget, with
# a GPU slot, and for ivcuda a cuda-server of its own; a skipped run says why in <mode>.rc.
run_mode() {
    local prog=$1 mode=$2 cwd=$3 want=$4 limit
    shift 4
    local prefix=$WORK/runs/$prog/$mode
    limit=$(bounded_timeout "$want")
    if [ "$limit" -lt 10 ]; then
        echo "skipped (time budget)" >"$prefix.rc"
        return
    fi
    if breaker_open "$mode"; then
        echo "skipped (the first $BREAKER_TIMEOUTS runs in this mode timed out and none passed)" >"$prefix.rc"
        return
    fi
    local runner=run_on_gpu
    if [ "$mode" = ivcuda ]; then
        if [ "$GUEST_OK" != 1 ]; then
            echo "skipped (no guest library or server: logs/steps.log)" >"$prefix.rc"
            return
        fi
        runner=run_with_server
    fi
    if ! "$runner" "$prog" "$mode" "$cwd" "$limit" "$@" && [ ! -f "$prefix.rc" ]; then
        echo "skipped (time budget: no GPU slot came free)" >"$prefix.rc"
    fi
}

# shellcheck disable=SC2317 # called through run_mode
run_on_gpu() { with_gpu_slot run_one "$@"; }

# run_one with a cuda-server of its own (gpu/lib.sh's), on a region of its own: a server that
# a program crashes takes no other run with it, and its log belongs to one program. The server
# starts before the run takes its GPU slot: its JVM's start (~2.5 s of CPU) holds no slot.
# shellcheck disable=SC2317 # called through run_mode
run_with_server() {
    local prog=$1 mode=$2 limit=$4
    (
        REGION_PATH=/dev/shm/ivcuda-apps-$BASHPID
        OUT=$WORK/runs/$prog/server-$mode
        mkdir -p "$OUT/logs"
        if ! start_server $(($(time_left) + 30)); then
            echo "skipped (server did not start: runs/$prog/server-$mode/logs/server.log)" >"$WORK/runs/$prog/$mode.rc"
            exit 0
        fi
        with_gpu_slot run_one "$@"
        local rc=$?
        stop_server
        exit "$rc"
    )
}

# The part of each corpus run's stdout that must be equal, <mode>.out -> <mode>.norm
# (gpu/normalize_output.py): one Python process for each mask.
normalize_all() {
    local mask s v f
    local -A files_by_mask=()
    for v in "${VARIANT_LIST[@]}"; do
        for s in "${SAMPLES[@]}"; do
            for f in "$WORK/runs/$s.$v"/*.out; do
                [ -e "$f" ] || continue
                mask=${SAMPLE_MASK[$s]:-plain}
                files_by_mask[$mask]+="$f"$'\n'
            done
        done
    done
    for mask in "${!files_by_mask[@]}"; do
        local list=()
        mapfile -t list < <(printf '%s' "${files_by_mask[$mask]}")
        local mask_arg=()
        [ "$mask" != plain ] && mask_arg=(--mask "$mask")
        "$PYTHON_PLAIN" "$HERE/normalize_output.py" "${mask_arg[@]}" --write "${list[@]}" 2>>"$WORK/logs/normalize.err"
    done
}

# ---- the corpus -------------------------------------------------------------------------------

CMAKE_COMMON=()
cmake_common_args() {
    CMAKE_COMMON=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_FLAGS=--threads $NVCC_THREADS")
    command -v ninja >/dev/null 2>&1 && CMAKE_COMMON+=(-G Ninja)
    if [ "$CORPUS_ARCH" != own ]; then
        CMAKE_COMMON+=("-DCMAKE_PROJECT_INCLUDE=$HERE/corpus-arch.cmake" "-DIVCUDA_CUDA_ARCHITECTURES=$CORPUS_ARCH")
    fi
    [ -n "${CORPUS_DRIVER_LIB:-}" ] && CMAKE_COMMON+=("-DCUDA_cuda_driver_LIBRARY=$CORPUS_DRIVER_LIB")
}

variant_args() { # the cmake arguments that make a variant
    [ "$1" = shared ] && echo "-DCMAKE_CUDA_RUNTIME_LIBRARY=Shared"
}

# build_sample <sample> <variant>: configure (once; again if the arguments changed) and build.
build_sample() {
    local s=$1 v=$2 prog=$1.$2
    local src=${SAMPLE_DIR[$s]} bld=$CORPUS_BUILD_DIR/$v/$s dir=$WORK/runs/$1.$2 t0 rc=0 limit
    local args=(-S "$src" -B "$bld" "${CMAKE_COMMON[@]}")
    local va
    va=$(variant_args "$v")
    [ -n "$va" ] && args+=("$va")
    t0=$(now_s)
    if [ -z "$src" ]; then
        echo "no such sample under $CORPUS_DIR/Samples" >"$dir/build.log"
        rc=2
    else
        if [ -f "$bld/.ivcuda-cmake-args" ] && [ "$(cat "$bld/.ivcuda-cmake-args")" != "${args[*]}" ]; then
            rm -rf "$bld"
        fi
        limit=$(bounded_timeout 400)
        if [ "$limit" -lt 20 ]; then
            echo "skipped (time budget)" >"$dir/build.rc"
            return 1
        fi
        mkdir -p "$bld"
        {
            echo "+ cmake ${args[*]}"
            timeout -k 5 "$limit" cmake "${args[@]}" && echo "${args[*]}" >"$bld/.ivcuda-cmake-args" &&
                echo "+ cmake --build $bld -j $BUILD_JOBS" &&
                timeout -k 5 "$(bounded_timeout 400)" cmake --build "$bld" -j "$BUILD_JOBS"
        } >"$dir/build.log" 2>&1
        rc=$?
        [ "$rc" = 0 ] && [ ! -x "$bld/$s" ] && { echo "no executable $bld/$s" >>"$dir/build.log"; rc=3; }
    fi
    echo "$rc" >"$dir/build.rc"
    elapsed_s "$t0" "$(now_s)" >"$dir/build.wall"
    log "$prog build: rc=$rc wall=$(cat "$dir/build.wall")s"
    [ "$rc" = 0 ]
}

# corpus_job <sample> <variant>: build, then the native runs; ready/<program> then says "built"
# (the loopback lane runs its other modes) or "no" (nothing more to run).
corpus_job() {
    local s=$1 v=$2 prog=$1.$2 bld=$CORPUS_BUILD_DIR/$2/$1 mode
    mkdir -p "$WORK/runs/$prog"
    if ! build_sample "$s" "$v"; then
        mark_ready "$prog" no
        return 0
    fi
    local args=()
    read -r -a args <<<"${SAMPLE_ARGS[$s]:-}"
    for mode in "${MODE_LIST[@]}"; do
        case "$mode" in
            native) ;;
            native2) [ "$CORPUS_NATIVE2" = 1 ] || continue ;;
            *) continue ;; # the loopback lane's (trace, ivcuda) or the guests' (vm)
        esac
        if [ "$DRY_RUN" = 1 ]; then
            echo "skipped (dry run: no GPU)" >"$WORK/runs/$prog/$mode.rc"
            continue
        fi
        run_mode "$prog" "$mode" "$bld" "$CORPUS_TIMEOUT_S" "$bld/$s" "${args[@]}"
    done
    mark_ready "$prog" built
}

# mark_ready <program> <built|no>: whole, as the loopback lane may read it at any time.
mark_ready() {
    echo "$2" >"$WORK/ready/.$1.tmp" && mv "$WORK/ready/.$1.tmp" "$WORK/ready/$1"
}

# loopback_job <program>: its trace and ivcuda runs (in the order of --modes).
loopback_job() {
    local prog=$1 s=${1%.*} v=${1##*.} mode want
    local bld=$CORPUS_BUILD_DIR/$v/$s args=()
    read -r -a args <<<"${SAMPLE_ARGS[$s]:-}"
    for mode in "${LOOPBACK_MODES[@]}"; do
        want=$CORPUS_TIMEOUT_S
        [ "$mode" = ivcuda ] && want=$((2 * CORPUS_TIMEOUT_S))
        # cudart's start is ~150 calls; past 5000 a sample's own loop only repeats itself
        CUDA_TRACE_MAX_CALLS=${CUDA_TRACE_MAX_CALLS:-5000} CUDA_TRACE_DUMP_CALLS=${CUDA_TRACE_DUMP_CALLS:-1000} \
            run_mode "$prog" "$mode" "$bld" "$want" "$bld/$s" "${args[@]}"
    done
    retry_trace_plain "$prog" "$bld" "$bld/$s" "${args[@]}"
}

# Extra environment of a traced run (dynamically scoped: set with local by a caller).
TRACE_ENV=()

# A traced run that failed where native passed runs again with the driver's own tables and
# no return tracking: the table then says whether the shim's copies were the difference; the
# first such program is also bisected.
retry_trace_plain() {
    local prog=$1 cwd=$2
    shift 2
    local d=$WORK/runs/$prog
    has_mode trace || return 0
    [ "$DRY_RUN" = 1 ] && return 0
    if [ "$(cat "$d/native.rc" 2>/dev/null)" != 0 ] || [ "$(cat "$d/trace.rc" 2>/dev/null)" = 0 ]; then
        return 0
    fi
    local TRACE_ENV=(CUDA_TRACE_COPY_TABLES=0 CUDA_TRACE_RETURNS=0)
    run_mode "$prog" trace-plain "$cwd" "$CORPUS_TIMEOUT_S" "$@"
    [ "$(cat "$d/trace-plain.rc" 2>/dev/null)" = 0 ] && bisect_trace "$prog" "$cwd" "$@"
}

# Which part of the shim breaks a program that runs without it: return tracking, the table
# copies, or one table's copy (CUDA_TRACE_NOCOPY). Once per run of apps.sh, on the first
# program that needs it; the report lists the outcomes.
bisect_trace() {
    local prog=$1 cwd=$2
    shift 2
    mkdir "$WORK/bisect" 2>/dev/null || return 0
    echo "$prog" >"$WORK/bisect/program"
    local uuids=() u
    mapfile -t uuids < <(cat "$WORK/runs/$prog"/trace.trace.*.log 2>/dev/null |
        awk '$1 == "EXP" { for (i = 2; i <= NF; i++) if ($i ~ /^uuid=/) print substr($i, 6, 8) }' | sort -u)
    local TRACE_ENV=(CUDA_TRACE_RETURNS=0)
    run_mode "$prog" bisect-no-returns "$cwd" "$CORPUS_TIMEOUT_S" "$@"
    TRACE_ENV=(CUDA_TRACE_COPY_TABLES=0)
    run_mode "$prog" bisect-no-copies "$cwd" "$CORPUS_TIMEOUT_S" "$@"
    for u in "${uuids[@]}"; do
        TRACE_ENV=("CUDA_TRACE_NOCOPY=$u")
        run_mode "$prog" "bisect-nocopy-$u" "$cwd" "$CORPUS_TIMEOUT_S" "$@"
    done
}

bisect_report() {
    [ -f "$WORK/bisect/program" ] || return 0
    local prog f
    prog=$(cat "$WORK/bisect/program")
    echo "## Which part of the tracing shim broke $prog"
    echo
    echo "It ran natively and with \`CUDA_TRACE_COPY_TABLES=0 CUDA_TRACE_RETURNS=0\`, but not traced. Traced again:"
    echo
    echo "| traced with | result |"
    echo "|---|---|"
    for f in "$WORK/runs/$prog"/bisect-*.rc; do
        [ -e "$f" ] || continue
        case "$(basename "$f" .rc)" in
            bisect-no-returns) echo "| \`CUDA_TRACE_RETURNS=0\` | $(cell "${f%.rc}") |" ;;
            bisect-no-copies) echo "| \`CUDA_TRACE_COPY_TABLES=0\` | $(cell "${f%.rc}") |" ;;
            bisect-nocopy-*) echo "| \`CUDA_TRACE_NOCOPY=$(basename "$f" .rc | sed 's/^bisect-nocopy-//')\` | $(cell "${f%.rc}") |" ;;
        esac
    done
    echo
}

# The corpus programs, in the order of the list (static first).
corpus_programs() {
    local v s
    for v in "${VARIANT_LIST[@]}"; do
        for s in "${SAMPLES[@]}"; do echo "$s.$v"; done
    done
}

# Builds and native runs, BUILD_PAR at a time; ready/.done when the last ended. With vm they end
# VM_RESERVE_S before the budget, which the guests get.
build_lane() {
    has_mode vm && DEADLINE_S=$((DEADLINE_S - VM_RESERVE_S))
    local p
    while read -r p; do
        while [ "$(jobs -rp | wc -l)" -ge "$BUILD_PAR" ]; do wait -n; done
        corpus_job "${p%.*}" "${p##*.}" &
    done < <(corpus_programs)
    wait
    : >"$WORK/ready/.done"
}

# The loopback modes of each program as soon as its native run is done, GPU_SLOTS programs at a
# time (each run waits for a GPU slot as well): a build never waits for them, nor do the guests.
loopback_lane() {
    local todo=() rest p done_seen
    mapfile -t todo < <(corpus_programs)
    while [ "${#todo[@]}" -gt 0 ] && [ "$(time_left)" -gt 15 ]; do
        # .done first: a program without ready/<program> after it will never be ready
        done_seen=0
        [ -f "$WORK/ready/.done" ] && done_seen=1
        rest=()
        for p in "${todo[@]}"; do
            if [ ! -f "$WORK/ready/$p" ]; then
                [ "$done_seen" = 1 ] || rest+=("$p")
                continue
            fi
            [ "$(cat "$WORK/ready/$p")" = built ] || continue
            while [ "$(jobs -rp | wc -l)" -ge "$GPU_SLOTS" ]; do wait -n; done
            loopback_job "$p" &
        done
        todo=("${rest[@]}")
        [ "${#todo[@]}" -gt 0 ] && sleep 0.5
    done
    wait
    : >"$WORK/loopback.done"
}

corpus_lane() {
    local builds
    build_lane &
    builds=$!
    if [ "${#LOOPBACK_MODES[@]}" -gt 0 ]; then
        loopback_lane &
    fi
    if has_mode vm; then
        wait "$builds"
        vm_lane
    fi
    wait
}

# ---- PyTorch ----------------------------------------------------------------------------------

torch_run() { # torch_run <script> <mode>: one run in a fresh directory and compile cache
    local name=$1 mode=$2 prog=torch.$1
    local d=$WORK/runs/$prog cwd=$WORK/runs/torch.$1/$2.cwd
    if [ "$mode" = vm ]; then
        echo "skipped (the VM runs the corpus only)" >"$d/$mode.rc"
        return
    fi
    mkdir -p "$cwd"
    if [ "$DRY_RUN" = 1 ]; then
        case "$mode" in
            native | native2)
                IVCUDA_TORCH_DEVICE=cpu run_mode "$prog" "$mode" "$cwd" "$TORCH_TIMEOUT_S" \
                    "$PYTHON" "$HERE/pytorch/$name.py" ;;
            *) echo "skipped (dry run: no GPU)" >"$d/$mode.rc" ;;
        esac
        return
    fi
    PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=$cwd/inductor-cache TRITON_CACHE_DIR=$cwd/triton-cache \
        run_mode "$prog" "$mode" "$cwd" "$TORCH_TIMEOUT_S" "$PYTHON" "$HERE/pytorch/$name.py"
    if [ "$mode" = trace ] && [ "$(cat "$d/native.rc" 2>/dev/null)" = 0 ] && [ "$(cat "$d/trace.rc")" != 0 ]; then
        local TRACE_ENV=(CUDA_TRACE_COPY_TABLES=0 CUDA_TRACE_RETURNS=0)
        cwd=$d/trace-plain.cwd
        mkdir -p "$cwd"
        PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=$cwd/inductor-cache TRITON_CACHE_DIR=$cwd/triton-cache \
            run_mode "$prog" trace-plain "$cwd" "$TORCH_TIMEOUT_S" "$PYTHON" "$HERE/pytorch/$name.py"
    fi
}

# Mode by mode (every script natively first), TORCH_PAR scripts at a time: a mode that hangs
# cannot keep the native runs from happening.
torch_lane() {
    local s m
    for s in "${SCRIPTS[@]}"; do mkdir -p "$WORK/runs/torch.$s"; done
    for m in "${MODE_LIST[@]}"; do
        for s in "${SCRIPTS[@]}"; do
            while [ "$(jobs -rp | wc -l)" -ge "$TORCH_PAR" ]; do wait -n; done
            torch_run "$s" "$m" &
        done
        wait
    done
    : >"$WORK/torch.done"
}

# ---- facts ------------------------------------------------------------------------------------

write_facts() {
    local real_soname
    real_soname=$(readelf -d "$CUDA_TRACE_REAL" 2>/dev/null | awk '/SONAME/ { print $NF }')
    {
        echo "# Facts of the machine, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
        echo
        echo '```'
        echo "commit: $(git_commit)"
        echo "kernel: $(uname -r); cores: $(nproc); memory: $(awk '/MemTotal/ { print $2 " kB" }' /proc/meminfo)"
        echo "nvidia-smi: $(timeout 30 nvidia-smi --query-gpu=name,driver_version,uuid,pci.bus_id,vbios_version,memory.total --format=csv,noheader 2>&1 | head -4)"
        echo "driver library: $CUDA_TRACE_REAL (SONAME $real_soname, $(stat -c %s "$CUDA_TRACE_REAL" 2>/dev/null) bytes, sha256 $(sha256sum "$CUDA_TRACE_REAL" 2>/dev/null | cut -c1-16)...)"
        echo "ldconfig: $(ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libnvidia-ml\.so' | tr -s ' \t' ' ' | tr '\n' ';')"
        echo "nvcc: $(nvcc --version 2>&1 | tail -2 | tr '\n' ' ')"
        echo "cmake: $(cmake --version 2>&1 | head -1); ninja: $(ninja --version 2>&1 | head -1); gcc: $(gcc --version 2>&1 | head -1)"
        echo "python: $($PYTHON -c 'import sys; print(sys.executable, sys.version.split()[0])' 2>&1)"
        echo "torch: $($PYTHON -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1 | tail -1)"
        echo "triton: $($PYTHON -c 'import triton; print(triton.__version__)' 2>&1 | tail -1)"
        echo "LD_LIBRARY_PATH: ${LD_LIBRARY_PATH:-unset}"
        echo "corpus: $CORPUS_DIR ($(find "$CORPUS_DIR/Samples" -mindepth 2 -maxdepth 2 -type d 2>/dev/null | wc -l) samples)"
        echo "cmake arguments: ${CMAKE_COMMON[*]}; static: (none); shared: $(variant_args shared)"
        echo '```'
        echo
        echo "## Device identity (gpu/tools/device_identity.c), natively"
        echo
        echo '```'
        cat "$WORK/logs/identity.native.out" 2>/dev/null
        echo '```'
        echo
        echo "## nvidia-smi -q (identity part)"
        echo
        echo '```'
        timeout 30 nvidia-smi -q 2>&1 | grep -E -i 'Driver Version|CUDA Version|Product Name|Serial|GPU UUID|Bus Id|Device Id|Sub System|VBIOS|Board Part|Module ID|GPU Part' | head -30
        echo '```'
    } >"$FACTS"
    cp "$FACTS" "$RESULT_DIR/facts.md"
}

# ---- tools ------------------------------------------------------------------------------------

build_shim() {
    if ! make -s -C "$HERE/tools/cuda-trace" O="$SHIM_DIR" >"$WORK/logs/cuda-trace-build.log" 2>&1; then
        problem "building gpu/tools/cuda-trace failed (logs/cuda-trace-build.log)"
        return 1
    fi
    # The shim's own test against a fake driver, on this machine, before any trace is trusted.
    if make -s -C "$HERE/tools/cuda-trace" O="$SHIM_DIR" check >"$WORK/logs/cuda-trace-check.log" 2>&1; then
        log "cuda-trace: built in $SHIM_DIR; $(tail -1 "$WORK/logs/cuda-trace-check.log")"
    else
        problem "cuda-trace's check against the fake driver failed (logs/cuda-trace-check.log)"
        return 1
    fi
}

build_identity() {
    mkdir -p "$WORK/tools"
    gcc -O2 -std=c11 -Wall -Wextra "$HERE/tools/device_identity.c" -o "$WORK/tools/device_identity" -ldl \
        >"$WORK/logs/identity-build.log" 2>&1 || problem "building gpu/tools/device_identity.c failed"
}

run_identity() {
    [ -x "$WORK/tools/device_identity" ] || return 0
    timeout 60 "$WORK/tools/device_identity" >"$WORK/logs/identity.native.out" 2>&1
    if [ "$SHIM_OK" = 1 ]; then
        mkdir -p "$WORK/runs/device_identity"
        LD_LIBRARY_PATH=$SHIM_DIR CUDA_TRACE_REAL=$CUDA_TRACE_REAL \
            CUDA_TRACE_OUT=$WORK/runs/device_identity/trace.trace.%p.log \
            timeout 60 "$WORK/tools/device_identity" >"$WORK/runs/device_identity/trace.out" 2>&1
    fi
}

# ---- the report -------------------------------------------------------------------------------

cell() { # the table cell of one run
    local prefix=$1 rc wall
    rc=$(cat "$prefix.rc" 2>/dev/null) || { echo "-"; return; }
    wall=$(cat "$prefix.wall" 2>/dev/null)
    case "$rc" in
        0)
            if [[ "$prefix" == */trace ]] && ! compgen -G "$prefix.trace.*.log" >/dev/null; then
                echo "ok ${wall}s, but no trace written: the shim was not loaded"
            else
                echo "ok ${wall}s"
            fi
            ;;
        *) verdict "$rc" "$prefix" | tr '|' '/' | cut -c1-400 ;;
    esac
}

first_diff() { # first_diff <a> <b>: the first differing line of two files, short
    diff "$1" "$2" | grep -m2 -E '^[<>]' | tr '\n' ' ' | tr '|' '/' | cut -c1-200
}

# compare_run <program> <mode>: "yes", "no: ...", or "-"; the normalised outputs stay beside
# the runs (<mode>.norm) so a difference can be read in logs.tar.xz.
compare_run() {
    local prog=$1 mode=$2 d=$WORK/runs/$1
    if [ "$(cat "$d/native.rc" 2>/dev/null)" != 0 ] || [ "$(cat "$d/$mode.rc" 2>/dev/null)" != 0 ]; then
        echo "-"
        return
    fi
    if [[ "$prog" == torch.* ]]; then
        if [ -f "$d/native2.out" ]; then
            "$PYTHON_PLAIN" "$HERE/pytorch/compare.py" "$d/native.out" "$d/native2.out" "$d/$mode.out" 2>&1 | head -1 | tr '|' '/'
        else
            "$PYTHON_PLAIN" "$HERE/pytorch/compare.py" "$d/native.out" "$d/native.out" "$d/$mode.out" 2>&1 | head -1 | tr '|' '/'
        fi
        return
    fi
    if cmp -s "$d/native.norm" "$d/$mode.norm"; then
        echo "yes"
    else
        echo "**no**: $(first_diff "$d/native.norm" "$d/$mode.norm")"
    fi
}

native_again() { # how the second native run compares with the first
    local prog=$1 d=$WORK/runs/$1
    [ -f "$d/native2.rc" ] || { echo "-"; return; }
    if [[ "$prog" == torch.* ]] && [ "$(cat "$d/native.rc")" = 0 ] && [ "$(cat "$d/native2.rc")" = 0 ]; then
        "$PYTHON_PLAIN" "$HERE/pytorch/compare.py" --spread "$d/native.out" "$d/native2.out" 2>&1 | head -1 | tr '|' '/'
        return
    fi
    local c
    c=$(compare_run "$prog" native2)
    case "$c" in
        yes) echo "same output" ;;
        -) cell "$d/native2" ;;
        *) echo "differs: ${c#\*\*no\*\*: }" ;;
    esac
}

# why_not <program> <mode> <equal>: why the mode's run is not equal to native ("" when it is);
# the build's or native run's failure, without the mode's name (it is every mode's reason).
why_not() {
    local prog=$1 mode=$2 eq=$3 d=$WORK/runs/$1
    case "$eq" in yes | equal | within*) echo ""; return ;; esac
    local build_rc
    build_rc=$(cat "$d/build.rc" 2>/dev/null)
    case "$build_rc" in
        "" | 0) ;;
        124 | 137) echo "build stopped at the time budget (TOTAL_BUDGET_S)"; return ;;
        skipped*) echo "build $build_rc"; return ;;
        *)
            echo "build failed ($build_rc): $(grep -m1 -E 'Error|error:|not found' "$d/build.log" 2>/dev/null | cut -c1-150 | tr '|' '/')"
            return
            ;;
    esac
    if [ "$(cat "$d/native.rc" 2>/dev/null)" != 0 ]; then
        echo "native: $(cell "$d/native")"
    elif [ ! -f "$d/$mode.rc" ]; then
        echo "$(mode_title "$mode"): no run"
    elif [ "$(cat "$d/$mode.rc" 2>/dev/null)" != 0 ]; then
        local reason
        reason="$(mode_title "$mode"): $(cell "$d/$mode")$(by_design "$d" "$mode")"
        if [ "$mode" = trace ] && [ -f "$d/trace-plain.rc" ]; then
            reason="$reason; with the driver's own tables and no return tracking: $(cell "$d/trace-plain")"
        fi
        echo "$reason"
    else
        echo "$(mode_title "$mode"): outputs differ$(by_design "$d" "$mode")"
    fi
}

# by_design <run dir> <mode>: "; <reason>" when what differs is a refusal ivcuda makes by design,
# read from the run's stderr and its difference with native; else nothing.
by_design() {
    local d=$1 mode=$2
    if { cat "$d/$mode.err" 2>/dev/null; diff "$d/native.norm" "$d/$mode.norm" 2>/dev/null; } |
        grep -qi 'managed memory'; then
        echo "; managed memory, refused by design (docs/memory.md: a guest cannot share pages with the GPU)"
    fi
}

mode_title() {
    case "$1" in
        native) echo "native" ;;
        native2) echo "native again" ;;
        trace) echo "traced" ;;
        ivcuda) echo "ivcuda" ;;
        vm) echo "in the VM" ;;
    esac
}

equal_title() {
    case "$1" in
        vm) echo "equal in the VM" ;;
        *) echo "equal ($(mode_title "$1") vs native)" ;;
    esac
}

# table <corpus|torch> <program...>: a column per mode, after each compared mode whether it
# equals native, then why not (each compared mode's reason, once when they are the same). The
# PyTorch table has no vm columns: the guests run the corpus only; native2's column is left out
# where no program ran twice. Appends <program, mode,
# equal> to equal.tsv for the summary.
table() {
    local kind=$1 header="| program | " sep="|---|" m p eq
    shift
    local modes=() n2=0
    # no "native again" column for the corpus when none of it ran twice (CORPUS_NATIVE2=0)
    for p in "$@"; do [ -f "$WORK/runs/$p/native2.rc" ] && n2=1 && break; done
    for m in "${MODE_LIST[@]}"; do
        [ "$kind" = torch ] && [ "$m" = vm ] && continue
        [ "$m" = native2 ] && [ "$n2" = 0 ] && continue
        modes+=("$m")
    done
    for m in "${modes[@]}"; do
        header+="$(mode_title "$m") | "
        sep+="---|"
        if is_compared "$m"; then
            header+="$(equal_title "$m") | "
            sep+="---|"
        fi
    done
    header+="why not |"
    sep+="---|"
    echo "$header"
    echo "$sep"
    for p in "$@"; do
        local row="| $p | " reasons=() r seen
        for m in "${modes[@]}"; do
            if [ "$m" = native2 ]; then
                row+="$(native_again "$p") | "
            else
                row+="$(cell "$WORK/runs/$p/$m") | "
            fi
            is_compared "$m" || continue
            eq=$(compare_run "$p" "$m")
            row+="$eq | "
            printf '%s\t%s\t%s\n' "$p" "$m" "$eq" >>"$WORK/equal.tsv"
            r=$(why_not "$p" "$m" "$eq")
            [ -n "$r" ] || continue
            seen=0
            for eq in "${reasons[@]}"; do [ "$eq" = "$r" ] && seen=1; done
            [ "$seen" = 1 ] || reasons+=("$r")
        done
        r=
        for eq in "${reasons[@]}"; do r+="${r:+; }$eq"; done
        row+="$r |"
        echo "$row"
    done
}

how_to_run() {
    cat <<'EOF'
## How to run

`gpu/apps.sh` (its header lists every option and setting) runs on the GPU machine in one
device call (10 minutes; it keeps to `TOTAL_BUDGET_S`, 480 s or 510 s with vm, then reports and packs). The
corpus travels in the ignored folder `.corpus`:

```sh
mkdir -p .corpus && cp -r ../shared/corpus/cuda-samples .corpus/     # once, here
# issue 12's acceptance in one device call: corpus natively, in host loopback and inside TCG guests,
# PyTorch natively twice and in host loopback; carrying .corpus .jre (gpu/pack-jre.sh) .vmcarry
# cuda-server/target/cuda-server.jar cuda-server/target/lib api/target/classes:
CORPUS_ARCH=90 gpu/apps.sh --modes native,native2,ivcuda,vm
# device call, carrying .corpus (traces, no ivcuda):
gpu/apps.sh --modes native,native2,trace
# host loopback only (no .vmcarry needed):
gpu/apps.sh --modes native,native2,ivcuda
# the corpus inside TCG guests only:
CORPUS_ARCH=90 gpu/apps.sh --modes native,vm --no-pytorch
gpu/apps.sh --dry-run    # anywhere: the plan, the tracing shim's test, a few samples built, PyTorch on the CPU
```

Results in `$OUT`: `compatibility.md` (this table; `compatibility-vm.md` when vm is the only mode
compared with native), `facts.md`, `export-tables-summary.md`, `results.tsv`, `steps.log`,
`logs.tar.xz`, `traces-corpus.tar.xz`, `traces-pytorch.tar.xz` (those with something in them).
EOF
}

# count_equal <mode> <programs...>: how many runs equal native (PyTorch: or within its spread).
count_equal() {
    local m=$1
    shift
    local -A want=()
    local p
    for p in "$@"; do want[$p]=1; done
    local n=0 prog mode eq
    while IFS=$'\t' read -r prog mode eq; do
        if [ "$mode" != "$m" ] || [ -z "${want[$prog]:-}" ]; then continue; fi
        case "$eq" in yes | equal | within*) n=$((n + 1)) ;; esac
    done <"$WORK/equal.tsv"
    echo "$n"
}

count_rc() { # count_rc <mode> <programs...>: how many ran with exit status 0
    local m=$1 n=0 p
    shift
    for p in "$@"; do [ "$(cat "$WORK/runs/$p/$m.rc" 2>/dev/null)" = 0 ] && n=$((n + 1)); done
    echo "$n"
}

# When the lanes' parts ended, in seconds after the start (files' times: also after --report-only).
timeline() {
    local out="" f t what
    for f in ready/.done vm/started vm/ended loopback.done torch.done; do
        t=$(stat -c %Y "$WORK/$f" 2>/dev/null) || continue
        case "$f" in
            ready/.done) what="builds and native runs ended" ;;
            vm/started) what="guests started" ;;
            vm/ended) what="guests ended" ;;
            loopback.done) what="loopback runs ended" ;;
            torch.done) what="PyTorch ended" ;;
        esac
        out+="${out:+; }$what after $((t - START_S)) s"
    done
    echo "${out:--}"
}

write_report() {
    local corpus_progs=() torch_progs=() v s m
    for v in "${VARIANT_LIST[@]}"; do
        for s in "${SAMPLES[@]}"; do [ -d "$WORK/runs/$s.$v" ] && corpus_progs+=("$s.$v"); done
    done
    for s in "${SCRIPTS[@]}"; do [ -d "$WORK/runs/torch.$s" ] && torch_progs+=("torch.$s"); done
    : >"$WORK/equal.tsv"
    normalize_all
    # the tables first: they write equal.tsv, which the summary counts
    local corpus_table torch_table
    corpus_table=$(table corpus "${corpus_progs[@]}")
    torch_table=$(table torch "${torch_progs[@]}")
    {
        echo "# Real CUDA software through ivcuda: compatibility"
        echo
        [ "$DRY_RUN" = 1 ] && echo "**Dry run** (no GPU): corpus programs ran only under the tracing shim against its fake driver and through ivcuda on the server's host-memory backend; no guest booted; PyTorch scripts on the CPU. Nothing here is a result about ivcuda or the driver." && echo
        echo "| | |"
        echo "|---|---|"
        echo "| date | $(date -u '+%Y-%m-%d %H:%M:%S UTC') (started $(date -u -d "@$START_S" '+%H:%M:%S')) |"
        echo "| commit | $(git_commit) |"
        echo "| GPU, driver | $(gpu_identity) |"
        echo "| CUDA toolkit | $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -1) |"
        echo "| PyTorch | $($PYTHON -c 'import torch; print(torch.__version__)' 2>/dev/null | tail -1) |"
        echo "| corpus | $CORPUS_DIR: ${#SAMPLES[@]} samples x ${VARIANT_LIST[*]} cudart; architectures: $CORPUS_ARCH |"
        echo "| modes | ${MODES}$(has_mode native2 && [ "$CORPUS_NATIVE2" != 1 ] && echo " (native again: PyTorch only, CORPUS_NATIVE2=0)") |"
        echo "| at once | $BUILD_PAR sample builds; $GPU_SLOTS programs on the GPU; $TORCH_PAR PyTorch scripts$(has_mode vm && echo "; $VM_COUNT guests of $VM_CPUS vCPUs") |"
        echo "| budget | $BUDGET_S s$(has_mode vm && echo ", builds and native runs until $((BUDGET_S - VM_RESERVE_S)) s"); report written after $(($(date +%s) - START_S)) s |"
        echo "| timeline | $(timeline) |"
        echo "| command | \`CORPUS_ARCH=$CORPUS_ARCH TOTAL_BUDGET_S=$BUDGET_S$(has_mode vm && echo " VM_COUNT=$VM_COUNT VM_RESERVE_S=$VM_RESERVE_S") gpu/apps.sh --modes $MODES$ONLY_ARG\` (How to run, below) |"
        echo
        echo "Outputs are compared without timings: corpus programs' stdout through"
        echo "\`gpu/normalize_output.py\` (every number on a line that reports a time, bandwidth,"
        echo "throughput or performance becomes \`#\`), PyTorch scripts' \`value\` lines within the spread of"
        echo "two native runs and their \`check\` lines exactly (\`gpu/pytorch/compare.py\`)."
        echo "Cells: \`ok <wall>s\`, or why a run failed (its exit status and last words)."
        echo
        echo "## Summary"
        echo
        for m in "${COMPARED[@]}"; do
            case "$m" in
                vm) echo "- **equal in the VM**: corpus $(count_equal vm "${corpus_progs[@]}")/${#corpus_progs[@]} (the guests run the corpus only)" ;;
                *)
                    local where="in host loopback"
                    [ "$m" = trace ] && where="traced"
                    echo "- **equal $where** ($(mode_title "$m")): corpus $(count_equal "$m" "${corpus_progs[@]}")/${#corpus_progs[@]}," \
                        "PyTorch $(count_equal "$m" "${torch_progs[@]}")/${#torch_progs[@]} equal or within the spread of the two native runs"
                    ;;
            esac
        done
        for m in "${MODE_LIST[@]}"; do
            [ "$m" = native2 ] && continue
            if [ "$m" = vm ]; then
                echo "- $(mode_title "$m"): corpus $(count_rc "$m" "${corpus_progs[@]}")/${#corpus_progs[@]} exit 0"
                continue
            fi
            echo "- $(mode_title "$m"): corpus $(count_rc "$m" "${corpus_progs[@]}")/${#corpus_progs[@]} exit 0," \
                "PyTorch $(count_rc "$m" "${torch_progs[@]}")/${#torch_progs[@]} exit 0"
        done
        echo
        echo "## Corpus: NVIDIA's CUDA samples"
        echo
        echo "$corpus_table"
        echo
        echo "## PyTorch (gpu/pytorch)"
        echo
        echo "$torch_table"
        echo
        bisect_report
        has_mode vm && vm_report
        if [ "${#PROBLEMS[@]}" -gt 0 ]; then
            echo "## Problems of the run itself"
            echo
            for m in "${PROBLEMS[@]}"; do echo "- $m"; done
            echo
        fi
        echo "Raw outputs: \`logs.tar.xz\` (\`runs/<program>/<mode>.{out,err,rc,wall,norm}\`, \`build.log\`);"
        echo "traces: \`traces-*.tar.xz\`; summary of the traces: \`export-tables-summary.md\`; facts: \`facts.md\`."
        echo
        how_to_run
    } >"$REPORT.tmp"
    mv "$REPORT.tmp" "$REPORT"
    cp "$REPORT" "$RESULT_DIR/${REPORT##*/}"
    {
        printf 'program\tmode\trc\twall_s\n'
        local f
        for f in "$WORK"/runs/*/*.rc; do
            [ -e "$f" ] || continue
            local p m
            p=$(basename "$(dirname "$f")")
            m=$(basename "$f" .rc)
            printf '%s\t%s\t%s\t%s\n' "$p" "$m" "$(cat "$f")" "$(cat "${f%.rc}.wall" 2>/dev/null)"
        done
    } >"$RESULT_DIR/results.tsv"
}

summarize_traces() {
    local traces=()
    mapfile -t traces < <(find "$WORK/runs" -name '*.trace.*.log' -size +0 2>/dev/null | sort)
    [ "${#traces[@]}" -gt 0 ] || return 0
    if timeout 90 "$PYTHON_PLAIN" "$HERE/tools/cuda-trace/summarize.py" --label-from-path "${traces[@]}" \
        >"$WORK/export-tables-summary.md.tmp" 2>"$WORK/logs/summarize.err"; then
        mv "$WORK/export-tables-summary.md.tmp" "$RESULT_DIR/export-tables-summary.md"
    else
        problem "summarize.py failed (logs/summarize.err)"
    fi
}

# pack <name> <max bytes> <files relative to WORK...>: an xz tarball in RESULT_DIR; over the
# limit, each file is cut to its first part (halving until it fits), and the tarball says so.
pack() {
    local name=$1 max=$2 cut=0 per
    shift 2
    [ $# -gt 0 ] || return 0
    rm -rf "$WORK/pack/$name"
    mkdir -p "$WORK/pack/$name"
    (cd "$WORK" && tar -cf - "$@") | (cd "$WORK/pack/$name" && tar -xf -)
    local ext=tar.xz compress=(xz -T0 -6)
    command -v xz >/dev/null 2>&1 || { ext=tar.gz; compress=(gzip -6); }
    per=$((8 << 20))
    while :; do
        (cd "$WORK/pack/$name" && tar -cf - . | "${compress[@]}" >"$WORK/pack/$name.$ext")
        [ "$(stat -c %s "$WORK/pack/$name.$ext")" -le "$max" ] && break
        [ "$per" -lt 4096 ] && break
        cut=1
        find "$WORK/pack/$name" -type f -size +"$((per / 1024))"k -print0 | while IFS= read -r -d '' f; do
            head -c "$per" "$f" >"$f.cut" && mv "$f.cut" "$f" && printf '\n[cut to its first %d bytes to fit the results]\n' "$per" >>"$f"
        done
        per=$((per / 2))
    done
    [ "$cut" = 1 ] && log "$name.$ext: files cut to $per bytes to stay under $max bytes"
    mv "$WORK/pack/$name.$ext" "$RESULT_DIR/$name.$ext"
}

pack_results() {
    local logs=() corpus_traces=() torch_traces=()
    mapfile -t logs < <(cd "$WORK" && {
        find runs -maxdepth 2 -type f \( -name '*.out' -o -name '*.err' -o -name '*.rc' -o -name '*.wall' \
            -o -name '*.norm' -o -name 'build.log' \)
        find runs -path 'runs/*/server-*/logs/*' -type f
        find logs -type f
        find vm -path 'vm/*/logs/*' -type f 2>/dev/null
        # what --report-only needs besides the runs: the guests' rows and the timeline's marks
        find vm -name report-row 2>/dev/null
        for f in started ready/.done vm/started vm/ended loopback.done torch.done; do [ -f "$f" ] && echo "$f"; done
    } | sort)
    mapfile -t corpus_traces < <(cd "$WORK" && find runs -maxdepth 2 -name '*.trace.*.log' ! -path 'runs/torch.*' | sort)
    mapfile -t torch_traces < <(cd "$WORK" && find runs -maxdepth 2 -name '*.trace.*.log' -path 'runs/torch.*' | sort)
    pack logs $((15 << 20)) "${logs[@]}"
    pack traces-corpus $((15 << 20)) "${corpus_traces[@]}"
    pack traces-pytorch $((15 << 20)) "${torch_traces[@]}"
}

# ---- the run ----------------------------------------------------------------------------------

PROBLEMS=()
ONLY_ARG=
[ -n "$ONLY" ] && ONLY_ARG=" --only '$ONLY'"
PYTHON_PLAIN=$(command -v python3 || echo "$PYTHON")
load_samples
load_scripts
cmake_common_args
[ "$DO_CORPUS" = 1 ] || SAMPLES=()
[ "$DO_TORCH" = 1 ] || SCRIPTS=()
[ "$DRY_RUN" = 1 ] && [ -z "$ONLY" ] && [ "$DO_CORPUS" = 1 ] && {
    # a dry run builds a handful: kinds of build the corpus has (plain, driver API + fatbin,
    # PTX, NVRTC, Thrust, a library) and the heaviest
    ONLY='^(clock|simpleDrvRuntime|ptxjit|vectorAddMMAP|radixSortThrust|cudaGraphsPerfScaling|matrixMulCUBLAS)$'
    SAMPLES=()
    load_samples
}
if [ "$REPORT_ONLY" = 1 ]; then
    write_report
    log "report written again from $WORK/runs: $RESULT_DIR/${REPORT##*/}"
    exit 0
fi

log "gpu/apps.sh: modes $MODES, variants $VARIANTS, ${#SAMPLES[@]} samples, ${#SCRIPTS[@]} PyTorch scripts," \
    "budget $BUDGET_S s, dry run $DRY_RUN"
log "corpus $CORPUS_DIR, builds in $CORPUS_BUILD_DIR, cmake ${CMAKE_COMMON[*]} [+ $(variant_args shared) for shared]"
log "work $WORK, results $RESULT_DIR, driver $CUDA_TRACE_REAL, python $PYTHON"
if [ "${#SAMPLES[@]}" -gt 0 ] && [ ! -d "$CORPUS_DIR/Samples" ]; then
    problem "no corpus at $CORPUS_DIR (carry .corpus: cp -r ../shared/corpus/cuda-samples .corpus/)"
    SAMPLES=()
fi

SHIM_OK=0
build_shim && SHIM_OK=1
build_identity
GUEST_OK=0
if has_mode ivcuda || has_mode vm; then
    if setup_java && build_guest && [ -f "$SERVER_JAR" ]; then
        GUEST_OK=1
    else
        problem "ivcuda/vm mode: no java, guest library or $SERVER_JAR (see steps.log)"
    fi
fi
if has_mode trace && [ "$SHIM_OK" != 1 ]; then
    problem "trace mode: the shim is not usable; traced runs are skipped"
fi
if [ "$DRY_RUN" = 1 ]; then
    # No driver here: the traced runs go to the shim's fake driver, which answers cudart's
    # lookups and fails the rest, so a run shows the shim loaded and logging, nothing more;
    # ivcuda runs go to servers on their transport-only backend.
    CUDA_TRACE_REAL=${TRACE_REAL_GIVEN:-$SHIM_DIR/test/fake/libcuda.so.1}
    SERVER_EXTRA_ARGS="${SERVER_EXTRA_ARGS:-} --set backend=host-memory"
    if [ -z "${CORPUS_DRIVER_LIB:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so '; then
        CORPUS_DRIVER_LIB=$SHIM_DIR/libcuda.so # only for linking: the shim exports every name
        cmake_common_args
    fi
else
    run_identity
    # A GPU in an exclusive compute mode takes one process at a time.
    mode_line=$(awk '$1 == "device" && $2 == 0 && $3 == "compute_mode" { print $4 }' "$WORK/logs/identity.native.out" 2>/dev/null)
    if [ -n "$mode_line" ] && [ "$mode_line" != 0 ] && [ "$GPU_SLOTS" != 1 ]; then
        log "compute mode $mode_line (not shared): one program at a time on the GPU"
        GPU_SLOTS=1
    fi
fi
write_facts

for s in "${SAMPLES[@]}"; do
    [ "$DRY_RUN" = 1 ] && echo "plan: ${SAMPLE_DIR[$s]:-missing} -> $CORPUS_BUILD_DIR/{${VARIANTS}}/$s; run: (cd build dir && ./$s ${SAMPLE_ARGS[$s]:-}) in modes $MODES${SAMPLE_MASK[$s]:+; mask ${SAMPLE_MASK[$s]} (${SAMPLE_NOTE[$s]})}"
done
for s in "${SCRIPTS[@]}"; do
    [ "$DRY_RUN" = 1 ] && echo "plan: $PYTHON gpu/pytorch/$s.py in modes $MODES"
done

CORPUS_LANE=
TORCH_LANE=
if [ "${#SAMPLES[@]}" -gt 0 ]; then
    corpus_lane &
    CORPUS_LANE=$!
fi
if [ "${#SCRIPTS[@]}" -gt 0 ]; then
    torch_lane &
    TORCH_LANE=$!
fi
# Wait for both lanes; a report every two minutes, so a run stopped from outside still leaves
# one; past the budget (every step is bounded by it, so only as a safety net) stop them.
last_report=$(date +%s)
while { [ -n "$CORPUS_LANE" ] && kill -0 "$CORPUS_LANE" 2>/dev/null; } ||
    { [ -n "$TORCH_LANE" ] && kill -0 "$TORCH_LANE" 2>/dev/null; }; do
    sleep 2
    now=$(date +%s)
    if [ $((now - last_report)) -ge 120 ]; then
        write_report
        last_report=$now
    fi
    if [ "$now" -gt $((DEADLINE_S + 45)) ]; then
        problem "lanes still running 45 s past the budget: stopped"
        for pid in $CORPUS_LANE $TORCH_LANE; do kill -TERM -- "-$pid" 2>/dev/null; done
        sleep 3
        for pid in $CORPUS_LANE $TORCH_LANE; do kill -KILL -- "-$pid" 2>/dev/null; done
        break
    fi
done
wait 2>/dev/null

log "runs done after $(($(date +%s) - START_S)) s; writing the report"
write_report
cp "$STEPS_LOG" "$RESULT_DIR/steps.log"
summarize_traces
cp "$STEPS_LOG" "$RESULT_DIR/steps.log"
pack_results
[ "$DRY_RUN" = 0 ] && [ "${REPORT##*/}" = compatibility.md ] && cp "$REPORT" "$REPO/docs/compatibility.md" 2>/dev/null
log "done after $(($(date +%s) - START_S)) s: $RESULT_DIR ($(find "$RESULT_DIR" -maxdepth 1 -type f -printf '%f ' | sort))"
cp "$STEPS_LOG" "$RESULT_DIR/steps.log"
cat "$REPORT" >&2
exit 0
