package io.ivcuda.server;

import static io.ivcuda.server.ServerIntegrationTest.awaitTrue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.gen.Requests;
import io.ivcuda.wire.ChannelFlyweight;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.logging.log4j.Level;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A process that exits (ivc_process_exit) and goes on calling the driver from its exit handlers, as
 * cudart's static teardown does: it claims a channel again with the same token and says hello
 * while the server is still freeing it. On the H200 (conjugateGradientCudaGraphs, exiting in the
 * middle of a capture, in a batch of processes) the server then died of glibc's "double free or
 * corruption": the re-hello got a fresh session of the same token, whose calls destroyed the same
 * driver objects the reclaim was destroying. Here the backend records every destroy of a stream and
 * holds the reclaim inside its first one, so the race is not left to timing.
 */
class DyingProcessTest extends HostMemoryGuestCase {
    /** The process of the single-process test; the batch's processes have tokens of their own. */
    static final long TOKEN = (7000L << 32) | 0x42;

    RecordingBackend backend;
    final LogCapture log = new LogCapture();

    /** Host memory that knows which streams live, and holds the reclaim thread's first destroy. */
    static final class RecordingBackend extends HostMemoryBackend {
        final Set<Long> liveStreams = ConcurrentHashMap.newKeySet();
        final AtomicInteger doubleDestroys = new AtomicInteger();
        final AtomicInteger destroys = new AtomicInteger();
        volatile CountDownLatch entered = new CountDownLatch(1);
        volatile CountDownLatch gate = new CountDownLatch(0);
        volatile long heldStream;

        @Override
        public int streamCreate(Out o, int flags, int priority) {
            int r = super.streamCreate(o, flags, priority);
            liveStreams.add(o.handle);
            return r;
        }

        @Override
        public int streamDestroy(long stream) {
            if (Thread.currentThread().getName().equals("reclaim") && gate.getCount() > 0 && entered.getCount() > 0) {
                heldStream = stream;
                entered.countDown();
                try {
                    gate.await(20, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            destroys.incrementAndGet();
            if (!liveStreams.remove(stream)) {
                doubleDestroys.incrementAndGet(); // on the GPU: a double free inside the driver
                return CuResult.INVALID_HANDLE;
            }
            return super.streamDestroy(stream);
        }

        void holdNextReclaim() {
            entered = new CountDownLatch(1);
            gate = new CountDownLatch(1);
        }
    }

    @Override
    long token() {
        return TOKEN;
    }

    void start(String... extra) throws Exception {
        backend = new RecordingBackend();
        start(backend, Stream.concat(Stream.of("wait.park.max.us=200"), Stream.of(extra)).toArray(String[]::new));
    }

    /** The gate opened first: a call held inside the backend would keep the server from closing. */
    @AfterEach
    @Override
    void stop() {
        log.close();
        backend.gate.countDown();
        super.stop();
    }

    private static long stream(Channel c) {
        Response r = c.call(Requests.cuStreamCreate(0));
        assertEquals(CuResult.SUCCESS, r.result());
        return r.out(0);
    }

    /** The guest library's claim: waits until the server gave the channel back at rest. */
    private Channel claimWhenFree(int index, long token) {
        ChannelFlyweight c = new ChannelFlyweight().wrap(guest.region.view(guest.channelTable
                + (long) index * guest.stride, guest.stride), 0);
        awaitTrue(() -> c.ownerVolatile() == 0 && c.reqSeqVolatile() == c.respSeqVolatile()
                && c.attachedVolatile() == 0, "channel " + index + " free");
        return guest.claim(index, token);
    }

    /**
     * One process of a batch: streams made, then ivc_process_exit and the channel released, then —
     * while its reclaim is inside a driver call — the same token claims again, says hello and
     * destroys its other stream. Before the fix the hello succeeded and that stream was destroyed
     * twice (by the call and by the reclaim).
     */
    private void exitThenTeardown(long token) throws Exception {
        Channel c = claimWhenFree(0, token);
        assertEquals(CuResult.SUCCESS, c.hello().result());
        long a = stream(c);
        long b = stream(c);
        backend.holdNextReclaim();
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        c.release();
        assertTrue(backend.entered.await(10, TimeUnit.SECONDS), "the reclaim reached its first stream");
        // cudart's static teardown, from the same dying process
        Channel again = claimWhenFree(0, token);
        Response hello = again.hello();
        assertEquals(CuResult.NOT_INITIALIZED, hello.result(), "a process being reclaimed gets no new session");
        HandleTable.Entry held = server.vm().handles().findNative(HandleTable.KIND_STREAM, token, backend.heldStream);
        long other = held != null && held.id() == a ? b : a;
        int destroyed = again.call(Requests.cuStreamDestroy_v2(other)).result();
        assertTrue(destroyed != CuResult.SUCCESS, "no call of a dying process runs: " + destroyed);
        backend.gate.countDown();
        awaitTrue(backend.liveStreams::isEmpty, "its streams destroyed");
        awaitTrue(() -> !server.vm().owners().containsKey(token), "reclaimed");
        assertEquals(0, backend.doubleDestroys.get(), "no stream destroyed twice");
        again.release();
        // and once the reclaim is over the token still gets no session (it would make a second one)
        Channel late = claimWhenFree(1, token);
        assertEquals(CuResult.NOT_INITIALIZED, late.hello().result(), "a reclaimed token gets no new session");
        late.release();
    }

    @Test
    void aProcessThatSaysHelloAgainWhileItIsReclaimedGetsNoSessionAndNothingIsFreedTwice() throws Exception {
        start();
        for (int p = 0; p < 3; p++) {
            exitThenTeardown(((5000L + p) << 32) | 0x1234);
            // the next process of the batch is served as usual
            Channel next = claimWhenFree(2, ((6000L + p) << 32) | 0x99);
            assertEquals(CuResult.SUCCESS, next.hello().result());
            stream(next);
            assertEquals(CuResult.SUCCESS, next.call(Requests.ivc_process_exit()).result());
            next.release();
        }
        awaitTrue(() -> server.vm().owners().isEmpty() && backend.liveStreams.isEmpty(), "all reclaimed");
        assertEquals(9, backend.destroys.get(), "every stream destroyed once: " + backend.destroys.get());
        assertEquals(0, log.count(Level.ERROR), log.lines().toString());
    }

    /** The dying process's second reclaim (its dead heartbeat after its exit) frees nothing twice. */
    @Test
    void aSecondReclaimOfTheSameProcessFreesNothing() throws Exception {
        start();
        long token = TOKEN;
        Channel c = claimWhenFree(0, token);
        assertEquals(CuResult.SUCCESS, c.hello().result());
        stream(c);
        long d = c.call(Requests.ivc_mem_alloc(1 << 20)).out(0);
        assertTrue(d != 0);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        server.reclaim(token);
        server.reclaim(token);
        c.release();
        awaitTrue(() -> server.vm().owners().isEmpty() && server.vm().allocated() == 0, "reclaimed");
        Thread.sleep(100);
        server.reclaim(token);
        Thread.sleep(100);
        assertEquals(1, backend.destroys.get());
        assertEquals(0, backend.doubleDestroys.get());
        assertEquals(0, server.vm().allocated());
    }
}
