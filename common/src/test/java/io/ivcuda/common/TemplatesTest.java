package io.ivcuda.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.ivcuda.common.config.ConfigKey;
import io.ivcuda.common.config.HostKeys;
import io.ivcuda.common.config.ServerKeys;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The shipped templates agree with the code that reads them and with the keys' declarations. */
class TemplatesTest {
    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();

    @TempDir
    Path dir;

    @Test
    void shippedConfigurationLoadsAsIsAndWithEveryDefaultUncommented() throws Exception {
        Path template = REPO.resolve("templates/ivcuda.properties");
        String text = Files.readString(template);
        String generated = io.ivcuda.common.config.ConfigDoc.rewriteTemplate(text);
        if (Boolean.getBoolean("ivcuda.docs.write") && !generated.equals(text)) {
            Files.writeString(template, generated);
        } else {
            assertEquals(generated, text, "templates/ivcuda.properties' cuda-server section differs from ServerKeys: "
                    + "rerun with -Divcuda.docs.write=true to rewrite it");
        }
        HostConfig asShipped = HostConfig.load(List.of(template));
        assertEquals(HostConfig.defaults().defaultSize(), asShipped.defaultSize());

        // Every commented "#key=value" is a documented default: uncommented, each must be valid.
        String uncommented = Files.readString(template).replaceAll("(?m)^#([a-z][a-z0-9.<>]*=)", "$1");
        Path file = dir.resolve("ivcuda.properties");
        Files.writeString(file, uncommented);
        HostConfig all = HostConfig.load(List.of(file));
        assertEquals(HostConfig.defaults().serverReadyTimeoutMs(), all.serverReadyTimeoutMs());
        assertEquals(HostConfig.defaults().libvirtUri(), all.libvirtUri());

        // Every "#key=value" is a declared key (lifecycle or cuda-server) showing its declared default.
        java.util.Properties shown = new java.util.Properties();
        try (var reader = Files.newBufferedReader(file)) {
            shown.load(reader);
        }
        for (String name : shown.stringPropertyNames()) {
            ConfigKey<?> key = HostConfig.isLifecycleKey(name) ? HostKeys.ALL.find(name) : ServerKeys.ALL.find(name);
            assertNotNull(key, "templates/ivcuda.properties key " + name
                    + " is neither a lifecycle key (HostKeys) nor a cuda-server key (ServerKeys)");
            if (!key.isFamily()) {
                assertEquals(formatted(key, key.defaultValue()), formatted(key, key.parse(shown.getProperty(name))),
                        "templates/ivcuda.properties shows another default for " + name);
            }
        }
        // ... and every key an administrator may set is there: all but the ones the hook writes per VM.
        for (ConfigKey<?> key : HostKeys.ALL.keys()) {
            assertTrue(key.isFamily() || shown.containsKey(key.name()), "templates/ivcuda.properties lacks " + key);
        }
        for (ConfigKey<?> key : ServerKeys.ALL.keys()) {
            assertTrue(ServerKeys.WRITTEN_BY_HOOK.contains(key) || shown.containsKey(key.name()),
                    "templates/ivcuda.properties lacks " + key);
            assertTrue(!HostConfig.isLifecycleKey(key.name()), "cuda-server key " + key + " would be kept from the server");
        }
        assertEquals(all.serverKeys().keySet(), new java.util.TreeSet<>(shown.stringPropertyNames().stream()
                .filter(k -> !HostConfig.isLifecycleKey(k)).toList()));
    }

    @SuppressWarnings("unchecked")
    private static <T> String formatted(ConfigKey<T> key, Object value) {
        return value == null ? null : key.format((T) value);
    }
}
