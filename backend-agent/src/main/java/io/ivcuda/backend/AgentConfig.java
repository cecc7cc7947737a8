package io.ivcuda.backend;

import io.ivcuda.common.Backend;
import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.config.Settings;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * The agent's configuration ({@link AgentKeys}): properties files in order, later ones win, {@code --set} wins
 * over all; every key known and every value checked when loaded.
 */
public record AgentConfig(Path sysfsRoot, Backend backend, List<String> serverCommand, Path serverConfig,
                          String serverUser, Path runDir, long pollMs, long stopTimeoutMs, long restartBackoffMaxMs,
                          List<String> irqdCommand) {

    public static AgentConfig load(List<Path> files, List<String> sets) throws IvcudaConfigException {
        Settings s = Settings.load(AgentKeys.ALL, Settings.Layer.commandLine(files, sets));
        String command = s.get(AgentKeys.SERVER_COMMAND);
        List<String> words = command.isBlank() ? defaultServerCommand(s)
                : Arrays.stream(command.trim().split("\\s+")).toList();
        Path serverConfig = s.get(AgentKeys.SERVER_CONFIG);
        if (serverConfig != null && !Files.isRegularFile(serverConfig)) {
            throw s.bad(AgentKeys.SERVER_CONFIG, "is not a file");
        }
        return new AgentConfig(s.get(AgentKeys.SYSFS_ROOT), s.get(AgentKeys.BACKEND), words, serverConfig,
                s.get(AgentKeys.SERVER_USER), s.get(AgentKeys.RUN_DIR), s.get(AgentKeys.POLL_MS),
                s.get(AgentKeys.STOP_TIMEOUT_MS), s.get(AgentKeys.RESTART_BACKOFF_MAX_MS), words(s.get(AgentKeys.IRQD_COMMAND)));
    }

    private static List<String> words(String command) {
        return command == null || command.isBlank() ? List.of() : Arrays.stream(command.trim().split("\\s+")).toList();
    }

    /**
     * The JVM that runs the agent, running the cuda-server.jar that lies beside the agent's jar: how a test guest's
     * image (one folder, one lib/) and the packages lay them out.
     */
    private static List<String> defaultServerCommand(Settings s) throws IvcudaConfigException {
        Path jar;
        try {
            jar = Path.of(AgentConfig.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException | RuntimeException e) {
            throw s.bad(AgentKeys.SERVER_COMMAND, "is empty and the agent's own jar cannot be found (" + e.getMessage() + ")");
        }
        Path server = jar.resolveSibling("cuda-server.jar");
        if (!Files.isRegularFile(server)) {
            throw s.bad(AgentKeys.SERVER_COMMAND, "is empty and there is no " + server + " beside the agent");
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        return List.of(java, "-XX:+UseSerialGC", "-jar", server.toString());
    }
}
