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
# calls from exit handlers after ivc_process_exit (cudart's teardown): no new hello
run "$BUILD/programs/exit_teardown_check"
# cudart dlcloses libcuda.so.1 after a failed initialisation: our threads must not be unmapped
run "$BUILD/programs/unload_check" "$BUILD/libcuda.so.1" 4

# The guest NVML (docs/sharing.md) through libcuda's transport; then with no server to reach
run "$BUILD/programs/nvml_check"
if output=$(IVCUDA_REGION=/nonexistent/region LD_LIBRARY_PATH=$BUILD "$BUILD/programs/nvml_check" fail 2>/dev/null) &&
    [ "$output" = ok ]; then
    passed=$((passed + 1))
else
    failed=$((failed + 1))
    echo "FAILED: nvml_check fail -> $output"
fi
# ivcuda-smi: the fake device, its memory, the table's frame
smi=$(IVCUDA_REGION=$REGION LD_LIBRARY_PATH=$BUILD "$BUILD/ivcuda-smi" 2>&1) || true
case "$smi" in
    *"Fake GPU "*"00000000:05:00.0"*"MiB / 64MiB"*"Processes (this VM's)"*) passed=$((passed + 1)) ;;
    *) failed=$((failed + 1)); echo "FAILED: ivcuda-smi -> $smi" ;;
esac
if IVCUDA_REGION=/nonexistent/region LD_LIBRARY_PATH=$BUILD "$BUILD/ivcuda-smi" >/dev/null 2>&1; then
    failed=$((failed + 1)); echo "FAILED: ivcuda-smi without a server exited 0"
else
    passed=$((passed + 1))
fi

# The admin's ivcuda-guest-check, finding the region as a device in a fake sysfs, then finding none.
SYSFS=$(mktemp -d /tmp/ivcuda-check-sysfs-XXXXXX)
trap 'kill $SERVER 2>/dev/null; rm -f "$REGION"; rm -rf "$SYSFS"' EXIT
mkdir -p "$SYSFS/bus/pci/devices/0000:00:05.0" "$SYSFS/none/bus/pci/devices"
echo 0x1af4 > "$SYSFS/bus/pci/devices/0000:00:05.0/vendor"
echo 0x1110 > "$SYSFS/bus/pci/devices/0000:00:05.0/device"
ln -s "$REGION" "$SYSFS/bus/pci/devices/0000:00:05.0/resource2"
check() { # expected-status expected-text sysfs-root
    set +e
    output=$(IVCUDA_SYSFS_ROOT=$3 "$BUILD/ivcuda-guest-check" --library "$BUILD/libcuda.so.1" 2>&1)
    status=$?
    set -e
    case "$status:$output" in
        "$1:"*"$2"*) passed=$((passed + 1)) ;;
        *) failed=$((failed + 1)); echo "FAILED: ivcuda-guest-check in $3: exit $status (expected $1 with '$2') -> $output" ;;
    esac
}
check 0 "server answers" "$SYSFS"
check 1 "no ivshmem device found" "$SYSFS/none"

echo "programs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
