package io.ivcuda.server.channel;

import io.ivcuda.server.gen.Handlers;

/**
 * What a {@link ChannelWorker} dispatches to: the handlers of one channel's calls and the state of
 * its session (greeted by ivc_hello or not). Made by the server for each worker, so the worker
 * knows nothing of the handlers it runs.
 */
public interface ChannelCalls {

    /** The handlers the generated dispatcher calls. */
    Handlers handlers();

    /** Whether a successful ivc_hello opened the session (every other first request is refused). */
    boolean greeted();

    /** The worker is about to dispatch {@code opcode} (a request or a ring record): for log lines. */
    void calling(int opcode);

    /** The dispatch of the last {@link #calling} returned (normally or not): releases what the call pinned. */
    void called();

    /**
     * The dispatch of {@code opcode} ended with {@code result} after {@code nanos} of the worker's time: counted
     * for status and metrics (called on the hot path: it only adds to counters).
     */
    void finished(int opcode, int result, long nanos);

    /**
     * Whether the channel's process has device output waiting: the worker says so in the channel's
     * output_pending with each response (docs/kernels.md).
     */
    default boolean outputPending() {
        return false;
    }

    /** The worker leaves for good: nothing current on its thread, its scratch memory freed. */
    void detach();
}
