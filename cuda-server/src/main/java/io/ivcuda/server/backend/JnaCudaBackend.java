package io.ivcuda.server.backend;

import static io.ivcuda.server.backend.CudaDriver.*;

import io.ivcuda.server.core.CuResult;
import org.agrona.UnsafeApi;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The real driver. When libcuda.so.1 cannot be loaded the server still runs: every call answers
 * CUDA_ERROR_NO_DEVICE (and cuInit says why in the log), so a guest sees a clean error.
 */
public final class JnaCudaBackend implements CudaBackend {
    private static final Logger LOG = LogManager.getLogger(JnaCudaBackend.class);

    private final boolean loaded;
    private final boolean optional;

    public JnaCudaBackend() {
        boolean ok;
        try {
            Class.forName(CudaDriver.class.getName(), true, CudaDriver.class.getClassLoader());
            ok = true;
        } catch (Throwable e) {
            LOG.error("libcuda.so.1 cannot be loaded ({}): guests get CUDA_ERROR_NO_DEVICE", e.toString());
            ok = false;
        }
        loaded = ok;
        boolean more = false;
        if (ok) {
            try {
                Class.forName(CudaDriverOptional.class.getName(), true, CudaDriverOptional.class.getClassLoader());
                more = true;
            } catch (Throwable e) {
                LOG.error("libcuda.so.1 lacks cuCtxCreate_v2 or cuFuncGetParamInfo ({}): cuCtxCreate and kernel "
                        + "launches answer CUDA_ERROR_NOT_SUPPORTED — the host driver is older than CUDA 12.4", e.toString());
            }
        }
        optional = more;
    }

    public boolean loaded() {
        return loaded;
    }

    @Override
    public String describe() {
        return loaded ? "cuda (libcuda.so.1)" : "cuda (libcuda.so.1 not loadable)";
    }

    @Override
    public Out newOut() {
        long scratch = UnsafeApi.allocateMemory(Out.SCRATCH_SIZE);
        return new Out(scratch);
    }

    private static long s(Out o, int slot) {
        return o.scratch + 8L * slot;
    }

    @Override
    public int init(int flags) {
        return loaded ? cuInit(flags) : CuResult.NO_DEVICE;
    }

    @Override
    public int driverGetVersion(Out o) {
        if (!loaded) {
            o.i0 = 0;
            return CuResult.NO_DEVICE;
        }
        int r = cuDriverGetVersion(s(o, 0));
        o.i0 = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int deviceGet(Out o, int ordinal) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuDeviceGet(s(o, 0), ordinal);
        o.i0 = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int deviceGetCount(Out o) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuDeviceGetCount(s(o, 0));
        o.i0 = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int deviceGetName(long dst, int capacity, int device) {
        return loaded ? cuDeviceGetName(dst, capacity, device) : CuResult.NO_DEVICE;
    }

    @Override
    public int deviceGetUuid(long dst16, int device) {
        return loaded ? cuDeviceGetUuid_v2(dst16, device) : CuResult.NO_DEVICE;
    }

    @Override
    public int deviceGetPciBusId(long dst, int capacity, int device) {
        return loaded ? cuDeviceGetPCIBusId(dst, capacity, device) : CuResult.NO_DEVICE;
    }

    @Override
    public int deviceTotalMem(Out o, int device) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuDeviceTotalMem_v2(s(o, 0), device);
        o.l0 = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int deviceGetAttribute(Out o, int attribute, int device) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuDeviceGetAttribute(s(o, 0), attribute, device);
        o.i0 = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int ctxCreate(Out o, int flags, int device) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        if (!optional) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverOptional.cuCtxCreate_v2(s(o, 0), flags, device);
        o.l0 = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int ctxDestroy(long ctx) {
        return loaded ? cuCtxDestroy_v2(ctx) : CuResult.NO_DEVICE;
    }

    @Override
    public int ctxGetCurrent(Out o) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuCtxGetCurrent(s(o, 0));
        o.l0 = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int ctxSetCurrent(long ctx) {
        return loaded ? cuCtxSetCurrent(ctx) : CuResult.NO_DEVICE;
    }

    @Override
    public int ctxPushCurrent(long ctx) {
        return loaded ? cuCtxPushCurrent_v2(ctx) : CuResult.NO_DEVICE;
    }

    @Override
    public int ctxPopCurrent(Out o) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuCtxPopCurrent_v2(s(o, 0));
        o.l0 = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int ctxGetDevice(Out o) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuCtxGetDevice(s(o, 0));
        o.i0 = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int ctxSynchronize() {
        return loaded ? cuCtxSynchronize() : CuResult.NO_DEVICE;
    }

    @Override
    public int ctxGetFlags(Out o) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuCtxGetFlags(s(o, 0));
        o.i0 = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int ctxGetApiVersion(Out o, long ctx) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuCtxGetApiVersion(ctx, s(o, 0));
        o.i0 = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int ctxGetLimit(Out o, int limit) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuCtxGetLimit(s(o, 0), limit);
        o.l0 = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int ctxSetLimit(int limit, long value) {
        return loaded ? cuCtxSetLimit(limit, value) : CuResult.NO_DEVICE;
    }

    @Override
    public int ctxGetStreamPriorityRange(Out o) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuCtxGetStreamPriorityRange(s(o, 0), s(o, 1));
        o.i0 = UnsafeApi.getInt(s(o, 0));
        o.i1 = UnsafeApi.getInt(s(o, 1));
        return r;
    }

    @Override
    public int primaryCtxRetain(Out o, int device) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuDevicePrimaryCtxRetain(s(o, 0), device);
        o.l0 = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int primaryCtxRelease(int device) {
        return loaded ? cuDevicePrimaryCtxRelease_v2(device) : CuResult.NO_DEVICE;
    }

    @Override
    public int primaryCtxReset(int device) {
        return loaded ? cuDevicePrimaryCtxReset_v2(device) : CuResult.NO_DEVICE;
    }

    @Override
    public int primaryCtxGetState(Out o, int device) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuDevicePrimaryCtxGetState(device, s(o, 0), s(o, 1));
        o.i0 = UnsafeApi.getInt(s(o, 0));
        o.i1 = UnsafeApi.getInt(s(o, 1));
        return r;
    }

    @Override
    public int primaryCtxSetFlags(int device, int flags) {
        return loaded ? cuDevicePrimaryCtxSetFlags_v2(device, flags) : CuResult.NO_DEVICE;
    }

    @Override
    public int moduleLoadData(Out o, long image) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuModuleLoadData(s(o, 0), image);
        o.l0 = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int moduleUnload(long module) {
        return loaded ? cuModuleUnload(module) : CuResult.NO_DEVICE;
    }

    @Override
    public int moduleGetFunction(Out o, long module, String name) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuModuleGetFunction(s(o, 0), module, name);
        o.l0 = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int moduleGetGlobal(Out o, long module, String name) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuModuleGetGlobal_v2(s(o, 0), s(o, 1), module, name);
        o.l0 = UnsafeApi.getLong(s(o, 0));
        o.l1 = UnsafeApi.getLong(s(o, 1));
        return r;
    }

    @Override
    public int memAlloc(Out o, long bytes) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuMemAlloc_v2(s(o, 0), bytes);
        o.l0 = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int memAllocPitch(Out o, long widthBytes, long height, int elementSize) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuMemAllocPitch_v2(s(o, 0), s(o, 1), widthBytes, height, elementSize);
        o.l0 = UnsafeApi.getLong(s(o, 0));
        o.l1 = UnsafeApi.getLong(s(o, 1));
        return r;
    }

    @Override
    public int memFree(long dptr) {
        return loaded ? cuMemFree_v2(dptr) : CuResult.NO_DEVICE;
    }

    @Override
    public int memGetInfo(Out o) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuMemGetInfo_v2(s(o, 0), s(o, 1));
        o.l0 = UnsafeApi.getLong(s(o, 0));
        o.l1 = UnsafeApi.getLong(s(o, 1));
        return r;
    }

    @Override
    public int memGetAddressRange(Out o, long dptr) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuMemGetAddressRange_v2(s(o, 0), s(o, 1), dptr);
        o.l0 = UnsafeApi.getLong(s(o, 0));
        o.l1 = UnsafeApi.getLong(s(o, 1));
        return r;
    }

    @Override
    public int memcpyHtoD(long dst, long srcHost, long bytes, long stream, boolean async) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        return async ? cuMemcpyHtoDAsync_v2(dst, srcHost, bytes, stream) : cuMemcpyHtoD_v2(dst, srcHost, bytes);
    }

    @Override
    public int memcpyDtoH(long dstHost, long src, long bytes, long stream, boolean async) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        return async ? cuMemcpyDtoHAsync_v2(dstHost, src, bytes, stream) : cuMemcpyDtoH_v2(dstHost, src, bytes);
    }

    @Override
    public int memcpyDtoD(long dst, long src, long bytes, long stream, boolean async) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        return async ? cuMemcpyDtoDAsync_v2(dst, src, bytes, stream) : cuMemcpyDtoD_v2(dst, src, bytes);
    }

    @Override
    public int memset(int width, long dst, int value, long count, long stream, boolean async) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        return switch (width) {
            case 1 -> async ? cuMemsetD8Async(dst, (byte) value, count, stream) : cuMemsetD8_v2(dst, (byte) value, count);
            case 2 -> async ? cuMemsetD16Async(dst, (short) value, count, stream) : cuMemsetD16_v2(dst, (short) value, count);
            case 4 -> async ? cuMemsetD32Async(dst, value, count, stream) : cuMemsetD32_v2(dst, value, count);
            default -> CuResult.INVALID_VALUE;
        };
    }

    @Override
    public int memHostRegister(long address, long bytes, int flags) {
        return loaded ? cuMemHostRegister_v2(address, bytes, flags) : CuResult.NO_DEVICE;
    }

    @Override
    public int memHostUnregister(long address) {
        return loaded ? cuMemHostUnregister(address) : CuResult.NO_DEVICE;
    }

    @Override
    public int memHostGetDevicePointer(Out o, long address) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuMemHostGetDevicePointer_v2(s(o, 0), address, 0);
        o.l0 = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int streamCreate(Out o, int flags, int priority) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuStreamCreateWithPriority(s(o, 0), flags, priority);
        o.l0 = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int streamDestroy(long stream) {
        return loaded ? cuStreamDestroy_v2(stream) : CuResult.NO_DEVICE;
    }

    @Override
    public int streamSynchronize(long stream) {
        return loaded ? cuStreamSynchronize(stream) : CuResult.NO_DEVICE;
    }

    @Override
    public int streamQuery(long stream) {
        return loaded ? cuStreamQuery(stream) : CuResult.NO_DEVICE;
    }

    @Override
    public int streamWaitEvent(long stream, long event, int flags) {
        return loaded ? cuStreamWaitEvent(stream, event, flags) : CuResult.NO_DEVICE;
    }

    @Override
    public int eventCreate(Out o, int flags) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuEventCreate(s(o, 0), flags);
        o.l0 = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int eventDestroy(long event) {
        return loaded ? cuEventDestroy_v2(event) : CuResult.NO_DEVICE;
    }

    @Override
    public int eventRecord(long event, long stream, int flags) {
        return loaded ? cuEventRecordWithFlags(event, stream, flags) : CuResult.NO_DEVICE;
    }

    @Override
    public int eventSynchronize(long event) {
        return loaded ? cuEventSynchronize(event) : CuResult.NO_DEVICE;
    }

    @Override
    public int eventQuery(long event) {
        return loaded ? cuEventQuery(event) : CuResult.NO_DEVICE;
    }

    @Override
    public int eventElapsedTime(Out o, long start, long end) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuEventElapsedTime(s(o, 0), start, end);
        o.f0 = UnsafeApi.getFloat(s(o, 0));
        return r;
    }

    @Override
    public int funcGetAttribute(Out o, int attribute, long function) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuFuncGetAttribute(s(o, 0), attribute, function);
        o.i0 = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int funcSetAttribute(long function, int attribute, int value) {
        return loaded ? cuFuncSetAttribute(function, attribute, value) : CuResult.NO_DEVICE;
    }

    @Override
    public int funcSetCacheConfig(long function, int config) {
        return loaded ? cuFuncSetCacheConfig(function, config) : CuResult.NO_DEVICE;
    }

    @Override
    public int funcGetParamInfo(Out o, long function, long index) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        if (!optional) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverOptional.cuFuncGetParamInfo(function, index, s(o, 0), s(o, 1));
        o.l0 = UnsafeApi.getLong(s(o, 0));
        o.l1 = UnsafeApi.getLong(s(o, 1));
        return r;
    }

    @Override
    public int occupancyMaxActiveBlocksPerMultiprocessor(Out o, long function, int blockSize, long dynamicSmem, int flags) {
        if (!loaded) {
            return CuResult.NO_DEVICE;
        }
        int r = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(s(o, 0), function, blockSize, dynamicSmem, flags);
        o.i0 = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int launchKernel(long function, int gx, int gy, int gz, int bx, int by, int bz, int sharedMem, long stream,
                            long kernelParams) {
        return loaded ? cuLaunchKernel(function, gx, gy, gz, bx, by, bz, sharedMem, stream, kernelParams, 0)
                : CuResult.NO_DEVICE;
    }

    private DriverExportTables exportTables;

    /** Fetched on the first guest that needs one (a runtime-API program), not at start. */
    private synchronized DriverExportTables exportTables() {
        if (exportTables == null) {
            long scratch = UnsafeApi.allocateMemory(64);
            try {
                exportTables = new DriverExportTables(scratch);
            } finally {
                UnsafeApi.freeMemory(scratch);
            }
        }
        return exportTables;
    }

    @Override
    public int exportIntegrityCheck(Out o, int version, long unixSeconds) {
        return loaded ? exportTables().integrityCheck(o, version, unixSeconds) : CuResult.NO_DEVICE;
    }
}
