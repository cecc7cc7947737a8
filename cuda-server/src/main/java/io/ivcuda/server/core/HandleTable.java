package io.ivcuda.server.core;

import java.util.ArrayList;
import java.util.List;

/**
 * The VM's handle table: guest-visible ids {@code kind << 56 | generation << 32 | index} minted
 * for native driver objects, each checked on use for kind, generation and owner token.
 */
public final class HandleTable {
    public static final int KIND_CTX = 1;
    public static final int KIND_MODULE = 2;
    public static final int KIND_FUNCTION = 3;
    public static final int KIND_STREAM = 4;
    public static final int KIND_EVENT = 5;

    /** One live entry; {@code extra} holds per-kind data (e.g. the context an object lives in). */
    public record Entry(long id, int kind, long owner, long nativeValue, long extra) {
    }

    private final List<Entry> entries = new ArrayList<>();
    private final List<Integer> generations = new ArrayList<>();
    private final ArrayList<Integer> free = new ArrayList<>();

    public static int kindOf(long id) {
        return (int) (id >>> 56);
    }

    public synchronized long mint(int kind, long owner, long nativeValue, long extra) {
        int index;
        if (!free.isEmpty()) {
            index = free.remove(free.size() - 1);
        } else {
            index = entries.size();
            entries.add(null);
            generations.add(1);
        }
        int generation = generations.get(index) & 0xffffff;
        long id = (long) kind << 56 | (long) generation << 32 | (index & 0xffffffffL);
        entries.set(index, new Entry(id, kind, owner, nativeValue, extra));
        return id;
    }

    /** The entry for {@code id} if it is live, of {@code kind} and owned by {@code owner}; else null. */
    public synchronized Entry lookup(long id, int kind, long owner) {
        long index = id & 0xffffffffL;
        if (kindOf(id) != kind || index >= entries.size()) {
            return null;
        }
        Entry e = entries.get((int) index);
        return e != null && e.id() == id && e.owner() == owner ? e : null;
    }

    /** Removes a live entry; its index is reused with the next generation. */
    public synchronized boolean remove(long id) {
        long index = id & 0xffffffffL;
        if (index >= entries.size()) {
            return false;
        }
        Entry e = entries.get((int) index);
        if (e == null || e.id() != id) {
            return false;
        }
        entries.set((int) index, null);
        generations.set((int) index, (generations.get((int) index) + 1) & 0xffffff);
        free.add((int) index);
        return true;
    }

    /** Live entries of an owner (reclaim), functions and streams before contexts. */
    public synchronized List<Entry> ownedBy(long owner) {
        List<Entry> out = new ArrayList<>();
        for (Entry e : entries) {
            if (e != null && e.owner() == owner) {
                out.add(e);
            }
        }
        return out;
    }

    /** Finds an owner's entry by native value (e.g. the current context), or null. */
    public synchronized Entry findNative(int kind, long owner, long nativeValue) {
        for (Entry e : entries) {
            if (e != null && e.kind() == kind && e.owner() == owner && e.nativeValue() == nativeValue) {
                return e;
            }
        }
        return null;
    }

    public synchronized int size() {
        return entries.size() - free.size();
    }
}
