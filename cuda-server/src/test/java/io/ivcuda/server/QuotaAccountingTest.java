package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.Requests;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 15, "everything a VM holds on the GPU counts", across every kind of allocation the server
 * makes for a VM: device allocations, pitched ones, stream-ordered ones (the device's pool and a
 * created pool), virtual-memory allocations, arrays and mipmapped arrays — and what the driver keeps
 * for the server process beyond them (its pools' cached memory, graphs' memory), which the guest's
 * cuMemGetInfo reports as held. Each kind is held to the figure cuMemGetInfo reports (docs/sharing.md:
 * what it calls free can be allocated, one byte more cannot) and comes back when the process exits.
 *
 * <p>The driver's figures come from a stand-in over the host-memory backend (which has no pools and
 * no graphs of its own): a device pool whose reserved memory exceeds its used memory by
 * {@link #POOL_CACHE}, and {@link #GRAPH_MEMORY} bytes of graph memory.
 */
class QuotaAccountingTest extends OneProcessCase {
    static final long TOKEN = (1616L << 32) | 0x16;
    static final long MIB = 1 << 20;
    /** Two of the host-memory backend's 2 MiB VMM granules fit the quota, but not beside what the driver holds. */
    static final long QUOTA = 4 * MIB;
    static final long POOL_CACHE = 8192;
    static final long GRAPH_MEMORY = 4096;
    static final long DRIVER = POOL_CACHE + GRAPH_MEMORY;
    static final long DEVICE_POOL = 0x7700;
    static final int UINT8 = 0x01;
    static final int PINNED = 1;

    /** The driver's per-process figures: a device pool with cached memory, and graph memory. */
    static final class DriverHolds extends HostMemoryBackend {
        @Override
        public int deviceGetDefaultMemPool(Out o, int device) {
            o.handle = DEVICE_POOL;
            return CuResult.SUCCESS;
        }

        @Override
        public int deviceGetMemPool(Out o, int device) {
            o.handle = DEVICE_POOL;
            return CuResult.SUCCESS;
        }

        @Override
        public int memPoolGetAttribute(Out o, long pool, int attribute) {
            if (pool != DEVICE_POOL) {
                return super.memPoolGetAttribute(o, pool, attribute);
            }
            // CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT 5, USED_MEM_CURRENT 7 (cuda.h)
            o.bytes = attribute == 5 ? POOL_CACHE + 2048 : attribute == 7 ? 2048 : 0;
            return CuResult.SUCCESS;
        }

        /** A driver whose pitch is wider than the server's estimate (512-byte rows): 1024-byte rows. */
        @Override
        public int memAllocPitch(Out o, long widthBytes, long height, int elementSize) {
            return super.memAllocPitch(o, (widthBytes + 1023) & ~1023L, height, elementSize);
        }

        @Override
        public int deviceGetGraphMemAttribute(Out o, int device, int attribute) {
            // CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT 2
            o.bytes = attribute == 2 ? GRAPH_MEMORY : 0;
            return CuResult.SUCCESS;
        }
    }

    QuotaAccountingTest() {
        super(TOKEN);
    }

    @BeforeEach
    void start() throws Exception {
        startAndInit(new DriverHolds(), "memory.quota=" + QUOTA);
    }

    private long free() {
        Response r = c.call(Requests.cuMemGetInfo_v2());
        assertEquals(CuResult.SUCCESS, r.result());
        assertEquals(QUOTA, r.out(1), "total: the quota");
        return r.out(0);
    }

    /**
     * A free's memory is given back once the freeing call itself lets go of the range it was checked
     * against, just after its answer (DeviceRanges.Use): wait for it.
     */
    private void awaitFree(long bytes) {
        ServerIntegrationTest.awaitTrue(() -> free() == bytes, bytes + " bytes free");
    }

    private int result(Requests.Request request) {
        return c.call(request).result();
    }

    @Test
    void theDriversPoolCacheAndGraphMemoryAreHeld() {
        assertEquals(QUOTA - DRIVER, free());
        assertEquals(0, server.vm().allocated(), "the server's own count is the allocations only");
    }

    @Test
    void aDeviceAllocationGetsWhatIsReportedFreeAndNotAByteMore() {
        long free = free();
        assertEquals(CuResult.OUT_OF_MEMORY, result(Requests.ivc_mem_alloc(free + 1)));
        long d = ok(c.call(Requests.ivc_mem_alloc(free)));
        assertEquals(0, free());
        assertEquals(CuResult.SUCCESS, result(Requests.ivc_mem_free(d)));
        awaitFree(QUOTA - DRIVER);
    }

    @Test
    void aPitchedAllocationIsCountedAtItsPitch() {
        long free = free();
        // the estimate (512-byte rows) beyond what is free is refused before the driver is asked
        assertEquals(CuResult.OUT_OF_MEMORY, result(Requests.ivc_mem_alloc_pitch(512, free / 512 + 1, 4)));
        // (a response is read before the next call: it is the channel's buffer)
        Response r = c.call(Requests.ivc_mem_alloc_pitch(500, 16, 4));
        assertEquals(CuResult.SUCCESS, r.result());
        long narrow = r.out(0);
        assertEquals(1024, r.out(1), "the stand-in's pitch");
        assertEquals(free - 1024 * 16, free(), "pitch x height held, not the estimate");
        // the estimate fits what is left, the driver's pitch does not, by more than the driver
        // holds: held all the same, and its free gives back exactly what was counted
        long rows = 32;
        long left = free - 1024 * 16;
        long fill = ok(c.call(Requests.ivc_mem_alloc(left - 512 * rows)));
        long wide = ok(c.call(Requests.ivc_mem_alloc_pitch(500, rows, 4)));
        assertEquals(0, free());
        assertEquals(QUOTA - DRIVER + (1024 - 512) * rows, server.vm().allocated(), "the real size counted, past the quota");
        assertEquals(CuResult.SUCCESS, result(Requests.ivc_mem_free(wide)));
        awaitFree(512 * rows);
        assertEquals(CuResult.SUCCESS, result(Requests.ivc_mem_free(fill)));
        assertEquals(CuResult.SUCCESS, result(Requests.ivc_mem_free(narrow)));
        awaitFree(QUOTA - DRIVER);
    }

    @Test
    void streamOrderedAllocationsFromTheDevicesPoolAndACreatedPoolCount() {
        long free = free();
        assertEquals(CuResult.OUT_OF_MEMORY, result(Requests.ivc_mem_alloc_async(free + 1, 0, 0)));
        long a = ok(c.call(Requests.ivc_mem_alloc_async(4096, 0, 0)));
        long pool = ok(c.call(Requests.ivc_mempool_create(PINNED, 0, 0, 0, 0)));
        assertEquals(CuResult.OUT_OF_MEMORY, result(Requests.ivc_mem_alloc_async(free - 4096 + 1, pool, 0)));
        ok(c.call(Requests.ivc_mem_alloc_async(free - 4096, pool, 0)));
        assertEquals(0, free());
        assertEquals(CuResult.SUCCESS, result(Requests.ivc_mem_free_async(a, 0)));
        awaitFree(4096);
    }

    @Test
    void virtualMemoryAllocationsCountWithWhatTheDriverHolds() {
        long granule = 2 * MIB;
        ok(c.call(Requests.ivc_vmm_create(granule, PINNED, 0, 0, 0, 0)));
        assertEquals(QUOTA - DRIVER - granule, free());
        // a second granule fits the quota but not beside the driver's memory
        assertEquals(CuResult.OUT_OF_MEMORY, result(Requests.ivc_vmm_create(granule, PINNED, 0, 0, 0, 0)));
        assertEquals(granule, server.vm().allocated());
    }

    @Test
    void arraysAndMipmappedArraysCountWithWhatTheDriverHolds() {
        long free = free();
        // a 1D array of bytes holds its width
        assertEquals(CuResult.OUT_OF_MEMORY, result(Requests.ivc_array_create(free + 1, 0, 0, UINT8, 1, 0)));
        ok(c.call(Requests.ivc_array_create(4096, 0, 0, UINT8, 1, 0)));
        assertEquals(free - 4096, free());
        // a mipmapped array is counted at twice its first level (docs/memory.md)
        long left = free - 4096;
        assertEquals(CuResult.OUT_OF_MEMORY,
                result(Requests.ivc_mipmapped_array_create(left / 2 + 1, 0, 0, UINT8, 1, 0, 2)));
        ok(c.call(Requests.ivc_mipmapped_array_create(1024, 0, 0, UINT8, 1, 0, 2)));
        assertEquals(left - 2048, free());
    }

    @Test
    void everyKindComesBackWhenTheProcessExits() {
        ok(c.call(Requests.ivc_mem_alloc(4096)));
        ok(c.call(Requests.ivc_mem_alloc_pitch(500, 4, 4)));
        ok(c.call(Requests.ivc_mem_alloc_async(4096, 0, 0)));
        long pool = ok(c.call(Requests.ivc_mempool_create(PINNED, 0, 0, 0, 0)));
        ok(c.call(Requests.ivc_mem_alloc_async(4096, pool, 0)));
        ok(c.call(Requests.ivc_vmm_create(2 * MIB, PINNED, 0, 0, 0, 0)));
        ok(c.call(Requests.ivc_array_create(4096, 0, 0, UINT8, 1, 0)));
        ok(c.call(Requests.ivc_mipmapped_array_create(1024, 0, 0, UINT8, 1, 0, 2)));
        assertEquals(4096 + 1024 * 4 + 4096 + 4096 + 2 * MIB + 4096 + 2048, server.vm().allocated());
        assertEquals(CuResult.SUCCESS, result(Requests.ivc_process_exit()));
        ServerIntegrationTest.awaitTrue(() -> server.vm().allocated() == 0, "every kind given back");
        Channel other = hello(1, TOKEN + 1);
        Response r = other.call(Requests.cuMemGetInfo_v2());
        assertEquals(QUOTA - DRIVER, r.out(0), "another process of the VM sees the whole quota less the driver's");
    }
}
