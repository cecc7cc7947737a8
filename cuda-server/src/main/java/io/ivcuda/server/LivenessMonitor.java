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
 *
 * <p>A process the server keeps state for (allocations, handles) but which holds no channel has no
 * heartbeat to watch: the guest library keeps one channel for as long as its process lives, so such a
 * token belongs to a process that died after giving its channels back (or to a guest that does not
 * follow the protocol). It is reclaimed on the same terms: no channel for {@code owner.timeout.ms}
 * while the VM's heartbeat went on.
 */
final class LivenessMonitor {
    /** Guest heartbeats (250 ms apart) the VM must show while an owner's stands still: the VM runs. */
    static final int GUEST_BEATS_FOR_RECLAIM = 4;
    private static final long MIN_PARK_NS = TimeUnit.MILLISECONDS.toNanos(5);

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
    private final io.ivcuda.server.core.Vm vm;
    private final ChannelFlyweight[] channels;
    private final long periodNs;
    private final long idlePeriodNs;
    private final long timeoutNs;
    /** Per token; Agrona's map and its reused iterators keep the check free of garbage. */
    private final Long2ObjectHashMap<Liveness> liveness = new Long2ObjectHashMap<>();
    private final Thread thread;
    private volatile boolean running = true;
    /** The earliest moment a token still standing still may be found dead (Long.MAX_VALUE: none). */
    private long nextDeadline = Long.MAX_VALUE;

    /**
     * @param periodMs how often it beats and checks while it watches a token (the guest gives a server 5 s
     *                 without a beat). A token's last beat is seen up to one period late, so a dead process is
     *                 found at most {@code ownerTimeoutMs} + this period after its death.
     * @param idlePeriodMs how often while no process holds a channel or state (nobody to find dead)
     */
    LivenessMonitor(HeaderWriter header, ChannelWatcher watcher, long periodMs, long idlePeriodMs, int ownerTimeoutMs) {
        this.header = header;
        this.watcher = watcher;
        this.channels = watcher.controls();
        this.vm = watcher.vm();
        this.periodNs = TimeUnit.MILLISECONDS.toNanos(periodMs);
        this.idlePeriodNs = TimeUnit.MILLISECONDS.toNanos(idlePeriodMs);
        this.timeoutNs = TimeUnit.MILLISECONDS.toNanos(ownerTimeoutMs);
        this.thread = new Thread(this::beat, "heartbeat");
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    /** Checks now: the watcher attached a worker, so a token's first sighting is not a period late. */
    void wake() {
        LockSupport.unpark(thread);
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
            long now = System.nanoTime();
            if (check(now)) {
                watcher.wake();
            }
            // wake at a stale owner's deadline too, not a period late
            long period = liveness.isEmpty() ? idlePeriodNs : periodNs;
            LockSupport.parkNanos(this, Math.max(MIN_PARK_NS, Math.min(period, nextDeadline - now)));
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
            if (owner == 0 || owner == ChannelWatcher.SERVER_HOLD) {
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
        // tokens with state but no channel: present in the check as a sum that never moves
        for (var owner : vm.owners().entrySet()) {
            Long token = owner.getKey();
            Liveness l = liveness.get(token);
            if (l == null) {
                // a closed owner is being reclaimed (and freed once): not queued again
                if (watcher.reclaiming(token) || owner.getValue().closed()) {
                    continue;
                }
                l = new Liveness();
                l.fresh = true;
                liveness.put(token.longValue(), l);
            }
            if (!l.seenNow) {
                l.seenNow = true;
                l.sumNow = Long.MIN_VALUE; // no channel: a value no heartbeat sum takes in practice
            }
        }
        long guestBeat = header.guestHeartbeat();
        nextDeadline = Long.MAX_VALUE;
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
            } else if (l.changedAtNanos + timeoutNs - now > 0) {
                // past its deadline it waits for the VM's heartbeat, which the periodic check sees
                nextDeadline = Math.min(nextDeadline, l.changedAtNanos + timeoutNs);
            }
        }
        return watcherNeeded;
    }
}
