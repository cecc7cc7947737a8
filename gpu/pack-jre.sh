#!/usr/bin/env bash
# Packs the Java runtime cuda-server needs for the GPU machine, which has no Java, as
# .jre/jre.tar.xz (about 17 MB; gpu/lib.sh's setup_java unpacks it to /tmp/jre). A device call
# carries at most 64 MiB: the gzip'd runtime of ../shared/tools/device-jre.sh (32 MB) with the
# corpus, .vmcarry and the server's jars is over that; modules left uncompressed by jlink and then
# xz'd as a whole are half its size.
# Modules: what cuda-server and its libraries load (jdeps --print-module-deps on the jar and
# cuda-server/target/lib; java.desktop for java.beans, which Commons Configuration uses).
#   gpu/pack-jre.sh        from the repository root, after mvn package; needs a JDK 17 (JAVA_HOME)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jdk=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
modules=java.base,java.logging,java.xml,java.management,java.naming,java.desktop,java.sql,jdk.unsupported
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$jdk/bin/jlink" --add-modules "$modules" --strip-debug --no-header-files --no-man-pages \
    --compress=0 --output "$work/jre"
# the server started on its test backend until it says ready: the modules are enough
if [ -f "$root/cuda-server/target/cuda-server.jar" ]; then
    region=/dev/shm/ivcuda-pack-jre-$$
    timeout 20 "$work/jre/bin/java" -jar "$root/cuda-server/target/cuda-server.jar" \
        --set region.path="$region" --set backend=host-memory >"$work/server.log" 2>&1 &
    server=$!
    for _ in $(seq 100); do
        grep -q 'CudaServer: ready' "$work/server.log" && break
        kill -0 "$server" 2>/dev/null || break
        sleep 0.2
    done
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -f "$region"
    if ! grep -q 'CudaServer: ready' "$work/server.log"; then
        tail -5 "$work/server.log" >&2
        echo "pack-jre: cuda-server did not become ready with modules $modules" >&2
        exit 1
    fi
fi
mkdir -p "$root/.jre"
tar cJf "$root/.jre/jre.tar.xz" -C "$work/jre" .
ls -la "$root/.jre/jre.tar.xz"
