package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.HostCalls;
import io.ivcuda.server.gen.HostfnCalls;
import io.ivcuda.server.gen.Reply;

/**
 * Host functions run in the guest process (docs/graphs.md): ivc_host_enqueue puts the server's
 * host function on the driver stream under a new {@link HostCalls} target; ivc_host_next is the
 * guest's host-function thread asking for the next function to run (and reporting the last one
 * ran). The guest's fn and userData are opaque words handed back to it, never dereferenced here.
 * A host function put on a capturing stream becomes a host node of the graph, run at each of its
 * launches: its target stays until the process is reclaimed.
 */
final class HostFnHandler implements HostfnCalls {
    private final Session session;

    HostFnHandler(Session session) {
        this.session = session;
    }

    @Override
    public int ivc_host_enqueue(Reply r, long stream, int kind, long fn, long userData, long guestStream) {
        if (kind != HostCalls.KIND_HOST_FN && kind != HostCalls.KIND_STREAM_CALLBACK) {
            return session.refuse("kind", kind + " is no stream host function kind", CuResult.INVALID_VALUE);
        }
        if (fn == 0) {
            return session.refuse("fn", "is NULL", CuResult.INVALID_VALUE);
        }
        HostCalls calls = session.vm.hostCalls();
        // captured, it becomes a host node that runs at every launch of the graph: the target
        // stays until the process goes (bounded with the others)
        boolean captured = session.cuda.streamIsCapturing(session.out, stream) == CuResult.SUCCESS
                && session.out.value != 0;
        HostCalls.Target t = calls.add(session.token(), kind, fn, userData, guestStream, !captured);
        if (t == null) {
            // before the driver gets it: a stream it holds back would keep every one (threat-model, Limits)
            return session.refuse("fn", calls.refusal(), CuResult.OUT_OF_MEMORY);
        }
        int result = kind == HostCalls.KIND_HOST_FN ? session.cuda.launchHostFunc(stream, t.key())
                : session.cuda.streamAddCallback(stream, t.key(), 0);
        if (result != CuResult.SUCCESS) {
            calls.remove(t);
        }
        return result;
    }

    @Override
    public int ivc_host_next(Reply r, long doneId, int waitMs) {
        HostCalls.Delivery d = session.vm.hostCalls().next(session.token(), doneId, waitMs & 0xffffffffL,
                session.chunks::stopping);
        if (d == null) {
            return HostCalls.NOTHING;
        }
        r.set(0, d.id);
        r.set(1, d.target.kind());
        r.set(2, d.target.fn());
        r.set(3, d.target.userData());
        r.set(4, d.target.guestStream());
        r.set(5, d.status);
        return CuResult.SUCCESS;
    }
}
