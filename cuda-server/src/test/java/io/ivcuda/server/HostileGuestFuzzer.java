package io.ivcuda.server;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.gen.Requests;
import io.ivcuda.server.gen.Requests.Request;
import io.ivcuda.wire.ChannelFlyweight;
import io.ivcuda.wire.RecordFlyweight;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import org.apache.logging.log4j.Level;

/**
 * The fuzz target of {@link HostileGuestFuzzTest}: one real server (host-memory backend) over a
 * temporary region, driven as a hostile guest process would. Each input is a short program:
 * requests of every wire function, encoded validly by the generated {@link Requests} from fuzzed
 * arguments (handles and pointers the server answered earlier among them) and then mutated
 * (bytes flipped, lengths lied about), sent as sync requests or as ring records; goodbyes, exits
 * and poisoned rings included. A failure is: no answer within 5 s, an answer of another sequence
 * number, a payload larger than the response area, any line the server logs at ERROR (a handler
 * or worker failing: a bug), or more refusal lines than the rate limit allows (a log flood).
 */
final class HostileGuestFuzzer {
    static final long SIZE = 16L << 20;
    /** Functions whose bytes follow through the window: covered by the tampering test, not here. */
    private static final Set<Integer> STREAMED = Set.of(Opcodes.IVC_MEMCPY_HTOD_STREAM, Opcodes.IVC_MEMCPY_DTOH_STREAM,
            Opcodes.IVC_MODULE_LOAD, Opcodes.IVC_LIBRARY_LOAD, Opcodes.IVC_LINK_ADD_DATA, Opcodes.IVC_LINK_READ);
    /**
     * Functions that wait for the guest's host-function thread by design, up to the host-function
     * timeout (10 s, longer than the 5 s this fuzzer allows a call): covered by
     * StreamsAndHostFunctionsTest, not here, until that timeout is a configuration key the fuzzer
     * can shorten.
     */
    private static final Set<Integer> WAITS_FOR_GUEST = Set.of(Opcodes.IVC_HOST_ENQUEUE, Opcodes.IVC_HOST_NEXT);
    private static final List<Method> ENCODERS = new ArrayList<>();

    static {
        for (Method m : Requests.class.getMethods()) {
            if (Modifier.isStatic(m.getModifiers()) && m.getReturnType() == Request.class && !m.getName().equals("raw")) {
                ENCODERS.add(m);
            }
        }
        ENCODERS.sort(Comparator.comparing(Method::getName));
    }

    final Path dir;
    final CudaServer server;
    final FakeGuest guest;
    final LogCapture log = new LogCapture();
    private final long started = System.nanoTime();
    private Channel channel;
    private int next;
    private long token = (77L << 32) | 1;
    /** Values the server answered (ids, pointers, pool offsets): the fuzzer's arguments may name them. */
    private final long[] answered = new long[64];
    private int answers;
    long inputs;

    HostileGuestFuzzer() throws Exception {
        dir = Files.createTempDirectory("ivcuda-fuzz");
        Path region = dir.resolve("region");
        server = new CudaServer(ServerConfig.load(List.of(), List.of("region.path=" + region, "region.size=" + SIZE,
                "channel.count=4", "backend=host-memory", "wait.park.max.us=50", "limit.handles.process=4096",
                "owner.timeout.ms=200",
                "memory.quota=268435456")));
        server.start();
        guest = new FakeGuest(region, SIZE);
        warmUp();
    }

    /**
     * One greeted session before the first input: under Jazzer a worker's first call loads and
     * instruments every handler class, which on a loaded machine takes longer than the inputs'
     * timeouts (the inputs then report a slow server that is only a cold one).
     */
    private void warmUp() {
        Channel c = guest.claim(0, token - 1);
        Request hello = Requests.ivc_hello(io.ivcuda.wire.HeaderFlyweight.PROTOCOL_VERSION, Opcodes.API_HASH,
                (token - 1) >>> 32, 7, "fuzz warm-up", 256);
        Response r = c.callRaw(hello.opcode, hello.length, hello.payload, hello.length, 300_000_000_000L);
        if (r.result() != CuResult.SUCCESS) {
            throw new IllegalStateException("warm-up hello: " + r.result());
        }
        Request goodbye = Requests.ivc_goodbye();
        c.callRaw(goodbye.opcode, goodbye.length, goodbye.payload, goodbye.length, 300_000_000_000L);
        c.release();
    }

    void close() throws Exception {
        log.close();
        guest.close();
        server.close();
        try (var files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** A greeted channel of the current token, claimed anew when the last one was given up. */
    private Channel channel() {
        if (channel != null && channel.control.ownerVolatile() == channel.token) {
            return channel;
        }
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (true) {
            int i = next++ % guest.channelCount;
            var c = guest.region.view(guest.layout.channelTableOffset() + (long) i * guest.stride, guest.stride);
            ChannelFlyweight f = new ChannelFlyweight().wrap(c, 0);
            if (f.ownerVolatile() == 0 && f.attachedVolatile() == 0 && f.reqSeqVolatile() == f.respSeqVolatile()
                    && f.ringTailVolatile() == f.ringHeadVolatile() && f.guestChunkVolatile() == f.serverChunkVolatile()) {
                channel = guest.tryClaim(i, token);
                if (channel == null) {
                    continue; // taken between the look and the compare-and-set, as a guest library may find it
                }
                // the watcher attaches a worker on its next look: now, as a doorbell-mode hello's ring
                // makes it, not after its plain-mode poll period (most inputs claim a channel)
                server.wakeWatcher();
                Response r = channel.hello();
                if (r.result() == CuResult.SUCCESS) {
                    return channel;
                }
                token++; // the server is reclaiming this process: be another one
            }
            if (System.nanoTime() > deadline) {
                StringBuilder b = new StringBuilder();
                for (int k = 0; k < guest.channelCount; k++) {
                    var v = guest.region.view(guest.layout.channelTableOffset() + (long) k * guest.stride, guest.stride);
                    ChannelFlyweight g = new ChannelFlyweight().wrap(v, 0);
                    b.append(" [").append(k).append(" owner ").append(Long.toHexString(g.ownerVolatile())).append(" att ")
                            .append(g.attachedVolatile()).append(" seq ").append(g.reqSeqVolatile()).append('/')
                            .append(g.respSeqVolatile()).append(" ring ").append(g.ringTailVolatile()).append('/')
                            .append(g.ringHeadVolatile()).append(" chunk ").append(g.guestChunkVolatile()).append('/')
                            .append(g.serverChunkVolatile()).append(']');
                }
                throw new AssertionError("no channel came back free and at rest within 5 s:" + b);
            }
            if (i == guest.channelCount - 1) {
                server.wakeWatcher(); // none free at rest this round: let the watcher reset a finished one
                Thread.yield();
            }
        }
    }

    private long argument(FuzzedDataProvider data) {
        switch (data.consumeInt(0, 3)) {
            case 0:
                return answers == 0 ? 0 : answered[data.consumeInt(0, Math.min(answers, answered.length) - 1)];
            case 1:
                return data.consumeInt(-2, 64);
            case 2:
                return data.consumeLong();
            default:
                return answers == 0 ? 0 : answered[data.consumeInt(0, Math.min(answers, answered.length) - 1)]
                        + data.consumeInt(-16, 4096);
        }
    }

    private Request encode(FuzzedDataProvider data) throws Exception {
        Method m = ENCODERS.get(data.consumeInt(0, ENCODERS.size() - 1));
        Class<?>[] types = m.getParameterTypes();
        Object[] args = new Object[types.length];
        for (int i = 0; i < types.length; i++) {
            if (types[i] == long.class) {
                args[i] = argument(data);
            } else if (types[i] == String.class) {
                args[i] = data.consumeAsciiString(data.consumeInt(0, 80));
            } else if (types[i] == byte[].class) {
                args[i] = data.consumeBytes(data.consumeInt(0, 512));
            } else if (types[i] == float.class) {
                args[i] = data.consumeFloat();
            } else {
                args[i] = data.consumeInt();
            }
        }
        Request r = (Request) m.invoke(null, args);
        // mutate the valid encoding: flip bytes, append or cut
        int flips = data.consumeInt(0, 3);
        for (int i = 0; i < flips && r.length > 0; i++) {
            int at = data.consumeInt(0, r.length - 1);
            r.payload.putByte(at, data.consumeByte());
        }
        if (data.consumeInt(0, 7) == 0) {
            r.length = Math.max(0, Math.min(r.length + data.consumeInt(-16, 16), 2048));
        }
        return r;
    }

    /** Runs one input; throws AssertionError on a failure of the server. */
    void run(FuzzedDataProvider data) throws Exception {
        inputs++;
        int steps = data.consumeInt(1, 8);
        // the guest library's heartbeat: the VM's, and this process's channel (dead tokens are reclaimed)
        guest.header.addLongRelease(io.ivcuda.wire.HeaderFlyweight.GUEST_HEARTBEAT_OFFSET, 1);
        for (int s = 0; s < steps && data.remainingBytes() > 0; s++) {
            Channel c = channel();
            c.control.ownerHeartbeatVolatile(inputs);
            Request r = encode(data);
            if (STREAMED.contains(r.opcode) || WAITS_FOR_GUEST.contains(r.opcode)) {
                continue;
            }
            boolean ring = Opcodes.mode(r.opcode) == Opcodes.MODE_ASYNC ? data.consumeInt(0, 5) > 0 : data.consumeInt(0, 9) == 0;
            if (ring) {
                post(c, r, data.consumeInt(0, 15) == 0);
                r = Requests.cuCtxGetCurrent(); // a sync call runs the ring first (§4)
            }
            int room = guest.requestSize - 16;
            // the bytes the encoder has (a fuzzed length may claim more than it wrote) that fit the area
            int bytes = Math.min(Math.min(r.length, room), r.payload.capacity());
            Response answer = c.callRaw(r.opcode, r.length, r.payload, bytes, 5_000_000_000L);
            if (System.getenv("FUZZ_DEBUG") != null) {
                System.err.println("step " + Opcodes.name(r.opcode) + (ring ? " (ring)" : "") + " on " + c.index + " -> " + answer.result());
            }
            if (answer.payloadLen() < 0 || answer.payloadLen() > guest.responseSize - 16) {
                throw new AssertionError("payload_len " + answer.payloadLen() + " for " + Opcodes.name(r.opcode));
            }
            if (answer.result() == CuResult.SUCCESS && answer.payloadLen() >= 8) {
                answered[answers++ % answered.length] = answer.out(0);
            }
            if (answer.result() == FakeGuest.LOST) {
                continue; // released by the server meanwhile (a refused first request): a new channel next
            }
            if (answer.result() == CuResult.ILLEGAL_STATE || r.opcode == Opcodes.IVC_PROCESS_EXIT) {
                c.release(); // a poisoned ring or an exited process: a new channel (and maybe process) next
                token++;
            }
        }
        if (log.count(Level.ERROR) > 0) {
            throw new AssertionError("the server logged an error: " + log.lines());
        }
        long windows = (System.nanoTime() - started) / 60_000_000_000L + 1;
        long allowed = windows * 6L * Math.max(1, server.vm().refusals().counts().size()) + 200;
        if (log.total() > allowed) {
            throw new AssertionError("log flood: " + log.total() + " lines, " + allowed + " allowed: " + log.lines());
        }
    }

    /** Appends one ring record unless the ring has no room (a poisoned ring is never drained). */
    private void post(Channel c, Request r, boolean badLength) {
        int total = RecordFlyweight.LENGTH + ((r.length + 7) & ~7);
        long tail = c.control.ringTail();
        int pos = (int) (tail & (guest.ringSize - 1));
        if (guest.ringSize - pos < total || tail + total - c.control.ringHeadAcquire() > guest.ringSize) {
            return;
        }
        c.record.wrap(c.c, c.ring + pos).totalLen(badLength ? total + 4 : total).opcode(r.opcode).reserved(0);
        c.c.putBytes(c.ring + pos + RecordFlyweight.LENGTH, r.payload, 0, r.length);
        c.control.ringTailRelease(tail + total);
    }
}
