#!/bin/sh
# Runs tests/programs, linked with -lcuda against target/libcuda.so.1, through a region
# file served by fake_serve: the dynamic library end to end, without GPU or Java.
set -eu
BUILD=${BUILD:-target}
REGION=$(mktemp /tmp/ivcuda-programs-XXXXXX)
"$BUILD/tests/fake_serve" "$REGION" >/dev/null &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -f "$REGION"' EXIT
sleep 0.2
passed=0
failed=0
run() {
    if output=$(IVCUDA_REGION=$REGION LD_LIBRARY_PATH=$BUILD "$@" 2>&1) && [ "$output" = ok ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAILED: $* -> $output"
    fi
}
run "$BUILD/programs/xfer_check" 1 1
run "$BUILD/programs/xfer_check" 4032 2
run "$BUILD/programs/xfer_check" 1000003 4
run "$BUILD/programs/xfer_check" 65536 3 pinned
run "$BUILD/programs/fork_check" 300001
echo "programs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
