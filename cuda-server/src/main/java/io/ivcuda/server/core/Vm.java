package io.ivcuda.server.core;

import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.server.gen.HandleKinds;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.integrity.IntegrityConfig;
import io.ivcuda.server.integrity.IntegrityOracles;
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
    private final InContext inContext;
    private final long memoryQuota;
    private final Limits limits;
    private final HandleTable handles;
    private final RefusalLog refusals;
    private final CallMetrics metrics = new CallMetrics();
    private final PoolAllocator pool;
    private final Map<Long, Owner> owners = new ConcurrentHashMap<>();
    private final ReclaimedTokens reclaimed;
    private final Map<String, Image> images = new ConcurrentHashMap<>();
    private final AtomicLong allocated = new AtomicLong();
    private final LoadedGlobals loadedGlobals = new LoadedGlobals();
    private final HostGpu gpu;
    private final AtomicLong moduleUnloads = new AtomicLong();
    /** The processes' integrity oracles (docs/export-tables.md). */
    private final IntegrityOracles integrity;
    private final Libraries libraries = new Libraries();
    private final HostCalls hostCalls;
    private final GraphState graphs;
    private final ArrayObjects arrays;
    private final FatalFault fatalFault;
    private final JitLogBudget jitLogs;

    /**
     * Everything the VM's workers share is given here, before the first worker runs: nothing is
     * attached later, so no worker can see the VM half made.
     *
     * @param memoryQuota bytes of device memory the VM may hold, 0 = no limit
     * @param gpu         the host GPU, as the driver session found it
     * @param limits      what the guest may grow here
     * @param integrity   the integrity oracles' settings ({@link IntegrityConfig#NONE}: none)
     * @param recovery    what follows a fatal GPU fault ({@link FatalFault})
     */
    public Vm(Region region, Layout layout, CudaBackend backend, long memoryQuota, HostGpu gpu, Limits limits,
              IntegrityConfig integrity, FatalFault.Recovery recovery) {
        this.region = region;
        this.layout = layout;
        this.backend = backend;
        this.inContext = new InContext(backend);
        this.memoryQuota = memoryQuota;
        this.gpu = gpu;
        this.limits = limits;
        this.handles = new HandleTable(limits.handlesPerProcess(), limits.handlesPerVm());
        this.refusals = new RefusalLog(limits);
        this.pool = new PoolAllocator(layout.poolSize());
        this.hostCalls = new HostCalls(refusals, limits.hostFunctionsPerProcess(), HostCalls.DEFAULT_TIMEOUT_NS);
        this.graphs = new GraphState(handles, backend, inContext);
        this.arrays = new ArrayObjects(handles, backend, inContext);
        this.reclaimed = new ReclaimedTokens(limits.processes());
        this.integrity = new IntegrityOracles(integrity, refusals);
        this.fatalFault = new FatalFault(owners, recovery);
        this.jitLogs = new JitLogBudget(limits);
    }

    /** A fatal GPU fault of one of the VM's processes, and the recovery from it (docs/architecture.md). */
    public FatalFault fatalFault() {
        return fatalFault;
    }

    /** Arrays' geometry and quota, texture and surface objects (docs/memory.md). */
    public ArrayObjects arrays() {
        return arrays;
    }

    /** Graph handles being captured, and the reclaim of graphs (docs/graphs.md). */
    public GraphState graphs() {
        return graphs;
    }

    /** Host functions of the VM's processes, run in the guest (docs/graphs.md). */
    public HostCalls hostCalls() {
        return hostCalls;
    }

    /** The JIT log bytes the VM's live link states hold, per process and in all. */
    public JitLogBudget jitLogs() {
        return jitLogs;
    }

    public Limits limits() {
        return limits;
    }

    public IntegrityOracles integrity() {
        return integrity;
    }

    /** The VM's calls by function, copies, launches and time (status and metrics). */
    public CallMetrics metrics() {
        return metrics;
    }

    /** Refused requests: counted per kind, logged rate-limited. */
    public RefusalLog refusals() {
        return refusals;
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

    /** Runs a driver call with a given context current (push, call, pop). */
    public InContext inContext() {
        return inContext;
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
        return owners.computeIfAbsent(token, t -> new Owner(t, limits));
    }

    /**
     * The state of a process that says hello: its own, new if it has none yet; null when the server
     * is reclaiming it (its process exited or was found dead) or {@link Limits#processes()} are held.
     */
    public Owner greet(long token) {
        Owner o = owners.get(token);
        if (o != null) {
            return o.closed() ? null : o;
        }
        // read after the owners: a reclaim remembers the token before it drops the owner
        if (reclaimed.contains(token) || owners.size() >= limits.processes()) {
            return null;
        }
        o = owners.computeIfAbsent(token, t -> new Owner(t, limits));
        return o.closed() ? null : o;
    }

    /** Whether the token's process was reclaimed (it exited, or was found dead): it gets no new session. */
    public boolean wasReclaimed(long token) {
        return reclaimed.contains(token);
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

    /** The kernels, modules and globals of the VM's loaded libraries (cuLibraryLoadData). */
    public Libraries libraries() {
        return libraries;
    }

    /** How many modules were unloaded so far: a native function's address may be reused after one. */
    public long moduleUnloads() {
        return moduleUnloads.get();
    }

    public void moduleUnloaded() {
        moduleUnloads.incrementAndGet();
    }

    /** The quota held for loaded modules' and libraries' module-scope variables. */
    public LoadedGlobals loadedGlobals() {
        return loadedGlobals;
    }

    /** A module (or library) went: the quota its module-scope variables held is given back. */
    public void globalsReleased(boolean library, long nativeObject) {
        release(loadedGlobals.released(library, nativeObject));
    }

    /** Reserves quota for {@code bytes}; false (and a log line) when the VM's quota would be exceeded. */
    public boolean reserve(long bytes, String who) {
        return reserve(bytes, who, null);
    }

    /**
     * Reserves quota for {@code bytes}, counting with a quota also what the driver holds for the VM
     * beyond its allocations (asked with {@code out}, null: not asked) — the figure the guest's
     * cuMemGetInfo reports ({@link MemoryQuota}), so that what it calls free can be allocated.
     */
    public boolean reserve(long bytes, String who, Out out) {
        long extra = memoryQuota > 0 && out != null ? MemoryQuota.heldByDriver(backend, out, gpu.nativeDevice()) : 0;
        long limit = memoryQuota <= 0 ? Long.MAX_VALUE : memoryQuota - extra;
        while (true) {
            long now = allocated.get();
            if (bytes < 0 || bytes > limit - now) {
                refusals.log(LOG, org.apache.logging.log4j.Level.WARN, ServerKeys.MEMORY_QUOTA.name(),
                        () -> who + ": allocation of " + Long.toUnsignedString(bytes) + " bytes refused: "
                                + (memoryQuota <= 0 ? "no quota, but beyond what can be counted" : ServerKeys.MEMORY_QUOTA.name() + " "
                                + memoryQuota + " bytes") + ", " + now + " in use");
                return false;
            }
            if (allocated.compareAndSet(now, now + bytes)) {
                return true;
            }
        }
    }

    /**
     * Module image bytes the server holds for the VM are bounded by {@link Limits#imageBytes()}: that
     * many kept (beyond it an image is loaded but not kept), and that many in transit (an upload
     * reserves its announced size before anything is allocated).
     */
    private final AtomicLong imageBytes = new AtomicLong();
    private final AtomicLong imageBytesInTransit = new AtomicLong();

    /** Reserves room to keep an image of {@code bytes}; false when the kept images would exceed the limit. */
    public boolean reserveImage(long bytes) {
        return reserveUpTo(imageBytes, bytes, limits.imageBytes());
    }

    public void releaseImage(long bytes) {
        imageBytes.addAndGet(-bytes);
    }

    /**
     * Reserves room for an image upload of {@code bytes} before its copy is allocated; false when the
     * uploads in transit would exceed the limit. {@link #releaseImageInTransit} once it is loaded.
     */
    public boolean reserveImageInTransit(long bytes) {
        return reserveUpTo(imageBytesInTransit, bytes, limits.imageBytes());
    }

    public void releaseImageInTransit(long bytes) {
        imageBytesInTransit.addAndGet(-bytes);
    }

    /** Adds {@code bytes} to {@code counter} unless that would pass {@code limit}; whether it did. */
    static boolean reserveUpTo(AtomicLong counter, long bytes, long limit) {
        while (true) {
            long now = counter.get();
            if (bytes < 0 || bytes > limit - now) {
                return false;
            }
            if (counter.compareAndSet(now, now + bytes)) {
                return true;
            }
        }
    }

    public void release(long bytes) {
        allocated.addAndGet(-bytes);
    }

    public long allocated() {
        return allocated.get();
    }

    /** Bytes of device memory the VM may hold, 0 = no limit. */
    public long memoryQuota() {
        return memoryQuota;
    }

    /**
     * The guest's view of its device memory (docs/sharing.md) from the card's free and total bytes:
     * with a quota, the quota and what the VM holds (its allocations and what the driver keeps for
     * it), as {@link #reserve(long, String, Out)} counts them.
     */
    public MemoryQuota.View memoryView(Out out, long cardFree, long cardTotal) {
        long held = memoryQuota > 0 ? allocated.get() + MemoryQuota.heldByDriver(backend, out, gpu.nativeDevice()) : 0;
        return MemoryQuota.view(memoryQuota, held, cardFree, cardTotal);
    }

    /**
     * Frees everything the token holds (its workers must have stopped): device allocations, pool
     * blocks, functions, modules, events, streams, contexts it created, primary-context retains.
     * Once: a second reclaim of the token frees nothing. The owner stays in {@link #owners} (closed:
     * its hellos are refused) until everything is freed, and the token is then remembered as
     * reclaimed, so the dying process never gets a new session that could use or destroy what this
     * reclaim destroys.
     */
    public void reclaim(long token, Out out) {
        Owner owner = owners.get(token);
        if (owner == null || !owner.beginReclaim()) {
            return;
        }
        try {
            free(token, owner, out);
        } finally {
            reclaimed.add(token);
            owners.remove(token, owner);
            fatalFault.reclaimed(token);
        }
    }

    private void free(long token, Owner owner, Out out) {
        // first: a driver thread waiting for this process's host function goes on
        hostCalls.reclaim(token);
        integrity.kill(token);
        int allocations = 0;
        for (DeviceRanges.Range r : owner.ranges().drain()) {
            if (r.allocation()) {
                freeWhenIdle(r);
                allocations++;
            }
        }
        // virtual memory: unmapped, released and its ranges freed after the process's allocations
        int vmmObjects = owner.vmm().reclaim(this);
        int blocks = pool.freeAllOf(token).size();
        // graphs before the streams and contexts they were captured on or live in
        graphs.reclaim(token, out);
        // texture and surface objects, then the arrays they read, before contexts go
        release(arrays.reclaim(token, out));
        List<HandleTable.Entry> entries = handles.ownedBy(token);
        // the driver's memory pools (HandleKinds.MEMPOOL, extra 0) are only forgotten; created ones
        // (extra 1, api/vmm.api) are destroyed, after the allocations made from them
        int[] order = {HandleKinds.MEMPOOL, HandleTable.KIND_FUNCTION, HandleTable.KIND_EVENT, HandleTable.KIND_STREAM,
            HandleTable.KIND_MODULE, HandleTable.KIND_LIBRARY, HandleTable.KIND_LINK, HandleTable.KIND_CTX};
        for (int kind : order) {
            for (HandleTable.Entry e : entries) {
                // a call of the process may have destroyed it meanwhile: destroyed once, never twice
                if (e.kind() != kind || !handles.takeForReclaim(e.id())) {
                    continue;
                }
                switch (kind) {
                    case HandleKinds.MEMPOOL -> {
                        if (e.extra() != 0) {
                            backend.memPoolDestroy(e.nativeValue());
                        }
                    }
                    case HandleTable.KIND_EVENT -> inContext.run(e.extra(), out, () -> backend.eventDestroy(e.nativeValue()));
                    case HandleTable.KIND_STREAM -> inContext.run(e.extra(), out, () -> backend.streamDestroy(e.nativeValue()));
                    case HandleTable.KIND_MODULE -> {
                        // a library's module goes with its library
                        if (!libraries.isLibraryModule(e.nativeValue())) {
                            inContext.run(e.extra(), out, () -> backend.moduleUnload(e.nativeValue()));
                            globalsReleased(false, e.nativeValue());
                            moduleUnloaded();
                        }
                    }
                    case HandleTable.KIND_LINK -> {
                        libraries.forgetLink(e.nativeValue());
                        backend.linkDestroy(e.nativeValue());
                        libraries.freeLinkLogs(e.nativeValue());
                    }
                    case HandleTable.KIND_LIBRARY -> {
                        libraries.forget(e.nativeValue());
                        backend.libraryUnload(e.nativeValue());
                        globalsReleased(true, e.nativeValue());
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
        int a = allocations;
        refusals.log(LOG, org.apache.logging.log4j.Level.INFO, "reclaimed", () -> "reclaimed owner pid " + owner.pid()
                + " (token " + Long.toHexString(token) + "): " + a + " allocations, " + blocks + " pool blocks, "
                + entries.size() + " handles, " + retains + " primary retains, " + vmmObjects + " virtual-memory objects");
    }

    /**
     * The process destroyed a context it created, and the driver with it everything that lived in
     * it: streams, events, modules and their functions, graphs, arrays, allocations, globals. Their
     * records go now, without a driver call, so that no later call of the process and no reclaim
     * hands the driver a destroyed context or object (the reclaim of a program that destroyed its
     * context without unloading its module pushed the dead context and crashed the server on the
     * H200). An allocation's quota is given back once no call uses it.
     */
    public void contextDestroyed(long token, Owner owner, long nativeContext) {
        int objects = 0;
        for (HandleTable.Entry e : handles.ownedBy(token)) {
            int kind = e.kind();
            // a context's own entry is its destroying call's; pools and functions do not name a
            // context in extra (functions go with their module below)
            if (kind == HandleTable.KIND_CTX || kind == HandleKinds.MEMPOOL || kind == HandleTable.KIND_FUNCTION
                    || e.extra() != nativeContext || !handles.takeForReclaim(e.id())) {
                continue;
            }
            objects++;
            if (kind == HandleTable.KIND_MODULE) {
                objects += handles.removeDependents(token, HandleTable.KIND_FUNCTION, e.nativeValue(), () -> false);
                globalsReleased(false, e.nativeValue());
                moduleUnloaded();
            }
        }
        List<DeviceRanges.Range> ranges = owner.ranges().removeInContext(nativeContext);
        for (DeviceRanges.Range r : ranges) {
            if (r.allocation()) {
                r.use().whenIdle(() -> {
                    release(r.size());
                    return CuResult.SUCCESS;
                });
            }
        }
        if (objects > 0 || !ranges.isEmpty()) {
            LOG.debug("owner pid {}: a destroyed context took {} handles and {} device ranges with it", owner.pid(),
                    objects, ranges.size());
        }
    }

    /**
     * Frees an allocation (taken out of its owner's ranges already) and its quota once no call uses
     * it any more: now, answering the driver's result, or when the last call that pinned it returns
     * (answering CUDA_SUCCESS now). The free runs in the allocation's context.
     */
    public int freeWhenIdle(DeviceRanges.Range r) {
        return r.use().whenIdle(() -> {
            Out out = backend.newOut();
            try {
                int result = inContext.run(r.context(), out, () -> backend.memFree(r.base()));
                release(r.size());
                return result;
            } finally {
                out.free();
            }
        });
    }

    public void close() {
        integrity.close();
        for (Image i : images.values()) {
            UnsafeApi.freeMemory(i.address());
        }
        images.clear();
    }
}
