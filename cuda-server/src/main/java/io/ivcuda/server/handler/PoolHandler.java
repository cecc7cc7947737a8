package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.DeviceRanges;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.gen.HandleKinds;
import io.ivcuda.server.gen.PoolsCalls;
import io.ivcuda.server.gen.Reply;

/**
 * Stream-ordered allocation (docs/memory.md). An allocation is a device range of the process,
 * counted against the VM's quota from the call that makes it to its free, like cuMemAlloc's; the
 * pools are the driver's (the device's default or current pool), whose handles are minted per
 * process and only forgotten at reclaim.
 */
final class PoolHandler implements PoolsCalls {
    /** CUmemPool_attribute: 1-3 int, 4-8 cuuint64_t. */
    static final int FIRST_ATTRIBUTE = 1;
    static final int LAST_ATTRIBUTE = 8;

    private final Session session;

    PoolHandler(Session session) {
        this.session = session;
    }

    /** The process's handle for a driver pool: the one it has, or a new one. */
    private long handleFor(long nativePool) {
        var known = session.vm.handles().findNative(HandleKinds.MEMPOOL, session.token(), nativePool);
        return known != null ? known.id()
                : session.vm.handles().mint(HandleKinds.MEMPOOL, session.token(), nativePool, 0);
    }

    @Override
    public int cuDeviceGetDefaultMemPool(Reply r, int dev) {
        int result = session.cuda.deviceGetDefaultMemPool(session.out, dev);
        if (result == CuResult.SUCCESS) {
            r.set(0, handleFor(session.out.handle));
        }
        return result;
    }

    /**
     * The process's current pool if it set a created one (cuDeviceSetMemPool, api/vmm.api), pinned
     * for this call; null for the device's (also when that pool is being destroyed right now).
     */
    private HandleTable.Entry currentCreatedPool() {
        long id = session.owner().currentPool().get();
        return id == 0 ? null : session.pinHandle(HandleKinds.MEMPOOL, id);
    }

    @Override
    public int cuDeviceGetMemPool(Reply r, int dev) {
        HandleTable.Entry current = currentCreatedPool();
        if (current != null) {
            r.set(0, current.id());
            return CuResult.SUCCESS;
        }
        int result = session.cuda.deviceGetMemPool(session.out, dev);
        if (result == CuResult.SUCCESS) {
            r.set(0, handleFor(session.out.handle));
        }
        return result;
    }

    @Override
    public int cuMemPoolTrimTo(Reply r, long pool, long minBytesToKeep) {
        return session.cuda.memPoolTrimTo(pool, minBytesToKeep);
    }

    @Override
    public int ivc_mem_alloc_async(Reply r, long bytesize, long pool, long stream) {
        if (bytesize <= 0) {
            session.warn("bytesize", String.valueOf(bytesize), CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        if (!session.mayAllocate("bytesize")) {
            return CuResult.OUT_OF_MEMORY;
        }
        if (!session.vm.reserve(bytesize, "channel " + session.index() + " pid " + session.ownerPid()
                + " ivc_mem_alloc_async", session.out)) {
            return CuResult.OUT_OF_MEMORY;
        }
        // the pool it comes from, as this process names it (CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE): the
        // handle it gave (the dispatcher pinned it) or its current created pool's; the device's
        // driver pool is named only when asked, so this call mints nothing
        long origin;
        if (pool == 0) {
            HandleTable.Entry current = currentCreatedPool();
            pool = current == null ? 0 : current.nativeValue();
            origin = current == null ? DeviceRanges.DEVICE_POOL : current.id();
        } else {
            HandleTable.Entry given = session.vm.handles().findNative(HandleKinds.MEMPOOL, session.token(), pool);
            origin = given == null ? 0 : given.id(); // pinned by the dispatcher: never null
        }
        int result = session.cuda.memAllocAsync(session.out, bytesize, pool, stream);
        if (result != CuResult.SUCCESS) {
            session.vm.release(bytesize);
            return result;
        }
        long dptr = session.out.address;
        session.owner().ranges().add(
                new DeviceRanges.Range(dptr, bytesize, true, session.currentNativeContext(), origin));
        r.set(0, dptr);
        return result;
    }

    /**
     * Out of the process's ranges first, so no new call can use it. With no call of another thread
     * using it now, it is freed in stream order; otherwise it is freed (synchronously, as at
     * reclaim) when the last such call returns, since the stream may be gone by then.
     */
    @Override
    public int ivc_mem_free_async(Reply r, long dptr, long stream) {
        DeviceRanges.Range range = session.owner().ranges().removeAllocation(dptr);
        if (range == null) {
            session.warn("dptr", "0x" + Long.toHexString(dptr) + " is not an allocation of this process",
                    CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        if (range.use().pins() > 0) {
            return session.vm.freeWhenIdle(range);
        }
        int result = session.cuda.memFreeAsync(range.base(), stream);
        session.vm.release(range.size());
        return result;
    }

    private boolean knownAttribute(int attr) {
        if (attr < FIRST_ATTRIBUTE || attr > LAST_ATTRIBUTE) {
            session.warn("attr", String.valueOf(attr), CuResult.INVALID_VALUE);
            return false;
        }
        return true;
    }

    @Override
    public int ivc_mempool_set_attribute(Reply r, long pool, int attr, long value) {
        return knownAttribute(attr) ? session.cuda.memPoolSetAttribute(pool, attr, value) : CuResult.INVALID_VALUE;
    }

    @Override
    public int ivc_mempool_get_attribute(Reply r, long pool, int attr) {
        if (!knownAttribute(attr)) {
            return CuResult.INVALID_VALUE;
        }
        int result = session.cuda.memPoolGetAttribute(session.out, pool, attr);
        if (result == CuResult.SUCCESS) {
            r.set(0, session.out.bytes);
        }
        return result;
    }
}
