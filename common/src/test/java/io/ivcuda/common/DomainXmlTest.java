package io.ivcuda.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class DomainXmlTest {
    private static final String UUID = "11111111-2222-3333-4444-555555555555";

    @Test
    void addsUpdatesAndRemovesOurShmemOnly() throws Exception {
        String xml = "<domain type='qemu'><name>vm1</name><uuid>" + UUID + "</uuid><devices>"
                + "<shmem name='someone-else'><model type='ivshmem-plain'/><size unit='M'>4</size></shmem></devices></domain>";
        DomainXml d = DomainXml.parse(xml);
        assertFalse(d.isTagged());
        assertNull(d.currentShmem());
        InstancePaths paths = InstancePaths.of(UUID, HostConfig.defaults());
        ShmemDevice plain = ShmemDevice.desired(paths, new VmSettings(0, "0", Mode.PLAIN, 64L << 20, 0));
        d.putShmem(plain);
        DomainXml again = DomainXml.parse(d.toXml());
        assertEquals(plain, again.currentShmem());
        assertTrue(again.toXml().contains("someone-else"));

        ShmemDevice doorbell = ShmemDevice.desired(paths, new VmSettings(0, "0", Mode.DOORBELL, 64L << 20, 0));
        again.putShmem(doorbell);
        DomainXml third = DomainXml.parse(again.toXml());
        assertEquals(doorbell, third.currentShmem());
        assertEquals(Path.of("/run/ivcuda/ivcuda-" + UUID + ".sock"), third.currentShmem().socket());
        assertTrue(third.toXml().contains("ioeventfd=\"on\""), third.toXml());
        assertTrue(third.removeShmem());
        assertNull(DomainXml.parse(third.toXml()).currentShmem());
        assertTrue(third.toXml().contains("someone-else"));
    }

    @Test
    void libvirtAdditionsDoNotMakeADifference() throws Exception {
        String xml = "<domain type='qemu'><name>vm1</name><uuid>" + UUID + "</uuid><devices>"
                + "<shmem name='ivcuda-" + UUID + "'><model type='ivshmem-plain'/><size unit='M'>64</size>"
                + "<alias name='shmem0'/><address type='pci' domain='0x0000' bus='0x00' slot='0x05' function='0x0'/></shmem>"
                + "</devices></domain>";
        DomainXml d = DomainXml.parse(xml);
        InstancePaths paths = InstancePaths.of(UUID, HostConfig.defaults());
        assertEquals(ShmemDevice.desired(paths, new VmSettings(0, "0", Mode.PLAIN, 64L << 20, 0)), d.currentShmem());
        d.putShmem(ShmemDevice.desired(paths, new VmSettings(0, "0", Mode.PLAIN, 128L << 20, 0)));
        assertTrue(d.toXml().contains("slot=\"0x05\""), "an update keeps the PCI address");
    }

    @Test
    void findsAndRemovesOtherDomainsIvcudaDevicesWhateverTheirModel() throws Exception {
        String other = "ivcuda-0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5";
        String xml = "<domain type='qemu'><name>clone</name><uuid>" + UUID + "</uuid><devices>\n"
                + "    <shmem name='" + other + "'><model type='ivshmem-doorbell'/><server path='/run/ivcuda/" + other + ".sock'/></shmem>\n"
                + "    <shmem name='ivcuda-" + UUID + "'><model type='ivshmem-plain'/><size unit='M'>64</size></shmem>\n"
                + "    <shmem name='ivcuda-not-a-uuid'><model type='ivshmem-plain'/></shmem>\n"
                + "    <shmem name='someone-else'><model type='ivshmem-plain'/></shmem>\n"
                + "  </devices></domain>";
        DomainXml d = DomainXml.parse(xml);
        assertEquals(List.of(other, "ivcuda-not-a-uuid"), d.foreignShmemNames());
        assertEquals("0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5", DomainXml.uuidOfShmemName(other));
        assertNull(DomainXml.uuidOfShmemName("ivcuda-not-a-uuid"));
        assertNull(DomainXml.uuidOfShmemName("someone-else"));
        assertEquals(List.of(other, "ivcuda-not-a-uuid"), d.removeForeignShmems());
        DomainXml after = DomainXml.parse(d.toXml());
        assertEquals(List.of(), after.foreignShmemNames());
        assertEquals("ivcuda-" + UUID, after.currentShmem().name(), "the domain's own device stays");
        assertTrue(after.toXml().contains("someone-else"), "a device that is not ivcuda's is not ours to judge");
        assertFalse(after.toXml().contains(other + ".sock"), "the other domain's doorbell socket went with its device");
    }

    @Test
    void descriptionIsReadWrittenAndRemoved() throws Exception {
        DomainXml d = DomainXml.parse("<domain type='qemu'><name>vm1</name><uuid>" + UUID + "</uuid><title>t</title><devices/></domain>");
        assertNull(d.description());
        d.setDescription("[ivcuda] GPU 0 shared\nmine & <yours>");
        DomainXml again = DomainXml.parse(d.toXml());
        assertEquals("[ivcuda] GPU 0 shared\nmine & <yours>", again.description());
        assertTrue(again.toXml().indexOf("<title>") < again.toXml().indexOf("<description>"), "after the title, as libvirt writes it");
        again.setDescription(null);
        assertNull(DomainXml.parse(again.toXml()).description());
    }

    private static DomainXml machine(String machine, String features, String devices) throws Exception {
        return DomainXml.parse("<domain type='kvm'><name>be</name><uuid>" + UUID + "</uuid><os><type arch='x86_64'"
                + (machine == null ? "" : " machine='" + machine + "'") + ">hvm</type></os>" + features + "<devices>" + devices
                + "</devices></domain>");
    }

    @Test
    void interruptRemappingIsAddedWhereAbsentOnQ35AndAnIommuOfTheDomainsOwnIsLeftAlone() throws Exception {
        DomainXml q35 = machine("pc-q35-9.2", "<features><acpi/><apic/></features>", "<disk type='file'/>");
        assertNull(q35.interruptRemappingProblem());
        assertTrue(q35.addInterruptRemapping());
        String xml = q35.toXml();
        assertTrue(xml.contains("<features><acpi/><apic/><ioapic driver=\"qemu\"/></features>"), xml);
        assertTrue(xml.contains("<disk type=\"file\"/><iommu model=\"intel\"><driver intremap=\"on\"/></iommu></devices>"), xml);
        assertFalse(DomainXml.parse(xml).addInterruptRemapping(), "once is enough");

        DomainXml bare = machine("q35", "", "");
        assertTrue(bare.addInterruptRemapping());
        assertTrue(bare.toXml().contains("<features><ioapic driver=\"qemu\"/></features><devices>"), bare.toXml());

        DomainXml own = machine("pc-i440fx-9.2", "", "<iommu model='virtio'/>");
        assertNull(own.interruptRemappingProblem(), "an <iommu> of the domain's own: nothing to add, nothing to refuse");
        assertFalse(own.addInterruptRemapping());
        assertTrue(own.toXml().contains("<iommu model=\"virtio\"/>") && !own.toXml().contains("ioapic"), own.toXml());

        assertEquals("machine type 'pc-i440fx-9.2': a virtual Intel IOMMU exists only on q35 (<os><type machine='q35'>),"
                + " or give the domain an <iommu> of your own", machine("pc-i440fx-9.2", "", "").interruptRemappingProblem());
        assertTrue(machine(null, "", "").interruptRemappingProblem().startsWith("no machine type named: "));
        assertNull(DomainXml.parse("<domain><name>e</name><uuid>" + UUID + "</uuid></domain>").interruptRemappingProblem(),
                "no <os>: the element alone (check FILE), not a definition");
        assertEquals("<ioapic driver='kvm'/>: interrupt remapping needs QEMU's own I/O APIC (driver='qemu')",
                machine("q35", "<features><ioapic driver='kvm'/></features>", "").interruptRemappingProblem());
        DomainXml qemuIoapic = machine("q35", "<features><ioapic driver='qemu'/></features>", "");
        assertTrue(qemuIoapic.addInterruptRemapping());
        assertEquals(1, qemuIoapic.toXml().split("<ioapic", -1).length - 1, "an <ioapic driver='qemu'/> there already stays the only one");
    }
}
