package io.ivcuda.hook;

import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Supervision by systemd: {@code ivcuda-server@U.service} (templates/ivcuda-server@.service) runs the
 * server with the host and instance configurations; its log is in the journal. systemd never calls
 * libvirt, so asking it from a hook cannot deadlock.
 */
final class SystemdLauncher implements ServerLauncher {
    private static final Logger LOG = LogManager.getLogger(SystemdLauncher.class);
    private static final long COMMAND_TIMEOUT_MS = 15_000;
    /** The MPS control daemon's unit (templates/ivcuda-mps.service), started on demand. */
    static final String MPS_UNIT = "ivcuda-mps.service";

    private final String systemctl;
    private final String journalctl;
    private final long memoryAllowance;

    SystemdLauncher(HostConfig host) {
        this("systemctl", "journalctl", host.serverMemoryMax());
    }

    /** With other programs in place of systemctl and journalctl (tests). */
    SystemdLauncher(String systemctl, String journalctl, long memoryAllowance) {
        this.systemctl = systemctl;
        this.journalctl = journalctl;
        this.memoryAllowance = memoryAllowance;
    }

    /**
     * The unit's MemoryMax for this VM: the region (its pages the server touches first are charged to
     * the server's cgroup, and a guest decides which those are) plus {@code server.memory.max} for the
     * JVM and the driver; "infinity" when that key is 0.
     */
    String memoryMax(InstancePaths paths) {
        if (memoryAllowance <= 0) {
            return "infinity";
        }
        long region;
        try {
            region = java.nio.file.Files.size(paths.regionFile());
        } catch (IOException e) {
            region = 0;
        }
        return Long.toString(Math.addExact(region, memoryAllowance));
    }

    @Override
    public Started start(InstancePaths paths) throws HookException {
        // A failed earlier run would make systemd refuse or rate-limit: clear it first.
        run(systemctl, "reset-failed", paths.systemdUnit());
        // Runtime property (a drop-in under /run, gone at reboot): the unit file's MemoryMax is for
        // starts by hand. A systemd that refuses it leaves the unit's own value: say so, start anyway.
        Result memory = run(systemctl, "set-property", "--runtime", paths.systemdUnit(), "MemoryMax=" + memoryMax(paths));
        if (memory.status != 0) {
            LOG.warn("systemctl set-property {} MemoryMax: {} (the unit's own MemoryMax applies)", paths.systemdUnit(),
                    memory.output.trim());
        }
        Result result = run(systemctl, "start", paths.systemdUnit());
        if (result.status != 0) {
            throw new HookException("systemctl start " + paths.systemdUnit() + " failed", result.output.trim());
        }
        LOG.info("started {}", paths.systemdUnit());
        long[] lastCheck = {0};
        String[] ended = {null};
        return () -> {
            // systemctl is a process per call: ask at most twice a second.
            long now = System.nanoTime();
            if (ended[0] == null && now - lastCheck[0] > 500_000_000L) {
                lastCheck[0] = now;
                String state = run(systemctl, "is-active", paths.systemdUnit()).output.trim();
                if (!state.equals("active") && !state.equals("activating")) {
                    ended[0] = "is " + state;
                }
            }
            return ended[0];
        };
    }

    /** {@code systemctl start} of a running unit does nothing, so this is safe at every shared VM's start. */
    @Override
    public String ensureMpsDaemon() {
        Result result = run(systemctl, "start", MPS_UNIT);
        return result.status == 0 ? null : "systemctl start " + MPS_UNIT + " failed: " + result.output.trim();
    }

    /** Nothing: under systemd the package's removal script stops ivcuda-mps.service itself. */
    @Override
    public boolean stopMpsDaemon(java.io.PrintStream out) {
        return true;
    }

    @Override
    public boolean isRunning(InstancePaths paths) {
        return run(systemctl, "is-active", "--quiet", paths.systemdUnit()).status == 0;
    }

    @Override
    public void stop(InstancePaths paths) {
        Result result = run(systemctl, "stop", paths.systemdUnit());
        if (result.status != 0) {
            LOG.warn("systemctl stop {}: {}", paths.systemdUnit(), result.output.trim());
        }
    }

    /** The unit's journal since its latest start (its invocation), not earlier starts of the domain. */
    @Override
    public String logTail(InstancePaths paths, int lines) {
        List<String> command = new ArrayList<>(List.of(journalctl, "--no-pager", "-o", "cat", "-n", Integer.toString(lines),
                "-u", paths.systemdUnit()));
        Result invocation = run(systemctl, "show", "-p", "InvocationID", "--value", paths.systemdUnit());
        String id = invocation.output.trim();
        if (invocation.status == 0 && id.matches("[0-9a-f]{32}")) {
            command.add("_SYSTEMD_INVOCATION_ID=" + id);
        }
        return run(command.toArray(String[]::new)).output;
    }

    @Override
    public String logLocation(InstancePaths paths) {
        return "journalctl -u " + paths.systemdUnit();
    }

    /** The systemctl this launcher calls (the back-ends' relays go through the same). */
    String systemctl() {
        return systemctl;
    }

    record Result(int status, String output) {
    }

    static Result run(String... command) {
        try {
            Process process = new ProcessBuilder(new ArrayList<>(List.of(command)))
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                    .redirectErrorStream(true).start();
            byte[] out = process.getInputStream().readNBytes(64 * 1024);
            if (!process.waitFor(COMMAND_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                return new Result(-1, String.join(" ", command) + " did not finish within " + COMMAND_TIMEOUT_MS + " ms");
            }
            return new Result(process.exitValue(), new String(out, StandardCharsets.UTF_8));
        } catch (IOException e) {
            return new Result(-1, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(-1, "interrupted");
        }
    }
}
