package io.ivcuda.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ApiDescriptionTest {

    private static ApiDescription real() throws Exception {
        return ApiDescription.load(Path.of(System.getProperty("api.description", "cuda-driver.api")));
    }

    @Test
    void theRealDescriptionParses() throws Exception {
        ApiDescription api = real();
        assertEquals(13000, api.apiVersion());
        Function get = api.functions().stream().filter(f -> f.name().equals("cuDeviceGetAttribute")).findFirst().orElseThrow();
        assertEquals(Mode.SYNC, get.mode());
        assertTrue(get.cached());
        assertEquals(2, get.requestParams().size());
        assertEquals(1, get.responseParams().size());
    }

    @Test
    void hashIgnoresCommentsAndSpacing() {
        String a = "api 13000\nfn 1 cuInit sync (in unsigned flags) -> cuInit\n";
        String b = "# a comment\napi   13000\n\nfn 1  cuInit sync (in unsigned flags) -> cuInit # trailing\n";
        String c = "api 13000\nfn 2 cuInit sync (in unsigned flags) -> cuInit\n";
        assertEquals(ApiDescription.hash(a), ApiDescription.hash(b));
        assertNotEquals(ApiDescription.hash(a), ApiDescription.hash(c));
    }

    @Test
    void duplicateOpcodeIsRejectedWithItsLine() {
        String text = "api 13000\ntype unsigned u32\nfn 1 a sync (in unsigned x) -> a\nfn 1 b sync (in unsigned x) -> b\n";
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ApiDescription.parse(text, "t.api"));
        assertTrue(e.getMessage().startsWith("t.api:4: opcode 1 used twice"), e.getMessage());
    }

    @Test
    void onlyGeneratedStubsCanBeHooked() {
        String text = "api 13000\ntype unsigned u32\nfn 1 a sync (in unsigned x) -> a\nfn - b custom (in unsigned x) -> b\n";
        assertEquals(java.util.List.of("a"), ApiDescription.parse(text + "hook a\n", "t.api").hooked());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ApiDescription.parse(text + "hook b\n", "t.api"));
        assertTrue(e.getMessage().contains("hook b"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ApiDescription.parse(text + "hook c\n", "t.api"));
        assertTrue(e.getMessage().contains("hook c"), e.getMessage());
    }

    @Test
    void onlyUncachedSyncStubsCanBeAnsweredLocally() {
        String text = "api 13000\ntype unsigned u32\nfn 1 a sync (in unsigned x) -> a\n"
                + "fn 2 b sync cached (in unsigned x) -> b\nfn 3 c async (in unsigned x) -> c\n";
        assertEquals(java.util.List.of("a"), ApiDescription.parse(text + "local a\n", "t.api").local());
        for (String refused : new String[] {"b", "c", "d"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> ApiDescription.parse(text + "local " + refused + "\n", "t.api"));
            assertTrue(e.getMessage().contains("local " + refused), e.getMessage());
        }
        String stubs = new CEmitter(ApiDescription.parse(text + "local a\n", "t.api")).stubs();
        assertTrue(stubs.contains("CUresult answered = ivc_local_a(x);"), stubs);
        assertTrue(stubs.indexOf("ivc_local_a(x)") < stubs.indexOf("ivc_begin(&call, IVC_OP_a"), stubs);
    }

    @Test
    void unknownTypeIsRejected() {
        String text = "api 13000\nfn 1 a sync (in nosuch x) -> a\n";
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ApiDescription.parse(text, "t.api"));
        assertTrue(e.getMessage().contains("unknown type 'nosuch'"), e.getMessage());
    }

    @Test
    void bufferLengthMustBeAnInScalar() {
        String text = "api 13000\ntype int i32\nfn 1 a sync (outbuf char n[len], out int len) -> a\n";
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ApiDescription.parse(text, "t.api"));
        assertTrue(e.getMessage().contains("length of n"), e.getMessage());
    }
}
