package io.ivcuda.server.core;

import java.util.Arrays;

/**
 * What the driver printed for one guest process's kernels (device printf, a failed device assert's
 * message), waiting for the process to read it (ivc_device_output_read, docs/kernels.md). Bounded:
 * at most {@code limit.device.output.bytes} (its capacity) wait; what does not fit is counted as dropped and said to the
 * process with its next read, as is output withheld because it could have been another process's.
 * Its memory grows only as output arrives, so a process that never prints costs nothing.
 *
 * <p>Appended by the thread the driver printed in, read by any of the process's workers: every
 * method holds the object's lock.
 */
public final class DeviceOutput {
    /** Bytes one process may have waiting (by default the driver's own default printf FIFO size, 1 MiB). */
    private final int capacity;

    private byte[] bytes = new byte[0];
    private int start;
    private int end;
    private long dropped;
    private long withheld;

    /** @param capacity bytes that may wait ({@code limit.device.output.bytes}) */
    public DeviceOutput(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity " + capacity);
        }
        this.capacity = capacity;
    }

    public int capacity() {
        return capacity;
    }

    /** Keeps as much of {@code b[0..length)} as fits, counts the rest as dropped. */
    public synchronized void append(byte[] b, int length) {
        int waiting = end - start;
        int kept = Math.min(length, capacity - waiting);
        if (kept > 0) {
            if (end + kept > bytes.length) {
                // move what waits to the front, then grow (doubling, up to the capacity) if still short
                System.arraycopy(bytes, start, bytes, 0, waiting);
                end = waiting;
                start = 0;
                if (end + kept > bytes.length) {
                    int size = Math.max(4096, bytes.length);
                    while (size < end + kept) {
                        size *= 2;
                    }
                    bytes = Arrays.copyOf(bytes, Math.min(size, capacity));
                }
            }
            System.arraycopy(b, 0, bytes, end, kept);
            end += kept;
        }
        dropped += length - Math.max(kept, 0);
    }

    /** Counts {@code length} bytes not delivered because they could belong to another process. */
    public synchronized void withhold(int length) {
        withheld += length;
    }

    /** Whether a read would answer anything: output, or a count of lost bytes to say. */
    public synchronized boolean pending() {
        return end != start || dropped != 0 || withheld != 0;
    }

    /**
     * Moves up to {@code capacity} of the oldest bytes into {@code sink} and answers how many; the
     * lost-byte counts are taken by {@link #takeDropped} and {@link #takeWithheld}.
     */
    public synchronized int read(Sink sink, int capacity) {
        int n = Math.min(capacity, end - start);
        if (n > 0) {
            sink.put(bytes, start, n);
            start += n;
        }
        if (start == end) {
            // everything read: give back what a burst of output grew
            start = 0;
            end = 0;
            bytes = new byte[0];
        }
        return n;
    }

    public synchronized long takeDropped() {
        long d = dropped;
        dropped = 0;
        return d;
    }

    public synchronized long takeWithheld() {
        long w = withheld;
        withheld = 0;
        return w;
    }

    /** Where {@link #read} puts bytes (the response area, in the handler). */
    @FunctionalInterface
    public interface Sink {
        void put(byte[] b, int offset, int length);
    }
}
