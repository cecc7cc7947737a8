#!/usr/bin/env bash
# ivcuda demo: builds everything, then runs one tagged domain through its life on the local
# libvirt + QEMU. The guest is a small Debian VM (vm/build-guest.sh) whose probe program calls
# cuDriverGetVersion and cuInit through our libcuda.so.1, which finds the ivshmem device by PCI
# scan and talks to the domain's cuda-server. On a host with an NVIDIA GPU cuInit succeeds and the
# probe counts the device. On a host without one the start is refused first (the message an admin gets:
# no usable GPU), then the demo runs the server's host-memory test backend, which serves the transport
# and no GPU, to show the rest of the domain's life.
#
# Run as root on Debian 12 with Java 17, Maven and gcc:   scripts/demo.sh
#
# What it changes on this host, and how it leaves it:
#   - installs missing packages with apt-get (libvirt-daemon-system, libvirt-clients,
#     qemu-system-x86, cpio): these stay installed;
#   - starts virtlogd and libvirtd if they are not running, and stops them at the end;
#   - installs the hook /etc/libvirt/hooks/qemu.d/50-ivcuda (pointing at this build) only if none
#     exists, and removes it at the end; libvirtd reads hooks when it starts, so a libvirtd that
#     was already running is restarted after installing it and again after removing it (running
#     domains are not affected by a libvirtd restart);
#   - writes /etc/ivcuda/ivcuda.properties only if none exists, and removes it at the end;
#   - defines, starts and undefines the domain "ivcuda-demo"; its console goes to
#     /var/log/libvirt/qemu/ivcuda-demo-console.log, removed at the end with libvirt's log of the domain;
#   - the directories it had to create for these (/etc/ivcuda, /etc/libvirt/hooks, .../qemu.d,
#     /run/ivcuda) are removed at the end: the machine is left as the demo found it.
# Guest images are cached in ${IVCUDA_VM_CACHE:-/var/cache/ivcuda-vm} (Debian packages).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
NAME=ivcuda-demo
URI=qemu:///system
HOOK=/etc/libvirt/hooks/qemu.d/50-ivcuda
CONFIG=/etc/ivcuda/ivcuda.properties
CONSOLE=/var/log/libvirt/qemu/$NAME-console.log
GUEST_TIMEOUT_S=${GUEST_TIMEOUT_S:-180}

say() { printf '\n== %s\n' "$*"; }
virsh_() { virsh -q -c "$URI" "$@"; }

[ "$(id -u)" = 0 ] || { echo "$0: run as root (it manages libvirt domains and the hook)" >&2; exit 2; }
if virsh -c "$URI" domuuid "$NAME" >/dev/null 2>&1; then
    echo "$0: a domain named $NAME exists already; remove it first (virsh undefine $NAME)" >&2
    exit 2
fi

work=$(mktemp -d /tmp/ivcuda-demo.XXXXXX)
chmod 0755 "$work" # QEMU (user libvirt-qemu) reads the kernel and initramfs from here
started_virtlogd=0 started_libvirtd=0 restarted_libvirtd=0 installed_hook=0 wrote_config=0 defined=0
# directories that are not there now and that this run may create: removed at the end if it did
created_dirs=()
for dir in /run/ivcuda /etc/libvirt/hooks/qemu.d /etc/libvirt/hooks /etc/ivcuda; do
    [ -e "$dir" ] || created_dirs+=("$dir")
done
libvirt_log=/var/log/libvirt/qemu/$NAME.log
had_libvirt_log=0
[ -e "$libvirt_log" ] && had_libvirt_log=1

systemd() { [ -d /run/systemd/system ]; }
daemon_running() { pgrep -x "$1" >/dev/null; }
start_daemon() {
    if systemd; then systemctl start "$1"; else "$1" -d; fi
}
stop_daemon() {
    if systemd; then
        systemctl stop "$1"
    else
        local pid
        pid=$(cat "/run/$1.pid" 2>/dev/null || pgrep -x -o "$1")
        [ -n "$pid" ] && kill "$pid"
        for _ in $(seq 50); do daemon_running "$1" || break; sleep 0.2; done
    fi
}
wait_libvirtd() {
    for _ in $(seq 60); do virsh -c "$URI" version >/dev/null 2>&1 && return 0; sleep 1; done
    echo "$0: libvirtd does not answer at $URI" >&2
    return 1
}
restart_libvirtd() {
    if systemd; then systemctl restart libvirtd; else stop_daemon libvirtd; libvirtd -d; fi
    wait_libvirtd
}

cleanup() {
    local rc=$?
    set +e
    say "cleaning up"
    if [ "$defined" = 1 ]; then
        virsh -c "$URI" destroy "$NAME" >/dev/null 2>&1
        virsh -c "$URI" undefine "$NAME" >/dev/null 2>&1 && echo "undefined $NAME"
    fi
    rm -f "$CONSOLE"
    [ "$wrote_config" = 1 ] && rm -f "$CONFIG" && echo "removed $CONFIG"
    if [ "$installed_hook" = 1 ]; then
        rm -f "$HOOK" && echo "removed $HOOK"
        if [ "$restarted_libvirtd" = 1 ]; then restart_libvirtd && echo "restarted libvirtd (without the hook)"; fi
    fi
    [ "$started_libvirtd" = 1 ] && stop_daemon libvirtd && echo "stopped libvirtd"
    [ "$started_virtlogd" = 1 ] && stop_daemon virtlogd && echo "stopped virtlogd"
    [ "$had_libvirt_log" = 0 ] && rm -f "$libvirt_log"
    local dir
    for dir in "${created_dirs[@]}"; do
        # only empty ones: anything else there is not the demo's
        [ -d "$dir" ] && rmdir "$dir" 2>/dev/null && echo "removed $dir (created by this run)"
    done
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT

say "packages"
missing=()
for p in libvirt-daemon-system libvirt-clients qemu-system-x86 cpio; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing ${missing[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    echo "libvirt, QEMU and cpio are installed"
fi

say "build (mvn -B -q package -DskipTests), the guest image"
mvn -B -q package -DskipTests >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; echo "$0: the build failed" >&2; exit 1; }
gcc -O2 -Wall -o "$work/probe" vm/guest-probe.c -Lguest/target -lcuda
vm/build-guest.sh "$work/guest" guest/target "$work/probe"

say "libvirt"
if [ ! -e "$HOOK" ]; then
    mkdir -p "$(dirname "$HOOK")"
    cat >"$HOOK" <<HOOK_SCRIPT
#!/bin/sh
# Temporary install by scripts/demo.sh (removed when it ends): the hook of the build tree at $repo.
IVCUDA_HOME=$repo/libvirt-hook/target
export IVCUDA_HOME
exec $repo/libvirt-hook/src/main/sh/50-ivcuda "\$@"
HOOK_SCRIPT
    chmod 0755 "$HOOK"
    installed_hook=1
    echo "installed $HOOK (this build)"
else
    echo "using the installed hook $HOOK"
fi
if ! daemon_running virtlogd; then start_daemon virtlogd; started_virtlogd=1; echo "started virtlogd"; fi
if ! daemon_running libvirtd; then
    start_daemon libvirtd
    started_libvirtd=1
    echo "started libvirtd"
elif [ "$installed_hook" = 1 ]; then
    restart_libvirtd
    restarted_libvirtd=1
    echo "restarted libvirtd so that it sees the hook"
fi
wait_libvirtd

if [ ! -e "$CONFIG" ]; then
    mkdir -p "$(dirname "$CONFIG")" "$work/log"
    java=$(command -v java)
    cat >"$CONFIG" <<CONFIG_FILE
# Temporary host configuration of scripts/demo.sh (removed when it ends).
server.user=root
qemu.group=libvirt-qemu
server.launch=direct
server.command=$java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -jar $repo/cuda-server/target/cuda-server.jar
server.ready.timeout.ms=120000
log.dir=$work/log
CONFIG_FILE
    wrote_config=1
    echo "wrote $CONFIG (servers log to $work/log)"
else
    echo "using the host configuration $CONFIG"
fi
log_dir=$(sed -n 's/^log\.dir=//p' "$CONFIG" | tail -1)
log_dir=${log_dir:-/var/log/ivcuda}

say "define $NAME with the metadata element"
# KVM where it boots an ordinary kernel. A PVM host's /dev/kvm (module kvm_pvm: pagetable-based
# virtualization, found on cloud VMs without nested virtualization) runs only guest kernels built for
# PVM, and Debian's is not one: the guest hangs before its first console line. DEMO_VIRT_TYPE=kvm|qemu
# overrides the choice.
type=${DEMO_VIRT_TYPE:-}
if [ -z "$type" ]; then
    type=qemu
    if [ -d /sys/module/kvm_pvm ]; then
        echo "/dev/kvm here is PVM (kvm_pvm), which boots only PVM guest kernels: the guest runs under TCG (software)"
    elif [ -w /dev/kvm ]; then
        type=kvm
    fi
fi
cat >"$work/$NAME.xml" <<XML
<domain type='$type'>
  <name>$NAME</name>
  <memory unit='MiB'>256</memory>
  <vcpu>1</vcpu>
  <metadata>
    <ivcuda:gpu xmlns:ivcuda='https://ivcuda.dev/xmlns/domain/1' size='64M'/>
  </metadata>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>$work/guest/vmlinuz</kernel>
    <initrd>$work/guest/initramfs.cpio.gz</initrd>
    <cmdline>console=ttyS0 panic=-1 quiet</cmdline>
  </os>
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <serial type='file'><source path='$CONSOLE'/><target port='0'/></serial>
    <memballoon model='none'/>
  </devices>
</domain>
XML
sed -n '/<metadata>/,/<\/metadata>/p' "$work/$NAME.xml"
virsh_ define "$work/$NAME.xml"
defined=1
uuid=$(virsh_ domuuid "$NAME")

say "provision: ivshmem-provisioner provision $NAME"
java -jar ivshmem-provisioner/target/ivshmem-provisioner.jar provision "$NAME"
virsh_ dumpxml --inactive "$NAME" | sed -n '/<shmem/,/<\/shmem>/p'

say "start ($type): the hook starts the cuda-server, then QEMU starts"
rm -f "$CONSOLE"
if [ ! -e /dev/nvidiactl ] && [ "$wrote_config" = 1 ]; then
    echo "this host has no NVIDIA GPU: the start is refused, with this message:"
    if virsh -c "$URI" start "$NAME" 2>"$work/refused"; then
        echo "$0: the start of $NAME was not refused on a host without a GPU" >&2
        exit 1
    fi
    sed 's/^/    /' "$work/refused"
    echo "backend=host-memory" >>"$CONFIG"
    echo "for the rest of the demo the server uses its host-memory test backend (transport only, no GPU):"
fi
virsh_ start "$NAME"
echo "server: $(pgrep -a -f -- "--config /run/ivcuda/$uuid.properties" | head -1 | cut -c1-160)"
echo "region: $(ls -l "/dev/shm/ivcuda-$uuid")"

say "guest console (the probe's output)"
for _ in $(seq "$GUEST_TIMEOUT_S"); do
    grep -q IVCUDA-GUEST-DONE "$CONSOLE" 2>/dev/null && break
    sleep 1
done
tr -d '\r' <"$CONSOLE" | grep -E '^(IVCUDA-|ivshmem device|kernel |probe:|ivcuda:)' || true
grep -q IVCUDA-GUEST-DONE "$CONSOLE" || { echo "$0: the guest did not finish within ${GUEST_TIMEOUT_S}s" >&2; exit 1; }

say "the domain's cuda-server saw ($log_dir/server-$uuid.log)"
grep -E 'ready:|hello from|cuInit\(' "$log_dir/server-$uuid.log" | cut -c1-200 || true

say "the guest powered off; the hook stops the server"
for _ in $(seq 30); do
    virsh_ domstate "$NAME" | grep -q running || break
    sleep 1
done
virsh -c "$URI" destroy "$NAME" >/dev/null 2>&1 || true # only if it still runs
virsh_ domstate "$NAME"
for _ in $(seq 50); do
    pgrep -f -- "--config /run/ivcuda/$uuid.properties" >/dev/null || break
    sleep 0.2
done
virsh_ undefine "$NAME"
defined=0

say "nothing left"
left=0
for f in "/dev/shm/ivcuda-$uuid" "/run/ivcuda/ivcuda-$uuid.sock" "/run/ivcuda/$uuid.properties" "/run/ivcuda/$uuid.pid"; do
    if [ -e "$f" ]; then echo "LEFT: $f"; left=1; else echo "gone: $f"; fi
done
if pgrep -f -- "--config /run/ivcuda/$uuid.properties" >/dev/null; then echo "LEFT: the server"; left=1; else echo "gone: the server"; fi
virsh -c "$URI" domuuid "$NAME" >/dev/null 2>&1 && { echo "LEFT: the domain"; left=1; } || echo "gone: the domain"
[ "$left" = 0 ]
