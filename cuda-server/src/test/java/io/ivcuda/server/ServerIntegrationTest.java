package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.gen.Requests;
import io.ivcuda.wire.ChannelFlyweight;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.agrona.ExpandableArrayBuffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A real server over a temp region with the host-memory backend, driven by {@link FakeGuest}. */
class ServerIntegrationTest extends ServerCase {
    static final long TOKEN = (4242L << 32) | 0x1234;

    @BeforeEach
    void start() throws Exception {
        start(0);
    }

    void start(long quota) throws Exception {
        start(quota, "owner.timeout.ms=10000");
    }

    void start(long quota, String extra) throws Exception {
        if (server != null) {
            stop();
        }
        startServer("region-" + quota, 8, null, "memory.quota=" + quota, "wait.park.max.us=200", extra);
    }

    private static long alloc(Channel c, long bytes) {
        return ok(c.call(Requests.ivc_mem_alloc(bytes)));
    }

    @Test
    void helloAnswersVersionsAndWrongHashIsRefusedWithAMessage() throws Exception {
        Channel c = guest.claim(0, TOKEN);
        Response bad = c.hello(0xdeadL);
        assertEquals(CuResult.NOT_INITIALIZED, bad.result());
        String message = bad.buffer().getStringWithoutLengthAscii(bad.payload() + 32, (int) bad.out(3) - 1);
        assertTrue(message.contains("guest API hash dead"), message);
        awaitReleased(c);
        c = guest.claim(0, TOKEN);
        Response good = c.hello();
        assertEquals(CuResult.SUCCESS, good.result());
        assertEquals(io.ivcuda.wire.HeaderFlyweight.PROTOCOL_VERSION, good.out(0));
        assertEquals(Opcodes.API_HASH, good.out(1));
    }

    @Test
    void firstRequestMustBeHello() throws Exception {
        Channel c = guest.claim(1, TOKEN);
        Response r = c.call(Requests.cuInit(0));
        assertEquals(CuResult.NOT_INITIALIZED, r.result());
        awaitReleased(c);
    }

    /** The server released the channel (owner 0) and its worker left (attached 0). */
    private static void awaitReleased(Channel c) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 5000;
        while ((c.c.getLongVolatile(ChannelFlyweight.OWNER_OFFSET) != 0 || c.c.getIntVolatile(ChannelFlyweight.ATTACHED_OFFSET) != 0)
                && System.currentTimeMillis() < deadline) {
            Thread.sleep(1);
        }
        assertEquals(0, c.c.getLongVolatile(ChannelFlyweight.OWNER_OFFSET));
        assertEquals(0, c.c.getIntVolatile(ChannelFlyweight.ATTACHED_OFFSET));
    }

    @Test
    void primaryContextIsActiveOnlyWhileThisProcessRetainsIt() {
        Channel a = hello(0, TOKEN);
        Channel b = hello(1, TOKEN + 1);
        assertEquals(CuResult.SUCCESS, a.call(Requests.cuInit(0)).result());
        assertEquals(CuResult.SUCCESS, b.call(Requests.cuInit(0)).result());
        assertEquals(0, a.call(Requests.cuDevicePrimaryCtxGetState(0)).out(1));
        assertEquals(CuResult.SUCCESS, a.call(Requests.cuDevicePrimaryCtxRetain(0)).result());
        assertEquals(1, a.call(Requests.cuDevicePrimaryCtxGetState(0)).out(1));
        // another guest process does not see the first one's retain, as it would not natively
        assertEquals(0, b.call(Requests.cuDevicePrimaryCtxGetState(0)).out(1));
        assertEquals(CuResult.SUCCESS, a.call(Requests.cuDevicePrimaryCtxRelease_v2(0)).result());
        assertEquals(0, a.call(Requests.cuDevicePrimaryCtxGetState(0)).out(1));
    }

    @Test
    void aPrimaryContextIsReleasedNeverDestroyedAndADeviceOtherThan0IsRefused() {
        Channel a = hello(0, TOKEN);
        long primary = a.call(Requests.cuDevicePrimaryCtxRetain(0)).out(0);
        assertEquals(CuResult.INVALID_CONTEXT, a.call(Requests.cuCtxDestroy_v2(primary)).result());
        assertEquals(CuResult.SUCCESS, a.call(Requests.cuCtxSetCurrent(primary)).result(),
                "still usable after the refused destroy");
        assertEquals(CuResult.INVALID_DEVICE, a.call(Requests.cuDevicePrimaryCtxRetain(1)).result());
        long ctx = a.call(Requests.cuCtxCreate_v2(0, 0)).out(0);
        assertEquals(CuResult.SUCCESS, a.call(Requests.cuCtxDestroy_v2(ctx)).result());
        assertEquals(CuResult.INVALID_CONTEXT, a.call(Requests.cuCtxDestroy_v2(ctx)).result(),
                "destroyed once");
    }

    @Test
    void inlineCopiesRoundTripAndOutsideRangesAreRefused() {
        Channel c = hello(0, TOKEN);
        long d = alloc(c, 1000);
        byte[] data = new byte[999];
        new Random(1).nextBytes(data);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy_htod_inline(d + 1, 0, data, data.length)).result());
        Response back = c.call(Requests.ivc_memcpy_dtoh_inline(d + 1, 0, data.length));
        assertEquals(CuResult.SUCCESS, back.result());
        byte[] got = new byte[data.length];
        back.buffer().getBytes(back.payload() + 8, got);
        assertArrayEquals(data, got);
        // one byte past the allocation
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_memcpy_htod_inline(d + 2, 0, data, data.length)).result());
        // inbuf length and its length parameter disagree
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_memcpy_htod_inline(d, 0, data, 5)).result());
        // another process's allocation
        Channel other = hello(1, TOKEN + 1);
        assertEquals(CuResult.INVALID_VALUE, other.call(Requests.cuMemsetD8_v2(d, 1, 10)).result());
    }

    @Test
    void framingErrorsGetTheRightResult() {
        Channel c = hello(0, TOKEN);
        // payload shorter than the params
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.raw(Opcodes.IVC_MEM_ALLOC)).result());
        // payload longer than the params
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.raw(Opcodes.IVC_MEM_ALLOC).scalar(8).scalar(8)).result());
        // unknown opcode
        assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.raw(9999)).result());
        // async opcode in the request area
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.raw(Opcodes.IVC_LAUNCH)).result());
        // payload_len beyond the request area
        assertEquals(CuResult.INVALID_VALUE, c.callRaw(Opcodes.IVC_MEM_ALLOC, 1 << 20, new ExpandableArrayBuffer(8), 8).result());
        // outbuf capacity smaller than what is asked
        long d = alloc(c, 64);
        Response r = c.call(Requests.cuDeviceGetName(4, 0));
        assertEquals(CuResult.SUCCESS, r.result());
        assertEquals(4, r.out(0), "name truncated to the guest's capacity of 4");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_memcpy_dtoh_inline(d, 0, 1L << 20)).result());
        // instr without NUL and oversized instr
        byte[] noNul = "abc".getBytes();
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.raw(Opcodes.CU_DEVICE_GET_BY_PCIBUS_ID).buf(noNul)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.raw(Opcodes.CU_DEVICE_GET_BY_PCIBUS_ID).buf(new byte[5000])).result());
        // buffer length larger than the payload
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.raw(Opcodes.CU_DEVICE_GET_BY_PCIBUS_ID).rawBuf(64, new byte[8])).result());
        // the channel still works
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuDeviceGetCount()).result());
    }

    @Test
    void handlesAreCheckedForKindGenerationAndOwner() {
        Channel c = hello(0, TOKEN);
        Response s = c.call(Requests.cuStreamCreate(0));
        assertEquals(CuResult.SUCCESS, s.result());
        long stream = s.out(0);
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuStreamSynchronize(stream)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuStreamSynchronize(1)).result());
        // an event id where a stream is expected
        long event = c.call(Requests.cuEventCreate(0)).out(0);
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuStreamSynchronize(event)).result());
        // another owner
        Channel other = hello(1, TOKEN + 1);
        assertEquals(CuResult.INVALID_HANDLE, other.call(Requests.cuStreamSynchronize(stream)).result());
        // a destroyed stream (stale generation)
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuStreamDestroy_v2(stream)).result());
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuStreamSynchronize(stream)).result());
        // contexts answer INVALID_CONTEXT
        assertEquals(CuResult.INVALID_CONTEXT, c.call(Requests.cuCtxSetCurrent(event)).result());
    }

    @Test
    void ringRecordsRunBeforeTheNextSyncCallAndErrorsAreSticky() {
        Channel c = hello(0, TOKEN);
        long d = alloc(c, 4096);
        for (int i = 0; i < 3000; i++) { // wraps the 128 KiB ring several times
            c.post(Requests.cuMemsetD8Async(d + (i % 4096), i & 0xff, 1, 0));
        }
        Response r = c.call(Requests.ivc_memcpy_dtoh_inline(d + 2999 % 4096, 0, 1));
        assertEquals(CuResult.SUCCESS, r.result());
        assertEquals((byte) (2999 & 0xff), r.buffer().getByte(r.payload() + 8));
        // a bad stream handle in the ring: the next sync call reports it, the one after is clean
        c.post(Requests.cuMemsetD8Async(d, 1, 1, 0x0500000000000099L));
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuCtxSynchronize()).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuCtxSynchronize()).result());
    }

    @Test
    void aCallWithOutputsKeepsThemAndLeavesTheStickyErrorToTheNextCallWithout() {
        Channel c = hello(0, TOKEN);
        long d = alloc(c, 4096);
        c.post(Requests.cuMemsetD8Async(d, 1, 1, 0x0500000000000099L)); // a bad stream: kept
        // the allocation succeeds and says where: answering the kept error instead would lose it
        Response made = c.call(Requests.ivc_mem_alloc(4096));
        assertEquals(CuResult.SUCCESS, made.result());
        long second = made.out(0);
        assertNotEquals(0L, second);
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuCtxSynchronize()).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuCtxSynchronize()).result());
        // and the allocation is the guest's to use and free
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mem_free(second)).result());
    }

    @Test
    void badRingTotalLenPoisonsTheChannel() {
        Channel c = hello(0, TOKEN);
        int ring = c.ring;
        long tail = c.c.getLong(ChannelFlyweight.RING_TAIL_OFFSET, FakeGuest.LE);
        c.c.putInt(ring + (int) (tail & (guest.ringSize - 1)), 12, FakeGuest.LE); // not a multiple of 8
        c.c.putLongRelease(ChannelFlyweight.RING_TAIL_OFFSET, tail + 16);
        assertEquals(CuResult.ILLEGAL_STATE, c.call(Requests.cuCtxSynchronize()).result());
        assertEquals(CuResult.ILLEGAL_STATE, c.call(Requests.cuCtxSynchronize()).result());
    }

    @Test
    void tailBeyondHeadPlusRingSizePoisons() {
        Channel c = hello(0, TOKEN);
        c.c.putLongRelease(ChannelFlyweight.RING_TAIL_OFFSET, c.c.getLong(ChannelFlyweight.RING_HEAD_OFFSET, FakeGuest.LE) + guest.ringSize + 8);
        assertEquals(CuResult.ILLEGAL_STATE, c.call(Requests.cuCtxSynchronize()).result());
    }

    @Test
    void streamedCopiesWithOddSizes() {
        Channel c = hello(0, TOKEN);
        for (int size : new int[] {1, guest.windowSize / 2, guest.windowSize / 2 + 1, 3 * guest.windowSize + 12345}) {
            long d = alloc(c, size);
            byte[] data = new byte[size];
            new Random(size).nextBytes(data);
            assertEquals(CuResult.SUCCESS, c.htodStream(d, data).result());
            byte[] back = new byte[size];
            assertEquals(CuResult.SUCCESS, c.dtohStream(d, back).result());
            assertArrayEquals(data, back, "size " + size);
        }
    }

    @Test
    void poolCopiesAreCheckedAgainstTheOwnersBlocks() {
        Channel c = hello(0, TOKEN);
        Response a = c.call(Requests.ivc_host_alloc(10000, 0));
        assertEquals(CuResult.SUCCESS, a.result());
        long offset = a.out(0);
        long d = alloc(c, 10000);
        guest.pool().putLong((int) offset + 8, 0x1122334455667788L, FakeGuest.LE);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy_htod_pool(d, 0, offset, 10000)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy_dtoh_pool(offset + 4096, d, 0, 16)).result());
        assertEquals(0x1122334455667788L, guest.pool().getLong((int) offset + 4096 + 8, FakeGuest.LE));
        // outside the block, outside the pool, someone else's block
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_memcpy_htod_pool(d, 0, offset + 8192, 8192)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_memcpy_htod_pool(d, 0, guest.poolSize, 8)).result());
        Channel other = hello(1, TOKEN + 1);
        long d2 = alloc(other, 16);
        assertEquals(CuResult.INVALID_VALUE, other.call(Requests.ivc_memcpy_htod_pool(d2, 0, offset, 16)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_host_free(offset)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_host_free(offset)).result());
    }

    /**
     * protocol §2a: the header names the pool's device address, the one cuMemHostGetDevicePointer
     * answers (the host-memory backend registers the region as a GPU with unified addressing
     * does), and a device-side store there lands in the guest's block.
     */
    @Test
    void theHeaderNamesThePoolsDeviceAddress() {
        Channel c = hello(0, TOKEN);
        long field = guest.layout.poolDeviceAddress();
        assertNotEquals(0, field);
        assertEquals(0, field % 4096);
        assertNotEquals(0, guest.layout.featureBits() & io.ivcuda.wire.HeaderFlyweight.FEATURE_POOL_REGISTERED);
        long offset = c.call(Requests.ivc_host_alloc(10000, 0)).out(0);
        Response device = c.call(Requests.ivc_host_device_pointer(offset, 0));
        assertEquals(CuResult.SUCCESS, device.result());
        assertEquals(field + offset, device.out(0));
        long d = alloc(c, 16);
        guest.pool().putLong((int) offset, 0x0102030405060708L, FakeGuest.LE);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy_htod_pool(d, 0, offset, 16)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMemcpyDtoD_v2(field + offset + 8, d, 8)).result());
        assertEquals(0x0102030405060708L, guest.pool().getLong((int) offset + 8, FakeGuest.LE));
        // the device address of another process's block is not this process's to name
        Channel other = hello(1, TOKEN + 1);
        long d2 = alloc(other, 16);
        assertEquals(CuResult.INVALID_VALUE, other.call(Requests.cuMemcpyDtoD_v2(field + offset, d2, 8)).result());
    }

    @Test
    void processExitReclaimsEverythingOfTheToken() {
        Channel c = hello(0, TOKEN);
        Channel sibling = hello(1, TOKEN);
        alloc(c, 1 << 20);
        alloc(sibling, 1 << 20);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_host_alloc(4096, 0)).result());
        c.call(Requests.cuStreamCreate(0));
        assertEquals(2L << 20, server.vm().allocated());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        // the reclaim finishes once the sibling's worker has left its channel, off the caller's thread
        awaitTrue(() -> server.vm().allocated() == 0 && server.vm().handles().size() == 0
                && server.vm().pool().blockCount() == 0, "everything of the token freed");
        awaitTrue(() -> sibling.c.getLongVolatile(ChannelFlyweight.OWNER_OFFSET) == 0, "the sibling channel is released");
    }

    static void awaitTrue(java.util.function.BooleanSupplier condition, String what) {
        long deadline = System.currentTimeMillis() + 10_000;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("not within 10 s: " + what);
            }
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }

    @Test
    void quotaRefusesAllocationsBeyondIt() throws Exception {
        start(1 << 20);
        Channel c = hello(0, TOKEN);
        alloc(c, 600_000);
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_mem_alloc(600_000)).result());
    }

    @Test
    void manyGuestThreadsAtOnce() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(6);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < 6; t++) {
                int index = t;
                futures.add(pool.submit(() -> {
                    Channel c = hello(index, TOKEN + index % 2);
                    Random random = new Random(index);
                    for (int i = 0; i < 20; i++) {
                        int size = 1 + random.nextInt(guest.windowSize + 5000);
                        long d = alloc(c, size);
                        byte[] data = new byte[size];
                        random.nextBytes(data);
                        assertEquals(CuResult.SUCCESS, c.htodStream(d, data).result());
                        byte[] back = new byte[size];
                        assertEquals(CuResult.SUCCESS, c.dtohStream(d, back).result());
                        assertArrayEquals(data, back);
                        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mem_free(d)).result());
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, server.vm().allocated());
    }

    @Test
    void goodbyeThenReleaseLetsAnotherThreadTakeTheChannel() throws Exception {
        Channel c = hello(2, TOKEN);
        long d = alloc(c, 64);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_goodbye()).result());
        c.release();
        awaitReleased(c);
        Channel next = hello(2, TOKEN);
        // the process's allocations survive a thread's goodbye
        assertEquals(CuResult.SUCCESS, next.call(Requests.cuMemsetD8_v2(d, 1, 64)).result());
    }

    @Test
    void silentOwnerIsReclaimedOnlyWhileTheVmsHeartbeatGoesOn() throws Exception {
        start(0, "owner.timeout.ms=100");
        Channel c = hello(3, TOKEN);
        alloc(c, 4096);
        // nothing moves (a paused VM): the owner keeps its state
        Thread.sleep(500);
        assertEquals(TOKEN, c.c.getLongVolatile(ChannelFlyweight.OWNER_OFFSET));
        assertEquals(4096, server.vm().allocated());
        // the VM's heartbeat goes on, the owner's does not: reclaimed
        long deadline = System.currentTimeMillis() + 10_000;
        while ((c.c.getLongVolatile(ChannelFlyweight.OWNER_OFFSET) != 0 || server.vm().allocated() != 0)
                && System.currentTimeMillis() < deadline) {
            guest.header.addLongRelease(io.ivcuda.wire.HeaderFlyweight.GUEST_HEARTBEAT_OFFSET, 1);
            Thread.sleep(20);
        }
        assertEquals(0, c.c.getLongVolatile(ChannelFlyweight.OWNER_OFFSET));
        assertEquals(0, server.vm().allocated());
    }

    @Test
    void pointerAttributesComeFromTheOwnersRanges() {
        Channel c = hello(0, TOKEN);
        long d = alloc(c, 5000);
        Response type = c.call(Requests.ivc_pointer_attribute(4, 2, d + 10));
        assertEquals(CuResult.SUCCESS, type.result());
        assertEquals(4, type.out(0));
        assertEquals(2, type.buffer().getInt(type.payload() + 8, FakeGuest.LE), "CU_MEMORYTYPE_DEVICE");
        Response start = c.call(Requests.ivc_pointer_attribute(8, 11, d + 10));
        assertEquals(d, start.buffer().getLong(start.payload() + 8, FakeGuest.LE));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_pointer_attribute(8, 11, d + 5000)).result(), "one past the end");
    }

    @Test
    void refusedStreamedCopiesStillMoveEveryChunk() {
        Channel c = hello(0, TOKEN);
        long d = alloc(c, 100);
        byte[] big = new byte[2 * guest.windowSize + 7];
        new Random(3).nextBytes(big);
        Response bad = c.htodStream(d, big);
        assertEquals(CuResult.INVALID_VALUE, bad.result(), "beyond the 100-byte allocation");
        assertEquals(0, bad.payloadLen(), "no outs with an error");
        byte[] back = new byte[big.length];
        back[0] = 1;
        assertEquals(CuResult.INVALID_VALUE, c.dtohStream(d, back).result());
        assertEquals(0, back[0], "refused chunks arrive zero-filled");
        assertEquals(c.c.getLongVolatile(ChannelFlyweight.GUEST_CHUNK_OFFSET), c.c.getLongVolatile(ChannelFlyweight.SERVER_CHUNK_OFFSET));
        // the channel goes on
        long e = alloc(c, big.length);
        assertEquals(CuResult.SUCCESS, c.htodStream(e, big).result());
        assertEquals(CuResult.SUCCESS, c.dtohStream(e, back).result());
        assertArrayEquals(big, back);
    }

    @Test
    void gpuMayBeNamedByUuid() throws Exception {
        start(0, "gpu=GPU-11111111-1111-1111-1111-111111111111"); // the host-memory device's UUID
        assertEquals(CuResult.SUCCESS, hello(0, TOKEN).call(Requests.cuInit(0)).result());
        start(0, "gpu=GPU-22222222-1111-1111-1111-111111111111");
        assertEquals(CuResult.NO_DEVICE, hello(0, TOKEN).call(Requests.cuInit(0)).result());
    }

    @Test
    void anotherProcessMayClaimAReleasedChannelAtOnce() {
        for (int i = 0; i < 30; i++) {
            Channel c = hello(4, TOKEN + 2 * i);
            assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_goodbye()).result());
            c.release();
            // no waiting for the old worker to leave: the new hello must be answered by the right worker
            Channel next = guest.claim(4, TOKEN + 2 * i + 1);
            assertEquals(CuResult.SUCCESS, next.hello().result(), "round " + i);
            assertEquals(CuResult.SUCCESS, next.call(Requests.cuCtxSynchronize()).result());
            assertEquals(CuResult.SUCCESS, next.call(Requests.ivc_goodbye()).result());
            next.release();
        }
    }
}
