#!/usr/bin/env bash
# ivcuda benchmarks in one command: builds the benchmark programs, runs each natively
# and then through ivcuda (cuda-server + guest libcuda.so.1 over a /dev/shm region),
# and writes $OUT/bench.md, $OUT/bench.json and PNG plots (if matplotlib imports).
# Exits non-zero only when it could not run at all; missed goals are in the report.
#
#   bench/run.sh            on the GPU machine (see bench/README.md)
#   bench/run.sh --dry-run  builds everything and checks the report with no GPU
#
# Settings: see gpu/lib.sh; also TOTAL_BUDGET_S (default 330).
set -uo pipefail

# shellcheck source=gpu/dry-run-script.sh
. "$(dirname "${BASH_SOURCE[0]}")/../gpu/dry-run-script.sh"

DEADLINE_S=$(($(date +%s) + ${TOTAL_BUDGET_S:-330}))
BENCHES=(roundtrip sleep_bench launch_rate bandwidth matmul_e2e)
KERNELS=$BUILD_DIR/kernels
BIN=$BUILD_DIR/bench
STEPS_LOG=$OUT/bench-steps.log

trap 'stop_server' EXIT
trap 'log "interrupted"; exit 130' INT TERM

bounded_timeout() {
    local wanted=$1 left
    left=$((DEADLINE_S - $(date +%s) - 20))
    [ "$left" -lt "$wanted" ] && wanted=$left
    echo "$wanted"
}

# run_benches <native|ivcuda>: every program, JSON lines appended to $OUT/<mode>.jsonl.
run_benches() {
    local mode=$1 b t note
    : >"$OUT/$mode.jsonl"
    for b in "${BENCHES[@]}"; do
        [ -x "$BIN/$b" ] || { log "$mode $b: not built"; continue; }
        if [ "$mode" = native ]; then
            check_native_driver "$BIN/$b" || continue
        else
            check_guest_is_loaded "$BIN/$b" || continue
            server_for_run $((DEADLINE_S - $(date +%s) + 30)) || { log "no server for $b"; continue; }
            kill -0 "$SERVER_PID" 2>/dev/null || { log "server gone before $b"; return 1; }
        fi
        t=$(bounded_timeout 90)
        if [ "$t" -lt 5 ]; then
            log "$mode $b: skipped, time budget spent"
            continue
        fi
        PROGRAM_TIMEOUT_S=$t run_program "$mode" "$BIN/$b" "$OUT/logs/bench-$b.$mode" "$KERNELS"
        log "$mode $b: rc=$RUN_RC wall=${RUN_WALL}s"
        grep '^{' "$OUT/logs/bench-$b.$mode.out" >>"$OUT/$mode.jsonl"
        note=$( { grep -m1 '^FAIL' "$OUT/logs/bench-$b.$mode.out"; grep -m1 -E '^ivcuda:|error while loading' \
            "$OUT/logs/bench-$b.$mode.err"; } 2>/dev/null | tr '\t|\n' '  ;' | cut -c1-240)
        printf '%s\t%s\t%s\t%s\t%s\n' "$mode" "$b" "$RUN_RC" "$RUN_WALL" "$note" >>"$OUT/bench-runs.tsv"
        [ "$mode" = ivcuda ] && end_of_run
    done
}

log "ivcuda benchmarks, OUT=$OUT, BUILD_DIR=$BUILD_DIR, dry run=$DRY_RUN"
: >"$OUT/bench-runs.tsv"
: >"$OUT/logs/ldd-ivcuda.log"
: >"$OUT/logs/ldd-native.log"
build_kernels "$KERNELS" "$REPO_ROOT/bench/kernels/bench.cu" "$REPO_ROOT/gpu/kernels/matmul.cu" || exit 1
choose_libcuda_link
SOURCES=()
for b in "${BENCHES[@]}"; do SOURCES+=("$REPO_ROOT/bench/programs/$b.c"); done
build_programs "$REPO_ROOT/gpu/programs" "$BIN" "${SOURCES[@]}" || { log "building the benchmarks failed"; exit 1; }

setup_java_and_guest

if [ "$DRY_RUN" = 1 ]; then
    # No GPU: the benchmarks run against the CPU mock of libcuda (their own logic only;
    # matmul_e2e is left out, 4096^3 on one CPU core takes minutes), and the report is
    # rendered with those numbers in both columns.
    build_mock_libcuda || { log "building gpu/tools/mock_libcuda.c failed"; exit 1; }
    BENCHES=(roundtrip sleep_bench launch_rate bandwidth)
    LD_LIBRARY_PATH=$MOCK_DIR run_benches native
    cp "$OUT/native.jsonl" "$OUT/ivcuda.jsonl"
    export BENCH_NOTE="DRY RUN: both columns are the CPU mock of libcuda (gpu/tools/mock_libcuda.c); the numbers mean nothing."
    log "dry run: benchmarks ran against the CPU mock"
else
    run_benches native
    if [ "$IVCUDA_MODE" = doorbell ]; then
        export BENCH_NOTE="Server in doorbell mode: each ivcuda run under bench/idle/qemu_peer.py (doorbell rings, and the guest sleeping on its vector's eventfd after its 20 us spin), a fresh server per program."
    fi
    if [ "$GUEST_OK" = 1 ] && [ "$JAVA_OK" = 1 ]; then
        if start_server $((DEADLINE_S - $(date +%s) + 30)); then
            run_benches ivcuda
            stop_server
        else
            log "server did not start: no ivcuda results (logs/server.log)"
        fi
    else
        log "no guest library or no java: no ivcuda results"
    fi
fi

if ! timeout 60 python3 "$REPO_ROOT/bench/report.py" "$OUT" "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" \
    "$(gpu_identity)" "$(git_commit)" >"$OUT/logs/bench-report.log" 2>&1; then
    log "report.py failed (logs/bench-report.log); raw results are in native.jsonl / ivcuda.jsonl"
    exit 1
fi
log "report: $OUT/bench.md"
cat "$OUT/bench.md" >&2
if [ ! -s "$OUT/native.jsonl" ]; then
    log "no native results: the benchmarks could not run"
    exit 1
fi
exit 0
