package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Reply;
import java.nio.ByteOrder;
import java.util.function.LongUnaryOperator;
import org.agrona.UnsafeApi;

/**
 * Answers an enumeration the driver makes (a library's kernels, a module's functions) as the calling
 * process's handles, a window of it at a time: objects {@code first}.. of the driver's {@code total},
 * as many as the guest's outbuf holds. The driver is asked for all of them each time, because its
 * enumeration has no offset; each object gets the handle the process already has for it, or a new
 * one while the process may mint more.
 */
final class EnumeratedHandles {
    /** The driver's enumeration of all {@code count} objects, written at {@code dst}. */
    interface DriverEnumeration {
        int write(long dst, int count);
    }

    private EnumeratedHandles() {
    }

    /**
     * @param what          the objects, for a refusal ("kernels of the library")
     * @param capacityParam the parameter named when the process may mint no more handles
     * @param handleOf      the caller's handle for a native object
     */
    static int answer(Session session, Reply r, long total, int first, String what, String capacityParam,
                      DriverEnumeration all, LongUnaryOperator handleOf) {
        long from = first & 0xffffffffL;
        if (from > total) {
            return session.refuse("first", from + " is past the " + total + " " + what, CuResult.INVALID_VALUE);
        }
        int n = (int) Math.min(total - from, r.outbufCapacity() / 8);
        if (total == 0) {
            r.outbufLength(0);
            return CuResult.SUCCESS;
        }
        long natives = UnsafeApi.allocateMemory(8 * total);
        try {
            int result = all.write(natives, (int) total);
            if (result != CuResult.SUCCESS) {
                return result;
            }
            for (int i = 0; i < n; i++) {
                if (!session.vm.handles().canMint(session.token())) {
                    return session.refuse(capacityParam, "the process holds as many handles as the server's limits allow",
                            CuResult.OUT_OF_MEMORY);
                }
                long nativeObject = UnsafeApi.getLong(natives + 8 * (from + i));
                r.buffer().putLong(r.outbufIndex() + 8 * i, handleOf.applyAsLong(nativeObject), ByteOrder.LITTLE_ENDIAN);
            }
        } finally {
            UnsafeApi.freeMemory(natives);
        }
        r.outbufLength(8 * n);
        return CuResult.SUCCESS;
    }
}
