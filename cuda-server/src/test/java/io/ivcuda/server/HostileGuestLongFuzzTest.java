package io.ivcuda.server;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The long fuzzing run: {@link HostileGuestFuzzer} for 10.5 million inputs (or 6 h). Not part of
 * {@code mvn -B verify}; run it with {@code mvn -B verify -pl cuda-server -am -DskipITs -Pfuzz-long}
 * (figures: docs/benchmarks/fuzzing.md).
 */
class HostileGuestLongFuzzTest {
    static HostileGuestFuzzer fuzzer;

    @BeforeAll
    static void start() throws Exception {
        fuzzer = new HostileGuestFuzzer();
    }

    @AfterAll
    static void stop() throws Exception {
        System.out.println("HostileGuestLongFuzzTest: " + fuzzer.inputs + " inputs, refusals " + fuzzer.server.vm().refusals().counts().size() + " kinds");
        fuzzer.close();
    }

    @FuzzTest(maxDuration = "6h", maxExecutions = 10_500_000)
    void hostileGuest(FuzzedDataProvider data) throws Exception {
        fuzzer.run(data);
    }
}
