#!/usr/bin/env bash
# Issue 13, finding 1c on a GPU: SIGTERM to the cuda-server while a worker is inside a driver call
# (cuCtxSynchronize on a kernel that spins for seconds). Before the fix the server unmapped the
# region after its 10 s stop wait with the worker still in it, and the JVM crashed (3 of 3 on the
# host-memory backend; cuda-server HostileGuestTest.aStopWithABusyWorkerLeavesTheRegionMapped is
# that test). Two stops, then a fresh server:
#   within  a 4 s kernel, SIGTERM 1 s after its launch: the worker returns inside the 10 s stop
#           wait, so the server stops the ordinary way (header STOPPED, "stopped" in its log)
#   beyond  a 14 s kernel, SIGTERM 1 s after its launch: the stop wait runs out with the worker
#           still in the driver, so the server must leave the region mapped, say so, and exit
#           without a crash (header STOPPING: nothing after the wait may touch the region)
#   after   a fresh server runs gpu/programs/vector_add: the GPU is usable
# PASS per stop: the program ends within its bound and prints the synchronisation's CUresult; the
# server (the java process, signalled directly) ends within its bound, with status 0, no
# hs_err_pid*.log, no "A fatal error has been detected"/SIGSEGV in its log. Expected result of the
# guest's cuCtxSynchronize: CUDA_ERROR_DEVICE_UNAVAILABLE at once — the guest library stops waiting
# when the header leaves READY (guest/src/wait.c), it does not wait for the worker's answer;
# CUDA_SUCCESS (the worker's answer came first) is accepted too. Writes $OUT/busy-shutdown.md;
# exit 0 only if every line passed. The whole run is bounded by TOTAL_BUDGET_S [90].
#
#   gpu/busy-shutdown.sh            on the GPU machine
#   gpu/busy-shutdown.sh --dry-run  no GPU: builds, runs the program against the CPU mock of
#                                   libcuda and checks its output lines (no server, no SIGTERM)
set -uo pipefail

# shellcheck source=gpu/dry-run-script.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/dry-run-script.sh"

START_S=$(date +%s)
DEADLINE_S=$((START_S + ${TOTAL_BUDGET_S:-90}))
REPORT=$OUT/busy-shutdown.md
KERNELS=$BUILD_DIR/kernels
BIN=$BUILD_DIR/programs
PROBLEMS=()
LINES=()
JAVA_PID=

# Polls (every 0.1 s) until "$@" succeeds or $1 seconds passed; status 0 if it did.
wait_until() {
    local bound=$1 end
    shift
    end=$(awk -v t="$(now_s)" -v b="$bound" 'BEGIN { printf "%.1f", t + b }')
    while ! "$@"; do
        awk -v t="$(now_s)" -v e="$end" 'BEGIN { exit !(t >= e) }' && return 1
        sleep 0.1
    done
}
gone() { ! kill -0 "$1" 2>/dev/null; }
has_launched() { grep -q '^launched' "$1" 2>/dev/null || gone "$2"; }

cleanup() {
    [ -n "$JAVA_PID" ] && kill -KILL "$JAVA_PID" 2>/dev/null
    stop_server
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# The region header's server_state (docs/protocol.md: u32 at 0x018; 0 INIT 1 READY 2 STOPPING 3 STOPPED).
header_state() {
    local v
    v=$(od -An -t u4 -j 24 -N 4 "$REGION_PATH" 2>/dev/null | tr -d ' ')
    case $v in 0) echo "0 INIT" ;; 1) echo "1 READY" ;; 2) echo "2 STOPPING" ;; 3) echo "3 STOPPED" ;; *) echo "unreadable (${v:-no file})" ;; esac
}

# One stop: stop_case <name> <kernel seconds> <expected header state>
stop_case() {
    local name=$1 spin=$2 want_state=$3 prefix=$OUT/logs/busy_shutdown.$1 prog_pid t_term status sync state wrapper
    if [ "$(time_left)" -lt $((spin + 25)) ]; then
        fail "$name: not run, $(time_left) s left of TOTAL_BUDGET_S"
        return
    fi
    : >"$OUT/logs/server.log"
    if ! start_server $((spin + 40)); then
        fail "$name: the server did not start (logs/server.$name.log)"
        mv "$OUT/logs/server.log" "$OUT/logs/server.$name.log"
        return
    fi
    wrapper=$SERVER_PID
    # start_server's pid is GNU timeout's; a TERM sent to timeout is passed on but also arms its
    # -k 10 KILL, which would end the java process at the very moment its own 10 s stop wait runs out
    JAVA_PID=$(pgrep -P "$wrapper" | head -1)
    if [ -z "$JAVA_PID" ]; then
        fail "$name: no child process of the server's timeout $wrapper"
        stop_server
        return
    fi
    IVCUDA_REGION=$REGION_PATH LD_LIBRARY_PATH=$GUEST_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        timeout -k 2 $((spin + 20)) "$BIN/busy_shutdown" "$KERNELS" "$spin" >"$prefix.out" 2>"$prefix.err" &
    prog_pid=$!
    if ! wait_until 20 has_launched "$prefix.out" "$prog_pid" || ! grep -q '^launched' "$prefix.out"; then
        fail "$name: the program did not print launched within 20 s ($(grep -m1 -E 'FAIL|^ivcuda:' "$prefix.out" "$prefix.err" | head -1))"
        kill -KILL "$prog_pid" 2>/dev/null; wait "$prog_pid" 2>/dev/null
        stop_server; JAVA_PID=
        mv "$OUT/logs/server.log" "$OUT/logs/server.$name.log"
        return
    fi
    sleep 1
    t_term=$(now_s)
    kill -TERM "$JAVA_PID"
    log "$name: SIGTERM to the java process $JAVA_PID, 1 s after the ${spin} s kernel's launch"
    # the program: its synchronisation must be answered, by the worker or by the guest seeing STOPPING
    if wait_until $((spin + 5)) gone "$prog_pid"; then
        wait "$prog_pid"; status=$?
        pass "$name: the program ended $(elapsed_s "$t_term" "$(now_s)") s after the SIGTERM (bound $((spin + 5)) s), status $status"
    else
        fail "$name: the program still ran $((spin + 5)) s after the SIGTERM (a hang)"
        kill -KILL "$prog_pid" 2>/dev/null; wait "$prog_pid" 2>/dev/null
    fi
    sync=$(sed -n 's/^synchronize: //p' "$prefix.out")
    case $sync in
        CUDA_ERROR_DEVICE_UNAVAILABLE | CUDA_SUCCESS) pass "$name: cuCtxSynchronize was answered: $sync (expected CUDA_ERROR_DEVICE_UNAVAILABLE; $(sed -n 's/^info: //p' "$prefix.out" | head -1)); the next call: $(sed -n 's/^after: //p' "$prefix.out")" ;;
        *) fail "$name: cuCtxSynchronize answered '${sync:-nothing}' (expected CUDA_ERROR_DEVICE_UNAVAILABLE or CUDA_SUCCESS)" ;;
    esac
    # the server: the kernel ends spin-1 s after the TERM; within runs its ordinary stop after it,
    # beyond leaves once its 10 s wait ran out (the process's exit ends the kernel)
    local bound=$((spin - 1 + 8))
    if wait_until "$bound" gone "$JAVA_PID"; then
        wait "$wrapper"; status=$?
        SERVER_PID=
        check "$([ "$status" = 0 ] && echo 0 || echo 1)" "$name: the server ended $(elapsed_s "$t_term" "$(now_s)") s after the SIGTERM (bound $bound s: the kernel's end + 8 s) with status $status (0 expected; 134/139 = the JVM crashed)"
    else
        fail "$name: the server still ran $bound s after the SIGTERM"
        stop_server
    fi
    mv "$OUT/logs/server.log" "$OUT/logs/server.$name.log"
    local hs='' f
    # the JVM writes it into its working directory (this one), else /tmp
    for f in "$PWD/hs_err_pid$JAVA_PID.log" "$REPO_ROOT/hs_err_pid$JAVA_PID.log" "/tmp/hs_err_pid$JAVA_PID.log"; do
        [ -f "$f" ] && { hs=$f; break; }
    done
    if [ -n "$hs" ]; then
        cp "$hs" "$OUT/logs/" 2>/dev/null
        fail "$name: the JVM crashed: $hs (copied to logs/)"
    elif grep -q -E 'A fatal error has been detected|SIGSEGV|SIGBUS' "$OUT/logs/server.$name.log"; then
        fail "$name: the server's log reports a fatal error (logs/server.$name.log)"
    else
        pass "$name: no JVM crash (no hs_err_pid$JAVA_PID.log, no fatal error in logs/server.$name.log)"
    fi
    JAVA_PID=
    local waited=1
    grep -q 'worker still running' "$OUT/logs/server.$name.log" || waited=0
    if [ "$want_state" = STOPPING ]; then
        check "$([ "$waited" = 1 ] && echo 0 || echo 1)" "$name: the stop wait ran out with the worker in the driver (\"worker still running\" in its log): the path of finding 1c was taken"
    else
        check "$([ "$waited" = 0 ] && grep -q -w 'stopped' "$OUT/logs/server.$name.log" && echo 0 || echo 1)" "$name: the worker returned inside the stop wait and the server stopped the ordinary way (\"stopped\" in its log)"
    fi
    state=$(header_state)
    check "$([ "${state#* }" = "$want_state" ] && echo 0 || echo 1)" "$name: the region's server_state afterwards: $state ($want_state expected)"
    rm -f "$REGION_PATH"
}

log "ivcuda busy shutdown (issue 13, 1c), OUT=$OUT, BUILD_DIR=$BUILD_DIR, dry run=$DRY_RUN"
if [ "$IVCUDA_VIA" != host ] || [ "$IVCUDA_MODE" != plain ]; then
    echo "$0: needs IVCUDA_VIA=host and IVCUDA_MODE=plain (it signals the server itself)" >&2
    exit 2
fi
build_kernels "$KERNELS" "$REPO_ROOT/gpu/kernels/streams.cu" "$REPO_ROOT/gpu/kernels/vector_add.cu" || fail "building the kernels"
choose_libcuda_link
build_programs "$REPO_ROOT/gpu/programs" "$BIN" "$REPO_ROOT/gpu/programs/busy_shutdown.c" \
    "$REPO_ROOT/gpu/programs/vector_add.c" || fail "building the programs"

if [ "$DRY_RUN" = 1 ]; then
    # the program's own lines against the CPU mock (its "kernel" runs at the launch): what the
    # script parses must be there
    if build_mock_libcuda; then
        LD_LIBRARY_PATH=$MOCK_DIR PROGRAM_TIMEOUT_S=30 run_program native "$BIN/busy_shutdown" "$OUT/logs/busy_shutdown.mock" "$KERNELS" 1
        p=$OUT/logs/busy_shutdown.mock.out
        check "$([ "$RUN_RC" = 0 ] && grep -q '^launched' "$p" && grep -qx 'synchronize: CUDA_SUCCESS' "$p" &&
            grep -qx 'after: cuMemcpyDtoH CUDA_SUCCESS' "$p" && grep -q 'out\[0\] = 7 ' "$p" && echo 0 || echo 1)" \
            "dry run: busy_shutdown against the CPU mock: rc=$RUN_RC, $(tr '\n' ';' <"$p")"
    else
        fail "building gpu/tools/mock_libcuda.c"
    fi
    state=$(REGION_PATH=/nonexistent header_state)
    check "$([ "$state" = "unreadable (no file)" ] && echo 0 || echo 1)" "dry run: header_state of a missing region: $state"
else
    setup_java || fail "no java"
    build_guest || fail "the guest library"
    if [ "${#PROBLEMS[@]}" = 0 ]; then
        stop_case within 4 STOPPED
        stop_case beyond 14 STOPPING
        if [ "$(time_left)" -lt 20 ]; then
            fail "after: not run, $(time_left) s left of TOTAL_BUDGET_S"
        else
            : >"$OUT/logs/server.log"
            if start_server 40; then
                PROGRAM_TIMEOUT_S=$(bounded_timeout 30) run_program ivcuda "$BIN/vector_add" "$OUT/logs/vector_add.after" "$KERNELS"
                check "$([ "$RUN_RC" = 0 ] && echo 0 || echo 1)" "after: a fresh server runs vector_add: $(verdict "$RUN_RC" "$OUT/logs/vector_add.after")"
                stop_server
            else
                fail "after: a fresh server did not start (logs/server.after.log)"
            fi
            mv "$OUT/logs/server.log" "$OUT/logs/server.after.log"
        fi
    fi
fi

{
    report_head "ivcuda busy shutdown (issue 13, finding 1c)"
    echo "| mode | $([ "$DRY_RUN" = 1 ] && echo "dry run: no GPU, no server; the program against the CPU mock of libcuda" || echo "SIGTERM to a cuda-server on this host with a worker in cuCtxSynchronize") |"
    echo "| took | $(($(date +%s) - START_S)) s (budget ${TOTAL_BUDGET_S:-90} s) |"
    echo
    for l in "${LINES[@]}"; do echo "- $l"; done
    echo
    result_lines
    echo
    echo "Logs: \`logs/busy_shutdown.<stop>.{out,err}\`, \`logs/server.<stop>.log\`, \`steps.log\`."
} >"$REPORT"
log "report: $REPORT"
cat "$REPORT" >&2
[ "${#PROBLEMS[@]}" = 0 ]
