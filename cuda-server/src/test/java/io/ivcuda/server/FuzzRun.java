package io.ivcuda.server;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** One {@link HostileGuestFuzzer} per fuzz test class (Jazzer fuzzes one test per JVM), closed with its figures. */
abstract class FuzzRun {
    static HostileGuestFuzzer fuzzer;

    @BeforeAll
    static void start() throws Exception {
        fuzzer = new HostileGuestFuzzer();
    }

    @AfterAll
    static void stop() throws Exception {
        System.out.println("hostile-guest fuzzer: " + fuzzer.inputs + " inputs, "
                + fuzzer.server.vm().refusals().counts().size() + " kinds of refusal seen");
        fuzzer.close();
    }
}
