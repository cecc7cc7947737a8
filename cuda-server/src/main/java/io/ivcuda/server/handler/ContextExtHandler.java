package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.ContextextCalls;
import io.ivcuda.server.gen.Reply;

/**
 * Context extensions and peer queries, answered by the driver itself: the guest sees one device,
 * so the peer calls get exactly the errors (or the "no") the real driver gives for one device.
 * Handles arrive checked (the process's contexts, events and functions; a CUkernel resolved).
 */
final class ContextExtHandler implements ContextextCalls {
    private final Session session;

    ContextExtHandler(Session session) {
        this.session = session;
    }

    @Override
    public int cuCtxGetId(Reply r, long ctx) {
        int result = session.cuda.ctxGetId(session.out, ctx);
        r.set(0, session.out.handle);
        return result;
    }

    @Override
    public int cuCtxGetCacheConfig(Reply r) {
        int result = session.cuda.ctxGetCacheConfig(session.out);
        r.set(0, session.out.value);
        return result;
    }

    @Override
    public int cuCtxSetCacheConfig(Reply r, int config) {
        return session.cuda.ctxSetCacheConfig(config);
    }

    @Override
    public int cuCtxGetSharedMemConfig(Reply r) {
        int result = session.cuda.ctxGetSharedMemConfig(session.out);
        r.set(0, session.out.value);
        return result;
    }

    @Override
    public int cuCtxSetSharedMemConfig(Reply r, int config) {
        return session.cuda.ctxSetSharedMemConfig(config);
    }

    @Override
    public int cuFuncSetSharedMemConfig(Reply r, long hfunc, int config) {
        int result = LibraryHandler.function(session, hfunc);
        return result != CuResult.SUCCESS ? result : session.cuda.funcSetSharedMemConfig(session.out.handle, config);
    }

    @Override
    public int cuCtxResetPersistingL2Cache(Reply r) {
        return session.cuda.ctxResetPersistingL2Cache();
    }

    @Override
    public int cuCtxRecordEvent(Reply r, long hCtx, long hEvent) {
        return session.cuda.ctxRecordEvent(hCtx, hEvent);
    }

    @Override
    public int cuCtxWaitEvent(Reply r, long hCtx, long hEvent) {
        return session.cuda.ctxWaitEvent(hCtx, hEvent);
    }

    @Override
    public int cuDeviceCanAccessPeer(Reply r, int dev, int peerDev) {
        int result = session.cuda.deviceCanAccessPeer(session.out, dev, peerDev);
        r.set(0, session.out.value);
        return result;
    }

    @Override
    public int cuDeviceGetP2PAttribute(Reply r, int attrib, int srcDevice, int dstDevice) {
        int result = session.cuda.deviceGetP2PAttribute(session.out, attrib, srcDevice, dstDevice);
        r.set(0, session.out.value);
        return result;
    }

    @Override
    public int cuCtxEnablePeerAccess(Reply r, long peerContext, int flags) {
        return session.cuda.ctxEnablePeerAccess(peerContext, flags);
    }

    @Override
    public int cuCtxDisablePeerAccess(Reply r, long peerContext) {
        return session.cuda.ctxDisablePeerAccess(peerContext);
    }
}
