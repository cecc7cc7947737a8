package io.ivcuda.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The layout language refuses what would put two fields on the same bytes or misalign one. */
class LayoutParserTest {
    private static String refusal(String layout) {
        return assertThrows(IllegalArgumentException.class,
                () -> ApiDescription.parse("api 13000\n" + layout, "t.layout")).getMessage();
    }

    @Test
    void theRealLayoutsParse() throws Exception {
        ApiDescription api = ApiDescription.load(java.nio.file.Path.of(System.getProperty("api.description", "cuda-driver.api")));
        assertEquals(0x040, api.layout("channel").field("req_seq").offset());
        assertTrue(api.layout("channel").field("owner").shared());
        assertEquals(4096, api.layout("header").size());
        assertEquals(1, api.layout("header").value("READY").value());
        assertTrue(api.protocolVersion() >= 1);
    }

    @Test
    void overlapMisalignmentAndOverflowAreRefusedWithTheirLine() {
        assertTrue(refusal("layout a A A_SIZE 16\n0x000 u64 x\n0x004 u32 y\nend\n").contains("overlaps"));
        assertTrue(refusal("layout a A A_SIZE 16\n0x004 u64 x\nend\n").startsWith("t.layout:3: x: offset 0x004 is not 8-byte aligned"));
        assertTrue(refusal("layout a A A_SIZE 16\n0x010 u32 x\nend\n").contains("beyond the layout's 16 bytes"));
        assertTrue(refusal("layout a A A_SIZE 16\n0x000 char[4] x shared\nend\n").contains("only u32 and u64"));
        assertTrue(refusal("layout a A A_SIZE 16\n0x000 u32 x\n").contains("has no 'end'"));
        assertTrue(refusal("layout a A A_SIZE 16\n0x000 u32 x\nend\nvalues a.x S V=0x100000000\n").contains("does not fit"));
    }

    @Test
    void aDescriptionWithALayoutHashesDifferentlyThanWithout() {
        String api = "api 13000\n";
        assertTrue(ApiDescription.hash(api) != ApiDescription.hash(api + "layout a A A_SIZE 8\n0x000 u32 x\nend\n"));
    }
}
