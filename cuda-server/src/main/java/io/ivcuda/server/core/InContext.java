package io.ivcuda.server.core;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.Out;
import java.util.function.IntSupplier;

/**
 * Runs one driver call with a given context current on the calling thread and leaves the thread's
 * context stack as it found it (push, call, pop).
 *
 * <p>Why: the driver destroys and frees an object in the context it was made in, and a call that
 * names a context (cuCtxSynchronize_v2) means that context whatever is current. The server's threads
 * carry no context of their own — a reclaim runs on the reclaimer's thread, a deferred free on the
 * thread whose call last let go of the allocation — so each such call pushes the object's context
 * first. When the push fails the call is not made: an object whose context cannot be made current
 * went with that context, and handing the driver an object of a dead context crashed the server on
 * the H200 (see {@link Vm#contextDestroyed}). Nothing is popped that was not pushed.
 */
public final class InContext {
    private final CudaBackend backend;

    public InContext(CudaBackend backend) {
        this.backend = backend;
    }

    /**
     * Makes {@code ctx} current for {@code call} (0: the call runs in whatever context is current)
     * and answers the call's result; the push's failure when the push failed, the pop's when only
     * the pop failed. {@code out} receives the popped context.
     */
    public int run(long ctx, Out out, IntSupplier call) {
        if (ctx == 0) {
            return call.getAsInt();
        }
        int pushed = backend.ctxPushCurrent(ctx);
        if (pushed != CuResult.SUCCESS) {
            return pushed;
        }
        int result = call.getAsInt();
        int popped = backend.ctxPopCurrent(out);
        return result != CuResult.SUCCESS ? result : popped;
    }
}
