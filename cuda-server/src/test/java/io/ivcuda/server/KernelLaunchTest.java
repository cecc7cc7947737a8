package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.Requests;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.agrona.UnsafeApi;
import org.junit.jupiter.api.Test;

/**
 * Launches with attributes, cluster occupancy and the context extensions over a backend that
 * records the CUlaunchConfig the server built: which attributes pass, which are refused, that a
 * CUkernel is resolved, and that the peer and context calls check their handles and ordinals.
 */
class KernelLaunchTest extends StartedServerCase<KernelLaunchTest.ExBackend> {
    static final long TOKEN = (80L << 32) | 5;
    static final long OTHER = (81L << 32) | 6;

    static final class ExBackend extends LibraryTest.LibraryBackend {
        volatile long function;
        volatile int gridX;
        volatile long stream;
        volatile int[] ids = new int[0];
        volatile int[] firstWords = new int[0];
        volatile long ctxEvent;

        private void record(long config, long f) {
            function = f;
            gridX = UnsafeApi.getInt(config);
            stream = UnsafeApi.getLong(config + 32);
            long attrs = UnsafeApi.getLong(config + 40);
            int n = UnsafeApi.getInt(config + 48);
            int[] id = new int[n];
            int[] word = new int[n];
            for (int i = 0; i < n; i++) {
                id[i] = UnsafeApi.getInt(attrs + 72L * i);
                word[i] = UnsafeApi.getInt(attrs + 72L * i + 8);
            }
            ids = id;
            firstWords = word;
        }

        @Override
        public int launchKernelEx(long config, long f, long kernelParams) {
            record(config, f);
            return CuResult.SUCCESS;
        }

        @Override
        public int occupancyMaxActiveClusters(Out o, long f, long config) {
            record(config, f);
            o.value = 11;
            return CuResult.SUCCESS;
        }

        @Override
        public int occupancyMaxPotentialClusterSize(Out o, long f, long config) {
            record(config, f);
            o.value = 8;
            return CuResult.SUCCESS;
        }

        @Override
        public int occupancyAvailableDynamicSMemPerBlock(Out o, long f, int numBlocks, int blockSize) {
            function = f;
            o.bytes = 1000 + numBlocks;
            return CuResult.SUCCESS;
        }

        @Override
        public int deviceCanAccessPeer(Out o, int device, int peer) {
            o.value = 0;
            return CuResult.SUCCESS;
        }

        @Override
        public int ctxRecordEvent(long ctx, long event) {
            ctxEvent = event;
            return CuResult.SUCCESS;
        }
    }

    KernelLaunchTest() {
        super(TOKEN, ExBackend::new);
    }

    private long kernel(Channel c) {
        byte[] image = new byte[64];
        Response lib = c.streamRequest(Requests.ivc_library_load(LaunchAndModuleTest.fnv1a(image), image.length, 1,
                new byte[0], 0), image);
        assertEquals(CuResult.SUCCESS, lib.result());
        return c.call(Requests.cuLibraryGetKernel(lib.out(0), "k1")).out(0);
    }

    /** CUlaunchAttribute records: (id, first value word) each, 72 bytes. */
    private static byte[] attrs(int... idAndWord) {
        ByteBuffer b = ByteBuffer.allocate(72 * (idAndWord.length / 2)).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < idAndWord.length; i += 2) {
            b.putInt(72 * (i / 2), idAndWord[i]);
            b.putInt(72 * (i / 2) + 8, idAndWord[i + 1]);
        }
        return b.array();
    }

    private int launch(Channel c, long f, byte[] attributes) {
        byte[] params = new byte[4];
        c.post(Requests.ivc_launch_ex(f, 6, 1, 1, 32, 1, 1, 0, 0, attributes, attributes.length, params, params.length));
        return c.call(Requests.cuCtxSynchronize()).result();
    }

    @Test
    void scalarAttributesPassAndOthersAreRefused() {
        Channel c = withContext(0, TOKEN);
        long kernel = kernel(c);
        // cooperative, a 2x1x1 cluster, priority
        assertEquals(CuResult.SUCCESS, launch(c, kernel, attrs(2, 1, 4, 2, 8, -1)));
        assertEquals(LibraryTest.FUNCTION + 1, backend.function, "the kernel's function is launched");
        assertEquals(6, backend.gridX);
        assertEquals(List.of(2, 4, 8), java.util.Arrays.stream(backend.ids).boxed().toList());
        assertEquals(2, backend.firstWords[1], "the cluster's x");
        backend.gridX = 0;
        assertEquals(CuResult.NOT_SUPPORTED, launch(c, kernel, attrs(2, 1, 7, 0)), "a programmatic event is not remoted");
        assertEquals(CuResult.INVALID_VALUE, launch(c, kernel, attrs(99, 0)), "an unknown attribute");
        assertEquals(0, backend.gridX, "neither reached the driver");
        byte[] params = new byte[4];
        c.post(Requests.ivc_launch_ex(kernel, 1, 1, 1, 1, 1, 1, 0, 0, new byte[70], 70, params, 4));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuCtxSynchronize()).result(), "not whole attributes");
        assertEquals(CuResult.INVALID_VALUE, launch(c, kernel, new byte[72 * 17]), "more than 16 attributes");
    }

    @Test
    void clusterOccupancyAndDynamicSharedMemoryResolveKernels() {
        Channel c = withContext(0, TOKEN);
        long kernel = kernel(c);
        byte[] cluster = attrs(4, 2);
        Response active = c.call(Requests.ivc_occupancy_cluster(0, kernel, 8, 1, 1, 128, 1, 1, 0, 0, cluster, cluster.length));
        assertEquals(CuResult.SUCCESS, active.result());
        assertEquals(11, active.out(0));
        assertEquals(LibraryTest.FUNCTION + 1, backend.function);
        Response size = c.call(Requests.ivc_occupancy_cluster(1, kernel, 8, 1, 1, 128, 1, 1, 0, 0, new byte[0], 0));
        assertEquals(8, size.out(0));
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_occupancy_cluster(2, kernel, 8, 1, 1, 128, 1, 1, 0, 0, new byte[0], 0)).result());
        Response smem = c.call(Requests.cuOccupancyAvailableDynamicSMemPerBlock(kernel, 3, 128));
        assertEquals(CuResult.SUCCESS, smem.result());
        assertEquals(1003, smem.out(0));
    }

    @Test
    void peerAndContextCallsCheckOrdinalsAndHandles() {
        Channel c = withContext(0, TOKEN);
        Channel other = withContext(1, OTHER);
        Response peer = c.call(Requests.cuDeviceCanAccessPeer(0, 0));
        assertEquals(CuResult.SUCCESS, peer.result());
        assertEquals(0, peer.out(0));
        assertEquals(CuResult.INVALID_DEVICE, c.call(Requests.cuDeviceCanAccessPeer(0, 1)).result(), "the guest sees one device");
        long ctx = c.call(Requests.cuCtxGetCurrent()).out(0);
        long event = c.call(Requests.cuEventCreate(0)).out(0);
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuCtxRecordEvent(ctx, event)).result());
        assertEquals(CuResult.INVALID_HANDLE, other.call(Requests.cuCtxRecordEvent(
                other.call(Requests.cuCtxGetCurrent()).out(0), event)).result(), "another process's event");
        assertEquals(CuResult.INVALID_CONTEXT, other.call(Requests.cuCtxEnablePeerAccess(ctx, 0)).result(),
                "another process's context");
    }
}
