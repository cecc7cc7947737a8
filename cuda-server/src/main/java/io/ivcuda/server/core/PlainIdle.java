package io.ivcuda.server.core;

import java.util.concurrent.TimeUnit;
import org.agrona.concurrent.BackoffIdleStrategy;

/**
 * ivshmem-plain: nobody can ring us, so an idle worker polls — spins for the spin budget
 * ({@code wait.spin.us}), yields a little, then parks for growing periods up to
 * {@code wait.park.max.us}. The park cap bounds both the wake-up latency and the idle CPU.
 */
public final class PlainIdle implements IdleWait {
    private final BackoffIdleStrategy backoff;

    public PlainIdle(long spinUs, long parkMaxUs) {
        // Agrona counts spins, not time: ~10 onSpinWait per microsecond
        backoff = new BackoffIdleStrategy(Math.max(1, spinUs * 10), 20, TimeUnit.MICROSECONDS.toNanos(1),
                TimeUnit.MICROSECONDS.toNanos(Math.max(1, parkMaxUs)));
    }

    @Override
    public void reset() {
        backoff.reset();
    }

    @Override
    public void idle(WorkCheck check) {
        backoff.idle();
    }
}
