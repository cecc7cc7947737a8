package io.ivcuda.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/protocol.md's layout tables are api/region.layout's fields, row for row (offset, type,
 * name): the document cannot drift from the layout the code is generated from.
 */
class ProtocolDocTest {
    private static final Pattern ROW = Pattern.compile("^\\| (0x[0-9A-Fa-f]{3}) \\| ([^|]+?) \\| (\\w+) \\|");

    private static ApiDescription real() throws Exception {
        return ApiDescription.load(Path.of(System.getProperty("api.description", "cuda-driver.api")));
    }

    private static List<String> table(String section) throws Exception {
        String doc = Files.readString(Path.of(System.getProperty("protocol.doc", "../docs/protocol.md")));
        int start = doc.indexOf(section);
        assertTrue(start >= 0, "docs/protocol.md has a section " + section);
        int end = doc.indexOf("\n## ", start + 1);
        String body = doc.substring(start, end < 0 ? doc.length() : end);
        List<String> rows = new ArrayList<>();
        for (String line : body.split("\n")) {
            Matcher m = ROW.matcher(line);
            if (m.find()) {
                rows.add(Integer.decode(m.group(1)) + " " + m.group(2).trim() + " " + m.group(3));
            }
        }
        return rows;
    }

    private static List<String> fields(WireLayout layout) {
        return layout.fields().stream().filter(f -> f.type() != LayoutField.Type.AREA)
                .map(f -> f.offset() + " " + f.spelling() + " " + f.name()).toList();
    }

    @Test
    void headerTableIsTheHeaderLayout() throws Exception {
        assertEquals(fields(real().layout("header")), table("## 2. Header"));
    }

    @Test
    void channelTableIsTheChannelLayout() throws Exception {
        assertEquals(fields(real().layout("channel")), table("## 3. Channel"));
    }

    @Test
    void backEndTablesAreTheControlAndSlotLayouts() throws Exception {
        List<String> rows = table("## 12. Back-end domains");
        List<String> control = fields(real().layout("backend_control"));
        List<String> slot = fields(real().layout("backend_slot"));
        assertEquals(control, rows.subList(0, Math.min(control.size(), rows.size())));
        assertEquals(slot, rows.subList(Math.min(control.size(), rows.size()), rows.size()));
    }

    @Test
    void theDocumentNamesTheProtocolVersionAndTheMagicsBytes() throws Exception {
        ApiDescription api = real();
        String doc = Files.readString(Path.of(System.getProperty("protocol.doc", "../docs/protocol.md")));
        assertTrue(doc.startsWith("# ivcuda wire protocol — version " + api.protocolVersion() + "\n"), "title");
        long magic = api.layout("header").value("MAGIC").value();
        byte[] ascii = new byte[8];
        for (int i = 0; i < 8; i++) {
            ascii[i] = (byte) (magic >>> (8 * i));
        }
        assertTrue(doc.contains("`\"" + new String(ascii, java.nio.charset.StandardCharsets.US_ASCII) + "\"`"),
                "the magic's bytes, as the document spells them");
    }
}
