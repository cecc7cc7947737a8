package io.ivcuda.server.backend;

import io.ivcuda.common.Backend;
import io.ivcuda.common.config.ServerKeys;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.agrona.UnsafeApi;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * A stand-in "device" in host RAM, to test the transport without a GPU (backend=host-memory).
 * Device memory is malloc'd blocks behind fake device addresses; streams and events complete at
 * once; contexts are counters with a per-thread current stack. Modules and launches are not
 * supported. Never a substitute for the GPU path.
 */
public class HostMemoryBackend implements CudaBackend {
    private static final Logger LOG = LogManager.getLogger(HostMemoryBackend.class);
    private static final long DEVICE_BASE = 0x7_0000_0000L;
    private static final long TOTAL = 1L << 30;

    private record Block(long hostAddress, long size) {
    }

    private final TreeMap<Long, Block> blocks = new TreeMap<>();
    /** Registered host ranges: start → length (memHostRegister). */
    private final TreeMap<Long, Long> registered = new TreeMap<>();
    private final AtomicLong nextObject = new AtomicLong(0x1000);
    private final ThreadLocal<ArrayDeque<Long>> contextStack = ThreadLocal.withInitial(ArrayDeque::new);
    private long nextDevice = DEVICE_BASE;
    private long used;

    public HostMemoryBackend() {
        LOG.warn("{}={}: device memory lives in host RAM, no GPU is used — for transport tests only", ServerKeys.BACKEND.name(),
                Backend.HOST_MEMORY.word());
    }

    @Override
    public String describe() {
        return "host-memory (test backend, no GPU)";
    }

    @Override
    public Out newOut() {
        return new Out(UnsafeApi.allocateMemory(Out.SCRATCH_SIZE));
    }

    /** The host address of [address, address+bytes) if it lies in one block, else 0. */
    private synchronized long translate(long address, long bytes) {
        Map.Entry<Long, Block> e = blocks.floorEntry(address);
        if (e == null || bytes < 0 || address - e.getKey() + bytes > e.getValue().size()) {
            if (bytes > 0 && registeredLength(address, bytes) != 0) {
                return address; // registered host memory is its own device address
            }
            return translateMapped(address, bytes);
        }
        return e.getValue().hostAddress() + (address - e.getKey());
    }

    @Override
    public int init(int flags) {
        return flags == 0 ? CuResult.SUCCESS : CuResult.INVALID_VALUE;
    }

    @Override
    public int driverGetVersion(Out o) {
        o.value = 13000;
        return CuResult.SUCCESS;
    }

    @Override
    public int deviceGet(Out o, int ordinal) {
        if (ordinal != 0) {
            return CuResult.INVALID_DEVICE;
        }
        o.value = 0;
        return CuResult.SUCCESS;
    }

    @Override
    public int deviceGetCount(Out o) {
        o.value = 1;
        return CuResult.SUCCESS;
    }

    private static int putString(long dst, int capacity, String s) {
        byte[] b = s.getBytes(StandardCharsets.US_ASCII);
        int n = Math.min(b.length, capacity - 1);
        for (int i = 0; i < n; i++) {
            UnsafeApi.putByte(dst + i, b[i]);
        }
        UnsafeApi.putByte(dst + n, (byte) 0);
        return CuResult.SUCCESS;
    }

    @Override
    public int deviceGetName(long dst, int capacity, int device) {
        if (device != 0 || capacity < 1) {
            return device != 0 ? CuResult.INVALID_DEVICE : CuResult.INVALID_VALUE;
        }
        return putString(dst, capacity, "ivcuda host-memory test device");
    }

    @Override
    public int deviceGetUuid(long dst16, int device) {
        UnsafeApi.setMemory(dst16, 16, (byte) 0x11);
        return device == 0 ? CuResult.SUCCESS : CuResult.INVALID_DEVICE;
    }

    @Override
    public int deviceGetPciBusId(long dst, int capacity, int device) {
        if (capacity < 1) {
            return CuResult.INVALID_VALUE;
        }
        return putString(dst, capacity, "0000:00:00.0");
    }

    @Override
    public int deviceTotalMem(Out o, int device) {
        o.bytes = TOTAL;
        return CuResult.SUCCESS;
    }

    /**
     * One past the last {@code CUdevice_attribute} of CUDA 13.0's cuda.h ({@code CU_DEVICE_ATTRIBUTE_MAX}): the
     * driver answers any other number {@code CUDA_ERROR_INVALID_VALUE}, and so does this test device, so that a
     * program's check of that answer (gpu/programs/queries.c asks for attribute 100000) passes here too.
     */
    static final int DEVICE_ATTRIBUTE_END = 148;

    @Override
    public int deviceGetAttribute(Out o, int attribute, int device) {
        o.value = 0;
        if (device != 0) {
            return CuResult.INVALID_DEVICE;
        }
        return attribute >= 1 && attribute < DEVICE_ATTRIBUTE_END ? CuResult.SUCCESS : CuResult.INVALID_VALUE;
    }

    @Override
    public int ctxCreate(Out o, int flags, int device) {
        o.handle = nextObject.incrementAndGet();
        contextStack.get().push(o.handle);
        return CuResult.SUCCESS;
    }

    @Override
    public int ctxDestroy(long ctx) {
        contextStack.get().remove(ctx);
        return CuResult.SUCCESS;
    }

    @Override
    public int ctxGetCurrent(Out o) {
        Long c = contextStack.get().peek();
        o.handle = c == null ? 0 : c;
        return CuResult.SUCCESS;
    }

    @Override
    public int ctxSetCurrent(long ctx) {
        ArrayDeque<Long> s = contextStack.get();
        if (!s.isEmpty()) {
            s.pop();
        }
        if (ctx != 0) {
            s.push(ctx);
        }
        return CuResult.SUCCESS;
    }

    @Override
    public int ctxPushCurrent(long ctx) {
        contextStack.get().push(ctx);
        return CuResult.SUCCESS;
    }

    @Override
    public int ctxPopCurrent(Out o) {
        Long c = contextStack.get().poll();
        o.handle = c == null ? 0 : c;
        return c == null ? CuResult.INVALID_CONTEXT : CuResult.SUCCESS;
    }

    @Override
    public int ctxGetDevice(Out o) {
        o.value = 0;
        return contextStack.get().isEmpty() ? CuResult.INVALID_CONTEXT : CuResult.SUCCESS;
    }

    @Override
    public int ctxSynchronize() {
        return TestFault.take() ? CuResult.ILLEGAL_ADDRESS : CuResult.SUCCESS;
    }

    /**
     * Test-only: the one way a test drives the server's real recovery from a fatal GPU fault (poisoning,
     * refused hellos, the re-exec; docs/architecture.md, "Fault recovery") without a GPU, since this
     * backend runs no kernels and never faults. When the server's environment has
     * {@code IVCUDA_HOST_MEMORY_FAULT=FILE} and FILE exists, the next cuCtxSynchronize removes it and
     * answers CUDA_ERROR_ILLEGAL_ADDRESS, once (the re-executed server finds no file). Only this test
     * backend reads the variable: a server on the GPU ({@code backend=cuda}) never looks at it.
     */
    static final class TestFault {
        private static final String FILE = System.getenv("IVCUDA_HOST_MEMORY_FAULT");

        private TestFault() {
        }

        static boolean take() {
            if (FILE == null || FILE.isEmpty()) {
                return false;
            }
            try {
                return java.nio.file.Files.deleteIfExists(java.nio.file.Path.of(FILE));
            } catch (java.io.IOException | RuntimeException e) {
                return false;
            }
        }
    }

    @Override
    public int ctxGetFlags(Out o) {
        o.value = 0;
        return CuResult.SUCCESS;
    }

    @Override
    public int ctxGetApiVersion(Out o, long ctx) {
        o.value = 13000;
        return CuResult.SUCCESS;
    }

    @Override
    public int ctxGetLimit(Out o, int limit) {
        o.bytes = 0;
        return CuResult.SUCCESS;
    }

    @Override
    public int ctxSetLimit(int limit, long value) {
        return CuResult.SUCCESS;
    }

    @Override
    public int ctxGetStreamPriorityRange(Out o) {
        o.value = 0;
        o.greatestPriority = 0;
        return CuResult.SUCCESS;
    }

    private final long primary = nextObject.incrementAndGet();

    @Override
    public int primaryCtxRetain(Out o, int device) {
        o.handle = primary;
        return device == 0 ? CuResult.SUCCESS : CuResult.INVALID_DEVICE;
    }

    @Override
    public int primaryCtxRelease(int device) {
        return CuResult.SUCCESS;
    }

    @Override
    public int primaryCtxReset(int device) {
        return CuResult.SUCCESS;
    }

    @Override
    public int primaryCtxGetState(Out o, int device) {
        o.value = 0;
        o.active = 1;
        return CuResult.SUCCESS;
    }

    @Override
    public int primaryCtxSetFlags(int device, int flags) {
        return CuResult.SUCCESS;
    }

    @Override
    public int moduleLoadData(Out o, long image) {
        return CuResult.NOT_SUPPORTED;
    }

    @Override
    public int moduleUnload(long module) {
        return CuResult.NOT_SUPPORTED;
    }

    @Override
    public int moduleGetFunction(Out o, long module, String name) {
        return CuResult.NOT_SUPPORTED;
    }

    @Override
    public int moduleGetGlobal(Out o, long module, String name) {
        return CuResult.NOT_SUPPORTED;
    }

    @Override
    public synchronized int memAlloc(Out o, long bytes) {
        if (bytes <= 0) {
            return CuResult.INVALID_VALUE;
        }
        if (bytes > TOTAL - used) {
            return CuResult.OUT_OF_MEMORY;
        }
        long host = UnsafeApi.allocateMemory(bytes);
        long device = nextDevice;
        nextDevice += (bytes + 0xffff) & ~0xffffL;
        blocks.put(device, new Block(host, bytes));
        used += bytes;
        o.address = device;
        return CuResult.SUCCESS;
    }

    @Override
    public int memAllocPitch(Out o, long widthBytes, long height, int elementSize) {
        long pitch = (widthBytes + 255) & ~255L;
        int r = memAlloc(o, pitch * height);
        o.bytes = pitch;
        return r;
    }

    @Override
    public synchronized int memFree(long dptr) {
        Block b = blocks.remove(dptr);
        if (b == null) {
            return CuResult.INVALID_VALUE;
        }
        UnsafeApi.freeMemory(b.hostAddress());
        used -= b.size();
        return CuResult.SUCCESS;
    }

    @Override
    public synchronized int memGetInfo(Out o) {
        o.bytes = TOTAL - used;
        o.totalBytes = TOTAL;
        return CuResult.SUCCESS;
    }

    @Override
    public synchronized int memGetAddressRange(Out o, long dptr) {
        Map.Entry<Long, Block> e = blocks.floorEntry(dptr);
        if (e == null || dptr - e.getKey() >= e.getValue().size()) {
            return CuResult.NOT_FOUND;
        }
        o.address = e.getKey();
        o.bytes = e.getValue().size();
        return CuResult.SUCCESS;
    }

    @Override
    public int memcpyHtoD(long dst, long srcHost, long bytes, long stream, boolean async) {
        long d = translate(dst, bytes);
        if (d == 0) {
            return CuResult.INVALID_VALUE;
        }
        UnsafeApi.copyMemory(srcHost, d, bytes);
        return CuResult.SUCCESS;
    }

    @Override
    public int memcpyDtoH(long dstHost, long src, long bytes, long stream, boolean async) {
        long s = translate(src, bytes);
        if (s == 0) {
            return CuResult.INVALID_VALUE;
        }
        UnsafeApi.copyMemory(s, dstHost, bytes);
        return CuResult.SUCCESS;
    }

    @Override
    public int memcpyDtoD(long dst, long src, long bytes, long stream, boolean async) {
        long d = translate(dst, bytes);
        long s = translate(src, bytes);
        if (d == 0 || s == 0) {
            return CuResult.INVALID_VALUE;
        }
        UnsafeApi.copyMemory(s, d, bytes);
        return CuResult.SUCCESS;
    }

    @Override
    public int memset(int width, long dst, int value, long count, long stream, boolean async) {
        long d = translate(dst, count * width);
        if (d == 0) {
            return CuResult.INVALID_VALUE;
        }
        for (long i = 0; i < count; i++) {
            switch (width) {
                case 1 -> UnsafeApi.putByte(d + i, (byte) value);
                case 2 -> UnsafeApi.putShort(d + 2 * i, (short) value);
                default -> UnsafeApi.putInt(d + 4 * i, value);
            }
        }
        return CuResult.SUCCESS;
    }

    /*
     * Registered host memory, as under unified addressing: this "device" is the server process, so
     * a registered range is reachable at its own host address — the device pointer the driver of a
     * GPU with unified addressing answers too. That is what lets the loopback tests see the pool's
     * real device address in the header (docs/protocol.md §2a); no kernel ever runs here.
     */
    @Override
    public synchronized int memHostRegister(long address, long bytes, int flags) {
        if (address == 0 || bytes <= 0 || address + bytes < address) {
            return CuResult.INVALID_VALUE;
        }
        Map.Entry<Long, Long> below = registered.floorEntry(address + bytes - 1);
        if (below != null && below.getKey() + below.getValue() > address) {
            return CuResult.HOST_MEMORY_ALREADY_REGISTERED;
        }
        registered.put(address, bytes);
        return CuResult.SUCCESS;
    }

    @Override
    public synchronized int memHostUnregister(long address) {
        return registered.remove(address) != null ? CuResult.SUCCESS : CuResult.HOST_MEMORY_NOT_REGISTERED;
    }

    @Override
    public synchronized int memHostGetDevicePointer(Out o, long address) {
        if (registeredLength(address, 1) == 0) {
            return CuResult.INVALID_VALUE;
        }
        o.address = address;
        return CuResult.SUCCESS;
    }

    /** {@code bytes} if [address, address+bytes) lies in one registered range, else 0. */
    private long registeredLength(long address, long bytes) {
        Map.Entry<Long, Long> e = registered.floorEntry(address);
        if (e == null || bytes < 0 || address - e.getKey() + bytes > e.getValue()) {
            return 0;
        }
        return bytes;
    }

    @Override
    public int streamCreate(Out o, int flags, int priority) {
        o.handle = nextObject.incrementAndGet();
        created(o.handle, flags, priority);
        return CuResult.SUCCESS;
    }

    @Override
    public int streamDestroy(long stream) {
        return CuResult.SUCCESS;
    }

    @Override
    public int streamSynchronize(long stream) {
        return CuResult.SUCCESS;
    }

    @Override
    public int streamQuery(long stream) {
        return CuResult.SUCCESS;
    }

    @Override
    public int streamWaitEvent(long stream, long event, int flags) {
        return CuResult.SUCCESS;
    }

    @Override
    public int eventCreate(Out o, int flags) {
        o.handle = nextObject.incrementAndGet();
        return CuResult.SUCCESS;
    }

    @Override
    public int eventDestroy(long event) {
        return CuResult.SUCCESS;
    }

    @Override
    public int eventRecord(long event, long stream, int flags) {
        return CuResult.SUCCESS;
    }

    @Override
    public int eventSynchronize(long event) {
        return CuResult.SUCCESS;
    }

    @Override
    public int eventQuery(long event) {
        return CuResult.SUCCESS;
    }

    @Override
    public int eventElapsedTime(Out o, long start, long end) {
        o.milliseconds = 0.5f;
        return CuResult.SUCCESS;
    }

    /** The answer is the real driver's, computed over its version and device: nothing to answer it with. */
    @Override
    public int exportIntegrityCheck(Out o, int version, long unixSeconds) {
        return CuResult.NOT_SUPPORTED;
    }

    @Override
    public int funcGetAttribute(Out o, int attribute, long function) {
        return CuResult.NOT_SUPPORTED;
    }

    @Override
    public int funcSetAttribute(long function, int attribute, int value) {
        return CuResult.NOT_SUPPORTED;
    }

    @Override
    public int funcSetCacheConfig(long function, int config) {
        return CuResult.NOT_SUPPORTED;
    }

    @Override
    public int funcGetParamInfo(Out o, long function, long index) {
        return CuResult.NOT_SUPPORTED;
    }

    @Override
    public int occupancyMaxActiveBlocksPerMultiprocessor(Out o, long function, int blockSize, long dynamicSmem, int flags) {
        return CuResult.NOT_SUPPORTED;
    }

    @Override
    public int launchKernel(long function, int gx, int gy, int gz, int bx, int by, int bz, int sharedMem, long stream,
                            long kernelParams) {
        return CuResult.NOT_SUPPORTED;
    }

    // ---- strided copies (issue 12) ----

    /** A side's row: a host address as it is, a device address translated (0: outside an allocation). */
    private long row(int type, long address, long bytes) {
        return type == MEMORYTYPE_HOST ? address : translate(address, bytes);
    }

    /** Row by row: this backend's device memory is host memory, so a strided copy is plain copies. */
    @Override
    public int memcpy3D(int dstType, long dst, long dstPitch, long dstHeight, int srcType, long src, long srcPitch,
                        long srcHeight, long width, long height, long depth, long stream, boolean async) {
        for (long z = 0; z < depth; z++) {
            for (long y = 0; y < height; y++) {
                long d = row(dstType, dst + z * dstPitch * dstHeight + y * dstPitch, width);
                long s = row(srcType, src + z * srcPitch * srcHeight + y * srcPitch, width);
                if (d == 0 || s == 0) {
                    return CuResult.INVALID_VALUE;
                }
                UnsafeApi.copyMemory(s, d, width);
            }
        }
        return CuResult.SUCCESS;
    }

    @Override
    public int memset2D(int elementSize, long dst, long pitch, int value, long width, long height, long stream,
                        boolean async) {
        for (long y = 0; y < height; y++) {
            int result = memset(elementSize, dst + y * pitch, value, width, stream, async);
            if (result != CuResult.SUCCESS) {
                return result;
            }
        }
        return CuResult.SUCCESS;
    }

    // ---- pools (issue 12) ----

    /**
     * The stream's current pool is plain allocation here (no stream runs asynchronously in this
     * backend); it has no pool objects, so a named pool and the pool queries are not supported.
     */
    @Override
    public int memAllocAsync(Out o, long bytes, long pool, long stream) {
        return pool == 0 || createdPool(pool) ? memAlloc(o, bytes) : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int memFreeAsync(long dptr, long stream) {
        return memFree(dptr);
    }

    // ---- graphs (issue 12) ----
    // Streams complete at once here, so what a stream does can be done now: queries from what
    // creation recorded, value writes into the host blocks, a wait whose value is there already,
    // and host functions run (through their sink) before the call returns. Attributes, capture
    // and graphs need the driver: CUDA_ERROR_NOT_SUPPORTED (the interface's defaults).

    /** A created stream: its flags, priority and the context current at its creation. */
    private record StreamInfo(int flags, int priority, long context) {
    }

    private final java.util.concurrent.ConcurrentHashMap<Long, StreamInfo> streamInfo =
            new java.util.concurrent.ConcurrentHashMap<>();

    private void created(long stream, int flags, int priority) {
        Long c = contextStack.get().peek();
        streamInfo.put(stream, new StreamInfo(flags, priority, c == null ? 0 : c));
    }

    /** The recorded stream; the legacy and per-thread streams (0..2) as the current context's defaults. */
    private StreamInfo info(long stream) {
        if (stream >= 0 && stream <= 2) {
            Long c = contextStack.get().peek();
            return new StreamInfo(0, 0, c == null ? 0 : c);
        }
        return streamInfo.get(stream);
    }

    @Override
    public int streamGetFlags(Out o, long stream) {
        StreamInfo i = info(stream);
        if (i == null) {
            return CuResult.INVALID_HANDLE;
        }
        o.value = i.flags();
        return CuResult.SUCCESS;
    }

    @Override
    public int streamGetPriority(Out o, long stream) {
        StreamInfo i = info(stream);
        if (i == null) {
            return CuResult.INVALID_HANDLE;
        }
        o.value = i.priority();
        return CuResult.SUCCESS;
    }

    @Override
    public int streamGetCtx(Out o, long stream) {
        StreamInfo i = info(stream);
        if (i == null) {
            return CuResult.INVALID_HANDLE;
        }
        o.handle = i.context();
        return i.context() == 0 ? CuResult.INVALID_CONTEXT : CuResult.SUCCESS;
    }

    @Override
    public int streamGetId(Out o, long stream) {
        o.handle = stream;
        return CuResult.SUCCESS;
    }

    @Override
    public int streamWaitValue(long stream, long address, long value, int flags, boolean wide) {
        long h = translate(address, wide ? 8 : 4);
        if (h == 0) {
            return CuResult.INVALID_VALUE;
        }
        long now = wide ? UnsafeApi.getLongVolatile(null, h) : UnsafeApi.getIntVolatile(null, h);
        long mask = wide ? -1L : 0xffffffffL;
        // CU_STREAM_WAIT_VALUE_GEQ (0, cyclic), EQ (1), AND (2), NOR (3)
        boolean met = switch (flags & 0x3) {
            case 0 -> wide ? now - value >= 0 : (int) now - (int) value >= 0;
            case 1 -> ((now ^ value) & mask) == 0;
            case 2 -> (now & value & mask) != 0;
            default -> (~(now | value) & mask) != 0;
        };
        // nothing here could make a missing value arrive later: a wait that would block is refused
        return met ? CuResult.SUCCESS : CuResult.NOT_SUPPORTED;
    }

    @Override
    public int streamWriteValue(long stream, long address, long value, int flags, boolean wide) {
        long h = translate(address, wide ? 8 : 4);
        if (h == 0) {
            return CuResult.INVALID_VALUE;
        }
        if (wide) {
            UnsafeApi.putLongVolatile(null, h, value);
        } else {
            UnsafeApi.putIntVolatile(null, h, (int) value);
        }
        return CuResult.SUCCESS;
    }

    @Override
    public int launchHostFunc(long stream, long key) {
        HostCallbacks.fire(key, CuResult.SUCCESS);
        return CuResult.SUCCESS;
    }

    @Override
    public int streamAddCallback(long stream, long key, int flags) {
        HostCallbacks.fire(key, CuResult.SUCCESS);
        return CuResult.SUCCESS;
    }

    @Override
    public int streamIsCapturing(Out o, long stream) {
        o.value = 0;
        return CuResult.SUCCESS;
    }

    // ---- arrays and textures (issue 12) ----
    // An array here is a plain host block of width·height·depth elements, rows packed: enough to
    // test that copies to and from arrays move the right bytes (a transport test). Texture and
    // surface objects are numbers this backend minted with the descriptors they were made from:
    // they can be created, queried and destroyed, never sampled (no kernel runs here). A mipmapped
    // array is its levels, each such an array of halved extent. Planes (multi-planar formats)
    // and memory requirements need the driver: CUDA_ERROR_NOT_SUPPORTED.

    /**
     * A host-memory array: its block and the descriptor it was made from. Flags (layered, cubemap,
     * surface load/store, gather) change nothing here: the block is width·rows·slices elements.
     */
    private record HostArray(long address, long width, long height, long depth, int format, int channels, int flags,
                             long rowBytes, long rows, long slices) {
    }

    /** A texture or surface object's descriptors (copies; view 0: none). */
    private record HostObject(long resDesc, long texDesc, long viewDesc) {
    }

    private final Map<Long, HostArray> arrays = new java.util.concurrent.ConcurrentHashMap<>();
    private final Map<Long, long[]> mipmaps = new java.util.concurrent.ConcurrentHashMap<>();
    private final Map<Long, HostObject> texObjects = new java.util.concurrent.ConcurrentHashMap<>();
    private final Map<Long, HostObject> surfObjects = new java.util.concurrent.ConcurrentHashMap<>();

    @Override
    public int arrayCreate(Out o, long width, long height, long depth, int format, int channels, int flags) {
        int element = ArrayFormat.elementBytes(format, channels);
        if (element == 0 || width <= 0 || height < 0 || depth < 0) {
            // formats without a fixed element size (block-compressed, video) are the driver's business
            return element == 0 ? CuResult.NOT_SUPPORTED : CuResult.INVALID_VALUE;
        }
        long rows = Math.max(1, height);
        long slices = Math.max(1, depth);
        long bytes;
        try {
            bytes = Math.multiplyExact(Math.multiplyExact(Math.multiplyExact(width, element), rows), slices);
        } catch (ArithmeticException e) {
            return CuResult.OUT_OF_MEMORY;
        }
        synchronized (this) {
            if (bytes > TOTAL - used) {
                return CuResult.OUT_OF_MEMORY;
            }
            used += bytes;
        }
        long address = UnsafeApi.allocateMemory(bytes);
        arrays.put(address, new HostArray(address, width, height, depth, format, channels, flags, width * element, rows,
                slices));
        o.handle = address;
        return CuResult.SUCCESS;
    }

    @Override
    public int arrayDestroy(long array) {
        HostArray a = arrays.remove(array);
        if (a == null) {
            return CuResult.INVALID_HANDLE;
        }
        UnsafeApi.freeMemory(a.address());
        synchronized (this) {
            used -= a.rowBytes() * a.rows() * a.slices();
        }
        return CuResult.SUCCESS;
    }

    @Override
    public int arrayGetDescriptor(long desc, long array) {
        HostArray a = arrays.get(array);
        if (a == null) {
            return CuResult.INVALID_HANDLE;
        }
        UnsafeApi.putLong(desc, a.width());
        UnsafeApi.putLong(desc + 8, a.height());
        UnsafeApi.putInt(desc + 16, a.format());
        UnsafeApi.putInt(desc + 20, a.channels());
        return CuResult.SUCCESS;
    }

    @Override
    public int array3DGetDescriptor(long desc, long array) {
        HostArray a = arrays.get(array);
        if (a == null) {
            return CuResult.INVALID_HANDLE;
        }
        UnsafeApi.putLong(desc, a.width());
        UnsafeApi.putLong(desc + 8, a.height());
        UnsafeApi.putLong(desc + 16, a.depth());
        UnsafeApi.putInt(desc + 24, a.format());
        UnsafeApi.putInt(desc + 28, a.channels());
        UnsafeApi.putInt(desc + 32, a.flags());
        UnsafeApi.putInt(desc + 36, 0);
        return CuResult.SUCCESS;
    }

    /** Its levels: level i is an array of width, height, depth each halved i times (at least 1 where not 0). */
    @Override
    public int mipmappedArrayCreate(Out o, long width, long height, long depth, int format, int channels, int flags,
                                    int levels) {
        if (levels < 1 || levels > 32) {
            return CuResult.INVALID_VALUE;
        }
        long[] made = new long[levels];
        for (int i = 0; i < levels; i++) {
            int r = arrayCreate(o, Math.max(1, width >> i), height == 0 ? 0 : Math.max(1, height >> i),
                    depth == 0 ? 0 : Math.max(1, depth >> i), format, channels, flags);
            if (r != CuResult.SUCCESS) {
                for (int j = 0; j < i; j++) {
                    arrayDestroy(made[j]);
                }
                return r;
            }
            made[i] = o.handle;
        }
        long value = nextObject.getAndIncrement();
        mipmaps.put(value, made);
        o.handle = value;
        return CuResult.SUCCESS;
    }

    @Override
    public int mipmappedArrayDestroy(long mipmap) {
        long[] levels = mipmaps.remove(mipmap);
        if (levels == null) {
            return CuResult.INVALID_HANDLE;
        }
        for (long level : levels) {
            arrayDestroy(level);
        }
        return CuResult.SUCCESS;
    }

    @Override
    public int mipmappedArrayGetLevel(Out o, long mipmap, int level) {
        long[] levels = mipmaps.get(mipmap);
        if (levels == null) {
            return CuResult.INVALID_HANDLE;
        }
        if (level < 0 || level >= levels.length) {
            return CuResult.INVALID_VALUE;
        }
        o.handle = levels[level];
        return CuResult.SUCCESS;
    }

    /**
     * Array sides become host sides (the array's rows are packed); the offsets are held to the
     * array here too, so a wrong caller fails instead of writing past the block.
     */
    @Override
    public int memcpy3DArray(int dstType, long dst, long dstX, long dstY, long dstZ, long dstPitch, long dstHeight,
                             int srcType, long src, long srcX, long srcY, long srcZ, long srcPitch, long srcHeight,
                             long width, long height, long depth, long stream, boolean async) {
        long[] d = {dstType, dst, dstPitch, dstHeight};
        long[] s = {srcType, src, srcPitch, srcHeight};
        if (dstType == MEMORYTYPE_ARRAY && !arraySide(d, dstX, dstY, dstZ, width, height, depth)
                || srcType == MEMORYTYPE_ARRAY && !arraySide(s, srcX, srcY, srcZ, width, height, depth)) {
            return CuResult.INVALID_VALUE;
        }
        return memcpy3D((int) d[0], d[1], d[2], d[3], (int) s[0], s[1], s[2], s[3], width, height, depth, stream, async);
    }

    /** Rewrites {type, array, pitch, rows} into the host side at (x, y, z); false if it leaves the array. */
    private boolean arraySide(long[] side, long x, long y, long z, long width, long height, long depth) {
        HostArray a = arrays.get(side[1]);
        if (a == null || x < 0 || y < 0 || z < 0 || width > a.rowBytes() - x || height > a.rows() - y
                || depth > a.slices() - z) {
            return false;
        }
        side[0] = MEMORYTYPE_HOST;
        side[1] = a.address() + (z * a.rows() + y) * a.rowBytes() + x;
        side[2] = a.rowBytes();
        side[3] = a.rows();
        return true;
    }

    private static long copyOf(long from, int bytes) {
        long to = UnsafeApi.allocateMemory(bytes);
        UnsafeApi.copyMemory(from, to, bytes);
        return to;
    }

    @Override
    public int texObjectCreate(Out o, long resDesc, long texDesc, long viewDesc) {
        long value = nextObject.getAndIncrement();
        texObjects.put(value, new HostObject(copyOf(resDesc, RESOURCE_DESC_SIZE), copyOf(texDesc, TEXTURE_DESC_SIZE),
                viewDesc == 0 ? 0 : copyOf(viewDesc, VIEW_DESC_SIZE)));
        o.handle = value;
        return CuResult.SUCCESS;
    }

    @Override
    public int texObjectDestroy(long tex) {
        return forget(texObjects.remove(tex));
    }

    @Override
    public int texObjectGetResourceDesc(long desc, long tex) {
        return answer(texObjects.get(tex), 0, desc, RESOURCE_DESC_SIZE);
    }

    @Override
    public int texObjectGetTextureDesc(long desc, long tex) {
        return answer(texObjects.get(tex), 1, desc, TEXTURE_DESC_SIZE);
    }

    @Override
    public int texObjectGetResourceViewDesc(long desc, long tex) {
        return answer(texObjects.get(tex), 2, desc, VIEW_DESC_SIZE);
    }

    @Override
    public int surfObjectCreate(Out o, long resDesc) {
        long value = nextObject.getAndIncrement();
        surfObjects.put(value, new HostObject(copyOf(resDesc, RESOURCE_DESC_SIZE), 0, 0));
        o.handle = value;
        return CuResult.SUCCESS;
    }

    @Override
    public int surfObjectDestroy(long surf) {
        return forget(surfObjects.remove(surf));
    }

    @Override
    public int surfObjectGetResourceDesc(long desc, long surf) {
        return answer(surfObjects.get(surf), 0, desc, RESOURCE_DESC_SIZE);
    }

    private static final int RESOURCE_DESC_SIZE = 144;
    private static final int TEXTURE_DESC_SIZE = 104;
    private static final int VIEW_DESC_SIZE = 112;

    private static int forget(HostObject h) {
        if (h == null) {
            return CuResult.INVALID_VALUE;
        }
        UnsafeApi.freeMemory(h.resDesc());
        if (h.texDesc() != 0) {
            UnsafeApi.freeMemory(h.texDesc());
        }
        if (h.viewDesc() != 0) {
            UnsafeApi.freeMemory(h.viewDesc());
        }
        return CuResult.SUCCESS;
    }

    /** Copies descriptor {@code which} (0 resource, 1 texture, 2 view) out; a missing view is zeros, as the driver's. */
    private static int answer(HostObject h, int which, long into, int bytes) {
        if (h == null) {
            return CuResult.INVALID_VALUE;
        }
        long from = which == 0 ? h.resDesc() : which == 1 ? h.texDesc() : h.viewDesc();
        if (from == 0) {
            UnsafeApi.setMemory(into, bytes, (byte) 0);
        } else {
            UnsafeApi.copyMemory(from, into, bytes);
        }
        return CuResult.SUCCESS;
    }

    // ---- virtual memory and created pools (issue 12) ----
    // A transport test of the VMM calls, no GPU: a reservation is a range of fake addresses
    // (bookkeeping only), cuMemCreate allocates host bytes (counted in this device's memory), and
    // a mapping makes part of a reservation stand for part of those bytes, so that copies and
    // memsets on it reach them. Access flags are recorded and answered; nothing enforces them.

    /** This backend's allocation granularity (its own choice: the bookkeeping needs one). */
    static final long VMM_GRANULARITY = 2L << 20;
    private static final long VA_BASE = 0x20_0000_0000L;

    private static final class Physical {
        final long host;
        final long size;
        final int handleTypes;
        final int allocFlags;
        int refs = 1;
        int mappings;

        Physical(long host, long size, int handleTypes, int allocFlags) {
            this.host = host;
            this.size = size;
            this.handleTypes = handleTypes;
            this.allocFlags = allocFlags;
        }
    }

    private record Mapping(long size, long handle, long offset, int[] access) {
    }

    private final TreeMap<Long, Long> reservations = new TreeMap<>();
    private final Map<Long, Physical> physical = new java.util.HashMap<>();
    private final TreeMap<Long, Mapping> mapped = new TreeMap<>();
    private long nextVa = VA_BASE;

    /**
     * The host address of [address, address+bytes) if it lies in mappings whose host bytes follow
     * each other (one mapping, or adjacent pieces of one allocation), else 0 (lock held).
     */
    private long translateMapped(long address, long bytes) {
        Map.Entry<Long, Mapping> e = mapped.floorEntry(address);
        if (e == null || bytes < 0 || address - e.getKey() >= e.getValue().size()) {
            return 0;
        }
        Mapping m = e.getValue();
        long host = physical.get(m.handle()).host + m.offset() + (address - e.getKey());
        long end = address + bytes;
        long va = e.getKey();
        while (va + m.size() < end) {
            Mapping next = mapped.get(va + m.size());
            if (next == null || next.handle() != m.handle() || next.offset() != m.offset() + m.size()) {
                return 0;
            }
            va += m.size();
            m = next;
        }
        return host;
    }

    private static boolean deviceProp(int type, int device) {
        return type == 1 && device == 0;
    }

    @Override
    public int memGetAllocationGranularity(Out o, int type, int handleTypes, int device, int allocFlags, int option) {
        if (!deviceProp(type, device) || option < 0 || option > 1) {
            return CuResult.INVALID_VALUE;
        }
        o.bytes = VMM_GRANULARITY;
        return CuResult.SUCCESS;
    }

    @Override
    public synchronized int memAddressReserve(Out o, long size, long alignment, long addr, long flags) {
        if (size <= 0 || size % VMM_GRANULARITY != 0 || flags != 0 || alignment < 0 || Long.bitCount(alignment) > 1
                || size > (1L << 40)) {
            return CuResult.INVALID_VALUE;
        }
        long align = Math.max(alignment, VMM_GRANULARITY);
        long base = (nextVa + align - 1) & -align;
        nextVa = base + size;
        reservations.put(base, size);
        o.address = base;
        return CuResult.SUCCESS;
    }

    @Override
    public synchronized int memAddressFree(long ptr, long size) {
        Long reserved = reservations.get(ptr);
        if (reserved == null || reserved != size) {
            return CuResult.INVALID_VALUE;
        }
        Map.Entry<Long, Mapping> inside = mapped.ceilingEntry(ptr);
        if (inside != null && inside.getKey() < ptr + size) {
            return CuResult.INVALID_VALUE;
        }
        reservations.remove(ptr);
        return CuResult.SUCCESS;
    }

    @Override
    public synchronized int memCreate(Out o, long size, int type, int handleTypes, int device, int allocFlags,
                                      long flags) {
        if (!deviceProp(type, device) || size <= 0 || size % VMM_GRANULARITY != 0 || flags != 0) {
            return CuResult.INVALID_VALUE;
        }
        if (size > TOTAL - used) {
            return CuResult.OUT_OF_MEMORY;
        }
        long host = UnsafeApi.allocateMemory(size);
        used += size;
        long handle = nextObject.getAndIncrement();
        physical.put(handle, new Physical(host, size, handleTypes, allocFlags));
        o.handle = handle;
        return CuResult.SUCCESS;
    }

    /** Frees a physical allocation once it is neither held nor mapped (lock held). */
    private void freeIfUnused(long handle, Physical p) {
        if (p.refs == 0 && p.mappings == 0) {
            physical.remove(handle);
            UnsafeApi.freeMemory(p.host);
            used -= p.size;
        }
    }

    @Override
    public synchronized int memRelease(long handle) {
        Physical p = physical.get(handle);
        if (p == null || p.refs == 0) {
            return CuResult.INVALID_VALUE;
        }
        p.refs--;
        freeIfUnused(handle, p);
        return CuResult.SUCCESS;
    }

    @Override
    public synchronized int memMap(long ptr, long size, long offset, long handle, long flags) {
        Physical p = physical.get(handle);
        Map.Entry<Long, Long> r = reservations.floorEntry(ptr);
        if (p == null || p.refs == 0 || r == null || flags != 0 || size <= 0 || offset < 0
                || ptr % VMM_GRANULARITY != 0 || size % VMM_GRANULARITY != 0 || offset % VMM_GRANULARITY != 0
                || offset > p.size || size > p.size - offset
                || ptr - r.getKey() > r.getValue() || size > r.getValue() - (ptr - r.getKey())) {
            return CuResult.INVALID_VALUE;
        }
        Map.Entry<Long, Mapping> below = mapped.floorEntry(ptr + size - 1);
        if (below != null && below.getKey() + below.getValue().size() > ptr) {
            return CuResult.INVALID_VALUE;
        }
        mapped.put(ptr, new Mapping(size, handle, offset, new int[1]));
        p.mappings++;
        return CuResult.SUCCESS;
    }

    @Override
    public synchronized int memUnmap(long ptr, long size) {
        Mapping m = mapped.get(ptr);
        if (m == null || m.size() != size) {
            return CuResult.INVALID_VALUE;
        }
        mapped.remove(ptr);
        Physical p = physical.get(m.handle());
        p.mappings--;
        freeIfUnused(m.handle(), p);
        return CuResult.SUCCESS;
    }

    @Override
    public synchronized int memSetAccess(long ptr, long size, int device, int flags) {
        if (device != 0 || (flags != 0 && flags != 1 && flags != 3) || size <= 0) {
            return CuResult.INVALID_VALUE;
        }
        // every byte of [ptr, ptr+size) must be mapped
        long at = ptr;
        while (at < ptr + size) {
            Map.Entry<Long, Mapping> e = mapped.floorEntry(at);
            if (e == null || e.getKey() + e.getValue().size() <= at) {
                return CuResult.INVALID_VALUE;
            }
            at = e.getKey() + e.getValue().size();
        }
        for (Mapping m : mapped.subMap(mapped.floorKey(ptr), true, ptr + size, false).values()) {
            m.access()[0] = flags;
        }
        return CuResult.SUCCESS;
    }

    @Override
    public synchronized int memGetAccess(Out o, int device, long ptr) {
        Map.Entry<Long, Mapping> e = mapped.floorEntry(ptr);
        if (device != 0 || e == null || e.getKey() + e.getValue().size() <= ptr) {
            return CuResult.INVALID_VALUE;
        }
        o.value = e.getValue().access()[0];
        return CuResult.SUCCESS;
    }

    @Override
    public synchronized int memGetAllocationProperties(Out o, long handle) {
        Physical p = physical.get(handle);
        if (p == null || p.refs == 0) {
            return CuResult.INVALID_VALUE;
        }
        o.value = 1;
        o.offset = p.handleTypes & 0xffffffffL;
        o.address = 0;
        o.bytes = p.allocFlags;
        return CuResult.SUCCESS;
    }

    @Override
    public synchronized int memRetainAllocationHandle(Out o, long addr) {
        Map.Entry<Long, Mapping> e = mapped.floorEntry(addr);
        if (e == null || e.getKey() + e.getValue().size() <= addr) {
            return CuResult.INVALID_VALUE;
        }
        long handle = e.getValue().handle();
        physical.get(handle).refs++;
        o.handle = handle;
        return CuResult.SUCCESS;
    }

    /**
     * Created pools: a pool here is its attributes 1-4 (the reuse policies and the release
     * threshold, set and read back); allocations from it are plain allocations (no stream runs
     * asynchronously here). The counters (5-8) are not kept: CUDA_ERROR_NOT_SUPPORTED.
     */
    private final Map<Long, long[]> createdPools = new java.util.concurrent.ConcurrentHashMap<>();

    private boolean createdPool(long pool) {
        return createdPools.containsKey(pool);
    }

    @Override
    public int memPoolCreate(Out o, int handleTypes, int device, long maxSize, int usage) {
        if (device != 0) {
            return CuResult.INVALID_DEVICE;
        }
        long pool = nextObject.getAndIncrement();
        // CUmemPool_attribute 1-4 as the driver starts them: the reuse policies on, threshold 0
        createdPools.put(pool, new long[] {0, 1, 1, 1, 0});
        o.handle = pool;
        return CuResult.SUCCESS;
    }

    @Override
    public int memPoolDestroy(long pool) {
        return createdPools.remove(pool) != null ? CuResult.SUCCESS : CuResult.INVALID_VALUE;
    }

    @Override
    public int memPoolSetAttribute(long pool, int attribute, long value) {
        long[] attributes = createdPools.get(pool);
        if (attributes == null || attribute < 1 || attribute > 4) {
            return CuResult.NOT_SUPPORTED;
        }
        attributes[attribute] = attribute < 4 ? (value != 0 ? 1 : 0) : value;
        return CuResult.SUCCESS;
    }

    @Override
    public int memPoolGetAttribute(Out o, long pool, int attribute) {
        long[] attributes = createdPools.get(pool);
        if (attributes == null || attribute < 1 || attribute > 4) {
            return CuResult.NOT_SUPPORTED;
        }
        o.bytes = attributes[attribute];
        return CuResult.SUCCESS;
    }

    @Override
    public int memPoolSetAccess(long pool, int device, int flags) {
        // the pool's own device always has read-write access, as the driver has it
        return createdPool(pool) && device == 0 && flags == 3 ? CuResult.SUCCESS : CuResult.INVALID_VALUE;
    }

    @Override
    public int memPoolGetAccess(Out o, long pool, int device) {
        if (!createdPool(pool) || device != 0) {
            return CuResult.INVALID_VALUE;
        }
        o.value = 3;
        return CuResult.SUCCESS;
    }
}
