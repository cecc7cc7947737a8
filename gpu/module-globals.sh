#!/usr/bin/env bash
# Issue 15 on a GPU: a module's module-scope variables count against the VM's memory quota. Runs
# gpu/programs/module_globals.c (a module with a 256 MiB __device__ array, gpu/kernels/module_globals.cu,
# as cubin, fat binary and PTX) natively, for reference (what the driver itself shows in cuMemGetInfo),
# then through a cuda-server on this host with memory.quota = QUOTA_MIB [1024] MiB, where every load
# must lower cuMemGetInfo's free by at least 256 MiB, every unload give it back, and a load beyond what
# is left be refused with CUDA_ERROR_OUT_OF_MEMORY (the program prints "module_globals: PASS" or why not).
# Writes $OUT/module-globals.md; exit 0 only if the run through ivcuda passed. Bounded by
# TOTAL_BUDGET_S [120].
#
#   gpu/module-globals.sh            on the GPU machine
#   gpu/module-globals.sh --dry-run  no GPU: builds the kernel and the program and runs it against the
#                                    CPU mock of libcuda (its lines, not a verdict: the mock does not
#                                    count module memory), no server
set -uo pipefail

# shellcheck source=gpu/dry-run-script.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/dry-run-script.sh"

START_S=$(date +%s)
DEADLINE_S=$((START_S + ${TOTAL_BUDGET_S:-120}))
QUOTA_MIB=${QUOTA_MIB:-1024}
REPORT=$OUT/module-globals.md
KERNELS=$BUILD_DIR/kernels
BIN=$BUILD_DIR/programs
PROBLEMS=()
LINES=()

lines_of() { grep -v '^ *$' "$1" 2>/dev/null | tr '\n' ';'; }

trap stop_server EXIT
trap 'log "interrupted"; exit 130' INT TERM

log "ivcuda module globals against the quota (issue 15), OUT=$OUT, BUILD_DIR=$BUILD_DIR, QUOTA_MIB=$QUOTA_MIB, dry run=$DRY_RUN"
build_kernels "$KERNELS" "$REPO_ROOT/gpu/kernels/module_globals.cu" || fail "building the kernel"
choose_libcuda_link
build_programs "$REPO_ROOT/gpu/programs" "$BIN" "$REPO_ROOT/gpu/programs/module_globals.c" || fail "building the program"

if [ "${#PROBLEMS[@]}" = 0 ] && [ "$DRY_RUN" = 1 ]; then
    if build_mock_libcuda; then
        LD_LIBRARY_PATH=$MOCK_DIR PROGRAM_TIMEOUT_S=30 run_program native "$BIN/module_globals" \
            "$OUT/logs/module_globals.mock" "$KERNELS" 0
        p=$OUT/logs/module_globals.mock.out
        check "$([ "$RUN_RC" = 0 ] && grep -q '^cubin: ' "$p" && grep -q '^fatbin: ' "$p" && grep -q '^ptx: ' "$p" &&
            grep -qx 'module_globals: native (no verdict)' "$p" && echo 0 || echo 1)" \
            "dry run: module_globals against the CPU mock: rc=$RUN_RC, $(lines_of "$p")"
    else
        fail "building gpu/tools/mock_libcuda.c"
    fi
elif [ "${#PROBLEMS[@]}" = 0 ]; then
    setup_java || fail "no java"
    build_guest || fail "the guest library"
    PROGRAM_TIMEOUT_S=$(bounded_timeout 60) run_program native "$BIN/module_globals" "$OUT/logs/module_globals.native" \
        "$KERNELS" 0
    LINES+=("native (reference, no quota): rc=$RUN_RC, $(lines_of "$OUT/logs/module_globals.native.out")")
    if [ "${#PROBLEMS[@]}" = 0 ]; then
        : >"$OUT/logs/server.log"
        if start_server "$(bounded_timeout 90)" --set "memory.quota=${QUOTA_MIB}M"; then
            PROGRAM_TIMEOUT_S=$(bounded_timeout 60) run_program ivcuda "$BIN/module_globals" \
                "$OUT/logs/module_globals.ivcuda" "$KERNELS" "$QUOTA_MIB"
            p=$OUT/logs/module_globals.ivcuda.out
            check "$([ "$RUN_RC" = 0 ] && grep -qx 'module_globals: PASS' "$p" && echo 0 || echo 1)" \
                "through ivcuda, memory.quota=${QUOTA_MIB}M: $(verdict "$RUN_RC" "$OUT/logs/module_globals.ivcuda"); $(lines_of "$p")"
            stop_server
            grep -E 'module-scope variables' "$OUT/logs/server.log" | head -3 | while read -r l; do log "server: $l"; done
        else
            fail "the server did not start (logs/server.log)"
        fi
    fi
fi

{
    report_head "ivcuda module globals against the memory quota (issue 15)"
    echo "| mode | $([ "$DRY_RUN" = 1 ] && echo "dry run: no GPU, no server; the program against the CPU mock of libcuda" || echo "natively, then through a cuda-server on this host with memory.quota=${QUOTA_MIB}M") |"
    echo "| took | $(($(date +%s) - START_S)) s (budget ${TOTAL_BUDGET_S:-120} s) |"
    echo
    for l in "${LINES[@]}"; do echo "- $l"; done
    echo
    result_lines
    echo
    echo "Logs: \`logs/module_globals.{native,ivcuda,mock}.{out,err}\`, \`logs/server.log\`, \`steps.log\`."
} >"$REPORT"
log "report: $REPORT"
cat "$REPORT" >&2
[ "${#PROBLEMS[@]}" = 0 ]
