package io.ivcuda.server;

import io.ivcuda.wire.ChannelFlyweight;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.agrona.collections.Long2ObjectHashMap;

/**
 * The server's heartbeat and the guests' liveness (docs/protocol.md §7), on one thread: each period
 * it increments server_heartbeat, then looks at every claimed channel's owner heartbeat. A token
 * whose heartbeat has not moved for {@code owner.timeout.ms} while the VM's guest heartbeat went on
 * at least {@value #GUEST_BEATS_FOR_RECLAIM} times is dead: the {@link ChannelWatcher} reclaims it.
 * It wakes the watcher only for work nobody rang for (such a reclaim, or a claimed channel without
 * a worker, as a guest without BAR0 leaves it), and never blocks on anything but its own sleep.
 */
final class LivenessMonitor {
    static final int GUEST_BEATS_FOR_RECLAIM = 8;

    /** Liveness bookkeeping of one token; only this thread touches it. */
    private static final class Liveness {
        long beatSum;
        long changedAtNanos;
        long guestBeatAtChange;
        /** This check's sum of the token's owner_heartbeat over its channels. */
        long sumNow;
        boolean seenNow;
        boolean fresh;
    }

    private final HeaderWriter header;
    private final ChannelWatcher watcher;
    private final ChannelFlyweight[] channels;
    private final long periodNs;
    private final long timeoutNs;
    /** Per token; Agrona's map and its reused iterators keep the check free of garbage. */
    private final Long2ObjectHashMap<Liveness> liveness = new Long2ObjectHashMap<>();
    private final Thread thread;
    private volatile boolean running = true;

    /**
     * @param periodMs how often it beats and checks (the guest gives a server 5 s without a beat)
     */
    LivenessMonitor(HeaderWriter header, ChannelWatcher watcher, long periodMs, int ownerTimeoutMs) {
        this.header = header;
        this.watcher = watcher;
        this.channels = watcher.controls();
        this.periodNs = TimeUnit.MILLISECONDS.toNanos(periodMs);
        this.timeoutNs = TimeUnit.MILLISECONDS.toNanos(ownerTimeoutMs);
        this.thread = new Thread(this::beat, "heartbeat");
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    void close() {
        running = false;
        LockSupport.unpark(thread);
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void beat() {
        while (running) {
            header.beat();
            if (check(System.nanoTime())) {
                watcher.wake();
            }
            LockSupport.parkNanos(this, periodNs);
        }
    }

    /**
     * Queues the tokens whose heartbeat stopped while the VM's went on. Returns whether the watcher
     * has work: such a reclaim, or a claimed channel without a worker (its claimer may never ring).
     */
    private boolean check(long now) {
        boolean watcherNeeded = false;
        for (Liveness l : liveness.values()) {
            l.sumNow = 0;
            l.seenNow = false;
        }
        for (ChannelFlyweight c : channels) {
            long owner = c.ownerVolatile();
            if (owner == 0) {
                continue;
            }
            if (c.attachedVolatile() == 0) {
                watcherNeeded = true;
            }
            Liveness l = liveness.get(owner);
            if (l == null) {
                l = new Liveness();
                l.fresh = true;
                liveness.put(owner, l);
            }
            l.sumNow += c.ownerHeartbeatVolatile();
            l.seenNow = true;
        }
        long guestBeat = header.guestHeartbeat();
        for (var it = liveness.entrySet().iterator(); it.hasNext(); ) {
            it.next();
            Liveness l = it.getValue();
            if (!l.seenNow) {
                it.remove();
            } else if (l.fresh || l.beatSum != l.sumNow) {
                l.fresh = false;
                l.beatSum = l.sumNow;
                l.changedAtNanos = now;
                l.guestBeatAtChange = guestBeat;
            } else if (now - l.changedAtNanos >= timeoutNs && guestBeat - l.guestBeatAtChange >= GUEST_BEATS_FOR_RECLAIM) {
                // the watcher logs and reclaims: this thread never waits on anything, output included
                watcher.reclaimLater(it.getLongKey());
                it.remove();
                watcherNeeded = true;
            }
        }
        return watcherNeeded;
    }
}
