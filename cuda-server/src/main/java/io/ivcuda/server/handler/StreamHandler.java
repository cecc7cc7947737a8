package io.ivcuda.server.handler;

import static io.ivcuda.server.core.HandleTable.KIND_EVENT;
import static io.ivcuda.server.core.HandleTable.KIND_STREAM;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Reply;
import io.ivcuda.server.gen.StreamCalls;

/**
 * Streams and events. A new one's handle remembers the context it was created in (reclaim destroys
 * it there); the dispatcher has resolved every stream and event a call names.
 */
final class StreamHandler implements StreamCalls {
    private final Session session;

    StreamHandler(Session session) {
        this.session = session;
    }

    @Override
    public int cuStreamCreate(Reply r, int flags) {
        return cuStreamCreateWithPriority(r, flags, 0);
    }

    @Override
    public int cuStreamCreateWithPriority(Reply r, int flags, int priority) {
        int result = session.cuda.streamCreate(session.out, flags, priority);
        if (result == CuResult.SUCCESS) {
            long nativeStream = session.out.handle;
            r.set(0, session.vm.handles().mint(KIND_STREAM, session.token(), nativeStream, session.currentNativeContext()));
        }
        return result;
    }

    @Override
    public int cuStreamDestroy_v2(Reply r, long hStream) {
        return session.cuda.streamDestroy(hStream);
    }

    @Override
    public int cuStreamSynchronize(Reply r, long hStream) {
        return session.cuda.streamSynchronize(hStream);
    }

    @Override
    public int cuStreamQuery(Reply r, long hStream) {
        return session.cuda.streamQuery(hStream);
    }

    @Override
    public int cuStreamWaitEvent(long hStream, long hEvent, int flags) {
        return session.cuda.streamWaitEvent(hStream, hEvent, flags);
    }

    @Override
    public int cuEventCreate(Reply r, int flags) {
        int result = session.cuda.eventCreate(session.out, flags);
        if (result == CuResult.SUCCESS) {
            long nativeEvent = session.out.handle;
            r.set(0, session.vm.handles().mint(KIND_EVENT, session.token(), nativeEvent, session.currentNativeContext()));
        }
        return result;
    }

    @Override
    public int cuEventDestroy_v2(Reply r, long hEvent) {
        return session.cuda.eventDestroy(hEvent);
    }

    @Override
    public int cuEventRecord(long hEvent, long hStream) {
        return cuEventRecordWithFlags(hEvent, hStream, 0);
    }

    @Override
    public int cuEventRecordWithFlags(long hEvent, long hStream, int flags) {
        return session.cuda.eventRecord(hEvent, hStream, flags);
    }

    @Override
    public int cuEventSynchronize(Reply r, long hEvent) {
        return session.cuda.eventSynchronize(hEvent);
    }

    @Override
    public int cuEventQuery(Reply r, long hEvent) {
        return session.cuda.eventQuery(hEvent);
    }

    @Override
    public int cuEventElapsedTime(Reply r, long hStart, long hEnd) {
        int result = session.cuda.eventElapsedTime(session.out, hStart, hEnd);
        r.setFloat(0, session.out.milliseconds);
        return result;
    }
}
