package io.ivcuda.server;

import static io.ivcuda.server.ServerIntegrationTest.awaitTrue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.gen.Requests;
import io.ivcuda.wire.ChannelFlyweight;
import io.ivcuda.wire.HeaderFlyweight;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.logging.log4j.Level;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 13's findings, one regression test each, on the host-memory backend: what a hostile (or
 * killed) guest process did to the server before, and what it gets now.
 */
class HostileGuestTest extends HostMemoryGuestCase {
    static final long TOKEN = (4242L << 32) | 0x1234;
    static final long OTHER = (4343L << 32) | 0x5678;

    GatedBackend backend;
    final LogCapture log = new LogCapture();

    /**
     * The host-memory backend with a gate: a memset of {@value #GATED} elements stops inside the
     * "driver call" until the test opens it, as a GPU call that takes long does. It records frees.
     */
    static final class GatedBackend extends HostMemoryBackend {
        static final long GATED = 12345;
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch gate = new CountDownLatch(1);
        final AtomicBoolean inside = new AtomicBoolean();
        final AtomicInteger freesWhileInside = new AtomicInteger();
        final AtomicInteger frees = new AtomicInteger();
        /** Events and streams the "driver" made and destroyed: a refused call must have made none. */
        final AtomicInteger objectsCreated = new AtomicInteger();
        final AtomicInteger objectsDestroyed = new AtomicInteger();

        @Override
        public int eventCreate(Out o, int flags) {
            objectsCreated.incrementAndGet();
            return super.eventCreate(o, flags);
        }

        @Override
        public int streamCreate(Out o, int flags, int priority) {
            objectsCreated.incrementAndGet();
            return super.streamCreate(o, flags, priority);
        }

        @Override
        public int eventDestroy(long event) {
            objectsDestroyed.incrementAndGet();
            return super.eventDestroy(event);
        }

        @Override
        public int streamDestroy(long stream) {
            objectsDestroyed.incrementAndGet();
            return super.streamDestroy(stream);
        }

        @Override
        public int memset(int width, long dst, int value, long count, long stream, boolean async) {
            if (count != GATED) {
                return super.memset(width, dst, value, count, stream, async);
            }
            inside.set(true);
            entered.countDown();
            try {
                gate.await(20, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            int r = super.memset(width, dst, value, count, stream, async);
            inside.set(false);
            return r;
        }

        @Override
        public synchronized int memFree(long dptr) {
            frees.incrementAndGet();
            if (inside.get()) {
                freesWhileInside.incrementAndGet();
            }
            return super.memFree(dptr);
        }
    }

    @Override
    long token() {
        return TOKEN;
    }

    void start(String... extra) throws Exception {
        backend = new GatedBackend();
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

    private static long alloc(Channel c, long bytes) {
        Response r = c.call(Requests.ivc_mem_alloc(bytes));
        assertEquals(CuResult.SUCCESS, r.result());
        return r.out(0);
    }

    /** A memset that stops inside the backend until the gate opens, answered on another thread. */
    private CompletableFuture<Response> gatedMemset(Channel c, long dptr) throws InterruptedException {
        CompletableFuture<Response> f = CompletableFuture.supplyAsync(
                () -> c.call(Requests.cuMemsetD8_v2(dptr, 7, GatedBackend.GATED)));
        assertTrue(backend.entered.await(10, TimeUnit.SECONDS), "the memset reached the backend");
        return f;
    }

    private void beatGuestHeartbeat() {
        guest.header.addLongRelease(HeaderFlyweight.GUEST_HEARTBEAT_OFFSET, 1);
    }

    /** 1a: another thread of the process frees the block a memset is still writing (was SIGSEGV 5 of 5). */
    @Test
    void aFreeWhileAnotherThreadMemsetsTheBlockWaitsForIt() throws Exception {
        start();
        Channel a = hello(0, TOKEN);
        Channel b = hello(1, TOKEN);
        long d = alloc(a, 1 << 20);
        CompletableFuture<Response> memset = gatedMemset(a, d);
        assertEquals(CuResult.SUCCESS, b.call(Requests.ivc_mem_free(d)).result(), "the free is answered at once");
        assertEquals(CuResult.INVALID_VALUE, b.call(Requests.cuMemsetD8_v2(d, 1, 16)).result(), "and the block is gone");
        assertEquals(0, backend.frees.get(), "but not released while the memset runs");
        backend.gate.countDown();
        assertEquals(CuResult.SUCCESS, memset.get(10, TimeUnit.SECONDS).result());
        awaitTrue(() -> backend.frees.get() == 1 && server.vm().allocated() == 0, "released once the memset returned");
        assertEquals(0, backend.freesWhileInside.get());
    }

    /**
     * 1b and 8: the reclaim of a process whose worker is inside a long driver call frees nothing
     * until the call returns (it freed "anyway" after 10 s), and blocks nobody else meanwhile.
     */
    @Test
    void aReclaimWaitsForTheBusyWorkerWithoutBlockingOthers() throws Exception {
        start();
        Channel a = hello(0, TOKEN);
        Channel exiting = hello(1, TOKEN);
        long d = alloc(a, 1 << 20);
        CompletableFuture<Response> memset = gatedMemset(a, d);
        long t0 = System.nanoTime();
        assertEquals(CuResult.SUCCESS, exiting.call(Requests.ivc_process_exit()).result());
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(2), "ivc_process_exit does not wait");
        // another process is served meanwhile: the watcher is not blocked by the reclaim
        Channel other = hello(2, OTHER);
        assertEquals(CuResult.SUCCESS, other.call(Requests.cuInit(0)).result());
        Thread.sleep(300);
        assertEquals(0, backend.frees.get(), "nothing freed while the worker is inside the driver");
        assertEquals(TOKEN, a.c.getLongVolatile(ChannelFlyweight.OWNER_OFFSET), "its channel is not given away");
        backend.gate.countDown();
        memset.get(10, TimeUnit.SECONDS);
        awaitTrue(() -> server.vm().allocated() == 0 && backend.frees.get() == 1, "reclaimed once the call returned");
        awaitTrue(() -> a.c.getLongVolatile(ChannelFlyweight.OWNER_OFFSET) == 0, "its channel given back");
        assertEquals(0, backend.freesWhileInside.get());
    }

    /** 1c: a stop while a worker is inside a driver call leaves the region mapped (it was unmapped: 3 of 3 crashed). */
    @Test
    void aStopWithABusyWorkerLeavesTheRegionMapped() throws Exception {
        start();
        server.stopWaitMs(200);
        Channel a = hello(0, TOKEN);
        long d = alloc(a, 1 << 20);
        CompletableFuture<Response> memset = gatedMemset(a, d);
        server.close();
        assertEquals(HeaderFlyweight.STATE_STOPPING, guest.layout.serverStateVolatile(), "stopped short of STOPPED");
        backend.gate.countDown();
        // the worker finishes its call and answers into the region, which is still mapped
        assertEquals(CuResult.SUCCESS, memset.get(10, TimeUnit.SECONDS).result());
        assertEquals(0, backend.freesWhileInside.get());
        server = null;
    }

    /** 2: ring records before ivc_hello (an NPE stack at ERROR each, 211 k/s) are refused, a few lines in all. */
    @Test
    void ringRecordsBeforeHelloAreNeverRunAndBarelyLogged() throws Exception {
        start();
        for (int round = 0; round < 200; round++) {
            Channel c = guest.claim(0, TOKEN + round);
            c.post(Requests.cuMemsetD8Async(0x7_0000_0000L, 1, 16, 0));
            c.post(Requests.cuMemsetD8Async(0x7_0000_0000L, 1, 16, 0));
            Response r = c.call(Requests.cuInit(0));
            assertTrue(r.result() != CuResult.SUCCESS);
            awaitTrue(() -> c.c.getLongVolatile(ChannelFlyweight.OWNER_OFFSET) == 0
                    && c.c.getIntVolatile(ChannelFlyweight.ATTACHED_OFFSET) == 0, "released");
        }
        assertEquals(0, log.count(Level.ERROR), "no handler failed: " + log.lines());
        assertTrue(log.count(Level.WARN) <= 3 * 6, "a few lines per kind, not one per request: " + log.count(Level.WARN));
        assertTrue(server.vm().refusals().count("ring ring") >= 200, server.vm().refusals().counts().toString());
    }

    /** 2: an allocation size that overflows the count (a stack per request, 720 MiB in 10 s) is refused quietly. */
    @Test
    void overflowingAllocationSizesAreRefusedWithoutAStack() throws Exception {
        start();
        Channel c = hello(0, TOKEN);
        for (int i = 0; i < 5000; i++) {
            assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_mem_alloc(Long.MAX_VALUE - i)).result());
            int pitch = c.call(Requests.ivc_mem_alloc_pitch(1L << 40, 1L << 40, 4)).result();
            assertTrue(pitch == CuResult.OUT_OF_MEMORY || pitch == CuResult.INVALID_VALUE, "pitch " + pitch);
        }
        alloc(c, 4096); // still served
        assertEquals(0, log.count(Level.ERROR), log.lines().toString());
        assertTrue(log.count(Level.WARN) <= 20, "lines: " + log.count(Level.WARN));
    }

    /**
     * 3: a process that claimed every channel and was killed (its heartbeat stops) no longer locks
     * newcomers out: they beat the VM's heartbeat while they wait, and everything it held is given back
     * within 2 s of its death, even when it dies right after a check of the server (its last beat seen a
     * check period late): owner.timeout.ms (1.2 s by default) + the 100 ms period + the reclaim.
     */
    @Test
    void aKilledProcessHoldingEveryChannelIsReclaimedWhileANewcomerWaits() throws Exception {
        start();
        List<Channel> held = new ArrayList<>();
        for (int i = 0; i < guest.channelCount; i++) {
            Channel c = i % 2 == 0 ? hello(i, TOKEN) : guest.claim(i, TOKEN); // some never said hello
            held.add(c);
        }
        alloc(held.get(0), 1 << 20);
        held.get(1).c.putIntVolatile(ChannelFlyweight.ATTACHED_OFFSET, 1); // and lies about attached
        double seconds = KilledProcess.secondsUntilReclaimed(guest, held, server.vm());
        assertTrue(seconds < 2.0, "reclaimed " + seconds + " s after its death (owner.timeout.ms 1200, checks every 100 ms)");
        Channel fresh = guest.claim(0, OTHER);
        assertEquals(CuResult.SUCCESS, fresh.hello().result(), "a newcomer is served on a channel the dead one held");
    }

    /** 4: a process that gave its channels back and died keeps no memory (300 such took the whole GiB). */
    @Test
    void memoryOfAProcessWithoutChannelsIsReclaimed() throws Exception {
        start("owner.timeout.ms=300");
        Channel c = hello(0, TOKEN);
        alloc(c, 1 << 20);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_goodbye()).result());
        c.release();
        // the VM goes on (another process beats); this token has state and no channel
        long deadline = System.currentTimeMillis() + 10_000;
        // the owner leaves the table at the end of its reclaim, after its memory: wait for both
        while ((server.vm().allocated() != 0 || !server.vm().owners().isEmpty()) && System.currentTimeMillis() < deadline) {
            beatGuestHeartbeat();
            Thread.sleep(50);
        }
        assertEquals(0, server.vm().allocated());
        assertTrue(server.vm().owners().isEmpty());
    }

    /** 4 (the other side): nothing is reclaimed while the VM is paused (no heartbeat moves). */
    @Test
    void aTokenWithoutChannelsIsKeptWhileTheVmIsPaused() throws Exception {
        start("owner.timeout.ms=300");
        Channel c = hello(0, TOKEN);
        alloc(c, 1 << 20);
        c.call(Requests.ivc_goodbye());
        c.release();
        Thread.sleep(1000);
        assertEquals(1 << 20, server.vm().allocated());
    }

    /** 5: handles are bounded per process; beyond it a CUDA error, and others are still served. */
    @Test
    void handlesAreBoundedPerProcess() throws Exception {
        start("limit.handles.process=50");
        Channel c = hello(0, TOKEN);
        for (int i = 0; i < 50; i++) {
            assertEquals(CuResult.SUCCESS, c.call(Requests.cuEventCreate(0)).result());
        }
        for (int i = 0; i < 1000; i++) {
            assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.cuStreamCreate(0)).result());
        }
        assertEquals(50, server.vm().handles().size());
        Channel other = hello(1, OTHER);
        assertEquals(CuResult.SUCCESS, other.call(Requests.cuStreamCreate(0)).result());
        assertTrue(log.count(Level.WARN) <= 10, "lines: " + log.count(Level.WARN));
    }

    /**
     * 5: handles are bounded per VM too: two processes, each far below its own limit, together reach
     * {@code limit.handles.vm}; either one's next handle gets CUDA_ERROR_OUT_OF_MEMORY (threat-model,
     * "Limits") before the driver object is made, a destroy makes room again, and their exits give
     * every handle and driver object back.
     */
    @Test
    void handlesAreBoundedPerVm() throws Exception {
        start("limit.handles.vm=60");
        Channel a = hello(0, TOKEN);
        Channel b = hello(1, OTHER);
        for (int i = 0; i < 40; i++) {
            assertEquals(CuResult.SUCCESS, a.call(Requests.cuEventCreate(0)).result());
        }
        List<Long> bEvents = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            Response r = b.call(Requests.cuEventCreate(0));
            assertEquals(CuResult.SUCCESS, r.result());
            bEvents.add(r.out(0));
        }
        for (int i = 0; i < 100; i++) {
            assertEquals(CuResult.OUT_OF_MEMORY, b.call(Requests.cuEventCreate(0)).result());
            assertEquals(CuResult.OUT_OF_MEMORY, a.call(Requests.cuStreamCreate(0)).result());
        }
        assertEquals(60, server.vm().handles().size());
        assertEquals(60, backend.objectsCreated.get(), "the refused calls made no driver object");
        // counted each, logged 5 times per kind (log.refusals.per.kind), naming the limits
        assertEquals(100, server.vm().refusals().count("cuEventCreate phEvent"));
        assertEquals(100, server.vm().refusals().count("cuStreamCreate phStream"));
        assertEquals(10, log.lines().stream().filter(l -> l.contains(ServerKeys.LIMIT_HANDLES_VM.name())).count(),
                log.lines().toString());

        // one destroyed: room for exactly one more, for either process
        assertEquals(CuResult.SUCCESS, b.call(Requests.cuEventDestroy_v2(bEvents.get(0))).result());
        assertEquals(CuResult.SUCCESS, a.call(Requests.cuStreamCreate(0)).result());
        assertEquals(CuResult.OUT_OF_MEMORY, b.call(Requests.cuEventCreate(0)).result());

        assertEquals(CuResult.SUCCESS, a.call(Requests.ivc_process_exit()).result());
        assertEquals(CuResult.SUCCESS, b.call(Requests.ivc_process_exit()).result());
        awaitTrue(() -> server.vm().handles().size() == 0, "every handle of both processes released");
        assertEquals(61, backend.objectsCreated.get());
        awaitTrue(() -> backend.objectsDestroyed.get() == 61, "every driver object destroyed, none twice");
        Channel next = hello(2, (4444L << 32) | 0x9abc);
        for (int i = 0; i < 60; i++) {
            assertEquals(CuResult.SUCCESS, next.call(Requests.cuEventCreate(0)).result(), "the VM's room is whole again");
        }
    }

    /** 5: a module upload's announced size is checked against the limit before anything is allocated. */
    @Test
    void aModuleUploadBeyondTheImageLimitIsRefusedBeforeAllocating() throws Exception {
        start("limit.module.image.bytes=1048576");
        Channel c = hello(0, TOKEN);
        byte[] image = new byte[2 << 20];
        Response r = c.streamRequest(Requests.ivc_module_load(1, image.length, 1, new byte[0], 0), image);
        assertEquals(CuResult.OUT_OF_MEMORY, r.result());
        assertEquals(1, server.vm().refusals().count("ivc_module_load imageSize"));
        // the window's counters ended equal: the channel still works
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuInit(0)).result());
    }

    /** 6: a channel left at rest but out of step with the server's counters is reset, not trapped (0 of 40). */
    @Test
    void aChannelLeftOutOfStepIsResetFromTheServersCounters() throws Exception {
        start();
        Channel c = hello(2, TOKEN);
        c.call(Requests.ivc_goodbye());
        long expected = c.control.respSeqVolatile();
        c.release();
        awaitTrue(() -> c.c.getIntVolatile(ChannelFlyweight.ATTACHED_OFFSET) == 0, "its worker left");
        // a free channel that looks at rest to a claimer, and is not what the server expects
        c.control.reqSeqVolatile(1000);
        c.control.respSeqVolatile(1000);
        c.control.ringTailVolatile(64);
        c.control.ringHeadVolatile(64);
        awaitTrue(() -> c.control.reqSeqVolatile() == expected && c.control.respSeqVolatile() == expected
                && c.control.ringTailVolatile() == 0 && c.control.ownerVolatile() == 0, "reset by the server");
        Channel next = guest.claim(2, OTHER);
        assertEquals(CuResult.SUCCESS, next.hello().result());
        assertEquals(CuResult.SUCCESS, next.call(Requests.cuInit(0)).result());
    }

    /** 6: the guest-writable attached word does not keep the watcher from serving a claim. */
    @Test
    void aClaimIsServedWhateverTheAttachedWordSays() throws Exception {
        start();
        Channel c = guest.claim(3, TOKEN);
        c.c.putIntVolatile(ChannelFlyweight.ATTACHED_OFFSET, 1);
        assertEquals(CuResult.SUCCESS, c.hello().result());
    }

    /**
     * 7: strings are copied once, then checked and decoded from the copy; a guest that flips a
     * string's terminator during its calls gets refusals or answers, never a failure of the server.
     */
    @Test
    void aStringChangedDuringTheCallIsCheckedOnItsCopy() throws Exception {
        start();
        Channel c = hello(0, TOKEN);
        AtomicBoolean flipping = new AtomicBoolean(true);
        int at = c.request.offset() + io.ivcuda.wire.RequestFlyweight.LENGTH + 8 + 8 + 6; // name's NUL
        Thread flipper = new Thread(() -> {
            while (flipping.get()) {
                c.c.putByteVolatile(at, (byte) 'x');
                c.c.putByteVolatile(at, (byte) 0);
            }
        });
        flipper.start();
        try {
            for (int i = 0; i < 2000; i++) {
                int result = c.call(Requests.cuModuleGetFunction(0x0200000100000000L, "kernel")).result();
                assertTrue(result == CuResult.INVALID_HANDLE || result == CuResult.INVALID_VALUE, "result " + result);
            }
        } finally {
            flipping.set(false);
            flipper.join();
        }
        assertEquals(0, log.count(Level.ERROR), log.lines().toString());
        assertFalse(server.vm().refusals().counts().containsKey(Opcodes.name(Opcodes.CU_MODULE_GET_FUNCTION) + " handler"));
    }
}
