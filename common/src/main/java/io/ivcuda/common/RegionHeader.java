package io.ivcuda.common;

import io.ivcuda.wire.HeaderFlyweight;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * What the host's tools read from a region's header page (docs/protocol.md §2): whether its server is
 * READY (the hook waits for it), and what {@code ivshmem-provisioner status} shows. Read once from
 * the file; a file that is missing or shorter than a header reads as {@link #NONE}. The guest can
 * write the header too: every field here is shown or compared, never trusted for a size or offset.
 */
public record RegionHeader(long magic, int serverState, int epoch, long serverHeartbeat, int hostDriverVersion,
                           long featureBits, int channelCount, String serverMessage) {
    public static final long MAGIC = HeaderFlyweight.MAGIC;
    static final int OFFSET_MAGIC = HeaderFlyweight.MAGIC_OFFSET;
    public static final int OFFSET_SERVER_STATE = HeaderFlyweight.SERVER_STATE_OFFSET;
    static final int OFFSET_EPOCH = HeaderFlyweight.EPOCH_OFFSET;
    static final int OFFSET_SERVER_HEARTBEAT = HeaderFlyweight.SERVER_HEARTBEAT_OFFSET;
    static final int OFFSET_HOST_DRIVER_VERSION = HeaderFlyweight.HOST_DRIVER_VERSION_OFFSET;
    static final int OFFSET_FEATURE_BITS = HeaderFlyweight.FEATURE_BITS_OFFSET;
    static final int OFFSET_CHANNEL_COUNT = HeaderFlyweight.CHANNEL_COUNT_OFFSET;
    static final int OFFSET_SERVER_MESSAGE = HeaderFlyweight.SERVER_MESSAGE_OFFSET;
    static final int SERVER_MESSAGE_SIZE = HeaderFlyweight.SERVER_MESSAGE_LENGTH;
    public static final int STATE_READY = HeaderFlyweight.STATE_READY;
    private static final String[] STATES = {"INIT", "READY", "STOPPING", "STOPPED"};

    /** No header: no file, or not one of ours. */
    public static final RegionHeader NONE = new RegionHeader(0, 0, 0, 0, 0, 0, 0, "");

    public boolean isReady() {
        return magic == MAGIC && serverState == STATE_READY;
    }

    /** {@code READY}, {@code INIT}, …; {@code none} for no header of ours. */
    public String stateName() {
        if (magic != MAGIC) {
            return "none";
        }
        return serverState >= 0 && serverState < STATES.length ? STATES[serverState] : "state " + serverState;
    }

    /** Reads the header; a file that is missing, unreadable or shorter than a header reads as {@link #NONE}. */
    public static RegionHeader read(Path path) {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            ByteBuffer buffer = ByteBuffer.allocate(OFFSET_SERVER_MESSAGE + SERVER_MESSAGE_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            while (buffer.hasRemaining() && channel.read(buffer) > 0) {
                // fill
            }
            if (buffer.position() < OFFSET_SERVER_MESSAGE) {
                return NONE;
            }
            StringBuilder message = new StringBuilder();
            for (int i = OFFSET_SERVER_MESSAGE; i < buffer.position() && buffer.get(i) != 0; i++) {
                char c = (char) (buffer.get(i) & 0xff);
                message.append(c >= 0x20 && c < 0x7f ? c : '?');
            }
            return new RegionHeader(buffer.getLong(OFFSET_MAGIC), buffer.getInt(OFFSET_SERVER_STATE), buffer.getInt(OFFSET_EPOCH),
                    buffer.getLong(OFFSET_SERVER_HEARTBEAT), buffer.getInt(OFFSET_HOST_DRIVER_VERSION),
                    buffer.getLong(OFFSET_FEATURE_BITS), buffer.getInt(OFFSET_CHANNEL_COUNT), message.toString());
        } catch (IOException | RuntimeException e) {
            return NONE;
        }
    }
}
