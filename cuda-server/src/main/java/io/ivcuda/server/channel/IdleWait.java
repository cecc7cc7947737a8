package io.ivcuda.server.channel;

/**
 * How a channel worker waits while its channel has nothing to do: {@link PlainIdle} polls with a
 * backoff (ivshmem-plain), {@link DoorbellIdle} spins briefly, then sleeps until the guest rings
 * BAR0's doorbell (ivshmem-doorbell, docs/architecture.md "Doorbell mode").
 */
public interface IdleWait {

    /** Whether the wait is over: the channel has work, or the worker must stop. */
    interface WorkCheck {
        boolean ready();
    }

    /** Work was found: the next wait starts again with the spin budget. */
    void reset();

    /** One step of waiting; may return before there is work (the caller checks again). */
    void idle(WorkCheck check);

    /** After the worker published resp_seq or server_chunk: wakes a guest that blocks on it. */
    default void published() {
    }

    /** The worker left its channel for good (attached = 0 is stored). */
    default void detached() {
    }

    /** Makes a thread that sleeps in {@link #idle} look at its channel now (stop, reclaim). */
    default void wake(Thread worker) {
        java.util.concurrent.locks.LockSupport.unpark(worker);
    }
}
