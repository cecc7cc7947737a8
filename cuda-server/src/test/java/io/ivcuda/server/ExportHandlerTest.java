package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Requests;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The export-table slots the guest sends to the server (docs/export-tables.md). The real
 * driver's answer needs a GPU machine (gpu/cudart.sh); here: the host-memory backend
 * refuses plainly, and the channel keeps working.
 */
class ExportHandlerTest {
    static final long SIZE = 16L << 20;

    @TempDir
    Path dir;

    @Test
    void theHostMemoryBackendCannotAnswerTheIntegrityCheckAndSaysSo() throws Exception {
        Path region = dir.resolve("region");
        try (CudaServer server = new CudaServer(ServerConfig.load(List.of(), List.of("region.path=" + region,
                "region.size=" + SIZE, "channel.count=2", "backend=host-memory")))) {
            server.start();
            try (FakeGuest guest = new FakeGuest(region, SIZE)) {
                Channel c = guest.claim(0, (77L << 32) | 1);
                assertEquals(CuResult.SUCCESS, c.hello().result());
                assertEquals(CuResult.SUCCESS, c.call(Requests.cuInit(0)).result());
                FakeGuest.Response r = c.call(Requests.ivc_export_integrity_check(13000, 1_796_000_000L));
                assertEquals(CuResult.NOT_SUPPORTED, r.result());
                assertEquals(CuResult.SUCCESS, c.call(Requests.cuDeviceGetCount()).result());
            }
        }
    }
}
