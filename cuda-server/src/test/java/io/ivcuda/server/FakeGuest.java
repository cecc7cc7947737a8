package io.ivcuda.server;

import static io.ivcuda.server.region.ChannelLayout.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.region.HeaderLayout;
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
        assertEquals(HeaderLayout.STATE_READY, header.getIntVolatile(HeaderLayout.SERVER_STATE));
        channelCount = header.getInt(HeaderLayout.CHANNEL_COUNT, LE);
        stride = header.getInt(HeaderLayout.CHANNEL_STRIDE, LE);
        requestSize = header.getInt(HeaderLayout.REQUEST_AREA_SIZE, LE);
        responseSize = header.getInt(HeaderLayout.RESPONSE_AREA_SIZE, LE);
        ringSize = header.getInt(HeaderLayout.RING_SIZE, LE);
        windowSize = header.getInt(HeaderLayout.WINDOW_SIZE, LE);
        poolOffset = header.getLong(HeaderLayout.POOL_OFFSET, LE);
        poolSize = header.getLong(HeaderLayout.POOL_SIZE, LE);
    }

    Channel claim(int index, long token) {
        UnsafeBuffer c = region.view(header.getLong(HeaderLayout.CHANNEL_TABLE_OFFSET, LE) + (long) index * stride, stride);
        assertTrue(c.compareAndSetLong(OWNER, 0, token), "channel " + index + " is free");
        c.putInt(OWNER_PID, (int) (token >>> 32), LE);
        c.putInt(OWNER_TID, index, LE);
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
        final int req = REQUEST_AREA;
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
            long seq = c.getLongVolatile(REQ_SEQ) + 1;
            c.putInt(req + MSG_OPCODE_OR_RESULT, opcode, LE);
            c.putInt(req + MSG_PAYLOAD_LEN, declaredLen, LE);
            c.putLong(req + MSG_SEQ, seq, LE);
            c.putBytes(req + MESSAGE_HEADER, data, 0, dataLen);
            c.putLongRelease(REQ_SEQ, seq);
            ringIfParked();
            return awaitResponse(seq);
        }

        Response awaitResponse(long seq) {
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (c.getLongAcquire(RESP_SEQ) != seq) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("no response to seq " + seq);
                }
                Thread.onSpinWait();
            }
            assertEquals(seq, c.getLong(resp + MSG_SEQ, LE));
            return new Response(c.getInt(resp, LE), c.getInt(resp + MSG_PAYLOAD_LEN, LE), c, resp + MESSAGE_HEADER);
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
            long tail = c.getLong(RING_TAIL, LE);
            int pos = (int) (tail & (ringSize - 1));
            if (ringSize - pos < total) {
                awaitRoom(tail, ringSize - pos);
                c.putInt(ring + pos, ringSize - pos, LE);
                c.putInt(ring + pos + 4, Opcodes.PAD, LE);
                tail += ringSize - pos;
                c.putLongRelease(RING_TAIL, tail);
                pos = 0;
            }
            awaitRoom(tail, total);
            c.putInt(ring + pos, total, LE);
            c.putInt(ring + pos + 4, opcode, LE);
            c.putLong(ring + pos + 8, 0, LE);
            c.putBytes(ring + pos + 16, p.b, 0, p.len);
            c.putLongRelease(RING_TAIL, tail + total);
            ringIfParked();
        }

        private void awaitRoom(long tail, int len) {
            while (tail + len - c.getLongAcquire(RING_HEAD) > ringSize) {
                Thread.onSpinWait();
            }
        }

        /** A streamed host→device copy (§6): fill slot c mod 2 while the server drains the other. */
        Response htodStream(long dst, byte[] data) {
            long seq = publish(Opcodes.IVC_MEMCPY_HTOD_STREAM, new Payload().scalar(dst).scalar(0).scalar(data.length));
            int half = windowSize / 2;
            long chunk = c.getLongAcquire(SERVER_CHUNK);
            for (int done = 0; done < data.length; done += half, chunk++) {
                while (c.getLongAcquire(SERVER_CHUNK) < chunk - 1) {
                    Thread.onSpinWait();
                }
                int n = Math.min(half, data.length - done);
                c.putBytes(window + (int) (chunk & 1) * half, data, done, n);
                c.putLongRelease(GUEST_CHUNK, chunk + 1);
                ringIfParked();
            }
            return awaitResponse(seq);
        }

        /** Any request whose data follows through the window (e.g. ivc_module_load with sendImage 1). */
        Response streamRequest(int opcode, Payload p, byte[] data) {
            long seq = publish(opcode, p);
            int half = windowSize / 2;
            long chunk = c.getLongAcquire(SERVER_CHUNK);
            for (int done = 0; done < data.length; done += half, chunk++) {
                while (c.getLongAcquire(SERVER_CHUNK) < chunk - 1) {
                    Thread.onSpinWait();
                }
                int n = Math.min(half, data.length - done);
                c.putBytes(window + (int) (chunk & 1) * half, data, done, n);
                c.putLongRelease(GUEST_CHUNK, chunk + 1);
                ringIfParked();
            }
            return awaitResponse(seq);
        }

        /** A streamed device→host copy: the server fills, the guest drains. */
        Response dtohStream(long src, byte[] into) {
            long seq = publish(Opcodes.IVC_MEMCPY_DTOH_STREAM, new Payload().scalar(src).scalar(0).scalar(into.length));
            int half = windowSize / 2;
            long chunk = c.getLongAcquire(GUEST_CHUNK);
            for (int done = 0; done < into.length; done += half, chunk++) {
                while (c.getLongAcquire(SERVER_CHUNK) < chunk + 1) {
                    Thread.onSpinWait();
                }
                int n = Math.min(half, into.length - done);
                c.getBytes(window + (int) (chunk & 1) * half, into, done, n);
                c.putLongRelease(GUEST_CHUNK, chunk + 1);
                ringIfParked();
            }
            return awaitResponse(seq);
        }

        private long publish(int opcode, Payload p) {
            long seq = c.getLongVolatile(REQ_SEQ) + 1;
            c.putInt(req, opcode, LE);
            c.putInt(req + MSG_PAYLOAD_LEN, p.len, LE);
            c.putLong(req + MSG_SEQ, seq, LE);
            c.putBytes(req + MESSAGE_HEADER, p.b, 0, p.len);
            c.putLongRelease(REQ_SEQ, seq);
            ringIfParked();
            return seq;
        }

        /** What the guest library does after publishing (protocol §8): store, full fence, load server_parked. */
        void ringIfParked() {
            if (bell != null) {
                java.lang.invoke.VarHandle.fullFence();
                if (c.getIntVolatile(SERVER_PARKED) == 1) {
                    bell.accept(index % vectors);
                }
            }
        }

        void release() {
            c.putLongRelease(OWNER, 0);
        }
    }
}
