package io.ivcuda.server.doorbell;

import com.sun.jna.Memory;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Turns the guest's doorbell rings into wake-ups of parked threads. Several channels share a
 * vector (vector = channel index mod vectors), and an eventfd's count can be consumed only once,
 * so no worker reads the eventfds itself: one thread blocks in {@code poll} on all of them, and
 * for a vector that rang bumps its ring count and unparks every thread parked on a channel of that
 * vector, plus the channel watcher (a ring on a channel without a worker is a new claim's hello).
 *
 * <p>No lost wake-up: a thread reads {@link #rings} and registers ({@link #parking}) before it
 * stores {@code server_parked = 1}; the guest rings only after it read that 1; this thread reads the
 * eventfd after the ring, bumps the count, then unparks whoever is registered. The parked thread
 * either sees the count change or gets the unpark (a permit given before it parks is kept).
 */
public final class Doorbells implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(Doorbells.class);
    /** A safety net only: {@link #close} wakes the poll with a signal on vector 0. */
    private static final int POLL_MS = 60_000;

    private final EventFd[] vectors;
    private final AtomicLongArray rings;
    private final AtomicReferenceArray<Thread> parked;
    /** Per channel: the ring count its parked thread read before it stored server_parked = 1, or -1. */
    private final AtomicLongArray parkedAt;
    /** Per channel: how many times a ring unparked its parked thread (metrics; tests check who wakes whom). */
    private final AtomicLongArray wakeups;
    private final boolean[] heard;
    private volatile Thread watcher;
    private volatile boolean running = true;
    private final Thread thread;

    /**
     * @param vectors  the eventfds QEMU signals for {@code Doorbell = 0 << 16 | vector}
     * @param channels the region's channel count
     */
    public Doorbells(EventFd[] vectors, int channels) {
        this.vectors = vectors.clone();
        this.rings = new AtomicLongArray(vectors.length);
        this.parked = new AtomicReferenceArray<>(channels);
        this.parkedAt = new AtomicLongArray(channels);
        this.wakeups = new AtomicLongArray(channels);
        for (int c = 0; c < channels; c++) {
            parkedAt.set(c, -1);
        }
        this.heard = new boolean[vectors.length];
        this.thread = new Thread(this::dispatch, "doorbells");
        this.thread.setDaemon(true);
    }

    public void start() {
        thread.start();
    }

    public int vectorCount() {
        return vectors.length;
    }

    /** The vector a channel's guest rings (docs/protocol.md §8). */
    public int vectorOf(int channel) {
        return channel % vectors.length;
    }

    /** How often {@code vector} rang; read it before storing {@code server_parked = 1}. */
    public long rings(int vector) {
        return rings.get(vector);
    }

    /**
     * Registers the calling thread as parked on {@code channel}, having read {@code ringsSeen} of its
     * vector's rings (null, -1: no longer parked).
     */
    public void parking(int channel, Thread who, long ringsSeen) {
        if (who == null) {
            parked.set(channel, null);
            parkedAt.set(channel, ringsSeen);
        } else {
            parkedAt.set(channel, ringsSeen);
            parked.set(channel, who);
        }
    }

    /**
     * Whether a thread is parked on {@code channel} and no ring of its vector came since it looked:
     * it sleeps until the next one (or its timeout).
     */
    public boolean asleep(int channel) {
        return parked.get(channel) != null && parkedAt.get(channel) == rings(vectorOf(channel));
    }

    /** How many times a ring woke the thread parked on {@code channel}. */
    public long wakeups(int channel) {
        return wakeups.get(channel);
    }

    /** The thread to unpark on any ring (the channel watcher), or null. */
    public void watcher(Thread who) {
        watcher = who;
    }

    /** Wakes the watcher now (a worker left a channel: look at it again). */
    public void nudgeWatcher() {
        Thread w = watcher;
        if (w != null) {
            LockSupport.unpark(w);
        }
    }

    private void dispatch() {
        int n = vectors.length;
        Memory pollFds = new Memory(8L * n);
        Memory count = new Memory(8);
        while (running) {
            for (int v = 0; v < n; v++) {
                pollFds.setInt(8L * v, vectors[v].fd());
                pollFds.setShort(8L * v + 4, Posix.POLLIN);
                pollFds.setShort(8L * v + 6, (short) 0);
            }
            int ready = Posix.poll(pollFds, n, POLL_MS);
            if (ready <= 0) {
                continue;
            }
            for (int v = 0; v < n; v++) {
                short revents = pollFds.getShort(8L * v + 6);
                if (revents == 0) {
                    continue;
                }
                if ((revents & Posix.POLLIN) == 0) {
                    LOG.error("doorbell vector {}: eventfd reports {} — doorbells stop; workers fall back to timed polling",
                            v, revents);
                    running = false;
                    break;
                }
                Posix.read(vectors[v].fd(), count, 8); // resets the count (non-blocking fd)
                if (rings.incrementAndGet(v) == 1 && running && !heard[v]) {
                    heard[v] = true;
                    // once per vector: proof for the operator (and CI) that the guest's rings arrive
                    LOG.info("doorbell: first ring on vector {}", v);
                }
                for (int c = v; c < parked.length(); c += n) {
                    Thread t = parked.get(c);
                    if (t != null) {
                        wakeups.incrementAndGet(c);
                        LockSupport.unpark(t);
                    }
                }
                nudgeWatcher();
            }
        }
    }

    /** Stops the dispatcher; the eventfds belong to the {@link IvshmemServer}. */
    @Override
    public void close() {
        running = false;
        vectors[0].signal(); // wakes the poll; a spurious ring is harmless
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
