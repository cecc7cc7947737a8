package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.MemopCalls;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * Stream memory operations (api/graphs.api): the dispatcher checked the single operations'
 * addresses; a batch's operations are copied out of the ring record one by one, and each
 * operation and address is checked on the copy before the driver's array is built from it.
 */
final class MemOpHandler implements MemopCalls {
    /** sizeof(CUstreamBatchMemOpParams) */
    static final int OP_SIZE = 48;
    /** A batch is built in the worker's scratch memory: at most this many operations. */
    static final int MAX_OPS = (Out.SCRATCH_SIZE - 256) / OP_SIZE;

    /** CUstreamBatchMemOpType (cuda.h) */
    static final int WAIT_VALUE_32 = 1;
    static final int WRITE_VALUE_32 = 2;
    static final int FLUSH_REMOTE_WRITES = 3;
    static final int WAIT_VALUE_64 = 4;
    static final int WRITE_VALUE_64 = 5;
    static final int BARRIER = 6;

    private final Session session;

    MemOpHandler(Session session) {
        this.session = session;
    }

    @Override
    public int cuStreamWaitValue32_v2(long stream, long addr, int value, int flags) {
        return session.cuda.streamWaitValue(stream, addr, value & 0xffffffffL, flags, false);
    }

    @Override
    public int cuStreamWaitValue64_v2(long stream, long addr, long value, int flags) {
        return session.cuda.streamWaitValue(stream, addr, value, flags, true);
    }

    @Override
    public int cuStreamWriteValue32_v2(long stream, long addr, int value, int flags) {
        return session.cuda.streamWriteValue(stream, addr, value & 0xffffffffL, flags, false);
    }

    @Override
    public int cuStreamWriteValue64_v2(long stream, long addr, long value, int flags) {
        return session.cuda.streamWriteValue(stream, addr, value, flags, true);
    }

    @Override
    public int ivc_stream_batch_memop(DirectBuffer in, long stream, int count, int opsIndex, int opsLength, int opsSize,
                                      int flags) {
        if (count <= 0 || count > MAX_OPS) {
            return session.refuse("count", count + " is not within 1.." + MAX_OPS, CuResult.INVALID_VALUE);
        }
        if (opsLength != count * OP_SIZE) {
            return session.refuse("ops", opsLength + " bytes for " + count + " operations", CuResult.INVALID_VALUE);
        }
        long ops = session.out.scratch + 256;
        UnsafeApi.copyMemory(in.addressOffset() + opsIndex, ops, (long) count * OP_SIZE);
        for (int i = 0; i < count; i++) {
            long op = ops + (long) i * OP_SIZE;
            int operation = UnsafeApi.getInt(op);
            int width = switch (operation) {
                case WAIT_VALUE_32, WRITE_VALUE_32 -> 4;
                case WAIT_VALUE_64, WRITE_VALUE_64 -> 8;
                case FLUSH_REMOTE_WRITES, BARRIER -> 0;
                default -> -1;
            };
            if (width < 0) {
                return session.refuse("ops[" + i + "].operation", operation + " is no memory operation", CuResult.INVALID_VALUE);
            }
            if (width > 0) {
                long address = UnsafeApi.getLong(op + 8);
                if (!session.deviceRange(address, width)) {
                    return session.refuse("ops[" + i + "].address", "is not the process's device memory", CuResult.INVALID_VALUE);
                }
                UnsafeApi.putLong(op + 32, 0); // alias: the driver's own field
            }
        }
        return session.cuda.streamBatchMemOp(stream, count, ops, flags);
    }
}
