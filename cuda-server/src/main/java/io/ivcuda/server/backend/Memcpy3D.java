package io.ivcuda.server.backend;

import java.util.function.LongToIntFunction;
import org.agrona.UnsafeApi;

/**
 * CUDA_MEMCPY3D (cuda.h, LP64), built for one driver call (cuMemcpy3D, cuMemcpy3DAsync, the
 * memcpy node calls) in a {@link NativeStruct} that the call owns: the driver reads the descriptor
 * during the call only.
 */
final class Memcpy3D {
    /** sizeof(CUDA_MEMCPY3D) and the offsets of its fields (offsetof in cuda.h). */
    static final int SIZE = 200;
    static final int SRC_X = 0, SRC_Y = 8, SRC_Z = 16, SRC_MEMORY_TYPE = 32, SRC_HOST = 40, SRC_DEVICE = 48,
            SRC_ARRAY = 56, SRC_PITCH = 72, SRC_HEIGHT = 80;
    static final int DST_X = 88, DST_Y = 96, DST_Z = 104, DST_MEMORY_TYPE = 120, DST_HOST = 128, DST_DEVICE = 136,
            DST_ARRAY = 144, DST_PITCH = 160, DST_HEIGHT = 168;
    static final int WIDTH = 176, HEIGHT = 184, DEPTH = 192;

    private Memcpy3D() {
    }

    /**
     * Builds the descriptor of one copy, passes its address to {@code driver} and frees it
     * whatever {@code driver} does. An array side ({@link CudaBackend#MEMORYTYPE_ARRAY}) takes its
     * X/Y/Z origin; a host or device side its pitch and height (its origin is in the address).
     */
    static int call(int dstType, long dst, long dstX, long dstY, long dstZ, long dstPitch, long dstHeight,
                    int srcType, long src, long srcX, long srcY, long srcZ, long srcPitch, long srcHeight,
                    long width, long height, long depth, LongToIntFunction driver) {
        try (NativeStruct d = NativeStruct.zeroed(SIZE)) {
            long p = d.address;
            side(p, SRC_MEMORY_TYPE, srcType, src, srcX, srcY, srcZ, srcPitch, srcHeight);
            side(p, DST_MEMORY_TYPE, dstType, dst, dstX, dstY, dstZ, dstPitch, dstHeight);
            UnsafeApi.putLong(p + WIDTH, width);
            UnsafeApi.putLong(p + HEIGHT, height);
            UnsafeApi.putLong(p + DEPTH, depth);
            return driver.applyAsInt(p);
        }
    }

    /** One side's fields; the destination's are the source's shifted by the same distance. */
    private static void side(long p, int typeOffset, int type, long address, long x, long y, long z, long pitch,
                             long height) {
        int shift = typeOffset - SRC_MEMORY_TYPE;
        UnsafeApi.putInt(p + typeOffset, type);
        if (type == CudaBackend.MEMORYTYPE_ARRAY) {
            UnsafeApi.putLong(p + shift + SRC_ARRAY, address);
            UnsafeApi.putLong(p + shift + SRC_X, x);
            UnsafeApi.putLong(p + shift + SRC_Y, y);
            UnsafeApi.putLong(p + shift + SRC_Z, z);
        } else {
            UnsafeApi.putLong(p + shift + (type == CudaBackend.MEMORYTYPE_HOST ? SRC_HOST : SRC_DEVICE), address);
            UnsafeApi.putLong(p + shift + SRC_PITCH, pitch);
            UnsafeApi.putLong(p + shift + SRC_HEIGHT, height);
        }
    }
}
