package io.ivcuda.common;

import io.ivcuda.wire.BackendControlFlyweight;
import io.ivcuda.wire.BackendSlotFlyweight;
import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The host's side of a back-end domain's control region ({@code ivcuda-B-control}, api/region.layout §12):
 * the host writes the header's and each slot's host fields, the back-end's agent its own fields. The
 * back-end's guest maps this region, so every field it can write is read once, shown or compared, and
 * never used for an offset: slots are found from the layout's constants, not from the header's words.
 */
public final class ControlRegion implements AutoCloseable {
    /** The host lays out the slot table right after the header, one slot per {@link BackendSlotFlyweight#LENGTH}. */
    public static final int SLOT_TABLE_OFFSET = BackendControlFlyweight.SLOTS_OFFSET;
    public static final int SLOT_STRIDE = BackendSlotFlyweight.LENGTH;

    private final Path file;
    private final MappedByteBuffer mapped;
    private final UnsafeBuffer buffer;
    private final BackendControlFlyweight header = new BackendControlFlyweight();

    private ControlRegion(Path file, MappedByteBuffer mapped) {
        this.file = file;
        this.mapped = mapped;
        this.buffer = new UnsafeBuffer(mapped);
        header.wrap(buffer, 0);
    }

    /** Maps an existing control region file; one of another size than {@link BackendPaths#CONTROL_SIZE} is refused. */
    public static ControlRegion open(Path file) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long size = channel.size();
            if (size != BackendPaths.CONTROL_SIZE) {
                throw new IOException("the control region " + file + " is " + size + " bytes, not " + BackendPaths.CONTROL_SIZE);
            }
            return new ControlRegion(file, channel.map(FileChannel.MapMode.READ_WRITE, 0, size));
        }
    }

    public Path file() {
        return file;
    }

    public BackendControlFlyweight header() {
        return header;
    }

    /** Slot {@code k}'s part of the region (a new flyweight, so callers may hold several). */
    public BackendSlotFlyweight slot(int k) {
        if (k < 0 || k >= GpuElement.MAX_SLOTS) {
            throw new IndexOutOfBoundsException("slot " + k);
        }
        return new BackendSlotFlyweight().wrap(buffer, SLOT_TABLE_OFFSET + k * SLOT_STRIDE);
    }

    /** The random tokens of one slot: the control region and the slot region's header both carry them. */
    public record Token(long lo, long hi) {
    }

    /**
     * The back-end's start ({@code prepare}): writes the header and a fresh {@code tokens[k]} into every slot,
     * sets every slot's agent fields to IDLE (the back-end's agent starts with no server), and keeps slot
     * {@code k} ASSIGNED (state, generation, front-end fields) only when {@code keepAssigned[k]}: the ledger
     * gives it to the front-end its fields name, which may be running. Every other slot becomes FREE, with
     * its host fields cleared. {@code device} (which of the back-end's GPUs serves its front-ends, from its
     * element) goes into every slot: a front-end's hook does not know the back-end's element. Ends with
     * host_generation + 1, so an agent that was already polling rereads.
     */
    public void format(String backendUuid, int slotCount, String device, Token[] tokens, boolean[] keepAssigned) {
        header.magic(BackendControlFlyweight.BACKEND_MAGIC)
                .controlVersion(BackendControlFlyweight.BACKEND_CONTROL_VERSION)
                .slotCount(slotCount)
                .slotStride(SLOT_STRIDE)
                .slotTableOffset(SLOT_TABLE_OFFSET)
                .agentPid(0)
                .backendUuid(backendUuid)
                .agentMessage("");
        header.agentHeartbeatVolatile(0);
        for (int k = 0; k < GpuElement.MAX_SLOTS; k++) {
            BackendSlotFlyweight slot = slot(k);
            if (k >= slotCount || !keepAssigned[k]) {
                // Fewer slots than last time: the ones beyond stay FREE, so no agent serves them.
                slot.stateVolatile(BackendSlotFlyweight.SLOT_FREE);
                slot.regionSize(0).quotaBytes(0).computeShare(0).frontendUuid("").frontendName("").device("").doorbellVectors(0);
            }
            slot.device(k < slotCount ? device : "");
            Token token = k < slotCount ? tokens[k] : new Token(0, 0);
            slot.tokenLo(token.lo).tokenHi(token.hi);
            slot.servedGenerationVolatile(0);
            slot.serverStateVolatile(BackendSlotFlyweight.SERVED_IDLE);
            slot.serverPid(0).serverMessage("");
        }
        header.addHostGenerationRelease(1);
    }

    /** What a front-end's server needs to know, as the host writes it into its slot; a null device keeps the back-end's. */
    public record Assignment(String frontendUuid, String frontendName, long quotaBytes, int computeShare, String device,
                             long regionSize, int doorbellVectors) {
        /** A front-end in plain mode. */
        public Assignment(String frontendUuid, String frontendName, long quotaBytes, int computeShare, String device,
                          long regionSize) {
            this(frontendUuid, frontendName, quotaBytes, computeShare, device, regionSize, 0);
        }
    }

    /**
     * Gives slot {@code k} to a front-end: the host fields first, then a new generation and state ASSIGNED,
     * then host_generation + 1, each a release store, so an agent that sees the new host_generation
     * (acquire) sees the whole assignment.
     */
    public void assign(int k, Assignment a) {
        BackendSlotFlyweight slot = slot(k);
        slot.frontendUuid(a.frontendUuid).frontendName(a.frontendName).quotaBytes(a.quotaBytes)
                .computeShare(a.computeShare).regionSize(a.regionSize).doorbellVectors(a.doorbellVectors);
        if (a.device != null) {
            slot.device(a.device);
        }
        // the new generation before ASSIGNED: an agent polling in between sees a FREE slot, never an
        // ASSIGNED one of the old generation (for which it would start a server only to restart it)
        slot.generationRelease(slot.generationVolatile() + 1);
        slot.stateRelease(BackendSlotFlyweight.SLOT_ASSIGNED);
        header.addHostGenerationRelease(1);
    }

    /** Takes slot {@code k} away from its front-end: FREE, a new generation, host_generation + 1 (release order). */
    public void free(int k) {
        BackendSlotFlyweight slot = slot(k);
        slot.stateRelease(BackendSlotFlyweight.SLOT_FREE);
        slot.generationRelease(slot.generationVolatile() + 1);
        header.addHostGenerationRelease(1);
    }

    /** How {@link #awaitIdle} ended. */
    public enum Wait {
        /** The agent reports no server for the slot (served_generation 0). */
        IDLE,
        /** No agent has run since the back-end started, or its heartbeat stood still: no server runs. */
        NO_AGENT,
        /** The agent is alive but still serves the slot. */
        TIMEOUT
    }

    /** A pause between two looks at the region; tests pass one that advances a fake clock. */
    @FunctionalInterface
    public interface Sleeper {
        void sleep(long millis) throws InterruptedException;
    }

    /**
     * Waits until nothing serves slot {@code k} any more: the agent reports served_generation 0, or no agent
     * runs (heartbeat 0, which the back-end's start wrote, or a heartbeat that has not moved for
     * {@code staleMillis}: a dead agent's servers are dead with it). Looks every {@code stepMillis}, at most
     * {@code timeoutMillis} in all.
     */
    public Wait awaitIdle(int k, long timeoutMillis, long stepMillis, long staleMillis, LongSupplier clockMillis, Sleeper sleeper)
            throws InterruptedException {
        BackendSlotFlyweight slot = slot(k);
        long start = clockMillis.getAsLong();
        long heartbeat = header.agentHeartbeatVolatile();
        long heartbeatSince = start;
        while (true) {
            if (slot.servedGenerationAcquire() == 0) {
                return Wait.IDLE;
            }
            long now = clockMillis.getAsLong();
            long beat = header.agentHeartbeatVolatile();
            if (beat != heartbeat) {
                heartbeat = beat;
                heartbeatSince = now;
            }
            if (beat == 0 || now - heartbeatSince >= staleMillis) {
                return Wait.NO_AGENT;
            }
            if (now - start >= timeoutMillis) {
                return Wait.TIMEOUT;
            }
            sleeper.sleep(stepMillis);
        }
    }

    /** One slot as status shows it; the agent's words made printable (the back-end's guest writes them). */
    public record SlotView(int slot, boolean assigned, int generation, String frontendUuid, String frontendName,
                           int servedGeneration, int serverState, int serverPid, String serverMessage) {
        private static final String[] SERVED = {"IDLE", "STARTING", "SERVING", "FAILED"};

        public String serverStateName() {
            return serverState >= 0 && serverState < SERVED.length ? SERVED[serverState] : "state " + serverState;
        }
    }

    /** The header as status shows it. */
    public record View(boolean formatted, String backendUuid, long agentHeartbeat, int agentPid, String agentMessage,
                       List<SlotView> slots) {
    }

    /** Reads the header and the first {@code slotCount} slots (the count the host configured, not the header's). */
    public View view(int slotCount) {
        List<SlotView> slots = new ArrayList<>();
        for (int k = 0; k < Math.min(slotCount, GpuElement.MAX_SLOTS); k++) {
            BackendSlotFlyweight s = slot(k);
            slots.add(new SlotView(k, s.stateVolatile() == BackendSlotFlyweight.SLOT_ASSIGNED, s.generationVolatile(),
                    printable(s.frontendUuid()), printable(s.frontendName()), s.servedGenerationVolatile(),
                    s.serverStateVolatile(), s.serverPid(), printable(s.serverMessage())));
        }
        boolean formatted = header.magic() == BackendControlFlyweight.BACKEND_MAGIC
                && header.controlVersion() == BackendControlFlyweight.BACKEND_CONTROL_VERSION;
        return new View(formatted, printable(header.backendUuid()), header.agentHeartbeatVolatile(), header.agentPid(),
                printable(header.agentMessage()), slots);
    }

    private static String printable(String text) {
        StringBuilder b = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            b.append(c >= 0x20 && c < 0x7f ? c : '?');
        }
        return b.toString();
    }

    @Override
    public void close() {
        IoUtil.unmap(mapped);
    }
}
