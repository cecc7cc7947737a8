package io.ivcuda.server.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** A process's device output buffer: order kept across growth and compaction, bounded, counts taken once. */
class DeviceOutputBufferTest {
    static String read(DeviceOutput o, int capacity) {
        ByteArrayOutputStream s = new ByteArrayOutputStream();
        o.read(s::write, capacity);
        return s.toString(StandardCharsets.ISO_8859_1);
    }

    static void append(DeviceOutput o, String s) {
        byte[] b = s.getBytes(StandardCharsets.ISO_8859_1);
        o.append(b, b.length);
    }

    @Test
    void orderSurvivesPartialReadsAndGrowth() {
        DeviceOutput o = new DeviceOutput(1 << 20);
        assertFalse(o.pending());
        append(o, "abc");
        assertEquals("ab", read(o, 2));
        String big = "y".repeat(10_000); // grows past the first 4 KiB after a partial read
        append(o, big);
        assertEquals("c" + big, read(o, 20_000));
        assertFalse(o.pending());
    }

    @Test
    void beyondTheCapacityIsDroppedAndSaidOnce() {
        int capacity = 5000; // not a power of two: the growth stops at it
        DeviceOutput o = new DeviceOutput(capacity);
        append(o, "z".repeat(capacity - 1));
        append(o, "12");
        assertEquals(1, o.takeDropped());
        assertEquals(0, o.takeDropped());
        assertEquals(capacity, read(o, Integer.MAX_VALUE).length());
        o.withhold(5);
        assertTrue(o.pending(), "a withheld count is something to say");
        assertEquals(5, o.takeWithheld());
        assertFalse(o.pending());
    }
}
