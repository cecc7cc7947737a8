package io.ivcuda.server;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Jazzer on the request decoder, the dispatcher's checks, the handlers and the ring and channel
 * state machine ({@link HostileGuestFuzzer}). {@code mvn -B verify} runs it twice: the seeds
 * under {@code src/test/resources/.../HostileGuestFuzzTestInputs} as regression tests, and in the
 * {@code fuzz} execution (JAZZER_FUZZ=1) as a fuzzing run of {@code maxDuration}. The ≥ 10⁷-input
 * run is {@link HostileGuestLongFuzzTest} (docs/benchmarks/fuzzing.md).
 */
class HostileGuestFuzzTest extends FuzzRun {
    @FuzzTest(maxDuration = "60s")
    void hostileGuest(FuzzedDataProvider data) throws Exception {
        fuzzer.run(data);
    }
}
