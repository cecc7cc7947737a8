package io.ivcuda.server;

import static io.ivcuda.server.ServerIntegrationTest.awaitTrue;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.gen.Requests;
import io.ivcuda.wire.ChannelFlyweight;
import io.ivcuda.wire.HeaderFlyweight;
import io.ivcuda.wire.RecordFlyweight;
import io.ivcuda.wire.RequestFlyweight;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.agrona.concurrent.UnsafeBuffer;
import org.apache.logging.log4j.Level;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13's tampering attack as a regression test (host-memory backend, no GPU): a legitimate
 * process works on channel 0 — real calls whose answers it checks — while a hostile process of the
 * same VM writes at random into the header and into every other channel (control words, request
 * areas, rings, windows), claims them, publishes garbage and abandons them, for {@link #TAMPER_MS}.
 * Asserted: the server stays up; the legitimate process never gets a wrong answer (nor loses its
 * channel); what the server logs about the hostile one stays within the refusal log's rate limit
 * (no line at ERROR: that would be a server bug); and once the hostile process stops, every channel
 * it left behind, whatever its words say, is reset by the server and serves a newcomer correctly.
 * Seeded: the same writes in the same order each run (their timing against the server's varies).
 */
class TamperingTest {
    static final long SIZE = 32L << 20;
    static final long LEGIT = (1111L << 32) | 0xA11CEL;
    static final long NEWCOMER = (2222L << 32) | 0xB0BL;
    static final long SEED = 0x13_13_13L;
    static final long TAMPER_MS = Long.getLong("ivcuda.tamper.ms", 8000);

    @TempDir
    Path dir;
    CudaServer server;
    FakeGuest legitProcess;
    FakeGuest hostileProcess;
    final LogCapture log = new LogCapture();

    @AfterEach
    void stop() {
        log.close();
        for (FakeGuest g : new FakeGuest[] {legitProcess, hostileProcess}) {
            if (g != null) {
                g.close();
            }
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void aLegitimateProcessIsServedRightWhileAnotherTampersWithEverythingElse() throws Exception {
        Path region = dir.resolve("region");
        server = new CudaServer(ServerConfig.load(List.of(), List.of("region.path=" + region, "region.size=" + SIZE,
                "channel.count=4", "backend=host-memory", "wait.park.max.us=200", "owner.timeout.ms=500",
                "memory.quota=67108864")), new HostMemoryBackend());
        server.start();
        // two mappings of one region, as two processes of the VM have
        legitProcess = new FakeGuest(region, SIZE);
        hostileProcess = new FakeGuest(region, SIZE);
        Channel legit = legitProcess.claim(0, LEGIT);
        assertEquals(CuResult.SUCCESS, legit.hello().result());

        AtomicBoolean running = new AtomicBoolean(true);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        // the legitimate process's heartbeat thread (protocol §7): its channel's and the VM's
        Thread heartbeat = new Thread(() -> {
            while (running.get()) {
                legit.c.getAndAddLong(ChannelFlyweight.OWNER_HEARTBEAT_OFFSET, 1);
                legitProcess.header.getAndAddLong(HeaderFlyweight.GUEST_HEARTBEAT_OFFSET, 1);
                sleep(100);
            }
        }, "legit-heartbeat");
        AtomicLong writes = new AtomicLong();
        Thread hostile = new Thread(() -> {
            try {
                tamper(new Random(SEED), running, writes);
            } catch (Throwable t) {
                failure.set(t);
            }
        }, "hostile");
        heartbeat.start();
        hostile.start();

        Random legitRandom = new Random(SEED + 1);
        long calls = 0;
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TAMPER_MS);
        try {
            while (System.nanoTime() < deadline && failure.get() == null) {
                calls += checkedRoundTrip(legit, legitRandom);
            }
        } finally {
            running.set(false);
            hostile.join(10_000);
            heartbeat.join(10_000);
        }
        if (failure.get() != null) {
            throw new AssertionError("the hostile writer itself failed", failure.get());
        }
        System.out.println("tampering: " + calls + " checked calls of the legitimate process, " + writes.get()
                + " hostile writes, refusals " + server.vm().refusals().refusalCounts());
        assertTrue(calls >= 20, "the legitimate process got through only " + calls + " calls");
        assertTrue(writes.get() >= 10_000, "the hostile process wrote only " + writes.get() + " times");

        // The server is up and still serves the legitimate process.
        assertEquals(CuResult.SUCCESS, legit.call(Requests.cuInit(0)).result());
        Map<String, Long> refusals = server.vm().refusals().counts();
        long refused = refusals.values().stream().mapToLong(Long::longValue).sum();
        assertTrue(refused > 0, "the tampering was noticed: " + refusals);
        assertEquals(0, log.count(Level.ERROR), "no handler or worker failed: " + log.lines());
        // a few lines per kind (Limits.DEFAULT: 5 a minute), not one per refused write
        long allowed = 5L * refusals.size() + 10;
        assertTrue(log.total() <= allowed, log.total() + " lines for " + refused + " refusals of " + refusals.size()
                + " kinds (at most " + allowed + "): " + refusals);

        // The hostile process is gone (nothing of it moves). The legitimate one goes on beating the
        // VM's heartbeat, as a process waiting for a channel does; every channel the hostile one left,
        // in whatever state, is reclaimed and reset from the server's own counters.
        for (int i = 1; i < legitProcess.channelCount; i++) {
            int index = i;
            ChannelFlyweight words = new ChannelFlyweight().wrap(channelBuffer(legitProcess, index), 0);
            long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!(words.ownerVolatile() == 0 && words.reqSeqVolatile() == words.respSeqVolatile()
                    && words.ringTailVolatile() == words.ringHeadVolatile())) {
                assertTrue(System.nanoTime() < waitUntil, "channel " + index + " not reset within 10 s: owner "
                        + Long.toHexString(words.ownerVolatile()) + " req " + words.reqSeqVolatile() + " resp "
                        + words.respSeqVolatile() + " tail " + words.ringTailVolatile() + " head " + words.ringHeadVolatile());
                legitProcess.header.getAndAddLong(HeaderFlyweight.GUEST_HEARTBEAT_OFFSET, 1);
                legit.c.getAndAddLong(ChannelFlyweight.OWNER_HEARTBEAT_OFFSET, 1);
                sleep(100);
            }
            Channel fresh = legitProcess.claim(index, NEWCOMER + index);
            assertEquals(CuResult.SUCCESS, fresh.hello().result(), "channel " + index);
            checkedRoundTrip(fresh, new Random(index));
            assertEquals(CuResult.SUCCESS, fresh.call(Requests.ivc_goodbye()).result());
            fresh.release();
        }
        assertEquals(0, log.count(Level.ERROR), log.lines().toString());
    }

    /** Allocations, copies in and out, a memset and a device-to-device copy, every answer checked. */
    private static int checkedRoundTrip(Channel c, Random r) {
        int size = 1 + r.nextInt(4096);
        long a = ok(c, Requests.ivc_mem_alloc(size)).out(0);
        long b = ok(c, Requests.ivc_mem_alloc(size)).out(0);
        assertNotEquals(a, b);
        byte[] data = new byte[size];
        r.nextBytes(data);
        ok(c, Requests.ivc_memcpy_htod_inline(a, 0, data, size));
        assertArrayEquals(data, read(c, a, size), "what was written is read back");
        int at = r.nextInt(size);
        int n = 1 + r.nextInt(size - at);
        byte value = (byte) r.nextInt(256);
        ok(c, Requests.cuMemsetD8_v2(a + at, value & 0xff, n));
        java.util.Arrays.fill(data, at, at + n, value);
        ok(c, Requests.cuMemcpyDtoD_v2(b, a, size));
        assertArrayEquals(data, read(c, b, size), "memset, then copied on the device");
        ok(c, Requests.ivc_mem_free(a));
        ok(c, Requests.ivc_mem_free(b));
        return 7;
    }

    private static byte[] read(Channel c, long src, int size) {
        Response back = ok(c, Requests.ivc_memcpy_dtoh_inline(src, 0, size));
        byte[] got = new byte[size];
        back.buffer().getBytes(back.payload() + 8, got);
        return got;
    }

    private static Response ok(Channel c, Requests.Request request) {
        Response r = c.call(request);
        assertEquals(CuResult.SUCCESS, r.result(), () -> Opcodes.name(request.opcode) + " on channel " + c.index + " answered "
                + (r.result() == FakeGuest.LOST ? "nothing (channel taken back)" : CuResult.name(r.result())));
        return r;
    }

    private static UnsafeBuffer channelBuffer(FakeGuest g, int index) {
        return g.region.view(g.channelTable + (long) index * g.stride, g.stride);
    }

    /**
     * The hostile process: random writes into the header (its first 512 bytes: every field) and into
     * channels 1..n-1 (control words, then anywhere in their areas), claims with random tokens, requests
     * and ring records published with random opcodes and lengths. Never the legitimate process's
     * channel or token: a process that knows another's token can act as it (the VM is the unit of
     * trust, docs/threat-model.md).
     */
    private void tamper(Random r, AtomicBoolean running, AtomicLong writes) {
        FakeGuest g = hostileProcess;
        UnsafeBuffer header = g.header;
        int channels = g.channelCount;
        UnsafeBuffer[] c = new UnsafeBuffer[channels];
        for (int i = 1; i < channels; i++) {
            c[i] = channelBuffer(g, i);
        }
        int areas = ChannelFlyweight.AREAS_OFFSET;
        int ring = areas + g.requestSize + g.responseSize;
        long n = 0;
        while (running.get()) {
            int k = 1 + r.nextInt(channels - 1);
            UnsafeBuffer ch = c[k];
            switch (r.nextInt(10)) {
                case 0 -> header.putLongVolatile(8 * r.nextInt(512 / 8), r.nextLong());
                case 1 -> header.putIntVolatile(4 * r.nextInt(512 / 4), r.nextInt(8) - 2);
                case 2 -> ch.putLongVolatile(8 * r.nextInt(areas / 8), token(r));
                case 3 -> ch.putLongVolatile(8 * r.nextInt(areas / 8), ch.getLongVolatile(8 * r.nextInt(areas / 8)) + r.nextInt(3) - 1);
                case 4 -> ch.putIntVolatile(4 * r.nextInt(areas / 4), r.nextInt());
                case 5 -> {
                    // a request: opcode, payload_len and seq written, garbage payload, req_seq published
                    int at = areas;
                    ch.putInt(at, r.nextBoolean() ? Opcodes.IVC_HELLO + r.nextInt(64) : r.nextInt());
                    ch.putInt(at + 4, r.nextInt(g.requestSize + 64) - 32);
                    long seq = ch.getLongVolatile(ChannelFlyweight.REQ_SEQ_OFFSET) + 1;
                    ch.putLong(at + 8, r.nextInt(4) == 0 ? r.nextLong() : seq);
                    fill(ch, at + RequestFlyweight.LENGTH, r.nextInt(256), r);
                    ch.putLongVolatile(ChannelFlyweight.REQ_SEQ_OFFSET, seq);
                }
                case 6 -> {
                    // a ring record at the tail, then the tail moved (sometimes by the wrong amount)
                    long tail = ch.getLongVolatile(ChannelFlyweight.RING_TAIL_OFFSET);
                    int pos = ring + (int) (tail & (g.ringSize - 1));
                    int total = RecordFlyweight.LENGTH + 8 * r.nextInt(32);
                    if (pos + total <= ring + g.ringSize) {
                        ch.putInt(pos, r.nextInt(8) == 0 ? r.nextInt() : total);
                        ch.putInt(pos + 4, Opcodes.IVC_HELLO + r.nextInt(128));
                        fill(ch, pos + RecordFlyweight.LENGTH, total - RecordFlyweight.LENGTH, r);
                    }
                    ch.putLongVolatile(ChannelFlyweight.RING_TAIL_OFFSET, tail + (r.nextInt(8) == 0 ? r.nextInt(1 << 20) : total));
                }
                case 7 -> {
                    // a claim with a token of its own (free or not), pid and tid made up
                    ch.putLongVolatile(ChannelFlyweight.OWNER_OFFSET, token(r));
                    ch.putIntVolatile(ChannelFlyweight.OWNER_PID_OFFSET, r.nextInt());
                }
                case 8 -> fill(ch, areas + r.nextInt(g.stride - areas - 256), r.nextInt(256), r);
                default -> {
                    // a proper hello on a claimed channel now and then, so that workers do run for it
                    long token = token(r);
                    ch.putLongVolatile(ChannelFlyweight.OWNER_OFFSET, token);
                    ch.putIntVolatile(ChannelFlyweight.OWNER_PID_OFFSET, (int) (token >>> 32));
                    Requests.Request hello = Requests.ivc_hello(HeaderFlyweight.PROTOCOL_VERSION, Opcodes.API_HASH, token >>> 32,
                            k, "hostile", 256);
                    long seq = ch.getLongVolatile(ChannelFlyweight.REQ_SEQ_OFFSET) + 1;
                    ch.putInt(areas, hello.opcode);
                    ch.putInt(areas + 4, hello.length);
                    ch.putLong(areas + 8, seq);
                    ch.putBytes(areas + RequestFlyweight.LENGTH, hello.payload, 0, hello.length);
                    ch.putLongVolatile(ChannelFlyweight.REQ_SEQ_OFFSET, seq);
                }
            }
            if (++n % 256 == 0) {
                writes.set(n);
                Thread.yield();
            }
        }
        writes.set(n);
    }

    private static long token(Random r) {
        long t = r.nextLong();
        return t == LEGIT || t == 0 ? t + 2 : t;
    }

    private static void fill(UnsafeBuffer b, int at, int len, Random r) {
        for (int i = 0; i < len; i++) {
            b.putByte(at + i, (byte) r.nextInt());
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
