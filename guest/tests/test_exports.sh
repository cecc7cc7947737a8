#!/bin/sh
# The library's dynamic symbols are exactly the driver's exported functions
# (api/driver-580-exports.txt, NVIDIA's libcuda.so.1 of driver 580): a program linked
# against any of them loads, and we export nothing of our own.
set -eu
library=${1:-target/libcuda.so.1}
reference=${2:-../api/driver-580-exports.txt}
ours=$(mktemp /tmp/ivcuda-exports-XXXXXX)
theirs=$(mktemp /tmp/ivcuda-exports-XXXXXX)
trap 'rm -f "$ours" "$theirs"' EXIT
nm -D --defined-only "$library" | awk '{print $3}' | sort -u > "$ours"
grep -v '^#' "$reference" | sed '/^$/d' | sort -u > "$theirs"
if diff -u "$theirs" "$ours" > /dev/null; then
    echo "test_exports: $(wc -l < "$ours") names, the same as $reference"
else
    echo "test_exports: the exported names differ from $reference ('-' missing, '+' extra):"
    diff -u "$theirs" "$ours" | sed -n '3,$p' | grep '^[-+]' | head -40
    exit 1
fi
