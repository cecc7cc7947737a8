package io.ivcuda.server.backend;

/**
 * Out-values of one driver call, one instance per worker thread so that calls allocate nothing.
 * Each {@link CudaBackend} method says which fields it sets. {@link #scratch} is native memory (≥
 * {@link #SCRATCH_SIZE} bytes) a backend may use for the driver's out-pointers.
 */
public final class Out {
    public static final int SCRATCH_SIZE = 4096;

    /** A native object the call created or returned: context, module, function, stream, event. */
    public long handle;
    /** A device address: an allocation, a global, a range's base, the pool's device pointer. */
    public long address;
    /** A byte count: total or free memory, a global's or a range's size, a pitch, a limit, a parameter's size. */
    public long bytes;
    /** cuMemGetInfo's total. */
    public long totalBytes;
    /** A kernel parameter's offset. */
    public long offset;
    /** A 32-bit answer: a version, a device, a count, an attribute, flags, a priority, a block count. */
    public int value;
    /** cuCtxGetStreamPriorityRange's greatest priority (its least is {@link #value}). */
    public int greatestPriority;
    /** cuDevicePrimaryCtxGetState's active flag (its flags are {@link #value}). */
    public int active;
    /** cuEventElapsedTime's answer. */
    public float milliseconds;
    /** cudart's integrity check (export table d4082055 slot 1): its 16-byte answer, as two little-endian words. */
    public long integrityLow;
    public long integrityHigh;
    public final long scratch;

    public Out(long scratch) {
        this.scratch = scratch;
    }

    /** Frees the scratch memory (allocated with Agrona's UnsafeApi by every backend). */
    public void free() {
        org.agrona.UnsafeApi.freeMemory(scratch);
    }
}
