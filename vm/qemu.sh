# shellcheck shell=bash
# shellcheck disable=SC2034 # QEMU_RC, VM_WALL_TOTAL, RUN_RC... are read by the sourcing scripts
# Booting vm/build-guest.sh's test guest on a GPU machine, shared by vm/gpu-vm.sh (the driver-API
# programs) and gpu/apps.sh's vm mode (the corpus): QEMU from the carry, the ivshmem device on the
# cuda-server's region, the boot itself and reading one program's results off the serial console.
# Sourced after gpu/lib.sh (log, now_s, elapsed_s, BUILD_DIR, OUT, REGION_PATH, REGION_SIZE,
# IVCUDA_MODE, DOORBELL_SOCKET, DOORBELL_VECTORS).
#
# Settings: IVCUDA_VM_CARRY [.vmcarry], VM_MEMORY_MB [2048], VM_CPUS [4]; ACCEL (kvm or tcg) is the
# caller's.

CARRY=${IVCUDA_VM_CARRY:-$REPO_ROOT/.vmcarry}
VM_MEMORY_MB=${VM_MEMORY_MB:-2048}
VM_CPUS=${VM_CPUS:-4}
QEMU=
QEMU_ENV=()
QEMU_ARGS=()

# QEMU from the carry (unpacked, its own libraries first, its firmware through -L), else PATH.
setup_qemu() {
    if [ -f "$CARRY/qemu.tar.xz" ]; then
        mkdir -p "$BUILD_DIR/qemu"
        # tar needs the xz program; Python's lzma module does without it
        if command -v xz >/dev/null 2>&1; then
            timeout 120 tar -xJf "$CARRY/qemu.tar.xz" -C "$BUILD_DIR/qemu"
        else
            timeout 120 python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
                "$CARRY/qemu.tar.xz" "$BUILD_DIR/qemu"
        fi || { log "unpacking $CARRY/qemu.tar.xz failed"; return 1; }
        QEMU=$BUILD_DIR/qemu/bin/qemu-system-x86_64
        QEMU_ENV=(env "LD_LIBRARY_PATH=$BUILD_DIR/qemu/lib" "QEMU_MODULE_DIR=$BUILD_DIR/qemu/modules")
        QEMU_ARGS=(-L "$BUILD_DIR/qemu/share")
        local missing
        missing=$("${QEMU_ENV[@]}" ldd "$QEMU" | awk '/not found/ { print $1 }' | tr '\n' ' ')
        [ -z "$missing" ] || { log "carried QEMU: libraries not found: $missing"; return 1; }
        "${QEMU_ENV[@]}" ldd "$QEMU" >"$OUT/logs/qemu-ldd.log" 2>&1
    elif command -v qemu-system-x86_64 >/dev/null 2>&1; then
        QEMU=$(command -v qemu-system-x86_64)
        QEMU_ENV=(env)
    else
        log "no QEMU: neither $CARRY/qemu.tar.xz (vm/prepare-gpu-carry.sh) nor qemu-system-x86_64 on PATH"
        return 1
    fi
    log "qemu: $QEMU ($("${QEMU_ENV[@]}" "$QEMU" -version | head -1))"
}

qemu_version() { [ -n "$QEMU" ] && "${QEMU_ENV[@]}" "$QEMU" -version | head -1 | sed 's/^QEMU emulator version //'; }

# boot_vm <limit s> <guest image dir> <initrd> <console file> [kernel arguments...]: boots the guest
# with the server's region as its ivshmem device (plain: the region file; doorbell: the server's
# socket, q35 with a virtual IOMMU) and waits for it to power off, at most <limit> seconds. Sets
# QEMU_RC, VM_WALL_TOTAL and VM_WHAT (the device, in words); QEMU's own output goes to
# $OUT/logs/qemu.log.
boot_vm() {
    local limit=$1 image=$2 initrd=$3 console=$4 cpu=host machine t0
    shift 4
    local append="console=ttyS0 panic=-1 quiet $*" device
    [ "$ACCEL" = tcg ] && cpu=max
    if [ "$IVCUDA_MODE" = doorbell ]; then
        # interrupt remapping, or vfio_iommu_type1 refuses MSI-X; under KVM it needs QEMU's own I/O APIC
        machine=q35
        [ "$ACCEL" = kvm ] && machine=q35,kernel-irqchip=split
        device=(-machine "$machine" -device intel-iommu,intremap=on
                -chardev "socket,path=$DOORBELL_SOCKET,id=ivcuda"
                -device "ivshmem-doorbell,chardev=ivcuda,vectors=$DOORBELL_VECTORS")
        append="$append intel_iommu=on no_timer_check ivcuda.irqd"
        VM_WHAT="ivshmem-doorbell from the server's socket, vIOMMU"
    else
        device=(-object "memory-backend-file,id=ivcuda,mem-path=$REGION_PATH,size=$REGION_SIZE,share=on"
                -device ivshmem-plain,memdev=ivcuda)
        VM_WHAT="ivshmem-plain on $REGION_PATH"
    fi
    log "vm: booting ($ACCEL, $VM_CPUS cpus, $VM_MEMORY_MB MiB, $VM_WHAT, initrd $(du -h "$initrd" | cut -f1)), at most ${limit}s"
    t0=$(now_s)
    timeout -k 10 "$limit" "${QEMU_ENV[@]}" "$QEMU" "${QEMU_ARGS[@]}" -accel "$ACCEL" -cpu "$cpu" \
        -smp "$VM_CPUS" -m "$VM_MEMORY_MB" -nodefaults -no-user-config -display none -no-reboot \
        -serial "file:$console" -kernel "$image/vmlinuz" -initrd "$initrd" \
        -append "$append" "${device[@]}" >"$OUT/logs/qemu.log" 2>&1
    QEMU_RC=$?
    VM_WALL_TOTAL=$(elapsed_s "$t0" "$(now_s)")
    log "vm: QEMU exited with status $QEMU_RC after ${VM_WALL_TOTAL}s"
}

# extract_from_console <console file> <name> <prefix>: the guest's stdout of one program (between
# its BEGIN and END lines, build-guest.sh's console protocol) into <prefix>.out, its stderr into
# <prefix>.err; sets RUN_RC (a number, or why there is none), RUN_WALL (guest-side seconds) and
# RUN_BEGUN (1 when its BEGIN line is there).
extract_from_console() {
    local console=$1 p=$2 prefix=$3 clean=$1.clean
    tr -d '\r' <"$console" >"$clean"
    awk -v p="$p" '$0 == "IVCUDA-TEST-BEGIN " p { on = 1; next } index($0, "IVCUDA-TEST-END " p " rc=") == 1 { on = 0 } on' \
        "$clean" >"$prefix.out"
    sed -n "s/^IVCUDA-STDERR $p: //p" "$clean" >"$prefix.err"
    RUN_RC=$(sed -n "s/^IVCUDA-TEST-END $p rc=\([0-9]*\)$/\1/p" "$clean" | tail -1)
    RUN_WALL=$(sed -n "s/^IVCUDA-TEST-TIME $p seconds=//p" "$clean" | tail -1)
    RUN_BEGUN=0
    grep -qxF "IVCUDA-TEST-BEGIN $p" "$clean" && RUN_BEGUN=1
    [ -n "$RUN_RC" ] || { RUN_RC="not run (no END line on the console)"; RUN_WALL="-"; }
}
