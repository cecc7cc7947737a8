package io.ivcuda.provisioner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.DomainXml;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.Mode;
import io.ivcuda.common.ShmemDevice;
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

/** Reconciliation against libvirt's test driver: a private, in-memory hypervisor per connection. */
class ReconcilerTest {
    @TempDir
    Path dir;
    private Connect connection;

    @BeforeEach
    void open() throws Exception {
        connection = new Connect("test:///default");
    }

    @AfterEach
    void close() throws Exception {
        // test:///default is one shared in-memory host per process: leave it as we found it.
        for (Domain d : connection.listAllDomains(0)) {
            if (!d.getName().equals("test")) {
                if (d.isActive() == 1) {
                    d.destroy();
                }
                d.undefine();
            }
            d.free();
        }
        connection.close();
    }

    private HostConfig host(String text) throws Exception {
        Path file = dir.resolve("ivcuda.properties");
        Files.writeString(file, text);
        return HostConfig.load(List.of(file));
    }

    static String domainXml(String name, String uuid, String gpuElement) {
        return "<domain type='test'><name>" + name + "</name><uuid>" + uuid + "</uuid>"
                + "<memory unit='MiB'>64</memory><os><type>hvm</type></os>"
                + (gpuElement == null ? "" : "<metadata>" + gpuElement + "</metadata>")
                + "<devices/></domain>";
    }

    static String gpu(String attributes) {
        return "<ivcuda:gpu xmlns:ivcuda='" + GpuElement.NAMESPACE + "' " + attributes + "/>";
    }

    private void define(String name, String uuid, String gpuElement) throws Exception {
        connection.domainDefineXML(domainXml(name, uuid, gpuElement)).free();
    }

    private DomainXml persistent(String name) throws Exception {
        Domain d = connection.domainLookupByName(name);
        try {
            return DomainXml.parse(d.getXMLDesc(Domain.XMLFlags.INACTIVE));
        } finally {
            d.free();
        }
    }

    private static Map<String, Action> actions(List<Outcome> outcomes) {
        return outcomes.stream().collect(Collectors.toMap(Outcome::domain, Outcome::action));
    }

    @Test
    void reconcileAddsToTaggedDomainsOnlyAndIsIdempotent() throws Exception {
        HostConfig host = host("defaults.size=64M\n");
        define("tagged", "00000000-0000-0000-0000-000000000001", gpu(""));
        define("plainold", "00000000-0000-0000-0000-000000000002", null);
        String untouchedBefore = connection.domainLookupByName("plainold").getXMLDesc(Domain.XMLFlags.INACTIVE);
        Reconciler reconciler = new Reconciler(connection, host);

        Map<String, Action> first = actions(reconciler.reconcileAll());
        assertEquals(Action.ADDED, first.get("tagged"));
        assertEquals(Action.UNTAGGED, first.get("plainold"));
        assertEquals(Action.UNTAGGED, first.get("test"), "the test driver's own domain is untagged");
        ShmemDevice device = persistent("tagged").currentShmem();
        assertEquals("ivcuda-00000000-0000-0000-0000-000000000001", device.name());
        assertEquals(Mode.PLAIN, device.mode());
        assertEquals(64L << 20, device.size());
        assertEquals(untouchedBefore, connection.domainLookupByName("plainold").getXMLDesc(Domain.XMLFlags.INACTIVE));

        // The echo of our own redefinition: nothing left to do.
        Map<String, Action> second = actions(reconciler.reconcileAll());
        assertEquals(Action.UNCHANGED, second.get("tagged"));
        assertEquals(Action.UNCHANGED, reconciler.reconcile("tagged").action());
    }

    @Test
    void elementChangeUpdatesAndRemovalRemoves() throws Exception {
        HostConfig host = host("");
        String uuid = "00000000-0000-0000-0000-000000000003";
        define("vm", uuid, gpu("size='4M'"));
        Reconciler reconciler = new Reconciler(connection, host);
        assertEquals(Action.ADDED, reconciler.reconcile("vm").action());

        setElement("vm", "<gpu mode='doorbell'/>");
        assertEquals(Action.UPDATED, reconciler.reconcile("vm").action());
        ShmemDevice device = persistent("vm").currentShmem();
        assertEquals(Mode.DOORBELL, device.mode());
        assertEquals(Path.of("/run/ivcuda/ivcuda-" + uuid + ".sock"), device.socket());
        assertEquals(1, DomainXml.children(persistentDevices("vm"), "shmem").size(), "exactly one <shmem>");

        setElement("vm", null);
        assertFalse(persistent("vm").isTagged());
        assertEquals(Action.REMOVED, reconciler.reconcile("vm").action());
        assertNull(persistent("vm").currentShmem());
        assertEquals(Action.UNTAGGED, reconciler.reconcile("vm").action());
    }

    /** As {@code virsh metadata NAME NAMESPACE --key ivcuda --set ELEMENT --config}; null removes the element. */
    private void setElement(String name, String element) throws Exception {
        Domain d = connection.domainLookupByName(name);
        try {
            d.setMetadata(2, element, element == null ? null : "ivcuda", GpuElement.NAMESPACE, 2 /* CONFIG */);
        } finally {
            d.free();
        }
    }

    private org.w3c.dom.Element persistentDevices(String name) throws Exception {
        Domain d = connection.domainLookupByName(name);
        String xml = d.getXMLDesc(Domain.XMLFlags.INACTIVE);
        d.free();
        var factory = javax.xml.parsers.DocumentBuilderFactory.newInstance();
        var doc = factory.newDocumentBuilder().parse(new org.xml.sax.InputSource(new java.io.StringReader(xml)));
        return DomainXml.child(doc.getDocumentElement(), "devices");
    }

    @Test
    void quotaThatDoesNotFitIsRefusedAndLeftAlone() throws Exception {
        HostConfig host = host("gpu.0.capacity=8G\ngpu.1.capacity=4G\n");
        define("a", "00000000-0000-0000-0000-00000000000a", gpu("quota='6G'"));
        define("b", "00000000-0000-0000-0000-00000000000b", gpu("quota='3G'"));
        define("c", "00000000-0000-0000-0000-00000000000c", gpu("device='1' quota='3G'"));
        define("d", "00000000-0000-0000-0000-00000000000d", gpu("quota='2G'"));
        Reconciler reconciler = new Reconciler(connection, host);
        List<Outcome> outcomes = reconciler.reconcileAll();
        Map<String, Action> result = actions(outcomes);
        assertEquals(Action.ADDED, result.get("a"));
        assertEquals(Action.REFUSED, result.get("b"), "6G + 3G exceeds GPU 0's 8G");
        assertEquals(Action.ADDED, result.get("c"), "GPU 1 has its own capacity");
        assertEquals(Action.ADDED, result.get("d"), "6G + 2G fits exactly");
        assertNull(persistent("b").currentShmem());
        String reason = outcomes.stream().filter(o -> o.domain().equals("b")).findFirst().orElseThrow().detail();
        assertTrue(reason.contains("does not fit on GPU 0") && reason.contains("8 GiB"), reason);

        // Provisioned domains keep their place: reconciling again refuses b again, changes nothing else.
        Map<String, Action> again = actions(reconciler.reconcileAll());
        assertEquals(Action.UNCHANGED, again.get("a"));
        assertEquals(Action.REFUSED, again.get("b"));
        assertEquals(Action.UNCHANGED, again.get("d"));
    }

    @Test
    void badElementIsNamedAndTheDomainLeftAsItWas() throws Exception {
        HostConfig host = host("");
        define("vm", "00000000-0000-0000-0000-000000000004", gpu("size='64M'"));
        Reconciler reconciler = new Reconciler(connection, host);
        reconciler.reconcile("vm");
        String before = connection.domainLookupByName("vm").getXMLDesc(Domain.XMLFlags.INACTIVE);
        String[][] cases = {
            {"size='3M'", "region size 3M is not a power of two (e.g. 256M)"},
            {"mode='turbo'", "unknown mode 'turbo' (use plain or doorbell)"},
            {"device='7'", "no GPU 7 on this host (this host configures 1 GPU)"},
            {"device='GPU-12345678-abcd'", "GPU GPU-12345678-abcd is not configured on this host (gpu.<n>.uuid)"},
            {"flavour='x'", "unknown attribute flavour on <ivcuda:gpu> (known: device, mode, size, quota, share, role, slots, capacity, backend)"},
        };
        for (String[] c : cases) {
            String bad = c[0];
            setElement("vm", "<gpu " + bad + "/>");
            Outcome outcome = reconciler.reconcile("vm");
            String attribute = bad.substring(0, bad.indexOf('='));
            assertEquals(Action.INVALID, outcome.action(), bad);
            assertTrue(outcome.detail().contains("domain 'vm'") && outcome.detail().contains(attribute + "="), outcome.detail());
            String after = connection.domainLookupByName("vm").getXMLDesc(Domain.XMLFlags.INACTIVE);
            assertEquals(strip(before), strip(after), "only the user's own metadata edit and our note differ");
            assertEquals("[ivcuda] error: " + c[1], persistent("vm").description(), "the reason, where virt-manager shows it");
        }
        // Fixed: the note says what the domain gets again.
        setElement("vm", "<gpu size='64M'/>");
        assertEquals(Action.UNCHANGED, reconciler.reconcile("vm").action());
        assertEquals("[ivcuda] GPU 0 shared, 64 MiB region, plain mode; no save or migration", persistent("vm").description());
    }

    private static String strip(String xml) {
        return xml.replaceAll("(?s)<metadata>.*</metadata>", "").replaceAll("(?s)<description>.*</description>", "");
    }

    @Test
    void descriptionCarriesOurNoteAndKeepsTheUsersText() throws Exception {
        HostConfig host = host("");
        String uuid = "00000000-0000-0000-0000-000000000005";
        connection.domainDefineXML(domainXml("vm", uuid, gpu("size='16M' quota='2G'"))
                .replace("</uuid>", "</uuid><description>my build server\nsecond line</description>")).free();
        Reconciler reconciler = new Reconciler(connection, host);
        assertEquals(Action.ADDED, reconciler.reconcile("vm").action());
        assertEquals("[ivcuda] GPU 0 shared, 16 MiB region, plain mode, 2 GiB GPU memory quota; no save or migration\n"
                + "my build server\nsecond line", persistent("vm").description());
        assertEquals(Action.UNCHANGED, reconciler.reconcile("vm").action());

        // The user edits the description (as virt-manager's Overview does) and keeps our line: both stay.
        Domain d = connection.domainLookupByName("vm");
        String edited = persistent("vm").description().replace("second line", "edited line");
        d.setMetadata(0 /* DESCRIPTION */, edited, null, null, 2);
        d.free();
        setElement("vm", "<gpu mode='doorbell' size='16M'/>");
        assertEquals(Action.UPDATED, reconciler.reconcile("vm").action());
        assertEquals("[ivcuda] GPU 0 shared, 16 MiB region, doorbell mode; no save or migration\nmy build server\nedited line",
                persistent("vm").description());

        // The element goes: so does our line, the user's text stays.
        setElement("vm", null);
        assertEquals(Action.REMOVED, reconciler.reconcile("vm").action());
        assertEquals("my build server\nedited line", persistent("vm").description());
    }

    @Test
    void aNoteAloneLeavesNoDescriptionBehind() throws Exception {
        HostConfig host = host("");
        define("vm", "00000000-0000-0000-0000-000000000006", gpu(""));
        Reconciler reconciler = new Reconciler(connection, host);
        reconciler.reconcile("vm");
        assertTrue(persistent("vm").description().startsWith("[ivcuda] GPU 0 shared, 256 MiB region"), persistent("vm").description());
        setElement("vm", null);
        reconciler.reconcile("vm");
        assertNull(persistent("vm").description());
        assertFalse(xmlOf("vm").contains("<description"), xmlOf("vm"));
    }

    @Test
    void aStaleNoteOfAnUntaggedDomainGoesAndTheUsersTextStays() throws Exception {
        // The element was removed while the provisioner was down, and so was the device (by hand): only our line is left.
        connection.domainDefineXML(domainXml("vm", "00000000-0000-0000-0000-000000000008", null).replace("</uuid>",
                "</uuid><description>[ivcuda] GPU 0 shared, 64 MiB region, plain mode; no save or migration\nmine</description>")).free();
        connection.domainDefineXML(domainXml("only", "00000000-0000-0000-0000-000000000009", null).replace("</uuid>",
                "</uuid><description>[ivcuda] error: something long fixed</description>")).free();
        Reconciler reconciler = new Reconciler(connection, host(""));
        assertEquals(Action.UNTAGGED, reconciler.reconcile("vm").action());
        assertEquals("mine", persistent("vm").description());
        assertEquals(Action.UNTAGGED, reconciler.reconcile("only").action());
        assertNull(persistent("only").description());
    }

    private String xmlOf(String name) throws Exception {
        Domain d = connection.domainLookupByName(name);
        try {
            return d.getXMLDesc(Domain.XMLFlags.INACTIVE);
        } finally {
            d.free();
        }
    }

    /** What virt-clone makes of a domain: the same XML with another name and UUID (and the original's device). */
    private void cloneOf(String original, String name, String uuid) throws Exception {
        String xml = xmlOf(original).replaceAll("<name>[^<]*</name>", "<name>" + name + "</name>")
                .replaceAll("<uuid>[^<]*</uuid>", "<uuid>" + uuid + "</uuid>");
        connection.domainDefineXML(xml).free();
    }

    @Test
    void aCloneGetsItsOwnDeviceAndLosesTheOriginals() throws Exception {
        HostConfig host = host("");
        String originalUuid = "00000000-0000-0000-0000-0000000000a1";
        define("original", originalUuid, gpu("mode='doorbell'"));
        Reconciler reconciler = new Reconciler(connection, host);
        reconciler.reconcile("original");
        String originalBefore = xmlOf("original");
        String cloneUuid = "00000000-0000-0000-0000-0000000000c1";
        cloneOf("original", "clone", cloneUuid);
        assertEquals(List.of("ivcuda-" + originalUuid), persistent("clone").foreignShmemNames(), "what a clone brings");

        Outcome preview = reconciler.preview().stream().filter(o -> o.domain().equals("clone")).findFirst().orElseThrow();
        assertEquals(List.of("ivcuda-" + originalUuid + " (the device of domain 'original')"), preview.foreign());
        assertTrue(preview.isProblem(), "status counts it as a problem");
        assertEquals(List.of("ivcuda-" + originalUuid), persistent("clone").foreignShmemNames(), "a preview changes nothing");

        Outcome outcome = reconciler.reconcile("clone");
        assertEquals(Action.ADDED, outcome.action());
        assertEquals(preview.foreign(), outcome.foreign());
        DomainXml clone = persistent("clone");
        assertEquals(List.of(), clone.foreignShmemNames());
        assertEquals(1, DomainXml.children(persistentDevices("clone"), "shmem").size(), "exactly its own device");
        assertEquals("ivcuda-" + cloneUuid, clone.currentShmem().name());
        assertEquals(Path.of("/run/ivcuda/ivcuda-" + cloneUuid + ".sock"), clone.currentShmem().socket(), "its own doorbell socket");
        assertEquals(originalBefore, xmlOf("original"), "the original is not touched");
        assertEquals(Action.UNCHANGED, reconciler.reconcile("clone").action());
        assertEquals(List.of(), reconciler.reconcile("clone").foreign());
    }

    @Test
    void foreignDevicesGoFromUntaggedAndInvalidDomainsToo() throws Exception {
        HostConfig host = host("");
        String foreign = "<shmem name='ivcuda-00000000-0000-0000-0000-0000000000ff'><model type='ivshmem-plain'/>"
                + "<size unit='M'>4</size></shmem>";
        connection.domainDefineXML(domainXml("untagged", "00000000-0000-0000-0000-0000000000e1", null)
                .replace("<devices/>", "<devices>" + foreign + "</devices>")).free();
        connection.domainDefineXML(domainXml("invalid", "00000000-0000-0000-0000-0000000000e2", gpu("size='3M'"))
                .replace("<devices/>", "<devices>" + foreign + "</devices>")).free();
        Map<String, Outcome> outcomes = new Reconciler(connection, host).reconcileAll().stream()
                .collect(Collectors.toMap(Outcome::domain, o -> o));
        assertEquals(Action.UNTAGGED, outcomes.get("untagged").action());
        assertEquals(List.of("ivcuda-00000000-0000-0000-0000-0000000000ff (the device of a domain with UUID "
                + "00000000-0000-0000-0000-0000000000ff that is not defined here)"), outcomes.get("untagged").foreign());
        assertEquals(Action.INVALID, outcomes.get("invalid").action());
        for (String name : new String[] {"untagged", "invalid"}) {
            assertEquals(List.of(), persistent(name).foreignShmemNames(), name);
            assertNull(persistent(name).currentShmem(), name);
        }
        assertNull(persistent("untagged").description(), "an untagged domain gets no note");
        assertEquals("[ivcuda] error: region size 3M is not a power of two (e.g. 256M)", persistent("invalid").description());
    }

    @Test
    void aRunningDomainShowsTheNoteLiveAndWhatWaitsForTheNextStart() throws Exception {
        HostConfig host = host("");
        define("vm", "00000000-0000-0000-0000-000000000007", gpu("size='16M'"));
        Reconciler reconciler = new Reconciler(connection, host);
        reconciler.reconcile("vm");
        Domain d = connection.domainLookupByName("vm");
        d.create();
        setElement("vm", "<gpu size='32M'/>");
        assertEquals(Action.UPDATED, reconciler.reconcile("vm").action());
        String note = "[ivcuda] GPU 0 shared, 32 MiB region, plain mode; no save or migration";
        assertEquals(note, persistent("vm").description());
        assertEquals(note + " (from the next start)", DomainXml.parse(d.getXMLDesc(0)).description(),
                "the running domain still has its 16 MiB device");
        assertEquals(Action.UNCHANGED, reconciler.reconcile("vm").action());
        d.destroy();
        d.create();
        assertEquals(note, DomainXml.parse(d.getXMLDesc(0)).description(), "started again: the new device, no remark");
        d.free();
    }
}
