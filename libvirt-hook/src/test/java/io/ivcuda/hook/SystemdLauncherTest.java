package io.ivcuda.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The systemd launcher against a scripted systemctl/journalctl (CI has no systemd): the unit name,
 * the commands in order, and how a unit that fails is noticed.
 */
class SystemdLauncherTest {
    private static final String UUID = "aeb37efd-0939-422a-87b3-abf8700977b4";
    private static final String UNIT = "ivcuda-server@" + UUID + ".service";

    @TempDir
    Path dir;
    private SystemdLauncher launcher;
    private final InstancePaths paths = InstancePaths.of(UUID, HostConfig.defaults());

    @BeforeEach
    void fakes() throws Exception {
        Path systemctl = dir.resolve("systemctl");
        Files.writeString(systemctl, "#!/bin/sh\necho \"$*\" >> " + dir.resolve("calls") + "\n"
                + "case \"$1\" in\n"
                + "  start) exit $(cat " + dir.resolve("start-status") + " 2>/dev/null || echo 0) ;;\n"
                + "  is-active) state=$(cat " + dir.resolve("state") + "); [ \"$2\" = --quiet ] || echo $state; [ $state = active ] ;;\n"
                + "esac\n");
        Path journalctl = dir.resolve("journalctl");
        Files.writeString(journalctl, "#!/bin/sh\necho \"journal of $*\"\n");
        for (Path p : List.of(systemctl, journalctl)) {
            Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
        Files.writeString(dir.resolve("state"), "active\n");
        launcher = new SystemdLauncher(systemctl.toString(), journalctl.toString(), 4L << 30);
    }

    private List<String> calls() throws Exception {
        return Files.readAllLines(dir.resolve("calls"));
    }

    @Test
    void startsWatchesAndStopsTheInstanceUnit() throws Exception {
        ServerLauncher.Started started = launcher.start(paths);
        // No region file here: the memory limit is the allowance alone.
        assertEquals(List.of("reset-failed " + UNIT, "set-property --runtime " + UNIT + " MemoryMax=" + (4L << 30), "start " + UNIT),
                calls());
        assertNull(started.exitDescription(), "an active unit has not ended");
        assertTrue(launcher.isRunning(paths));

        Files.writeString(dir.resolve("state"), "failed\n");
        String ended = null;
        for (int i = 0; i < 100 && ended == null; i++) {
            ended = started.exitDescription();
            Thread.sleep(20);
        }
        assertEquals("is failed", ended);
        assertFalse(launcher.isRunning(paths));

        launcher.stop(paths);
        assertTrue(calls().contains("stop " + UNIT), calls().toString());
        assertTrue(launcher.logTail(paths, 20).contains("journal of --no-pager -o cat -n 20 -u " + UNIT));
        assertEquals("journalctl -u " + UNIT, launcher.logLocation(paths));
    }

    @Test
    void theMemoryLimitIsTheRegionPlusTheAllowance() throws Exception {
        Path region = dir.resolve("region");
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(region.toFile(), "rw")) {
            f.setLength(1L << 30);
        }
        InstancePaths withRegion = new InstancePaths(UUID, paths.shmemName(), region, paths.doorbellSocket(),
                paths.instanceConfig(), paths.pidfile(), paths.serverLog());
        assertEquals(Long.toString((1L << 30) + (4L << 30)), launcher.memoryMax(withRegion));
        assertEquals("infinity", new SystemdLauncher("systemctl", "journalctl", 0).memoryMax(withRegion));
    }

    @Test
    void theMpsDaemonIsStartedThroughItsUnit() throws Exception {
        assertNull(launcher.ensureMpsDaemon());
        assertEquals(List.of("start ivcuda-mps.service"), calls());
        Files.writeString(dir.resolve("start-status"), "1\n");
        String problem = launcher.ensureMpsDaemon();
        assertTrue(problem != null && problem.startsWith("systemctl start ivcuda-mps.service failed"), problem);
    }

    @Test
    void aUnitThatDoesNotStartIsReported() throws Exception {
        Files.writeString(dir.resolve("start-status"), "1\n");
        HookException e = assertThrows(HookException.class, () -> launcher.start(paths));
        assertTrue(e.getMessage().contains("systemctl start " + UNIT + " failed"), e.getMessage());
    }
}
