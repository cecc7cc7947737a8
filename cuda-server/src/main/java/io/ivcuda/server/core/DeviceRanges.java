package io.ivcuda.server.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Device-memory ranges an owner may touch: its allocations (freeable, counted in the quota) and
 * module globals (not freeable). Every copy and memset must lie inside one range.
 */
public final class DeviceRanges {
    public record Range(long base, long size, boolean allocation, long context) {
    }

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

    /** Whether [address, address+bytes) lies inside one range. */
    public synchronized boolean contains(long address, long bytes) {
        if (bytes < 0) {
            return false;
        }
        Map.Entry<Long, Range> e = ranges.floorEntry(address);
        if (e == null) {
            return false;
        }
        Range r = e.getValue();
        long into = address - r.base();
        return into >= 0 && into <= r.size() && bytes <= r.size() - into;
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

    public synchronized List<Range> drain() {
        List<Range> all = new ArrayList<>(ranges.values());
        ranges.clear();
        return all;
    }
}
