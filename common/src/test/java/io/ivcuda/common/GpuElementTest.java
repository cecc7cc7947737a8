package io.ivcuda.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class GpuElementTest {
    private static final String NS = "xmlns:ivcuda='" + GpuElement.NAMESPACE + "'";

    static String domain(String gpuAttributes) {
        return "<domain type='qemu'><name>vm1</name><uuid>11111111-2222-3333-4444-555555555555</uuid>"
                + "<metadata><ivcuda:gpu " + NS + " " + gpuAttributes + "/></metadata><devices/></domain>";
    }

    private static GpuElement parse(String attributes) throws IvcudaConfigException {
        return DomainXml.parse(domain(attributes)).parseGpuElement();
    }

    @Test
    void readsEveryAttribute() throws Exception {
        GpuElement e = parse("device='1' mode='doorbell' size='512M' quota='4G'");
        assertEquals("1", e.device().orElseThrow());
        assertEquals(Mode.DOORBELL, e.mode().orElseThrow());
        assertEquals(512L << 20, e.size().getAsLong());
        assertEquals(4L << 30, e.quota().getAsLong());
    }

    @Test
    void emptyElementMeansDefaults() throws Exception {
        assertEquals(GpuElement.allDefaults(), parse(""));
    }

    @Test
    void unknownAttributeIsNamed() {
        var e = assertThrows(IvcudaConfigException.class, () -> parse("colour='red'"));
        assertTrue(e.getMessage().contains("domain 'vm1'") && e.getMessage().contains("colour='red'")
                && e.getMessage().contains("unknown attribute"), e.getMessage());
    }

    @Test
    void unknownModeIsNamed() {
        var e = assertThrows(IvcudaConfigException.class, () -> parse("mode='fast'"));
        assertTrue(e.getMessage().contains("mode='fast'") && e.getMessage().contains("plain or doorbell"), e.getMessage());
    }

    @Test
    void sizeMustBePowerOfTwoOfAtLeastOneMiB() {
        var e = assertThrows(IvcudaConfigException.class, () -> parse("size='3M'"));
        assertTrue(e.getMessage().contains("size='3M'") && e.getMessage().contains("power of two"), e.getMessage());
        assertThrows(IvcudaConfigException.class, () -> parse("size='512K'"));
        assertThrows(IvcudaConfigException.class, () -> parse("size='lots'"));
    }

    @Test
    void sizeHasAnUpperBound() throws Exception {
        var e = assertThrows(IvcudaConfigException.class, () -> parse("size='1T'"));
        assertEquals("region size 1T is larger than 64 GiB, the largest ivcuda accepts", e.summary());
        assertEquals(64L << 30, parse("size='64G'").size().getAsLong());
    }

    @Test
    void summarySaysTheCauseInAFewWordsOnOneLine() {
        var e = assertThrows(IvcudaConfigException.class, () -> parse("size='300M'"));
        assertEquals("region size 300M is not a power of two (e.g. 256M)", e.summary());
        e = assertThrows(IvcudaConfigException.class, () -> parse("colour='red'"));
        assertEquals("unknown attribute colour on <ivcuda:gpu> (known: device, mode, size, quota, share, role, slots, capacity, backend)", e.summary());
        e = assertThrows(IvcudaConfigException.class, () -> parse("mode='" + "x".repeat(500) + "'"));
        assertEquals("unknown mode '" + "x".repeat(40) + "…' (use plain or doorbell)", e.summary(), "a long value is cut short");
        e = assertThrows(IvcudaConfigException.class, () -> parse("mode='a&#10;b'"));
        assertEquals("unknown mode 'a?b' (use plain or doorbell)", e.summary(), "a newline cannot break the line");
    }

    @Test
    void malformedQuotaIsNamed() {
        var e = assertThrows(IvcudaConfigException.class, () -> parse("quota='-1'"));
        assertTrue(e.getMessage().contains("quota='-1'"), e.getMessage());
    }

    @Test
    void byteSizes() {
        assertEquals(268435456L, ByteSize.parse("256M"));
        assertEquals(268435456L, ByteSize.parse("256MiB"));
        assertEquals(1024L, ByteSize.parse("1k"));
        assertEquals(4096L, ByteSize.parse("4096"));
        assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("4 MB/s"));
    }
}
