package io.ivcuda.server.handler;

import static io.ivcuda.server.core.HandleTable.KIND_CTX;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.gen.Reply;
import io.ivcuda.server.gen.StreamqueryCalls;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * Stream queries and attributes (api/graphs.api, docs/graphs.md). The dispatcher resolved the
 * streams; what the driver answers in native values (a context) is translated back to this
 * process's handles. Attribute values are copied out of the request before they are checked.
 */
final class StreamQueryHandler implements StreamqueryCalls {
    /** CUlaunchAttributeID values a stream may carry (cuda.h). */
    static final int ATTR_ACCESS_POLICY_WINDOW = 1;
    static final int ATTR_SYNCHRONIZATION_POLICY = 3;
    static final int ATTR_PRIORITY = 8;
    static final int ATTR_MEM_SYNC_DOMAIN_MAP = 9;
    static final int ATTR_MEM_SYNC_DOMAIN = 10;
    static final int VALUE_SIZE = 64;

    private final Session session;

    StreamQueryHandler(Session session) {
        this.session = session;
    }

    @Override
    public int cuStreamGetFlags(Reply r, long hStream) {
        int result = session.cuda.streamGetFlags(session.out, hStream);
        r.set(0, session.out.value);
        return result;
    }

    @Override
    public int cuStreamGetPriority(Reply r, long hStream) {
        int result = session.cuda.streamGetPriority(session.out, hStream);
        r.set(0, session.out.value);
        return result;
    }

    /** The stream's context as this process names it: 0 when the process holds no handle for it. */
    private int contextOf(Reply r, long hStream) {
        int result = session.cuda.streamGetCtx(session.out, hStream);
        if (result == CuResult.SUCCESS) {
            HandleTable.Entry e = session.vm.handles().findNative(KIND_CTX, session.token(), session.out.handle);
            r.set(0, e == null ? 0 : e.id());
        }
        return result;
    }

    @Override
    public int cuStreamGetCtx(Reply r, long hStream) {
        return contextOf(r, hStream);
    }

    @Override
    public int cuStreamGetCtx_v2(Reply r, long hStream) {
        r.set(1, 0);
        return contextOf(r, hStream);
    }

    @Override
    public int cuStreamGetDevice(Reply r, long hStream) {
        // the stream's context must be one the driver knows; the guest sees one device, ordinal 0
        int result = session.cuda.streamGetCtx(session.out, hStream);
        r.set(0, 0);
        return result;
    }

    @Override
    public int cuStreamGetId(Reply r, long hStream) {
        int result = session.cuda.streamGetId(session.out, hStream);
        r.set(0, session.out.handle);
        return result;
    }

    @Override
    public int cuStreamGetAttribute(Reply r, long hStream, int attr) {
        long value = session.out.scratch + 256;
        UnsafeApi.setMemory(value, VALUE_SIZE, (byte) 0);
        int result = session.cuda.streamGetAttribute(hStream, attr, value);
        if (result == CuResult.SUCCESS) {
            r.buffer().putBytes(r.bytesIndex(0), new org.agrona.concurrent.UnsafeBuffer(value, VALUE_SIZE), 0, VALUE_SIZE);
        }
        return result;
    }

    @Override
    public int ivc_stream_set_attribute(Reply r, DirectBuffer in, long hStream, int attr, int valueIndex) {
        // one copy, then every check and the driver read that copy
        long value = session.out.scratch + 256;
        UnsafeApi.copyMemory(in.addressOffset() + valueIndex, value, VALUE_SIZE);
        switch (attr) {
            case ATTR_ACCESS_POLICY_WINDOW -> {
                long base = UnsafeApi.getLong(value);
                long bytes = UnsafeApi.getLong(value + 8);
                if (bytes != 0 && !session.deviceRange(base, bytes)) {
                    return session.refuse("value.accessPolicyWindow", "base_ptr/num_bytes are not the process's device memory",
                            CuResult.INVALID_VALUE);
                }
            }
            case ATTR_SYNCHRONIZATION_POLICY, ATTR_PRIORITY, ATTR_MEM_SYNC_DOMAIN_MAP, ATTR_MEM_SYNC_DOMAIN -> {
            }
            default -> {
                return session.refuse("attr", attr + " is not a stream attribute this server sets", CuResult.INVALID_VALUE);
            }
        }
        return session.cuda.streamSetAttribute(hStream, attr, value);
    }

    @Override
    public int cuStreamCopyAttributes(Reply r, long dst, long src) {
        return session.cuda.streamCopyAttributes(dst, src);
    }
}
