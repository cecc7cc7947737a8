package io.ivcuda.server.region;

import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.wire.ChannelFlyweight;

/**
 * The region's layout as the server decided it. The server keeps this copy and never reads a
 * layout value back from the region, which the guest can write (docs/protocol.md intro).
 */
public record Layout(long regionSize, int channelCount, int channelStride, long channelTableOffset,
                     int requestAreaSize, int responseAreaSize, int ringSize, int windowSize,
                     long poolOffset, long poolSize) {

    public static final int PAGE = 4096;
    static final long POOL_ALIGNMENT = 2L << 20;
    public static final int DEFAULT_CHANNELS = 32;
    public static final int REQUEST_AREA_SIZE = 64 * 1024;
    public static final int RESPONSE_AREA_SIZE = 64 * 1024;
    /** The ring's size when {@code limit.ring.bytes} is not set. */
    public static final int DEFAULT_RING_SIZE = (int) (long) ServerKeys.LIMIT_RING_BYTES.defaultValue();
    public static final int MIN_DERIVED_WINDOW = 256 * 1024;
    public static final int MAX_WINDOW = 16 * 1024 * 1024;
    public static final int MIN_WINDOW = 8 * 1024;

    public int requestAreaOffset() {
        return ChannelFlyweight.AREAS_OFFSET;
    }

    public int responseAreaOffset() {
        return requestAreaOffset() + requestAreaSize;
    }

    public int ringOffset() {
        return responseAreaOffset() + responseAreaSize;
    }

    public int windowOffset() {
        return ringOffset() + ringSize;
    }

    public long channelOffset(int index) {
        return channelTableOffset + (long) index * channelStride;
    }

    /** {@link #autoChannelCount(long, int)} with the default ring. */
    public static int autoChannelCount(long regionSize) {
        return autoChannelCount(regionSize, DEFAULT_RING_SIZE);
    }

    /** The default channel count: 32, or as many as fit in half of a small region (at least 1). */
    public static int autoChannelCount(long regionSize, int ringSize) {
        long fit = (regionSize / 2 - PAGE) / strideFor(MIN_DERIVED_WINDOW, ringSize);
        return (int) Math.max(1, Math.min(DEFAULT_CHANNELS, fit));
    }

    static int strideFor(int window, int ringSize) {
        long bytes = (long) ChannelFlyweight.AREAS_OFFSET + REQUEST_AREA_SIZE + RESPONSE_AREA_SIZE + ringSize + window;
        return (int) ((bytes + PAGE - 1) / PAGE * PAGE);
    }

    /** {@link #compute(long, int, int, int)} with the default ring. */
    public static Layout compute(long regionSize, int channelCount, int window) {
        return compute(regionSize, channelCount, window, DEFAULT_RING_SIZE);
    }

    /**
     * Computes the layout. {@code window} 0 means derived: the largest power of two in
     * [256 KiB, 16 MiB] with which the channels take at most a quarter of the region, or a smaller
     * one (≥ 8 KiB) when even 256 KiB windows do not fit.
     *
     * {@code ringSize} is each channel's ring ({@code limit.ring.bytes}, checked when the
     * configuration was loaded); it goes into the header's {@code ring_size}, which the guest follows.
     *
     * @throws IllegalArgumentException naming the key whose value cannot work
     */
    public static Layout compute(long regionSize, int channelCount, int window, int ringSize) {
        if (ringSize < PAGE || ringSize > 1 << 20 || Integer.bitCount(ringSize) != 1) {
            throw new IllegalArgumentException(ServerKeys.LIMIT_RING_BYTES.name() + ": " + ringSize
                    + " is not a power of two in 4 KiB..1 MiB");
        }
        if (regionSize < 1L << 20 || Long.bitCount(regionSize) != 1) {
            throw new IllegalArgumentException(ServerKeys.REGION_SIZE.name() + ": " + regionSize + " is not a power of two ≥ 1 MiB");
        }
        if (channelCount < 1 || channelCount > 4096) {
            throw new IllegalArgumentException(ServerKeys.CHANNEL_COUNT.name() + ": " + channelCount + " is not in 1..4096");
        }
        int w = window;
        if (w == 0) {
            long perChannel = regionSize / 4 / channelCount - strideFor(0, ringSize);
            w = perChannel <= 0 ? MIN_DERIVED_WINDOW
                    : (int) Math.max(MIN_DERIVED_WINDOW, Math.min(MAX_WINDOW, Long.highestOneBit(perChannel)));
            if (PAGE + (long) channelCount * strideFor(w, ringSize) > regionSize) {
                long fit = (regionSize - PAGE) / channelCount - strideFor(0, ringSize);
                w = fit < MIN_WINDOW ? MIN_WINDOW : (int) Long.highestOneBit(fit);
            }
        } else if (w < MIN_WINDOW || w > MAX_WINDOW || w % (2 * PAGE) != 0) {
            throw new IllegalArgumentException(ServerKeys.CHANNEL_WINDOW.name() + ": " + w + " is not a multiple of 8192 in 8 KiB..16 MiB");
        }
        int stride = strideFor(w, ringSize);
        long poolOffset = PAGE + (long) channelCount * stride;
        if (poolOffset > regionSize) {
            throw new IllegalArgumentException(ServerKeys.CHANNEL_COUNT.name() + ": " + channelCount + " channels of " + stride
                    + " bytes do not fit in " + ServerKeys.REGION_SIZE.name() + " " + regionSize);
        }
        // The pool starts on a 2 MiB boundary where the region leaves room: large pinned
        // buffers are then as aligned as the driver's own cuMemHostAlloc memory.
        long alignedPool = (poolOffset + POOL_ALIGNMENT - 1) / POOL_ALIGNMENT * POOL_ALIGNMENT;
        if (alignedPool < regionSize) {
            poolOffset = alignedPool;
        }
        return new Layout(regionSize, channelCount, stride, PAGE, REQUEST_AREA_SIZE, RESPONSE_AREA_SIZE,
                ringSize, w, poolOffset, regionSize - poolOffset);
    }
}
