package io.ivcuda.common.config;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * docs/operations.md's key tables are the declarations' ({@link ConfigDoc}). When a key changes this fails;
 * {@code mvn -B -q -pl common -am test -Dtest=ConfigDocTest -Dsurefire.failIfNoSpecifiedTests=false
 * -Divcuda.docs.write=true} writes the tables anew (then read the diff).
 */
class ConfigDocTest {
    private static final Path DOC = Path.of("..").toAbsolutePath().normalize().resolve("docs/operations.md");

    @Test
    void keyTablesOfOperationsMdAreTheDeclarations() throws Exception {
        String doc = Files.readString(DOC, StandardCharsets.UTF_8);
        String expected = ConfigDoc.rewrite(ConfigDoc.rewrite(doc, HostKeys.ALL), ServerKeys.ALL);
        if (Boolean.getBoolean("ivcuda.docs.write") && !expected.equals(doc)) {
            Files.writeString(DOC, expected, StandardCharsets.UTF_8);
            return;
        }
        assertEquals(expected, doc, "docs/operations.md's key tables differ from ServerKeys/HostKeys: rerun with "
                + "-Divcuda.docs.write=true to rewrite them");
    }
}
