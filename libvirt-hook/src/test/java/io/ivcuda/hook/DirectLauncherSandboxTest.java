package io.ivcuda.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
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

    /**
     * server.memory.max bounds a directly launched JVM: a real java as the "server" prints the heap bound its
     * ergonomics chose from it (a quarter of 1 GiB), into the server's log.
     */
    @Test
    void theLaunchedJvmsHeapIsSizedFromServerMemoryMax() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path config = dir.resolve("ivcuda.properties");
        Files.writeString(config, "runtime.dir=" + dir.resolve("run") + "\nshm.dir=" + dir.resolve("shm") + "\nlog.dir=" + dir.resolve("log")
                + "\nserver.user=" + System.getProperty("user.name") + "\nserver.launch=direct\nserver.syscall.filter="
                + "\nserver.memory.max=1G\nserver.command=" + java + " -XX:+PrintFlagsFinal -version\n");
        HostConfig host = HostConfig.load(List.of(config));
        InstancePaths paths = InstancePaths.of(UUID, host);

        new DirectLauncher(host).start(paths);
        String heap = null;
        for (int i = 0; i < 1500 && heap == null; i++) {
            Thread.sleep(20);
            heap = Files.exists(paths.serverLog()) ? Files.readAllLines(paths.serverLog()).stream()
                    .filter(l -> l.matches("\\s*size_t MaxHeapSize\\s.*")).findFirst().orElse(null) : null;
        }
        assertTrue(heap != null, "the JVM printed its flags: " + (Files.exists(paths.serverLog()) ? Files.readString(paths.serverLog()) : ""));
        assertTrue(heap.matches("\\s*size_t MaxHeapSize\\s+= 268435456\\s.*"), heap);
        assertEquals("", DirectLauncher.jvmMemoryOptions(0), "server.memory.max=0: no bound");
    }

    /**
     * The server unit's system-call allow-list, loaded by ivcuda-syscall-filter (host-tools) before the
     * server runs: the launched process reports seccomp mode 2, a call the unit denies (ptrace) fails
     * with EPERM, and personality(ADDR_NO_RANDOMIZE), which the integrity oracle needs, still works.
     */
    @Test
    void theLaunchedServerRunsUnderTheUnitsSystemCallFilter() throws Exception {
        Path hostTools = Path.of("..", "host-tools", "target").toAbsolutePath().normalize();
        Path filter = hostTools.resolve("ivcuda-syscall-filter");
        Path probe = hostTools.resolve("tests/syscall_probe");
        Assumptions.assumeTrue(Files.isExecutable(filter) && Files.isExecutable(probe),
                "host-tools not built (make -C host-tools check): " + filter);
        Process check = new ProcessBuilder(filter.toString(), "--require", "--", "true").redirectErrorStream(true).start();
        String why = new String(check.getInputStream().readAllBytes()).trim();
        Assumptions.assumeTrue(check.waitFor() == 0, "no libseccomp here: " + why);
        Path report = dir.resolve("report");
        Path server = dir.resolve("server");
        Files.writeString(server, "#!/bin/sh\n" + probe + " > " + report + ".tmp && mv " + report + ".tmp " + report + "\n");
        Files.setPosixFilePermissions(server, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path config = dir.resolve("ivcuda.properties");
        Files.writeString(config, "runtime.dir=" + dir.resolve("run") + "\nshm.dir=" + dir.resolve("shm") + "\nlog.dir=" + dir.resolve("log")
                + "\nserver.user=" + System.getProperty("user.name") + "\nserver.launch=direct\nserver.command=" + server
                + "\nserver.syscall.filter=" + filter + "\n");
        HostConfig host = HostConfig.load(List.of(config));

        new DirectLauncher(host).start(InstancePaths.of(UUID, host));
        for (int i = 0; i < 250 && !Files.exists(report); i++) {
            Thread.sleep(20);
        }
        // seccomp mode 2 (a filter), ptrace refused with EPERM (1), personality allowed (0)
        assertEquals(List.of("seccomp=2 ptrace=1 personality=0"), Files.readAllLines(report));
    }
}
