#!/bin/sh
# Builds the kit the long fuzz run needs on a machine with only a Java 17 runtime (no Maven, no
# network): the test classes of cuda-server and every jar they use, Jazzer's among them.
#   bench/fuzz/make-kit.sh [KIT]      (default KIT: target/fuzz-kit in the repository, ignored by git)
# Carry KIT, bench/fuzz/long-parallel.sh and a JRE (e.g. the repository's ignored .jre/) to the
# many-core machine and run long-parallel.sh there (docs/benchmarks/fuzzing.md).
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
kit=${1:-$repo/target/fuzz-kit}
case $kit in /*) ;; *) kit=$(pwd)/$kit ;; esac
rm -rf "$kit"
mkdir -p "$kit/lib"
cd "$repo"
# the reactor's modules as jars (never installed into ~/.m2), cuda-server's tests compiled, and
# every test-scope dependency of cuda-server copied beside them
mvn -B -q -pl cuda-server -am -DskipTests -Djazzer.skip -DskipFuzz -Dmdep.prependGroupId=true \
    -DincludeScope=test -DexcludeGroupIds=io.ivcuda -DoutputDirectory="$kit/lib" \
    package dependency:copy-dependencies
# the modules cuda-server uses, as the reactor built them; cuda-server's own classes and tests as folders
cp "$repo"/api/target/ivcuda-api-*.jar "$repo"/wire/target/ivcuda-wire-*.jar "$repo"/common/target/ivcuda-common-*.jar "$kit/lib/"
cp -r "$repo/cuda-server/target/classes" "$kit/classes"
cp -r "$repo/cuda-server/target/test-classes" "$kit/test-classes"
cp "$repo/bench/fuzz/long-parallel.sh" "$kit/"
echo "kit: $kit ($(du -sh "$kit" | cut -f1)); on the other machine: $kit/long-parallel.sh -k $kit -n CORES -t SECONDS"
