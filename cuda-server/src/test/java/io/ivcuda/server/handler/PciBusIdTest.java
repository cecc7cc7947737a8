package io.ivcuda.server.handler;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

class PciBusIdTest {

    @Test
    void everySpellingTheDriverPrintsParsesToTheSameId() {
        long[] id = {0, 0x19, 0, 0};
        assertArrayEquals(id, PciBusId.parse("0000:19:00.0"));
        assertArrayEquals(id, PciBusId.parse("00000000:19:00.0"));
        assertArrayEquals(id, PciBusId.parse("19:00.0"));
        assertArrayEquals(new long[] {0, 0xab, 0x1f, 7}, PciBusId.parse("0000:AB:1f.7"));
    }

    @Test
    void malformedIdsAreRejected() {
        assertNull(PciBusId.parse(null));
        assertNull(PciBusId.parse(""));
        assertNull(PciBusId.parse("19-00.0"));
        assertNull(PciBusId.parse("0000:19:00"));
        assertNull(PciBusId.parse("0000:19:20.0"));
        assertNull(PciBusId.parse("0000:19:00.8"));
        assertNull(PciBusId.parse("1:2:3:4.0"));
        assertNull(PciBusId.parse("zz:00.0"));
    }
}
