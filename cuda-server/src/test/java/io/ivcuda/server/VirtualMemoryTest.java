package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.gen.Requests;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Virtual memory management (api/vmm.api, docs/memory.md) through a real server with the
 * host-memory backend, as a transport test: reservations are address bookkeeping, cuMemCreate
 * host bytes counted against the quota, and a mapping with access set is a range copies may
 * touch. The GPU path: gpu/programs/vmm_pools.c.
 */
class VirtualMemoryTest extends OneProcessCase {
    static final long TOKEN = (4646L << 32) | 0x77;
    static final long G = 2L << 20; // the host-memory backend's granularity
    static final int PINNED = 1;

    VirtualMemoryTest() {
        super(TOKEN);
    }

    @BeforeEach
    void start() throws Exception {
        startAndHello(new HostMemoryBackend(), "memory.quota=" + (3 * G), "limit.allocations.process=6");
    }

    private long reserve(Channel ch, long bytes) {
        return ok(ch.call(Requests.ivc_vmm_address_reserve(bytes, 0, 0, 0)));
    }

    private long create(Channel ch, long bytes) {
        return ok(ch.call(Requests.ivc_vmm_create(bytes, PINNED, 0, 0, 0, 0)));
    }

    private static byte[] access(int flags) {
        return ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN).putInt(1).putInt(0).putInt(flags).array();
    }

    private byte[] read(long device, int n) {
        return c.readDevice(device, n);
    }

    @Test
    void aMappedRangeWithAccessTakesCopiesAcrossItsMappings() {
        assertEquals(G, ok(c.call(Requests.ivc_vmm_granularity(PINNED, 0, 0, 0, 0))));
        long va = reserve(c, 2 * G);
        long a = create(c, 2 * G);
        assertEquals(2 * G, server.vm().allocated());
        // two mappings, the allocation's halves (contiguous host bytes in the host-memory backend)
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_vmm_map(va, G, 0, a, 0)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_vmm_map(va + G, G, G, a, 0)).result());
        // mapped, but no access set yet: not a range a copy may touch
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuMemsetD8_v2(va, 1, 16)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_vmm_set_access(va, 2 * G, access(3), 12)).result());
        assertEquals(3, ok(c.call(Requests.ivc_vmm_get_access(0, va + G))));
        // a memset over the seam of the two mappings is checked as one range
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMemsetD8_v2(va + G - 8, 0x5a, 8)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMemsetD8_v2(va + G, 0x3c, 8)).result());
        byte[] want = new byte[8];
        Arrays.fill(want, (byte) 0x5a);
        assertArrayEquals(want, read(va + G - 8, 8));
        // but not past the reservation's end
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuMemsetD8_v2(va + 2 * G - 4, 1, 8)).result());
        // the properties of a's handle: pinned, no handle types, allocFlags 0
        Response p = c.call(Requests.ivc_vmm_properties(a));
        assertEquals(CuResult.SUCCESS, p.result());
        assertEquals(PINNED, p.out(0));
    }

    @Test
    void releaseWhileMappedKeepsTheMemoryAndItsQuotaUntilUnmapped() {
        long va = reserve(c, G);
        long a = create(c, G);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_vmm_map(va, G, 0, a, 0)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_vmm_set_access(va, G, access(3), 12)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMemRelease(a)).result());
        // the handle is gone, the mapping still works and holds the quota
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuMemRelease(a)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMemsetD8_v2(va, 9, 4)).result());
        assertEquals(G, server.vm().allocated());
        // retaining it names it again with a new id; releasing that one lets the unmap free it
        long again = ok(c.call(Requests.ivc_vmm_retain(va + 100)));
        assertNotEquals(a, again);
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMemRelease(again)).result());
        // an unmap must name whole mappings
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_vmm_unmap(va, G / 2)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_vmm_unmap(va, G)).result());
        assertEquals(0, server.vm().allocated());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuMemsetD8_v2(va, 9, 4)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuMemAddressFree(va, G)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuMemAddressFree(va, G)).result());
    }

    @Test
    void aProcessMapsOnlyItsOwnHandlesIntoItsOwnRanges() {
        long va = reserve(c, 2 * G);
        long a = create(c, G);
        Channel other = guest.claim(1, TOKEN + 1);
        assertEquals(CuResult.SUCCESS, other.hello().result());
        long theirs = reserve(other, G);
        // another process's handle is not a handle here; another's range is not a range here
        assertEquals(CuResult.INVALID_VALUE, other.call(Requests.ivc_vmm_map(theirs, G, 0, a, 0)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_vmm_map(theirs, G, 0, a, 0)).result());
        assertEquals(CuResult.INVALID_VALUE, other.call(Requests.cuMemRelease(a)).result());
        assertEquals(CuResult.INVALID_VALUE, other.call(Requests.cuMemAddressFree(va, 2 * G)).result());
        // beyond the allocation, overlapping a mapping, outside every reservation
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_vmm_map(va, 2 * G, 0, a, 0)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_vmm_map(va, G, 0, a, 0)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_vmm_map(va, G, 0, a, 0)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_vmm_map(0x1000, G, 0, a, 0)).result());
        // set access: only on mapped memory, only for the device, only known flags
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_vmm_set_access(va, 2 * G, access(3), 12)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_vmm_set_access(va, G, access(2), 12)).result());
        byte[] host = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN).putInt(2).putInt(0).putInt(3).array();
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_vmm_set_access(va, G, host, 12)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_vmm_set_access(va, G, new byte[7], 7)).result());
        // a reservation with a mapping in it is not freed
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuMemAddressFree(va, 2 * G)).result());
        // managed allocations are not remoted
        assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.ivc_vmm_create(G, 2, 0, 0, 0, 0)).result());
    }

    @Test
    void allocationsCountAgainstTheQuotaAndObjectsAgainstTheLimit() {
        create(c, G);
        create(c, 2 * G);
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_vmm_create(G, PINNED, 0, 0, 0, 0)).result());
        assertEquals(3 * G, server.vm().allocated());
        for (int i = 0; i < 4; i++) {
            reserve(c, G);
        }
        // limit.allocations.process=6: two allocations and four reservations
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_vmm_address_reserve(G, 0, 0, 0)).result());
    }

    @Test
    void processExitUnmapsReleasesAndFreesEverything() {
        long va = reserve(c, 2 * G);
        long a = create(c, G);
        long b = create(c, G);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_vmm_map(va, G, 0, a, 0)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_vmm_map(va + G, G, 0, b, 0)).result());
        ok(c.call(Requests.ivc_vmm_retain(va)));
        int handles = server.vm().handles().size();
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        ServerIntegrationTest.awaitTrue(() -> server.vm().allocated() == 0, "the allocations freed");
        ServerIntegrationTest.awaitTrue(() -> server.vm().handles().size() <= handles - 2, "the handles gone");
    }
}
