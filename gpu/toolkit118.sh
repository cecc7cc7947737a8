#!/usr/bin/env bash
# Programs built with CUDA 11.8 (.t118/, made by gpu/toolkit118-build.sh on a machine with Debian's
# 11.8 toolkit and carried to the GPU machine), each run natively (NVIDIA's libcuda.so.1) and through
# ivcuda (the guest libcuda.so.1 + a cuda-server of its own on a region file, host loopback, as
# gpu/apps.sh runs the CUDA 13 builds), stdout compared after gpu/normalize_output.py (with the
# sample's mask from gpu/corpus-samples.txt). Every program runs from a scratch copy of its
# directory in .t118/programs.tar.xz (samples load .fatbin/.ptx/data from there, some write files there).
#
#   gpu/toolkit118.sh [T118_DIR]              on the GPU machine: T118_DIR defaults to .t118
#   gpu/toolkit118.sh --dry-run [T118_DIR]    anywhere: no native runs; the ivcuda runs against the
#                                             server's host-memory backend, where cudart stops at its
#                                             integrity check (docs/export-tables.md): each program
#                                             must stop there with that one explanation
#
# Prints the table (program | native rc | ivcuda rc | equal | why not) and, when OUT is set, writes
# it to $OUT/toolkit118.md with the runs' logs in $OUT/toolkit118-logs.tar.xz. Exit 0 when it ran
# (whatever the rows say), 1 when it could not (no .t118, no guest library, no java).
#
# Needs what gpu/cudart.sh needs (gcc, java or .jre/jre.tgz, cuda-server/target/cuda-server.jar,
# api/target/classes or IVCUDA_GUEST_LIB_DIR), not nvcc. Settings: gpu/lib.sh's; TOTAL_BUDGET_S
# [420]; T118_PAR programs at once [4]; T118_TIMEOUT_S per native run [60; ivcuda x2];
# T118_WORK_DIR scratch [/tmp/ivcuda-t118].
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
DRY_RUN=0
if [ "${1:-}" = --dry-run ]; then DRY_RUN=1; shift; fi
T118=${1:-$REPO/.t118}
RESULT_DIR=${OUT:-}
WORK=${T118_WORK_DIR:-/tmp/ivcuda-t118}
rm -rf "$WORK"
mkdir -p "$WORK/runs" "$WORK/logs"
# gpu/lib.sh keeps its logs under its OUT: the scratch directory here
OUT=$WORK
# shellcheck source=gpu/lib.sh source-path=SCRIPTDIR
. "$HERE/lib.sh"

START_S=$(date +%s)
DEADLINE_S=$((START_S + ${TOTAL_BUDGET_S:-420}))
PAR=${T118_PAR:-4}
TIMEOUT_S=${T118_TIMEOUT_S:-60}
INTEGRITY="cudart's integrity check (export table d4082055 slot 1) needs the host's real driver"
PROBLEMS=()

trap 'log "interrupted"; exit 130' INT TERM

[ -f "$T118/MANIFEST" ] || { log "no $T118/MANIFEST: build it with gpu/toolkit118-build.sh and carry .t118"; exit 1; }
T118=$(cd "$T118" && pwd)
# the programs travel packed (gpu/toolkit118-build.sh): unpacked here, runs copy from here
if [ -f "$T118/programs.tar.xz" ]; then
    mkdir -p "$WORK/t118"
    tar -C "$WORK/t118" -xJf "$T118/programs.tar.xz" || { log "unpacking $T118/programs.tar.xz failed"; exit 1; }
    cp "$T118/MANIFEST" "$WORK/t118/"
    T118=$WORK/t118
fi

# kind|name|mask|how, for the programs that were built (mask '-' marks one that was not)
KINDS=() NAMES=() MASKS=()
NOT_BUILT=()
while IFS='|' read -r kind name mask how; do
    [[ -z "$kind" || "$kind" == \#* ]] && continue
    if [ "$mask" = - ]; then
        NOT_BUILT+=("$kind/$name: $how")
        continue
    fi
    KINDS+=("$kind"); NAMES+=("$name"); MASKS+=("$mask")
done <"$T118/MANIFEST"
declare -A SAMPLE_ARGS
while IFS='|' read -r name _cost _mask args _note; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    SAMPLE_ARGS[$name]=$args
done <"$HERE/corpus-samples.txt"

setup_java || { log "no java"; exit 1; }
build_guest || { log "no guest library"; exit 1; }
log "${#NAMES[@]} programs from $T118 ($(sed -n 3p "$T118/MANIFEST" | cut -c3-)); dry run: $DRY_RUN"

# the directory a program runs in, copied from .t118, and its binary there
program_dir() { # <kind> <name>
    if [ "$1" = cudart ]; then echo "$T118/cudart"; else echo "$T118/samples/$2"; fi
}

# one program: native run, then the ivcuda run with a server of its own; rc files in runs/<name>/
run_job() {
    local kind=$1 name=$2 d=$WORK/runs/$2 src limit args=()
    src=$(program_dir "$kind" "$name")
    read -r -a args <<<"${SAMPLE_ARGS[$name]:-}"
    [ "$kind" = cudart ] && args=()
    mkdir -p "$d"
    if [ "$DRY_RUN" = 1 ]; then
        echo "skipped (dry run: no GPU)" >"$d/native.rc"
    else
        limit=$(bounded_timeout "$TIMEOUT_S")
        if [ "$limit" -lt 10 ]; then
            echo "skipped (time budget)" >"$d/native.rc"
        else
            rm -rf "$d/native-cwd" && cp -r "$src" "$d/native-cwd"
            (cd "$d/native-cwd" && PROGRAM_TIMEOUT_S=$limit run_program native "./$name" "$d/native" "${args[@]}" &&
                echo "$RUN_RC" >"$d/native.rc" && echo "$RUN_WALL" >"$d/native.wall")
        fi
    fi
    limit=$(bounded_timeout $((2 * TIMEOUT_S)))
    if [ "$limit" -lt 10 ]; then
        echo "skipped (time budget)" >"$d/ivcuda.rc"
        return 0
    fi
    (
        REGION_PATH=/dev/shm/ivcuda-t118-$BASHPID
        OUT=$d/server
        mkdir -p "$OUT/logs"
        backend=()
        [ "$DRY_RUN" = 1 ] && backend=(--set backend=host-memory)
        if ! start_server $((limit + 30)) "${backend[@]}"; then
            echo "skipped (server did not start: runs/$name/server/logs/server.log)" >"$d/ivcuda.rc"
            exit 0
        fi
        rm -rf "$d/ivcuda-cwd" && cp -r "$src" "$d/ivcuda-cwd"
        # the tests/cudart programs (a few hundred calls) with the call trace: which export-table
        # slots cudart 11.8 calls, as gpu/cudart.sh records them for cudart 13
        debug=0
        [ "$kind" = cudart ] && debug=1
        (cd "$d/ivcuda-cwd" && IVCUDA_DEBUG=$debug PROGRAM_TIMEOUT_S=$limit run_program ivcuda "./$name" "$d/ivcuda" "${args[@]}" &&
            echo "$RUN_RC" >"$d/ivcuda.rc" && echo "$RUN_WALL" >"$d/ivcuda.wall")
        stop_server
    )
    rm -rf "$d/native-cwd" "$d/ivcuda-cwd"
    log "$name: native $(cat "$d/native.rc") ivcuda $(cat "$d/ivcuda.rc" 2>/dev/null)"
}

running=0
for i in "${!NAMES[@]}"; do
    if [ "$running" -ge "$PAR" ]; then
        wait -n
        running=$((running - 1))
    fi
    run_job "${KINDS[$i]}" "${NAMES[$i]}" &
    running=$((running + 1))
done
wait

# ---- the table ---------------------------------------------------------------------------------
normalized() { # <file> <mask>
    if [ "$2" = plain ]; then
        python3 "$HERE/normalize_output.py" "$1"
    else
        python3 "$HERE/normalize_output.py" --mask "$2" "$1"
    fi
}

ROWS=()
PASSED=0
for i in "${!NAMES[@]}"; do
    name=${NAMES[$i]} mask=${MASKS[$i]} d=$WORK/runs/${NAMES[$i]}
    native=$(cat "$d/native.rc" 2>/dev/null || echo "not run")
    ivcuda=$(cat "$d/ivcuda.rc" 2>/dev/null || echo "not run")
    equal=- why=
    # a static cudart dlopens libcuda.so.1 (ldd cannot tell): only the guest library writes "ivcuda" lines
    if [ "$ivcuda" = 0 ] && ! grep -q '^ivcuda' "$d/ivcuda.err" 2>/dev/null; then
        ivcuda="not through ivcuda (no guest library line on stderr)"
    fi
    if [ "$DRY_RUN" = 1 ]; then
        others=$(without_exit_stats "$d/ivcuda.err" | grep '^ivcuda:' | grep -vF "$INTEGRITY")
        if [ "$ivcuda" != 0 ] && grep -qF "$INTEGRITY" "$d/ivcuda.err" 2>/dev/null && [ -z "$others" ]; then
            why="stopped at cudart's integrity check, as it must on the host-memory backend"
            PASSED=$((PASSED + 1))
        else
            why="did not stop at the integrity check alone: $(verdict "$ivcuda" "$d/ivcuda")${others:+; $(echo "$others" | head -2 | tr '\n' ' ' | cut -c1-200)}"
            PROBLEMS+=("$name: $why")
        fi
    else
        if [ -f "$d/native.out" ] && [ -f "$d/ivcuda.out" ]; then
            if diff <(normalized "$d/native.out" "$mask") <(normalized "$d/ivcuda.out" "$mask") >"$d/diff"; then
                equal=yes
                rm -f "$d/diff"
            else
                equal=no
                why="outputs differ (runs/$name/diff: $(grep -m1 '^[<>]' "$d/diff" | cut -c1-120 | tr '|' '/'))"
            fi
        fi
        [ "$ivcuda" = 0 ] || why="ivcuda: $(verdict "$ivcuda" "$d/ivcuda")${why:+; $why}"
        [ "$native" = 0 ] || why="native: $(verdict "$native" "$d/native")${why:+; $why}"
        if [ "$native" = 0 ] && [ "$ivcuda" = 0 ] && [ "$equal" = yes ]; then
            PASSED=$((PASSED + 1))
        else
            PROBLEMS+=("$name: $why")
        fi
    fi
    ROWS+=("| ${KINDS[$i]}/$name | $(verdict "$native" "$d/native" | cut -c1-120) | $(verdict "$ivcuda" "$d/ivcuda" | cut -c1-120) | $equal | $(printf '%s' "$why" | tr '|' '/') |")
done

REPORT=$WORK/toolkit118.md
{
    echo "# Programs built with CUDA 11.8, natively and through ivcuda"
    echo
    echo "| | |"
    echo "|---|---|"
    echo "| date | $(date -u '+%Y-%m-%d %H:%M:%S UTC') |"
    echo "| GPU, driver | $(if [ "$DRY_RUN" = 1 ]; then echo "none (dry run: host-memory backend)"; else gpu_identity; fi) |"
    echo "| commit | $(git_commit) |"
    echo "| programs | $(sed -n '2,4p' "$T118/MANIFEST" | cut -c3- | tr '\n' ';' | tr '|' '/') |"
    echo "| command | gpu/toolkit118.sh$([ "$DRY_RUN" = 1 ] && echo " --dry-run"), $(($(date +%s) - START_S)) s |"
    echo
    echo "| program | native rc | ivcuda rc | equal | why not |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    if [ "$DRY_RUN" = 1 ]; then
        echo "$PASSED of ${#NAMES[@]} stopped at cudart's integrity check alone, as they must on the host-memory backend."
    else
        echo "$PASSED of ${#NAMES[@]} ran natively and through ivcuda with equal output."
    fi
    if [ "${#NOT_BUILT[@]}" -gt 0 ]; then
        echo
        echo "Not built with CUDA 11.8 (.t118/MANIFEST):"
        echo
        printf -- '- %s\n' "${NOT_BUILT[@]}"
    fi
} >"$REPORT"
cat "$REPORT"
if [ -n "$RESULT_DIR" ]; then
    mkdir -p "$RESULT_DIR"
    cp "$REPORT" "$RESULT_DIR/toolkit118.md"
    tar -C "$WORK" --exclude='*-cwd' -cJf "$RESULT_DIR/toolkit118-logs.tar.xz" runs logs steps.log 2>/dev/null
    log "report: $RESULT_DIR/toolkit118.md, logs: $RESULT_DIR/toolkit118-logs.tar.xz"
fi
exit 0
