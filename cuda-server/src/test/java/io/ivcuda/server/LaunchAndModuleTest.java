package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Requests;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.agrona.UnsafeApi;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The module and launch path over a backend that records what reaches the driver: images
 * streamed and kept by hash, the parameter layout, and the rebuilt {@code void**}.
 */
class LaunchAndModuleTest extends ServerCase {
    static final long TOKEN = (77L << 32) | 5;

    /** kernel(int a, double b, char c, void *p): offsets 0, 8, 16, 24. */
    static final class KernelBackend extends HostMemoryBackend {
        static final long[][] PARAMS = {{0, 4}, {8, 8}, {16, 1}, {24, 8}};
        volatile long loadedImageFirstLong;
        volatile int loads;
        volatile byte[] launchedParams;
        volatile int launchedGridX;

        @Override
        public int moduleLoadData(Out o, long image) {
            loadedImageFirstLong = UnsafeApi.getLong(image);
            loads++;
            o.handle = 0xAA00;
            return CuResult.SUCCESS;
        }

        @Override
        public int moduleGetFunction(Out o, long module, String name) {
            o.handle = module + 1;
            return name.equals("kernel") ? CuResult.SUCCESS : CuResult.NOT_FOUND;
        }

        @Override
        public int funcGetParamInfo(Out o, long function, long index) {
            if (index >= PARAMS.length) {
                return CuResult.INVALID_VALUE;
            }
            o.offset = PARAMS[(int) index][0];
            o.bytes = PARAMS[(int) index][1];
            return CuResult.SUCCESS;
        }

        @Override
        public int launchKernel(long function, int gx, int gy, int gz, int bx, int by, int bz, int sharedMem,
                                long stream, long kernelParams) {
            byte[] packed = new byte[32];
            for (int i = 0; i < PARAMS.length; i++) {
                long p = UnsafeApi.getLong(kernelParams + 8L * i);
                for (int b = 0; b < PARAMS[i][1]; b++) {
                    packed[(int) PARAMS[i][0] + b] = UnsafeApi.getByte(p + b);
                }
            }
            launchedParams = packed;
            launchedGridX = gx;
            return CuResult.SUCCESS;
        }
    }

    KernelBackend backend;

    @BeforeEach
    void start() throws Exception {
        backend = new KernelBackend();
        startServer("region", 4, backend);
    }

    static long fnv1a(byte[] b) {
        long h = 0xcbf29ce484222325L;
        for (byte x : b) {
            h ^= x & 0xff;
            h *= 0x100000001b3L;
        }
        return h;
    }

    /** Sends an image through the window as ivc_module_load with sendImage 1. */
    private Response load(Channel c, byte[] image, long hash, int send) {
        Requests.Request p = Requests.ivc_module_load(hash, image.length, send, new byte[0], 0);
        if (send == 0) {
            return c.call(p);
        }
        return c.streamRequest(p, image);
    }

    @Test
    void imagesAreStreamedCheckedAndKeptByHash() {
        Channel c = guest.claim(0, TOKEN);
        assertEquals(CuResult.SUCCESS, c.hello().result());
        byte[] image = new byte[guest.windowSize + 100];
        ByteBuffer.wrap(image).order(ByteOrder.LITTLE_ENDIAN).putLong(0, 0x464c457fL);
        image[image.length - 1] = 9;
        long hash = fnv1a(image);
        assertEquals(CuResult.NOT_FOUND, load(c, image, hash, 0).result(), "not kept yet");
        assertEquals(CuResult.INVALID_VALUE, load(c, image, hash + 1, 1).result(), "hash does not match the bytes");
        Response first = load(c, image, hash, 1);
        assertEquals(CuResult.SUCCESS, first.result());
        assertEquals(0x464c457fL, backend.loadedImageFirstLong);
        long firstModule = first.out(0);
        Response again = load(c, image, hash, 0);
        assertEquals(CuResult.SUCCESS, again.result(), "kept by hash and size");
        assertEquals(2, backend.loads);
        assertTrue(firstModule != again.out(0), "each load is its own module handle");
    }

    @Test
    void launchRebuildsKernelParamsFromTheLayout() {
        Channel c = guest.claim(0, TOKEN);
        assertEquals(CuResult.SUCCESS, c.hello().result());
        byte[] image = new byte[64];
        long module = load(c, image, fnv1a(image), 1).out(0);
        Response fn = c.call(Requests.cuModuleGetFunction(module, "kernel"));
        assertEquals(CuResult.SUCCESS, fn.result());
        long function = fn.out(0);
        Response layout = c.call(Requests.ivc_param_layout(16, function));
        assertEquals(CuResult.SUCCESS, layout.result());
        assertEquals(4, layout.out(0));
        assertEquals(32, layout.out(1), "4 entries of 8 bytes");
        assertEquals(8L << 32 | 8, layout.out(3), "second entry: offset 8, size 8");
        byte[] packed = new byte[32];
        for (int i = 0; i < packed.length; i++) {
            packed[i] = (byte) (i + 1);
        }
        c.post(Requests.ivc_launch(function, 7, 1, 1, 32, 1, 1, 0, 0, packed, packed.length));
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuCtxSynchronize()).result());
        assertEquals(7, backend.launchedGridX);
        byte[] expected = packed.clone();
        for (int i : new int[] {4, 5, 6, 7, 17, 18, 19, 20, 21, 22, 23}) {
            expected[i] = 0; // padding between parameters is not passed
        }
        org.junit.jupiter.api.Assertions.assertArrayEquals(expected, backend.launchedParams);
        // a short parameter buffer is refused, and reported by the next sync call
        c.post(Requests.ivc_launch(function, 1, 1, 1, 1, 1, 1, 0, 0, new byte[16], 16));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuCtxSynchronize()).result());
        // a module id is not a function
        c.post(Requests.ivc_launch(module, 1, 1, 1, 1, 1, 1, 0, 0, packed, packed.length));
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuCtxSynchronize()).result());
    }
}
