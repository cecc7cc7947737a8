#!/usr/bin/env bash
# Puts Debian 12's CUDA 11.8 toolkit (nvidia-cuda-toolkit from bookworm's non-free component)
# into a directory of its own, for tests/cudart: nvcc, its compilers, the headers and the static
# cudart. It unpacks the packages instead of installing them, because installing them brings
# the GPU driver's own libcuda.so.1 (package libcuda1) into the system, and this machine must
# stay without a driver: CI runs guests against "no device" and the host-memory backend.
#
#   tests/cudart/unpack-cuda-11.8.sh [prefix]     as root, with network; default /opt/ivcuda-cuda-11.8
#
# Needs the non-free component in apt's sources (.ci/run adds it). Idempotent. About 870 MB
# downloaded into /var/cache/ivcuda-cuda11.8, about 200 MB unpacked.
set -euo pipefail
prefix=${1:-/opt/ivcuda-cuda-11.8}
cache=/var/cache/ivcuda-cuda11.8
nvcc=$prefix/usr/lib/nvidia-cuda-toolkit/bin/nvcc
if [ -x "$nvcc" ] && "$nvcc" --version | grep -q 'release 11\.8'; then
    echo "CUDA 11.8 toolkit already in $prefix"
    exit 0
fi
mkdir -p "$cache" "$prefix"
cd "$cache"
# apt's sandbox user cannot write here; downloading as root is what we want
apt-get download -q -o APT::Sandbox::User=root nvidia-cuda-toolkit nvidia-cuda-dev
# nvcc and its tools; the compute sanitizer is left out
dpkg-deb --fsys-tarfile nvidia-cuda-toolkit_*.deb |
    tar -x -C "$prefix" --wildcards './usr/bin/*' './usr/lib/nvidia-cuda-toolkit/*' \
        --exclude='./usr/lib/nvidia-cuda-toolkit/compute-sanitizer*'
# headers and the static runtime (the package's other static libraries are 2.8 GB)
dpkg-deb --fsys-tarfile nvidia-cuda-dev_*.deb |
    tar -x -C "$prefix" --wildcards './usr/include/*' './usr/lib/x86_64-linux-gnu/libcudart_static.a' \
        './usr/lib/x86_64-linux-gnu/libcudadevrt.a' './usr/lib/x86_64-linux-gnu/libculibos.a'
# The package's nvcc.profile is a link to /etc/nvcc.profile with absolute /usr paths: this one
# finds everything relative to nvcc itself.
rm -f "$prefix/usr/lib/nvidia-cuda-toolkit/bin/nvcc.profile"
cat >"$prefix/usr/lib/nvidia-cuda-toolkit/bin/nvcc.profile" <<'PROFILE'
TOP = $(_HERE_)/../../..
NVVMIR_LIBRARY_DIR = $(TOP)/lib/nvidia-cuda-toolkit/libdevice
PATH += $(_HERE_):$(TOP)/bin:
INCLUDES += "-I$(TOP)/include" $(_SPACE_)
LIBRARIES =+ $(_SPACE_) "-L$(TOP)/lib/x86_64-linux-gnu"
PROFILE
"$nvcc" --version | tail -2
