package io.ivcuda.backend;

/**
 * When a failed slot's server is started again: 1 s after the first failure, twice as long after each further
 * one, at most {@code maxMs}; a new assignment, or a server that served a minute, starts the count anew. A
 * front-end that makes its server fail again and again costs the back-end one start per {@code maxMs}.
 */
final class Backoff {
    static final long FIRST_MS = 1000;
    /** A server that served this long had not been failing: its next failure counts as the first. */
    static final long HEALTHY_MS = 60_000;

    private final long maxMs;
    private int failures;

    Backoff(long maxMs) {
        this.maxMs = maxMs;
    }

    /** One more failure; how long to wait before the next start. */
    long failed() {
        failures++;
        long delay = FIRST_MS << Math.min(failures - 1, 30);
        return Math.min(delay, maxMs);
    }

    void reset() {
        failures = 0;
    }

    int failures() {
        return failures;
    }
}
