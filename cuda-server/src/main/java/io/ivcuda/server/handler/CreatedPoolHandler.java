package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.gen.HandleKinds;
import io.ivcuda.server.gen.MempoolsCalls;
import io.ivcuda.server.gen.Reply;
import org.agrona.DirectBuffer;

/**
 * Created memory pools (api/vmm.api, docs/memory.md "Created pools"): a created pool is a mempool
 * handle whose extra is {@link #CREATED}, destroyed by its process or at reclaim. The device's
 * current pool is the process's own choice ({@code Owner.currentPool}): the driver's current pool,
 * which the VM's processes share, is never changed.
 */
final class CreatedPoolHandler implements MempoolsCalls {
    /** The extra of a created pool's handle (a driver pool's is 0). */
    static final long CREATED = 1;
    private static final int CU_MEM_ALLOCATION_TYPE_PINNED = 1;
    /** CUmemAllocationHandleType bits a pool may ask for: POSIX fd, Win32, Win32 KMT, fabric. */
    private static final int KNOWN_HANDLE_TYPES = 0xf;

    private final Session session;

    CreatedPoolHandler(Session session) {
        this.session = session;
    }

    @Override
    public int ivc_mempool_create(Reply r, int allocType, int handleTypes, int device, long maxSize, int usage) {
        if (allocType != CU_MEM_ALLOCATION_TYPE_PINNED) {
            return session.refuse("allocType", allocType + " (only CU_MEM_ALLOCATION_TYPE_PINNED is remoted)",
                    CuResult.NOT_SUPPORTED);
        }
        if ((handleTypes & ~KNOWN_HANDLE_TYPES) != 0 || maxSize < 0 || (usage & ~0xffff) != 0) {
            return session.refuse("handleTypes/maxSize/usage", "0x" + Integer.toHexString(handleTypes) + "/" + maxSize
                    + "/0x" + Integer.toHexString(usage), CuResult.INVALID_VALUE);
        }
        int result = session.cuda.memPoolCreate(session.out, handleTypes, device, maxSize, usage);
        if (result == CuResult.SUCCESS) {
            r.set(0, session.vm.handles().mint(HandleKinds.MEMPOOL, session.token(), session.out.handle, CREATED));
        }
        return result;
    }

    /** The caller's entry for a pool the dispatcher resolved (pinned or being released by this call). */
    private HandleTable.Entry entryOf(long nativePool) {
        return session.vm.handles().findNative(HandleKinds.MEMPOOL, session.token(), nativePool);
    }

    @Override
    public int cuMemPoolDestroy(Reply r, long pool) {
        HandleTable.Entry e = entryOf(pool);
        if (e == null || e.extra() != CREATED) {
            return session.refuse("pool", "not a pool this process created (the device's pools are the driver's)",
                    CuResult.INVALID_VALUE);
        }
        // no longer the process's current pool: cuMemAllocAsync goes back to the device's
        session.owner().currentPool().compareAndSet(e.id(), 0);
        return session.cuda.memPoolDestroy(pool);
    }

    @Override
    public int cuDeviceSetMemPool(Reply r, int dev, long pool) {
        HandleTable.Entry e = entryOf(pool);
        if (e == null) {
            return session.refuse("pool", "not a pool of this process", CuResult.INVALID_VALUE);
        }
        // a driver pool (the default) as current: the driver's current pool, which is the default
        session.owner().currentPool().set(e.extra() == CREATED ? e.id() : 0);
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_mempool_set_access(Reply r, DirectBuffer in, long pool, int descsIndex, int descsLength,
                                      long descsSize) {
        return AccessDescs.apply(session, in, descsIndex, descsLength,
                flags -> session.cuda.memPoolSetAccess(pool, session.vm.nativeDevice(), flags));
    }

    @Override
    public int ivc_mempool_get_access(Reply r, long pool, int device) {
        int result = session.cuda.memPoolGetAccess(session.out, pool, device);
        if (result == CuResult.SUCCESS) {
            r.set(0, session.out.value);
        }
        return result;
    }
}
