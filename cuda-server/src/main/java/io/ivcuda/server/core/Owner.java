package io.ivcuda.server.core;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/** Per-process state of one owner token (docs/protocol.md §3): what reclaim must free. */
public final class Owner {
    private final long token;
    private final DeviceRanges ranges = new DeviceRanges();
    private final AtomicInteger primaryRetains = new AtomicInteger();
    private final CallMetrics metrics = CallMetrics.totals();
    private final DeviceOutput output = new DeviceOutput();
    private volatile boolean closed;
    private final AtomicBoolean reclaimed = new AtomicBoolean();

    public Owner(long token) {
        this.token = token;
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
