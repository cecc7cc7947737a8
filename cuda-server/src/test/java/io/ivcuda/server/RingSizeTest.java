package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Requests;
import io.ivcuda.server.region.Layout;
import io.ivcuda.wire.ChannelFlyweight;
import io.ivcuda.wire.RecordFlyweight;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code limit.ring.bytes}: the ring of each channel as the server's configuration says, written into
 * the header's {@code ring_size} and followed by the region's layout; a record larger than the ring
 * comes as a request of the same opcode (docs/protocol.md §6); a tail further ahead than the ring is
 * poisoned against the configured size, not the default one.
 */
class RingSizeTest extends ServerCase {
    static final long TOKEN = (4343L << 32) | 0x77;
    static final int RING = 4096;

    @BeforeEach
    void start() throws Exception {
        startServer("region", 4, null, "wait.park.max.us=200", "limit.ring.bytes=" + RING);
    }

    private static long alloc(Channel c, long bytes) {
        return ok(c.call(Requests.ivc_mem_alloc(bytes)));
    }

    @Test
    void theHeaderAndTheLayoutFollowTheKey() {
        assertEquals(RING, guest.ringSize);
        Layout defaults = Layout.compute(SIZE, 4, server.layout().windowSize());
        // the channel shrinks by what the ring gave up, so the region's budget follows the key
        assertEquals(defaults.channelStride() - (Layout.DEFAULT_RING_SIZE - RING), guest.stride);
        assertEquals(server.layout().windowOffset() - server.layout().ringOffset(), RING);
    }

    @Test
    void recordsWrapTheSmallRingAndRunInOrder() {
        Channel c = hello(0, TOKEN);
        long d = alloc(c, 4096);
        for (int i = 0; i < 3000; i++) { // 48-byte records: the 4 KiB ring wraps about 35 times
            c.post(Requests.cuMemsetD8Async(d + (i % 4096), i & 0xff, 1, 0));
        }
        Response r = c.call(Requests.ivc_memcpy_dtoh_inline(d + 2999, 0, 1));
        assertEquals(CuResult.SUCCESS, r.result());
        assertEquals((byte) (2999 & 0xff), r.buffer().getByte(r.payload() + 8));
    }

    @Test
    void aRecordLargerThanTheRingComesAsARequestAndIsAnsweredAtOnce() {
        Channel c = hello(0, TOKEN);
        int size = 3 * RING / 2; // the guest library's inline async copy of 6 KiB: no ring record can hold it
        assertTrue(RecordFlyweight.LENGTH + 32 + size > RING);
        long d = alloc(c, size);
        c.post(Requests.cuMemsetD8Async(d, 0x5a, size, 0)); // queued before: runs first
        byte[] data = new byte[size];
        new Random(7).nextBytes(data);
        data[0] = 1;
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy_htod_inline_async(d, 0, data, size)).result());
        byte[] back = new byte[size];
        assertEquals(CuResult.SUCCESS, c.dtohStream(d, back).result());
        assertArrayEquals(data, back);
        // its own error is answered at once, not kept for a later call
        assertEquals(CuResult.INVALID_HANDLE,
                c.call(Requests.ivc_memcpy_htod_inline_async(d, 0x0500000000000099L, data, size)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuCtxSynchronize()).result());
    }

    @Test
    void aTailMoreThanTheConfiguredRingAheadPoisons() {
        Channel c = hello(0, TOKEN);
        long head = c.c.getLong(ChannelFlyweight.RING_HEAD_OFFSET, FakeGuest.LE);
        // within the default 128 KiB ring, beyond this server's 4 KiB one
        c.c.putLongRelease(ChannelFlyweight.RING_TAIL_OFFSET, head + RING + 8);
        assertEquals(CuResult.ILLEGAL_STATE, c.call(Requests.cuCtxSynchronize()).result());
        assertEquals(CuResult.ILLEGAL_STATE, c.call(Requests.cuCtxSynchronize()).result());
    }

    @Test
    void aRingSizeThatIsNoPowerOfTwoOrOutOfRangeIsRefusedNamingTheKey() {
        for (String bad : new String[] {"5000", "2048", "2097152"}) {
            IvcudaConfigException e = assertThrows(IvcudaConfigException.class, () -> ServerConfig.load(List.of(),
                    List.of("region.path=" + dir.resolve("r"), "limit.ring.bytes=" + bad)));
            assertTrue(e.getMessage().contains("limit.ring.bytes"), e.getMessage());
        }
        assertEquals(1 << 20, assertDoesNotThrowLoad("1048576").ringBytes());
        assertEquals(Layout.DEFAULT_RING_SIZE, assertDoesNotThrowLoad(null).ringBytes());
    }

    private ServerConfig assertDoesNotThrowLoad(String ring) {
        try {
            return ServerConfig.load(List.of(), ring == null ? List.of("region.path=" + dir.resolve("r"))
                    : List.of("region.path=" + dir.resolve("r"), "limit.ring.bytes=" + ring));
        } catch (IvcudaConfigException e) {
            throw new AssertionError(e);
        }
    }
}
