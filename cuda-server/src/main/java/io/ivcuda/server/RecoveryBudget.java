package io.ivcuda.server;

import io.ivcuda.common.config.ServerKeys;
import java.util.Arrays;
import java.util.Map;
import java.util.StringJoiner;

/**
 * How many more times this server may replace its CUDA process after guests' fatal GPU faults
 * ({@code limit.recoveries} within {@code limit.recoveries.window.ms}, docs/threat-model.md). Each
 * replacement costs the host a JVM and a driver start, and under MPS every fault also ends the
 * other VMs' CUDA work on that GPU (docs/sharing.md): a guest that faults on purpose, again and
 * again, must run out. The process keeps its pid across a replacement, so nothing outside it
 * remembers the earlier ones: their times travel from image to image in the environment, as the
 * count does ({@link Reexec}). Only this server writes that variable; a value it cannot read counts
 * as no earlier replacement.
 */
final class RecoveryBudget {
    /** The earlier replacements' times, milliseconds since the epoch, comma-separated. */
    static final String TIMES = "IVCUDA_SERVER_RECOVERY_TIMES";
    /** At most this many times are read (limit.recoveries' own upper bound). */
    private static final int MAX_TIMES = 1000;

    private final int limit;
    private final long windowMs;
    private final long[] recent;

    private RecoveryBudget(int limit, long windowMs, long[] recent) {
        this.limit = limit;
        this.windowMs = windowMs;
        this.recent = recent;
    }

    /** The budget as of {@code nowMs}: the replacements in {@code env} older than the window are forgotten. */
    static RecoveryBudget of(Map<String, String> env, int limit, long windowMs, long nowMs) {
        String text = env.getOrDefault(TIMES, "");
        long[] times = text.isEmpty() ? new long[0] : Arrays.stream(text.split(",", MAX_TIMES + 1))
                .limit(MAX_TIMES)
                .mapToLong(RecoveryBudget::parse)
                .filter(t -> t > 0 && t <= nowMs && nowMs - t < windowMs)
                .toArray();
        return new RecoveryBudget(limit, windowMs, times);
    }

    private static long parse(String s) {
        try {
            return Long.parseLong(s.trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** Whether one more replacement is allowed. */
    boolean allows() {
        return recent.length < limit;
    }

    /** The replacements counted, for log lines and the hellos' refusal. */
    String describe() {
        return recent.length + " replacement(s) of the CUDA process in the last " + windowMs / 1000
                + " s, " + ServerKeys.LIMIT_RECOVERIES.name() + " " + limit;
    }

    /** The value of {@link #TIMES} for the next image: the recent times and {@code nowMs}. */
    String withReplacementAt(long nowMs) {
        StringJoiner joined = new StringJoiner(",");
        for (long t : recent) {
            joined.add(Long.toString(t));
        }
        return joined.add(Long.toString(nowMs)).toString();
    }
}
