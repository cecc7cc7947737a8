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

    /** The JVM's environment variable for options the {@code java} launcher adds before its command line's. */
    static final String JDK_JAVA_OPTIONS = "JDK_JAVA_OPTIONS";

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
        command.addAll(asServerUser());
        // the unit's system-call allow-list for the server (docs/threat-model.md), loaded before it runs
        command.addAll(syscallFilter());
        // server.command may carry its own arguments (java -jar …): let sh split it, then exec so the pid stays.
        command.addAll(List.of("sh", "-c", SANDBOX_SHELL + "exec " + host.serverCommand() + " \"$@\"", "ivcuda-server"));
        command.addAll(serverArguments(paths));
        try {
            java.util.Map<String, String> mps = io.ivcuda.common.MpsEnvironment.read(paths.serverEnvironment());
            Files.createDirectories(paths.serverLog().getParent());
            Files.writeString(paths.serverLog(), START_MARK + java.time.Instant.now() + " starting: " + String.join(" ", command) + "\n",
                    StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
            ProcessBuilder builder = new ProcessBuilder(command)
                    .redirectInput(new File("/dev/null"))
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(paths.serverLog().toFile()))
                    .redirectErrorStream(true);
            // what ivcuda-server@.service's EnvironmentFile= gives a supervised server
            builder.environment().putAll(mps);
            // what the unit's MemoryMax bounds, as far as a plain process can have it: the JVM's own sizing
            String memory = jvmMemoryOptions(host.serverMemoryMax());
            if (!memory.isEmpty()) {
                builder.environment().merge(JDK_JAVA_OPTIONS, memory, (given, ours) -> ours + " " + given);
            }
            Process process = builder.start();
            LOG.info("started the server of {} as pid {} (log {})", paths.domainUuid(), process.pid(), paths.serverLog());
            return () -> process.isAlive() ? null : "exited with status " + process.exitValue();
        } catch (IOException e) {
            throw new HookException("cannot start the cuda-server (" + host.serverCommand() + "): " + e.getMessage(), e);
        }
    }

    /**
     * The JVM options that bound a directly launched server's memory by {@code server.memory.max} (0: none):
     * {@code -XX:MaxRAM}, from which the JVM sizes its heap (a quarter of it by default, as it sizes it from
     * the unit's MemoryMax under systemd) and its other areas. Given through {@value #JDK_JAVA_OPTIONS}, which
     * every {@code java} launcher reads whatever {@code server.command} is (ours, or {@code java -jar …}); an
     * {@code -Xmx} or {@code -XX:MaxRAM} in {@code server.command} comes later and wins. Nothing else can be
     * bounded without a cgroup: an address-space limit (RLIMIT_AS) breaks the CUDA driver, which reserves
     * virtual ranges far larger than the host's memory (docs/threat-model.md, "Not covered yet").
     */
    static String jvmMemoryOptions(long serverMemoryMax) {
        return serverMemoryMax <= 0 ? "" : "-XX:MaxRAM=" + serverMemoryMax;
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

    /**
     * setsid and setpriv as the server runs under them: what systemd's unit does that a plain process can have
     * too (docs/threat-model.md): no new privileges (no setuid program regains any), the server's user (the
     * server's system-call filter follows: {@link #syscallFilter}).
     */
    List<String> asServerUser() throws HookException {
        List<String> command = new ArrayList<>(List.of("setsid"));
        command.addAll(setpriv());
        return command;
    }

    /** setpriv as the server's user (when the hook is someone else), with no new privileges. */
    private List<String> setpriv() throws HookException {
        List<String> command = new ArrayList<>(List.of("setpriv"));
        if (!host.serverUser().equals(System.getProperty("user.name"))) {
            command.addAll(List.of("--reuid=" + host.serverUser(), "--regid=" + primaryGroup(host.serverUser()), "--init-groups"));
        }
        command.addAll(List.of("--no-new-privs", "--"));
        return command;
    }

    /**
     * The MPS control daemon without systemd: {@code mps.control -d} with the pipe and log directories of the
     * host configuration, as the server's user (MPS serves one user's clients at a time, and the servers all
     * run as that user), unless the pid file it keeps in its pipe directory names a live process.
     */
    @Override
    public String ensureMpsDaemon() {
        java.nio.file.Path pipe = host.mpsPipeDir();
        if (MpsDaemonPid.alive(pipe)) {
            return null;
        }
        try {
            for (java.nio.file.Path d : List.of(pipe, host.mpsLogDir())) {
                Files.createDirectories(d);
                if (!host.serverUser().equals(System.getProperty("user.name"))) {
                    var lookup = d.getFileSystem().getUserPrincipalLookupService();
                    Files.setOwner(d, RegionFile.lookupUser(lookup, host.serverUser()));
                }
                Files.setPosixFilePermissions(d, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
            }
            List<String> command = new ArrayList<>(asServerUser());
            command.addAll(List.of("sh", "-c", "exec " + host.mpsControl() + " -d", "ivcuda-mps"));
            ProcessBuilder builder = new ProcessBuilder(command).redirectInput(new File("/dev/null"))
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(host.mpsLogDir().resolve("start.log").toFile()))
                    .redirectErrorStream(true);
            builder.environment().put(io.ivcuda.common.MpsEnvironment.PIPE_DIRECTORY, pipe.toString());
            builder.environment().put(io.ivcuda.common.MpsEnvironment.LOG_DIRECTORY, host.mpsLogDir().toString());
            Process process = builder.start();
            // -d forks the daemon and returns
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return host.mpsControl() + " -d did not return within 15 s";
            }
            if (process.exitValue() != 0) {
                return host.mpsControl() + " -d exited with status " + process.exitValue() + " (" + host.mpsLogDir() + ")";
            }
            LOG.info("started the MPS control daemon ({} -d, pipe directory {})", host.mpsControl(), pipe);
            // so that --stop-all stops this one, and only this one (package removal)
            MpsDaemonStop.recordStarted(host.runtimeDir(), pipe, host.mpsLogDir());
            return null;
        } catch (IOException | HookException e) {
            return "cannot start the MPS control daemon (" + host.mpsControl() + " -d): " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }

    /**
     * The daemon {@link #ensureMpsDaemon} started, if it did: {@code quit} through the control program as the
     * server's user, then signals to our MPS processes only ({@link MpsDaemonStop}).
     */
    @Override
    public boolean stopMpsDaemon(java.io.PrintStream out) {
        List<String> asUser;
        try {
            asUser = setpriv();
        } catch (HookException e) {
            out.println("ivcuda: cannot stop the MPS control daemon: " + e.getMessage());
            return false;
        }
        return MpsDaemonStop.stop(host.runtimeDir(), host.mpsControl(), host.serverUser(), asUser, out);
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
