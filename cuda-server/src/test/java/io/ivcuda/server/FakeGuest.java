package io.ivcuda.server;

import static io.ivcuda.wire.ChannelFlyweight.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.wire.HeaderFlyweight;
import io.ivcuda.wire.RequestFlyweight;
import io.ivcuda.server.region.Region;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/** A Java stand-in for the guest library: its own mapping of the region, the protocol by hand. */
final class FakeGuest implements AutoCloseable {
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    final Region region;
    final UnsafeBuffer header;
    final int channelCount;
    final int stride;
    final int requestSize;
    final int responseSize;
    final int ringSize;
    final int windowSize;
    final long poolOffset;
    final long poolSize;
    /** Doorbell mode: rings a vector (the role of BAR0's Doorbell register); null in plain mode. */
    java.util.function.IntConsumer bell;
    int vectors = 1;

    FakeGuest(Path file, long size) throws Exception {
        region = Region.openOrCreate(file, size);
        header = region.view(0, 4096);
        assertEquals(HeaderFlyweight.STATE_READY, header.getIntVolatile(HeaderFlyweight.SERVER_STATE_OFFSET));
        channelCount = header.getInt(HeaderFlyweight.CHANNEL_COUNT_OFFSET, LE);
        stride = header.getInt(HeaderFlyweight.CHANNEL_STRIDE_OFFSET, LE);
        requestSize = header.getInt(HeaderFlyweight.REQUEST_AREA_SIZE_OFFSET, LE);
        responseSize = header.getInt(HeaderFlyweight.RESPONSE_AREA_SIZE_OFFSET, LE);
        ringSize = header.getInt(HeaderFlyweight.RING_SIZE_OFFSET, LE);
        windowSize = header.getInt(HeaderFlyweight.WINDOW_SIZE_OFFSET, LE);
        poolOffset = header.getLong(HeaderFlyweight.POOL_OFFSET_OFFSET, LE);
        poolSize = header.getLong(HeaderFlyweight.POOL_SIZE_OFFSET, LE);
    }

    Channel claim(int index, long token) {
        UnsafeBuffer c = region.view(header.getLong(HeaderFlyweight.CHANNEL_TABLE_OFFSET_OFFSET, LE) + (long) index * stride, stride);
        assertTrue(c.compareAndSetLong(OWNER_OFFSET, 0, token), "channel " + index + " is free");
        c.putInt(OWNER_PID_OFFSET, (int) (token >>> 32), LE);
        c.putInt(OWNER_TID_OFFSET, index, LE);
        return new Channel(c, token, index);
    }

    UnsafeBuffer pool() {
        return region.view(poolOffset, (int) Math.min(poolSize, Integer.MAX_VALUE));
    }

    @Override
    public void close() {
        region.close();
    }

    /** Builds a payload per docs/protocol.md §5. */
    static final class Payload {
        final ExpandableArrayBuffer b = new ExpandableArrayBuffer(256);
        int len;

        Payload scalar(long v) {
            b.putLong(len, v, LE);
            len += 8;
            return this;
        }

        Payload buf(byte[] data) {
            return rawBuf(data.length, data);
        }

        Payload rawBuf(long declaredLength, byte[] data) {
            scalar(declaredLength);
            int padded = (data.length + 7) & ~7;
            b.setMemory(len, padded, (byte) 0);
            b.putBytes(len, data);
            len += padded;
            return this;
        }

        Payload str(String s) {
            byte[] z = (s + "\0").getBytes(StandardCharsets.US_ASCII);
            return buf(z);
        }
    }

    /** The response of one call. */
    record Response(int result, int payloadLen, UnsafeBuffer buffer, int payload) {
        long out(int slot) {
            return buffer.getLong(payload + 8 * slot, LE);
        }
    }

    final class Channel {
        final UnsafeBuffer c;
        final long token;
        final int req = AREAS_OFFSET;
        final int resp;
        final int ring;
        final int window;
        final int index;

        Channel(UnsafeBuffer c, long token, int index) {
            this.c = c;
            this.token = token;
            this.index = index;
            resp = req + requestSize;
            ring = resp + responseSize;
            window = ring + ringSize;
        }

        Response call(int opcode, Payload p) {
            return callRaw(opcode, p.len, p.b, p.len);
        }

        Response callRaw(int opcode, int declaredLen, ExpandableArrayBuffer data, int dataLen) {
            long seq = c.getLongVolatile(REQ_SEQ_OFFSET) + 1;
            c.putInt(req + RequestFlyweight.OPCODE_OFFSET, opcode, LE);
            c.putInt(req + RequestFlyweight.PAYLOAD_LEN_OFFSET, declaredLen, LE);
            c.putLong(req + RequestFlyweight.SEQ_OFFSET, seq, LE);
            c.putBytes(req + RequestFlyweight.LENGTH, data, 0, dataLen);
            c.putLongRelease(REQ_SEQ_OFFSET, seq);
            ringIfParked();
            return awaitResponse(seq);
        }

        Response awaitResponse(long seq) {
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (c.getLongAcquire(RESP_SEQ_OFFSET) != seq) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("no response to seq " + seq);
                }
                Thread.onSpinWait();
            }
            assertEquals(seq, c.getLong(resp + RequestFlyweight.SEQ_OFFSET, LE));
            return new Response(c.getInt(resp, LE), c.getInt(resp + RequestFlyweight.PAYLOAD_LEN_OFFSET, LE), c, resp + RequestFlyweight.LENGTH);
        }

        Response hello(long apiHash) {
            return call(Opcodes.IVC_HELLO, new Payload().scalar(1).scalar(apiHash).scalar(token >>> 32).scalar(7)
                    .str("fake-guest 1").scalar(256));
        }

        Response hello() {
            return hello(Opcodes.API_HASH);
        }

        /** Appends one ring record (PAD first when it would not fit before the end). */
        void post(int opcode, Payload p) {
            int total = 16 + p.len;
            long tail = c.getLong(RING_TAIL_OFFSET, LE);
            int pos = (int) (tail & (ringSize - 1));
            if (ringSize - pos < total) {
                awaitRoom(tail, ringSize - pos);
                c.putInt(ring + pos, ringSize - pos, LE);
                c.putInt(ring + pos + 4, Opcodes.PAD, LE);
                tail += ringSize - pos;
                c.putLongRelease(RING_TAIL_OFFSET, tail);
                pos = 0;
            }
            awaitRoom(tail, total);
            c.putInt(ring + pos, total, LE);
            c.putInt(ring + pos + 4, opcode, LE);
            c.putLong(ring + pos + 8, 0, LE);
            c.putBytes(ring + pos + 16, p.b, 0, p.len);
            c.putLongRelease(RING_TAIL_OFFSET, tail + total);
            ringIfParked();
        }

        private void awaitRoom(long tail, int len) {
            while (tail + len - c.getLongAcquire(RING_HEAD_OFFSET) > ringSize) {
                Thread.onSpinWait();
            }
        }

        /** A streamed host→device copy (§6): fill slot c mod 2 while the server drains the other. */
        Response htodStream(long dst, byte[] data) {
            long seq = publish(Opcodes.IVC_MEMCPY_HTOD_STREAM, new Payload().scalar(dst).scalar(0).scalar(data.length));
            int half = windowSize / 2;
            long chunk = c.getLongAcquire(SERVER_CHUNK_OFFSET);
            for (int done = 0; done < data.length; done += half, chunk++) {
                while (c.getLongAcquire(SERVER_CHUNK_OFFSET) < chunk - 1) {
                    Thread.onSpinWait();
                }
                int n = Math.min(half, data.length - done);
                c.putBytes(window + (int) (chunk & 1) * half, data, done, n);
                c.putLongRelease(GUEST_CHUNK_OFFSET, chunk + 1);
                ringIfParked();
            }
            return awaitResponse(seq);
        }

        /** Any request whose data follows through the window (e.g. ivc_module_load with sendImage 1). */
        Response streamRequest(int opcode, Payload p, byte[] data) {
            long seq = publish(opcode, p);
            int half = windowSize / 2;
            long chunk = c.getLongAcquire(SERVER_CHUNK_OFFSET);
            for (int done = 0; done < data.length; done += half, chunk++) {
                while (c.getLongAcquire(SERVER_CHUNK_OFFSET) < chunk - 1) {
                    Thread.onSpinWait();
                }
                int n = Math.min(half, data.length - done);
                c.putBytes(window + (int) (chunk & 1) * half, data, done, n);
                c.putLongRelease(GUEST_CHUNK_OFFSET, chunk + 1);
                ringIfParked();
            }
            return awaitResponse(seq);
        }

        /** A streamed device→host copy: the server fills, the guest drains. */
        Response dtohStream(long src, byte[] into) {
            long seq = publish(Opcodes.IVC_MEMCPY_DTOH_STREAM, new Payload().scalar(src).scalar(0).scalar(into.length));
            int half = windowSize / 2;
            long chunk = c.getLongAcquire(GUEST_CHUNK_OFFSET);
            for (int done = 0; done < into.length; done += half, chunk++) {
                while (c.getLongAcquire(SERVER_CHUNK_OFFSET) < chunk + 1) {
                    Thread.onSpinWait();
                }
                int n = Math.min(half, into.length - done);
                c.getBytes(window + (int) (chunk & 1) * half, into, done, n);
                c.putLongRelease(GUEST_CHUNK_OFFSET, chunk + 1);
                ringIfParked();
            }
            return awaitResponse(seq);
        }

        private long publish(int opcode, Payload p) {
            long seq = c.getLongVolatile(REQ_SEQ_OFFSET) + 1;
            c.putInt(req, opcode, LE);
            c.putInt(req + RequestFlyweight.PAYLOAD_LEN_OFFSET, p.len, LE);
            c.putLong(req + RequestFlyweight.SEQ_OFFSET, seq, LE);
            c.putBytes(req + RequestFlyweight.LENGTH, p.b, 0, p.len);
            c.putLongRelease(REQ_SEQ_OFFSET, seq);
            ringIfParked();
            return seq;
        }

        /** What the guest library does after publishing (protocol §8): store, full fence, load server_parked. */
        void ringIfParked() {
            if (bell != null) {
                java.lang.invoke.VarHandle.fullFence();
                if (c.getIntVolatile(SERVER_PARKED_OFFSET) == 1) {
                    bell.accept(index % vectors);
                }
            }
        }

        void release() {
            c.putLongRelease(OWNER_OFFSET, 0);
        }
    }
}
