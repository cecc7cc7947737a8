# shellcheck shell=bash
# Sourced first by tests/*/run.sh: what every such run shares, so that each script holds only its
# checks. harness_start NAME makes the repository root the working directory ($root), a scratch
# directory ($work) and a region path ($region) of the run's own, and a cleanup at exit that stops
# the server the run started ($server_pid, set by start_host_memory_server), removes the region
# and the scratch (KEEP=1 keeps a copy of the scratch in /tmp/NAME-kept, to look at a failure);
# pass and fail count the checks for the run's closing "NAME: N passed, M failed" line.
#   harness_start NAME
harness_start() {
    harness_name=$1
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    cd "$root" || exit 1
    work=$(mktemp -d "/tmp/ivcuda-$harness_name.XXXXXX")
    region=/dev/shm/ivcuda-$harness_name-$$
    server_pid=
    passed=0
    failed=0
    trap harness_cleanup EXIT
}

harness_cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -f "$region"
    [ -n "${KEEP:-}" ] && cp -r "$work" "/tmp/$harness_name-kept"
    rm -rf "$work"
}

pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }
