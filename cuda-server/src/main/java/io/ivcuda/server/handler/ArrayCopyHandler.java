package io.ivcuda.server.handler;

import static io.ivcuda.server.backend.CudaBackend.MEMORYTYPE_ARRAY;
import static io.ivcuda.server.backend.CudaBackend.MEMORYTYPE_DEVICE;
import static io.ivcuda.server.backend.CudaBackend.MEMORYTYPE_HOST;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.ArrayObjects.Shape;
import io.ivcuda.server.gen.ArraycopyCalls;
import io.ivcuda.server.gen.Reply;
import org.agrona.DirectBuffer;

/**
 * The strided copies with an array side (docs/memory.md). An array side is the array (a handle the
 * dispatcher resolved and pinned) and the copy's X offset in bytes, Y and Z; it is held to the
 * geometry the driver gave for the array: X+width within a row of width·element-size bytes,
 * Y+height within its rows, Z+depth within its slices. A linear side is held to its checked span
 * as in {@link StridedCopyHandler}. The driver only ever gets a copy that fits both.
 */
final class ArrayCopyHandler implements ArraycopyCalls {
    private final Session session;

    ArrayCopyHandler(Session session) {
        this.session = session;
    }

    /** SUCCESS when the extent at (x, y, z) lies inside the array, else the refusal (logged). */
    private int inArray(String field, long array, long x, long y, long z, long width, long height, long depth) {
        Shape s = session.vm.arrays().shape(array);
        long row = s == null ? -1 : s.rowBytes();
        if (row < 0) {
            return session.refuse(field, "has a format without a fixed element size (block-compressed or video): "
                    + "its copies are not remoted", CuResult.NOT_SUPPORTED);
        }
        if (width <= 0 || height <= 0 || depth <= 0 || x < 0 || y < 0 || z < 0 || width > row - x
                || height > s.rows() - y || depth > s.slices() - z) {
            return session.refuse(field, Long.toUnsignedString(width) + "x" + Long.toUnsignedString(height) + "x"
                    + Long.toUnsignedString(depth) + " at (" + Long.toUnsignedString(x) + ", " + Long.toUnsignedString(y)
                    + ", " + Long.toUnsignedString(z) + ") leaves the array of " + row + " bytes x " + s.rows()
                    + " rows x " + s.slices() + " slices", CuResult.INVALID_VALUE);
        }
        return CuResult.SUCCESS;
    }

    /** SUCCESS when a linear side's geometry stays inside its checked span (StridedCopyHandler's rule). */
    private int inSpan(String field, long checkedSpan, long width, long height, long depth, long pitch, long rows) {
        long need = StridedCopyHandler.span(width, height, depth, pitch, rows);
        if (need < 0 || need > checkedSpan) {
            return session.refuse(field, width + "x" + height + "x" + depth + " bytes with pitch " + pitch + ", " + rows
                    + " rows a slice need " + (need < 0 ? "an impossible span" : need + " bytes")
                    + ", the checked span is " + checkedSpan, CuResult.INVALID_VALUE);
        }
        return CuResult.SUCCESS;
    }

    /**
     * {@code result}, after counting the width·height·depth bytes a successful copy moved between the guest and the
     * GPU (status and metrics; docs/sharing.md, "Metrics"): the geometry is inside the array, so it does not overflow.
     */
    private int counted(int result, boolean toDevice, long width, long height, long depth) {
        if (result == CuResult.SUCCESS) {
            session.copied(toDevice, width * height * depth);
        }
        return result;
    }

    private static int first(int a, int b) {
        return a != CuResult.SUCCESS ? a : b;
    }

    /** The packed host side of an inline copy: exactly width·height·depth bytes. */
    private int packed(long size, long width, long height, long depth) {
        long need = StridedCopyHandler.span(width, height, depth, width, height);
        if (need < 0 || need != size) {
            return session.refuse("size", size + " bytes for a packed " + width + "x" + height + "x" + depth + " copy",
                    CuResult.INVALID_VALUE);
        }
        return CuResult.SUCCESS;
    }

    /** A synchronous copy: on the legacy stream the driver's synchronous form, else queued and waited for. */
    private int copy(int dstType, long dst, long dstX, long dstY, long dstZ, long dstPitch, long dstHeight, int srcType,
                     long src, long srcX, long srcY, long srcZ, long srcPitch, long srcHeight, long width, long height,
                     long depth, long stream, boolean async) {
        if (!async && stream != 0) {
            int result = session.cuda.memcpy3DArray(dstType, dst, dstX, dstY, dstZ, dstPitch, dstHeight, srcType, src,
                    srcX, srcY, srcZ, srcPitch, srcHeight, width, height, depth, stream, true);
            return result == CuResult.SUCCESS ? session.cuda.streamSynchronize(stream) : result;
        }
        return session.cuda.memcpy3DArray(dstType, dst, dstX, dstY, dstZ, dstPitch, dstHeight, srcType, src, srcX, srcY,
                srcZ, srcPitch, srcHeight, width, height, depth, stream, async);
    }

    private int atoa(long dst, long dstX, long dstY, long dstZ, long src, long srcX, long srcY, long srcZ, long width,
                     long height, long depth, long stream, boolean async) {
        int ok = first(inArray("dst", dst, dstX, dstY, dstZ, width, height, depth),
                inArray("src", src, srcX, srcY, srcZ, width, height, depth));
        return ok != CuResult.SUCCESS ? ok : copy(MEMORYTYPE_ARRAY, dst, dstX, dstY, dstZ, 0, 0, MEMORYTYPE_ARRAY, src,
                srcX, srcY, srcZ, 0, 0, width, height, depth, stream, async);
    }

    @Override
    public int ivc_memcpy3d_atoa(Reply r, long dst, long dstX, long dstY, long dstZ, long src, long srcX, long srcY,
                                 long srcZ, long width, long height, long depth, long stream) {
        return atoa(dst, dstX, dstY, dstZ, src, srcX, srcY, srcZ, width, height, depth, stream, false);
    }

    @Override
    public int ivc_memcpy3d_atoa_async(long dst, long dstX, long dstY, long dstZ, long src, long srcX, long srcY,
                                       long srcZ, long width, long height, long depth, long stream) {
        return atoa(dst, dstX, dstY, dstZ, src, srcX, srcY, srcZ, width, height, depth, stream, true);
    }

    /** A linear side (device, or host at a server address) into an array. */
    private int toArray(long dst, long dstX, long dstY, long dstZ, String srcField, int srcType, long src, long srcSpan,
                        long srcPitch, long srcHeight, long width, long height, long depth, long stream, boolean async) {
        int ok = first(inArray("dst", dst, dstX, dstY, dstZ, width, height, depth),
                inSpan(srcField, srcSpan, width, height, depth, srcPitch, srcHeight));
        return ok != CuResult.SUCCESS ? ok : copy(MEMORYTYPE_ARRAY, dst, dstX, dstY, dstZ, 0, 0, srcType, src, 0, 0, 0,
                srcPitch, srcHeight, width, height, depth, stream, async);
    }

    /** An array into a linear side. */
    private int fromArray(String dstField, int dstType, long dst, long dstSpan, long dstPitch, long dstHeight, long src,
                          long srcX, long srcY, long srcZ, long width, long height, long depth, long stream,
                          boolean async) {
        int ok = first(inSpan(dstField, dstSpan, width, height, depth, dstPitch, dstHeight),
                inArray("src", src, srcX, srcY, srcZ, width, height, depth));
        return ok != CuResult.SUCCESS ? ok : copy(dstType, dst, 0, 0, 0, dstPitch, dstHeight, MEMORYTYPE_ARRAY, src, srcX,
                srcY, srcZ, 0, 0, width, height, depth, stream, async);
    }

    @Override
    public int ivc_memcpy3d_dtoa(Reply r, long dst, long dstX, long dstY, long dstZ, long src, long srcSpan,
                                 long srcPitch, long srcHeight, long width, long height, long depth, long stream) {
        return toArray(dst, dstX, dstY, dstZ, "src", MEMORYTYPE_DEVICE, src, srcSpan, srcPitch, srcHeight, width, height,
                depth, stream, false);
    }

    @Override
    public int ivc_memcpy3d_dtoa_async(long dst, long dstX, long dstY, long dstZ, long src, long srcSpan, long srcPitch,
                                       long srcHeight, long width, long height, long depth, long stream) {
        return toArray(dst, dstX, dstY, dstZ, "src", MEMORYTYPE_DEVICE, src, srcSpan, srcPitch, srcHeight, width, height,
                depth, stream, true);
    }

    @Override
    public int ivc_memcpy3d_atod(Reply r, long dst, long dstSpan, long dstPitch, long dstHeight, long src, long srcX,
                                 long srcY, long srcZ, long width, long height, long depth, long stream) {
        return fromArray("dst", MEMORYTYPE_DEVICE, dst, dstSpan, dstPitch, dstHeight, src, srcX, srcY, srcZ, width,
                height, depth, stream, false);
    }

    @Override
    public int ivc_memcpy3d_atod_async(long dst, long dstSpan, long dstPitch, long dstHeight, long src, long srcX,
                                       long srcY, long srcZ, long width, long height, long depth, long stream) {
        return fromArray("dst", MEMORYTYPE_DEVICE, dst, dstSpan, dstPitch, dstHeight, src, srcX, srcY, srcZ, width,
                height, depth, stream, true);
    }

    @Override
    public int ivc_memcpy3d_htoa_inline(Reply r, DirectBuffer in, long dst, long dstX, long dstY, long dstZ, long width,
                                        long height, long depth, long stream, int dataIndex, int dataLength, long size) {
        int ok = packed(size, width, height, depth);
        if (ok != CuResult.SUCCESS || dataLength != size) {
            return CuResult.INVALID_VALUE;
        }
        return counted(toArray(dst, dstX, dstY, dstZ, "data", MEMORYTYPE_HOST, in.addressOffset() + dataIndex, size,
                width, height, width, height, depth, stream, false), true, width, height, depth);
    }

    @Override
    public int ivc_memcpy3d_atoh_inline(Reply r, long src, long srcX, long srcY, long srcZ, long width, long height,
                                        long depth, long stream, long size) {
        int ok = packed(size, width, height, depth);
        if (ok != CuResult.SUCCESS) {
            return ok;
        }
        if (size > r.outbufCapacity()) {
            return session.refuse("size", size + " exceeds the response capacity " + r.outbufCapacity(),
                    CuResult.INVALID_VALUE);
        }
        long into = r.buffer().addressOffset() + r.outbufIndex();
        int result = fromArray("data", MEMORYTYPE_HOST, into, size, width, height, src, srcX, srcY, srcZ, width, height,
                depth, stream, false);
        if (result == CuResult.SUCCESS) {
            r.outbufLength((int) size);
        }
        return counted(result, false, width, height, depth);
    }

    /** An unregistered pool is not pinned: its copies cannot be asynchronous. */
    private boolean poolIsPinned() {
        return session.vm.poolDevicePointer() != 0;
    }

    @Override
    public int ivc_memcpy3d_htoa_pool(Reply r, long dst, long dstX, long dstY, long dstZ, long poolOffsetAddress,
                                      long hostSpan, long hostPitch, long hostHeight, long width, long height,
                                      long depth, long stream) {
        return counted(toArray(dst, dstX, dstY, dstZ, "poolOffset", MEMORYTYPE_HOST, poolOffsetAddress, hostSpan,
                hostPitch, hostHeight, width, height, depth, stream, false), true, width, height, depth);
    }

    @Override
    public int ivc_memcpy3d_atoh_pool(Reply r, long poolOffsetAddress, long hostSpan, long hostPitch, long hostHeight,
                                      long src, long srcX, long srcY, long srcZ, long width, long height, long depth,
                                      long stream) {
        return counted(fromArray("poolOffset", MEMORYTYPE_HOST, poolOffsetAddress, hostSpan, hostPitch, hostHeight, src,
                srcX, srcY, srcZ, width, height, depth, stream, false), false, width, height, depth);
    }

    @Override
    public int ivc_memcpy3d_htoa_pool_async(long dst, long dstX, long dstY, long dstZ, long poolOffsetAddress,
                                            long hostSpan, long hostPitch, long hostHeight, long width, long height,
                                            long depth, long stream) {
        return counted(toArray(dst, dstX, dstY, dstZ, "poolOffset", MEMORYTYPE_HOST, poolOffsetAddress, hostSpan,
                hostPitch, hostHeight, width, height, depth, stream, poolIsPinned()), true, width, height, depth);
    }

    @Override
    public int ivc_memcpy3d_atoh_pool_async(long poolOffsetAddress, long hostSpan, long hostPitch, long hostHeight,
                                            long src, long srcX, long srcY, long srcZ, long width, long height,
                                            long depth, long stream) {
        return counted(fromArray("poolOffset", MEMORYTYPE_HOST, poolOffsetAddress, hostSpan, hostPitch, hostHeight, src,
                srcX, srcY, srcZ, width, height, depth, stream, poolIsPinned()), false, width, height, depth);
    }
}
