#!/bin/bash
# The long hostile-guest fuzz run on a many-core machine with only a Java 17 runtime: N independent
# Jazzer processes of HostileGuestFuzzer (each its own server, region and corpus), each with its own
# seed, for T seconds; then libFuzzer's final figures of each summed into the table of
# docs/benchmarks/fuzzing.md. The kit comes from bench/fuzz/make-kit.sh.
#   long-parallel.sh -k KIT [-n N] [-t SECONDS] [-s FIRST_SEED] [-o OUT] [-j JAVA] [-m HEAP]
# Exit status 0 when no process found anything and every one ran to its end; 1 otherwise.
set -u
kit= n=1 seconds=30 seed=1 out= java=${JAVA:-java} heap=2g
usage() { sed -n '2,7p' "$0" >&2; exit 2; }
while getopts k:n:t:s:o:j:m:h opt; do
    case $opt in
        k) kit=$OPTARG ;; n) n=$OPTARG ;; t) seconds=$OPTARG ;; s) seed=$OPTARG ;;
        o) out=$OPTARG ;; j) java=$OPTARG ;; m) heap=$OPTARG ;; *) usage ;;
    esac
done
[ -n "$kit" ] && [ -d "$kit/lib" ] && [ -d "$kit/classes" ] && [ -d "$kit/test-classes" ] || { echo "long-parallel.sh: -k KIT (bench/fuzz/make-kit.sh) needed" >&2; usage; }
case "$n$seconds$seed" in *[!0-9]*) echo "long-parallel.sh: -n, -t and -s take numbers" >&2; exit 2 ;; esac
out=${out:-fuzz-long-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
"$java" -version 2>&1 | head -1 > "$out/java-version"

# The test harness is not what is fuzzed: its wait loops, instrumented, fed libFuzzer a comparison per
# spin and were the largest item of the fuzzer's profile (docs/benchmarks/fuzzing.md); every server class
# (decoder, dispatcher, handlers, workers) stays instrumented
harness='io.ivcuda.server.FakeGuest*:io.ivcuda.server.LogCapture'
echo "$(date -u +%FT%TZ) starting $n processes for $seconds s each (seeds $seed..$((seed + n - 1))) in $out"
pids=()
for ((i = 0; i < n; i++)); do
    run=$out/run-$i
    mkdir -p "$run/corpus" "$run/findings"
    # libFuzzer's own time limit, and ours five minutes later (the JVM's start and Jazzer's
    # instrumentation come first) in case a process hangs past it;
    # -keep_going: a finding is written and the run goes on, so every process uses its time;
    # Agrona needs jdk.internal.misc, as in the build's tests (cuda-server/pom.xml's argLine)
    # -XX:-DontCompileHugeMethods: instrumented, the generated Dispatcher's switch is over the JIT's
    # huge-method limit and stayed interpreted, two thirds of a worker's time (docs/benchmarks/fuzzing.md)
    timeout -k 10 $((seconds + 300)) "$java" -Xmx"$heap" -XX:-DontCompileHugeMethods --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -cp "$kit/test-classes:$kit/classes:$kit/lib/*" \
        com.code_intelligence.jazzer.Jazzer \
        --target_class=io.ivcuda.server.HostileGuestFuzzTarget \
        --instrumentation_includes='io.ivcuda.**' --custom_hook_includes='io.ivcuda.**' \
        --instrumentation_excludes="$harness" \
        --keep_going=1000000 \
        -seed=$((seed + i)) -max_total_time="$seconds" -timeout=30 -print_final_stats=1 \
        -artifact_prefix="$run/findings/" "$run/corpus" > "$run/log" 2>&1 &
    pids+=($!)
done
for ((i = 0; i < n; i++)); do
    wait "${pids[$i]}"
    echo $? > "$out/run-$i/status"
done

# libFuzzer's last lines: "Done N runs in S second(s)" and final stats (stat::number_of_executed_units);
# a finding is a file in findings/ (crash-, timeout-, oom-, leak-) and a "== Java Exception" in the log
table=$out/table.md
{
    echo "| process | seed | inputs | seconds | inputs/s | coverage (edges) | findings | exit |"
    echo "|---|---|---|---|---|---|---|---|"
} > "$table"
total_inputs=0 total_findings=0 total_seconds=0 bad=0
for ((i = 0; i < n; i++)); do
    run=$out/run-$i
    inputs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$run/log" | tail -1 | grep -o '[0-9]*$')
    [ -n "$inputs" ] || inputs=$(grep -o 'Done [0-9]* runs' "$run/log" | tail -1 | grep -o '[0-9]\+')
    secs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$run/log" | tail -1 | grep -o '[0-9]* second' | grep -o '[0-9]*')
    cov=$(grep -o 'cov: [0-9]*' "$run/log" | tail -1 | grep -o '[0-9]*$')
    files=$(find "$run/findings" -type f | wc -l)
    exceptions=$(grep -c '== Java Exception' "$run/log")
    findings=$((files > exceptions ? files : exceptions))
    status=$(cat "$run/status")
    inputs=${inputs:-0} secs=${secs:-0}
    rate=$([ "$secs" -gt 0 ] && echo $((inputs / secs)) || echo -)
    echo "| $i | $((seed + i)) | $inputs | $secs | $rate | ${cov:--} | $findings | $status |" >> "$table"
    total_inputs=$((total_inputs + inputs))
    total_findings=$((total_findings + findings))
    total_seconds=$((secs > total_seconds ? secs : total_seconds))
    # 0: libFuzzer ran to its time limit without a finding
    if [ "$findings" -ne 0 ] || [ "$status" -ne 0 ] || [ "$inputs" -eq 0 ]; then bad=1; fi
done
echo "| all $n | $seed..$((seed + n - 1)) | $total_inputs | $total_seconds | $([ "$total_seconds" -gt 0 ] && echo $((total_inputs / total_seconds)) || echo -) | | $total_findings | |" >> "$table"
{
    echo
    echo "$(date -u +%FT%TZ), $(nproc) cores, $(cat "$out/java-version"), $n processes × $seconds s"
} >> "$table"
cat "$table"
exit $bad
