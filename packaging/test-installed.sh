#!/bin/bash
# Tests the built packages on this machine (root, Debian 12, libvirtd + virtlogd running without
# systemd, as in .ci/run): installs ivcuda-host from packaging/out, restarts libvirtd so that it finds
# the package's hook, runs LifecycleIT against the installed files, purges the package and checks that
# nothing of ours is left; then the same for ivcuda-guest with ivcuda-guest-check (no device here).
# Expects no other ivcuda hook installed (.ci/run removes its build-tree hook first).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
export DEBIAN_FRONTEND=noninteractive
hook=/etc/libvirt/hooks/qemu.d/50-ivcuda

fail() { echo "FAIL: $*" >&2; exit 1; }

restart_libvirtd() {
    # libvirtd looks for hooks only when it starts; without systemd: stop it and start it again.
    # Running VMs stay up (it reconnects to them).
    local pid
    for pid in $(pgrep -x libvirtd || true); do
        kill "$pid"
        for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    done
    libvirtd -d
    for _ in $(seq 1 60); do
        virsh -c qemu:///system version >/dev/null 2>&1 && return 0
        sleep 1
    done
    fail "libvirtd did not come back"
}

[ ! -e "$hook" ] && [ ! -L "$hook" ] || fail "$hook is already there; remove it first (this test installs the package's)"
host_deb=$(ls packaging/out/ivcuda-host_*_all.deb)
guest_deb=$(ls packaging/out/ivcuda-guest_*.deb)

echo "== install $host_deb"
apt-get install -y -q --no-install-recommends "./$host_deb"
dpkg -L ivcuda-host > /tmp/ivcuda-host.files
[ "$(readlink -f "$hook")" = /usr/libexec/ivcuda/50-ivcuda ] || fail "the package's hook is not at $hook"
getent passwd ivcuda >/dev/null || fail "no user ivcuda"
[ -d /run/ivcuda ] || fail "no /run/ivcuda"
grep -q 'abstractions/libvirt-qemu.d/ivcuda' /etc/apparmor.d/local/abstractions/libvirt-qemu \
    || fail "the AppArmor include is missing"
/usr/bin/ivshmem-provisioner --help >/dev/null || fail "/usr/bin/ivshmem-provisioner --help"

echo "== upgrade path (the same package again: prerm upgrade, postinst configure OLD), admin edit kept"
echo "# admin edit kept across upgrades" >> /etc/ivcuda/ivcuda.properties
dpkg -i "$host_deb"
grep -q '^# admin edit kept across upgrades$' /etc/ivcuda/ivcuda.properties || fail "the upgrade lost the admin's edit"
[ "$(readlink -f "$hook")" = /usr/libexec/ivcuda/50-ivcuda ] || fail "the hook is gone after the upgrade"
[ "$(grep -c 'abstractions/libvirt-qemu.d/ivcuda' /etc/apparmor.d/local/abstractions/libvirt-qemu)" = 1 ] \
    || fail "the AppArmor include is not there exactly once after the upgrade"

echo "== libvirtd restart (finds the installed hook)"
restart_libvirtd

echo "== LifecycleIT against the installed files"
IVCUDA_IT_LIBVIRT=required mvn -B -q -pl ivshmem-provisioner -am verify -Divcuda.installed=true \
    -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false -Dit.test=LifecycleIT -Dfailsafe.failIfNoSpecifiedTests=false

echo "== purge ivcuda-host"
apt-get purge -y -q ivcuda-host
left=""
while read -r path; do
    # directories shared with other packages (/etc, /usr/bin, /lib -> usr/lib) stay; ours are checked below
    if { [ -L "$path" ] || [ -e "$path" ]; } && [ ! -d "$path" ]; then left="$left $path"; fi
done < /tmp/ivcuda-host.files
for path in /etc/ivcuda /run/ivcuda /var/log/ivcuda /var/lib/ivcuda /usr/share/ivcuda /usr/libexec/ivcuda \
            /usr/share/doc/ivcuda /usr/share/doc/ivcuda-host "$hook" \
            /etc/systemd/system/multi-user.target.wants/ivcuda-provisioner.service; do
    if [ -e "$path" ] || [ -L "$path" ]; then left="$left $path"; fi
done
getent passwd ivcuda >/dev/null && left="$left user:ivcuda"
getent group ivcuda >/dev/null && left="$left group:ivcuda"
grep -qs 'ivcuda' /etc/apparmor.d/local/abstractions/libvirt-qemu && left="$left apparmor-include"
# VM regions are ivcuda-<domain uuid> (other tests on a shared machine use other ivcuda-* names)
regions='/dev/shm/ivcuda-????????-????-????-????-????????????'
compgen -G "$regions" >/dev/null && left="$left $(echo $regions)"
pgrep -f '/usr/share/ivcuda/' >/dev/null && left="$left processes:$(pgrep -f '/usr/share/ivcuda/' | tr '\n' ' ')"
[ -z "$left" ] || fail "left after purge:$left"
echo "nothing of ivcuda-host left"

echo "== install $guest_deb"
apt-get install -y -q --no-install-recommends "./$guest_deb"
dpkg -L ivcuda-guest > /tmp/ivcuda-guest.files
ldconfig -p | grep -q '/usr/lib/ivcuda/libcuda.so.1' || fail "the loader does not find /usr/lib/ivcuda/libcuda.so.1"
getent group ivcuda >/dev/null || fail "no group ivcuda"
set +e
output=$(ivcuda-guest-check 2>&1)
status=$?
set -e
echo "$output"
[ "$status" = 1 ] || fail "ivcuda-guest-check without a device: exit $status, expected 1"
grep -q 'no ivshmem device found' <<<"$output" || fail "ivcuda-guest-check does not say that no device is found"
[ -f /lib/systemd/system/ivcuda-guest-irqd.service ] || [ -f /usr/lib/systemd/system/ivcuda-guest-irqd.service ] \
    || fail "no ivcuda-guest-irqd.service"
if [ -d /run/systemd/system ] && systemctl is-enabled --quiet ivcuda-guest-irqd.service 2>/dev/null; then
    fail "ivcuda-guest-irqd.service is enabled by installation (it needs an admin's vfio choice)"
fi
set +e
output=$(ivcuda-guest-irqd --socket /tmp/ivcuda-irq-test.sock 2>&1)
status=$?
set -e
echo "$output"
[ "$status" != 0 ] || fail "ivcuda-guest-irqd without a device: exit 0"
grep -q 'no ivshmem device' <<<"$output" || fail "ivcuda-guest-irqd does not say that no device is found"
[ ! -e /tmp/ivcuda-irq-test.sock ] || fail "ivcuda-guest-irqd left its socket behind"

echo "== purge ivcuda-guest"
apt-get purge -y -q ivcuda-guest
left=""
while read -r path; do
    if { [ -L "$path" ] || [ -e "$path" ]; } && [ ! -d "$path" ]; then left="$left $path"; fi
done < /tmp/ivcuda-guest.files
[ -e /usr/lib/ivcuda ] && left="$left /usr/lib/ivcuda"
getent group ivcuda >/dev/null && left="$left group:ivcuda"
ldconfig -p | grep -q '/usr/lib/ivcuda/' && left="$left ld.so.cache-entry"
[ -z "$left" ] || fail "left after purge:$left"
echo "nothing of ivcuda-guest left"
