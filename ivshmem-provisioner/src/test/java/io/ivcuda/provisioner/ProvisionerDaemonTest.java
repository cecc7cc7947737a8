package io.ivcuda.provisioner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.DomainXml;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.Mode;
import io.ivcuda.common.ShmemDevice;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.libvirt.Connect;
import org.libvirt.Domain;

/**
 * The daemon on libvirt's test driver: test:///default is one in-memory host shared by every
 * connection of this JVM, so a second connection plays the user running virsh.
 */
class ProvisionerDaemonTest {
    private static final String UUID = "00000000-0000-0000-0000-0000000000dd";
    private Connect user;
    private ProvisionerDaemon daemon;

    @BeforeEach
    void start() throws Exception {
        daemon = new ProvisionerDaemon(HostConfig.defaults(), "test:///default");
        daemon.start();
        waitFor(daemon::isConnected, "the daemon connects");
        user = new Connect("test:///default");
    }

    @AfterEach
    void stop() throws Exception {
        daemon.close();
        for (Domain d : user.listAllDomains(0)) {
            if (!d.getName().equals("test")) {
                d.undefine();
            }
            d.free();
        }
        user.close();
    }

    private ShmemDevice device() throws Exception {
        Domain d = user.domainLookupByName("vm");
        try {
            return DomainXml.parse(d.getXMLDesc(Domain.XMLFlags.INACTIVE)).currentShmem();
        } finally {
            d.free();
        }
    }

    private void setElement(String element) throws Exception {
        Domain d = user.domainLookupByName("vm");
        d.setMetadata(2, element, element == null ? null : "ivcuda", GpuElement.NAMESPACE, 2 /* CONFIG */);
        d.free();
    }

    @Test
    void followsDefineAndMetadataChanges() throws Exception {
        long initial = daemon.reconciliations();
        // Defined with the element: DEFINED/ADDED event.
        user.domainDefineXML(ReconcilerTest.domainXml("vm", UUID, ReconcilerTest.gpu("size='8M'"))).free();
        waitFor(() -> deviceMatches(Mode.PLAIN, 8L << 20), "the device is added on DEFINED");
        // The user's define and the echo of the daemon's own define are both reconciled; only the first redefines.
        waitFor(() -> daemon.reconciliations() >= initial + 2, "the echo is reconciled");
        assertEquals(1, daemon.redefinitions(), "the echo of our own redefinition changes nothing");

        // virsh metadata --set emits only METADATA_CHANGE (registered through JNA).
        setElement("<gpu size='16M'/>");
        waitFor(() -> deviceMatches(Mode.PLAIN, 16L << 20), "the device follows a METADATA_CHANGE");

        waitFor(() -> daemon.redefinitions() == 2, "the update is counted once");

        setElement(null);
        waitFor(() -> {
            try {
                return device() == null;
            } catch (Exception e) {
                return false;
            }
        }, "the device is removed with the element");
        assertNull(device());
    }

    private String description() throws Exception {
        return DomainXml.parse(xml()).description();
    }

    @Test
    void anInvalidElementShowsItsReasonInTheDescriptionWithinASecond() throws Exception {
        user.domainDefineXML(ReconcilerTest.domainXml("vm", UUID, ReconcilerTest.gpu("size='8M'"))
                .replace("</uuid>", "</uuid><description>the user's words</description>")).free();
        waitFor(() -> deviceMatches(Mode.PLAIN, 8L << 20), "the device is added");
        // A redefine with a bad value, as virt-manager's XML editor does it on Apply.
        String bad = xml().replace("size=\"8M\"", "size=\"300M\"").replace("size='8M'", "size='300M'");
        assertTrue(bad.contains("300M"), bad);
        long redefined = System.nanoTime();
        user.domainDefineXML(bad).free();
        String expected = "[ivcuda] error: region size 300M is not a power of two (e.g. 256M)\nthe user's words";
        waitFor(() -> {
            try {
                return expected.equals(description());
            } catch (Exception e) {
                return false;
            }
        }, "the description says why");
        long ms = (System.nanoTime() - redefined) / 1_000_000;
        assertTrue(ms < 1000, "the reason showed " + ms + " ms after the redefine");
        assertEquals(Mode.PLAIN, device().mode(), "the device is left as it was");
    }

    @Test
    void aClonesCopyOfTheOriginalsDeviceIsRemoved() throws Exception {
        user.domainDefineXML(ReconcilerTest.domainXml("vm", UUID, ReconcilerTest.gpu("size='8M'"))).free();
        waitFor(() -> deviceMatches(Mode.PLAIN, 8L << 20), "the original's device is added");
        String cloneUuid = "00000000-0000-0000-0000-0000000000ce";
        // virt-clone: the original's XML with a new name and UUID, the original's <shmem> included.
        user.domainDefineXML(xml().replace("<name>vm</name>", "<name>vm-clone</name>")
                .replace("<uuid>" + UUID + "</uuid>", "<uuid>" + cloneUuid + "</uuid>")).free();
        waitFor(() -> {
            try {
                Domain d = user.domainLookupByName("vm-clone");
                DomainXml clone = DomainXml.parse(d.getXMLDesc(Domain.XMLFlags.INACTIVE));
                d.free();
                return clone.foreignShmemNames().isEmpty() && clone.currentShmem() != null
                        && clone.currentShmem().name().equals("ivcuda-" + cloneUuid);
            } catch (Exception e) {
                return false;
            }
        }, "the clone has its own device and no longer the original's");
        assertEquals("ivcuda-" + UUID, device().name(), "the original keeps its own");
    }

    private String xml() throws Exception {
        Domain d = user.domainLookupByName("vm");
        try {
            return d.getXMLDesc(Domain.XMLFlags.INACTIVE);
        } finally {
            d.free();
        }
    }

    private boolean deviceMatches(Mode mode, long size) {
        try {
            ShmemDevice device = device();
            return device != null && device.mode() == mode && device.size() == size;
        } catch (Exception e) {
            return false;
        }
    }

    static void waitFor(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting until " + what);
            Thread.sleep(20);
        }
        assertNotNull(what);
    }
}
