package io.ivcuda.server.backend;

/**
 * The driver operations the request handlers need. Every method returns a CUresult; out-values go
 * to the caller's {@link Out}. Pointers and handles are native values as {@code long}; ids the
 * guest sees are minted above this seam. Implementations: {@link JnaCudaBackend} (the real driver)
 * and {@link HostMemoryBackend} (transport tests without a GPU).
 */
public interface CudaBackend {

    /** A human-readable name for log lines. */
    String describe();

    Out newOut();

    int init(int flags);

    /** → i0 */
    int driverGetVersion(Out out);

    /** → i0 (the native CUdevice) */
    int deviceGet(Out out, int ordinal);

    /** → i0 */
    int deviceGetCount(Out out);

    int deviceGetName(long dst, int capacity, int device);

    int deviceGetUuid(long dst16, int device);

    int deviceGetPciBusId(long dst, int capacity, int device);

    /** → l0 */
    int deviceTotalMem(Out out, int device);

    /** → i0 */
    int deviceGetAttribute(Out out, int attribute, int device);

    /** → l0 */
    int ctxCreate(Out out, int flags, int device);

    int ctxDestroy(long ctx);

    /** → l0 */
    int ctxGetCurrent(Out out);

    int ctxSetCurrent(long ctx);

    int ctxPushCurrent(long ctx);

    /** → l0 */
    int ctxPopCurrent(Out out);

    /** → i0 */
    int ctxGetDevice(Out out);

    int ctxSynchronize();

    /** → i0 */
    int ctxGetFlags(Out out);

    /** → i0 */
    int ctxGetApiVersion(Out out, long ctx);

    /** → l0 */
    int ctxGetLimit(Out out, int limit);

    int ctxSetLimit(int limit, long value);

    /** → i0 least, i1 greatest */
    int ctxGetStreamPriorityRange(Out out);

    /** → l0 */
    int primaryCtxRetain(Out out, int device);

    int primaryCtxRelease(int device);

    int primaryCtxReset(int device);

    /** → i0 flags, i1 active */
    int primaryCtxGetState(Out out, int device);

    int primaryCtxSetFlags(int device, int flags);

    /** → l0 */
    int moduleLoadData(Out out, long image);

    int moduleUnload(long module);

    /** → l0 */
    int moduleGetFunction(Out out, long module, String name);

    /** → l0 address, l1 bytes */
    int moduleGetGlobal(Out out, long module, String name);

    /** → l0 */
    int memAlloc(Out out, long bytes);

    /** → l0 address, l1 pitch */
    int memAllocPitch(Out out, long widthBytes, long height, int elementSize);

    int memFree(long dptr);

    /** → l0 free, l1 total */
    int memGetInfo(Out out);

    /** → l0 base, l1 size */
    int memGetAddressRange(Out out, long dptr);

    /** stream 0 with async false: the synchronous copy. */
    int memcpyHtoD(long dst, long srcHost, long bytes, long stream, boolean async);

    int memcpyDtoH(long dstHost, long src, long bytes, long stream, boolean async);

    int memcpyDtoD(long dst, long src, long bytes, long stream, boolean async);

    /** width 1, 2 or 4 bytes; N elements. */
    int memset(int width, long dst, int value, long count, long stream, boolean async);

    int memHostRegister(long address, long bytes, int flags);

    int memHostUnregister(long address);

    /** → l0 */
    int memHostGetDevicePointer(Out out, long address);

    /** → l0 */
    int streamCreate(Out out, int flags, int priority);

    int streamDestroy(long stream);

    int streamSynchronize(long stream);

    int streamQuery(long stream);

    int streamWaitEvent(long stream, long event, int flags);

    /** → l0 */
    int eventCreate(Out out, int flags);

    int eventDestroy(long event);

    int eventRecord(long event, long stream, int flags);

    int eventSynchronize(long event);

    int eventQuery(long event);

    /** → f0 */
    int eventElapsedTime(Out out, long start, long end);

    /** → i0 */
    int funcGetAttribute(Out out, int attribute, long function);

    int funcSetAttribute(long function, int attribute, int value);

    int funcSetCacheConfig(long function, int config);

    /** → l0 offset, l1 size */
    int funcGetParamInfo(Out out, long function, long index);

    /** → i0 */
    int occupancyMaxActiveBlocksPerMultiprocessor(Out out, long function, int blockSize, long dynamicSmem, int flags);

    /** {@code kernelParams}: a native {@code void**}. */
    int launchKernel(long function, int gx, int gy, int gz, int bx, int by, int bz, int sharedMem, long stream,
                     long kernelParams);

    /**
     * Slot 1 of the driver's private export table d4082055, cudart's integrity check
     * (docs/export-tables.md): the 16-byte answer for (cudart's version, the time) → l0, l1.
     * Only a real driver can answer it.
     */
    default int exportIntegrityCheck(Out out, int version, long unixSeconds) {
        return io.ivcuda.server.core.CuResult.NOT_SUPPORTED;
    }
}
