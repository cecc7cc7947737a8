package io.ivcuda.backend;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.ivcuda.server.FakeGuest;
import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.gen.Requests;
import io.ivcuda.wire.BackendSlotFlyweight;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What one front-end can do with another's handles (docs/backend-domains.md, "Two front-ends' handles"): the agent
 * starts a real cuda-server (host-memory backend, from this build's classes) on each assigned slot, as in
 * {@link AgentTest}; front-end A allocates, writes and creates a context and a stream through its slot, and
 * front-end B presents A's handle values through its own slot, with A's very owner token. B's server has
 * never seen them: each use is refused with the error docs/protocol.md §5 names for a handle or device range
 * the caller does not hold, and A's memory and objects are as A left them. The same attacks from a second
 * process of A's own front-end, on A's server, are refused the same way.
 */
class FrontEndIsolationTest {
    /** A's process: pid 4242. B copies it exactly (a front-end's owner tokens are its own to choose). */
    static final long TOKEN = (4242L << 32) | 1;
    static final int SIZE = 4096;

    private final AgentTest agentCase = new AgentTest();
    private final List<FakeGuest> guests = new ArrayList<>();

    @TempDir
    Path dir;

    @AfterEach
    void stop() {
        guests.forEach(FakeGuest::close);
        agentCase.stop();
    }

    /** Slots 0..n-1 assigned to front-ends, each served; a guest mapping of each slot's region. */
    private List<FakeGuest> servedSlots(int n) throws Exception {
        agentCase.dir = dir;
        agentCase.start(n);
        FakeBackend backend = agentCase.backend;
        for (int k = 0; k < n; k++) {
            backend.assign(k, "front-" + (char) ('a' + k), 64L << 20);
        }
        for (int k = 0; k < n; k++) {
            BackendSlotFlyweight slot = backend.slots[k];
            FakeBackend.await("slot " + k + " SERVING", AgentTest.SERVER_MS,
                    () -> slot.serverStateVolatile() == BackendSlotFlyweight.SERVED_SERVING);
        }
        if (n == 2) {
            assertNotEquals(backend.slots[0].serverPid(), backend.slots[1].serverPid(), "a server per slot");
        }
        for (int k = 0; k < n; k++) {
            guests.add(new FakeGuest(backend.slotFiles.get(k), FakeBackend.SLOT_SIZE));
        }
        return guests;
    }

    /** What A holds after its work: its context, its allocation (holding {@link #pattern}), its stream. */
    record Held(long ctx, long dptr, long stream) {
    }

    static byte[] pattern(int seed) {
        byte[] data = new byte[SIZE];
        new java.util.Random(seed).nextBytes(data);
        return data;
    }

    static long ok(Response r) {
        assertEquals(CuResult.SUCCESS, r.result());
        return r.out(0);
    }

    static Channel greeted(FakeGuest guest, int channel, long token) {
        Channel c = guest.claim(channel, token);
        assertEquals(CuResult.SUCCESS, c.hello().result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuInit(0)).result());
        return c;
    }

    /** A's work: a context of its own, current; 4 KiB written with {@code data}; a stream. */
    static Held work(Channel a, byte[] data) {
        long ctx = ok(a.call(Requests.cuCtxCreate_v2(0, 0)));
        long dptr = ok(a.call(Requests.ivc_mem_alloc(SIZE)));
        assertEquals(CuResult.SUCCESS, a.call(Requests.ivc_memcpy_htod_inline(dptr, 0, data, SIZE)).result());
        long stream = ok(a.call(Requests.cuStreamCreate(0)));
        return new Held(ctx, dptr, stream);
    }

    /** Reads {@code size} bytes at {@code dptr} through {@code c} (cuMemcpyDtoH as the guest library sends it). */
    static byte[] read(Channel c, long dptr) {
        return c.readDevice(dptr, SIZE);
    }

    /**
     * B presents A's handles: each use refused with the documented error, A's context before B has one, A's memory and
     * stream before B has any (each server numbers its own objects: B's first ones may carry A's very values). Returns
     * what B made meanwhile: its context (current), its allocation holding {@code pattern(98)}, its stream.
     */
    static Held refusesEachUse(Channel b, Held a) {
        assertEquals(CuResult.INVALID_CONTEXT, b.call(Requests.cuCtxSetCurrent(a.ctx())).result(), "cuCtxSetCurrent(A's context)");
        assertEquals(CuResult.INVALID_CONTEXT, b.call(Requests.cuCtxDestroy_v2(a.ctx())).result(), "cuCtxDestroy(A's context)");
        long ctx = ok(b.call(Requests.cuCtxCreate_v2(0, 0)));
        Response dtoh = b.call(Requests.ivc_memcpy_dtoh_inline(a.dptr(), 0, SIZE));
        assertEquals(CuResult.INVALID_VALUE, dtoh.result(), "cuMemcpyDtoH from A's allocation");
        assertEquals(0, dtoh.payloadLen(), "and no byte of it in the answer");
        assertEquals(CuResult.INVALID_VALUE, b.call(Requests.ivc_memcpy_htod_inline(a.dptr(), 0, pattern(99), SIZE)).result(),
                "cuMemcpyHtoD into A's allocation");
        assertEquals(CuResult.INVALID_VALUE, b.call(Requests.cuMemsetD8_v2(a.dptr(), 0x5a, SIZE)).result(), "cuMemsetD8 on it");
        assertEquals(CuResult.INVALID_VALUE, b.call(Requests.cuMemcpyDtoD_v2(a.dptr(), a.dptr() + SIZE / 2, SIZE / 2)).result(),
                "cuMemcpyDtoD within it");
        assertEquals(CuResult.INVALID_VALUE, b.call(Requests.ivc_mem_free(a.dptr())).result(), "cuMemFree(A's allocation)");
        assertEquals(CuResult.INVALID_HANDLE, b.call(Requests.cuStreamSynchronize(a.stream())).result(), "cuStreamSynchronize(A's stream)");
        assertEquals(CuResult.INVALID_HANDLE, b.call(Requests.cuStreamQuery(a.stream())).result(), "cuStreamQuery(A's stream)");
        assertEquals(CuResult.INVALID_HANDLE, b.call(Requests.cuStreamDestroy_v2(a.stream())).result(), "cuStreamDestroy(A's stream)");
        // a kernel launch on A's stream (cuLaunchKernel is ivc_launch on the wire); the host-memory backend loads no
        // module, so no process holds a function here: the launch names a function-kind id too, which B does not hold
        long function = ((long) HandleTable.KIND_FUNCTION << 56) | (a.stream() & 0x00ff_ffff_ffff_ffffL);
        assertEquals(CuResult.INVALID_HANDLE, b.call(Requests.ivc_launch(function, 1, 1, 1, 1, 1, 1, 0, a.stream(), new byte[0], 0))
                .result(), "cuLaunchKernel on A's stream");
        // B's own memory, written on A's stream: the copy is B's to make, the stream is not B's
        long mine = ok(b.call(Requests.ivc_mem_alloc(SIZE)));
        assertEquals(CuResult.INVALID_HANDLE, b.call(Requests.ivc_memcpy_htod_inline_async(mine, a.stream(), pattern(97), SIZE)).result(),
                "cuMemcpyHtoDAsync on A's stream");
        assertEquals(CuResult.SUCCESS, b.call(Requests.ivc_memcpy_htod_inline(mine, 0, pattern(98), SIZE)).result(),
                "the same copy on the NULL stream runs");
        long stream = ok(b.call(Requests.cuStreamCreate(0)));
        return new Held(ctx, mine, stream);
    }

    /** A's objects are as A left them: its data, its context, its stream; and A may still free what it holds. */
    static void intact(Channel a, Held held, byte[] data) {
        assertArrayEquals(data, read(a, held.dptr()), "A's memory is unchanged");
        assertEquals(CuResult.SUCCESS, a.call(Requests.cuCtxSetCurrent(held.ctx())).result(), "A's context is A's");
        assertEquals(CuResult.SUCCESS, a.call(Requests.cuStreamSynchronize(held.stream())).result(), "A's stream is A's");
        assertEquals(CuResult.SUCCESS, a.call(Requests.cuStreamDestroy_v2(held.stream())).result());
        assertEquals(CuResult.SUCCESS, a.call(Requests.ivc_mem_free(held.dptr())).result());
    }

    @Test
    void aFrontEndsHandlesAreNothingThroughAnotherFrontEndsSlot() throws Exception {
        List<FakeGuest> slots = servedSlots(2);
        Channel a = greeted(slots.get(0), 0, TOKEN);
        byte[] data = pattern(1);
        Held held = work(a, data);
        // B: its own slot, the same channel index and A's own token
        Channel b = greeted(slots.get(1), 0, TOKEN);
        Held theirs = refusesEachUse(b, held);
        // each server numbers its own objects: B's first context, allocation and stream carry A's very values (kind,
        // generation and index alike; the host-memory backend's addresses start at the same base), and name B's own
        assertEquals(held, theirs, "the same values, each front-end's own objects");
        assertArrayEquals(pattern(98), read(b, theirs.dptr()));
        intact(a, held, data);
        assertArrayEquals(pattern(98), read(b, theirs.dptr()), "A's frees leave B's memory alone");
        assertEquals(CuResult.SUCCESS, b.call(Requests.cuStreamSynchronize(theirs.stream())).result(), "and B's stream");
    }

    @Test
    void aSecondProcessOfTheSameFrontEndIsRefusedTheSameWay() throws Exception {
        FakeGuest slot = servedSlots(1).get(0);
        Channel a = greeted(slot, 0, TOKEN);
        byte[] data = pattern(3);
        Held held = work(a, data);
        // one server: the handle table is shared, the owner token differs
        Channel other = greeted(slot, 1, TOKEN + 1);
        Held theirs = refusesEachUse(other, held);
        assertNotEquals(held.dptr(), theirs.dptr(), "one server: another process's allocation is elsewhere");
        intact(a, held, data);
        assertArrayEquals(pattern(98), read(other, theirs.dptr()));
    }
}
