package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.CudaBackend;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * A cuda-server over a region file in the test's temp folder and a {@link FakeGuest} mapping of it,
 * both closed after each test: the setup the server tests on a region share ({@link HostMemoryGuestCase}
 * and its tests, {@link ServerIntegrationTest}, {@link RingSizeTest}, {@link LaunchAndModuleTest}).
 */
abstract class ServerCase {
    static final long SIZE = 32L << 20;

    @TempDir
    Path dir;
    ServerConfig config;
    CudaServer server;
    FakeGuest guest;

    /**
     * Starts a server on the region file {@code name} in {@link #dir} ({@link #SIZE} bytes, {@code channels}
     * channels, backend=host-memory, then {@code settings}) and maps the region as the guest does.
     *
     * @param backend the server's backend; null: the one its configuration chooses
     * @param settings more server settings ({@code key=value})
     */
    void startServer(String name, int channels, CudaBackend backend, String... settings) throws Exception {
        Path region = dir.resolve(name);
        List<String> all = new ArrayList<>(List.of("region.path=" + region, "region.size=" + SIZE,
                "channel.count=" + channels, "backend=host-memory"));
        all.addAll(List.of(settings));
        config = ServerConfig.load(List.of(), all);
        server = new CudaServer(config, backend);
        server.start();
        guest = new FakeGuest(region, SIZE);
    }

    @AfterEach
    void stop() {
        if (guest != null) {
            guest.close();
        }
        if (server != null) {
            server.close();
        }
    }

    /** Channel {@code index} claimed by the process {@code token} and greeted, nothing more. */
    Channel hello(int index, long token) {
        Channel c = guest.claim(index, token);
        assertEquals(CuResult.SUCCESS, c.hello().result());
        return c;
    }

    static long ok(Response r) {
        assertEquals(CuResult.SUCCESS, r.result());
        return r.out(0);
    }
}
