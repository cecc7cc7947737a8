package io.ivcuda.server.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the VM's loaded libraries (cuLibraryLoadData) made, by native value: their kernels, the
 * modules a context gave them and the addresses of their globals. A CUkernel travels as a handle
 * of kind function, so this is what tells a kernel from a function; a library's module belongs to
 * the library (only cuLibraryUnload unloads it); its globals stop being device memory of the
 * process when it goes. Native values are the driver's live objects: distinct while they live,
 * and forgotten here when their library is unloaded (a later object may reuse an address). Also
 * the completed images of link states (cuLinkComplete), forgotten when the state is destroyed.
 */
public final class Libraries {
    private final Map<Long, Long> kernels = new ConcurrentHashMap<>();
    private final Map<Long, Long> modules = new ConcurrentHashMap<>();
    private final Map<Long, List<Long>> globals = new ConcurrentHashMap<>();

    /** Completed link images (cuLinkComplete) by native link state: {address, size}, the driver's memory. */
    private final Map<Long, long[]> linkOutputs = new ConcurrentHashMap<>();

    private final Map<Long, JitLogs> linkLogs = new ConcurrentHashMap<>();

    /** A link state's JIT options, logs and output values (the driver writes them until it is destroyed). */
    public void linkLogs(long state, JitLogs logs) {
        linkLogs.put(state, logs);
    }

    public JitLogs linkLogsOf(long state) {
        return linkLogs.get(state);
    }

    /** After cuLinkDestroy, when the driver writes into them no more. */
    public void freeLinkLogs(long state) {
        JitLogs logs = linkLogs.remove(state);
        if (logs != null) {
            logs.free();
        }
    }

    public void linkOutput(long state, long address, long size) {
        linkOutputs.put(state, new long[] {address, size});
    }

    /** The completed image of a link state ({address, size}), null if none. */
    public long[] linkOutputOf(long state) {
        return linkOutputs.get(state);
    }

    /** A link state goes: its image (the driver's) with it. */
    public void forgetLink(long state) {
        linkOutputs.remove(state);
    }

    /** What a library left when it went: its modules and the bases of its globals. */
    public record Forgotten(List<Long> modules, List<Long> globals) {
    }

    public void kernel(long kernel, long library) {
        kernels.put(kernel, library);
    }

    /** Whether {@code nativeValue} (of a function handle) is a CUkernel. */
    public boolean isKernel(long nativeValue) {
        return kernels.containsKey(nativeValue);
    }

    /** The native library of a kernel, 0 if {@code kernel} is none. */
    public long libraryOf(long kernel) {
        Long library = kernels.get(kernel);
        return library == null ? 0 : library;
    }

    public void module(long module, long library) {
        modules.put(module, library);
    }

    /** Whether {@code module} is a library's (cuLibraryGetModule): never unloaded as a module. */
    public boolean isLibraryModule(long module) {
        return modules.containsKey(module);
    }

    public void global(long library, long base) {
        globals.compute(library, (k, list) -> {
            List<Long> l = list == null ? new ArrayList<>() : list;
            if (!l.contains(base)) {
                l.add(base);
            }
            return l;
        });
    }

    /** Forgets a library's kernels and modules; answers its modules and globals. */
    public Forgotten forget(long library) {
        kernels.values().removeIf(l -> l == library);
        List<Long> gone = new ArrayList<>();
        modules.entrySet().removeIf(e -> {
            if (e.getValue() == library) {
                gone.add(e.getKey());
                return true;
            }
            return false;
        });
        List<Long> bases = globals.remove(library);
        return new Forgotten(gone, bases == null ? List.of() : bases);
    }
}
