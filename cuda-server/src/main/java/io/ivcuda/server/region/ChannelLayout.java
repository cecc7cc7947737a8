package io.ivcuda.server.region;

/** Offsets inside one channel (docs/protocol.md §3), from the channel's start. */
public final class ChannelLayout {
    public static final int OWNER = 0x000;
    public static final int OWNER_PID = 0x008;
    public static final int OWNER_TID = 0x00C;
    public static final int OWNER_HEARTBEAT = 0x010;
    public static final int REQ_SEQ = 0x040;
    public static final int RING_TAIL = 0x048;
    public static final int GUEST_CHUNK = 0x050;
    public static final int GUEST_WAITING = 0x058;
    public static final int RESP_SEQ = 0x080;
    public static final int RING_HEAD = 0x088;
    public static final int SERVER_CHUNK = 0x090;
    public static final int SERVER_PARKED = 0x098;
    public static final int ATTACHED = 0x09C;
    public static final int REQUEST_AREA = 0x100;

    /** Request and response areas start with a 16-byte header (§4). */
    public static final int MESSAGE_HEADER = 16;
    public static final int MSG_OPCODE_OR_RESULT = 0;
    public static final int MSG_PAYLOAD_LEN = 4;
    public static final int MSG_SEQ = 8;

    /** Ring records start with a 16-byte header (§6). */
    public static final int RECORD_HEADER = 16;
    public static final int RECORD_TOTAL_LEN = 0;
    public static final int RECORD_OPCODE = 4;

    private ChannelLayout() {
    }
}
