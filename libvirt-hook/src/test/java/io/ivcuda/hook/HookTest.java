package io.ivcuda.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import io.ivcuda.common.RegionHeader;
import io.ivcuda.common.ServerProcesses;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Properties;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hook fed saved domain XML for every operation, with the server command pointed at the
 * {@link StandInCudaServer test stand-in} (a real process, started detached as in production).
 */
class HookTest {
    static final String TAGGED_UUID = "aeb37efd-0939-422a-87b3-abf8700977b4";
    private static final String[] ALL_OPERATIONS = {
        "prepare begin", "start begin", "started begin", "stopped end", "release end",
        "reconnect begin", "migrate begin", "restore begin"};

    @TempDir
    Path dir;
    private Path runtime;
    private Path shm;
    private final ByteArrayOutputStream userOutput = new ByteArrayOutputStream();
    private HostConfig host;
    private InstancePaths paths;

    static String domain(String name) throws IOException {
        try (InputStream in = HookTest.class.getResourceAsStream("/domains/" + name + ".xml")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    static String standInCommand() {
        String java = ProcessHandle.current().info().command().orElse("java");
        return java + " -Xmx32m -cp " + System.getProperty("java.class.path") + " " + StandInCudaServer.class.getName();
    }

    @BeforeEach
    void setUp() throws Exception {
        runtime = dir.resolve("run");
        shm = dir.resolve("shm");
        useConfig("");
    }

    private void useConfig(String extra) throws Exception {
        Path config = dir.resolve("ivcuda.properties");
        String group = Files.readAttributes(dir, java.nio.file.attribute.PosixFileAttributes.class).group().getName();
        Files.writeString(config, "runtime.dir=" + runtime + "\nshm.dir=" + shm + "\nlog.dir=" + dir.resolve("log")
                + "\nserver.user=" + System.getProperty("user.name") + "\nqemu.group=" + group
                + "\nserver.launch=direct\nserver.ready.timeout.ms=20000\nserver.stop.timeout.ms=5000"
                + "\nserver.command=" + standInCommand().replace("\\", "\\\\") + "\nbackend=host-memory\nregion.path=/elsewhere\n");
        // A second file overrides the first, as an admin's drop-in would.
        Path override = dir.resolve("override.properties");
        Files.writeString(override, extra);
        host = HostConfig.load(List.of(config, override));
        paths = InstancePaths.of(TAGGED_UUID, host);
    }

    @AfterEach
    void stopLeftovers() {
        new DirectLauncher(host).stop(paths);
    }

    private int hook(String operation, String xmlName) throws IOException {
        String[] words = operation.split(" ");
        String name = xmlName.startsWith("untagged") ? "plainvm" : "gpuvm";
        Hook hook = new Hook(host, new DirectLauncher(host), new PrintStream(userOutput, true, StandardCharsets.UTF_8));
        return hook.run(new String[] {name, words[0], words[1], "-"}, domain(xmlName));
    }

    private String told() {
        return userOutput.toString(StandardCharsets.UTF_8);
    }

    private boolean serverRunning() {
        return !ServerProcesses.find(paths.instanceConfig()).isEmpty();
    }

    @Test
    void untaggedDomainIsLeftAloneInEveryOperation() throws Exception {
        for (String operation : ALL_OPERATIONS) {
            assertEquals(0, hook(operation, "untagged"), operation);
        }
        assertFalse(Files.exists(runtime), "nothing created for an untagged domain");
        assertFalse(Files.exists(shm));
        assertEquals("", told());
    }

    /** The XML libvirt passed for this operation (captured from libvirt 9.0, see resources/domains/README.md). */
    private int hookCaptured(String operation) throws IOException {
        return hook(operation, "tagged-" + operation.replace(' ', '-'));
    }

    @Test
    void taggedDomainLifecycle() throws Exception {
        assertEquals(0, hookCaptured("prepare begin"), told());
        Path region = shm.resolve("ivcuda-" + TAGGED_UUID);
        assertEquals(4L << 20, Files.size(region));
        assertEquals("rw-rw----", PosixFilePermissions.toString(Files.getPosixFilePermissions(region)));
        assertTrue(io.ivcuda.common.RegionHeader.read(region).isReady(), "prepare returns only once the header says READY");
        assertTrue(serverRunning());

        Properties instance = new Properties();
        try (var reader = Files.newBufferedReader(paths.instanceConfig())) {
            instance.load(reader);
        }
        assertEquals(region.toString(), instance.getProperty("region.path"));
        assertEquals("host-memory", instance.getProperty("backend"), "server keys of the host file are handed on");
        assertEquals(null, instance.getProperty("server.user"), "lifecycle keys are not (the server would refuse them)");
        assertEquals(Long.toString(4L << 20), instance.getProperty("region.size"));
        assertEquals("plain", instance.getProperty("mode"));
        assertEquals("0", instance.getProperty("gpu"));
        assertEquals("0", instance.getProperty("memory.quota"));
        assertEquals(TAGGED_UUID, instance.getProperty("domain.uuid"));
        assertEquals("gpuvm", instance.getProperty("domain.name"));
        assertEquals(runtime.resolve(TAGGED_UUID + ".pid").toString(), instance.getProperty("pidfile"));
        assertEquals(runtime.resolve("ivcuda-" + TAGGED_UUID + ".sock").toString(), instance.getProperty("doorbell.socket"));
        assertEquals("32", instance.getProperty("doorbell.vectors"), "the <msi vectors> the provisioner writes");
        for (var key : io.ivcuda.common.config.ServerKeys.WRITTEN_BY_HOOK) {
            assertTrue(instance.containsKey(key.name()), "the hook writes every per-VM key: " + key);
        }
        for (String key : instance.stringPropertyNames()) {
            assertTrue(io.ivcuda.common.config.ServerKeys.ALL.knows(key), "a key the server knows: " + key);
        }
        // The server writes its pidfile after it is READY (docs/architecture.md): it may lag a little.
        // The server writes it in place (create, then write): wait for the whole line, not only the file.
        for (int i = 0; i < 250 && !(Files.exists(paths.pidfile()) && Files.readString(paths.pidfile()).endsWith("\n")); i++) {
            Thread.sleep(20);
        }
        long pid = Long.parseLong(Files.readString(paths.pidfile()).trim());
        assertEquals(List.of(pid), ServerProcesses.find(paths.instanceConfig()), "the pidfile names the server we find");

        for (String operation : new String[] {"start begin", "started begin", "reconnect begin"}) {
            assertEquals(0, hookCaptured(operation), operation);
        }
        assertTrue(serverRunning());
        assertEquals(0, hookCaptured("stopped end"));
        assertEquals(0, hookCaptured("release end"));
        assertFalse(serverRunning(), "release stops the server");
        assertFalse(Files.exists(region));
        assertFalse(Files.exists(paths.instanceConfig()));
        assertFalse(Files.exists(paths.pidfile()));
        assertFalse(Files.exists(paths.doorbellSocket()));
        try (Stream<Path> left = Files.list(runtime)) {
            assertEquals(List.of(), left.toList(), "nothing left in the runtime directory");
        }
        assertEquals("", told(), "a good start and stop says nothing to the user");
    }

    /**
     * A VM with a compute share: the hook starts the MPS control daemon (here a script standing in for
     * nvidia-cuda-mps-control) with the configured directories, and the server it launches has the MPS
     * client's environment — checked from the stand-in's own environment, which it prints at start.
     */
    @Test
    void aSharedVmsServerIsAnMpsClientWithItsShareAndQuota() throws Exception {
        Path control = dir.resolve("mps-control");
        Files.writeString(control, "#!/bin/sh\necho \"$* $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY\" >> "
                + dir.resolve("mps-calls") + "\n");
        Files.setPosixFilePermissions(control, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path pipe = dir.resolve("mps-pipe");
        Path logs = dir.resolve("mps-log");
        useConfig("defaults.share=25\ndefaults.quota=1G\nmps.control=" + control + "\nmps.pipe.dir=" + pipe
                + "\nmps.log.dir=" + logs + "\n");
        assertEquals(0, hookCaptured("prepare begin"), told());
        assertEquals(List.of("-d " + pipe + " " + logs), Files.readAllLines(dir.resolve("mps-calls")),
                "the control daemon is started with the configured directories");
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(pipe)));
        Properties instance = new Properties();
        try (var reader = Files.newBufferedReader(paths.instanceConfig())) {
            instance.load(reader);
        }
        assertEquals("25", instance.getProperty("compute.share"));
        String log = "";
        for (int i = 0; i < 250 && !log.contains("stand-in: READY"); i++) {
            Thread.sleep(20);
            log = Files.readString(paths.serverLog());
        }
        assertTrue(log.contains("stand-in: env CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25\n"), log);
        assertTrue(log.contains("stand-in: env CUDA_MPS_PIPE_DIRECTORY=" + pipe + "\n"), log);
        assertTrue(log.contains("stand-in: env CUDA_MPS_LOG_DIRECTORY=" + logs + "\n"), log);
        assertTrue(log.contains("stand-in: env CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2048M\n"), log);
        assertEquals(0, hookCaptured("release end"));
        assertFalse(Files.exists(paths.serverEnvironment()), "release removes the environment file");
    }

    @Test
    void aVmWithTheWholeGpuStaysOutOfMps() throws Exception {
        useConfig("mps.control=" + dir.resolve("no-such-mps-control") + "\n");
        assertEquals(0, hookCaptured("prepare begin"), told());
        assertEquals("100", instanceKey("compute.share"));
        String log = "";
        for (int i = 0; i < 250 && !log.contains("stand-in: READY"); i++) {
            Thread.sleep(20);
            log = Files.readString(paths.serverLog());
        }
        assertFalse(log.contains("CUDA_MPS_"), log);
        assertEquals(0, hookCaptured("release end"));
    }

    private String instanceKey(String key) throws IOException {
        Properties instance = new Properties();
        try (var reader = Files.newBufferedReader(paths.instanceConfig())) {
            instance.load(reader);
        }
        return instance.getProperty(key);
    }

    @Test
    void releaseStopsTheServerEvenIfTheElementLeftTheLiveXml() throws Exception {
        assertEquals(0, hookCaptured("prepare begin"), told());
        assertTrue(serverRunning());
        String untaggedNow = domain("tagged-release-end").replaceAll("(?s)<metadata>.*</metadata>", "");
        Hook hook = new Hook(host, new DirectLauncher(host), new PrintStream(userOutput, true, StandardCharsets.UTF_8));
        assertEquals(0, hook.run(new String[] {"gpuvm", "release", "end", "-"}, untaggedNow));
        assertFalse(serverRunning());
        assertFalse(Files.exists(paths.instanceConfig()));
        assertFalse(Files.exists(shm.resolve("ivcuda-" + TAGGED_UUID)));
    }

    @Test
    void missingDeviceIsRefusedWithAClearMessage() throws Exception {
        assertEquals(1, hook("prepare begin", "tagged-without-shmem"));
        assertEquals("ivcuda: domain 'gpuvm' has no ivcuda device: run ivshmem-provisioner provision gpuvm", firstLine(), told());
        assertTrue(told().contains("would start without its GPU") && told().contains("ivcuda-provisioner"), told());
        assertFalse(Files.exists(shm.resolve("ivcuda-" + TAGGED_UUID)));
        assertFalse(serverRunning());
    }

    @Test
    void badElementIsRefusedNamingTheAttribute() throws Exception {
        assertEquals(1, hook("prepare begin", "tagged-bad-attribute"));
        assertTrue(told().contains("domain 'gpuvm'") && told().contains("colour='blue'"), told());
        assertFalse(serverRunning());
    }

    @Test
    void serverThatDiesBeforeReadyFailsTheStartWithItsLog() throws Exception {
        useConfig("standin.behaviour=exit\n");
        assertEquals(1, hook("prepare begin", "tagged"));
        assertTrue(firstLine().startsWith("ivcuda: the cuda-server exited with status 1 before it was ready"), told());
        assertTrue(told().contains("failing on purpose"), "the log tail is shown: " + told());
        assertFalse(Files.exists(shm.resolve("ivcuda-" + TAGGED_UUID)), "cleaned up");
        assertFalse(Files.exists(paths.instanceConfig()), "cleaned up");
    }

    @Test
    void aStartErrorShowsOnlyTheLogOfThisStart() throws Exception {
        useConfig("standin.behaviour=exit\n");
        assertEquals(1, hook("prepare begin", "tagged"));
        userOutput.reset();
        assertEquals(1, hook("prepare begin", "tagged"));
        assertEquals(1, told().split("failing on purpose", -1).length - 1, "earlier starts' lines are not repeated: " + told());
        assertEquals(2, Files.readString(paths.serverLog()).split("failing on purpose", -1).length - 1, "the log keeps both");
    }

    @Test
    void aHostWithoutUsableGpuRefusesTheStartWithTheServersReason() throws Exception {
        useConfig("standin.behaviour=nogpu\n");
        assertEquals(1, hook("prepare begin", "tagged"));
        assertEquals("ivcuda: no usable GPU (gpu 0): cuInit failed: CUDA_ERROR_NO_DEVICE (the driver finds no GPU)", firstLine(), told());
        assertTrue(told().contains("domain 'gpuvm': the cuda-server exited with status 3 before it was ready"), told());
        assertFalse(Files.exists(shm.resolve("ivcuda-" + TAGGED_UUID)), "cleaned up");
    }

    @Test
    void aRegionLargerThanWhatShmDirHasFreeIsRefused() throws Exception {
        // a tmpfs, as shm.dir is in production: twice its free space is still a valid size there
        Path devShm = Files.createTempDirectory(Path.of("/dev/shm"), "ivcuda-hooktest-");
        try {
            long size = Long.highestOneBit(Files.getFileStore(devShm).getUsableSpace()) << 1;
            org.junit.jupiter.api.Assumptions.assumeTrue(size <= io.ivcuda.common.ByteSize.MAX_REGION_SIZE, "a tmpfs of at most 32 GiB");
            useConfig("shm.dir=" + devShm + "\n");
            String huge = domain("tagged").replace("size=\"4M\"", "size=\"" + (size >> 20) + "M\"")
                    .replace("<size unit='M'>4</size>", "<size unit='M'>" + (size >> 20) + "</size>");
            Hook hook = new Hook(host, new DirectLauncher(host), new PrintStream(userOutput, true, StandardCharsets.UTF_8));
            assertEquals(1, hook.run(new String[] {"gpuvm", "prepare", "begin", "-"}, huge));
            assertTrue(firstLine().startsWith("ivcuda: region size ") && firstLine().contains("does not fit in " + devShm), told());
            assertFalse(serverRunning());
            assertFalse(Files.exists(devShm.resolve("ivcuda-" + TAGGED_UUID)));
        } finally {
            Files.deleteIfExists(devShm);
        }
    }

    @Test
    void theRuntimeDirectoryIsMode0750() throws Exception {
        assertEquals(0, hookCaptured("prepare begin"), told());
        assertEquals("rwxr-x---", PosixFilePermissions.toString(Files.getPosixFilePermissions(runtime)));
        assertEquals(0, hookCaptured("release end"), told());
    }

    @Test
    void stopAllStopsEveryServerAndSaysWhichDomainItServed() throws Exception {
        assertEquals(0, hookCaptured("prepare begin"), told());
        Path region = shm.resolve("ivcuda-" + TAGGED_UUID);
        ByteArrayOutputStream said = new ByteArrayOutputStream();
        Hook hook = new Hook(host, new DirectLauncher(host), new PrintStream(userOutput, true, StandardCharsets.UTF_8));
        assertEquals(0, hook.stopAll(new PrintStream(said, true, StandardCharsets.UTF_8)));
        assertTrue(said.toString(StandardCharsets.UTF_8).startsWith("ivcuda: stopped the cuda-server of domain 'gpuvm':"),
                said.toString(StandardCharsets.UTF_8));
        assertFalse(serverRunning());
        assertFalse(Files.exists(region));
        try (Stream<Path> left = Files.list(runtime)) {
            assertEquals(List.of(), left.toList(), "nothing left in the runtime directory");
        }
    }

    /** Package removal: a back-end slot relay (started by the hook directly, whatever server.launch says) goes too. */
    @Test
    void stopAllStopsTheBackEndsSlotRelays() throws Exception {
        Files.createDirectories(runtime);
        Path socket = runtime.resolve("relay-7e57b0c5-1111-4222-8333-944455556666-slot0.sock");
        Path pidfile = runtime.resolve("relay-7e57b0c5-1111-4222-8333-944455556666-slot0.pid");
        // a stand-in with the relay's arguments on its command line (sh's $0 and $1), blocked in a builtin:
        // a forked child would carry the same command line until its exec, and the scan could find it too
        Process relay = new ProcessBuilder("sh", "-c", "read -r line", "relay", socket.toString()).start();
        Files.writeString(socket, "");
        Files.writeString(pidfile, relay.pid() + "\n");
        try {
            ByteArrayOutputStream said = new ByteArrayOutputStream();
            Hook hook = new Hook(host, new DirectLauncher(host), new PrintStream(userOutput, true, StandardCharsets.UTF_8));
            assertEquals(0, hook.stopAll(new PrintStream(said, true, StandardCharsets.UTF_8)));
            assertTrue(relay.waitFor(10, java.util.concurrent.TimeUnit.SECONDS), "the relay still runs");
            assertTrue(said.toString(StandardCharsets.UTF_8).contains("stopped the back-ends' slot relays: [" + relay.pid() + "]"),
                    said.toString(StandardCharsets.UTF_8));
            assertFalse(Files.exists(socket));
            assertFalse(Files.exists(pidfile));
        } finally {
            relay.destroyForcibly();
        }
    }

    /**
     * A stand-in for nvidia-cuda-mps-control: {@code -d} leaves a daemon (a loop) whose pid is in the pipe
     * directory, as NVIDIA's writes it; without {@code -d} it passes its stdin's first line on, as the real
     * client does, and the daemon ends on {@code quit} unless {@code ignoresQuit}.
     */
    private Path standInMpsControl(boolean ignoresQuit) throws Exception {
        Path control = dir.resolve("mps-control");
        Files.writeString(control, "#!/bin/sh\np=\"$CUDA_MPS_PIPE_DIRECTORY\"\n"
                + "if [ \"$1\" = -d ]; then\n"
                // one that ignores quit blocks in sh's read builtin on a FIFO nobody writes: a loop forking sleep
                // leaves children named like the daemon until their exec, and the hook's scan could find two
                + (ignoresQuit ? "  mkfifo \"$p/stand-in-never\"\n  ( read -r line < \"$p/stand-in-never\" ) "
                        : "  ( while [ ! -e \"$p/quit\" ]; do sleep 0.05; done; rm -f \"$p/nvidia-cuda-mps-control.pid\" ) ")
                + "</dev/null >/dev/null 2>&1 &\n"
                + "  echo $! > \"$p/nvidia-cuda-mps-control.pid\"\n  exit 0\nfi\n"
                + "read command\necho \"$command\" >> " + dir.resolve("mps-commands") + "\n"
                + (ignoresQuit ? "" : "[ \"$command\" = quit ] && touch \"$p/quit\"\n") + "exit 0\n");
        Files.setPosixFilePermissions(control, PosixFilePermissions.fromString("rwxr-xr-x"));
        useConfig("defaults.share=25\nmps.control=" + control + "\nmps.pipe.dir=" + dir.resolve("mps-pipe")
                + "\nmps.log.dir=" + dir.resolve("mps-log") + "\n");
        return control;
    }

    private long mpsDaemonPid() throws IOException {
        return Long.parseLong(Files.readString(dir.resolve("mps-pipe").resolve(MpsDaemonPid.FILE)).trim());
    }

    /** Package removal without systemd: the daemon the direct launcher started gets NVIDIA's 'quit', and says so. */
    @Test
    void stopAllQuitsTheMpsDaemonTheLauncherStarted() throws Exception {
        standInMpsControl(false);
        assertEquals(0, hookCaptured("prepare begin"), told());
        long daemon = mpsDaemonPid();
        assertTrue(ProcessHandle.of(daemon).map(ProcessHandle::isAlive).orElse(false));
        ByteArrayOutputStream said = new ByteArrayOutputStream();
        Hook hook = new Hook(host, new DirectLauncher(host), new PrintStream(userOutput, true, StandardCharsets.UTF_8));
        assertEquals(0, hook.stopAll(new PrintStream(said, true, StandardCharsets.UTF_8)));
        String text = said.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("ivcuda: stopped the MPS control daemon (pipe directory " + dir.resolve("mps-pipe")
                + ") with 'quit'\n"), text);
        assertEquals(List.of("quit"), Files.readAllLines(dir.resolve("mps-commands")));
        assertFalse(ProcessHandle.of(daemon).map(ProcessHandle::isAlive).orElse(false), "the daemon is gone");
        assertTrue(text.contains("ivcuda: removed the MPS pipe directory " + dir.resolve("mps-pipe") + "\n"), text);
        assertFalse(Files.exists(dir.resolve("mps-pipe")));
        try (Stream<Path> left = Files.list(runtime)) {
            assertEquals(List.of(), left.toList(), "nothing left in the runtime directory");
        }
    }

    /** A daemon that ignores 'quit' is sent SIGTERM, and only the processes of our pipe directory are. */
    @Test
    void stopAllTerminatesAnMpsDaemonThatIgnoresQuit() throws Exception {
        standInMpsControl(true);
        assertEquals(0, hookCaptured("prepare begin"), told());
        long daemon = mpsDaemonPid();
        ByteArrayOutputStream said = new ByteArrayOutputStream();
        Hook hook = new Hook(host, new DirectLauncher(host), new PrintStream(userOutput, true, StandardCharsets.UTF_8));
        assertEquals(0, hook.stopAll(new PrintStream(said, true, StandardCharsets.UTF_8)));
        String text = said.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("did not stop on 'quit': SIGTERM to [" + daemon + "]"), text);
        assertFalse(ProcessHandle.of(daemon).map(ProcessHandle::isAlive).orElse(false), "the daemon is gone");
    }

    /** A daemon the hook did not start (it ran already: the admin's) is left alone by package removal. */
    @Test
    void stopAllLeavesAnMpsDaemonItDidNotStart() throws Exception {
        Path control = standInMpsControl(false);
        Files.createDirectories(dir.resolve("mps-pipe"));
        ProcessBuilder admin = new ProcessBuilder(control.toString(), "-d").redirectInput(new java.io.File("/dev/null"))
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectErrorStream(true);
        admin.environment().put("CUDA_MPS_PIPE_DIRECTORY", dir.resolve("mps-pipe").toString());
        assertEquals(0, admin.start().waitFor());
        long daemon = mpsDaemonPid();
        try {
            assertEquals(0, hookCaptured("prepare begin"), told());
            ByteArrayOutputStream said = new ByteArrayOutputStream();
            Hook hook = new Hook(host, new DirectLauncher(host), new PrintStream(userOutput, true, StandardCharsets.UTF_8));
            assertEquals(0, hook.stopAll(new PrintStream(said, true, StandardCharsets.UTF_8)));
            assertFalse(said.toString(StandardCharsets.UTF_8).contains("MPS"), said.toString(StandardCharsets.UTF_8));
            assertTrue(ProcessHandle.of(daemon).map(ProcessHandle::isAlive).orElse(false), "the admin's daemon runs on");
        } finally {
            ProcessHandle.of(daemon).ifPresent(ProcessHandle::destroyForcibly);
        }
    }

    @Test
    void serverThatNeverGetsReadyTimesOutAndIsStopped() throws Exception {
        useConfig("standin.behaviour=hang\nserver.ready.timeout.ms=1500\n");
        assertEquals(1, hook("prepare begin", "tagged"));
        assertTrue(told().contains("not ready within 1500 ms (server.ready.timeout.ms)"), told());
        assertTrue(told().contains("behaviour hang"), "the log tail is shown: " + told());
        assertFalse(serverRunning(), "the hung server was stopped");
        assertFalse(Files.exists(shm.resolve("ivcuda-" + TAGGED_UUID)));
    }

    @Test
    void doorbellModeWaitsForTheServersSocket() throws Exception {
        // The stand-in never listens on a socket: a doorbell start must fail clearly instead of leaving it to QEMU.
        useConfig("server.ready.timeout.ms=1500\n");
        String doorbell = domain("tagged")
                .replace("size=\"4M\"", "mode=\"doorbell\"")
                .replaceAll("(?s)<model type='ivshmem-plain'/>\\s*<size unit='M'>4</size>",
                        "<model type='ivshmem-doorbell'/><server path='" + paths.doorbellSocket() + "'/><msi vectors='32' ioeventfd='on'/>");
        Hook hook = new Hook(host, new DirectLauncher(host), new PrintStream(userOutput, true, StandardCharsets.UTF_8));
        assertEquals(1, hook.run(new String[] {"gpuvm", "prepare", "begin", "-"}, doorbell), told());
        assertTrue(told().contains("did not create its doorbell socket " + paths.doorbellSocket()), told());
        assertFalse(serverRunning());
        assertFalse(Files.exists(shm.resolve("ivcuda-" + TAGGED_UUID)));
    }

    @Test
    void reconnectRestartsADeadPlainModeServerOnTheSameRegion() throws Exception {
        assertEquals(0, hookCaptured("prepare begin"), told());
        Path region = shm.resolve("ivcuda-" + TAGGED_UUID);
        ServerProcesses.terminate(ServerProcesses.find(paths.instanceConfig()), 10_000);
        assertFalse(serverRunning(), "the server died under a running VM");
        assertEquals(0, hookCaptured("reconnect begin"), told());
        assertTrue(serverRunning(), "reconnect started it again: " + told());
        assertEquals(2, RegionHeader.read(region).epoch(), "reconnect returned once the new server was READY, not on the dead one's header");
        assertTrue(Files.exists(region), "on the region QEMU still maps");
        assertFalse(told().contains("not running"), told());
        assertEquals(0, hookCaptured("release end"), told());
        assertFalse(serverRunning());
    }

    @Test
    void reconnectAlwaysSucceedsButSaysWhenTheServerIsGone() throws Exception {
        assertEquals(0, hook("reconnect begin", "tagged"));
        assertTrue(told().contains("cuda-server is not running"), told());
    }

    @Test
    void migrateAndRestoreOfTaggedDomainsAreRefused() throws Exception {
        assertEquals(1, hook("migrate begin", "tagged"));
        assertEquals("ivcuda: migrating a domain with ivcuda GPU sharing is not supported", firstLine(), told());
        assertTrue(told().contains("GPU state"), told());
        userOutput.reset();
        assertEquals(1, hook("restore begin", "tagged"));
        assertEquals("ivcuda: a saved domain with ivcuda GPU sharing cannot be restored", firstLine(), told());
        assertEquals(0, hook("migrate begin", "untagged"));
        assertEquals(0, hook("restore begin", "untagged"));
    }

    private String firstLine() {
        return told().lines().findFirst().orElse("");
    }

    /** The hook as HookMain makes it, but with libvirt's XML directories in the test's own directory. */
    private int hookXml(String operation, String xml) {
        String[] words = operation.split(" ");
        Hook hook = new Hook(host, new DirectLauncher(host), new PrintStream(userOutput, true, StandardCharsets.UTF_8),
                new DomainNames(runtime, List.of(dir.resolve("etc-libvirt-qemu"), dir.resolve("run-libvirt-qemu"))));
        return hook.run(new String[] {"gpuvm", words[0], words[1], "-"}, xml);
    }

    private static final String ORIGINAL_UUID = "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5";

    /** A clone's XML as virt-clone leaves it: its own device and the original's (here: plain and doorbell). */
    private static String withForeignDevice(String xml, String model) {
        String foreign = "<shmem name='ivcuda-" + ORIGINAL_UUID + "'>"
                + (model.equals("ivshmem-plain") ? "<model type='ivshmem-plain'/><size unit='M'>4</size>"
                        : "<model type='ivshmem-doorbell'/><server path='/run/ivcuda/ivcuda-" + ORIGINAL_UUID + ".sock'/>"
                                + "<msi vectors='32' ioeventfd='on'/>")
                + "</shmem>";
        return xml.replace("</devices>", foreign + "</devices>");
    }

    private void assertNothingCreated() throws IOException {
        assertFalse(serverRunning(), "no server started");
        if (Files.exists(shm)) {
            try (Stream<Path> files = Files.list(shm)) {
                assertEquals(List.of(), files.toList(), "no region file, neither the domain's own nor the other's");
            }
        }
        assertFalse(Files.exists(paths.instanceConfig()));
    }

    @Test
    void foreignDeviceIsRefusedNamingBothDomainsFromLibvirtsFiles() throws Exception {
        Path etc = Files.createDirectories(dir.resolve("etc-libvirt-qemu"));
        Files.writeString(etc.resolve("unrelated.xml"), "<domain><name>unrelated</name><uuid>11111111-0000-4000-8000-000000000000</uuid></domain>");
        Files.writeString(etc.resolve("original.xml"), "<!-- WARNING: THIS IS AN AUTO-GENERATED FILE. -->\n<domain type='qemu'>\n"
                + "  <name>original</name>\n  <uuid>" + ORIGINAL_UUID + "</uuid>\n</domain>\n");
        for (String model : new String[] {"ivshmem-plain", "ivshmem-doorbell"}) {
            userOutput.reset();
            assertEquals(1, hookXml("prepare begin", withForeignDevice(domain("tagged"), model)), told());
            assertEquals("ivcuda: domain 'gpuvm' carries the ivcuda device of domain 'original'", firstLine(), told());
            assertTrue(told().contains("ivcuda-" + ORIGINAL_UUID) && told().contains("ivshmem-provisioner provision gpuvm"), told());
            assertNothingCreated();
        }
        // Untagged (the element removed, the copy left): the launcher hands it on, and it is refused all the same.
        userOutput.reset();
        String untagged = withForeignDevice(domain("untagged"), "ivshmem-plain");
        assertEquals(1, hookXml("prepare begin", untagged), told());
        assertTrue(firstLine().contains("of domain 'original'"), told());
        for (String operation : new String[] {"migrate begin", "restore begin"}) {
            assertEquals(1, hookXml(operation, untagged), operation);
        }
        assertNothingCreated();
    }

    @Test
    void foreignDeviceOfARunningDomainIsNamedFromItsInstanceConfiguration() throws Exception {
        Files.createDirectories(runtime);
        Files.writeString(runtime.resolve(ORIGINAL_UUID + ".properties"), "domain.uuid=" + ORIGINAL_UUID + "\ndomain.name=running-one\n");
        assertEquals(1, hookXml("prepare begin", withForeignDevice(domain("tagged"), "ivshmem-plain")), told());
        assertEquals("ivcuda: domain 'gpuvm' carries the ivcuda device of domain 'running-one'", firstLine(), told());
        assertFalse(Files.exists(shm.resolve("ivcuda-" + ORIGINAL_UUID)), "the other domain's region is not created");
        assertFalse(serverRunning());
    }

    @Test
    void foreignDeviceOfAnUnknownDomainIsNamedByItsUuid() throws Exception {
        assertEquals(1, hookXml("prepare begin", withForeignDevice(domain("tagged"), "ivshmem-plain")), told());
        assertEquals("ivcuda: domain 'gpuvm' carries the ivcuda device of a domain with UUID " + ORIGINAL_UUID, firstLine(), told());
        assertNothingCreated();
    }

    @Test
    void reconnectWithAForeignDeviceSucceedsAndSaysSo() throws Exception {
        assertEquals(0, hookXml("reconnect begin", withForeignDevice(domain("tagged-reconnect-begin"), "ivshmem-plain")));
        assertTrue(told().contains("runs with <shmem name='ivcuda-" + ORIGINAL_UUID + "'>"), told());
    }

    @Test
    void ownDeviceWithoutTheElementIsRefused() throws Exception {
        String untaggedWithDevice = domain("tagged").replaceAll("(?s)<metadata>.*</metadata>", "");
        assertEquals(1, hookXml("prepare begin", untaggedWithDevice), told());
        assertEquals("ivcuda: ivcuda device ivcuda-" + TAGGED_UUID + " without the <ivcuda:gpu> element", firstLine(), told());
        assertNothingCreated();
    }

    @Test
    void firstLineIsTheCauseInAFewWords() throws Exception {
        String[][] cases = {
            {"size=\"300M\"", "ivcuda: region size 300M is not a power of two (e.g. 256M)"},
            {"size=\"512K\"", "ivcuda: region size 512K is less than 1 MiB (e.g. 256M)"},
            {"mode=\"fast\"", "ivcuda: unknown mode 'fast' (use plain or doorbell)"},
            {"device=\"3\"", "ivcuda: no GPU 3 on this host (this host configures 1 GPU)"},
            {"quota=\"lots\"", "ivcuda: quota 'lots': not a byte count (examples: 268435456, 256M, 4G)"},
        };
        for (String[] c : cases) {
            userOutput.reset();
            assertEquals(1, hookXml("prepare begin", domain("tagged").replace("size=\"4M\"", c[0])), c[0]);
            assertEquals(c[1], firstLine(), told());
            assertTrue(told().lines().skip(1).anyMatch(l -> l.contains("domain 'gpuvm'") && l.contains(c[0].replace('"', '\''))),
                    "the details name domain and attribute: " + told());
        }
        assertNothingCreated();
    }

    @Test
    void missingDeviceShowsTheProvisionersReasonFirst() throws Exception {
        String refused = domain("tagged-without-shmem").replace("</uuid>", "</uuid><description>my notes\n"
                + "[ivcuda] error: GPU memory quota 6 GiB does not fit on GPU 0: capacity 8 GiB, 4 GiB already given to "
                + "other domains</description>");
        assertEquals(1, hookXml("prepare begin", refused), told());
        assertEquals("ivcuda: GPU memory quota 6 GiB does not fit on GPU 0: capacity 8 GiB, 4 GiB already given to other domains",
                firstLine(), told());
        assertNothingCreated();
    }

    @Test
    void unreadableHostConfigurationIsNamed() {
        var e = org.junit.jupiter.api.Assertions.assertThrows(io.ivcuda.common.IvcudaConfigException.class,
                () -> HostConfig.load(List.of(dir.resolve("absent.properties"))));
        assertTrue(e.getMessage().contains("absent.properties"), e.getMessage());
    }
}
