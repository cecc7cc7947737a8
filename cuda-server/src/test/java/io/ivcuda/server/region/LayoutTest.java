package io.ivcuda.server.region;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** How the server lays out a region (the offsets inside it are api/region.layout's: see ProtocolDocTest in api/). */
class LayoutTest {
    @Test
    void defaultLayoutFitsAndChannelsTakeAQuarter() {
        Layout l = Layout.compute(256L << 20, 32, 0);
        assertEquals(0, l.channelStride() % 4096);
        assertEquals(1, Integer.bitCount(l.windowSize()));
        assertTrue((long) l.channelCount() * l.channelStride() <= (256L << 20) / 4);
        long channelsEnd = l.channelTableOffset() + 32L * l.channelStride();
        // the pool follows the channels, on the next 2 MiB boundary
        assertTrue(l.poolOffset() >= channelsEnd && l.poolOffset() - channelsEnd < (2L << 20));
        assertEquals(0, l.poolOffset() % (2L << 20));
        assertEquals(256L << 20, l.poolOffset() + l.poolSize());
        assertEquals(l.windowOffset() + l.windowSize() <= l.channelStride(), true);
    }

    @Test
    void smallRegionsGetFewerChannelsByDefault() {
        assertEquals(32, Layout.autoChannelCount(256L << 20));
        assertEquals(3, Layout.autoChannelCount(4L << 20));
        assertEquals(1, Layout.autoChannelCount(1L << 20));
        for (long size : new long[] {1L << 20, 2L << 20, 4L << 20, 64L << 20}) {
            Layout l = Layout.compute(size, Layout.autoChannelCount(size), 0);
            assertTrue(l.poolOffset() <= size, "fits: " + size);
        }
    }

    @Test
    void aRegionTooSmallToAlignKeepsThePoolRightAfterTheChannels() {
        Layout l = Layout.compute(1L << 20, 1, 8192);
        assertEquals(l.channelTableOffset() + l.channelStride(), l.poolOffset());
    }

    @Test
    void bigRegionsClampTheWindowAt16MiB() {
        Layout l = Layout.compute(64L << 30, 8, 0);
        assertEquals(16 << 20, l.windowSize());
        assertEquals(64L << 30, l.poolOffset() + l.poolSize());
    }

    @Test
    void badValuesNameTheKey() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Layout.compute(3L << 20, 1, 0))
                .getMessage().startsWith("region.size"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Layout.compute(1L << 20, 4096, 0))
                .getMessage().startsWith("channel.count"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Layout.compute(1L << 30, 4, 12345))
                .getMessage().startsWith("channel.window"));
    }
}
