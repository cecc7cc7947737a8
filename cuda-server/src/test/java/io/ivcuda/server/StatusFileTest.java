package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.gen.Requests;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/** The status file's refusal counters: one per kind of refusal, their sum, and no count for what was not refused. */
class StatusFileTest extends HostMemoryGuestCase {
    @Override
    long token() {
        return (42L << 32) | 1;
    }

    @Test
    void refusalsAreCountedPerKindInTheStatusFile() throws Exception {
        start(new HostMemoryBackend(), "pidfile=" + dir.resolve("vm.pid"));
        Channel c = hello(0, token());
        for (int i = 0; i < 3; i++) {
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_mem_free(0x1234 + i)).result());
        }
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuMemsetD8_v2(0x1234, 1, 16)).result());

        Properties status = status();
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
