package io.ivcuda.common;

import java.util.Locale;

/** Byte counts as users write them: {@code 268435456}, {@code 256M}, {@code 256MiB}, {@code 4G}, {@code 512k}. Binary units. */
public final class ByteSize {
    public static final long MIB = 1L << 20;
    /**
     * The largest region ivcuda accepts. A region is a file in {@code shm.dir} (memory) that the server
     * maps and, with a GPU, pins whole; beyond this the element is surely a typo ({@code 1T} for {@code 1G}).
     * Whether a smaller one fits on this host is {@link ShmSpace}'s question.
     */
    public static final long MAX_REGION_SIZE = 64L << 30;

    private ByteSize() {
    }

    /**
     * Parses a non-negative byte count with an optional binary unit suffix.
     *
     * @throws IllegalArgumentException with a short reason when the text is not a byte count
     */
    public static long parse(String text) {
        String s = text.trim().toUpperCase(Locale.ROOT);
        if (s.endsWith("IB")) {
            s = s.substring(0, s.length() - 2);
        } else if (s.endsWith("B") && s.length() > 1 && !Character.isDigit(s.charAt(s.length() - 2))) {
            throw new IllegalArgumentException("unknown unit (use K, M, G, T or a plain byte count)");
        } else if (s.endsWith("B")) {
            s = s.substring(0, s.length() - 1);
        }
        int shift = 0;
        if (!s.isEmpty()) {
            switch (s.charAt(s.length() - 1)) {
                case 'K' -> shift = 10;
                case 'M' -> shift = 20;
                case 'G' -> shift = 30;
                case 'T' -> shift = 40;
                default -> shift = 0;
            }
            if (shift != 0) {
                s = s.substring(0, s.length() - 1).trim();
            }
        }
        if (s.isEmpty() || !s.chars().allMatch(Character::isDigit)) {
            throw new IllegalArgumentException("not a byte count (examples: 268435456, 256M, 4G)");
        }
        long value;
        try {
            value = Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("too large");
        }
        if (value > (Long.MAX_VALUE >> shift)) {
            throw new IllegalArgumentException("too large");
        }
        return value << shift;
    }

    /** A power of two from 1 MiB to {@link #MAX_REGION_SIZE}. */
    public static boolean isValidRegionSize(long bytes) {
        return bytes >= MIB && bytes <= MAX_REGION_SIZE && Long.bitCount(bytes) == 1;
    }

    /** Why {@code bytes} is no region size (a few words, naming {@code written}), or null when it is one. */
    public static String regionSizeProblem(long bytes, String written) {
        if (bytes < MIB) {
            return "region size " + written + " is less than 1 MiB (e.g. 256M)";
        }
        if (bytes > MAX_REGION_SIZE) {
            return "region size " + written + " is larger than " + describe(MAX_REGION_SIZE) + ", the largest ivcuda accepts";
        }
        if (Long.bitCount(bytes) != 1) {
            return "region size " + written + " is not a power of two (e.g. 256M)";
        }
        return null;
    }

    /** Short human form for messages: {@code 256 MiB}, {@code 4 GiB}, or bytes. */
    public static String describe(long bytes) {
        if (bytes != 0 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + " GiB";
        }
        if (bytes != 0 && bytes % MIB == 0) {
            return (bytes >> 20) + " MiB";
        }
        return bytes + " bytes";
    }
}
