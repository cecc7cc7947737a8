#!/usr/bin/env bash
# The GPU validation of ivcuda in one command: builds the kernels, the driver-API
# programs and the guest library, runs every program natively and then through
# ivcuda (cuda-server + our libcuda.so.1 over a /dev/shm region), compares their
# stdout without the `time:`/`info:` lines, and writes $OUT/gpu-validation.md plus
# raw logs under $OUT/logs. Exit 0 only if every program passed both ways with
# equal output.
#
#   gpu/validate.sh            on the GPU machine (see gpu/README.md)
#   gpu/validate.sh --dry-run  everything that needs no GPU: builds (against a stub
#                              libcuda if there is no driver), the guest library, and
#                              the server's start/READY/stop on its host-memory backend
#
# Settings: see gpu/lib.sh; also TOTAL_BUDGET_S (default 540): no step starts after
# it, so the command stays inside the device's 10-minute limit; ONLY (an extended
# regular expression): only the programs whose name matches, for a short check.
set -uo pipefail

# shellcheck source=gpu/dry-run-script.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/dry-run-script.sh"

START_S=$(date +%s)
DEADLINE_S=$((START_S + ${TOTAL_BUDGET_S:-540}))
NATIVE_TIMEOUT_S=${NATIVE_TIMEOUT_S:-60}
IVCUDA_TIMEOUT_S=${IVCUDA_TIMEOUT_S:-90}
PROGRAMS=()
for p in "${GPU_PROGRAMS[@]}"; do
    [ -n "${ONLY:-}" ] && ! [[ "$p" =~ $ONLY ]] && continue
    PROGRAMS+=("$p")
done
if [ ${#PROGRAMS[@]} -eq 0 ]; then
    echo "$0: ONLY='${ONLY:-}' matches no program of: ${GPU_PROGRAMS[*]}" >&2
    exit 2
fi
REPORT=$OUT/gpu-validation.md
KERNELS=$BUILD_DIR/kernels
BIN=$BUILD_DIR/programs
PROBLEMS=()

trap 'stop_server' EXIT
trap 'log "interrupted"; exit 130' INT TERM

log "ivcuda GPU validation, OUT=$OUT, BUILD_DIR=$BUILD_DIR, dry run=$DRY_RUN"
: >"$OUT/logs/ldd-ivcuda.log"
: >"$OUT/logs/ldd-native.log"

build_kernels_and_programs
setup_java_and_guest || problem "guest library not available"

declare -A NATIVE_RC NATIVE_WALL IVCUDA_RC IVCUDA_WALL EQUAL
for p in "${PROGRAMS[@]}"; do
    NATIVE_RC[$p]="skipped"; NATIVE_WALL[$p]="-"
    IVCUDA_RC[$p]="skipped"; IVCUDA_WALL[$p]="-"
    EQUAL[$p]="-"
done

if [ "$DRY_RUN" = 1 ]; then
    # Without a GPU: the failure path of a program (the stub fails every call), and the
    # server's lifecycle on its transport-only backend.
    if [ -f "$BIN/stub/libcuda.so.1" ] && [ -x "$BIN/queries" ]; then
        LD_LIBRARY_PATH=$BIN/stub run_program native "$BIN/queries" "$OUT/logs/queries.stub" "$KERNELS"
        if [ "$RUN_RC" = 1 ] && grep -q '^FAIL cuInit' "$OUT/logs/queries.stub.out"; then
            log "dry run: queries against the stub fails cleanly: $(grep -m1 '^FAIL' "$OUT/logs/queries.stub.out")"
        else
            problem "dry run: queries against the stub: rc=$RUN_RC, expected 1 with a FAIL line"
        fi
    fi
    # Each program against the CPU mock of the driver: the programs' own logic
    # (verification, checksums, expected errors) must pass before device time is spent.
    # Not those the mock cannot stand in for: what they need is below, or functions it does not
    # define (mock_lacks); the dry run names them and why.
    declare -A MOCK_CANNOT=(
        [fault_recovery]="needs a GPU fault (a kernel's store to memory it does not own), which a CPU mock cannot raise"
        [process_isolation]="needs a GPU fault (a kernel's store to memory it does not own), which a CPU mock cannot raise"
        [nvml_view]="needs NVML (libnvidia-ml.so.1); the mock stands in for libcuda.so.1 only"
    )
    if build_mock_libcuda; then
        for p in "${PROGRAMS[@]}"; do
            [ -x "$BIN/$p" ] || continue
            if [ -n "${MOCK_CANNOT[$p]:-}" ]; then
                NATIVE_RC[$p]="not run: ${MOCK_CANNOT[$p]}"
                log "dry run: $p not run against the CPU mock: it ${MOCK_CANNOT[$p]}"
                continue
            fi
            lacks=$(mock_lacks "$BIN/$p")
            if [ -n "$lacks" ]; then
                NATIVE_RC[$p]="not run: the mock lacks $(echo "$lacks" | wc -w) of its functions"
                log "dry run: $p not run against the CPU mock, which does not define: $lacks"
                continue
            fi
            LD_LIBRARY_PATH=$MOCK_DIR PROGRAM_TIMEOUT_S=60 run_program native "$BIN/$p" "$OUT/logs/$p.mock" "$KERNELS"
            NATIVE_RC[$p]=$RUN_RC; NATIVE_WALL[$p]=$RUN_WALL
            [ "$RUN_RC" = 0 ] || problem "$p against the CPU mock: $(verdict "$RUN_RC" "$OUT/logs/$p.mock")"
        done
    else
        problem "building gpu/tools/mock_libcuda.c failed"
    fi
    if [ "$GUEST_OK" = 1 ]; then
        for p in "${PROGRAMS[@]}"; do
            [ -x "$BIN/$p" ] && { check_guest_is_loaded "$BIN/$p" || problem "$p does not load the guest library"; }
        done
    fi
    if [ "$JAVA_OK" = 1 ] && [ -f "$SERVER_JAR" ]; then
        if start_server 60 --set backend=host-memory; then
            # Transport smoke, for information only: the handshake and the first calls
            # through the region (the test backend has no GPU, so kernels cannot run).
            if [ "$GUEST_OK" = 1 ] && [ -x "$BIN/queries" ]; then
                PROGRAM_TIMEOUT_S=30 run_program ivcuda "$BIN/queries" "$OUT/logs/queries.host-memory" "$KERNELS"
                log "dry run: queries through ivcuda on the host-memory backend: rc=$RUN_RC," \
                    "$(grep -c . "$OUT/logs/queries.host-memory.out") lines;" \
                    "$(grep -m1 -E '^FAIL' "$OUT/logs/queries.host-memory.out")" \
                    "$(without_exit_stats "$OUT/logs/queries.host-memory.err" | grep -m1 '^ivcuda:')"
            fi
            stop_server
        else
            problem "dry run: the server did not become READY on the host-memory backend"
        fi
    else
        log "dry run: no java or no $SERVER_JAR: server start not tried"
    fi
else
    run_programs_natively
    if [ "$GUEST_OK" = 1 ] && [ "$JAVA_OK" = 1 ]; then
        if start_server $(($(time_left) + 30)); then
            for p in "${PROGRAMS[@]}"; do
                server_for_run $(($(time_left) + 30)) || { IVCUDA_RC[$p]="skipped (server did not start)"; continue; }
                [ -x "$BIN/$p" ] || { IVCUDA_RC[$p]="skipped (not built)"; continue; }
                check_guest_is_loaded "$BIN/$p" || { IVCUDA_RC[$p]="skipped (guest library not loaded)"; continue; }
                t=$(bounded_timeout "$IVCUDA_TIMEOUT_S")
                if [ "$t" -lt 5 ]; then IVCUDA_RC[$p]="skipped (time budget)"; continue; fi
                if ! kill -0 "$SERVER_PID" 2>/dev/null; then
                    IVCUDA_RC[$p]="skipped (server died)"; problem "server died before $p"; continue
                fi
                PROGRAM_TIMEOUT_S=$t run_program ivcuda "$BIN/$p" "$OUT/logs/$p.ivcuda" "$KERNELS"
                IVCUDA_RC[$p]=$RUN_RC; IVCUDA_WALL[$p]=$RUN_WALL
                log "ivcuda $p: rc=$RUN_RC wall=${RUN_WALL}s $(grep -m1 'interrupt waits' "$OUT/logs/$p.ivcuda.err")"
                end_of_run
            done
            stop_server
        else
            problem "server did not start (logs/server.log)"
        fi
    fi
    compare_with_native ivcuda IVCUDA_RC ivcuda
fi

{
    report_head "ivcuda GPU validation"
    echo "| mode | $([ "$DRY_RUN" = 1 ] && echo "dry run: no GPU; the native column is the CPU mock of libcuda (gpu/tools/mock_libcuda.c), which checks only the programs' own logic" || echo "native vs ivcuda") |"
    echo "| guest library | ${GUEST_LIB_DIR:-not built}/libcuda.so.1 |"
    echo "| region | $REGION_PATH, $REGION_SIZE bytes |"
    echo "| served by | $([ "$IVCUDA_VIA" = backend ] && echo "a back-end domain stood in on this host (gpu/backend_standin.sh: the hook, ivcuda-backend-agent and its slot server)" || echo "a cuda-server on this host") |"
    echo "| server mode | $IVCUDA_MODE$([ "$IVCUDA_MODE" = doorbell ] && echo ": each ivcuda run under bench/idle/qemu_peer.py (doorbell rings and interrupt eventfds), a server per run") |"
    echo
    echo "Outputs are compared without their \`time:\` and \`info:\` lines."
    echo
    echo "| program | native | ivcuda | equal? | native wall s | ivcuda wall s |"
    echo "|---|---|---|---|---|---|"
    for p in "${PROGRAMS[@]}"; do
        echo "| $p | $(verdict "${NATIVE_RC[$p]}" "$OUT/logs/$p.native") | $(verdict "${IVCUDA_RC[$p]}" "$OUT/logs/$p.ivcuda") | ${EQUAL[$p]} | ${NATIVE_WALL[$p]} | ${IVCUDA_WALL[$p]} |"
    done
    echo
    result_lines
    echo
    echo "Logs: \`logs/<program>.{native,ivcuda}.{out,err}\`, \`logs/server.log\`, \`steps.log\`."
} >"$REPORT"
log "report: $REPORT"
cat "$REPORT" >&2
[ "${#PROBLEMS[@]}" = 0 ]
