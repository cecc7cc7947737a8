package io.ivcuda.backend;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The interrupt daemon of one doorbell slot's device ({@code irqd.command}, ivcuda-guest-irqd): started by the agent
 * (root) before the slot's server, it takes the device through vfio-pci and serves its MSI-X eventfds — the
 * front-end's rings — on a socket in the run directory, which the server reads as {@code doorbell.socket}. It lives
 * as long as the server, and never longer than the agent: it is started with {@code --exit-with-parent=<agent pid>}
 * (the kernel sends it SIGTERM when the agent's loop thread, which starts it, ends — a SIGKILLed agent included),
 * and recorded ({@link ChildRecords}, {@code run.dir/slotK.irqd}) so that the next agent stops one that stayed
 * anyway. Its output goes into the agent's log.
 */
final class InterruptDaemon {
    private static final Logger LOG = LogManager.getLogger(InterruptDaemon.class);
    /** How long the daemon may take to listen (it binds the device to vfio-pci first). */
    static final long LISTEN_TIMEOUT_MS = 10_000;

    private final Process process;

    private InterruptDaemon(Process process) {
        this.process = process;
    }

    /** The socket of slot {@code slot}'s daemon. */
    static Path socket(AgentConfig config, int slot) {
        return config.runDir().resolve("slot" + slot + "-irq.sock");
    }

    /**
     * Starts the daemon for {@code device} and waits (bounded) until it listens.
     *
     * @throws IOException why there are no interrupts (the caller lets the server poll)
     */
    static InterruptDaemon start(AgentConfig config, ChildRecords records, int slot, IvshmemDevice device) throws IOException {
        if (config.irqdCommand().isEmpty()) {
            throw new IOException("irqd.command is empty");
        }
        Path socket = socket(config, slot);
        Files.deleteIfExists(socket);
        List<String> command = new ArrayList<>(config.irqdCommand());
        // --exit-with-parent: the kernel stops it when this agent ends, even by SIGKILL (it would keep the device)
        command.addAll(List.of("--device", device.address(), "--socket", socket.toString(), "--bind",
                "--exit-with-parent=" + ProcessHandle.current().pid()));
        Process process;
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
        } catch (IOException e) {
            throw new IOException("cannot start " + String.join(" ", command) + ": " + e.getMessage(), e);
        }
        InterruptDaemon daemon = new InterruptDaemon(process);
        try {
            records.recordInterrupts(slot, process.toHandle());
        } catch (IOException e) {
            daemon.stop();
            throw new IOException("cannot record the interrupt daemon in " + config.runDir() + ": " + e.getMessage(), e);
        }
        String[] last = {""};
        Thread pump = new Thread(() -> pump(process, slot, last), "slot" + slot + "-irqd-output");
        pump.setDaemon(true);
        pump.start();
        long deadline = System.nanoTime() + LISTEN_TIMEOUT_MS * 1_000_000;
        while (!Files.exists(socket)) {
            if (!process.isAlive()) {
                try {
                    pump.join(1000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                throw new IOException(command.get(0) + " exited with status " + process.exitValue()
                        + (last[0].isEmpty() ? "" : ": " + last[0]));
            }
            if (System.nanoTime() > deadline) {
                daemon.stop();
                throw new IOException(command.get(0) + " did not listen on " + socket + " within " + LISTEN_TIMEOUT_MS + " ms");
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                daemon.stop();
                throw new IOException("interrupted", e);
            }
        }
        LOG.info("slot {}: interrupt daemon pid {} serves the MSI-X eventfds of {} on {}", slot, process.pid(),
                device.address(), socket);
        return daemon;
    }

    private static void pump(Process process, int slot, String[] last) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                String cut = line.length() > 1000 ? line.substring(0, 1000) + "..." : line;
                LOG.info("slot {} irqd: {}", slot, cut);
                last[0] = cut;
            }
        } catch (IOException e) {
            // the pipe closes when the daemon exits
        }
    }

    long pid() {
        return process.pid();
    }

    /** SIGTERM (it gives the device back to the driver it had when it bound it); never blocks. */
    void stop() {
        process.destroy();
    }
}
