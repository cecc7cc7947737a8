package io.ivcuda.server.channel;

/**
 * The server's own copy of one channel's counters. It outlives owners: a new owner continues from
 * the values the server last published (resp_seq, ring_head, server_chunk), never from values read
 * back from the region.
 */
public final class ChannelState {
    public final int index;
    public long lastSeq;
    public long ringHead;
    public long serverChunk;

    public ChannelState(int index) {
        this.index = index;
    }
}
