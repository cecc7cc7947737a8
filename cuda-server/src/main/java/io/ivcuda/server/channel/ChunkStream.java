package io.ivcuda.server.channel;

import io.ivcuda.server.region.Layout;
import io.ivcuda.wire.ChannelFlyweight;
import java.util.function.BooleanSupplier;
import org.agrona.UnsafeApi;

/**
 * The channel's data window as the server's side of a streamed transfer sees it (docs/protocol.md
 * §6): chunk {@code c} travels through slot {@code c mod 2}; the guest publishes {@code guest_chunk},
 * the server {@code server_chunk}. A handler that streams asks for the next chunk number, waits for
 * the guest, copies a slot and publishes; every wait is bounded by the channel's liveness. A refused
 * transfer still moves every chunk ({@link #discard}, {@link #zeroFill}) so the counters end equal.
 */
public final class ChunkStream {
    private final ChannelFlyweight channel;
    private final ChannelState state;
    private final IdleWait idle;
    private final BooleanSupplier stopping;
    private final IdleWait.WorkCheck chunkArrived = this::chunkArrived;
    private final long windowAddress;
    private final int slotSize;
    private long target;

    ChunkStream(ChannelFlyweight channel, ChannelState state, IdleWait idle, BooleanSupplier stopping, Layout layout) {
        this.channel = channel;
        this.state = state;
        this.idle = idle;
        this.stopping = stopping;
        this.windowAddress = channel.buffer().addressOffset() + layout.windowOffset();
        this.slotSize = layout.windowSize() / 2;
    }

    /** Whether the channel's worker is asked to stop (its owner changed, a reclaim, the server stops). */
    public boolean stopping() {
        return stopping.getAsBoolean();
    }

    /** The number of the next transfer's first chunk (the server's own count, never the region's). */
    public long next() {
        return state.serverChunk;
    }

    /** Bytes per chunk: half the window. */
    public int slotSize() {
        return slotSize;
    }

    /** The address of chunk {@code chunk}'s slot. */
    public long slotAddress(long chunk) {
        return windowAddress + (chunk & 1) * (long) slotSize;
    }

    private boolean chunkArrived() {
        return channel.guestChunkVolatile() - target >= 0 || stopping.getAsBoolean();
    }

    /** Waits until the guest's chunk counter reaches {@code value}; false if the channel stops first. */
    public boolean awaitGuest(long value) {
        idle.reset();
        target = value;
        while (channel.guestChunkAcquire() - value < 0) {
            if (stopping.getAsBoolean()) {
                return false;
            }
            idle.idle(chunkArrived);
        }
        idle.reset();
        return true;
    }

    /** Publishes the server's chunk counter (and wakes a guest that sleeps on it). */
    public void publish(long value) {
        state.serverChunk = value;
        channel.serverChunkRelease(value);
        idle.published();
    }

    /** Consumes the chunks of a refused host→device transfer of {@code bytes}; false if the channel stopped. */
    public boolean discard(long bytes) {
        long chunk = next();
        for (long done = 0; done < bytes; done += slotSize, chunk++) {
            if (!awaitGuest(chunk + 1)) {
                return false;
            }
            publish(chunk + 1);
        }
        return true;
    }

    /** Produces zero-filled chunks for a refused device→host transfer of {@code bytes}; false if the channel stopped. */
    public boolean zeroFill(long bytes) {
        long chunk = next();
        for (long done = 0; done < bytes; done += slotSize, chunk++) {
            // the slot of chunk c is free once the guest drained chunk c-2
            if (!awaitGuest(chunk - 1)) {
                return false;
            }
            UnsafeApi.setMemory(slotAddress(chunk), Math.min(slotSize, bytes - done), (byte) 0);
            publish(chunk + 1);
        }
        return true;
    }
}
