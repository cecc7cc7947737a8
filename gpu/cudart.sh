#!/usr/bin/env bash
# Runtime-API programs (tests/cudart/*.cu, nvcc's default static cudart, no kernels) on the GPU
# machine: each natively, then through ivcuda (guest libcuda.so.1 + cuda-server on the real
# driver, host loopback), outputs compared without `time:`/`info:` lines. This is where cudart's
# integrity check is answered for real (export table d4082055, through the server), which the
# CI's host-memory backend cannot do (tests/cudart/run.sh).
#
# The ivcuda runs carry IVCUDA_DEBUG=1: logs/cudart-<program>.ivcuda.err then records every
# export-table slot cudart called, with its arguments where the slot is not emulated
# (docs/export-tables.md).
#
#   gpu/cudart.sh      on the GPU machine; writes $OUT/cudart.md; exit 0 = all passed, equal
#
# Needs CUDA 13's nvcc, gcc, java (or .jre/jre.tgz), cuda-server/target/cuda-server.jar and
# api/target/classes. Settings: gpu/lib.sh; TOTAL_BUDGET_S (default 300).
set -uo pipefail

# shellcheck source=gpu/lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

START_S=$(date +%s)
DEADLINE_S=$((START_S + ${TOTAL_BUDGET_S:-300}))
PROGRAMS=(device_query memory streams_events pinned)
REPORT=$OUT/cudart.md
BIN=$BUILD_DIR/cudart
PROBLEMS=()

trap 'stop_server' EXIT
trap 'log "interrupted"; exit 130' INT TERM

log "runtime-API programs, OUT=$OUT, BUILD_DIR=$BUILD_DIR"
: >"$OUT/logs/ldd-ivcuda.log"
: >"$OUT/logs/ldd-native.log"
timeout 300 "$REPO_ROOT/tests/cudart/build.sh" "$CUDA_HOME/bin/nvcc" "$BIN" >"$OUT/logs/cudart-build.log" 2>&1 ||
    problem "building tests/cudart failed (logs/cudart-build.log)"
setup_java_and_guest || problem "guest library not available"

declare -A NATIVE_RC NATIVE_WALL IVCUDA_RC IVCUDA_WALL EQUAL
for p in "${PROGRAMS[@]}"; do
    NATIVE_RC[$p]="skipped"; NATIVE_WALL[$p]="-"; IVCUDA_RC[$p]="skipped"; IVCUDA_WALL[$p]="-"; EQUAL[$p]="-"
done

for p in "${PROGRAMS[@]}"; do
    [ -x "$BIN/$p" ] || { NATIVE_RC[$p]="skipped (not built)"; continue; }
    check_native_driver "$BIN/$p" || { NATIVE_RC[$p]="skipped (would load the guest library)"; continue; }
    PROGRAM_TIMEOUT_S=$(bounded_timeout 60) run_program native "$BIN/$p" "$OUT/logs/cudart-$p.native"
    NATIVE_RC[$p]=$RUN_RC; NATIVE_WALL[$p]=$RUN_WALL
    log "native $p: rc=$RUN_RC wall=${RUN_WALL}s"
done
if [ "$GUEST_OK" = 1 ] && [ "$JAVA_OK" = 1 ] && start_server $(($(time_left) + 30)); then
    for p in "${PROGRAMS[@]}"; do
        [ -x "$BIN/$p" ] || { IVCUDA_RC[$p]="skipped (not built)"; continue; }
        kill -0 "$SERVER_PID" 2>/dev/null || { IVCUDA_RC[$p]="skipped (server died)"; problem "server died before $p"; continue; }
        IVCUDA_DEBUG=1 PROGRAM_TIMEOUT_S=$(bounded_timeout 90) run_program ivcuda "$BIN/$p" "$OUT/logs/cudart-$p.ivcuda"
        IVCUDA_RC[$p]=$RUN_RC; IVCUDA_WALL[$p]=$RUN_WALL
        # static cudart dlopens libcuda.so.1 (ldd cannot tell): the guest library's trace proves which one
        grep -q '^ivcuda\[' "$OUT/logs/cudart-$p.ivcuda.err" || IVCUDA_RC[$p]="not through ivcuda (no guest library trace)"
        log "ivcuda $p: rc=$RUN_RC wall=${RUN_WALL}s"
    done
    stop_server
else
    problem "no ivcuda runs (guest library, java or the server missing: logs/server.log)"
fi

for p in "${PROGRAMS[@]}"; do
    [ "${NATIVE_RC[$p]}" = 0 ] || problem "$p natively: $(verdict "${NATIVE_RC[$p]}" "$OUT/logs/cudart-$p.native")"
    [ "${IVCUDA_RC[$p]}" = 0 ] || problem "$p through ivcuda: $(verdict "${IVCUDA_RC[$p]}" "$OUT/logs/cudart-$p.ivcuda")"
    if [ -f "$OUT/logs/cudart-$p.native.out" ] && [ -f "$OUT/logs/cudart-$p.ivcuda.out" ]; then
        if diff <(comparable_output "$OUT/logs/cudart-$p.native.out") <(comparable_output "$OUT/logs/cudart-$p.ivcuda.out") \
            >"$OUT/logs/cudart-$p.diff"; then
            EQUAL[$p]=yes
            rm -f "$OUT/logs/cudart-$p.diff"
        else
            EQUAL[$p]=no
            problem "$p: outputs differ (logs/cudart-$p.diff)"
        fi
    fi
done

{
    report_head "Runtime-API programs through ivcuda"
    echo "| toolkit | $("$CUDA_HOME/bin/nvcc" --version 2>/dev/null | tail -1) (static cudart) |"
    echo
    echo "| program | native | ivcuda | equal? | native wall s | ivcuda wall s |"
    echo "|---|---|---|---|---|---|"
    for p in "${PROGRAMS[@]}"; do
        echo "| $p | $(verdict "${NATIVE_RC[$p]}" "$OUT/logs/cudart-$p.native") | $(verdict "${IVCUDA_RC[$p]}" "$OUT/logs/cudart-$p.ivcuda") | ${EQUAL[$p]} | ${NATIVE_WALL[$p]} | ${IVCUDA_WALL[$p]} |"
    done
    echo
    if [ "${#PROBLEMS[@]}" = 0 ]; then echo "All passed, outputs equal."; else printf -- '- %s\n' "${PROBLEMS[@]}"; fi
    echo
    echo "Export-table slots cudart called through ivcuda (from the IVCUDA_DEBUG traces):"
    echo
    echo '```'
    cat "$OUT"/logs/cudart-*.ivcuda.err 2>/dev/null | sed -n 's/^ivcuda\[[0-9:]*\] //p' |
        grep -E 'export table|cuGetExportTable|CUDART interface|runtime callback|context-local|context checks|integrity' |
        sed -E 's/0x[0-9a-f]{6,}/0x…/g; s/\(1[0-9]{9}\)/(<time>)/g' | sort | uniq -c | sort -rn | head -60
    grep -h '^ivcuda: export table' "$OUT"/logs/cudart-*.ivcuda.err 2>/dev/null | sort -u
    echo '```'
} >"$REPORT"
log "report: $REPORT"
cat "$REPORT" >&2
[ "${#PROBLEMS[@]}" = 0 ]
