package io.ivcuda.server.backend;

/**
 * The driver operations the request handlers need. Every method returns a CUresult; out-values go
 * to the caller's {@link Out}, in the fields its javadoc names. Pointers and handles are native values as {@code long}; ids the
 * guest sees are minted above this seam. Implementations: {@link JnaCudaBackend} (the real driver)
 * and {@link HostMemoryBackend} (transport tests without a GPU).
 */
public interface CudaBackend {

    /** A human-readable name for log lines. */
    String describe();

    Out newOut();

    int init(int flags);

    /** → value */
    int driverGetVersion(Out out);

    /** → value (the native CUdevice) */
    int deviceGet(Out out, int ordinal);

    /** → value */
    int deviceGetCount(Out out);

    int deviceGetName(long dst, int capacity, int device);

    int deviceGetUuid(long dst16, int device);

    int deviceGetPciBusId(long dst, int capacity, int device);

    /** → bytes */
    int deviceTotalMem(Out out, int device);

    /** → value */
    int deviceGetAttribute(Out out, int attribute, int device);

    /** → handle */
    int ctxCreate(Out out, int flags, int device);

    int ctxDestroy(long ctx);

    /** → handle */
    int ctxGetCurrent(Out out);

    int ctxSetCurrent(long ctx);

    int ctxPushCurrent(long ctx);

    /** → handle */
    int ctxPopCurrent(Out out);

    /** → value */
    int ctxGetDevice(Out out);

    int ctxSynchronize();

    /** → value */
    int ctxGetFlags(Out out);

    /** → value */
    int ctxGetApiVersion(Out out, long ctx);

    /** → bytes */
    int ctxGetLimit(Out out, int limit);

    int ctxSetLimit(int limit, long value);

    /** → value (least), greatestPriority */
    int ctxGetStreamPriorityRange(Out out);

    /** → handle */
    int primaryCtxRetain(Out out, int device);

    int primaryCtxRelease(int device);

    int primaryCtxReset(int device);

    /** → value (flags), active */
    int primaryCtxGetState(Out out, int device);

    int primaryCtxSetFlags(int device, int flags);

    /** → handle */
    int moduleLoadData(Out out, long image);

    int moduleUnload(long module);

    /** → handle */
    int moduleGetFunction(Out out, long module, String name);

    /** → address, bytes */
    int moduleGetGlobal(Out out, long module, String name);

    /** → address */
    int memAlloc(Out out, long bytes);

    /** → address, bytes (the pitch) */
    int memAllocPitch(Out out, long widthBytes, long height, int elementSize);

    int memFree(long dptr);

    /** → bytes (free), totalBytes */
    int memGetInfo(Out out);

    /** → address (base), bytes (size) */
    int memGetAddressRange(Out out, long dptr);

    /** stream 0 with async false: the synchronous copy. */
    int memcpyHtoD(long dst, long srcHost, long bytes, long stream, boolean async);

    int memcpyDtoH(long dstHost, long src, long bytes, long stream, boolean async);

    int memcpyDtoD(long dst, long src, long bytes, long stream, boolean async);

    /** width 1, 2 or 4 bytes; N elements. */
    int memset(int width, long dst, int value, long count, long stream, boolean async);

    int memHostRegister(long address, long bytes, int flags);

    int memHostUnregister(long address);

    /** → address */
    int memHostGetDevicePointer(Out out, long address);

    /** → handle */
    int streamCreate(Out out, int flags, int priority);

    int streamDestroy(long stream);

    int streamSynchronize(long stream);

    int streamQuery(long stream);

    int streamWaitEvent(long stream, long event, int flags);

    /** → handle */
    int eventCreate(Out out, int flags);

    int eventDestroy(long event);

    int eventRecord(long event, long stream, int flags);

    int eventSynchronize(long event);

    int eventQuery(long event);

    /** → milliseconds */
    int eventElapsedTime(Out out, long start, long end);

    /** → value */
    int funcGetAttribute(Out out, int attribute, long function);

    int funcSetAttribute(long function, int attribute, int value);

    int funcSetCacheConfig(long function, int config);

    /** → offset, bytes (size) */
    int funcGetParamInfo(Out out, long function, long index);

    /** → value */
    int occupancyMaxActiveBlocksPerMultiprocessor(Out out, long function, int blockSize, long dynamicSmem, int flags);

    /** {@code kernelParams}: a native {@code void**}. */
    int launchKernel(long function, int gx, int gy, int gz, int bx, int by, int bz, int sharedMem, long stream,
                     long kernelParams);

    /**
     * Slot 1 of the driver's private export table d4082055, cudart's integrity check
     * (docs/export-tables.md): the 16-byte answer for (cudart's version, the time) → integrityLow, integrityHigh.
     * Only a real driver can answer it.
     */
    default int exportIntegrityCheck(Out out, int version, long unixSeconds) {
        return CuResult.NOT_SUPPORTED;
    }

    /**
     * Slot 4 of the driver's private export table 1734dc26 (docs/export-tables.md): the SM topology
     * of the current context's device as cuBLASLt asks it, two byte arrays of {@link Out#value}
     * entries each (one per TPC), copied to {@code out.scratch + SM_TOPOLOGY_OFFSET}, first then second. Only a
     * real driver can answer it.
     */
    int SM_TOPOLOGY_OFFSET = 256;

    default int smTopology(Out out) {
        return CuResult.NOT_SUPPORTED;
    }

    // ---- kernels (issue 12) ----
    // Libraries, CUkernels and launch extensions (api/kernels.api). Defaults answer
    // CUDA_ERROR_NOT_SUPPORTED: a backend without a GPU (host-memory) has nothing to load or run.

    /** cuLibraryLoadData: {@code count} JIT options (int[] at {@code options}, void*[] at {@code values}); the library in {@code out.handle}. */
    default int libraryLoadData(Out out, long image, long options, long values, int count) {
        return CuResult.NOT_SUPPORTED;
    }

    default int libraryUnload(long library) {
        return CuResult.NOT_SUPPORTED;
    }

    /** The kernel in {@code out.handle}. */
    default int libraryGetKernel(Out out, long library, String name) {
        return CuResult.NOT_SUPPORTED;
    }

    /** The library's module in the current context, in {@code out.handle}. */
    default int libraryGetModule(Out out, long library) {
        return CuResult.NOT_SUPPORTED;
    }

    /** The global's address and size in the current context: {@code out.address}, {@code out.bytes}. */
    default int libraryGetGlobal(Out out, long library, String name) {
        return CuResult.NOT_SUPPORTED;
    }

    /** The number of kernels in {@code out.value}. */
    default int libraryGetKernelCount(Out out, long library) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Writes {@code count} native kernels (8 bytes each) at {@code dst}. */
    default int libraryEnumerateKernels(long dst, int count, long library) {
        return CuResult.NOT_SUPPORTED;
    }

    /** The number of functions of a module in {@code out.value} (CUDA 12.4). */
    default int moduleGetFunctionCount(Out out, long module) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Writes {@code count} native functions of the module (8 bytes each) at {@code dst}. */
    default int moduleEnumerateFunctions(long dst, int count, long module) {
        return CuResult.NOT_SUPPORTED;
    }

    /** The kernel's function in the current context, in {@code out.handle}. */
    default int kernelGetFunction(Out out, long kernel) {
        return CuResult.NOT_SUPPORTED;
    }

    default int kernelGetAttribute(Out out, int attribute, long kernel, int device) {
        return CuResult.NOT_SUPPORTED;
    }

    default int kernelSetAttribute(int attribute, int value, long kernel, int device) {
        return CuResult.NOT_SUPPORTED;
    }

    default int kernelSetCacheConfig(long kernel, int config, int device) {
        return CuResult.NOT_SUPPORTED;
    }

    /** {@code out.offset}, {@code out.bytes}; CUDA_ERROR_INVALID_VALUE past the last parameter. */
    default int kernelGetParamInfo(Out out, long kernel, long index) {
        return CuResult.NOT_SUPPORTED;
    }

    /** The driver's NUL-terminated name in {@code out.address} (valid while the kernel lives). */
    default int kernelGetName(Out out, long kernel) {
        return CuResult.NOT_SUPPORTED;
    }

    /** The driver's NUL-terminated name in {@code out.address} (valid while the function lives). */
    default int funcGetName(Out out, long function) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuLaunchKernelEx over a CUlaunchConfig at {@code config} (the caller's native memory). */
    default int launchKernelEx(long config, long function, long kernelParams) {
        return CuResult.NOT_SUPPORTED;
    }

    /** {@code out.value}. */
    default int occupancyMaxActiveClusters(Out out, long function, long config) {
        return CuResult.NOT_SUPPORTED;
    }

    /** {@code out.value}. */
    default int occupancyMaxPotentialClusterSize(Out out, long function, long config) {
        return CuResult.NOT_SUPPORTED;
    }

    /** {@code out.bytes}. */
    default int occupancyAvailableDynamicSMemPerBlock(Out out, long function, int numBlocks, int blockSize) {
        return CuResult.NOT_SUPPORTED;
    }

    /** The context's id in {@code out.handle} (ctx 0: the current one). */
    default int ctxGetId(Out out, long ctx) {
        return CuResult.NOT_SUPPORTED;
    }

    default int ctxGetCacheConfig(Out out) {
        return CuResult.NOT_SUPPORTED;
    }

    default int ctxSetCacheConfig(int config) {
        return CuResult.NOT_SUPPORTED;
    }

    default int ctxGetSharedMemConfig(Out out) {
        return CuResult.NOT_SUPPORTED;
    }

    default int ctxSetSharedMemConfig(int config) {
        return CuResult.NOT_SUPPORTED;
    }

    default int funcSetSharedMemConfig(long function, int config) {
        return CuResult.NOT_SUPPORTED;
    }

    default int ctxResetPersistingL2Cache() {
        return CuResult.NOT_SUPPORTED;
    }

    default int ctxRecordEvent(long ctx, long event) {
        return CuResult.NOT_SUPPORTED;
    }

    default int ctxWaitEvent(long ctx, long event) {
        return CuResult.NOT_SUPPORTED;
    }

    default int deviceCanAccessPeer(Out out, int device, int peer) {
        return CuResult.NOT_SUPPORTED;
    }

    default int deviceGetP2PAttribute(Out out, int attribute, int src, int dst) {
        return CuResult.NOT_SUPPORTED;
    }

    default int ctxEnablePeerAccess(long peer, int flags) {
        return CuResult.NOT_SUPPORTED;
    }

    default int ctxDisablePeerAccess(long peer) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuLinkCreate with {@code count} JIT options; the state in {@code out.handle}. */
    default int linkCreate(Out out, int count, long options, long values) {
        return CuResult.NOT_SUPPORTED;
    }

    default int linkAddData(long state, int type, long data, long size, String name, int count, long options, long values) {
        return CuResult.NOT_SUPPORTED;
    }

    /** The linked image (owned by the state): {@code out.address}, {@code out.bytes}. */
    default int linkComplete(Out out, long state) {
        return CuResult.NOT_SUPPORTED;
    }

    default int linkDestroy(long state) {
        return CuResult.NOT_SUPPORTED;
    }

    // ---- strided copies (issue 12) ----

    /** CUmemorytype of a strided copy's side: host memory (a server address). */
    int MEMORYTYPE_HOST = 1;
    /** CUmemorytype of a strided copy's side: device memory. */
    int MEMORYTYPE_DEVICE = 2;

    /**
     * A 3D copy of {@code width} bytes × {@code height} rows × {@code depth} slices between two linear
     * sides, each given by its start address (offsets already applied), its memory type
     * ({@link #MEMORYTYPE_HOST} or {@link #MEMORYTYPE_DEVICE}), its pitch and its height (rows a
     * slice). Stream 0 with async false: the synchronous copy. The caller has range-checked both sides.
     */
    default int memcpy3D(int dstType, long dst, long dstPitch, long dstHeight, int srcType, long src, long srcPitch,
                         long srcHeight, long width, long height, long depth, long stream, boolean async) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuMemsetD2D8/16/32: {@code width} elements of {@code elementSize} (1, 2 or 4) bytes × {@code height} rows. */
    default int memset2D(int elementSize, long dst, long pitch, int value, long width, long height, long stream,
                         boolean async) {
        return CuResult.NOT_SUPPORTED;
    }

    // ---- pools (issue 12) ----

    /** cuMemAllocAsync (pool 0) or cuMemAllocFromPoolAsync → address. */
    default int memAllocAsync(Out out, long bytes, long pool, long stream) {
        return CuResult.NOT_SUPPORTED;
    }

    default int memFreeAsync(long dptr, long stream) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → handle */
    default int deviceGetDefaultMemPool(Out out, int device) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → handle */
    default int deviceGetMemPool(Out out, int device) {
        return CuResult.NOT_SUPPORTED;
    }

    /** {@code attribute} 1-3 takes an int, 4-8 a 64-bit value (CUmemPool_attribute). */
    default int memPoolSetAttribute(long pool, int attribute, long value) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → bytes (the value, an int widened for attributes 1-3) */
    default int memPoolGetAttribute(Out out, long pool, int attribute) {
        return CuResult.NOT_SUPPORTED;
    }

    default int memPoolTrimTo(long pool, long minBytesToKeep) {
        return CuResult.NOT_SUPPORTED;
    }

    // ---- graphs (issue 12) ----
    // Streams, stream memory operations, host functions, capture and graphs (api/graphs.api,
    // docs/graphs.md). Defaults answer CUDA_ERROR_NOT_SUPPORTED: a backend implements what it can
    // do honestly.

    /** → value (the stream's flags) */
    default int streamGetFlags(Out out, long stream) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → value (the stream's priority) */
    default int streamGetPriority(Out out, long stream) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → handle (the native context the stream belongs to) */
    default int streamGetCtx(Out out, long stream) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → handle (the stream's unique id) */
    default int streamGetId(Out out, long stream) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Writes the attribute's 64-byte CUstreamAttrValue at {@code value}. */
    default int streamGetAttribute(long stream, int attribute, long value) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Sets the attribute from the 64-byte CUstreamAttrValue at {@code value} (checked by the caller). */
    default int streamSetAttribute(long stream, int attribute, long value) {
        return CuResult.NOT_SUPPORTED;
    }

    default int streamCopyAttributes(long dst, long src) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuStreamWaitValue32/64_v2 ({@code wide}: 64 bits). */
    default int streamWaitValue(long stream, long address, long value, int flags, boolean wide) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuStreamWriteValue32/64_v2 ({@code wide}: 64 bits). */
    default int streamWriteValue(long stream, long address, long value, int flags, boolean wide) {
        return CuResult.NOT_SUPPORTED;
    }

    /** {@code params}: {@code count} native CUstreamBatchMemOpParams, checked by the caller. */
    default int streamBatchMemOp(long stream, int count, long params, int flags) {
        return CuResult.NOT_SUPPORTED;
    }

    /**
     * Puts a host function of the server's on the stream: when the stream reaches it, it calls
     * {@link HostCallbacks#fire}(key, CUDA_SUCCESS) and the stream goes on once that returns.
     */
    default int launchHostFunc(long stream, long key) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Like {@link #launchHostFunc}, as cuStreamAddCallback: the stream's status reaches the key's sink. */
    default int streamAddCallback(long stream, long key, int flags) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → value (CUstreamCaptureStatus: 0 none, 1 active, 2 invalidated) */
    default int streamIsCapturing(Out out, long stream) {
        return CuResult.NOT_SUPPORTED;
    }

    default int streamBeginCapture(long stream, int mode) {
        return CuResult.NOT_SUPPORTED;
    }

    /** {@code nodes}/{@code edges}: native arrays of {@code count} (edges may be 0). */
    default int streamBeginCaptureToGraph(long stream, long graph, long nodes, long edges, long count, int mode) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → handle (the captured graph) */
    default int streamEndCapture(Out out, long stream) {
        return CuResult.NOT_SUPPORTED;
    }

    /**
     * → value (the capture status), totalBytes (the capture id), handle (the graph being captured),
     * bytes (the number of dependencies), address (the driver's array of them), offset (its array of
     * their edge data, or 0). The arrays are the driver's, valid until the stream's next call.
     */
    default int streamGetCaptureInfo(Out out, long stream) {
        return CuResult.NOT_SUPPORTED;
    }

    /** {@code nodes}/{@code edges}: native arrays of {@code count} (edges may be 0). */
    default int streamUpdateCaptureDependencies(long stream, long nodes, long edges, long count, int flags) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Sets this thread's capture mode → value (the previous one). */
    default int threadExchangeStreamCaptureMode(Out out, int mode) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → handle */
    default int graphCreate(Out out, int flags) {
        return CuResult.NOT_SUPPORTED;
    }

    default int graphDestroy(long graph) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → handle */
    default int graphClone(Out out, long graph) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → handle */
    default int graphInstantiate(Out out, long graph, long flags) {
        return CuResult.NOT_SUPPORTED;
    }

    default int graphLaunch(long exec, long stream) {
        return CuResult.NOT_SUPPORTED;
    }

    default int graphUpload(long exec, long stream) {
        return CuResult.NOT_SUPPORTED;
    }

    default int graphExecDestroy(long exec) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → handle (the flags) */
    default int graphExecGetFlags(Out out, long exec) {
        return CuResult.NOT_SUPPORTED;
    }

    /**
     * The graph's nodes ({@code roots}: its root nodes) into the native array {@code nodes} of
     * {@code capacity} (0: only count) → bytes (how many there are).
     */
    default int graphGetNodes(Out out, long graph, boolean roots, long nodes, long capacity) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → value (CUgraphNodeType) */
    default int graphNodeGetType(Out out, long node) {
        return CuResult.NOT_SUPPORTED;
    }

    /**
     * Adds a node of {@code kind} (0 empty, 1 event record, 2 event wait, 3 child graph of
     * {@code object}, else the event) after the native array {@code deps} of {@code count} → handle.
     */
    default int graphAddSimpleNode(Out out, long graph, long deps, long count, int kind, long object) {
        return CuResult.NOT_SUPPORTED;
    }

    default int graphDestroyNode(long node) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Adds ({@code remove} false) or removes edges from→to (native arrays; edges may be 0). */
    default int graphEdges(long graph, boolean remove, long from, long to, long edges, long count) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → value (CUgraphExecUpdateResult), handle (the error node), address (the error's from node) */
    default int graphExecUpdate(Out out, long exec, long graph) {
        return CuResult.NOT_SUPPORTED;
    }

    default int deviceGraphMemTrim(int device) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → bytes */
    default int deviceGetGraphMemAttribute(Out out, int device, int attribute) {
        return CuResult.NOT_SUPPORTED;
    }

    default int deviceSetGraphMemAttribute(Out out, int device, int attribute, long value) {
        return CuResult.NOT_SUPPORTED;
    }

    // ---- graph nodes with parameters (issue 12) ----
    // Kernel, memset, memcpy, host and conditional nodes made by hand (api/graphs.api section
    // graphbuild, docs/graphs.md). op: NODE_ADD adds to graph after the native array deps of count
    // (→ handle, the new node); NODE_SET sets node's parameters; NODE_EXEC_SET those of node in exec.

    int NODE_ADD = 0;
    int NODE_SET = 1;
    int NODE_EXEC_SET = 2;

    /** {@code kernelParams}: the native void** of the function's parameters (0: none); the driver copies them. */
    default int graphKernelNode(Out out, int op, long graph, long node, long exec, long deps, long count, long function,
                                int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ, int sharedMemBytes,
                                long kernelParams) {
        return CuResult.NOT_SUPPORTED;
    }

    /** A memset node in {@code ctx}: width elements of elementSize (1, 2, 4) bytes, height rows of pitch. */
    default int graphMemsetNode(Out out, int op, long graph, long node, long exec, long deps, long count, long ctx,
                                long dst, long pitch, int value, int elementSize, long width, long height) {
        return CuResult.NOT_SUPPORTED;
    }

    /** A copy node in {@code ctx}; each side as {@link #memcpy3D} takes it. */
    default int graphCopyNode(Out out, int op, long graph, long node, long exec, long deps, long count, long ctx,
                              int dstType, long dst, long dstPitch, long dstHeight, int srcType, long src, long srcPitch,
                              long srcHeight, long width, long height, long depth) {
        return CuResult.NOT_SUPPORTED;
    }

    /** A host node that calls {@link HostCallbacks#fire}(key, CUDA_SUCCESS) when the graph reaches it. */
    default int graphHostNode(Out out, int op, long graph, long node, long exec, long deps, long count, long key) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → handle (the CUgraphConditionalHandle value) */
    default int graphConditionalHandleCreate(Out out, long graph, long ctx, int defaultLaunchValue, int flags) {
        return CuResult.NOT_SUPPORTED;
    }

    /**
     * Adds a conditional node (CUgraphConditionalNodeType {@code type}, {@code size} bodies) →
     * handle (the node), address (the driver's array of its {@code size} body graphs).
     */
    default int graphAddConditionalNode(Out out, long graph, long deps, long count, long ctx, long handle, int type,
                                        int size) {
        return CuResult.NOT_SUPPORTED;
    }

    // ---- graph memory nodes (docs/graphs.md "Memory nodes") ----

    /** sizeof(CUDA_MEM_ALLOC_NODE_PARAMS) and its fields' offsets (cuda.h 13.0, LP64); CUmemAccessDesc is 12 bytes. */
    int MEM_ALLOC_NODE_SIZE = 120;
    int MEM_ALLOC_NODE_ACCESS_DESCS = 88;
    int MEM_ALLOC_NODE_ACCESS_COUNT = 96;
    int MEM_ALLOC_NODE_BYTESIZE = 104;
    int MEM_ALLOC_NODE_DPTR = 112;
    /** Where {@link #graphMemAllocNodeGetParams} leaves the struct and a copy of its access descriptors in the scratch. */
    int MEM_ALLOC_NODE_SCRATCH = 64;
    int MEM_ALLOC_NODE_SCRATCH_DESCS = 256;
    /** The most access descriptors {@link #graphMemAllocNodeGetParams} copies. */
    int MEM_ALLOC_NODE_MAX_DESCS = 8;

    /**
     * Adds an allocation node of a pinned pool on {@code device} (native), with one access descriptor
     * of {@code device} per entry of {@code accessFlags} → handle (the node), address (the allocation's
     * address, the driver's nodeParams.dptr).
     */
    default int graphMemAllocNode(Out out, long graph, long deps, long count, int device, long bytesize,
                                  int[] accessFlags) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Adds a free node of {@code dptr} → handle (the node). */
    default int graphMemFreeNode(Out out, long graph, long deps, long count, long dptr) {
        return CuResult.NOT_SUPPORTED;
    }

    /**
     * The parameters of an allocation node: the CUDA_MEM_ALLOC_NODE_PARAMS the driver wrote at
     * scratch + {@link #MEM_ALLOC_NODE_SCRATCH}, and a copy of its first access descriptors (at most
     * {@link #MEM_ALLOC_NODE_MAX_DESCS}) at scratch + {@link #MEM_ALLOC_NODE_SCRATCH_DESCS}.
     */
    default int graphMemAllocNodeGetParams(Out out, long node) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → address: the address a free node frees. */
    default int graphMemFreeNodeGetParams(Out out, long node) {
        return CuResult.NOT_SUPPORTED;
    }

    // ---- sharing: the host's NVML for the guest's (issue 15, docs/sharing.md) ----
    // Answers are nvmlReturn_t (NvmlResult); a backend without NVML says so: NOT_SUPPORTED.

    /** Opens the host's NVML (once; later calls answer the first's result) on the GPU CUDA names {@code pciBusId}. */
    default int nvmlOpen(String pciBusId) {
        return NvmlResult.NOT_SUPPORTED;
    }

    /** A string ({@link NvmlQuery} DRIVER_VERSION..PCI_BUS_ID), NUL-terminated, into {@code dst} (capacity bytes). */
    default int nvmlString(int what, long dst, int capacity) {
        return NvmlResult.NOT_SUPPORTED;
    }

    /** → bytes: a number of the GPU ({@link NvmlQuery} TEMPERATURE..PCI_IDS; arg: a sensor or clock type). */
    default int nvmlValue(Out out, int what, int arg) {
        return NvmlResult.NOT_SUPPORTED;
    }

    /** → totalBytes, bytes (free), address (used): the card's memory as NVML reports it. */
    default int nvmlMemory(Out out) {
        return NvmlResult.NOT_SUPPORTED;
    }

    // ---- arrays and textures (issue 12) ----
    // Arrays, mipmapped arrays, texture and surface objects (api/memory-objects.api, docs/memory.md).
    // Descriptor arguments are native memory laid out as cuda.h's structs, written by the caller.

    /** CUmemorytype of a copy's side: a CUDA array, given with its X (bytes), Y and Z offsets. */
    int MEMORYTYPE_ARRAY = 3;

    /** cuArray3DCreate_v2 from a CUDA_ARRAY3D_DESCRIPTOR's fields → handle */
    default int arrayCreate(Out out, long width, long height, long depth, int format, int channels, int flags) {
        return CuResult.NOT_SUPPORTED;
    }

    default int arrayDestroy(long array) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Writes the 24-byte CUDA_ARRAY_DESCRIPTOR at {@code desc}. */
    default int arrayGetDescriptor(long desc, long array) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Writes the 40-byte CUDA_ARRAY3D_DESCRIPTOR at {@code desc}. */
    default int array3DGetDescriptor(long desc, long array) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Writes the 32-byte CUDA_ARRAY_MEMORY_REQUIREMENTS at {@code requirements}. */
    default int arrayGetMemoryRequirements(long requirements, long array, int device) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → handle (the plane, owned by the array) */
    default int arrayGetPlane(Out out, long array, int plane) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuMipmappedArrayCreate from a CUDA_ARRAY3D_DESCRIPTOR's fields → handle */
    default int mipmappedArrayCreate(Out out, long width, long height, long depth, int format, int channels, int flags,
                                     int levels) {
        return CuResult.NOT_SUPPORTED;
    }

    default int mipmappedArrayDestroy(long mipmap) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → handle (the level, owned by the mipmapped array) */
    default int mipmappedArrayGetLevel(Out out, long mipmap, int level) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Writes the 32-byte CUDA_ARRAY_MEMORY_REQUIREMENTS at {@code requirements}. */
    default int mipmappedArrayGetMemoryRequirements(long requirements, long mipmap, int device) {
        return CuResult.NOT_SUPPORTED;
    }

    /** → bytes (the width in elements) */
    default int deviceGetTexture1DLinearMaxWidth(Out out, int format, int channels, int device) {
        return CuResult.NOT_SUPPORTED;
    }

    /**
     * A 3D copy of {@code width} bytes × {@code height} rows × {@code depth} slices where either side
     * may be an array ({@link #MEMORYTYPE_ARRAY}: the native array and its X/Y/Z offsets; pitch and
     * height unused) or linear as in {@link #memcpy3D} (X/Y/Z 0). The caller has checked both sides.
     */
    default int memcpy3DArray(int dstType, long dst, long dstX, long dstY, long dstZ, long dstPitch, long dstHeight,
                              int srcType, long src, long srcX, long srcY, long srcZ, long srcPitch, long srcHeight,
                              long width, long height, long depth, long stream, boolean async) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuTexObjectCreate from native descriptors ({@code viewDesc} 0: none) → handle (the object's value) */
    default int texObjectCreate(Out out, long resDesc, long texDesc, long viewDesc) {
        return CuResult.NOT_SUPPORTED;
    }

    default int texObjectDestroy(long tex) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Writes the 144-byte CUDA_RESOURCE_DESC (native handles) at {@code desc}. */
    default int texObjectGetResourceDesc(long desc, long tex) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Writes the 104-byte CUDA_TEXTURE_DESC at {@code desc}. */
    default int texObjectGetTextureDesc(long desc, long tex) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Writes the 112-byte CUDA_RESOURCE_VIEW_DESC at {@code desc}. */
    default int texObjectGetResourceViewDesc(long desc, long tex) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuSurfObjectCreate from a native CUDA_RESOURCE_DESC → handle (the object's value) */
    default int surfObjectCreate(Out out, long resDesc) {
        return CuResult.NOT_SUPPORTED;
    }

    default int surfObjectDestroy(long surf) {
        return CuResult.NOT_SUPPORTED;
    }

    /** Writes the 144-byte CUDA_RESOURCE_DESC (native handles) at {@code desc}. */
    default int surfObjectGetResourceDesc(long desc, long surf) {
        return CuResult.NOT_SUPPORTED;
    }

    // ---- tensor maps (issue 12) ----
    // api/memory-objects.api, docs/memory.md. The driver's encoders, with native arguments: the
    // 128-byte map at {@code map} (64-byte aligned), the arrays at native addresses with the rank's
    // entries. The defaults answer CUDA_ERROR_NOT_SUPPORTED: the host-memory backend has no driver
    // to encode a map and no TMA unit to read one, so it makes none up.

    /** cuTensorMapEncodeTiled: writes the map at {@code map}. */
    default int tensorMapEncodeTiled(long map, int dataType, int rank, long globalAddress, long globalDim,
                                     long globalStrides, long boxDim, long elementStrides, int interleave, int swizzle,
                                     int l2Promotion, int oobFill) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuTensorMapEncodeIm2col: writes the map at {@code map}. */
    default int tensorMapEncodeIm2col(long map, int dataType, int rank, long globalAddress, long globalDim,
                                      long globalStrides, long lowerCorner, long upperCorner, int channelsPerPixel,
                                      int pixelsPerColumn, long elementStrides, int interleave, int swizzle,
                                      int l2Promotion, int oobFill) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuTensorMapEncodeIm2colWide (CUDA 12.8): writes the map at {@code map}. */
    default int tensorMapEncodeIm2colWide(long map, int dataType, int rank, long globalAddress, long globalDim,
                                          long globalStrides, int lowerCornerWidth, int upperCornerWidth,
                                          int channelsPerPixel, int pixelsPerColumn, long elementStrides,
                                          int interleave, int mode, int swizzle, int l2Promotion, int oobFill) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuTensorMapReplaceAddress: rewrites the map at {@code map} in place. */
    default int tensorMapReplaceAddress(long map, long globalAddress) {
        return CuResult.NOT_SUPPORTED;
    }

    // ---- virtual memory and created pools (issue 12) ----
    // api/vmm.api, docs/memory.md. A CUmemAllocationProp travels as its scalar fields: type,
    // requestedHandleTypes, the (native) device of a device location, allocFlags packed as
    // compressionType | gpuDirectRDMACapable << 8 | usage << 16. Defaults answer
    // CUDA_ERROR_NOT_SUPPORTED.

    /** cuMemGetAllocationGranularity → bytes */
    default int memGetAllocationGranularity(Out out, int type, int handleTypes, int device, int allocFlags, int option) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuMemAddressReserve → address */
    default int memAddressReserve(Out out, long size, long alignment, long addr, long flags) {
        return CuResult.NOT_SUPPORTED;
    }

    default int memAddressFree(long ptr, long size) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuMemCreate on a device location → handle */
    default int memCreate(Out out, long size, int type, int handleTypes, int device, int allocFlags, long flags) {
        return CuResult.NOT_SUPPORTED;
    }

    default int memRelease(long handle) {
        return CuResult.NOT_SUPPORTED;
    }

    default int memMap(long ptr, long size, long offset, long handle, long flags) {
        return CuResult.NOT_SUPPORTED;
    }

    default int memUnmap(long ptr, long size) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuMemSetAccess with one CUmemAccessDesc: a device location and its CUmemAccess_flags. */
    default int memSetAccess(long ptr, long size, int device, int flags) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuMemGetAccess for a device location → value (CUmemAccess_flags) */
    default int memGetAccess(Out out, int device, long ptr) {
        return CuResult.NOT_SUPPORTED;
    }

    /**
     * cuMemGetAllocationPropertiesFromHandle → value (type), offset (requestedHandleTypes), address
     * (the location's native device, -1 if the location is not a device), bytes (allocFlags, packed).
     */
    default int memGetAllocationProperties(Out out, long handle) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuMemRetainAllocationHandle → handle */
    default int memRetainAllocationHandle(Out out, long addr) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuMemPoolCreate of pinned memory on a device location → handle */
    default int memPoolCreate(Out out, int handleTypes, int device, long maxSize, int usage) {
        return CuResult.NOT_SUPPORTED;
    }

    default int memPoolDestroy(long pool) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuMemPoolSetAccess with one CUmemAccessDesc: a device location and its CUmemAccess_flags. */
    default int memPoolSetAccess(long pool, int device, int flags) {
        return CuResult.NOT_SUPPORTED;
    }

    /** cuMemPoolGetAccess for a device location → value (CUmemAccess_flags) */
    default int memPoolGetAccess(Out out, long pool, int device) {
        return CuResult.NOT_SUPPORTED;
    }

    // ---- JIT logs of module loads (issue 12) ----

    /**
     * cuModuleLoadDataEx with {@code count} JIT options (int[] at {@code options}, void*[] at
     * {@code values}: the logs, their sizes and the wall time, which the driver writes during the
     * call) → handle. A backend without a JIT compiler (host-memory) has no logs to write: it loads
     * as {@link #moduleLoadData} does.
     */
    default int moduleLoadDataEx(Out out, long image, int count, long options, long values) {
        return moduleLoadData(out, image);
    }
}
