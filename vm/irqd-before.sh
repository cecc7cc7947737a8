# shellcheck shell=sh
# shellcheck disable=SC2034 # irqd_pid, irqd_lines and irq_eof_pid are for vm/irqd-after.sh (sourced by the same /init)
# Sourced by the test guest's /init (vm/build-guest.sh --before) before the programs. Only when the
# kernel command line carries ivcuda.irqd (VmIT's doorbell domain, which has a virtual IOMMU):
# ivcuda-guest-irqd --bind takes the ivshmem device through vfio-pci; irq-socket-check checks what
# its socket hands a client (protocol §8.1) and that each vector, rung by the guest itself,
# arrives on its eventfd; a second one waits for the end of file that vm/irqd-after.sh's SIGTERM
# must cause; the programs run with IVCUDA_STATS=1 (the library's interrupt sleeps and wake-ups at
# exit) and IVCUDA_SPIN_US=20. Console lines:
#   IVCUDA-IRQD-FAILING: <a line of the stderr of a start that must fail (a socket in /proc)>
#   IVCUDA-IRQD-FAILED rc=<n> driver=<the device's driver after it: none, as before>
#   IVCUDA-IRQD: <a line of the daemon's stderr>
#   irq-socket-check: ok: <n> eventfds for <n> vectors, device <address>
#   irq-socket-check: ok: self-rings of <n> vectors (peer <id>) arrived on their eventfds
#   IVCUDA-INTERRUPTS-BEFORE-PROGRAMS <the vfio-msix interrupts counted so far: the self-rings>
if grep -qw ivcuda.irqd /proc/cmdline; then
    irq_device=
    for d in /sys/bus/pci/devices/*; do
        if [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x1110 ]; then irq_device=${d##*/}; fi
    done
    # a start that fails after --bind took the device gives it back: its exit status and the driver after it
    ivcuda-guest-irqd --bind --socket /proc/ivcuda/irq.sock 2>/tmp/irqd-failing.log
    irq_rc=$?
    sed 's/^/IVCUDA-IRQD-FAILING: /' /tmp/irqd-failing.log
    irq_driver=$(readlink "/sys/bus/pci/devices/$irq_device/driver")
    echo "IVCUDA-IRQD-FAILED rc=$irq_rc driver=${irq_driver##*/}"
    mkdir -p /run
    ivcuda-guest-irqd --bind --debug >/tmp/irqd.log 2>&1 &
    irqd_pid=$!
    i=0
    while [ ! -S /run/ivcuda/irq.sock ] && kill -0 "$irqd_pid" 2>/dev/null && [ $i -lt 300 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    irqd_lines=$(wc -l </tmp/irqd.log)
    sed 's/^/IVCUDA-IRQD: /' /tmp/irqd.log
    if [ -S /run/ivcuda/irq.sock ]; then
        irq-socket-check --self-ring /run/ivcuda/irq.sock "$irq_device"
        echo "IVCUDA-INTERRUPTS-BEFORE-PROGRAMS $(awk '/vfio-msix/ { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i } END { print s + 0 }' /proc/interrupts)"
        irq-socket-check --wait-eof /run/ivcuda/irq.sock "$irq_device" >/tmp/irq-eof.log 2>&1 &
        irq_eof_pid=$!
        # the library's count of interrupt sleeps at exit; sleep after 20 us of waiting (not the
        # default 2 ms), so that the probe's short calls exercise the interrupt path
        export IVCUDA_STATS=1 IVCUDA_SPIN_US=20
    else
        echo "IVCUDA-IRQD: no socket after 30 s; the kernel says:"
        dmesg | grep -i -e vfio -e dmar -e iommu -e remap | tail -20 | sed 's/^/IVCUDA-IRQD: dmesg: /'
    fi
fi
