package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The compute share (docs/sharing.md): enforced only when the server is an MPS client with the share in its
 * environment and the driver says MPS serves the device; otherwise refused, or unshared when so configured.
 */
class ComputeShareTest {
    /** A driver stand-in that answers CU_DEVICE_ATTRIBUTE_MPS_ENABLED as told (the transport backend's device). */
    static final class MpsDriver extends HostMemoryBackend {
        private final int mpsEnabled;

        MpsDriver(int mpsEnabled) {
            this.mpsEnabled = mpsEnabled;
        }

        @Override
        public int deviceGetAttribute(Out o, int attribute, int device) {
            if (attribute == ComputeShare.CU_DEVICE_ATTRIBUTE_MPS_ENABLED) {
                o.value = mpsEnabled;
                return CuResult.SUCCESS;
            }
            return super.deviceGetAttribute(o, attribute, device);
        }
    }

    private static ServerConfig config(String... sets) throws Exception {
        List<String> all = new java.util.ArrayList<>(List.of("region.path=/nowhere"));
        all.addAll(List.of(sets));
        return ServerConfig.load(List.of(), all);
    }

    private static final Map<String, String> MPS_ENV = Map.of("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25",
            "CUDA_MPS_PIPE_DIRECTORY", "/run/ivcuda-mps");

    @Test
    void theWholeGpuNeedsNoMps() throws Exception {
        ComputeShare s = ComputeShare.check(config(), null, Map.of());
        assertEquals(ComputeShare.State.WHOLE_GPU, s.state());
        assertNull(s.problem());
    }

    @Test
    void aShareMpsServesIsEnforced() throws Exception {
        ComputeShare s = ComputeShare.check(config("compute.share=25"), new MpsDriver(1), MPS_ENV);
        assertEquals(ComputeShare.State.ENFORCED, s.state());
        assertEquals(25, s.share());
    }

    @Test
    void withoutTheControlDaemonTheShareIsRefusedSayingWhere() throws Exception {
        ComputeShare s = ComputeShare.check(config("compute.share=25"), new MpsDriver(0), MPS_ENV);
        assertEquals(ComputeShare.State.REFUSED, s.state());
        assertTrue(s.problem().contains("CUDA_MPS_PIPE_DIRECTORY=/run/ivcuda-mps"), s.problem());
        assertTrue(s.refusal().startsWith("compute share 25 % cannot be enforced: "), s.refusal());
        assertTrue(s.refusal().contains("mps.unavailable=unshared"), s.refusal());
    }

    @Test
    void withoutTheMpsEnvironmentTheShareIsRefusedEvenIfMpsRuns() throws Exception {
        ComputeShare s = ComputeShare.check(config("compute.share=25"), new MpsDriver(1),
                Map.of("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "50"));
        assertEquals(ComputeShare.State.REFUSED, s.state());
        assertTrue(s.problem().contains("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is '50'"), s.problem());
        assertTrue(ComputeShare.check(config("compute.share=25"), new MpsDriver(1), Map.of()).problem().contains("unset"));
    }

    @Test
    void unsharedRunsWithTheWholeGpuAndSaysWhy() throws Exception {
        ComputeShare s = ComputeShare.check(config("compute.share=25", "mps.unavailable=unshared"), new MpsDriver(0), MPS_ENV);
        assertEquals(ComputeShare.State.UNSHARED, s.state());
        assertTrue(s.problem().startsWith("MPS does not serve this process"), s.problem());
    }

    @Test
    void theHostMemoryBackendHasNoMps() throws Exception {
        ComputeShare s = ComputeShare.check(config("compute.share=25", "backend=host-memory"), null, MPS_ENV);
        assertEquals(ComputeShare.State.REFUSED, s.state());
        assertTrue(s.problem().contains("host-memory backend has no GPU"), s.problem());
    }

    /** The refusal as the hook sees it: exit status 4 and one line that starts with "ivcuda-server: ". */
    @Test
    void theServerRefusesAShareItCannotEnforce() {
        PrintStream old = System.err;
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        int status;
        try {
            Main main = new Main();
            main.sets = List.of("region.path=/nowhere", "backend=host-memory", "compute.share=30");
            status = main.call();
        } finally {
            System.setErr(old);
        }
        assertEquals(Main.EXIT_NO_SHARE, status);
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("ivcuda-server: compute share 30 % cannot be enforced"),
                err.toString(StandardCharsets.UTF_8));
    }
}
