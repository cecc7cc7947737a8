package io.ivcuda.backend;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The agent's note of each server it started ({@code run.dir/slotK.server}: pid and start time), removed when the
 * server is gone. An agent that was killed leaves its servers running on their slots' regions; the next agent
 * stops those first (a pid is trusted only with the same start time, so a reused pid is never signalled), so
 * that two servers never serve one region.
 */
final class ChildRecords {
    private static final Logger LOG = LogManager.getLogger(ChildRecords.class);
    private static final String SUFFIX = ".server";

    private final Path dir;

    ChildRecords(Path dir) {
        this.dir = dir;
    }

    void record(int slot, ProcessHandle child) throws IOException {
        Instant started = child.info().startInstant().orElse(Instant.EPOCH);
        Files.writeString(file(slot), child.pid() + " " + started.toEpochMilli() + "\n", StandardCharsets.US_ASCII);
    }

    void forget(int slot) {
        try {
            Files.deleteIfExists(file(slot));
        } catch (IOException e) {
            LOG.warn("{} not removed: {}", file(slot), e.toString());
        }
    }

    private Path file(int slot) {
        return dir.resolve("slot" + slot + SUFFIX);
    }

    /** Stops (SIGTERM, then SIGKILL after {@code timeoutMs}) every server a previous agent left, and forgets it. */
    void stopOrphans(long timeoutMs) throws IOException {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try (DirectoryStream<Path> records = Files.newDirectoryStream(dir, "slot*" + SUFFIX)) {
            for (Path record : records) {
                orphan(record).ifPresent(p -> stop(p, record, timeoutMs));
                Files.deleteIfExists(record);
            }
        }
    }

    private static Optional<ProcessHandle> orphan(Path record) {
        try {
            String[] words = Files.readString(record, StandardCharsets.US_ASCII).trim().split(" ");
            long pid = Long.parseLong(words[0]);
            long startedMs = Long.parseLong(words[1]);
            return ProcessHandle.of(pid).filter(ProcessHandle::isAlive)
                    .filter(p -> p.info().startInstant().map(Instant::toEpochMilli).orElse(-1L) == startedMs);
        } catch (IOException | RuntimeException e) {
            LOG.warn("{}: unreadable ({}), ignored", record, e.toString());
            return Optional.empty();
        }
    }

    private static void stop(ProcessHandle p, Path record, long timeoutMs) {
        LOG.warn("a previous agent's server pid {} ({}) still runs: stopping it before serving its slot", p.pid(), record);
        p.destroy();
        try {
            p.onExit().get(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            p.destroyForcibly();
        }
    }
}
