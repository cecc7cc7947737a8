package io.ivcuda.server.core;

import io.ivcuda.server.gen.HandleKinds;
import java.util.ArrayList;
import java.util.List;

/**
 * The VM's handle table: guest-visible ids {@code kind << 56 | generation << 32 | index} minted
 * for native driver objects, each checked on use for kind, generation and owner token. A handle a
 * call destroys is held back while the call runs ({@link #beginRelease}): no other call can use or
 * destroy it meanwhile, and it is removed only if the destroying call succeeded.
 */
public final class HandleTable {
    public static final int KIND_CTX = HandleKinds.CTX;
    public static final int KIND_MODULE = HandleKinds.MODULE;
    public static final int KIND_FUNCTION = HandleKinds.FUNCTION;
    public static final int KIND_STREAM = HandleKinds.STREAM;
    public static final int KIND_EVENT = HandleKinds.EVENT;

    /** One live entry; {@code extra} holds per-kind data (e.g. the context an object lives in). */
    public record Entry(long id, int kind, long owner, long nativeValue, long extra) {
    }

    private final List<Entry> entries = new ArrayList<>();
    private final List<Integer> generations = new ArrayList<>();
    private final List<Boolean> releasing = new ArrayList<>();
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
            releasing.add(false);
        }
        int generation = generations.get(index) & 0xffffff;
        long id = (long) kind << 56 | (long) generation << 32 | (index & 0xffffffffL);
        entries.set(index, new Entry(id, kind, owner, nativeValue, extra));
        releasing.set(index, false);
        return id;
    }

    /** The entry for {@code id} if it is live, of {@code kind}, owned by {@code owner} and not being released; else null. */
    public synchronized Entry lookup(long id, int kind, long owner) {
        long index = id & 0xffffffffL;
        if (kindOf(id) != kind || index >= entries.size() || releasing.get((int) index)) {
            return null;
        }
        Entry e = entries.get((int) index);
        return e != null && e.id() == id && e.owner() == owner ? e : null;
    }

    /** Like {@link #lookup}, and holds the entry back from every other lookup until {@link #endRelease}. */
    public synchronized Entry beginRelease(long id, int kind, long owner) {
        Entry e = lookup(id, kind, owner);
        if (e != null) {
            releasing.set((int) (id & 0xffffffffL), true);
        }
        return e;
    }

    /** Ends a release: removes the entry ({@code released}) or makes it resolvable again. */
    public synchronized void endRelease(long id, boolean released) {
        int index = (int) (id & 0xffffffffL);
        if (index < entries.size() && entries.get(index) != null && entries.get(index).id() == id) {
            releasing.set(index, false);
            if (released) {
                remove(id);
            }
        }
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
        releasing.set((int) index, false);
        generations.set((int) index, (generations.get((int) index) + 1) & 0xffffff);
        free.add((int) index);
        return true;
    }

    /** Live entries of an owner (reclaim), whether being released or not. */
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
