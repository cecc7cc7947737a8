#!/bin/sh
# ivcuda-guest-irqd's refusals, in a fake sysfs (IVCUDA_SYSFS_ROOT): each failure exits 1 (usage 64)
# with a message naming the thing at fault and what to do, and leaves nothing behind (no socket,
# no driver_override). The vfio path itself needs a VM with a vIOMMU: VmIT's doorbell guest.
# usage: tests/test_irqd.sh DAEMON
set -u
DAEMON=$1
SYSFS=$(mktemp -d /tmp/ivcuda-irqd-sysfs-XXXXXX)
SOCKET_DIR=$SYSFS/run/ivcuda
trap 'rm -rf "$SYSFS"' EXIT
passed=0
failed=0
# expect STATUS TEXT ARGS...: the daemon exits with STATUS and its stderr contains TEXT
expect() {
    status=$1
    text=$2
    shift 2
    output=$(IVCUDA_SYSFS_ROOT=$SYSFS "$DAEMON" --socket "$SOCKET_DIR/irq.sock" "$@" 2>&1)
    rc=$?
    if [ "$rc" = "$status" ] && case "$output" in *"$text"*) true ;; *) false ;; esac && [ ! -e "$SOCKET_DIR" ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAILED: $* -> rc $rc (expected $status, \"$text\"): $output"
    fi
}
dev=$SYSFS/bus/pci/devices/0000:00:05.0
mkdir -p "$dev" "$SYSFS/bus/pci/devices/0000:00:02.0" "$SYSFS/bus/pci/drivers"

expect 1 "no ivshmem device 1af4:1110 with an ivcuda region under $SYSFS/bus/pci/devices"
expect 1 "--device 0000:00:09.0: no such PCI device" --device 0000:00:09.0
echo 0x8086 >"$SYSFS/bus/pci/devices/0000:00:02.0/vendor"
echo 0x100e >"$SYSFS/bus/pci/devices/0000:00:02.0/device"
expect 1 "--device 0000:00:02.0 is 8086:100e, not an ivshmem device (1af4:1110)" --device 0000:00:02.0
expect 1 "not a PCI address" --device ../../x
echo 0x1af4 >"$dev/vendor"
echo 0x1110 >"$dev/device"
expect 1 "0000:00:05.0 is bound to no driver, not vfio-pci: run with --bind" --device 0000:00:05.0
mkdir -p "$SYSFS/bus/pci/drivers/e1000"
ln -s ../../../../bus/pci/drivers/e1000 "$dev/driver"
expect 1 "0000:00:05.0 is bound to e1000, not vfio-pci" --device 0000:00:05.0
: >"$dev/driver_override"
expect 1 "the vfio-pci driver is not loaded ($SYSFS/bus/pci/drivers/vfio-pci is missing): modprobe vfio-pci" --device 0000:00:05.0 --bind
[ ! -s "$dev/driver_override" ] || { failed=$((failed + 1)); echo "FAILED: driver_override written without vfio-pci"; }
# vfio-pci loaded, but the (fake) kernel binds nothing: a device without an IOMMU group
mkdir -p "$SYSFS/bus/pci/drivers/vfio-pci"
: >"$SYSFS/bus/pci/drivers_probe"
: >"$SYSFS/bus/pci/drivers/e1000/unbind"
expect 1 "vfio-pci did not take 0000:00:05.0: the device has no IOMMU group" --device 0000:00:05.0 --bind
[ "$(cat "$SYSFS/bus/pci/drivers/e1000/unbind")" = 0000:00:05.0 ] || { failed=$((failed + 1)); echo "FAILED: --bind did not unbind from e1000"; }
[ "$(cat "$SYSFS/bus/pci/drivers_probe")" = 0000:00:05.0 ] || { failed=$((failed + 1)); echo "FAILED: --bind did not probe"; }
[ "$(head -c 1 "$dev/driver_override" | od -An -c | tr -d ' ')" = '\n' ] || { failed=$((failed + 1)); echo "FAILED: driver_override left at vfio-pci"; }
mkdir -p "$SYSFS/kernel/iommu_groups/7"
ln -s ../../../../kernel/iommu_groups/7 "$dev/iommu_group"
expect 1 "vfio-pci did not take 0000:00:05.0 (its driver is now \"e1000\")" --device 0000:00:05.0 --bind
expect 64 "unrecognized option '--frobnicate'" --frobnicate
expect 64 "unexpected argument extra" extra
expect 64 "--exit-with-parent=x1: not a process id" --exit-with-parent=x1

# --exit-with-parent: a daemon whose starter is SIGKILLed gets SIGTERM from the kernel and stops
# cleanly (socket removed); without the option it stays. IVCUDA_IRQD_UNWIRED: no vfio needed.
# gone PID: true once PID no longer runs (5 s at most)
gone() {
    i=0
    while kill -0 "$1" 2>/dev/null; do
        i=$((i + 1))
        [ "$i" -lt 100 ] || return 1
        sleep 0.05
    done
}
for mode in --exit-with-parent --debug; do
    # the starter: a shell that starts the daemon, writes its pid, then sleeps
    rm -f "$SYSFS/daemon.pid" "$SYSFS/daemon.log"
    IVCUDA_IRQD_UNWIRED=4 sh -c '"$0" --socket "$1/parent/irq.sock" "$2" >"$1/daemon.log" 2>&1 & echo $! >"$1/daemon.pid"; exec sleep 60' \
        "$DAEMON" "$SYSFS" "$mode" </dev/null >/dev/null 2>&1 &
    shell=$!
    i=0
    while { [ ! -S "$SYSFS/parent/irq.sock" ] || [ ! -s "$SYSFS/daemon.pid" ]; } && [ "$i" -lt 100 ]; do i=$((i + 1)); sleep 0.05; done
    daemon=$(cat "$SYSFS/daemon.pid" 2>/dev/null)
    if [ ! -S "$SYSFS/parent/irq.sock" ] || [ -z "$daemon" ]; then
        failed=$((failed + 1)); echo "FAILED: $mode: the unwired daemon did not listen: $(cat "$SYSFS/daemon.log")"
        kill -9 "$shell" 2>/dev/null; continue
    fi
    kill -9 "$shell"
    wait "$shell" 2>/dev/null
    if [ "$mode" = --exit-with-parent ]; then
        if gone "$daemon" && [ ! -e "$SYSFS/parent/irq.sock" ] && grep -q "signal 15: stopping" "$SYSFS/daemon.log"; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1)); echo "FAILED: --exit-with-parent: the daemon outlived its SIGKILLed parent: $(cat "$SYSFS/daemon.log")"
        fi
    else
        sleep 0.3
        if kill -0 "$daemon" 2>/dev/null; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1)); echo "FAILED: without --exit-with-parent the daemon stopped with its parent"
        fi
    fi
    kill "$daemon" 2>/dev/null
    gone "$daemon"
done
# a starter that is gone before the daemon asked the kernel (it names itself): the daemon does not stay either
IVCUDA_IRQD_UNWIRED=4 sh -c '"$0" --socket "$1/parent/irq.sock" --exit-with-parent=$$ >"$1/daemon.log" 2>&1 & echo $! >"$1/daemon.pid"' "$DAEMON" "$SYSFS"
daemon=$(cat "$SYSFS/daemon.pid")
if gone "$daemon" && [ ! -e "$SYSFS/parent/irq.sock" ]; then
    passed=$((passed + 1))
else
    failed=$((failed + 1)); echo "FAILED: --exit-with-parent: the daemon of an exited starter stays: $(cat "$SYSFS/daemon.log")"
    kill "$daemon" 2>/dev/null
fi
export IVCUDA_IRQD_UNWIRED=99
expect 1 "IVCUDA_IRQD_UNWIRED=99: not a vector count 1..64"
unset IVCUDA_IRQD_UNWIRED
echo "test_irqd: $passed passed, $failed failed"
[ "$failed" = 0 ]
