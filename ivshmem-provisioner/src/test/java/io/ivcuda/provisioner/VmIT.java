package io.ivcuda.provisioner;

import static io.ivcuda.provisioner.LibvirtTestHost.URI;
import static io.ivcuda.provisioner.LibvirtTestHost.javaCommand;
import static io.ivcuda.provisioner.LibvirtTestHost.run;
import static io.ivcuda.provisioner.LibvirtTestHost.serverPids;
import static io.ivcuda.provisioner.LibvirtTestHost.virsh;
import static io.ivcuda.provisioner.LibvirtTestHost.waitFor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.provisioner.LibvirtTestHost.Result;
import io.ivcuda.common.DomainXml;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import io.ivcuda.common.Mode;
import io.ivcuda.common.ShmemDevice;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The mission inside a real virtual machine, under libvirt: a small Debian guest (vm/build-guest.sh:
 * Debian's kernel, static busybox, our libcuda.so.1 and vm/guest-probe.c) boots under QEMU's software
 * emulation as a domain carrying the ivcuda metadata element. The provisioner adds the {@code <shmem>}
 * device, the hook starts the real cuda-server (its cuda backend on a GPU host; elsewhere, where the cuda
 * backend refuses to start, the host-memory backend, which serves the transport), the guest's library
 * finds the ivshmem device by PCI scan, handshakes through BAR2 and gets {@code cuInit} answered with
 * {@code CUDA_SUCCESS}. The test reads that from the serial console, checks that the server saw
 * the same process's hello and cuInit, and that the guest's power-off leaves nothing behind.
 *
 * <p>Needs what {@link LifecycleIT} needs (root, libvirtd, the hook; .ci/run sets it up) plus
 * {@code apt-get download} for the kernel and busybox packages (cached in {@code IVCUDA_VM_CACHE}),
 * {@code dpkg-deb}, {@code cpio} and gcc. The guest carries the kernel package's vfio modules and
 * ivcuda-guest-irqd (guest/target) for the doorbell run's interrupt checks. With
 * {@code IVCUDA_IT_LIBVIRT=required} a missing libvirtd fails the test; otherwise it is skipped.
 */
@org.junit.jupiter.api.TestMethodOrder(org.junit.jupiter.api.MethodOrderer.OrderAnnotation.class)
class VmIT {
    private static final Path HOST_CONFIG = HostConfig.DEFAULT_PATH;
    private static final Path HOST_CONFIG_BACKUP = Path.of("/etc/ivcuda/ivcuda.properties.before-vm-it");
    /** LifecycleIT's prefix too: either test removes the other's leftovers. */
    private static final String NAME = "ivcuda-it-vm";
    /** A file QEMU (user libvirt-qemu, through libvirt's DAC labelling) may write on Debian 12. */
    private static final Path CONSOLE = Path.of("/var/log/libvirt/qemu/" + NAME + "-console.log");
    /** Booting a Debian kernel under TCG takes ~10 s alone; a busy 2-core CI machine, several times that. */
    private static final long GUEST_MS = 180_000;
    private static final long WAIT_MS = 120_000;

    private static Path repo;
    private static Path workDir;
    private static Process provisioner;
    private static HostConfig host;
    private static boolean configWritten;

    @BeforeAll
    static void setUp() throws Exception {
        LibvirtTestHost.requireLibvirt("VM integration test");
        repo = LibvirtTestHost.repo();
        workDir = repo.resolve("ivshmem-provisioner/target/vm-it");
        Files.createDirectories(workDir);
        removeTestDomain();
        buildGuest();
        writeHostConfig();
        host = HostConfig.load(List.of(HOST_CONFIG));

        provisioner = LibvirtTestHost.startProvisionerDaemon(repo, workDir.resolve("provisioner.log"));
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (provisioner != null) {
            provisioner.destroy();
            provisioner.waitFor(10, TimeUnit.SECONDS);
        }
        if (repo != null) {
            removeTestDomain();
            if (Files.exists(CONSOLE)) {
                Files.copy(CONSOLE, workDir.resolve("console.log"), StandardCopyOption.REPLACE_EXISTING);
                Files.delete(CONSOLE);
            }
        }
        if (configWritten) {
            if (Files.exists(HOST_CONFIG_BACKUP)) {
                Files.move(HOST_CONFIG_BACKUP, HOST_CONFIG, StandardCopyOption.REPLACE_EXISTING);
            } else {
                Files.deleteIfExists(HOST_CONFIG);
            }
        }
    }

    @Test
    @org.junit.jupiter.api.Order(1)
    void guestFindsTheDeviceAndTheServerAnswersItsCalls() throws Exception {
        runGuest(Mode.PLAIN);
    }

    /**
     * The same guest in doorbell mode: QEMU connects to the server's socket, the guest library maps
     * BAR0 and rings it when the server is parked (the server logs the first ring of a vector), and
     * the guest's power-off closes QEMU's connection, after which the server stops by itself.
     *
     * <p>And the way back: the domain has a virtual IOMMU (q35, intel, interrupt remapping), so the
     * guest's ivcuda-guest-irqd binds the device to vfio-pci and hands its MSI-X eventfds out on
     * /run/ivcuda/irq.sock (protocol §8.1; vm/irqd-before.sh). A client checks the socket's message,
     * the probe's library sleeps on its channel's interrupt and is woken by it (its IVCUDA_STATS
     * summary), the guest kernel counted vfio-msix interrupts, and SIGTERM stops the daemon cleanly
     * (vm/irqd-after.sh).
     */
    @Test
    @org.junit.jupiter.api.Order(2)
    void doorbellGuestRingsTheServer() throws Exception {
        runGuest(Mode.DOORBELL);
    }

    private void runGuest(Mode mode) throws Exception {
        String uuid = define(mode);
        InstancePaths paths = InstancePaths.of(uuid, host);
        waitFor(() -> device() != null && device().mode() == mode, WAIT_MS, "the provisioner adds the <shmem> device to " + NAME);
        ShmemDevice device = device();
        assertEquals(paths.shmemName(), device.name());
        if (mode == Mode.PLAIN) {
            assertEquals(64L << 20, device.size());
        }

        Files.deleteIfExists(CONSOLE);
        virsh("start", NAME);
        waitFor(() -> console().contains("IVCUDA-GUEST-DONE") || !running(), GUEST_MS,
                "the guest runs its program and powers off (console " + CONSOLE + ")");
        String console = console();
        assertTrue(console.contains("IVCUDA-GUEST-DONE"), "the guest finished its program:\n" + console);
        assertTrue(console.matches("(?s).*ivshmem device at 0000:[0-9a-f:.]+\n.*"), "the guest sees the ivshmem PCI device:\n" + console);
        assertTrue(console.contains("IVCUDA-TEST-END probe rc=0\n"), "the probe ran:\n" + console);
        Matcher version = Pattern.compile("probe: cuDriverGetVersion=CUDA_SUCCESS version=([1-9][0-9]*)\n").matcher(console);
        assertTrue(version.find(), "a driver version (answered by the guest library, protocol §9):\n" + console);
        assertTrue(console.contains("probe: cuInit=CUDA_SUCCESS\n"),
                "cuInit answered by the server (the GPU, or the host-memory backend on a host without one):\n" + console);
        Matcher pid = Pattern.compile("probe: pid=([0-9]+)\n").matcher(console);
        assertTrue(pid.find(), console);

        // The guest powered itself off (on_poweroff=destroy): the hook's release stops the server.
        waitFor(() -> !running(), WAIT_MS, NAME + " is shut off after the guest's power-off");
        assertNothingLeft(paths);
        String serverLog = Files.readString(paths.serverLog());
        assertTrue(serverLog.contains(" pid " + pid.group(1) + " tid " + pid.group(1) + ": hello from library "),
                "the server saw the probe's hello (pid " + pid.group(1) + ") in " + paths.serverLog() + ":\n" + serverLog);
        // the arrow is '?' where the server's stdout has no UTF-8 locale (the hook's direct launch)
        assertTrue(Pattern.compile(" pid " + pid.group(1) + ": cuInit\\(0\\) \\S+ CUDA_SUCCESS\n").matcher(serverLog).find(),
                "the server answered the probe's cuInit:\n" + serverLog);

        if (mode == Mode.DOORBELL) {
            assertTrue(serverLog.contains("doorbell: QEMU pid "), "QEMU connected to the server's socket:\n" + serverLog);
            assertTrue(serverLog.contains("doorbell: first ring on vector "), "the guest rang BAR0's doorbell:\n" + serverLog);
            assertTrue(serverLog.contains("disconnected: the VM is gone"), "the server saw QEMU leave:\n" + serverLog);
            assertGuestInterrupts(console);
        }

        virsh("undefine", NAME);
        assertFalse(run(List.of("virsh", "-c", URI, "list", "--all", "--name")).output().contains(NAME), "undefined");
    }

    /** What vm/irqd-before.sh and vm/irqd-after.sh print in the doorbell guest. */
    private static void assertGuestInterrupts(String console) {
        Matcher device = Pattern.compile("ivshmem device at (0000:[0-9a-f:.]+)\n").matcher(console);
        assertTrue(device.find(), console);
        String address = device.group(1);
        for (String module : List.of("vfio", "vfio_iommu_type1", "vfio-pci")) {
            assertTrue(console.contains("IVCUDA-MODULE " + module + " rc=0\n"), "the guest loaded " + module + ":\n" + console);
        }
        // a start that fails after binding the device (its socket cannot be made) gives the device back
        assertTrue(console.contains("IVCUDA-IRQD-FAILING: ivcuda-guest-irqd: cannot create the socket's directory /proc/ivcuda"),
                "the failing start says what is at fault:\n" + console);
        assertTrue(console.contains("IVCUDA-IRQD-FAILING: ivcuda-guest-irqd: " + address + " given back to no driver\n"), console);
        assertTrue(console.contains("IVCUDA-IRQD-FAILED rc=1 driver=\n"), "a failed start leaves the device as it found it:\n" + console);
        Matcher started = Pattern.compile("IVCUDA-IRQD: ivcuda-guest-irqd: device " + Pattern.quote(address)
                + ", vfio (type1v2|type1) \\(IOMMU group [0-9]+\\), ([0-9]+) MSI-X vectors, socket /run/ivcuda/irq.sock\n").matcher(console);
        assertTrue(started.find(), "ivcuda-guest-irqd started on " + address + " through the vIOMMU:\n" + console);
        assertEquals(ShmemDevice.DOORBELL_VECTORS, Integer.parseInt(started.group(2)), "one vector per <msi vectors>:\n" + console);
        String handed = "irq-socket-check: ok: " + started.group(2) + " eventfds for " + started.group(2) + " vectors, device " + address + "\n";
        assertTrue(console.contains(handed), "a client got the §8.1 message and one eventfd per vector:\n" + console);
        assertTrue(Pattern.compile("irq-socket-check: ok: self-rings of " + started.group(2) + " vectors \\(peer [0-9]+\\) arrived on their eventfds\n")
                .matcher(console).find(), "each MSI-X vector, rung by the guest itself, arrived on its eventfd:\n" + console);
        Matcher before = Pattern.compile("IVCUDA-INTERRUPTS-BEFORE-PROGRAMS ([0-9]+)\n").matcher(console);
        assertTrue(before.find(), console);

        // the library slept on its channel's MSI-X interrupt and the server's raise woke it
        Matcher woken = Pattern.compile("IVCUDA-STDERR probe: .*interrupt waits: [0-9]+, woken by an interrupt: ([0-9]+)").matcher(console);
        assertTrue(woken.find(), "the probe's library (IVCUDA_STATS) counts its interrupt waits:\n" + console);
        assertTrue(Long.parseLong(woken.group(1)) > 0, "the probe's library was woken by an interrupt:\n" + console);
        // the self-rings are counted before the programs: what comes after is the server's
        long interrupts = vfioMsixInterrupts(console) - Long.parseLong(before.group(1));
        assertTrue(interrupts > 0, "the guest kernel counted vfio-msix interrupts while the probe ran (" + interrupts + "):\n" + console);

        assertTrue(console.contains("IVCUDA-IRQD-EXIT rc=0\n"), "SIGTERM stops ivcuda-guest-irqd with status 0:\n" + console);
        assertTrue(console.contains("irq-socket-check: ok: end of file, the daemon stopped\n"),
                "a connected client sees end of file when the daemon stops:\n" + console);
        assertTrue(console.contains("IVCUDA-IRQD-LEFT socket=0 vfio-interrupts=0\n"),
                "the stopped daemon removed its socket and freed its interrupts:\n" + console);
    }

    /**
     * The sum of the count columns of the /proc/interrupts lines of vfio-msix vectors
     * ({@code IVCUDA-INTERRUPTS  28:  1  IR-PCI-MSI 1589248-edge  vfio-msix[0](0000:03:01.0)}, one count
     * column per CPU).
     */
    static long vfioMsixInterrupts(String console) {
        long sum = 0;
        Matcher line = Pattern.compile("IVCUDA-INTERRUPTS +[0-9]+:((?: +[0-9]+)+) .*vfio-msix.*\n").matcher(console);
        while (line.find()) {
            for (String count : line.group(1).trim().split(" +")) {
                sum += Long.parseLong(count);
            }
        }
        return sum;
    }

    // ---- the guest ---------------------------------------------------------------------------------

    private static void buildGuest() throws IOException {
        Path guestLib = repo.resolve("guest/target");
        assertTrue(Files.exists(guestLib.resolve("libcuda.so.1")), "the guest library is built first: " + guestLib);
        Path probe = workDir.resolve("probe");
        Result compiled = run(List.of("gcc", "-O2", "-Wall", "-Werror", "-o", probe.toString(),
                repo.resolve("vm/guest-probe.c").toString(), "-L" + guestLib, "-lcuda"));
        assertEquals(0, compiled.status(), "compiling vm/guest-probe.c: " + compiled.output());
        Path daemon = guestLib.resolve("ivcuda-guest-irqd");
        assertTrue(Files.exists(daemon), "the guest's interrupt daemon is built with the library: " + daemon);
        Path socketCheck = workDir.resolve("irq-socket-check");
        compiled = run(List.of("gcc", "-O2", "-Wall", "-Werror", "-o", socketCheck.toString(),
                repo.resolve("vm/irq-socket-check.c").toString()));
        assertEquals(0, compiled.status(), "compiling vm/irq-socket-check.c: " + compiled.output());
        // One guest for both modes: the doorbell domain's command line (ivcuda.irqd) turns the
        // interrupt scripts on; the vfio modules load in both (the plain one has no IOMMU to use).
        Result built = run(List.of("bash", repo.resolve("vm/build-guest.sh").toString(),
                "--modules", "vfio-pci vfio_iommu_type1",
                "--files", daemon + "=/usr/sbin/ivcuda-guest-irqd",
                "--files", socketCheck + "=/usr/bin/irq-socket-check",
                "--before", repo.resolve("vm/irqd-before.sh").toString(),
                "--after", repo.resolve("vm/irqd-after.sh").toString(),
                workDir.resolve("guest").toString(), guestLib.toString(), probe.toString()));
        assertEquals(0, built.status(), "vm/build-guest.sh: " + built.output());
    }

    private static String define(Mode mode) throws IOException {
        Path guest = workDir.resolve("guest");
        Path xml = workDir.resolve(NAME + ".xml");
        // Doorbell: a virtual IOMMU, so that vfio-pci may own the device in the guest (Debian's kernel
        // has no vfio no-IOMMU mode); interrupt remapping, or vfio_iommu_type1 refuses MSI-X, which
        // libvirt allows only with QEMU's own I/O APIC; q35, where QEMU's intel-iommu lives.
        boolean irq = mode == Mode.DOORBELL;
        Files.writeString(xml, "<domain type='qemu'><name>" + NAME + "</name>"
                + "<memory unit='MiB'>256</memory><vcpu>1</vcpu>"
                + "<metadata><ivcuda:gpu xmlns:ivcuda='" + GpuElement.NAMESPACE + "' size='64M' mode='" + mode.word() + "'/></metadata>"
                + "<os><type arch='x86_64' machine='" + (irq ? "q35" : "pc") + "'>hvm</type>"
                + "<kernel>" + guest.resolve("vmlinuz") + "</kernel><initrd>" + guest.resolve("initramfs.cpio.gz") + "</initrd>"
                + "<cmdline>console=ttyS0 panic=-1 quiet" + (irq ? " intel_iommu=on no_timer_check ivcuda.irqd" : "") + "</cmdline></os>"
                // without ACPI the guest's power-off only halts (and the vIOMMU is an ACPI table)
                + "<features><acpi/>" + (irq ? "<ioapic driver='qemu'/>" : "") + "</features>"
                + "<on_poweroff>destroy</on_poweroff><on_reboot>destroy</on_reboot><on_crash>destroy</on_crash>"
                + "<devices><emulator>/usr/bin/qemu-system-x86_64</emulator>"
                + "<serial type='file'><source path='" + CONSOLE + "'/><target port='0'/></serial>"
                + (irq ? "<iommu model='intel'><driver intremap='on'/></iommu>" : "")
                + "<memballoon model='none'/></devices></domain>");
        virsh("define", xml.toString());
        return virsh("domuuid", NAME).trim();
    }

    /** The console as text lines ending in \n (the serial line adds \r). */
    private static String console() {
        try {
            return Files.exists(CONSOLE) ? Files.readString(CONSOLE, StandardCharsets.ISO_8859_1).replace("\r", "") : "";
        } catch (IOException e) {
            return "";
        }
    }

    private static boolean running() {
        Result state = run(List.of("virsh", "-c", URI, "domstate", NAME));
        return state.status() == 0 && state.output().contains("running");
    }

    private static ShmemDevice device() {
        try {
            return DomainXml.parse(virsh("dumpxml", "--inactive", NAME)).currentShmem();
        } catch (Exception | AssertionError e) {
            return null;
        }
    }

    // ---- checks ------------------------------------------------------------------------------------

    private static void assertNothingLeft(InstancePaths paths) throws Exception {
        waitFor(() -> serverPids(paths).isEmpty(), WAIT_MS, "the server of " + paths.domainUuid() + " is gone");
        // A doorbell server stops by itself when QEMU leaves, which can be seconds before libvirt
        // runs the hook's release that removes the files: wait for that too.
        List<Path> files = List.of(paths.regionFile(), paths.doorbellSocket(), paths.instanceConfig(), paths.pidfile());
        waitFor(() -> files.stream().noneMatch(Files::exists), WAIT_MS,
                "the hook's release removes " + files);
    }

    // ---- host set-up -------------------------------------------------------------------------------

    private static void writeHostConfig() throws IOException {
        Path serverJar = repo.resolve("cuda-server/target/cuda-server.jar");
        assertTrue(Files.exists(serverJar), "the real cuda-server is needed: " + serverJar);
        if (Files.exists(HOST_CONFIG) && !Files.exists(HOST_CONFIG_BACKUP)) {
            Files.copy(HOST_CONFIG, HOST_CONFIG_BACKUP);
        }
        Files.createDirectories(HOST_CONFIG.getParent());
        Files.writeString(HOST_CONFIG, "# Written by VmIT; the previous file is restored afterwards.\n"
                + "server.user=root\nqemu.group=libvirt-qemu\nserver.launch=direct\n"
                // C1 and the serial collector: faster start-up
                + "server.command=" + javaCommand() + " -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -jar " + serverJar + "\n"
                + LifecycleIT.backendForThisHost()
                + "server.ready.timeout.ms=180000\ndefaults.size=64M\n"
                + "log.dir=" + workDir.resolve("log") + "\n");
        configWritten = true;
    }

    private static void removeTestDomain() throws IOException {
        run(List.of("virsh", "-c", URI, "destroy", NAME));
        run(List.of("virsh", "-c", URI, "undefine", NAME));
    }

    // ---- processes ---------------------------------------------------------------------------------

}
