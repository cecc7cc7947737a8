package io.ivcuda.server.region;

/** Offsets of the header page (docs/protocol.md §2). */
public final class HeaderLayout {
    public static final long MAGIC_VALUE = 0x3130414455435649L;
    public static final int PROTOCOL_VERSION_VALUE = 1;
    public static final int HEADER_SIZE_VALUE = 4096;

    public static final int MAGIC = 0x000;
    public static final int PROTOCOL_VERSION = 0x008;
    public static final int HEADER_SIZE = 0x00C;
    public static final int REGION_SIZE = 0x010;
    public static final int SERVER_STATE = 0x018;
    public static final int EPOCH = 0x01C;
    public static final int SERVER_HEARTBEAT = 0x020;
    public static final int HOST_DRIVER_VERSION = 0x028;
    public static final int API_VERSION = 0x02C;
    public static final int FEATURE_BITS = 0x030;
    public static final int API_HASH = 0x038;
    public static final int CHANNEL_COUNT = 0x040;
    public static final int CHANNEL_STRIDE = 0x044;
    public static final int CHANNEL_TABLE_OFFSET = 0x048;
    public static final int REQUEST_AREA_SIZE = 0x050;
    public static final int RESPONSE_AREA_SIZE = 0x054;
    public static final int RING_SIZE = 0x058;
    public static final int WINDOW_SIZE = 0x05C;
    public static final int POOL_OFFSET = 0x060;
    public static final int POOL_SIZE = 0x068;
    public static final int OWNER_TIMEOUT_MS = 0x070;
    /** Doorbell mode: the device's MSI-X vectors (channel i uses vector i mod this); 0 in plain mode. */
    public static final int DOORBELL_VECTORS = 0x074;
    public static final int GUEST_HEARTBEAT = 0x078;
    public static final int SERVER_MESSAGE = 0x100;
    public static final int SERVER_MESSAGE_SIZE = 256;

    public static final int STATE_INIT = 0;
    public static final int STATE_READY = 1;
    public static final int STATE_STOPPING = 2;
    public static final int STATE_STOPPED = 3;

    public static final long FEATURE_DOORBELL = 1L;
    public static final long FEATURE_POOL_REGISTERED = 2L;

    private HeaderLayout() {
    }
}
