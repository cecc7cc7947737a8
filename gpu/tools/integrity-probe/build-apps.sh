#!/usr/bin/env bash
# Builds app.cu three ways for gpu/integrity-probe.sh, on a machine with the toolkits (the GPU
# machine has only CUDA 13, so the CUDA 11.8 program is built here and carried):
#   app13s  CUDA 13 nvcc, default static cudart      app13d  CUDA 13, -cudart shared
#   app11s  CUDA 11.8 nvcc (Debian's, tests/cudart/unpack-cuda-11.8.sh), static cudart
# For sm_90 (H200) with PTX. A toolkit that is absent is one line of output.
#   gpu/tools/integrity-probe/build-apps.sh <dest>      e.g. .carry/integrity
set -euo pipefail
dest=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$dest"
arch=(-gencode 'arch=compute_90,code=[sm_90,compute_90]')
nvcc13=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$nvcc13" ] && "$nvcc13" --version | grep -q 'release 13\.'; then
    "$nvcc13" -O2 "${arch[@]}" -o "$dest/app13s" "$here/app.cu"
    "$nvcc13" -O2 "${arch[@]}" -cudart shared -o "$dest/app13d" "$here/app.cu"
else
    echo "no CUDA 13 nvcc: app13s, app13d not built"
fi
nvcc11=${CUDA11_ROOT:-/opt/ivcuda-cuda-11.8}/usr/lib/nvidia-cuda-toolkit/bin/nvcc
if [ -x "$nvcc11" ] && "$nvcc11" --version | grep -q 'release 11\.8'; then
    # CUDA 11.8 supports gcc up to 11 (as tests/cudart/build.sh)
    host=(-ccbin "$(command -v g++)" -allow-unsupported-compiler)
    command -v g++-11 >/dev/null 2>&1 && host=(-ccbin "$(command -v g++-11)")
    "$nvcc11" -O2 "${host[@]}" "${arch[@]}" -o "$dest/app11s" "$here/app.cu"
else
    echo "no CUDA 11.8 nvcc: app11s not built"
fi
ls -l "$dest"
