package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.gen.Requests;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Stream-ordered allocation (docs/memory.md) through a real server with the host-memory backend:
 * an allocation is a device range of the process counted against the quota until its free, and
 * reclaimed at exit. The host-memory backend has no pool objects, so the pool queries answer
 * CUDA_ERROR_NOT_SUPPORTED there (the GPU path: gpu/programs/memory_objects.c).
 */
class PoolAllocationTest extends OneProcessCase {
    static final long TOKEN = (4545L << 32) | 0x99;

    PoolAllocationTest() {
        super(TOKEN);
    }

    @BeforeEach
    void start() throws Exception {
        startAndHello(new HostMemoryBackend(), "memory.quota=8192");
    }

    private long allocAsync(long bytes) {
        Response r = c.call(Requests.ivc_mem_alloc_async(bytes, 0, 0));
        assertEquals(CuResult.SUCCESS, r.result());
        return r.out(0);
    }

    @Test
    void anAsyncAllocationIsADeviceRangeUntilItsFree() {
        long d = allocAsync(4096);
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMemsetD8_v2(d, 7, 4096)).result());
        assertEquals(4096, server.vm().allocated());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mem_free_async(d, 0)).result());
        assertEquals(0, server.vm().allocated());
        // gone: neither usable nor freeable again
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuMemsetD8_v2(d, 7, 1)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_mem_free_async(d, 0)).result());
        // another process cannot free this process's allocation
        long mine = allocAsync(16);
        Channel other = guest.claim(1, TOKEN + 1);
        assertEquals(CuResult.SUCCESS, other.hello().result());
        assertEquals(CuResult.INVALID_VALUE, other.call(Requests.ivc_mem_free_async(mine, 0)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_mem_alloc_async(0, 0, 0)).result());
    }

    @Test
    void asyncAllocationsCountAgainstTheQuota() {
        long d = allocAsync(8192);
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_mem_alloc_async(1, 0, 0)).result());
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_mem_alloc(1)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mem_free_async(d, 0)).result());
        allocAsync(8192);
    }

    @Test
    void processExitReclaimsAsyncAllocations() {
        allocAsync(4096);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        ServerIntegrationTest.awaitTrue(() -> server.vm().allocated() == 0, "the async allocation freed");
    }

    @Test
    void poolHandlesAreCheckedAndTheHostBackendHasNoPools() {
        // a pool id this process was never given
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.ivc_mem_alloc_async(16, 0x2800000000000001L, 0)).result());
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.ivc_mempool_get_attribute(0x2800000000000001L, 4)).result());
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuMemPoolTrimTo(0x2800000000000001L, 0)).result());
        assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.cuDeviceGetDefaultMemPool(0)).result());
        assertEquals(0, server.vm().allocated());
    }
}
