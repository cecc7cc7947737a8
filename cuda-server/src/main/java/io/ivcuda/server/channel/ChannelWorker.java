package io.ivcuda.server.channel;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.RefusalLog;
import io.ivcuda.server.gen.Dispatcher;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.gen.Reply;
import io.ivcuda.server.region.Layout;
import io.ivcuda.wire.ChannelFlyweight;
import io.ivcuda.wire.RecordFlyweight;
import io.ivcuda.wire.RequestFlyweight;
import io.ivcuda.wire.ResponseFlyweight;
import java.util.function.Function;
import org.agrona.concurrent.UnsafeBuffer;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Serves one claimed channel on its own thread (guest thread ↔ host thread, so the CUDA current
 * context follows the guest thread). Watches req_seq and the ring, waiting as its {@link IdleWait}
 * says (plain: spin/yield/park backoff; doorbell: spin, then sleep until the guest rings), drains the
 * ring before each sync request (docs/protocol.md §4), dispatches through the generated
 * {@link Dispatcher} to its {@link ChannelCalls}, keeps the channel's sticky async error (§6), and stops
 * when the owner word changes or the server stops.
 *
 * <p>Everything it logs about a guest's mistakes goes through the VM's {@link RefusalLog}: counted per
 * kind, a few lines a minute per kind, whatever the guest sends. A handler that throws is a server bug:
 * the call gets CUDA_ERROR_UNKNOWN and the worker goes on.
 */
public final class ChannelWorker implements Runnable {
    private static final Logger LOG = LogManager.getLogger(ChannelWorker.class);

    private final ChannelState state;
    private final ChannelFlyweight control = new ChannelFlyweight();
    private final RequestFlyweight request = new RequestFlyweight();
    private final ResponseFlyweight response = new ResponseFlyweight();
    private final RecordFlyweight record = new RecordFlyweight();
    private final UnsafeBuffer channel;
    private final long token;
    private final Layout layout;
    private final ChannelCalls calls;
    private final Reply reply = new Reply();
    private final IdleWait idle;
    private final IdleWait.WorkCheck channelWork = this::hasWork;
    private final RefusalLog refusals;
    private final int ringMask;
    private volatile boolean stop;
    private volatile boolean finished;
    private boolean releaseOnExit;
    private volatile Thread thread;
    private boolean poisoned;
    /** The serving loop left because the guest gave the channel back (set by the worker's thread). */
    private boolean ownerLeft;
    private int sticky;

    /**
     * @param calls makes the channel's handlers, given the window they stream through
     */
    public ChannelWorker(ChannelState state, UnsafeBuffer channel, long token, Layout layout, IdleWait idle,
                         Function<ChunkStream, ChannelCalls> calls) {
        this(state, channel, token, layout, idle, calls, new RefusalLog(io.ivcuda.server.core.Limits.DEFAULT));
    }

    /** @param refusals where refused requests are counted and logged (the VM's) */
    public ChannelWorker(ChannelState state, UnsafeBuffer channel, long token, Layout layout, IdleWait idle,
                         Function<ChunkStream, ChannelCalls> calls, RefusalLog refusals) {
        this.state = state;
        this.refusals = refusals;
        this.channel = channel;
        this.token = token;
        this.layout = layout;
        this.ringMask = layout.ringSize() - 1;
        this.idle = idle;
        control.wrap(channel, 0);
        request.wrap(channel, layout.requestAreaOffset());
        response.wrap(channel, layout.responseAreaOffset());
        this.calls = calls.apply(new ChunkStream(control, state, idle, this::stopping, layout));
    }

    public int index() {
        return state.index;
    }

    public long token() {
        return token;
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
        return control.reqSeqVolatile() != state.lastSeq
                || (control.ringTailVolatile() != state.ringHead && !poisoned) || stopping();
    }

    private boolean stopping() {
        return stop || control.ownerVolatile() != token;
    }

    /**
     * {@link #stopping()} for the serving loop, which leaves when it answers true: remembers whether
     * it leaves because the guest gave the channel back (owner no longer this token) rather than
     * because it was told to stop, for {@link #detach()}.
     */
    private boolean leaving() {
        if (stop) {
            return true;
        }
        if (control.ownerVolatile() != token) {
            ownerLeft = true;
            return true;
        }
        return false;
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
        control.attachedRelease(1);
        try {
            while (!leaving()) {
                long req = control.reqSeqAcquire();
                if (req != state.lastSeq) {
                    // The guest stores owner before it publishes req_seq: a request seen here with
                    // the owner no longer ours is the next process's first one (its hello), for
                    // the worker the watcher attaches for it — not for this one, which must stop.
                    if (leaving()) {
                        break;
                    }
                    serveRequest(req);
                    idle.reset();
                    continue;
                }
                long tail = control.ringTailAcquire();
                if (tail != state.ringHead && !poisoned) {
                    if (leaving()) {
                        break; // the same for the next owner's ring records
                    }
                    drainRing(tail);
                    idle.reset();
                    continue;
                }
                idle.idle(channelWork);
            }
        } catch (Throwable e) {
            // a bug of the server's own, not a guest's doing: said once per kind with its stack
            refusals.log(LOG, Level.ERROR, "worker failed " + e.getClass().getSimpleName(),
                    () -> "channel " + state.index + " pid " + control.ownerPid() + ": worker failed", e);
        } finally {
            calls.detach();
            detach();
            if (releaseOnExit) {
                control.compareAndSetOwner(token, 0);
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
        // A worker that left because its owner gave the channel back settles nothing: the guest
        // released it at rest, and the owner word reading this token again now means the same
        // process claimed it anew (another of its threads, token alike) and may have published its
        // hello already — the next worker's to serve, not this one's to answer with an error.
        if (!ownerLeft && control.ownerVolatile() == token) {
            long pending = control.reqSeqAcquire();
            if (pending != state.lastSeq) {
                // a request published but never served: answer it so the guest does not read a stale response
                response.result(CuResult.NOT_INITIALIZED).payloadLen(0).seq(pending);
            }
            state.lastSeq = pending;
            state.ringHead = control.ringTailAcquire();
            state.serverChunk = control.guestChunkAcquire();
            control.ringHeadRelease(state.ringHead);
            control.serverChunkRelease(state.serverChunk);
            control.respSeqRelease(state.lastSeq);
            idle.published(); // a guest sleeping on its interrupt learns at once
        }
        control.attachedRelease(0);
    }

    private void serveRequest(long req) {
        int opcode = request.opcode();
        int payloadLen = request.payloadLen();
        long seq = request.seq();
        calls.calling(opcode);
        // everything the thread queued before the call runs before it
        long tail = control.ringTailAcquire();
        if (tail != state.ringHead && !poisoned) {
            drainRing(tail);
            calls.calling(opcode);
        }
        int result;
        reply.target(channel, response.offset() + ResponseFlyweight.LENGTH);
        int room = layout.responseAreaSize() - ResponseFlyweight.LENGTH;
        int responseLen = 0;
        String fault = null;
        String detail = null;
        if (req != state.lastSeq + 1) {
            result = CuResult.INVALID_VALUE;
            fault = "req_seq (" + req + ", expected " + (state.lastSeq + 1) + ")";
        } else if (seq != req) {
            result = CuResult.INVALID_VALUE;
            fault = "seq (" + seq + ", req_seq " + req + ")";
        } else if (poisoned) {
            result = CuResult.ILLEGAL_STATE;
        } else if (!calls.greeted() && opcode != Opcodes.IVC_HELLO) {
            result = CuResult.NOT_INITIALIZED;
            fault = "opcode (first request must be ivc_hello)";
        } else if (payloadLen < 0 || payloadLen > layout.requestAreaSize() - RequestFlyweight.LENGTH) {
            result = CuResult.INVALID_VALUE;
            fault = "payload_len (" + Integer.toUnsignedString(payloadLen) + ")";
        } else {
            long started = System.nanoTime();
            try {
                result = Dispatcher.sync(calls.handlers(), opcode, channel, request.offset() + RequestFlyweight.LENGTH,
                        payloadLen, reply, room);
                fault = reply.fault();
                detail = reply.detail();
                responseLen = fault == null ? reply.payloadLength() : 0;
            } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
                handlerFailed(opcode, e);
                result = CuResult.UNKNOWN;
            } finally {
                calls.called();
            }
            calls.finished(opcode, result, System.nanoTime() - started);
            // A kept async error is answered by a call that succeeded without outputs (synchronise,
            // query, free...). A call that succeeded with outputs answers them and leaves the error
            // kept: answering the error would drop what it made (a graph exec, an allocation), which
            // the guest would then never learn of. A call that failed answers its own error.
            if (sticky != 0 && (result != CuResult.SUCCESS || responseLen == 0)) {
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
            logFault("", opcode, fault, detail, result);
        }
        response.result(result).payloadLen(responseLen).seq(req);
        // device output the call (or an earlier one) left for the process: the guest reads it
        // before it returns, where the program would see it natively (docs/kernels.md)
        control.outputPending(calls.greeted() && calls.outputPending() ? 1 : 0);
        state.lastSeq = req;
        control.respSeqRelease(req);
        idle.published();
        if (!calls.greeted() && result != CuResult.SUCCESS) {
            // a channel whose first request is not a valid hello is reclaimed (§3), once at rest
            int pid = control.ownerPid();
            refusals.log(LOG, Level.WARN, "channel released without ivc_hello",
                    () -> "channel " + state.index + " pid " + pid + ": released (no valid ivc_hello)");
            releaseOnExit = true;
            stop = true;
        }
    }

    private void logFault(String where, int opcode, String fault, String detail, int result) {
        int pid = control.ownerPid();
        // the kind: the operation and the field's name, never the values the guest chose
        int cut = fault.indexOf(' ');
        String field = cut < 0 ? fault : fault.substring(0, cut);
        refusals.log(LOG, Level.WARN, Opcodes.name(opcode) + where + " " + field, () -> "channel " + state.index
                + " pid " + pid + " " + Opcodes.name(opcode) + where + ": " + fault
                + (detail == null ? " at fault" : " " + detail) + " → " + CuResult.name(result));
    }

    private void handlerFailed(int opcode, Throwable e) {
        int pid = control.ownerPid();
        refusals.log(LOG, Level.ERROR, Opcodes.name(opcode) + " handler failed " + e.getClass().getSimpleName(),
                () -> "channel " + state.index + " pid " + pid + " " + Opcodes.name(opcode)
                        + ": handler failed → CUDA_ERROR_UNKNOWN (a server bug)", e);
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
        if (!calls.greeted()) {
            // nothing runs for a channel whose process has not said hello: it has no owner yet
            poison("ring records before ivc_hello");
            return;
        }
        while (head != tail && !poisoned && !stopping()) {
            int pos = (int) (head & ringMask);
            record.wrap(channel, ring + pos);
            int total = record.totalLen();
            int opcode = record.opcode();
            if (total < 8 || (total & 7) != 0 || total > ringSize - pos || total > tail - head
                    || (opcode != Opcodes.PAD && total < RecordFlyweight.LENGTH)) {
                poison("total_len (" + Integer.toUnsignedString(total) + " at ring position " + pos + ")");
                return;
            }
            if (opcode != Opcodes.PAD) {
                calls.calling(opcode);
                int result;
                long started = System.nanoTime();
                try {
                    result = Dispatcher.async(calls.handlers(), opcode, channel, ring + pos + RecordFlyweight.LENGTH,
                            total - RecordFlyweight.LENGTH, reply, 0);
                } catch (RuntimeException | OutOfMemoryError | StackOverflowError e) {
                    handlerFailed(opcode, e);
                    result = CuResult.UNKNOWN;
                } finally {
                    calls.called();
                }
                calls.finished(opcode, result, System.nanoTime() - started);
                if (result != CuResult.SUCCESS) {
                    if (reply.fault() != null) {
                        logFault(" (ring)", opcode, reply.fault(), reply.detail(), result);
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
                control.ringHeadRelease(head);
                published = head;
            }
        }
        if (published != head) {
            control.ringHeadRelease(head);
        }
    }

    private void poison(String field) {
        poisoned = true;
        int pid = control.ownerPid();
        int cut = field.indexOf(' ');
        refusals.log(LOG, Level.WARN, "ring " + (cut < 0 ? field : field.substring(0, cut)), () -> "channel "
                + state.index + " pid " + pid + " ring: " + field + " at fault → channel poisoned, later calls get "
                + CuResult.name(CuResult.ILLEGAL_STATE));
    }
}
