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
    static native int cuModuleGetFunctionCount(long pcount, long mod);
    static native int cuModuleEnumerateFunctions(long functions, int count, long mod);
    static native int cuKernelGetFunction(long pfunc, long kernel);
    static native int cuKernelGetAttribute(long pi, int attrib, long kernel, int dev);
    static native int cuKernelSetAttribute(int attrib, int val, long kernel, int dev);
    static native int cuKernelSetCacheConfig(long kernel, int config, int dev);
    static native int cuKernelGetParamInfo(long kernel, long index, long poffset, long psize);
    static native int cuKernelGetName(long pname, long kernel);
    static native int cuFuncGetName(long pname, long func);
    static native int cuLaunchKernelEx(long config, long f, long kernelParams, long extra);
    static native int cuOccupancyMaxActiveClusters(long pn, long f, long config);
    static native int cuOccupancyMaxPotentialClusterSize(long pn, long f, long config);
    static native int cuOccupancyAvailableDynamicSMemPerBlock(long psize, long f, int numBlocks, int blockSize);
    static native int cuCtxGetId(long ctx, long pid);
    static native int cuCtxGetCacheConfig(long pconfig);
    static native int cuCtxSetCacheConfig(int config);
    static native int cuCtxGetSharedMemConfig(long pconfig);
    static native int cuCtxSetSharedMemConfig(int config);
    static native int cuFuncSetSharedMemConfig(long f, int config);
    static native int cuCtxResetPersistingL2Cache();
    static native int cuCtxRecordEvent(long ctx, long event);
    static native int cuCtxWaitEvent(long ctx, long event);
    static native int cuDeviceCanAccessPeer(long pcan, int dev, int peer);
    static native int cuDeviceGetP2PAttribute(long pvalue, int attrib, int src, int dst);
    static native int cuCtxEnablePeerAccess(long peer, int flags);
    static native int cuCtxDisablePeerAccess(long peer);
    static native int cuLinkCreate_v2(int numOptions, long options, long values, long pstate);
    static native int cuLinkAddData_v2(long state, int type, long data, long size, String name, int numOptions,
                                       long options, long values);
    static native int cuLinkComplete(long state, long pcubin, long psize);
    static native int cuLinkDestroy(long state);
}
