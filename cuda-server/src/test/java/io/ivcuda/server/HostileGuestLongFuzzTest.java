package io.ivcuda.server;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * The long fuzzing run: {@link HostileGuestFuzzer} for 10.5 million inputs (or 6 h). Not part of
 * {@code mvn -B verify}; run it with {@code mvn -B verify -pl cuda-server -am -DskipITs -Pfuzz-long}
 * (figures: docs/benchmarks/fuzzing.md).
 */
class HostileGuestLongFuzzTest extends FuzzRun {
    @FuzzTest(maxDuration = "6h", maxExecutions = 10_500_000)
    void hostileGuest(FuzzedDataProvider data) throws Exception {
        fuzzer.run(data);
    }
}
