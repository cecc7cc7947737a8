package io.ivcuda.server.core;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostCallbacks;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Host functions of the VM's processes, run in the guest (docs/graphs.md). A {@link Target} is a
 * guest function (fn, userData) the server put on a driver stream or into a graph under a
 * {@link HostCallbacks} key. When the driver reaches it, a {@link Delivery} goes into the
 * process's inbox, where its host-function thread takes it ({@link #next}); the driver's thread
 * waits until the guest reports it ran, so the stream's order holds.
 *
 * <p>A guest cannot hold anything for long: a delivery is given up after {@link #timeoutNs}, or
 * after 2 s when the process has no host-function thread asking (the driver's callback thread,
 * shared by the VM's processes, goes on, one log line), every delivery
 * and target of a process is released at its reclaim, and a process holds at most {@link
 * #maxTargets} targets ({@code limit.host.functions.process}: host functions queued on streams and
 * not yet run, host nodes and staged copies' completions alive together), checked before the
 * driver gets the function: a stream the driver holds back (a wait on a value nobody writes)
 * cannot grow the server's state past it.
 */
public final class HostCalls {
    private static final Logger LOG = LogManager.getLogger(HostCalls.class);

    /** Host functions a process may have queued or in its graphs at once, unless configured. */
    public static final int DEFAULT_MAX_TARGETS = (int) (long) io.ivcuda.common.config.ServerKeys.LIMIT_HOST_FUNCTIONS_PROCESS
            .defaultValue();
    /** How long the driver's thread waits for a guest to run its function. */
    public static final long DEFAULT_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(10);
    /** The longest one {@link #next} waits (the guest asks again). */
    public static final long MAX_WAIT_MS = 1000;
    /**
     * A process whose host-function thread has not asked for this long, and runs nothing, has
     * none (the library starts it before its first host function): its deliveries are given up
     * after this long instead of the full timeout.
     */
    static final long NO_THREAD_NS = TimeUnit.MILLISECONDS.toNanos(2 * MAX_WAIT_MS);

    /** kind 0: CUhostFn; 1: CUstreamCallback; 2: a user object's destructor (nothing waits for it). */
    public static final int KIND_HOST_FN = 0;
    public static final int KIND_STREAM_CALLBACK = 1;
    public static final int KIND_DESTRUCTOR = 2;

    /** A guest function under a key; {@code once}: a stream's host function, released after one run. */
    public record Target(long key, long token, int kind, long fn, long userData, long guestStream, boolean once) {
    }

    /** One run of a target, as the guest's thread takes it. */
    public static final class Delivery {
        public final long id;
        public final Target target;
        public final int status;
        boolean done;

        Delivery(long id, Target target, int status) {
            this.id = id;
            this.target = target;
            this.status = status;
        }
    }

    /** One process's deliveries and targets; its monitor guards everything in it. */
    private static final class Inbox {
        final ArrayDeque<Delivery> queue = new ArrayDeque<>();
        final Map<Long, Delivery> running = new HashMap<>();
        final Map<Long, Target> targets = new HashMap<>();
        boolean closed;
        /** When the process's host-function thread last asked (0: never). */
        long lastAskNs;
    }

    private final int maxTargets;
    private final long timeoutNs;
    private final RefusalLog refusals;
    private final Map<Long, Inbox> inboxes = new ConcurrentHashMap<>();
    private final AtomicLong nextDelivery = new AtomicLong(1);

    public HostCalls(RefusalLog refusals) {
        this(refusals, DEFAULT_MAX_TARGETS, DEFAULT_TIMEOUT_NS);
    }

    public HostCalls(RefusalLog refusals, int maxTargets, long timeoutNs) {
        this.refusals = refusals;
        this.maxTargets = maxTargets;
        this.timeoutNs = timeoutNs;
    }

    public long timeoutNs() {
        return timeoutNs;
    }

    /** The targets one process may hold ({@code limit.host.functions.process}). */
    public int maxTargets() {
        return maxTargets;
    }

    /** Why {@link #add} answered null, for the refusal's log line. */
    public String refusal() {
        return "the process holds " + io.ivcuda.common.config.ServerKeys.LIMIT_HOST_FUNCTIONS_PROCESS.name() + " "
                + maxTargets + " host functions (queued and not yet run, graph host nodes, staged copies), or is going";
    }

    private Inbox inbox(long token) {
        return inboxes.computeIfAbsent(token, t -> new Inbox());
    }

    /**
     * A new target for the process, registered under a fresh key; null when the process holds
     * {@link #maxTargets} already or is being reclaimed.
     */
    public Target add(long token, int kind, long fn, long userData, long guestStream, boolean once) {
        Inbox in = inbox(token);
        synchronized (in) {
            if (in.closed || in.targets.size() >= maxTargets) {
                return null;
            }
            long[] key = new long[1];
            Target[] made = new Target[1];
            key[0] = HostCallbacks.register(status -> deliver(in, made[0], status));
            made[0] = new Target(key[0], token, kind, fn, userData, guestStream, once);
            in.targets.put(key[0], made[0]);
            return made[0];
        }
    }

    /** Releases a target (its stream launch failed, its graph node went): a later run does nothing. */
    public void remove(Target t) {
        HostCallbacks.unregister(t.key());
        Inbox in = inboxes.get(t.token());
        if (in != null) {
            synchronized (in) {
                in.targets.remove(t.key());
            }
        }
    }

    /** Targets the process holds (tests, status). */
    public int targets(long token) {
        Inbox in = inboxes.get(token);
        if (in == null) {
            return 0;
        }
        synchronized (in) {
            return in.targets.size();
        }
    }

    /** On the driver's thread: hands the run to the guest and waits for it (destructors: not). */
    private void deliver(Inbox in, Target t, int status) {
        Delivery d = new Delivery(nextDelivery.getAndIncrement(), t, status);
        try {
            synchronized (in) {
                if (in.closed || !in.targets.containsKey(t.key())) {
                    return;
                }
                in.queue.add(d);
                in.notifyAll();
                if (t.kind() == KIND_DESTRUCTOR) {
                    return;
                }
                long start = System.nanoTime();
                long deadline = start + timeoutNs;
                while (!d.done && !in.closed) {
                    long now = System.nanoTime();
                    long left = deadline - now;
                    boolean noThread = in.running.isEmpty() && now - start > NO_THREAD_NS
                            && (in.lastAskNs == 0 || now - in.lastAskNs > NO_THREAD_NS);
                    if (left <= 0 || noThread) {
                        in.queue.remove(d);
                        in.running.remove(d.id);
                        refusals.log(LOG, Level.WARN, "host function timeout", () -> "token "
                                + Long.toHexString(t.token()) + ": the guest did not run host function 0x"
                                + Long.toHexString(t.fn()) + " within " + TimeUnit.NANOSECONDS.toMillis(now - start)
                                + " ms" + (noThread ? " (it has no host-function thread)" : "")
                                + "; its stream goes on without it");
                        return;
                    }
                    TimeUnit.NANOSECONDS.timedWait(in, Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)));
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            if (t.once()) {
                remove(t);
            }
        }
    }

    /**
     * The guest's host-function thread: reports {@code doneId} (0: none) as run, then waits up to
     * {@code waitMs} (at most {@link #MAX_WAIT_MS}) for the process's next run. Null when none
     * came, the process is being reclaimed, or {@code stopping} turned true.
     */
    public Delivery next(long token, long doneId, long waitMs, BooleanSupplier stopping) {
        Inbox in = inbox(token);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(0, Math.min(waitMs, MAX_WAIT_MS)));
        synchronized (in) {
            in.lastAskNs = System.nanoTime();
            if (doneId != 0) {
                Delivery d = in.running.remove(doneId);
                if (d != null) {
                    d.done = true;
                    in.notifyAll();
                }
            }
            while (in.queue.isEmpty() && !in.closed && !stopping.getAsBoolean()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return null;
                }
                try {
                    // slices: a reclaim or a stop is noticed within 50 ms
                    TimeUnit.NANOSECONDS.timedWait(in, Math.min(left, TimeUnit.MILLISECONDS.toNanos(50)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return null;
                }
            }
            if (in.closed || in.queue.isEmpty()) {
                return null;
            }
            Delivery d = in.queue.poll();
            if (d.target.kind() != KIND_DESTRUCTOR) {
                in.running.put(d.id, d);
            }
            return d;
        }
    }

    /**
     * The process is going (its reclaim began): every waiting driver thread goes on, every key is
     * released, and nothing new is accepted for it until {@link #reclaim} forgets it.
     */
    public void close(long token) {
        Inbox in = inbox(token);
        synchronized (in) {
            in.closed = true;
            for (Long key : in.targets.keySet()) {
                HostCallbacks.unregister(key);
            }
            in.targets.clear();
            in.queue.clear();
            in.running.clear();
            in.notifyAll();
        }
    }

    /** The process is gone: {@link #close}, and its state forgotten. */
    public void reclaim(long token) {
        close(token);
        inboxes.remove(token);
    }

    /** What {@link #next} answers when nothing came. */
    public static final int NOTHING = CuResult.NOT_READY;
}
