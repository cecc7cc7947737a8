package io.ivcuda.common.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * A message that names a configuration key takes the name from its declaration ({@code
 * ServerKeys.X.name()}, {@code HostKeys.X.name()}), never spells it by hand (issue 11): a renamed key
 * then renames every message, and a message cannot name a key that does not exist. Reads every main
 * source of the repository's modules for string literals holding a declared key's name.
 */
class KeyNamesInMessagesTest {
    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    private static final Pattern LITERAL = Pattern.compile("\"((?:[^\"\\\\]|\\\\.)*)\"");
    /**
     * Where a literal must stay: picocli's annotations take compile-time constants only (a key's name
     * is a method's answer), so the manual pages' texts spell the keys they mention.
     */
    private static final Map<String, String> ANNOTATIONS_ONLY = Map.of(
            "cuda-server/src/main/java/io/ivcuda/server/Main.java", "picocli @Command texts",
            "ivshmem-provisioner/src/main/java/io/ivcuda/provisioner/ProvisionerMain.java", "picocli @Command and @Option texts",
            "libvirt-hook/src/main/java/io/ivcuda/hook/HookMain.java", "picocli @Command texts");

    @Test
    void noMainSourceSpellsAKeyNameByHand() throws IOException {
        List<String> names = new ArrayList<>();
        for (KeySet set : List.of(ServerKeys.ALL, HostKeys.ALL)) {
            for (ConfigKey<?> k : set.keys()) {
                names.add(k.name());
            }
        }
        List<Pattern> keys = names.stream()
                // one-word keys (gpu, mode, backend) are ordinary words in messages too
                .filter(n -> n.contains("."))
                .map(n -> Pattern.compile("(?<![\\w.])" + Pattern.quote(n) + "(?![\\w.])")).toList();
        List<String> found = new ArrayList<>();
        List<Path> sources;
        try (Stream<Path> files = Files.walk(REPO, 12)) {
            sources = files.filter(p -> p.toString().endsWith(".java") && p.toString().contains("/src/main/java/")
                    && !p.toString().contains("/target/") && !p.getFileName().toString().endsWith("Keys.java")).toList();
        }
        assertTrue(sources.size() > 100, "the modules' sources found from " + REPO + ": " + sources.size());
        for (Path p : sources) {
            String relative = REPO.relativize(p).toString();
            if (ANNOTATIONS_ONLY.containsKey(relative)) {
                continue;
            }
            List<String> lines = Files.readAllLines(p);
            for (int i = 0; i < lines.size(); i++) {
                Matcher m = LITERAL.matcher(lines.get(i));
                while (m.find()) {
                    for (Pattern k : keys) {
                        if (k.matcher(m.group(1)).find()) {
                            found.add(relative + ":" + (i + 1) + ": " + lines.get(i).strip());
                        }
                    }
                }
            }
        }
        assertEquals(List.of(), found, "use the key's declaration (ServerKeys.X.name(), HostKeys.X.name())");
    }
}
