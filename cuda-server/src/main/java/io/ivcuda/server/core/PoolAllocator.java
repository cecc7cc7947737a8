package io.ivcuda.server.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * First-fit allocator over the pool, offsets relative to the pool's start (docs/protocol.md §6),
 * in 4 KiB granules so guest pinned memory is page aligned. Each block remembers its owner token.
 */
public final class PoolAllocator {
    public static final long GRANULE = 4096;
    static final long LARGE = 2L << 20;

    public record Block(long offset, long size, long owner) {
    }

    private final long poolSize;
    private final TreeMap<Long, Block> used = new TreeMap<>();

    public PoolAllocator(long poolSize) {
        this.poolSize = poolSize;
    }

    /** The offset of a new block, or -1 when nothing fits. */
    public synchronized long allocate(long bytes, long owner) {
        if (bytes <= 0 || bytes > poolSize) {
            return -1;
        }
        long size = (bytes + GRANULE - 1) / GRANULE * GRANULE;
        // large buffers on 2 MiB boundaries, like the driver's own pinned memory
        long alignment = size >= LARGE ? LARGE : GRANULE;
        long cursor = 0;
        for (Block b : used.values()) {
            if (b.offset() - cursor >= size) {
                break;
            }
            cursor = (b.offset() + b.size() + alignment - 1) / alignment * alignment;
        }
        if (poolSize - cursor < size) {
            return -1;
        }
        used.put(cursor, new Block(cursor, size, owner));
        return cursor;
    }

    /** Frees the block starting at {@code offset} if {@code owner} holds it. */
    public synchronized boolean free(long offset, long owner) {
        Block b = used.get(offset);
        if (b == null || b.owner() != owner) {
            return false;
        }
        used.remove(offset);
        return true;
    }

    /** The owner's block containing [offset, offset+bytes), or null. */
    public synchronized Block blockOf(long offset, long bytes, long owner) {
        if (offset < 0 || bytes < 0) {
            return null;
        }
        Map.Entry<Long, Block> e = used.floorEntry(offset);
        if (e == null) {
            return null;
        }
        Block b = e.getValue();
        return b.owner() == owner && offset - b.offset() <= b.size() - bytes ? b : null;
    }

    public synchronized List<Block> freeAllOf(long owner) {
        List<Block> gone = new ArrayList<>();
        used.values().removeIf(b -> {
            if (b.owner() == owner) {
                gone.add(b);
                return true;
            }
            return false;
        });
        return gone;
    }

    public synchronized int blockCount() {
        return used.size();
    }
}
