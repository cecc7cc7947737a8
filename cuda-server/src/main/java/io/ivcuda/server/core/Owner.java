package io.ivcuda.server.core;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/** Per-process state of one owner token (docs/protocol.md §3): what reclaim must free. */
public final class Owner {
    private final long token;
    private final DeviceRanges ranges = new DeviceRanges();
    private final AtomicInteger primaryRetains = new AtomicInteger();
    private final VirtualMemory vmm;
    /** The handle id of the pool cuDeviceSetMemPool made current for this process; 0: the device's. */
    private final AtomicLong currentPool = new AtomicLong();
    private final CallMetrics metrics = new CallMetrics();
    private final DeviceOutput output;
    /** JIT log bytes its live link states hold ({@link JitLogBudget}). */
    private final AtomicLong jitLogBytes = new AtomicLong();
    private volatile boolean closed;
    private final AtomicBoolean reclaimed = new AtomicBoolean();
    private final AtomicBoolean unmeasuredImageLogged = new AtomicBoolean();

    /** An owner with the default limits (tests). */
    public Owner(long token) {
        this(token, Limits.DEFAULT);
    }

    public Owner(long token, Limits limits) {
        this.token = token;
        this.output = new DeviceOutput(limits.deviceOutputBytes());
        this.vmm = new VirtualMemory(token);
    }

    /** The process's current pool (a created pool's handle id), 0 for the device's own (api/vmm.api). */
    public AtomicLong currentPool() {
        return currentPool;
    }

    /** Its reserved ranges, physical allocations and mappings (api/vmm.api). */
    public VirtualMemory vmm() {
        return vmm;
    }

    public long token() {
        return token;
    }

    public int pid() {
        return (int) (token >>> 32);
    }

    public DeviceRanges ranges() {
        return ranges;
    }

    /** This process's calls, copies, launches and time (status and metrics). */
    public CallMetrics metrics() {
        return metrics;
    }

    public AtomicInteger primaryRetains() {
        return primaryRetains;
    }

    /** What the driver printed for this process's kernels, waiting for it (docs/kernels.md). */
    public DeviceOutput output() {
        return output;
    }

    public AtomicLong jitLogBytes() {
        return jitLogBytes;
    }

    /** True the first time only: an image whose module-scope variables cannot be measured is logged once a process. */
    public boolean firstUnmeasuredImage() {
        return unmeasuredImageLogged.compareAndSet(false, true);
    }

    public boolean closed() {
        return closed;
    }

    public void close() {
        closed = true;
    }

    /**
     * True for the one caller that frees this process's resources: a second reclaim of the same
     * process (its exit, then its dead heartbeat; or the server's stop) frees nothing twice.
     */
    public boolean beginReclaim() {
        closed = true;
        return reclaimed.compareAndSet(false, true);
    }
}
