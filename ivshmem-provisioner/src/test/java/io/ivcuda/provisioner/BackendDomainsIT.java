package io.ivcuda.provisioner;

import static io.ivcuda.provisioner.LibvirtTestHost.URI;
import static io.ivcuda.provisioner.LibvirtTestHost.javaCommand;
import static io.ivcuda.provisioner.LibvirtTestHost.run;
import static io.ivcuda.provisioner.LibvirtTestHost.virsh;
import static io.ivcuda.provisioner.LibvirtTestHost.waitFor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.BackendPaths;
import io.ivcuda.common.ControlRegion;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.SlotLedger;
import io.ivcuda.provisioner.LibvirtTestHost.Result;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Issue 16's acceptance under libvirt (docs/backend-domains.md): one back-end domain and two front-end
 * domains, all QEMU TCG guests. The back-end (vm/build-backend-guest.sh: the test guest plus a jlink'd
 * Java runtime, the back-end agent and the cuda-server on its host-memory backend) serves two slots; the
 * front-ends (vm/build-guest.sh with vm/frontend-probe.c: a new CUDA process every round) name it, one by
 * name and one with {@code backend="auto"}. Checked: each front-end's probe initialises CUDA, allocates,
 * copies both ways and frees through the back-end; each front-end's QEMU maps its own slot file and no
 * other, the control region is mapped by the back-end's QEMU only, and the back-end serves the two slots
 * from two server processes; the back-end destroyed and started again while the front-ends run gives
 * their probes clean CUDA errors (no hang, no crash) and then success again; afterwards no domain, region
 * file, marker, ledger entry or process of the test is left.
 *
 * <p>Needs what {@link VmIT} needs (root, libvirtd with the hook of this build tree, apt-get download for
 * Debian's kernel and busybox, gcc, cpio) plus jlink and jdeps (the JDK) and the built back-end agent. With
 * {@code IVCUDA_IT_LIBVIRT=required} a missing libvirtd fails the test; otherwise it is skipped.
 *
 * <p>Wall time (each step's end in {@code target/backend-it/timing.txt}): 610 s measured on the 2-core
 * development machine while a full {@code mvn verify} ran beside it (images 43 s with the jlink'd runtime
 * cached, back-end boot to a beating agent 44 s, both front-ends served at 300 s: two server JVMs starting
 * together on the back-end's one emulated CPU take most of it, restart and recovery 270 s, clean-up 25 s).
 * Both guest images are built once; the front-ends share theirs.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class BackendDomainsIT {
    private static final Path HOST_CONFIG = HostConfig.DEFAULT_PATH;
    private static final Path HOST_CONFIG_BACKUP = Path.of("/etc/ivcuda/ivcuda.properties.before-backend-it");
    /** VmIT's and LifecycleIT's prefix: each test removes the others' leftovers. */
    private static final String BACKEND = "ivcuda-it-be";
    private static final String FRONT1 = "ivcuda-it-fe1";
    private static final String FRONT2 = "ivcuda-it-fe2";
    private static final List<String> DOMAINS = List.of(FRONT1, FRONT2, BACKEND);
    private static final int SLOTS = 2;
    private static final long SLOT_SIZE = 64L << 20;
    /** A back-end's boot and its agent's JVM under TCG on a busy CI machine. */
    private static final long BOOT_MS = 420_000;
    private static final long WAIT_MS = 180_000;
    private static final Pattern OK = Pattern.compile("IVCUDA-PROBE round=([0-9]+) ok ");
    private static final Pattern ERROR = Pattern.compile("IVCUDA-PROBE round=([0-9]+) error=(CUDA_ERROR_[A-Z_]+) at=");
    private static final Pattern BAD = Pattern.compile("IVCUDA-PROBE round=[0-9]+ (hang|crash|mismatch)[^\n]*");

    private static Path repo;
    private static Path workDir;
    private static Process provisioner;
    private static HostConfig host;
    private static boolean configWritten;
    private static String backendUuid;
    private static BackendPaths backendPaths;
    private static final long STARTED = System.nanoTime();

    @BeforeAll
    static void setUp() throws Exception {
        LibvirtTestHost.requireLibvirt("back-end domain integration test");
        repo = LibvirtTestHost.repo();
        workDir = repo.resolve("ivshmem-provisioner/target/backend-it");
        Files.createDirectories(workDir);
        removeTestDomains();
        buildGuests();
        writeHostConfig();
        host = HostConfig.load(List.of(HOST_CONFIG));

        provisioner = LibvirtTestHost.startProvisionerDaemon(repo, workDir.resolve("provisioner.log"));
        lap("set-up (guests built, provisioner started)");
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (repo != null) {
            removeTestDomains();
        }
        if (provisioner != null) {
            // after the undefines: the provisioner removes an undefined back-end's files
            if (backendPaths != null) {
                waitQuietly(() -> !Files.exists(backendPaths.controlFile()), WAIT_MS);
            }
            provisioner.destroy();
            provisioner.waitFor(10, TimeUnit.SECONDS);
        }
        if (repo != null) {
            for (String name : DOMAINS) {
                Path console = console(name);
                if (Files.exists(console)) {
                    Files.copy(console, workDir.resolve(name + "-console.log"), StandardCopyOption.REPLACE_EXISTING);
                    Files.delete(console);
                }
            }
        }
        if (configWritten) {
            if (Files.exists(HOST_CONFIG_BACKUP)) {
                Files.move(HOST_CONFIG_BACKUP, HOST_CONFIG, StandardCopyOption.REPLACE_EXISTING);
            } else {
                Files.deleteIfExists(HOST_CONFIG);
            }
        }
        lap("tear-down");
    }

    @Test
    @Order(1)
    void frontEndsAreServedThroughTheBackend() throws Exception {
        backendUuid = define(BACKEND, 1024, "role='backend' slots='" + SLOTS + "' size='64M'", workDir.resolve("backend"));
        backendPaths = BackendPaths.of(backendUuid, host);
        List<String> expected = new ArrayList<>(List.of(backendPaths.controlShmemName()));
        for (int k = 0; k < SLOTS; k++) {
            expected.add(backendPaths.slotShmemName(k));
        }
        waitFor(() -> shmemNames(BACKEND).equals(new TreeSet<>(expected)), WAIT_MS,
                "the provisioner gives " + BACKEND + " its control and slot devices " + expected);

        Files.deleteIfExists(console(BACKEND));
        virsh("start", BACKEND);
        assertTrue(Files.exists(backendPaths.runningMarker()), "the hook's started marks the back-end running: " + backendPaths.runningMarker());
        waitForAgent();
        lap("back-end booted, agent beating");

        String front1 = define(FRONT1, 256, "backend='" + BACKEND + "'", workDir.resolve("frontend"));
        String front2 = define(FRONT2, 256, "backend='auto'", workDir.resolve("frontend"));
        int slot1 = slotOf(FRONT1);
        int slot2 = slotOf(FRONT2);
        assertNotEquals(slot1, slot2, "two front-ends, two slots");
        List<SlotLedger.Assignment> ledger = SlotLedger.of(host).read();
        assertTrue(ledger.contains(new SlotLedger.Assignment(backendUuid, slot1, front1, FRONT1)), "the ledger has " + FRONT1 + ": " + ledger);
        assertTrue(ledger.contains(new SlotLedger.Assignment(backendUuid, slot2, front2, FRONT2)),
                "auto chose the only back-end with a free slot for " + FRONT2 + ": " + ledger);

        for (String name : List.of(FRONT1, FRONT2)) {
            Files.deleteIfExists(console(name));
            virsh("start", name);
        }
        for (String name : List.of(FRONT1, FRONT2)) {
            waitFor(() -> count(OK, console(name), 0) >= 2, BOOT_MS, name + "'s probe succeeds twice through the back-end (console " + console(name) + ")");
            String text = read(console(name));
            assertTrue(text.contains("IVCUDA-BENCH roundtrip call=cuCtxSynchronize"), name + " measured its round trip:\n" + text);
            assertNoBadRound(name, text);
        }
        lap("both front-ends served");

        try (ControlRegion control = ControlRegion.open(backendPaths.controlFile())) {
            ControlRegion.View view = control.view(SLOTS);
            ControlRegion.SlotView s1 = view.slots().get(slot1);
            ControlRegion.SlotView s2 = view.slots().get(slot2);
            for (ControlRegion.SlotView s : List.of(s1, s2)) {
                assertTrue(s.assigned(), "slot " + s.slot() + " assigned: " + view);
                assertEquals("SERVING", s.serverStateName(), "the agent serves slot " + s.slot() + ": " + view);
                assertEquals(s.generation(), s.servedGeneration(), "the agent serves the slot's current generation: " + view);
            }
            assertEquals(FRONT1, s1.frontendName(), view.toString());
            assertEquals(FRONT2, s2.frontendName(), view.toString());
            // one server process per front-end, each on its own slot file: the front-ends share no server state (no test here has one use the other's handles)
            assertNotEquals(s1.serverPid(), s2.serverPid(), "each front-end has a server process of its own: " + view);
        }
    }

    /**
     * What each QEMU process maps is what its guest can reach: a front-end's QEMU maps its own slot file and
     * neither the other front-end's slot nor the control region; the back-end's maps all of them.
     */
    @Test
    @Order(2)
    void eachFrontEndMapsOnlyItsOwnSlot() throws Exception {
        String slot1 = backendPaths.slotFile(slotOf(FRONT1)).toString();
        String slot2 = backendPaths.slotFile(slotOf(FRONT2)).toString();
        String control = backendPaths.controlFile().toString();
        assertEquals(Set.of(slot1), mappedRegions(FRONT1), FRONT1 + "'s QEMU maps only its own slot");
        assertEquals(Set.of(slot2), mappedRegions(FRONT2), FRONT2 + "'s QEMU maps only its own slot");
        Set<String> all = new TreeSet<>(List.of(control));
        for (int k = 0; k < SLOTS; k++) {
            all.add(backendPaths.slotFile(k).toString());
        }
        assertEquals(all, mappedRegions(BACKEND), BACKEND + "'s QEMU maps the control region and every slot");
    }

    @Test
    @Order(3)
    void backendRestartGivesCleanErrorsThenRecovery() throws Exception {
        long from1 = length(console(FRONT1));
        long from2 = length(console(FRONT2));
        virsh("destroy", BACKEND);
        waitFor(() -> !Files.exists(backendPaths.runningMarker()), WAIT_MS, "the hook's release removes " + backendPaths.runningMarker());
        for (String name : List.of(FRONT1, FRONT2)) {
            long from = name.equals(FRONT1) ? from1 : from2;
            waitFor(() -> count(ERROR, console(name), from) >= 2, WAIT_MS,
                    name + "'s probe reports CUDA errors while its back-end is away (console " + console(name) + ")");
            assertTrue(running(name), name + " keeps running without its back-end");
        }
        lap("back-end destroyed, front-ends see errors");

        long again1 = length(console(FRONT1));
        long again2 = length(console(FRONT2));
        Files.deleteIfExists(console(BACKEND));
        virsh("start", BACKEND);
        waitForAgent();
        for (String name : List.of(FRONT1, FRONT2)) {
            long from = name.equals(FRONT1) ? again1 : again2;
            waitFor(() -> count(OK, console(name), from) >= 2, BOOT_MS,
                    name + "'s probe succeeds again after the back-end's restart (console " + console(name) + ")");
            String text = read(console(name));
            assertNoBadRound(name, text);
            String during = text.substring((int) (name.equals(FRONT1) ? from1 : from2));
            Matcher error = ERROR.matcher(during);
            assertTrue(error.find(), during);
            // what the guest library answers without a server (docs/backend-domains.md, "Lifecycle")
            assertTrue(Set.of("CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA_ERROR_NOT_INITIALIZED", "CUDA_ERROR_OUT_OF_MEMORY").contains(error.group(2)),
                    name + ": a clean error while the back-end is away, got " + error.group(2) + ":\n" + during);
        }
        lap("back-end restarted, front-ends recovered");
    }

    @Test
    @Order(4)
    void nothingIsLeftAfterwards() throws Exception {
        List<String> uuids = new ArrayList<>();
        for (String name : DOMAINS) {
            uuids.add(virsh("domuuid", name).trim());
        }
        for (String name : DOMAINS) {
            virsh("destroy", name);
            virsh("undefine", name);
        }
        String list = run(List.of("virsh", "-c", URI, "list", "--all", "--name")).output();
        for (String name : DOMAINS) {
            assertFalse(list.contains(name + "\n"), name + " undefined: " + list);
        }
        List<Path> files = new ArrayList<>(List.of(backendPaths.controlFile(), backendPaths.runningMarker()));
        for (int k = 0; k < SLOTS; k++) {
            files.add(backendPaths.slotFile(k));
        }
        waitFor(() -> files.stream().noneMatch(Files::exists), WAIT_MS,
                "the back-end's region files and marker are removed once it is undefined: " + files);
        waitFor(() -> leftovers(uuids).isEmpty(), WAIT_MS, "nothing of the test's domains left: " + leftovers(uuids));
        assertTrue(SlotLedger.of(host).read().stream().noneMatch(a -> uuids.contains(a.backendUuid()) || uuids.contains(a.frontendUuid())),
                "no ledger entry of the test's domains: " + SlotLedger.of(host).read());
        lap("all undefined, nothing left");
    }

    // ---- the guests ----------------------------------------------------------------------------------

    private static void buildGuests() throws IOException {
        Path guestLib = repo.resolve("guest/target");
        assertTrue(Files.exists(guestLib.resolve("libcuda.so.1")), "the guest library is built first: " + guestLib);
        Path probe = workDir.resolve("frontend-probe");
        Result compiled = run(List.of("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-std=c11", "-I" + repo.resolve("guest/include"),
                "-o", probe.toString(), repo.resolve("vm/frontend-probe.c").toString(), "-L" + guestLib, "-lcuda"));
        assertEquals(0, compiled.status(), "compiling vm/frontend-probe.c: " + compiled.output());
        // one front-end image for both front-ends (the domains only read it)
        Result built = run(List.of("bash", repo.resolve("vm/build-guest.sh").toString(),
                "--args", "--pause-ms 1000 --round-timeout-s 90",
                workDir.resolve("frontend").toString(), guestLib.toString(), probe.toString()));
        assertEquals(0, built.status(), "vm/build-guest.sh: " + built.output());
        Path server = repo.resolve("cuda-server/target/cuda-server.jar");
        Path agent = repo.resolve("backend-agent/target/backend-agent.jar");
        assertTrue(Files.exists(server) && Files.exists(agent), "the cuda-server and the agent are built first: " + server + ", " + agent);
        built = run(List.of("bash", repo.resolve("vm/build-backend-guest.sh").toString(),
                workDir.resolve("backend").toString(), guestLib.toString(), server.toString(), agent.toString()));
        assertEquals(0, built.status(), "vm/build-backend-guest.sh: " + built.output());
    }

    private static String define(String name, int memoryMib, String attributes, Path guest) throws IOException {
        Path xml = workDir.resolve(name + ".xml");
        Files.writeString(xml, "<domain type='qemu'><name>" + name + "</name>"
                + "<memory unit='MiB'>" + memoryMib + "</memory><vcpu>1</vcpu>"
                + "<metadata><ivcuda:gpu xmlns:ivcuda='" + GpuElement.NAMESPACE + "' " + attributes + "/></metadata>"
                + "<os><type arch='x86_64' machine='pc'>hvm</type>"
                + "<kernel>" + guest.resolve("vmlinuz") + "</kernel><initrd>" + guest.resolve("initramfs.cpio.gz") + "</initrd>"
                + "<cmdline>console=ttyS0 panic=-1 quiet</cmdline></os>"
                + "<features><acpi/></features>"
                + "<on_poweroff>destroy</on_poweroff><on_reboot>destroy</on_reboot><on_crash>destroy</on_crash>"
                + "<devices><emulator>/usr/bin/qemu-system-x86_64</emulator>"
                + "<serial type='file'><source path='" + console(name) + "'/><target port='0'/></serial>"
                + "<memballoon model='none'/></devices></domain>");
        virsh("define", xml.toString());
        return virsh("domuuid", name).trim();
    }

    /** The agent inside the back-end runs: its heartbeat in the control region moves. */
    private static void waitForAgent() throws InterruptedException {
        long[] first = {-1};
        waitFor(() -> {
            long beat = agentHeartbeat();
            if (first[0] < 0 && beat > 0) {
                first[0] = beat;
            }
            return first[0] >= 0 && beat > first[0];
        }, BOOT_MS, "the agent inside " + BACKEND + " beats (console " + console(BACKEND) + ")");
    }

    private static long agentHeartbeat() {
        try (ControlRegion control = ControlRegion.open(backendPaths.controlFile())) {
            return control.view(SLOTS).agentHeartbeat();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    // ---- what libvirt and the processes say ------------------------------------------------------------

    private static Set<String> shmemNames(String domain) {
        Set<String> names = new TreeSet<>();
        try {
            Matcher m = Pattern.compile("<shmem name='([^']+)'").matcher(virsh("dumpxml", "--inactive", domain));
            while (m.find()) {
                names.add(m.group(1));
            }
        } catch (RuntimeException | AssertionError e) {
            // not defined yet
        }
        return names;
    }

    /** The slot the provisioner gave a front-end: its one device, a slot of the test's back-end. */
    private static int slotOf(String frontEnd) throws InterruptedException {
        waitFor(() -> shmemNames(frontEnd).size() == 1, WAIT_MS, "the provisioner gives " + frontEnd + " one slot device");
        String name = shmemNames(frontEnd).iterator().next();
        BackendPaths.DeviceName device = BackendPaths.parse(name);
        assertTrue(device != null && !device.isControl() && device.backendUuid().equals(backendUuid),
                frontEnd + "'s device is a slot of " + BACKEND + ": " + name);
        return device.slot();
    }

    private static Set<String> mappedRegions(String domain) throws IOException {
        long pid = Long.parseLong(Files.readString(Path.of("/run/libvirt/qemu/" + domain + ".pid")).trim());
        Set<String> files = new TreeSet<>();
        for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/maps"))) {
            int at = line.indexOf(host.shmDir().toString() + "/ivcuda-");
            if (at >= 0) {
                files.add(line.substring(at).replace(" (deleted)", "").trim());
            }
        }
        return files;
    }

    /** Processes, files under /dev/shm and /run/ivcuda that name one of the test's domains. */
    private static List<String> leftovers(List<String> uuids) {
        List<String> found = new ArrayList<>();
        for (Path dir : List.of(host.shmDir(), host.runtimeDir())) {
            try (Stream<Path> files = Files.list(dir)) {
                files.map(Path::toString).filter(f -> uuids.stream().anyMatch(f::contains)).forEach(found::add);
            } catch (IOException e) {
                // an absent directory has nothing left in it
            }
        }
        ProcessHandle.allProcesses().forEach(p -> {
            String line = p.info().commandLine().orElse("");
            if (uuids.stream().anyMatch(line::contains) || DOMAINS.stream().anyMatch(n -> line.contains("guest=" + n + ","))) {
                found.add("pid " + p.pid() + ": " + line);
            }
        });
        return found;
    }

    private static boolean running(String name) {
        Result state = run(List.of("virsh", "-c", URI, "domstate", name));
        return state.status() == 0 && state.output().contains("running");
    }

    private static Path console(String name) {
        return Path.of("/var/log/libvirt/qemu/" + name + "-console.log");
    }

    /** The console as text lines ending in \n (the serial line adds \r). */
    private static String read(Path console) {
        try {
            return Files.exists(console) ? Files.readString(console, StandardCharsets.ISO_8859_1).replace("\r", "") : "";
        } catch (IOException e) {
            return "";
        }
    }

    private static long length(Path console) {
        return read(console).length();
    }

    private static int count(Pattern pattern, Path console, long from) {
        String text = read(console);
        Matcher m = pattern.matcher(text.substring((int) Math.min(from, text.length())));
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    private static void assertNoBadRound(String name, String console) {
        Matcher bad = BAD.matcher(console);
        if (bad.find()) {
            throw new AssertionError(name + ": a round hung, crashed or read back other bytes (" + bad.group() + "):\n" + console);
        }
    }

    // ---- host set-up ---------------------------------------------------------------------------------

    private static void writeHostConfig() throws IOException {
        if (Files.exists(HOST_CONFIG) && !Files.exists(HOST_CONFIG_BACKUP)) {
            Files.copy(HOST_CONFIG, HOST_CONFIG_BACKUP);
        }
        Files.createDirectories(HOST_CONFIG.getParent());
        // the ledger in the build tree: the test's state never mixes with the host's /var/lib/ivcuda
        Files.writeString(HOST_CONFIG, "# Written by BackendDomainsIT; the previous file is restored afterwards.\n"
                + "server.user=root\nqemu.group=libvirt-qemu\n"
                + "state.dir=" + workDir.resolve("state") + "\n"
                + "log.dir=" + workDir.resolve("log") + "\n");
        configWritten = true;
    }

    private static void removeTestDomains() {
        for (String name : DOMAINS) {
            run(List.of("virsh", "-c", URI, "destroy", name));
            run(List.of("virsh", "-c", URI, "undefine", name));
        }
    }

    private static void waitQuietly(java.util.function.BooleanSupplier condition, long ms) throws InterruptedException {
        long end = System.nanoTime() + ms * 1_000_000;
        while (!condition.getAsBoolean() && System.nanoTime() < end) {
            Thread.sleep(500);
        }
    }

    /** Where the time goes (target/backend-it/timing.txt): the figure the class comment quotes. */
    private static void lap(String what) {
        try {
            Files.writeString(workDir.resolve("timing.txt"),
                    String.format("%6.0f s  %s%n", (System.nanoTime() - STARTED) / 1e9, what),
                    StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
        } catch (IOException e) {
            // the timing is for the reader; the test does not depend on it
        }
    }
}
