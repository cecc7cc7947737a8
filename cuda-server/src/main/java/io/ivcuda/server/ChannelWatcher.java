package io.ivcuda.server;

import io.ivcuda.server.backend.Out;
import io.ivcuda.server.channel.ChannelState;
import io.ivcuda.server.channel.ChannelWorker;
import io.ivcuda.server.channel.IdleWait;
import io.ivcuda.server.channel.PlainIdle;
import io.ivcuda.server.core.Vm;
import io.ivcuda.server.handler.ChannelHandlers;
import io.ivcuda.server.handler.Reclaimer;
import io.ivcuda.server.region.Region;
import io.ivcuda.wire.ChannelFlyweight;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
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
 */
final class ChannelWatcher implements Reclaimer {
    private static final Logger LOG = LogManager.getLogger(ChannelWatcher.class);
    private static final long WATCH_PERIOD_NS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long WORKER_JOIN_MS = 10_000;

    private final Vm vm;
    private final boolean doorbell;
    private final long idleParkNs;
    private final int ownerTimeoutMs;
    private final IntFunction<IdleWait> idleFor;
    private final UnsafeBuffer[] channels;
    private final ChannelFlyweight[] controls;
    private final ChannelState[] states;
    private final ChannelWorker[] workers;
    /** Tokens to reclaim here: a reclaim may wait up to 10 s for a worker, which the monitor must never do. */
    private final Queue<Long> reclaimsDue = new ConcurrentLinkedQueue<>();
    private final Thread thread;
    private volatile boolean running = true;
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

    private long watchPeriod(long now) {
        return idleParkNs > 0 && now - lastClaimNs > PlainIdle.IDLE_AFTER_NS ? idleParkNs : WATCH_PERIOD_NS;
    }

    private void watch() {
        while (running) {
            for (Long token = reclaimsDue.poll(); token != null && running; token = reclaimsDue.poll()) {
                LOG.warn("owner pid {} (token {}): heartbeat stopped for {} ms while the VM's went on: reclaiming",
                        token >>> 32, Long.toHexString(token), ownerTimeoutMs);
                reclaim(token, -1);
            }
            synchronized (this) {
                for (int i = 0; i < channels.length && running; i++) {
                    attachIfClaimed(i);
                }
            }
            if (doorbell) {
                LockSupport.park(this);
            } else {
                LockSupport.parkNanos(this, watchPeriod(System.nanoTime()));
            }
        }
    }

    /** Drops channel i's worker once it left; attaches a new one when a guest claimed the channel. */
    private void attachIfClaimed(int i) {
        ChannelWorker w = workers[i];
        if (w != null && (w.finished() || !w.alive())) {
            workers[i] = null;
            w = null;
        }
        long owner = controls[i].ownerVolatile();
        if (owner != 0 && w == null && controls[i].attachedVolatile() == 0) {
            int index = i;
            UnsafeBuffer channel = channels[i];
            ChannelWorker fresh = new ChannelWorker(states[i], channel, owner, vm.layout(), idleFor.apply(i),
                    chunks -> new ChannelHandlers(vm, index, owner, channel, chunks, this));
            workers[i] = fresh;
            fresh.start();
            lastClaimNs = System.nanoTime();
        }
    }

    /** Stops the token's workers (except channel {@code caller}'s), releases its channels and frees its resources. */
    @Override
    public void reclaim(long token, int caller) {
        synchronized (this) {
            for (ChannelWorker w : workers) {
                if (w != null && w.token() == token && w.index() != caller) {
                    w.stop();
                }
            }
            for (int i = 0; i < workers.length; i++) {
                ChannelWorker w = workers[i];
                if (w != null && w.token() == token && w.index() != caller) {
                    join(w);
                    if (w.alive()) {
                        LOG.warn("channel {}: worker still busy in a driver call after 10 s; freeing anyway", i);
                    }
                    controls[i].compareAndSetOwner(token, 0);
                }
            }
        }
        Out scratch = vm.backend().newOut();
        try {
            vm.reclaim(token, scratch);
        } finally {
            scratch.free();
        }
    }

    /** Stops watching, stops every worker, and frees what every process still holds. */
    void close() {
        running = false;
        LockSupport.unpark(thread);
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (this) {
            for (ChannelWorker w : workers) {
                if (w != null) {
                    w.stop();
                }
            }
            for (ChannelWorker w : workers) {
                if (w != null) {
                    join(w);
                }
            }
        }
        Out scratch = vm.backend().newOut();
        try {
            for (Long token : vm.owners().keySet().toArray(new Long[0])) {
                vm.reclaim(token, scratch);
            }
        } finally {
            scratch.free();
        }
    }

    private static void join(ChannelWorker w) {
        try {
            w.join(WORKER_JOIN_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
