package io.ivcuda.server.channel;

import io.ivcuda.server.doorbell.Doorbells;
import io.ivcuda.wire.ChannelFlyweight;
import java.lang.invoke.VarHandle;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;

/**
 * ivshmem-doorbell (docs/protocol.md §8): spin for half the spin budget, yield the CPU for the
 * other half, then park —
 * register with the {@link Doorbells}, store {@code server_parked = 1}, full fence, check the
 * channel again (the guest stores its counter, fences, then loads {@code server_parked}: one of
 * the two sides sees the other, so a wake-up is never lost), and sleep until the guest rings the
 * channel's vector, or {@code doorbell.park.timeout.ms} passes; then {@code server_parked = 0}.
 * Each timeout without work doubles the next one (up to 30 s), so a long-idle channel costs almost
 * no wake-ups; stop and reclaim wake the worker at once ({@link #wake}). The timeout only matters
 * for a guest that cannot ring (no BAR0 mapping): while it keeps calling it is served at the pace
 * of {@code doorbell.park.timeout.ms}.
 */
public final class DoorbellIdle implements IdleWait {
    /** The longest a parked worker sleeps without a ring once its channel has been idle a while. */
    static final long MAX_PARK_NS = TimeUnit.SECONDS.toNanos(30);

    private final ChannelFlyweight channel;
    private final int index;
    private final int vector;
    private final Doorbells doorbells;
    private final IntConsumer interruptGuest;
    private final long spinNs;
    private final long parkTimeoutNs;
    /** Grows while parks time out without work (an idle channel wakes ever more rarely); reset by work. */
    private long currentTimeoutNs;
    private boolean spinning;
    private long spinStart;
    private long parks;

    /**
     * @param interruptGuest raises a guest MSI-X vector (the ivshmem server's guest eventfd)
     */
    public DoorbellIdle(ChannelFlyweight channel, int index, Doorbells doorbells, IntConsumer interruptGuest, long spinUs,
                        long parkTimeoutMs) {
        this.channel = channel;
        this.index = index;
        this.vector = doorbells.vectorOf(index);
        this.doorbells = doorbells;
        this.interruptGuest = interruptGuest;
        this.spinNs = TimeUnit.MICROSECONDS.toNanos(spinUs);
        this.parkTimeoutNs = TimeUnit.MILLISECONDS.toNanos(parkTimeoutMs);
        this.currentTimeoutNs = parkTimeoutNs;
    }

    @Override
    public void reset() {
        spinning = false;
        currentTimeoutNs = parkTimeoutNs;
    }

    @Override
    public void idle(WorkCheck check) {
        long now = System.nanoTime();
        if (!spinning) {
            spinning = true;
            spinStart = now;
        }
        long spun = now - spinStart;
        if (spun < spinNs / 2) {
            Thread.onSpinWait();
        } else if (spun < spinNs) {
            // The guest's thread may be waiting for this very CPU (more runnable threads than
            // CPUs): spinning on would keep it from publishing the request we wait for.
            Thread.yield();
        } else {
            park(check);
        }
    }

    private void park(WorkCheck check) {
        long rung = doorbells.rings(vector);
        doorbells.parking(index, Thread.currentThread(), rung);
        channel.serverParkedVolatile(1);
        VarHandle.fullFence();
        long deadline = System.nanoTime() + currentTimeoutNs;
        while (!check.ready() && doorbells.rings(vector) == rung) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                // nothing came: sleep longer next time (a guest that cannot ring resets it with each call)
                currentTimeoutNs = Math.min(currentTimeoutNs * 2, MAX_PARK_NS);
                break;
            }
            LockSupport.parkNanos(this, left);
        }
        channel.serverParkedVolatile(0);
        doorbells.parking(index, null, -1);
        parks++;
    }

    /** How often this worker slept (tests). */
    public long parks() {
        return parks;
    }

    @Override
    public void published() {
        // store resp_seq/server_chunk, fence, load guest_waiting: pairs with the guest's
        // store guest_waiting, fence, load resp_seq (§8)
        VarHandle.fullFence();
        if (channel.guestWaitingVolatile() == 1) {
            interruptGuest.accept(vector);
        }
    }

    @Override
    public void detached() {
        // a free channel reads as parked, so the next claimer's ivc_hello rings; the ring (or
        // this nudge) sends the watcher to attach a worker
        channel.serverParkedVolatile(1);
        VarHandle.fullFence();
        doorbells.nudgeWatcher();
    }
}
