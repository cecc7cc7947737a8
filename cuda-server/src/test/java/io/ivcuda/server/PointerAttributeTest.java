package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.gen.Requests;
import org.junit.jupiter.api.Test;

/**
 * ivc_pointer_attribute (api/cuda-driver.api), what cuPointerGetAttribute(s) ask the server for a
 * pointer outside the pool: every attribute the guest sends, answered from the process's own
 * device allocations with the byte size cuda.h gives it; pointers that are not the process's,
 * attributes the server does not answer and capacities that do not fit are refused, and the
 * server goes on serving. tests/xlang/pointer_attrs.c checks the guest's side of the same calls.
 */
class PointerAttributeTest extends StartedServerCase<HostMemoryBackend> {
    static final long TOKEN = (7575L << 32) | 0x45;
    static final long OTHER = (7676L << 32) | 0x46;
    static final int CONTEXT = 1;
    static final int MEMORY_TYPE = 2;
    static final int DEVICE_POINTER = 3;
    static final int HOST_POINTER = 4;
    static final int SYNC_MEMOPS = 6;
    static final int BUFFER_ID = 7;
    static final int IS_MANAGED = 8;
    static final int DEVICE_ORDINAL = 9;
    static final int RANGE_START_ADDR = 11;
    static final int RANGE_SIZE = 12;
    static final int MAPPED = 13;
    static final int MEMPOOL_HANDLE = 17;

    PointerAttributeTest() {
        super(TOKEN, HostMemoryBackend::new);
    }

    /** The attribute's value as the server wrote it, checking it wrote {@code size} bytes. */
    private static long value(Response r, int size) {
        assertEquals(CuResult.SUCCESS, r.result());
        assertEquals(size, r.out(0), "bytes written");
        return size == 4 ? r.buffer().getInt(r.payload() + 8, FakeGuest.LE)
                : r.buffer().getLong(r.payload() + 8, FakeGuest.LE);
    }

    @Test
    void everyAttributeOfDeviceMemoryWithItsSize() {
        Channel c = withContext(0, TOKEN);
        long ctx = ok(c.call(Requests.cuCtxGetCurrent()));
        long d = ok(c.call(Requests.ivc_mem_alloc(5000)));
        long p = d + 100;
        assertEquals(ctx, value(c.call(Requests.ivc_pointer_attribute(8, CONTEXT, p)), 8), "the context's handle");
        assertEquals(2, value(c.call(Requests.ivc_pointer_attribute(4, MEMORY_TYPE, p)), 4), "CU_MEMORYTYPE_DEVICE");
        assertEquals(p, value(c.call(Requests.ivc_pointer_attribute(8, DEVICE_POINTER, p)), 8));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_pointer_attribute(8, HOST_POINTER, p)).result(),
                "device memory has no host address (cuda.h): INVALID_VALUE, which cuPointerGetAttributes makes NULL");
        assertEquals(d, value(c.call(Requests.ivc_pointer_attribute(8, BUFFER_ID, p)), 8));
        assertEquals(0, value(c.call(Requests.ivc_pointer_attribute(4, IS_MANAGED, p)), 4), "not managed");
        assertEquals(0, value(c.call(Requests.ivc_pointer_attribute(4, DEVICE_ORDINAL, p)), 4));
        assertEquals(d, value(c.call(Requests.ivc_pointer_attribute(8, RANGE_START_ADDR, p)), 8));
        assertEquals(5000, value(c.call(Requests.ivc_pointer_attribute(8, RANGE_SIZE, p)), 8));
        assertEquals(1, value(c.call(Requests.ivc_pointer_attribute(4, MAPPED, p)), 4), "mapped");
        assertEquals(d + 4999, value(c.call(Requests.ivc_pointer_attribute(8, DEVICE_POINTER, d + 4999)), 8),
                "the last byte");
        assertEquals(0, value(c.call(Requests.ivc_pointer_attribute(8, MEMPOOL_HANDLE, p)), 8),
                "cuMemAlloc memory is no mempool's: NULL (PoolPointerAttributeTest: pool memory)");
    }

    @Test
    void pointersAttributesAndCapacitiesThatDoNotFitAreRefused() {
        Channel c = withContext(0, TOKEN);
        Channel other = withContext(1, OTHER);
        long d = ok(c.call(Requests.ivc_mem_alloc(4096)));
        long theirs = ok(other.call(Requests.ivc_mem_alloc(4096)));
        for (int attribute : new int[] {CONTEXT, MEMORY_TYPE, DEVICE_POINTER, IS_MANAGED, RANGE_SIZE, MAPPED}) {
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_pointer_attribute(8, attribute, theirs)).result(),
                    "attribute " + attribute + " of another process's allocation");
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_pointer_attribute(8, attribute, d + 4096)).result(),
                    "attribute " + attribute + " one past the end");
            assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_pointer_attribute(8, attribute, 0)).result(),
                    "attribute " + attribute + " of NULL");
            assertEquals(CuResult.INVALID_VALUE,
                    c.call(Requests.ivc_pointer_attribute(8, attribute, 0xffff_ffff_ffff_fff0L)).result(),
                    "attribute " + attribute + " at the top of the address space");
        }
        for (int attribute : new int[] {SYNC_MEMOPS, 5, 0, -1, 22, Integer.MAX_VALUE}) {
            assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.ivc_pointer_attribute(8, attribute, d)).result(),
                    "attribute " + attribute);
        }
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_pointer_attribute(4, RANGE_SIZE, d)).result(),
                "4 bytes for an 8-byte attribute");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_pointer_attribute(0, MEMORY_TYPE, d)).result(),
                "no room at all");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_pointer_attribute(3, MAPPED, d)).result(),
                "3 bytes for a 4-byte boolean");
        int huge = c.call(Requests.ivc_pointer_attribute(0xffff_ffffL, RANGE_SIZE, d)).result();
        assertEquals(CuResult.INVALID_VALUE, huge, "a capacity past the response room");
        // both processes are still served
        assertEquals(4096, value(c.call(Requests.ivc_pointer_attribute(8, RANGE_SIZE, d + 1)), 8));
        assertEquals(theirs, value(other.call(Requests.ivc_pointer_attribute(8, RANGE_START_ADDR, theirs + 5)), 8));
    }
}
