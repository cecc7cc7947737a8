package io.ivcuda.server.backend;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;

/**
 * Symbols a host driver may lack (cuFuncGetParamInfo appeared in CUDA 12.4; cuCtxCreate_v2 is a
 * legacy name CUDA 13 headers no longer map to). Registered apart from {@link CudaDriver} so that
 * a missing one disables only the calls that need it.
 */
final class CudaDriverOptional {
    static {
        Native.register(CudaDriverOptional.class, NativeLibrary.getInstance("libcuda.so.1"));
    }

    private CudaDriverOptional() {
    }

    static native int cuCtxCreate_v2(long pctx, int flags, int dev);

    static native int cuFuncGetParamInfo(long func, long index, long poffset, long psize);
}
