package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Reply;
import io.ivcuda.server.gen.TensormapsCalls;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Tensor maps (docs/memory.md "Tensor maps"): the driver encodes a CUtensorMap on the host and the
 * guest's kernels take its 128 bytes by value. The guest's arrays are copied out of the request once,
 * into the worker's scratch, and only their first {@code rank} entries (the rank checked first) are
 * read: by the extent computed here and by the driver. The bytes the tensor spans must lie in one
 * of the process's device allocations, as a copy's must: a map is a description of memory the
 * process's kernels will read and write, and one the server encoded never names another process's.
 * The driver checks the rest (alignment, box sizes, enum values) and its answer goes back as is.
 */
final class TensorMapHandler implements TensormapsCalls {
    static final int MAP_SIZE = 128;
    static final int MAX_RANK = 5, MIN_IM2COL_RANK = 3;
    /** cuda.h: globalDim entries are non-zero and at most 2^32; globalStrides below 2^40. */
    static final long MAX_DIM = 1L << 32, MAX_STRIDE = 1L << 40;
    /** Bytes per 16 elements of each CUtensorMapDataType (16U4_ALIGN8B: 16 4-bit values in 8 bytes, ...). */
    private static final int[] BYTES_PER_16 = {16, 32, 64, 64, 128, 128, 32, 64, 128, 32, 64, 64, 64, 8, 16, 16};
    /** The worker's scratch (the backends use its first slots): the map 64-byte aligned, then the arrays. */
    private static final int MAP = 1024, DIMS = MAP + 2 * MAP_SIZE, STRIDES = DIMS + 8 * MAX_RANK,
            BOX = STRIDES + 8 * (MAX_RANK - 1), ELEMENTS = BOX + 4 * MAX_RANK, LOWER = ELEMENTS + 4 * MAX_RANK,
            UPPER = LOWER + 4 * (MAX_RANK - 2);

    private final Session session;

    TensorMapHandler(Session session) {
        this.session = session;
    }

    /** The map's place in the scratch, aligned as the driver requires (64 bytes). */
    private long map() {
        return (session.out.scratch + MAP + 63) & ~63L;
    }

    private long copy(DirectBuffer in, int index, int offset, int bytes) {
        long to = session.out.scratch + offset;
        UnsafeApi.copyMemory(in.addressOffset() + index, to, bytes);
        return to;
    }

    /**
     * Copies globalDim and globalStrides out of the request and holds the bytes the tensor spans to
     * the process's device memory; the refusal's result (logged), or SUCCESS.
     */
    private int tensor(DirectBuffer in, int dataType, int rank, int minRank, long globalAddress, int dimIndex,
                       int strideIndex) {
        if (rank < minRank || rank > MAX_RANK) {
            return session.refuse("rank", Integer.toUnsignedString(rank) + " is not in " + minRank + ".." + MAX_RANK,
                    CuResult.INVALID_VALUE);
        }
        if (dataType < 0 || dataType >= BYTES_PER_16.length) {
            return session.refuse("dataType", dataType + " is not a CUtensorMapDataType (0.." + (BYTES_PER_16.length - 1)
                    + ")", CuResult.INVALID_VALUE);
        }
        long dims = copy(in, dimIndex, DIMS, 8 * MAX_RANK);
        long strides = copy(in, strideIndex, STRIDES, 8 * (MAX_RANK - 1));
        long extent = extent(dataType, rank, dims, strides);
        if (extent < 0) {
            return CuResult.INVALID_VALUE;
        }
        if (!session.deviceRange(globalAddress, extent)) {
            return session.refuse("globalAddress", "0x" + Long.toHexString(globalAddress) + " + " + extent
                    + " bytes (the tensor's extent) is not in one of the process's device allocations",
                    CuResult.INVALID_VALUE);
        }
        return CuResult.SUCCESS;
    }

    /**
     * The bytes from the tensor's first element to past its last: globalDim[0] elements, plus
     * (globalDim[i]-1) strides of each outer dimension; -1 (logged) when a dimension or stride is out
     * of the driver's range or the sum does not fit 63 bits.
     */
    private long extent(int dataType, int rank, long dims, long strides) {
        long[] dim = new long[rank];
        for (int i = 0; i < rank; i++) {
            dim[i] = UnsafeApi.getLong(dims + 8L * i);
            if (dim[i] <= 0 || dim[i] > MAX_DIM) {
                session.warn("globalDim[" + i + "]", Long.toUnsignedString(dim[i]) + " is not in 1..2^32",
                        CuResult.INVALID_VALUE);
                return -1;
            }
        }
        // dim[0] ≤ 2^32 and 128 bytes per 16: no overflow
        long extent = (dim[0] * BYTES_PER_16[dataType] + 15) / 16;
        try {
            for (int i = 1; i < rank; i++) {
                long stride = UnsafeApi.getLong(strides + 8L * (i - 1));
                if (stride < 0 || stride >= MAX_STRIDE) {
                    session.warn("globalStrides[" + (i - 1) + "]", Long.toUnsignedString(stride) + " is not below 2^40",
                            CuResult.INVALID_VALUE);
                    return -1;
                }
                extent = Math.addExact(extent, Math.multiplyExact(dim[i] - 1, stride));
            }
        } catch (ArithmeticException e) {
            session.warn("globalDim", "with globalStrides spans more than 2^63 bytes", CuResult.INVALID_VALUE);
            return -1;
        }
        return extent;
    }

    /** The driver's map goes back to the guest only when it encoded one. */
    private int answer(Reply r, int result, long map) {
        if (result == CuResult.SUCCESS) {
            r.buffer().putBytes(r.bytesIndex(0), new UnsafeBuffer(map, MAP_SIZE), 0, MAP_SIZE);
        }
        return result;
    }

    @Override
    public int ivc_tensor_map_encode_tiled(Reply r, DirectBuffer in, int dataType, int rank, long globalAddress,
                                           int globalDimIndex, int globalStridesIndex, int boxDimIndex,
                                           int elementStridesIndex, int interleave, int swizzle, int l2Promotion,
                                           int oobFill) {
        int refused = tensor(in, dataType, rank, 1, globalAddress, globalDimIndex, globalStridesIndex);
        if (refused != CuResult.SUCCESS) {
            return refused;
        }
        long box = copy(in, boxDimIndex, BOX, 4 * MAX_RANK);
        long elements = copy(in, elementStridesIndex, ELEMENTS, 4 * MAX_RANK);
        long map = map();
        return answer(r, session.cuda.tensorMapEncodeTiled(map, dataType, rank, globalAddress,
                session.out.scratch + DIMS, session.out.scratch + STRIDES, box, elements, interleave, swizzle,
                l2Promotion, oobFill), map);
    }

    @Override
    public int ivc_tensor_map_encode_im2col(Reply r, DirectBuffer in, int dataType, int rank, long globalAddress,
                                            int globalDimIndex, int globalStridesIndex, int lowerCornerIndex,
                                            int upperCornerIndex, int channelsPerPixel, int pixelsPerColumn,
                                            int elementStridesIndex, int interleave, int swizzle, int l2Promotion,
                                            int oobFill) {
        int refused = tensor(in, dataType, rank, MIN_IM2COL_RANK, globalAddress, globalDimIndex, globalStridesIndex);
        if (refused != CuResult.SUCCESS) {
            return refused;
        }
        long lower = copy(in, lowerCornerIndex, LOWER, 4 * (MAX_RANK - 2));
        long upper = copy(in, upperCornerIndex, UPPER, 4 * (MAX_RANK - 2));
        long elements = copy(in, elementStridesIndex, ELEMENTS, 4 * MAX_RANK);
        long map = map();
        return answer(r, session.cuda.tensorMapEncodeIm2col(map, dataType, rank, globalAddress,
                session.out.scratch + DIMS, session.out.scratch + STRIDES, lower, upper, channelsPerPixel,
                pixelsPerColumn, elements, interleave, swizzle, l2Promotion, oobFill), map);
    }

    @Override
    public int ivc_tensor_map_encode_im2col_wide(Reply r, DirectBuffer in, int dataType, int rank, long globalAddress,
                                                 int globalDimIndex, int globalStridesIndex, int lowerCornerWidth,
                                                 int upperCornerWidth, int channelsPerPixel, int pixelsPerColumn,
                                                 int elementStridesIndex, int interleave, int mode, int swizzle,
                                                 int l2Promotion, int oobFill) {
        int refused = tensor(in, dataType, rank, MIN_IM2COL_RANK, globalAddress, globalDimIndex, globalStridesIndex);
        if (refused != CuResult.SUCCESS) {
            return refused;
        }
        long elements = copy(in, elementStridesIndex, ELEMENTS, 4 * MAX_RANK);
        long map = map();
        return answer(r, session.cuda.tensorMapEncodeIm2colWide(map, dataType, rank, globalAddress,
                session.out.scratch + DIMS, session.out.scratch + STRIDES, lowerCornerWidth, upperCornerWidth,
                channelsPerPixel, pixelsPerColumn, elements, interleave, mode, swizzle, l2Promotion, oobFill), map);
    }

    /**
     * The map's extent is in its opaque bytes, which the server cannot read: the new address itself
     * must lie in one of the process's allocations. (A guest can build any 128 bytes itself and hand
     * them to its kernels: the check keeps honest bookkeeping, the GPU's address space isolates.)
     */
    @Override
    public int ivc_tensor_map_replace_address(Reply r, DirectBuffer in, int tensorMapIndex, long globalAddress) {
        if (!session.deviceRange(globalAddress, 1)) {
            return session.refuse("globalAddress", "0x" + Long.toHexString(globalAddress)
                    + " is not in one of the process's device allocations", CuResult.INVALID_VALUE);
        }
        long map = map();
        UnsafeApi.copyMemory(in.addressOffset() + tensorMapIndex, map, MAP_SIZE);
        return answer(r, session.cuda.tensorMapReplaceAddress(map, globalAddress), map);
    }
}
