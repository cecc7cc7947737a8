package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.gen.Requests;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Arrays, copies to and from them, texture and surface objects (docs/memory.md) through a real
 * server with the host-memory backend. Its arrays are host blocks with packed rows, so these are
 * transport tests: the bytes of a copy land where the geometry says, every array side is held to
 * the array, handles are the process's own, quota is counted and given back at destroy and exit.
 * Texture and surface objects are minted and checked here, never sampled (no kernel runs).
 */
class ArrayObjectsTest extends OneProcessCase {
    static final long TOKEN = (4545L << 32) | 0x55;
    static final int FLOAT = 0x20;
    static final int UINT8 = 0x01;
    /** 8 rows of 16 floats: 512 bytes; the quota holds two such arrays, not three. */
    static final long QUOTA = 1100;

    ArrayObjectsTest() {
        super(TOKEN);
    }

    @BeforeEach
    void start() throws Exception {
        startAndHello(new HostMemoryBackend(), "memory.quota=" + QUOTA);
    }

    private long array(Channel channel, long width, long height, int format, int channels) {
        Response r = channel.call(Requests.ivc_array_create(width, height, 0, format, channels, 0));
        assertEquals(CuResult.SUCCESS, r.result());
        return r.out(0);
    }

    private static byte[] pattern(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 13 + seed);
        }
        return b;
    }

    private byte[] readArray(long a, long width, long height) {
        int n = (int) (width * height);
        Response r = c.call(Requests.ivc_memcpy3d_atoh_inline(a, 0, 0, 0, width, height, 1, 0, n));
        assertEquals(CuResult.SUCCESS, r.result());
        byte[] got = new byte[n];
        r.buffer().getBytes(r.payload() + 8, got);
        return got;
    }

    @Test
    void anArrayDescribesItselfAndARectangleLandsAtItsOffset() {
        long a = array(c, 16, 8, FLOAT, 1);
        Response d = c.call(Requests.cuArray3DGetDescriptor_v2(a));
        assertEquals(CuResult.SUCCESS, d.result());
        ByteBuffer desc = ByteBuffer.allocate(40).order(ByteOrder.LITTLE_ENDIAN);
        d.buffer().getBytes(d.payload(), desc, 40);
        assertEquals(16, desc.getLong(0));
        assertEquals(8, desc.getLong(8));
        assertEquals(0, desc.getLong(16));
        assertEquals(FLOAT, desc.getInt(24));
        assertEquals(1, desc.getInt(28));
        // zero the array, then a 3-row rectangle of 12 bytes at x 8 bytes, y 2
        assertEquals(CuResult.SUCCESS,
                c.call(Requests.ivc_memcpy3d_htoa_inline(a, 0, 0, 0, 64, 8, 1, 0, new byte[512], 512)).result());
        byte[] rect = pattern(36, 5);
        assertEquals(CuResult.SUCCESS,
                c.call(Requests.ivc_memcpy3d_htoa_inline(a, 8, 2, 0, 12, 3, 1, 0, rect, 36)).result());
        byte[] expected = new byte[512];
        for (int y = 0; y < 3; y++) {
            System.arraycopy(rect, y * 12, expected, (2 + y) * 64 + 8, 12);
        }
        assertArrayEquals(expected, readArray(a, 64, 8));
        // and the rectangle alone back out
        Response back = c.call(Requests.ivc_memcpy3d_atoh_inline(a, 8, 2, 0, 12, 3, 1, 0, 36));
        assertEquals(CuResult.SUCCESS, back.result());
        byte[] got = new byte[36];
        back.buffer().getBytes(back.payload() + 8, got);
        assertArrayEquals(rect, got);
    }

    @Test
    void deviceAndArraySidesCopyThroughEachOther() {
        long a = array(c, 16, 4, UINT8, 4); // 64-byte rows
        long b = array(c, 16, 4, UINT8, 4);
        Response m = c.call(Requests.ivc_mem_alloc(4 * 100));
        assertEquals(CuResult.SUCCESS, m.result());
        long dev = m.out(0);
        byte[] init = pattern(400, 7);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy_htod_inline(dev, 0, init, 400)).result());
        // device (pitch 100) → array a, 4 rows of 64 bytes
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy3d_dtoa(a, 0, 0, 0, dev, 3 * 100 + 64, 100, 4, 64, 4,
                1, 0)).result());
        // a → b (async form, then a synchronous read behind it)
        c.post(Requests.ivc_memcpy3d_atoa_async(b, 0, 0, 0, a, 0, 0, 0, 64, 4, 1, 0));
        byte[] expected = new byte[256];
        for (int y = 0; y < 4; y++) {
            System.arraycopy(init, y * 100, expected, y * 64, 64);
        }
        assertArrayEquals(expected, readArray(b, 64, 4));
        // b's rows 1-2 → device at pitch 64
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy3d_atod(dev, 64 + 64, 64, 2, b, 0, 1, 0, 64, 2, 1, 0))
                .result());
        Response r = c.call(Requests.ivc_memcpy_dtoh_inline(dev, 0, 128));
        byte[] got = new byte[128];
        r.buffer().getBytes(r.payload() + 8, got);
        assertArrayEquals(java.util.Arrays.copyOfRange(expected, 64, 192), got);
    }

    @Test
    void aSideLeavingItsArrayOrAnotherProcesssArrayIsRefused() {
        long a = array(c, 16, 8, FLOAT, 1); // 64 x 8
        byte[] row = new byte[64];
        // past the row, past the rows, past the slices, an offset that wraps
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_memcpy3d_htoa_inline(a, 4, 0, 0, 64, 1, 1, 0, row, 64)).result());
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_memcpy3d_htoa_inline(a, 0, 8, 0, 64, 1, 1, 0, row, 64)).result());
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_memcpy3d_htoa_inline(a, 0, 0, 1, 64, 1, 1, 0, row, 64)).result());
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_memcpy3d_htoa_inline(a, -8, 0, 0, 64, 1, 1, 0, row, 64)).result());
        // an array-to-array copy whose source fits and destination does not
        long b = array(c, 4, 1, FLOAT, 1); // 16 x 1
        assertEquals(CuResult.SUCCESS,
                c.call(Requests.ivc_memcpy3d_htoa_inline(b, 0, 0, 0, 16, 1, 1, 0, new byte[16], 16)).result());
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_memcpy3d_atoa(b, 0, 0, 0, a, 0, 0, 0, 64, 1, 1, 0)).result());
        // a device side past its checked span
        Response m = c.call(Requests.ivc_mem_alloc(64));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_memcpy3d_dtoa(a, 0, 0, 0, m.out(0), 32, 64, 1, 64, 1,
                1, 0)).result());
        // another process names this one's array
        Channel other = hello(1, TOKEN + 1);
        assertEquals(CuResult.INVALID_HANDLE,
                other.call(Requests.ivc_memcpy3d_atoh_inline(a, 0, 0, 0, 4, 1, 1, 0, 4)).result());
        assertEquals(CuResult.INVALID_HANDLE, other.call(Requests.cuArrayDestroy(a)).result());
        // nothing refused above wrote a byte (b was zeroed first)
        assertArrayEquals(new byte[16], readArray(b, 16, 1));
        // destroyed: the handle is gone
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuArrayDestroy(a)).result());
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuArray3DGetDescriptor_v2(a)).result());
    }

    @Test
    void arraysCountAgainstTheQuotaUntilDestroyedOrTheProcessExits() {
        long a = array(c, 16, 8, FLOAT, 1);
        array(c, 16, 8, FLOAT, 1);
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_array_create(16, 8, 0, FLOAT, 1, 0)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuArrayDestroy(a)).result());
        array(c, 16, 8, FLOAT, 1);
        // the process exits: both its arrays go, another process gets the room
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        Channel other = hello(1, TOKEN + 1);
        onceReclaimed(() -> other.call(Requests.ivc_array_create(16, 8, 0, FLOAT, 1, 0)));
        array(other, 16, 8, FLOAT, 1);
        // an extent that cannot be counted
        assertEquals(CuResult.INVALID_VALUE,
                other.call(Requests.ivc_array_create(Long.MAX_VALUE / 2, 8, 0, FLOAT, 1, 0)).result());
    }

    /**
     * Makes a call that needs the quota an exited process held: the reclaim runs on its own thread,
     * so the room comes back when it has freed that process's arrays (CI's fresh machine once asked
     * before it had). Until then the call answers OUT_OF_MEMORY, never anything else.
     */
    private static Response onceReclaimed(java.util.function.Supplier<Response> call) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        Response r;
        while ((r = call.get()).result() != CuResult.SUCCESS) {
            assertEquals(CuResult.OUT_OF_MEMORY, r.result());
            assertTrue(System.nanoTime() < deadline, "the exited process's arrays were not reclaimed within 10 s");
            Thread.onSpinWait();
        }
        return r;
    }

    private static byte[] textureDesc() {
        ByteBuffer t = ByteBuffer.allocate(104).order(ByteOrder.LITTLE_ENDIAN);
        t.putInt(0, 1).putInt(4, 1).putInt(12, 1); // clamp, clamp; linear filtering
        return t.array();
    }

    @Test
    void textureObjectsAreTheProcesssOwnAndDescribeTheirArrayByItsHandle() {
        long a = array(c, 16, 8, FLOAT, 1);
        Response t = c.call(Requests.ivc_tex_create_array(a, 0, textureDesc(), new byte[112], 0));
        assertEquals(CuResult.SUCCESS, t.result());
        long tex = t.out(0);
        assertNotEquals(0, tex);
        Response res = c.call(Requests.cuTexObjectGetResourceDesc(tex));
        assertEquals(CuResult.SUCCESS, res.result());
        assertEquals(0, res.buffer().getInt(res.payload())); // CU_RESOURCE_TYPE_ARRAY
        assertEquals(a, res.out(1)); // the process's handle, not the native array
        Response td = c.call(Requests.cuTexObjectGetTextureDesc(tex));
        assertEquals(CuResult.SUCCESS, td.result());
        byte[] got = new byte[104];
        td.buffer().getBytes(td.payload(), got);
        assertArrayEquals(textureDesc(), got);
        // another process can neither query nor destroy it
        Channel other = hello(1, TOKEN + 1);
        assertEquals(CuResult.INVALID_VALUE, other.call(Requests.cuTexObjectGetResourceDesc(tex)).result());
        assertEquals(CuResult.INVALID_VALUE, other.call(Requests.cuTexObjectDestroy(tex)).result());
        // a view flag that is neither 0 nor 1
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_tex_create_array(a, 0, textureDesc(), new byte[112], 2)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuTexObjectDestroy(tex)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuTexObjectDestroy(tex)).result());
        // a surface on the same array
        Response s = c.call(Requests.ivc_surf_create(a, 0));
        assertEquals(CuResult.SUCCESS, s.result());
        long surf = s.out(0); // read before the next call reuses the response area
        Response sres = c.call(Requests.cuSurfObjectGetResourceDesc(surf));
        assertEquals(CuResult.SUCCESS, sres.result());
        assertEquals(a, sres.out(1));
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuSurfObjectDestroy(surf)).result());
    }

    @Test
    void pitchLinearTexturesAreHeldToTheProcesssMemory() {
        Response m = c.call(Requests.ivc_mem_alloc(8 * 64));
        assertEquals(CuResult.SUCCESS, m.result());
        long dev = m.out(0);
        // 16 floats x 8 rows at pitch 64: 7*64+64 bytes
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_tex_create_pitch2d(dev, 512, FLOAT, 1, 16, 8, 64, 0,
                textureDesc(), new byte[112], 0)).result());
        // a span that the geometry exceeds, a pitch below the row, past the allocation
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tex_create_pitch2d(dev, 448, FLOAT, 1, 16, 8, 64, 0,
                textureDesc(), new byte[112], 0)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tex_create_pitch2d(dev, 512, FLOAT, 1, 16, 8, 32, 0,
                textureDesc(), new byte[112], 0)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tex_create_pitch2d(dev + 64, 512, FLOAT, 1, 16, 8, 64,
                0, textureDesc(), new byte[112], 0)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_tex_create_linear(dev, 513, FLOAT, 1, 0,
                textureDesc(), new byte[112], 0)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_tex_create_linear(dev, 512, FLOAT, 1, 0,
                textureDesc(), new byte[112], 0)).result());
    }

    @Test
    void levelsBelongToTheirMipmappedArrayAndGoWithIt() {
        // 16x8 floats, 3 levels: quota 2x512 bytes of QUOTA 1100
        Response m = c.call(Requests.ivc_mipmapped_array_create(16, 8, 0, FLOAT, 1, 0, 3));
        assertEquals(CuResult.SUCCESS, m.result());
        long mipmap = m.out(0);
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_array_create(16, 8, 0, FLOAT, 1, 0)).result());
        long level = c.call(Requests.cuMipmappedArrayGetLevel(mipmap, 1)).out(0);
        assertEquals(level, c.call(Requests.cuMipmappedArrayGetLevel(mipmap, 1)).out(0), "one handle a level");
        Response d = c.call(Requests.cuArray3DGetDescriptor_v2(level));
        assertEquals(CuResult.SUCCESS, d.result());
        assertEquals(8, d.out(0));
        assertEquals(4, d.out(1));
        // the level is an array of its own extent: a copy fits its 32x4 bytes, not more
        byte[] rows = pattern(32 * 4, 3);
        assertEquals(CuResult.SUCCESS,
                c.call(Requests.ivc_memcpy3d_htoa_inline(level, 0, 0, 0, 32, 4, 1, 0, rows, rows.length)).result());
        assertArrayEquals(rows, readArray(level, 32, 4));
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_memcpy3d_htoa_inline(level, 0, 1, 0, 32, 4, 1, 0, rows, rows.length)).result());
        // it is destroyed with its mipmapped array, not by itself
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuArrayDestroy(level)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMipmappedArrayDestroy(mipmap)).result());
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuArray3DGetDescriptor_v2(level)).result());
        // the quota came back; a mipmapped array left at exit goes with the process
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mipmapped_array_create(16, 8, 0, FLOAT, 1, 0, 3)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        Channel other = hello(1, TOKEN + 1);
        onceReclaimed(() -> other.call(Requests.ivc_mipmapped_array_create(16, 8, 0, FLOAT, 1, 0, 3)));
        assertEquals(CuResult.INVALID_VALUE,
                other.call(Requests.ivc_mipmapped_array_create(16, 8, 0, FLOAT, 1, 0, 0)).result());
    }
}
