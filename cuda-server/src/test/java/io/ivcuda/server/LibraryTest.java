package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.gen.Requests;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.agrona.UnsafeApi;
import org.junit.jupiter.api.Test;

/**
 * Libraries and CUkernels over a backend that records what reaches the driver: the image path, the
 * JIT options passed on, a CUkernel resolved to its function wherever a CUfunction is taken, the
 * globals as device ranges, and everything a library made going with its unload or the process.
 */
class LibraryTest extends StartedServerCase<LibraryTest.LibraryBackend> {
    static final long TOKEN = (78L << 32) | 5;
    static final long OTHER = (79L << 32) | 6;
    static final long LIBRARY = 0xB000;
    static final long KERNEL = 0xB100;
    static final long FUNCTION = 0xB200;
    static final long MODULE = 0xB300;

    /** One library with kernels "k0", "k1", "k2"; kernel(int a): one parameter of 4 bytes. */
    static class LibraryBackend extends HostMemoryBackend {
        final List<Long> launched = new CopyOnWriteArrayList<>();
        final List<Long> unloaded = new CopyOnWriteArrayList<>();
        volatile int jitCount = -1;
        volatile int firstJitOption = -1;
        volatile long globalAddress;

        @Override
        public int libraryLoadData(Out o, long image, long options, long values, int count) {
            jitCount = count;
            firstJitOption = count > 0 ? UnsafeApi.getInt(options) : -1;
            o.handle = LIBRARY;
            return CuResult.SUCCESS;
        }

        @Override
        public int libraryUnload(long library) {
            unloaded.add(library);
            return CuResult.SUCCESS;
        }

        @Override
        public int libraryGetKernel(Out o, long library, String name) {
            if (!name.startsWith("k") || name.length() != 2) {
                return CuResult.NOT_FOUND;
            }
            o.handle = KERNEL + (name.charAt(1) - '0');
            return CuResult.SUCCESS;
        }

        @Override
        public int libraryGetModule(Out o, long library) {
            o.handle = MODULE;
            return CuResult.SUCCESS;
        }

        @Override
        public int libraryGetGlobal(Out o, long library, String name) {
            // a real block of the host-memory "device", so that a memset on it can succeed
            int r = memAlloc(o, 256);
            globalAddress = o.address;
            o.bytes = 256;
            return r;
        }

        @Override
        public int libraryGetKernelCount(Out o, long library) {
            o.value = 3;
            return CuResult.SUCCESS;
        }

        @Override
        public int libraryEnumerateKernels(long dst, int count, long library) {
            for (int i = 0; i < count; i++) {
                UnsafeApi.putLong(dst + 8L * i, KERNEL + i);
            }
            return CuResult.SUCCESS;
        }

        @Override
        public int moduleGetFunctionCount(Out o, long module) {
            o.value = 2;
            return CuResult.SUCCESS;
        }

        @Override
        public int moduleEnumerateFunctions(long dst, int count, long module) {
            for (int i = 0; i < count; i++) {
                UnsafeApi.putLong(dst + 8L * i, FUNCTION + 10 + i);
            }
            return CuResult.SUCCESS;
        }

        @Override
        public int kernelGetFunction(Out o, long kernel) {
            o.handle = FUNCTION + (kernel - KERNEL);
            return CuResult.SUCCESS;
        }

        @Override
        public int kernelGetName(Out o, long kernel) {
            o.address = name;
            return CuResult.SUCCESS;
        }

        final long name = UnsafeApi.allocateMemory(16);

        {
            byte[] text = "_Z6kernelv\0".getBytes(StandardCharsets.US_ASCII);
            for (int i = 0; i < text.length; i++) {
                UnsafeApi.putByte(name + i, text[i]);
            }
        }

        @Override
        public int funcGetAttribute(Out o, int attribute, long function) {
            o.value = (int) function;
            return CuResult.SUCCESS;
        }

        @Override
        public int funcGetParamInfo(Out o, long function, long index) {
            if (index >= 1) {
                return CuResult.INVALID_VALUE;
            }
            o.offset = 0;
            o.bytes = 4;
            return CuResult.SUCCESS;
        }

        @Override
        public int launchKernel(long function, int gx, int gy, int gz, int bx, int by, int bz, int sharedMem,
                                long stream, long kernelParams) {
            launched.add(function);
            return CuResult.SUCCESS;
        }
    }

    LibraryTest() {
        super(TOKEN, LibraryBackend::new);
    }

    private static byte[] jit(long... pairs) {
        ByteBuffer b = ByteBuffer.allocate(8 * pairs.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long p : pairs) {
            b.putLong(p);
        }
        return b.array();
    }

    private Response load(Channel c, byte[] jitOptions) {
        byte[] image = new byte[300];
        image[0] = 0x7f;
        image[299] = 3;
        return c.streamRequest(Requests.ivc_library_load(LaunchAndModuleTest.fnv1a(image), image.length, 1, jitOptions,
                jitOptions.length), image);
    }

    private long loaded(Channel c) {
        Response r = load(c, new byte[0]);
        assertEquals(CuResult.SUCCESS, r.result());
        assertEquals(HandleTable.KIND_LIBRARY, HandleTable.kindOf(r.out(0)));
        return r.out(0);
    }

    @Test
    void aKernelIsAcceptedWhereAFunctionIsAndResolvedInTheCurrentContext() {
        Channel c = withContext(0, TOKEN);
        long library = loaded(c);
        Response k = c.call(Requests.cuLibraryGetKernel(library, "k1"));
        assertEquals(CuResult.SUCCESS, k.result());
        long kernel = k.out(0);
        assertEquals(HandleTable.KIND_FUNCTION, HandleTable.kindOf(kernel), "a CUkernel travels as a function handle");
        assertEquals(kernel, c.call(Requests.cuLibraryGetKernel(library, "k1")).out(0), "the same kernel, the same handle");
        assertEquals(CuResult.NOT_FOUND, c.call(Requests.cuLibraryGetKernel(library, "nope")).result());

        // attributes and launches reach the driver with the kernel's function, not the kernel
        Response attribute = c.call(Requests.cuFuncGetAttribute(0, kernel));
        assertEquals(CuResult.SUCCESS, attribute.result());
        assertEquals(FUNCTION + 1, attribute.out(0) & 0xffffffffL);
        byte[] params = new byte[4];
        c.post(Requests.ivc_launch(kernel, 1, 1, 1, 1, 1, 1, 0, 0, params, params.length));
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuCtxSynchronize()).result());
        assertEquals(List.of(FUNCTION + 1), backend.launched);

        Response fn = c.call(Requests.cuKernelGetFunction(kernel));
        assertEquals(CuResult.SUCCESS, fn.result());
        assertNotEquals(kernel, fn.out(0));
        // a function is not a kernel
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuKernelGetFunction(fn.out(0))).result());
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuKernelGetAttribute(0, fn.out(0), 0)).result());
        Response lib = c.call(Requests.cuKernelGetLibrary(kernel));
        assertEquals(CuResult.SUCCESS, lib.result());
        assertEquals(library, lib.out(0));

        Response name = c.call(Requests.ivc_function_name(64, kernel));
        assertEquals(CuResult.SUCCESS, name.result());
        assertEquals("_Z6kernelv", name.buffer().getStringWithoutLengthAscii(name.payload() + 8, 10));
    }

    @Test
    void unloadTakesKernelsModulesAndGlobalsWithIt() {
        Channel c = withContext(0, TOKEN);
        long library = loaded(c);
        long kernel = c.call(Requests.cuLibraryGetKernel(library, "k0")).out(0);
        long function = c.call(Requests.cuKernelGetFunction(kernel)).out(0);
        Response module = c.call(Requests.cuLibraryGetModule(library));
        assertEquals(CuResult.SUCCESS, module.result());
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.ivc_module_unload(module.out(0))).result(),
                "a library's module goes only with the library");
        Response global = c.call(Requests.ivc_library_get_global(library, "g"));
        assertEquals(CuResult.SUCCESS, global.result());
        long address = global.out(0);
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMemsetD8_v2(address, 1, 256)).result(), "a global is device memory");

        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_library_unload(library)).result());
        assertEquals(List.of(LIBRARY), backend.unloaded);
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.ivc_library_unload(library)).result(), "released once");
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuFuncGetAttribute(0, kernel)).result());
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuFuncGetAttribute(0, function)).result());
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuModuleGetFunction(module.out(0), "k0")).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuMemsetD8_v2(address, 1, 256)).result(),
                "the global is no device memory of the process any more");
    }

    @Test
    void anotherProcessCannotUseTheLibraryAndExitReclaimsIt() {
        Channel c = withContext(0, TOKEN);
        Channel other = withContext(1, OTHER);
        long library = loaded(c);
        long kernel = c.call(Requests.cuLibraryGetKernel(library, "k2")).out(0);
        assertEquals(CuResult.INVALID_HANDLE, other.call(Requests.cuLibraryGetKernel(library, "k2")).result());
        assertEquals(CuResult.INVALID_HANDLE, other.call(Requests.ivc_library_unload(library)).result());
        assertEquals(CuResult.INVALID_HANDLE, other.call(Requests.cuFuncGetAttribute(0, kernel)).result());
        int before = server.vm().handles().size();
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        ServerIntegrationTest.awaitTrue(() -> backend.unloaded.contains(LIBRARY), "the library unloaded at exit");
        ServerIntegrationTest.awaitTrue(() -> server.vm().handles().size() < before - 2, "its handles gone");
        assertTrue(!server.vm().libraries().isKernel(KERNEL + 2), "its kernels forgotten");
    }

    @Test
    void jitOptionsArePassedOnOnlyWhenSafeAndManagedIsRefused() {
        Channel c = withContext(0, TOKEN);
        assertEquals(CuResult.SUCCESS, load(c, jit(0 /* CU_JIT_MAX_REGISTERS */, 32)).result());
        assertEquals(1, backend.jitCount);
        assertEquals(0, backend.firstJitOption);
        backend.jitCount = -1;
        assertEquals(CuResult.INVALID_VALUE, load(c, jit(3 /* CU_JIT_INFO_LOG_BUFFER: a pointer */, 0x1000)).result());
        assertEquals(-1, backend.jitCount, "refused before the driver");
        assertEquals(CuResult.INVALID_VALUE, load(c, new byte[12]).result(), "not whole pairs");
        long library = loaded(c);
        assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.cuLibraryGetManaged(library, "m")).result());
    }

    @Test
    void enumerateNamesEachKernelOnce() {
        Channel c = withContext(0, TOKEN);
        long library = loaded(c);
        Response count = c.call(Requests.cuLibraryGetKernelCount(library));
        assertEquals(3, count.out(0));
        Response all = c.call(Requests.ivc_library_enumerate_kernels(3, 0, library));
        assertEquals(CuResult.SUCCESS, all.result());
        long k1 = c.call(Requests.cuLibraryGetKernel(library, "k1")).out(0);
        assertEquals(k1, all.buffer().getLong(all.payload() + 8 + 8, ByteOrder.LITTLE_ENDIAN));
        Response tail = c.call(Requests.ivc_library_enumerate_kernels(5, 2, library));
        assertEquals(CuResult.SUCCESS, tail.result());
        assertEquals(8, tail.out(0), "one kernel left from the third on: 8 bytes");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_library_enumerate_kernels(1, 4, library)).result());
    }

    @Test
    void aModulesFunctionsAreEnumeratedWithOneHandleEach() {
        Channel c = withContext(0, TOKEN);
        long library = loaded(c);
        long module = c.call(Requests.cuLibraryGetModule(library)).out(0);
        assertEquals(2, c.call(Requests.cuModuleGetFunctionCount(module)).out(0));
        Response all = c.call(Requests.ivc_module_enumerate_functions(2, 0, module));
        assertEquals(CuResult.SUCCESS, all.result());
        assertEquals(16, all.out(0), "two functions: 16 bytes");
        long first = all.buffer().getLong(all.payload() + 8, ByteOrder.LITTLE_ENDIAN);
        long second = all.buffer().getLong(all.payload() + 16, ByteOrder.LITTLE_ENDIAN);
        assertEquals(HandleTable.KIND_FUNCTION, HandleTable.kindOf(first));
        assertNotEquals(first, second);
        Response again = c.call(Requests.ivc_module_enumerate_functions(1, 1, module));
        assertEquals(second, again.buffer().getLong(again.payload() + 8, ByteOrder.LITTLE_ENDIAN),
                "the same function, the same handle");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_module_enumerate_functions(1, 3, module)).result());
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuModuleGetFunctionCount(module + 16)).result(),
                "a module the process does not hold");
    }
}
