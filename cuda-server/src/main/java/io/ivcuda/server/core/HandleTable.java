package io.ivcuda.server.core;

import io.ivcuda.server.gen.HandleKinds;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.agrona.collections.IntHashSet;
import org.agrona.collections.Long2ObjectHashMap;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The VM's handle table: guest-visible ids {@code kind << 56 | generation << 32 | index} minted
 * for native driver objects, each checked on use for kind, generation and owner token.
 *
 * <p>Every lookup is O(1): by index, by owner (a set of indexes per token) and by native value
 * ({@link #findNative}). The table is bounded: a process may hold {@code perProcess} handles and
 * the VM {@code perVm}; {@link #canMint} says whether one more fits (the dispatcher asks it before
 * a call that creates a handle, so the driver object is never made when it could not be named).
 *
 * <p>A call <em>pins</em> every handle it was given ({@link #pin}) until it returns ({@link
 * #unpin}); a handle a call destroys is held back from every new lookup ({@link #beginRelease}),
 * which then waits until no other call of the process still uses it, and it is removed only if the
 * destroying call succeeded. So a driver object is never destroyed while another worker thread is
 * inside a driver call with it.
 */
public final class HandleTable {
    private static final Logger LOG = LogManager.getLogger(HandleTable.class);
    public static final int KIND_CTX = HandleKinds.CTX;
    public static final int KIND_MODULE = HandleKinds.MODULE;
    public static final int KIND_FUNCTION = HandleKinds.FUNCTION;
    public static final int KIND_STREAM = HandleKinds.STREAM;
    public static final int KIND_EVENT = HandleKinds.EVENT;
    public static final int KIND_LIBRARY = HandleKinds.LIBRARY;
    public static final int KIND_LINK = HandleKinds.LINK;

    /** Without limits (tests). */
    public static final int UNLIMITED = Integer.MAX_VALUE;

    /** One live entry; {@code extra} holds per-kind data (e.g. the context an object lives in). */
    public record Entry(long id, int kind, long owner, long nativeValue, long extra) {
    }

    private record NativeKey(int kind, long owner, long nativeValue) {
    }

    private final int perProcess;
    private final int perVm;
    private Entry[] entries = new Entry[64];
    private int[] generations = new int[64];
    private int[] pins = new int[64];
    private boolean[] releasing = new boolean[64];
    private int used;
    private int[] free = new int[64];
    private int freeCount;
    private int live;
    private final Long2ObjectHashMap<IntHashSet> byOwner = new Long2ObjectHashMap<>();
    private final Map<NativeKey, Integer> byNative = new HashMap<>();

    public HandleTable() {
        this(UNLIMITED, UNLIMITED);
    }

    /**
     * @param perProcess handles one owner token may hold
     * @param perVm      handles the VM's processes may hold together
     */
    public HandleTable(int perProcess, int perVm) {
        this.perProcess = perProcess;
        this.perVm = perVm;
    }

    public static int kindOf(long id) {
        return (int) (id >>> 56);
    }

    /** Whether {@code owner} may get one more handle (its own limit and the VM's). */
    public synchronized boolean canMint(long owner) {
        IntHashSet own = byOwner.get(owner);
        return live < perVm && (own == null || own.size() < perProcess);
    }

    /**
     * Names a native object. It never refuses: the dispatcher asked {@link #canMint} before the
     * call that made the object, so the limits are exceeded by at most one per worker thread.
     */
    public synchronized long mint(int kind, long owner, long nativeValue, long extra) {
        int index;
        if (freeCount > 0) {
            index = free[--freeCount];
        } else {
            if (used == entries.length) {
                int n = used * 2;
                entries = Arrays.copyOf(entries, n);
                generations = Arrays.copyOf(generations, n);
                pins = Arrays.copyOf(pins, n);
                releasing = Arrays.copyOf(releasing, n);
            }
            index = used++;
            generations[index] = 1;
        }
        int generation = generations[index] & 0xffffff;
        long id = (long) kind << 56 | (long) generation << 32 | (index & 0xffffffffL);
        entries[index] = new Entry(id, kind, owner, nativeValue, extra);
        releasing[index] = false;
        pins[index] = 0;
        live++;
        byOwner.computeIfAbsent(owner, o -> new IntHashSet()).add(index);
        byNative.putIfAbsent(new NativeKey(kind, owner, nativeValue), index);
        return id;
    }

    /** The live entry at {@code id}'s index with exactly this id, or null. */
    private Entry at(long id) {
        long index = id & 0xffffffffL;
        if (index >= used) {
            return null;
        }
        Entry e = entries[(int) index];
        return e != null && e.id() == id ? e : null;
    }

    /** The entry for {@code id} if it is live, of {@code kind}, owned by {@code owner} and not being released; else null. */
    public synchronized Entry lookup(long id, int kind, long owner) {
        if (kindOf(id) != kind) {
            return null;
        }
        Entry e = at(id);
        return e != null && e.owner() == owner && !releasing[(int) (id & 0xffffffffL)] ? e : null;
    }

    /** Like {@link #lookup}, and keeps the entry from being destroyed until {@link #unpin}. */
    public synchronized Entry pin(long id, int kind, long owner) {
        Entry e = lookup(id, kind, owner);
        if (e != null) {
            pins[(int) (id & 0xffffffffL)]++;
        }
        return e;
    }

    /** Ends one {@link #pin}; a release waiting for the entry goes on once none is left. */
    public synchronized void unpin(long id) {
        Entry e = at(id);
        int index = (int) (id & 0xffffffffL);
        if (e != null && pins[index] > 0 && --pins[index] == 0 && releasing[index]) {
            notifyAll();
        }
    }

    /** Like {@link #lookup}, and holds the entry back from every other lookup until {@link #endRelease}. */
    public Entry beginRelease(long id, int kind, long owner) {
        return beginRelease(id, kind, owner, () -> false);
    }

    /**
     * Holds the entry back from every new lookup, then waits until no call pins it any more (other
     * worker threads of the process inside a driver call with it). Null if it is not the owner's,
     * is being released already, or {@code stopping} turned true while waiting (it is then given back).
     */
    public synchronized Entry beginRelease(long id, int kind, long owner, BooleanSupplier stopping) {
        Entry e = lookup(id, kind, owner);
        if (e == null) {
            return null;
        }
        int index = (int) (id & 0xffffffffL);
        releasing[index] = true;
        if (!awaitUnpinned(index, stopping)) {
            releasing[index] = false;
            return null;
        }
        return e;
    }

    /** Caller holds the lock; false if {@code stopping} came first. */
    private boolean awaitUnpinned(int index, BooleanSupplier stopping) {
        while (pins[index] > 0) {
            if (stopping.getAsBoolean()) {
                return false;
            }
            try {
                wait(10);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }

    /** Ends a release: removes the entry ({@code released}) or makes it resolvable again. */
    public synchronized void endRelease(long id, boolean released) {
        if (at(id) != null) {
            releasing[(int) (id & 0xffffffffL)] = false;
            if (released) {
                remove(id);
            }
            notifyAll(); // a reclaim waiting to take it goes on
        }
    }

    /**
     * Removes the owner's live entries of {@code kind} whose extra is {@code extra} (a module's
     * functions at its unload), each once no call uses it any more. Returns how many went.
     */
    public synchronized int removeDependents(long owner, int kind, long extra, BooleanSupplier stopping) {
        IntHashSet own = byOwner.get(owner);
        if (own == null) {
            return 0;
        }
        List<Entry> gone = new ArrayList<>();
        for (IntHashSet.IntIterator it = own.iterator(); it.hasNext(); ) {
            Entry e = entries[it.nextValue()];
            if (e != null && e.kind() == kind && e.extra() == extra) {
                gone.add(e);
            }
        }
        for (Entry e : gone) {
            int index = (int) (e.id() & 0xffffffffL);
            releasing[index] = true;
            awaitUnpinned(index, stopping);
            remove(e.id());
        }
        return gone.size();
    }

    /** How long a reclaim waits for a call that still uses one of the process's handles. */
    static final long RECLAIM_WAIT_MS = 10_000;

    /**
     * Removes the entry for a reclaim, which then destroys its native object: first waits (up to
     * {@link #RECLAIM_WAIT_MS}) until no call pins it and no call is destroying it. False when it is
     * gone — a call of the process destroyed it meanwhile, so the reclaim must not destroy it again —
     * or when a call still holds it after the wait (its object is then left alive: a leak, never a
     * second destroy or a destroy under a running call).
     */
    public synchronized boolean takeForReclaim(long id) {
        int index = (int) (id & 0xffffffffL);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RECLAIM_WAIT_MS);
        while (at(id) != null && (pins[index] > 0 || releasing[index])) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                LOG.warn("handle {}: still used by a call {} ms into its process's reclaim: left alive",
                        Long.toHexString(id), RECLAIM_WAIT_MS);
                return false;
            }
            try {
                wait(Math.max(1, Math.min(10, left / 1_000_000)));
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return remove(id);
    }

    /** Removes a live entry; its index is reused with the next generation. */
    public synchronized boolean remove(long id) {
        Entry e = at(id);
        if (e == null) {
            return false;
        }
        int index = (int) (id & 0xffffffffL);
        entries[index] = null;
        releasing[index] = false;
        pins[index] = 0;
        generations[index] = (generations[index] + 1) & 0xffffff;
        if (freeCount == free.length) {
            free = Arrays.copyOf(free, freeCount * 2);
        }
        free[freeCount++] = index;
        live--;
        IntHashSet own = byOwner.get(e.owner());
        if (own != null) {
            own.remove(index);
            if (own.isEmpty()) {
                byOwner.remove(e.owner());
            }
        }
        NativeKey key = new NativeKey(e.kind(), e.owner(), e.nativeValue());
        Integer named = byNative.get(key);
        if (named != null && named == index) {
            byNative.remove(key);
            // another live entry of the same owner may name the same native object
            for (IntHashSet.IntIterator it = own == null ? null : own.iterator(); it != null && it.hasNext(); ) {
                int other = it.nextValue();
                Entry o = entries[other];
                if (o != null && o.kind() == e.kind() && o.nativeValue() == e.nativeValue()) {
                    byNative.put(key, other);
                    break;
                }
            }
        }
        return true;
    }

    /** Live entries of an owner (reclaim), whether being released or not. */
    public synchronized List<Entry> ownedBy(long owner) {
        IntHashSet own = byOwner.get(owner);
        List<Entry> out = new ArrayList<>(own == null ? 0 : own.size());
        if (own != null) {
            for (IntHashSet.IntIterator it = own.iterator(); it.hasNext(); ) {
                out.add(entries[it.nextValue()]);
            }
        }
        return out;
    }

    /** Handles an owner holds. */
    public synchronized int countOf(long owner) {
        IntHashSet own = byOwner.get(owner);
        return own == null ? 0 : own.size();
    }

    /** Finds an owner's entry by native value (e.g. the current context), or null. */
    public synchronized Entry findNative(int kind, long owner, long nativeValue) {
        Integer index = byNative.get(new NativeKey(kind, owner, nativeValue));
        return index == null ? null : entries[index];
    }

    public synchronized int size() {
        return live;
    }
}
