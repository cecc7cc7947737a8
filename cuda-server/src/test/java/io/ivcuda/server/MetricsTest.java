package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.metrics.MetricsExposition;
import io.ivcuda.common.metrics.VmFigures;
import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.gen.Requests;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/**
 * A server driven by a fake guest, then its figures the way {@code ivshmem-provisioner metrics} gets them:
 * the status file the server writes, read back, written by the Prometheus client as text and parsed strictly.
 * Every figure asserted here is one the guest's calls made, so a counter that is not counted fails.
 */
class MetricsTest extends HostMemoryGuestCase {
    static final int PID = 42;

    @Override
    long token() {
        return ((long) PID << 32) | 1;
    }

    @Test
    void callsCopiesErrorsAndMemoryAreExportedPerVmAndPerProcess() throws Exception {
        start(new HostMemoryBackend(), "pidfile=" + dir.resolve("vm.pid"), "domain.name=vm \"one\"",
                "domain.uuid=11111111-2222-3333-4444-555555555555", "memory.quota=1M");
        Channel c = greeted(0);
        var alloc = c.call(Requests.ivc_mem_alloc(4096));
        assertEquals(CuResult.SUCCESS, alloc.result());
        long device = alloc.out(0);
        byte[] data = new byte[1000];
        for (int i = 0; i < 3; i++) {
            assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy_htod_inline(device, 0, data, data.length)).result());
        }
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy_dtoh_inline(device, 0, 512)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_mem_free(0x1234)).result());
        // over the 1 MiB quota: refused, and counted as an error of that function
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_mem_alloc(2L << 20)).result());

        Properties status = status();
        VmFigures figures = VmFigures.read(status, status.getProperty("domain.name"), status.getProperty("domain.uuid"));
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        MetricsExposition.write(List.of(figures), text);
        ExpositionParser p = ExpositionParser.parse(text.toString(StandardCharsets.UTF_8));

        Map<String, String> vm = Map.of("domain", "vm \"one\"", "uuid", "11111111-2222-3333-4444-555555555555");
        assertEquals("counter", p.types.get("ivcuda_calls_total"));
        assertEquals("gauge", p.types.get("ivcuda_gpu_memory_held_bytes"));
        assertEquals(2, p.value("ivcuda_calls_total", with(vm, "function", "ivc_mem_alloc")));
        assertEquals(1, p.value("ivcuda_call_errors_total", with(vm, "function", "ivc_mem_alloc")));
        assertEquals(3, p.value("ivcuda_calls_total", with(vm, "function", "ivc_memcpy_htod_inline")));
        assertEquals(0, p.value("ivcuda_call_errors_total", with(vm, "function", "ivc_memcpy_htod_inline")));
        assertEquals(1, p.value("ivcuda_call_errors_total", with(vm, "function", "ivc_mem_free")));
        assertEquals(3000, p.value("ivcuda_copied_to_device_bytes_total", vm));
        assertEquals(512, p.value("ivcuda_copied_to_host_bytes_total", vm));
        assertEquals(4096, p.value("ivcuda_gpu_memory_held_bytes", vm));
        assertEquals(1 << 20, p.value("ivcuda_gpu_memory_quota_bytes", vm));
        assertEquals(1, p.value("ivcuda_guest_processes", vm));
        assertEquals(100, p.value("ivcuda_compute_share_percent", with(vm, "state", "whole-gpu")));
        assertTrue(p.value("ivcuda_busy_seconds_total", vm) > 0, "the calls took some time");
        assertEquals(0, p.value("ivcuda_kernel_launches_total", vm), "the host-memory backend launches nothing");
        // the free of nothing was refused (RefusalLog's kind "ivc_mem_free dptr"), as status --json counts it
        assertEquals(1, p.value("ivcuda_refusals_total", with(vm, "kind", "ivc_mem_free.dptr")));
        assertEquals("counter", p.types.get("ivcuda_refusals_total"));

        Map<String, String> process = with(vm, "pid", Integer.toString(PID));
        // hello, cuInit, 2 allocs, 3 + 1 copies, 1 free
        assertEquals(9, p.value("ivcuda_process_requests_total", process));
        assertEquals(2, p.value("ivcuda_process_request_errors_total", process));
        assertEquals(3000, p.value("ivcuda_process_copied_to_device_bytes_total", process));
        assertEquals(512, p.value("ivcuda_process_copied_to_host_bytes_total", process));
        assertEquals(4096, p.value("ivcuda_process_gpu_memory_held_bytes", process));
        assertEquals(9, p.value("ivcuda_requests_total", vm), "the VM's totals are its one process's");
        // by function for the process too: the functions it called, and only those
        assertEquals(2, p.value("ivcuda_process_calls_total", with(process, "function", "ivc_mem_alloc")));
        assertEquals(1, p.value("ivcuda_process_call_errors_total", with(process, "function", "ivc_mem_alloc")));
        assertEquals(3, p.value("ivcuda_process_calls_total", with(process, "function", "ivc_memcpy_htod_inline")));
        assertEquals(1, p.value("ivcuda_process_call_errors_total", with(process, "function", "ivc_mem_free")));
        assertEquals(0, p.value("ivcuda_process_call_errors_total", with(process, "function", "cuInit")));
        assertEquals("counter", p.types.get("ivcuda_process_calls_total"));
        assertEquals(6, p.count("ivcuda_process_calls_total"),
                "hello, cuInit, alloc, htod, dtoh, free: one series per function called");
    }

    /**
     * Strided and array copies count width·height·depth bytes each way when they move bytes between the guest and
     * the GPU (inline or through the pool); device-to-device and array-to-device copies, and refused ones, count
     * nothing.
     */
    @Test
    void stridedAndArrayCopiesCountTheBytesTheyMoveBetweenGuestAndGpu() throws Exception {
        start(new HostMemoryBackend(), "pidfile=" + dir.resolve("vm.pid"), "domain.name=vm",
                "domain.uuid=11111111-2222-3333-4444-555555555555");
        Channel c = greeted(0);
        long d = c.call(Requests.ivc_mem_alloc(4096)).out(0);
        long e = c.call(Requests.ivc_mem_alloc(4096)).out(0);
        var host = c.call(Requests.ivc_host_alloc(4096, 0));
        assertEquals(CuResult.SUCCESS, host.result());
        long offset = host.out(0);
        // 2 slices of 3 rows of 5 bytes at pitch 8, 4 rows a slice: 30 bytes each way inline
        long span = 8 * 4 + 2 * 8 + 5;
        assertEquals(CuResult.SUCCESS,
                c.call(Requests.ivc_memcpy3d_htod_inline(d, span, 8, 4, 5, 3, 2, 0, new byte[30], 30)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy3d_dtoh_inline(d, span, 8, 4, 5, 3, 2, 0, 30)).result());
        // 4 rows of 12 bytes through the pool (pitch 32), synchronous and queued: 48 bytes each, each way
        long poolSpan = 3 * 32 + 12;
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy3d_htod_pool(d, 48, 12, 4, offset, poolSpan, 32, 4,
                12, 4, 1, 0)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy3d_dtoh_pool(offset, poolSpan, 32, 4, d, 48, 12, 4,
                12, 4, 1, 0)).result());
        c.post(Requests.ivc_memcpy3d_htod_pool_async(d, 48, 12, 4, offset, poolSpan, 32, 4, 12, 4, 1, 0));
        c.post(Requests.ivc_memcpy3d_dtoh_pool_async(offset, poolSpan, 32, 4, d, 48, 12, 4, 12, 4, 1, 0));
        // device to device: the guest's bytes do not move
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy3d_dtod(e, 48, 12, 4, d, 48, 12, 4, 12, 4, 1, 0))
                .result());
        // refused (the geometry leaves the checked span): nothing moved
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_memcpy3d_htod_inline(d, 8, 8, 1, 8, 2, 1, 0, new byte[16], 16)).result());
        // an array of 64 x 8 bytes (CU_AD_FORMAT_UNSIGNED_INT8, one channel): 12 x 3 in and out inline, 64 x 2
        // from the pool and back, and a device-to-array copy that does not count
        var array = c.call(Requests.ivc_array_create(64, 8, 0, 1, 1, 0));
        assertEquals(CuResult.SUCCESS, array.result());
        long a = array.out(0);
        assertEquals(CuResult.SUCCESS,
                c.call(Requests.ivc_memcpy3d_htoa_inline(a, 8, 2, 0, 12, 3, 1, 0, new byte[36], 36)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy3d_atoh_inline(a, 8, 2, 0, 12, 3, 1, 0, 36)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy3d_htoa_pool(a, 0, 0, 0, offset, 64 + 64, 64, 2, 64,
                2, 1, 0)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy3d_atoh_pool(offset, 64 + 64, 64, 2, a, 0, 0, 0, 64,
                2, 1, 0)).result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_memcpy3d_dtoa(a, 0, 0, 0, d, 64, 64, 1, 64, 1, 1, 0))
                .result());
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuCtxSynchronize()).result());

        Properties status = status();
        VmFigures figures = VmFigures.read(status, "vm", "11111111-2222-3333-4444-555555555555");
        long each = 30 + 2 * 48 + 36 + 128;
        assertEquals(each, figures.totals().bytesToDevice());
        assertEquals(each, figures.totals().bytesToHost());
        assertEquals(each, figures.processes().get(PID).bytesToDevice());
        assertEquals(each, figures.processes().get(PID).bytesToHost());
    }

    private static Map<String, String> with(Map<String, String> labels, String name, String value) {
        Map<String, String> m = new java.util.HashMap<>(labels);
        m.put(name, value);
        return m;
    }
}
