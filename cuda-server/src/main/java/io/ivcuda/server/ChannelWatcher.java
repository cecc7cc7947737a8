package io.ivcuda.server;

import io.ivcuda.server.backend.Out;
import io.ivcuda.server.channel.ChannelState;
import io.ivcuda.server.channel.ChannelWorker;
import io.ivcuda.server.channel.IdleWait;
import io.ivcuda.server.channel.PlainIdle;
import io.ivcuda.server.core.Owner;
import io.ivcuda.server.core.Vm;
import io.ivcuda.server.handler.ChannelHandlers;
import io.ivcuda.server.handler.Reclaimer;
import io.ivcuda.server.region.Region;
import io.ivcuda.wire.ChannelFlyweight;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;
import org.agrona.concurrent.UnsafeBuffer;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The region's channels and their workers: attaches a {@link ChannelWorker} to every channel a guest
 * thread claimed (one host thread per channel, docs/protocol.md §3), drops those that left, reclaims
 * the tokens the {@link LivenessMonitor} found dead and those whose process exited (a {@link Reclaimer}
 * for the handlers), and at the end stops every worker and frees what every process still held.
 * In plain mode it looks every millisecond while claims come (a new guest thread's first call waits
 * at most that), then every {@code wait.idle.park.ms}; in doorbell mode it sleeps until woken: by a
 * ring (a claimer's hello rings), a worker leaving, or the liveness monitor.
 *
 * <p>It never waits for a worker. A reclaim asks the token's workers to stop and is finished by a
 * later pass, once every one of them has left its channel: only then are its channels given back
 * (reset from the server's own counters) and its resources freed, on a thread of their own — so no
 * driver object or memory is released while a worker may still use it, however long a driver call
 * takes, and a worker stuck in one delays nothing but its own process's reclaim.
 */
final class ChannelWatcher implements Reclaimer {
    private static final Logger LOG = LogManager.getLogger(ChannelWatcher.class);
    private static final long WATCH_PERIOD_NS = TimeUnit.MILLISECONDS.toNanos(1);
    /** How long a stopping server waits for its workers before it leaves their memory to the process's exit. */
    static final long STOP_WAIT_MS = 10_000;
    private long stopWaitMs = STOP_WAIT_MS;
    /**
     * The owner word while the server resets a free channel: no guest token (a pid fills at most 22
     * bits of the high half), so a guest's claim (CAS 0 → token) fails meanwhile.
     */
    static final long SERVER_HOLD = -1L;

    private final Vm vm;
    private final boolean doorbell;
    private final long idleParkNs;
    private final int ownerTimeoutMs;
    private final IntFunction<IdleWait> idleFor;
    private final UnsafeBuffer[] channels;
    private final ChannelFlyweight[] controls;
    private final ChannelState[] states;
    private final ChannelWorker[] workers;
    /** Tokens the liveness monitor found dead, for this thread to reclaim. */
    private final Queue<Long> reclaimsDue = new ConcurrentLinkedQueue<>();
    /** Reclaims started and not finished: token → the channel that asked (ivc_process_exit), or -1. */
    private final Map<Long, Integer> reclaiming = new ConcurrentHashMap<>();
    /** Frees reclaimed processes' resources: driver calls that may take long, never on this thread. */
    private final ExecutorService freeing = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "reclaim");
        t.setDaemon(true);
        return t;
    });
    private final Thread thread;
    private volatile boolean running = true;
    /** Run after a worker was attached (doorbell mode: the liveness monitor looks at the new token). */
    private volatile Runnable onAttach = () -> { };
    /** When a worker was last attached (plain mode's watch period follows it). */
    private long lastClaimNs = System.nanoTime();

    /**
     * Takes the region's channel table: every channel's control words zeroed, and in doorbell mode
     * read as parked (a free channel's claimer's ivc_hello then rings and wakes this watcher).
     *
     * @param idleFor how the worker of channel i waits while its channel is idle
     */
    ChannelWatcher(Region region, Vm vm, boolean doorbell, long waitIdleParkMs, int ownerTimeoutMs,
                   IntFunction<IdleWait> idleFor) {
        this.vm = vm;
        this.doorbell = doorbell;
        this.ownerTimeoutMs = ownerTimeoutMs;
        this.idleParkNs = TimeUnit.MILLISECONDS.toNanos(waitIdleParkMs);
        this.idleFor = idleFor;
        int count = vm.layout().channelCount();
        channels = new UnsafeBuffer[count];
        controls = new ChannelFlyweight[count];
        states = new ChannelState[count];
        workers = new ChannelWorker[count];
        for (int i = 0; i < count; i++) {
            channels[i] = region.view(vm.layout().channelOffset(i), vm.layout().channelStride());
            channels[i].setMemory(0, ChannelFlyweight.AREAS_OFFSET, (byte) 0);
            controls[i] = new ChannelFlyweight().wrap(channels[i], 0);
            if (doorbell) {
                controls[i].serverParkedVolatile(1);
            }
            states[i] = new ChannelState(i);
        }
        thread = new Thread(this::watch, "channel-watcher");
        thread.setDaemon(true);
    }

    /** The channels' control words (the liveness monitor reads owners and heartbeats). */
    ChannelFlyweight[] controls() {
        return controls;
    }

    Vm vm() {
        return vm;
    }

    /** The watcher's thread (doorbell mode: the ring dispatcher wakes it). */
    Thread thread() {
        return thread;
    }

    void start() {
        thread.start();
    }

    /** Looks at the channels now. */
    void wake() {
        LockSupport.unpark(thread);
    }

    /** Queues a dead token (its heartbeat stopped) for this thread to reclaim; call {@link #wake()}. */
    void reclaimLater(long token) {
        reclaimsDue.add(token);
    }

    /** What to run after a worker was attached; before {@link #start}. */
    void onAttach(Runnable r) {
        onAttach = r;
    }

    /** How long {@link #close} waits for the workers (tests shorten it). */
    void stopWaitMs(long ms) {
        stopWaitMs = ms;
    }

    /** Whether a reclaim of {@code token} is under way. */
    boolean reclaiming(long token) {
        return reclaiming.containsKey(token);
    }

    private long watchPeriod(long now) {
        return idleParkNs > 0 && now - lastClaimNs > PlainIdle.IDLE_AFTER_NS ? idleParkNs : WATCH_PERIOD_NS;
    }

    private void watch() {
        while (running) {
            for (Long token = reclaimsDue.poll(); token != null && running; token = reclaimsDue.poll()) {
                if (!reclaiming.containsKey(token)) {
                    long t = token;
                    vm.refusals().log(LOG, org.apache.logging.log4j.Level.WARN, "owner heartbeat stopped", () -> "owner pid "
                            + (t >>> 32) + " (token " + Long.toHexString(t) + "): heartbeat stopped for " + ownerTimeoutMs
                            + " ms while the VM's went on: reclaiming");
                }
                reclaim(token, -1);
            }
            synchronized (this) {
                for (int i = 0; i < channels.length && running; i++) {
                    attachIfClaimed(i);
                }
                if (running) {
                    finishReclaims();
                }
            }
            if (doorbell) {
                LockSupport.park(this);
            } else {
                LockSupport.parkNanos(this, watchPeriod(System.nanoTime()));
            }
        }
    }

    /**
     * Drops channel i's worker once it left; attaches a new one when a guest claimed the channel; resets
     * a free channel whose words are out of step with the server's counters. The server's own record
     * of the channel decides, never the guest-writable {@code attached} word.
     */
    private void attachIfClaimed(int i) {
        ChannelWorker w = workers[i];
        if (w != null && (w.finished() || !w.alive())) {
            workers[i] = null;
            w = null;
        }
        if (w != null) {
            return;
        }
        long owner = controls[i].ownerVolatile();
        if (owner == 0) {
            if (!atRest(i)) {
                reset(i, 0);
            }
            return;
        }
        if (owner == SERVER_HOLD || reclaiming.containsKey(owner)) {
            return; // a dying process's channel waits for its reclaim to give it back
        }
        int index = i;
        UnsafeBuffer channel = channels[i];
        ChannelWorker fresh = new ChannelWorker(states[i], channel, owner, vm.layout(), idleFor.apply(i),
                chunks -> new ChannelHandlers(vm, index, owner, channel, chunks, this), vm.refusals());
        workers[i] = fresh;
        fresh.start();
        lastClaimNs = System.nanoTime();
        onAttach.run();
    }

    /** Whether channel i's words say what the server last published and expects (docs/protocol.md §3). */
    private boolean atRest(int i) {
        ChannelFlyweight c = controls[i];
        ChannelState s = states[i];
        return c.reqSeqVolatile() == s.lastSeq && c.respSeqVolatile() == s.lastSeq
                && c.ringTailVolatile() == s.ringHead && c.ringHeadVolatile() == s.ringHead
                && c.guestChunkVolatile() == s.serverChunk && c.serverChunkVolatile() == s.serverChunk;
    }

    /**
     * Gives channel i back at rest, from the server's own counters whatever the guest wrote: holds it
     * (owner {@code expected} → {@link #SERVER_HOLD}, so nobody claims it meanwhile), writes every
     * counter pair equal to what the server expects next, then frees it (owner 0). False if the owner
     * was not {@code expected}. Only while no worker serves the channel.
     */
    private boolean reset(int i, long expected) {
        ChannelFlyweight c = controls[i];
        if (!c.compareAndSetOwner(expected, SERVER_HOLD)) {
            return false;
        }
        ChannelState s = states[i];
        c.reqSeqVolatile(s.lastSeq);
        c.respSeqVolatile(s.lastSeq);
        c.ringTailVolatile(s.ringHead);
        c.ringHeadVolatile(s.ringHead);
        c.guestChunkVolatile(s.serverChunk);
        c.serverChunkVolatile(s.serverChunk);
        c.attachedRelease(0);
        if (doorbell) {
            c.serverParkedVolatile(1);
        }
        c.ownerRelease(0);
        return true;
    }

    /**
     * Starts reclaiming the token: no new hello for it, its workers (except channel {@code caller}'s,
     * which asked) asked to stop. A later pass of this thread finishes it once they all left. Returns
     * at once; a second call for the same token while it runs changes nothing.
     */
    @Override
    public void reclaim(long token, int caller) {
        Owner o = vm.existingOwner(token);
        if (o != null) {
            o.close();
        }
        // a driver call of its workers may wait for its host function: they must be able to leave
        vm.hostCalls().close(token);
        if (reclaiming.putIfAbsent(token, caller) != null) {
            return;
        }
        synchronized (this) {
            for (ChannelWorker w : workers) {
                if (w != null && w.token() == token && w.index() != caller) {
                    w.stop();
                }
            }
        }
        wake();
    }

    /** Caller holds this: finishes every reclaim whose workers have all left their channels. */
    private void finishReclaims() {
        for (Map.Entry<Long, Integer> e : reclaiming.entrySet()) {
            long token = e.getKey();
            int caller = e.getValue();
            boolean busy = false;
            for (ChannelWorker w : workers) {
                if (w != null && w.token() == token && w.index() != caller && !w.finished() && w.alive()) {
                    busy = true;
                }
            }
            if (busy) {
                continue;
            }
            for (int i = 0; i < controls.length; i++) {
                if (i != caller && controls[i].ownerVolatile() == token) {
                    ChannelWorker w = workers[i];
                    if (w == null || w.finished() || !w.alive()) {
                        workers[i] = null;
                        reset(i, token);
                    }
                }
            }
            reclaiming.remove(token);
            freeing.execute(() -> free(token));
        }
    }

    private void free(long token) {
        Out scratch = vm.backend().newOut();
        try {
            vm.reclaim(token, scratch);
        } catch (RuntimeException ex) {
            LOG.error("owner pid {} (token {}): reclaim failed", token >>> 32, Long.toHexString(token), ex);
        } finally {
            scratch.free();
        }
    }

    /**
     * Stops watching and every worker, waits up to {@link #STOP_WAIT_MS} (10 s) for them to leave their
     * channels, and frees what every process still holds. Returns false — and frees nothing — if a
     * worker is still running then (on the GPU: inside a driver call): the region and what the
     * workers use must stay as they are until the process exits.
     */
    boolean close() {
        running = false;
        LockSupport.unpark(thread);
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(stopWaitMs);
        boolean quiet = true;
        synchronized (this) {
            for (ChannelWorker w : workers) {
                if (w != null) {
                    w.stop();
                }
            }
            for (ChannelWorker w : workers) {
                if (w != null && !awaitFinished(w, deadline)) {
                    LOG.warn("channel {}: worker still running {} s after the stop (inside a driver call?): its "
                            + "process's memory and the region stay mapped until this process exits",
                            w.index(), stopWaitMs / 1000.0);
                    quiet = false;
                }
            }
        }
        freeing.shutdown();
        try {
            if (!freeing.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                LOG.warn("a reclaim is still inside a driver call: the rest is left to this process's exit");
                quiet = false;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            quiet = false;
        }
        if (!quiet) {
            return false;
        }
        Out scratch = vm.backend().newOut();
        try {
            for (Long token : vm.owners().keySet().toArray(new Long[0])) {
                vm.reclaim(token, scratch);
            }
        } finally {
            scratch.free();
        }
        return true;
    }

    private static boolean awaitFinished(ChannelWorker w, long deadline) {
        while (!w.finished() && w.alive()) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                return false;
            }
            try {
                w.join(Math.min(left, 100));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }
}
