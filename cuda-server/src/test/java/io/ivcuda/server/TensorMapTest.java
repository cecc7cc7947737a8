package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.gen.Requests;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.UnsafeApi;
import org.junit.jupiter.api.Test;

/**
 * Tensor maps (docs/memory.md "Tensor maps") through a real server. The host-memory backend has no
 * driver to encode one and answers CUDA_ERROR_NOT_SUPPORTED; a stand-in of the driver's encoders
 * records what reached it and answers made-up bytes, so these test the transport and the server's
 * checks: the rank's entries of each array reach the driver, the 128 bytes reach the guest, and a
 * bad rank or a tensor outside the process's memory is refused before the driver sees it.
 */
class TensorMapTest extends HostMemoryGuestCase {
    static final long TOKEN = (4646L << 32) | 0x66;
    static final long OTHER = (4747L << 32) | 0x67;
    static final int FLOAT32 = 7, UINT8 = 0, UINT16 = 1;

    /** The encoders' stand-in: what the last call passed, and a map made of its arguments. */
    static final class StandIn extends HostMemoryBackend {
        final AtomicInteger calls = new AtomicInteger();
        volatile long map, address;
        volatile int rank, dataType;
        volatile long[] dims, strides;
        volatile int[] box, elements, lower, upper;
        volatile byte[] mapIn;

        private void record(long map, int dataType, int rank, long address, long dims, long strides) {
            calls.incrementAndGet();
            this.map = map;
            this.dataType = dataType;
            this.rank = rank;
            this.address = address;
            this.dims = longs(dims, rank);
            this.strides = longs(strides, rank - 1);
            fill(map, address, rank);
        }

        /** The made-up map: the address, then bytes that depend on the rank. */
        static void fill(long map, long address, int rank) {
            for (int i = 0; i < 128; i++) {
                UnsafeApi.putByte(map + i, (byte) (i * 7 + rank));
            }
            UnsafeApi.putLong(map, address);
        }

        static long[] longs(long at, int n) {
            long[] v = new long[n];
            for (int i = 0; i < n; i++) {
                v[i] = UnsafeApi.getLong(at + 8L * i);
            }
            return v;
        }

        static int[] ints(long at, int n) {
            int[] v = new int[n];
            for (int i = 0; i < n; i++) {
                v[i] = UnsafeApi.getInt(at + 4L * i);
            }
            return v;
        }

        @Override
        public int tensorMapEncodeTiled(long map, int dataType, int rank, long globalAddress, long globalDim,
                                        long globalStrides, long boxDim, long elementStrides, int interleave,
                                        int swizzle, int l2Promotion, int oobFill) {
            box = ints(boxDim, rank);
            elements = ints(elementStrides, rank);
            record(map, dataType, rank, globalAddress, globalDim, globalStrides);
            return CuResult.SUCCESS;
        }

        @Override
        public int tensorMapEncodeIm2col(long map, int dataType, int rank, long globalAddress, long globalDim,
                                         long globalStrides, long lowerCorner, long upperCorner, int channelsPerPixel,
                                         int pixelsPerColumn, long elementStrides, int interleave, int swizzle,
                                         int l2Promotion, int oobFill) {
            lower = ints(lowerCorner, rank - 2);
            upper = ints(upperCorner, rank - 2);
            elements = ints(elementStrides, rank);
            record(map, dataType, rank, globalAddress, globalDim, globalStrides);
            return CuResult.SUCCESS;
        }

        @Override
        public int tensorMapReplaceAddress(long map, long globalAddress) {
            calls.incrementAndGet();
            byte[] got = new byte[128];
            for (int i = 0; i < 128; i++) {
                got[i] = UnsafeApi.getByte(map + i);
            }
            mapIn = got;
            this.map = map;
            UnsafeApi.putLong(map, globalAddress);
            return CuResult.SUCCESS;
        }
    }

    @Override
    long token() {
        return TOKEN;
    }

    private static byte[] u64s(int capacity, long... v) {
        ByteBuffer b = ByteBuffer.allocate(8 * capacity).order(ByteOrder.LITTLE_ENDIAN);
        for (long x : v) {
            b.putLong(x);
        }
        return b.array();
    }

    private static byte[] u32s(int capacity, int... v) {
        ByteBuffer b = ByteBuffer.allocate(4 * capacity).order(ByteOrder.LITTLE_ENDIAN);
        for (int x : v) {
            b.putInt(x);
        }
        return b.array();
    }

    private static long alloc(Channel c, long bytes) {
        Response m = c.call(Requests.ivc_mem_alloc(bytes));
        assertEquals(CuResult.SUCCESS, m.result());
        return m.out(0);
    }

    private static byte[] map(Response r) {
        byte[] got = new byte[128];
        r.buffer().getBytes(r.payload(), got);
        return got;
    }

    /** A dense tensor of `rank` dimensions of 4 floats each: its strides, 16, 64, 256, 1024 bytes. */
    private static Response tiled(Channel c, int rank, long address) {
        long[] dims = new long[rank];
        long[] strides = new long[rank - 1];
        int[] box = new int[rank];
        int[] elements = new int[rank];
        for (int i = 0; i < rank; i++) {
            dims[i] = 4;
            box[i] = 4;
            elements[i] = 1;
            if (i > 0) {
                strides[i - 1] = 16L << (2 * (i - 1));
            }
        }
        return c.call(Requests.ivc_tensor_map_encode_tiled(FLOAT32, rank, address, u64s(5, dims), u64s(4, strides),
                u32s(5, box), u32s(5, elements), 0, 0, 0, 0));
    }

    @Test
    void tiledMapsOfEveryRankCarryTheirArraysToTheDriverAndItsBytesToTheGuest() throws Exception {
        StandIn driver = new StandIn();
        start(driver);
        Channel c = greeted(0);
        long dev = alloc(c, 4096); // the rank-5 tensor spans 4·4^4·4 = 4096 bytes
        for (int rank = 1; rank <= 5; rank++) {
            Response r = tiled(c, rank, dev);
            assertEquals(CuResult.SUCCESS, r.result(), "rank " + rank);
            assertEquals(rank, driver.rank);
            assertEquals(FLOAT32, driver.dataType);
            assertEquals(dev, driver.address);
            assertEquals(0, driver.map % 64, "the driver's map is 64-byte aligned");
            long[] dims = new long[rank];
            Arrays.fill(dims, 4);
            assertArrayEquals(dims, driver.dims);
            for (int i = 1; i < rank; i++) {
                assertEquals(16L << (2 * (i - 1)), driver.strides[i - 1]);
            }
            int[] box = new int[rank];
            Arrays.fill(box, 4);
            assertArrayEquals(box, driver.box);
            byte[] expected = new byte[128];
            for (int i = 0; i < 128; i++) {
                expected[i] = (byte) (i * 7 + rank);
            }
            ByteBuffer.wrap(expected).order(ByteOrder.LITTLE_ENDIAN).putLong(0, dev);
            assertArrayEquals(expected, map(r), "the driver's bytes reach the guest, rank " + rank);
        }
        assertEquals(5, driver.calls.get());
    }

    @Test
    void anIm2colMapCarriesItsCornersAndAReplacedAddressGoesBackWithTheMap() throws Exception {
        StandIn driver = new StandIn();
        start(driver);
        Channel c = greeted(0);
        // NHWC of 2 images of 8x8 pixels of 16 half floats: 2·8·8·32 = 4096 bytes
        long dev = alloc(c, 4096);
        Response r = c.call(Requests.ivc_tensor_map_encode_im2col(UINT16, 4, dev, u64s(5, 16, 8, 8, 2),
                u64s(4, 32, 256, 2048), u32s(3, -1, -1), u32s(3, 1, 1), 16, 64, u32s(5, 1, 1, 1, 1), 0, 0, 0, 0));
        assertEquals(CuResult.SUCCESS, r.result());
        assertArrayEquals(new int[] {-1, -1}, driver.lower);
        assertArrayEquals(new int[] {1, 1}, driver.upper);
        assertArrayEquals(new long[] {16, 8, 8, 2}, driver.dims);
        byte[] encoded = map(r);

        long other = alloc(c, 4096);
        Response replaced = c.call(Requests.ivc_tensor_map_replace_address(encoded, other));
        assertEquals(CuResult.SUCCESS, replaced.result());
        assertArrayEquals(encoded, driver.mapIn, "the guest's map reaches the driver as it sent it");
        assertEquals(0, driver.map % 64);
        byte[] expected = encoded.clone();
        ByteBuffer.wrap(expected).order(ByteOrder.LITTLE_ENDIAN).putLong(0, other);
        assertArrayEquals(expected, map(replaced));
    }

    @Test
    void aBadRankOrATensorOutsideTheProcessesMemoryIsRefusedBeforeTheDriver() throws Exception {
        StandIn driver = new StandIn();
        try (LogCapture log = new LogCapture()) {
            start(driver);
            Channel c = greeted(0);
            long dev = alloc(c, 1024);
            Channel o = hello(1, OTHER);
            assertEquals(CuResult.SUCCESS, o.call(Requests.cuInit(0)).result());
            long theirs = alloc(o, 4096);
            byte[] box = u32s(5, 4, 4, 4, 4, 4);
            byte[] ones = u32s(5, 1, 1, 1, 1, 1);
            for (int rank : new int[] {0, 6, -1}) {
                assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tensor_map_encode_tiled(FLOAT32, rank, dev,
                        u64s(5, 4, 4, 4, 4, 4), u64s(4, 16, 64, 256, 1024), box, ones, 0, 0, 0, 0)).result(), "rank " + rank);
            }
            // im2col needs 3 dimensions at least
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tensor_map_encode_im2col(FLOAT32, 2, dev,
                    u64s(5, 4, 4), u64s(4, 16), u32s(3), u32s(3), 4, 4, ones, 0, 0, 0, 0)).result());
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tensor_map_encode_im2col_wide(FLOAT32, 6, dev,
                    u64s(5, 4, 4, 4, 4, 4), u64s(4, 16, 64, 256, 1024), 0, 0, 4, 4, ones, 0, 0, 0, 0, 0)).result());
            // 1024 bytes hold 4x4x16 floats (16 + 3·16 + 15·64 bytes) at their start, not 16 bytes in, nor 4x4x17
            byte[] dims = u64s(5, 4, 4, 16);
            byte[] strides = u64s(4, 16, 64);
            assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_tensor_map_encode_tiled(FLOAT32, 3, dev, dims, strides,
                    box, ones, 0, 0, 0, 0)).result());
            int accepted = driver.calls.get();
            assertEquals(1, accepted, "the refused ranks never reached the driver");
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tensor_map_encode_tiled(FLOAT32, 3, dev + 16, dims,
                    strides, box, ones, 0, 0, 0, 0)).result());
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tensor_map_encode_tiled(FLOAT32, 3, dev,
                    u64s(5, 4, 4, 17), strides, box, ones, 0, 0, 0, 0)).result());
            // another process's memory, and no memory at all
            assertEquals(CuResult.INVALID_VALUE, tiled(c, 2, theirs).result());
            assertEquals(CuResult.INVALID_VALUE, tiled(c, 1, 0x7f0000000000L).result());
            // a dimension of 0 or above 2^32, a stride of 2^40, a span past 2^63, an unknown data type
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tensor_map_encode_tiled(FLOAT32, 2, dev,
                    u64s(5, 4, 0), u64s(4, 16), box, ones, 0, 0, 0, 0)).result());
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tensor_map_encode_tiled(FLOAT32, 1, dev,
                    u64s(5, (1L << 32) + 1), u64s(4), box, ones, 0, 0, 0, 0)).result());
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tensor_map_encode_tiled(FLOAT32, 2, dev,
                    u64s(5, 4, 2), u64s(4, 1L << 40), box, ones, 0, 0, 0, 0)).result());
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tensor_map_encode_tiled(FLOAT32, 5, dev,
                    u64s(5, 4, 1L << 32, 1L << 32, 1L << 32, 1L << 32), u64s(4, (1L << 40) - 16, (1L << 40) - 16,
                            (1L << 40) - 16, (1L << 40) - 16), box, ones, 0, 0, 0, 0)).result());
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tensor_map_encode_tiled(16, 1, dev,
                    u64s(5, 4), u64s(4), box, ones, 0, 0, 0, 0)).result());
            // a replaced address outside the process's memory
            assertEquals(CuResult.INVALID_VALUE,
                    c.call(Requests.ivc_tensor_map_replace_address(new byte[128], theirs)).result());
            assertEquals(accepted, driver.calls.get(), "the driver saw none of the refused calls");
            String lines = String.join("\n", log.lines());
            for (String field : new String[] {"rank 0 is not in 1..5", "rank 6 is not in 1..5",
                    "rank 4294967295 is not in 1..5", "rank 2 is not in 3..5", "globalDim[1] 0 is not in 1..2^32",
                    "globalStrides[0] 1099511627776 is not below 2^40", "spans more than 2^63 bytes",
                    "dataType 16 is not a CUtensorMapDataType", "0x" + Long.toHexString(dev + 16) + " + 1024 bytes (the tensor's extent)",
                    "0x" + Long.toHexString(dev) + " + 1088 bytes (the tensor's extent) is not in one of",
                    "0x" + Long.toHexString(theirs) + " is not in one of the process's device allocations"}) {
                assertTrue(lines.contains(field), field + " in\n" + lines);
            }
        }
    }

    @Test
    void theHostMemoryBackendEncodesNoMap() throws Exception {
        start(new HostMemoryBackend());
        Channel c = greeted(0);
        long dev = alloc(c, 4096);
        assertEquals(CuResult.NOT_SUPPORTED, tiled(c, 2, dev).result());
        assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.ivc_tensor_map_replace_address(new byte[128], dev)).result());
    }
}
