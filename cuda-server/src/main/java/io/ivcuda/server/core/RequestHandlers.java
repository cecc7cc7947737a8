package io.ivcuda.server.core;

import static io.ivcuda.server.core.HandleTable.*;

import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.Handler;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.gen.Reply;
import io.ivcuda.wire.HeaderFlyweight;
import io.ivcuda.server.region.Layout;
import java.nio.charset.StandardCharsets;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The handlers of one channel's worker: resolve and check handles (kind, generation, owner), check
 * every device range against the owner's allocations and every pool range against its blocks, then
 * call the backend. The guest sees one device, ordinal 0, which is the configured host GPU.
 */
public final class RequestHandlers implements Handler {
    private static final Logger LOG = LogManager.getLogger(RequestHandlers.class);
    /** CU_STREAM_LEGACY / CU_STREAM_PER_THREAD pass through (docs/protocol.md §5). */
    private static final long LAST_SPECIAL_STREAM = 2;
    private static final int MAX_PARAMS = (Out.SCRATCH_SIZE - 64) / 8;

    private final Vm vm;
    private final ChannelWorker worker;
    private final CudaBackend cuda;
    private final Out out;
    private final Layout layout;
    private final org.agrona.collections.Long2ObjectHashMap<long[]> layouts = new org.agrona.collections.Long2ObjectHashMap<>();
    private int layoutError;
    private long lastContextNative;
    private long lastContextId;
    private Owner owner;
    private boolean greeted;

    RequestHandlers(Vm vm, ChannelWorker worker) {
        this.vm = vm;
        this.worker = worker;
        this.cuda = vm.backend();
        this.out = cuda.newOut();
        this.layout = vm.layout();
    }

    boolean greeted() {
        return greeted;
    }

    /** The worker leaves for good: nothing current on its thread, its scratch memory freed. */
    void detach() {
        if (greeted) {
            cuda.ctxSetCurrent(0);
        }
        greeted = false;
        out.free();
    }

    private void warn(String field, String detail, int result) {
        LOG.warn("channel {} pid {} {}: {} {} → {}", worker.index(), worker.ownerPid(),
                Opcodes.name(worker.currentOpcode()), field, detail, CuResult.name(result));
    }

    @Override
    public int unsupported(int opcode) {
        LOG.warn("channel {} pid {} {}: not implemented by this server → CUDA_ERROR_NOT_SUPPORTED",
                worker.index(), worker.ownerPid(), Opcodes.name(opcode));
        return CuResult.NOT_SUPPORTED;
    }

    // ---- session ------------------------------------------------------------------------

    @Override
    public int ivc_hello(Reply r, int protocolVersion, long apiHash, int pid, int tid, String libraryVersion,
                         int messageCapacity) {
        r.set(0, HeaderFlyweight.PROTOCOL_VERSION);
        r.set(1, Opcodes.API_HASH);
        r.set(2, vm.hostDriverVersion());
        String problem = null;
        if (protocolVersion != HeaderFlyweight.PROTOCOL_VERSION) {
            problem = "guest speaks protocol " + protocolVersion + ", server speaks " + HeaderFlyweight.PROTOCOL_VERSION;
        } else if (apiHash != Opcodes.API_HASH) {
            problem = "guest API hash " + Long.toHexString(apiHash) + ", server API hash " + Long.toHexString(Opcodes.API_HASH);
        }
        if (problem != null) {
            String message = problem + " — install matching ivcuda-guest and ivcuda-host";
            LOG.warn("channel {} pid {} ivc_hello: refused: {} (library {})", worker.index(), pid, message, libraryVersion);
            byte[] b = message.getBytes(StandardCharsets.US_ASCII);
            int n = Math.min(b.length, r.outbufCapacity() - 1);
            if (n > 0) {
                r.buffer().putBytes(r.outbufIndex(), b, 0, n);
                r.buffer().putByte(r.outbufIndex() + n, (byte) 0);
                r.outbufLength(n + 1);
            }
            return CuResult.NOT_INITIALIZED;
        }
        owner = vm.owner(worker.token());
        greeted = true;
        LOG.info("channel {} pid {} tid {}: hello from library {}", worker.index(), pid, tid, libraryVersion);
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_goodbye(Reply r) {
        cuda.ctxSetCurrent(0);
        greeted = false;
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_process_exit(Reply r) {
        greeted = false;
        ServerHooks hooks = vm.hooks();
        if (hooks != null) {
            hooks.reclaimFromWorker(worker.token(), worker);
        } else {
            vm.reclaim(worker.token(), out);
        }
        return CuResult.SUCCESS;
    }

    // ---- device -------------------------------------------------------------------------

    private int checkDevice(int dev) {
        return dev == 0 ? CuResult.SUCCESS : CuResult.INVALID_DEVICE;
    }

    @Override
    public int cuInit(Reply r, int flags) {
        int result = vm.initResult() != CuResult.SUCCESS ? vm.initResult()
                : flags == 0 ? CuResult.SUCCESS : CuResult.INVALID_VALUE;
        // normally once per guest process: operators (and the VM test) see that a guest reached the driver
        LOG.info("channel {} pid {}: cuInit({}) → {}", worker.index(), worker.ownerPid(), flags, CuResult.name(result));
        return result;
    }

    @Override
    public int cuDeviceGet(Reply r, int ordinal) {
        if (vm.initResult() != CuResult.SUCCESS) {
            return vm.initResult();
        }
        r.set(0, 0);
        return ordinal == 0 ? CuResult.SUCCESS : CuResult.INVALID_DEVICE;
    }

    @Override
    public int cuDeviceGetCount(Reply r) {
        if (vm.initResult() != CuResult.SUCCESS) {
            return vm.initResult();
        }
        r.set(0, 1);
        return CuResult.SUCCESS;
    }

    private int stringOut(Reply r, int len, int dev, boolean name) {
        int c = checkDevice(dev);
        if (c != CuResult.SUCCESS) {
            return c;
        }
        int cap = Math.min(len, r.outbufCapacity());
        if (cap <= 0) {
            return CuResult.INVALID_VALUE;
        }
        long dst = r.buffer().addressOffset() + r.outbufIndex();
        int result = name ? cuda.deviceGetName(dst, cap, vm.nativeDevice()) : cuda.deviceGetPciBusId(dst, cap, vm.nativeDevice());
        if (result == CuResult.SUCCESS) {
            int n = 0;
            while (n < cap - 1 && r.buffer().getByte(r.outbufIndex() + n) != 0) {
                n++;
            }
            r.buffer().putByte(r.outbufIndex() + n, (byte) 0);
            r.outbufLength(n + 1);
        }
        return result;
    }

    @Override
    public int cuDeviceGetName(Reply r, int len, int dev) {
        return stringOut(r, len, dev, true);
    }

    @Override
    public int cuDeviceGetPCIBusId(Reply r, int len, int dev) {
        return stringOut(r, len, dev, false);
    }

    /**
     * The guest sees one device, ordinal 0: a bus id names it when it is our GPU's, in any of
     * the spellings the driver takes ([domain:]bus:device.function, hex, any case).
     */
    @Override
    public int cuDeviceGetByPCIBusId(Reply r, String pciBusId) {
        long[] wanted = PciBusId.parse(pciBusId);
        if (wanted == null) {
            warn("pciBusId", "'" + pciBusId + "' is not [domain:]bus:device.function", CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        int result = cuda.deviceGetPciBusId(out.scratch, 64, vm.nativeDevice());
        if (result != CuResult.SUCCESS) {
            return result;
        }
        long[] ours = PciBusId.parse(new com.sun.jna.Pointer(out.scratch).getString(0));
        if (!java.util.Arrays.equals(wanted, ours)) {
            return CuResult.INVALID_DEVICE;
        }
        r.set(0, 0);
        return CuResult.SUCCESS;
    }

    @Override
    public int cuDeviceGetUuid(Reply r, int dev) {
        int c = checkDevice(dev);
        return c != CuResult.SUCCESS ? c : cuda.deviceGetUuid(r.buffer().addressOffset() + r.bytesIndex(0), vm.nativeDevice());
    }

    @Override
    public int cuDeviceTotalMem_v2(Reply r, int dev) {
        int c = checkDevice(dev);
        if (c != CuResult.SUCCESS) {
            return c;
        }
        int result = cuda.deviceTotalMem(out, vm.nativeDevice());
        r.set(0, out.l0);
        return result;
    }

    @Override
    public int cuDeviceGetAttribute(Reply r, int attrib, int dev) {
        int c = checkDevice(dev);
        if (c != CuResult.SUCCESS) {
            return c;
        }
        int result = cuda.deviceGetAttribute(out, attrib, vm.nativeDevice());
        r.set(0, out.i0);
        return result;
    }

    // ---- contexts -----------------------------------------------------------------------

    /** The native context of a guest id, or 0 after logging (INVALID_CONTEXT). */
    private HandleTable.Entry context(long id, String field) {
        HandleTable.Entry e = vm.handles().lookup(id, KIND_CTX, owner.token());
        if (e == null) {
            warn(field, "0x" + Long.toHexString(id) + " is not a context of this process", CuResult.INVALID_CONTEXT);
        }
        return e;
    }

    private HandleTable.Entry handle(long id, int kind, String field) {
        HandleTable.Entry e = vm.handles().lookup(id, kind, owner.token());
        if (e == null) {
            warn(field, "0x" + Long.toHexString(id) + " is not a valid handle of this process", CuResult.INVALID_HANDLE);
        }
        return e;
    }

    /** A guest stream value to native: 0/1/2 pass through; -1 when invalid. */
    private long stream(long id, String field) {
        if (id >= 0 && id <= LAST_SPECIAL_STREAM) {
            return id;
        }
        HandleTable.Entry e = handle(id, KIND_STREAM, field);
        return e == null ? -1 : e.nativeValue();
    }

    /** The guest id for the native current context (0 when none or not this process's). */
    private long currentContextId() {
        cuda.ctxGetCurrent(out);
        long nativeCtx = out.l0;
        if (nativeCtx == 0) {
            return 0;
        }
        // cudart asks for the current context all the time: remember the last answer (still checked)
        if (nativeCtx == lastContextNative && vm.handles().lookup(lastContextId, KIND_CTX, owner.token()) != null) {
            return lastContextId;
        }
        HandleTable.Entry e = vm.handles().findNative(KIND_CTX, owner.token(), nativeCtx);
        if (e == null) {
            return 0;
        }
        lastContextNative = nativeCtx;
        lastContextId = e.id();
        return e.id();
    }

    @Override
    public int cuCtxCreate_v2(Reply r, int flags, int dev) {
        int c = checkDevice(dev);
        if (c != CuResult.SUCCESS) {
            return c;
        }
        int result = cuda.ctxCreate(out, flags, vm.nativeDevice());
        if (result == CuResult.SUCCESS) {
            r.set(0, vm.handles().mint(KIND_CTX, owner.token(), out.l0, 0));
        }
        return result;
    }

    @Override
    public int cuCtxDestroy_v2(Reply r, long ctx) {
        HandleTable.Entry e = context(ctx, "ctx");
        if (e == null || e.extra() != 0) {
            return CuResult.INVALID_CONTEXT;
        }
        int result = cuda.ctxDestroy(e.nativeValue());
        if (result == CuResult.SUCCESS) {
            vm.handles().remove(ctx);
        }
        return result;
    }

    @Override
    public int cuCtxGetCurrent(Reply r) {
        r.set(0, currentContextId());
        return CuResult.SUCCESS;
    }

    @Override
    public int cuCtxSetCurrent(Reply r, long ctx) {
        if (ctx == 0) {
            return cuda.ctxSetCurrent(0);
        }
        HandleTable.Entry e = context(ctx, "ctx");
        return e == null ? CuResult.INVALID_CONTEXT : cuda.ctxSetCurrent(e.nativeValue());
    }

    @Override
    public int cuCtxPushCurrent_v2(Reply r, long ctx) {
        HandleTable.Entry e = context(ctx, "ctx");
        return e == null ? CuResult.INVALID_CONTEXT : cuda.ctxPushCurrent(e.nativeValue());
    }

    @Override
    public int cuCtxPopCurrent_v2(Reply r) {
        long id = currentContextId();
        int result = cuda.ctxPopCurrent(out);
        r.set(0, id);
        return result;
    }

    @Override
    public int cuCtxGetDevice(Reply r) {
        int result = cuda.ctxGetDevice(out);
        r.set(0, 0);
        return result;
    }

    @Override
    public int cuCtxGetDevice_v2(Reply r, long ctx) {
        if (ctx != 0 && context(ctx, "ctx") == null) {
            return CuResult.INVALID_CONTEXT;
        }
        r.set(0, 0);
        return CuResult.SUCCESS;
    }

    @Override
    public int cuCtxSynchronize(Reply r) {
        return cuda.ctxSynchronize();
    }

    @Override
    public int cuCtxSynchronize_v2(Reply r, long ctx) {
        if (ctx == 0) {
            return cuda.ctxSynchronize();
        }
        HandleTable.Entry e = context(ctx, "ctx");
        if (e == null) {
            return CuResult.INVALID_CONTEXT;
        }
        // the named context, whatever is current on this thread: push, wait, pop
        int result = cuda.ctxPushCurrent(e.nativeValue());
        if (result != CuResult.SUCCESS) {
            return result;
        }
        result = cuda.ctxSynchronize();
        int popped = cuda.ctxPopCurrent(out);
        return result != CuResult.SUCCESS ? result : popped;
    }

    @Override
    public int cuCtxGetFlags(Reply r) {
        int result = cuda.ctxGetFlags(out);
        r.set(0, out.i0);
        return result;
    }

    @Override
    public int cuCtxGetApiVersion(Reply r, long ctx) {
        long nativeCtx = 0;
        if (ctx != 0) {
            HandleTable.Entry e = context(ctx, "ctx");
            if (e == null) {
                return CuResult.INVALID_CONTEXT;
            }
            nativeCtx = e.nativeValue();
        }
        int result = cuda.ctxGetApiVersion(out, nativeCtx);
        r.set(0, out.i0);
        return result;
    }

    @Override
    public int cuCtxGetLimit(Reply r, int limit) {
        int result = cuda.ctxGetLimit(out, limit);
        r.set(0, out.l0);
        return result;
    }

    @Override
    public int cuCtxSetLimit(Reply r, int limit, long value) {
        return cuda.ctxSetLimit(limit, value);
    }

    @Override
    public int cuCtxGetStreamPriorityRange(Reply r) {
        int result = cuda.ctxGetStreamPriorityRange(out);
        r.set(0, out.i0);
        r.set(1, out.i1);
        return result;
    }

    @Override
    public int cuDevicePrimaryCtxRetain(Reply r, int dev) {
        int c = checkDevice(dev);
        if (c != CuResult.SUCCESS) {
            return c;
        }
        int result = cuda.primaryCtxRetain(out, vm.nativeDevice());
        if (result == CuResult.SUCCESS) {
            owner.primaryRetains().incrementAndGet();
            HandleTable.Entry e = vm.handles().findNative(KIND_CTX, owner.token(), out.l0);
            // extra 1 marks the primary context: never destroyed by reclaim, only released
            r.set(0, e != null ? e.id() : vm.handles().mint(KIND_CTX, owner.token(), out.l0, 1));
        }
        return result;
    }

    @Override
    public int cuDevicePrimaryCtxRelease_v2(Reply r, int dev) {
        int c = checkDevice(dev);
        if (c != CuResult.SUCCESS) {
            return c;
        }
        if (owner.primaryRetains().get() <= 0) {
            warn("dev", "primary context not retained by this process", CuResult.INVALID_CONTEXT);
            return CuResult.INVALID_CONTEXT;
        }
        int result = cuda.primaryCtxRelease(vm.nativeDevice());
        if (result == CuResult.SUCCESS) {
            owner.primaryRetains().decrementAndGet();
        }
        return result;
    }

    @Override
    public int cuDevicePrimaryCtxReset_v2(Reply r, int dev) {
        // resetting would destroy other processes' state in the shared primary context: refuse
        int c = checkDevice(dev);
        return c != CuResult.SUCCESS ? c : CuResult.SUCCESS;
    }

    @Override
    public int cuDevicePrimaryCtxGetState(Reply r, int dev) {
        int c = checkDevice(dev);
        if (c != CuResult.SUCCESS) {
            return c;
        }
        int result = cuda.primaryCtxGetState(out, vm.nativeDevice());
        r.set(0, out.i0);
        // Active as this guest process sees it: the server's own retain (for the region's
        // registration) and other processes' retains must not show, as they would not natively.
        r.set(1, owner.primaryRetains().get() > 0 ? 1 : 0);
        return result;
    }

    @Override
    public int cuDevicePrimaryCtxSetFlags_v2(Reply r, int dev, int flags) {
        int c = checkDevice(dev);
        return c != CuResult.SUCCESS ? c : cuda.primaryCtxSetFlags(vm.nativeDevice(), flags);
    }

    // ---- memory -------------------------------------------------------------------------

    private long currentNativeContext() {
        cuda.ctxGetCurrent(out);
        return out.l0;
    }

    @Override
    public int ivc_mem_alloc(Reply r, long bytesize) {
        if (bytesize <= 0) {
            warn("bytesize", String.valueOf(bytesize), CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        if (!vm.reserve(bytesize, "channel " + worker.index() + " pid " + worker.ownerPid() + " ivc_mem_alloc")) {
            return CuResult.OUT_OF_MEMORY;
        }
        int result = cuda.memAlloc(out, bytesize);
        if (result != CuResult.SUCCESS) {
            vm.release(bytesize);
            return result;
        }
        long dptr = out.l0;
        owner.ranges().add(new DeviceRanges.Range(dptr, bytesize, true, currentNativeContext()));
        r.set(0, dptr);
        return result;
    }

    @Override
    public int ivc_mem_alloc_pitch(Reply r, long widthInBytes, long height, int elementSizeBytes) {
        if (widthInBytes <= 0 || height <= 0 || widthInBytes > (1L << 40) || height > (1L << 40)) {
            warn("widthInBytes/height", widthInBytes + "x" + height, CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        long estimate = ((widthInBytes + 511) & ~511L) * height;
        if (!vm.reserve(estimate, "channel " + worker.index() + " pid " + worker.ownerPid() + " ivc_mem_alloc_pitch")) {
            return CuResult.OUT_OF_MEMORY;
        }
        int result = cuda.memAllocPitch(out, widthInBytes, height, elementSizeBytes);
        if (result != CuResult.SUCCESS) {
            vm.release(estimate);
            return result;
        }
        long dptr = out.l0;
        long pitch = out.l1;
        vm.release(estimate);
        vm.reserve(pitch * height, "ivc_mem_alloc_pitch");
        owner.ranges().add(new DeviceRanges.Range(dptr, pitch * height, true, currentNativeContext()));
        r.set(0, dptr);
        r.set(1, pitch);
        return result;
    }

    @Override
    public int ivc_mem_free(Reply r, long dptr) {
        if (dptr == 0) {
            return CuResult.SUCCESS;
        }
        DeviceRanges.Range range = owner.ranges().removeAllocation(dptr);
        if (range == null) {
            warn("dptr", "0x" + Long.toHexString(dptr) + " is not an allocation of this process", CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        vm.release(range.size());
        return cuda.memFree(dptr);
    }

    @Override
    public int cuMemGetInfo_v2(Reply r) {
        int result = cuda.memGetInfo(out);
        r.set(0, out.l0);
        r.set(1, out.l1);
        return result;
    }

    @Override
    public int cuMemGetAddressRange_v2(Reply r, long dptr) {
        if (!inDevice(dptr, 1, "dptr")) {
            return CuResult.NOT_FOUND;
        }
        int result = cuda.memGetAddressRange(out, dptr);
        r.set(0, out.l0);
        r.set(1, out.l1);
        return result;
    }

    /** Whether [address, +bytes) lies in one of the owner's allocations or in its pool blocks' device range. */
    private boolean inDevice(long address, long bytes, String field) {
        if (bytes >= 0 && owner.ranges().contains(address, bytes)) {
            return true;
        }
        long poolDevice = vm.poolDevicePointer();
        if (poolDevice != 0 && bytes >= 0 && address - poolDevice >= 0
                && vm.pool().blockOf(address - poolDevice, bytes, owner.token()) != null) {
            return true;
        }
        warn(field, "0x" + Long.toHexString(address) + "+" + bytes + " is outside this process's allocations",
                CuResult.INVALID_VALUE);
        return false;
    }

    /** Region address of a pool range of this owner, or 0 after logging. */
    private long poolRange(long poolOffset, long bytes, String field) {
        if (poolOffset < 0 || bytes < 0 || poolOffset > layout.poolSize() || bytes > layout.poolSize() - poolOffset
                || vm.pool().blockOf(poolOffset, bytes, owner.token()) == null) {
            warn(field, poolOffset + "+" + bytes + " is outside this process's pool blocks", CuResult.INVALID_VALUE);
            return 0;
        }
        return vm.poolAddress() + poolOffset;
    }

    @Override
    public int ivc_memcpy_htod_inline(Reply r, DirectBuffer in, long dst, long stream, int dataIndex, int dataLength,
                                      long size) {
        long s = stream(stream, "stream");
        if (s < 0) {
            return CuResult.INVALID_HANDLE;
        }
        if (!inDevice(dst, size, "dst")) {
            return CuResult.INVALID_VALUE;
        }
        return s == 0 ? cuda.memcpyHtoD(dst, in.addressOffset() + dataIndex, size, 0, false)
                : copyOnStream(dst, in.addressOffset() + dataIndex, size, s, true);
    }

    @Override
    public int ivc_memcpy_htod_inline_async(DirectBuffer in, long dst, long stream, int dataIndex, int dataLength,
                                            long size) {
        long s = stream(stream, "stream");
        if (s < 0) {
            return CuResult.INVALID_HANDLE;
        }
        if (!inDevice(dst, size, "dst")) {
            return CuResult.INVALID_VALUE;
        }
        // the ring slot is reused once consumed: the copy must be done before we move on
        return s == 0 ? cuda.memcpyHtoD(dst, in.addressOffset() + dataIndex, size, 0, false)
                : copyOnStream(dst, in.addressOffset() + dataIndex, size, s, true);
    }

    @Override
    public int ivc_memcpy_dtoh_inline(Reply r, long src, long stream, long size) {
        long s = stream(stream, "stream");
        if (s < 0) {
            return CuResult.INVALID_HANDLE;
        }
        if (size < 0 || size > r.outbufCapacity()) {
            warn("size", size + " exceeds the response capacity " + r.outbufCapacity(), CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        if (!inDevice(src, size, "src")) {
            return CuResult.INVALID_VALUE;
        }
        long into = r.buffer().addressOffset() + r.outbufIndex();
        int result = s == 0 ? cuda.memcpyDtoH(into, src, size, 0, false) : copyOnStream(src, into, size, s, false);
        if (result == CuResult.SUCCESS) {
            r.outbufLength((int) size);
        }
        return result;
    }

    private long slotAddress(long chunk) {
        int half = layout.windowSize() / 2;
        return worker.channelAddress() + layout.windowOffset() + (chunk & 1) * (long) half;
    }

    /**
     * Host→device through the window. Every chunk is consumed even when the request fails, so
     * guest_chunk and server_chunk end equal (§6); a failure is answered after the last chunk.
     */
    @Override
    public int ivc_memcpy_htod_stream(Reply r, long dst, long stream, long size) {
        long s = stream(stream, "stream");
        int result = s < 0 ? CuResult.INVALID_HANDLE
                : size <= 0 || !inDevice(dst, size, "dst") ? CuResult.INVALID_VALUE : CuResult.SUCCESS;
        int half = layout.windowSize() / 2;
        long chunk = worker.state().serverChunk;
        for (long done = 0; done < size; done += half, chunk++) {
            long n = Math.min(half, size - done);
            if (!worker.awaitGuestChunk(chunk + 1)) {
                return CuResult.DEVICE_UNAVAILABLE;
            }
            if (result == CuResult.SUCCESS) {
                result = s == 0 ? cuda.memcpyHtoD(dst + done, slotAddress(chunk), n, 0, false)
                        : copyOnStream(dst + done, slotAddress(chunk), n, s, true);
            }
            worker.publishServerChunk(chunk + 1);
        }
        return result;
    }

    private int copyOnStream(long device, long host, long n, long s, boolean toDevice) {
        int result = toDevice ? cuda.memcpyHtoD(device, host, n, s, true) : cuda.memcpyDtoH(host, device, n, s, true);
        return result == CuResult.SUCCESS ? cuda.streamSynchronize(s) : result;
    }

    /**
     * Device→host through the window: every chunk is produced (zero-filled once the request has
     * failed), so the counters end equal (§6).
     */
    @Override
    public int ivc_memcpy_dtoh_stream(Reply r, long src, long stream, long size) {
        long s = stream(stream, "stream");
        int result = s < 0 ? CuResult.INVALID_HANDLE
                : size <= 0 || !inDevice(src, size, "src") ? CuResult.INVALID_VALUE : CuResult.SUCCESS;
        int half = layout.windowSize() / 2;
        long chunk = worker.state().serverChunk;
        for (long done = 0; done < size; done += half, chunk++) {
            long n = Math.min(half, size - done);
            // the slot of chunk c is free once the guest drained chunk c-2
            if (!worker.awaitGuestChunk(chunk - 1)) {
                return CuResult.DEVICE_UNAVAILABLE;
            }
            if (result == CuResult.SUCCESS) {
                result = s == 0 ? cuda.memcpyDtoH(slotAddress(chunk), src + done, n, 0, false)
                        : copyOnStream(src + done, slotAddress(chunk), n, s, false);
            }
            if (result != CuResult.SUCCESS) {
                UnsafeApi.setMemory(slotAddress(chunk), n, (byte) 0);
            }
            worker.publishServerChunk(chunk + 1);
        }
        return result;
    }

    @Override
    public int ivc_memcpy_htod_pool(Reply r, long dst, long stream, long poolOffset, long size) {
        return poolCopy(true, dst, stream, poolOffset, size, false);
    }

    @Override
    public int ivc_memcpy_dtoh_pool(Reply r, long poolOffset, long src, long stream, long size) {
        return poolCopy(false, src, stream, poolOffset, size, false);
    }

    @Override
    public int ivc_memcpy_htod_pool_async(long dst, long stream, long poolOffset, long size) {
        return poolCopy(true, dst, stream, poolOffset, size, vm.poolDevicePointer() != 0);
    }

    @Override
    public int ivc_memcpy_dtoh_pool_async(long poolOffset, long src, long stream, long size) {
        return poolCopy(false, src, stream, poolOffset, size, vm.poolDevicePointer() != 0);
    }

    /** Copies between the pool (region memory, registered when possible) and device memory. */
    private int poolCopy(boolean toDevice, long device, long stream, long poolOffset, long size, boolean async) {
        long s = stream(stream, "stream");
        if (s < 0) {
            return CuResult.INVALID_HANDLE;
        }
        long host = poolRange(poolOffset, size, "poolOffset");
        if (host == 0 || !inDevice(device, size, toDevice ? "dst" : "src")) {
            return CuResult.INVALID_VALUE;
        }
        // an unregistered pool cannot be copied asynchronously: it would not be pinned
        return toDevice ? cuda.memcpyHtoD(device, host, size, s, async) : cuda.memcpyDtoH(host, device, size, s, async);
    }

    @Override
    public int cuMemcpyDtoD_v2(Reply r, long dstDevice, long srcDevice, long byteCount) {
        if (!inDevice(dstDevice, byteCount, "dstDevice") || !inDevice(srcDevice, byteCount, "srcDevice")) {
            return CuResult.INVALID_VALUE;
        }
        return cuda.memcpyDtoD(dstDevice, srcDevice, byteCount, 0, false);
    }

    @Override
    public int cuMemcpyDtoDAsync_v2(long dstDevice, long srcDevice, long byteCount, long hStream) {
        long s = stream(hStream, "hStream");
        if (s < 0) {
            return CuResult.INVALID_HANDLE;
        }
        if (!inDevice(dstDevice, byteCount, "dstDevice") || !inDevice(srcDevice, byteCount, "srcDevice")) {
            return CuResult.INVALID_VALUE;
        }
        return cuda.memcpyDtoD(dstDevice, srcDevice, byteCount, s, true);
    }

    private int memset(int width, long dst, int value, long n, long stream, boolean async) {
        long s = stream(stream, "hStream");
        if (s < 0) {
            return CuResult.INVALID_HANDLE;
        }
        if (n < 0 || n > Long.MAX_VALUE / width || !inDevice(dst, n * width, "dstDevice")) {
            return CuResult.INVALID_VALUE;
        }
        return cuda.memset(width, dst, value, n, s, async);
    }

    @Override
    public int cuMemsetD8_v2(Reply r, long dstDevice, int uc, long n) {
        return memset(1, dstDevice, uc, n, 0, false);
    }

    @Override
    public int cuMemsetD16_v2(Reply r, long dstDevice, int us, long n) {
        return memset(2, dstDevice, us, n, 0, false);
    }

    @Override
    public int cuMemsetD32_v2(Reply r, long dstDevice, int ui, long n) {
        return memset(4, dstDevice, ui, n, 0, false);
    }

    @Override
    public int cuMemsetD8Async(long dstDevice, int uc, long n, long hStream) {
        return memset(1, dstDevice, uc, n, hStream, true);
    }

    @Override
    public int cuMemsetD16Async(long dstDevice, int us, long n, long hStream) {
        return memset(2, dstDevice, us, n, hStream, true);
    }

    @Override
    public int cuMemsetD32Async(long dstDevice, int ui, long n, long hStream) {
        return memset(4, dstDevice, ui, n, hStream, true);
    }

    private static final int CU_POINTER_ATTRIBUTE_CONTEXT = 1;
    private static final int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
    private static final int CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3;
    private static final int CU_POINTER_ATTRIBUTE_BUFFER_ID = 7;
    private static final int CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;
    private static final int CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11;
    private static final int CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12;
    private static final int CU_MEMORYTYPE_DEVICE = 2;

    /**
     * Attributes of a device pointer, answered from the owner's ranges (the guest answers pool
     * pointers itself). Pointers outside them get CUDA_ERROR_INVALID_VALUE, as from the driver.
     */
    @Override
    public int ivc_pointer_attribute(Reply r, int capacity, int attribute, long ptr) {
        DeviceRanges.Range range = owner.ranges().find(ptr);
        if (range == null) {
            return CuResult.INVALID_VALUE;
        }
        long value;
        int size = 8;
        switch (attribute) {
            case CU_POINTER_ATTRIBUTE_CONTEXT -> {
                HandleTable.Entry ctx = vm.handles().findNative(KIND_CTX, owner.token(), range.context());
                value = ctx == null ? 0 : ctx.id();
            }
            case CU_POINTER_ATTRIBUTE_MEMORY_TYPE -> {
                value = CU_MEMORYTYPE_DEVICE;
                size = 4;
            }
            case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL -> {
                value = 0;
                size = 4;
            }
            case CU_POINTER_ATTRIBUTE_DEVICE_POINTER -> value = ptr;
            case CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR -> value = range.base();
            case CU_POINTER_ATTRIBUTE_RANGE_SIZE -> value = range.size();
            default -> {
                return unsupported(Opcodes.IVC_POINTER_ATTRIBUTE);
            }
        }
        if (r.outbufCapacity() < size) {
            warn("capacity", capacity + " bytes for a " + size + "-byte attribute", CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        if (size == 4) {
            r.buffer().putInt(r.outbufIndex(), (int) value, java.nio.ByteOrder.LITTLE_ENDIAN);
        } else {
            r.buffer().putLong(r.outbufIndex(), value, java.nio.ByteOrder.LITTLE_ENDIAN);
        }
        r.outbufLength(size);
        return CuResult.SUCCESS;
    }

    // ---- pool -----------------------------------------------------------------------------

    @Override
    public int ivc_host_alloc(Reply r, long bytesize, int flags) {
        long offset = vm.pool().allocate(bytesize, owner.token());
        if (offset < 0) {
            warn("bytesize", bytesize + " bytes do not fit in the pool of " + layout.poolSize(), CuResult.OUT_OF_MEMORY);
            return bytesize <= 0 ? CuResult.INVALID_VALUE : CuResult.OUT_OF_MEMORY;
        }
        r.set(0, offset);
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_host_free(Reply r, long poolOffset) {
        if (!vm.pool().free(poolOffset, owner.token())) {
            warn("poolOffset", poolOffset + " is not a pool block of this process", CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_host_device_pointer(Reply r, long poolOffset, int flags) {
        if (flags != 0) {
            return CuResult.INVALID_VALUE;
        }
        if (poolRange(poolOffset, 0, "poolOffset") == 0) {
            return CuResult.INVALID_VALUE;
        }
        if (vm.poolDevicePointer() == 0) {
            return CuResult.NOT_SUPPORTED;
        }
        r.set(0, vm.poolDevicePointer() + poolOffset);
        return CuResult.SUCCESS;
    }

    // ---- modules and functions --------------------------------------------------------------

    @Override
    public int ivc_module_load(Reply r, DirectBuffer in, long imageHash, long imageSize, int sendImage,
                               int jitOptionsIndex, int jitOptionsLength, long jitOptionsSize) {
        if (imageSize <= 0 || imageSize > MAX_IMAGE) {
            warn("imageSize", imageSize + " is not in 1.." + MAX_IMAGE, CuResult.INVALID_VALUE);
            if (sendImage != 0 && !discardChunks(imageSize)) {
                return CuResult.DEVICE_UNAVAILABLE;
            }
            return CuResult.INVALID_VALUE;
        }
        String key = Long.toHexString(imageHash) + ":" + imageSize;
        Vm.Image image = vm.images().get(key);
        if (sendImage != 0) {
            long copy = UnsafeApi.allocateMemory(imageSize);
            int half = layout.windowSize() / 2;
            long chunk = worker.state().serverChunk;
            for (long done = 0; done < imageSize; done += half, chunk++) {
                long n = Math.min(half, imageSize - done);
                if (!worker.awaitGuestChunk(chunk + 1)) {
                    UnsafeApi.freeMemory(copy);
                    return CuResult.DEVICE_UNAVAILABLE;
                }
                UnsafeApi.copyMemory(slotAddress(chunk), copy + done, n);
                worker.publishServerChunk(chunk + 1);
            }
            long h = fnv1a(copy, imageSize);
            if (h != imageHash) {
                UnsafeApi.freeMemory(copy);
                warn("imageHash", "0x" + Long.toHexString(imageHash) + " does not match the image (0x" + Long.toHexString(h) + ")",
                        CuResult.INVALID_VALUE);
                return CuResult.INVALID_VALUE;
            }
            if (!vm.reserveImage(imageSize)) {
                // over the VM's image budget: load it, but do not keep it
                int result = cuda.moduleLoadData(out, copy);
                long nativeModule = out.l0;
                UnsafeApi.freeMemory(copy);
                if (result == CuResult.SUCCESS) {
                    r.set(0, vm.handles().mint(KIND_MODULE, owner.token(), nativeModule, currentNativeContext()));
                }
                return result;
            }
            Vm.Image fresh = new Vm.Image(imageHash, imageSize, copy);
            Vm.Image prior = vm.images().putIfAbsent(key, fresh);
            if (prior != null) {
                UnsafeApi.freeMemory(copy);
                vm.releaseImage(imageSize);
                image = prior;
            } else {
                image = fresh;
            }
        } else if (image == null) {
            return CuResult.NOT_FOUND;
        }
        int result = cuda.moduleLoadData(out, image.address());
        if (result == CuResult.SUCCESS) {
            long nativeModule = out.l0;
            r.set(0, vm.handles().mint(KIND_MODULE, owner.token(), nativeModule, currentNativeContext()));
        }
        return result;
    }

    private static final long MAX_IMAGE = 1L << 31;

    /** Consumes the chunks of a refused host→device transfer so the counters end equal. */
    private boolean discardChunks(long size) {
        int half = layout.windowSize() / 2;
        long chunk = worker.state().serverChunk;
        for (long done = 0; done < size; done += half, chunk++) {
            if (!worker.awaitGuestChunk(chunk + 1)) {
                return false;
            }
            worker.publishServerChunk(chunk + 1);
        }
        return true;
    }

    static long fnv1a(long address, long size) {
        long h = 0xcbf29ce484222325L;
        for (long i = 0; i < size; i++) {
            h ^= UnsafeApi.getByte(address + i) & 0xff;
            h *= 0x100000001b3L;
        }
        return h;
    }

    @Override
    public int cuModuleGetFunction(Reply r, long hmod, String name) {
        HandleTable.Entry m = handle(hmod, KIND_MODULE, "hmod");
        if (m == null) {
            return CuResult.INVALID_HANDLE;
        }
        int result = cuda.moduleGetFunction(out, m.nativeValue(), name);
        if (result == CuResult.SUCCESS) {
            r.set(0, vm.handles().mint(KIND_FUNCTION, owner.token(), out.l0, m.id()));
        }
        return result;
    }

    @Override
    public int ivc_module_get_global(Reply r, long hmod, String name) {
        HandleTable.Entry m = handle(hmod, KIND_MODULE, "hmod");
        if (m == null) {
            return CuResult.INVALID_HANDLE;
        }
        int result = cuda.moduleGetGlobal(out, m.nativeValue(), name);
        if (result == CuResult.SUCCESS) {
            owner.ranges().add(new DeviceRanges.Range(out.l0, out.l1, false, 0));
            r.set(0, out.l0);
            r.set(1, out.l1);
        }
        return result;
    }

    @Override
    public int ivc_module_unload(Reply r, long hmod) {
        HandleTable.Entry m = handle(hmod, KIND_MODULE, "hmod");
        if (m == null) {
            return CuResult.INVALID_HANDLE;
        }
        for (HandleTable.Entry e : vm.handles().ownedBy(owner.token())) {
            if (e.kind() == KIND_FUNCTION && e.extra() == hmod) {
                vm.handles().remove(e.id());
            }
        }
        vm.handles().remove(hmod);
        return cuda.moduleUnload(m.nativeValue());
    }

    @Override
    public int cuFuncGetAttribute(Reply r, int attrib, long hfunc) {
        HandleTable.Entry f = handle(hfunc, KIND_FUNCTION, "hfunc");
        if (f == null) {
            return CuResult.INVALID_HANDLE;
        }
        int result = cuda.funcGetAttribute(out, attrib, f.nativeValue());
        r.set(0, out.i0);
        return result;
    }

    @Override
    public int cuFuncSetAttribute(Reply r, long hfunc, int attrib, int value) {
        HandleTable.Entry f = handle(hfunc, KIND_FUNCTION, "hfunc");
        return f == null ? CuResult.INVALID_HANDLE : cuda.funcSetAttribute(f.nativeValue(), attrib, value);
    }

    @Override
    public int cuFuncSetCacheConfig(Reply r, long hfunc, int config) {
        HandleTable.Entry f = handle(hfunc, KIND_FUNCTION, "hfunc");
        return f == null ? CuResult.INVALID_HANDLE : cuda.funcSetCacheConfig(f.nativeValue(), config);
    }

    @Override
    public int cuFuncGetParamInfo(Reply r, long func, long paramIndex) {
        HandleTable.Entry f = handle(func, KIND_FUNCTION, "func");
        if (f == null) {
            return CuResult.INVALID_HANDLE;
        }
        int result = cuda.funcGetParamInfo(out, f.nativeValue(), paramIndex);
        r.set(0, out.l0);
        r.set(1, out.l1);
        return result;
    }

    @Override
    public int cuOccupancyMaxActiveBlocksPerMultiprocessor(Reply r, long func, int blockSize, long dynamicSMemSize) {
        return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(r, func, blockSize, dynamicSMemSize, 0);
    }

    @Override
    public int cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(Reply r, long func, int blockSize,
                                                                     long dynamicSMemSize, int flags) {
        HandleTable.Entry f = handle(func, KIND_FUNCTION, "func");
        if (f == null) {
            return CuResult.INVALID_HANDLE;
        }
        int result = cuda.occupancyMaxActiveBlocksPerMultiprocessor(out, f.nativeValue(), blockSize, dynamicSMemSize, flags);
        r.set(0, out.i0);
        return result;
    }

    /**
     * The parameter layout of a function as {@code offset << 32 | size} per parameter, asked from
     * cuFuncGetParamInfo until it answers CUDA_ERROR_INVALID_VALUE (past the last parameter), and
     * kept per worker: launches then cost no extra driver calls. Null with {@link #layoutError}.
     */
    private long[] paramLayout(HandleTable.Entry fn) {
        long[] cached = layouts.get(fn.id());
        if (cached != null) {
            return cached;
        }
        long[] entries = new long[16];
        int count = 0;
        while (true) {
            int result = cuda.funcGetParamInfo(out, fn.nativeValue(), count);
            if (result == CuResult.INVALID_VALUE) {
                break;
            }
            if (result != CuResult.SUCCESS) {
                layoutError = result;
                return null;
            }
            if (count == MAX_PARAMS || out.l0 < 0 || out.l0 > 0xffffffffL || out.l1 < 0 || out.l1 > 0xffffffffL) {
                layoutError = CuResult.NOT_SUPPORTED;
                return null;
            }
            if (count == entries.length) {
                entries = java.util.Arrays.copyOf(entries, count * 2);
            }
            entries[count++] = out.l0 << 32 | out.l1;
        }
        long[] layout = java.util.Arrays.copyOf(entries, count);
        layouts.put(fn.id(), layout);
        return layout;
    }

    /**
     * One u64 entry per parameter, {@code offset << 32 | size}; {@code count} is the number of
     * parameters even when the guest's capacity holds fewer entries.
     */
    @Override
    public int ivc_param_layout(Reply r, int capacity, long f) {
        HandleTable.Entry fn = handle(f, KIND_FUNCTION, "f");
        if (fn == null) {
            return CuResult.INVALID_HANDLE;
        }
        long[] entries = paramLayout(fn);
        if (entries == null) {
            return layoutError;
        }
        int fit = Math.min(entries.length, r.outbufCapacity() / 8);
        for (int i = 0; i < fit; i++) {
            r.buffer().putLong(r.outbufIndex() + 8 * i, entries[i], java.nio.ByteOrder.LITTLE_ENDIAN);
        }
        r.set(0, entries.length);
        r.outbufLength(fit * 8);
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_launch(DirectBuffer in, long f, int gridDimX, int gridDimY, int gridDimZ, int blockDimX,
                          int blockDimY, int blockDimZ, int sharedMemBytes, long stream, int paramsIndex,
                          int paramsLength, int paramsSize) {
        HandleTable.Entry fn = handle(f, KIND_FUNCTION, "f");
        if (fn == null) {
            return CuResult.INVALID_HANDLE;
        }
        long s = stream(stream, "stream");
        if (s < 0) {
            return CuResult.INVALID_HANDLE;
        }
        long[] entries = paramLayout(fn);
        if (entries == null) {
            return layoutError;
        }
        // rebuild void** kernelParams over the packed buffer, validated against the layout's end
        long params = out.scratch + 64;
        long base = in.addressOffset() + paramsIndex;
        long end = 0;
        for (int i = 0; i < entries.length; i++) {
            long offset = entries[i] >>> 32;
            end = Math.max(end, offset + (entries[i] & 0xffffffffL));
            UnsafeApi.putLong(params + 8L * i, base + offset);
        }
        // the guest packs up to the layout's end; a CU_LAUNCH_PARAM_BUFFER may carry trailing padding
        if (paramsLength < end) {
            warn("paramsSize", paramsLength + " is short of the kernel's parameter end " + end, CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        return cuda.launchKernel(fn.nativeValue(), gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                sharedMemBytes, s, entries.length == 0 ? 0 : params);
    }

    // ---- streams and events ------------------------------------------------------------------

    @Override
    public int cuStreamCreate(Reply r, int flags) {
        return cuStreamCreateWithPriority(r, flags, 0);
    }

    @Override
    public int cuStreamCreateWithPriority(Reply r, int flags, int priority) {
        int result = cuda.streamCreate(out, flags, priority);
        if (result == CuResult.SUCCESS) {
            long nativeStream = out.l0;
            r.set(0, vm.handles().mint(KIND_STREAM, owner.token(), nativeStream, currentNativeContext()));
        }
        return result;
    }

    @Override
    public int cuStreamDestroy_v2(Reply r, long hStream) {
        HandleTable.Entry e = handle(hStream, KIND_STREAM, "hStream");
        if (e == null) {
            return CuResult.INVALID_HANDLE;
        }
        vm.handles().remove(hStream);
        return cuda.streamDestroy(e.nativeValue());
    }

    @Override
    public int cuStreamSynchronize(Reply r, long hStream) {
        long s = stream(hStream, "hStream");
        return s < 0 ? CuResult.INVALID_HANDLE : cuda.streamSynchronize(s);
    }

    @Override
    public int cuStreamQuery(Reply r, long hStream) {
        long s = stream(hStream, "hStream");
        return s < 0 ? CuResult.INVALID_HANDLE : cuda.streamQuery(s);
    }

    @Override
    public int cuStreamWaitEvent(long hStream, long hEvent, int flags) {
        long s = stream(hStream, "hStream");
        HandleTable.Entry e = handle(hEvent, KIND_EVENT, "hEvent");
        return s < 0 || e == null ? CuResult.INVALID_HANDLE : cuda.streamWaitEvent(s, e.nativeValue(), flags);
    }

    @Override
    public int cuEventCreate(Reply r, int flags) {
        int result = cuda.eventCreate(out, flags);
        if (result == CuResult.SUCCESS) {
            long nativeEvent = out.l0;
            r.set(0, vm.handles().mint(KIND_EVENT, owner.token(), nativeEvent, currentNativeContext()));
        }
        return result;
    }

    @Override
    public int cuEventDestroy_v2(Reply r, long hEvent) {
        HandleTable.Entry e = handle(hEvent, KIND_EVENT, "hEvent");
        if (e == null) {
            return CuResult.INVALID_HANDLE;
        }
        vm.handles().remove(hEvent);
        return cuda.eventDestroy(e.nativeValue());
    }

    @Override
    public int cuEventRecord(long hEvent, long hStream) {
        return cuEventRecordWithFlags(hEvent, hStream, 0);
    }

    @Override
    public int cuEventRecordWithFlags(long hEvent, long hStream, int flags) {
        long s = stream(hStream, "hStream");
        HandleTable.Entry e = handle(hEvent, KIND_EVENT, "hEvent");
        return s < 0 || e == null ? CuResult.INVALID_HANDLE : cuda.eventRecord(e.nativeValue(), s, flags);
    }

    @Override
    public int cuEventSynchronize(Reply r, long hEvent) {
        HandleTable.Entry e = handle(hEvent, KIND_EVENT, "hEvent");
        return e == null ? CuResult.INVALID_HANDLE : cuda.eventSynchronize(e.nativeValue());
    }

    @Override
    public int cuEventQuery(Reply r, long hEvent) {
        HandleTable.Entry e = handle(hEvent, KIND_EVENT, "hEvent");
        return e == null ? CuResult.INVALID_HANDLE : cuda.eventQuery(e.nativeValue());
    }

    @Override
    public int cuEventElapsedTime(Reply r, long hStart, long hEnd) {
        HandleTable.Entry a = handle(hStart, KIND_EVENT, "hStart");
        HandleTable.Entry b = handle(hEnd, KIND_EVENT, "hEnd");
        if (a == null || b == null) {
            return CuResult.INVALID_HANDLE;
        }
        int result = cuda.eventElapsedTime(out, a.nativeValue(), b.nativeValue());
        r.setFloat(0, out.f0);
        return result;
    }
}
