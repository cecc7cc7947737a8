package io.ivcuda.server.channel;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.agrona.concurrent.BackoffIdleStrategy;

/**
 * ivshmem-plain: nobody can ring us, so an idle worker polls — spins for the spin budget
 * ({@code wait.spin.us}), yields a little, then parks for growing periods up to
 * {@code wait.park.max.us}. A channel idle for longer than {@link #IDLE_AFTER_NS} is asleep,
 * not between calls: it then parks {@code wait.idle.park.ms} at a time, so a VM whose threads
 * hold channels but make no calls costs its host little CPU; the first call after such a pause
 * waits up to that long (doorbell mode has no such wait).
 */
public final class PlainIdle implements IdleWait {
    /** How long a channel must have had no work before the long parks start. */
    public static final long IDLE_AFTER_NS = TimeUnit.MILLISECONDS.toNanos(100);

    private final BackoffIdleStrategy backoff;
    private final long idleParkNs;
    private long idleSince;

    public PlainIdle(long spinUs, long parkMaxUs, long idleParkMs) {
        // Agrona counts spins, not time: ~10 onSpinWait per microsecond
        backoff = new BackoffIdleStrategy(Math.max(1, spinUs * 10), 20, TimeUnit.MICROSECONDS.toNanos(1),
                TimeUnit.MICROSECONDS.toNanos(Math.max(1, parkMaxUs)));
        idleParkNs = TimeUnit.MILLISECONDS.toNanos(idleParkMs);
    }

    @Override
    public void reset() {
        backoff.reset();
        idleSince = 0;
    }

    @Override
    public void idle(WorkCheck check) {
        long now = System.nanoTime();
        if (idleSince == 0) {
            idleSince = now;
        }
        if (idleParkNs > 0 && now - idleSince > IDLE_AFTER_NS) {
            LockSupport.parkNanos(idleParkNs);
            return;
        }
        backoff.idle();
    }
}
