#!/usr/bin/env bash
# How far a PyTorch acceptance script's values spread run to run, natively and through ivcuda
# (host loopback, a cuda-server per run as gpu/apps.sh starts one): the script N times each way,
# alternating, then per value its range and standard deviation each way, and per timing (`time:`
# lines) the median and range each way with the throughput ratio of the medians (native / ivcuda):
# the benchmark figures of docs/benchmarks/apps.md with the spread they need. For a value that
# differs between two native runs, gpu/apps.sh's comparison (gpu/pytorch/compare.py: within the
# difference of the two native runs) is a coin toss whoever runs it; this shows whether ivcuda's
# runs come from the same spread as native's. Writes $OUT/spread-<script>.md.
#
#   gpu/spread.sh t03_conv [N=6]        on the GPU machine (about 10 s per run)
set -uo pipefail
SCRIPT=${1:?usage: gpu/spread.sh SCRIPT [N]}
N=${2:-6}
# shellcheck source=gpu/lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
START_S=$(date +%s)
DEADLINE_S=$((START_S + ${TOTAL_BUDGET_S:-300}))
RUNS=$OUT/spread/$SCRIPT
mkdir -p "$OUT/logs" "$RUNS"
[ -f "$REPO_ROOT/gpu/pytorch/$SCRIPT.py" ] || { echo "no gpu/pytorch/$SCRIPT.py" >&2; exit 2; }
setup_java || { problem "no java"; exit 1; }
build_guest || { problem "no guest library"; exit 1; }

one() { # one <mode> <i>
    local mode=$1 i=$2 out=$RUNS/$1.$2.out
    [ "$(time_left)" -lt 30 ] && { log "$mode $i: skipped (time budget)"; return; }
    if [ "$mode" = native ]; then
        (cd "$REPO_ROOT/gpu/pytorch" && timeout 120 python3 "$SCRIPT.py") >"$out" 2>"$out.err"
    else
        REGION_PATH=/dev/shm/ivcuda-spread-$$-$i
        start_server 60 || { log "ivcuda $i: server did not start"; return; }
        (cd "$REPO_ROOT/gpu/pytorch" && LD_LIBRARY_PATH=$GUEST_LIB_DIR IVCUDA_REGION=$REGION_PATH \
            timeout 120 python3 "$SCRIPT.py") >"$out" 2>"$out.err"
        stop_server
    fi
    log "$SCRIPT $mode $i: $(tail -1 "$out")"
}
for i in $(seq 1 "$N"); do one native "$i"; one ivcuda "$i"; done

python3 - "$RUNS" "$SCRIPT" "$(git_commit)" >"$OUT/spread-$SCRIPT.md" <<'PY'
import collections, glob, os, statistics, sys
runs, script, commit = sys.argv[1:4]
vals = collections.defaultdict(lambda: collections.defaultdict(list))
times = collections.defaultdict(lambda: collections.defaultdict(list))
passed = collections.Counter()
for f in sorted(glob.glob(runs + "/*.out")):
    mode = os.path.basename(f).split(".")[0]
    for line in open(f, errors="replace"):
        p = line.rstrip("\n").split(" ", 2)
        if p[0] == "value" and len(p) == 3:
            try:
                vals[p[1]][mode].append(float(p[2]))
            except ValueError:
                pass
        elif p[0] == "time:" and len(p) == 3:
            try:
                times[p[1]][mode].append(float(p[2]))
            except ValueError:
                pass
        elif line.strip() == "PASSED":
            passed[mode] += 1
print(f"# {script}: values run to run (gpu/spread.sh, commit {commit})\n")
print(f"PASSED: native {passed['native']}, ivcuda {passed['ivcuda']}\n")
print("| value | native runs | native min .. max (sd) | ivcuda runs | ivcuda min .. max (sd) |")
print("|---|---|---|---|---|")
fmt = lambda a: f"{min(a)!r} .. {max(a)!r} ({statistics.pstdev(a):.3g})" if a else "-"
for k, by in sorted(vals.items()):
    n, v = by.get("native", []), by.get("ivcuda", [])
    if len(set(n + v)) == 1:
        print(f"| {k} | {len(n)} | all identical | {len(v)} | all identical |")
    else:
        print(f"| {k} | {len(n)} | {fmt(n)} | {len(v)} | {fmt(v)} |")
if times:
    print("\n| timing | native median (min .. max) | ivcuda median (min .. max) | runs | native / ivcuda (medians) |")
    print("|---|---|---|---|---|")
    ms = lambda a: f"{statistics.median(a) * 1e3:.3f} ms ({min(a) * 1e3:.3f} .. {max(a) * 1e3:.3f})"
    for k, by in sorted(times.items()):
        n, v = by.get("native", []), by.get("ivcuda", [])
        if n and v:
            print(f"| {k} | {ms(n)} | {ms(v)} | {len(n)} / {len(v)} | {statistics.median(n) / statistics.median(v):.2f} |")
PY
cat "$OUT/spread-$SCRIPT.md"
