package io.ivcuda.server.handler;

import io.ivcuda.server.backend.Out;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.LaunchCalls;
import io.ivcuda.server.gen.Reply;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;
import org.agrona.collections.Long2ObjectHashMap;

/**
 * Functions and launches. The guest packs a launch's parameters with the layout {@code
 * ivc_param_layout} gave it; the server rebuilds the {@code void**} over the packed bytes from the
 * same layout, which it asks the driver once per function and keeps for this channel (until a
 * module of the VM is unloaded: a native function's address may then be reused). A CUkernel given
 * as the function is resolved to its function in the current context first ({@link LibraryHandler#function}).
 */
final class LaunchHandler implements LaunchCalls {
    private static final int MAX_PARAMS = (Out.SCRATCH_SIZE - 64) / 8;

    private final Session session;
    private final Long2ObjectHashMap<long[]> layouts = new Long2ObjectHashMap<>();
    private long layoutsAtUnloads;
    private int layoutError;

    LaunchHandler(Session session) {
        this.session = session;
    }

    @Override
    public int cuFuncGetAttribute(Reply r, int attrib, long hfunc) {
        int k = LibraryHandler.function(session, hfunc);
        if (k != CuResult.SUCCESS) {
            return k;
        }
        hfunc = session.out.handle;
        int result = session.cuda.funcGetAttribute(session.out, attrib, hfunc);
        r.set(0, session.out.value);
        return result;
    }

    @Override
    public int cuFuncSetAttribute(Reply r, long hfunc, int attrib, int value) {
        int k = LibraryHandler.function(session, hfunc);
        if (k != CuResult.SUCCESS) {
            return k;
        }
        hfunc = session.out.handle;
        return session.cuda.funcSetAttribute(hfunc, attrib, value);
    }

    @Override
    public int cuFuncSetCacheConfig(Reply r, long hfunc, int config) {
        int k = LibraryHandler.function(session, hfunc);
        if (k != CuResult.SUCCESS) {
            return k;
        }
        hfunc = session.out.handle;
        return session.cuda.funcSetCacheConfig(hfunc, config);
    }

    @Override
    public int cuFuncGetParamInfo(Reply r, long func, long paramIndex) {
        int k = LibraryHandler.function(session, func);
        if (k != CuResult.SUCCESS) {
            return k;
        }
        func = session.out.handle;
        int result = session.cuda.funcGetParamInfo(session.out, func, paramIndex);
        r.set(0, session.out.offset);
        r.set(1, session.out.bytes);
        return result;
    }

    @Override
    public int cuOccupancyMaxActiveBlocksPerMultiprocessor(Reply r, long func, int blockSize, long dynamicSMemSize) {
        return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(r, func, blockSize, dynamicSMemSize, 0);
    }

    @Override
    public int cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(Reply r, long func, int blockSize,
                                                                     long dynamicSMemSize, int flags) {
        int k = LibraryHandler.function(session, func);
        if (k != CuResult.SUCCESS) {
            return k;
        }
        func = session.out.handle;
        int result = session.cuda.occupancyMaxActiveBlocksPerMultiprocessor(session.out, func, blockSize,
                dynamicSMemSize, flags);
        r.set(0, session.out.value);
        return result;
    }

    /**
     * The parameter layout of a function as {@code offset << 32 | size} per parameter, asked from
     * cuFuncGetParamInfo until it answers CUDA_ERROR_INVALID_VALUE (past the last parameter), and
     * kept per worker: launches then cost no extra driver calls. Null with {@link #layoutError}.
     */
    private long[] paramLayout(long function) {
        long unloads = session.vm.moduleUnloads();
        if (unloads != layoutsAtUnloads) {
            layouts.clear();
            layoutsAtUnloads = unloads;
        }
        long[] cached = layouts.get(function);
        if (cached != null) {
            return cached;
        }
        Out out = session.out;
        long[] entries = new long[16];
        int count = 0;
        while (true) {
            int result = session.cuda.funcGetParamInfo(out, function, count);
            if (result == CuResult.INVALID_VALUE) {
                break;
            }
            if (result != CuResult.SUCCESS) {
                layoutError = result;
                return null;
            }
            if (count == MAX_PARAMS || out.offset < 0 || out.offset > 0xffffffffL || out.bytes < 0 || out.bytes > 0xffffffffL) {
                layoutError = CuResult.NOT_SUPPORTED;
                return null;
            }
            if (count == entries.length) {
                entries = Arrays.copyOf(entries, count * 2);
            }
            entries[count++] = out.offset << 32 | out.bytes;
        }
        long[] layout = Arrays.copyOf(entries, count);
        layouts.put(function, layout);
        return layout;
    }

    /**
     * One u64 entry per parameter, {@code offset << 32 | size}; {@code count} is the number of
     * parameters even when the guest's capacity holds fewer entries.
     */
    @Override
    public int ivc_param_layout(Reply r, int capacity, long f) {
        int k = LibraryHandler.function(session, f);
        if (k != CuResult.SUCCESS) {
            return k;
        }
        f = session.out.handle;
        long[] entries = paramLayout(f);
        if (entries == null) {
            return layoutError;
        }
        int fit = Math.min(entries.length, r.outbufCapacity() / 8);
        for (int i = 0; i < fit; i++) {
            r.buffer().putLong(r.outbufIndex() + 8 * i, entries[i], ByteOrder.LITTLE_ENDIAN);
        }
        r.set(0, entries.length);
        r.outbufLength(fit * 8);
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_launch(DirectBuffer in, long f, int gridDimX, int gridDimY, int gridDimZ, int blockDimX,
                          int blockDimY, int blockDimZ, int sharedMemBytes, long stream, int paramsIndex,
                          int paramsLength, int paramsSize) {
        int k = LibraryHandler.function(session, f);
        if (k != CuResult.SUCCESS) {
            return k;
        }
        f = session.out.handle;
        long[] entries = paramLayout(f);
        if (entries == null) {
            return layoutError;
        }
        // rebuild void** kernelParams over the packed buffer, validated against the layout's end
        long params = session.out.scratch + 64;
        long base = in.addressOffset() + paramsIndex;
        long end = 0;
        for (int i = 0; i < entries.length; i++) {
            long offset = entries[i] >>> 32;
            end = Math.max(end, offset + (entries[i] & 0xffffffffL));
            UnsafeApi.putLong(params + 8L * i, base + offset);
        }
        // the guest packs up to the layout's end; a CU_LAUNCH_PARAM_BUFFER may carry trailing padding
        if (paramsLength < end) {
            session.warn("paramsSize", paramsLength + " is short of the kernel's parameter end " + end, CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        return session.cuda.launchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                sharedMemBytes, stream, entries.length == 0 ? 0 : params);
    }
}
