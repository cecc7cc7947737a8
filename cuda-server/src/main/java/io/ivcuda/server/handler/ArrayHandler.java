package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.ArrayObjects;
import io.ivcuda.server.core.ArrayObjects.Shape;
import io.ivcuda.server.gen.ArraysCalls;
import io.ivcuda.server.gen.Reply;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Arrays and mipmapped arrays (docs/memory.md). Each is a handle of the process, its logical bytes
 * counted against the VM's memory quota from creation to destroy or reclaim. The geometry every
 * copy is held to is the driver's own description of the array (cuArray3DGetDescriptor_v2), asked
 * once when the handle is minted. Levels of a mipmapped array and planes of an array are minted on
 * request and belong to their parent: cuArrayDestroy refuses them, and they go with the parent.
 */
final class ArrayHandler implements ArraysCalls {
    /** Where descriptors are written in the worker's scratch (the backends use its first slots). */
    private static final int DESCRIPTOR_OFFSET = 1024;

    private final Session session;

    ArrayHandler(Session session) {
        this.session = session;
    }

    private ArrayObjects arrays() {
        return session.vm.arrays();
    }

    private String who(String what) {
        return "channel " + session.index() + " pid " + session.ownerPid() + " " + what;
    }

    /** The driver's description of a native array as a {@link Shape}, or null if it has none. */
    private Shape describe(long nativeArray, long parent, long reserved) {
        long d = session.out.scratch + DESCRIPTOR_OFFSET;
        if (session.cuda.array3DGetDescriptor(d, nativeArray) != CuResult.SUCCESS) {
            return null;
        }
        return new Shape(org.agrona.UnsafeApi.getLong(d), org.agrona.UnsafeApi.getLong(d + 8),
                org.agrona.UnsafeApi.getLong(d + 16), org.agrona.UnsafeApi.getInt(d + 24),
                org.agrona.UnsafeApi.getInt(d + 28), org.agrona.UnsafeApi.getInt(d + 32), parent, reserved);
    }

    /** The quota bytes of a new array or mipmapped array, reserved; -1 (logged) when refused. */
    private long reserve(long width, long height, long depth, int format, int channels, int levels, String what) {
        if (width < 0 || height < 0 || depth < 0) {
            session.warn("width", width + "x" + height + "x" + depth, CuResult.INVALID_VALUE);
            return -1;
        }
        long bytes = ArrayObjects.quotaBytes(width, height, depth, format, channels, levels);
        if (bytes < 0) {
            session.warn("width", width + "x" + height + "x" + depth + " elements cannot be counted",
                    CuResult.INVALID_VALUE);
            return -1;
        }
        return session.vm.reserve(bytes, who(what), session.out) ? bytes : -2;
    }

    @Override
    public int ivc_array_create(Reply r, long width, long height, long depth, int format, int numChannels, int flags) {
        long bytes = reserve(width, height, depth, format, numChannels, 1, "ivc_array_create");
        if (bytes < 0) {
            return bytes == -1 ? CuResult.INVALID_VALUE : CuResult.OUT_OF_MEMORY;
        }
        int result = session.cuda.arrayCreate(session.out, width, height, depth, format, numChannels, flags);
        if (result != CuResult.SUCCESS) {
            session.vm.release(bytes);
            return result;
        }
        long array = session.out.handle;
        Shape shape = describe(array, 0, bytes);
        if (shape == null) {
            session.cuda.arrayDestroy(array);
            session.vm.release(bytes);
            return session.refuse("array", "the driver does not describe the array it made", CuResult.UNKNOWN);
        }
        arrays().put(array, shape);
        r.set(0, session.vm.handles().mint(ArrayObjects.KIND_ARRAY, session.token(), array,
                session.currentNativeContext()));
        return result;
    }

    /**
     * Only arrays the process made; their planes' handles go first (each once no call uses it),
     * then the array, then its quota.
     */
    @Override
    public int cuArrayDestroy(Reply r, long hArray) {
        Shape shape = arrays().shape(hArray);
        if (shape == null || shape.parent() != 0) {
            return session.refuse("hArray", "is a level or plane of another array: it goes with its parent",
                    CuResult.INVALID_HANDLE);
        }
        session.vm.handles().removeDependents(session.token(), ArrayObjects.KIND_ARRAY, hArray, session.chunks::stopping);
        // forgotten before the driver may hand the same native value to another call's new array
        arrays().forget(hArray);
        arrays().forgetPlanes(hArray);
        int result = session.cuda.arrayDestroy(hArray);
        if (result == CuResult.SUCCESS) {
            session.vm.release(shape.reserved());
        } else {
            arrays().put(hArray, shape);
        }
        return result;
    }

    /** Copies {@code bytes} of the descriptor the backend wrote at the scratch into out-value 0. */
    private int answer(Reply r, int result, int bytes) {
        if (result == CuResult.SUCCESS) {
            r.buffer().putBytes(r.bytesIndex(0), new UnsafeBuffer(session.out.scratch + DESCRIPTOR_OFFSET, bytes), 0,
                    bytes);
        }
        return result;
    }

    private long descriptor(int bytes) {
        long d = session.out.scratch + DESCRIPTOR_OFFSET;
        org.agrona.UnsafeApi.setMemory(d, bytes, (byte) 0);
        return d;
    }

    @Override
    public int cuArrayGetDescriptor_v2(Reply r, long hArray) {
        return answer(r, session.cuda.arrayGetDescriptor(descriptor(24), hArray), 24);
    }

    @Override
    public int cuArray3DGetDescriptor_v2(Reply r, long hArray) {
        return answer(r, session.cuda.array3DGetDescriptor(descriptor(40), hArray), 40);
    }

    @Override
    public int cuArrayGetMemoryRequirements(Reply r, long array, int device) {
        return answer(r, session.cuda.arrayGetMemoryRequirements(descriptor(32), array, device), 32);
    }

    /** The process's handle for a level or plane (the one it has, or a new one) whose parent is {@code parent}. */
    private int child(Reply r, int result, long parent) {
        if (result != CuResult.SUCCESS) {
            return result;
        }
        long nativeArray = session.out.handle;
        var known = session.vm.handles().findNative(ArrayObjects.KIND_ARRAY, session.token(), nativeArray);
        if (known != null) {
            r.set(0, known.id());
            return result;
        }
        Shape shape = describe(nativeArray, parent, 0);
        if (shape == null) {
            return session.refuse("array", "the driver does not describe the level or plane", CuResult.UNKNOWN);
        }
        arrays().put(nativeArray, shape);
        r.set(0, session.vm.handles().mint(ArrayObjects.KIND_ARRAY, session.token(), nativeArray, parent));
        return result;
    }

    @Override
    public int cuArrayGetPlane(Reply r, long hArray, int planeIdx) {
        return child(r, session.cuda.arrayGetPlane(session.out, hArray, planeIdx), hArray);
    }

    @Override
    public int ivc_mipmapped_array_create(Reply r, long width, long height, long depth, int format, int numChannels,
                                          int flags, int numMipmapLevels) {
        if (numMipmapLevels < 1) {
            return session.refuse("numMipmapLevels", String.valueOf(Integer.toUnsignedLong(numMipmapLevels)),
                    CuResult.INVALID_VALUE);
        }
        long bytes = reserve(width, height, depth, format, numChannels, numMipmapLevels, "ivc_mipmapped_array_create");
        if (bytes < 0) {
            return bytes == -1 ? CuResult.INVALID_VALUE : CuResult.OUT_OF_MEMORY;
        }
        int result = session.cuda.mipmappedArrayCreate(session.out, width, height, depth, format, numChannels, flags,
                numMipmapLevels);
        if (result != CuResult.SUCCESS) {
            session.vm.release(bytes);
            return result;
        }
        long mipmap = session.out.handle;
        arrays().putMipmap(mipmap, bytes);
        r.set(0, session.vm.handles().mint(ArrayObjects.KIND_MIPMAPPED_ARRAY, session.token(), mipmap,
                session.currentNativeContext()));
        return result;
    }

    /** Its levels' handles go first (each once no call uses it), then the driver's object and the quota. */
    @Override
    public int cuMipmappedArrayDestroy(Reply r, long hMipmappedArray) {
        session.vm.handles().removeDependents(session.token(), ArrayObjects.KIND_ARRAY, hMipmappedArray,
                session.chunks::stopping);
        // forgotten before the driver may hand the same native value to another call's new object
        long reserved = arrays().forgetMipmap(hMipmappedArray);
        int result = session.cuda.mipmappedArrayDestroy(hMipmappedArray);
        if (result == CuResult.SUCCESS) {
            session.vm.release(reserved);
        } else {
            arrays().putMipmap(hMipmappedArray, reserved);
        }
        return result;
    }

    @Override
    public int cuMipmappedArrayGetLevel(Reply r, long hMipmappedArray, int level) {
        return child(r, session.cuda.mipmappedArrayGetLevel(session.out, hMipmappedArray, level), hMipmappedArray);
    }

    @Override
    public int cuMipmappedArrayGetMemoryRequirements(Reply r, long mipmap, int device) {
        return answer(r, session.cuda.mipmappedArrayGetMemoryRequirements(descriptor(32), mipmap, device), 32);
    }

    @Override
    public int cuDeviceGetTexture1DLinearMaxWidth(Reply r, int format, int numChannels, int dev) {
        int result = session.cuda.deviceGetTexture1DLinearMaxWidth(session.out, format, numChannels, dev);
        if (result == CuResult.SUCCESS) {
            r.set(0, session.out.bytes);
        }
        return result;
    }
}
