package io.ivcuda.server.handler;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The byte span a strided copy's side touches, which bounds what the driver may reach. */
class StridedSpanTest {
    @Test
    void spanIsTheLastTouchedByteOfTheLastRowOfTheLastSlice() {
        assertEquals(10, StridedCopyHandler.span(10, 1, 1, 0, 0));
        assertEquals(3 * 64 + 10, StridedCopyHandler.span(10, 4, 1, 64, 0));
        // 2 slices of 8 rows of 64 bytes: slice 1 starts at 512, its 4th row at 512 + 3*64
        assertEquals(512 + 3 * 64 + 10, StridedCopyHandler.span(10, 4, 2, 64, 8));
        // packed
        assertEquals(2 * 3 * 5, StridedCopyHandler.span(5, 3, 2, 5, 3));
    }

    @Test
    void impossibleGeometriesHaveNoSpan() {
        assertEquals(-1, StridedCopyHandler.span(0, 1, 1, 0, 0));
        assertEquals(-1, StridedCopyHandler.span(1, 0, 1, 1, 1));
        assertEquals(-1, StridedCopyHandler.span(1, 1, 0, 1, 1));
        assertEquals(-1, StridedCopyHandler.span(-5, 1, 1, 0, 0));
        // overlapping rows, overlapping slices
        assertEquals(-1, StridedCopyHandler.span(65, 2, 1, 64, 0));
        assertEquals(-1, StridedCopyHandler.span(10, 4, 2, 64, 3));
        // beyond 2^63
        assertEquals(-1, StridedCopyHandler.span(1, 2, 1, Long.MAX_VALUE, 0));
        assertEquals(-1, StridedCopyHandler.span(1, 1, 3, 1L << 32, 1L << 31));
        assertEquals(-1, StridedCopyHandler.span(Long.MAX_VALUE, 2, 1, Long.MAX_VALUE, 0));
        // a pitch and height that only matter when there are rows and slices
        assertEquals(7, StridedCopyHandler.span(7, 1, 1, Long.MAX_VALUE, Long.MAX_VALUE));
    }
}
