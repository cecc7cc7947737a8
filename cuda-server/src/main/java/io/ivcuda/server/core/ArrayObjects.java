package io.ivcuda.server.core;

import io.ivcuda.server.backend.ArrayFormat;
import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.HandleKinds;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the VM keeps about its processes' arrays beyond the handle table (docs/memory.md): each
 * array's geometry as the driver described it, which every array side of a copy is held to, and
 * the device memory quota an array or mipmapped array holds. An array handle's extra is the
 * context it was made in, or for a level of a mipmapped array or a plane of an array the native
 * parent (the driver frees those with their parent, so their handles go with the parent's,
 * {@link HandleTable#removeDependents}). Texture and surface objects are handles whose native
 * value the guest sees as it is; their extra is their context. Everything a process leaves is
 * destroyed at reclaim: objects before the arrays they read, levels and planes only forgotten,
 * each taken through {@link HandleTable#takeForReclaim} (never under a running call, never twice).
 */
public final class ArrayObjects {
    public static final int KIND_ARRAY = HandleKinds.ARRAY;
    public static final int KIND_MIPMAPPED_ARRAY = HandleKinds.MIPMAPPED_ARRAY;
    public static final int KIND_TEX_OBJECT = HandleKinds.TEX_OBJECT;
    public static final int KIND_SURF_OBJECT = HandleKinds.SURF_OBJECT;

    /**
     * An array's CUDA_ARRAY3D_DESCRIPTOR fields; {@code parent}: the native mipmapped array or array
     * it belongs to (0: the process made it); {@code reserved}: quota bytes it holds.
     */
    public record Shape(long width, long height, long depth, int format, int channels, int flags, long parent,
                        long reserved) {
        /** Bytes a row holds (width elements), -1 when the format has no fixed element size here. */
        public long rowBytes() {
            int element = ArrayFormat.elementBytes(format, channels);
            if (element == 0 || width <= 0 || width > Long.MAX_VALUE / element) {
                return -1;
            }
            return width * element;
        }

        /** Rows a slice: a 1D array has one. */
        public long rows() {
            return Math.max(1, height);
        }

        /** Slices (or layers, or cube faces): a 1D or 2D array has one. */
        public long slices() {
            return Math.max(1, depth);
        }
    }

    private final HandleTable handles;
    private final CudaBackend backend;
    private final InContext inContext;
    private final Map<Long, Shape> shapes = new ConcurrentHashMap<>();
    /** Quota bytes each native mipmapped array holds. */
    private final Map<Long, Long> mipmaps = new ConcurrentHashMap<>();

    public ArrayObjects(HandleTable handles, CudaBackend backend, InContext inContext) {
        this.handles = handles;
        this.backend = backend;
        this.inContext = inContext;
    }

    /**
     * The bytes an array of this descriptor holds at least (width·rows·slices elements), for the
     * quota; -1 when it cannot be counted (a format without a fixed element size is counted as one
     * byte an element by the caller's choice, see {@link #quotaBytes}).
     */
    public static long logicalBytes(long width, long height, long depth, int format, int channels) {
        int element = Math.max(1, ArrayFormat.elementBytes(format, channels));
        try {
            return Math.multiplyExact(Math.multiplyExact(Math.multiplyExact(Math.max(1, width), element),
                    Math.max(1, height)), Math.max(1, depth));
        } catch (ArithmeticException e) {
            return -1;
        }
    }

    /**
     * Quota bytes for an array (levels 1) or a mipmapped array: its logical bytes, twice that for
     * a mipmapped array (every chain of halved levels sums to less than twice its first level).
     */
    public static long quotaBytes(long width, long height, long depth, int format, int channels, int levels) {
        long bytes = logicalBytes(width, height, depth, format, channels);
        if (bytes < 0 || levels <= 1) {
            return bytes;
        }
        return bytes > Long.MAX_VALUE / 2 ? -1 : bytes * 2;
    }

    public void put(long nativeArray, Shape shape) {
        shapes.put(nativeArray, shape);
    }

    /** The geometry of a native array a handle check resolved, or null. */
    public Shape shape(long nativeArray) {
        return shapes.get(nativeArray);
    }

    public Shape forget(long nativeArray) {
        return shapes.remove(nativeArray);
    }

    public void putMipmap(long nativeMipmap, long reserved) {
        mipmaps.put(nativeMipmap, reserved);
    }

    /** The quota bytes the mipmapped array held (0 if unknown); its levels' shapes go too. */
    public long forgetMipmap(long nativeMipmap) {
        shapes.values().removeIf(s -> s.parent() == nativeMipmap);
        Long reserved = mipmaps.remove(nativeMipmap);
        return reserved == null ? 0 : reserved;
    }

    /** Forgets the planes of an array being destroyed (their handles: {@link HandleTable#removeDependents}). */
    public void forgetPlanes(long nativeArray) {
        shapes.values().removeIf(s -> s.parent() == nativeArray);
    }

    /**
     * Destroys the token's texture and surface objects, arrays and mipmapped arrays (each in its
     * context) and forgets their handles. Returns the quota bytes they held, for the caller to
     * release. Called by {@link Vm#reclaim} before streams and contexts go.
     */
    long reclaim(long token, Out out) {
        List<HandleTable.Entry> entries = handles.ownedBy(token);
        long released = 0;
        for (int kind : new int[] {KIND_TEX_OBJECT, KIND_SURF_OBJECT, KIND_ARRAY, KIND_MIPMAPPED_ARRAY}) {
            for (HandleTable.Entry e : entries) {
                // a call of the process may have destroyed it meanwhile: destroyed once, never twice
                if (e.kind() != kind || !handles.takeForReclaim(e.id())) {
                    continue;
                }
                switch (kind) {
                    case KIND_TEX_OBJECT -> inContext.run(e.extra(), out, () -> backend.texObjectDestroy(e.nativeValue()));
                    case KIND_SURF_OBJECT -> inContext.run(e.extra(), out, () -> backend.surfObjectDestroy(e.nativeValue()));
                    case KIND_ARRAY -> {
                        Shape s = shapes.get(e.nativeValue());
                        if (s != null && s.parent() == 0) {
                            shapes.remove(e.nativeValue());
                            inContext.run(e.extra(), out, () -> backend.arrayDestroy(e.nativeValue()));
                            released += s.reserved();
                        }
                    }
                    default -> {
                        released += forgetMipmap(e.nativeValue());
                        inContext.run(e.extra(), out, () -> backend.mipmappedArrayDestroy(e.nativeValue()));
                    }
                }
            }
        }
        // planes whose array went above
        shapes.values().removeIf(s -> s.parent() != 0 && !shapes.containsKey(s.parent())
                && !mipmaps.containsKey(s.parent()));
        return released;
    }

}
