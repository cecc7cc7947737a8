package io.ivcuda.server.handler;

import static io.ivcuda.server.core.HandleTable.KIND_CTX;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.core.Owner;
import io.ivcuda.server.gen.ContextCalls;
import io.ivcuda.server.gen.Reply;

/**
 * Contexts and the device's primary context. Contexts reach the handlers as native values (the
 * dispatcher checked that they are the process's); answers that name a context mint or find the
 * process's id for it. The primary context is shared by the VM's processes: retained and released
 * per process, never reset or destroyed by one of them.
 */
final class ContextHandler implements ContextCalls {
    private final Session session;
    private long lastContextNative;
    private long lastContextId;

    ContextHandler(Session session) {
        this.session = session;
    }

    /** The guest id for the native current context (0 when none or not this process's). */
    private long currentContextId() {
        long nativeCtx = session.currentNativeContext();
        if (nativeCtx == 0) {
            return 0;
        }
        HandleTable handles = session.vm.handles();
        // cudart asks for the current context all the time: remember the last answer (still checked)
        if (nativeCtx == lastContextNative && handles.lookup(lastContextId, KIND_CTX, session.token()) != null) {
            return lastContextId;
        }
        HandleTable.Entry e = handles.findNative(KIND_CTX, session.token(), nativeCtx);
        if (e == null) {
            return 0;
        }
        lastContextNative = nativeCtx;
        lastContextId = e.id();
        return e.id();
    }

    @Override
    public int cuCtxCreate_v2(Reply r, int flags, int dev) {
        int result = session.cuda.ctxCreate(session.out, flags, dev);
        if (result == CuResult.SUCCESS) {
            r.set(0, session.vm.handles().mint(KIND_CTX, session.token(), session.out.handle, 0));
        }
        return result;
    }

    @Override
    public int cuCtxDestroy_v2(Reply r, long ctx) {
        int result = session.cuda.ctxDestroy(ctx);
        if (result == CuResult.SUCCESS) {
            session.vm.contextDestroyed(session.token(), session.owner(), ctx);
        }
        return result;
    }

    @Override
    public int cuCtxGetCurrent(Reply r) {
        r.set(0, currentContextId());
        return CuResult.SUCCESS;
    }

    @Override
    public int cuCtxSetCurrent(Reply r, long ctx) {
        return session.cuda.ctxSetCurrent(ctx);
    }

    @Override
    public int cuCtxPushCurrent_v2(Reply r, long ctx) {
        return session.cuda.ctxPushCurrent(ctx);
    }

    @Override
    public int cuCtxPopCurrent_v2(Reply r) {
        long id = currentContextId();
        int result = session.cuda.ctxPopCurrent(session.out);
        r.set(0, id);
        return result;
    }

    @Override
    public int cuCtxGetDevice(Reply r) {
        int result = session.cuda.ctxGetDevice(session.out);
        r.set(0, 0);
        return result;
    }

    @Override
    public int cuCtxGetDevice_v2(Reply r, long ctx) {
        r.set(0, 0);
        return CuResult.SUCCESS;
    }

    @Override
    public int cuCtxSynchronize(Reply r) {
        return session.cuda.ctxSynchronize();
    }

    @Override
    public int cuCtxSynchronize_v2(Reply r, long ctx) {
        // the named context, whatever is current on this thread (0: the current one)
        return session.vm.inContext().run(ctx, session.out, session.cuda::ctxSynchronize);
    }

    @Override
    public int cuCtxGetFlags(Reply r) {
        int result = session.cuda.ctxGetFlags(session.out);
        r.set(0, session.out.value);
        return result;
    }

    @Override
    public int cuCtxGetApiVersion(Reply r, long ctx) {
        int result = session.cuda.ctxGetApiVersion(session.out, ctx);
        r.set(0, session.out.value);
        return result;
    }

    @Override
    public int cuCtxGetLimit(Reply r, int limit) {
        int result = session.cuda.ctxGetLimit(session.out, limit);
        r.set(0, session.out.bytes);
        return result;
    }

    @Override
    public int cuCtxSetLimit(Reply r, int limit, long value) {
        return session.cuda.ctxSetLimit(limit, value);
    }

    @Override
    public int cuCtxGetStreamPriorityRange(Reply r) {
        int result = session.cuda.ctxGetStreamPriorityRange(session.out);
        r.set(0, session.out.value);
        r.set(1, session.out.greatestPriority);
        return result;
    }

    @Override
    public int cuDevicePrimaryCtxRetain(Reply r, int dev) {
        int result = session.cuda.primaryCtxRetain(session.out, dev);
        if (result == CuResult.SUCCESS) {
            Owner owner = session.owner();
            owner.primaryRetains().incrementAndGet();
            HandleTable.Entry e = session.vm.handles().findNative(KIND_CTX, owner.token(), session.out.handle);
            // extra 1 marks the primary context: never destroyed by reclaim, only released
            r.set(0, e != null ? e.id() : session.vm.handles().mint(KIND_CTX, owner.token(), session.out.handle, 1));
        }
        return result;
    }

    @Override
    public int cuDevicePrimaryCtxRelease_v2(Reply r, int dev) {
        Owner owner = session.owner();
        if (owner.primaryRetains().get() <= 0) {
            session.warn("dev", "primary context not retained by this process", CuResult.INVALID_CONTEXT);
            return CuResult.INVALID_CONTEXT;
        }
        int result = session.cuda.primaryCtxRelease(dev);
        if (result == CuResult.SUCCESS) {
            owner.primaryRetains().decrementAndGet();
        }
        return result;
    }

    @Override
    public int cuDevicePrimaryCtxReset_v2(Reply r, int dev) {
        // resetting would destroy other processes' state in the shared primary context: refuse
        return CuResult.SUCCESS;
    }

    @Override
    public int cuDevicePrimaryCtxGetState(Reply r, int dev) {
        int result = session.cuda.primaryCtxGetState(session.out, dev);
        r.set(0, session.out.value);
        // Active as this guest process sees it: the server's own retain (for the region's
        // registration) and other processes' retains must not show, as they would not natively.
        r.set(1, session.owner().primaryRetains().get() > 0 ? 1 : 0);
        return result;
    }

    @Override
    public int cuDevicePrimaryCtxSetFlags_v2(Reply r, int dev, int flags) {
        return session.cuda.primaryCtxSetFlags(dev, flags);
    }
}
