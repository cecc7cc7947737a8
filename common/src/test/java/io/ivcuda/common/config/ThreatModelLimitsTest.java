package io.ivcuda.common.config;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * Issue 13's "docs/threat-model.md lists every limit and what a guest gets at it": every {@code limit.*}
 * key of the server is named in a row of that document's "Limits" table, so a new limit without its row
 * (what it bounds, its default, what the guest gets) fails here.
 */
class ThreatModelLimitsTest {
    private static final Path DOC = Path.of("..").toAbsolutePath().normalize().resolve("docs/threat-model.md");

    @Test
    void everyLimitKeyHasARowInTheLimitsTable() throws Exception {
        String doc = Files.readString(DOC, StandardCharsets.UTF_8);
        int start = doc.indexOf("\n## Limits\n");
        assertTrue(start >= 0, "docs/threat-model.md has a Limits section");
        String section = doc.substring(start, doc.indexOf("\n## ", start + 1));
        String rows = String.join("\n", section.lines().filter(l -> l.startsWith("|")).toList());
        int limits = 0;
        for (ConfigKey<?> key : ServerKeys.ALL.keys()) {
            if (key.name().startsWith("limit.")) {
                limits++;
                assertTrue(rows.contains("`" + key.name() + "`"), key.name() + " has no row in docs/threat-model.md's Limits table");
            }
        }
        assertTrue(limits >= 9, "the server's limit keys were found: " + limits);
    }
}
