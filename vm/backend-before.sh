# --before script of the back-end test guest (vm/build-backend-guest.sh), sourced by /init
# (busybox sh) after the ivshmem devices are enabled: starts the back-end agent in the
# background and returns, so that /init goes on to vm/backend-hold.sh. The agent's output goes
# to the serial console line by line, prefixed, where the host-side test reads it.
# shellcheck shell=sh
# shellcheck source=/dev/null
. /etc/ivcuda-backend.env
# JNA unpacks its native library under the home directory; the JVM wants a writable temp dir
export HOME=/root
mkdir -p /root /run/ivcuda /var/log/ivcuda
# the JVM's logging asks for the host's name and address: a name of our own, resolved from
# /etc/hosts (no DNS in the guest; otherwise a stack trace and seconds of waiting)
hostname ivcuda-backend
echo "127.0.0.1 localhost ivcuda-backend" >/etc/hosts
echo "hosts: files" >/etc/nsswitch.conf
# the agent's default server command is its own JVM with cuda-server.jar: JAVA_TOOL_OPTIONS
# gives the agent and every server the same small-heap options
JAVA_TOOL_OPTIONS=$IVCUDA_JAVA_OPTS
export JAVA_TOOL_OPTIONS
echo "ivcuda back-end: $(sed -n 's/^MemTotal: *//p' /proc/meminfo) memory," \
    "$(cat /sys/bus/pci/devices/*/device | grep -c 0x1110) ivshmem device(s)"
(
    # shellcheck disable=SC2086 # the options and arguments are word lists on purpose
    "$IVCUDA_JAVA" -jar "$IVCUDA_AGENT_JAR" $IVCUDA_AGENT_ARGS 2>&1 &
    echo "$!" >/run/ivcuda/agent.pid
    echo "IVCUDA-AGENT-STARTED pid=$!" >/dev/console
    wait "$!"
    echo "IVCUDA-AGENT-EXITED rc=$?" >/dev/console
) | while IFS= read -r line; do echo "IVCUDA-AGENT: $line"; done &
