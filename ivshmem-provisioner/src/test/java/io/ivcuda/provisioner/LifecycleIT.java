package io.ivcuda.provisioner;

import static io.ivcuda.provisioner.LibvirtTestHost.URI;
import static io.ivcuda.provisioner.LibvirtTestHost.javaCommand;
import static io.ivcuda.provisioner.LibvirtTestHost.run;
import static io.ivcuda.provisioner.LibvirtTestHost.serverPids;
import static io.ivcuda.provisioner.LibvirtTestHost.virsh;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.provisioner.LibvirtTestHost.Result;
import io.ivcuda.common.BackendPaths;
import io.ivcuda.common.ControlRegion;
import io.ivcuda.common.DomainXml;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import io.ivcuda.common.Mode;
import io.ivcuda.common.ShmemDevice;
import io.ivcuda.common.SlotLedger;
import io.ivcuda.wire.BackendSlotFlyweight;
import io.ivcuda.wire.HeaderFlyweight;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The whole lifecycle on a real libvirtd with QEMU under software emulation (TCG), as a user does it:
 * define a domain, {@code virsh metadata --set} the element, see the provisioner daemon add the
 * device, {@code virsh start}, see the server running and QEMU mapping the same region,
 * {@code virsh destroy}, see the server gone and nothing left behind.
 *
 * <p>Needs: root, libvirtd on qemu:///system, and the hook installed as qemu.d/50-ivcuda pointing at
 * this build tree before libvirtd started (.ci/run does all that). With {@code IVCUDA_IT_LIBVIRT=required}
 * (CI) a missing libvirtd fails the test; otherwise the test is skipped.
 *
 * <p>The server is the real {@code cuda-server/target/cuda-server.jar} (its cuda backend on a GPU host, the
 * host-memory backend elsewhere: see {@link #backendForThisHost()}). Only with {@code IVCUDA_IT_SERVER=standin} does it use the hook module's test stand-in.
 *
 * <p>With {@code -Divcuda.installed=true} it tests the installed ivcuda-host package instead of the build
 * tree: the hook must be the package's ({@value #INSTALLED_HOOK_TARGET}), the provisioner is
 * {@code /usr/bin/ivshmem-provisioner}, the servers are {@code /usr/bin/ivcuda-server} running as the
 * package's user {@code ivcuda}.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LifecycleIT {
    private static final Path HOST_CONFIG = HostConfig.DEFAULT_PATH;
    private static final Path HOST_CONFIG_BACKUP = Path.of("/etc/ivcuda/ivcuda.properties.before-it");
    private static final String PREFIX = "ivcuda-it-";
    /** Generous: eight TCG guests plus eight server JVMs on a small CI machine take their time. */
    private static final long WAIT_MS = 300_000;
    private static final boolean INSTALLED = Boolean.getBoolean("ivcuda.installed");
    private static final String INSTALLED_HOOK_TARGET = "/usr/libexec/ivcuda/50-ivcuda";
    private static final String INSTALLED_SERVER_USER = "ivcuda";
    private static final Path HOOK = LibvirtTestHost.HOOK;

    private static Path repo;
    private static Path workDir;
    private static Process provisioner;
    private static HostConfig host;
    private static boolean configWritten;

    @BeforeAll
    static void setUp() throws Exception {
        LibvirtTestHost.requireLibvirt("lifecycle integration test");
        repo = LibvirtTestHost.repo();
        workDir = repo.resolve("ivshmem-provisioner/target/it");
        Files.createDirectories(workDir);
        removeTestDomains();
        writeHostConfig();
        host = HostConfig.load(List.of(HOST_CONFIG));

        List<String> provisionerCommand;
        if (INSTALLED) {
            assertEquals(Path.of(INSTALLED_HOOK_TARGET), HOOK.toRealPath(), "the installed package's hook is in place");
            provisionerCommand = List.of("/usr/bin/ivshmem-provisioner", "daemon");
        } else {
            Path jar = repo.resolve("ivshmem-provisioner/target/ivshmem-provisioner.jar");
            assertTrue(Files.exists(jar), "the provisioner jar is built before the integration test: " + jar);
            provisionerCommand = List.of(javaCommand(), "-jar", jar.toString(), "daemon");
        }
        provisioner = new ProcessBuilder(provisionerCommand)
                .redirectErrorStream(true)
                .redirectOutput(workDir.resolve("provisioner.log").toFile())
                .start();
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (provisioner != null) {
            provisioner.destroy();
            provisioner.waitFor(10, TimeUnit.SECONDS);
        }
        if (repo != null) {
            removeTestDomains();
        }
        if (configWritten) {
            if (Files.exists(HOST_CONFIG_BACKUP)) {
                Files.move(HOST_CONFIG_BACKUP, HOST_CONFIG, StandardCopyOption.REPLACE_EXISTING);
            } else {
                Files.deleteIfExists(HOST_CONFIG);
            }
        }
    }

    private static void writeHostConfig() throws IOException {
        Path serverJar = repo.resolve("cuda-server/target/cuda-server.jar");
        String serverCommand;
        String serverUser = "root";
        if (INSTALLED) {
            serverCommand = "/usr/bin/ivcuda-server -J-Xmx256m -J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC";
            serverUser = INSTALLED_SERVER_USER;
        } else if ("standin".equals(System.getenv("IVCUDA_IT_SERVER"))) {
            Path hook = repo.resolve("libvirt-hook/target");
            serverCommand = javaCommand() + " -Xmx64m -cp " + hook.resolve("test-classes") + ":" + hook.resolve("classes")
                    + " io.ivcuda.hook.StandInCudaServer";
        } else {
            assertTrue(Files.exists(serverJar), "the real cuda-server is needed: " + serverJar
                    + " is missing (build the reactor; IVCUDA_IT_SERVER=standin selects the test stand-in for development)");
            // C1 and the serial collector: faster start-up, and the lifecycle test needs no peak speed.
            serverCommand = javaCommand() + " -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -jar " + serverJar;
        }
        if (Files.exists(HOST_CONFIG) && !Files.exists(HOST_CONFIG_BACKUP)) {
            Files.copy(HOST_CONFIG, HOST_CONFIG_BACKUP);
        }
        Files.createDirectories(HOST_CONFIG.getParent());
        Files.writeString(HOST_CONFIG, "# Written by LifecycleIT; the previous file is restored afterwards.\n"
                + "server.user=" + serverUser + "\nqemu.group=libvirt-qemu\nserver.launch=direct\n"
                + "server.command=" + serverCommand + "\n"
                + "server.ready.timeout.ms=180000\ndefaults.size=64M\n"
                + backendForThisHost()
                + "log.dir=" + workDir.resolve("log") + "\n");
        configWritten = true;
    }

    /**
     * The cuda backend where the host has NVIDIA's driver; elsewhere the cuda backend refuses to start a
     * VM's server (no usable GPU: exit 3, the start fails), so the lifecycle runs on the host-memory
     * backend, which serves the transport and no GPU.
     */
    static String backendForThisHost() {
        return Files.exists(Path.of("/dev/nvidiactl")) ? "" : "backend=host-memory\n";
    }

    // ---- the tests -------------------------------------------------------------------------------

    @Test
    @Order(1)
    void oneDomainFromMetadataToDestroy() throws Exception {
        String name = PREFIX + "1";
        String uuid = define(name);
        InstancePaths paths = InstancePaths.of(uuid, host);

        virsh("metadata", name, GpuElement.NAMESPACE, "--key", "ivcuda", "--set", "<gpu size='64M'/>", "--config");
        waitFor(() -> device(name) != null, "the provisioner adds the <shmem> device to " + name);
        ShmemDevice device = device(name);
        assertEquals(paths.shmemName(), device.name());
        assertEquals(Mode.PLAIN, device.mode());
        assertEquals(64L << 20, device.size());

        virsh("start", name);
        assertServerRunning(paths);
        assertRegionSharedWithQemu(name, paths);
        assertCudaCallsThroughRegion(paths);

        virsh("destroy", name);
        assertNothingLeft(paths);

        // Turning it off: removing the element removes the device.
        virsh("metadata", name, GpuElement.NAMESPACE, "--remove", "--config");
        waitFor(() -> device(name) == null, "the provisioner removes the device with the element");
    }

    @Test
    @Order(2)
    void eightTaggedDomainsStartedAtOnce() throws Exception {
        List<String> names = new ArrayList<>();
        List<InstancePaths> paths = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            String name = PREFIX + "many-" + i;
            names.add(name);
            paths.add(InstancePaths.of(define(name), host));
            virsh("metadata", name, GpuElement.NAMESPACE, "--key", "ivcuda", "--set", "<gpu size='16M'/>", "--config");
        }
        for (String name : names) {
            waitFor(() -> device(name) != null, "the provisioner adds the device to " + name);
        }
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            parallel(pool, names, name -> virsh("start", name));
            for (int i = 0; i < names.size(); i++) {
                assertServerRunning(paths.get(i));
                assertTrue(virsh("domstate", names.get(i)).contains("running"), names.get(i));
            }
            assertRegionSharedWithQemu(names.get(7), paths.get(7));
            parallel(pool, names, name -> virsh("destroy", name));
            for (InstancePaths p : paths) {
                assertNothingLeft(p);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * libvirtd restarts under a running tagged VM: the reconnect hook must leave VM and server alone,
     * and the provisioner must reconnect and re-register (a METADATA_CHANGE afterwards is followed).
     * Restarting libvirtd is intrusive, so this runs only in CI (IVCUDA_IT_LIBVIRT=required) or when
     * IVCUDA_IT_RESTART_LIBVIRTD=1.
     */
    @Test
    @Order(3)
    void survivesALibvirtdRestart() throws Exception {
        if (!"required".equals(System.getenv("IVCUDA_IT_LIBVIRT")) && !"1".equals(System.getenv("IVCUDA_IT_RESTART_LIBVIRTD"))) {
            LibvirtTestHost.skip("LifecycleIT.survivesALibvirtdRestart skipped: it restarts libvirtd, so it runs only in CI "
                    + "(IVCUDA_IT_LIBVIRT=required) or with IVCUDA_IT_RESTART_LIBVIRTD=1 mvn -B verify");
        }
        Path pidfile = Path.of("/run/libvirtd.pid");
        assertTrue(Files.exists(pidfile), "libvirtd runs without systemd and has its pidfile " + pidfile);
        String name = PREFIX + "restart";
        InstancePaths paths = InstancePaths.of(define(name), host);
        virsh("metadata", name, GpuElement.NAMESPACE, "--key", "ivcuda", "--set", "<gpu size='16M'/>", "--config");
        waitFor(() -> device(name) != null, "the provisioner adds the device to " + name);
        virsh("start", name);
        assertServerRunning(paths);
        List<Long> serverBefore = serverPids(paths);

        long libvirtd = Long.parseLong(Files.readString(pidfile).trim());
        ProcessHandle.of(libvirtd).ifPresent(ProcessHandle::destroy);
        waitFor(() -> ProcessHandle.of(libvirtd).map(p -> !p.isAlive()).orElse(true), "libvirtd stops");
        assertEquals(0, run(List.of("libvirtd", "-d")).status(), "libvirtd starts again");
        waitFor(() -> run(List.of("virsh", "-c", URI, "version")).status() == 0, "libvirtd answers again");

        assertTrue(virsh("domstate", name).contains("running"), "the reconnect hook kept the VM alive");
        assertEquals(serverBefore, serverPids(paths), "the same server still runs");

        String other = PREFIX + "after-restart";
        define(other);
        virsh("metadata", other, GpuElement.NAMESPACE, "--key", "ivcuda", "--set", "<gpu size='4M'/>", "--config");
        waitFor(() -> device(other) != null, "the reconnected provisioner provisions " + other);
        // Only a re-registered METADATA_CHANGE listener can see this one (the reconnect's reconcile is long past).
        virsh("metadata", other, GpuElement.NAMESPACE, "--key", "ivcuda", "--set", "<gpu size='8M'/>", "--config");
        waitFor(() -> device(other) != null && device(other).size() == 8L << 20,
                "the reconnected provisioner follows METADATA_CHANGE again");

        virsh("destroy", name);
        assertNothingLeft(paths);
    }

    /**
     * Doorbell mode: the server is the domain's ivshmem server. QEMU connects to its socket at start
     * (the server logs the handshake with QEMU's pid), maps the region the server sent, and when QEMU
     * exits the server sees the disconnect, stops by itself, and nothing is left.
     */
    @Test
    @Order(4)
    void doorbellDomainFromMetadataToDestroy() throws Exception {
        String name = PREFIX + "doorbell";
        InstancePaths paths = InstancePaths.of(define(name), host);
        virsh("metadata", name, GpuElement.NAMESPACE, "--key", "ivcuda", "--set", "<gpu mode='doorbell' size='16M'/>",
                "--config");
        waitFor(() -> device(name) != null && device(name).mode() == Mode.DOORBELL,
                "the provisioner adds the ivshmem-doorbell device to " + name);
        assertEquals(paths.doorbellSocket(), device(name).socket());

        virsh("start", name);
        assertServerRunning(paths);
        ByteBuffer header = readHeader(paths.regionFile());
        assertEquals(HeaderFlyweight.FEATURE_DOORBELL, header.getLong(HeaderFlyweight.FEATURE_BITS_OFFSET) & HeaderFlyweight.FEATURE_DOORBELL, "feature bit 0 DOORBELL in the header");
        long qemu = Long.parseLong(Files.readString(Path.of("/run/libvirt/qemu/" + name + ".pid")).trim());
        Path log = paths.serverLog();
        waitFor(() -> logContains(log, "doorbell: QEMU pid " + qemu + " connected"),
                "the server logs the handshake with QEMU pid " + qemu + " (" + log + ")");
        assertRegionSharedWithQemu(name, paths);
        assertCudaCallsThroughRegion(paths);

        virsh("destroy", name);
        waitFor(() -> logContains(log, "QEMU pid " + qemu + " disconnected"), "the server sees QEMU leave (" + log + ")");
        assertNothingLeft(paths);
        assertTrue(logContains(log, "stopped"), "the server stopped cleanly: " + log);
    }

    /**
     * A clone made with virt-clone (what virt-manager's Clone runs) copies the original's device
     * {@code ivcuda-<original uuid>}: the provisioner removes it, so both run side by side, each QEMU
     * mapping its own region and never the other's (read from /proc/PID/maps). Saving a tagged domain is
     * refused before anything changes; a domain that still carries the original's device (here a
     * transient one, which the provisioner never sees) is refused by the hook, naming both domains,
     * before QEMU could create or map anything.
     */
    @Test
    @Order(5)
    void aCloneGetsItsOwnRegionAndNeverMapsTheOriginals() throws Exception {
        String original = PREFIX + "original";
        String clone = PREFIX + "original-clone";
        String originalUuid = define(original, "<description>the user's own words</description>"
                + "<metadata><ivcuda:gpu xmlns:ivcuda='" + GpuElement.NAMESPACE + "' size='16M'/></metadata>");
        InstancePaths originalPaths = InstancePaths.of(originalUuid, host);
        waitFor(() -> device(original) != null, "the provisioner adds the device to " + original);
        assertEquals("[ivcuda] GPU 0 shared, 16 MiB region, plain mode; no save or migration\nthe user's own words",
                description(original), "the note, above the user's text");

        Result cloned = run(List.of("virt-clone", "--connect", URI, "--original", original, "--name", clone, "--auto-clone"));
        assertEquals(0, cloned.status(), "virt-clone: " + cloned.output());
        String cloneUuid = virsh("domuuid", clone).trim();
        InstancePaths clonePaths = InstancePaths.of(cloneUuid, host);
        waitFor(() -> shmemNames(clone).equals(List.of(clonePaths.shmemName())),
                "the clone has exactly its own device (virt-clone copied " + originalPaths.shmemName() + ")");
        assertEquals(List.of(originalPaths.shmemName()), shmemNames(original), "the original keeps its own");
        assertEquals(description(original), description(clone), "the clone's note says what it gets");

        virsh("start", original);
        virsh("start", clone);
        assertServerRunning(originalPaths);
        assertServerRunning(clonePaths);
        long originalQemu = qemuPid(original);
        long cloneQemu = qemuPid(clone);
        assertEquals(List.of(originalPaths.regionFile().toString()), mappedIvcudaFiles(originalQemu), "the original's QEMU");
        assertEquals(List.of(clonePaths.regionFile().toString()), mappedIvcudaFiles(cloneQemu), "the clone's QEMU");
        assertRegionSharedWithQemu(original, originalPaths);
        assertRegionSharedWithQemu(clone, clonePaths);

        // Save (virt-manager's Shutdown → Save is a managed save): refused before anything changes.
        Result saved = run(List.of("virsh", "-c", URI, "managedsave", clone));
        assertTrue(saved.status() != 0 && saved.output().contains("'ivshmem'"), "managedsave is refused: " + saved.output());
        assertTrue(virsh("domstate", clone).contains("running"), "the clone still runs");
        assertTrue(virsh("dominfo", clone).matches("(?s).*Managed save:\\s+no.*"), "no managed save image");
        assertEquals(List.of(clonePaths.regionFile().toString()), mappedIvcudaFiles(cloneQemu), "the same QEMU, the same region");
        assertServerRunning(clonePaths);

        // A domain that still carries the original's device never starts, whatever its element says.
        String intruder = PREFIX + "intruder";
        Path xml = workDir.resolve(intruder + ".xml");
        Files.writeString(xml, domainXml(intruder, "<metadata><ivcuda:gpu xmlns:ivcuda='" + GpuElement.NAMESPACE + "' size='16M'/>"
                + "</metadata>", "<shmem name='" + originalPaths.shmemName() + "'><model type='ivshmem-plain'/><size unit='M'>16</size></shmem>"));
        Result refused = run(List.of("virsh", "-c", URI, "create", xml.toString()));
        assertTrue(refused.status() != 0, "virsh create must fail: " + refused.output());
        assertEquals("ivcuda: domain '" + intruder + "' carries the ivcuda device of domain '" + original + "'",
                hookFirstLine(refused.output()), refused.output());
        assertFalse(run(List.of("virsh", "-c", URI, "domstate", intruder)).status() == 0, "no such domain is left");
        assertEquals(List.of(originalPaths.regionFile().toString()), mappedIvcudaFiles(originalQemu), "the original is unaffected");

        virsh("destroy", clone);
        virsh("destroy", original);
        assertNothingLeft(clonePaths);
        assertNothingLeft(originalPaths);
        assertEquals(List.of(), ivcudaFilesOf(List.of(originalUuid, cloneUuid)), "no region file of either is left");
    }

    /**
     * An invalid element, applied the way virt-manager's XML editor does it (a redefine): the reason shows in the
     * domain's description within a second, and the start fails with that cause as the hook's first line.
     */
    @Test
    @Order(6)
    void anInvalidElementExplainsItselfInTheDescriptionAndAtStart() throws Exception {
        String name = PREFIX + "invalid";
        define(name, "<metadata><ivcuda:gpu xmlns:ivcuda='" + GpuElement.NAMESPACE + "' size='16M'/></metadata>");
        waitFor(() -> device(name) != null, "the provisioner adds the device to " + name);
        Path bad = workDir.resolve(name + "-bad.xml");
        String current = virsh("dumpxml", "--inactive", name);
        Files.writeString(bad, current.replaceAll("size=(['\"])16M(['\"])", "size=$1300M$2"));
        assertTrue(Files.readString(bad).contains("300M"), Files.readString(bad));
        String expected = "[ivcuda] error: region size 300M is not a power of two (e.g. 256M)";
        long redefined = System.nanoTime();
        virsh("define", bad.toString());
        while (!expected.equals(description(name)) && System.nanoTime() - redefined < 5_000_000_000L) {
            Thread.sleep(20);
        }
        long ms = (System.nanoTime() - redefined) / 1_000_000;
        assertEquals(expected, description(name), "the reason in the description");
        assertTrue(ms < 1000, "the reason showed " + ms + " ms after the redefine (checked with virsh)");

        Result start = run(List.of("virsh", "-c", URI, "start", name));
        assertTrue(start.status() != 0, start.output());
        assertEquals("ivcuda: region size 300M is not a power of two (e.g. 256M)", hookFirstLine(start.output()), start.output());
        assertNothingLeft(InstancePaths.of(virsh("domuuid", name).trim(), host));
    }

    /**
     * A back-end and a front-end domain (issue 16) without guests: the provisioner gives the back-end its
     * control and slot devices and the front-end one slot; the front-end does not start while its back-end is
     * not running; both QEMUs map the slot's file; the front-end's start gives it the slot in the control
     * region (no agent runs: nothing to wait for), its stop frees it; the back-end's stop leaves the front-end
     * running; undefining the front-end frees its slot in the ledger. No cuda-server runs on the host.
     */
    @Test
    @Order(7)
    void backendAndFrontendDomainsWithoutGuests() throws Exception {
        String be = PREFIX + "be";
        String fe = PREFIX + "fe";
        String ns = "xmlns:ivcuda='" + GpuElement.NAMESPACE + "'";
        String beUuid = define(be, "<metadata><ivcuda:gpu " + ns + " role='backend' slots='2' size='16M'/></metadata>");
        BackendPaths paths = BackendPaths.of(beUuid, host);
        waitFor(() -> shmemNames(be).equals(List.of(paths.controlShmemName(), paths.slotShmemName(0), paths.slotShmemName(1))),
                "the provisioner gives " + be + " its control region and two slots");
        String feUuid = define(fe, "<metadata><ivcuda:gpu " + ns + " backend='" + be + "'/></metadata>");
        waitFor(() -> shmemNames(fe).equals(List.of(paths.slotShmemName(0))), "the provisioner gives " + fe + " slot 0");
        waitFor(() -> String.valueOf(description(be)).contains("[ivcuda] back-end: 2 slots of 16 MiB, 1 in use"),
                "the back-end's description counts the slot in use: " + description(be));
        assertEquals(List.of(new SlotLedger.Assignment(beUuid, 0, feUuid, fe)), SlotLedger.of(host).read().stream()
                .filter(a -> a.backendUuid().equals(beUuid)).toList());

        Result refused = run(List.of("virsh", "-c", URI, "start", fe));
        assertTrue(refused.status() != 0, refused.output());
        assertEquals("ivcuda: back-end domain '" + be + "' is not running; start it first", hookFirstLine(refused.output()),
                refused.output());

        virsh("start", be);
        assertTrue(Files.exists(paths.runningMarker()), "started marks the back-end running: " + paths.runningMarker());
        assertEquals(1L << 20, Files.size(paths.controlFile()));
        assertEquals(16L << 20, Files.size(paths.slotFile(0)));
        virsh("start", fe);
        assertTrue(mappedIvcudaFiles(qemuPid(be)).contains(paths.slotFile(0).toString()), "the back-end's QEMU maps slot 0");
        assertEquals(List.of(paths.slotFile(0).toString()), mappedIvcudaFiles(qemuPid(fe)), "the front-end's QEMU maps slot 0 only");
        try (ControlRegion control = ControlRegion.open(paths.controlFile())) {
            assertEquals(BackendSlotFlyweight.SLOT_ASSIGNED, control.slot(0).stateVolatile());
            assertEquals(feUuid, control.slot(0).frontendUuid());
            assertEquals(BackendSlotFlyweight.SLOT_FREE, control.slot(1).stateVolatile());
        }
        assertTrue(serverPids(InstancePaths.of(feUuid, host)).isEmpty() && serverPids(InstancePaths.of(beUuid, host)).isEmpty(),
                "no cuda-server on the host for either");

        virsh("destroy", be);
        waitFor(() -> !Files.exists(paths.runningMarker()), "release unmarks the back-end");
        assertTrue(virsh("domstate", fe).contains("running"), "the front-end keeps running without its back-end");
        virsh("destroy", fe);
        try (ControlRegion control = ControlRegion.open(paths.controlFile())) {
            waitFor(() -> control.slot(0).stateVolatile() == BackendSlotFlyweight.SLOT_FREE, "the front-end's release frees its slot");
        }
        virsh("undefine", fe);
        waitFor(() -> {
            try {
                return SlotLedger.ofFrontend(SlotLedger.of(host).read(), feUuid).isEmpty();
            } catch (Exception e) {
                return false;
            }
        }, "undefining the front-end frees its slot in the ledger");
        virsh("undefine", be);
        waitFor(() -> !Files.exists(paths.controlFile()), "an undefined back-end's region files go (no slot assigned)");
    }

    // ---- checks ----------------------------------------------------------------------------------

    private static void assertServerRunning(InstancePaths paths) throws Exception {
        assertTrue(Files.exists(paths.instanceConfig()), "instance configuration " + paths.instanceConfig());
        assertFalse(serverPids(paths).isEmpty(), "a cuda-server runs for " + paths.domainUuid());
        if (INSTALLED) {
            for (long pid : serverPids(paths)) {
                ProcessHandle.Info info = ProcessHandle.of(pid).map(ProcessHandle::info).orElseThrow();
                assertEquals(INSTALLED_SERVER_USER, info.user().orElse("?"), "the installed server's user, pid " + pid);
                String cmdline = Files.readString(Path.of("/proc/" + pid + "/cmdline")).replace('\0', ' ');
                assertTrue(cmdline.contains("/usr/share/ivcuda/cuda-server.jar"), "the installed server jar: " + cmdline);
            }
        }
        ByteBuffer header = readHeader(paths.regionFile());
        assertEquals(HeaderFlyweight.MAGIC, header.getLong(HeaderFlyweight.MAGIC_OFFSET), "region magic");
        assertEquals(HeaderFlyweight.STATE_READY, header.getInt(HeaderFlyweight.SERVER_STATE_OFFSET), "server_state READY (the hook returned only once it was)");
        assertEquals(Files.size(paths.regionFile()), header.getLong(HeaderFlyweight.REGION_SIZE_OFFSET), "region_size in the header");
        waitFor(() -> Files.exists(paths.pidfile()), "the server writes its pidfile");
    }

    /** Writes a pattern into the region file from the host and reads it back through QEMU's view of BAR2. */
    private static void assertRegionSharedWithQemu(String name, InstancePaths paths) throws Exception {
        ByteBuffer header = readHeader(paths.regionFile());
        long regionSize = Files.size(paths.regionFile());
        long poolOffset = header.getLong(HeaderFlyweight.POOL_OFFSET_OFFSET);
        long poolSize = header.getLong(HeaderFlyweight.POOL_SIZE_OFFSET);
        // The pool is where guest-visible data lives; a layout without a pool: the region's last bytes.
        long offset = poolSize >= 16 && poolOffset + 16 <= regionSize ? poolOffset : regionSize - 16;
        byte[] pattern = new byte[16];
        for (int i = 0; i < pattern.length; i++) {
            pattern[i] = (byte) (0xA0 + i * 3 + name.length());
        }
        try (RandomAccessFile region = new RandomAccessFile(paths.regionFile().toFile(), "rw")) {
            region.seek(offset);
            region.write(pattern);
        }
        long[] bar2 = {-1};
        waitFor(() -> (bar2[0] = bar2Address(name)) >= 0, "the guest firmware assigns BAR2 of " + name);
        String dump = virsh("qemu-monitor-command", "--hmp", name, String.format("xp /16bx 0x%x", bar2[0] + offset));
        Matcher bytes = Pattern.compile("0x([0-9a-f]{2})(?![0-9a-f])").matcher(dump.replaceAll("(?m)^[0-9a-f]+:", ""));
        byte[] seen = new byte[16];
        int n = 0;
        while (bytes.find() && n < 16) {
            seen[n++] = (byte) Integer.parseInt(bytes.group(1), 16);
        }
        assertEquals(16, n, "16 bytes from xp: " + dump);
        assertEquals(java.util.HexFormat.of().formatHex(pattern), java.util.HexFormat.of().formatHex(seen),
                "QEMU maps the same region the server set up: " + dump);
    }

    /** BAR2 of the ivshmem device (1af4:1110) from {@code info pci}, or -1 while unassigned. */
    private static long bar2Address(String name) {
        String pci;
        try {
            pci = virsh("qemu-monitor-command", "--hmp", name, "info pci");
        } catch (AssertionError e) {
            return -1;
        }
        int device = pci.indexOf("1af4:1110");
        if (device < 0) {
            return -1;
        }
        Matcher bar2 = Pattern.compile("BAR2: .*? at 0x([0-9a-f]+)").matcher(pci.substring(device));
        if (!bar2.find()) {
            return -1;
        }
        long address = Long.parseUnsignedLong(bar2.group(1), 16);
        return address == 0 || address == -1L || address > (1L << 48) ? -1 : address;
    }

    private static boolean logContains(Path log, String text) {
        try {
            return Files.exists(log) && Files.readString(log, StandardCharsets.UTF_8).contains(text);
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * CUDA driver calls through the running VM's region, made host-side with the guest library
     * ({@code IVCUDA_REGION}): there is no guest OS in this domain. cuInit answers what the server's backend
     * found (the GPU, or the host-memory backend on a host without one); the server's log shows the
     * channel's hello, which proves the calls crossed the region. In doorbell mode this process has no
     * BAR0 to ring: the server's bounded park timeout serves it.
     */
    private static void assertCudaCallsThroughRegion(InstancePaths paths) throws Exception {
        Path library = repo.resolve("guest/target/libcuda.so.1");
        assertTrue(Files.exists(library), "the guest library is built before the integration test: " + library);
        Path source = workDir.resolve("region_calls.c");
        Files.writeString(source, """
                #include <stdio.h>
                typedef int CUresult;
                CUresult cuInit(unsigned int flags);
                CUresult cuDriverGetVersion(int *version);
                CUresult cuDeviceGetCount(int *count);
                int main(void)
                {
                    int version = 0, count = -1;
                    CUresult init = cuInit(0);
                    CUresult v = cuDriverGetVersion(&version);
                    CUresult c = cuDeviceGetCount(&count);
                    printf("cuInit %d cuDriverGetVersion %d (%d) cuDeviceGetCount %d (%d)\\n", init, v, version, c, count);
                    return 0;
                }
                """);
        Path program = workDir.resolve("region_calls");
        Result built = run(List.of("gcc", "-o", program.toString(), source.toString(), "-L" + library.getParent(), "-lcuda"));
        assertEquals(0, built.status(), "gcc: " + built.output());
        ProcessBuilder calls = new ProcessBuilder(program.toString()).redirectErrorStream(true);
        calls.environment().put("IVCUDA_REGION", paths.regionFile().toString());
        calls.environment().put("LD_LIBRARY_PATH", library.getParent().toString());
        Process process = calls.start();
        process.getOutputStream().close();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the calls finish: " + output);
        assertEquals(0, process.exitValue(), output);
        Matcher init = Pattern.compile("cuInit (\\d+) ").matcher(output);
        assertTrue(init.find(), "cuInit answered: " + output);
        assertEquals("0", init.group(1), "cuInit's answer came from the server: " + output);
        assertTrue(logContains(paths.serverLog(), "hello from library"), "the server served the calls: " + paths.serverLog());
    }

    private static void assertNothingLeft(InstancePaths paths) throws Exception {
        waitFor(() -> serverPids(paths).isEmpty(), "the server of " + paths.domainUuid() + " is gone");
        for (Path left : new Path[] {paths.regionFile(), paths.doorbellSocket(), paths.instanceConfig(), paths.pidfile()}) {
            assertFalse(Files.exists(left), "left behind: " + left);
        }
    }

    private static ByteBuffer readHeader(Path region) throws IOException {
        ByteBuffer header = ByteBuffer.allocate(0x80).order(ByteOrder.LITTLE_ENDIAN);
        try (var channel = java.nio.channels.FileChannel.open(region)) {
            channel.read(header, 0);
        }
        return header;
    }

    // ---- libvirt through virsh, as a user would ----------------------------------------------------

    private static String define(String name) throws IOException {
        return define(name, "");
    }

    /** Defines a diskless TCG domain with {@code extra} (metadata, description) after its name; returns its UUID. */
    private static String define(String name, String extra) throws IOException {
        Path xml = workDir.resolve(name + ".xml");
        Files.writeString(xml, domainXml(name, extra, ""));
        virsh("define", xml.toString());
        return virsh("domuuid", name).trim();
    }

    private static String domainXml(String name, String extra, String devices) {
        return "<domain type='qemu'><name>" + name + "</name>" + extra + "<memory unit='MiB'>64</memory>"
                + "<os><type arch='x86_64' machine='pc'>hvm</type></os>"
                + "<devices><emulator>/usr/bin/qemu-system-x86_64</emulator><memballoon model='none'/>" + devices
                + "</devices></domain>";
    }

    private static String description(String name) {
        try {
            return DomainXml.parse(virsh("dumpxml", "--inactive", name)).description();
        } catch (Exception | AssertionError e) {
            return null;
        }
    }

    /** The names of every {@code <shmem>} in the persistent definition. */
    private static List<String> shmemNames(String name) {
        Matcher names = Pattern.compile("<shmem name='([^']*)'").matcher(virsh("dumpxml", "--inactive", name));
        List<String> result = new ArrayList<>();
        while (names.find()) {
            result.add(names.group(1));
        }
        return result;
    }

    private static long qemuPid(String name) throws IOException {
        return Long.parseLong(Files.readString(Path.of("/run/libvirt/qemu/" + name + ".pid")).trim());
    }

    /** The ivcuda region files a process maps, from /proc/PID/maps (each once). */
    private static List<String> mappedIvcudaFiles(long pid) throws IOException {
        return Files.readAllLines(Path.of("/proc/" + pid + "/maps")).stream()
                .map(line -> line.replaceFirst("^(\\S+\\s+){5}", "").trim())
                .filter(path -> path.startsWith(host.shmDir().resolve(InstancePaths.SHMEM_PREFIX).toString()))
                .distinct().toList();
    }

    /** The files in the shm directory named after any of these domains' UUIDs. */
    private static List<Path> ivcudaFilesOf(List<String> uuids) throws IOException {
        try (var files = Files.list(host.shmDir())) {
            return files.filter(f -> uuids.stream().anyMatch(u -> f.getFileName().toString().contains(u))).toList();
        }
    }

    /** The hook's first line in a failed virsh command: libvirt puts the hook's stderr after "unexpected exit status N: ". */
    private static String hookFirstLine(String virshOutput) {
        Matcher m = Pattern.compile("unexpected exit status \\d+: ([^\\n]*)").matcher(virshOutput);
        return m.find() ? m.group(1).trim() : "(no hook output in: " + virshOutput + ")";
    }

    private static ShmemDevice device(String name) {
        try {
            return DomainXml.parse(virsh("dumpxml", "--inactive", name)).currentShmem();
        } catch (Exception | AssertionError e) {
            return null;
        }
    }

    private static void removeTestDomains() {
        Result list = run(List.of("virsh", "-c", URI, "list", "--all", "--name"));
        for (String line : list.output().split("\n")) {
            String name = line.trim();
            if (name.startsWith(PREFIX)) {
                run(List.of("virsh", "-c", URI, "destroy", name));
                run(List.of("virsh", "-c", URI, "undefine", name));
            }
        }
    }

    private interface Action {
        void run(String name) throws Exception;
    }

    private static void parallel(ExecutorService pool, List<String> names, Action action) throws Exception {
        List<Future<?>> futures = new ArrayList<>();
        for (String name : names) {
            futures.add(pool.submit(() -> {
                action.run(name);
                return null;
            }));
        }
        for (Future<?> f : futures) {
            try {
                f.get(WAIT_MS, TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                throw e.getCause() instanceof AssertionError a ? a : new AssertionError(e.getCause());
            }
        }
    }

    private static void waitFor(BooleanSupplier condition, String what) throws InterruptedException {
        LibvirtTestHost.waitFor(condition, WAIT_MS, what);
    }
}
