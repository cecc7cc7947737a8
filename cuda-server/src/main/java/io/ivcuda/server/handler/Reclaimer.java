package io.ivcuda.server.handler;

/** What a channel's session may ask of its server: free its process (ivc_process_exit). */
public interface Reclaimer {

    /**
     * Stops the token's workers on other channels, releases their channels, then frees every
     * resource of the token. {@code callerChannel}'s worker is the caller: it is neither stopped nor
     * waited for.
     */
    void reclaim(long token, int callerChannel);
}
