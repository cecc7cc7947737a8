#!/usr/bin/env bash
# Compute shares on the GPU (issue 15, docs/sharing.md): two cuda-servers started directly, as the hook
# would start them for two VMs with <ivcuda:gpu share="25"/> and share="75", each an MPS client of an MPS
# control daemon this script starts in a private pipe directory (and stops at the end); host loopback as
# gpu/validate.sh does it (the guest library over a /dev/shm region, no QEMU, no libvirt). One
# compute-bound job (gpu/programs/share_job.c) runs:
#   1. natively, alone, with the whole GPU (no MPS): the card's throughput;
#   2. through the share-25 server alone: expected about 25 % of (1);
#   3. through both servers at once, started at the same instant: expected throughputs 1:3;
#   4. the memory quota (QUOTA_MIB, 4096): first gpu/programs/quota_view.c natively as an MPS client with
#      each VM's share and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT = what the hook sets, the quota plus
#      MPS_HEADROOM_MIB (what MPS alone leaves a process: the yardstick), then quota_view in VM a fills
#      and holds its quota while VM b fills its own — each sees the quota as CUDA's and NVML's total,
#      meets CUDA_ERROR_OUT_OF_MEMORY at its end and gets no less than the lesser of the quota and what
#      the native MPS client with its share got, less two blocks; with a headroom the refusal must be the
#      server's quota (logged), not MPS's limit; each prints the breakdown of
#      what was taken when it began (what the server counted, from NVML's used and the server's status
#      file; whether the driver's own free, under MPS the pinned-memory limit, bound instead) and who
#      refused the last block (the server's quota logs it; the driver does not);
#   5. PyTorch under the quota (gpu/pytorch/quota_torch.py through VM a): torch's mem_get_info() and
#      total_memory are the quota, 64 MiB tensors until torch.OutOfMemoryError near it, ivcuda-smi run
#      meanwhile lists the process and its memory, and stderr has no NVML warning;
#   6. fault recovery under MPS (last: it ends both servers' CUDA processes): VM b runs the job while a
#      process of VM a faults (gpu/programs/fault_recovery.c fault: an illegal address); what VM b's job
#      saw, when each server logged the fault, its recovery and its new CUDA process, and whether each
#      VM then serves a new process (fault_recovery compute), as a timeline.
# The job's grid is fixed (8 waves of resident blocks on the whole H200), so its rate follows the
# SMs it gets. Prints a table (with the SM count each job's driver reported) and writes it to
# $OUT/sharing.md. Exit 0 when the order holds with a margin of SHARE_TOLERANCE (0.5): VM a alone
# below (1 + 0.5) x 25 % of native, i.e. clearly slower than the whole GPU, and VM b finishing at
# least (1 - 0.5) x 3 times VM a's launches when both run. The margin is wide because what is
# asserted is that MPS enforces a share at all (the first H200 run: 98 % and 1:1); how close the
# figures come to 25 % and 1:3 (MPS provisions SMs in whole units, the pair shares the card's
# clocks and power) is printed, within ±10 % or not, without failing the run. And when both VMs'
# quota_view, the PyTorch checks and the fault recovery's checks say PASS (a step that had no time
# left in TOTAL_BUDGET_S says SKIP and fails the run). Every step's line starts with its verdict
# (PASS/FAIL/SKIP). The GPU's compute mode and MIG settings are never touched. About two minutes
# with the defaults.
#
#   gpu/sharing.sh             on the GPU machine
# Settings: see gpu/lib.sh; JOB_SECONDS (default 3) per run; SHARE_A, SHARE_B (25, 75); QUOTA_MIB (4096);
# SHARE_TOLERANCE (0.5); TOTAL_BUDGET_S (default 150); MPS_CONTROL (nvidia-cuda-mps-control on PATH);
# MPS_HEADROOM_MIB (1024: the hook's mps.pinned.headroom default, added to the quota in MPS's limit; 0: the
# limit is the quota, as in the runs up to 2026-12-02 06:44); PYTHON (python3, with PyTorch); REGION_MIB (256: each VM's region; 64 where /dev/shm has not room
# for two); RECOVERY_WAIT_S (45: the longest wait for a server's recovery after the fault).
set -uo pipefail

# shellcheck source=gpu/lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

START_S=$(date +%s)
DEADLINE_S=$((START_S + ${TOTAL_BUDGET_S:-150}))
JOB_SECONDS=${JOB_SECONDS:-3}
SHARE_TOLERANCE=${SHARE_TOLERANCE:-0.5}
SHARE_A=${SHARE_A:-25}
SHARE_B=${SHARE_B:-75}
MPS_CONTROL=${MPS_CONTROL:-nvidia-cuda-mps-control}
QUOTA_MIB=${QUOTA_MIB:-4096}
# MPS's pinned-memory limit as the hook sets it (MpsEnvironment): the quota plus mps.pinned.headroom,
# because MPS counts the context's own memory in it (389 MiB at 98 SMs on the H200)
MPS_HEADROOM_MIB=${MPS_HEADROOM_MIB:-1024}
MPS_LIMIT_MIB=$((QUOTA_MIB + MPS_HEADROOM_MIB))
PYTHON=${PYTHON:-python3}
# each VM's region: 256 MiB, a VM's default (the provisioner's defaults.size; PyTorch's runs had 1 GiB,
# the 2026-12-01 runs of this script 64 MiB: the region is host memory, which the quota does not
# count), 64 MiB where /dev/shm has not the room for two
REGION_MIB=${REGION_MIB:-256}
SHM_FREE=$(df -B1 --output=avail /dev/shm 2>/dev/null | tail -1 | tr -dc '0-9')
if [ -n "$SHM_FREE" ] && [ $((SHM_FREE >> 20)) -lt $((2 * REGION_MIB + 64)) ]; then
    REGION_MIB=64
fi
RECOVERY_WAIT_S=${RECOVERY_WAIT_S:-45}
KERNELS=$BUILD_DIR/kernels
BIN=$BUILD_DIR/programs
MPS_PIPE=$BUILD_DIR/mps-pipe
MPS_LOG=$BUILD_DIR/mps-log
REPORT=$OUT/sharing.md
SERVER_PIDS=()
VERDICTS=() # "PASS|FAIL|SKIP what" of the steps after the shares
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
    cp "$BUILD_DIR"/server-?.status "$OUT/logs/" 2>/dev/null
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

log "ivcuda compute shares on the GPU, OUT=$OUT, BUILD_DIR=$BUILD_DIR, shares $SHARE_A and $SHARE_B, $JOB_SECONDS s per run, regions of $REGION_MIB MiB, budget $((DEADLINE_S - START_S)) s"
: >"$REPORT"
build_kernels "$KERNELS" "$REPO_ROOT/gpu/kernels/share_burn.cu" "$REPO_ROOT/gpu/kernels/fault_recovery.cu" ||
    fail "building share_burn.cu and fault_recovery.cu failed"
choose_libcuda_link
build_programs "$REPO_ROOT/gpu/programs" "$BIN" "$REPO_ROOT/gpu/programs/share_job.c" \
    "$REPO_ROOT/gpu/programs/quota_view.c" "$REPO_ROOT/gpu/programs/fault_recovery.c" ||
    fail "building share_job, quota_view and fault_recovery failed"
setup_java || fail "no java"
build_guest || fail "guest library not available"
ORACLE=$(integrity_oracle) # PyTorch's cudart checks its driver through it (without: 103)
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

# left_s: seconds left of TOTAL_BUDGET_S; bounded WANT: WANT seconds, or what is left less 10 s for
# the end (stopping the servers and the daemon), at least 1
left_s() { echo $((DEADLINE_S - $(date +%s))); }
bounded() {
    local left=$(($(left_s) - 10))
    [ "$left" -lt 1 ] && left=1
    echo $(($1 < left ? $1 : left))
}
# verdict PASS|FAIL|SKIP TEXT: a line of the report; the exit status is made of these and the shares'
verdict() {
    local v=$1
    shift
    VERDICTS+=("$v $*")
    echo "- $v: $*" | tee -a "$REPORT"
}

# (4a) the yardstick for the quota: what MPS alone leaves a process (natively, one context, no ivcuda)
# that has a VM's share and the pinned-memory limit each VM's server has (the quota plus the headroom):
# the limit counts all the process holds on the device, its context's own memory too, which the
# server's quota does not count (docs/sharing.md), so a VM cannot get more than this — with the
# headroom it should be more than the quota, so that the server's quota is what binds
mps_probe() { # mps_probe NAME SHARE: prints the MiB it got ("" if none)
    env CUDA_MPS_PIPE_DIRECTORY="$MPS_PIPE" CUDA_MPS_LOG_DIRECTORY="$MPS_LOG" \
        CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$2" CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="0=${MPS_LIMIT_MIB}M" \
        timeout -k 5 "$(bounded 60)" "$BIN/quota_view" "$QUOTA_MIB" 0 >"$OUT/logs/quota-native-$1.out" 2>&1
    sed -n 's/^allocated \([0-9]*\) MiB.*/\1/p' "$OUT/logs/quota-native-$1.out"
}
check_native_driver "$BIN/quota_view" || fail "quota_view would not run natively"
NATIVE_QUOTA_A=$(mps_probe a "$SHARE_A")
NATIVE_QUOTA_B=$(mps_probe b "$SHARE_B")
log "native MPS clients with the hook's pinned limit (${MPS_LIMIT_MIB} MiB: quota + headroom) got: share $SHARE_A ${NATIVE_QUOTA_A:-?} MiB, share $SHARE_B ${NATIVE_QUOTA_B:-?} MiB"

# start_share_server NAME SHARE: a cuda-server with the environment the hook writes (runtime.dir/U.env);
# its pidfile gives it a status file beside it (written on SIGUSR1: what it counts, which processes)
start_share_server() {
    local name=$1 share=$2 region=/dev/shm/ivcuda-share-$1 pid oracle_args=()
    rm -f "$region" "$BUILD_DIR/server-$name.pid" "$BUILD_DIR/server-$name.status"
    [ -n "$ORACLE" ] && oracle_args=(--set "integrity.oracle=$ORACLE")
    env CUDA_MPS_PIPE_DIRECTORY="$MPS_PIPE" CUDA_MPS_LOG_DIRECTORY="$MPS_LOG" \
        CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$share" CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="0=${MPS_LIMIT_MIB}M" \
        timeout -s TERM -k 10 $((DEADLINE_S - $(date +%s))) java -jar "$SERVER_JAR" --set "region.path=$region" \
        --set region.size=$((REGION_MIB << 20)) --set "compute.share=$share" --set "memory.quota=$((QUOTA_MIB << 20))" \
        --set "domain.name=share-$name" --set "pidfile=$BUILD_DIR/server-$name.pid" "${oracle_args[@]}" \
        >"$OUT/logs/server-$name.log" 2>&1 &
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
# CUDA_ERROR_OUT_OF_MEMORY at its end (gpu/programs/quota_view.c says PASS or why not). The least each
# must get: the lesser of the quota and what the native MPS client with its share got (4a), less two
# blocks (the server's process may hold a little more than the one context of the probe); without a
# yardstick quota_view's own (the quota less one block and 256 MiB)
least_of() {
    [ -n "$1" ] || return
    local m=$(($1 < QUOTA_MIB ? $1 : QUOTA_MIB))
    [ "$m" -gt 128 ] && echo $((m - 128))
}
# server_status NAME: what the server counts now, from its status file (SIGUSR1 makes it write it)
server_status() {
    local status=$BUILD_DIR/server-$1.status pid before
    pid=$(cat "$BUILD_DIR/server-$1.pid" 2>/dev/null) || { echo "no pidfile"; return; }
    before=$(sed -n 's/^written=//p' "$status" 2>/dev/null)
    kill -USR1 "$pid" 2>/dev/null || { echo "server $1 (pid $pid) gone"; return; }
    for _ in $(seq 1 30); do
        [ "$(sed -n 's/^written=//p' "$status" 2>/dev/null)" != "$before" ] && break
        sleep 0.1
    done
    local held
    held=$(sed -n 's/^memory\.held=\([0-9]*\)$/\1/p' "$status" 2>/dev/null)
    echo "status file: memory.held $([ -n "$held" ] && echo "$((held >> 20)) MiB" || echo "?") of allocations" \
        "counted, guest processes [$(sed -n 's/^processes=//p' "$status" 2>/dev/null)]"
}
# quota refusals the server logged (the first of a burst; RefusalLog limits the rest)
refusals() { grep -c "bytes refused: memory.quota" "$OUT/logs/server-$1.log"; }
MIN_A=$(least_of "$NATIVE_QUOTA_A")
MIN_B=$(least_of "$NATIVE_QUOTA_B")
RA0=$(refusals a)
RB0=$(refusals b)
STATUS_A=$(server_status a)
# shellcheck disable=SC2046
env $(guest_env a) timeout "$(bounded 60)" "$BIN/quota_view" "$QUOTA_MIB" 8 ${MIN_A:+"$MIN_A"} >"$OUT/logs/quota-a.out" 2>&1 &
QA=$!
for _ in $(seq 1 600); do grep -q "^holding" "$OUT/logs/quota-a.out" 2>/dev/null && break; kill -0 "$QA" 2>/dev/null || break; sleep 0.1; done
STATUS_B=$(server_status b)
# shellcheck disable=SC2046
env $(guest_env b) timeout "$(bounded 60)" "$BIN/quota_view" "$QUOTA_MIB" 0 ${MIN_B:+"$MIN_B"} >"$OUT/logs/quota-b.out" 2>&1
wait "$QA"
RA1=$(refusals a)
RB1=$(refusals b)
quota_lines() { # quota_lines NAME NATIVE_MIB STATUS REFUSALS_BEFORE REFUSALS_AFTER: the breakdown
    local f=$OUT/logs/quota-$1.out
    echo "- VM $1: $(grep -m1 '^totals: ' "$f")"
    echo "  - before its first allocation: $3; $(grep -m1 '^start: ' "$f" | sed 's/^start: //')"
    echo "  - $(grep -m1 '^allocated ' "$f"); refused by $([ "$5" -gt "$4" ] && echo "the server's quota (logged)" ||
        echo "the driver (no quota refusal logged)"); at the refusal: $(grep -m1 '^at the refusal: ' "$f" | sed 's/^at the refusal: //')"
    echo "  - a native MPS client with this share and the hook's pinned limit (${MPS_LIMIT_MIB} MiB) got ${2:-?} MiB" \
        "($(grep -m1 '^start: ' "$OUT/logs/quota-native-$1.out" | sed 's/^start: //;s/; NVML.*//')); $(grep -m1 '^least expected' "$f")"
}
{
    echo
    echo "Memory quota ($QUOTA_MIB MiB each, MPS's pinned limit $MPS_LIMIT_MIB MiB; VM b allocates while VM a holds all of its quota):"
    echo
    quota_lines a "$NATIVE_QUOTA_A" "$STATUS_A" "$RA0" "$RA1"
    quota_lines b "$NATIVE_QUOTA_B" "$STATUS_B" "$RB0" "$RB1"
} | tee -a "$REPORT"
for n in a b; do
    v=$(grep -m1 "^quota: " "$OUT/logs/quota-$n.out" | sed 's/^quota: //')
    case $v in
        PASS*) verdict PASS "quota VM $n: $(grep -m1 '^allocated ' "$OUT/logs/quota-$n.out")" ;;
        *) verdict FAIL "quota VM $n: ${v:-no verdict (see logs/quota-$n.out)}" ;;
    esac
done
# with a headroom MPS's limit is a second fence only: the server's exact quota must refuse first
if [ "$MPS_HEADROOM_MIB" -gt 0 ]; then
    for n in a b; do
        if [ "$n" = a ]; then r0=$RA0 r1=$RA1; else r0=$RB0 r1=$RB1; fi
        if [ "$r1" -gt "$r0" ]; then
            verdict PASS "quota VM $n: refused by the server's quota (logged), MPS's limit of $MPS_LIMIT_MIB MiB did not bind"
        else
            verdict FAIL "quota VM $n: no quota refusal logged by server $n: the driver (MPS's limit of $MPS_LIMIT_MIB MiB?) refused first"
        fi
    done
fi

# (5) PyTorch under the quota, through VM a (issue 15: "PyTorch in the guest uses our NVML without
# warnings; ivcuda-smi shows the VM's processes and memory")
torch_step() {
    local t out=$OUT/logs/torch-quota.out err=$OUT/logs/torch-quota.err go=$BUILD_DIR/torch-go tp rc pid line
    echo | tee -a "$REPORT"
    if ! timeout 60 "$PYTHON" -c 'import torch' >/dev/null 2>&1; then
        verdict SKIP "PyTorch: $PYTHON cannot import torch"
        return
    fi
    t=$(bounded 90)
    if [ "$t" -lt 30 ]; then
        verdict SKIP "PyTorch: only $t s left of TOTAL_BUDGET_S"
        return
    fi
    rm -f "$go"
    IVCUDA_REGION=/dev/shm/ivcuda-share-a LD_LIBRARY_PATH=$GUEST_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        PYTORCH_NVML_BASED_CUDA_CHECK=1 timeout -k 5 "$t" "$PYTHON" "$REPO_ROOT/gpu/pytorch/quota_torch.py" \
        "$QUOTA_MIB" "${MIN_A:-$((QUOTA_MIB - 64 - 256))}" "$go" >"$out" 2>"$err" &
    tp=$!
    for _ in $(seq 1 $((t * 10))); do grep -q "^holding" "$out" 2>/dev/null && break; kill -0 "$tp" 2>/dev/null || break; sleep 0.1; done
    pid=$(sed -n 's/^pid \([0-9]*\) .*/\1/p' "$out")
    if grep -q "^holding" "$out"; then
        # shellcheck disable=SC2046
        env $(guest_env a) timeout 20 "$GUEST_LIB_DIR/ivcuda-smi" >"$OUT/logs/ivcuda-smi.out" 2>&1
        echo "ivcuda-smi exit $?" >>"$OUT/logs/ivcuda-smi.out"
    else
        echo "not run: the PyTorch script never held its memory" >"$OUT/logs/ivcuda-smi.out"
    fi
    touch "$go"
    wait "$tp"
    rc=$?
    log "PyTorch under the quota: exit $rc"
    grep -E "^(pid |allocated |mem_get_info while|info: )" "$out" | sed 's/^/  /' | tee -a "$REPORT"
    if ! grep -q "^torch device: " "$out"; then
        verdict FAIL "PyTorch: no verdict (exit $rc): $(tail -3 "$err" | tr '\n' ' ')"
    fi
    while read -r line; do
        case $line in
            *": PASS "*) verdict PASS "PyTorch $(sed -E 's/^torch ([A-Za-z_]+): PASS /\1: /' <<<"$line")" ;;
            *) verdict FAIL "PyTorch $(sed -E 's/^torch ([A-Za-z_]+): FAIL /\1: /' <<<"$line")" ;;
        esac
    done < <(grep "^torch [A-Za-z_]*: " "$out")
    if grep -qi "nvml" "$err"; then
        verdict FAIL "PyTorch: stderr names NVML: $(grep -i -m3 nvml "$err" | tr '\n' ' ')"
    elif grep -q "^torch device: " "$out"; then
        verdict PASS "PyTorch: no NVML warning on stderr ($(grep -ci warning "$err") warning lines in all)"
    fi
    line=$(grep -E "^\|[[:space:]]+${pid:-none}[[:space:]]+[0-9]+MiB" "$OUT/logs/ivcuda-smi.out" | head -1)
    if [ -n "$pid" ] && [ -n "$line" ] && [ "$(sed -n 's/^|[[:space:]]*[0-9]*[[:space:]]*\([0-9]*\)MiB.*/\1/p' <<<"$line")" -gt 0 ]; then
        verdict PASS "ivcuda-smi during the PyTorch run lists its process: $(tr -s ' ' <<<"$line");" \
            "memory $(grep -m1 -oE '[0-9]+MiB / [0-9]+MiB' "$OUT/logs/ivcuda-smi.out")"
    else
        verdict FAIL "ivcuda-smi during the PyTorch run does not list pid ${pid:-?} with memory (logs/ivcuda-smi.out):" \
            "$(tail -4 "$OUT/logs/ivcuda-smi.out" | tr '\n' ' ')"
    fi
}
torch_step

# (6) fault recovery under MPS (docs/sharing.md): VM b's job runs while a process of VM a stores through
# an address it never allocated. NVIDIA documents that under MPS the fault reaches every client of the
# MPS server, and that the MPS server takes new clients only once all of them exited; each server
# recovers by replacing its CUDA process once its processes that held state exited. Times are seconds
# after the faulting process started; "-" is never (within RECOVERY_WAIT_S).
# logged_at NAME FROM PAT T0: seconds from T0 to the time stamp (log4j's ISO8601, 2026-12-02T05:53:00,123)
# of the first line matching PAT after line FROM of server NAME's log — to now when the line has none;
# status 1 when there is no such line
logged_at() {
    local line when
    line=$(tail -n +$(($2 + 1)) "$OUT/logs/server-$1.log" | grep -m1 -- "$3") || return 1
    when=$(sed -n 's/^\([0-9-]*\)T\([0-9:]*\),\([0-9]*\) .*/\1 \2.\3/p' <<<"$line")
    if [ -n "$when" ]; then
        when=$(date -d "$when" +%s.%N 2>/dev/null) || when=$(now_s)
    else
        when=$(now_s)
    fi
    elapsed_s "$4" "$when"
}
fault_step() {
    local t la lb jb t0 rc_fault rc_job wait_s end n key at
    declare -A seen=()
    declare -A pats=([fault]="fatal GPU fault: " [recovery]="recovery: every process that held state"
        [mps]="MPS not ready" [recovered]="recovered: this is a new CUDA process" [stuck]="stays unusable")
    echo | tee -a "$REPORT"
    t=$(bounded 120)
    if [ "$t" -lt 40 ]; then
        verdict SKIP "fault recovery under MPS: only $t s left of TOTAL_BUDGET_S"
        return
    fi
    la=$(wc -l <"$OUT/logs/server-a.log")
    lb=$(wc -l <"$OUT/logs/server-b.log")
    # shellcheck disable=SC2046
    env $(guest_env b) timeout -k 5 30 "$BIN/share_job" "$KERNELS" 6 >"$OUT/logs/fault-b-job.out" 2>&1 &
    jb=$!
    sleep 2 # VM b's job is launching by now
    t0=$(now_s)
    # shellcheck disable=SC2046
    env $(guest_env a) timeout -k 5 30 "$BIN/fault_recovery" "$KERNELS" fault >"$OUT/logs/fault-a.out" 2>&1
    rc_fault=$?
    seen[a.exited]=$(elapsed_s "$t0" "$(now_s)")
    wait_s=$((RECOVERY_WAIT_S < t - 30 ? RECOVERY_WAIT_S : t - 30))
    end=$(($(date +%s) + wait_s))
    while [ "$(date +%s)" -lt "$end" ]; do
        for n in a b; do
            local from=$la
            [ "$n" = b ] && from=$lb
            for key in "${!pats[@]}"; do
                if [ -z "${seen[$n.$key]:-}" ] && at=$(logged_at "$n" "$from" "${pats[$key]}" "$t0"); then
                    seen[$n.$key]=$at
                fi
            done
        done
        if [ -z "${seen[b.exited]:-}" ] && ! kill -0 "$jb" 2>/dev/null; then
            seen[b.exited]=$(elapsed_s "$t0" "$(now_s)")
        fi
        # done when each server is back (or says it stays poisoned) and VM b's job ended
        if [ -n "${seen[b.exited]:-}" ] && { [ -n "${seen[a.recovered]:-}" ] || [ -n "${seen[a.stuck]:-}" ]; } &&
            { [ -n "${seen[b.recovered]:-}" ] || [ -n "${seen[b.stuck]:-}" ] || [ -z "${seen[b.fault]:-}" ]; }; then
            # a server b that saw no fault: give its log a moment more in case the fault comes late
            [ -n "${seen[b.fault]:-}" ] || [ "$(awk -v t="$(elapsed_s "$t0" "$(now_s)")" 'BEGIN { print (t > 10) }')" = 1 ] && break
        fi
        sleep 0.2
    done
    kill -0 "$jb" 2>/dev/null && kill -TERM "$jb" 2>/dev/null
    wait "$jb"
    rc_job=$?
    # a new process in each VM, at the same time (bounded)
    local ta tb
    # shellcheck disable=SC2046
    env $(guest_env a) timeout -k 5 "$(bounded 30)" "$BIN/fault_recovery" "$KERNELS" compute >"$OUT/logs/fault-after-a.out" 2>&1 &
    ta=$!
    # shellcheck disable=SC2046
    env $(guest_env b) timeout -k 5 "$(bounded 30)" "$BIN/fault_recovery" "$KERNELS" compute >"$OUT/logs/fault-after-b.out" 2>&1 &
    tb=$!
    wait "$ta"
    local ra=$?
    wait "$tb"
    local rb=$?
    seen[after]=$(elapsed_s "$t0" "$(now_s)")
    {
        echo "Fault recovery under MPS (VM a's process faults while VM b's job runs; seconds after the faulting process started):"
        echo
        echo "| event | VM a | VM b |"
        echo "|---|---|---|"
        echo "| its guest process ended (a: the faulting one, b: the job) | ${seen[a.exited]:--} | ${seen[b.exited]:--} |"
        echo "| server logged the fatal fault | ${seen[a.fault]:--} | ${seen[b.fault]:--} |"
        echo "| recovery began (every process that held state exited) | ${seen[a.recovery]:--} | ${seen[b.recovery]:--} |"
        echo "| the new CUDA process met MPS not ready (retrying) | ${seen[a.mps]:--} | ${seen[b.mps]:--} |"
        echo "| new CUDA process ready (\"recovered:\") | ${seen[a.recovered]:--} | ${seen[b.recovered]:--} |"
        echo "| server says the VM stays unusable | ${seen[a.stuck]:--} | ${seen[b.stuck]:--} |"
        echo
        echo "- VM a's faulting process (exit $rc_fault): $(grep -m1 -E "^(first child|FAIL)" "$OUT/logs/fault-a.out")"
        echo "- VM b's job during the fault (exit $rc_job): $(grep -m1 -E "^FAIL|kernels=" "$OUT/logs/fault-b-job.out" || tail -1 "$OUT/logs/fault-b-job.out")"
        for n in a b; do
            local from=$la
            [ "$n" = b ] && from=$lb
            echo "- server $n's log on it: $(tail -n +$((from + 1)) "$OUT/logs/server-$n.log" |
                grep -m1 -E "fatal GPU fault: " | sed 's/^.*fatal GPU fault: /fatal GPU fault: /' | cut -c1-200)"
        done
        echo "- new processes afterwards, done ${seen[after]} s after the fault"
    } | tee -a "$REPORT"
    if [ "$rc_fault" = 0 ]; then
        verdict PASS "fault: VM a's process got CUDA_ERROR_ILLEGAL_ADDRESS"
    else
        verdict FAIL "fault: VM a's process did not fault as planned (exit $rc_fault, logs/fault-a.out)"
    fi
    for n in a b; do
        local after=$ra
        [ "$n" = b ] && after=$rb
        if [ "$after" = 0 ]; then
            verdict PASS "after the fault VM $n serves a new process: $(grep -m1 '^second child' "$OUT/logs/fault-after-$n.out")"
        else
            verdict FAIL "after the fault VM $n does not serve a new process (exit $after): $(grep -m1 -E '^(FAIL|second child)' \
                "$OUT/logs/fault-after-$n.out" || tail -1 "$OUT/logs/fault-after-$n.out")"
        fi
    done
}
fault_step

echo "- the script took $(($(date +%s) - START_S)) s" | tee -a "$REPORT"
ALL_PASS=1
for v in "${VERDICTS[@]}"; do
    [ "${v%% *}" = PASS ] || ALL_PASS=0
done
[ "$V1" = PASS ] && [ "$V2" = PASS ] && [ "$ALL_PASS" = 1 ]
