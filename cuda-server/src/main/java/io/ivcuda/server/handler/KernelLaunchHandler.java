package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.KernellaunchCalls;
import io.ivcuda.server.gen.Reply;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Launches with attributes (cuLaunchKernelEx, cuLaunchCooperativeKernel) and the cluster occupancy
 * queries. The parameters take ivc_launch's packing ({@link LaunchHandler#packedParams}); the
 * guest's CUlaunchAttribute array is copied once, attribute by attribute, into a CUlaunchConfig
 * the server owns, and only attributes whose value is scalar pass (their value bytes hold no
 * address the driver would follow).
 */
final class KernelLaunchHandler implements KernellaunchCalls {
    static final int ATTRIBUTE_SIZE = 72;
    static final int MAX_ATTRIBUTES = 16;
    /** CUlaunchConfig: 7 unsigned, pad, hStream at 32, attrs at 40, numAttrs at 48 (cuda.h). */
    static final int CONFIG_SIZE = 56;

    /** Scalar-valued ids: IGNORE, COOPERATIVE, CLUSTER_DIMENSION, CLUSTER_SCHEDULING_POLICY_PREFERENCE,
     * PROGRAMMATIC_STREAM_SERIALIZATION, PRIORITY, MEM_SYNC_DOMAIN_MAP, MEM_SYNC_DOMAIN,
     * PREFERRED_CLUSTER_DIMENSION, PREFERRED_SHARED_MEMORY_CARVEOUT, NVLINK_UTIL_CENTRIC_SCHEDULING. */
    private static final int[] SCALAR = {0, 2, 4, 5, 6, 8, 9, 10, 11, 14, 16};
    /** Known ids whose value holds a pointer or an event (ACCESS_POLICY_WINDOW, PROGRAMMATIC_EVENT,
     * LAUNCH_COMPLETION_EVENT, DEVICE_UPDATABLE_KERNEL_NODE): not remoted. */
    private static final int[] NOT_REMOTED = {1, 7, 12, 13};

    private final Session session;
    private final LaunchHandler launch;
    /** The CUlaunchConfig and its attributes: native memory the GC frees with the handler. */
    private final UnsafeBuffer config = new UnsafeBuffer(ByteBuffer.allocateDirect(CONFIG_SIZE + MAX_ATTRIBUTES * ATTRIBUTE_SIZE));

    KernelLaunchHandler(Session session, LaunchHandler launch) {
        this.session = session;
        this.launch = launch;
    }

    private static boolean in(int[] ids, int id) {
        for (int i : ids) {
            if (i == id) {
                return true;
            }
        }
        return false;
    }

    /** Fills {@link #config} (the attributes copied and checked); answers the refusal or CUDA_SUCCESS. */
    private int configure(int gx, int gy, int gz, int bx, int by, int bz, int sharedMem, long stream, DirectBuffer in,
                          int attrsIndex, int attrsLength) {
        if (attrsLength % ATTRIBUTE_SIZE != 0 || attrsLength / ATTRIBUTE_SIZE > MAX_ATTRIBUTES) {
            return session.refuse("attrsSize", attrsLength + " bytes are not at most " + MAX_ATTRIBUTES + " attributes of "
                    + ATTRIBUTE_SIZE + " bytes", CuResult.INVALID_VALUE);
        }
        int count = attrsLength / ATTRIBUTE_SIZE;
        config.setMemory(0, config.capacity(), (byte) 0);
        int[] dims = {gx, gy, gz, bx, by, bz, sharedMem};
        for (int i = 0; i < dims.length; i++) {
            config.putInt(4 * i, dims[i], ByteOrder.LITTLE_ENDIAN);
        }
        config.putLong(32, stream, ByteOrder.LITTLE_ENDIAN);
        config.putLong(40, count == 0 ? 0 : config.addressOffset() + CONFIG_SIZE, ByteOrder.LITTLE_ENDIAN);
        config.putInt(48, count, ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < count; i++) {
            int from = attrsIndex + i * ATTRIBUTE_SIZE;
            int to = CONFIG_SIZE + i * ATTRIBUTE_SIZE;
            int id = in.getInt(from, ByteOrder.LITTLE_ENDIAN);
            if (!in(SCALAR, id)) {
                boolean known = in(NOT_REMOTED, id);
                return session.refuse("attrs", "launch attribute " + id + (known ? " carries a pointer or an event: not remoted"
                        : " is unknown"), known ? CuResult.NOT_SUPPORTED : CuResult.INVALID_VALUE);
            }
            config.putInt(to, id, ByteOrder.LITTLE_ENDIAN);
            // the value as the guest wrote it (read once, here): scalars only, checked by the driver
            config.putBytes(to + 8, in, from + 8, ATTRIBUTE_SIZE - 8);
        }
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_launch_ex(DirectBuffer in, long f, int gridDimX, int gridDimY, int gridDimZ, int blockDimX,
                             int blockDimY, int blockDimZ, int sharedMemBytes, long stream, int attrsIndex,
                             int attrsLength, int attrsSize, int paramsIndex, int paramsLength, int paramsSize) {
        int result = configure(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, stream, in,
                attrsIndex, attrsLength);
        if (result == CuResult.SUCCESS) {
            result = launch.packedParams(f, in, paramsIndex, paramsLength);
        }
        if (result != CuResult.SUCCESS) {
            return result;
        }
        return session.cuda.launchKernelEx(config.addressOffset(), launch.packedFunction, launch.packedParams);
    }

    @Override
    public int ivc_occupancy_cluster(Reply r, DirectBuffer in, int query, long f, int gridDimX, int gridDimY,
                                     int gridDimZ, int blockDimX, int blockDimY, int blockDimZ, int sharedMemBytes,
                                     long stream, int attrsIndex, int attrsLength, int attrsSize) {
        if (query != 0 && query != 1) {
            return session.refuse("query", query + " is neither 0 (active clusters) nor 1 (potential cluster size)",
                    CuResult.INVALID_VALUE);
        }
        int result = configure(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, stream, in,
                attrsIndex, attrsLength);
        if (result == CuResult.SUCCESS) {
            result = LibraryHandler.function(session, f);
        }
        if (result != CuResult.SUCCESS) {
            return result;
        }
        long function = session.out.handle;
        result = query == 0 ? session.cuda.occupancyMaxActiveClusters(session.out, function, config.addressOffset())
                : session.cuda.occupancyMaxPotentialClusterSize(session.out, function, config.addressOffset());
        r.set(0, session.out.value);
        return result;
    }

    @Override
    public int cuOccupancyAvailableDynamicSMemPerBlock(Reply r, long func, int numBlocks, int blockSize) {
        int result = LibraryHandler.function(session, func);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        result = session.cuda.occupancyAvailableDynamicSMemPerBlock(session.out, session.out.handle, numBlocks, blockSize);
        r.set(0, session.out.bytes);
        return result;
    }
}
