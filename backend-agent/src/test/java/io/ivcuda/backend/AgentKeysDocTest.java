package io.ivcuda.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.config.ConfigDoc;
import io.ivcuda.common.config.ConfigKey;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * docs/operations.md's table of the agent's keys is the declarations' ({@link AgentKeys}), and the package's
 * templates/backend.properties names every key. {@code -Divcuda.docs.write=true} writes the table anew.
 */
class AgentKeysDocTest {
    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    static final String BEGIN = "<!-- BEGIN generated key table: ivcuda-backend-agent (AgentKeysDocTest; mvn -pl backend-agent "
            + "-am test -Dtest=AgentKeysDocTest -Divcuda.docs.write=true rewrites it) -->\n";
    static final String END = "<!-- END generated key table: ivcuda-backend-agent -->\n";

    @Test
    void operationsMdHasTheAgentsKeyTable() throws Exception {
        Path docPath = REPO.resolve("docs/operations.md");
        String doc = Files.readString(docPath, StandardCharsets.UTF_8);
        int begin = doc.indexOf(BEGIN);
        int end = doc.indexOf(END);
        assertTrue(begin >= 0 && end > begin, "docs/operations.md lacks the markers of the agent's key table");
        String expected = doc.substring(0, begin + BEGIN.length()) + ConfigDoc.table(AgentKeys.ALL) + doc.substring(end);
        if (Boolean.getBoolean("ivcuda.docs.write") && !expected.equals(doc)) {
            Files.writeString(docPath, expected, StandardCharsets.UTF_8);
            return;
        }
        assertEquals(expected, doc, "the agent's key table differs from AgentKeys: rerun with -Divcuda.docs.write=true");
    }

    @Test
    void theTemplateNamesEveryKey() throws Exception {
        String template = Files.readString(REPO.resolve("templates/backend.properties"), StandardCharsets.UTF_8);
        for (ConfigKey<?> key : AgentKeys.ALL.keys()) {
            assertTrue(template.contains("\n" + key.name() + "=") || template.contains("\n#" + key.name() + "="),
                    "templates/backend.properties lacks " + key.name());
        }
        // and sets nothing the agent would refuse
        AgentConfig.load(java.util.List.of(REPO.resolve("templates/backend.properties")),
                java.util.List.of(AgentKeys.SERVER_CONFIG.name() + "=" + REPO.resolve("templates/backend-server.properties")));
    }
}
