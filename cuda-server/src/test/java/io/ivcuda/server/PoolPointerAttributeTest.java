package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.Requests;
import org.junit.jupiter.api.Test;

/**
 * CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE of device memory (ivc_pointer_attribute): the handle of the
 * pool a stream-ordered allocation came from, as the asking process names it (the handle it was
 * given by cuDeviceGetMemPool/cuDeviceGetDefaultMemPool or ivc_mempool_create), never the native
 * pool nor another process's handle; NULL for cuMemAlloc memory. The backend is the host-memory one
 * with a device pool to name (the plain one has none: cuDeviceGetMemPool is NOT_SUPPORTED there).
 * The GPU path (JnaCudaBackend): gpu/programs/memory_objects.c, compared with native.
 */
class PoolPointerAttributeTest extends StartedServerCase<PoolPointerAttributeTest.DevicePool> {
    static final long TOKEN = (8585L << 32) | 0x47;
    static final long OTHER = (8686L << 32) | 0x48;
    static final int MEMPOOL_HANDLE = 17;
    static final int PINNED = 1;
    /** The driver's pool of the device, as the stand-in names it natively. */
    static final long NATIVE_DEVICE_POOL = 0x7f00_0000_4000L;

    /** The host-memory backend with one driver pool per device, which plain allocations come from. */
    static final class DevicePool extends HostMemoryBackend {
        @Override
        public int deviceGetMemPool(Out out, int device) {
            out.handle = NATIVE_DEVICE_POOL;
            return CuResult.SUCCESS;
        }

        @Override
        public int deviceGetDefaultMemPool(Out out, int device) {
            return deviceGetMemPool(out, device);
        }

        @Override
        public int memAllocAsync(Out o, long bytes, long pool, long stream) {
            return super.memAllocAsync(o, bytes, pool == NATIVE_DEVICE_POOL ? 0 : pool, stream);
        }
    }

    PoolPointerAttributeTest() {
        super(TOKEN, DevicePool::new);
    }

    /** MEMPOOL_HANDLE of {@code ptr} as the server answers it (8 bytes written). */
    private static long poolOf(Channel c, long ptr) {
        Response r = c.call(Requests.ivc_pointer_attribute(8, MEMPOOL_HANDLE, ptr));
        assertEquals(CuResult.SUCCESS, r.result(), "MEMPOOL_HANDLE of 0x" + Long.toHexString(ptr));
        assertEquals(8, r.out(0), "bytes written");
        return r.buffer().getLong(r.payload() + 8, FakeGuest.LE);
    }

    @Test
    void memoryOfNoPoolIsNull() {
        Channel c = withContext(0, TOKEN);
        long d = ok(c.call(Requests.ivc_mem_alloc(4096)));
        assertEquals(0, poolOf(c, d));
        assertEquals(0, poolOf(c, d + 4095));
    }

    @Test
    void theDevicesPoolIsTheHandleCuDeviceGetMemPoolAnswers() {
        Channel c = withContext(0, TOKEN);
        // asked before the process ever named the pool: minted then, and the same handle later
        long d = ok(c.call(Requests.ivc_mem_alloc_async(256, 0, 0)));
        long answered = poolOf(c, d + 17);
        assertNotEquals(0, answered);
        assertNotEquals(NATIVE_DEVICE_POOL, answered, "never the driver's pointer");
        assertEquals(answered, ok(c.call(Requests.cuDeviceGetMemPool(0))));
        assertEquals(answered, ok(c.call(Requests.cuDeviceGetDefaultMemPool(0))));
        // cuMemAllocFromPoolAsync with that handle: the same pool
        long e = ok(c.call(Requests.ivc_mem_alloc_async(64, answered, 0)));
        assertEquals(answered, poolOf(c, e));
        // another process names the same driver pool with a handle of its own
        Channel other = withContext(1, OTHER);
        long theirs = ok(other.call(Requests.ivc_mem_alloc_async(64, 0, 0)));
        long theirPool = poolOf(other, theirs);
        assertNotEquals(0, theirPool);
        assertNotEquals(answered, theirPool, "a handle of its own");
        assertEquals(theirPool, ok(other.call(Requests.cuDeviceGetMemPool(0))));
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_pointer_attribute(8, MEMPOOL_HANDLE, theirs)).result(),
                "another process's allocation");
        // freed: unknown
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mem_free_async(d, 0)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_pointer_attribute(8, MEMPOOL_HANDLE, d)).result());
    }

    @Test
    void aCreatedPoolIsItsHandleGivenOrCurrent() {
        Channel c = withContext(0, TOKEN);
        long pool = ok(c.call(Requests.ivc_mempool_create(PINNED, 0, 0, 0, 0)));
        long from = ok(c.call(Requests.ivc_mem_alloc_async(128, pool, 0)));
        assertEquals(pool, poolOf(c, from + 127));
        // current (cuDeviceSetMemPool): cuMemAllocAsync allocates from it
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuDeviceSetMemPool(0, pool)).result());
        long current = ok(c.call(Requests.ivc_mem_alloc_async(128, 0, 0)));
        assertEquals(pool, poolOf(c, current));
        // destroyed with allocations outstanding (the driver frees the pool after them): the
        // allocations still name it, as the driver's do
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMemPoolDestroy(pool)).result());
        assertEquals(pool, poolOf(c, from));
        long device = ok(c.call(Requests.cuDeviceGetMemPool(0)));
        long after = ok(c.call(Requests.ivc_mem_alloc_async(128, 0, 0)));
        assertEquals(device, poolOf(c, after), "the device's pool is current again");
        assertNotEquals(pool, device);
    }
}
