package io.ivcuda.server.core;

import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.region.Layout;
import io.ivcuda.server.region.Region;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.agrona.UnsafeApi;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Everything one VM's server shares between its workers: handles, pool, owners, images, quota, and
 * the host GPU as the server's driver session found it. Made once, complete, after that session
 * opened.
 */
public final class Vm {
    private static final Logger LOG = LogManager.getLogger(Vm.class);

    /** A module image kept by content (docs: sendImage 0 reuses it). */
    public record Image(long hash, long size, long address) {
    }

    private final Region region;
    private final Layout layout;
    private final CudaBackend backend;
    private final long memoryQuota;
    private final HandleTable handles = new HandleTable();
    private final PoolAllocator pool;
    private final Map<Long, Owner> owners = new ConcurrentHashMap<>();
    private final Map<String, Image> images = new ConcurrentHashMap<>();
    private final AtomicLong allocated = new AtomicLong();
    private final HostGpu gpu;
    private final AtomicLong moduleUnloads = new AtomicLong();

    /**
     * @param memoryQuota bytes of device memory the VM may hold, 0 = no limit
     * @param gpu         the host GPU, as the driver session found it
     */
    public Vm(Region region, Layout layout, CudaBackend backend, long memoryQuota, HostGpu gpu) {
        this.region = region;
        this.layout = layout;
        this.backend = backend;
        this.memoryQuota = memoryQuota;
        this.gpu = gpu;
        this.pool = new PoolAllocator(layout.poolSize());
    }

    public Region region() {
        return region;
    }

    public Layout layout() {
        return layout;
    }

    public CudaBackend backend() {
        return backend;
    }

    public HandleTable handles() {
        return handles;
    }

    public PoolAllocator pool() {
        return pool;
    }

    public long poolAddress() {
        return region.address() + layout.poolOffset();
    }

    public int nativeDevice() {
        return gpu.nativeDevice();
    }

    /** Device pointer of the pool's start, 0 when the region is not registered. */
    public long poolDevicePointer() {
        return gpu.poolDevicePointer();
    }

    public int hostDriverVersion() {
        return gpu.driverVersion();
    }

    /** The host's cuInit result, answered to the guest's cuInit. */
    public int initResult() {
        return gpu.initResult();
    }

    public Owner owner(long token) {
        return owners.computeIfAbsent(token, Owner::new);
    }

    public Owner existingOwner(long token) {
        return owners.get(token);
    }

    public Map<Long, Owner> owners() {
        return owners;
    }

    public Map<String, Image> images() {
        return images;
    }

    /** How many modules were unloaded so far: a native function's address may be reused after one. */
    public long moduleUnloads() {
        return moduleUnloads.get();
    }

    public void moduleUnloaded() {
        moduleUnloads.incrementAndGet();
    }

    /** Reserves quota for {@code bytes}; false (and a log line) when the VM's quota would be exceeded. */
    public boolean reserve(long bytes, String who) {
        if (memoryQuota <= 0) {
            allocated.addAndGet(bytes);
            return true;
        }
        while (true) {
            long now = allocated.get();
            if (now + bytes > memoryQuota || now + bytes < 0) {
                LOG.warn("{}: allocation of {} bytes refused: memory.quota {} bytes, {} in use",
                        who, bytes, memoryQuota, now);
                return false;
            }
            if (allocated.compareAndSet(now, now + bytes)) {
                return true;
            }
        }
    }

    /** Kept module images are bounded per VM, so a guest cannot grow the server without limit. */
    public static final long IMAGE_BUDGET = 512L << 20;
    private final AtomicLong imageBytes = new AtomicLong();

    public boolean reserveImage(long bytes) {
        if (imageBytes.addAndGet(bytes) > IMAGE_BUDGET) {
            imageBytes.addAndGet(-bytes);
            return false;
        }
        return true;
    }

    public void releaseImage(long bytes) {
        imageBytes.addAndGet(-bytes);
    }

    public void release(long bytes) {
        allocated.addAndGet(-bytes);
    }

    public long allocated() {
        return allocated.get();
    }

    /**
     * Frees everything the token holds (its workers must have stopped): device allocations, pool
     * blocks, functions, modules, events, streams, contexts it created, primary-context retains.
     */
    public void reclaim(long token, Out out) {
        Owner owner = owners.remove(token);
        if (owner == null) {
            return;
        }
        owner.close();
        int allocations = 0;
        for (DeviceRanges.Range r : owner.ranges().drain()) {
            if (r.allocation()) {
                withContext(r.context(), out, () -> backend.memFree(r.base()));
                release(r.size());
                allocations++;
            }
        }
        int blocks = pool.freeAllOf(token).size();
        List<HandleTable.Entry> entries = handles.ownedBy(token);
        int[] order = {HandleTable.KIND_FUNCTION, HandleTable.KIND_EVENT, HandleTable.KIND_STREAM,
            HandleTable.KIND_MODULE, HandleTable.KIND_CTX};
        for (int kind : order) {
            for (HandleTable.Entry e : entries) {
                if (e.kind() != kind) {
                    continue;
                }
                handles.remove(e.id());
                switch (kind) {
                    case HandleTable.KIND_EVENT -> withContext(e.extra(), out, () -> backend.eventDestroy(e.nativeValue()));
                    case HandleTable.KIND_STREAM -> withContext(e.extra(), out, () -> backend.streamDestroy(e.nativeValue()));
                    case HandleTable.KIND_MODULE -> {
                        withContext(e.extra(), out, () -> backend.moduleUnload(e.nativeValue()));
                        moduleUnloaded();
                    }
                    case HandleTable.KIND_CTX -> {
                        if (e.extra() == 0) {
                            backend.ctxDestroy(e.nativeValue());
                        }
                    }
                    default -> {
                    }
                }
            }
        }
        int retains = owner.primaryRetains().getAndSet(0);
        for (int i = 0; i < retains; i++) {
            backend.primaryCtxRelease(gpu.nativeDevice());
        }
        LOG.info("reclaimed owner pid {} (token {}): {} allocations, {} pool blocks, {} handles, {} primary retains",
                owner.pid(), Long.toHexString(token), allocations, blocks, entries.size(), retains);
    }

    private void withContext(long ctx, Out out, java.util.function.IntSupplier call) {
        if (ctx != 0) {
            backend.ctxPushCurrent(ctx);
        }
        call.getAsInt();
        if (ctx != 0) {
            backend.ctxPopCurrent(out);
        }
    }

    public void close() {
        for (Image i : images.values()) {
            UnsafeApi.freeMemory(i.address());
        }
        images.clear();
    }
}
