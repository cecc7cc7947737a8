#!/usr/bin/env bash
# Host-side figures on the CI kind of machine (no GPU needed): what the libvirt hook adds to a
# domain's start, and an idle server's memory and CPU. Run as root from the repository root
# after `mvn -B package -DskipTests`:
#
#   bench/host.sh            # prints a markdown table; exit non-zero only if it could not run
#
# Untagged: the installed launcher (libvirt-hook/src/main/sh/50-ivcuda) on the saved untagged
# domain XML, every start-up operation libvirt calls it for, 200 calls each.
# Tagged: `prepare begin` on the saved tagged XML (creates the region, starts the real
# cuda-server, waits for READY), then `release end`; the server's own start is measured
# alone with the same configuration, so "hook overhead" = hook prepare − server start.
# Idle: one plain-mode server on a 256 MiB region, no guest attached: RSS after 10 s, CPU
# time over the next 30 s (from /proc/<pid>/stat).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ "$(id -u)" = 0 ] || { echo "bench/host.sh: run as root (the hook creates files under /dev/shm and /run)" >&2; exit 2; }
jar=$root/cuda-server/target/cuda-server.jar
[ -f "$jar" ] && [ -f libvirt-hook/target/libvirt-hook.jar ] || { echo "bench/host.sh: build first (mvn -B package -DskipTests)" >&2; exit 2; }

work=$(mktemp -d /tmp/ivcuda-hostbench.XXXXXX)
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    IVCUDA_CONFIG=$work/ivcuda.properties IVCUDA_HOME=$root/libvirt-hook/target \
        libvirt-hook/src/main/sh/50-ivcuda "$name" release end - <"$tagged" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
domains=libvirt-hook/src/test/resources/domains
untagged=$domains/untagged.xml
tagged=$domains/tagged-prepare-begin.xml
name=$(sed -n 's:.*<name>\(.*\)</name>.*:\1:p' "$tagged" | head -1)
uuid=$(sed -n 's:.*<uuid>\(.*\)</uuid>.*:\1:p' "$tagged" | head -1)
server_cmd="java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m -jar $jar"
cat >"$work/ivcuda.properties" <<EOF
runtime.dir=$work/run
log.dir=$work/log
server.launch=direct
server.user=root
qemu.group=root
server.command=$server_cmd
EOF
mkdir -p "$work/run" "$work/log"
export IVCUDA_CONFIG=$work/ivcuda.properties IVCUDA_HOME=$root/libvirt-hook/target

# Microseconds since $1 (a now_us value); bash's own clock, so timing forks nothing itself.
now_us() { local t=${EPOCHREALTIME/./}; echo "$t"; }
us_since() { echo $(( $(now_us) - $1 )); }
stats() { # microseconds in, "p50 p99" in milliseconds out
    sort -n | awk '{a[NR] = $1} END {k = int(NR * 0.99); if (k < 1) k = 1; printf "%.2f %.2f\n", a[int((NR + 1) / 2)] / 1000, a[k] / 1000}'
}

echo "| measure | p50 | p99 | samples |"
echo "|---|---|---|---|"
printf '#!/bin/sh\ncat >/dev/null\n' >"$work/empty-hook"
chmod +x "$work/empty-hook"
for _ in $(seq 200); do
    t=$(now_us)
    "$work/empty-hook" untagged-domain prepare begin - <"$untagged"
    us_since "$t"
done | stats | { read -r p50 p99; echo "| baseline: an empty /bin/sh hook reading its stdin (any hook costs this) | $p50 ms | $p99 ms | 200 |"; }
for op in "prepare begin" "start begin" "started begin" "stopped end" "release end"; do
    for _ in $(seq 200); do
        t=$(now_us)
        libvirt-hook/src/main/sh/50-ivcuda untagged-domain $op - <"$untagged"
        us_since "$t"
    done | stats | { read -r p50 p99; echo "| hook, untagged domain, $op | $p50 ms | $p99 ms | 200 |"; }
done

# the one wait for READY: guest/tools/ivcuda-region-wait.c (built by mvn package with the guest library)
region_wait=$root/guest/target/ivcuda-region-wait
[ -x "$region_wait" ] || { echo "bench/host.sh: $region_wait missing (mvn -B package -DskipTests)" >&2; exit 2; }

hook_ms=()
server_ms=()
for _ in 1 2 3 4 5; do
    t=$(now_us)
    libvirt-hook/src/main/sh/50-ivcuda "$name" prepare begin - <"$tagged"
    hook_ms+=("$(us_since "$t")")
    cp "$work/run/$uuid.properties" "$work/instance.properties"
    libvirt-hook/src/main/sh/50-ivcuda "$name" release end - <"$tagged"
    # the server alone, same instance configuration, same region size
    region=$(sed -n 's/^region.path=//p' "$work/instance.properties")
    size=$(sed -n 's/^region.size=//p' "$work/instance.properties")
    truncate -s "$size" "$region"
    t=$(now_us)
    $server_cmd --config "$work/instance.properties" >"$work/log/alone.log" 2>&1 &
    server_pid=$!
    "$region_wait" --pid "$server_pid" "$region" 60 >/dev/null
    server_ms+=("$(us_since "$t")")
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
    rm -f "$region" "$work/run/$uuid.pid"
done
hook_p50=$(printf '%s\n' "${hook_ms[@]}" | stats | cut -d' ' -f1)
server_p50=$(printf '%s\n' "${server_ms[@]}" | stats | cut -d' ' -f1)
echo "| hook, tagged domain, prepare begin (region + server start + READY) | $hook_p50 ms | — | 5 |"
echo "| cuda-server alone, start to READY (same configuration) | $server_p50 ms | — | 5 |"
echo "| hook overhead beyond the server's own start | $(awk -v a="$hook_p50" -v b="$server_p50" 'BEGIN {printf "%.1f", a - b}') ms | — | 5 |"

# An idle server: memory and CPU.
region=/dev/shm/ivcuda-hostbench-$$
$server_cmd --set region.path="$region" --set region.size=268435456 >"$work/log/idle.log" 2>&1 &
server_pid=$!
"$region_wait" --pid "$server_pid" "$region" 60 >/dev/null
sleep 10
rss=$(awk '/^VmRSS/ {print $2}' /proc/$server_pid/status)
anon=$(awk '/^RssAnon/ {print $2}' /proc/$server_pid/status)
shmem=$(awk '/^RssShmem/ {print $2}' /proc/$server_pid/status)
ticks() { awk '{print $14 + $15}' /proc/$server_pid/stat; }
hz=$(getconf CLK_TCK)
c0=$(ticks); sleep 30; c1=$(ticks)
echo "| idle server RSS (256 MiB region, no guest) | $((rss / 1024)) MiB (anon $((anon / 1024)), region pages $((shmem / 1024))) | — | 1 |"
echo "| idle server CPU, plain mode, no guest, 30 s | $(awk -v d=$((c1 - c0)) -v hz="$hz" 'BEGIN {printf "%.2f", 100 * d / hz / 30}') % of a core | — | 1 |"
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
rm -f "$region"
