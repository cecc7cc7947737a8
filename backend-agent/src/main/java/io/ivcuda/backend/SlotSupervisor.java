package io.ivcuda.backend;

import io.ivcuda.wire.BackendSlotFlyweight;
import java.io.IOException;
import java.util.List;
import java.util.function.Supplier;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * One slot of the control region and its server (docs/backend-domains.md). At each poll: an ASSIGNED slot whose
 * generation this agent does not serve yet gets its previous server stopped and a new one started (served
 * generation = the slot's, STARTING), SERVING once that server is ready, FAILED with the server's last word when it
 * exits, and a restart after a back-off while the slot stays assigned; a FREE slot gets its server stopped and then
 * served generation 0, IDLE. The served generation goes back to 0 only once the server is gone: the host zeroes a
 * freed slot's region only after that. Nothing here blocks: a stop is SIGTERM now and SIGKILL at a later poll.
 */
final class SlotSupervisor {
    private static final Logger LOG = LogManager.getLogger(SlotSupervisor.class);

    private final int index;
    private final BackendSlotFlyweight slot;
    private final ServerLauncher launcher;
    private final ChildRecords records;
    private final Supplier<List<IvshmemDevice>> devices;
    private final long stopTimeoutMs;
    private final Backoff backoff;

    private ServerProcess server;
    private int servedGeneration;
    private long nextStartMs;
    private long servingSinceMs = -1;
    private int unknownStateSeen = -1;

    SlotSupervisor(int index, BackendSlotFlyweight slot, ServerLauncher launcher, ChildRecords records,
                   Supplier<List<IvshmemDevice>> devices, long stopTimeoutMs, long backoffMaxMs) {
        this.index = index;
        this.slot = slot;
        this.launcher = launcher;
        this.records = records;
        this.devices = devices;
        this.stopTimeoutMs = stopTimeoutMs;
        this.backoff = new Backoff(backoffMaxMs);
    }

    /** At the agent's start: nothing served (a previous agent's servers are stopped by then). */
    void reset() {
        report(0, BackendSlotFlyweight.SERVED_IDLE, 0, "");
    }

    void poll(long nowMs) {
        if (server != null && server.exited()) {
            reaped(nowMs);
        }
        if (server != null && server.stopping()) {
            server.poll(nowMs);
            return;
        }
        int state = slot.stateAcquire();
        int generation = slot.generationAcquire();
        if (state == BackendSlotFlyweight.SLOT_ASSIGNED) {
            assigned(generation, nowMs);
        } else {
            if (state != BackendSlotFlyweight.SLOT_FREE && unknownStateSeen != state) {
                unknownStateSeen = state;
                LOG.warn("slot {}: state {} is neither FREE nor ASSIGNED: served as FREE", index, Integer.toUnsignedString(state));
            }
            free(nowMs);
        }
    }

    private void assigned(int generation, long nowMs) {
        if (generation != servedGeneration) {
            if (server != null) {
                LOG.info("slot {}: assignment {} replaces {}: stopping server pid {}", index, generation, servedGeneration, server.pid());
                server.stop(nowMs, stopTimeoutMs);
                return;
            }
            backoff.reset();
            start(nowMs);
            return;
        }
        if (server != null) {
            if (servingSinceMs < 0 && server.ready()) {
                servingSinceMs = nowMs;
                LOG.info("slot {}: server pid {} is serving", index, server.pid());
                report(servedGeneration, BackendSlotFlyweight.SERVED_SERVING, server.pid(), "");
            } else if (servingSinceMs >= 0 && nowMs - servingSinceMs >= Backoff.HEALTHY_MS) {
                backoff.reset();
            }
            return;
        }
        if (nowMs >= nextStartMs) {
            start(nowMs);
        }
    }

    private void free(long nowMs) {
        if (server != null) {
            LOG.info("slot {}: freed: stopping server pid {}", index, server.pid());
            server.stop(nowMs, stopTimeoutMs);
            return;
        }
        if (servedGeneration != 0 || slot.serverStateVolatile() != BackendSlotFlyweight.SERVED_IDLE) {
            report(0, BackendSlotFlyweight.SERVED_IDLE, 0, servedGeneration != 0 ? "stopped: the slot was freed" : "");
            LOG.info("slot {}: idle", index);
        }
    }

    /** Starts the server of the slot's current assignment; a failure to start is a failure like an exit. */
    private void start(long nowMs) {
        SlotAssignment a = SlotAssignment.read(index, slot);
        if (a == null) {
            return; // the host is changing the slot: the next poll sees the change whole
        }
        servedGeneration = a.generation();
        servingSinceMs = -1;
        try {
            IvshmemDevice device = a.token().find(devices.get(), index);
            server = launcher.launch(a, device);
            report(servedGeneration, BackendSlotFlyweight.SERVED_STARTING, server.pid(), "starting for " + a.frontend());
        } catch (IOException | RuntimeException e) {
            long delay = backoff.failed();
            nextStartMs = nowMs + delay;
            LOG.warn("slot {}: cannot serve front-end {}: {} (next try in {} ms)", index, a.frontend(), e.getMessage(), delay);
            report(servedGeneration, BackendSlotFlyweight.SERVED_FAILED, 0, e.getMessage());
        }
    }

    /** The server exited: asked to (a stop), or on its own (a failure: restart after the back-off). */
    private void reaped(long nowMs) {
        ServerProcess gone = server;
        server = null;
        records.forget(index);
        String message = gone.exitMessage();
        if (gone.stopping()) {
            LOG.info("slot {}: server pid {} stopped ({})", index, gone.pid(), message);
            return;
        }
        long delay = backoff.failed();
        nextStartMs = nowMs + delay;
        LOG.warn("slot {}: {} (failure {}, restart in {} ms while the slot stays assigned)", index, message,
                backoff.failures(), delay);
        report(servedGeneration, BackendSlotFlyweight.SERVED_FAILED, 0, message);
    }

    /** Stops the server for the agent's exit: SIGTERM (the caller waits, then {@link #kill}s). */
    void stopForExit(long nowMs) {
        if (server != null) {
            server.stop(nowMs, stopTimeoutMs);
        }
    }

    boolean awaitExit(long ms) throws InterruptedException {
        return server == null || server.awaitExit(ms);
    }

    /** After the agent's bounded wait: SIGKILL what is left, and tell the host nothing is served. */
    void finish(long nowMs) {
        if (server != null) {
            server.poll(Long.MAX_VALUE);
            try {
                server.awaitExit(stopTimeoutMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (server.exited()) {
                records.forget(index);
            }
            server = null;
        }
        report(0, BackendSlotFlyweight.SERVED_IDLE, 0, servedGeneration != 0 ? "stopped: the agent stopped" : "");
        servedGeneration = 0;
    }

    /** The agent's fields of the slot; the message first, state and served generation last (release). */
    private void report(int generation, int state, long pid, String message) {
        servedGeneration = generation;
        slot.serverMessage(message);
        slot.serverPid((int) pid);
        slot.serverStateRelease(state);
        slot.servedGenerationRelease(generation);
    }

    int servedGeneration() {
        return servedGeneration;
    }
}
