package io.ivcuda.backend;

import io.ivcuda.wire.BackendControlFlyweight;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The agent's loop over the control region: every {@code poll.ms} it beats {@code agent_heartbeat} (the host
 * takes an agent whose heartbeat stood 2 s for gone) and polls each slot's supervisor. Nothing in a poll waits:
 * servers start and stop as child processes, so the heartbeat never stalls behind a slow server. On stop, every
 * server gets SIGTERM, then SIGKILL after {@code stop.timeout.ms}, and the slots say IDLE.
 */
public final class Agent implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(Agent.class);

    private final AgentConfig config;
    private final ControlRegion control;
    private final DeviceDiscovery discovery;
    private final List<SlotSupervisor> slots = new ArrayList<>();
    private final CountDownLatch stopped = new CountDownLatch(1);
    private volatile boolean running = true;
    private Thread loop;

    public Agent(AgentConfig config, ControlRegion control) throws IOException {
        this.config = config;
        this.control = control;
        this.discovery = new DeviceDiscovery(config.sysfsRoot());
        ChildRecords records = new ChildRecords(config.runDir());
        records.stopOrphans(config.stopTimeoutMs());
        ServerLauncher launcher = new ServerLauncher(config, records);
        for (int i = 0; i < control.slotCount(); i++) {
            slots.add(new SlotSupervisor(i, control.slot(i), launcher, records, this::slotDevices, config.stopTimeoutMs(),
                    config.restartBackoffMaxMs()));
        }
    }

    /** The devices a slot may be: every ivshmem device but the control region. */
    private List<IvshmemDevice> slotDevices() {
        try {
            return discovery.scan().stream().filter(d -> !d.address().equals(control.device().address())).toList();
        } catch (IOException e) {
            LOG.warn("ivshmem devices cannot be listed: {}", e.getMessage());
            return List.of();
        }
    }

    public void start() {
        BackendControlFlyweight h = control.header();
        for (SlotSupervisor s : slots) {
            s.reset();
        }
        h.agentPid((int) ProcessHandle.current().pid());
        h.agentMessage("");
        h.addAgentHeartbeatRelease(1);
        LOG.info("serving back-end {} from control region {}: {} slots, servers with backend {}", h.backendUuid(),
                control.device(), slots.size(), config.backend().word());
        loop = new Thread(this::run, "agent-loop");
        loop.start();
    }

    private void run() {
        long lastHostGeneration = -1;
        try {
            while (running) {
                BackendControlFlyweight h = control.header();
                h.addAgentHeartbeatRelease(1);
                long hostGeneration = h.hostGenerationAcquire();
                if (hostGeneration != lastHostGeneration) {
                    LOG.debug("host generation {}", hostGeneration);
                    lastHostGeneration = hostGeneration;
                }
                // every slot at every poll, not only when host_generation moved: exits and restarts are the agent's
                long now = System.nanoTime() / 1_000_000;
                for (SlotSupervisor s : slots) {
                    s.poll(now);
                }
                Thread.sleep(config.pollMs());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.error("agent loop failed: {}", e.toString(), e);
            control.header().agentMessage("agent failed: " + e);
        } finally {
            shutDownServers();
            stopped.countDown();
        }
    }

    private void shutDownServers() {
        Thread.interrupted(); // the stop's interrupt ended the loop; the bounded waits below are still wanted
        long now = System.nanoTime() / 1_000_000;
        for (SlotSupervisor s : slots) {
            s.stopForExit(now);
        }
        long deadline = now + config.stopTimeoutMs();
        for (SlotSupervisor s : slots) {
            try {
                s.awaitExit(Math.max(1, deadline - System.nanoTime() / 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            s.finish(System.nanoTime() / 1_000_000);
        }
        control.header().agentMessage("agent stopped");
        LOG.info("stopped: no server runs");
    }

    /** Blocks until the loop ended (a stop, or a failure of the loop). */
    public void await() throws InterruptedException {
        stopped.await();
    }

    public boolean ended() {
        return stopped.getCount() == 0;
    }

    /** Stops the loop and every server (bounded by stop.timeout.ms and its SIGKILL). */
    @Override
    public void close() {
        running = false;
        if (loop != null) {
            loop.interrupt();
            try {
                stopped.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        control.close();
    }
}
