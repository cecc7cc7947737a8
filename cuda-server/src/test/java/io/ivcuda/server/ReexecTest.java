package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What the re-executed image is given (the exec itself runs in tests/xlang, where it replaces a real server). */
class ReexecTest {
    @Test
    void theNewImageLearnsItIsARecoveryAndWhereTheRegionWas() {
        Map<String, String> first = Map.of("PATH", "/usr/bin", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25");
        List<String> env = Arrays.asList(Reexec.environment(first, "pid 7 cuCtxSynchronize: CUDA_ERROR_ASSERT", 0x7f0000000000L));
        assertTrue(env.contains("PATH=/usr/bin") && env.contains("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"),
                "the environment goes on (an MPS share with it): " + env);
        assertTrue(env.contains(Reexec.RECOVERIES + "=1"), env.toString());
        assertTrue(env.contains(Reexec.RECOVERED_FROM + "=pid 7 cuCtxSynchronize: CUDA_ERROR_ASSERT"), env.toString());
        Map<String, String> second = Map.of(Reexec.RECOVERIES, "1", Reexec.REGION_ADDRESS, "7f0000000000");
        assertEquals(1, Reexec.recoveries(second));
        assertEquals(0x7f0000000000L, Reexec.regionAddress(second));
        assertTrue(Arrays.asList(Reexec.environment(second, "x", 0x1000)).contains(Reexec.RECOVERIES + "=2"));
    }

    @Test
    void junkInTheEnvironmentIsNoAddressAndNoRecovery() {
        for (String bad : new String[] {"", "zz", "7f0000000001", "-1", "12345678901234567"}) {
            assertEquals(0, Reexec.regionAddress(Map.of(Reexec.REGION_ADDRESS, bad)), bad);
        }
        assertEquals(0, Reexec.recoveries(Map.of(Reexec.RECOVERIES, "many")));
        assertEquals(0, Reexec.recoveries(Map.of()));
    }

    @Test
    void theCommandLineIsThisProcesssOwn() throws Exception {
        List<String> args = Reexec.commandLine();
        assertFalse(args.isEmpty());
        assertTrue(args.get(0).contains("java"), "argv[0] of a JVM: " + args);
    }
}
