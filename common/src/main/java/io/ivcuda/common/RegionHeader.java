package io.ivcuda.common;

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
    public static final long MAGIC = 0x3130414455435649L;
    static final int OFFSET_MAGIC = 0x00;
    public static final int OFFSET_SERVER_STATE = 0x18;
    static final int OFFSET_EPOCH = 0x1C;
    static final int OFFSET_SERVER_HEARTBEAT = 0x20;
    static final int OFFSET_HOST_DRIVER_VERSION = 0x28;
    static final int OFFSET_FEATURE_BITS = 0x30;
    static final int OFFSET_CHANNEL_COUNT = 0x40;
    static final int OFFSET_SERVER_MESSAGE = 0x100;
    static final int SERVER_MESSAGE_SIZE = 256;
    public static final int STATE_READY = 1;
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
