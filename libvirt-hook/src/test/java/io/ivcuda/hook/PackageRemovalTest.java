package io.ivcuda.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the host package's removal scripts ask of systemd and of the hook: the deb's prerm
 * (packaging/deb/debian/ivcuda-host.prerm) and the rpm's {@code %preun host} (packaging/rpm/ivcuda.spec), run by
 * {@code sh} as dpkg and rpm run them, with stand-ins that record their calls: {@code systemctl} on PATH (as in
 * {@link BackendHookTest}), and the hook and the provisioner at the absolute paths the scripts name, rewritten to the
 * stand-ins, as is {@code /run/systemd/system} (present: systemd runs). Nothing of the host is touched.
 */
class PackageRemovalTest {
    static final String RELAYS = "systemctl stop ivcuda-relay@*.service";

    @TempDir
    Path dir;

    /** The prerm as dpkg has it, or the rpm's %preun host scriptlet. */
    static String debPrerm() throws Exception {
        return Files.readString(Path.of("..", "packaging", "deb", "debian", "ivcuda-host.prerm"));
    }

    static String rpmPreun() throws Exception {
        List<String> lines = Files.readAllLines(Path.of("..", "packaging", "rpm", "ivcuda.spec"));
        int start = lines.indexOf("%preun host");
        assertTrue(start >= 0, "the spec has a %preun host");
        StringBuilder body = new StringBuilder();
        for (String line : lines.subList(start + 1, lines.size())) {
            if (line.startsWith("%")) {
                break;
            }
            body.append(line).append('\n');
        }
        return body.toString();
    }

    /**
     * Runs {@code script} with {@code args} under the stand-ins; systemd "runs" when {@code systemd}; returns the
     * calls, one a line, in order.
     */
    List<String> run(String script, boolean systemd, String... args) throws Exception {
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Path calls = dir.resolve("calls");
        Files.deleteIfExists(calls);
        for (String name : List.of("systemctl", "50-ivcuda", "ivshmem-provisioner")) {
            Path standIn = bin.resolve(name);
            Files.writeString(standIn, "#!/bin/sh\necho \"" + name + " $*\" >> '" + calls + "'\nexit 0\n");
            assertTrue(standIn.toFile().setExecutable(true));
        }
        Path systemdDir = dir.resolve("run-systemd-system");
        if (systemd) {
            Files.createDirectories(systemdDir);
        } else {
            Files.deleteIfExists(systemdDir);
        }
        String rewritten = rewrite(script, "/run/systemd/system", systemdDir.toString());
        rewritten = rewrite(rewritten, "/usr/libexec/ivcuda/50-ivcuda", bin.resolve("50-ivcuda").toString());
        rewritten = rewrite(rewritten, "/usr/bin/ivshmem-provisioner", bin.resolve("ivshmem-provisioner").toString());
        // no SysV init script here
        rewritten = rewritten.replace("/etc/init.d/ivcuda-provisioner", dir.resolve("no-init-script").toString());
        Path file = dir.resolve("script");
        Files.writeString(file, rewritten);
        List<String> command = new java.util.ArrayList<>(List.of("sh", file.toString()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("PATH", bin + ":" + System.getenv("PATH"));
        Process p = pb.start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), output);
        return Files.exists(calls) ? Files.readAllLines(calls) : List.of();
    }

    /** {@code from} replaced by {@code to}; the script must name it (else the stand-in would test nothing). */
    static String rewrite(String script, String from, String to) {
        assertTrue(script.contains(from), "the script names " + from);
        return script.replace(from, to);
    }

    /** The relays' units are stopped by name where systemd runs, before --stop-all sees what is left. */
    static void stopsTheRelayUnitsThenTheRest(List<String> calls) {
        int relays = calls.indexOf(RELAYS);
        int stopAll = calls.indexOf("50-ivcuda --stop-all");
        assertTrue(relays >= 0, "systemctl was asked to stop every ivcuda-relay@ instance: " + calls);
        assertTrue(stopAll > relays, "then the hook's --stop-all: " + calls);
        assertTrue(calls.contains("ivshmem-provisioner uninstall"), calls.toString());
    }

    @Test
    void theDebsPrermStopsTheRelayUnitsOnRemove() throws Exception {
        stopsTheRelayUnitsThenTheRest(run(debPrerm(), true, "remove"));
        List<String> noSystemd = run(debPrerm(), false, "remove");
        assertTrue(noSystemd.stream().noneMatch(c -> c.startsWith("systemctl")), "no systemd, no systemctl: " + noSystemd);
        assertTrue(noSystemd.contains("50-ivcuda --stop-all"), "--stop-all stops the directly started relays: " + noSystemd);
        assertEquals(List.of(), run(debPrerm(), true, "upgrade", "0.2.0"), "an upgrade stops nothing");
    }

    @Test
    void theRpmsPreunStopsTheRelayUnitsOnErase() throws Exception {
        List<String> calls = run(rpmPreun(), true, "0");
        stopsTheRelayUnitsThenTheRest(calls);
        assertTrue(calls.contains("systemctl disable --now ivcuda-provisioner.service"), calls.toString());
        List<String> noSystemd = run(rpmPreun(), false, "0");
        assertTrue(noSystemd.stream().noneMatch(c -> c.startsWith("systemctl")), "no systemd, no systemctl: " + noSystemd);
        assertTrue(noSystemd.contains("50-ivcuda --stop-all"), noSystemd.toString());
        assertEquals(List.of(), run(rpmPreun(), true, "1"), "an upgrade stops nothing");
    }
}
