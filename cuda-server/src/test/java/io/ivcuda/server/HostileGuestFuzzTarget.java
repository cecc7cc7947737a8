package io.ivcuda.server;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import java.nio.file.Files;
import java.util.Comparator;

/**
 * {@link HostileGuestFuzzer} as a plain Jazzer target, for Jazzer's own driver
 * ({@code com.code_intelligence.jazzer.Jazzer --target_class=…}) without JUnit or Maven: the long run
 * on a many-core machine starts several such processes with different seeds
 * (bench/fuzz-long-parallel.sh, docs/benchmarks/fuzzing.md). The same checks as {@link
 * HostileGuestFuzzTest}: a failed check throws, and Jazzer records the input as a finding.
 */
public final class HostileGuestFuzzTarget {
    private static HostileGuestFuzzer fuzzer;

    private HostileGuestFuzzTarget() {
    }

    public static void fuzzerInitialize() throws Exception {
        fuzzer = new HostileGuestFuzzer();
    }

    public static void fuzzerTestOneInput(FuzzedDataProvider data) throws Exception {
        fuzzer.run(data);
    }

    /**
     * Run by Jazzer in the JVM's shutdown, after Log4j has stopped: the server is not closed (its
     * close logs, and the process ends anyway), only its region file removed and the count said.
     */
    public static void fuzzerTearDown() throws Exception {
        System.err.println("hostile-guest fuzzer: " + fuzzer.inputs + " inputs");
        try (var files = Files.walk(fuzzer.dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
