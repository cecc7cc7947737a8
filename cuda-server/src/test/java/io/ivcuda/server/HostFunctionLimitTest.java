package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostCallbacks;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.core.HostCalls;
import io.ivcuda.server.gen.Requests;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code limit.host.functions.process}: host functions a process has waiting on the server. The
 * backend here keeps every host function it is given without running it, as the driver does on a
 * stream held back by a {@code cuStreamWaitValue32} on a value nobody writes.
 */
class HostFunctionLimitTest extends HostMemoryGuestCase {
    static final long TOKEN = (6161L << 32) | 0x61;

    @Override
    long token() {
        return TOKEN;
    }

    /** A stream that never reaches its host functions: the keys the driver was given, none run. */
    static final class HeldBackStreams extends HostMemoryBackend {
        final List<Long> keys = new CopyOnWriteArrayList<>();

        @Override
        public int launchHostFunc(long stream, long key) {
            keys.add(key);
            return CuResult.SUCCESS;
        }

        @Override
        public int streamAddCallback(long stream, long key, int flags) {
            keys.add(key);
            return CuResult.SUCCESS;
        }
    }

    @Test
    void hostFunctionsBeyondTheLimitAreRefusedBeforeTheDriverAndGivenBackWhenRunOrReclaimed() throws Exception {
        HeldBackStreams backend = new HeldBackStreams();
        start(backend, "limit.host.functions.process=3", "pidfile=" + dir.resolve("vm.pid"));
        int before = HostCallbacks.registered();
        Channel c = greeted(0);
        for (int i = 0; i < 3; i++) {
            assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_host_enqueue(0, i % 2, 0x4000 + i, i, 0)).result());
        }
        assertEquals(3, server.vm().hostCalls().targets(TOKEN));
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_host_enqueue(0, HostCalls.KIND_HOST_FN, 0x5000, 0, 0)).result());
        assertEquals(CuResult.OUT_OF_MEMORY,
                c.call(Requests.ivc_host_enqueue(0, HostCalls.KIND_STREAM_CALLBACK, 0x5000, 0, 0)).result());
        assertEquals(3, backend.keys.size(), "refused before the driver call");
        assertEquals(before + 3, HostCallbacks.registered());
        // counted in the status file's refusal counters (and logged at the refusal log's rate)
        Properties status = status();
        assertEquals("2", status.getProperty("refusals.ivc_host_enqueue.fn"), status.toString());
        // the driver reaches the first one: the guest's host-function thread (a second channel) runs it
        // and reports it, and the target is given back
        Channel hostThread = hello(1, TOKEN);
        CompletableFuture<Void> driver = CompletableFuture.runAsync(() -> HostCallbacks.fire(backend.keys.get(0), 0));
        Response next = hostThread.call(Requests.ivc_host_next(0, 1000));
        assertEquals(CuResult.SUCCESS, next.result());
        assertEquals(0x4000, next.out(2), "the guest's fn");
        hostThread.call(Requests.ivc_host_next(next.out(0), 10));
        driver.get(5, TimeUnit.SECONDS);
        assertEquals(2, server.vm().hostCalls().targets(TOKEN), "run once: given back");
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_host_enqueue(0, HostCalls.KIND_HOST_FN, 0x6000, 0, 0)).result());
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_host_enqueue(0, HostCalls.KIND_HOST_FN, 0x7000, 0, 0)).result());
        // the process goes: every target and key comes back, and a late driver call does nothing
        assertEquals(CuResult.SUCCESS, hostThread.call(Requests.ivc_process_exit()).result());
        ServerIntegrationTest.awaitTrue(() -> server.vm().hostCalls().targets(TOKEN) == 0, "targets given back");
        ServerIntegrationTest.awaitTrue(() -> HostCallbacks.registered() <= before, "keys given back");
        HostCallbacks.fire(backend.keys.get(1), 0);
        assertTrue(backend.keys.size() == 4);
    }

    @Test
    void theDefaultIsTheKeysDeclaration() throws Exception {
        start(new HostMemoryBackend());
        assertEquals(65_536, server.vm().hostCalls().maxTargets());
    }
}
