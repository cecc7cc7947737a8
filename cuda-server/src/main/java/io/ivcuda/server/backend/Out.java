package io.ivcuda.server.backend;

/**
 * Out-values of one driver call, one instance per worker thread so that calls allocate nothing.
 * {@link #scratch} is native memory (≥ {@link #SCRATCH_SIZE} bytes) a backend may use for the
 * driver's out-pointers.
 */
public final class Out {
    public static final int SCRATCH_SIZE = 4096;

    public long l0;
    public long l1;
    public int i0;
    public int i1;
    public float f0;
    public final long scratch;

    public Out(long scratch) {
        this.scratch = scratch;
    }

    /** Frees the scratch memory (allocated with Agrona's UnsafeApi by every backend). */
    public void free() {
        org.agrona.UnsafeApi.freeMemory(scratch);
    }
}
