package io.ivcuda.backend;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * One slot's running cuda-server, as the agent's child. Its output (stdout and stderr together) goes line by line
 * into the agent's log, prefixed with the slot; the line that says why it refused ({@code ivcuda-server: CAUSE})
 * or its last error is kept for the slot's server_message. It is ready once it wrote its pidfile (the server
 * writes it after READY). Stopping never blocks: SIGTERM now, SIGKILL once the bounded wait is over, both from
 * the agent's poll.
 */
public final class ServerProcess {
    private static final Logger LOG = LogManager.getLogger(ServerProcess.class);
    /** How the server starts the one line of a refusal (cuda-server Main). */
    static final String SERVER_SAYS = "ivcuda-server: ";
    private static final int LONGEST_LINE = 1000;

    private final int slot;
    private final Process process;
    private final Path pidfile;
    private final Thread pump;
    /** Doorbell mode: the slot device's interrupt daemon, which goes with the server (null otherwise). */
    private final InterruptDaemon interrupts;
    private volatile String refusal = "";
    private volatile String lastError = "";
    private long killAtMs = -1;

    ServerProcess(int slot, Process process, Path pidfile, InterruptDaemon interrupts) {
        this.slot = slot;
        this.process = process;
        this.pidfile = pidfile;
        this.interrupts = interrupts;
        this.pump = new Thread(this::pump, "slot" + slot + "-server-output");
        pump.setDaemon(true);
        pump.start();
    }

    private void pump() {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                String cut = line.length() > LONGEST_LINE ? line.substring(0, LONGEST_LINE) + "..." : line;
                LOG.info("slot {} server: {}", slot, cut);
                if (cut.startsWith(SERVER_SAYS)) {
                    refusal = cut.substring(SERVER_SAYS.length());
                } else if (cut.contains(" ERROR ")) {
                    lastError = cut.substring(cut.indexOf(" ERROR ") + " ERROR ".length()).trim();
                }
            }
        } catch (IOException e) {
            // the pipe closes when the server exits
        }
    }

    public long pid() {
        return process.pid();
    }

    /** The server wrote its pidfile, which it does once READY. */
    public boolean ready() {
        return process.isAlive() && Files.exists(pidfile);
    }

    public boolean exited() {
        return !process.isAlive();
    }

    /** Whether {@link #stop} was asked. */
    public boolean stopping() {
        return killAtMs >= 0;
    }

    /** SIGTERM now; {@link #poll} sends SIGKILL at {@code nowMs + timeoutMs} if it is still there. */
    public void stop(long nowMs, long timeoutMs) {
        if (killAtMs < 0) {
            killAtMs = nowMs + timeoutMs;
            process.destroy();
            if (interrupts != null) {
                interrupts.stop();
            }
        }
    }

    /** Past the stop's deadline and still alive: SIGKILL. */
    public void poll(long nowMs) {
        if (killAtMs >= 0 && nowMs >= killAtMs && process.isAlive()) {
            LOG.warn("slot {}: server pid {} still running {} ms after SIGTERM: SIGKILL", slot, process.pid(), nowMs - killAtMs);
            process.destroyForcibly();
            killAtMs = Long.MAX_VALUE;
        }
    }

    /** Why it exited, for the slot's server_message: its status and its last word (after it exited). */
    public String exitMessage() {
        if (interrupts != null) {
            interrupts.stop();
        }
        try {
            pump.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        int status = process.exitValue();
        String how = status > 128 ? "killed by signal " + (status - 128) : "exited with status " + status;
        String why = refusal.isEmpty() ? lastError : refusal;
        return "server " + how + (why.isEmpty() ? "" : ": " + why);
    }

    /** Waits up to {@code ms} for the exit (the agent's own shutdown only). */
    boolean awaitExit(long ms) throws InterruptedException {
        return process.waitFor(ms, java.util.concurrent.TimeUnit.MILLISECONDS);
    }
}
