package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.gen.Requests;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Created memory pools (api/vmm.api, docs/memory.md "Created pools") through a real server with
 * the host-memory backend, whose pools are bookkeeping (attributes 1-4; allocations plain): a
 * created pool is the process's own, destroyed by it or at reclaim, and the current pool is per
 * process. The GPU path: gpu/programs/vmm_pools.c.
 */
class CreatedPoolTest extends OneProcessCase {
    static final long TOKEN = (4747L << 32) | 0x55;
    static final int PINNED = 1;
    static final int RELEASE_THRESHOLD = 4;

    CreatedPoolTest() {
        super(TOKEN);
    }

    @BeforeEach
    void start() throws Exception {
        startAndHello(new HostMemoryBackend(), "memory.quota=65536");
    }

    private long createPool(Channel ch) {
        return ok(ch.call(Requests.ivc_mempool_create(PINNED, 0, 0, 0, 0)));
    }

    @Test
    void aCreatedPoolTakesAttributesAndAllocationsUntilDestroyed() {
        long pool = createPool(c);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mempool_set_attribute(pool, RELEASE_THRESHOLD, 1 << 20)).result());
        assertEquals(1 << 20, ok(c.call(Requests.ivc_mempool_get_attribute(pool, RELEASE_THRESHOLD))));
        long d = ok(c.call(Requests.ivc_mem_alloc_async(4096, pool, 0)));
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMemsetD8_v2(d, 3, 4096)).result());
        assertEquals(4096, server.vm().allocated());
        byte[] rw = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN).putInt(1).putInt(0).putInt(3).array();
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mempool_set_access(pool, rw, 12)).result());
        assertEquals(3, ok(c.call(Requests.ivc_mempool_get_access(pool, 0))));
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mem_free_async(d, 0)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMemPoolDestroy(pool)).result());
        // gone: neither destroyed again nor allocated from
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.cuMemPoolDestroy(pool)).result());
        assertEquals(CuResult.INVALID_HANDLE, c.call(Requests.ivc_mem_alloc_async(16, pool, 0)).result());
        // only pinned device memory
        assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.ivc_mempool_create(2, 0, 0, 0, 0)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_mempool_create(PINNED, 0x100, 0, 0, 0)).result());
    }

    @Test
    void theCurrentPoolIsPerProcess() {
        long pool = createPool(c);
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuDeviceSetMemPool(0, pool)).result());
        assertEquals(pool, ok(c.call(Requests.cuDeviceGetMemPool(0))));
        // cuMemAllocAsync (pool 0) allocates from it
        long d = ok(c.call(Requests.ivc_mem_alloc_async(64, 0, 0)));
        assertEquals(64, server.vm().allocated());
        // another process still has the device's pool (the host-memory backend has none to name),
        // and cannot use, make current or destroy this process's pool
        Channel other = guest.claim(1, TOKEN + 1);
        assertEquals(CuResult.SUCCESS, other.hello().result());
        assertEquals(CuResult.NOT_SUPPORTED, other.call(Requests.cuDeviceGetMemPool(0)).result());
        assertEquals(CuResult.INVALID_HANDLE, other.call(Requests.cuDeviceSetMemPool(0, pool)).result());
        assertEquals(CuResult.INVALID_HANDLE, other.call(Requests.cuMemPoolDestroy(pool)).result());
        assertEquals(CuResult.INVALID_HANDLE, other.call(Requests.ivc_mem_alloc_async(16, pool, 0)).result());
        // destroying it makes the device's pool current again
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mem_free_async(d, 0)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMemPoolDestroy(pool)).result());
        assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.cuDeviceGetMemPool(0)).result());
    }

    @Test
    void processExitDestroysItsPoolsAfterTheirAllocations() {
        long pool = createPool(c);
        createPool(c);
        ok(c.call(Requests.ivc_mem_alloc_async(4096, pool, 0)));
        int handles = server.vm().handles().size();
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        ServerIntegrationTest.awaitTrue(() -> server.vm().allocated() == 0, "the pool allocation freed");
        ServerIntegrationTest.awaitTrue(() -> server.vm().handles().size() <= handles - 2, "the pools gone");
    }
}
