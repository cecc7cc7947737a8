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
