package io.ivcuda.server.backend;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;

/**
 * The host's libcuda.so.1 by JNA direct mapping: static natives named exactly as the versioned
 * symbols, pointers and handles as {@code long}, out-params as native scratch addresses.
 * Loading happens on first use of the class; failure surfaces as an Error there.
 */
final class CudaDriver {
    static {
        Native.register(CudaDriver.class, NativeLibrary.getInstance("libcuda.so.1"));
    }

    private CudaDriver() {
    }

    static native int cuInit(int flags);
    static native int cuDriverGetVersion(long pVersion);
    static native int cuDeviceGet(long pDevice, int ordinal);
    static native int cuDeviceGetCount(long pCount);
    static native int cuDeviceGetName(long name, int len, int dev);
    static native int cuDeviceGetUuid_v2(long uuid, int dev);
    static native int cuDeviceGetPCIBusId(long busId, int len, int dev);
    static native int cuDeviceTotalMem_v2(long pBytes, int dev);
    static native int cuDeviceGetAttribute(long pi, int attrib, int dev);
    static native int cuCtxDestroy_v2(long ctx);
    static native int cuCtxGetCurrent(long pctx);
    static native int cuCtxSetCurrent(long ctx);
    static native int cuCtxPushCurrent_v2(long ctx);
    static native int cuCtxPopCurrent_v2(long pctx);
    static native int cuCtxGetDevice(long pdev);
    static native int cuCtxSynchronize();
    static native int cuCtxGetFlags(long pflags);
    static native int cuCtxGetApiVersion(long ctx, long pversion);
    static native int cuCtxGetLimit(long pvalue, int limit);
    static native int cuCtxSetLimit(int limit, long value);
    static native int cuCtxGetStreamPriorityRange(long least, long greatest);
    static native int cuDevicePrimaryCtxRetain(long pctx, int dev);
    static native int cuDevicePrimaryCtxRelease_v2(int dev);
    static native int cuDevicePrimaryCtxReset_v2(int dev);
    static native int cuDevicePrimaryCtxGetState(int dev, long flags, long active);
    static native int cuDevicePrimaryCtxSetFlags_v2(int dev, int flags);
    static native int cuModuleLoadData(long pmodule, long image);
    static native int cuModuleUnload(long module);
    static native int cuModuleGetFunction(long pfunc, long module, String name);
    static native int cuModuleGetGlobal_v2(long pdptr, long pbytes, long module, String name);
    static native int cuMemAlloc_v2(long pdptr, long bytes);
    static native int cuMemAllocPitch_v2(long pdptr, long ppitch, long width, long height, int elementSize);
    static native int cuMemFree_v2(long dptr);
    static native int cuMemGetInfo_v2(long pfree, long ptotal);
    static native int cuMemGetAddressRange_v2(long pbase, long psize, long dptr);
    static native int cuMemcpyHtoD_v2(long dst, long src, long bytes);
    static native int cuMemcpyDtoH_v2(long dst, long src, long bytes);
    static native int cuMemcpyDtoD_v2(long dst, long src, long bytes);
    static native int cuMemcpyHtoDAsync_v2(long dst, long src, long bytes, long stream);
    static native int cuMemcpyDtoHAsync_v2(long dst, long src, long bytes, long stream);
    static native int cuMemcpyDtoDAsync_v2(long dst, long src, long bytes, long stream);
    static native int cuMemsetD8_v2(long dst, byte value, long n);
    static native int cuMemsetD16_v2(long dst, short value, long n);
    static native int cuMemsetD32_v2(long dst, int value, long n);
    static native int cuMemsetD8Async(long dst, byte value, long n, long stream);
    static native int cuMemsetD16Async(long dst, short value, long n, long stream);
    static native int cuMemsetD32Async(long dst, int value, long n, long stream);
    static native int cuMemHostRegister_v2(long p, long bytes, int flags);
    static native int cuMemHostUnregister(long p);
    static native int cuMemHostGetDevicePointer_v2(long pdptr, long p, int flags);
    static native int cuStreamCreateWithPriority(long pstream, int flags, int priority);
    static native int cuStreamDestroy_v2(long stream);
    static native int cuStreamSynchronize(long stream);
    static native int cuStreamQuery(long stream);
    static native int cuStreamWaitEvent(long stream, long event, int flags);
    static native int cuEventCreate(long pevent, int flags);
    static native int cuEventDestroy_v2(long event);
    static native int cuEventRecordWithFlags(long event, long stream, int flags);
    static native int cuEventSynchronize(long event);
    static native int cuEventQuery(long event);
    static native int cuEventElapsedTime(long pms, long start, long end);
    static native int cuFuncGetAttribute(long pi, int attrib, long func);
    static native int cuFuncSetAttribute(long func, int attrib, int value);
    static native int cuFuncSetCacheConfig(long func, int config);
    static native int cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(long pn, long func, int blockSize,
                                                                           long smem, int flags);
    static native int cuLaunchKernel(long f, int gx, int gy, int gz, int bx, int by, int bz, int smem, long stream,
                                     long kernelParams, long extra);

    // ---- strided copies (issue 12) ----
    static native int cuMemcpy3D_v2(long pCopy);
    static native int cuMemcpy3DAsync_v2(long pCopy, long stream);
    static native int cuMemsetD2D8_v2(long dst, long pitch, byte value, long width, long height);
    static native int cuMemsetD2D16_v2(long dst, long pitch, short value, long width, long height);
    static native int cuMemsetD2D32_v2(long dst, long pitch, int value, long width, long height);
    static native int cuMemsetD2D8Async(long dst, long pitch, byte value, long width, long height, long stream);
    static native int cuMemsetD2D16Async(long dst, long pitch, short value, long width, long height, long stream);
    static native int cuMemsetD2D32Async(long dst, long pitch, int value, long width, long height, long stream);

    // ---- pools (issue 12) ----
    static native int cuMemAllocAsync(long pdptr, long bytes, long stream);
    static native int cuMemAllocFromPoolAsync(long pdptr, long bytes, long pool, long stream);
    static native int cuMemFreeAsync(long dptr, long stream);
    static native int cuDeviceGetDefaultMemPool(long ppool, int dev);
    static native int cuDeviceGetMemPool(long ppool, int dev);
    static native int cuMemPoolSetAttribute(long pool, int attr, long pvalue);
    static native int cuMemPoolGetAttribute(long pool, int attr, long pvalue);
    static native int cuMemPoolTrimTo(long pool, long minBytesToKeep);

    // ---- arrays and textures (issue 12) ----
    static native int cuArray3DCreate_v2(long pHandle, long pDesc);
    static native int cuArrayDestroy(long array);
    static native int cuArrayGetDescriptor_v2(long pDesc, long array);
    static native int cuArray3DGetDescriptor_v2(long pDesc, long array);
    static native int cuArrayGetMemoryRequirements(long pReq, long array, int device);
    static native int cuArrayGetPlane(long pPlane, long array, int plane);
    static native int cuMipmappedArrayCreate(long pHandle, long pDesc, int levels);
    static native int cuMipmappedArrayDestroy(long mipmap);
    static native int cuMipmappedArrayGetLevel(long pLevel, long mipmap, int level);
    static native int cuMipmappedArrayGetMemoryRequirements(long pReq, long mipmap, int device);
    static native int cuDeviceGetTexture1DLinearMaxWidth(long pWidth, int format, int channels, int device);
    static native int cuTexObjectCreate(long pTex, long pResDesc, long pTexDesc, long pViewDesc);
    static native int cuTexObjectDestroy(long tex);
    static native int cuTexObjectGetResourceDesc(long pResDesc, long tex);
    static native int cuTexObjectGetTextureDesc(long pTexDesc, long tex);
    static native int cuTexObjectGetResourceViewDesc(long pViewDesc, long tex);
    static native int cuSurfObjectCreate(long pSurf, long pResDesc);
    static native int cuSurfObjectDestroy(long surf);
    static native int cuSurfObjectGetResourceDesc(long pResDesc, long surf);

    // ---- JIT logs of module loads (issue 12) ----
    static native int cuModuleLoadDataEx(long pmodule, long image, int numOptions, long options, long optionValues);
}
