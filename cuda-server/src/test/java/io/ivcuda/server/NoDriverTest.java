package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.backend.JnaCudaBackend;
import io.ivcuda.server.backend.NoDriver;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.gen.Requests;
import io.ivcuda.wire.HeaderFlyweight;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Without libcuda.so.1 the server still becomes READY and answers cuInit with CUDA_ERROR_NO_DEVICE. */
class NoDriverTest {
    @TempDir
    Path dir;

    @Test
    void guestsGetNoDeviceCleanly() throws Exception {
        assumeTrue(NoDriver.is(JnaCudaBackend.load()), "this host has a driver");
        Path region = dir.resolve("region");
        long size = 16L << 20;
        try (CudaServer server = new CudaServer(ServerConfig.load(List.of(),
                List.of("region.path=" + region, "region.size=" + size, "channel.count=2")))) {
            server.start();
            try (FakeGuest guest = new FakeGuest(region, size)) {
                assertEquals(0, guest.header.getInt(HeaderFlyweight.HOST_DRIVER_VERSION_OFFSET, FakeGuest.LE));
                Channel c = guest.claim(0, 99L << 32 | 1);
                assertEquals(CuResult.SUCCESS, c.hello().result());
                assertEquals(CuResult.NO_DEVICE, c.call(Requests.cuInit(0)).result());
                assertEquals(CuResult.NO_DEVICE, c.call(Requests.cuDeviceGetCount()).result());
            }
        }
    }
}
