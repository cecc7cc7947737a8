package io.ivcuda.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The region's magic number is written once, in api/region.layout; everything else takes it from
 * the generated code (ivc_region.h, io.ivcuda.wire) or waits with ivcuda-region-wait. A copy
 * anywhere else in the tree — a script reading the header, a tool with its own constant — fails
 * this test, naming the file and line.
 */
class MagicOutsideTheLayoutTest {
    private static final Path LAYOUT = Path.of("api", "region.layout");
    private static final long MAX_FILE = 4L << 20;

    private static Path repo() {
        return Path.of(System.getProperty("ivcuda.repo", "..")).toAbsolutePath().normalize();
    }

    /** The tree's files: git's list where there is one (a clone), else every file outside build output. */
    private static List<Path> files(Path root) throws IOException, InterruptedException {
        if (Files.isDirectory(root.resolve(".git")) || Files.isRegularFile(root.resolve(".git"))) {
            Process git = new ProcessBuilder("git", "-C", root.toString(), "ls-files", "-z").redirectErrorStream(false).start();
            byte[] out = git.getInputStream().readAllBytes();
            if (git.waitFor() == 0) {
                List<Path> files = new ArrayList<>();
                for (String name : new String(out, StandardCharsets.UTF_8).split("\0")) {
                    if (!name.isEmpty()) {
                        files.add(Path.of(name));
                    }
                }
                return files;
            }
        }
        try (Stream<Path> walk = Files.walk(root)) {
            return walk.filter(Files::isRegularFile).map(root::relativize)
                    .filter(p -> p.getNameCount() > 0 && !p.getName(0).toString().equals(".git"))
                    .filter(p -> java.util.stream.IntStream.range(0, p.getNameCount())
                            .noneMatch(i -> p.getName(i).toString().equals("target")))
                    .toList();
        }
    }

    @Test
    void theMagicNumberIsWrittenOnlyInTheLayout() throws Exception {
        Path root = repo();
        ApiDescription api = ApiDescription.load(root.resolve("api/cuda-driver.api"));
        String magic = Long.toHexString(api.layout("header").value("MAGIC").value()).toLowerCase(Locale.ROOT);
        List<Path> files = files(root);
        assertTrue(files.contains(LAYOUT), "the tree was read: " + files.size() + " files");
        List<String> copies = new ArrayList<>();
        for (Path file : files) {
            Path full = root.resolve(file);
            if (file.equals(LAYOUT) || !Files.isRegularFile(full) || Files.size(full) > MAX_FILE) {
                continue;
            }
            byte[] bytes = Files.readAllBytes(full);
            String[] lines = new String(bytes, StandardCharsets.ISO_8859_1).toLowerCase(Locale.ROOT).split("\n", -1);
            for (int i = 0; i < lines.length; i++) {
                if (lines[i].contains(magic)) {
                    copies.add(file + ":" + (i + 1));
                }
            }
        }
        assertEquals(List.of(), copies, "the magic 0x" + magic + " outside " + LAYOUT
                + ": use IVC_MAGIC (ivc_region.h), HeaderFlyweight.MAGIC, or ivcuda-region-wait");
    }
}
