package io.ivcuda.server.core;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.Logger;

/**
 * The VM's log of refused guest requests, bounded: every refusal is counted by its kind (the
 * operation and the field at fault, never a value the guest chose), and each kind logs at most
 * {@link Limits#refusalLinesPerKind()} lines per window; the next line of a kind after a quiet spell
 * says how many were left out. A guest that repeats a bad request a million times a second costs
 * the host a few lines a minute. The counts are the server's refusal metrics (status file).
 */
public final class RefusalLog {
    /** Kinds beyond this many share one, so that the table itself stays bounded. */
    static final int MAX_KINDS = 4096;
    static final String OTHER = "other";

    private static final class Kind {
        final LongAdder count = new LongAdder();
        /** Logged at WARN or above: a refusal (or a failure). Below: an event bounded the same way (a hello). */
        final boolean refusal;
        long windowStart;
        int lines;
        long suppressed;

        Kind(boolean refusal) {
            this.refusal = refusal;
        }
    }

    private final int linesPerKind;
    private final long windowNs;
    private final Map<String, Kind> kinds = new ConcurrentHashMap<>();

    public RefusalLog(Limits limits) {
        this.linesPerKind = limits.refusalLinesPerKind();
        this.windowNs = TimeUnit.MILLISECONDS.toNanos(limits.refusalWindowMs());
    }

    /**
     * Counts one refusal of {@code kind} and logs {@code message} at {@code level} unless this kind
     * has used up its lines in this window.
     */
    public void log(Logger log, Level level, String kind, Supplier<String> message) {
        log(log, level, kind, message, null);
    }

    /** Like {@link #log(Logger, Level, String, Supplier)}, with the stack of {@code thrown} on the first line of its kind only. */
    public void log(Logger log, Level level, String kind, Supplier<String> message, Throwable thrown) {
        Kind k = kinds.get(kind);
        if (k == null) {
            boolean refusal = level.isMoreSpecificThan(Level.WARN);
            k = kinds.size() < MAX_KINDS ? kinds.computeIfAbsent(kind, x -> new Kind(refusal))
                    : kinds.computeIfAbsent(OTHER, x -> new Kind(true));
        }
        k.count.increment();
        long left;
        boolean first;
        synchronized (k) {
            long now = System.nanoTime();
            if (k.lines == 0 || now - k.windowStart >= windowNs) {
                k.windowStart = now;
                k.lines = 0;
            }
            if (k.lines >= linesPerKind) {
                k.suppressed++;
                return;
            }
            k.lines++;
            left = k.suppressed;
            k.suppressed = 0;
            first = k.count.sum() == 1;
        }
        if (!log.isEnabled(level)) {
            return;
        }
        String line = message.get();
        if (left > 0) {
            line += " (" + left + " more like it not logged)";
        } else if (k.lines == linesPerKind) {
            line += " (further ones of this kind are counted, not logged, for "
                    + TimeUnit.NANOSECONDS.toSeconds(windowNs) + " s)";
        }
        if (thrown != null && first) {
            log.log(level, line, thrown);
        } else {
            log.log(level, thrown == null ? line : line + ": " + thrown);
        }
    }

    /** Refusals so far per kind. */
    public Map<String, Long> counts() {
        Map<String, Long> out = new TreeMap<>();
        kinds.forEach((kind, k) -> out.put(kind, k.count.sum()));
        return out;
    }

    /**
     * Refusals so far per kind, without the kinds logged below WARN (hellos, cuInit: bounded the same
     * way, but nothing was refused). What the status file shows.
     */
    public Map<String, Long> refusalCounts() {
        Map<String, Long> out = new TreeMap<>();
        kinds.forEach((kind, k) -> {
            if (k.refusal) {
                out.put(kind, k.count.sum());
            }
        });
        return out;
    }

    /** Refusals so far of one kind (0 if none). */
    public long count(String kind) {
        Kind k = kinds.get(kind);
        return k == null ? 0 : k.count.sum();
    }
}
