package io.ivcuda.server.backend;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;

/**
 * The driver's virtual-memory and pool-creation functions (api/vmm.api), registered apart from {@link CudaDriver}
 * so that a host driver lacking one disables only these calls (they answer
 * CUDA_ERROR_NOT_SUPPORTED), never the server. Structs are native addresses the backend fills.
 */
final class CudaDriverVmm {
    static {
        Native.register(CudaDriverVmm.class, NativeLibrary.getInstance("libcuda.so.1"));
    }

    private CudaDriverVmm() {
    }

    static native int cuMemGetAllocationGranularity(long pgranularity, long prop, int option);
    static native int cuMemAddressReserve(long pptr, long size, long alignment, long addr, long flags);
    static native int cuMemAddressFree(long ptr, long size);
    static native int cuMemCreate(long phandle, long size, long prop, long flags);
    static native int cuMemRelease(long handle);
    static native int cuMemMap(long ptr, long size, long offset, long handle, long flags);
    static native int cuMemUnmap(long ptr, long size);
    static native int cuMemSetAccess(long ptr, long size, long desc, long count);
    static native int cuMemGetAccess(long pflags, long location, long ptr);
    static native int cuMemGetAllocationPropertiesFromHandle(long prop, long handle);
    static native int cuMemRetainAllocationHandle(long phandle, long addr);
    static native int cuMemPoolCreate(long ppool, long props);
    static native int cuMemPoolDestroy(long pool);
    static native int cuMemPoolSetAccess(long pool, long map, long count);
    static native int cuMemPoolGetAccess(long pflags, long pool, long location);
}
