package io.ivcuda.server.handler;

import static io.ivcuda.server.backend.CudaBackend.MEMORYTYPE_DEVICE;
import static io.ivcuda.server.backend.CudaBackend.MEMORYTYPE_HOST;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Reply;
import io.ivcuda.server.gen.StridedCalls;
import org.agrona.DirectBuffer;

/**
 * Strided copies and 2D memsets (docs/memory.md): cuMemcpy2D/3D and their peer and async forms
 * arrive as one 3D geometry per side. The guest folds the X/Y/Z offsets into each side's start and
 * sends the bytes the copy touches from there as that side's span, which the dispatcher has checked
 * (device[...] against the process's allocations, pool[...] against its pool blocks). Here the span
 * is recomputed from the geometry, overflow-safe, and a copy that would reach past the checked span
 * is refused: the driver never touches a byte the checks did not cover.
 */
final class StridedCopyHandler implements StridedCalls {
    private final Session session;

    StridedCopyHandler(Session session) {
        this.session = session;
    }

    /**
     * The bytes a side of {@code width} bytes × {@code height} rows × {@code depth} slices touches from
     * its start, with {@code pitch} bytes a row and {@code rows} rows a slice:
     * (depth-1)·pitch·rows + (height-1)·pitch + width. -1 for an empty extent, overlapping rows or
     * slices (the driver refuses those too) or a span beyond 2^63.
     */
    static long span(long width, long height, long depth, long pitch, long rows) {
        if (width <= 0 || height <= 0 || depth <= 0) {
            return -1;
        }
        if ((height > 1 || depth > 1) && (pitch < width)) {
            return -1;
        }
        if (depth > 1 && rows < height) {
            return -1;
        }
        try {
            long slices = depth > 1 ? Math.multiplyExact(depth - 1, Math.multiplyExact(pitch, rows)) : 0;
            long lines = height > 1 ? Math.multiplyExact(height - 1, pitch) : 0;
            return Math.addExact(Math.addExact(slices, lines), width);
        } catch (ArithmeticException e) {
            return -1;
        }
    }

    /** Whether the geometry stays inside the checked span; a refusal is logged, naming the side. */
    private boolean fits(String side, long checkedSpan, long width, long height, long depth, long pitch, long rows) {
        long need = span(width, height, depth, pitch, rows);
        if (need < 0 || need > checkedSpan) {
            session.warn(side, width + "x" + height + "x" + depth + " bytes with pitch " + pitch + ", " + rows
                    + " rows a slice need " + (need < 0 ? "an impossible span" : need + " bytes") + ", the checked span is "
                    + checkedSpan, CuResult.INVALID_VALUE);
            return false;
        }
        return true;
    }

    /** The packed host side of an inline copy: exactly width·height·depth bytes. */
    private boolean packed(long size, long width, long height, long depth) {
        long need = span(width, height, depth, width, height);
        if (need < 0 || need != size) {
            session.warn("size", size + " bytes for a packed " + width + "x" + height + "x" + depth + " copy",
                    CuResult.INVALID_VALUE);
            return false;
        }
        return true;
    }

    /**
     * A synchronous copy: on the legacy stream as the driver's synchronous form, on any other stream
     * queued and then waited for (the bytes must be in place before we answer).
     */
    private int copyNow(int dstType, long dst, long dstPitch, long dstHeight, int srcType, long src, long srcPitch,
                        long srcHeight, long width, long height, long depth, long stream) {
        if (stream == 0) {
            return session.cuda.memcpy3D(dstType, dst, dstPitch, dstHeight, srcType, src, srcPitch, srcHeight, width,
                    height, depth, 0, false);
        }
        int result = session.cuda.memcpy3D(dstType, dst, dstPitch, dstHeight, srcType, src, srcPitch, srcHeight, width,
                height, depth, stream, true);
        return result == CuResult.SUCCESS ? session.cuda.streamSynchronize(stream) : result;
    }

    /** An unregistered pool is not pinned: its copies cannot be asynchronous. */
    private boolean poolIsPinned() {
        return session.vm.poolDevicePointer() != 0;
    }

    /**
     * {@code result}, after counting the width·height·depth bytes a successful copy moved between the guest and the
     * GPU (status and metrics; docs/sharing.md, "Metrics"). The geometry has been held to a checked span of at least
     * that product, so it does not overflow.
     */
    private int counted(int result, boolean toDevice, long width, long height, long depth) {
        if (result == CuResult.SUCCESS) {
            session.copied(toDevice, width * height * depth);
        }
        return result;
    }

    @Override
    public int ivc_memcpy3d_dtod(Reply r, long dst, long dstSpan, long dstPitch, long dstHeight, long src, long srcSpan,
                                 long srcPitch, long srcHeight, long width, long height, long depth, long stream) {
        if (!fits("dst", dstSpan, width, height, depth, dstPitch, dstHeight)
                || !fits("src", srcSpan, width, height, depth, srcPitch, srcHeight)) {
            return CuResult.INVALID_VALUE;
        }
        return copyNow(MEMORYTYPE_DEVICE, dst, dstPitch, dstHeight, MEMORYTYPE_DEVICE, src, srcPitch, srcHeight, width,
                height, depth, stream);
    }

    @Override
    public int ivc_memcpy3d_dtod_async(long dst, long dstSpan, long dstPitch, long dstHeight, long src, long srcSpan,
                                       long srcPitch, long srcHeight, long width, long height, long depth, long stream) {
        if (!fits("dst", dstSpan, width, height, depth, dstPitch, dstHeight)
                || !fits("src", srcSpan, width, height, depth, srcPitch, srcHeight)) {
            return CuResult.INVALID_VALUE;
        }
        return session.cuda.memcpy3D(MEMORYTYPE_DEVICE, dst, dstPitch, dstHeight, MEMORYTYPE_DEVICE, src, srcPitch,
                srcHeight, width, height, depth, stream, true);
    }

    @Override
    public int ivc_memcpy3d_htod_inline(Reply r, DirectBuffer in, long dst, long dstSpan, long dstPitch, long dstHeight,
                                        long width, long height, long depth, long stream, int dataIndex, int dataLength,
                                        long size) {
        if (!packed(size, width, height, depth) || dataLength != size
                || !fits("dst", dstSpan, width, height, depth, dstPitch, dstHeight)) {
            return CuResult.INVALID_VALUE;
        }
        return counted(copyNow(MEMORYTYPE_DEVICE, dst, dstPitch, dstHeight, MEMORYTYPE_HOST,
                in.addressOffset() + dataIndex, width, height, width, height, depth, stream), true, width, height, depth);
    }

    @Override
    public int ivc_memcpy3d_dtoh_inline(Reply r, long src, long srcSpan, long srcPitch, long srcHeight, long width,
                                        long height, long depth, long stream, long size) {
        if (!packed(size, width, height, depth) || !fits("src", srcSpan, width, height, depth, srcPitch, srcHeight)) {
            return CuResult.INVALID_VALUE;
        }
        if (size > r.outbufCapacity()) {
            session.warn("size", size + " exceeds the response capacity " + r.outbufCapacity(), CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        long into = r.buffer().addressOffset() + r.outbufIndex();
        int result = copyNow(MEMORYTYPE_HOST, into, width, height, MEMORYTYPE_DEVICE, src, srcPitch, srcHeight, width,
                height, depth, stream);
        if (result == CuResult.SUCCESS) {
            r.outbufLength((int) size);
        }
        return counted(result, false, width, height, depth);
    }

    @Override
    public int ivc_memcpy3d_htod_pool(Reply r, long dst, long dstSpan, long dstPitch, long dstHeight,
                                      long poolOffsetAddress, long hostSpan, long hostPitch, long hostHeight, long width,
                                      long height, long depth, long stream) {
        if (!fits("dst", dstSpan, width, height, depth, dstPitch, dstHeight)
                || !fits("poolOffset", hostSpan, width, height, depth, hostPitch, hostHeight)) {
            return CuResult.INVALID_VALUE;
        }
        return counted(copyNow(MEMORYTYPE_DEVICE, dst, dstPitch, dstHeight, MEMORYTYPE_HOST, poolOffsetAddress,
                hostPitch, hostHeight, width, height, depth, stream), true, width, height, depth);
    }

    @Override
    public int ivc_memcpy3d_dtoh_pool(Reply r, long poolOffsetAddress, long hostSpan, long hostPitch, long hostHeight,
                                      long src, long srcSpan, long srcPitch, long srcHeight, long width, long height,
                                      long depth, long stream) {
        if (!fits("poolOffset", hostSpan, width, height, depth, hostPitch, hostHeight)
                || !fits("src", srcSpan, width, height, depth, srcPitch, srcHeight)) {
            return CuResult.INVALID_VALUE;
        }
        return counted(copyNow(MEMORYTYPE_HOST, poolOffsetAddress, hostPitch, hostHeight, MEMORYTYPE_DEVICE, src,
                srcPitch, srcHeight, width, height, depth, stream), false, width, height, depth);
    }

    @Override
    public int ivc_memcpy3d_htod_pool_async(long dst, long dstSpan, long dstPitch, long dstHeight,
                                            long poolOffsetAddress, long hostSpan, long hostPitch, long hostHeight,
                                            long width, long height, long depth, long stream) {
        if (!fits("dst", dstSpan, width, height, depth, dstPitch, dstHeight)
                || !fits("poolOffset", hostSpan, width, height, depth, hostPitch, hostHeight)) {
            return CuResult.INVALID_VALUE;
        }
        return counted(session.cuda.memcpy3D(MEMORYTYPE_DEVICE, dst, dstPitch, dstHeight, MEMORYTYPE_HOST,
                poolOffsetAddress, hostPitch, hostHeight, width, height, depth, stream, poolIsPinned()), true, width,
                height, depth);
    }

    @Override
    public int ivc_memcpy3d_dtoh_pool_async(long poolOffsetAddress, long hostSpan, long hostPitch, long hostHeight,
                                            long src, long srcSpan, long srcPitch, long srcHeight, long width,
                                            long height, long depth, long stream) {
        if (!fits("poolOffset", hostSpan, width, height, depth, hostPitch, hostHeight)
                || !fits("src", srcSpan, width, height, depth, srcPitch, srcHeight)) {
            return CuResult.INVALID_VALUE;
        }
        return counted(session.cuda.memcpy3D(MEMORYTYPE_HOST, poolOffsetAddress, hostPitch, hostHeight,
                MEMORYTYPE_DEVICE, src, srcPitch, srcHeight, width, height, depth, stream, poolIsPinned()), false, width,
                height, depth);
    }

    /** A 2D memset's geometry: 1-, 2- or 4-byte elements, rows inside the checked span. */
    private boolean memsetFits(long span, long pitch, int elementSize, long width, long height) {
        if (elementSize != 1 && elementSize != 2 && elementSize != 4) {
            session.warn("elementSize", String.valueOf(elementSize), CuResult.INVALID_VALUE);
            return false;
        }
        if (width <= 0 || width > Long.MAX_VALUE / elementSize) {
            session.warn("width", String.valueOf(width), CuResult.INVALID_VALUE);
            return false;
        }
        return fits("dst", span, width * elementSize, height, 1, pitch, height);
    }

    @Override
    public int ivc_memset2d(Reply r, long dst, long span, long pitch, int value, int elementSize, long width,
                            long height, long stream) {
        if (!memsetFits(span, pitch, elementSize, width, height)) {
            return CuResult.INVALID_VALUE;
        }
        if (stream == 0) {
            return session.cuda.memset2D(elementSize, dst, pitch, value, width, height, 0, false);
        }
        int result = session.cuda.memset2D(elementSize, dst, pitch, value, width, height, stream, true);
        return result == CuResult.SUCCESS ? session.cuda.streamSynchronize(stream) : result;
    }

    @Override
    public int ivc_memset2d_async(long dst, long span, long pitch, int value, int elementSize, long width, long height,
                                  long stream) {
        if (!memsetFits(span, pitch, elementSize, width, height)) {
            return CuResult.INVALID_VALUE;
        }
        return session.cuda.memset2D(elementSize, dst, pitch, value, width, height, stream, true);
    }
}
