#!/usr/bin/env bash
# Compute shares on the GPU (issue 15, docs/sharing.md): two cuda-servers started directly, as the hook
# would start them for two VMs with <ivcuda:gpu share="25"/> and share="75", each an MPS client of an MPS
# control daemon this script starts in a private pipe directory (and stops at the end); host loopback as
# gpu/validate.sh does it (the guest library over a /dev/shm region, no QEMU, no libvirt). One
# compute-bound job (gpu/programs/share_job.c) runs:
#   1. natively, alone, with the whole GPU (no MPS): the card's throughput;
#   2. through the share-25 server alone: expected about 25 % of (1);
#   3. through both servers at once, started at the same instant: expected throughputs 1:3;
#   4. the memory quota (QUOTA_MIB, 4096): gpu/programs/quota_view.c in VM a fills and holds its quota
#      while VM b fills its own — each sees the quota as CUDA's and NVML's total, gets it, and meets
#      CUDA_ERROR_OUT_OF_MEMORY at its end.
# The job's grid is fixed (8 waves of resident blocks on the whole H200), so its rate follows the
# SMs it gets. Prints a table (with the SM count each job's driver reported) and writes it to
# $OUT/sharing.md. Exit 0 when the order holds with a margin of SHARE_TOLERANCE (0.5): VM a alone
# below (1 + 0.5) x 25 % of native, i.e. clearly slower than the whole GPU, and VM b finishing at
# least (1 - 0.5) x 3 times VM a's launches when both run. The margin is wide because what is
# asserted is that MPS enforces a share at all (the first H200 run: 98 % and 1:1); how close the
# figures come to 25 % and 1:3 (MPS provisions SMs in whole units, the pair shares the card's
# clocks and power) is printed, within ±10 % or not, without failing the run. And when both VMs'
# quota_view say PASS. The GPU's compute mode and MIG settings are never touched. About a minute and
# a half with the defaults.
#
#   gpu/sharing.sh             on the GPU machine
# Settings: see gpu/lib.sh; JOB_SECONDS (default 5) per run; SHARE_A, SHARE_B (25, 75); QUOTA_MIB (4096);
# SHARE_TOLERANCE (0.5); TOTAL_BUDGET_S (default 500); MPS_CONTROL (nvidia-cuda-mps-control on PATH).
set -uo pipefail

# shellcheck source=gpu/lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

START_S=$(date +%s)
DEADLINE_S=$((START_S + ${TOTAL_BUDGET_S:-500}))
JOB_SECONDS=${JOB_SECONDS:-5}
SHARE_TOLERANCE=${SHARE_TOLERANCE:-0.5}
SHARE_A=${SHARE_A:-25}
SHARE_B=${SHARE_B:-75}
MPS_CONTROL=${MPS_CONTROL:-nvidia-cuda-mps-control}
QUOTA_MIB=${QUOTA_MIB:-4096}
KERNELS=$BUILD_DIR/kernels
BIN=$BUILD_DIR/programs
MPS_PIPE=$BUILD_DIR/mps-pipe
MPS_LOG=$BUILD_DIR/mps-log
REPORT=$OUT/sharing.md
SERVER_PIDS=()
MPS_STARTED=0

stop_all() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null
    done
    for pid in "${SERVER_PIDS[@]}"; do
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    SERVER_PIDS=()
    rm -f /dev/shm/ivcuda-share-a /dev/shm/ivcuda-share-b
    if [ "$MPS_STARTED" = 1 ]; then
        echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE timeout 30 "$MPS_CONTROL" >/dev/null 2>&1
        MPS_STARTED=0
        log "MPS control daemon stopped"
        cp -r "$MPS_LOG" "$OUT/logs/mps" 2>/dev/null
    fi
}
trap stop_all EXIT
trap 'log "interrupted"; exit 130' INT TERM

fail() {
    log "FAIL: $*"
    echo "FAIL: $*" >>"$REPORT"
    exit 1
}

log "ivcuda compute shares on the GPU, OUT=$OUT, BUILD_DIR=$BUILD_DIR, shares $SHARE_A and $SHARE_B, $JOB_SECONDS s per run"
: >"$REPORT"
build_kernels "$KERNELS" "$REPO_ROOT/gpu/kernels/share_burn.cu" || fail "building share_burn.cu failed"
choose_libcuda_link
build_programs "$REPO_ROOT/gpu/programs" "$BIN" "$REPO_ROOT/gpu/programs/share_job.c" \
    "$REPO_ROOT/gpu/programs/quota_view.c" || fail "building share_job and quota_view failed"
setup_java || fail "no java"
build_guest || fail "guest library not available"
command -v "$MPS_CONTROL" >/dev/null 2>&1 || fail "$MPS_CONTROL not found (NVIDIA's MPS comes with the driver's utilities)"
log "GPU: $(gpu_identity); compute mode: $(nvidia-smi --query-gpu=compute_mode --format=csv,noheader 2>/dev/null | head -1)"

# (1) natively, without MPS: the pipe directory of no daemon, so the driver runs without MPS
job() { # job NAME START [env...]: runs share_job, output in $OUT/logs/NAME.out
    local name=$1 start=$2
    shift 2
    env "$@" timeout -k 5 $((JOB_SECONDS + 120)) "$BIN/share_job" "$KERNELS" "$JOB_SECONDS" "$start" \
        >"$OUT/logs/$name.out" 2>"$OUT/logs/$name.err"
}
rate_of() { sed -n 's/.* rate=\([0-9.]*\).*/\1/p' "$OUT/logs/$1.out"; }
kernels_of() { sed -n 's/.* kernels=\([0-9]*\).*/\1/p' "$OUT/logs/$1.out"; }
sms_of() { sed -n 's/.* sms=\([0-9]*\).*/\1/p' "$OUT/logs/$1.out"; }
late_of() { sed -n 's/.* late=\([0-9.]*\).*/\1/p' "$OUT/logs/$1.out"; }

job native 0 CUDA_MPS_PIPE_DIRECTORY="$BUILD_DIR/no-mps-here" || fail "native job: $(cat "$OUT/logs/native.out" "$OUT/logs/native.err")"
NATIVE=$(rate_of native)
log "native, whole GPU: $NATIVE kernels/s ($(cat "$OUT/logs/native.out"))"

# the MPS control daemon in a private pipe directory, as ivcuda-mps.service runs it
mkdir -p "$MPS_PIPE" "$MPS_LOG"
chmod 0700 "$MPS_PIPE"
CUDA_MPS_PIPE_DIRECTORY=$MPS_PIPE CUDA_MPS_LOG_DIRECTORY=$MPS_LOG timeout 30 "$MPS_CONTROL" -d ||
    fail "$MPS_CONTROL -d failed"
MPS_STARTED=1
log "MPS control daemon started (pipe directory $MPS_PIPE)"

# start_share_server NAME SHARE: a cuda-server with the environment the hook writes (runtime.dir/U.env)
start_share_server() {
    local name=$1 share=$2 region=/dev/shm/ivcuda-share-$1 pid
    rm -f "$region"
    env CUDA_MPS_PIPE_DIRECTORY="$MPS_PIPE" CUDA_MPS_LOG_DIRECTORY="$MPS_LOG" \
        CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$share" CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="0=${QUOTA_MIB}M" \
        timeout -s TERM -k 10 $((DEADLINE_S - $(date +%s))) java -jar "$SERVER_JAR" --set "region.path=$region" \
        --set region.size=$((64 << 20)) --set "compute.share=$share" --set "memory.quota=$((QUOTA_MIB << 20))" \
        --set "domain.name=share-$name" >"$OUT/logs/server-$name.log" 2>&1 &
    pid=$!
    SERVER_PIDS+=("$pid")
    "$GUEST_LIB_DIR/ivcuda-region-wait" --pid "$pid" "$region" 90 >"$OUT/logs/region-wait-$name.log" 2>&1 ||
        fail "server $name (share $share) not READY: $(tail -5 "$OUT/logs/server-$name.log")"
    grep -q "enforced by MPS" "$OUT/logs/server-$name.log" ||
        fail "server $name does not say its share is enforced by MPS: $(tail -5 "$OUT/logs/server-$name.log")"
    log "server $name: share $share %, enforced by MPS (pid $pid)"
}
start_share_server a "$SHARE_A"
start_share_server b "$SHARE_B"
guest_env() { echo IVCUDA_REGION=/dev/shm/ivcuda-share-$1 LD_LIBRARY_PATH=$GUEST_LIB_DIR; }

# (2) the share-A VM alone
# shellcheck disable=SC2046 # guest_env is words on purpose
job alone-a 0 $(guest_env a) || fail "job through server a: $(cat "$OUT/logs/alone-a.out" "$OUT/logs/alone-a.err")"
ALONE_A=$(rate_of alone-a)
log "share $SHARE_A alone: $ALONE_A kernels/s"

# (3) both at once, from the same instant (the contexts exist before it)
T=$(awk -v now="$(date +%s.%N)" 'BEGIN { printf "%.3f", now + 5 }')
# shellcheck disable=SC2046
job both-a "$T" $(guest_env a) &
JA=$!
# shellcheck disable=SC2046
job both-b "$T" $(guest_env b) &
JB=$!
wait "$JA" || fail "concurrent job a: $(cat "$OUT/logs/both-a.out" "$OUT/logs/both-a.err")"
wait "$JB" || fail "concurrent job b: $(cat "$OUT/logs/both-b.out" "$OUT/logs/both-b.err")"
BOTH_A=$(rate_of both-a)
BOTH_B=$(rate_of both-b)

# the order, with the margin (the verdicts), and the closeness to the shares (printed only)
verdicts=$(awk -v n="$NATIVE" -v a1="$ALONE_A" -v a="$BOTH_A" -v b="$BOTH_B" -v sa="$SHARE_A" -v sb="$SHARE_B" \
    -v tol="$SHARE_TOLERANCE" 'BEGIN {
    alone = n > 0 ? a1 / n : 1; want_alone = sa / 100; ratio = a > 0 ? b / a : 0; want_ratio = sb / sa;
    ok1 = (alone < want_alone * (1 + tol));
    ok2 = (ratio > want_ratio * (1 - tol));
    near1 = (alone >= want_alone * 0.9 && alone <= want_alone * 1.1);
    near2 = (ratio >= want_ratio * 0.9 && ratio <= want_ratio * 1.1);
    printf "%.3f %.3f %.3f %.3f %s %s %.3f %.3f %s %s\n", alone, want_alone, ratio, want_ratio, ok1 ? "PASS" : "FAIL",
        ok2 ? "PASS" : "FAIL", want_alone * (1 + tol), want_ratio * (1 - tol), near1 ? "yes" : "no", near2 ? "yes" : "no" }')
read -r ALONE_FRACTION WANT_ALONE RATIO WANT_RATIO V1 V2 MAX_ALONE MIN_RATIO NEAR1 NEAR2 <<<"$verdicts"
pct() { awk -v x="$1" -v n="$NATIVE" 'BEGIN { printf "%.1f %%", 100 * x / n }'; }
{
    echo "# Compute shares through MPS ($(date -u +%Y-%m-%dT%H:%MZ), commit $(git_commit))"
    echo
    echo "GPU: $(gpu_identity). share_job: share_burn over a fixed grid of $(sed -n 's/.* grid=\([0-9]*\).*/\1/p' \
        "$OUT/logs/native.out") blocks, one synchronised launch after another, $JOB_SECONDS s per run;"
    echo "throughput = kernels finished per second; SMs: what the job's driver reported."
    echo
    echo "| run | share | SMs | kernels | kernels/s | of native |"
    echo "|---|---|---|---|---|---|"
    echo "| native, alone (no MPS) | whole GPU | $(sms_of native) | $(kernels_of native) | $NATIVE | 100 % |"
    echo "| ivcuda, VM a alone | $SHARE_A % | $(sms_of alone-a) | $(kernels_of alone-a) | $ALONE_A | $(pct "$ALONE_A") |"
    echo "| ivcuda, VM a, both at once | $SHARE_A % | $(sms_of both-a) | $(kernels_of both-a) | $BOTH_A | $(pct "$BOTH_A") |"
    echo "| ivcuda, VM b, both at once | $SHARE_B % | $(sms_of both-b) | $(kernels_of both-b) | $BOTH_B | $(pct "$BOTH_B") |"
    echo
    echo "- VM a alone reaches $ALONE_FRACTION of native: below $MAX_ALONE (clearly slower than the whole GPU): $V1;"
    echo "  within $WANT_ALONE ± 10 %: $NEAR1"
    echo "- both at once: VM b finished $RATIO x VM a's launches: above $MIN_RATIO (b does more): $V2;"
    echo "  within $WANT_RATIO ± 10 %: $NEAR2 (started late by a $(late_of both-a) s, b $(late_of both-b) s)"
} | tee -a "$REPORT"

# (4) the memory quota (issue 15 acceptance): VM a fills its QUOTA_MIB quota in 64 MiB blocks and
# holds it while VM b fills its own; each sees the quota as CUDA's and NVML's total and meets
# CUDA_ERROR_OUT_OF_MEMORY at its end (gpu/programs/quota_view.c says PASS or why not)
# shellcheck disable=SC2046
env $(guest_env a) timeout 180 "$BIN/quota_view" "$QUOTA_MIB" 20 >"$OUT/logs/quota-a.out" 2>&1 &
QA=$!
for _ in $(seq 1 600); do grep -q "^holding" "$OUT/logs/quota-a.out" && break; kill -0 "$QA" 2>/dev/null || break; sleep 0.1; done
# shellcheck disable=SC2046
env $(guest_env b) timeout 180 "$BIN/quota_view" "$QUOTA_MIB" 0 >"$OUT/logs/quota-b.out" 2>&1
wait "$QA"
QUOTA_A=$(grep -m1 "^quota: " "$OUT/logs/quota-a.out" || echo "quota: FAIL no verdict (see logs/quota-a.out)")
QUOTA_B=$(grep -m1 "^quota: " "$OUT/logs/quota-b.out" || echo "quota: FAIL no verdict (see logs/quota-b.out)")
{
    echo
    echo "Memory quota ($QUOTA_MIB MiB each; VM b allocates while VM a holds all of its quota):"
    echo
    echo "- VM a: $(grep -m1 '^totals: ' "$OUT/logs/quota-a.out"); $(grep -m1 '^allocated ' "$OUT/logs/quota-a.out"): $QUOTA_A"
    echo "- VM b: $(grep -m1 '^totals: ' "$OUT/logs/quota-b.out"); $(grep -m1 '^allocated ' "$OUT/logs/quota-b.out"): $QUOTA_B"
    echo "- the script took $(($(date +%s) - START_S)) s"
} | tee -a "$REPORT"
[ "$V1" = PASS ] && [ "$V2" = PASS ] && [ "$QUOTA_A" = "quota: PASS" ] && [ "$QUOTA_B" = "quota: PASS" ]
