package io.ivcuda.backend;

import io.ivcuda.common.config.ServerKeys;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Starts one slot's cuda-server: on the slot's device memory ({@code region.kind=device}, the device's size),
 * with the front-end's quota and share and the GPU the host named, the agent's backend, and a pidfile in the run
 * directory (its appearance says READY). With {@code server.user} the agent (root) hands the device file and the
 * run directory to that user and starts the server through {@code setpriv}, which execs it: the pid the agent
 * watches and signals is the server's.
 */
final class ServerLauncher {
    private static final Logger LOG = LogManager.getLogger(ServerLauncher.class);
    /** What a GPU is named by: an index or a UUID ({@code GPU-…}, MIG's {@code MIG-…}). */
    private static final Pattern DEVICE = Pattern.compile("[A-Za-z0-9-]{1,63}");
    private static final Pattern UUID = Pattern.compile("[0-9a-fA-F-]{1,39}");
    /** QEMU's ivshmem takes at most this many vectors. */
    private static final int MAX_VECTORS = 64;

    private final AgentConfig config;
    private final ChildRecords records;

    ServerLauncher(AgentConfig config, ChildRecords records) {
        this.config = config;
        this.records = records;
    }

    Path pidfile(int slot) {
        return config.runDir().resolve("slot" + slot + ".pid");
    }

    /**
     * Starts the server of {@code a} on {@code device}.
     *
     * @throws IOException saying why it cannot (for the slot's server_message)
     */
    ServerProcess launch(SlotAssignment a, IvshmemDevice device) throws IOException {
        if (a.regionSize() != device.size()) {
            throw new IOException("device " + device.address() + " has " + device.size() + " bytes, the control region says "
                    + "slot " + a.index() + "'s region has " + a.regionSize());
        }
        if (a.quotaBytes() < 0) {
            throw new IOException("quota " + Long.toUnsignedString(a.quotaBytes()) + " bytes is out of range");
        }
        if (a.computeShare() < 0 || a.computeShare() > 100) {
            throw new IOException("compute share " + Integer.toUnsignedString(a.computeShare()) + " is not 0..100");
        }
        if (!a.device().isEmpty() && !DEVICE.matcher(a.device()).matches()) {
            throw new IOException("GPU '" + a.device() + "' is neither an index nor a UUID");
        }
        Files.createDirectories(config.runDir());
        Path pidfile = pidfile(a.index());
        Files.deleteIfExists(pidfile);
        List<String> command = new ArrayList<>();
        if (!config.serverUser().isEmpty()) {
            command.addAll(asUser(config.serverUser(), device.memory()));
        }
        command.addAll(config.serverCommand());
        if (config.serverConfig() != null) {
            command.add("--config");
            command.add(config.serverConfig().toString());
        }
        set(command, ServerKeys.REGION_PATH.name(), device.memory().toString());
        set(command, ServerKeys.REGION_SIZE.name(), Long.toString(device.size()));
        set(command, ServerKeys.REGION_KIND.name(), io.ivcuda.common.RegionKind.DEVICE.word());
        set(command, ServerKeys.BACKEND.name(), config.backend().word());
        if (!a.device().isEmpty()) {
            set(command, ServerKeys.GPU.name(), a.device());
        }
        set(command, ServerKeys.MEMORY_QUOTA.name(), Long.toString(a.quotaBytes()));
        if (a.computeShare() > 0) {
            set(command, ServerKeys.COMPUTE_SHARE.name(), Integer.toString(a.computeShare()));
        }
        // for the server's log lines only: a front-end's name is the host's word, kept to plain characters
        set(command, ServerKeys.DOMAIN_UUID.name(), UUID.matcher(a.frontendUuid()).matches() ? a.frontendUuid() : "");
        set(command, ServerKeys.DOMAIN_NAME.name(), a.frontendName().replaceAll("[^A-Za-z0-9._+-]", "_"));
        set(command, ServerKeys.PIDFILE.name(), pidfile.toString());
        InterruptDaemon interrupts = doorbell(a, device, command);
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        Process process;
        try {
            process = pb.start();
        } catch (IOException e) {
            if (interrupts != null) {
                interrupts.stop();
            }
            throw e;
        }
        records.record(a.index(), process.toHandle());
        LOG.info("slot {}: server pid {} for front-end {} on {} (generation {}): {}", a.index(), process.pid(),
                a.frontend(), device, a.generation(), String.join(" ", command));
        return new ServerProcess(a.index(), process, pidfile, interrupts);
    }

    /**
     * A front-end in doorbell mode (the slot's doorbell_vectors): the server serves in doorbell mode with the slot
     * device's interrupts, which an interrupt daemon started here hands it. Without the daemon the server is still
     * told doorbell mode, finds no interrupts and polls, saying so (as does this log).
     */
    private InterruptDaemon doorbell(SlotAssignment a, IvshmemDevice device, List<String> command) throws IOException {
        if (a.doorbellVectors() == 0) {
            return null;
        }
        if (a.doorbellVectors() < 1 || a.doorbellVectors() > MAX_VECTORS) {
            throw new IOException("doorbell vectors " + Integer.toUnsignedString(a.doorbellVectors()) + " is not 1.." + MAX_VECTORS);
        }
        set(command, ServerKeys.MODE.name(), io.ivcuda.common.Mode.DOORBELL.word());
        set(command, ServerKeys.DOORBELL_VECTORS.name(), Integer.toString(a.doorbellVectors()));
        set(command, ServerKeys.DOORBELL_SOCKET.name(), InterruptDaemon.socket(config, a.index()).toString());
        try {
            return InterruptDaemon.start(config, records, a.index(), device);
        } catch (IOException e) {
            LOG.warn("slot {}: no interrupts for front-end {} ({}): its server polls", a.index(), a.frontend(), e.getMessage());
            return null;
        }
    }

    private static void set(List<String> command, String key, String value) {
        command.add("--set");
        command.add(key + "=" + value);
    }

    /**
     * {@code setpriv} as {@code user} (uid, its primary group, its groups), after giving the user the device file
     * (sysfs lets root chown a BAR file) and the run directory, where the server writes its pidfile.
     */
    private List<String> asUser(String user, Path memory) throws IOException {
        String[] entry = passwd(user);
        UserPrincipal owner = memory.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(user);
        Files.setOwner(memory, owner);
        Files.setOwner(config.runDir(), owner);
        return List.of("setpriv", "--reuid=" + entry[2], "--regid=" + entry[3], "--init-groups", "--");
    }

    /** The user's /etc/passwd line, split. */
    private static String[] passwd(String user) throws IOException {
        for (String line : Files.readAllLines(Path.of("/etc/passwd"), StandardCharsets.UTF_8)) {
            String[] f = line.split(":");
            if (f.length >= 4 && f[0].equals(user)) {
                return f;
            }
        }
        throw new IOException("server user '" + user + "' is not in /etc/passwd");
    }
}
