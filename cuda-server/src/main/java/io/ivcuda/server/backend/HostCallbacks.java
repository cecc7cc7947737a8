package io.ivcuda.server.backend;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The server's side of host functions (docs/graphs.md): every host function the server puts on a
 * driver stream or in a graph carries a key, and when the driver runs it the backend calls
 * {@link #fire} with that key on the driver's thread. The key's {@link Sink} hands the guest's
 * function to the guest and returns once it ran (or gave up waiting); a key nobody registers any
 * more (its process was reclaimed) returns at once. Keys are never reused in a JVM, so a late call
 * of the driver can never reach another process's sink.
 */
public final class HostCallbacks {

    /** What runs when the driver reaches a host function: on the driver's thread, it may block. */
    @FunctionalInterface
    public interface Sink {
        void run(int status);
    }

    private static final ConcurrentHashMap<Long, Sink> SINKS = new ConcurrentHashMap<>();
    private static final AtomicLong NEXT = new AtomicLong(1);

    private HostCallbacks() {
    }

    /** A new key for {@code sink}. */
    public static long register(Sink sink) {
        long key = NEXT.getAndIncrement();
        SINKS.put(key, sink);
        return key;
    }

    public static void unregister(long key) {
        SINKS.remove(key);
    }

    /** Registered keys (tests). */
    public static int registered() {
        return SINKS.size();
    }

    /** The driver reached the host function of {@code key}; never throws into the driver. */
    public static void fire(long key, int status) {
        Sink sink = SINKS.get(key);
        if (sink == null) {
            return;
        }
        try {
            sink.run(status);
        } catch (RuntimeException | Error e) {
            org.apache.logging.log4j.LogManager.getLogger(HostCallbacks.class).error("host function " + key + " failed", e);
        }
    }
}
