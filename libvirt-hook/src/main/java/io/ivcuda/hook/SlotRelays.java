package io.ivcuda.hook;

import io.ivcuda.common.BackendPaths;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.ServerProcesses;
import io.ivcuda.common.ShmemDevice;
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
 * server) and running as long as either QEMU may be connected (QEMU cannot reconnect to a new one). Started
 * directly (a new session, as the server's user, like {@link DirectLauncher}'s servers) whatever
 * {@code server.launch} says: a relay belongs to a slot, not to one domain's unit. Found by its {@code --socket}
 * argument, which no other process has.
 */
class SlotRelays {
    private static final Logger LOG = LogManager.getLogger(SlotRelays.class);

    private final HostConfig host;

    SlotRelays(HostConfig host) {
        this.host = host;
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

    /** Stops slot {@code slot}'s relay if it runs (bounded by {@code server.stop.timeout.ms}); never throws. */
    void stop(BackendPaths paths, int slot) {
        List<Long> pids = ServerProcesses.find(paths.relaySocket(slot));
        if (!pids.isEmpty()) {
            LOG.info("stopping the relay of slot {} of back-end {} (pid {})", slot, paths.backendUuid(), pids);
            ServerProcesses.terminate(pids, host.serverStopTimeoutMs());
        }
        for (Path left : List.of(paths.relayPidfile(slot), paths.relayPeers(slot))) {
            try {
                Files.deleteIfExists(left);
            } catch (IOException e) {
                LOG.warn("cannot remove {}: {}", left, e.getMessage());
            }
        }
    }
}
