package io.ivcuda.server.core;

/** What a worker may ask of its server: reclaim its own token (ivc_process_exit). */
public interface ServerHooks {
    /** Stops the token's other workers, then frees its resources. */
    void reclaimFromWorker(long token, ChannelWorker caller);

    static ServerHooks current() {
        return Holder.hooks;
    }

    static void install(ServerHooks hooks) {
        Holder.hooks = hooks;
    }

    final class Holder {
        static volatile ServerHooks hooks;

        private Holder() {
        }
    }
}
