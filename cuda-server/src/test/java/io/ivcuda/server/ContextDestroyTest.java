package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.Requests;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A process destroys a context it created while its stream, event and allocation still live in it
 * (as driver-API programs do at their end): the driver destroyed them with it, so neither a later
 * call nor the process's reclaim may hand the driver the dead context or its objects. On the H200
 * the reclaim's push of such a context crashed the server (SIGSEGV in cuCtxPopCurrent).
 */
class ContextDestroyTest extends HostMemoryGuestCase {
    @Override
    long token() {
        return (6262L << 32) | 0x31;
    }

    /** Records every use of a destroyed context, and what was destroyed or freed. */
    static class DeadContextBackend extends HostMemoryBackend {
        final Set<Long> destroyed = ConcurrentHashMap.newKeySet();
        final List<String> misuse = new CopyOnWriteArrayList<>();
        final List<Long> streamsDestroyed = new CopyOnWriteArrayList<>();

        @Override
        public int ctxDestroy(long ctx) {
            destroyed.add(ctx);
            return super.ctxDestroy(ctx);
        }

        @Override
        public int ctxPushCurrent(long ctx) {
            if (destroyed.contains(ctx)) {
                misuse.add("push of destroyed context " + ctx);
            }
            return super.ctxPushCurrent(ctx);
        }

        @Override
        public int ctxSetCurrent(long ctx) {
            if (destroyed.contains(ctx)) {
                misuse.add("set of destroyed context " + ctx);
            }
            return super.ctxSetCurrent(ctx);
        }

        @Override
        public int streamDestroy(long stream) {
            streamsDestroyed.add(stream);
            return super.streamDestroy(stream);
        }
    }

    @Test
    void aDestroyedContextTakesItsObjectsWithItAndTheReclaimLeavesThemAlone() throws Exception {
        DeadContextBackend backend = new DeadContextBackend();
        start(backend);
        Channel c = greeted(0);
        long ctx = ok(c.call(Requests.cuCtxCreate_v2(0, 0)));
        long stream = ok(c.call(Requests.cuStreamCreate(0)));
        ok(c.call(Requests.cuEventCreate(0)));
        long device = ok(c.call(Requests.ivc_mem_alloc(1 << 20)));
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuCtxDestroy_v2(ctx)).result());

        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuStreamSynchronize(stream)).result(),
                "the stream went with its context");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuMemsetD8_v2(device, 0, 16)).result(),
                "so did the allocation");

        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (server.vm().handles().countOf(token()) > 0) {
            assertTrue(System.nanoTime() < deadline, "the process was not reclaimed within 10 s");
            Thread.sleep(10);
        }
        Thread.sleep(100); // the reclaim's last steps after its handles
        assertEquals(List.of(), backend.misuse);
        assertEquals(List.of(), backend.streamsDestroyed, "the driver destroyed the stream with its context");
    }
}
