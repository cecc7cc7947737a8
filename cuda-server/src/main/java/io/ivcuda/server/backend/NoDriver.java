package io.ivcuda.server.backend;

import org.agrona.UnsafeApi;

/**
 * The backend of a host whose libcuda.so.1 cannot be loaded (chosen by {@link JnaCudaBackend#load()}):
 * the server still runs and answers every driver call with CUDA_ERROR_NO_DEVICE, so a guest sees a
 * clean error (and the server's log says why).
 */
public final class NoDriver implements CudaBackend {
    private final String reason;

    public NoDriver(String reason) {
        this.reason = reason;
    }

    @Override
    public String describe() {
        return "cuda (libcuda.so.1 not loadable: " + reason + ")";
    }

    @Override
    public Out newOut() {
        return new Out(UnsafeApi.allocateMemory(Out.SCRATCH_SIZE));
    }

    @Override
    public int init(int flags) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int driverGetVersion(Out out) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int deviceGet(Out out, int ordinal) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int deviceGetCount(Out out) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int deviceGetName(long dst, int capacity, int device) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int deviceGetUuid(long dst16, int device) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int deviceGetPciBusId(long dst, int capacity, int device) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int deviceTotalMem(Out out, int device) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int deviceGetAttribute(Out out, int attribute, int device) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int ctxCreate(Out out, int flags, int device) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int ctxDestroy(long ctx) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int ctxGetCurrent(Out out) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int ctxSetCurrent(long ctx) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int ctxPushCurrent(long ctx) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int ctxPopCurrent(Out out) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int ctxGetDevice(Out out) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int ctxSynchronize() {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int ctxGetFlags(Out out) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int ctxGetApiVersion(Out out, long ctx) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int ctxGetLimit(Out out, int limit) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int ctxSetLimit(int limit, long value) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int ctxGetStreamPriorityRange(Out out) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int primaryCtxRetain(Out out, int device) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int primaryCtxRelease(int device) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int primaryCtxReset(int device) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int primaryCtxGetState(Out out, int device) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int primaryCtxSetFlags(int device, int flags) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int moduleLoadData(Out out, long image) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int moduleUnload(long module) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int moduleGetFunction(Out out, long module, String name) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int moduleGetGlobal(Out out, long module, String name) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int memAlloc(Out out, long bytes) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int memAllocPitch(Out out, long widthBytes, long height, int elementSize) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int memFree(long dptr) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int memGetInfo(Out out) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int memGetAddressRange(Out out, long dptr) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int memcpyHtoD(long dst, long srcHost, long bytes, long stream, boolean async) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int memcpyDtoH(long dstHost, long src, long bytes, long stream, boolean async) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int memcpyDtoD(long dst, long src, long bytes, long stream, boolean async) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int memset(int width, long dst, int value, long count, long stream, boolean async) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int memHostRegister(long address, long bytes, int flags) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int memHostUnregister(long address) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int memHostGetDevicePointer(Out out, long address) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int streamCreate(Out out, int flags, int priority) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int streamDestroy(long stream) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int streamSynchronize(long stream) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int streamQuery(long stream) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int streamWaitEvent(long stream, long event, int flags) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int eventCreate(Out out, int flags) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int eventDestroy(long event) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int eventRecord(long event, long stream, int flags) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int eventSynchronize(long event) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int eventQuery(long event) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int eventElapsedTime(Out out, long start, long end) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int funcGetAttribute(Out out, int attribute, long function) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int funcSetAttribute(long function, int attribute, int value) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int funcSetCacheConfig(long function, int config) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int funcGetParamInfo(Out out, long function, long index) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int occupancyMaxActiveBlocksPerMultiprocessor(Out out, long function, int blockSize, long dynamicSmem, int flags) {
        return CuResult.NO_DEVICE;
    }

    @Override
    public int launchKernel(long function, int gx, int gy, int gz, int bx, int by, int bz, int sharedMem, long stream, long kernelParams) {
        return CuResult.NO_DEVICE;
    }
}
