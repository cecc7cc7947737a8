#!/usr/bin/env bash
# The README's demo leaves the machine as it found it (issue 14): what exists under the places the
# demo touches, the libvirt domains, our processes and the daemons it may start are listed before
# and after scripts/demo.sh, and must be the same. Run by .ci/run as root, libvirtd running or not.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Everything of the demo's reach; package caches and images (/var/cache/ivcuda-vm) are kept by
# design and left out, as are QEMU's and libvirt's own runtime files, which libvirtd rewrites.
snapshot() {
    {
        echo "## files"
        find /etc/ivcuda /etc/libvirt/hooks /run/ivcuda /var/log/ivcuda /var/lib/ivcuda \
            -xdev 2>/dev/null | sort
        # regions the hook names after a domain's UUID (tests running beside this one use other names)
        find /dev/shm -maxdepth 1 -regextype posix-extended \
            -regex '/dev/shm/ivcuda-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}' 2>/dev/null | sort
        find /var/log/libvirt/qemu -maxdepth 1 -name 'ivcuda-demo*' 2>/dev/null | sort
        echo "## domains"
        virsh -q -c qemu:///system list --all --name 2>/dev/null | sed '/^$/d' | sort
        echo "## processes"
        # servers the hook started (their configuration is the hook's /run/ivcuda/<uuid>.properties)
        pgrep -f -- '--config /run/ivcuda/' >/dev/null && echo "a cuda-server the hook started"
        pgrep -f -- 'qemu-system.*ivcuda-demo' >/dev/null && echo "the demo's QEMU"
        for d in libvirtd virtlogd; do pgrep -x "$d" >/dev/null && echo "$d running"; done
    } > "$1"
}

snapshot "$work/before"
if ! "$repo/scripts/demo.sh" > "$work/demo.log" 2>&1; then
    tail -40 "$work/demo.log"
    echo "FAIL scripts/demo.sh exited non-zero (its log's end above)"
    exit 1
fi
tail -12 "$work/demo.log"
snapshot "$work/after"
if ! diff -u "$work/before" "$work/after"; then
    echo "FAIL the demo left the machine other than it found it (- before, + after)"
    exit 1
fi
echo "ok   scripts/demo.sh exited 0 and left the machine as it found it ($(grep -c . "$work/before") lines compared)"
