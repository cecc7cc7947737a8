package io.ivcuda.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JavaEmitterTest {
    @TempDir
    Path dir;

    private static final String SMALL = """
            api 13000
            type int i32
            type u32 u32
            type size_t u64
            type CUstream handle stream
            fn 3 cuDeviceGetCount sync (out int count) -> cuDeviceGetCount
            fn 4 cuDeviceGetName sync (outbuf char name[len], in int len, in int dev) -> cuDeviceGetName
            fn 7 cuDeviceGetByPCIBusId sync (out int dev, instr pciBusId) -> cuDeviceGetByPCIBusId
            fn 9 ivc_copy async (in CUstream s, inbuf data[size], in size_t size)
            """;

    private String generated(String text, String file) throws Exception {
        new JavaEmitter(ApiDescription.parse(text, "t.api")).write(dir);
        return Files.readString(dir.resolve("io/ivcuda/server/gen").resolve(file));
    }

    @Test
    void opcodesCarryConstantsNamesModesAndTheHash() throws Exception {
        String opcodes = generated(SMALL, "Opcodes.java");
        assertTrue(opcodes.contains("public static final int CU_DEVICE_GET_COUNT = 3;"), opcodes);
        assertTrue(opcodes.contains("case IVC_COPY -> MODE_ASYNC;"), opcodes);
        assertTrue(opcodes.contains("case CU_DEVICE_GET_NAME -> \"cuDeviceGetName\";"), opcodes);
        String hash = "0x" + Long.toHexString(ApiDescription.hash(SMALL)) + "L";
        assertTrue(opcodes.contains("API_HASH = " + hash), opcodes);
    }

    @Test
    void handlerHasOneDefaultMethodPerFunctionWithDecodedParams() throws Exception {
        String handler = generated(SMALL, "Handler.java");
        assertTrue(handler.contains("default int cuDeviceGetName(Reply r, int len_, int dev)"), handler);
        assertTrue(handler.contains("default int cuDeviceGetByPCIBusId(Reply r, String pciBusId)"), handler);
        assertTrue(handler.contains("default int ivc_copy(org.agrona.DirectBuffer in, long s, int dataIndex, int dataLength, long size)"), handler);
        assertEquals(4, handler.split("return unsupported\\(").length - 1);
    }

    @Test
    void dispatcherChecksBoundsAndRoutesModes() throws Exception {
        String d = generated(SMALL, "Dispatcher.java");
        assertTrue(d.contains("return r.fault(\"payload_len\");"), "exact decode");
        assertTrue(d.contains("if (dataLength != (long) size)"), "inbuf length equals its length param");
        assertTrue(d.contains("r.fault(\"opcode (async function sent as a request)\")"), "async opcode refused in the request area");
        assertTrue(d.contains("r.fault(\"opcode (sync function sent through the ring)\")"), "sync opcode refused in the ring");
        assertTrue(d.contains("yield CUDA_ERROR_NOT_SUPPORTED;"), "unknown opcode");
    }

    @Test
    void asyncFunctionsCannotHaveOuts() {
        String bad = "api 13000\ntype int i32\nfn 1 ivc_x async (out int y)\n";
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> generated(bad, "Opcodes.java"));
        assertTrue(e.getMessage().contains("async functions have no outs"), e.getMessage());
    }

    @Test
    void theRealDescriptionGenerates() throws Exception {
        ApiDescription api = ApiDescription.load(Path.of(System.getProperty("api.description", "cuda-driver.api")));
        new JavaEmitter(api).write(dir);
        String d = Files.readString(dir.resolve("io/ivcuda/server/gen/Dispatcher.java"));
        assertTrue(d.contains("d_ivc_hello("));
        assertTrue(d.contains("d_ivc_launch("));
    }
}
