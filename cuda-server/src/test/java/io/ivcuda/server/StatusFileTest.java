package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.gen.Requests;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The status file's refusal counters: one per kind of refusal, their sum, and no count for what was not refused. */
class StatusFileTest {
    static final long SIZE = 16L << 20;

    @TempDir
    Path dir;
    CudaServer server;
    FakeGuest guest;

    @AfterEach
    void stop() {
        if (guest != null) {
            guest.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void refusalsAreCountedPerKindInTheStatusFile() throws Exception {
        Path region = dir.resolve("region");
        ServerConfig config = ServerConfig.load(List.of(), List.of("region.path=" + region, "region.size=" + SIZE,
                "channel.count=2", "backend=host-memory", "pidfile=" + dir.resolve("vm.pid")));
        server = new CudaServer(config, new HostMemoryBackend());
        server.start();
        guest = new FakeGuest(region, SIZE);
        Channel c = guest.claim(0, (42L << 32) | 1);
        assertEquals(CuResult.SUCCESS, c.hello().result());
        for (int i = 0; i < 3; i++) {
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_mem_free(0x1234 + i)).result());
        }
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuMemsetD8_v2(0x1234, 1, 16)).result());

        StatusFile.besidePidfile(config, server).write();
        Properties status = new Properties();
        try (Reader r = Files.newBufferedReader(dir.resolve("vm.status"), StandardCharsets.ISO_8859_1)) {
            status.load(r);
        }
        long sum = 0;
        for (String key : status.stringPropertyNames()) {
            if (key.startsWith("refusals.")) {
                assertFalse(key.contains(" "), key);
                sum += Long.parseLong(status.getProperty(key));
            }
        }
        assertEquals(server.vm().refusals().refusalCounts().size(),
                status.stringPropertyNames().stream().filter(k -> k.startsWith("refusals.")).count(), status.toString());
        assertEquals(Long.toString(sum), status.getProperty("refusals"));
        assertTrue(sum >= 4, status.toString());
        assertEquals("3", status.getProperty("refusals.ivc_mem_free.dptr"), "the three frees of nothing: " + status);
        assertTrue(status.stringPropertyNames().stream().anyMatch(k -> k.startsWith("refusals.cuMemsetD8")), status.toString());
        // a hello is bounded in the log like a refusal, but nothing was refused
        assertFalse(status.stringPropertyNames().stream().anyMatch(k -> k.startsWith("refusals.ivc_hello")), status.toString());
        assertEquals("ivc_mem_alloc.bytesize", StatusFile.key(" ivc_mem_alloc  bytesize"));
    }
}
