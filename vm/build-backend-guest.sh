#!/usr/bin/env bash
# Builds the back-end test guest of docs/backend-domains.md: the test guest of vm/build-guest.sh
# plus a jlink'd Java runtime, the cuda-server and the back-end agent (their jars with lib/), a
# --before script that starts the agent in the background (vm/backend-before.sh) and a program
# that keeps the back-end up until the domain is destroyed (vm/backend-hold.sh). The front-end
# guest needs no builder of its own: vm/build-guest.sh with vm/frontend-probe.c.
#
# usage: vm/build-backend-guest.sh [--agent-args ARGS] [--java-opts OPTS] [--before FILE]
#                                  [--modules NAMES]... [--files SRC=DEST]...
#                                  OUTDIR GUEST_LIB_DIR SERVER_JAR AGENT_JAR
#   SERVER_JAR, AGENT_JAR  cuda-server/target/cuda-server.jar and the agent's jar; each with the
#                          lib/ beside it (what Maven's dependency plugin copies there)
#   --agent-args ARGS      the agent's arguments in the guest (default: the host-memory backend,
#                          the server command of this image; see DEFAULT_AGENT_ARGS)
#   --java-opts OPTS       the JVM options of the agent and of the servers it starts (through
#                          JAVA_TOOL_OPTIONS, which every JVM of the guest reads)
#   --before FILE          a script sourced before the agent starts (tests: extra variables)
#   --modules, --files     passed to vm/build-guest.sh (doorbell slots: vfio's modules and
#                          ivcuda-guest-irqd, vm/backend-doorbell.sh)
# Writes OUTDIR/vmlinuz and OUTDIR/initramfs.cpio.gz; keeps OUTDIR/jre (the jlink'd runtime) and
# reuses it while the module list and this host's JDK are the same (jlink takes about a minute
# on a loaded 2-core machine).
#
# Inside the guest: /opt/ivcuda/jre, /opt/ivcuda/backend/ with cuda-server.jar, the agent's jar and
# one lib/ for both, /etc/ivcuda-backend.env (what vm/backend-before.sh runs).
# Console lines, besides vm/build-guest.sh's:
#   IVCUDA-AGENT: <line>              the agent's stdout and stderr, line by line
#   IVCUDA-AGENT-STARTED pid=<n>      the agent's JVM was started (not yet initialised)
#   IVCUDA-AGENT-EXITED rc=<n>        the agent stopped (vm/backend-hold.sh keeps the VM up anyway)
#   IVCUDA-BACKEND-HOLDING            the back-end is up and stays up until it is destroyed
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() {
    echo "usage: $0 [--agent-args ARGS] [--java-opts OPTS] [--before FILE] [--modules NAMES]... [--files SRC=DEST]... OUTDIR GUEST_LIB_DIR SERVER_JAR AGENT_JAR" >&2
    exit 2
}
# Small heaps, C1 only and the serial collector: a JVM under TCG starts in tens of seconds with
# the defaults; this is what keeps three of them (agent + two servers) inside a 1 GiB guest.
java_opts="-Xmx128m -Xss512k -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:CICompilerCount=1 -Xshare:auto"
DEFAULT_AGENT_ARGS="--set backend=host-memory"
agent_args=$DEFAULT_AGENT_ARGS
extra_before=
guest_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --agent-args) [ $# -ge 2 ] || usage; agent_args=$2; shift 2 ;;
        --java-opts) [ $# -ge 2 ] || usage; java_opts=$2; shift 2 ;;
        --before) [ $# -ge 2 ] && [ -f "$2" ] || usage; extra_before=$2; shift 2 ;;
        --modules | --files) [ $# -ge 2 ] || usage; guest_args+=("$1" "$2"); shift 2 ;;
        -*) usage ;;
        *) break ;;
    esac
done
[ $# -eq 4 ] || usage
out=$(mkdir -p "$1" && cd "$1" && pwd)
guest_lib=$2
server_jar=$3
agent_jar=$4
for jar in "$server_jar" "$agent_jar"; do
    [ -f "$jar" ] || { echo "$0: no $jar (build it first: mvn -B -q package -DskipTests)" >&2; exit 2; }
    [ -d "$(dirname "$jar")/lib" ] || { echo "$0: no lib/ beside $jar (its dependencies)" >&2; exit 2; }
done

# ---- the Java runtime: only the modules the two jars and their libraries use -----------------
# jdeps follows the jars' references into lib/ (class path, not module path: some of the
# libraries are modules whose own requirements we do not ship).
class_path="$(dirname "$server_jar")/lib/*:$(dirname "$agent_jar")/lib/*"
modules=$(jdeps --print-module-deps --ignore-missing-deps --multi-release 17 --class-path "$class_path" \
    "$server_jar" "$agent_jar" | tail -1)
[[ "$modules" =~ ^[a-z.,]+$ ]] || { echo "$0: jdeps gave no module list: $modules" >&2; exit 1; }
stamp="$(java -version 2>&1 | head -1) $modules"
if [ ! -f "$out/jre/ivcuda-stamp" ] || [ "$(cat "$out/jre/ivcuda-stamp")" != "$stamp" ]; then
    rm -rf "$out/jre"
    # --generate-cds-archive: the JDK's class-data archive for this runtime; it saves the JVM
    # most of its class loading under TCG
    jlink --add-modules "$modules" --strip-debug --strip-native-debug-symbols=exclude-debuginfo-files \
        --no-header-files --no-man-pages --compress=2 --generate-cds-archive --output "$out/jre"
    # the archive for heaps over 32 GiB (uncompressed oops): not for these small JVMs
    rm -f "$out/jre/lib/server/classes_nocoops.jsa"
    echo "$stamp" >"$out/jre/ivcuda-stamp"
fi
echo "java runtime: $out/jre ($modules; $(du -sh "$out/jre" | cut -f1))"

# ---- what /etc/ivcuda-backend.env says -------------------------------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
agent_name=$(basename "$agent_jar")
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; } # single-quoted for busybox sh
{
    echo "# written by vm/build-backend-guest.sh; sourced by vm/backend-before.sh"
    echo "IVCUDA_JAVA=$(q /opt/ivcuda/jre/bin/java)"
    echo "IVCUDA_JAVA_OPTS=$(q "$java_opts")"
    echo "IVCUDA_AGENT_JAR=$(q "/opt/ivcuda/backend/$agent_name")"
    echo "IVCUDA_AGENT_ARGS=$(q "$agent_args")"
} >"$work/backend.env"
before=$work/before.sh
{
    [ -z "$extra_before" ] || cat "$extra_before"
    cat "$here/backend-before.sh"
} >"$before"

# One folder, one lib/: the agent's default server command is its own JVM running the
# cuda-server.jar beside its jar (as the ivcuda-backend packages lay them out).
mkdir -p "$work/backend/lib"
cp "$(dirname "$server_jar")"/lib/*.jar "$work/backend/lib/"
cp "$(dirname "$agent_jar")"/lib/*.jar "$work/backend/lib/" # the same names are the same versions (one build)
cp "$server_jar" "$work/backend/cuda-server.jar"
[ "$agent_jar" -ef "$server_jar" ] || cp "$agent_jar" "$work/backend/$agent_name"
"$here/build-guest.sh" "${guest_args[@]}" \
    --files "$out/jre=/opt/ivcuda/jre" \
    --files "$work/backend=/opt/ivcuda/backend" \
    --files "$work/backend.env=/etc/ivcuda-backend.env" \
    --before "$before" \
    "$out" "$guest_lib" "$here/backend-hold.sh"
