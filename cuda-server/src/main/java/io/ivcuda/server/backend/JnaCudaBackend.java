package io.ivcuda.server.backend;

import static io.ivcuda.server.backend.CudaDriver.*;

import org.agrona.UnsafeApi;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The real driver, through JNA. Chosen at start by {@link #load()}: when libcuda.so.1 cannot be
 * loaded the server runs on {@link NoDriver} instead, so every method here may call the driver.
 */
public final class JnaCudaBackend implements CudaBackend {
    private static final Logger LOG = LogManager.getLogger(JnaCudaBackend.class);

    private final boolean optional;

    private JnaCudaBackend(boolean optional) {
        this.optional = optional;
    }

    /** The driver's backend, or {@link NoDriver} (saying why) when libcuda.so.1 cannot be loaded. */
    public static CudaBackend load() {
        try {
            Class.forName(CudaDriver.class.getName(), true, CudaDriver.class.getClassLoader());
        } catch (Throwable e) {
            LOG.error("libcuda.so.1 cannot be loaded ({}): guests get CUDA_ERROR_NO_DEVICE", e.toString());
            return NoDriver.create(e.toString());
        }
        boolean more = false;
        try {
            Class.forName(CudaDriverOptional.class.getName(), true, CudaDriverOptional.class.getClassLoader());
            more = true;
        } catch (Throwable e) {
            LOG.error("libcuda.so.1 lacks cuCtxCreate_v2 or cuFuncGetParamInfo ({}): cuCtxCreate and kernel "
                    + "launches answer CUDA_ERROR_NOT_SUPPORTED — the host driver is older than CUDA 12.4", e.toString());
        }
        return new JnaCudaBackend(more);
    }

    @Override
    public String describe() {
        return "cuda (libcuda.so.1)";
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
        return cuInit(flags);
    }

    @Override
    public int driverGetVersion(Out o) {
        int r = cuDriverGetVersion(s(o, 0));
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int deviceGet(Out o, int ordinal) {
        int r = cuDeviceGet(s(o, 0), ordinal);
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int deviceGetCount(Out o) {
        int r = cuDeviceGetCount(s(o, 0));
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int deviceGetName(long dst, int capacity, int device) {
        return cuDeviceGetName(dst, capacity, device);
    }

    @Override
    public int deviceGetUuid(long dst16, int device) {
        return cuDeviceGetUuid_v2(dst16, device);
    }

    @Override
    public int deviceGetPciBusId(long dst, int capacity, int device) {
        return cuDeviceGetPCIBusId(dst, capacity, device);
    }

    @Override
    public int deviceTotalMem(Out o, int device) {
        int r = cuDeviceTotalMem_v2(s(o, 0), device);
        o.bytes = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int deviceGetAttribute(Out o, int attribute, int device) {
        int r = cuDeviceGetAttribute(s(o, 0), attribute, device);
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int ctxCreate(Out o, int flags, int device) {
        if (!optional) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverOptional.cuCtxCreate_v2(s(o, 0), flags, device);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int ctxDestroy(long ctx) {
        return cuCtxDestroy_v2(ctx);
    }

    @Override
    public int ctxGetCurrent(Out o) {
        int r = cuCtxGetCurrent(s(o, 0));
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int ctxSetCurrent(long ctx) {
        return cuCtxSetCurrent(ctx);
    }

    @Override
    public int ctxPushCurrent(long ctx) {
        return cuCtxPushCurrent_v2(ctx);
    }

    @Override
    public int ctxPopCurrent(Out o) {
        int r = cuCtxPopCurrent_v2(s(o, 0));
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int ctxGetDevice(Out o) {
        int r = cuCtxGetDevice(s(o, 0));
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int ctxSynchronize() {
        return cuCtxSynchronize();
    }

    @Override
    public int ctxGetFlags(Out o) {
        int r = cuCtxGetFlags(s(o, 0));
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int ctxGetApiVersion(Out o, long ctx) {
        int r = cuCtxGetApiVersion(ctx, s(o, 0));
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int ctxGetLimit(Out o, int limit) {
        int r = cuCtxGetLimit(s(o, 0), limit);
        o.bytes = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int ctxSetLimit(int limit, long value) {
        return cuCtxSetLimit(limit, value);
    }

    @Override
    public int ctxGetStreamPriorityRange(Out o) {
        int r = cuCtxGetStreamPriorityRange(s(o, 0), s(o, 1));
        o.value = UnsafeApi.getInt(s(o, 0));
        o.greatestPriority = UnsafeApi.getInt(s(o, 1));
        return r;
    }

    @Override
    public int primaryCtxRetain(Out o, int device) {
        int r = cuDevicePrimaryCtxRetain(s(o, 0), device);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int primaryCtxRelease(int device) {
        return cuDevicePrimaryCtxRelease_v2(device);
    }

    @Override
    public int primaryCtxReset(int device) {
        return cuDevicePrimaryCtxReset_v2(device);
    }

    @Override
    public int primaryCtxGetState(Out o, int device) {
        int r = cuDevicePrimaryCtxGetState(device, s(o, 0), s(o, 1));
        o.value = UnsafeApi.getInt(s(o, 0));
        o.active = UnsafeApi.getInt(s(o, 1));
        return r;
    }

    @Override
    public int primaryCtxSetFlags(int device, int flags) {
        return cuDevicePrimaryCtxSetFlags_v2(device, flags);
    }

    @Override
    public int moduleLoadData(Out o, long image) {
        int r = cuModuleLoadData(s(o, 0), image);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int moduleUnload(long module) {
        return cuModuleUnload(module);
    }

    @Override
    public int moduleGetFunction(Out o, long module, String name) {
        int r = cuModuleGetFunction(s(o, 0), module, name);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int moduleGetGlobal(Out o, long module, String name) {
        int r = cuModuleGetGlobal_v2(s(o, 0), s(o, 1), module, name);
        o.address = UnsafeApi.getLong(s(o, 0));
        o.bytes = UnsafeApi.getLong(s(o, 1));
        return r;
    }

    @Override
    public int memAlloc(Out o, long bytes) {
        int r = cuMemAlloc_v2(s(o, 0), bytes);
        o.address = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int memAllocPitch(Out o, long widthBytes, long height, int elementSize) {
        int r = cuMemAllocPitch_v2(s(o, 0), s(o, 1), widthBytes, height, elementSize);
        o.address = UnsafeApi.getLong(s(o, 0));
        o.bytes = UnsafeApi.getLong(s(o, 1));
        return r;
    }

    @Override
    public int memFree(long dptr) {
        return cuMemFree_v2(dptr);
    }

    @Override
    public int memGetInfo(Out o) {
        int r = cuMemGetInfo_v2(s(o, 0), s(o, 1));
        o.bytes = UnsafeApi.getLong(s(o, 0));
        o.totalBytes = UnsafeApi.getLong(s(o, 1));
        return r;
    }

    @Override
    public int memGetAddressRange(Out o, long dptr) {
        int r = cuMemGetAddressRange_v2(s(o, 0), s(o, 1), dptr);
        o.address = UnsafeApi.getLong(s(o, 0));
        o.bytes = UnsafeApi.getLong(s(o, 1));
        return r;
    }

    @Override
    public int memcpyHtoD(long dst, long srcHost, long bytes, long stream, boolean async) {
        return async ? cuMemcpyHtoDAsync_v2(dst, srcHost, bytes, stream) : cuMemcpyHtoD_v2(dst, srcHost, bytes);
    }

    @Override
    public int memcpyDtoH(long dstHost, long src, long bytes, long stream, boolean async) {
        return async ? cuMemcpyDtoHAsync_v2(dstHost, src, bytes, stream) : cuMemcpyDtoH_v2(dstHost, src, bytes);
    }

    @Override
    public int memcpyDtoD(long dst, long src, long bytes, long stream, boolean async) {
        return async ? cuMemcpyDtoDAsync_v2(dst, src, bytes, stream) : cuMemcpyDtoD_v2(dst, src, bytes);
    }

    @Override
    public int memset(int width, long dst, int value, long count, long stream, boolean async) {
        return switch (width) {
            case 1 -> async ? cuMemsetD8Async(dst, (byte) value, count, stream) : cuMemsetD8_v2(dst, (byte) value, count);
            case 2 -> async ? cuMemsetD16Async(dst, (short) value, count, stream) : cuMemsetD16_v2(dst, (short) value, count);
            case 4 -> async ? cuMemsetD32Async(dst, value, count, stream) : cuMemsetD32_v2(dst, value, count);
            default -> CuResult.INVALID_VALUE;
        };
    }

    @Override
    public int memHostRegister(long address, long bytes, int flags) {
        return cuMemHostRegister_v2(address, bytes, flags);
    }

    @Override
    public int memHostUnregister(long address) {
        return cuMemHostUnregister(address);
    }

    @Override
    public int memHostGetDevicePointer(Out o, long address) {
        int r = cuMemHostGetDevicePointer_v2(s(o, 0), address, 0);
        o.address = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int streamCreate(Out o, int flags, int priority) {
        int r = cuStreamCreateWithPriority(s(o, 0), flags, priority);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int streamDestroy(long stream) {
        return cuStreamDestroy_v2(stream);
    }

    @Override
    public int streamSynchronize(long stream) {
        return cuStreamSynchronize(stream);
    }

    @Override
    public int streamQuery(long stream) {
        return cuStreamQuery(stream);
    }

    @Override
    public int streamWaitEvent(long stream, long event, int flags) {
        return cuStreamWaitEvent(stream, event, flags);
    }

    @Override
    public int eventCreate(Out o, int flags) {
        int r = cuEventCreate(s(o, 0), flags);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int eventDestroy(long event) {
        return cuEventDestroy_v2(event);
    }

    @Override
    public int eventRecord(long event, long stream, int flags) {
        return cuEventRecordWithFlags(event, stream, flags);
    }

    @Override
    public int eventSynchronize(long event) {
        return cuEventSynchronize(event);
    }

    @Override
    public int eventQuery(long event) {
        return cuEventQuery(event);
    }

    @Override
    public int eventElapsedTime(Out o, long start, long end) {
        int r = cuEventElapsedTime(s(o, 0), start, end);
        o.milliseconds = UnsafeApi.getFloat(s(o, 0));
        return r;
    }

    @Override
    public int funcGetAttribute(Out o, int attribute, long function) {
        int r = cuFuncGetAttribute(s(o, 0), attribute, function);
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int funcSetAttribute(long function, int attribute, int value) {
        return cuFuncSetAttribute(function, attribute, value);
    }

    @Override
    public int funcSetCacheConfig(long function, int config) {
        return cuFuncSetCacheConfig(function, config);
    }

    @Override
    public int funcGetParamInfo(Out o, long function, long index) {
        if (!optional) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverOptional.cuFuncGetParamInfo(function, index, s(o, 0), s(o, 1));
        o.offset = UnsafeApi.getLong(s(o, 0));
        o.bytes = UnsafeApi.getLong(s(o, 1));
        return r;
    }

    @Override
    public int occupancyMaxActiveBlocksPerMultiprocessor(Out o, long function, int blockSize, long dynamicSmem, int flags) {
        int r = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(s(o, 0), function, blockSize, dynamicSmem, flags);
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int launchKernel(long function, int gx, int gy, int gz, int bx, int by, int bz, int sharedMem, long stream,
                            long kernelParams) {
        return cuLaunchKernel(function, gx, gy, gz, bx, by, bz, sharedMem, stream, kernelParams, 0);
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
        return exportTables().integrityCheck(o, version, unixSeconds);
    }

    /** CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
    private static final int MULTIPROCESSOR_COUNT = 16;

    @Override
    public int smTopology(Out o) {
        int r = cuCtxGetDevice(s(o, 0));
        if (r != CuResult.SUCCESS) {
            return r;
        }
        r = cuDeviceGetAttribute(s(o, 8), MULTIPROCESSOR_COUNT, UnsafeApi.getInt(s(o, 0)));
        if (r != CuResult.SUCCESS) {
            return r;
        }
        int tpcs = (UnsafeApi.getInt(s(o, 8)) + 1) / 2; // an entry per TPC, two SMs each
        if (tpcs <= 0 || CudaBackend.SM_TOPOLOGY_OFFSET + 2L * tpcs > Out.SCRATCH_SIZE) {
            return CuResult.NOT_SUPPORTED;
        }
        o.value = tpcs;
        return exportTables().smTopology(o.scratch, tpcs);
    }

    // ---- kernels (issue 12) ----

    /** Whether {@link CudaDriverKernels} registered: the host driver has CUDA 12.5's library and kernel calls. */
    private static final boolean KERNELS = kernelsLoadable();

    private static boolean kernelsLoadable() {
        try {
            Class.forName(CudaDriverKernels.class.getName(), true, CudaDriverKernels.class.getClassLoader());
            return true;
        } catch (Throwable e) {
            LOG.error("libcuda.so.1 lacks the CUDA 12 library/kernel calls ({}): cuLibrary*, cuKernel* and the "
                    + "runtime's launches answer CUDA_ERROR_NOT_SUPPORTED", e.toString());
            return false;
        }
    }

    @Override
    public int libraryLoadData(Out o, long image, long options, long values, int count) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuLibraryLoadData(s(o, 0), image, count == 0 ? 0 : options, count == 0 ? 0 : values,
                count, 0, 0, 0);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int libraryUnload(long library) {
        return KERNELS ? CudaDriverKernels.cuLibraryUnload(library) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int libraryGetKernel(Out o, long library, String name) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuLibraryGetKernel(s(o, 0), library, name);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int libraryGetModule(Out o, long library) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuLibraryGetModule(s(o, 0), library);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int libraryGetGlobal(Out o, long library, String name) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuLibraryGetGlobal(s(o, 0), s(o, 1), library, name);
        o.address = UnsafeApi.getLong(s(o, 0));
        o.bytes = UnsafeApi.getLong(s(o, 1));
        return r;
    }

    @Override
    public int libraryGetKernelCount(Out o, long library) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuLibraryGetKernelCount(s(o, 0), library);
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int libraryEnumerateKernels(long dst, int count, long library) {
        return KERNELS ? CudaDriverKernels.cuLibraryEnumerateKernels(dst, count, library) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int moduleGetFunctionCount(Out o, long module) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuModuleGetFunctionCount(s(o, 0), module);
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int moduleEnumerateFunctions(long dst, int count, long module) {
        return KERNELS ? CudaDriverKernels.cuModuleEnumerateFunctions(dst, count, module) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int kernelGetFunction(Out o, long kernel) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuKernelGetFunction(s(o, 0), kernel);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int kernelGetAttribute(Out o, int attribute, long kernel, int device) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuKernelGetAttribute(s(o, 0), attribute, kernel, device);
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int kernelSetAttribute(int attribute, int value, long kernel, int device) {
        return KERNELS ? CudaDriverKernels.cuKernelSetAttribute(attribute, value, kernel, device) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int kernelSetCacheConfig(long kernel, int config, int device) {
        return KERNELS ? CudaDriverKernels.cuKernelSetCacheConfig(kernel, config, device) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int kernelGetParamInfo(Out o, long kernel, long index) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuKernelGetParamInfo(kernel, index, s(o, 0), s(o, 1));
        o.offset = UnsafeApi.getLong(s(o, 0));
        o.bytes = UnsafeApi.getLong(s(o, 1));
        return r;
    }

    @Override
    public int kernelGetName(Out o, long kernel) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuKernelGetName(s(o, 0), kernel);
        o.address = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int funcGetName(Out o, long function) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuFuncGetName(s(o, 0), function);
        o.address = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int launchKernelEx(long config, long function, long kernelParams) {
        return KERNELS ? CudaDriverKernels.cuLaunchKernelEx(config, function, kernelParams, 0) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int occupancyMaxActiveClusters(Out o, long function, long config) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuOccupancyMaxActiveClusters(s(o, 0), function, config);
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int occupancyMaxPotentialClusterSize(Out o, long function, long config) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuOccupancyMaxPotentialClusterSize(s(o, 0), function, config);
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int occupancyAvailableDynamicSMemPerBlock(Out o, long function, int numBlocks, int blockSize) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuOccupancyAvailableDynamicSMemPerBlock(s(o, 0), function, numBlocks, blockSize);
        o.bytes = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int ctxGetId(Out o, long ctx) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuCtxGetId(ctx, s(o, 0));
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int ctxGetCacheConfig(Out o) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuCtxGetCacheConfig(s(o, 0));
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int ctxSetCacheConfig(int config) {
        return KERNELS ? CudaDriverKernels.cuCtxSetCacheConfig(config) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int ctxGetSharedMemConfig(Out o) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuCtxGetSharedMemConfig(s(o, 0));
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int ctxSetSharedMemConfig(int config) {
        return KERNELS ? CudaDriverKernels.cuCtxSetSharedMemConfig(config) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int funcSetSharedMemConfig(long function, int config) {
        return KERNELS ? CudaDriverKernels.cuFuncSetSharedMemConfig(function, config) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int ctxResetPersistingL2Cache() {
        return KERNELS ? CudaDriverKernels.cuCtxResetPersistingL2Cache() : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int ctxRecordEvent(long ctx, long event) {
        return KERNELS ? CudaDriverKernels.cuCtxRecordEvent(ctx, event) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int ctxWaitEvent(long ctx, long event) {
        return KERNELS ? CudaDriverKernels.cuCtxWaitEvent(ctx, event) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int deviceCanAccessPeer(Out o, int device, int peer) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuDeviceCanAccessPeer(s(o, 0), device, peer);
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int deviceGetP2PAttribute(Out o, int attribute, int src, int dst) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuDeviceGetP2PAttribute(s(o, 0), attribute, src, dst);
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int ctxEnablePeerAccess(long peer, int flags) {
        return KERNELS ? CudaDriverKernels.cuCtxEnablePeerAccess(peer, flags) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int ctxDisablePeerAccess(long peer) {
        return KERNELS ? CudaDriverKernels.cuCtxDisablePeerAccess(peer) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int linkCreate(Out o, int count, long options, long values) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuLinkCreate_v2(count, count == 0 ? 0 : options, count == 0 ? 0 : values, s(o, 0));
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int linkAddData(long state, int type, long data, long size, String name, int count, long options, long values) {
        return KERNELS ? CudaDriverKernels.cuLinkAddData_v2(state, type, data, size, name, count, count == 0 ? 0 : options,
                count == 0 ? 0 : values) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int linkComplete(Out o, long state) {
        if (!KERNELS) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverKernels.cuLinkComplete(state, s(o, 0), s(o, 1));
        o.address = UnsafeApi.getLong(s(o, 0));
        o.bytes = UnsafeApi.getLong(s(o, 1));
        return r;
    }

    @Override
    public int linkDestroy(long state) {
        return KERNELS ? CudaDriverKernels.cuLinkDestroy(state) : CuResult.NOT_SUPPORTED;
    }

    // ---- strided copies (issue 12) ----

    @Override
    public int memcpy3D(int dstType, long dst, long dstPitch, long dstHeight, int srcType, long src, long srcPitch,
                        long srcHeight, long width, long height, long depth, long stream, boolean async) {
        return Memcpy3D.call(dstType, dst, 0, 0, 0, dstPitch, dstHeight, srcType, src, 0, 0, 0, srcPitch, srcHeight,
                width, height, depth, p -> async ? cuMemcpy3DAsync_v2(p, stream) : cuMemcpy3D_v2(p));
    }

    @Override
    public int memset2D(int elementSize, long dst, long pitch, int value, long width, long height, long stream,
                        boolean async) {
        return switch (elementSize) {
            case 1 -> async ? cuMemsetD2D8Async(dst, pitch, (byte) value, width, height, stream)
                    : cuMemsetD2D8_v2(dst, pitch, (byte) value, width, height);
            case 2 -> async ? cuMemsetD2D16Async(dst, pitch, (short) value, width, height, stream)
                    : cuMemsetD2D16_v2(dst, pitch, (short) value, width, height);
            case 4 -> async ? cuMemsetD2D32Async(dst, pitch, value, width, height, stream)
                    : cuMemsetD2D32_v2(dst, pitch, value, width, height);
            default -> CuResult.INVALID_VALUE;
        };
    }

    // ---- pools (issue 12) ----

    /** CUmemPool_attribute 1-3 (the reuse policies) are ints, the others 64-bit. */
    private static boolean intAttribute(int attribute) {
        return attribute >= 1 && attribute <= 3;
    }

    @Override
    public int memAllocAsync(Out o, long bytes, long pool, long stream) {
        int r = pool == 0 ? cuMemAllocAsync(s(o, 0), bytes, stream) : cuMemAllocFromPoolAsync(s(o, 0), bytes, pool, stream);
        o.address = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int memFreeAsync(long dptr, long stream) {
        return cuMemFreeAsync(dptr, stream);
    }

    @Override
    public int deviceGetDefaultMemPool(Out o, int device) {
        int r = cuDeviceGetDefaultMemPool(s(o, 0), device);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int deviceGetMemPool(Out o, int device) {
        int r = cuDeviceGetMemPool(s(o, 0), device);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int memPoolSetAttribute(long pool, int attribute, long value) {
        try (NativeStruct v = NativeStruct.zeroed(8)) {
            if (intAttribute(attribute)) {
                UnsafeApi.putInt(v.address, (int) value);
            } else {
                UnsafeApi.putLong(v.address, value);
            }
            return cuMemPoolSetAttribute(pool, attribute, v.address);
        }
    }

    @Override
    public int memPoolGetAttribute(Out o, long pool, int attribute) {
        UnsafeApi.putLong(s(o, 0), 0);
        int r = cuMemPoolGetAttribute(pool, attribute, s(o, 0));
        o.bytes = intAttribute(attribute) ? UnsafeApi.getInt(s(o, 0)) : UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int memPoolTrimTo(long pool, long minBytesToKeep) {
        return cuMemPoolTrimTo(pool, minBytesToKeep);
    }

    // ---- graphs (issue 12) ----

    /** The driver's host-function entry point: one for the JVM's life, the key as userData. */
    public interface NativeHostFn extends com.sun.jna.Callback {
        void invoke(long userData);
    }

    /** cuStreamAddCallback's entry point: the stream's status goes to the key's sink. */
    public interface NativeStreamCallback extends com.sun.jna.Callback {
        void invoke(long stream, int status, long userData);
    }

    /**
     * CudaDriverGraphs, loaded on first use: a driver without one of its symbols answers
     * CUDA_ERROR_NOT_SUPPORTED to these calls only. The callbacks are kept here so that they are
     * never collected while the driver holds their addresses.
     */
    private static final class Graphs {
        static final boolean LOADED;
        static final NativeHostFn HOST_FN = new NativeHostFn() {
            @Override
            public void invoke(long userData) {
                HostCallbacks.fire(userData, CuResult.SUCCESS);
            }
        };
        static final NativeStreamCallback STREAM_CALLBACK = new NativeStreamCallback() {
            @Override
            public void invoke(long stream, int status, long userData) {
                HostCallbacks.fire(userData, status);
            }
        };
        static final long HOST_FN_POINTER;
        static final long STREAM_CALLBACK_POINTER;

        static {
            boolean loaded = false;
            long hostFn = 0;
            long streamCallback = 0;
            try {
                Class.forName(CudaDriverGraphs.class.getName(), true, CudaDriverGraphs.class.getClassLoader());
                hostFn = com.sun.jna.Pointer.nativeValue(com.sun.jna.CallbackReference.getFunctionPointer(HOST_FN));
                streamCallback = com.sun.jna.Pointer.nativeValue(
                        com.sun.jna.CallbackReference.getFunctionPointer(STREAM_CALLBACK));
                loaded = true;
            } catch (Throwable e) {
                LOG.error("libcuda.so.1 lacks a stream or graph function ({}): those calls answer "
                        + "CUDA_ERROR_NOT_SUPPORTED", e.toString());
            }
            LOADED = loaded;
            HOST_FN_POINTER = hostFn;
            STREAM_CALLBACK_POINTER = streamCallback;
        }
    }

    @Override
    public int streamGetFlags(Out o, long stream) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverGraphs.cuStreamGetFlags(stream, s(o, 0));
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int streamGetPriority(Out o, long stream) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverGraphs.cuStreamGetPriority(stream, s(o, 0));
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int streamGetCtx(Out o, long stream) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverGraphs.cuStreamGetCtx(stream, s(o, 0));
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int streamGetId(Out o, long stream) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverGraphs.cuStreamGetId(stream, s(o, 0));
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int streamGetAttribute(long stream, int attribute, long value) {
        return Graphs.LOADED ? CudaDriverGraphs.cuStreamGetAttribute(stream, attribute, value) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int streamSetAttribute(long stream, int attribute, long value) {
        return Graphs.LOADED ? CudaDriverGraphs.cuStreamSetAttribute(stream, attribute, value) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int streamCopyAttributes(long dst, long src) {
        return Graphs.LOADED ? CudaDriverGraphs.cuStreamCopyAttributes(dst, src) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int streamWaitValue(long stream, long address, long value, int flags, boolean wide) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        return wide ? CudaDriverGraphs.cuStreamWaitValue64_v2(stream, address, value, flags)
                : CudaDriverGraphs.cuStreamWaitValue32_v2(stream, address, (int) value, flags);
    }

    @Override
    public int streamWriteValue(long stream, long address, long value, int flags, boolean wide) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        return wide ? CudaDriverGraphs.cuStreamWriteValue64_v2(stream, address, value, flags)
                : CudaDriverGraphs.cuStreamWriteValue32_v2(stream, address, (int) value, flags);
    }

    @Override
    public int streamBatchMemOp(long stream, int count, long params, int flags) {
        return Graphs.LOADED ? CudaDriverGraphs.cuStreamBatchMemOp_v2(stream, count, params, flags) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int launchHostFunc(long stream, long key) {
        return Graphs.LOADED ? CudaDriverGraphs.cuLaunchHostFunc(stream, Graphs.HOST_FN_POINTER, key) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int streamAddCallback(long stream, long key, int flags) {
        return Graphs.LOADED ? CudaDriverGraphs.cuStreamAddCallback(stream, Graphs.STREAM_CALLBACK_POINTER, key, flags)
                : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int streamIsCapturing(Out o, long stream) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverGraphs.cuStreamIsCapturing(stream, s(o, 0));
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int streamBeginCapture(long stream, int mode) {
        return Graphs.LOADED ? CudaDriverGraphs.cuStreamBeginCapture_v2(stream, mode) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int streamBeginCaptureToGraph(long stream, long graph, long nodes, long edges, long count, int mode) {
        return Graphs.LOADED ? CudaDriverGraphs.cuStreamBeginCaptureToGraph(stream, graph, nodes, edges, count, mode)
                : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int streamEndCapture(Out o, long stream) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putLong(s(o, 0), 0);
        int r = CudaDriverGraphs.cuStreamEndCapture(stream, s(o, 0));
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int streamGetCaptureInfo(Out o, long stream) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        for (int i = 0; i < 6; i++) {
            UnsafeApi.putLong(s(o, i), 0);
        }
        int r = CudaDriverGraphs.cuStreamGetCaptureInfo_v3(stream, s(o, 0), s(o, 1), s(o, 2), s(o, 3), s(o, 4), s(o, 5));
        o.value = UnsafeApi.getInt(s(o, 0));
        o.totalBytes = UnsafeApi.getLong(s(o, 1));
        o.handle = UnsafeApi.getLong(s(o, 2));
        o.address = UnsafeApi.getLong(s(o, 3));
        o.offset = UnsafeApi.getLong(s(o, 4));
        o.bytes = UnsafeApi.getLong(s(o, 5));
        return r;
    }

    @Override
    public int streamUpdateCaptureDependencies(long stream, long nodes, long edges, long count, int flags) {
        return Graphs.LOADED ? CudaDriverGraphs.cuStreamUpdateCaptureDependencies_v2(stream, nodes, edges, count, flags)
                : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int threadExchangeStreamCaptureMode(Out o, int mode) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putInt(s(o, 0), mode);
        int r = CudaDriverGraphs.cuThreadExchangeStreamCaptureMode(s(o, 0));
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int graphCreate(Out o, int flags) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverGraphs.cuGraphCreate(s(o, 0), flags);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int graphDestroy(long graph) {
        return Graphs.LOADED ? CudaDriverGraphs.cuGraphDestroy(graph) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int graphClone(Out o, long graph) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverGraphs.cuGraphClone(s(o, 0), graph);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int graphInstantiate(Out o, long graph, long flags) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverGraphs.cuGraphInstantiateWithFlags(s(o, 0), graph, flags);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int graphLaunch(long exec, long stream) {
        return Graphs.LOADED ? CudaDriverGraphs.cuGraphLaunch(exec, stream) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int graphUpload(long exec, long stream) {
        return Graphs.LOADED ? CudaDriverGraphs.cuGraphUpload(exec, stream) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int graphExecDestroy(long exec) {
        return Graphs.LOADED ? CudaDriverGraphs.cuGraphExecDestroy(exec) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int graphExecGetFlags(Out o, long exec) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverGraphs.cuGraphExecGetFlags(exec, s(o, 0));
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int graphGetNodes(Out o, long graph, boolean roots, long nodes, long capacity) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putLong(s(o, 0), capacity);
        int r = roots ? CudaDriverGraphs.cuGraphGetRootNodes(graph, capacity == 0 ? 0 : nodes, s(o, 0))
                : CudaDriverGraphs.cuGraphGetNodes(graph, capacity == 0 ? 0 : nodes, s(o, 0));
        o.bytes = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int graphNodeGetType(Out o, long node) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        int r = CudaDriverGraphs.cuGraphNodeGetType(node, s(o, 0));
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    @Override
    public int graphAddSimpleNode(Out o, long graph, long deps, long count, int kind, long object) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        long d = count == 0 ? 0 : deps;
        int r = switch (kind) {
            case 0 -> CudaDriverGraphs.cuGraphAddEmptyNode(s(o, 0), graph, d, count);
            case 1 -> CudaDriverGraphs.cuGraphAddEventRecordNode(s(o, 0), graph, d, count, object);
            case 2 -> CudaDriverGraphs.cuGraphAddEventWaitNode(s(o, 0), graph, d, count, object);
            case 3 -> CudaDriverGraphs.cuGraphAddChildGraphNode(s(o, 0), graph, d, count, object);
            default -> CuResult.INVALID_VALUE;
        };
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int graphDestroyNode(long node) {
        return Graphs.LOADED ? CudaDriverGraphs.cuGraphDestroyNode(node) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int graphEdges(long graph, boolean remove, long from, long to, long edges, long count) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        return remove ? CudaDriverGraphs.cuGraphRemoveDependencies_v2(graph, from, to, edges, count)
                : CudaDriverGraphs.cuGraphAddDependencies_v2(graph, from, to, edges, count);
    }

    @Override
    public int graphExecUpdate(Out o, long exec, long graph) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.setMemory(s(o, 0), 24, (byte) 0);
        int r = CudaDriverGraphs.cuGraphExecUpdate_v2(exec, graph, s(o, 0));
        o.value = UnsafeApi.getInt(s(o, 0));
        o.handle = UnsafeApi.getLong(s(o, 1));
        o.address = UnsafeApi.getLong(s(o, 2));
        return r;
    }

    @Override
    public int deviceGraphMemTrim(int device) {
        return Graphs.LOADED ? CudaDriverGraphs.cuDeviceGraphMemTrim(device) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int deviceGetGraphMemAttribute(Out o, int device, int attribute) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putLong(s(o, 0), 0);
        int r = CudaDriverGraphs.cuDeviceGetGraphMemAttribute(device, attribute, s(o, 0));
        o.bytes = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int deviceSetGraphMemAttribute(Out o, int device, int attribute, long value) {
        if (!Graphs.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putLong(s(o, 0), value);
        return CudaDriverGraphs.cuDeviceSetGraphMemAttribute(device, attribute, s(o, 0));
    }

    // ---- graph nodes with parameters (issue 12) ----

    /** CudaDriverGraphNodes, loaded on first use (see there). */
    private static final class GraphNodes {
        static final boolean LOADED;

        static {
            boolean loaded = false;
            try {
                Class.forName(CudaDriverGraphNodes.class.getName(), true, CudaDriverGraphNodes.class.getClassLoader());
                loaded = Graphs.LOADED;
            } catch (Throwable e) {
                LOG.error("libcuda.so.1 lacks a graph node function ({}): kernel, memcpy, memset, host and "
                        + "conditional nodes answer CUDA_ERROR_NOT_SUPPORTED", e.toString());
            }
            LOADED = loaded;
        }
    }

    /** sizeof(CUDA_KERNEL_NODE_PARAMS_v2), CUDA_MEMSET_NODE_PARAMS, CUDA_HOST_NODE_PARAMS, CUgraphNodeParams (cuda.h 13.0, LP64) */
    private static final int KERNEL_NODE_SIZE = 72;
    private static final int MEMSET_NODE_SIZE = 40;
    private static final int HOST_NODE_SIZE = 16;
    private static final int NODE_PARAMS_SIZE = 256;
    /** CU_GRAPH_NODE_TYPE_CONDITIONAL */
    private static final int NODE_TYPE_CONDITIONAL = 13;


    @Override
    public int graphKernelNode(Out o, int op, long graph, long node, long exec, long deps, long count, long function,
                               int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ, int sharedMemBytes,
                               long kernelParams) {
        if (!GraphNodes.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        try (NativeStruct d = NativeStruct.zeroed(KERNEL_NODE_SIZE)) {
            long p = d.address;
            UnsafeApi.putLong(p, function);
            int[] dims = {gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemBytes};
            for (int i = 0; i < dims.length; i++) {
                UnsafeApi.putInt(p + 8 + 4L * i, dims[i]);
            }
            UnsafeApi.putLong(p + 40, kernelParams);
            return switch (op) {
                case NODE_ADD -> added(o, CudaDriverGraphNodes.cuGraphAddKernelNode_v2(s(o, 0), graph, deps, count, p));
                case NODE_SET -> CudaDriverGraphNodes.cuGraphKernelNodeSetParams_v2(node, p);
                case NODE_EXEC_SET -> CudaDriverGraphNodes.cuGraphExecKernelNodeSetParams_v2(exec, node, p);
                default -> CuResult.INVALID_VALUE;
            };
        }
    }

    /** The new node (written to slot 0 by the driver) into o.handle. */
    private static int added(Out o, int result) {
        o.handle = result == CuResult.SUCCESS ? UnsafeApi.getLong(s(o, 0)) : 0;
        return result;
    }

    @Override
    public int graphMemsetNode(Out o, int op, long graph, long node, long exec, long deps, long count, long ctx,
                               long dst, long pitch, int value, int elementSize, long width, long height) {
        if (!GraphNodes.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        try (NativeStruct d = NativeStruct.zeroed(MEMSET_NODE_SIZE)) {
            long p = d.address;
            UnsafeApi.putLong(p, dst);
            UnsafeApi.putLong(p + 8, pitch);
            UnsafeApi.putInt(p + 16, value);
            UnsafeApi.putInt(p + 20, elementSize);
            UnsafeApi.putLong(p + 24, width);
            UnsafeApi.putLong(p + 32, height);
            return switch (op) {
                case NODE_ADD -> added(o, CudaDriverGraphNodes.cuGraphAddMemsetNode(s(o, 0), graph, deps, count, p, ctx));
                case NODE_SET -> CudaDriverGraphNodes.cuGraphMemsetNodeSetParams(node, p);
                case NODE_EXEC_SET -> CudaDriverGraphNodes.cuGraphExecMemsetNodeSetParams(exec, node, p, ctx);
                default -> CuResult.INVALID_VALUE;
            };
        }
    }

    @Override
    public int graphCopyNode(Out o, int op, long graph, long node, long exec, long deps, long count, long ctx,
                             int dstType, long dst, long dstPitch, long dstHeight, int srcType, long src, long srcPitch,
                             long srcHeight, long width, long height, long depth) {
        if (!GraphNodes.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        return Memcpy3D.call(dstType, dst, 0, 0, 0, dstPitch, dstHeight, srcType, src, 0, 0, 0, srcPitch, srcHeight,
                width, height, depth, p -> switch (op) {
                    case NODE_ADD -> added(o, CudaDriverGraphNodes.cuGraphAddMemcpyNode(s(o, 0), graph, deps, count, p,
                            ctx));
                    case NODE_SET -> CudaDriverGraphNodes.cuGraphMemcpyNodeSetParams(node, p);
                    case NODE_EXEC_SET -> CudaDriverGraphNodes.cuGraphExecMemcpyNodeSetParams(exec, node, p, ctx);
                    default -> CuResult.INVALID_VALUE;
                });
    }

    @Override
    public int graphHostNode(Out o, int op, long graph, long node, long exec, long deps, long count, long key) {
        if (!GraphNodes.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        try (NativeStruct d = NativeStruct.zeroed(HOST_NODE_SIZE)) {
            long p = d.address;
            UnsafeApi.putLong(p, Graphs.HOST_FN_POINTER);
            UnsafeApi.putLong(p + 8, key);
            return switch (op) {
                case NODE_ADD -> added(o, CudaDriverGraphNodes.cuGraphAddHostNode(s(o, 0), graph, deps, count, p));
                case NODE_SET -> CudaDriverGraphNodes.cuGraphHostNodeSetParams(node, p);
                case NODE_EXEC_SET -> CudaDriverGraphNodes.cuGraphExecHostNodeSetParams(exec, node, p);
                default -> CuResult.INVALID_VALUE;
            };
        }
    }

    @Override
    public int graphConditionalHandleCreate(Out o, long graph, long ctx, int defaultLaunchValue, int flags) {
        if (!GraphNodes.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putLong(s(o, 0), 0);
        int r = CudaDriverGraphNodes.cuGraphConditionalHandleCreate(s(o, 0), graph, ctx, defaultLaunchValue, flags);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int graphAddConditionalNode(Out o, long graph, long deps, long count, long ctx, long handle, int type,
                                       int size) {
        if (!GraphNodes.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        // CUgraphNodeParams: the type, then at 16 the CUDA_CONDITIONAL_NODE_PARAMS (handle, type,
        // size, phGraph_out, which the driver points at its own array, ctx)
        try (NativeStruct d = NativeStruct.zeroed(NODE_PARAMS_SIZE)) {
            long p = d.address;
            UnsafeApi.putInt(p, NODE_TYPE_CONDITIONAL);
            UnsafeApi.putLong(p + 16, handle);
            UnsafeApi.putInt(p + 24, type);
            UnsafeApi.putInt(p + 28, size);
            UnsafeApi.putLong(p + 40, ctx);
            int r = added(o, CudaDriverGraphNodes.cuGraphAddNode(s(o, 0), graph, deps, count, p));
            o.address = r == CuResult.SUCCESS ? UnsafeApi.getLong(p + 32) : 0;
            return r;
        }
    }

    // ---- graph memory nodes ----

    /** CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_DEVICE */
    private static final int ALLOCATION_PINNED = 1;
    private static final int LOCATION_DEVICE = 1;

    @Override
    public int graphMemAllocNode(Out o, long graph, long deps, long count, int device, long bytesize,
                                 int[] accessFlags) {
        if (!GraphNodes.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        try (NativeStruct d = NativeStruct.zeroed(MEM_ALLOC_NODE_SIZE + 12 * accessFlags.length)) {
            long p = d.address;
            long descs = p + MEM_ALLOC_NODE_SIZE;
            // CUmemPoolProps: allocType, handleTypes (none), location {type, id}; the rest zero
            UnsafeApi.putInt(p, ALLOCATION_PINNED);
            UnsafeApi.putInt(p + 8, LOCATION_DEVICE);
            UnsafeApi.putInt(p + 12, device);
            for (int i = 0; i < accessFlags.length; i++) {
                UnsafeApi.putInt(descs + 12L * i, LOCATION_DEVICE);
                UnsafeApi.putInt(descs + 12L * i + 4, device);
                UnsafeApi.putInt(descs + 12L * i + 8, accessFlags[i]);
            }
            UnsafeApi.putLong(p + MEM_ALLOC_NODE_ACCESS_DESCS, accessFlags.length == 0 ? 0 : descs);
            UnsafeApi.putLong(p + MEM_ALLOC_NODE_ACCESS_COUNT, accessFlags.length);
            UnsafeApi.putLong(p + MEM_ALLOC_NODE_BYTESIZE, bytesize);
            int r = added(o, CudaDriverGraphNodes.cuGraphAddMemAllocNode(s(o, 0), graph, count == 0 ? 0 : deps, count, p));
            o.address = r == CuResult.SUCCESS ? UnsafeApi.getLong(p + MEM_ALLOC_NODE_DPTR) : 0;
            return r;
        }
    }

    @Override
    public int graphMemFreeNode(Out o, long graph, long deps, long count, long dptr) {
        if (!GraphNodes.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        return added(o, CudaDriverGraphNodes.cuGraphAddMemFreeNode(s(o, 0), graph, count == 0 ? 0 : deps, count, dptr));
    }

    @Override
    public int graphMemAllocNodeGetParams(Out o, long node) {
        if (!GraphNodes.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        long p = o.scratch + MEM_ALLOC_NODE_SCRATCH;
        UnsafeApi.setMemory(p, MEM_ALLOC_NODE_SIZE, (byte) 0);
        int r = CudaDriverGraphNodes.cuGraphMemAllocNodeGetParams(node, p);
        if (r == CuResult.SUCCESS) {
            // the driver's array is the node's: copied while the node lives (this call's thread)
            long descs = UnsafeApi.getLong(p + MEM_ALLOC_NODE_ACCESS_DESCS);
            long n = Math.min(Math.max(UnsafeApi.getLong(p + MEM_ALLOC_NODE_ACCESS_COUNT), 0), MEM_ALLOC_NODE_MAX_DESCS);
            if (descs != 0 && n > 0) {
                UnsafeApi.copyMemory(descs, o.scratch + MEM_ALLOC_NODE_SCRATCH_DESCS, 12 * n);
            }
        }
        return r;
    }

    @Override
    public int graphMemFreeNodeGetParams(Out o, long node) {
        if (!GraphNodes.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putLong(s(o, 0), 0);
        int r = CudaDriverGraphNodes.cuGraphMemFreeNodeGetParams(node, s(o, 0));
        o.address = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    // ---- sharing: the host's NVML for the guest's (issue 15, docs/sharing.md) ----

    /** NvmlDriver, loaded on first use: a host without libnvidia-ml.so.1 answers LIBRARY_NOT_FOUND. */
    private static final class Nvml {
        static final boolean LOADED;

        static {
            boolean loaded;
            try {
                Class.forName(NvmlDriver.class.getName(), true, NvmlDriver.class.getClassLoader());
                loaded = true;
            } catch (LinkageError | ClassNotFoundException e) {
                LogManager.getLogger(JnaCudaBackend.class).warn("no NVML on this host (libnvidia-ml.so.1): {}",
                        e.toString());
                loaded = false;
            }
            LOADED = loaded;
        }
    }

    /** The NVML device of the server's GPU once opened; the first open's result answers every later one. */
    private long nvmlDevice;
    private int nvmlOpened = -1;

    @Override
    public synchronized int nvmlOpen(String pciBusId) {
        if (nvmlOpened >= 0) {
            return nvmlOpened;
        }
        if (!Nvml.LOADED) {
            nvmlOpened = NvmlResult.LIBRARY_NOT_FOUND;
            return nvmlOpened;
        }
        int r = NvmlDriver.nvmlInit_v2();
        if (r == NvmlResult.SUCCESS) {
            long p = UnsafeApi.allocateMemory(8);
            try {
                UnsafeApi.putLong(p, 0);
                r = NvmlDriver.nvmlDeviceGetHandleByPciBusId_v2(pciBusId, p);
                nvmlDevice = UnsafeApi.getLong(p);
            } finally {
                UnsafeApi.freeMemory(p);
            }
        }
        nvmlOpened = r;
        return r;
    }

    /** The opened device, 0 when NVML is not open (the caller answers UNINITIALIZED). */
    private synchronized long nvmlDevice() {
        return nvmlOpened == NvmlResult.SUCCESS ? nvmlDevice : 0;
    }

    @Override
    public int nvmlString(int what, long dst, int capacity) {
        long device = nvmlDevice();
        if (device == 0) {
            return NvmlResult.UNINITIALIZED;
        }
        return switch (what) {
            case NvmlQuery.DRIVER_VERSION -> NvmlDriver.nvmlSystemGetDriverVersion(dst, capacity);
            case NvmlQuery.NVML_VERSION -> NvmlDriver.nvmlSystemGetNVMLVersion(dst, capacity);
            case NvmlQuery.NAME -> NvmlDriver.nvmlDeviceGetName(device, dst, capacity);
            case NvmlQuery.UUID -> NvmlDriver.nvmlDeviceGetUUID(device, dst, capacity);
            case NvmlQuery.PCI_BUS_ID -> {
                // nvmlPciInfo_t: busIdLegacy[16], 5 unsigned, busId[32] at offset 36 (68 bytes)
                long pci = UnsafeApi.allocateMemory(68);
                try {
                    int r = NvmlDriver.nvmlDeviceGetPciInfo_v3(device, pci);
                    if (r != NvmlResult.SUCCESS) {
                        yield r;
                    }
                    int n = 0;
                    while (n < 31 && UnsafeApi.getByte(pci + 36 + n) != 0) {
                        n++;
                    }
                    if (n + 1 > capacity) {
                        yield NvmlResult.INSUFFICIENT_SIZE;
                    }
                    UnsafeApi.copyMemory(pci + 36, dst, n);
                    UnsafeApi.putByte(dst + n, (byte) 0);
                    yield NvmlResult.SUCCESS;
                } finally {
                    UnsafeApi.freeMemory(pci);
                }
            }
            default -> NvmlResult.INVALID_ARGUMENT;
        };
    }

    @Override
    public int nvmlValue(Out o, int what, int arg) {
        long device = nvmlDevice();
        if (device == 0) {
            return NvmlResult.UNINITIALIZED;
        }
        long a = s(o, 0);
        long b = s(o, 1);
        UnsafeApi.putLong(a, 0);
        UnsafeApi.putLong(b, 0);
        int r = switch (what) {
            case NvmlQuery.TEMPERATURE -> NvmlDriver.nvmlDeviceGetTemperature(device, arg, a);
            case NvmlQuery.POWER_USAGE -> NvmlDriver.nvmlDeviceGetPowerUsage(device, a);
            case NvmlQuery.CLOCK -> NvmlDriver.nvmlDeviceGetClockInfo(device, arg, a);
            case NvmlQuery.MAX_CLOCK -> NvmlDriver.nvmlDeviceGetMaxClockInfo(device, arg, a);
            // nvmlUtilization_t {gpu, memory}: the two words read as one little-endian u64
            case NvmlQuery.UTILIZATION -> NvmlDriver.nvmlDeviceGetUtilizationRates(device, a);
            case NvmlQuery.COMPUTE_CAPABILITY -> NvmlDriver.nvmlDeviceGetCudaComputeCapability(device, a, a + 4);
            case NvmlQuery.MINOR_NUMBER -> NvmlDriver.nvmlDeviceGetMinorNumber(device, a);
            case NvmlQuery.COMPUTE_MODE -> NvmlDriver.nvmlDeviceGetComputeMode(device, a);
            case NvmlQuery.PERSISTENCE_MODE -> NvmlDriver.nvmlDeviceGetPersistenceMode(device, a);
            case NvmlQuery.CUDA_DRIVER_VERSION -> NvmlDriver.nvmlSystemGetCudaDriverVersion_v2(a);
            case NvmlQuery.PCI_IDS -> {
                long pci = UnsafeApi.allocateMemory(68);
                try {
                    int q = NvmlDriver.nvmlDeviceGetPciInfo_v3(device, pci);
                    // pciDeviceId at 28, pciSubSystemId at 32
                    UnsafeApi.putInt(a, UnsafeApi.getInt(pci + 28));
                    UnsafeApi.putInt(a + 4, UnsafeApi.getInt(pci + 32));
                    yield q;
                } finally {
                    UnsafeApi.freeMemory(pci);
                }
            }
            default -> NvmlResult.INVALID_ARGUMENT;
        };
        o.bytes = UnsafeApi.getLong(a);
        return r;
    }

    @Override
    public int nvmlMemory(Out o) {
        long device = nvmlDevice();
        if (device == 0) {
            return NvmlResult.UNINITIALIZED;
        }
        // nvmlMemory_t (v1): total, free, used
        int r = NvmlDriver.nvmlDeviceGetMemoryInfo(device, s(o, 0));
        o.totalBytes = UnsafeApi.getLong(s(o, 0));
        o.bytes = UnsafeApi.getLong(s(o, 1));
        o.address = UnsafeApi.getLong(s(o, 2));
        return r;
    }

    // ---- arrays and textures (issue 12) ----

    /** A CUDA_ARRAY3D_DESCRIPTOR (40 bytes) written into the scratch from slot 8 on. */
    private static long array3D(Out o, long width, long height, long depth, int format, int channels, int flags) {
        long d = s(o, 8);
        UnsafeApi.putLong(d, width);
        UnsafeApi.putLong(d + 8, height);
        UnsafeApi.putLong(d + 16, depth);
        UnsafeApi.putInt(d + 24, format);
        UnsafeApi.putInt(d + 28, channels);
        UnsafeApi.putInt(d + 32, flags);
        UnsafeApi.putInt(d + 36, 0);
        return d;
    }

    @Override
    public int arrayCreate(Out o, long width, long height, long depth, int format, int channels, int flags) {
        int r = cuArray3DCreate_v2(s(o, 0), array3D(o, width, height, depth, format, channels, flags));
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int arrayDestroy(long array) {
        return cuArrayDestroy(array);
    }

    @Override
    public int arrayGetDescriptor(long desc, long array) {
        return cuArrayGetDescriptor_v2(desc, array);
    }

    @Override
    public int array3DGetDescriptor(long desc, long array) {
        return cuArray3DGetDescriptor_v2(desc, array);
    }

    @Override
    public int arrayGetMemoryRequirements(long requirements, long array, int device) {
        return cuArrayGetMemoryRequirements(requirements, array, device);
    }

    @Override
    public int arrayGetPlane(Out o, long array, int plane) {
        int r = cuArrayGetPlane(s(o, 0), array, plane);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int mipmappedArrayCreate(Out o, long width, long height, long depth, int format, int channels, int flags,
                                    int levels) {
        int r = cuMipmappedArrayCreate(s(o, 0), array3D(o, width, height, depth, format, channels, flags), levels);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int mipmappedArrayDestroy(long mipmap) {
        return cuMipmappedArrayDestroy(mipmap);
    }

    @Override
    public int mipmappedArrayGetLevel(Out o, long mipmap, int level) {
        int r = cuMipmappedArrayGetLevel(s(o, 0), mipmap, level);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int mipmappedArrayGetMemoryRequirements(long requirements, long mipmap, int device) {
        return cuMipmappedArrayGetMemoryRequirements(requirements, mipmap, device);
    }

    @Override
    public int deviceGetTexture1DLinearMaxWidth(Out o, int format, int channels, int device) {
        int r = cuDeviceGetTexture1DLinearMaxWidth(s(o, 0), format, channels, device);
        o.bytes = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int memcpy3DArray(int dstType, long dst, long dstX, long dstY, long dstZ, long dstPitch, long dstHeight,
                             int srcType, long src, long srcX, long srcY, long srcZ, long srcPitch, long srcHeight,
                             long width, long height, long depth, long stream, boolean async) {
        return Memcpy3D.call(dstType, dst, dstX, dstY, dstZ, dstPitch, dstHeight, srcType, src, srcX, srcY, srcZ,
                srcPitch, srcHeight, width, height, depth,
                p -> async ? cuMemcpy3DAsync_v2(p, stream) : cuMemcpy3D_v2(p));
    }

    @Override
    public int texObjectCreate(Out o, long resDesc, long texDesc, long viewDesc) {
        int r = cuTexObjectCreate(s(o, 0), resDesc, texDesc, viewDesc);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int texObjectDestroy(long tex) {
        return cuTexObjectDestroy(tex);
    }

    @Override
    public int texObjectGetResourceDesc(long desc, long tex) {
        return cuTexObjectGetResourceDesc(desc, tex);
    }

    @Override
    public int texObjectGetTextureDesc(long desc, long tex) {
        return cuTexObjectGetTextureDesc(desc, tex);
    }

    @Override
    public int texObjectGetResourceViewDesc(long desc, long tex) {
        return cuTexObjectGetResourceViewDesc(desc, tex);
    }

    @Override
    public int surfObjectCreate(Out o, long resDesc) {
        int r = cuSurfObjectCreate(s(o, 0), resDesc);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int surfObjectDestroy(long surf) {
        return cuSurfObjectDestroy(surf);
    }

    @Override
    public int surfObjectGetResourceDesc(long desc, long surf) {
        return cuSurfObjectGetResourceDesc(desc, surf);
    }

    // ---- tensor maps (issue 12) ----

    @Override
    public int tensorMapEncodeTiled(long map, int dataType, int rank, long globalAddress, long globalDim,
                                    long globalStrides, long boxDim, long elementStrides, int interleave, int swizzle,
                                    int l2Promotion, int oobFill) {
        if (!CudaDriverTensorMaps.available()) {
            return CuResult.NOT_SUPPORTED;
        }
        return CudaDriverTensorMaps.cuTensorMapEncodeTiled(map, dataType, rank, globalAddress, globalDim, globalStrides,
                boxDim, elementStrides, interleave, swizzle, l2Promotion, oobFill);
    }

    @Override
    public int tensorMapEncodeIm2col(long map, int dataType, int rank, long globalAddress, long globalDim,
                                     long globalStrides, long lowerCorner, long upperCorner, int channelsPerPixel,
                                     int pixelsPerColumn, long elementStrides, int interleave, int swizzle,
                                     int l2Promotion, int oobFill) {
        if (!CudaDriverTensorMaps.available()) {
            return CuResult.NOT_SUPPORTED;
        }
        return CudaDriverTensorMaps.cuTensorMapEncodeIm2col(map, dataType, rank, globalAddress, globalDim,
                globalStrides, lowerCorner, upperCorner, channelsPerPixel, pixelsPerColumn, elementStrides, interleave,
                swizzle, l2Promotion, oobFill);
    }

    @Override
    public int tensorMapEncodeIm2colWide(long map, int dataType, int rank, long globalAddress, long globalDim,
                                         long globalStrides, int lowerCornerWidth, int upperCornerWidth,
                                         int channelsPerPixel, int pixelsPerColumn, long elementStrides,
                                         int interleave, int mode, int swizzle, int l2Promotion, int oobFill) {
        if (!CudaDriverTensorMaps.Wide.available()) {
            return CuResult.NOT_SUPPORTED;
        }
        return CudaDriverTensorMaps.Wide.cuTensorMapEncodeIm2colWide(map, dataType, rank, globalAddress, globalDim,
                globalStrides, lowerCornerWidth, upperCornerWidth, channelsPerPixel, pixelsPerColumn, elementStrides,
                interleave, mode, swizzle, l2Promotion, oobFill);
    }

    @Override
    public int tensorMapReplaceAddress(long map, long globalAddress) {
        if (!CudaDriverTensorMaps.available()) {
            return CuResult.NOT_SUPPORTED;
        }
        return CudaDriverTensorMaps.cuTensorMapReplaceAddress(map, globalAddress);
    }

    // ---- virtual memory and created pools (issue 12) ----

    private static final class Vmm {
        static final boolean LOADED;

        static {
            boolean loaded = false;
            try {
                Class.forName(CudaDriverVmm.class.getName(), true, CudaDriverVmm.class.getClassLoader());
                loaded = true;
            } catch (Throwable e) {
                LOG.error("libcuda.so.1 lacks a virtual-memory function ({}): those calls answer "
                        + "CUDA_ERROR_NOT_SUPPORTED", e.toString());
            }
            LOADED = loaded;
        }
    }

    /** CUmemAllocationProp (32 bytes, cuda.h): type, requestedHandleTypes, location, win32 pointer, allocFlags. */
    private static final int PROP_SIZE = 32;
    private static final int CU_MEM_LOCATION_TYPE_DEVICE = 1;

    /** Builds a device-located CUmemAllocationProp at scratch slot 4 (slots 4-7). */
    private static long prop(Out o, int type, int handleTypes, int device, int allocFlags) {
        long p = s(o, 4);
        UnsafeApi.setMemory(p, PROP_SIZE, (byte) 0);
        UnsafeApi.putInt(p, type);
        UnsafeApi.putInt(p + 4, handleTypes);
        deviceLocation(p + 8, device);
        UnsafeApi.putByte(p + 24, (byte) allocFlags);
        UnsafeApi.putByte(p + 25, (byte) (allocFlags >>> 8));
        UnsafeApi.putShort(p + 26, (short) (allocFlags >>> 16));
        return p;
    }

    @Override
    public int memGetAllocationGranularity(Out o, int type, int handleTypes, int device, int allocFlags, int option) {
        if (!Vmm.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putLong(s(o, 0), 0);
        int r = CudaDriverVmm.cuMemGetAllocationGranularity(s(o, 0), prop(o, type, handleTypes, device, allocFlags), option);
        o.bytes = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int memAddressReserve(Out o, long size, long alignment, long addr, long flags) {
        if (!Vmm.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putLong(s(o, 0), 0);
        int r = CudaDriverVmm.cuMemAddressReserve(s(o, 0), size, alignment, addr, flags);
        o.address = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int memAddressFree(long ptr, long size) {
        return Vmm.LOADED ? CudaDriverVmm.cuMemAddressFree(ptr, size) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int memCreate(Out o, long size, int type, int handleTypes, int device, int allocFlags, long flags) {
        if (!Vmm.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putLong(s(o, 0), 0);
        int r = CudaDriverVmm.cuMemCreate(s(o, 0), size, prop(o, type, handleTypes, device, allocFlags), flags);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int memRelease(long handle) {
        return Vmm.LOADED ? CudaDriverVmm.cuMemRelease(handle) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int memMap(long ptr, long size, long offset, long handle, long flags) {
        return Vmm.LOADED ? CudaDriverVmm.cuMemMap(ptr, size, offset, handle, flags) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int memUnmap(long ptr, long size) {
        return Vmm.LOADED ? CudaDriverVmm.cuMemUnmap(ptr, size) : CuResult.NOT_SUPPORTED;
    }

    /** sizeof(CUmemAccessDesc) (cuda.h): the location (type, id), then the flags. */
    private static final int ACCESS_DESC_SIZE = 12;

    /** Writes one CUmemAccessDesc for {@code device} at {@code d}. */
    private static long accessDesc(long d, int device, int flags) {
        deviceLocation(d, device);
        UnsafeApi.putInt(d + 8, flags);
        return d;
    }

    /** A CUmemLocation of {@code device} written at {@code at}. */
    private static long deviceLocation(long at, int device) {
        UnsafeApi.putInt(at, CU_MEM_LOCATION_TYPE_DEVICE);
        UnsafeApi.putInt(at + 4, device);
        return at;
    }

    @Override
    public int memSetAccess(long ptr, long size, int device, int flags) {
        if (!Vmm.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        try (NativeStruct d = NativeStruct.zeroed(ACCESS_DESC_SIZE)) {
            return CudaDriverVmm.cuMemSetAccess(ptr, size, accessDesc(d.address, device, flags), 1);
        }
    }

    @Override
    public int memGetAccess(Out o, int device, long ptr) {
        if (!Vmm.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putLong(s(o, 0), 0);
        int r = CudaDriverVmm.cuMemGetAccess(s(o, 0), deviceLocation(s(o, 1), device), ptr);
        o.value = (int) UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int memGetAllocationProperties(Out o, long handle) {
        if (!Vmm.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        long p = s(o, 4);
        UnsafeApi.setMemory(p, PROP_SIZE, (byte) 0);
        int r = CudaDriverVmm.cuMemGetAllocationPropertiesFromHandle(p, handle);
        o.value = UnsafeApi.getInt(p);
        o.offset = UnsafeApi.getInt(p + 4) & 0xffffffffL;
        o.address = UnsafeApi.getInt(p + 8) == CU_MEM_LOCATION_TYPE_DEVICE ? UnsafeApi.getInt(p + 12) : -1;
        o.bytes = (UnsafeApi.getByte(p + 24) & 0xff) | (UnsafeApi.getByte(p + 25) & 0xff) << 8
                | (UnsafeApi.getShort(p + 26) & 0xffff) << 16;
        return r;
    }

    @Override
    public int memRetainAllocationHandle(Out o, long addr) {
        if (!Vmm.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putLong(s(o, 0), 0);
        int r = CudaDriverVmm.cuMemRetainAllocationHandle(s(o, 0), addr);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    /** CUmemPoolProps (88 bytes, cuda.h): allocType, handleTypes, location, win32 pointer, maxSize, usage, reserved. */
    private static final int POOL_PROPS_SIZE = 88;

    @Override
    public int memPoolCreate(Out o, int handleTypes, int device, long maxSize, int usage) {
        if (!Vmm.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        long p = s(o, 4);
        UnsafeApi.setMemory(p, POOL_PROPS_SIZE, (byte) 0);
        UnsafeApi.putInt(p, 1); // CU_MEM_ALLOCATION_TYPE_PINNED
        UnsafeApi.putInt(p + 4, handleTypes);
        deviceLocation(p + 8, device);
        UnsafeApi.putLong(p + 24, maxSize);
        UnsafeApi.putShort(p + 32, (short) usage);
        UnsafeApi.putLong(s(o, 0), 0);
        int r = CudaDriverVmm.cuMemPoolCreate(s(o, 0), p);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }

    @Override
    public int memPoolDestroy(long pool) {
        return Vmm.LOADED ? CudaDriverVmm.cuMemPoolDestroy(pool) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int memPoolSetAccess(long pool, int device, int flags) {
        if (!Vmm.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        try (NativeStruct d = NativeStruct.zeroed(ACCESS_DESC_SIZE)) {
            return CudaDriverVmm.cuMemPoolSetAccess(pool, accessDesc(d.address, device, flags), 1);
        }
    }

    @Override
    public int memPoolGetAccess(Out o, long pool, int device) {
        if (!Vmm.LOADED) {
            return CuResult.NOT_SUPPORTED;
        }
        UnsafeApi.putInt(s(o, 0), 0);
        int r = CudaDriverVmm.cuMemPoolGetAccess(s(o, 0), pool, deviceLocation(s(o, 1), device));
        o.value = UnsafeApi.getInt(s(o, 0));
        return r;
    }

    // ---- JIT logs of module loads (issue 12) ----

    @Override
    public int moduleLoadDataEx(Out o, long image, int count, long options, long values) {
        int r = cuModuleLoadDataEx(s(o, 0), image, count, count == 0 ? 0 : options, count == 0 ? 0 : values);
        o.handle = UnsafeApi.getLong(s(o, 0));
        return r;
    }
}
