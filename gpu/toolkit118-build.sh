#!/usr/bin/env bash
# Programs built with an older toolkit, CUDA 11.8 (Debian 12's nvidia-cuda-toolkit), for the GPU
# machine, which has only CUDA 13 and no network: built HERE, carried as .t118/, run there by
# gpu/toolkit118.sh natively and through ivcuda (issue 12, "several toolkits").
#
#   gpu/toolkit118-build.sh [DEST]     DEST defaults to .t118 (ignored by git); as root with network
#                                      the first time (it unpacks the toolkit), gcc/g++ 11 installed
#
# What it builds, every program with nvcc 11.8's defaults (static cudart) for sm_90 with
# compute_90 PTX embedded, stripped:
# (packed into DEST/programs.tar.xz, see below)
#   cudart/<name>       tests/cudart/*.cu (runtime API, no kernels)
#   samples/<name>/     each sample of gpu/corpus-samples.txt that CUDA 11.8 builds unmodified with
#                       its own CMake files (CMAKE_CUDA_COMPILER = nvcc 11.8, architectures set to 90
#                       through gpu/corpus-arch.cmake as gpu/apps.sh does), with the files it loads
#                       at run time from its build directory (.fatbin, .ptx, data): run it from there
# Samples it does not build are listed in DEST/MANIFEST with the reason: the library samples
# (Debian's 11.8 libraries are far over what a device call carries, sizes below) and any sample
# whose configure or build fails with 11.8 (the first error line of its log).
#
# The toolkit: tests/cudart/unpack-cuda-11.8.sh's prefix (/opt/ivcuda-cuda-11.8, T118_PREFIX
# overrides; it is unpacked, not installed, so no driver libcuda.so.1 comes with it), plus the
# header-only packages nvidia-cuda-dev depends on (libthrust-dev, libcub-dev, libcu++-dev) unpacked
# into the same prefix. CMake (3.25) cannot find that prefix's libdevice from Debian's nvcc.profile
# (it wants <root>/nvvm/libdevice), so the samples see it through a view of symlinks in the
# standard layout (BUILD/view: bin, include, lib64, nvvm/libdevice) with its own nvcc.profile.
# Its bin has Debian's gcc/g++ wrappers beside nvcc, which pick g++-11: nvcc run without -ccbin
# (a sample's own nvcc commands, ptxjit's) finds them first on the PATH its profile sets.
# Samples that link libcuda (CUDA::cuda_driver) link against guest/target/libcuda.so (the guest
# library; only its SONAME libcuda.so.1 is recorded, LD_LIBRARY_PATH picks the driver's or ivcuda's
# at run time, as gpu/lib.sh explains); this machine has no driver and CUDA 13 ships no stub here.
# FindCUDAToolkit insists on finding a cudart library (CUDA_CUDART, and CUDA_cudart_LIBRARY behind
# the target CUDA::cudart, normally the shared one, which the prefix does not have): both are given
# the static one, so a sample that names CUDA::cudart links cudart statically too and no program
# needs a libcudart.so.11.0 at run time.
#
# DEST holds MANIFEST and programs.tar.xz (the programs' directories, xz: 43 MB of binaries, mostly
# fat binaries, pack into ~4.5 MB), which gpu/toolkit118.sh unpacks into its scratch directory.
#
# Settings: T118_PREFIX, T118_BUILD (scratch, kept between calls [/tmp/ivcuda-t118-build]),
# T118_ONLY (extended regex over sample names), T118_JOBS (cmake --build -j [1]).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
DEST=${1:-$REPO/.t118}
PREFIX=${T118_PREFIX:-/opt/ivcuda-cuda-11.8}
BUILD=${T118_BUILD:-/tmp/ivcuda-t118-build}
JOBS=${T118_JOBS:-1}
ONLY=${T118_ONLY:-}
CORPUS_DIR=${CORPUS_DIR:-$REPO/.corpus/cuda-samples}
[ -d "$CORPUS_DIR" ] || CORPUS_DIR=$REPO/../shared/corpus/cuda-samples
[ -d "$CORPUS_DIR" ] || CORPUS_DIR=/work/shared/corpus/cuda-samples
REAL_NVCC=$PREFIX/usr/lib/nvidia-cuda-toolkit/bin/nvcc
VIEW=$BUILD/view
ARCH_FLAGS=(-gencode "arch=compute_90,code=[sm_90,compute_90]")

# Debian's 11.8 libraries the library samples need, Installed-Size of bookworm's packages
# (apt-cache show <package> | grep Installed-Size): each alone is over what .t118 may hold (40 MB)
declare -A LIBRARY_SKIP=(
    [MersenneTwisterGP11213]="needs cuRAND: libcurand.so.10 (libcurand10, 99 MB installed)"
    [batchCUBLAS]="needs cuBLAS: libcublas.so.11 + libcublasLt.so.11 (libcublas11 93 MB + libcublaslt11 561 MB installed)"
    [matrixMulCUBLAS]="needs cuBLAS: libcublas.so.11 + libcublasLt.so.11 (libcublas11 93 MB + libcublaslt11 561 MB installed)"
    [conjugateGradient]="needs cuBLAS and cuSPARSE: libcublas11 93 MB + libcublaslt11 561 MB + libcusparse11 273 MB installed"
    [conjugateGradientCudaGraphs]="needs cuBLAS and cuSPARSE: libcublas11 93 MB + libcublaslt11 561 MB + libcusparse11 273 MB installed"
    [cuSolverDn_LinearSolver]="needs cuSOLVER, cuBLAS and cuSPARSE: libcusolver11 296 MB + libcublas11 93 MB + libcublaslt11 561 MB + libcusparse11 273 MB installed"
    [matrixMul_nvrtc]="needs NVRTC: libnvrtc.so.11.2 + builtins (libnvrtc11.2 53 MB + libnvrtc-builtins11.8 8 MB installed)"
    [simpleCUFFT]="needs cuFFT: libcufft.so.10 (libcufft10, 273 MB installed)"
)

say() { printf '%s toolkit118-build: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { say "$*"; exit 1; }

# ---- the toolkit ------------------------------------------------------------------------------
if ! { [ -x "$REAL_NVCC" ] && "$REAL_NVCC" --version 2>/dev/null | grep -q 'release 11\.8'; }; then
    say "no CUDA 11.8 in $PREFIX: unpacking it (root, network, bookworm's non-free component in apt's sources)"
    "$REPO/tests/cudart/unpack-cuda-11.8.sh" "$PREFIX" || die "tests/cudart/unpack-cuda-11.8.sh failed"
fi
if [ ! -d "$PREFIX/usr/include/thrust" ] || [ ! -d "$PREFIX/usr/include/cub" ] || [ ! -d "$PREFIX/usr/include/cuda" ]; then
    say "unpacking Thrust, CUB and libcu++ (Debian's libthrust-dev, libcub-dev, libcu++-dev) into $PREFIX/usr/include"
    mkdir -p /var/cache/ivcuda-cuda11.8
    (cd /var/cache/ivcuda-cuda11.8 &&
        apt-get download -q -o APT::Sandbox::User=root libthrust-dev libcub-dev libcu++-dev &&
        for deb in libthrust-dev_*.deb libcub-dev_*.deb libcu++-dev_*.deb; do
            dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$PREFIX" --wildcards './usr/include/*' || exit 1
        done) || die "could not unpack the header packages"
fi
HOST_CXX=$(command -v g++-11) || die "no g++-11 (CUDA 11.8 supports gcc up to 11): apt-get install g++-11"
HOST_CC=$(command -v gcc-11) || die "no gcc-11: apt-get install gcc-11"

# The view CMake understands: <root>/bin/nvcc (a link: nvcc reads nvcc.profile beside the path it
# was started as), <root>/nvvm/libdevice, <root>/include, <root>/lib64.
rm -rf "$VIEW"
mkdir -p "$VIEW/bin" "$VIEW/nvvm"
for tool in "$PREFIX"/usr/bin/* "$PREFIX"/usr/lib/nvidia-cuda-toolkit/bin/*; do
    [ "$(basename "$tool")" = nvcc.profile ] && continue
    [ "$tool" = "$PREFIX/usr/bin/nvcc" ] && continue # Debian's wrapper: exec /usr/lib/... (absolute)
    ln -sfn "$tool" "$VIEW/bin/$(basename "$tool")"
done
ln -sfn "$PREFIX/usr/lib/nvidia-cuda-toolkit/libdevice" "$VIEW/nvvm/libdevice"
ln -sfn "$PREFIX/usr/include" "$VIEW/include"
ln -sfn "$PREFIX/usr/lib/x86_64-linux-gnu" "$VIEW/lib64"
cat >"$VIEW/bin/nvcc.profile" <<'PROFILE'
TOP = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
PATH += $(_HERE_):
INCLUDES += "-I$(TOP)/include" $(_SPACE_)
LIBRARIES =+ $(_SPACE_) "-L$(TOP)/lib64"
PROFILE
NVCC=$VIEW/bin/nvcc
NVCC_VERSION=$("$NVCC" --version | grep -o 'release [0-9.]*, V[0-9.]*') || die "$NVCC does not run"
case $NVCC_VERSION in "release 11.8,"*) ;; *) die "$NVCC is $NVCC_VERSION, not 11.8" ;; esac
say "nvcc $NVCC_VERSION ($REAL_NVCC through $VIEW), host compiler $HOST_CXX"

rm -rf "$DEST"
mkdir -p "$DEST/cudart" "$DEST/samples" "$BUILD/logs"
DEST=$(cd "$DEST" && pwd)
MANIFEST=$DEST/MANIFEST
{
    echo "# Programs built with CUDA 11.8 by gpu/toolkit118-build.sh; run with gpu/toolkit118.sh"
    echo "# built $(date -u '+%Y-%m-%d %H:%M UTC') from $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "# nvcc $NVCC_VERSION (Debian 12 nvidia-cuda-toolkit, unpacked in $PREFIX), host compiler $("$HOST_CXX" --version | head -1)"
    echo "# every program: nvcc's default static cudart, -gencode arch=compute_90,code=[sm_90,compute_90] (what stays embedded: per line), stripped"
    echo "# kind|name|mask|how built (or why not)"
} >"$MANIFEST"
BUILT=0
SKIPPED=0

# What the binary embeds (cuobjdump): its cubins' architectures and whether PTX is there. A sample
# built with CUDA_SEPARABLE_COMPILATION keeps only the device-linked SASS, no PTX.
embedded() {
    local listing sass ptx
    listing=$("$VIEW/bin/cuobjdump" --list-elf --list-ptx "$1" 2>&1)
    sass=$(grep -o 'sm_[0-9]*\.cubin' <<<"$listing" | sort -u | sed 's/\.cubin//' | tr '\n' ' ' | sed 's/ $//')
    ptx=$(grep -c '^PTX file' <<<"$listing")
    echo "embeds SASS ${sass:-none}, ${ptx} PTX"
}

# ---- tests/cudart ------------------------------------------------------------------------------
for src in "$REPO"/tests/cudart/*.cu; do
    name=$(basename "$src" .cu)
    [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]] && continue
    if timeout 300 "$NVCC" -ccbin "$HOST_CXX" "${ARCH_FLAGS[@]}" -O2 -o "$DEST/cudart/$name" "$src" \
        >"$BUILD/logs/cudart-$name.log" 2>&1 && strip "$DEST/cudart/$name"; then
        echo "cudart|$name|plain|nvcc -ccbin g++-11 ${ARCH_FLAGS[*]} -O2 tests/cudart/$name.cu; $(embedded "$DEST/cudart/$name")" >>"$MANIFEST"
        BUILT=$((BUILT + 1))
    else
        echo "cudart|$name|-|NOT BUILT: $(grep -m1 -iE 'error|fatal' "$BUILD/logs/cudart-$name.log" | cut -c1-200 | tr '|' '/')" >>"$MANIFEST"
        SKIPPED=$((SKIPPED + 1))
    fi
done
say "tests/cudart: $(ls "$DEST/cudart" | tr '\n' ' ')"

# ---- the corpus samples -------------------------------------------------------------------------
# samples that link CUDA::cuda_driver find a libcuda.so to link against here
DRIVER_LINK=$REPO/guest/target/libcuda.so
guest_library() { # tried again before each sample until it exists (it needs api/target/classes)
    [ -e "$DRIVER_LINK" ] || make -s -C "$REPO/guest" >"$BUILD/logs/guest-make.log" 2>&1 ||
        say "guest library not built (logs/guest-make.log): a sample that links libcuda will not link"
}
CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_COMPILER=$NVCC" "-DCMAKE_CUDA_HOST_COMPILER=$HOST_CXX"
            "-DCMAKE_CXX_COMPILER=$HOST_CXX" "-DCMAKE_C_COMPILER=$HOST_CC"
            "-DCMAKE_PROJECT_INCLUDE=$HERE/corpus-arch.cmake" -DIVCUDA_CUDA_ARCHITECTURES=90
            "-DCUDA_cuda_driver_LIBRARY=$DRIVER_LINK" "-DCUDA_CUDART=$PREFIX/usr/lib/x86_64-linux-gnu/libcudart_static.a"
            "-DCUDA_cudart_LIBRARY=$PREFIX/usr/lib/x86_64-linux-gnu/libcudart_static.a")
command -v ninja >/dev/null 2>&1 && CMAKE_ARGS+=(-G Ninja)

# Build-directory files that are the build system's, not the program's
is_build_file() {
    case $1 in
        CMakeCache.txt | Makefile | cmake_install.cmake | build.ninja | .ninja_* | compile_commands.json | \
            CTestTestfile.cmake | *.o | .ivcuda-*) return 0 ;;
    esac
    return 1
}

while IFS='|' read -r name cost mask _args _note; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    : "$cost"
    [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]] && continue
    if [ -n "${LIBRARY_SKIP[$name]:-}" ]; then
        echo "sample|$name|-|SKIPPED: ${LIBRARY_SKIP[$name]}" >>"$MANIFEST"
        SKIPPED=$((SKIPPED + 1))
        continue
    fi
    src=$(find "$CORPUS_DIR/Samples" -mindepth 2 -maxdepth 2 -type d -name "$name" | head -1)
    if [ -z "$src" ]; then
        echo "sample|$name|-|SKIPPED: not in $CORPUS_DIR" >>"$MANIFEST"
        SKIPPED=$((SKIPPED + 1))
        continue
    fi
    guest_library
    bld=$BUILD/samples/$name
    log=$BUILD/logs/$name.log
    # a build directory of an earlier call with the same arguments is reused (ninja rebuilds what changed)
    if [ -f "$bld/.ivcuda-cmake-args" ] && [ "$(cat "$bld/.ivcuda-cmake-args")" != "${CMAKE_ARGS[*]}" ]; then
        rm -rf "$bld"
    fi
    {
        echo "+ cmake -S $src -B $bld ${CMAKE_ARGS[*]}"
        timeout -k 5 300 cmake -S "$src" -B "$bld" "${CMAKE_ARGS[@]}" && echo "${CMAKE_ARGS[*]}" >"$bld/.ivcuda-cmake-args" &&
            echo "+ cmake --build $bld -j $JOBS" &&
            timeout -k 5 900 cmake --build "$bld" -j "$JOBS"
    } >"$log" 2>&1
    rc=$?
    if [ "$rc" = 0 ] && [ -x "$bld/$name" ]; then
        mkdir -p "$DEST/samples/$name"
        for f in "$bld"/* "$bld"/.[!.]*; do
            [ -f "$f" ] || continue
            is_build_file "$(basename "$f")" && continue
            cp "$f" "$DEST/samples/$name/"
        done
        strip "$DEST/samples/$name/$name"
        echo "sample|$name|${mask:-plain}|cmake (its own CMakeLists, CUDA_ARCHITECTURES 90 via gpu/corpus-arch.cmake); $(embedded "$DEST/samples/$name/$name"); files: $(cd "$DEST/samples/$name" && ls | tr '\n' ' ')" >>"$MANIFEST"
        BUILT=$((BUILT + 1))
        say "$name: built"
    else
        why=$(grep -m1 -E 'error|Error|fatal|Killed' "$log" | sed 's/^ *//' | cut -c1-220 | tr '|' '/')
        # a crashing compiler says only this (simpleHyperQ: ptxas 11.8 on its kernel for sm_90 with the
        # sample's -lineinfo, every time; nvcc -v shows ptxas as the last step)
        grep -q '^Segmentation fault' "$log" && why="the 11.8 compiler crashed (Segmentation fault; nvcc -v names the tool)"
        echo "sample|$name|-|NOT BUILT by 11.8 (rc=$rc): ${why:-see the build log}" >>"$MANIFEST"
        SKIPPED=$((SKIPPED + 1))
        say "$name: not built (rc=$rc): $why"
    fi
done <"$HERE/corpus-samples.txt"

unpacked=$(du -sb "$DEST" | cut -f1)
say "packing $DEST/programs.tar.xz ($((unpacked / 1024)) KiB unpacked)"
tar -C "$DEST" -cf - cudart samples | xz -6 -T1 >"$DEST/programs.tar.xz" || die "packing failed"
rm -rf "$DEST/cudart" "$DEST/samples"
echo "# $BUILT built, $SKIPPED not; $((unpacked / 1024)) KiB unpacked, programs.tar.xz $(($(stat -c %s "$DEST/programs.tar.xz") / 1024)) KiB" >>"$MANIFEST"
size=$(du -sb "$DEST" | cut -f1)
say "$BUILT built, $SKIPPED not; $DEST is $((size / 1024)) KiB (logs: $BUILD/logs)"
if [ "$size" -gt $((40 * 1024 * 1024)) ]; then
    die "$DEST is over 40 MB"
fi
