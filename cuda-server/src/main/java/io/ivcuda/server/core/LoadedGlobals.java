package io.ivcuda.server.core;

import java.util.concurrent.ConcurrentHashMap;

/**
 * The quota a VM holds for the module-scope variables of the modules and libraries its processes loaded
 * ({@link ModuleFootprint}), by the loaded object, from the load until the object goes (its unload, its
 * context's destruction, or its process's reclaim). A library is one object however many contexts it is loaded
 * into, so it is counted once.
 */
public final class LoadedGlobals {
    private final ConcurrentHashMap<Long, Long> modules = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, Long> libraries = new ConcurrentHashMap<>();

    private ConcurrentHashMap<Long, Long> of(boolean library) {
        return library ? libraries : modules;
    }

    /** The loaded module (or library) {@code nativeObject} holds {@code bytes} of the quota. */
    public void held(boolean library, long nativeObject, long bytes) {
        if (bytes > 0) {
            of(library).merge(nativeObject, bytes, Long::sum);
        }
    }

    /** The object went: the bytes it held (0 if none), once. */
    public long released(boolean library, long nativeObject) {
        Long bytes = of(library).remove(nativeObject);
        return bytes == null ? 0 : bytes;
    }

    /** Bytes held by every loaded module and library. */
    public long total() {
        long sum = 0;
        for (long b : modules.values()) {
            sum += b;
        }
        for (long b : libraries.values()) {
            sum += b;
        }
        return sum;
    }
}
