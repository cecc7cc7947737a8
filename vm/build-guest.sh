#!/usr/bin/env bash
# Builds a small guest for ivcuda tests from Debian's packages: Debian's kernel
# (linux-image-amd64) and an initramfs with static busybox, the ivcuda guest library,
# the given test programs and the shared libraries they need (copied from this host).
# No network inside the guest; /init runs every program in /tests and reports on the
# serial console (ttyS0), then powers off.
#
# usage: vm/build-guest.sh [--args ARGS] [--files SRC=DEST]... OUTDIR GUEST_LIB_DIR PROGRAM...
#        vm/build-guest.sh --base-only OUTDIR
#   OUTDIR/vmlinuz, OUTDIR/initramfs.cpio.gz are written; GUEST_LIB_DIR holds libcuda.so.1.
#   --args ARGS       every program runs as "PROGRAM ARGS" (ARGS word-split in the guest)
#   --files SRC=DEST  copies the file or directory SRC to DEST inside the guest (e.g. kernels)
#   --base-only       writes only OUTDIR/vmlinuz and OUTDIR/busybox: what a host without a
#                     package registry needs (then IVCUDA_VM_BASE=OUTDIR there)
# Console protocol (what tests grep for; lines may end in \r on a serial console):
#   IVCUDA-GUEST-UP                 the init script started
#   IVCUDA-TEST-BEGIN <name>        before a program; its stdout follows
#   IVCUDA-TEST-END <name> rc=<n>   after it
#   IVCUDA-TEST-TIME <name> seconds=<s>  its wall time in the guest
#   IVCUDA-STDERR <name>: <line>    its stderr, after the END line
#   IVCUDA-GUEST-DONE               all programs ran; power-off follows
# Downloads are cached in ${IVCUDA_VM_CACHE:-/var/cache/ivcuda-vm}. With IVCUDA_VM_BASE=DIR
# (holding vmlinuz and busybox from --base-only) nothing is downloaded and dpkg is not needed.
set -euo pipefail
usage() {
    echo "usage: $0 [--args ARGS] [--files SRC=DEST]... OUTDIR GUEST_LIB_DIR PROGRAM..." >&2
    echo "       $0 --base-only OUTDIR" >&2
    exit 2
}
program_args=
files=()
base_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --args) [ $# -ge 2 ] || usage; program_args=$2; shift 2 ;;
        --files) [ $# -ge 2 ] && [[ "$2" == *=/* ]] || usage; files+=("$2"); shift 2 ;;
        --base-only) base_only=1; shift ;;
        -*) usage ;;
        *) break ;;
    esac
done
if [ "$base_only" = 1 ]; then [ $# -eq 1 ] || usage; else [ $# -ge 3 ] || usage; fi
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ---- the base: Debian's kernel and static busybox -------------------------------------------
if [ -n "${IVCUDA_VM_BASE:-}" ]; then
    for f in vmlinuz busybox; do
        [ -f "$IVCUDA_VM_BASE/$f" ] || { echo "$0: IVCUDA_VM_BASE=$IVCUDA_VM_BASE has no $f (vm/build-guest.sh --base-only makes it)" >&2; exit 2; }
    done
    kernel=$IVCUDA_VM_BASE/vmlinuz
    busybox=$IVCUDA_VM_BASE/busybox
    kernel_from=$(cat "$IVCUDA_VM_BASE/kernel-package" 2>/dev/null || echo "$IVCUDA_VM_BASE")
else
    # shellcheck source=vm/debs.sh
    . "$(dirname "${BASH_SOURCE[0]}")/debs.sh"
    fetch() { fetch_deb "$1" || exit 1; }
    # The metapackage names the versioned image package.
    meta=$(fetch linux-image-amd64)
    kernel_from=$(dpkg-deb -f "$meta" Depends | tr ',' '\n' | grep -o 'linux-image-[0-9][^ ]*' | head -1)
    dpkg-deb --fsys-tarfile "$(fetch "$kernel_from")" | tar -x -C "$work" --wildcards './boot/vmlinuz-*'
    kernel=$(ls "$work"/boot/vmlinuz-* | head -1)
    dpkg-deb -x "$(fetch busybox-static)" "$work/busybox"
    busybox=$work/busybox/bin/busybox
fi
cp "$kernel" "$out/vmlinuz"
if [ "$base_only" = 1 ]; then
    cp "$busybox" "$out/busybox"
    echo "$kernel_from" >"$out/kernel-package"
    echo "guest base: $out/vmlinuz ($kernel_from), $out/busybox"
    exit 0
fi

libdir=$1
shift
[ -e "$libdir/libcuda.so.1" ] || { echo "$0: no libcuda.so.1 in $libdir (build the guest library first)" >&2; exit 2; }

# ---- the root filesystem --------------------------------------------------------------------
root=$work/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,tests,usr/lib/ivcuda,etc}
cp "$busybox" "$root/bin/busybox"
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
for spec in "${files[@]}"; do
    src=${spec%%=*}
    dest=${spec#*=}
    mkdir -p "$root$(dirname "$dest")"
    cp -rL "$src" "$root$dest"
done
printf '%s\n' "$program_args" >"$root/etc/ivcuda-test-args"

cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
echo IVCUDA-GUEST-UP
echo "kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) cpu(s)"
# No driver binds the ivshmem device: turn its memory decoding on for resource2 mmap.
for d in /sys/bus/pci/devices/*; do
    if [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x1110 ]; then
        echo 1 > "$d/enable" 2>/dev/null
        echo "ivshmem device at ${d##*/}"
    fi
done
export LD_LIBRARY_PATH=/usr/lib/ivcuda
args=$(cat /etc/ivcuda-test-args)
for t in /tests/*; do
    name=${t##*/}
    echo "IVCUDA-TEST-BEGIN $name"
    t0=$(cut -d' ' -f1 /proc/uptime)
    # shellcheck disable=SC2086 # the arguments are a word list on purpose
    "$t" $args 2>/tmp/stderr
    rc=$?
    t1=$(cut -d' ' -f1 /proc/uptime)
    echo "IVCUDA-TEST-END $name rc=$rc"
    echo "IVCUDA-TEST-TIME $name seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
    sed "s/^/IVCUDA-STDERR $name: /" /tmp/stderr
done
echo IVCUDA-GUEST-DONE
poweroff -f
INIT
chmod +x "$root/init"

# busybox's cpio where the host has none (the GPU machine)
cpio=(cpio --quiet)
command -v cpio >/dev/null 2>&1 || cpio=("$busybox" cpio)
(cd "$root" && find . | "${cpio[@]}" -o -H newc | gzip -1) >"$out/initramfs.cpio.gz"
echo "guest: $out/vmlinuz ($kernel_from), $out/initramfs.cpio.gz ($(du -h "$out/initramfs.cpio.gz" | cut -f1))"
