package io.ivcuda.server.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.IntSupplier;

/**
 * Device-memory ranges an owner may touch: its allocations (freeable, counted in the quota) and
 * module globals (not freeable). Every copy and memset must lie inside one range.
 *
 * <p>A call {@link #pin pins} the ranges it was checked against until it returns; an allocation
 * freed meanwhile (by another worker thread of the same process) is gone from the ranges at once,
 * so no new call can use it, and its memory is released by {@link Use#whenIdle} only once the last
 * call that uses it has returned.
 */
public final class DeviceRanges {

    /** What uses a range now: calls in flight, and what to do once none is left. */
    public static final class Use {
        private int pins;
        private IntSupplier whenIdle;

        synchronized void pin() {
            pins++;
        }

        /** Ends one pin; runs the deferred release (on this thread) when it was the last. */
        public void unpin() {
            IntSupplier action;
            synchronized (this) {
                if (pins == 0 || --pins > 0 || whenIdle == null) {
                    return;
                }
                action = whenIdle;
                whenIdle = null;
            }
            action.getAsInt();
        }

        /**
         * Runs {@code release} now and answers its result if no call uses the range, else runs it when
         * the last one returns and answers 0 (CUDA_SUCCESS) now.
         */
        public int whenIdle(IntSupplier release) {
            synchronized (this) {
                if (pins > 0) {
                    whenIdle = release;
                    return 0;
                }
            }
            return release.getAsInt();
        }

        public synchronized int pins() {
            return pins;
        }
    }

    /**
     * One range. {@code pool} is where a stream-ordered allocation came from, for
     * CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: the owner's own mempool handle (as minted for it), {@link
     * #DEVICE_POOL} for the device's current driver pool (named when asked), 0 for memory of no pool.
     */
    public record Range(long base, long size, boolean allocation, long context, long pool, Use use) {
        public Range(long base, long size, boolean allocation, long context) {
            this(base, size, allocation, context, 0, new Use());
        }

        public Range(long base, long size, boolean allocation, long context, long pool) {
            this(base, size, allocation, context, pool, new Use());
        }
    }

    /** {@link Range#pool} of an allocation from the device's current driver pool (cuMemAllocAsync). */
    public static final long DEVICE_POOL = -1;

    private final TreeMap<Long, Range> ranges = new TreeMap<>();

    public synchronized void add(Range r) {
        ranges.put(r.base(), r);
    }

    public synchronized Range removeAllocation(long base) {
        Range r = ranges.get(base);
        if (r == null || !r.allocation()) {
            return null;
        }
        return ranges.remove(base);
    }

    /** Removes a range that is not an allocation (a global of an unloaded library); null if none. */
    public synchronized Range removeGlobal(long base) {
        Range r = ranges.get(base);
        if (r == null || r.allocation()) {
            return null;
        }
        return ranges.remove(base);
    }

    /** Whether [address, address+bytes) lies inside one range. */
    public synchronized boolean contains(long address, long bytes) {
        return containing(address, bytes) != null;
    }

    /** The range holding [address, address+bytes), pinned (see {@link Use#unpin}); null if none. */
    public synchronized Range pin(long address, long bytes) {
        Range r = containing(address, bytes);
        if (r != null) {
            r.use().pin();
        }
        return r;
    }

    private Range containing(long address, long bytes) {
        if (bytes < 0) {
            return null;
        }
        Map.Entry<Long, Range> e = ranges.floorEntry(address);
        if (e == null) {
            return null;
        }
        Range r = e.getValue();
        long into = address - r.base();
        return into >= 0 && into <= r.size() && bytes <= r.size() - into ? r : null;
    }

    /** The range containing {@code address}, or null. */
    public synchronized Range find(long address) {
        Map.Entry<Long, Range> e = ranges.floorEntry(address);
        if (e == null) {
            return null;
        }
        Range r = e.getValue();
        long into = address - r.base();
        return into >= 0 && into < r.size() ? r : null;
    }

    /** Bytes of the device allocations recorded here (not module globals): what the process holds. */
    public synchronized long allocatedBytes() {
        long sum = 0;
        for (Range r : ranges.values()) {
            if (r.allocation()) {
                sum += r.size();
            }
        }
        return sum;
    }

    public synchronized int count() {
        return ranges.size();
    }

    /** Removes and returns the ranges (allocations and globals) that live in {@code context}. */
    public synchronized List<Range> removeInContext(long context) {
        List<Range> gone = new ArrayList<>();
        ranges.values().removeIf(r -> {
            if (r.context() == context) {
                gone.add(r);
                return true;
            }
            return false;
        });
        return gone;
    }

    public synchronized List<Range> drain() {
        List<Range> all = new ArrayList<>(ranges.values());
        ranges.clear();
        return all;
    }
}
