#!/usr/bin/env bash
# Builds a small guest for ivcuda tests from Debian's packages: Debian's kernel
# (linux-image-amd64) and an initramfs with static busybox, the ivcuda guest library,
# the given test programs and the shared libraries they need (copied from this host).
# No network inside the guest; /init runs every program in /tests and reports on the
# serial console (ttyS0), then powers off.
#
# usage: vm/build-guest.sh [--args ARGS] [--files SRC=DEST]... [--modules NAMES]... [--before FILE]
#                          [--after FILE] OUTDIR GUEST_LIB_DIR PROGRAM...
#        vm/build-guest.sh [--modules NAMES]... --base-only OUTDIR
#   OUTDIR/vmlinuz, OUTDIR/initramfs.cpio.gz are written; GUEST_LIB_DIR holds libcuda.so.1.
#   --args ARGS       every program runs as "PROGRAM ARGS" (ARGS word-split in the guest)
#   --files SRC=DEST  copies the file or directory SRC to DEST inside the guest (e.g. kernels);
#                     the shared libraries of executables and shared objects among them are copied too (for a
#                     directory: those its executables and shared objects need from outside it)
#   --modules NAMES   kernel modules (names separated by spaces or commas, - and _ alike) of the
#                     same kernel package, with the modules they depend on (their modinfo
#                     "depends"); /init loads them all, dependencies first, before anything else
#   --before FILE     a shell script /init sources (busybox sh) after loading the modules and
#                     enabling the ivshmem device, before the programs: it may start daemons and
#                     export variables for the programs
#   --after FILE      a shell script /init sources after the programs, before power-off
#   --compress C      the initramfs' compression: gzip (default, OUTDIR/initramfs.cpio.gz), zstd
#                     (OUTDIR/initramfs.cpio.zst: for large images, the guest kernel unpacks it several
#                     times faster than gzip under TCG) or none (OUTDIR/initramfs.cpio)
#   --base-only       writes only OUTDIR/vmlinuz, OUTDIR/busybox and the --modules (with their
#                     dependencies) in OUTDIR/modules: what a host without a package registry
#                     needs (then IVCUDA_VM_BASE=OUTDIR there)
# Console protocol (what tests grep for; lines may end in \r on a serial console):
#   IVCUDA-GUEST-UP                 the init script started
#   IVCUDA-MODULE <name> rc=<n>     a --modules module was loaded (insmod's status)
#   IVCUDA-TEST-BEGIN <name>        before a program; its stdout follows
#   IVCUDA-TEST-END <name> rc=<n>   after it
#   IVCUDA-TEST-TIME <name> seconds=<s>  its wall time in the guest
#   IVCUDA-STDERR <name>: <line>    its stderr, after the END line
#   IVCUDA-GUEST-DONE               all programs ran; power-off follows
# Downloads are cached in ${IVCUDA_VM_CACHE:-/var/cache/ivcuda-vm}. With IVCUDA_VM_BASE=DIR
# (holding vmlinuz and busybox, and modules/ for --modules, from --base-only) nothing is
# downloaded and dpkg is not needed.
set -euo pipefail
usage() {
    echo "usage: $0 [--args ARGS] [--files SRC=DEST]... [--modules NAMES]... [--before FILE] [--after FILE] [--compress gzip|zstd|none] OUTDIR GUEST_LIB_DIR PROGRAM..." >&2
    echo "       $0 [--modules NAMES]... --base-only OUTDIR" >&2
    exit 2
}
program_args=
files=()
modules=()
before=
after=
base_only=0
compress=gzip
while [ $# -gt 0 ]; do
    case "$1" in
        --args) [ $# -ge 2 ] || usage; program_args=$2; shift 2 ;;
        --files) [ $# -ge 2 ] && [[ "$2" == *=/* ]] || usage; files+=("$2"); shift 2 ;;
        --modules) [ $# -ge 2 ] || usage; read -r -a names <<<"${2//,/ }"; modules+=("${names[@]}"); shift 2 ;;
        --before) [ $# -ge 2 ] && [ -f "$2" ] || usage; before=$2; shift 2 ;;
        --after) [ $# -ge 2 ] && [ -f "$2" ] || usage; after=$2; shift 2 ;;
        --base-only) base_only=1; shift ;;
        --compress) [ $# -ge 2 ] || usage; compress=$2; shift 2 ;;
        -*) usage ;;
        *) break ;;
    esac
done
if [ "$base_only" = 1 ]; then [ $# -eq 1 ] || usage; else [ $# -ge 3 ] || usage; fi
case "$compress" in
    gzip) image_name=initramfs.cpio.gz; compressor=(gzip -1) ;;
    zstd) image_name=initramfs.cpio.zst; compressor=(zstd -q -T0 -3) ;;
    none) image_name=initramfs.cpio; compressor=(cat) ;;
    *) usage ;;
esac
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
    module_tree=$IVCUDA_VM_BASE/modules
else
    # shellcheck source=vm/debs.sh
    . "$(dirname "${BASH_SOURCE[0]}")/debs.sh"
    fetch() { fetch_deb "$1" || exit 1; }
    # The metapackage names the versioned image package.
    meta=$(fetch linux-image-amd64)
    kernel_from=$(dpkg-deb -f "$meta" Depends | tr ',' '\n' | grep -o 'linux-image-[0-9][^ ]*' | head -1)
    dpkg-deb --fsys-tarfile "$(fetch "$kernel_from")" | tar -x -C "$work" --wildcards './boot/vmlinuz-*'
    kernel=$(ls "$work"/boot/vmlinuz-* | head -1)
    module_tree=$work/kernel-modules
    if [ ${#modules[@]} -gt 0 ]; then
        mkdir -p "$module_tree"
        dpkg-deb --fsys-tarfile "$(fetch "$kernel_from")" | tar -x -C "$module_tree" --wildcards './lib/modules/*'
    fi
    dpkg-deb -x "$(fetch busybox-static)" "$work/busybox"
    busybox=$work/busybox/bin/busybox
fi
cp "$kernel" "$out/vmlinuz"

# ---- kernel modules: the named ones and what they depend on, in load order --------------------
# A module's own .modinfo section says what it needs ("depends=a,b"), as modinfo would: no kmod
# needed, and Debian's package carries no modules.dep (depmod writes it at installation).
# (keys: the file's name without .ko, - as _; no subshells: a kernel has thousands of modules)
declare -A module_files=()
if [ ${#modules[@]} -gt 0 ]; then
    [ -d "$module_tree" ] || { echo "$0: --modules: no kernel modules in $module_tree (IVCUDA_VM_BASE made by --base-only without --modules?)" >&2; exit 2; }
    while IFS= read -r -d '' ko; do
        key=${ko##*/}
        key=${key%.ko}
        module_files[${key//-/_}]=$ko
    done < <(find "$module_tree" -name '*.ko' -print0)
fi
module_order=()
declare -A module_state=()
add_module() { # name, who wants it: depth first, dependencies before the module
    local key=${1//-/_}
    case "${module_state[$key]:-}" in
        added) return 0 ;;
        visiting) echo "$0: --modules: dependency cycle at $1" >&2; exit 2 ;;
    esac
    local file=${module_files[$key]:-}
    [ -n "$file" ] || { echo "$0: --modules: no module $1 ($2) in $kernel_from" >&2; exit 2; }
    module_state[$key]=visiting
    local depends dep
    depends=$(tr '\0' '\n' <"$file" | sed -n 's/^depends=//p' | head -1)
    for dep in ${depends//,/ }; do add_module "$dep" "needed by $1"; done
    module_state[$key]=added
    module_order+=("$file")
}
for m in "${modules[@]}"; do add_module "$m" "asked for"; done

if [ "$base_only" = 1 ]; then
    cp "$busybox" "$out/busybox"
    echo "$kernel_from" >"$out/kernel-package"
    rm -rf "$out/modules"
    if [ ${#module_order[@]} -gt 0 ]; then
        mkdir -p "$out/modules"
        cp "${module_order[@]}" "$out/modules/"
    fi
    echo "guest base: $out/vmlinuz ($kernel_from), $out/busybox${module_order:+, ${#module_order[@]} modules in $out/modules}"
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

copy_libs_of() { # the shared libraries an executable needs, at their paths on this host
    # (but not those under $2: a tree copied whole, e.g. a Java runtime finding its own)
    { ldd "$1" 2>/dev/null || true; } | { grep -o '/[^ ]*' || true; } | while read -r lib; do
        case "$lib" in */libcuda.so*) continue ;; esac
        if [ -n "${2:-}" ] && [[ "$lib" == "$2"/* ]]; then continue; fi
        mkdir -p "$root$(dirname "$lib")"
        [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
    done
}
copy_with_libs() { # file, destination dir in root
    cp -L "$1" "$root/$2/"
    copy_libs_of "$1"
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
    # an executable's libraries, and a shared object's (a library opened by name at run time, as
    # libnvrtc opens its builtins, is often not executable: its own needs are still needed)
    if [ -f "$src" ] && { [ -x "$src" ] || [ "$(head -c 4 "$src" | od -An -c | tr -d ' ')" = '177ELF' ]; }; then
        copy_libs_of "$src"
    fi
    if [ -d "$src" ]; then
        tree=$(cd "$src" && pwd -P)
        while IFS= read -r -d '' f; do
            if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then copy_libs_of "$f" "$tree"; fi
        done < <(find "$tree" -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -print0)
    fi
done
printf '%s\n' "$program_args" >"$root/etc/ivcuda-test-args"
mkdir -p "$root/lib/modules"
: >"$root/etc/ivcuda-modules"
for file in "${module_order[@]}"; do
    cp "$file" "$root/lib/modules/"
    echo "${file##*/}" >>"$root/etc/ivcuda-modules"
done
: >"$root/etc/ivcuda-before"
: >"$root/etc/ivcuda-after"
[ -z "$before" ] || cp "$before" "$root/etc/ivcuda-before"
[ -z "$after" ] || cp "$after" "$root/etc/ivcuda-after"

cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
echo IVCUDA-GUEST-UP
echo "kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) cpu(s)"
for m in $(cat /etc/ivcuda-modules); do
    insmod "/lib/modules/$m"
    echo "IVCUDA-MODULE ${m%.ko} rc=$?"
done
# No driver binds the ivshmem device: turn its memory decoding on for resource2 mmap.
for d in /sys/bus/pci/devices/*; do
    if [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x1110 ]; then
        echo 1 > "$d/enable" 2>/dev/null
        echo "ivshmem device at ${d##*/}"
    fi
done
export LD_LIBRARY_PATH=/usr/lib/ivcuda
. /etc/ivcuda-before
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
    # awk ends every line, also a last one without its newline, which would otherwise run into
    # the next program's BEGIN line (the H200 run of 2026-12-02 00:56 UTC lost two programs' output so)
    awk -v p="IVCUDA-STDERR $name: " '{ print p $0 }' /tmp/stderr
done
. /etc/ivcuda-after
echo IVCUDA-GUEST-DONE
poweroff -f
INIT
chmod +x "$root/init"

# busybox's cpio where the host has none (the GPU machine)
cpio=(cpio --quiet)
command -v cpio >/dev/null 2>&1 || cpio=("$busybox" cpio)
(cd "$root" && find . | "${cpio[@]}" -o -H newc | "${compressor[@]}") >"$out/$image_name"
echo "guest: $out/vmlinuz ($kernel_from), $out/$image_name ($(du -h "$out/$image_name" | cut -f1))"
