package io.ivcuda.server.handler;

import io.ivcuda.server.backend.ArrayFormat;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.ArrayObjects;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.gen.Reply;
import io.ivcuda.server.gen.TexturesCalls;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Texture and surface objects (docs/memory.md). The guest sends a resource descriptor split by its
 * type, so the dispatcher has resolved its array or mipmapped array handle, or held its device
 * range to the process's memory; here the native CUDA_RESOURCE_DESC is rebuilt from those values
 * alone. The texture and view descriptors hold no handles: each is copied out of the request once
 * and the driver reads that copy. The object's value goes back to the guest unchanged (kernels
 * take it as an argument); the server keeps it as a handle of the process (kind texObject or
 * surfObject, counted against the handle limits) so that destroy and the queries accept only the
 * process's own objects, and reclaim destroys what the process leaves.
 */
final class TextureHandler implements TexturesCalls {
    static final int RESOURCE_DESC_SIZE = 144;
    static final int TEXTURE_DESC_SIZE = 104;
    static final int VIEW_DESC_SIZE = 112;
    /** CUresourcetype */
    static final int RESOURCE_ARRAY = 0, RESOURCE_MIPMAPPED_ARRAY = 1, RESOURCE_LINEAR = 2, RESOURCE_PITCH2D = 3;
    /** Where the descriptors are built in the worker's scratch (the backends use its first slots). */
    private static final int RES = 1024, TEX = RES + RESOURCE_DESC_SIZE, VIEW = TEX + TEXTURE_DESC_SIZE;

    private final Session session;

    TextureHandler(Session session) {
        this.session = session;
    }

    /** A zeroed native CUDA_RESOURCE_DESC of {@code type} with its flags; the caller fills the union (offset 8). */
    private long resource(int type, int flags) {
        long d = session.out.scratch + RES;
        UnsafeApi.setMemory(d, RESOURCE_DESC_SIZE, (byte) 0);
        UnsafeApi.putInt(d, type);
        UnsafeApi.putInt(d + 136, flags);
        return d;
    }

    /**
     * Copies the texture descriptor and, with {@code hasView} 1, the view descriptor out of the
     * request; -1 when hasView is neither 0 nor 1. Answers the view's native address (0: none).
     */
    private long descriptors(DirectBuffer in, int texIndex, int viewIndex, int hasView) {
        if (hasView != 0 && hasView != 1) {
            session.warn("hasView", String.valueOf(hasView), CuResult.INVALID_VALUE);
            return -1;
        }
        long tex = session.out.scratch + TEX;
        UnsafeApi.copyMemory(in.addressOffset() + texIndex, tex, TEXTURE_DESC_SIZE);
        if (hasView == 0) {
            return 0;
        }
        long view = session.out.scratch + VIEW;
        UnsafeApi.copyMemory(in.addressOffset() + viewIndex, view, VIEW_DESC_SIZE);
        return view;
    }

    private int createTexture(Reply r, long view) {
        if (view < 0) {
            return CuResult.INVALID_VALUE;
        }
        if (!session.canMint(ArrayObjects.KIND_TEX_OBJECT)) {
            return session.refuse("tex", "the process holds as many handles as the server's limits allow",
                    CuResult.OUT_OF_MEMORY);
        }
        int result = session.cuda.texObjectCreate(session.out, session.out.scratch + RES, session.out.scratch + TEX,
                view);
        if (result == CuResult.SUCCESS) {
            long value = session.out.handle;
            session.vm.handles().mint(ArrayObjects.KIND_TEX_OBJECT, session.token(), value,
                    session.currentNativeContext());
            r.set(0, value);
        }
        return result;
    }

    @Override
    public int ivc_tex_create_array(Reply r, DirectBuffer in, long array, int resFlags, int texDescIndex,
                                    int viewDescIndex, int hasView) {
        UnsafeApi.putLong(resource(RESOURCE_ARRAY, resFlags) + 8, array);
        return createTexture(r, descriptors(in, texDescIndex, viewDescIndex, hasView));
    }

    @Override
    public int ivc_tex_create_mipmapped(Reply r, DirectBuffer in, long mipmap, int resFlags, int texDescIndex,
                                        int viewDescIndex, int hasView) {
        UnsafeApi.putLong(resource(RESOURCE_MIPMAPPED_ARRAY, resFlags) + 8, mipmap);
        return createTexture(r, descriptors(in, texDescIndex, viewDescIndex, hasView));
    }

    /** The device range [devPtr, devPtr+sizeInBytes) was checked by the dispatcher. */
    @Override
    public int ivc_tex_create_linear(Reply r, DirectBuffer in, long devPtr, long sizeInBytes, int format,
                                     int numChannels, int resFlags, int texDescIndex, int viewDescIndex, int hasView) {
        long d = resource(RESOURCE_LINEAR, resFlags);
        UnsafeApi.putLong(d + 8, devPtr);
        UnsafeApi.putInt(d + 16, format);
        UnsafeApi.putInt(d + 20, numChannels);
        UnsafeApi.putLong(d + 24, sizeInBytes);
        return createTexture(r, descriptors(in, texDescIndex, viewDescIndex, hasView));
    }

    /**
     * The bytes a pitch2D resource reads, (height-1)·pitch + width·element size, recomputed here and
     * held to the span the dispatcher checked.
     */
    @Override
    public int ivc_tex_create_pitch2d(Reply r, DirectBuffer in, long devPtr, long span, int format, int numChannels,
                                      long width, long height, long pitchInBytes, int resFlags, int texDescIndex,
                                      int viewDescIndex, int hasView) {
        int element = ArrayFormat.elementBytes(format, numChannels);
        if (element == 0) {
            return session.refuse("format", "0x" + Integer.toHexString(format) + " with " + numChannels
                    + " channels has no fixed element size", CuResult.INVALID_VALUE);
        }
        long need = width > 0 && width <= Long.MAX_VALUE / element
                ? StridedCopyHandler.span(width * element, height, 1, pitchInBytes, height) : -1;
        if (need < 0 || need > span) {
            return session.refuse("span", width + "x" + height + " elements of " + element + " bytes with pitch "
                    + pitchInBytes + " need " + (need < 0 ? "an impossible span" : need + " bytes") + ", the checked span is "
                    + span, CuResult.INVALID_VALUE);
        }
        long d = resource(RESOURCE_PITCH2D, resFlags);
        UnsafeApi.putLong(d + 8, devPtr);
        UnsafeApi.putInt(d + 16, format);
        UnsafeApi.putInt(d + 20, numChannels);
        UnsafeApi.putLong(d + 24, width);
        UnsafeApi.putLong(d + 32, height);
        UnsafeApi.putLong(d + 40, pitchInBytes);
        return createTexture(r, descriptors(in, texDescIndex, viewDescIndex, hasView));
    }

    /** Destroys one of the process's objects of {@code kind} once no other call of it uses the object. */
    private int destroy(int kind, long value, String field) {
        HandleTable.Entry known = session.vm.handles().findNative(kind, session.token(), value);
        HandleTable.Entry e = known == null ? null
                : session.vm.handles().beginRelease(known.id(), kind, session.token(), session.chunks::stopping);
        if (e == null) {
            return session.refuse(field, "0x" + Long.toHexString(value) + " is not an object of this process",
                    CuResult.INVALID_VALUE);
        }
        int result = kind == ArrayObjects.KIND_TEX_OBJECT ? session.cuda.texObjectDestroy(value)
                : session.cuda.surfObjectDestroy(value);
        session.vm.handles().endRelease(e.id(), result == CuResult.SUCCESS);
        return result;
    }

    /** Pins one of the process's objects for the rest of the call; false (logged) if it is not one. */
    private boolean own(int kind, long value, String field) {
        HandleTable.Entry known = session.vm.handles().findNative(kind, session.token(), value);
        if (known == null || session.pinHandle(kind, known.id()) == null) {
            session.warn(field, "0x" + Long.toHexString(value) + " is not an object of this process",
                    CuResult.INVALID_VALUE);
            return false;
        }
        return true;
    }

    /** Writes {@code bytes} of the descriptor at the scratch into out-value 0. */
    private int answer(Reply r, int result, int bytes) {
        if (result == CuResult.SUCCESS) {
            r.buffer().putBytes(r.bytesIndex(0), new UnsafeBuffer(session.out.scratch + RES, bytes), 0, bytes);
        }
        return result;
    }

    private long zeroed(int bytes) {
        long d = session.out.scratch + RES;
        UnsafeApi.setMemory(d, bytes, (byte) 0);
        return d;
    }

    /**
     * The driver's resource descriptor with its array or mipmapped array named by the process's
     * handle for it (0 if the process holds none any more): a native value never reaches the guest.
     */
    private int answerResource(Reply r, int result) {
        if (result != CuResult.SUCCESS) {
            return result;
        }
        long d = session.out.scratch + RES;
        int type = UnsafeApi.getInt(d);
        if (type == RESOURCE_ARRAY || type == RESOURCE_MIPMAPPED_ARRAY) {
            int kind = type == RESOURCE_ARRAY ? ArrayObjects.KIND_ARRAY : ArrayObjects.KIND_MIPMAPPED_ARRAY;
            HandleTable.Entry e = session.vm.handles().findNative(kind, session.token(), UnsafeApi.getLong(d + 8));
            UnsafeApi.putLong(d + 8, e == null ? 0 : e.id());
        }
        return answer(r, result, RESOURCE_DESC_SIZE);
    }

    @Override
    public int cuTexObjectDestroy(Reply r, long texObject) {
        return destroy(ArrayObjects.KIND_TEX_OBJECT, texObject, "texObject");
    }

    @Override
    public int cuTexObjectGetResourceDesc(Reply r, long texObject) {
        if (!own(ArrayObjects.KIND_TEX_OBJECT, texObject, "texObject")) {
            return CuResult.INVALID_VALUE;
        }
        return answerResource(r, session.cuda.texObjectGetResourceDesc(zeroed(RESOURCE_DESC_SIZE), texObject));
    }

    @Override
    public int cuTexObjectGetTextureDesc(Reply r, long texObject) {
        if (!own(ArrayObjects.KIND_TEX_OBJECT, texObject, "texObject")) {
            return CuResult.INVALID_VALUE;
        }
        return answer(r, session.cuda.texObjectGetTextureDesc(zeroed(TEXTURE_DESC_SIZE), texObject), TEXTURE_DESC_SIZE);
    }

    @Override
    public int cuTexObjectGetResourceViewDesc(Reply r, long texObject) {
        if (!own(ArrayObjects.KIND_TEX_OBJECT, texObject, "texObject")) {
            return CuResult.INVALID_VALUE;
        }
        return answer(r, session.cuda.texObjectGetResourceViewDesc(zeroed(VIEW_DESC_SIZE), texObject), VIEW_DESC_SIZE);
    }

    @Override
    public int ivc_surf_create(Reply r, long array, int resFlags) {
        if (!session.canMint(ArrayObjects.KIND_SURF_OBJECT)) {
            return session.refuse("surf", "the process holds as many handles as the server's limits allow",
                    CuResult.OUT_OF_MEMORY);
        }
        UnsafeApi.putLong(resource(RESOURCE_ARRAY, resFlags) + 8, array);
        int result = session.cuda.surfObjectCreate(session.out, session.out.scratch + RES);
        if (result == CuResult.SUCCESS) {
            long value = session.out.handle;
            session.vm.handles().mint(ArrayObjects.KIND_SURF_OBJECT, session.token(), value,
                    session.currentNativeContext());
            r.set(0, value);
        }
        return result;
    }

    @Override
    public int cuSurfObjectDestroy(Reply r, long surfObject) {
        return destroy(ArrayObjects.KIND_SURF_OBJECT, surfObject, "surfObject");
    }

    @Override
    public int cuSurfObjectGetResourceDesc(Reply r, long surfObject) {
        if (!own(ArrayObjects.KIND_SURF_OBJECT, surfObject, "surfObject")) {
            return CuResult.INVALID_VALUE;
        }
        return answerResource(r, session.cuda.surfObjectGetResourceDesc(zeroed(RESOURCE_DESC_SIZE), surfObject));
    }
}
