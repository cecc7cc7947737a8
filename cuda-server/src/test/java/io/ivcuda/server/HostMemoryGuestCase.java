package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.gen.Requests;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Properties;

/**
 * A server on a host-memory backend (or a stand-in derived from it) and a fake guest of it:
 * {@link #greeted} speaks for the test's process ({@link #token()}), {@link #hello} for any other;
 * {@link #status} reads what the server reports of it all.
 */
abstract class HostMemoryGuestCase extends ServerCase {
    abstract long token();

    /** @param settings more server settings ({@code key=value}) */
    void start(HostMemoryBackend backend, String... settings) throws Exception {
        startServer("region", 4, backend, settings);
    }

    /**
     * The status file as the server writes it now (what {@code ivshmem-provisioner status} and
     * {@code metrics} read), read back; the server must have been started with the setting
     * {@code pidfile=DIR/vm.pid}.
     */
    Properties status() throws IOException {
        StatusFile.besidePidfile(config, server).write();
        Properties status = new Properties();
        try (Reader r = Files.newBufferedReader(dir.resolve("vm.status"), StandardCharsets.ISO_8859_1)) {
            status.load(r);
        }
        return status;
    }

    /** Channel {@code index}, greeted and past cuInit. */
    Channel greeted(int index) {
        Channel c = hello(index, token());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuInit(0)).result());
        return c;
    }

    /** Channel {@code index} of the process {@code token}, greeted, past cuInit, with a context it created current. */
    Channel greetedWithContext(int index, long token) {
        Channel c = hello(index, token);
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuInit(0)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuCtxCreate_v2(0, 0)).result());
        return c;
    }

    /** Channel {@code index} of the process {@code token}, greeted, with a context it created current. */
    Channel withContext(int index, long token) {
        Channel c = hello(index, token);
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuCtxCreate_v2(0, 0)).result());
        return c;
    }
}
