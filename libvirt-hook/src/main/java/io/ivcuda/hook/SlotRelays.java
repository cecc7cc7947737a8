package io.ivcuda.hook;

import io.ivcuda.common.BackendPaths;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.ServerProcesses;
import io.ivcuda.common.ShmemDevice;
import io.ivcuda.common.config.HostKeys;
import io.ivcuda.common.config.ServerKeys;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The ivshmem relays of a doorbell back-end's slots ({@code ivcuda-server relay}, docs/backend-domains.md): one per
 * slot, listening on the slot's {@code <server path>} before either QEMU starts (QEMU does not start without its
 * server) and running as long as either QEMU may be connected (QEMU cannot reconnect to a new one). Launched as the
 * servers are: where they are systemd units ({@link SystemdLauncher}), as {@code ivcuda-relay@B-slotK.service}
 * (templates/ivcuda-relay@.service, its arguments in {@code runtime.dir/relay-B-slotK.env}); else directly (a new
 * session, as the server's user, like {@link DirectLauncher}'s servers). Found by its {@code --socket} argument,
 * which no other process has, however it was started.
 */
class SlotRelays {
    private static final Logger LOG = LogManager.getLogger(SlotRelays.class);
    /** What a unit's arguments may be made of: the unit's EnvironmentFile= splits them at spaces, unquoted. */
    private static final java.util.regex.Pattern PLAIN_ARGUMENT = java.util.regex.Pattern.compile("[A-Za-z0-9/._:@+,=-]+");

    private final HostConfig host;
    /** The systemctl to launch the relays' units with; null: launched directly. */
    private final String systemctl;

    SlotRelays(HostConfig host) {
        this(host, (String) null);
    }

    SlotRelays(HostConfig host, String systemctl) {
        this.host = host;
        this.systemctl = systemctl;
    }

    /** The relays launched as the servers are: as units under {@link SystemdLauncher}, else directly. */
    static SlotRelays launchedAs(HostConfig host, ServerLauncher servers) {
        return new SlotRelays(host, servers instanceof SystemdLauncher s ? s.systemctl() : null);
    }

    boolean asUnits() {
        return systemctl != null;
    }

    boolean isRunning(BackendPaths paths, int slot) {
        return !ServerProcesses.find(paths.relaySocket(slot)).isEmpty();
    }

    /** Starts slot {@code slot}'s relay unless it runs; returns once it listens (bounded by {@code server.ready.timeout.ms}). */
    void ensure(BackendPaths paths, int slot) throws HookException {
        if (isRunning(paths, slot) && Files.exists(paths.relayPidfile(slot))) {
            return;
        }
        stop(paths, slot);
        if (asUnits()) {
            startUnit(paths, slot);
            return;
        }
        Path log = host.logDir().resolve("relay-" + paths.backendUuid() + "-slot" + slot + ".log");
        List<String> command = new ArrayList<>(new DirectLauncher(host).asServerUser());
        command.addAll(List.of("sh", "-c", DirectLauncher.SANDBOX_SHELL + "exec " + host.serverCommand() + " relay \"$@\"",
                "ivcuda-relay"));
        command.addAll(arguments(paths, slot));
        Process process;
        try {
            Files.deleteIfExists(paths.relayPidfile(slot));
            Files.createDirectories(log.getParent());
            Files.writeString(log, DirectLauncher.START_MARK + java.time.Instant.now() + " starting: " + String.join(" ", command)
                    + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            process = new ProcessBuilder(command).redirectInput(new File("/dev/null"))
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new HookException("cannot start the doorbell relay of slot " + slot + " (" + host.serverCommand() + " relay): "
                    + e.getMessage(), e);
        }
        long deadline = System.nanoTime() + host.serverReadyTimeoutMs() * 1_000_000;
        while (!Files.exists(paths.relayPidfile(slot))) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                String how = process.isAlive() ? "did not listen within " + host.serverReadyTimeoutMs() + " ms"
                        : "exited with status " + process.exitValue();
                process.destroy();
                throw new HookException("the doorbell relay of slot " + slot + " " + how + " (" + log + ")",
                        "the ivshmem relay of slot " + slot + " of back-end " + paths.backendUuid() + " " + how + "; its log "
                        + log + " says why");
            }
            ServerProcesses.sleep(ReadyWait.POLL_MS);
        }
        LOG.info("relay of slot {} of back-end {}: pid {} on {}", slot, paths.backendUuid(), process.pid(), paths.relaySocket(slot));
    }

    /**
     * The unit's way: its arguments into its environment file, {@code systemctl start}, then (bounded by
     * {@code server.ready.timeout.ms}) its pidfile, which the relay writes once it listens.
     */
    private void startUnit(BackendPaths paths, int slot) throws HookException {
        String unit = paths.relayUnit(slot);
        List<String> args = arguments(paths, slot);
        for (String a : args) {
            if (!PLAIN_ARGUMENT.matcher(a).matches()) {
                throw new HookException("the doorbell relay of slot " + slot + " cannot run as " + unit + ": its argument '" + a
                        + "' has characters its unit cannot pass (" + HostKeys.RUNTIME_DIR.name() + " and " + HostKeys.SHM_DIR.name()
                        + " must be plain paths)");
            }
        }
        try {
            Files.deleteIfExists(paths.relayPidfile(slot));
            Files.writeString(paths.relayEnvironment(slot), "# ivcuda-relay@.service's arguments, written by the hook\n"
                    + "IVCUDA_RELAY_ARGS=" + String.join(" ", args) + "\n", StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new HookException("cannot write " + paths.relayEnvironment(slot) + ": " + e.getMessage(), e);
        }
        // a failed earlier run would make systemd refuse or rate-limit it
        SystemdLauncher.run(systemctl, "reset-failed", unit);
        SystemdLauncher.Result started = SystemdLauncher.run(systemctl, "start", unit);
        if (started.status() != 0) {
            throw new HookException("systemctl start " + unit + " failed", started.output().trim());
        }
        long deadline = System.nanoTime() + host.serverReadyTimeoutMs() * 1_000_000;
        long nextCheck = 0;
        while (!Files.exists(paths.relayPidfile(slot))) {
            long now = System.nanoTime();
            if (now > deadline) {
                SystemdLauncher.run(systemctl, "stop", unit);
                throw new HookException("the doorbell relay of slot " + slot + " (" + unit + ") did not listen within "
                        + host.serverReadyTimeoutMs() + " ms (journalctl -u " + unit + ")");
            }
            if (now >= nextCheck) { // systemctl is a process per call: twice a second
                nextCheck = now + 500_000_000L;
                String state = SystemdLauncher.run(systemctl, "is-active", unit).output().trim();
                if (!state.equals("active") && !state.equals("activating") && !Files.exists(paths.relayPidfile(slot))) {
                    throw new HookException("the doorbell relay of slot " + slot + " (" + unit + ") is " + state
                            + " (journalctl -u " + unit + ")", "the ivshmem relay of slot " + slot + " of back-end "
                            + paths.backendUuid() + " is " + state + "; journalctl -u " + unit + " says why");
                }
            }
            ServerProcesses.sleep(ReadyWait.POLL_MS);
        }
        LOG.info("relay of slot {} of back-end {}: {} on {}", slot, paths.backendUuid(), unit, paths.relaySocket(slot));
    }

    /** The relay's arguments: the slot's socket, region, control region; both QEMUs' uid when the host sets one. */
    List<String> arguments(BackendPaths paths, int slot) {
        List<String> args = new ArrayList<>(List.of("--socket", paths.relaySocket(slot).toString(),
                "--region", paths.slotFile(slot).toString(), "--vectors", Integer.toString(ShmemDevice.DOORBELL_VECTORS),
                "--backend-uuid", paths.backendUuid(), "--control", paths.controlFile().toString(),
                "--slot", Integer.toString(slot), "--pidfile", paths.relayPidfile(slot).toString(),
                "--peers", paths.relayPeers(slot).toString()));
        String uid = host.serverKeys().get(ServerKeys.DOORBELL_PEER_UID.name());
        if (uid != null && !uid.isBlank()) {
            args.addAll(List.of("--peer-uid", uid.trim()));
        }
        return args;
    }

    /**
     * Stops slot {@code slot}'s relay if it runs (bounded by {@code server.stop.timeout.ms}): its unit where relays
     * are units, then any relay process of the slot however it was started; never throws.
     */
    void stop(BackendPaths paths, int slot) {
        if (asUnits() && (Files.exists(paths.relayEnvironment(slot)) || isRunning(paths, slot))) {
            SystemdLauncher.Result stopped = SystemdLauncher.run(systemctl, "stop", paths.relayUnit(slot));
            if (stopped.status() != 0) {
                LOG.warn("systemctl stop {}: {}", paths.relayUnit(slot), stopped.output().trim());
            }
        }
        List<Long> pids = ServerProcesses.find(paths.relaySocket(slot));
        if (!pids.isEmpty()) {
            LOG.info("stopping the relay of slot {} of back-end {} (pid {})", slot, paths.backendUuid(), pids);
            ServerProcesses.terminate(pids, host.serverStopTimeoutMs());
        }
        for (Path left : List.of(paths.relayPidfile(slot), paths.relayPeers(slot), paths.relayEnvironment(slot))) {
            try {
                Files.deleteIfExists(left);
            } catch (IOException e) {
                LOG.warn("cannot remove {}: {}", left, e.getMessage());
            }
        }
    }
}
