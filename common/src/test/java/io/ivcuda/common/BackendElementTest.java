package io.ivcuda.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The element's back-end and front-end roles (issue 16): what goes with which role, and the refusals' words. */
class BackendElementTest {
    private static GpuElement parse(String attributes) throws IvcudaConfigException {
        return DomainXml.parse(GpuElementTest.domain(attributes)).parseGpuElement();
    }

    private static IvcudaConfigException refused(String attributes) {
        return assertThrows(IvcudaConfigException.class, () -> parse(attributes));
    }

    @Test
    void backendReadsSlotsCapacityDeviceAndSize() throws Exception {
        GpuElement e = parse("role='backend' slots='8' capacity='80G' device='GPU-1234abcd' size='512M'");
        assertTrue(e.backendRole());
        assertFalse(e.frontEnd());
        assertEquals(8, e.slotCount());
        assertEquals(80L << 30, e.capacity().getAsLong());
        assertEquals("GPU-1234abcd", e.device().orElseThrow());
        assertEquals(512L << 20, e.size().getAsLong());
        assertEquals(GpuElement.DEFAULT_SLOTS, parse("role='backend'").slotCount());
    }

    @Test
    void frontendReadsItsBackend() throws Exception {
        GpuElement e = parse("backend='gpu-be' quota='4G' share='50' mode='plain'");
        assertTrue(e.frontEnd());
        assertFalse(e.backendRole());
        assertEquals("gpu-be", e.backend().orElseThrow());
        assertEquals("auto", parse("backend='auto'").backend().orElseThrow());
        assertFalse(parse("").frontEnd(), "no role and no backend: the host-served VM of today");
    }

    @Test
    void slotsAreOneToThirtyTwo() {
        assertEquals("slots '0': 1 to 32", refused("role='backend' slots='0'").summary());
        assertEquals("slots '33': 1 to 32", refused("role='backend' slots='33'").summary());
        assertTrue(refused("role='backend' slots='many'").getMessage().contains("slots='many'"));
    }

    @Test
    void unknownRoleIsNamed() {
        var e = refused("role='frontend'");
        assertEquals("unknown role 'frontend' (use backend)", e.summary());
        assertTrue(e.getMessage().contains("domain 'vm1'") && e.getMessage().contains("role='frontend'"), e.getMessage());
    }

    @Test
    void backendRefusesFrontEndAttributesNamingThem() throws Exception {
        var e = refused("role='backend' quota='4G'");
        assertTrue(e.getMessage().contains("domain 'vm1'") && e.getMessage().contains("quota='4G'")
                && e.getMessage().contains("not for a back-end"), e.getMessage());
        assertTrue(refused("role='backend' share='50'").summary().startsWith("share is not for a back-end domain"));
        assertEquals(Mode.DOORBELL, parse("role='backend' mode='doorbell'").slotMode(), "a back-end's slots may be doorbell devices");
        assertEquals(Mode.PLAIN, parse("role='backend'").slotMode(), "plain unless it says doorbell");
        var nested = refused("role='backend' backend='other'");
        assertEquals("backend is not for a back-end domain: a back-end cannot itself be served by a back-end", nested.summary());
        assertTrue(nested.getMessage().contains("backend='other'"), nested.getMessage());
    }

    @Test
    void backendSlotsAreLargerThanTheControlRegion() throws Exception {
        var e = refused("role='backend' size='1M'");
        assertEquals(GpuElement.BACKEND_SLOT_SIZE_RULE, e.summary());
        assertTrue(e.getMessage().contains("size='1M'"), e.getMessage());
        assertEquals(2L << 20, parse("role='backend' size='2M'").size().getAsLong());
        assertEquals(1L << 20, parse("size='1M'").size().getAsLong(), "a host-served VM's region may be 1 MiB");
    }

    @Test
    void backendOnlyAttributesNeedTheRole() {
        var e = refused("slots='4'");
        assertEquals("slots is only for a back-end domain (role=\"backend\")", e.summary());
        assertTrue(refused("backend='be' capacity='8G'").getMessage().contains("capacity='8G'"));
    }

    @Test
    void frontendRefusesDeviceAndItself() throws Exception {
        var device = refused("backend='be' device='1'");
        assertEquals("device is not for a front-end: its back-end chooses the GPU", device.summary());
        assertTrue(device.getMessage().contains("device='1'"), device.getMessage());
        assertEquals(Mode.DOORBELL, parse("backend='be' mode='doorbell'").slotMode(), "a doorbell front-end (its back-end must offer it)");
        assertEquals(Mode.PLAIN, parse("backend='be'").slotMode());
        var self = refused("backend='vm1'");
        assertEquals("a domain cannot be its own back-end", self.summary());
        assertTrue(self.getMessage().contains("backend='vm1'"), self.getMessage());
    }

    @Test
    void backendValueMustBeAName() {
        assertTrue(refused("backend=''").summary().contains("is not a domain name"));
        assertTrue(refused("backend='a/b'").summary().contains("is not a domain name"));
        assertTrue(refused("backend='a&#10;b'").summary().contains("is not a domain name"));
    }
}
