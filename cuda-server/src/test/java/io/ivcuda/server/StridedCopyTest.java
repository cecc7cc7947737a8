package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.gen.Requests;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Strided copies and 2D memsets (docs/memory.md) through a real server with the host-memory
 * backend, whose device memory is host memory: the bytes land where the driver would put them,
 * and every side's span is held to the process's allocations and pool blocks.
 */
class StridedCopyTest extends OneProcessCase {
    static final long TOKEN = (4343L << 32) | 0x77;

    StridedCopyTest() {
        super(TOKEN);
    }

    @BeforeEach
    void start() throws Exception {
        startAndHello(new HostMemoryBackend());
    }

    /** An allocation of zeros (the host-memory backend's are not). */
    private long alloc(Channel channel, long bytes) {
        Response r = channel.call(Requests.ivc_mem_alloc(bytes));
        assertEquals(CuResult.SUCCESS, r.result());
        assertEquals(CuResult.SUCCESS, channel.call(Requests.cuMemsetD8_v2(r.out(0), 0, bytes)).result());
        return r.out(0);
    }

    private byte[] read(long device, int n) {
        return c.readDevice(device, n);
    }

    private static byte[] pattern(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 7 + seed);
        }
        return b;
    }

    @Test
    void packedRowsLandAtTheirPitchAndTheGapsStayUntouched() {
        // 2 slices of 3 rows (of 4 allocated) of 5 bytes, pitch 8
        long d = alloc(c, 2 * 4 * 8);
        byte[] packed = pattern(2 * 3 * 5, 1);
        long span = (2 - 1) * 8 * 4 + (3 - 1) * 8 + 5;
        assertEquals(CuResult.SUCCESS,
                c.call(Requests.ivc_memcpy3d_htod_inline(d, span, 8, 4, 5, 3, 2, 0, packed, packed.length)).result());
        byte[] all = read(d, 64);
        byte[] expected = new byte[64];
        for (int z = 0; z < 2; z++) {
            for (int y = 0; y < 3; y++) {
                System.arraycopy(packed, (z * 3 + y) * 5, expected, z * 32 + y * 8, 5);
            }
        }
        assertArrayEquals(expected, all);
        // and back out packed
        Response back = c.call(Requests.ivc_memcpy3d_dtoh_inline(d, span, 8, 4, 5, 3, 2, 0, packed.length));
        assertEquals(CuResult.SUCCESS, back.result());
        byte[] got = new byte[packed.length];
        back.buffer().getBytes(back.payload() + 8, got);
        assertArrayEquals(packed, got);
    }

    @Test
    void deviceToDeviceCopiesASubRectangleBetweenPitches() {
        long src = alloc(c, 16 * 6);
        long dst = alloc(c, 10 * 6);
        byte[] init = pattern(16 * 6, 3);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy_htod_inline(src, 0, init, init.length)).result());
        // a 4x3 rectangle from (x 2, y 1) of the 16-pitch source to (x 5, y 2) of the 10-pitch destination
        long s = src + 2 + 16;
        long d = dst + 5 + 2 * 10;
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy3d_dtod(d, 2 * 10 + 4, 10, 3, s, 2 * 16 + 4, 16, 3,
                4, 3, 1, 0)).result());
        byte[] expected = new byte[60];
        for (int y = 0; y < 3; y++) {
            System.arraycopy(init, (1 + y) * 16 + 2, expected, (2 + y) * 10 + 5, 4);
        }
        assertArrayEquals(expected, read(dst, 60));
        // the async form, then a sync call behind it in order
        c.post(Requests.ivc_memcpy3d_dtod_async(dst, 4, 10, 1, src, 4, 16, 1, 4, 1, 1, 0));
        System.arraycopy(init, 0, expected, 0, 4);
        assertArrayEquals(expected, read(dst, 60));
    }

    @Test
    void aGeometryReachingPastItsCheckedSpanIsRefused() {
        long dst = alloc(c, 1000);
        long src = alloc(c, 1000);
        // the span says 100 bytes, the geometry needs 3*100+10
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_memcpy3d_dtod(dst, 100, 100, 4, src, 310, 100, 4, 10, 4, 1, 0)).result());
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_memcpy3d_dtod(dst, 310, 100, 4, src, 100, 100, 4, 10, 4, 1, 0)).result());
        // an honest span past the allocation: the dispatcher's range check
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_memcpy3d_dtod(dst + 800, 310, 100, 4, src, 310, 100, 4, 10, 4, 1, 0)).result());
        // a pitch that overflows the span, a slice height below the copy's height
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_memcpy3d_dtod(dst, 10, Long.MAX_VALUE / 2, 4, src,
                10, Long.MAX_VALUE / 2, 4, 10, 4, 1, 0)).result());
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_memcpy3d_dtod(dst, 1000, 10, 2, src, 1000, 10, 2, 10, 4, 2, 0)).result());
        // packed data that is not width*height*depth bytes
        byte[] seven = new byte[7];
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_memcpy3d_htod_inline(dst, 8, 8, 1, 8, 1, 1, 0, seven, 7)).result());
        // another process's allocation
        Channel other = hello(1, TOKEN + 1);
        long mine = alloc(other, 100);
        assertEquals(CuResult.INVALID_VALUE,
                other.call(Requests.ivc_memcpy3d_dtod(mine, 10, 10, 1, src, 10, 10, 1, 10, 1, 1, 0)).result());
        // the copies refused above changed nothing
        assertArrayEquals(new byte[1000], read(dst, 1000));
    }

    @Test
    void poolSidesUseTheirOwnPitchAndStayInsideTheirBlock() {
        Response a = c.call(Requests.ivc_host_alloc(4096, 0));
        assertEquals(CuResult.SUCCESS, a.result());
        long offset = a.out(0);
        byte[] rows = pattern(4 * 32, 9);
        guest.pool().putBytes((int) offset, rows);
        long d = alloc(c, 4 * 12);
        // 4 rows of 12 bytes: pool pitch 32, device pitch 12
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy3d_htod_pool(d, 4 * 12, 12, 4, offset, 3 * 32 + 12,
                32, 4, 12, 4, 1, 0)).result());
        byte[] expected = new byte[48];
        for (int y = 0; y < 4; y++) {
            System.arraycopy(rows, y * 32, expected, y * 12, 12);
        }
        assertArrayEquals(expected, read(d, 48));
        // back into the pool at pitch 16
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy3d_dtoh_pool(offset + 2048, 3 * 16 + 12, 16, 4, d,
                48, 12, 4, 12, 4, 1, 0)).result());
        for (int y = 0; y < 4; y++) {
            byte[] row = new byte[12];
            guest.pool().getBytes((int) offset + 2048 + y * 16, row);
            assertArrayEquals(java.util.Arrays.copyOfRange(expected, y * 12, y * 12 + 12), row, "row " + y);
        }
        // a pool span past the block, and a pool geometry past its checked span
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_memcpy3d_htod_pool(d, 48, 12, 4, offset + 4000,
                3 * 32 + 12, 32, 4, 12, 4, 1, 0)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_memcpy3d_htod_pool(d, 48, 12, 4, offset, 12, 32, 4,
                12, 4, 1, 0)).result());
    }

    @Test
    void twoDimensionalMemsetsFillTheRowsOnly() {
        long d = alloc(c, 4 * 16);
        // 3 rows of 3 four-byte elements, pitch 16
        assertEquals(CuResult.SUCCESS,
                c.call(Requests.ivc_memset2d(d, 2 * 16 + 12, 16, 0x01020304, 4, 3, 3, 0)).result());
        byte[] all = read(d, 64);
        for (int i = 0; i < 64; i++) {
            int row = i / 16;
            int col = i % 16;
            byte want = row < 3 && col < 12 ? (byte) (4 - col % 4) : 0;
            assertEquals(want, all[i], "byte " + i);
        }
        c.post(Requests.ivc_memset2d_async(d + 48, 16, 16, 0xab, 1, 16, 1, 0));
        assertEquals((byte) 0xab, read(d + 48, 16)[15]);
        // span too small for the rows, an element size the driver does not have, past the allocation
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_memset2d(d, 16, 16, 1, 1, 16, 2, 0)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_memset2d(d, 9, 16, 1, 3, 3, 1, 0)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_memset2d(d + 32, 48, 16, 1, 1, 16, 3, 0)).result());
    }
}
