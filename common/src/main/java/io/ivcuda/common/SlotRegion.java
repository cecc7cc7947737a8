package io.ivcuda.common;

import io.ivcuda.wire.HeaderFlyweight;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A back-end slot's region file ({@code ivcuda-B-slot<k>}), as the host touches it: the slot's identity
 * in the header (token and index at 0xC00, api/region.layout §2), which the back-end's agent matches
 * against the control region to know which device is which slot, and the wipe between two front-ends.
 * The back-end's QEMU maps the file the whole time, so it is written in place, never truncated or replaced.
 */
public final class SlotRegion {
    private static final int CHUNK = 1 << 20;

    private SlotRegion() {
    }

    /** Writes the slot's token and index into the header. */
    public static void stamp(Path file, ControlRegion.Token token, int slot) throws IOException {
        ByteBuffer identity = ByteBuffer.allocate(HeaderFlyweight.SLOT_INDEX_OFFSET + 4 - HeaderFlyweight.SLOT_TOKEN_LO_OFFSET)
                .order(ByteOrder.LITTLE_ENDIAN);
        identity.putLong(token.lo()).putLong(token.hi()).putInt(slot).flip();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            writeFully(channel, identity, HeaderFlyweight.SLOT_TOKEN_LO_OFFSET);
        }
    }

    /** The token and index in the header: {@code [lo, hi, index]}. */
    public static long[] readIdentity(Path file) throws IOException {
        ByteBuffer identity = ByteBuffer.allocate(20).order(ByteOrder.LITTLE_ENDIAN);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            while (identity.hasRemaining() && channel.read(identity, HeaderFlyweight.SLOT_TOKEN_LO_OFFSET + identity.position()) > 0) {
                // fill
            }
        }
        return new long[] {identity.getLong(0), identity.getLong(8), identity.getInt(16)};
    }

    /**
     * Zeroes every byte, so the next front-end sees nothing of the last one's data, then writes the slot's
     * identity back. Only chunks that hold a non-zero byte are written: reading a hole of a sparse tmpfs file
     * costs no memory, writing zeros into it would fill it.
     */
    public static void wipe(Path file, ControlRegion.Token token, int slot) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long size = channel.size();
            ByteBuffer chunk = ByteBuffer.allocateDirect(CHUNK);
            ByteBuffer zeros = ByteBuffer.allocateDirect(CHUNK);
            for (long at = 0; at < size; at += CHUNK) {
                chunk.clear().limit((int) Math.min(CHUNK, size - at));
                while (chunk.hasRemaining() && channel.read(chunk, at + chunk.position()) > 0) {
                    // fill
                }
                if (!allZero(chunk)) {
                    zeros.clear().limit(chunk.limit());
                    writeFully(channel, zeros, at);
                }
            }
        }
        stamp(file, token, slot);
    }

    private static boolean allZero(ByteBuffer chunk) {
        int n = chunk.position();
        int i = 0;
        for (; i + 8 <= n; i += 8) {
            if (chunk.getLong(i) != 0) {
                return false;
            }
        }
        for (; i < n; i++) {
            if (chunk.get(i) != 0) {
                return false;
            }
        }
        return true;
    }

    private static void writeFully(FileChannel channel, ByteBuffer data, long position) throws IOException {
        long at = position;
        while (data.hasRemaining()) {
            at += channel.write(data, at);
        }
    }
}
