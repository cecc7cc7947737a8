package io.ivcuda.server.handler;

import static io.ivcuda.server.core.HandleTable.KIND_FUNCTION;
import static io.ivcuda.server.core.HandleTable.KIND_LIBRARY;
import static io.ivcuda.server.core.HandleTable.KIND_MODULE;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.core.DeviceRanges;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.core.JitLogs;
import io.ivcuda.server.core.Libraries;
import io.ivcuda.server.gen.LibraryCalls;
import io.ivcuda.server.gen.Reply;
import java.nio.ByteOrder;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * Libraries (cuLibraryLoadData, CUDA 12+) and their kernels. A library's image takes the modules'
 * bounded upload ({@link ImageUpload}); its handle names the native library, with no context. A
 * CUkernel is a handle of kind function whose native value {@link Libraries} knows as a kernel:
 * wherever a CUfunction is taken, {@link #function} resolves it to the kernel's function in the
 * current context. Kernels, the functions and modules got from them and the library's globals
 * go with cuLibraryUnload or the process.
 */
final class LibraryHandler implements LibraryCalls {
    /** JIT options the server passes on: scalar values only (docs/kernels.md). */
    private static final int[] SAFE_JIT_OPTIONS = {0, 1, 7, 8, 9, 10, 11, 12, 13, 14, 30, 31, 32, 33};
    static final int MAX_JIT_OPTIONS = 64;

    private final Session session;

    LibraryHandler(Session session) {
        this.session = session;
    }

    /**
     * {@code f} itself in {@code session.out.handle}, or when {@code f} is a CUkernel its function
     * in the current context (cuKernelGetFunction); answers the driver's result. For every handler
     * that takes a CUfunction.
     */
    static int function(Session session, long f) {
        if (!session.vm.libraries().isKernel(f)) {
            session.out.handle = f;
            return CuResult.SUCCESS;
        }
        return session.cuda.kernelGetFunction(session.out, f);
    }

    @Override
    public int ivc_library_load(Reply r, DirectBuffer in, long imageHash, long imageSize, int sendImage,
                                int jitOptionsIndex, int jitOptionsLength, long jitOptionsSize) {
        // the options are read (once) before the image moves, which follows whatever they hold; the
        // logs and the time asked for are the driver's, kept on the session for ivc_jit_log_read
        Object parsed = JitLogs.parse(in, jitOptionsIndex, jitOptionsLength, jitOptionsSize, MAX_JIT_OPTIONS,
                LibraryHandler::safeJitOption, session.vm.limits().jitLogBytes());
        if (parsed instanceof String bad) {
            session.warn("jitOptions", bad, CuResult.INVALID_VALUE);
            return sendImage != 0 && !session.chunks.discard(imageSize) ? CuResult.DEVICE_UNAVAILABLE : CuResult.INVALID_VALUE;
        }
        JitLogs logs = (JitLogs) parsed;
        session.keepLoadLogs(logs);
        int result = ImageUpload.load(session, imageHash, imageSize, sendImage,
                ModuleGlobalsQuota.reserving(session, "ivc_library_load", imageSize, true,
                        address -> session.cuda.libraryLoadData(session.out, address, logs.options(), logs.values(),
                                logs.count())));
        if (result == CuResult.SUCCESS) {
            r.set(0, session.vm.handles().mint(KIND_LIBRARY, session.token(), session.out.handle, 0));
        }
        return result;
    }

    /**
     * Copies (option, value) pairs into {@code options} (int[]) and {@code values} (void*[]) for the
     * driver, {@code length / 16} of them; null, or why they are refused (not whole pairs, more than
     * {@link #MAX_JIT_OPTIONS}, an option the server does not pass on). cuLinkAddData's options.
     */
    static String jitOptions(DirectBuffer in, int index, int length, long size, long options, long values) {
        int count = length / 16;
        if (length != size || length % 16 != 0 || count > MAX_JIT_OPTIONS) {
            return "jitOptionsSize " + size + " is not (option, value) pairs of at most " + MAX_JIT_OPTIONS;
        }
        for (int i = 0; i < count; i++) {
            long option = in.getLong(index + 16 * i, ByteOrder.LITTLE_ENDIAN);
            long value = in.getLong(index + 16 * i + 8, ByteOrder.LITTLE_ENDIAN);
            if (!safeJitOption(option)) {
                return "JIT option " + option + " is not one the server passes on";
            }
            UnsafeApi.putInt(options + 4L * i, (int) option);
            UnsafeApi.putLong(values + 8L * i, value);
        }
        return null;
    }

    static boolean safeJitOption(long option) {
        for (int safe : SAFE_JIT_OPTIONS) {
            if (option == safe) {
                return true;
            }
        }
        return false;
    }

    @Override
    public int ivc_library_unload(Reply r, long library) {
        HandleTable handles = session.vm.handles();
        long token = session.token();
        // what the library made goes first, each once no call of another thread still uses it
        Libraries.Forgotten gone = session.vm.libraries().forget(library);
        handles.removeDependents(token, KIND_FUNCTION, library, session.chunks::stopping);
        for (long module : gone.modules()) {
            handles.removeDependents(token, KIND_FUNCTION, module, session.chunks::stopping);
        }
        handles.removeDependents(token, KIND_MODULE, library, session.chunks::stopping);
        DeviceRanges ranges = session.owner().ranges();
        for (long base : gone.globals()) {
            ranges.removeGlobal(base);
        }
        session.vm.moduleUnloaded();
        int result = session.cuda.libraryUnload(library);
        if (result == CuResult.SUCCESS) {
            session.vm.globalsReleased(true, library);
        }
        return result;
    }

    /** The caller's handle for a native object, an existing one if it has one (kernels, a library's modules). */
    private long handleFor(int kind, long nativeValue, long extra) {
        HandleTable.Entry e = session.vm.handles().findNative(kind, session.token(), nativeValue);
        return e != null ? e.id() : session.vm.handles().mint(kind, session.token(), nativeValue, extra);
    }

    @Override
    public int cuLibraryGetKernel(Reply r, long library, String name) {
        int result = session.cuda.libraryGetKernel(session.out, library, name);
        if (result == CuResult.SUCCESS) {
            long kernel = session.out.handle;
            session.vm.libraries().kernel(kernel, library);
            r.set(0, handleFor(KIND_FUNCTION, kernel, library));
        }
        return result;
    }

    @Override
    public int cuLibraryGetModule(Reply r, long library) {
        int result = session.cuda.libraryGetModule(session.out, library);
        if (result == CuResult.SUCCESS) {
            long module = session.out.handle;
            session.vm.libraries().module(module, library);
            // extra: the library, whose unload removes the handle (the module is never unloaded as one)
            r.set(0, handleFor(KIND_MODULE, module, library));
        }
        return result;
    }

    @Override
    public int ivc_library_get_global(Reply r, long library, String name) {
        int result = session.cuda.libraryGetGlobal(session.out, library, name);
        if (result == CuResult.SUCCESS) {
            long base = session.out.address;
            long bytes = session.out.bytes;
            session.vm.libraries().global(library, base);
            session.owner().ranges().add(new DeviceRanges.Range(base, bytes, false, 0));
            r.set(0, base);
            r.set(1, bytes);
        }
        return result;
    }

    @Override
    public int cuLibraryGetManaged(Reply r, long library, String name) {
        return session.refuse("name", name + ": managed memory is not remoted (docs/kernels.md)", CuResult.NOT_SUPPORTED);
    }

    @Override
    public int cuLibraryGetKernelCount(Reply r, long lib) {
        int result = session.cuda.libraryGetKernelCount(session.out, lib);
        r.set(0, session.out.value & 0xffffffffL);
        return result;
    }

    /**
     * Kernels {@code first}.. of the library, as many as the guest's capacity and the response area
     * hold: each gets the caller's handle (the same one cuLibraryGetKernel answers).
     */
    @Override
    public int ivc_library_enumerate_kernels(Reply r, int numKernels, int first, long lib) {
        int result = session.cuda.libraryGetKernelCount(session.out, lib);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        return EnumeratedHandles.answer(session, r, session.out.value & 0xffffffffL, first, "kernels of the library",
                "numKernels",
                (dst, count) -> session.cuda.libraryEnumerateKernels(dst, count, lib), kernel -> {
                    session.vm.libraries().kernel(kernel, lib);
                    return handleFor(KIND_FUNCTION, kernel, lib);
                });
    }

    @Override
    public int cuModuleGetFunctionCount(Reply r, long mod) {
        int result = session.cuda.moduleGetFunctionCount(session.out, mod);
        r.set(0, session.out.value & 0xffffffffL);
        return result;
    }

    /**
     * Functions {@code first}.. of the module, as many as the guest's capacity and the response area
     * hold: each gets the caller's handle (the one cuModuleGetFunction answers for it), gone with the
     * module's unload.
     */
    @Override
    public int ivc_module_enumerate_functions(Reply r, int numFunctions, int first, long mod) {
        int result = session.cuda.moduleGetFunctionCount(session.out, mod);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        return EnumeratedHandles.answer(session, r, session.out.value & 0xffffffffL, first, "functions of the module",
                "numFunctions",
                (dst, count) -> session.cuda.moduleEnumerateFunctions(dst, count, mod),
                function -> handleFor(KIND_FUNCTION, function, mod));
    }

    /** Refuses a function handle that is not a CUkernel where one is required. */
    private int notKernel(long kernel) {
        return session.refuse("kernel", "is a function, not a CUkernel", CuResult.INVALID_HANDLE);
    }

    @Override
    public int cuKernelGetFunction(Reply r, long kernel) {
        if (!session.vm.libraries().isKernel(kernel)) {
            return notKernel(kernel);
        }
        int result = session.cuda.kernelGetFunction(session.out, kernel);
        if (result == CuResult.SUCCESS) {
            // extra: the library, whose unload removes the function
            r.set(0, handleFor(KIND_FUNCTION, session.out.handle, session.vm.libraries().libraryOf(kernel)));
        }
        return result;
    }

    @Override
    public int cuKernelGetAttribute(Reply r, int attrib, long kernel, int dev) {
        if (!session.vm.libraries().isKernel(kernel)) {
            return notKernel(kernel);
        }
        int result = session.cuda.kernelGetAttribute(session.out, attrib, kernel, dev);
        r.set(0, session.out.value);
        return result;
    }

    @Override
    public int cuKernelSetAttribute(Reply r, int attrib, int val, long kernel, int dev) {
        if (!session.vm.libraries().isKernel(kernel)) {
            return notKernel(kernel);
        }
        return session.cuda.kernelSetAttribute(attrib, val, kernel, dev);
    }

    @Override
    public int cuKernelSetCacheConfig(Reply r, long kernel, int config, int dev) {
        if (!session.vm.libraries().isKernel(kernel)) {
            return notKernel(kernel);
        }
        return session.cuda.kernelSetCacheConfig(kernel, config, dev);
    }

    @Override
    public int cuKernelGetParamInfo(Reply r, long kernel, long paramIndex) {
        if (!session.vm.libraries().isKernel(kernel)) {
            return notKernel(kernel);
        }
        int result = session.cuda.kernelGetParamInfo(session.out, kernel, paramIndex);
        r.set(0, session.out.offset);
        r.set(1, session.out.bytes);
        return result;
    }

    @Override
    public int cuKernelGetLibrary(Reply r, long kernel) {
        long library = session.vm.libraries().libraryOf(kernel);
        if (library == 0) {
            return notKernel(kernel);
        }
        HandleTable.Entry e = session.vm.handles().findNative(KIND_LIBRARY, session.token(), library);
        if (e == null) {
            return session.refuse("kernel", "its library is not this process's", CuResult.INVALID_HANDLE);
        }
        r.set(0, e.id());
        return CuResult.SUCCESS;
    }

    /** The name of a function or kernel, copied (NUL-terminated, cut to the capacity) from the driver's string. */
    @Override
    public int ivc_function_name(Reply r, int capacity, long f) {
        Out out = session.out;
        int result = session.vm.libraries().isKernel(f) ? session.cuda.kernelGetName(out, f) : session.cuda.funcGetName(out, f);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        int room = r.outbufCapacity();
        if (room == 0 || out.address == 0) {
            return session.refuse("capacity", "leaves no room for the name", CuResult.INVALID_VALUE);
        }
        int n = 0;
        while (n < room - 1) {
            byte b = UnsafeApi.getByte(out.address + n);
            if (b == 0) {
                break;
            }
            r.buffer().putByte(r.outbufIndex() + n, b);
            n++;
        }
        r.buffer().putByte(r.outbufIndex() + n, (byte) 0);
        r.outbufLength(n + 1);
        return CuResult.SUCCESS;
    }
}
