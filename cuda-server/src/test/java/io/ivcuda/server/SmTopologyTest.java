package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.Requests;
import org.agrona.UnsafeApi;
import org.junit.jupiter.api.Test;

/**
 * Export table 1734dc26's SM topology (docs/export-tables.md), asked by the guest for cuBLASLt:
 * the backend's two arrays go back whole, first then second, with their length; a backend without
 * a GPU refuses plainly; a guest buffer too small for both is refused, never written past.
 */
class SmTopologyTest extends HostMemoryGuestCase {
    @Override
    long token() {
        return (4242L << 32) | 17;
    }

    /** A GPU of 6 SMs: three TPCs in GPCs 0, 1, 0, with indexes 0, 0, 1 in them. */
    static class TopologyBackend extends HostMemoryBackend {
        @Override
        public int smTopology(Out o) {
            byte[] arrays = {0, 1, 0, 0, 0, 1};
            for (int i = 0; i < arrays.length; i++) {
                UnsafeApi.putByte(o.scratch + CudaBackend.SM_TOPOLOGY_OFFSET + i, arrays[i]);
            }
            o.value = 3;
            return CuResult.SUCCESS;
        }
    }

    @Test
    void theTwoArraysComeBackWithTheirLength() throws Exception {
        start(new TopologyBackend());
        Channel c = greeted(0);
        Response r = c.call(Requests.ivc_sm_topology(64));
        assertEquals(CuResult.SUCCESS, r.result());
        assertEquals(3, r.out(0), "entries per array");
        int at = r.payload() + 8;
        assertEquals(6, r.buffer().getLong(at, java.nio.ByteOrder.LITTLE_ENDIAN), "both arrays' bytes");
        byte[] got = new byte[6];
        r.buffer().getBytes(at + 8, got);
        assertEquals("[0, 1, 0, 0, 0, 1]", java.util.Arrays.toString(got));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_sm_topology(5)).result(), "room for one array only");
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuDeviceGetCount()).result(), "the channel goes on");
    }

    @Test
    void aBackendWithoutAGpuRefusesIt() throws Exception {
        start(new HostMemoryBackend());
        Channel c = greeted(0);
        assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.ivc_sm_topology(1024)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuDeviceGetCount()).result());
    }
}
