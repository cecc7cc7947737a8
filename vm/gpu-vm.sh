#!/usr/bin/env bash
# The GPU validation inside a real VM, in one command: builds the kernels, the driver-API
# programs of gpu/ and the guest library, runs every program natively, then starts the
# cuda-server on a region file and boots the test guest (vm/build-guest.sh: Debian's kernel,
# static busybox, our libcuda.so.1, the programs and their kernels) under QEMU with KVM and an
# ivshmem-plain device backed by that region. Inside the guest the library finds the device by
# PCI scan (no IVCUDA_REGION), the programs run with the kernel directory as argument and report
# on the serial console; their stdout is compared with the native runs without `time:`/`info:`
# lines. Writes $OUT/gpu-vm-validation.md and logs under $OUT/logs. Exit 0 only if every program
# passed natively and in the VM with equal output.
#
#   vm/gpu-vm.sh          on the GPU machine (/dev/kvm, NVIDIA driver, CUDA toolkit, gcc)
#   vm/gpu-vm.sh --tcg    software emulation instead of KVM (checks the script anywhere; the
#                         programs then fail in the VM unless the host has a GPU, and slowly)
#   --doorbell            (with or without --tcg) the server in doorbell mode is the VM's ivshmem
#                         server (ivshmem-doorbell, 32 vectors); the VM is a q35 with a virtual
#                         IOMMU, where ivcuda-guest-irqd binds the device to vfio-pci and the
#                         programs sleep on their MSI-X vectors (vm/irqd-before.sh sets
#                         IVCUDA_STATS=1 IVCUDA_SPIN_US=20; the console shows the interrupt counts)
#
# QEMU: the carried one in ${IVCUDA_VM_CARRY:-.vmcarry}/qemu.tar.xz (vm/prepare-gpu-carry.sh makes
# it on a Debian 12 machine), else qemu-system-x86_64 on PATH. The guest's kernel and busybox:
# .vmcarry/guest-base (no package registry needed), else downloaded by vm/build-guest.sh.
# Settings: those of gpu/lib.sh (OUT, REGION_SIZE, ...), and TOTAL_BUDGET_S [540],
# VM_TIMEOUT_S [300], VM_MEMORY_MB [2048], VM_CPUS [4].
set -uo pipefail

ACCEL=kvm
DOORBELL=0
for arg in "$@"; do
    case "$arg" in
        --tcg) ACCEL=tcg ;;
        --doorbell) DOORBELL=1 ;;
        *) echo "usage: $0 [--tcg] [--doorbell]" >&2; exit 2 ;;
    esac
done
[ "$DOORBELL" = 1 ] && export IVCUDA_MODE=doorbell

# shellcheck source=gpu/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../gpu/lib.sh"
# shellcheck source=vm/qemu.sh
. "$REPO_ROOT/vm/qemu.sh"

START_S=$(date +%s)
DEADLINE_S=$((START_S + ${TOTAL_BUDGET_S:-540}))
NATIVE_TIMEOUT_S=${NATIVE_TIMEOUT_S:-60}
VM_TIMEOUT_S=${VM_TIMEOUT_S:-300}
PROGRAMS=("${GPU_PROGRAMS[@]}")
REPORT=$OUT/gpu-vm-validation.md
KERNELS=$BUILD_DIR/kernels
BIN=$BUILD_DIR/programs
GUEST_IMAGE=$BUILD_DIR/guest
CONSOLE=$OUT/logs/vm-console.log
PROBLEMS=()

trap 'stop_server' EXIT
trap 'log "interrupted"; exit 130' INT TERM

if [ "$ACCEL" = kvm ] && ! [ -w /dev/kvm ]; then
    log "no writable /dev/kvm: falling back to TCG (the results then say so)"
    ACCEL=tcg
fi
log "ivcuda GPU validation in a VM, accel=$ACCEL, OUT=$OUT, BUILD_DIR=$BUILD_DIR"
: >"$OUT/logs/ldd-native.log"
: >"$OUT/logs/ldd-ivcuda.log"

QEMU_OK=0
setup_qemu && QEMU_OK=1 || problem "QEMU not available"
build_kernels_and_programs
setup_java_and_guest || problem "guest library not available"

IMAGE_OK=0
if [ "$GUEST_OK" = 1 ]; then
    BINARIES=()
    for p in "${PROGRAMS[@]}"; do
        [ -x "$BIN/$p" ] && check_guest_is_loaded "$BIN/$p" && BINARIES+=("$BIN/$p")
    done
    [ -d "$CARRY/guest-base" ] && export IVCUDA_VM_BASE=$CARRY/guest-base
    IRQ_ARGS=()
    if [ "$DOORBELL" = 1 ]; then
        # the guest side of interrupts, as VmIT builds it: vfio's modules, the daemon, its checks
        gcc -O2 -Wall -Werror -o "$BUILD_DIR/irq-socket-check" "$REPO_ROOT/vm/irq-socket-check.c" ||
            problem "compiling vm/irq-socket-check.c failed"
        IRQ_ARGS=(--modules "vfio-pci vfio_iommu_type1" --files "$GUEST_LIB_DIR/ivcuda-guest-irqd=/usr/sbin/ivcuda-guest-irqd"
                  --files "$BUILD_DIR/irq-socket-check=/usr/bin/irq-socket-check"
                  --before "$REPO_ROOT/vm/irqd-before.sh" --after "$REPO_ROOT/vm/irqd-after.sh")
    fi
    if [ "${#BINARIES[@]}" -gt 0 ] && timeout 300 "$REPO_ROOT/vm/build-guest.sh" --args /kernels --files "$KERNELS=/kernels" \
        "${IRQ_ARGS[@]}" "$GUEST_IMAGE" "$GUEST_LIB_DIR" "${BINARIES[@]}" >"$OUT/logs/build-guest.log" 2>&1; then
        IMAGE_OK=1
        log "$(tail -1 "$OUT/logs/build-guest.log")"
    else
        problem "building the guest image failed (logs/build-guest.log)"
    fi
fi

declare -A NATIVE_RC NATIVE_WALL VM_RC VM_WALL EQUAL
for p in "${PROGRAMS[@]}"; do
    NATIVE_RC[$p]="skipped"; NATIVE_WALL[$p]="-"; VM_RC[$p]="skipped"; VM_WALL[$p]="-"; EQUAL[$p]="-"
done

run_programs_natively

VM_WALL_TOTAL="-"
if [ "$QEMU_OK" = 1 ] && [ "$IMAGE_OK" = 1 ] && [ "$JAVA_OK" = 1 ]; then
    if start_server $(($(time_left) + 30)); then
        boot_vm "$(bounded_timeout "$VM_TIMEOUT_S")" "$GUEST_IMAGE" "$GUEST_IMAGE/initramfs.cpio.gz" "$CONSOLE"
        qemu_rc=$QEMU_RC
        [ "$qemu_rc" = 0 ] || problem "QEMU exited with status $qemu_rc (logs/qemu.log: $(tail -1 "$OUT/logs/qemu.log"))"
        grep -q IVCUDA-GUEST-DONE "$CONSOLE" 2>/dev/null || problem "the guest did not finish (logs/vm-console.log)"
        grep -q "^ivshmem device at" <(tr -d '\r' <"$CONSOLE") || problem "the guest saw no ivshmem device"
        stop_server
        for p in "${PROGRAMS[@]}"; do
            [ -x "$BIN/$p" ] || continue
            extract_from_console "$CONSOLE" "$p" "$OUT/logs/$p.vm"
            VM_RC[$p]=$RUN_RC; VM_WALL[$p]=$RUN_WALL
            log "vm $p: rc=$RUN_RC wall=${RUN_WALL}s $(grep -m1 'interrupt waits' "$OUT/logs/$p.vm.err")"
        done
        if [ "$DOORBELL" = 1 ]; then
            grep -E '^IVCUDA-(IRQD|INTERRUPTS)|^irq-socket-check|vfio-msix' <(tr -d '\r' <"$CONSOLE") | head -20 >"$OUT/logs/vm-interrupts.log"
            log "vm: $(grep -c . "$OUT/logs/vm-interrupts.log") interrupt lines on the console (logs/vm-interrupts.log)"
            grep -q '^IVCUDA-IRQD: ivcuda-guest-irqd: device' "$OUT/logs/vm-interrupts.log" || problem "ivcuda-guest-irqd did not start in the guest"
        fi
        hellos=$(grep -c 'hello from library' "$OUT/logs/server.log")
        log "server: $hellos hello(s) from guest processes"
        [ "$hellos" -gt 0 ] || problem "the server saw no guest hello"
    else
        problem "server did not start (logs/server.log)"
    fi
fi

compare_with_native vm VM_RC "in the VM"

{
    report_head "ivcuda GPU validation inside a VM"
    echo "| command | \`vm/gpu-vm.sh${1:+ $1}\` |"
    echo "| VM | QEMU $(qemu_version), accel **$ACCEL**, $VM_CPUS vCPUs, $VM_MEMORY_MB MiB, guest kernel $(cat "${IVCUDA_VM_BASE:-/nonexistent}/kernel-package" 2>/dev/null || sed -n 's/^guest: .*vmlinuz (\(.*\)), .*/\1/p' "$OUT/logs/build-guest.log" 2>/dev/null) |"
    if [ "$DOORBELL" = 1 ]; then
        echo "| region | ivshmem-doorbell BAR2 (the server's region fd over its socket, $REGION_SIZE bytes, $DOORBELL_VECTORS vectors); q35 with a vIOMMU, ivcuda-guest-irqd in the guest, programs sleeping on MSI-X |"
    else
        echo "| region | ivshmem-plain BAR2 on $REGION_PATH, $REGION_SIZE bytes; found by the guest library's PCI scan |"
    fi
    echo "| VM wall s | $VM_WALL_TOTAL (boot, all programs, power-off) |"
    echo
    echo "Outputs are compared without their \`time:\` and \`info:\` lines. VM times are measured in the guest."
    echo
    echo "| program | native | in the VM | equal? | native wall s | VM wall s |"
    echo "|---|---|---|---|---|---|"
    for p in "${PROGRAMS[@]}"; do
        echo "| $p | $(verdict "${NATIVE_RC[$p]}" "$OUT/logs/$p.native") | $(verdict "${VM_RC[$p]}" "$OUT/logs/$p.vm") | ${EQUAL[$p]} | ${NATIVE_WALL[$p]} | ${VM_WALL[$p]} |"
    done
    echo
    result_lines
    echo
    echo "Logs: \`logs/<program>.{native,vm}.{out,err}\`, \`logs/vm-console.log\`, \`logs/qemu.log\`, \`logs/server.log\`, \`steps.log\`."
} >"$REPORT"
log "report: $REPORT"
cat "$REPORT" >&2
[ "${#PROBLEMS[@]}" = 0 ]
