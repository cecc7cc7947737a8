package io.ivcuda.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the direct launcher (hosts without systemd) imposes on the server, read back from the launched
 * process itself: no_new_privs, no core dumps, umask 027. The stand-in server reports its own
 * /proc/self/status and /proc/self/limits, so a launcher that forgot one of them fails here.
 */
class DirectLauncherSandboxTest {
    private static final String UUID = "5f0c7a1e-3a51-4c39-9d6e-2c1d2b0e8f11";

    @TempDir
    Path dir;

    @Test
    void theLaunchedServerHasNoNewPrivilegesNoCoreDumpsAndUmask027() throws Exception {
        Path report = dir.resolve("report");
        Path server = dir.resolve("server");
        // grep, not cat: what the shell that became the "server" inherited, as its children see it.
        Files.writeString(server, "#!/bin/sh\n{ grep NoNewPrivs /proc/self/status; grep 'Max core file size' /proc/self/limits; umask; }"
                + " > " + report + ".tmp && mv " + report + ".tmp " + report + "\n");
        Files.setPosixFilePermissions(server, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path config = dir.resolve("ivcuda.properties");
        Files.writeString(config, "runtime.dir=" + dir.resolve("run") + "\nshm.dir=" + dir.resolve("shm") + "\nlog.dir=" + dir.resolve("log")
                + "\nserver.user=" + System.getProperty("user.name") + "\nserver.launch=direct\nserver.command=" + server + "\n");
        HostConfig host = HostConfig.load(List.of(config));

        new DirectLauncher(host).start(InstancePaths.of(UUID, host));
        for (int i = 0; i < 250 && !Files.exists(report); i++) {
            Thread.sleep(20);
        }
        List<String> lines = Files.readAllLines(report);
        assertEquals(3, lines.size(), lines.toString());
        assertEquals("NoNewPrivs:\t1", lines.get(0));
        // "Max core file size  0  0  bytes": soft and hard limit both 0.
        assertTrue(lines.get(1).matches("Max core file size\\s+0\\s+0\\s+bytes\\s*"), lines.get(1));
        assertEquals("0027", lines.get(2));
    }
}
