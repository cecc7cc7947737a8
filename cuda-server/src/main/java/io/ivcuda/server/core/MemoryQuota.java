package io.ivcuda.server.core;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.Out;

/**
 * The VM's device memory as its guest sees it (issue 15, docs/sharing.md): with a quota, CUDA's and
 * NVML's memory figures are the quota and what the VM holds, not the card's, and they are the same
 * figures {@link Vm#reserve(long, String, Out)} enforces, so that an allocation of what
 * cuMemGetInfo calls free succeeds and one byte more is refused (while the card has the room).
 *
 * <p>What the VM holds: its allocations (cuMemAlloc, pitch, stream-ordered; counted by the server)
 * plus what the driver keeps for this server process beyond them, which the server cannot count
 * call by call: memory cached by the device's memory pools (reserved, not used) and the memory
 * graphs' allocation nodes hold. The server process is this VM's alone, so the driver's per-process
 * figures are the VM's.
 */
public final class MemoryQuota {
    /** CUmemPool_attribute (cuda.h). */
    static final int MEMPOOL_RESERVED_MEM_CURRENT = 5;
    static final int MEMPOOL_USED_MEM_CURRENT = 7;
    /** CUgraphMem_attribute (cuda.h). */
    static final int GRAPH_MEM_RESERVED_MEM_CURRENT = 2;

    /** The guest's figures: free and total bytes, and the bytes the VM holds. */
    public record View(long free, long total, long held) {
    }

    private MemoryQuota() {
    }

    /**
     * The guest's view: with no quota (0) the card's own figures; with one, total = the quota (no
     * more than the card has), held as counted, free = what is left of the quota, no more than the
     * card has free (other VMs share it).
     */
    public static View view(long quota, long held, long cardFree, long cardTotal) {
        if (quota <= 0) {
            return new View(cardFree, cardTotal, Math.max(0, cardTotal - cardFree));
        }
        long total = cardTotal > 0 ? Math.min(quota, cardTotal) : quota;
        long left = Math.max(0, total - held);
        return new View(Math.min(left, Math.max(0, cardFree)), total, held);
    }

    /**
     * Bytes the driver holds for this process beyond its counted allocations: the default and
     * current pools' reserved-but-unused memory, and graph memory. A query the backend cannot answer
     * (the host-memory backend has no pools) counts 0. {@code out} is the caller's (its scratch is
     * used).
     */
    public static long heldByDriver(CudaBackend backend, Out out, int device) {
        long held = 0;
        long defaultPool = 0;
        if (backend.deviceGetDefaultMemPool(out, device) == CuResult.SUCCESS) {
            defaultPool = out.handle;
            held += poolCache(backend, out, defaultPool);
        }
        if (backend.deviceGetMemPool(out, device) == CuResult.SUCCESS && out.handle != defaultPool) {
            held += poolCache(backend, out, out.handle);
        }
        if (backend.deviceGetGraphMemAttribute(out, device, GRAPH_MEM_RESERVED_MEM_CURRENT) == CuResult.SUCCESS) {
            held += Math.max(0, out.bytes);
        }
        return held;
    }

    /** A pool's memory reserved but not in use by allocations (those are counted already). */
    private static long poolCache(CudaBackend backend, Out out, long pool) {
        if (pool == 0 || backend.memPoolGetAttribute(out, pool, MEMPOOL_RESERVED_MEM_CURRENT) != CuResult.SUCCESS) {
            return 0;
        }
        long reserved = out.bytes;
        if (backend.memPoolGetAttribute(out, pool, MEMPOOL_USED_MEM_CURRENT) != CuResult.SUCCESS) {
            return 0;
        }
        return Math.max(0, reserved - out.bytes);
    }
}
