package io.ivcuda.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent's records of its interrupt daemons: a daemon a killed agent left (a stand-in, {@code sleep}) is stopped
 * by the next agent, never a process that only reuses its pid; the record goes with the daemon.
 */
class ChildRecordsTest {
    @TempDir
    Path dir;
    private final List<Process> started = new ArrayList<>();

    @AfterEach
    void cleanUp() {
        started.forEach(Process::destroyForcibly);
    }

    private Process sleeper() throws Exception {
        Process p = new ProcessBuilder("sleep", "60").start();
        started.add(p);
        return p;
    }

    private static void await(String what, java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within 10 s: " + what);
            }
            Thread.sleep(20);
        }
    }

    @Test
    void aPreviousAgentsInterruptDaemonIsStoppedAndForgottenByTheNext() throws Exception {
        Process daemon = sleeper();
        new ChildRecords(dir).recordInterrupts(2, daemon.toHandle());
        Path record = dir.resolve("slot2.irqd");
        assertTrue(Files.readString(record).startsWith(daemon.pid() + " "), "pid and start time recorded");

        new ChildRecords(dir).stopOrphans(2000); // the next agent
        assertTrue(daemon.waitFor(5, TimeUnit.SECONDS), "the stale daemon was stopped");
        assertEquals(143, daemon.exitValue(), "by SIGTERM first (the daemon gives its device back on SIGTERM)");
        assertFalse(Files.exists(record));
    }

    @Test
    void aRecordWhosePidRunsWithAnotherStartTimeIsNotSignalled() throws Exception {
        Process other = sleeper();
        Path record = dir.resolve("slot0.irqd");
        long started = other.toHandle().info().startInstant().orElseThrow().toEpochMilli();
        Files.writeString(record, other.pid() + " " + (started - 60_000) + "\n", StandardCharsets.US_ASCII);

        new ChildRecords(dir).stopOrphans(2000);
        assertFalse(other.waitFor(300, TimeUnit.MILLISECONDS), "a reused pid is left alone");
        assertFalse(Files.exists(record), "and the stale record is forgotten");
    }

    @Test
    void theRecordGoesWithItsDaemonButNotWithTheSlotsNextOne() throws Exception {
        ChildRecords records = new ChildRecords(dir);
        Path record = dir.resolve("slot1.irqd");
        Process first = sleeper();
        records.recordInterrupts(1, first.toHandle());
        Process second = sleeper();
        records.recordInterrupts(1, second.toHandle());
        first.destroy();
        first.waitFor();
        Thread.sleep(200);
        assertTrue(Files.readString(record).startsWith(second.pid() + " "), "the first's exit keeps the second's record");
        second.destroy();
        await("the record removed after the daemon exited", () -> !Files.exists(record));
    }

    @Test
    void theAgentStartsItsDaemonToExitWithItAndRecordsIt() throws Exception {
        // a stand-in for ivcuda-guest-irqd: notes its arguments, "listens" (creates the socket path), waits
        Path arguments = dir.resolve("arguments");
        Path script = dir.resolve("irqd");
        Files.writeString(script, "#!/bin/sh\necho \"$@\" >" + arguments + "\nwhile [ $# -gt 0 ]; do [ \"$1\" = --socket ] && : >\"$2\"; shift; done\n"
                + "exec sleep 60\n");
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwx------"));
        AgentConfig config = AgentConfig.load(List.of(), List.of(AgentKeys.IRQD_COMMAND.name() + "=" + script,
                AgentKeys.RUN_DIR.name() + "=" + dir, AgentKeys.SERVER_COMMAND.name() + "=true"));
        InterruptDaemon daemon = InterruptDaemon.start(config, new ChildRecords(dir), 3,
                new IvshmemDevice("0000:00:07.0", dir.resolve("resource2"), 1 << 20));
        ProcessHandle handle = ProcessHandle.of(daemon.pid()).orElseThrow();
        try {
            assertTrue(Files.readString(arguments).contains("--device 0000:00:07.0 --socket " + dir.resolve("slot3-irq.sock")
                    + " --bind --exit-with-parent=" + ProcessHandle.current().pid()), Files.readString(arguments));
            assertTrue(Files.readString(dir.resolve("slot3.irqd")).startsWith(daemon.pid() + " "));

            new ChildRecords(dir).stopOrphans(2000); // as if this agent had been killed and a new one started
            handle.onExit().get(5, TimeUnit.SECONDS);
            assertFalse(handle.isAlive());
        } finally {
            handle.destroyForcibly();
        }
    }
}
