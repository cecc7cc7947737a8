package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.core.ModuleFootprintTest;
import io.ivcuda.server.gen.Requests;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 15: a module's or library's module-scope variables count against the VM's memory quota from its load
 * to its unload or its process's reclaim, as cuMemGetInfo reports them (what it calls free can still be
 * allocated), and a load beyond the quota is refused with CUDA_ERROR_OUT_OF_MEMORY before the driver sees it.
 * The images are nvcc's (ModuleFootprintTest); the stand-in driver is a compute capability 9.0 device.
 */
class ModuleGlobalsQuotaTest extends OneProcessCase {
    static final long TOKEN = (1717L << 32) | 0x17;
    static final long QUOTA = 8L << 20;

    /** A 9.0 device that loads any image and unloads what it loaded. */
    static final class LoadingBackend extends HostMemoryBackend {
        final AtomicLong next = new AtomicLong(0xB000);
        final List<Long> loaded = new CopyOnWriteArrayList<>();

        @Override
        public int deviceGetAttribute(Out o, int attribute, int device) {
            o.value = attribute == 75 ? 9 : 0;
            return CuResult.SUCCESS;
        }

        @Override
        public int moduleLoadData(Out o, long image) {
            o.handle = next.incrementAndGet();
            loaded.add(o.handle);
            return CuResult.SUCCESS;
        }

        @Override
        public int moduleUnload(long module) {
            return loaded.remove(module) ? CuResult.SUCCESS : CuResult.INVALID_HANDLE;
        }

        @Override
        public int libraryLoadData(Out o, long image, long options, long values, int count) {
            return moduleLoadData(o, image);
        }

        @Override
        public int libraryUnload(long library) {
            return moduleUnload(library);
        }
    }

    LoadingBackend backend;
    ModuleGlobalsQuotaTest() {
        super(TOKEN);
    }

    @BeforeEach
    void start() throws Exception {
        backend = new LoadingBackend();
        startAndInit(backend, "memory.quota=" + QUOTA);
    }

    private long free() {
        Response r = c.call(Requests.cuMemGetInfo_v2());
        assertEquals(CuResult.SUCCESS, r.result());
        return r.out(0);
    }

    private static Response loadModule(Channel channel, byte[] image) {
        return channel.streamRequest(Requests.ivc_module_load(LaunchAndModuleTest.fnv1a(image), image.length, 1,
                new byte[0], 0), image);
    }

    private static Response loadLibrary(Channel channel, byte[] image) {
        return channel.streamRequest(Requests.ivc_library_load(LaunchAndModuleTest.fnv1a(image), image.length, 1,
                new byte[0], 0), image);
    }

    private void awaitFree(long bytes) {
        ServerIntegrationTest.awaitTrue(() -> free() == bytes, bytes + " bytes free");
    }

    @Test
    void aModulesGlobalsAreHeldFromItsLoadToItsUnload() throws Exception {
        byte[] cubin = ModuleFootprintTest.resource("globals.sm_90.cubin");
        Response r = loadModule(c, cubin);
        assertEquals(CuResult.SUCCESS, r.result());
        long module = r.out(0);
        assertEquals(QUOTA - ModuleFootprintTest.SM90, free());
        assertEquals(ModuleFootprintTest.SM90, server.vm().allocated());
        // what cuMemGetInfo calls free can be allocated, one byte more cannot
        long left = free();
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_mem_alloc(left + 1)).result());
        Response a = c.call(Requests.ivc_mem_alloc(left));
        assertEquals(CuResult.SUCCESS, a.result());
        long rest = a.out(0);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mem_free(rest)).result());
        awaitFree(left);

        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_module_unload(module)).result());
        assertEquals(QUOTA, free(), "the unload gave its globals back");
        assertEquals(0, server.vm().allocated());
    }

    @Test
    void aLoadBeyondTheQuotaIsRefusedBeforeTheDriverAndFreesNothingElse() throws Exception {
        Response a = c.call(Requests.ivc_mem_alloc(4 << 20));
        assertEquals(CuResult.SUCCESS, a.result());
        long held = a.out(0);
        byte[] fatbin = ModuleFootprintTest.resource("globals.fatbin");
        assertEquals(CuResult.SUCCESS, loadModule(c, fatbin).result());
        assertEquals(QUOTA - (4 << 20) - ModuleFootprintTest.SM90, free());
        int driverLoads = backend.loaded.size();
        // a second copy of the 2 MiB module does not fit what is left
        assertEquals(CuResult.OUT_OF_MEMORY, loadModule(c, ModuleFootprintTest.resource("globals.sm_90.cubin")).result());
        assertEquals(driverLoads, backend.loaded.size(), "the driver never saw the refused load");
        assertEquals(QUOTA - (4 << 20) - ModuleFootprintTest.SM90, free(), "nothing else was given back or taken");
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mem_free(held)).result());
        awaitFree(QUOTA - ModuleFootprintTest.SM90);
        assertTrue(server.vm().refusals().refusalCounts().keySet().stream().anyMatch(k -> k.startsWith("memory.quota")),
                "refused through the refusal log: " + server.vm().refusals().refusalCounts());
    }

    @Test
    void aLibraryIsCountedOnceAndGivenBackAtItsUnload() throws Exception {
        Response r = loadLibrary(c, ModuleFootprintTest.resource("globals.compute_90.ptx"));
        assertEquals(CuResult.SUCCESS, r.result());
        long library = r.out(0);
        assertEquals(QUOTA - ModuleFootprintTest.SM90, free());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_library_unload(library)).result());
        assertEquals(QUOTA, free());
    }

    @Test
    void theProcessReclaimGivesBackWhatItsModulesAndLibrariesHeld() throws Exception {
        assertEquals(CuResult.SUCCESS, loadModule(c, ModuleFootprintTest.resource("globals.sm_90.cubin")).result());
        assertEquals(CuResult.SUCCESS, loadLibrary(c, ModuleFootprintTest.resource("globals.fatbin")).result());
        assertEquals(QUOTA - 2 * ModuleFootprintTest.SM90, free(), "the module and the library, each once");
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        ServerIntegrationTest.awaitTrue(() -> server.vm().allocated() == 0, "the process's module globals given back");
        Channel other = hello(1, TOKEN + 1);
        assertEquals(QUOTA, other.call(Requests.cuMemGetInfo_v2()).out(0));
    }

    @Test
    void garbageAndCompressedImagesCountNothing() throws Exception {
        byte[] garbage = new byte[5000];
        new java.util.Random(17).nextBytes(garbage);
        assertEquals(CuResult.SUCCESS, loadModule(c, garbage).result(), "the stand-in driver loads anything");
        assertEquals(CuResult.SUCCESS, loadModule(c, ModuleFootprintTest.resource("globals.compressed.fatbin")).result());
        assertEquals(QUOTA, free());
    }
}
