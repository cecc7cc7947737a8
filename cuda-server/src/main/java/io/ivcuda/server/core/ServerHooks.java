package io.ivcuda.server.core;

/** What a worker may ask of its server: reclaim its own token (ivc_process_exit). */
public interface ServerHooks {
    /** Stops the token's other workers, releases their channels, then frees the token's resources. */
    void reclaimFromWorker(long token, ChannelWorker caller);
}
