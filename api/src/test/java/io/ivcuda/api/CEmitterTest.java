package io.ivcuda.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CEmitterTest {

    private static final String DESCRIPTION = """
            api 13000
            result CUDA_ERROR_INVALID_HANDLE 400
            handle stream 4 CUDA_ERROR_INVALID_HANDLE
            type int i32
            type size_t u64
            type CUresult i32
            type CUdevice i32
            type CUdeviceptr u64
            type CUstream handle stream
            type u64 u64
            type u32 u32
            fn 9 cuDeviceGetAttribute sync cached (out int pi, in int attrib, in CUdevice dev) -> cuDeviceGetAttribute
            fn 64 cuMemsetD8_v2 sync ptds (in CUdeviceptr dstDevice, in int uc, in size_t N) -> cuMemsetD8_v2=cuMemsetD8@3020 cuMemsetD8
            fn 67 cuMemsetD8Async async ptds (in CUdeviceptr dstDevice, in int uc, in size_t N, in CUstream hStream) -> cuMemsetD8Async=cuMemsetD8Async@3020
            fn - cuMemAlloc_v2 custom (out CUdeviceptr dptr, in size_t bytesize) -> cuMemAlloc_v2=cuMemAlloc@3020 cuMemAlloc
            fn 210 ivc_mem_alloc internal (out CUdeviceptr dptr, in size_t bytesize)
            fn 250 ivc_param_layout internal (out u32 count, outbuf u64 entries[capacity], in u32 capacity, in CUstream f)
            fn 251 ivc_launch async (in CUstream f, inbuf params[paramsSize], in u32 paramsSize)
            unsupported cuArrayCreate
            layout header HDR HEADER_SIZE 4096
              0x000 u64 magic
              0x008 u32 protocol_version
              0x018 u32 server_state shared
              0x100 char[256] server_message
            end
            values header.magic - MAGIC=0x1122334455667788
            values header.protocol_version - PROTOCOL_VERSION=1
            values header.server_state STATE READY=1
            """;

    private final ApiDescription api = ApiDescription.parse(DESCRIPTION, "test.api");

    @Test
    void headerCarriesVersionsHashAndOpcodes() {
        String h = new CEmitter(api).header();
        assertTrue(h.contains("#define IVC_API_VERSION 13000"));
        assertTrue(h.contains(String.format("#define IVC_API_HASH 0x%016xULL", api.apiHash())), h);
        assertTrue(h.contains("#include \"ivc_region.h\""), h);
        assertTrue(new RegionHeaderEmitter(api).header().contains("#define IVC_PROTOCOL_VERSION 1"));
        assertTrue(h.contains("IVC_OP_cuDeviceGetAttribute = 9,"));
        assertTrue(h.contains("IVC_OP_ivc_mem_alloc = 210,"));
        assertTrue(h.contains("CUresult ivc_mem_alloc(CUdeviceptr *dptr, size_t bytesize);"));
        assertTrue(h.contains("CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, int uc, size_t N);"));
        assertTrue(h.contains("IVC_ALIAS(cuMemAlloc, cuMemAlloc_v2)"));
    }

    @Test
    void regionHeaderHasEveryOffsetSizeAndValue() {
        String r = new RegionHeaderEmitter(api).header();
        assertTrue(r.contains("#define IVC_HEADER_SIZE 4096u\n"), r);
        assertTrue(r.contains("#define IVC_HDR_SERVER_STATE 0x018\n"), r);
        assertTrue(r.contains("#define IVC_HDR_SERVER_MESSAGE_LENGTH 256u\n"), r);
        assertTrue(r.contains("#define IVC_MAGIC 0x1122334455667788ULL\n"), r);
        assertTrue(r.contains("#define IVC_STATE_READY 1u\n"), r);
    }

    @Test
    void syncStubEncodesInsInDeclaredOrderAndDecodesOuts() {
        String c = new CEmitter(api).stubs();
        int start = c.indexOf("IVC_EXPORT CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev)");
        assertTrue(start >= 0, c);
        String body = c.substring(start, c.indexOf("\n}\n", start));
        int attrib = body.indexOf("ivc_put_i64(&call, (int64_t)attrib)");
        int dev = body.indexOf("ivc_put_i64(&call, (int64_t)dev)");
        int call = body.indexOf("ivc_sync_cached(&call)");
        int out = body.indexOf("ivc_get_i32(&call, (int32_t *)pi)");
        assertTrue(body.indexOf("if (pi == NULL)") >= 0 && body.indexOf("if (pi == NULL)") < attrib, body);
        assertTrue(attrib > 0 && dev > attrib && call > dev && out > call, body);
    }

    @Test
    void asyncStubGoesToTheRingAndPtszSubstitutesTheStream() {
        String c = new CEmitter(api).stubs();
        assertTrue(c.contains("return ivc_async(&call);"));
        int v = c.indexOf("cuMemsetD8Async_ptsz(");
        assertTrue(v > 0, c);
        assertTrue(c.substring(v).contains("hStream = CU_STREAM_PER_THREAD;"));
        assertTrue(c.contains("IVC_ALIAS(cuMemsetD8, cuMemsetD8_v2)"));
        assertTrue(c.contains("return ivc_unsupported(\"cuArrayCreate\", &logged);"));
    }

    @Test
    void exportTableListsEveryExportWithItsPtdsVariant() {
        String t = new CEmitter(api).exportTable();
        assertTrue(t.contains("{ \"cuMemsetD8\", 3020, \"cuMemsetD8_v2\", cuMemsetD8_v2, cuMemsetD8_v2_ptds },"), t);
        assertTrue(t.contains("{ \"cuMemsetD8\", 2000, \"cuMemsetD8\", cuMemsetD8, cuMemsetD8_v2_ptds },"), t);
        assertTrue(t.contains("{ \"cuMemAlloc\", 3020, \"cuMemAlloc_v2\", cuMemAlloc_v2, NULL },"), t);
        assertTrue(t.contains("{ \"cuArrayCreate\", 0, \"cuArrayCreate\", cuArrayCreate, NULL },"), t);
    }

    @Test
    void hookedStubsCallTheHandWrittenHooksAroundTheCall() {
        ApiDescription hooked = ApiDescription.parse(DESCRIPTION + "hook cuMemsetD8_v2 cuMemsetD8Async\n", "test.api");
        CEmitter e = new CEmitter(hooked);
        String h = e.header();
        assertTrue(h.contains("void ivc_hook_before_cuMemsetD8_v2(CUdeviceptr dstDevice, int uc, size_t N);"), h);
        assertTrue(h.contains("CUresult ivc_hook_after_cuMemsetD8_v2(CUresult result, CUdeviceptr dstDevice, int uc, size_t N);"), h);
        String c = e.stubs();
        int start = c.indexOf("IVC_EXPORT CUresult cuMemsetD8_v2(");
        String body = c.substring(start, c.indexOf("\n}\n", start));
        int before = body.indexOf("ivc_hook_before_cuMemsetD8_v2(dstDevice, uc, N);");
        int begin = body.indexOf("ivc_begin(");
        int end = body.indexOf("result = ivc_finish(&call, result);");
        int after = body.lastIndexOf("return ivc_hook_after_cuMemsetD8_v2(result, dstDevice, uc, N);");
        assertTrue(before > 0 && begin > before && end > begin && after > end, body);
        assertTrue(body.contains("if (result != CUDA_SUCCESS)\n        return ivc_hook_after_cuMemsetD8_v2(result,"), body);
        assertTrue(c.contains("return ivc_hook_after_cuMemsetD8Async(ivc_async(&call), dstDevice, uc, N, hStream);"), c);
        assertTrue(!new CEmitter(api).stubs().contains("ivc_hook_"), "no hooks without hook lines");
    }

    @Test
    void buffersCarryTheirLengthsInBytes() {
        String c = new CEmitter(api).stubs();
        int layout = c.indexOf("CUresult ivc_param_layout(uint32_t *count, uint64_t *entries, uint32_t capacity, CUstream f)");
        assertTrue(layout >= 0 && !c.substring(layout - 11, layout).contains("IVC_EXPORT"), c);
        assertTrue(c.contains("ivc_get_buf(&call, entries, (uint64_t)capacity * 8)"), c);
        assertTrue(c.contains("ivc_put_buf(&call, params, (uint64_t)paramsSize)"), c);
        int launch = c.indexOf("CUresult ivc_launch(CUstream f, const void *params, uint32_t paramsSize)");
        assertTrue(launch >= 0 && c.indexOf("return ivc_async(&call);", launch) > launch, c);
    }

    @Test
    void writesTheThreeFiles(@TempDir Path dir) throws Exception {
        new CEmitter(api).write(dir);
        for (String f : new String[] {"ivc_api.h", "ivc_stubs.c", "ivc_exports.c"}) {
            assertTrue(Files.size(dir.resolve(f)) > 0, f);
        }
        assertEquals("_ptsz", CEmitter.ptdsSuffix(api.functions().get(2)));
    }
}
