package io.ivcuda.server.backend;

import java.util.concurrent.atomic.AtomicLong;
import org.agrona.UnsafeApi;

/**
 * A zeroed native block holding one driver call's descriptor (a CUDA_MEMCPY3D, a graph node's
 * parameters, a CUmemAccessDesc). The driver reads such a struct during the call only, so the call
 * owns the block and frees it when it returns (try-with-resources). Blocks kept per thread instead
 * were never freed when a channel's worker thread ended: one leak per worker (issue 13). A
 * malloc/free pair costs far less than the driver call it serves.
 */
final class NativeStruct implements AutoCloseable {
    /** Blocks allocated and not yet freed, JVM-wide: what tests check for leaks. */
    private static final AtomicLong LIVE = new AtomicLong();

    /** The block's address: valid until {@link #close()}. */
    final long address;
    private boolean closed;

    private NativeStruct(long address) {
        this.address = address;
    }

    /** A block of {@code size} bytes, all zero (cuda.h's descriptors want their unused fields zero). */
    static NativeStruct zeroed(int size) {
        long p = UnsafeApi.allocateMemory(size);
        UnsafeApi.setMemory(p, size, (byte) 0);
        LIVE.incrementAndGet();
        return new NativeStruct(p);
    }

    /** How many blocks are allocated and not yet freed. */
    static long live() {
        return LIVE.get();
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            UnsafeApi.freeMemory(address);
            LIVE.decrementAndGet();
        }
    }
}
