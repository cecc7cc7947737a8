package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import java.nio.ByteOrder;
import java.util.function.IntUnaryOperator;
import org.agrona.DirectBuffer;

/**
 * CUmemAccessDesc arrays as the guest sends them (cuMemSetAccess, cuMemPoolSetAccess): 12 bytes
 * each, location type, location id, flags (little-endian i32). Each is read once and checked — a
 * device location naming the guest's device 0, flags none, read or read-write — before any is
 * applied.
 */
final class AccessDescs {
    static final int BYTES = 12;
    /** At most this many in one call (the guest sees one device). */
    static final int MAX = 8;
    private static final int CU_MEM_LOCATION_TYPE_DEVICE = 1;

    private AccessDescs() {
    }

    /**
     * The flags of each descriptor, in order; null when one is refused (logged through the session,
     * which answers CUDA_ERROR_INVALID_VALUE for a malformed array or bad flags).
     */
    static int[] read(Session session, DirectBuffer in, int index, int length) {
        if (length == 0 || length % BYTES != 0 || length / BYTES > MAX) {
            session.warn("descs", length + " bytes (1 to " + MAX + " descriptors of " + BYTES + ")",
                    CuResult.INVALID_VALUE);
            return null;
        }
        int[] flags = new int[length / BYTES];
        for (int i = 0; i < flags.length; i++) {
            int at = index + i * BYTES;
            int type = in.getInt(at, ByteOrder.LITTLE_ENDIAN);
            int id = in.getInt(at + 4, ByteOrder.LITTLE_ENDIAN);
            flags[i] = in.getInt(at + 8, ByteOrder.LITTLE_ENDIAN);
            if (type != CU_MEM_LOCATION_TYPE_DEVICE || session.device(id) == Session.NO_DEVICE) {
                session.warn("descs", "descriptor " + i + ": location " + type + "/" + id + " is not the device",
                        CuResult.INVALID_VALUE);
                return null;
            }
            if (flags[i] != 0 && flags[i] != 1 && flags[i] != 3) {
                session.warn("descs", "descriptor " + i + ": flags " + flags[i], CuResult.INVALID_VALUE);
                return null;
            }
        }
        return flags;
    }

    /**
     * Reads the descriptors and applies each one's flags in order ({@code apply}: flags → CUresult)
     * until one fails; CUDA_ERROR_INVALID_VALUE when {@link #read} refused them.
     */
    static int apply(Session session, DirectBuffer in, int index, int length, IntUnaryOperator apply) {
        int[] flags = read(session, in, index, length);
        if (flags == null) {
            return CuResult.INVALID_VALUE;
        }
        int result = CuResult.SUCCESS;
        for (int i = 0; i < flags.length && result == CuResult.SUCCESS; i++) {
            result = apply.applyAsInt(flags[i]);
        }
        return result;
    }
}
