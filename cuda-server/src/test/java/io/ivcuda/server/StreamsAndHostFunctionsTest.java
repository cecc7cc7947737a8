package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostCallbacks;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.core.HostCalls;
import io.ivcuda.server.core.Limits;
import io.ivcuda.server.core.RefusalLog;
import io.ivcuda.server.gen.Requests;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Stream queries, stream memory operations and host functions (api/graphs.api) against the
 * host-memory backend, whose streams complete at once: what it answers is what it recorded or did,
 * and a host function runs (through the guest's thread, here a second channel) before the
 * enqueueing call returns. Attributes need the driver: refused, after the server's own checks.
 */
class StreamsAndHostFunctionsTest extends HostMemoryGuestCase {
    static final long TOKEN = (5151L << 32) | 0x77;

    @Override
    long token() {
        return TOKEN;
    }

    @Test
    void streamQueriesAnswerWhatTheStreamWasCreatedWith() throws Exception {
        start(new HostMemoryBackend());
        Channel c = greeted(0);
        long ctx = ok(c.call(Requests.cuDevicePrimaryCtxRetain(0)));
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuCtxSetCurrent(ctx)).result());
        long stream = ok(c.call(Requests.cuStreamCreateWithPriority(1, -1)));
        assertEquals(1, ok(c.call(Requests.cuStreamGetFlags(stream))));
        assertEquals(-1, (int) ok(c.call(Requests.cuStreamGetPriority(stream))));
        assertEquals(ctx, ok(c.call(Requests.cuStreamGetCtx(stream))), "the context as the process names it");
        Response v2 = c.call(Requests.cuStreamGetCtx_v2(stream));
        assertEquals(ctx, ok(v2));
        assertEquals(0, v2.out(1), "no green context");
        assertEquals(0, ok(c.call(Requests.cuStreamGetDevice(stream))));
        assertNotEquals(0, ok(c.call(Requests.cuStreamGetId(stream))));
        // a stream of another process, or none: the generated handle check
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuStreamGetFlags(stream + 1)).result());
        // attributes: the server's checks first, then the backend (no attributes in host memory)
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_stream_set_attribute(stream, 77, new byte[64])).result());
        byte[] window = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN).putLong(0x1000).putLong(4096).array();
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_stream_set_attribute(stream, 1, window)).result(),
                "an access policy window over memory the process does not hold");
        assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.ivc_stream_set_attribute(stream, 8, new byte[64])).result());
    }

    @Test
    void memoryOperationsWriteAndWaitOnTheProcesssMemoryOnly() throws Exception {
        start(new HostMemoryBackend());
        Channel c = greeted(0);
        long d = ok(c.call(Requests.ivc_mem_alloc(4096)));
        c.post(Requests.cuStreamWriteValue32_v2(0, d + 8, 0xabcdef01L, 0));
        c.post(Requests.cuStreamWriteValue64_v2(0, d + 16, 0x1122334455667788L, 0));
        c.post(Requests.cuStreamWaitValue32_v2(0, d + 8, 0xabcdef01L, 1));
        Response read = c.call(Requests.ivc_memcpy_dtoh_inline(d, 0, 24));
        assertEquals(CuResult.SUCCESS, read.result(), "no sticky error: every operation was accepted");
        ByteBuffer bytes = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
        read.buffer().getBytes(read.payload() + 8, bytes, 24);
        assertEquals(0xabcdef01, bytes.getInt(8));
        assertEquals(0x1122334455667788L, bytes.getLong(16));
        // outside the process's memory: the dispatcher's device check, answered by the next sync call
        c.post(Requests.cuStreamWriteValue64_v2(0, d + 4092, 1, 0));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuCtxSynchronize()).result());
        // a batch: one write and a barrier are fine; an unknown operation or a foreign address is not
        ByteBuffer ops = ByteBuffer.allocate(96).order(ByteOrder.LITTLE_ENDIAN);
        ops.putInt(0, 2).putLong(8, d + 32).putInt(16, 42);
        ops.putInt(48, 6);
        c.post(Requests.ivc_stream_batch_memop(0, 2, ops.array(), 96, 0));
        assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.cuCtxSynchronize()).result(),
                "checked, then the backend's answer (no batches in host memory)");
        ops.putInt(48, 9);
        c.post(Requests.ivc_stream_batch_memop(0, 2, ops.array(), 96, 0));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuCtxSynchronize()).result(), "operation 9");
        ops.putInt(48, 5).putLong(56, 0x10);
        c.post(Requests.ivc_stream_batch_memop(0, 2, ops.array(), 96, 0));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuCtxSynchronize()).result(), "a foreign address");
        c.post(Requests.ivc_stream_batch_memop(0, 3, ops.array(), 96, 0));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuCtxSynchronize()).result(), "3 operations in 96 bytes");
    }

    @Test
    void aHostFunctionRunsOnTheGuestsThreadBeforeTheStreamGoesOn() throws Exception {
        start(new HostMemoryBackend());
        Channel caller = greeted(0);
        Channel hostThread = greeted(1);
        CompletableFuture<Response> enqueue = CompletableFuture.supplyAsync(
                () -> caller.call(Requests.ivc_host_enqueue(0, HostCalls.KIND_STREAM_CALLBACK, 0x4000, 0x5000, 0x1)));
        Response next = hostThread.call(Requests.ivc_host_next(0, 1000));
        assertEquals(CuResult.SUCCESS, next.result());
        long id = next.out(0);
        assertEquals(HostCalls.KIND_STREAM_CALLBACK, next.out(1));
        assertEquals(0x4000, next.out(2));
        assertEquals(0x5000, next.out(3));
        assertEquals(0x1, next.out(4), "the stream as the guest named it");
        Thread.sleep(100);
        assertFalse(enqueue.isDone(), "the stream waits until the guest ran it");
        // reporting it ran; nothing else comes
        assertEquals(CuResult.NOT_READY, hostThread.call(Requests.ivc_host_next(id, 50)).result());
        assertEquals(CuResult.SUCCESS, enqueue.get(10, TimeUnit.SECONDS).result());
        assertEquals(0, server.vm().hostCalls().targets(TOKEN), "a stream's host function is released after its run");
        // refused before anything is queued
        assertEquals(CuResult.INVALID_VALUE, caller.call(Requests.ivc_host_enqueue(0, 2, 0x4000, 0, 0)).result());
        assertEquals(CuResult.INVALID_VALUE, caller.call(Requests.ivc_host_enqueue(0, 0, 0, 0, 0)).result());
    }

    @Test
    void theExitOfAProcessReleasesTheStreamItsHostFunctionHolds() throws Exception {
        start(new HostMemoryBackend());
        Channel caller = greeted(0);
        Channel exiting = greeted(1);
        int before = HostCallbacks.registered();
        CompletableFuture<Response> enqueue = CompletableFuture.supplyAsync(
                () -> caller.call(Requests.ivc_host_enqueue(0, 0, 0x4000, 0, 0)));
        Thread.sleep(200);
        assertFalse(enqueue.isDone(), "nobody runs it");
        assertEquals(CuResult.SUCCESS, exiting.call(Requests.ivc_process_exit()).result());
        Response r = enqueue.get(5, TimeUnit.SECONDS);
        assertTrue(r.result() == CuResult.SUCCESS || r.result() == FakeGuest.LOST, "the driver's thread went on");
        ServerIntegrationTest.awaitTrue(() -> HostCallbacks.registered() <= before, "its key is released");
    }

    @Test
    void aGuestThatNeverAnswersHoldsTheDriversThreadOnlyUntilTheTimeout() throws Exception {
        RefusalLog refusals = new RefusalLog(Limits.DEFAULT);
        HostCalls calls = new HostCalls(refusals, 2, TimeUnit.MILLISECONDS.toNanos(200));
        HostCalls.Target a = calls.add(1, HostCalls.KIND_HOST_FN, 0x10, 0, 0, true);
        HostCalls.Target b = calls.add(1, HostCalls.KIND_HOST_FN, 0x20, 0, 0, true);
        assertEquals(null, calls.add(1, HostCalls.KIND_HOST_FN, 0x30, 0, 0, true), "bounded per process");
        assertNotEquals(null, calls.add(2, HostCalls.KIND_HOST_FN, 0x30, 0, 0, true), "another process is not");
        long t0 = System.nanoTime();
        HostCallbacks.fire(a.key(), 0);
        long waited = System.nanoTime() - t0;
        assertTrue(waited >= TimeUnit.MILLISECONDS.toNanos(150) && waited < TimeUnit.SECONDS.toNanos(5), "waited " + waited);
        assertEquals(1, calls.targets(1), "released after its one run");
        // a delivery taken but never reported: the same timeout
        CompletableFuture<Void> fired = CompletableFuture.runAsync(() -> HostCallbacks.fire(b.key(), 0));
        HostCalls.Delivery d = calls.next(1, 0, 1000, () -> false);
        assertEquals(0x20, d.target.fn());
        fired.get(5, TimeUnit.SECONDS);
        // a late report of it is harmless
        assertEquals(null, calls.next(1, d.id, 10, () -> false));
        calls.reclaim(1);
        calls.reclaim(2);
        assertEquals(0, calls.targets(1));
    }
}
