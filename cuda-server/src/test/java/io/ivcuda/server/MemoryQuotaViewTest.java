package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.MemoryQuota;
import io.ivcuda.server.gen.Requests;
import io.ivcuda.server.backend.HostMemoryBackend;
import org.junit.jupiter.api.Test;

/**
 * Issue 15: with a memory quota the guest's cuMemGetInfo and cuDeviceTotalMem report the quota and
 * the VM's use of it, and they agree with the quota's enforcement: what is reported free can be
 * allocated, one byte more cannot.
 */
class MemoryQuotaViewTest extends HostMemoryGuestCase {
    static final long TOKEN = (1515L << 32) | 0x15;
    /** HostMemoryBackend's card. */
    static final long CARD = 1L << 30;

    @Override
    long token() {
        return TOKEN;
    }

    Channel start(long quota) throws Exception {
        start(new HostMemoryBackend(), "memory.quota=" + quota, "wait.park.max.us=200");
        return greeted(0);
    }

    private static long[] memGetInfo(Channel c) {
        Response r = c.call(Requests.cuMemGetInfo_v2());
        assertEquals(CuResult.SUCCESS, r.result());
        return new long[] {r.out(0), r.out(1)};
    }

    private static long alloc(Channel c, long bytes) {
        Response r = c.call(Requests.ivc_mem_alloc(bytes));
        assertEquals(CuResult.SUCCESS, r.result(), "allocation of " + bytes);
        return r.out(0);
    }

    @Test
    void theGuestSeesItsQuotaAndWhatItHolds() throws Exception {
        Channel c = start(1 << 20);
        assertEquals(1 << 20, memGetInfo(c)[1]);
        assertEquals(1 << 20, memGetInfo(c)[0]);
        Response total = c.call(Requests.cuDeviceTotalMem_v2(0));
        assertEquals(CuResult.SUCCESS, total.result());
        assertEquals(1 << 20, total.out(0));

        long a = alloc(c, 300_000);
        // another process of the same VM counts too: the quota is the VM's
        Channel other = guest.claim(1, TOKEN + 1);
        assertEquals(CuResult.SUCCESS, other.hello().result());
        alloc(other, 100_000);
        long free = memGetInfo(c)[0];
        assertEquals((1 << 20) - 400_000, free);
        assertEquals(free, memGetInfo(other)[0]);

        // what is reported free can be allocated, one byte more cannot
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_mem_alloc(free + 1)).result());
        long rest = alloc(c, free);
        assertEquals(0, memGetInfo(c)[0]);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mem_free(rest)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_mem_free(a)).result());
        assertEquals((1 << 20) - 100_000, memGetInfo(c)[0]);
    }

    @Test
    void withoutAQuotaTheGuestSeesTheCard() throws Exception {
        Channel c = start(0);
        alloc(c, 4096);
        long[] info = memGetInfo(c);
        assertEquals(CARD, info[1]);
        assertEquals(CARD - 4096, info[0]);
        assertEquals(CARD, c.call(Requests.cuDeviceTotalMem_v2(0)).out(0));
    }

    @Test
    void aQuotaBeyondTheCardIsTheCard() throws Exception {
        Channel c = start(4 * CARD);
        assertEquals(CARD, memGetInfo(c)[1]);
        assertEquals(CARD, c.call(Requests.cuDeviceTotalMem_v2(0)).out(0));
    }

    @Test
    void freeIsNoMoreThanTheCardHasFree() {
        // other VMs share the card: 3 MiB of the quota left, but the card has 1 MiB free
        MemoryQuota.View v = MemoryQuota.view(4 << 20, 1 << 20, 1 << 20, 80L << 30);
        assertEquals(1 << 20, v.free());
        assertEquals(4 << 20, v.total());
        assertEquals(1 << 20, v.held());
        // held beyond the quota (the driver's caches): nothing free, never negative
        assertEquals(0, MemoryQuota.view(4 << 20, 5 << 20, 1 << 30, 80L << 30).free());
        // no quota: the card's own figures
        MemoryQuota.View card = MemoryQuota.view(0, 123, 10, 100);
        assertEquals(10, card.free());
        assertEquals(100, card.total());
        assertEquals(90, card.held());
    }
}
