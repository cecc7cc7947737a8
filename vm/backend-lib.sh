# shellcheck shell=bash
# Sourced by vm/backend-doorbell.sh and bench/backend-domains.sh (from the repository root): what
# both do the same way around a back-end domain's test guests.

# The JVM options of the back-end's agent and servers (vm/build-backend-guest.sh's) and of the host's
# server the benchmark compares with.
backend_java_opts="-Xmx128m -Xss512k -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:CICompilerCount=1"

# wait_for FILE PATTERN SECONDS: until FILE has a line matching PATTERN (grep), at most SECONDS
wait_for() {
    local i
    for ((i = 0; i < $3; i++)); do
        if grep -aq "$2" "$1" 2>/dev/null; then return 0; fi
        sleep 1
    done
    echo "$0: no '$2' in $1 after $3 s" >&2
    return 1
}

# frontend_guest OUTDIR PROBE_ARGS [vm/build-guest.sh options...]: vm/frontend-probe.c compiled
# (OUTDIR/frontend-probe) and the front-end's test guest that runs it with PROBE_ARGS built in OUTDIR
frontend_guest() {
    local dir=$1 args=$2
    shift 2
    mkdir -p "$dir"
    gcc -O2 -Wall -Wextra -Werror -std=c11 -Iguest/include -o "$dir/frontend-probe" vm/frontend-probe.c -Lguest/target -lcuda
    vm/build-guest.sh "$@" --args "$args" "$dir" guest/target "$dir/frontend-probe"
}
