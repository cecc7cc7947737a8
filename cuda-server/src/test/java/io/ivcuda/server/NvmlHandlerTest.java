package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.NvmlQuery;
import io.ivcuda.server.backend.NvmlResult;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.Requests;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.agrona.UnsafeApi;
import org.junit.jupiter.api.Test;

/**
 * The guest's NVML as the server answers it (api/sharing.api, docs/sharing.md): the host-memory
 * backend has no NVML and says so; with a host NVML (here a stand-in that answers like one, for
 * the server's filtering only) the guest sees its quota as memory and its own processes only.
 */
class NvmlHandlerTest extends HostMemoryGuestCase {
    static final long TOKEN = (6500L << 32) | 0x65;
    static final long CARD = 80L << 30;

    @Override
    long token() {
        return TOKEN;
    }

    /** A host-memory backend with an NVML stand-in: what the server does with NVML's answers is tested, not NVML. */
    static final class StandInNvml extends HostMemoryBackend {
        final List<String> opened = new ArrayList<>();

        @Override
        public int nvmlOpen(String pciBusId) {
            opened.add(pciBusId);
            return NvmlResult.SUCCESS;
        }

        @Override
        public int nvmlString(int what, long dst, int capacity) {
            String s = switch (what) {
                case NvmlQuery.DRIVER_VERSION -> "580.00";
                case NvmlQuery.NVML_VERSION -> "13.580.00";
                case NvmlQuery.NAME -> "stand-in NVML device";
                case NvmlQuery.PCI_BUS_ID -> "00000000:00:00.0";
                default -> "GPU-00000000-1111-2222-3333-444444444444";
            };
            byte[] b = s.getBytes(StandardCharsets.US_ASCII);
            if (b.length + 1 > capacity) {
                return NvmlResult.INSUFFICIENT_SIZE;
            }
            for (int i = 0; i < b.length; i++) {
                UnsafeApi.putByte(dst + i, b[i]);
            }
            UnsafeApi.putByte(dst + b.length, (byte) 0);
            return NvmlResult.SUCCESS;
        }

        @Override
        public int nvmlValue(Out out, int what, int arg) {
            out.bytes = what == NvmlQuery.UTILIZATION ? 42 | (7L << 32) : 1000 + what;
            return NvmlResult.SUCCESS;
        }

        @Override
        public int nvmlMemory(Out out) {
            out.totalBytes = CARD;
            out.bytes = CARD - (10L << 30);
            out.address = 10L << 30;
            return NvmlResult.SUCCESS;
        }
    }

    Channel start(HostMemoryBackend backend, long quota) throws Exception {
        start(backend, "memory.quota=" + quota, "wait.park.max.us=200");
        return greeted(0);
    }

    /** Another process of the VM, greeted and past cuInit. */
    Channel another(int index, long token) {
        Channel c = guest.claim(index, token);
        assertEquals(CuResult.SUCCESS, c.hello().result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuInit(0)).result());
        return c;
    }

    /** out 0 is NVML's status: the call itself always succeeds. */
    static int status(Response r) {
        assertEquals(CuResult.SUCCESS, r.result());
        return (int) r.out(0);
    }

    static String string(Response r) {
        int length = (int) r.out(1);
        byte[] b = new byte[length - 1];
        r.buffer().getBytes(r.payload() + 16, b);
        return new String(b, StandardCharsets.US_ASCII);
    }

    @Test
    void theHostMemoryBackendHasNoNvml() throws Exception {
        Channel c = start(new HostMemoryBackend(), 0);
        Response init = c.call(Requests.ivc_nvml_init());
        assertEquals(NvmlResult.NOT_SUPPORTED, status(init));
        assertEquals(0, init.out(1), "no device");
        assertEquals(NvmlResult.NOT_SUPPORTED, status(c.call(Requests.ivc_nvml_memory())));
        assertEquals(NvmlResult.NOT_SUPPORTED, status(c.call(Requests.ivc_nvml_string(NvmlQuery.NAME, 96))));
        assertEquals(NvmlResult.NOT_SUPPORTED, status(c.call(Requests.ivc_nvml_value(NvmlQuery.TEMPERATURE, 0))));
    }

    @Test
    void theDeviceIsTheServersGpuNamedByItsPciBusId() throws Exception {
        StandInNvml nvml = new StandInNvml();
        Channel c = start(nvml, 0);
        Response init = c.call(Requests.ivc_nvml_init());
        assertEquals(NvmlResult.SUCCESS, status(init));
        assertEquals(1, init.out(1));
        assertEquals(List.of("0000:00:00.0"), nvml.opened, "HostMemoryBackend's cuDeviceGetPCIBusId");
        Response name = c.call(Requests.ivc_nvml_string(NvmlQuery.NAME, 96));
        assertEquals(NvmlResult.SUCCESS, status(name));
        assertEquals("stand-in NVML device", string(name));
        // too small a buffer: NVML's INSUFFICIENT_SIZE, nothing cut
        assertEquals(NvmlResult.INSUFFICIENT_SIZE, status(c.call(Requests.ivc_nvml_string(NvmlQuery.UUID, 20))));
        // a query that is none
        assertEquals(NvmlResult.INVALID_ARGUMENT, status(c.call(Requests.ivc_nvml_string(99, 96))));
        assertEquals(NvmlResult.INVALID_ARGUMENT, status(c.call(Requests.ivc_nvml_value(0, 0))));
        assertEquals(NvmlResult.INVALID_ARGUMENT, status(c.call(Requests.ivc_nvml_value(-1, 0))));
        // arguments out of NVML's ranges: a sensor, a clock type, an argument where none is taken
        assertEquals(NvmlResult.INVALID_ARGUMENT, status(c.call(Requests.ivc_nvml_value(NvmlQuery.TEMPERATURE, 1))));
        assertEquals(NvmlResult.INVALID_ARGUMENT, status(c.call(Requests.ivc_nvml_value(NvmlQuery.CLOCK, 4))));
        assertEquals(NvmlResult.INVALID_ARGUMENT, status(c.call(Requests.ivc_nvml_value(NvmlQuery.MAX_CLOCK, -1))));
        assertEquals(NvmlResult.INVALID_ARGUMENT, status(c.call(Requests.ivc_nvml_value(NvmlQuery.POWER_USAGE, 7))));
        assertEquals(NvmlResult.SUCCESS, status(c.call(Requests.ivc_nvml_value(NvmlQuery.CLOCK, 3))));
        Response util = c.call(Requests.ivc_nvml_value(NvmlQuery.UTILIZATION, 0));
        assertEquals(NvmlResult.SUCCESS, status(util));
        assertEquals(42 | (7L << 32), util.out(1));
    }

    @Test
    void withoutAQuotaMemoryIsTheCards() throws Exception {
        Channel c = start(new StandInNvml(), 0);
        Response m = c.call(Requests.ivc_nvml_memory());
        assertEquals(NvmlResult.SUCCESS, status(m));
        assertEquals(CARD, m.out(1));
        assertEquals(CARD - (10L << 30), m.out(3));
        assertEquals(10L << 30, m.out(4));
    }

    @Test
    void withAQuotaMemoryIsTheVmsAndProcessesAreItsOwn() throws Exception {
        Channel c = start(new StandInNvml(), 1 << 20);
        Response a = c.call(Requests.ivc_mem_alloc(300_000));
        assertEquals(CuResult.SUCCESS, a.result());
        // a second process of the VM that holds nothing is not a compute process
        another(1, TOKEN + 1);
        Response m = c.call(Requests.ivc_nvml_memory());
        assertEquals(NvmlResult.SUCCESS, status(m));
        assertEquals(1 << 20, m.out(1), "total: the quota");
        assertEquals(0, m.out(2), "reserved");
        assertEquals((1 << 20) - 300_000, m.out(3), "free: what is left of the quota");
        assertEquals(300_000, m.out(4), "used: what the VM holds");
        // the same figures as cuMemGetInfo's
        Response info = c.call(Requests.cuMemGetInfo_v2());
        assertEquals(m.out(3), info.out(0));
        assertEquals(m.out(1), info.out(1));

        Response p = c.call(Requests.ivc_nvml_processes(64));
        assertEquals(NvmlResult.SUCCESS, status(p));
        assertEquals(1, p.out(1), "one process holds memory");
        assertEquals(16, p.out(2), "one (pid, bytes) pair");
        assertEquals(TOKEN >>> 32, p.buffer().getLong(p.payload() + 24, FakeGuest.LE), "its pid as the guest said");
        assertEquals(300_000, p.buffer().getLong(p.payload() + 32, FakeGuest.LE));
        // no room for a pair: the count still says how many there are
        Response none = c.call(Requests.ivc_nvml_processes(1));
        assertEquals(1, none.out(1));
        assertEquals(0, none.out(2));
    }
}
