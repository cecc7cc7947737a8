package io.ivcuda.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
            result CUDA_ERROR_INVALID_VALUE 1
            result CUDA_ERROR_INVALID_HANDLE 400
            handle stream 4 CUDA_ERROR_INVALID_HANDLE passthrough 0..2
            type int i32
            type u32 u32
            type size_t u64
            type CUdeviceptr u64
            type CUstream handle stream
            section device
            fn 3 cuDeviceGetCount sync (out int count) -> cuDeviceGetCount
            fn 4 cuDeviceGetName sync (outbuf char name[len], in int len, in int dev) -> cuDeviceGetName
            fn 7 cuDeviceGetByPCIBusId sync (out int dev, instr pciBusId) -> cuDeviceGetByPCIBusId
            section copy
            fn 9 ivc_copy async (in CUstream s, inbuf data[size], in size_t size)
            fn 10 ivc_put internal streams-in:size (in CUdeviceptr dst device[size], in size_t size)
            fn 11 cuStreamDestroy sync (in CUstream h release) -> cuStreamDestroy
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
    void eachSectionHasOneDefaultMethodPerFunctionWithDecodedParams() throws Exception {
        String device = generated(SMALL, "DeviceCalls.java");
        String copy = Files.readString(dir.resolve("io/ivcuda/server/gen/CopyCalls.java"));
        assertTrue(device.contains("default int cuDeviceGetName(Reply r, int len_, int dev)"), device);
        assertTrue(device.contains("default int cuDeviceGetByPCIBusId(Reply r, String pciBusId)"), device);
        assertTrue(copy.contains("default int ivc_copy(org.agrona.DirectBuffer in, long s, int dataIndex, int dataLength, long size)"), copy);
        assertEquals(3, device.split("return Dispatcher.NOT_IMPLEMENTED;").length - 1);
        assertEquals(3, copy.split("return Dispatcher.NOT_IMPLEMENTED;").length - 1);
        String handlers = Files.readString(dir.resolve("io/ivcuda/server/gen/Handlers.java"));
        assertTrue(handlers.contains("public Handlers(Checks checks, DeviceCalls device, CopyCalls copy)"), handlers);
    }

    @Test
    void dispatcherChecksHandlesAndRangesBeforeTheHandler() throws Exception {
        String d = generated(SMALL, "Dispatcher.java");
        int decode = d.indexOf("private static int d_ivc_copy(");
        String copy = d.substring(decode, d.indexOf("\n    }\n", decode));
        assertTrue(copy.contains("if (s >= 0L && s <= 2L) {"), "the driver's own streams pass: " + copy);
        assertTrue(copy.contains("n_s = h.checks.handle(HandleKinds.STREAM, s);"), copy);
        assertTrue(copy.indexOf("Checks.NO_HANDLE") < copy.indexOf("h.copy.ivc_copy(in, n_s, dataIndex, dataLength, size)"),
                "the handler gets the native stream, after the check: " + copy);
        int put = d.indexOf("private static int d_ivc_put(");
        String streamed = d.substring(put, d.indexOf("\n    }\n", put));
        assertTrue(streamed.contains("if (!h.checks.deviceRange(dst, b_dst)) {"), streamed);
        assertTrue(streamed.contains("return h.checks.settle(true, size, r.refuse(\"dst\""), "a refused streamed call moves its chunks: " + streamed);
        int destroy = d.indexOf("private static int d_cuStreamDestroy(");
        String released = d.substring(destroy, d.indexOf("\n    }\n", destroy));
        assertTrue(released.contains("h.checks.beginRelease(HandleKinds.STREAM, h_)"), released);
        assertTrue(released.contains("h.checks.endRelease(h_, wResult == CUDA_SUCCESS);"), released);
    }

    @Test
    void checksNeedTheirParametersAndHandlesTheirKinds() {
        String base = "api 13000\nresult CUDA_ERROR_INVALID_VALUE 1\ntype u64 u64\nsection s\n";
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ApiDescription.parse(
                base + "fn 1 a sync (in u64 p device[n]) -> a\n", "t.api")).getMessage().contains("needs an 'in' scalar n"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ApiDescription.parse(
                base + "fn 1 a sync (in u64 p release) -> a\n", "t.api")).getMessage().contains("only a handle"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ApiDescription.parse(
                base + "type S handle stream\n", "t.api")).getMessage().contains("no 'handle stream' described before"));
    }

    @Test
    void dispatcherChecksBoundsAndRoutesModes() throws Exception {
        String d = generated(SMALL, "Dispatcher.java");
        assertTrue(d.contains("return r.fault(\"payload_len\");"), "exact decode");
        assertTrue(d.contains("if (dataLength != (long) size)"), "inbuf length equals its length param");
        assertFalse(d.contains("async function sent as a request"), "an async opcode too large for the ring comes as a request");
        assertTrue(d.contains("r.fault(\"opcode (sync function sent through the ring)\")"), "sync opcode refused in the ring");
        assertTrue(d.contains("yield CUDA_ERROR_NOT_SUPPORTED;"), "unknown opcode");
    }

    @Test
    void theTestEncoderPutsTheInsInDeclaredOrder() throws Exception {
        new TestEncoderEmitter(ApiDescription.parse(SMALL, "t.api")).write(dir);
        String r = Files.readString(dir.resolve("io/ivcuda/server/gen/Requests.java"));
        assertTrue(r.contains("public static Request ivc_copy(long s, byte[] data, long size) {\n"
                + "        return raw(Opcodes.IVC_COPY).scalar(s).buf(data).scalar(size);"), r);
        assertTrue(r.contains("public static Request cuDeviceGetByPCIBusId(String pciBusId) {\n"
                + "        return raw(Opcodes.CU_DEVICE_GET_BY_PCIBUS_ID).str(pciBusId);"), r);
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
