package io.ivcuda.server.backend;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;

/**
 * The driver's library, kernel and launch-extension entry points (CUDA 12.0 to 12.5): registered
 * apart from {@link CudaDriver} so that an older host driver still serves everything else, and
 * these calls answer CUDA_ERROR_NOT_SUPPORTED there.
 */
final class CudaDriverKernels {
    static {
        Native.register(CudaDriverKernels.class, NativeLibrary.getInstance("libcuda.so.1"));
    }

    private CudaDriverKernels() {
    }

    static native int cuLibraryLoadData(long plib, long code, long jitOptions, long jitValues, int numJit,
                                        long libOptions, long libValues, int numLib);
    static native int cuLibraryUnload(long lib);
    static native int cuLibraryGetKernel(long pkernel, long lib, String name);
    static native int cuLibraryGetModule(long pmod, long lib);
    static native int cuLibraryGetGlobal(long pdptr, long pbytes, long lib, String name);
    static native int cuLibraryGetKernelCount(long pcount, long lib);
    static native int cuLibraryEnumerateKernels(long kernels, int count, long lib);
    static native int cuKernelGetFunction(long pfunc, long kernel);
    static native int cuKernelGetAttribute(long pi, int attrib, long kernel, int dev);
    static native int cuKernelSetAttribute(int attrib, int val, long kernel, int dev);
    static native int cuKernelSetCacheConfig(long kernel, int config, int dev);
    static native int cuKernelGetParamInfo(long kernel, long index, long poffset, long psize);
    static native int cuKernelGetName(long pname, long kernel);
    static native int cuFuncGetName(long pname, long func);
}
