#!/usr/bin/env bash
# Writes what vm/gpu-vm.sh needs on a GPU machine that has /dev/kvm but no QEMU and no package
# registry (Ubuntu 24.04 there; this runs on Debian 12 with apt):
#   .vmcarry/qemu.tar.xz     Debian's qemu-system-x86_64 (package qemu-system-x86), the firmware it
#                            loads for a direct-kernel boot (seabios, qemu-system-data), its TCG
#                            module (qemu-system-common), and every
#                            shared library it needs except glibc's (the GPU machine's glibc is newer)
#   .vmcarry/guest-base/     Debian's kernel, static busybox and vfio's modules (vm/build-guest.sh --base-only)
#   .vmcarry/MANIFEST        package versions, libraries, sizes
# usage: vm/prepare-gpu-carry.sh [DIR]   (default: .vmcarry in the repository root)
# The libraries are the ones ldd resolves for the unpacked binary on this host, so the host needs
# QEMU's dependencies installed (apt-get install qemu-system-x86 does that; .ci/run installs it).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
carry=${1:-$repo/.vmcarry}
# shellcheck source=vm/debs.sh
. "$repo/vm/debs.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$carry"
carry=$(cd "$carry" && pwd)

packages=(qemu-system-x86 qemu-system-common qemu-system-data seabios)
for p in "${packages[@]}"; do
    deb=$(fetch_deb "$p")
    dpkg-deb -x "$deb" "$work/root"
    echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" >>"$work/packages"
done

qemu=$work/qemu
mkdir -p "$qemu/bin" "$qemu/lib" "$qemu/share"
cp "$work/root/usr/bin/qemu-system-x86_64" "$qemu/bin/"
# Firmware for -kernel boots on the pc machine (-L points QEMU here): the BIOS, the option ROMs
# for the Linux loader, and kvmvapic (loaded under KVM). /usr/share/qemu links into seabios'.
for f in bios-256k.bin bios.bin linuxboot.bin linuxboot_dma.bin kvmvapic.bin multiboot.bin multiboot_dma.bin pvh.bin; do
    src=$work/root/usr/share/qemu/$f
    [ -L "$src" ] && src=$work/root/usr/share/qemu/$(readlink "$src")
    [ -e "$src" ] || src=$work/root/usr/share/seabios/$f
    [ -e "$src" ] && cp -L "$src" "$qemu/share/$f"
done
# Debian builds TCG as a module (KVM is built in): carried for --tcg runs, found via QEMU_MODULE_DIR.
mkdir -p "$qemu/modules"
cp "$work"/root/usr/lib/x86_64-linux-gnu/qemu/accel-tcg-x86_64.so "$qemu/modules/"
[ -f "$qemu/share/bios-256k.bin" ] || { echo "$0: no bios-256k.bin in seabios/qemu-system-data" >&2; exit 1; }

missing=$(ldd "$qemu/bin/qemu-system-x86_64" | awk '/not found/ { print $1 }')
if [ -n "$missing" ]; then
    echo "$0: QEMU's libraries missing on this host: $missing (apt-get install qemu-system-x86)" >&2
    exit 1
fi
ldd "$qemu/bin/qemu-system-x86_64" | awk '$3 ~ /^\// { print $3 }' | while read -r lib; do
    case "${lib##*/}" in
        libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | ld-linux-*) continue ;;
    esac
    cp -L "$lib" "$qemu/lib/"
done

rm -f "$carry/qemu.tar.xz"
tar -C "$qemu" -cJf "$carry/qemu.tar.xz" .
# with vfio's modules, for ivcuda-guest-irqd in a guest (vm/build-guest.sh --modules there)
IVCUDA_VM_CACHE=$VM_CACHE "$repo/vm/build-guest.sh" --modules "vfio-pci vfio_iommu_type1" --base-only "$carry/guest-base" >/dev/null

{
    echo "# ivcuda VM carry, written $(date -u '+%Y-%m-%d %H:%M:%S UTC') by vm/prepare-gpu-carry.sh on $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "## packages"
    cat "$work/packages"
    echo "guest kernel: $(cat "$carry/guest-base/kernel-package")"
    echo "## qemu.tar.xz"
    (cd "$qemu" && find . -type f | sort | while read -r f; do echo "$(stat -c %s "$f") $f"; done)
    echo "## sizes"
    du -sh "$qemu" | sed 's|\t.*| unpacked|'
    (cd "$carry" && du -sh qemu.tar.xz guest-base)
} >"$carry/MANIFEST"
echo "carry: $carry ($(du -sh "$carry" | cut -f1)); unpacked QEMU $(du -sh "$qemu" | cut -f1)"
