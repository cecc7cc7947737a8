# shellcheck shell=bash
# gpu/apps.sh's vm mode: the corpus samples it built, inside test guests (vm/build-guest.sh) booted
# under QEMU (vm/qemu.sh), each guest with a cuda-server of its own on the host and its region as the
# ivshmem device, as vm/gpu-vm.sh does for the driver-API programs. Sourced by gpu/apps.sh after
# gpu/lib.sh; runs once every build and native run ended (the order is by native wall time, fastest
# first: under TCG the budget, not the list, decides how many run), beside the loopback runs and the
# PyTorch scripts still going: the guests take the CPU, those the GPU.
#
# The programs are dealt to VM_COUNT guests by their expected time in a guest (vm_deal), each guest
# running its own fastest first. Each guest gets its programs, the
# samples' build directories without CMake's files (the data files the samples look for beside their
# binary or in their working directory: .pgm, .dat, .mtx, .ptx, .fatbin, NVRTC's headers), the
# libraries ldd names for them (libstdc++, libcudart.so.13 for the shared builds, cuBLAS, cuFFT...)
# and NVRTC's builtins library, which libnvrtc opens by name, in an uncompressed initramfs. Inside, vm/budget-run.sh runs each
# sample from its directory with the per-program timeout and no program starting after the guest's
# deadline; stdout, stderr and the exit status come back on the serial console and land in
# runs/<program>/vm.{out,err,rc,wall}, where the report compares them with native like any mode.
#
# Settings (environment; defaults in brackets):
#   VM_ACCEL              tcg or kvm [tcg: the H200 machine's /dev/kvm is kvm-pvm, which boots no
#                         Debian kernel]
#   VM_COUNT              guests at once [(cores - 4) / VM_CPUS, at least 1: 6 on the H200 machine's 16
#                         cores, which leaves 4 to the guests' cuda-servers, the loopback runs' servers and
#                         PyTorch; under TCG each vCPU is a host thread that keeps a core busy]
#   VM_CPUS               vCPUs per guest [2]
#   VM_MEMORY_MB          per guest [2048 + three times its image, unpacked]
#   VM_PROGRAM_TIMEOUT_S  per program inside a guest [120: sortingNetworks' CPU-side check takes 69 s
#                         under TCG on the H200 machine (2026-12-02 03:11 UTC), native 2.3-2.5 s]
#   VM_INITRD_COMPRESS    none, zstd or gzip [none: with cuBLAS, cuFFT, cuSOLVER... an image is ~2 GB,
#                         and on the dev machine a 1.9 GB image booted under TCG in 50 s uncompressed,
#                         60 s from zstd (638 MB); gzip is slower still, and zstd may be missing]
#   VM_RESERVE_S          seconds at the end of TOTAL_BUDGET_S that builds and native runs leave to
#                         the guests [240: on the H200 machine (2026-12-02 00:56 UTC) four guests of 26
#                         programs each took 79-172 s in QEMU, and their images ~7 s to build]
#   IVCUDA_VM_CARRY       QEMU and the guest's kernel and busybox [.vmcarry] (vm/prepare-gpu-carry.sh)
#   VM_PROGRAM_ENV        NAME=VALUE words exported to every program in the guests, for a diagnosis
#                         (e.g. LD_DEBUG=libs: the loader's search, on the program's stderr) [none]

VM_ACCEL=${VM_ACCEL:-tcg}
VM_CPUS=${VM_CPUS:-2}
if [ -z "${VM_COUNT:-}" ]; then
    VM_COUNT=$((($(nproc) - 4) / VM_CPUS))
    [ "$VM_COUNT" -ge 1 ] || VM_COUNT=1
fi
VM_PROGRAM_TIMEOUT_S=${VM_PROGRAM_TIMEOUT_S:-120}
VM_RESERVE_S=${VM_RESERVE_S:-240}
VM_INITRD_COMPRESS=${VM_INITRD_COMPRESS:-none}
VM_MEMORY_GIVEN=${VM_MEMORY_MB:-}
# shellcheck source=vm/qemu.sh
. "$REPO/vm/qemu.sh"
ACCEL=$VM_ACCEL

# The built programs, fastest native run first; those without a good native run last (they run
# too: a failure in the VM is worth seeing), in the corpus list's order.
vm_order() {
    local v s p rc
    for v in "${VARIANT_LIST[@]}"; do
        for s in "${SAMPLES[@]}"; do
            p=$s.$v
            [ "$(cat "$WORK/runs/$p/build.rc" 2>/dev/null)" = 0 ] || continue
            rc=$(cat "$WORK/runs/$p/native.rc" 2>/dev/null)
            if [ "$rc" = 0 ]; then
                printf '0 %s %s\n' "$(cat "$WORK/runs/$p/native.wall")" "$p"
            else
                printf '1 0 %s\n' "$p"
            fi
        done
    done | sort -s -k1,1n -k2,2g | awk '{ print $3 }'
}

# What of a sample's build directory the guest needs: all but CMake's and the compiler's files.
stage_sample() { # stage_sample <build dir> <destination>
    local bld=$1 dest=$2 f
    mkdir -p "$dest"
    for f in "$bld"/* "$bld"/.[!.]*; do
        [ -e "$f" ] || continue
        case "${f##*/}" in
            CMakeFiles | CMakeCache.txt | cmake_install.cmake | CTestTestfile.cmake | Makefile | build.ninja \
                | .ninja_deps | .ninja_log | .ivcuda-cmake-args | compile_commands.json | *.o) continue ;;
        esac
        cp -a "$f" "$dest/"
    done
}

# vm_guest <index> <program...>: one guest's image, server, boot and results (run in a subshell:
# OUT, REGION_PATH and the server are its own).
vm_guest() {
    local idx=$1 p k=0 s bld name lib
    shift
    OUT=$WORK/vm/$idx
    REGION_PATH=/dev/shm/ivcuda-apps-vm-$idx-$$
    local stage=$OUT/stage image=$OUT/image console=$OUT/logs/vm-console.log
    rm -rf "$stage" "$image"
    mkdir -p "$OUT/logs" "$stage/tests" "$stage/corpus"
    local -A lib_dirs=() libs=() extra_files=()
    local sample_files=()
    local names=()
    for p in "$@"; do
        k=$((k + 1))
        s=${p%.*}
        bld=$CORPUS_BUILD_DIR/${p##*.}/$s
        name=$(printf '%04d-%s' "$k" "$p")
        names+=("$name")
        stage_sample "$bld" "$stage/corpus/$p"
        while read -r lib; do
            case "${lib##*/}" in libcuda.so*) continue ;; esac # the guest's is /usr/lib/ivcuda's
            lib_dirs[$(dirname "$lib")]=1
            libs[$lib]=1
            # libnvrtc opens its builtins by name at run time: ldd cannot see them
            case "${lib##*/}" in
                libnvrtc.so*)
                    for f in "$(dirname "$lib")"/libnvrtc-builtins.so*; do
                        [ -f "$f" ] || continue
                        extra_files[$f]=1
                        # and what the builtins load in turn (a missing one fails their dlopen
                        # too): build-guest.sh copies them; counted here for the image's size
                        while read -r dep; do
                            case "${dep##*/}" in libcuda.so*) continue ;; esac
                            libs[$dep]=1
                        done < <(ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
                    done
                    ;;
            esac
        done < <(ldd "$bld/$s" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
        local args=()
        read -r -a args <<<"${SAMPLE_ARGS[$s]:-}"
        # at its build directory's path and run as natively (from there, by that path): samples print
        # their argv[0], and the H200 run of 22:13 UTC differed in that line alone where it was ./name
        local env_line=""
        [ -n "${VM_PROGRAM_ENV:-}" ] && env_line="export $VM_PROGRAM_ENV"
        printf '#!/bin/sh\n# %s (gpu/apps-vm.sh)\nexport LD_LIBRARY_PATH=/usr/lib/ivcuda%s\n%s\nexec /usr/bin/ivcuda-budget-run %q %q%s\n' \
            "$p" "$(printf ':%s' "${!lib_dirs[@]}")" "$env_line" "$bld" "$bld/$s" "${args[*]:+$(printf ' %q' "${args[@]}")}" >"$stage/tests/$name"
        sample_files+=(--files "$stage/corpus/$p=$bld")
        chmod +x "$stage/tests/$name"
    done
    local files=("${sample_files[@]}" --files "$REPO/vm/budget-run.sh=/usr/bin/ivcuda-budget-run")
    local f
    for f in "${!extra_files[@]}"; do files+=(--files "$f=$f"); done
    local compress=$VM_INITRD_COMPRESS initrd=$image/initramfs.cpio
    case "$compress" in zstd) initrd+=.zst ;; gzip) initrd+=.gz ;; esac
    [ -d "$CARRY/guest-base" ] && export IVCUDA_VM_BASE=$CARRY/guest-base
    local fail_all=""
    if ! timeout "$(bounded_timeout 240)" "$REPO/vm/build-guest.sh" --compress "$compress" "${files[@]}" \
        "$image" "$GUEST_LIB_DIR" "${names[@]/#/$stage/tests/}" >"$OUT/logs/build-guest.log" 2>&1; then
        fail_all="not run (building the guest image failed: vm/$idx/logs/build-guest.log)"
    else
        log "vm $idx: $(tail -1 "$OUT/logs/build-guest.log")"
        if [ -z "$VM_MEMORY_GIVEN" ]; then
            # The kernel unpacks the initramfs into a tmpfs that may hold half the guest's memory,
            # while the image itself is still in memory; the programs need their own room beside.
            # du of the staged files undercounts what build-guest.sh adds (the H200 run of 22:13 UTC:
            # 1.8 and 2.1 GB images in 4046 and 4526 MiB guests, "Initramfs unpacking failed: write
            # error"): an uncompressed image says its size itself.
            local unpacked_mb
            unpacked_mb=$(du -cmL "$stage" "${!libs[@]}" | tail -1 | cut -f1)
            [ "$compress" = none ] && unpacked_mb=$(($(stat -c %s "$initrd") / 1048576 + 1))
            VM_MEMORY_MB=$((2048 + 3 * unpacked_mb))
        fi
        if ! start_server $(($(time_left) + 30)); then
            fail_all="not run (its server did not start: vm/$idx/logs/server.log)"
        else
            local limit
            limit=$(bounded_timeout "$(time_left)")
            # the guest stops starting programs in time to print the last one's stderr and power off
            boot_vm "$limit" "$image" "$initrd" "$console" "ivcuda.deadline=$((limit - 25))" \
                "ivcuda.timeout=$VM_PROGRAM_TIMEOUT_S"
            stop_server
        fi
    fi
    k=0
    local ran=0 skipped=0
    for p in "$@"; do
        name=${names[$k]}
        k=$((k + 1))
        vm_result "$p" "$name" "$console" "$fail_all"
        case "$(cat "$WORK/runs/$p/vm.rc")" in
            [0-9]*) ran=$((ran + 1)) ;;
            skipped*) skipped=$((skipped + 1)) ;;
        esac
    done
    # one line for the report (written by the main shell, which has none of this guest's variables)
    if [ -n "$fail_all" ]; then
        echo "| $idx | $# | - | - | - | $fail_all |"
    else
        echo "| $idx | $# | $(du -h "$initrd" | cut -f1) ($compress), $VM_MEMORY_MB MiB | ${VM_WALL_TOTAL:--} s, QEMU status ${QEMU_RC:--} | $ran ran, $skipped skipped (time budget) | $(vm_guest_notes "$console") |"
    fi >"$WORK/vm/$idx/report-row"
}

vm_guest_notes() { # what went wrong with a guest as a whole, from its console
    local notes=()
    grep -q IVCUDA-GUEST-UP "$1" 2>/dev/null || notes+=("its init never started")
    grep -q "^ivshmem device at" <(tr -d '\r' <"$1" 2>/dev/null) || notes+=("no ivshmem device seen")
    grep -q IVCUDA-GUEST-DONE "$1" 2>/dev/null || notes+=("did not finish: stopped by the host")
    local IFS=';'
    echo "${notes[*]}"
}

# The report's part on the guests (called by write_report when the vm mode ran).
vm_report() {
    compgen -G "$WORK/vm/*/report-row" >/dev/null || return 0
    local runs equal skipped
    runs=$(cat "$WORK"/runs/*.{static,shared}/vm.rc 2>/dev/null | wc -l)
    equal=$(awk -F'\t' '$1 !~ /^torch\./ && $2 == "vm" && $3 == "yes"' "$WORK/equal.tsv" 2>/dev/null | wc -l)
    skipped=$(grep -l "^skipped (time budget" "$WORK"/runs/*.{static,shared}/vm.rc 2>/dev/null | wc -l)
    echo "## The guests (vm mode)"
    echo
    echo "$equal of $runs corpus runs in the VM equal to native; $skipped not run for the time budget."
    echo
    echo "QEMU under $ACCEL, $VM_CPUS vCPUs each, at most ${VM_PROGRAM_TIMEOUT_S}s per program; the samples"
    echo "dealt by their expected time in a guest (gpu/apps-vm.sh, vm_deal), each guest's fastest native run first;"
    echo "wall times in the VM are measured by the guest and"
    echo "include software emulation of its CPU. Logs: \`logs.tar.xz\` \`vm/<guest>/logs/\`."
    echo
    echo "| guest | programs | initrd, memory | QEMU | programs run | notes |"
    echo "|---|---|---|---|---|---|"
    cat "$WORK"/vm/*/report-row
    echo
}

# vm_result <program> <console name> <console> <why none ran>: runs/<program>/vm.{out,err,rc,wall}.
vm_result() {
    local p=$1 name=$2 console=$3 why=$4 prefix=$WORK/runs/$1/vm
    if [ -n "$why" ]; then
        echo "$why" >"$prefix.rc"
        return
    fi
    extract_from_console "$console" "$name" "$prefix"
    if [ "$RUN_RC" = 125 ] && grep -q '^IVCUDA-SKIPPED' "$prefix.err"; then
        RUN_RC="skipped (time budget)"
    elif ! [[ "$RUN_RC" =~ ^[0-9]+$ ]]; then
        if [ "$RUN_BEGUN" = 1 ]; then
            RUN_RC=137 # began, never ended: the VM was stopped during it
            echo "TIMEOUT: QEMU was stopped (status $QEMU_RC) while it ran" >>"$prefix.err"
        elif [ "$QEMU_RC" = 124 ] || [ "$QEMU_RC" = 137 ]; then
            RUN_RC="skipped (time budget: the VM was stopped before it)"
        else
            RUN_RC="not run (QEMU exited with status $QEMU_RC before it: vm/*/logs/qemu.log, vm-console.log)"
        fi
    fi
    echo "$RUN_RC" >"$prefix.rc"
    echo "$RUN_WALL" >"$prefix.wall"
    log "$p vm: rc=$RUN_RC wall=${RUN_WALL}s"
}

# Seconds a sample took inside a TCG guest on the H200 machine, for those that took over 10 s
# (docs/compatibility-vm.md: the run of 2026-12-02 00:56 UTC; sortingNetworks in the subset run of
# 03:11 UTC); the CPU side of these runs under emulation, so their native time says little.
declare -A VM_SECONDS_MEASURED=([sortingNetworks]=69 [bf16TensorCoreGemm]=34 [jacobiCudaGraphs]=19 [histogram]=12)

# vm_expected <program>: the seconds it is expected to take in a guest: as measured, else 1 + 2 x
# its native wall time (the other samples of that run: 223 s in the guests for 65 s natively, ~1 s
# each of start), else 5 for a program without a good native run.
vm_expected() {
    local p=$1 s=${1%.*}
    if [ -n "${VM_SECONDS_MEASURED[$s]:-}" ]; then
        echo "${VM_SECONDS_MEASURED[$s]}"
    elif [ "$(cat "$WORK/runs/$p/native.rc" 2>/dev/null)" = 0 ]; then
        awk -v w="$(cat "$WORK/runs/$p/native.wall" 2>/dev/null)" 'BEGIN { printf "%.2f\n", 1 + 2 * w }'
    else
        echo 5
    fi
}

# vm_deal <guests> <program...> (fastest native run first, as vm_order): one line of programs per
# guest. The longest expected first, each to the guest with the least expected so far, so the
# guests end about together (on the 00:56 run's times: 74-99 s of programs in each of six guests,
# 42-143 s dealt round-robin); each guest then runs its own fastest first, so that a budget cut
# leaves out few programs.
vm_deal() {
    local n=$1 i
    shift
    for ((i = 1; i <= $#; i++)); do
        printf '%s %s %s\n' "$i" "$(vm_expected "${!i}")" "${!i}"
    done | sort -k2,2gr -k1,1n |
        awk -v n="$n" '{ best = 0; for (g = 1; g < n; g++) if (load[g] < load[best]) best = g
                         load[best] += $2; print best, $1, $3 }' |
        sort -k1,1n -k2,2n |
        awk -v n="$n" '{ line[$1] = line[$1] (line[$1] == "" ? "" : " ") $3 }
                       END { for (g = 0; g < n; g++) print line[g] }'
}

vm_expected_sum() { # vm_expected_sum "<program...>": the seconds its programs are expected to take
    local p
    for p in $1; do vm_expected "$p"; done | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

vm_lane() {
    local order=() p i
    mapfile -t order < <(vm_order)
    [ "${#order[@]}" -gt 0 ] || return 0
    mkdir -p "$WORK/vm"
    : >"$WORK/vm/started"
    local n=$VM_COUNT
    [ "$n" -gt "${#order[@]}" ] && n=${#order[@]}
    local guests=()
    mapfile -t guests < <(vm_deal "$n" "${order[@]}")
    if [ "$DRY_RUN" = 1 ]; then
        # the plan only: no QEMU image is built or booted in a dry run
        log "vm: after $(($(date +%s) - START_S)) s, ${#order[@]} programs in $n guests of $VM_CPUS vCPUs ($ACCEL), $(time_left) s left (dry run: none booted)"
        for ((i = 0; i < n; i++)); do
            echo "plan: vm guest $i (~$(vm_expected_sum "${guests[$i]}") s of programs expected): ${guests[$i]}"
            for p in ${guests[$i]}; do echo "skipped (dry run: no guest booted)" >"$WORK/runs/$p/vm.rc"; done
        done
        : >"$WORK/vm/ended"
        return 0
    fi
    if [ "$GUEST_OK" != 1 ]; then
        for p in "${order[@]}"; do echo "skipped (no guest library or server: logs/steps.log)" >"$WORK/runs/$p/vm.rc"; done
        return 0
    fi
    if ! setup_qemu; then
        for p in "${order[@]}"; do echo "skipped (no QEMU: steps.log)" >"$WORK/runs/$p/vm.rc"; done
        return 0
    fi
    log "vm: after $(($(date +%s) - START_S)) s, ${#order[@]} programs in $n guests of $VM_CPUS vCPUs ($ACCEL), $(time_left) s left"
    for ((i = 0; i < n; i++)); do
        local mine=()
        read -r -a mine <<<"${guests[$i]}"
        log "vm $i: ${#mine[@]} programs, ~$(vm_expected_sum "${guests[$i]}") s of them expected"
        (vm_guest "$i" "${mine[@]}") &
    done
    wait
    : >"$WORK/vm/ended"
    log "vm: every guest ended after $(($(date +%s) - START_S)) s"
}
