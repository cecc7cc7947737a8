# shellcheck shell=sh
# shellcheck disable=SC2154 # irqd_pid, irqd_lines and irq_eof_pid come from vm/irqd-before.sh (sourced by the same /init)
# Sourced by the test guest's /init (vm/build-guest.sh --after) after the programs, where
# vm/irqd-before.sh started ivcuda-guest-irqd: prints the guest's vfio interrupt counts, stops the
# daemon with SIGTERM and checks that it left nothing behind. Console lines:
#   IVCUDA-INTERRUPTS <a /proc/interrupts line of vfio>
#   IVCUDA-IRQD-EXIT rc=<n>
#   irq-socket-check: ok: end of file, the daemon stopped
#   IVCUDA-IRQD-LEFT socket=<0|1> vfio-interrupts=<n>   (after the stop: both 0)
if [ -n "${irqd_pid:-}" ]; then
    grep vfio /proc/interrupts | sed 's/^/IVCUDA-INTERRUPTS /'
    kill -TERM "$irqd_pid"
    wait "$irqd_pid"
    echo "IVCUDA-IRQD-EXIT rc=$?"
    tail -n +$((irqd_lines + 1)) /tmp/irqd.log | sed 's/^/IVCUDA-IRQD: /'
    if [ -n "${irq_eof_pid:-}" ]; then
        wait "$irq_eof_pid"
        cat /tmp/irq-eof.log
    fi
    left=0
    [ -e /run/ivcuda/irq.sock ] && left=1
    echo "IVCUDA-IRQD-LEFT socket=$left vfio-interrupts=$(grep -c vfio /proc/interrupts)"
fi
