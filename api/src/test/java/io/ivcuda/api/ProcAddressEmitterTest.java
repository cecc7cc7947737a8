package io.ivcuda.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ProcAddressEmitterTest {

    private static final String DESCRIPTION = """
            api 13000
            result CUDA_ERROR_INVALID_HANDLE 400
            handle stream 4 CUDA_ERROR_INVALID_HANDLE
            type CUresult i32
            type CUdeviceptr u64
            type size_t u64
            type CUstream handle stream
            fn 64 cuMemsetD8_v2 sync ptds (in CUdeviceptr dstDevice, in size_t N) -> cuMemsetD8_v2=cuMemsetD8@3020 cuMemsetD8
            fn 67 cuMemsetD8Async async ptds (in CUdeviceptr dstDevice, in size_t N, in CUstream hStream) -> cuMemsetD8Async=cuMemsetD8Async@3020
            fn 210 ivc_mem_alloc internal (out CUdeviceptr dptr, in size_t bytesize)
            unsupported cuArrayCreate
            """;
    private static final ProcAddressTable TABLE = ProcAddressTable.parse("""
            # base version stream symbol
            cuMemsetD8 2000 - cuMemsetD8
            cuMemsetD8 3020 - cuMemsetD8_v2
            cuMemsetD8 7000 ptds cuMemsetD8_v2_ptds
            cuMemsetD8Async 3020 - cuMemsetD8Async
            cuMemsetD8Async 7000 ptsz cuMemsetD8Async_ptsz
            cuArrayCreate 2000 - cuArrayCreate
            cuArrayCreate 3020 - cuArrayCreate_v2
            """, "test");
    private static final Set<String> EXPORTS = Set.of("cuMemsetD8", "cuMemsetD8_v2", "cuMemsetD8_v2_ptds",
            "cuMemsetD8Async", "cuMemsetD8Async_ptsz", "cuArrayCreate", "cuArrayCreate_v2", "cudbgMain");

    private final ApiDescription api = ApiDescription.parse(DESCRIPTION, "test.api");

    @Test
    void everyDriverNameTheDescriptionLeavesOutGetsANotSupportedStub() {
        ProcAddressEmitter e = new ProcAddressEmitter(api, TABLE, EXPORTS);
        assertEquals(List.of("cuArrayCreate_v2", "cudbgMain"), e.unimplemented());
        String stubs = e.unimplementedStubs();
        assertTrue(stubs.contains("IVC_EXPORT CUresult cuArrayCreate_v2(void)\n{\n    static atomic_int logged;\n"
                + "    return ivc_unsupported(\"cuArrayCreate_v2\", &logged);\n}\n"), stubs);
        assertTrue(!stubs.contains("cuMemsetD8_v2_ptds") && !stubs.contains(" cuArrayCreate(void)"), stubs);
    }

    @Test
    void theLookupTableNamesEverySymbolInTheDataFileOrder() {
        String t = new ProcAddressEmitter(api, TABLE, EXPORTS).lookupTable();
        assertTrue(t.contains("extern void cuMemsetD8_v2_ptds(void);"), t);
        int a = t.indexOf("{ \"cuArrayCreate\", 2000, 0, cuArrayCreate, \"cuArrayCreate\" }");
        int b = t.indexOf("{ \"cuArrayCreate\", 3020, 0, cuArrayCreate_v2, \"cuArrayCreate_v2\" }");
        int c = t.indexOf("{ \"cuMemsetD8\", 7000, 1, cuMemsetD8_v2_ptds, \"cuMemsetD8_v2_ptds\" }");
        int d = t.indexOf("{ \"cuMemsetD8Async\", 3020, 0, cuMemsetD8Async, \"cuMemsetD8Async\" }");
        assertTrue(a > 0 && a < b && b < c && c < d, t);
    }

    @Test
    void aNameTheDriverDoesNotExportIsAnError() {
        ApiDescription extra = ApiDescription.parse(DESCRIPTION + "unsupported cuInvented\n", "test.api");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new ProcAddressEmitter(extra, TABLE, EXPORTS));
        assertTrue(e.getMessage().contains("cuInvented is exported by the description but not by the driver"), e.getMessage());
        ProcAddressTable wrong = ProcAddressTable.parse("cuMemsetD8 2000 - cuMemsetD8_v9\n", "test");
        e = assertThrows(IllegalArgumentException.class, () -> new ProcAddressEmitter(api, wrong, EXPORTS));
        assertTrue(e.getMessage().contains("cuMemsetD8_v9 answers a lookup"), e.getMessage());
    }

    /** The real description and data files fit together (what the guest build relies on). */
    @Test
    void theRealFilesFitTogether() throws IOException {
        Path description = ProcAddressTableTest.apiDir().resolve("cuda-driver.api");
        ProcAddressEmitter e = ProcAddressEmitter.forDescription(description, ApiDescription.load(description));
        assertTrue(e.unimplemented().size() > 100 && e.unimplemented().contains("cuGLCtxCreate_v2"));
        assertTrue(!e.unimplemented().contains("cuMemAlloc_v2"));
    }
}
