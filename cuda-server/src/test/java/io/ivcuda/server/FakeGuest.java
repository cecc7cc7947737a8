package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.gen.Requests;
import io.ivcuda.server.gen.Requests.Request;
import io.ivcuda.server.region.Region;
import io.ivcuda.wire.ChannelFlyweight;
import io.ivcuda.wire.HeaderFlyweight;
import io.ivcuda.wire.RecordFlyweight;
import io.ivcuda.wire.RequestFlyweight;
import io.ivcuda.wire.ResponseFlyweight;
import java.nio.ByteOrder;
import java.nio.file.Path;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A Java stand-in for the guest library: its own mapping of the region, read and written through
 * the generated flyweights, with requests encoded by the generated {@link Requests}; what it does
 * by hand is only the protocol's choreography (docs/protocol.md §3–6, §8). Public, with what
 * backend-agent's tests use of it (through cuda-server's test jar): a front-end speaking to the
 * servers the agent starts.
 */
public final class FakeGuest implements AutoCloseable {
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    /** The result of a call whose channel the server took back before answering it. */
    static final int LOST = -1;

    final Region region;
    final UnsafeBuffer header;
    final HeaderFlyweight layout = new HeaderFlyweight();
    final int channelCount;
    final int stride;
    /** Read once at attach, as the guest library does: a hostile process may rewrite the header's word later. */
    final long channelTable;
    final int requestSize;
    final int responseSize;
    final int ringSize;
    final int windowSize;
    final long poolOffset;
    final long poolSize;
    /** Doorbell mode: rings a vector (the role of BAR0's Doorbell register); null in plain mode. */
    java.util.function.IntConsumer bell;
    int vectors = 1;

    public FakeGuest(Path file, long size) throws Exception {
        region = Region.openOrCreate(file, size);
        header = region.view(0, HeaderFlyweight.LENGTH);
        layout.wrap(header, 0);
        assertEquals(HeaderFlyweight.STATE_READY, layout.serverStateVolatile());
        channelCount = layout.channelCount();
        stride = layout.channelStride();
        channelTable = layout.channelTableOffset();
        requestSize = layout.requestAreaSize();
        responseSize = layout.responseAreaSize();
        ringSize = layout.ringSize();
        windowSize = layout.windowSize();
        poolOffset = layout.poolOffset();
        poolSize = layout.poolSize();
    }

    /** The channel claimed as a guest library claims it, or null when its owner word was not 0. */
    Channel tryClaim(int index, long token) {
        UnsafeBuffer c = region.view(channelTable + (long) index * stride, stride);
        ChannelFlyweight control = new ChannelFlyweight().wrap(c, 0);
        if (!control.compareAndSetOwner(0, token)) {
            return null;
        }
        control.ownerPid((int) (token >>> 32)).ownerTid(index);
        return new Channel(c, control, token, index);
    }

    public Channel claim(int index, long token) {
        UnsafeBuffer c = region.view(channelTable + (long) index * stride, stride);
        ChannelFlyweight control = new ChannelFlyweight().wrap(c, 0);
        assertTrue(control.compareAndSetOwner(0, token), "channel " + index + " is free");
        control.ownerPid((int) (token >>> 32)).ownerTid(index);
        return new Channel(c, control, token, index);
    }

    UnsafeBuffer pool() {
        return region.view(poolOffset, (int) Math.min(poolSize, Integer.MAX_VALUE));
    }

    @Override
    public void close() {
        region.close();
    }

    /** The response of one call. */
    public record Response(int result, int payloadLen, UnsafeBuffer buffer, int payload) {
        public long out(int slot) {
            return buffer.getLong(payload + 8 * slot, LE);
        }
    }

    public final class Channel {
        final UnsafeBuffer c;
        final ChannelFlyweight control;
        final RequestFlyweight request = new RequestFlyweight();
        final ResponseFlyweight response = new ResponseFlyweight();
        final RecordFlyweight record = new RecordFlyweight();
        final long token;
        final int ring;
        final int window;
        final int index;

        Channel(UnsafeBuffer c, ChannelFlyweight control, long token, int index) {
            this.c = c;
            this.control = control;
            this.token = token;
            this.index = index;
            request.wrap(c, ChannelFlyweight.AREAS_OFFSET);
            response.wrap(c, ChannelFlyweight.AREAS_OFFSET + requestSize);
            ring = response.offset() + responseSize;
            window = ring + ringSize;
        }

        public Response call(Request r) {
            return callRaw(r.opcode, r.length, r.payload, r.length);
        }

        /** A request whose payload_len says {@code declaredLen} whatever the data (malformed on purpose). */
        Response callRaw(int opcode, int declaredLen, DirectBuffer data, int dataLen) {
            return awaitResponse(publish(opcode, declaredLen, data, dataLen));
        }

        /** Like {@link #callRaw(int, int, DirectBuffer, int)}, failing when no answer comes within {@code timeoutNs}. */
        Response callRaw(int opcode, int declaredLen, DirectBuffer data, int dataLen, long timeoutNs) {
            return awaitResponse(publish(opcode, declaredLen, data, dataLen), timeoutNs);
        }

        Response awaitResponse(long seq) {
            return awaitResponse(seq, 20_000_000_000L);
        }

        Response awaitResponse(long seq, long timeoutNs) {
            long deadline = System.nanoTime() + timeoutNs;
            for (int spins = 0; control.respSeqAcquire() != seq; spins++) {
                if (control.ownerVolatile() != token && control.respSeqAcquire() != seq) {
                    // as the guest library does: the server took the channel back (§7), no answer comes
                    return new Response(LOST, 0, c, response.offset() + ResponseFlyweight.LENGTH);
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("no response to seq " + seq);
                }
                // spin briefly for a quick answer, then give the CPU away: on a machine with fewer
                // free cores than busy threads the server's worker may be waiting for this one
                if (spins < 1000) {
                    Thread.onSpinWait();
                } else {
                    Thread.yield();
                }
            }
            assertEquals(seq, response.seq());
            return new Response(response.result(), response.payloadLen(), c, response.offset() + ResponseFlyweight.LENGTH);
        }

        /**
         * A server's first hello builds every handler of the channel: loading (and under the fuzzer,
         * instrumenting) those classes took over 20 s on a loaded build machine, so it may take 60.
         */
        Response hello(long apiHash) {
            Request r = Requests.ivc_hello(HeaderFlyweight.PROTOCOL_VERSION, apiHash, token >>> 32, 7, "fake-guest 1", 256);
            return callRaw(r.opcode, r.length, r.payload, r.length, 60_000_000_000L);
        }

        public Response hello() {
            return hello(Opcodes.API_HASH);
        }

        /** {@code n} bytes of device memory at {@code device}, read inline as the guest library's cuMemcpyDtoH reads small copies; fails unless answered SUCCESS. */
        public byte[] readDevice(long device, int n) {
            Response r = call(Requests.ivc_memcpy_dtoh_inline(device, 0, n));
            assertEquals(CuResult.SUCCESS, r.result(), "reading " + n + " bytes at 0x" + Long.toHexString(device));
            byte[] got = new byte[n];
            r.buffer().getBytes(r.payload() + 8, got);
            return got;
        }

        /** Appends one ring record (PAD first when it would not fit before the end). */
        void post(Request r) {
            int total = RecordFlyweight.LENGTH + r.length;
            long tail = control.ringTail();
            int pos = (int) (tail & (ringSize - 1));
            if (ringSize - pos < total) {
                awaitRoom(tail, ringSize - pos);
                record.wrap(c, ring + pos).totalLen(ringSize - pos).opcode(Opcodes.PAD);
                tail += ringSize - pos;
                control.ringTailRelease(tail);
                pos = 0;
            }
            awaitRoom(tail, total);
            record.wrap(c, ring + pos).totalLen(total).opcode(r.opcode).reserved(0);
            c.putBytes(ring + pos + RecordFlyweight.LENGTH, r.payload, 0, r.length);
            control.ringTailRelease(tail + total);
            ringIfParked();
        }

        private void awaitRoom(long tail, int len) {
            while (tail + len - control.ringHeadAcquire() > ringSize) {
                Thread.onSpinWait();
            }
        }

        /** A streamed host→device copy (§6): fill slot c mod 2 while the server drains the other. */
        Response htodStream(long dst, byte[] data) {
            return streamRequest(Requests.ivc_memcpy_htod_stream(dst, 0, data.length), data);
        }

        /** Any request whose data follows through the window (e.g. ivc_module_load with sendImage 1). */
        Response streamRequest(Request r, byte[] data) {
            long seq = publish(r.opcode, r.length, r.payload, r.length);
            int half = windowSize / 2;
            long chunk = control.serverChunkAcquire();
            for (int done = 0; done < data.length; done += half, chunk++) {
                while (control.serverChunkAcquire() < chunk - 1) {
                    Thread.onSpinWait();
                }
                int n = Math.min(half, data.length - done);
                c.putBytes(window + (int) (chunk & 1) * half, data, done, n);
                control.guestChunkRelease(chunk + 1);
                ringIfParked();
            }
            return awaitResponse(seq);
        }

        /** A streamed device→host copy: the server fills, the guest drains. */
        Response dtohStream(long src, byte[] into) {
            return dtohStreamRequest(Requests.ivc_memcpy_dtoh_stream(src, 0, into.length), into);
        }

        /** Any request whose answer's bytes follow through the window (e.g. ivc_link_read). */
        Response dtohStreamRequest(Request r, byte[] into) {
            long seq = publish(r.opcode, r.length, r.payload, r.length);
            int half = windowSize / 2;
            long chunk = control.guestChunkAcquire();
            for (int done = 0; done < into.length; done += half, chunk++) {
                while (control.serverChunkAcquire() < chunk + 1) {
                    Thread.onSpinWait();
                }
                int n = Math.min(half, into.length - done);
                c.getBytes(window + (int) (chunk & 1) * half, into, done, n);
                control.guestChunkRelease(chunk + 1);
                ringIfParked();
            }
            return awaitResponse(seq);
        }

        /** Writes a request with seq = req_seq + 1 and publishes it (§4); returns the seq. */
        private long publish(int opcode, int declaredLen, DirectBuffer data, int dataLen) {
            long seq = control.reqSeqVolatile() + 1;
            request.opcode(opcode).payloadLen(declaredLen).seq(seq);
            c.putBytes(request.offset() + RequestFlyweight.LENGTH, data, 0, dataLen);
            control.reqSeqRelease(seq);
            ringIfParked();
            return seq;
        }

        /** What the guest library does after publishing (protocol §8): store, full fence, load server_parked. */
        void ringIfParked() {
            if (bell != null) {
                java.lang.invoke.VarHandle.fullFence();
                if (control.serverParkedVolatile() == 1) {
                    bell.accept(index % vectors);
                }
            }
        }

        void release() {
            control.ownerRelease(0);
        }
    }
}
