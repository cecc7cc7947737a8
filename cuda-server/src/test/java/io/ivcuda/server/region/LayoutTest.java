package io.ivcuda.server.region;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The offsets the server uses are the numbers in docs/protocol.md, read from the doc itself. */
class LayoutTest {
    private static final Pattern ROW = Pattern.compile("^\\| (0x[0-9A-Fa-f]{3}) \\| [^|]+ \\| (\\w+) \\|");

    private static Map<String, Integer> table(String section) throws Exception {
        String doc = Files.readString(Path.of(System.getProperty("protocol.doc", "../docs/protocol.md")));
        int start = doc.indexOf(section);
        String body = doc.substring(start, doc.indexOf("\n## ", start + 1));
        Map<String, Integer> rows = new LinkedHashMap<>();
        for (String line : body.split("\n")) {
            Matcher m = ROW.matcher(line);
            if (m.find()) {
                rows.put(m.group(2).toUpperCase(Locale.ROOT), Integer.decode(m.group(1)));
            }
        }
        return rows;
    }

    private static void assertSame(Class<?> constants, Map<String, Integer> rows) throws Exception {
        assertTrue(rows.size() > 10, "the doc's table was found: " + rows);
        for (Map.Entry<String, Integer> row : rows.entrySet()) {
            int value = constants.getField(row.getKey()).getInt(null);
            assertEquals(row.getValue().intValue(), value, row.getKey());
        }
    }

    @Test
    void headerOffsetsAreTheDocs() throws Exception {
        assertSame(HeaderLayout.class, table("## 2. Header"));
    }

    @Test
    void channelOffsetsAreTheDocs() throws Exception {
        assertSame(ChannelLayout.class, table("## 3. Channel"));
    }

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
