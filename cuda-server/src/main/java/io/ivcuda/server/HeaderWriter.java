package io.ivcuda.server;

import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.region.Layout;
import io.ivcuda.server.region.Region;
import io.ivcuda.wire.HeaderFlyweight;

/**
 * The region's header (docs/protocol.md §2). Only the server writes it: the layout once at start
 * (state INIT), the driver's facts, then READY (stored last, with release); the heartbeat while it
 * runs; STOPPING and STOPPED at the end. The only value it reads back is the guest's VM-wide
 * heartbeat (§7) — and, before it writes anything, the previous server's epoch.
 */
final class HeaderWriter {
    /** The magic's bytes (offset 0): the only ones a new server's init leaves as they were. */
    private static final int MAGIC_LENGTH = 8;
    private final HeaderFlyweight header = new HeaderFlyweight();

    HeaderWriter(Region region) {
        header.wrap(region.view(0, HeaderFlyweight.LENGTH), 0);
    }

    /** A fresh header in state INIT: nothing a previous server or guest left is trusted, but the epoch goes on. */
    void init(Layout layout, int ownerTimeoutMs, int doorbellVectors) {
        int previousEpoch = header.magic() == HeaderFlyweight.MAGIC ? header.epoch() : 0;
        // A back-end's service slot carries the host's identity of the slot (docs/protocol.md §12): kept.
        long tokenLo = header.slotTokenLo();
        long tokenHi = header.slotTokenHi();
        int slotIndex = header.slotIndex();
        // INIT before anything else changes, the magic never cleared: a guest that finds the magic and
        // INIT waits for READY (a server starting, or replacing its CUDA process after a fatal fault)
        header.serverStateRelease(HeaderFlyweight.STATE_INIT);
        java.lang.invoke.VarHandle.fullFence();
        header.buffer().setMemory(MAGIC_LENGTH, HeaderFlyweight.LENGTH - MAGIC_LENGTH, (byte) 0);
        header.slotTokenLo(tokenLo).slotTokenHi(tokenHi).slotIndex(slotIndex);
        header.magic(HeaderFlyweight.MAGIC)
                .protocolVersion(HeaderFlyweight.PROTOCOL_VERSION)
                .headerSize(HeaderFlyweight.LENGTH)
                .regionSize(layout.regionSize());
        header.serverStateRelease(HeaderFlyweight.STATE_INIT);
        header.epoch(previousEpoch + 1)
                .apiVersion(Opcodes.API_VERSION)
                .apiHash(Opcodes.API_HASH)
                .channelCount(layout.channelCount())
                .channelStride(layout.channelStride())
                .channelTableOffset(layout.channelTableOffset())
                .requestAreaSize(layout.requestAreaSize())
                .responseAreaSize(layout.responseAreaSize())
                .ringSize(layout.ringSize())
                .windowSize(layout.windowSize())
                .poolOffset(layout.poolOffset())
                .poolSize(layout.poolSize())
                .ownerTimeoutMs(ownerTimeoutMs)
                // The guest cannot read the MSI-X table size from config space without CAP_SYS_ADMIN
                // (sysfs gives others its first 64 bytes): the header tells it the channel→vector modulus.
                .doorbellVectors(doorbellVectors);
    }

    /**
     * What the driver session found: feature bits (DOORBELL, POOL_REGISTERED), the host driver's
     * version, and the pool's device address (0: not registered). The guest maps the region where
     * that address says (docs/protocol.md §2a), so a pinned pointer is its device pointer; it
     * discloses nothing cuMemHostGetDevicePointer did not already answer (docs/threat-model.md).
     */
    void driver(long features, int hostDriverVersion, long poolDeviceAddress) {
        header.featureBits(features).hostDriverVersion(hostDriverVersion).poolDeviceAddress(poolDeviceAddress);
    }

    /** Why the server is not (fully) usable: a guest's cuInit shows it. */
    void message(String text) {
        header.serverMessage(text);
    }

    /** This server's epoch (one more than the previous server's on this region). */
    int epoch() {
        return header.epoch();
    }

    void state(int state) {
        header.serverStateRelease(state);
    }

    /** One beat of server_heartbeat: the guest declares a server dead when it stops (§7). */
    void beat() {
        header.addServerHeartbeatRelease(1);
    }

    /** The VM-wide counter every guest process bumps (§7): it tells a paused VM from a dead process. */
    long guestHeartbeat() {
        return header.guestHeartbeatVolatile();
    }
}
