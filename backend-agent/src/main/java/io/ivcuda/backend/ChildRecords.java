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
 * The agent's note of each server it started ({@code run.dir/slotK.server}) and of each slot's interrupt daemon
 * ({@code run.dir/slotK.irqd}): pid and start time (the kernel's, /proc/PID/stat field 22, as ProcessHandle reads
 * it), removed when the child is gone. An agent that was killed leaves its servers running on their slots'
 * regions, and may leave a daemon holding its slot's device (the daemons ask the kernel to stop them with the
 * agent, {@code --exit-with-parent}; this covers a daemon that did not); the next agent stops those first (a pid
 * is trusted only with the same start time, so a reused pid is never signalled), so that two servers never serve
 * one region and the next daemon of a slot finds its device free.
 */
final class ChildRecords {
    private static final Logger LOG = LogManager.getLogger(ChildRecords.class);
    private static final String SUFFIX = ".server";
    private static final String INTERRUPTS = ".irqd";

    private final Path dir;

    ChildRecords(Path dir) {
        this.dir = dir;
    }

    void record(int slot, ProcessHandle child) throws IOException {
        write(file(slot), child);
    }

    /** Notes slot {@code slot}'s interrupt daemon; the note goes when the daemon has exited. */
    void recordInterrupts(int slot, ProcessHandle daemon) throws IOException {
        Path record = dir.resolve("slot" + slot + INTERRUPTS);
        write(record, daemon);
        daemon.onExit().thenRun(() -> forgetIf(record, daemon.pid()));
    }

    private static synchronized void write(Path record, ProcessHandle child) throws IOException {
        Instant started = child.info().startInstant().orElse(Instant.EPOCH);
        Files.writeString(record, child.pid() + " " + started.toEpochMilli() + "\n", StandardCharsets.US_ASCII);
    }

    /** Removes {@code record} if it still names {@code pid} (not the slot's next daemon). */
    private static synchronized void forgetIf(Path record, long pid) {
        try {
            String[] words = Files.readString(record, StandardCharsets.US_ASCII).trim().split(" ");
            if (words[0].equals(Long.toString(pid))) {
                Files.deleteIfExists(record);
            }
        } catch (java.nio.file.NoSuchFileException e) {
            // already gone
        } catch (IOException e) {
            LOG.warn("{} not removed: {}", record, e.toString());
        }
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

    /**
     * Stops (SIGTERM, then SIGKILL after {@code timeoutMs}) every server a previous agent left, then every interrupt
     * daemon (which gives its device back as it exits), and forgets them.
     */
    void stopOrphans(long timeoutMs) throws IOException {
        if (!Files.isDirectory(dir)) {
            return;
        }
        for (String suffix : new String[] {SUFFIX, INTERRUPTS}) {
            String what = suffix.equals(SUFFIX) ? "server" : "interrupt daemon";
            try (DirectoryStream<Path> records = Files.newDirectoryStream(dir, "slot*" + suffix)) {
                for (Path record : records) {
                    orphan(record).ifPresent(p -> stop(p, what, record, timeoutMs));
                    Files.deleteIfExists(record);
                }
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

    private static void stop(ProcessHandle p, String what, Path record, long timeoutMs) {
        LOG.warn("a previous agent's {} pid {} ({}) still runs: stopping it before serving its slot", what, p.pid(), record);
        p.destroy();
        try {
            p.onExit().get(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            p.destroyForcibly();
            try {
                p.onExit().get(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS);
            } catch (Exception stillThere) {
                LOG.warn("{} pid {} did not exit after SIGKILL within {} ms", what, p.pid(), timeoutMs);
            }
        }
    }
}
