package io.ivcuda.provisioner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.BackendPaths;
import io.ivcuda.common.DescriptionNote;
import io.ivcuda.common.DomainXml;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.ShmemDevice;
import io.ivcuda.common.SlotLedger;
import io.ivcuda.provisioner.Outcome.Action;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.libvirt.Connect;
import org.libvirt.Domain;

/** Back-end and front-end domains (issue 16) against libvirt's test driver: devices, slot ledger, notes, refusals. */
class BackendReconcilerTest {
    private static final String BE = "b0000000-0000-0000-0000-000000000001";
    private static final String BE2 = "b0000000-0000-0000-0000-000000000002";
    private static final String F1 = "f0000000-0000-0000-0000-000000000001";
    private static final String F2 = "f0000000-0000-0000-0000-000000000002";
    private static final String F3 = "f0000000-0000-0000-0000-000000000003";

    @TempDir
    Path dir;
    private Connect connection;
    private HostConfig host;
    private Reconciler reconciler;

    @BeforeEach
    void open() throws Exception {
        connection = new Connect("test:///default");
        Path file = dir.resolve("ivcuda.properties");
        Files.writeString(file, "defaults.size=64M\nstate.dir=" + dir.resolve("state") + "\nshm.dir=" + dir + "\n");
        host = HostConfig.load(List.of(file));
        reconciler = new Reconciler(connection, host);
    }

    @AfterEach
    void close() throws Exception {
        for (Domain d : connection.listAllDomains(0)) {
            if (!d.getName().equals("test")) {
                d.undefine();
            }
            d.free();
        }
        connection.close();
    }

    private void define(String name, String uuid, String attributes, String... devices) throws Exception {
        String xml = ReconcilerTest.domainXml(name, uuid, ReconcilerTest.gpu(attributes));
        StringBuilder shmems = new StringBuilder();
        for (String d : devices) {
            shmems.append("<shmem name='").append(d).append("'><model type='ivshmem-plain'/><size unit='M'>64</size></shmem>");
        }
        connection.domainDefineXML(xml.replace("<devices/>", "<devices>" + shmems + "</devices>")).free();
    }

    /** A domain of machine type {@code machine} (null: none named) with {@code extra} among its devices, no <shmem>. */
    private void defineMachine(String name, String uuid, String attributes, String machine, String extra) throws Exception {
        String xml = ReconcilerTest.domainXml(name, uuid, ReconcilerTest.gpu(attributes));
        if (machine != null) {
            xml = xml.replace("<type>hvm</type>", "<type arch='x86_64' machine='" + machine + "'>hvm</type>");
        }
        connection.domainDefineXML(xml.replace("<devices/>", "<devices>" + extra + "</devices>")).free();
    }

    private DomainXml persistent(String name) throws Exception {
        Domain d = connection.domainLookupByName(name);
        try {
            return DomainXml.parse(d.getXMLDesc(Domain.XMLFlags.INACTIVE));
        } finally {
            d.free();
        }
    }

    private List<String> shmemNames(String name) throws Exception {
        DomainXml xml = persistent(name);
        return xml.foreignShmems(java.util.Set.of()).stream().map(e -> e.getAttribute("name")).toList();
    }

    private Map<String, Outcome> all() throws Exception {
        return reconciler.reconcileAll().stream().collect(Collectors.toMap(Outcome::domain, o -> o));
    }

    private List<SlotLedger.Assignment> ledger() throws Exception {
        return SlotLedger.of(host).read();
    }

    @Test
    void backendGetsItsControlAndSlotDevicesAndANote() throws Exception {
        define("gpu-be", BE, "role='backend' slots='3' size='128M' device='1'");
        assertEquals(Action.ADDED, all().get("gpu-be").action());
        DomainXml xml = persistent("gpu-be");
        assertEquals(List.of(BackendPaths.controlShmemName(BE), BackendPaths.slotShmemName(BE, 0),
                BackendPaths.slotShmemName(BE, 1), BackendPaths.slotShmemName(BE, 2)), shmemNames("gpu-be"));
        assertEquals(1L << 20, xml.shmemDevice(BackendPaths.controlShmemName(BE)).size(), "the control region is exactly 1 MiB");
        assertEquals(128L << 20, xml.shmemDevice(BackendPaths.slotShmemName(BE, 2)).size());
        assertEquals("back-end: 3 slots of 128 MiB, 0 in use", DescriptionNote.find(xml.description()));
        assertEquals(Action.UNCHANGED, all().get("gpu-be").action(), "the echo of our own change changes nothing");

        connection.domainLookupByName("gpu-be").setMetadata(2, "<gpu role='backend' slots='2' size='128M'/>", "ivcuda",
                io.ivcuda.common.GpuElement.NAMESPACE, 2);
        assertEquals(Action.UPDATED, all().get("gpu-be").action());
        assertEquals(3, shmemNames("gpu-be").size(), "fewer slots: the last slot's device goes");
    }

    @Test
    void frontendGetsOneSlotOfItsNamedBackendRecordedInTheLedger() throws Exception {
        define("gpu-be", BE, "role='backend' slots='2'");
        define("front", F1, "backend='gpu-be' quota='2G' share='50'");
        Map<String, Outcome> first = all();
        assertEquals(Action.ADDED, first.get("front").action(), first.get("front").toString());
        ShmemDevice device = persistent("front").shmemDevice(BackendPaths.slotShmemName(BE, 0));
        assertNotNull(device);
        assertEquals(64L << 20, device.size(), "the back-end's slot size");
        assertEquals(1, shmemNames("front").size(), "exactly one device");
        assertEquals(List.of(new SlotLedger.Assignment(BE, 0, F1, "front")), ledger());
        assertEquals("front-end of 'gpu-be', slot 0, 64 MiB region, 2 GiB GPU memory quota, 50 % of its SMs; no save or migration",
                DescriptionNote.find(persistent("front").description()));
        assertEquals("back-end: 2 slots of 64 MiB, 1 in use", DescriptionNote.find(persistent("gpu-be").description()));
        assertEquals(Action.UNCHANGED, all().get("front").action());
        assertEquals(1, ledger().size());

        // by UUID too
        define("front2", F2, "backend='" + BE + "'");
        assertEquals(Action.ADDED, reconciler.reconcile("front2").action());
        assertEquals(1, SlotLedger.ofFrontend(ledger(), F2).orElseThrow().slot());
        assertEquals("back-end: 2 slots of 64 MiB, 2 in use", DescriptionNote.find(persistent("gpu-be").description()),
                "reconciling a front-end alone updates its back-end's note");
    }

    @Test
    void aFullBackendNamesTheFrontendsHoldingItsSlots() throws Exception {
        define("gpu-be", BE, "role='backend' slots='1'");
        define("a-front", F1, "backend='gpu-be'");
        define("b-front", F2, "backend='gpu-be'");
        Map<String, Outcome> outcomes = all();
        assertEquals(Action.ADDED, outcomes.get("a-front").action());
        Outcome refused = outcomes.get("b-front");
        assertEquals(Action.REFUSED, refused.action());
        assertTrue(refused.detail().contains("back-end domain 'gpu-be' has no free slot: its 1 slot is held by 'a-front' (slot 0)"),
                refused.detail());
        assertEquals("error: back-end domain 'gpu-be' has no free slot: its 1 slot is held by 'a-front' (slot 0)",
                DescriptionNote.find(persistent("b-front").description()));
        assertEquals(List.of(), shmemNames("b-front"));
    }

    @Test
    void autoTakesTheLeastLoadedBackendWithRoomForTheQuota() throws Exception {
        define("be-one", BE, "role='backend' slots='4' capacity='8G'");
        define("be-two", BE2, "role='backend' slots='4' capacity='4G'");
        define("f1", F1, "backend='auto' quota='3G'");
        define("f2", F2, "backend='auto' quota='3G'");
        define("f3", F3, "backend='auto' quota='3G'");
        Map<String, Outcome> outcomes = all();
        List<SlotLedger.Assignment> ledger = ledger();
        assertEquals(BE, SlotLedger.ofFrontend(ledger, F1).orElseThrow().backendUuid(), "equal load: by name");
        assertEquals(BE2, SlotLedger.ofFrontend(ledger, F2).orElseThrow().backendUuid(), "be-two has fewer");
        assertEquals(BE, SlotLedger.ofFrontend(ledger, F3).orElseThrow().backendUuid(), "be-two has no room for 3G more");
        assertEquals(Action.ADDED, outcomes.get("f3").action());

        define("f4", "f0000000-0000-0000-0000-000000000004", "backend='auto' quota='3G'");
        Outcome refused = reconciler.reconcile("f4");
        assertEquals(Action.REFUSED, refused.action());
        assertTrue(refused.detail().contains("no back-end domain has a free slot and room for quota 3 GiB"), refused.detail());
        assertTrue(refused.detail().contains("be-one: GPU memory quota 3 GiB does not fit on back-end domain 'be-one': capacity 8 GiB, "
                + "6 GiB already given"), refused.detail());
    }

    @Test
    void aCapacityNeedsAQuota() throws Exception {
        define("gpu-be", BE, "role='backend' capacity='8G'");
        define("front", F1, "backend='gpu-be'");
        Outcome o = all().get("front");
        assertEquals(Action.REFUSED, o.action());
        assertTrue(o.detail().contains("has a capacity (8 GiB), so its front-ends need a GPU memory quota"), o.detail());
    }

    @Test
    void unknownOrWrongBackendsAreRefusedByName() throws Exception {
        define("plain-vm", BE2, "");
        define("gpu-be", BE, "role='backend'");
        define("f1", F1, "backend='nowhere'");
        define("f2", F2, "backend='plain-vm'");
        define("f3", F3, "backend='gpu-be' size='128M'");
        Map<String, Outcome> o = all();
        assertEquals("error: back-end domain 'nowhere' is not defined here", DescriptionNote.find(persistent("f1").description()));
        assertTrue(o.get("f2").detail().contains("domain 'plain-vm' is not a back-end (its element has no role=\"backend\")"),
                o.get("f2").detail());
        assertEquals(Action.INVALID, o.get("f3").action());
        assertTrue(o.get("f3").detail().contains("back-end domain 'gpu-be' has slots of 64 MiB"), o.get("f3").detail());
        assertEquals(List.of(), ledger(), "no refused front-end holds a slot");
    }

    @Test
    void aCloneGetsASlotOfItsOwnAndLosesTheOriginals() throws Exception {
        define("gpu-be", BE, "role='backend' slots='2'");
        define("original", F1, "backend='gpu-be'");
        all();
        define("clone", F2, "backend='gpu-be'", BackendPaths.slotShmemName(BE, 0));
        Outcome o = reconciler.reconcile("clone");
        assertEquals(List.of(BackendPaths.slotShmemName(BE, 1)), shmemNames("clone"));
        assertEquals(List.of(BackendPaths.slotShmemName(BE, 0) + " (slot 0 of back-end domain 'gpu-be', held by 'original')"),
                o.foreign());
        assertEquals(List.of(BackendPaths.slotShmemName(BE, 0)), shmemNames("original"), "the original keeps its slot");
    }

    @Test
    void aCloneWithNoFreeSlotLosesTheDeviceAndSaysWhy() throws Exception {
        define("gpu-be", BE, "role='backend' slots='1'");
        define("original", F1, "backend='gpu-be'");
        all();
        define("clone", F2, "backend='gpu-be'", BackendPaths.slotShmemName(BE, 0));
        Outcome o = reconciler.reconcile("clone");
        assertEquals(Action.REFUSED, o.action());
        assertEquals(List.of(), shmemNames("clone"));
        assertTrue(DescriptionNote.find(persistent("clone").description()).startsWith("error: back-end domain 'gpu-be' has no free slot"));
    }

    @Test
    void undefiningAFrontendFreesItsSlot() throws Exception {
        define("gpu-be", BE, "role='backend' slots='1'");
        define("front", F1, "backend='gpu-be'");
        all();
        assertEquals(1, ledger().size());
        Domain d = connection.domainLookupByName("front");
        d.undefine();
        d.free();
        all();
        assertEquals(List.of(), ledger());
        assertEquals("back-end: 1 slot of 64 MiB, 0 in use", DescriptionNote.find(persistent("gpu-be").description()));
    }

    @Test
    void anUndefinedBackendsFilesGoOnceNoSlotIsAssigned() throws Exception {
        BackendPaths paths = BackendPaths.of(BE, host);
        try (var f = new java.io.RandomAccessFile(paths.controlFile().toFile(), "rw")) {
            f.setLength(BackendPaths.CONTROL_SIZE);
        }
        Files.writeString(paths.slotFile(0), "x");
        try (var control = io.ivcuda.common.ControlRegion.open(paths.controlFile())) {
            control.format(BE, 1, "0", new io.ivcuda.common.ControlRegion.Token[] {new io.ivcuda.common.ControlRegion.Token(1, 2)},
                    new boolean[32]);
            control.assign(0, new io.ivcuda.common.ControlRegion.Assignment(F1, "front", 0, 0, "0", 64L << 20));
        }
        define("front", F1, "backend='auto'");
        all();
        assertTrue(Files.exists(paths.controlFile()), "slot 0 is still ASSIGNED: a running front-end maps it");
        try (var control = io.ivcuda.common.ControlRegion.open(paths.controlFile())) {
            control.free(0);
        }
        all();
        assertNull(Files.exists(paths.controlFile()) ? "still there" : null);
        assertTrue(Files.notExists(paths.slotFile(0)));
    }

    @Test
    void doorbellFrontendsNeedADoorbellBackendWhoseSlotsTheRelaysJoin() throws Exception {
        define("plain-be", BE, "role='backend' slots='1'");
        defineMachine("bell-be", BE2, "role='backend' slots='2' mode='doorbell'", "q35", "");
        define("bell", F1, "backend='plain-be' mode='doorbell'");
        define("auto-bell", F2, "backend='auto' mode='doorbell'");
        define("plain", F3, "backend='bell-be'");
        Map<String, Outcome> outcomes = all();
        BackendPaths paths = BackendPaths.of(BE2, host);

        ShmemDevice slot0 = persistent("bell-be").shmemDevice(BackendPaths.slotShmemName(BE2, 0));
        assertEquals(new ShmemDevice(BackendPaths.slotShmemName(BE2, 0), io.ivcuda.common.Mode.DOORBELL, 0, paths.relaySocket(0)),
                slot0, "a doorbell back-end's slot is a doorbell device whose server is the slot's relay");
        assertEquals("back-end: 2 doorbell slots of 64 MiB, 2 in use", DescriptionNote.find(persistent("bell-be").description()));

        assertEquals(Action.REFUSED, outcomes.get("bell").action());
        assertTrue(outcomes.get("bell").detail().contains("back-end domain 'plain-be' serves plain front-ends only"),
                outcomes.get("bell").detail());

        int autoSlot = SlotLedger.ofFrontend(ledger(), F2).orElseThrow().slot();
        assertEquals(BE2, SlotLedger.ofFrontend(ledger(), F2).orElseThrow().backendUuid(), "auto: only a doorbell back-end");
        assertEquals(new ShmemDevice(BackendPaths.slotShmemName(BE2, autoSlot), io.ivcuda.common.Mode.DOORBELL, 0,
                paths.relaySocket(autoSlot)), persistent("auto-bell").shmemDevice(BackendPaths.slotShmemName(BE2, autoSlot)),
                "the same relay as the back-end's slot device");
        int plainSlot = SlotLedger.ofFrontend(ledger(), F3).orElseThrow().slot();
        assertEquals(64L << 20, persistent("plain").shmemDevice(BackendPaths.slotShmemName(BE2, plainSlot)).size(),
                "a plain front-end of a doorbell back-end maps the same file as a plain device");
    }

    @Test
    void aDoorbellBackendGetsAVirtualIommuWithInterruptRemappingOnQ35Only() throws Exception {
        defineMachine("bell-q35", BE, "role='backend' slots='1' mode='doorbell'", "pc-q35-8.2", "");
        defineMachine("bell-pc", BE2, "role='backend' slots='1' mode='doorbell'", "pc-i440fx-8.2", "");
        String own = "b0000000-0000-0000-0000-000000000003";
        defineMachine("bell-own", own, "role='backend' slots='1' mode='doorbell'", "pc-q35-8.2", "<iommu model='intel'/>");
        String plain = "b0000000-0000-0000-0000-000000000004";
        defineMachine("plain-pc", plain, "role='backend' slots='1'", "pc-i440fx-8.2", "");
        Map<String, Outcome> outcomes = all();

        assertEquals(Action.ADDED, outcomes.get("bell-q35").action(), outcomes.get("bell-q35").detail());
        DomainXml q35 = persistent("bell-q35");
        org.w3c.dom.Element iommu = q35.iommu();
        assertNotNull(iommu, q35.toXml());
        assertEquals("intel", iommu.getAttribute("model"));
        assertEquals("on", DomainXml.child(iommu, "driver").getAttribute("intremap"));
        org.w3c.dom.Element features = DomainXml.child(iommu.getOwnerDocument().getDocumentElement(), "features");
        assertEquals("qemu", DomainXml.child(features, "ioapic").getAttribute("driver"), q35.toXml());
        assertEquals(Action.UNCHANGED, all().get("bell-q35").action(), "the echo of our own change changes nothing");

        assertEquals(Action.INVALID, outcomes.get("bell-pc").action());
        assertTrue(outcomes.get("bell-pc").detail().contains("machine type 'pc-i440fx-8.2': a virtual Intel IOMMU exists only on q35"),
                outcomes.get("bell-pc").detail());
        assertEquals(List.of(), shmemNames("bell-pc"), "refused: no devices");
        assertNull(persistent("bell-pc").iommu());

        org.w3c.dom.Element left = persistent("bell-own").iommu();
        assertNull(DomainXml.child(left, "driver"), "an <iommu> of the domain's own is left as it is");
        assertEquals(2, shmemNames("bell-own").size());

        assertEquals(Action.ADDED, outcomes.get("plain-pc").action(), "a plain back-end needs no IOMMU");
        assertNull(persistent("plain-pc").iommu());

        // a plain back-end that becomes a doorbell one gets it at the change
        connection.domainLookupByName("plain-pc").setMetadata(2, "<gpu role='backend' slots='1' mode='doorbell'/>", "ivcuda",
                io.ivcuda.common.GpuElement.NAMESPACE, 2);
        assertEquals(Action.INVALID, all().get("plain-pc").action(), "on i440fx: refused");
        defineMachine("plain-pc", plain, "role='backend' slots='1' mode='doorbell'", "q35", "<shmem name='"
                + BackendPaths.controlShmemName(plain) + "'><model type='ivshmem-plain'/><size unit='M'>1</size></shmem>");
        assertEquals(Action.UPDATED, all().get("plain-pc").action(), "now q35, with the control device already there");
        assertNotNull(persistent("plain-pc").iommu());
    }
}
