package io.ivcuda.hook;

import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import io.ivcuda.common.ServerProcesses;
import io.ivcuda.common.config.HostKeys;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Starts the server as a detached process for hosts without systemd: a new session ({@code setsid}),
 * stdin from /dev/null and stdout/stderr appended to its log file, so it holds none of the hook's pipes
 * (libvirt waits for those to close). Runs as {@code server.user} through {@code setpriv} when the hook
 * runs as someone else. The server writes its pidfile once ready; stopping finds it by command line.
 */
final class DirectLauncher implements ServerLauncher {
    private static final Logger LOG = LogManager.getLogger(DirectLauncher.class);

    /** Starts the line the launcher writes into the log before each start. */
    static final String START_MARK = "--- ";

    /** The limits the shell sets before it execs the server: no core file (soft and hard), umask 027. */
    static final String SANDBOX_SHELL = "ulimit -c 0 && umask 027 && ";

    private final HostConfig host;

    DirectLauncher(HostConfig host) {
        this.host = host;
    }

    /**
     * The server's arguments: only the instance configuration, which carries the host file's server
     * keys too (the server refuses the lifecycle keys it does not know; see Hook#writeInstanceConfig).
     */
    static List<String> serverArguments(InstancePaths paths) {
        return List.of("--config", paths.instanceConfig().toString());
    }

    @Override
    public Started start(InstancePaths paths) throws HookException {
        List<String> command = new ArrayList<>();
        command.add("setsid");
        // What systemd's unit does that a plain process can have too (docs/threat-model.md): no new
        // privileges (no setuid program regains any), the unit's system-call allow-list, no core dumps
        // (they would hold guest data), files not readable by others.
        command.add("setpriv");
        if (!host.serverUser().equals(System.getProperty("user.name"))) {
            command.addAll(List.of("--reuid=" + host.serverUser(), "--regid=" + primaryGroup(host.serverUser()), "--init-groups"));
        }
        command.addAll(List.of("--no-new-privs", "--"));
        command.addAll(syscallFilter());
        // server.command may carry its own arguments (java -jar …): let sh split it, then exec so the pid stays.
        command.addAll(List.of("sh", "-c", SANDBOX_SHELL + "exec " + host.serverCommand() + " \"$@\"", "ivcuda-server"));
        command.addAll(serverArguments(paths));
        try {
            Files.createDirectories(paths.serverLog().getParent());
            Files.writeString(paths.serverLog(), START_MARK + java.time.Instant.now() + " starting: " + String.join(" ", command) + "\n",
                    StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
            ProcessBuilder builder = new ProcessBuilder(command)
                    .redirectInput(new File("/dev/null"))
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(paths.serverLog().toFile()))
                    .redirectErrorStream(true);
            Process process = builder.start();
            LOG.info("started the server of {} as pid {} (log {})", paths.domainUuid(), process.pid(), paths.serverLog());
            return () -> process.isAlive() ? null : "exited with status " + process.exitValue();
        } catch (IOException e) {
            throw new HookException("cannot start the cuda-server (" + host.serverCommand() + "): " + e.getMessage(), e);
        }
    }

    /**
     * The program that loads the unit's system-call allow-list, then execs the rest of the command
     * (ivcuda-syscall-filter); nothing, said in the log, when it is not configured or not installed.
     * Without libseccomp it runs the server unfiltered and says so in the server's log.
     */
    List<String> syscallFilter() {
        String filter = host.serverSyscallFilter();
        if (filter.isEmpty()) {
            return List.of();
        }
        if (!Files.isExecutable(Path.of(filter))) {
            LOG.warn("{} {} is not an executable program: the server runs without a system-call filter",
                    HostKeys.SERVER_SYSCALL_FILTER.name(), filter);
            return List.of();
        }
        return List.of(filter, "--");
    }

    private static String primaryGroup(String user) throws HookException {
        try {
            Process id = new ProcessBuilder("id", "-g", user).redirectErrorStream(true).start();
            String out = new String(id.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!id.waitFor(5, TimeUnit.SECONDS) || id.exitValue() != 0) {
                throw new HookException("host configuration: " + HostKeys.SERVER_USER.name() + "='" + user + "': no such user");
            }
            return out;
        } catch (IOException e) {
            throw new HookException("cannot look up " + HostKeys.SERVER_USER.name() + " '" + user + "': " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HookException("interrupted");
        }
    }

    @Override
    public boolean isRunning(InstancePaths paths) {
        return !ServerProcesses.find(paths.instanceConfig()).isEmpty();
    }

    @Override
    public void stop(InstancePaths paths) {
        List<Long> pids = ServerProcesses.find(paths.instanceConfig());
        if (!pids.isEmpty()) {
            LOG.info("stopping the server of {} (pid {})", paths.domainUuid(), pids);
            ServerProcesses.terminate(pids, host.serverStopTimeoutMs());
        }
    }

    /** The last lines of the server's log since its latest start: earlier starts of the domain are no news. */
    @Override
    public String logTail(InstancePaths paths, int lines) {
        try {
            List<String> all = Files.readAllLines(paths.serverLog(), StandardCharsets.UTF_8);
            int since = 0;
            for (int i = all.size() - 1; i >= 0; i--) {
                if (all.get(i).startsWith(START_MARK)) {
                    since = i + 1;
                    break;
                }
            }
            return String.join("\n", all.subList(Math.max(since, all.size() - lines), all.size()));
        } catch (IOException | RuntimeException e) {
            return "(no server log at " + paths.serverLog() + ")";
        }
    }

    @Override
    public String logLocation(InstancePaths paths) {
        return paths.serverLog().toString();
    }
}
