package io.ivcuda.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ProcAddressTableTest {

    static Path apiDir() {
        return Path.of(System.getProperty("api.description", "cuda-driver.api")).toAbsolutePath().getParent();
    }

    static ProcAddressTable checkedIn() throws IOException {
        return ProcAddressTable.load(apiDir().resolve(ProcAddressEmitter.PROC_ADDRESSES_FILE));
    }

    private static final String TYPEDEFS = """
            typedef CUresult (CUDAAPI *PFN_cuMemcpyHtoD_v3020)(CUdeviceptr_v2 dstDevice, const void *srcHost, size_t ByteCount);
            typedef CUresult (CUDAAPI *PFN_cuMemcpyHtoD_v7000_ptds)(CUdeviceptr_v2 dstDevice, const void *srcHost, size_t ByteCount);
            typedef CUresult (CUDAAPI *PFN_cuInit_v2000)(unsigned int Flags);
            typedef CUresult (CUDAAPI *PFN_cuStreamBeginCapture_v10010)(CUstream hStream, CUstreamCaptureMode mode);
            typedef CUresult (CUDAAPI *PFN_cuStreamBeginCapture_v10010_ptsz)(CUstream hStream, CUstreamCaptureMode mode);
            typedef CUresult (CUDAAPI *PFN_cuGone_v9000)(void);
            #if defined(__CUDA_API_VERSION_INTERNAL)
                typedef CUresult (CUDAAPI *PFN_cuMemcpyHtoD_v2000)(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount);
                typedef CUresult (CUDAAPI *PFN_cuStreamBeginCapture_v10000)(CUstream hStream);
                typedef CUresult (CUDAAPI *PFN_cuStreamBeginCapture_v10000_ptsz)(CUstream hStream);
            #endif
            """;
    private static final String CUDA_H = """
            #define cuMemcpyHtoD                        __CUDA_API_PTDS(cuMemcpyHtoD_v2)
            #define cuStreamBeginCapture                __CUDA_API_PTSZ(cuStreamBeginCapture_v3)
            """;
    private static final Set<String> EXPORTS = Set.of("cuMemcpyHtoD", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds", "cuInit",
            "cuStreamBeginCapture", "cuStreamBeginCapture_ptsz", "cuStreamBeginCapture_v2",
            "cuStreamBeginCapture_v2_ptsz", "cudbgMain");

    private final ProcAddressTable derived = ProcAddressTable.derive(List.of(TYPEDEFS), CUDA_H, EXPORTS);

    @Test
    void variantsAreNumberedInVersionOrderAndPerThreadOnesFollowTheVariantInEffect() {
        assertEquals("cuMemcpyHtoD", derived.resolve("cuMemcpyHtoD", 2000, 0).symbol());
        assertEquals("cuMemcpyHtoD_v2", derived.resolve("cuMemcpyHtoD", 3020, 0).symbol());
        assertEquals("cuMemcpyHtoD_v2", derived.resolve("cuMemcpyHtoD", 6050, 2).symbol(), "no per-thread form before 7.0");
        assertEquals("cuMemcpyHtoD_v2_ptds", derived.resolve("cuMemcpyHtoD", 7000, 2).symbol());
        assertEquals("cuMemcpyHtoD_v2", derived.resolve("cuMemcpyHtoD", 13000, 1).symbol(), "legacy-stream flag");
        assertEquals("cuStreamBeginCapture_ptsz", derived.resolve("cuStreamBeginCapture", 10000, 2).symbol());
        assertEquals("cuStreamBeginCapture_v2_ptsz", derived.resolve("cuStreamBeginCapture", 12000, 2).symbol());
        assertEquals("cuInit", derived.resolve("cuInit", 13000, 2).symbol(), "no per-thread form at all");
        assertNull(derived.resolve("cuInit", 1000, 0), "before the function existed");
        assertTrue(derived.knows("cuInit"));
        assertNull(derived.resolve("cuNoSuchThing", 13000, 0));
    }

    @Test
    void whatDoesNotFitTheRulesIsWrittenDownNotGuessed() {
        String notes = String.join("\n", derived.notes());
        assertTrue(notes.contains("PFN_cuGone_v9000: the driver exports no cuGone; left out"), notes);
        assertTrue(notes.contains("#define cuStreamBeginCapture cuStreamBeginCapture_v3, but the newest typedef variant"
                + " of cuStreamBeginCapture is cuStreamBeginCapture_v2"), notes);
        assertTrue(notes.contains("no cuGetProcAddress lookup answers them (1): cudbgMain"), notes);
        assertNull(derived.resolve("cuGone", 13000, 0));
    }

    @Test
    void theFileRoundTrips() {
        String text = derived.render("header line");
        ProcAddressTable parsed = ProcAddressTable.parse(text, "test");
        assertEquals(derived.variants(), parsed.variants());
        assertEquals(derived.notes(), parsed.notes());
        assertTrue(text.startsWith("# header line\n"));
    }

    /** The checked-in file is what the toolkit's headers say (where a toolkit is installed). */
    @Test
    void checkedInFileIsDerivedFromTheInstalledToolkit() throws IOException {
        Path include = Path.of(System.getenv().getOrDefault("CUDA_INCLUDE", "/usr/local/cuda/include"));
        assumeTrue(Files.exists(include.resolve("cudaTypedefs.h")),
                "no CUDA toolkit headers at " + include + " (set CUDA_INCLUDE): the data file is not re-derived");
        String version = ProcAddressTable.cudaVersion(include);
        assumeTrue(version.equals("13.0"), "the toolkit at " + include + " is CUDA " + version
                + ", the data file is CUDA 13.0's: not compared");
        ProcAddressTable fresh = ProcAddressTable.derive(include,
                ProcAddressTable.loadNames(apiDir().resolve(ProcAddressEmitter.EXPORTS_FILE)));
        String expected = fresh.render(ProcAddressTable.fileHeader(version));
        String actual = Files.readString(apiDir().resolve(ProcAddressEmitter.PROC_ADDRESSES_FILE), StandardCharsets.UTF_8);
        assertEquals(expected, actual, "api/driver-proc-addresses.txt is stale: re-run ProcAddressTable (its header says how)");
    }

    /** Every lookup real programs made (api/reference) finds a variant the driver exports. */
    @Test
    void everyReferenceLookupResolves() throws IOException {
        ProcAddressTable table = checkedIn();
        Set<String> exports = ProcAddressTable.loadNames(apiDir().resolve(ProcAddressEmitter.EXPORTS_FILE));
        List<String> unresolved = new ArrayList<>();
        int lookups = 0;
        try (var files = Files.list(apiDir().resolve("reference"))) {
            for (Path f : files.filter(p -> p.toString().endsWith("-lookups.txt")).toList()) {
                for (String line : Files.readAllLines(f, StandardCharsets.UTF_8)) {
                    String[] w = line.split(" ", -1);
                    if (!w[0].equals("GPA") || w[2].isEmpty()) {
                        continue;
                    }
                    lookups++;
                    ProcAddressTable.Variant v = table.resolve(w[2], Integer.parseInt(w[3]), Long.parseLong(w[4]));
                    if (v == null || !exports.contains(v.symbol())) {
                        unresolved.add(f.getFileName() + ": " + line);
                    }
                }
            }
        }
        assertTrue(lookups > 2500, "lookups read: " + lookups);
        assertEquals(List.of(), unresolved);
        // spot checks against cudaTypedefs.h, read by hand
        assertEquals("cuCtxCreate_v4", table.resolve("cuCtxCreate", 12050, 0).symbol());
        assertEquals("cuStreamGetCtx_v2_ptsz", table.resolve("cuStreamGetCtx", 12050, 2).symbol());
        assertEquals("cuMemcpyDtoH_v2_ptds", table.resolve("cuMemcpyDtoH", 7000, 2).symbol());
        assertEquals("cuEventElapsedTime_v2", table.resolve("cuEventElapsedTime", 12080, 0).symbol());
        assertEquals("cuStreamWaitValue32_ptsz", table.resolve("cuStreamWaitValue32", 8000, 2).symbol());
        assertNotNull(table.resolve("cuGetExportTable", 3000, 0));
    }
}
