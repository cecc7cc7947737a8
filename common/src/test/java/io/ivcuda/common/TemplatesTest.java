package io.ivcuda.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The shipped templates agree with the code that reads them and with docs/architecture.md. */
class TemplatesTest {
    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();

    @TempDir
    Path dir;

    @Test
    void shippedConfigurationLoadsAsIsAndWithEveryDefaultUncommented() throws Exception {
        Path template = REPO.resolve("templates/ivcuda.properties");
        HostConfig asShipped = HostConfig.load(List.of(template));
        assertEquals(HostConfig.defaults().defaultSize(), asShipped.defaultSize());

        // Every commented "#key=value" is a documented default: uncommented, each must be valid.
        String uncommented = Files.readString(template).replaceAll("(?m)^#([a-z][a-z0-9.<>]*=)", "$1");
        Path file = dir.resolve("ivcuda.properties");
        Files.writeString(file, uncommented);
        HostConfig all = HostConfig.load(List.of(file));
        assertEquals(HostConfig.defaults().serverReadyTimeoutMs(), all.serverReadyTimeoutMs());
        assertEquals(HostConfig.defaults().libvirtUri(), all.libvirtUri());

        // What is not a lifecycle key goes to the server: it must be a key docs/architecture.md defines.
        Set<String> serverKeys = architectureKeys();
        for (String key : all.serverKeys().keySet()) {
            assertTrue(serverKeys.contains(key), "templates/ivcuda.properties key " + key
                    + " is neither a lifecycle key nor a cuda-server key of docs/architecture.md");
        }
        for (String key : serverKeys) {
            assertTrue(!HostConfig.isLifecycleKey(key), "cuda-server key " + key + " would be kept from the server");
        }
    }

    private static Set<String> architectureKeys() throws Exception {
        String doc = Files.readString(REPO.resolve("docs/architecture.md"));
        Set<String> keys = new TreeSet<>();
        Matcher row = Pattern.compile("(?m)^\\| `([a-z.]+)`(?:, `([a-z.]+)`)? \\|").matcher(doc);
        while (row.find()) {
            keys.add(row.group(1));
            if (row.group(2) != null) {
                keys.add(row.group(2));
            }
        }
        assertTrue(keys.contains("region.path") && keys.contains("backend"), "read the key table: " + keys);
        return keys;
    }
}
