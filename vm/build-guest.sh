#!/usr/bin/env bash
# Builds a small guest for ivcuda tests from Debian's packages: Debian's kernel
# (linux-image-amd64) and an initramfs with static busybox, the ivcuda guest library,
# the given test programs and the shared libraries they need (copied from this host).
# No network inside the guest; /init runs every program in /tests and reports on the
# serial console (ttyS0), then powers off.
#
# usage: vm/build-guest.sh OUTDIR GUEST_LIB_DIR PROGRAM...
#   OUTDIR/vmlinuz, OUTDIR/initramfs.cpio.gz are written; GUEST_LIB_DIR holds libcuda.so.1.
# Console protocol (what tests grep for):
#   IVCUDA-GUEST-UP                 the init script started
#   IVCUDA-TEST-BEGIN <name>        before a program, its output follows
#   IVCUDA-TEST-END <name> rc=<n>   after it
#   IVCUDA-GUEST-DONE               all programs ran; power-off follows
# Downloads are cached in ${IVCUDA_VM_CACHE:-/var/cache/ivcuda-vm}.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 OUTDIR GUEST_LIB_DIR PROGRAM..." >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd)
libdir=$2
shift 2
[ -e "$libdir/libcuda.so.1" ] || { echo "$0: no libcuda.so.1 in $libdir (build the guest library first)" >&2; exit 2; }

cache=${IVCUDA_VM_CACHE:-/var/cache/ivcuda-vm}
mkdir -p "$cache"
fetch() { # package name → path of its .deb in the cache
    local deb
    deb=$(ls "$cache"/"$1"_*.deb 2>/dev/null | head -1 || true)
    if [ -z "$deb" ]; then
        (cd "$cache" && apt-get download -q "$1" >/dev/null 2>&1) || {
            echo "$0: apt-get download $1 failed (run 'apt-get update' first?)" >&2; exit 1; }
        deb=$(ls "$cache"/"$1"_*.deb | head -1)
    fi
    echo "$deb"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Kernel: the metapackage names the versioned image package.
meta=$(fetch linux-image-amd64)
image_pkg=$(dpkg-deb -f "$meta" Depends | tr ',' '\n' | grep -o 'linux-image-[0-9][^ ]*' | head -1)
dpkg-deb -x "$(fetch "$image_pkg")" "$work/kernel"
cp "$(ls "$work"/kernel/boot/vmlinuz-* | head -1)" "$out/vmlinuz"

# Root filesystem.
root=$work/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,tests,usr/lib/ivcuda,etc}
dpkg-deb -x "$(fetch busybox-static)" "$work/busybox"
cp "$work/busybox/bin/busybox" "$root/bin/busybox"
cp -L "$libdir/libcuda.so.1" "$root/usr/lib/ivcuda/libcuda.so.1"

copy_with_libs() { # file, destination dir in root
    cp -L "$1" "$root/$2/"
    { ldd "$1" 2>/dev/null || true; } | { grep -o '/[^ ]*' || true; } | while read -r lib; do
        case "$lib" in */libcuda.so*) continue ;; esac
        mkdir -p "$root$(dirname "$lib")"
        [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
    done
}
for program in "$@"; do
    copy_with_libs "$program" tests
done
# The guest library's own needs (libc, libpthread, the loader).
copy_with_libs "$libdir/libcuda.so.1" usr/lib/ivcuda

cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
echo IVCUDA-GUEST-UP
# No driver binds the ivshmem device: turn its memory decoding on for resource2 mmap.
for d in /sys/bus/pci/devices/*; do
    if [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x1110 ]; then
        echo 1 > "$d/enable" 2>/dev/null
        echo "ivshmem device at ${d##*/}"
    fi
done
export LD_LIBRARY_PATH=/usr/lib/ivcuda
for t in /tests/*; do
    name=${t##*/}
    echo "IVCUDA-TEST-BEGIN $name"
    "$t"
    echo "IVCUDA-TEST-END $name rc=$?"
done
echo IVCUDA-GUEST-DONE
poweroff -f
INIT
chmod +x "$root/init"

(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out/initramfs.cpio.gz"
echo "guest: $out/vmlinuz ($image_pkg), $out/initramfs.cpio.gz ($(du -h "$out/initramfs.cpio.gz" | cut -f1))"
