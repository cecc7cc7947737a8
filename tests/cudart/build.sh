#!/usr/bin/env bash
# Builds the runtime-API test programs with one nvcc, the way users build: nvcc's defaults,
# so cudart is linked statically.
#   tests/cudart/build.sh <nvcc> <output dir>
# CUDA 11.8's nvcc supports gcc up to 11: with a newer default compiler it gets g++-11 where
# installed, else the system g++ with -allow-unsupported-compiler (enough for host-only code).
set -euo pipefail
nvcc=$1
dest=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$dest"
flags=()
if "$nvcc" --version | grep -q 'release 11\.'; then
    if command -v g++-11 >/dev/null 2>&1; then
        flags=(-ccbin "$(command -v g++-11)")
    else
        flags=(-ccbin "$(command -v g++)" -allow-unsupported-compiler)
    fi
fi
for source in "$here"/*.cu; do
    name=$(basename "$source" .cu)
    timeout 300 "$nvcc" "${flags[@]}" -O2 -o "$dest/$name" "$source"
done
