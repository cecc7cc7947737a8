package io.ivcuda.server.handler;

import io.ivcuda.server.channel.ChunkStream;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.CopyCalls;
import io.ivcuda.server.gen.Reply;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * Copies (docs/protocol.md §6): inline in the request or response, streamed through the window, or
 * straight between the pool (region memory, registered with the driver when possible) and the
 * device. The dispatcher has checked streams and every device and pool range; a refused streamed
 * copy never gets here (the dispatcher moves its chunks).
 */
final class CopyHandler implements CopyCalls {
    private final Session session;

    CopyHandler(Session session) {
        this.session = session;
    }

    /** A copy on a stream, then waiting for it: the bytes must be in place before we answer or move on. */
    private int copyOnStream(long device, long host, long n, long stream, boolean toDevice) {
        // pageable bytes are staged here and waited for: a capture could keep neither (docs/graphs.md)
        if (session.cuda.streamIsCapturing(session.out, stream) == CuResult.SUCCESS && session.out.value != 0) {
            return session.refuse("stream", "is capturing: a copy of pageable memory cannot be captured (pinned memory can)",
                    GraphHandles.CAPTURE_UNSUPPORTED);
        }
        int result = toDevice ? session.cuda.memcpyHtoD(device, host, n, stream, true)
                : session.cuda.memcpyDtoH(host, device, n, stream, true);
        return result == CuResult.SUCCESS ? session.cuda.streamSynchronize(stream) : result;
    }

    /** {@code result}, after counting {@code size} bytes copied when it is a success (status and metrics). */
    private int counted(int result, boolean toDevice, long size) {
        if (result == CuResult.SUCCESS) {
            session.copied(toDevice, size);
        }
        return result;
    }

    private int htod(long dst, long host, long size, long stream) {
        return stream == 0 ? session.cuda.memcpyHtoD(dst, host, size, 0, false) : copyOnStream(dst, host, size, stream, true);
    }

    @Override
    public int ivc_memcpy_htod_inline(Reply r, DirectBuffer in, long dst, long stream, int dataIndex, int dataLength,
                                      long size) {
        return counted(htod(dst, in.addressOffset() + dataIndex, size, stream), true, size);
    }

    @Override
    public int ivc_memcpy_htod_inline_async(DirectBuffer in, long dst, long stream, int dataIndex, int dataLength,
                                            long size) {
        // the ring slot is reused once consumed: the copy must be done before we move on
        return counted(htod(dst, in.addressOffset() + dataIndex, size, stream), true, size);
    }

    @Override
    public int ivc_memcpy_dtoh_inline(Reply r, long src, long stream, long size) {
        if (size < 0 || size > r.outbufCapacity()) {
            session.warn("size", size + " exceeds the response capacity " + r.outbufCapacity(), CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        long into = r.buffer().addressOffset() + r.outbufIndex();
        int result = stream == 0 ? session.cuda.memcpyDtoH(into, src, size, 0, false)
                : copyOnStream(src, into, size, stream, false);
        if (result == CuResult.SUCCESS) {
            r.outbufLength((int) size);
        }
        return counted(result, false, size);
    }

    /**
     * Host→device through the window. Every chunk is consumed even when the copy fails, so
     * guest_chunk and server_chunk end equal (§6); a failure is answered after the last chunk.
     */
    @Override
    public int ivc_memcpy_htod_stream(Reply r, long dst, long stream, long size) {
        if (size <= 0) {
            return CuResult.INVALID_VALUE;
        }
        ChunkStream chunks = session.chunks;
        int half = chunks.slotSize();
        int result = CuResult.SUCCESS;
        long chunk = chunks.next();
        for (long done = 0; done < size; done += half, chunk++) {
            long n = Math.min(half, size - done);
            if (!chunks.awaitGuest(chunk + 1)) {
                return CuResult.DEVICE_UNAVAILABLE;
            }
            if (result == CuResult.SUCCESS) {
                result = htod(dst + done, chunks.slotAddress(chunk), n, stream);
            }
            chunks.publish(chunk + 1);
        }
        return counted(result, true, size);
    }

    /**
     * Device→host through the window: every chunk is produced (zero-filled once the copy has
     * failed), so the counters end equal (§6).
     */
    @Override
    public int ivc_memcpy_dtoh_stream(Reply r, long src, long stream, long size) {
        if (size <= 0) {
            return CuResult.INVALID_VALUE;
        }
        ChunkStream chunks = session.chunks;
        int half = chunks.slotSize();
        int result = CuResult.SUCCESS;
        long chunk = chunks.next();
        for (long done = 0; done < size; done += half, chunk++) {
            long n = Math.min(half, size - done);
            // the slot of chunk c is free once the guest drained chunk c-2
            if (!chunks.awaitGuest(chunk - 1)) {
                return CuResult.DEVICE_UNAVAILABLE;
            }
            long slot = chunks.slotAddress(chunk);
            if (result == CuResult.SUCCESS) {
                result = stream == 0 ? session.cuda.memcpyDtoH(slot, src + done, n, 0, false)
                        : copyOnStream(src + done, slot, n, stream, false);
            }
            if (result != CuResult.SUCCESS) {
                UnsafeApi.setMemory(slot, n, (byte) 0);
            }
            chunks.publish(chunk + 1);
        }
        return counted(result, false, size);
    }

    @Override
    public int ivc_memcpy_htod_pool(Reply r, long dst, long stream, long poolOffsetAddress, long size) {
        return counted(session.cuda.memcpyHtoD(dst, poolOffsetAddress, size, stream, false), true, size);
    }

    @Override
    public int ivc_memcpy_dtoh_pool(Reply r, long poolOffsetAddress, long src, long stream, long size) {
        return counted(session.cuda.memcpyDtoH(poolOffsetAddress, src, size, stream, false), false, size);
    }

    /** An unregistered pool is not pinned: its copies cannot be asynchronous. */
    private boolean poolIsPinned() {
        return session.vm.poolDevicePointer() != 0;
    }

    @Override
    public int ivc_memcpy_htod_pool_async(long dst, long stream, long poolOffsetAddress, long size) {
        return counted(session.cuda.memcpyHtoD(dst, poolOffsetAddress, size, stream, poolIsPinned()), true, size);
    }

    @Override
    public int ivc_memcpy_dtoh_pool_async(long poolOffsetAddress, long src, long stream, long size) {
        return counted(session.cuda.memcpyDtoH(poolOffsetAddress, src, size, stream, poolIsPinned()), false, size);
    }

    @Override
    public int cuMemcpyDtoD_v2(Reply r, long dstDevice, long srcDevice, long byteCount) {
        return session.cuda.memcpyDtoD(dstDevice, srcDevice, byteCount, 0, false);
    }

    @Override
    public int cuMemcpyDtoDAsync_v2(long dstDevice, long srcDevice, long byteCount, long hStream) {
        return session.cuda.memcpyDtoD(dstDevice, srcDevice, byteCount, hStream, true);
    }
}
