package io.ivcuda.server.core;

import static io.ivcuda.wire.ChannelFlyweight.*;

import io.ivcuda.wire.RecordFlyweight;
import io.ivcuda.wire.RequestFlyweight;
import io.ivcuda.wire.ResponseFlyweight;

import io.ivcuda.server.gen.Dispatcher;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.gen.Reply;
import io.ivcuda.server.region.Layout;
import java.nio.ByteOrder;
import org.agrona.concurrent.UnsafeBuffer;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Serves one claimed channel on its own thread (guest thread ↔ host thread, so the CUDA current
 * context follows the guest thread). Watches req_seq and the ring, waiting as its {@link IdleWait}
 * says (plain: spin/yield/park backoff; doorbell: spin, then sleep until the guest rings), drains the ring before each sync request (docs/protocol.md §4), keeps the channel's sticky async
 * error (§6), and stops when the owner word changes or the server stops.
 */
public final class ChannelWorker implements Runnable {
    private static final Logger LOG = LogManager.getLogger(ChannelWorker.class);
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    private final Vm vm;
    private final ChannelState state;
    private final UnsafeBuffer channel;
    private final long channelAddress;
    private final long token;
    private final Layout layout;
    private final RequestHandlers handlers;
    private final Reply reply = new Reply();
    private final IdleWait idle;
    private final IdleWait.WorkCheck channelWork = this::hasWork;
    private final IdleWait.WorkCheck chunkArrived = this::chunkArrived;
    private long chunkTarget;
    private final int ringMask;
    private volatile boolean stop;
    private volatile boolean finished;
    private boolean releaseOnExit;
    private volatile Thread thread;
    private boolean poisoned;
    private int sticky;
    private int currentOpcode;

    public ChannelWorker(Vm vm, ChannelState state, UnsafeBuffer channel, long token, IdleWait idle) {
        this.vm = vm;
        this.state = state;
        this.channel = channel;
        this.channelAddress = channel.addressOffset();
        this.token = token;
        this.layout = vm.layout();
        this.ringMask = layout.ringSize() - 1;
        this.idle = idle;
        this.handlers = new RequestHandlers(vm, this);
    }

    public int index() {
        return state.index;
    }

    public long token() {
        return token;
    }

    public int ownerPid() {
        return channel.getInt(OWNER_PID_OFFSET, LE);
    }

    public UnsafeBuffer channel() {
        return channel;
    }

    public long channelAddress() {
        return channelAddress;
    }

    ChannelState state() {
        return state;
    }

    int currentOpcode() {
        return currentOpcode;
    }

    /** Asks the worker to stop after its current call. */
    public void stop() {
        stop = true;
        Thread t = thread;
        if (t != null) {
            idle.wake(t);
        }
    }

    /** True once the worker has left its channel (attached = 0 stored); it touches nothing after. */
    public boolean finished() {
        return finished;
    }

    /** New work on the channel, or a reason to stop: ends an idle wait. */
    private boolean hasWork() {
        return channel.getLongVolatile(REQ_SEQ_OFFSET) != state.lastSeq
                || (channel.getLongVolatile(RING_TAIL_OFFSET) != state.ringHead && !poisoned) || stopping();
    }

    private boolean chunkArrived() {
        return channel.getLongVolatile(GUEST_CHUNK_OFFSET) - chunkTarget >= 0 || stopping();
    }

    public boolean stopping() {
        return stop || channel.getLongVolatile(OWNER_OFFSET) != token;
    }

    public void join(long millis) throws InterruptedException {
        Thread t = thread;
        if (t != null && t != Thread.currentThread()) {
            t.join(millis);
        }
    }

    public boolean alive() {
        Thread t = thread;
        return t != null && t.isAlive();
    }

    public void start() {
        Thread t = new Thread(this, "channel-" + state.index);
        t.setDaemon(true);
        thread = t;
        t.start();
    }

    @Override
    public void run() {
        channel.putIntRelease(ATTACHED_OFFSET, 1);
        try {
            while (!stopping()) {
                long req = channel.getLongAcquire(REQ_SEQ_OFFSET);
                if (req != state.lastSeq) {
                    // The guest stores owner before it publishes req_seq: a request seen here with
                    // the owner no longer ours is the next process's first one (its hello), for
                    // the worker the watcher attaches for it — not for this one, which must stop.
                    if (stopping()) {
                        break;
                    }
                    serveRequest(req);
                    idle.reset();
                    continue;
                }
                long tail = channel.getLongAcquire(RING_TAIL_OFFSET);
                if (tail != state.ringHead && !poisoned) {
                    if (stopping()) {
                        break; // the same for the next owner's ring records
                    }
                    drainRing(tail);
                    idle.reset();
                    continue;
                }
                idle.idle(channelWork);
            }
        } catch (Throwable e) {
            LOG.error("channel {} pid {}: worker failed", state.index, ownerPid(), e);
        } finally {
            handlers.detach();
            detach();
            if (releaseOnExit) {
                channel.compareAndSetLong(OWNER_OFFSET, token, 0);
            }
            finished = true;
            idle.detached();
        }
    }

    /**
     * Leaves the channel at rest for its next owner (docs/protocol.md §3): resp_seq = req_seq,
     * ring_head = ring_tail, server_chunk = guest_chunk, then attached = 0. Settling happens only
     * while the channel is still this owner's (reclaim, refused hello, server stop): once the guest
     * released it, it was at rest already, and another process may have claimed it and published
     * its first request, which is not ours to answer.
     */
    private void detach() {
        if (channel.getLongVolatile(OWNER_OFFSET) == token) {
            long pending = channel.getLongAcquire(REQ_SEQ_OFFSET);
            if (pending != state.lastSeq) {
                // a request published but never served: answer it so the guest does not read a stale response
                int responseArea = layout.responseAreaOffset();
                channel.putInt(responseArea + ResponseFlyweight.RESULT_OFFSET, CuResult.NOT_INITIALIZED, LE);
                channel.putInt(responseArea + ResponseFlyweight.PAYLOAD_LEN_OFFSET, 0, LE);
                channel.putLong(responseArea + ResponseFlyweight.SEQ_OFFSET, pending, LE);
            }
            state.lastSeq = pending;
            state.ringHead = channel.getLongAcquire(RING_TAIL_OFFSET);
            state.serverChunk = channel.getLongAcquire(GUEST_CHUNK_OFFSET);
            channel.putLongRelease(RING_HEAD_OFFSET, state.ringHead);
            channel.putLongRelease(SERVER_CHUNK_OFFSET, state.serverChunk);
            channel.putLongRelease(RESP_SEQ_OFFSET, state.lastSeq);
            idle.published(); // a guest sleeping on its interrupt learns at once
        }
        channel.putIntRelease(ATTACHED_OFFSET, 0);
    }

    private void serveRequest(long req) {
        int requestArea = layout.requestAreaOffset();
        int responseArea = layout.responseAreaOffset();
        int opcode = channel.getInt(requestArea + RequestFlyweight.OPCODE_OFFSET, LE);
        int payloadLen = channel.getInt(requestArea + RequestFlyweight.PAYLOAD_LEN_OFFSET, LE);
        long seq = channel.getLong(requestArea + RequestFlyweight.SEQ_OFFSET, LE);
        currentOpcode = opcode;
        // everything the thread queued before the call runs before it
        long tail = channel.getLongAcquire(RING_TAIL_OFFSET);
        if (tail != state.ringHead && !poisoned) {
            drainRing(tail);
        }
        int result;
        reply.target(channel, responseArea + RequestFlyweight.LENGTH);
        int room = layout.responseAreaSize() - RequestFlyweight.LENGTH;
        int responseLen = 0;
        String fault = null;
        if (req != state.lastSeq + 1) {
            result = CuResult.INVALID_VALUE;
            fault = "req_seq (" + req + ", expected " + (state.lastSeq + 1) + ")";
        } else if (seq != req) {
            result = CuResult.INVALID_VALUE;
            fault = "seq (" + seq + ", req_seq " + req + ")";
        } else if (poisoned) {
            result = CuResult.ILLEGAL_STATE;
        } else if (!handlers.greeted() && opcode != Opcodes.IVC_HELLO) {
            result = CuResult.NOT_INITIALIZED;
            fault = "opcode (first request must be ivc_hello)";
        } else if (payloadLen < 0 || payloadLen > layout.requestAreaSize() - RequestFlyweight.LENGTH) {
            result = CuResult.INVALID_VALUE;
            fault = "payload_len (" + Integer.toUnsignedString(payloadLen) + ")";
        } else {
            try {
                result = Dispatcher.sync(handlers, opcode, channel, requestArea + RequestFlyweight.LENGTH, payloadLen, reply, room);
                fault = reply.fault();
                responseLen = fault == null ? reply.payloadLength() : 0;
            } catch (RuntimeException e) {
                LOG.error("channel {} pid {} {}: handler failed", state.index, ownerPid(), Opcodes.name(opcode), e);
                result = CuResult.UNKNOWN;
            }
            if (sticky != 0) {
                if (result == CuResult.SUCCESS) {
                    result = sticky;
                }
                sticky = 0;
            }
            // outs travel only with CUDA_SUCCESS; a refused hello still carries its message (§4)
            if (result != CuResult.SUCCESS && opcode != Opcodes.IVC_HELLO) {
                responseLen = 0;
            }
        }
        if (fault != null) {
            LOG.warn("channel {} pid {} {}: {} at fault → {}", state.index, ownerPid(), Opcodes.name(opcode), fault,
                    CuResult.name(result));
        }
        channel.putInt(responseArea + ResponseFlyweight.RESULT_OFFSET, result, LE);
        channel.putInt(responseArea + ResponseFlyweight.PAYLOAD_LEN_OFFSET, responseLen, LE);
        channel.putLong(responseArea + ResponseFlyweight.SEQ_OFFSET, req, LE);
        state.lastSeq = req;
        channel.putLongRelease(RESP_SEQ_OFFSET, req);
        idle.published();
        if (result == CuResult.NOT_INITIALIZED && !handlers.greeted()) {
            // a channel whose first request is not a valid hello is reclaimed (§3), once at rest
            LOG.warn("channel {} pid {}: released (no valid ivc_hello)", state.index, ownerPid());
            releaseOnExit = true;
            stop = true;
        }
    }

    /** Runs ring records up to {@code tail}; a malformed ring poisons the channel (§6). */
    private void drainRing(long tail) {
        int ring = layout.ringOffset();
        int ringSize = layout.ringSize();
        long head = state.ringHead;
        long published = head;
        long pending = tail - head;
        if (pending < 0 || pending > ringSize) {
            poison("ring_tail (" + tail + ", ring_head " + head + ", ring_size " + ringSize + ")");
            return;
        }
        while (head != tail && !poisoned) {
            int pos = (int) (head & ringMask);
            int total = channel.getInt(ring + pos + RecordFlyweight.TOTAL_LEN_OFFSET, LE);
            int opcode = channel.getInt(ring + pos + RecordFlyweight.OPCODE_OFFSET, LE);
            currentOpcode = opcode;
            if (total < 8 || (total & 7) != 0 || total > ringSize - pos || total > tail - head
                    || (opcode != Opcodes.PAD && total < RecordFlyweight.LENGTH)) {
                poison("total_len (" + Integer.toUnsignedString(total) + " at ring position " + pos + ")");
                return;
            }
            if (opcode != Opcodes.PAD) {
                int result;
                try {
                    result = Dispatcher.async(handlers, opcode, channel, ring + pos + RecordFlyweight.LENGTH,
                            total - RecordFlyweight.LENGTH, reply, 0);
                } catch (RuntimeException e) {
                    LOG.error("channel {} pid {} {}: handler failed", state.index, ownerPid(), Opcodes.name(opcode), e);
                    result = CuResult.UNKNOWN;
                }
                if (result != CuResult.SUCCESS) {
                    if (reply.fault() != null) {
                        LOG.warn("channel {} pid {} {} (ring): {} at fault → {}", state.index, ownerPid(),
                                Opcodes.name(opcode), reply.fault(), CuResult.name(result));
                    }
                    if (sticky == 0) {
                        sticky = result;
                    }
                }
            }
            head += total;
            state.ringHead = head;
            // Publishing the head costs the guest a cache miss when it reads it: do it per
            // quarter ring, and once at the end, not per record.
            if (head - published >= ringSize / 4) {
                channel.putLongRelease(RING_HEAD_OFFSET, head);
                published = head;
            }
        }
        if (published != head) {
            channel.putLongRelease(RING_HEAD_OFFSET, head);
        }
    }

    private void poison(String field) {
        poisoned = true;
        LOG.warn("channel {} pid {} ring: {} at fault → channel poisoned, later calls get {}", state.index,
                ownerPid(), field, CuResult.name(CuResult.ILLEGAL_STATE));
    }

    /** Waits until the guest's chunk counter reaches {@code target}; false if the channel stops. */
    boolean awaitGuestChunk(long target) {
        idle.reset();
        chunkTarget = target;
        while (channel.getLongAcquire(GUEST_CHUNK_OFFSET) - target < 0) {
            if (stopping()) {
                return false;
            }
            idle.idle(chunkArrived);
        }
        idle.reset();
        return true;
    }

    void publishServerChunk(long value) {
        state.serverChunk = value;
        channel.putLongRelease(SERVER_CHUNK_OFFSET, value);
        idle.published();
    }

    /** Marks the server-side chunk count the guest must catch up to (device→host waits). */
    boolean awaitGuestChunkAtLeast(long target) {
        return awaitGuestChunk(target);
    }
}
