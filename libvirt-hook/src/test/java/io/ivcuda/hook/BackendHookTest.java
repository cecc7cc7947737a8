package io.ivcuda.hook;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.BackendPaths;
import io.ivcuda.common.ControlRegion;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.SlotLedger;
import io.ivcuda.common.SlotRegion;
import io.ivcuda.wire.BackendControlFlyweight;
import io.ivcuda.wire.BackendSlotFlyweight;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hook for back-end and front-end domains (issue 16), without libvirtd: the domain XML as libvirt passes it,
 * the slot ledger as the provisioner writes it, and a thread standing in for the back-end's agent.
 */
class BackendHookTest {
    private static final String BE = "b0000000-0000-0000-0000-000000000001";
    private static final String FE = "f0000000-0000-0000-0000-000000000001";
    private static final String OTHER = "f0000000-0000-0000-0000-000000000002";
    private static final long SLOT = 2L << 20;

    @TempDir
    Path dir;
    private HostConfig host;
    private BackendPaths paths;
    private final ByteArrayOutputStream userOutput = new ByteArrayOutputStream();

    @BeforeEach
    void setUp() throws Exception {
        Path config = dir.resolve("ivcuda.properties");
        String group = Files.readAttributes(dir, java.nio.file.attribute.PosixFileAttributes.class).group().getName();
        Files.writeString(config, "runtime.dir=" + dir.resolve("run") + "\nshm.dir=" + dir.resolve("shm") + "\nlog.dir="
                + dir.resolve("log") + "\nstate.dir=" + dir.resolve("state") + "\nserver.user=" + System.getProperty("user.name")
                + "\nqemu.group=" + group + "\nserver.launch=direct\n");
        host = HostConfig.load(List.of(config));
        paths = BackendPaths.of(BE, host);
        Files.createDirectories(dir.resolve("shm"));
        Files.createDirectories(dir.resolve("libvirt"));
        Files.writeString(dir.resolve("libvirt/gpu-be.xml"), backendXml());
    }

    private static String shmem(String name, long size) {
        return "<shmem name='" + name + "'><model type='ivshmem-plain'/><size unit='M'>" + (size >> 20) + "</size></shmem>";
    }

    private static String domain(String name, String uuid, String attributes, String devices) {
        return "<domain type='kvm'><name>" + name + "</name><uuid>" + uuid + "</uuid><metadata><ivcuda:gpu xmlns:ivcuda=\""
                + GpuElement.NAMESPACE + "\" " + attributes + "/></metadata><devices>" + devices + "</devices></domain>";
    }

    private static String backendXml() {
        return domain("gpu-be", BE, "role=\"backend\" slots=\"2\" size=\"2M\" device=\"1\"", shmem(BackendPaths.controlShmemName(BE), 1L << 20)
                + shmem(BackendPaths.slotShmemName(BE, 0), SLOT) + shmem(BackendPaths.slotShmemName(BE, 1), SLOT));
    }

    private static String frontendXml(String name, String uuid, int slot) {
        return domain(name, uuid, "backend=\"gpu-be\" quota=\"1G\" share=\"50\"", shmem(BackendPaths.slotShmemName(BE, slot), SLOT));
    }

    private int hook(String operation, String name, String xml, long agentWaitMs) {
        String[] words = operation.split(" ");
        // where libvirt keeps persistent definitions: how the hook names a back-end that is not running
        DomainNames names = new DomainNames(host.runtimeDir(), List.of(dir.resolve("libvirt")));
        Hook hook = new Hook(host, new DirectLauncher(host), new PrintStream(userOutput, true, StandardCharsets.UTF_8), names,
                new BackendHook(host, names, System::currentTimeMillis, Thread::sleep, agentWaitMs, new SlotRelays(host)));
        return hook.run(new String[] {name, words[0], words[1], "-"}, xml);
    }

    private int hook(String operation, String name, String xml) {
        return hook(operation, name, xml, BackendHook.AGENT_WAIT_MS);
    }

    private String told() {
        return userOutput.toString(StandardCharsets.UTF_8);
    }

    private void assign(String uuid, String name, int slot) throws Exception {
        SlotLedger.of(host).update(a -> a.add(new SlotLedger.Assignment(BE, slot, uuid, name)));
    }

    private void startBackend() {
        assertEquals(0, hook("prepare begin", "gpu-be", backendXml()), told());
        assertEquals(0, hook("started begin", "gpu-be", backendXml()), told());
    }

    @Test
    void backendPrepareMakesItsRegionsWithTokensAndStartedMarksItRunning() throws Exception {
        assertEquals(0, hook("prepare begin", "gpu-be", backendXml()), told());
        assertEquals(1L << 20, Files.size(paths.controlFile()));
        assertEquals(SLOT, Files.size(paths.slotFile(1)));
        assertFalse(Files.exists(paths.runningMarker()), "running only once QEMU has started");
        try (ControlRegion control = ControlRegion.open(paths.controlFile())) {
            BackendControlFlyweight h = control.header();
            assertEquals(BackendControlFlyweight.BACKEND_MAGIC, h.magic());
            assertEquals(2, h.slotCount());
            assertEquals(BE, h.backendUuid());
            for (int k = 0; k < 2; k++) {
                BackendSlotFlyweight s = control.slot(k);
                assertArrayEquals(new long[] {s.tokenLo(), s.tokenHi(), k}, SlotRegion.readIdentity(paths.slotFile(k)),
                        "slot " + k + "'s region carries the control region's token");
                assertEquals("1", s.device());
            }
            assertTrue(control.slot(0).tokenLo() != control.slot(1).tokenLo(), "a token per slot");
        }
        assertEquals(0, hook("started begin", "gpu-be", backendXml()));
        assertEquals("gpu-be", Files.readString(paths.runningMarker()).strip());
        assertEquals(0, hook("release end", "gpu-be", backendXml()));
        assertFalse(Files.exists(paths.runningMarker()));
        assertTrue(Files.exists(paths.controlFile()), "the files stay: front-ends may still map their slots");
        assertEquals("", told());
    }

    @Test
    void backendPrepareRefusesARegionFileOfTheWrongSize() throws Exception {
        Files.writeString(paths.controlFile(), "short");
        assertEquals(1, hook("prepare begin", "gpu-be", backendXml()));
        assertTrue(told().startsWith("ivcuda: the region file " + paths.controlFile() + " is 5 bytes, not 1048576\n"), told());
    }

    @Test
    void frontendRefusedWhileItsBackendIsNotRunning() throws Exception {
        assign(FE, "front", 0);
        assertEquals(0, hook("prepare begin", "gpu-be", backendXml()));
        assertEquals(1, hook("prepare begin", "front", frontendXml("front", FE, 0)));
        assertTrue(told().startsWith("ivcuda: back-end domain 'gpu-be' is not running; start it first\n"), told());
    }

    @Test
    void frontendWithoutASlotInTheLedgerIsRefused() throws Exception {
        startBackend();
        assertEquals(1, hook("prepare begin", "front", frontendXml("front", FE, 0)));
        assertTrue(told().startsWith("ivcuda: domain 'front' carries the ivcuda device of slot 0 of back-end"), told());
    }

    @Test
    void aCloneCarryingAnotherFrontendsSlotIsRefusedNamingBoth() throws Exception {
        startBackend();
        assign(FE, "original", 0);
        assign(OTHER, "clone", 1);
        assertEquals(1, hook("prepare begin", "clone", frontendXml("clone", OTHER, 0)));
        assertTrue(told().startsWith("ivcuda: domain 'clone' carries the ivcuda device of slot 0 of back-end"), told());
        assertTrue(told().contains("held by domain 'original'"), told());
    }

    @Test
    void frontendWaitsForTheAgentThenWipesAndAssignsItsSlot() throws Exception {
        startBackend();
        assign(FE, "front", 1);
        // The last front-end's data and a server the agent still runs for the slot.
        try (RandomAccessFile f = new RandomAccessFile(paths.slotFile(1).toFile(), "rw")) {
            f.seek(SLOT - 1);
            f.write(0x77);
        }
        AtomicBoolean dataStillThereWhenFreed = new AtomicBoolean();
        AtomicReference<String> agentSaw = new AtomicReference<>("nothing");
        AtomicBoolean stop = new AtomicBoolean();
        Thread agent;
        try (ControlRegion control = ControlRegion.open(paths.controlFile())) {
            control.slot(1).servedGenerationVolatile(7);
            control.header().agentHeartbeatVolatile(1);
            agent = new Thread(() -> {
                long seenFreeAt = -1;
                while (!stop.get()) {
                    control.header().agentHeartbeatVolatile(control.header().agentHeartbeatVolatile() + 1);
                    BackendSlotFlyweight s = control.slot(1);
                    if (s.stateVolatile() == BackendSlotFlyweight.SLOT_FREE && s.servedGenerationVolatile() != 0) {
                        if (seenFreeAt < 0) {
                            seenFreeAt = System.nanoTime();
                        } else if (System.nanoTime() - seenFreeAt > 300_000_000L) {
                            // stopping its server takes a while; the region must not be wiped before it is stopped
                            try (RandomAccessFile f = new RandomAccessFile(paths.slotFile(1).toFile(), "r")) {
                                f.seek(SLOT - 1);
                                dataStillThereWhenFreed.set(f.read() == 0x77);
                            } catch (java.io.IOException e) {
                                agentSaw.set(e.toString());
                            }
                            s.servedGenerationRelease(0);
                            agentSaw.set("freed");
                        }
                    }
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            agent.start();
            try {
                assertEquals(0, hook("prepare begin", "front", frontendXml("front", FE, 1)), told());
            } finally {
                stop.set(true);
                agent.join();
            }
            assertEquals("freed", agentSaw.get());
            assertTrue(dataStillThereWhenFreed.get(), "the hook waited for the agent before wiping the region");
            BackendSlotFlyweight s = control.slot(1);
            assertEquals(BackendSlotFlyweight.SLOT_ASSIGNED, s.state());
            assertEquals(2, s.generation(), "free, then assign");
            assertEquals(FE, s.frontendUuid());
            assertEquals("front", s.frontendName());
            assertEquals(1L << 30, s.quotaBytes());
            assertEquals(50, s.computeShare());
            assertEquals("1", s.device(), "the back-end's GPU, from the back-end's element");
            assertEquals(SLOT, s.regionSize());
            try (RandomAccessFile f = new RandomAccessFile(paths.slotFile(1).toFile(), "r")) {
                f.seek(SLOT - 1);
                assertEquals(0, f.read(), "the last front-end's data is gone");
            }
            assertArrayEquals(new long[] {s.tokenLo(), s.tokenHi(), 1}, SlotRegion.readIdentity(paths.slotFile(1)),
                    "the token is back after the wipe");

            assertEquals(0, hook("release end", "front", frontendXml("front", FE, 1)));
            assertEquals(BackendSlotFlyweight.SLOT_FREE, s.state());
            assertEquals(3, s.generation());
        }
        assertFalse(Files.exists(host.runtimeDir().resolve(FE + ".properties")), "no host cuda-server for a front-end");
    }

    @Test
    void anAgentThatNeverLetsGoIsRefusedWithinTheBound() throws Exception {
        startBackend();
        assign(FE, "front", 0);
        AtomicBoolean stop = new AtomicBoolean();
        try (ControlRegion control = ControlRegion.open(paths.controlFile())) {
            control.slot(0).servedGenerationVolatile(3);
            // alive before the hook looks: a heartbeat of 0 reads as "no agent", which the hook does
            // not wait for (the thread's first beat came after the hook's look once, on a loaded machine)
            control.header().agentHeartbeatVolatile(1);
            Thread agent = new Thread(() -> {
                while (!stop.get()) {
                    control.header().agentHeartbeatVolatile(control.header().agentHeartbeatVolatile() + 1);
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            agent.start();
            long start = System.nanoTime();
            int status;
            try {
                status = hook("prepare begin", "front", frontendXml("front", FE, 0), 1_000);
            } finally {
                stop.set(true);
                agent.join();
            }
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            assertEquals(1, status);
            assertTrue(told().startsWith("ivcuda: back-end domain 'gpu-be' did not stop the last server of slot 0 within 1 s\n"), told());
            assertTrue(tookMs >= 1_000 && tookMs < 5_000, "bounded: " + tookMs + " ms");
            assertEquals(BackendSlotFlyweight.SLOT_FREE, control.slot(0).state(), "not given to the front-end");
        }
    }

    @Test
    void noAgentMeansNothingServesTheSlot() throws Exception {
        startBackend();
        assign(FE, "front", 0);
        try (ControlRegion control = ControlRegion.open(paths.controlFile())) {
            control.slot(0).servedGenerationVolatile(3); // left by an agent that died; the heartbeat stands still
            control.header().agentHeartbeatVolatile(99);
        }
        long start = System.nanoTime();
        assertEquals(0, hook("prepare begin", "front", frontendXml("front", FE, 0)), told());
        long tookMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(tookMs >= BackendHook.AGENT_STALE_MS && tookMs < BackendHook.AGENT_WAIT_MS, "a still heartbeat: " + tookMs + " ms");
    }

    // ---- doorbell: the slots' relays ----

    private String doorbellShmem(int slot) {
        return "<shmem name='" + BackendPaths.slotShmemName(BE, slot) + "'><model type='ivshmem-doorbell'/><server path='"
                + paths.relaySocket(slot) + "'/><msi vectors='32' ioeventfd='on'/></shmem>";
    }

    private String doorbellBackendXml() {
        return domain("gpu-be", BE, "role=\"backend\" slots=\"2\" size=\"2M\" mode=\"doorbell\"",
                shmem(BackendPaths.controlShmemName(BE), 1L << 20) + doorbellShmem(0) + doorbellShmem(1));
    }

    /**
     * A stand-in for {@code ivcuda-server relay}: writes its pidfile as the relay does once it listens, and runs until
     * SIGTERM with the relay's arguments on its command line (the hook finds it by its --socket argument).
     */
    private void relayStandIn() throws Exception {
        Path script = dir.resolve("relay-stand-in");
        Files.writeString(script, "#!/bin/sh\n[ \"$1\" = relay ] || exit 9\nwhile [ $# -gt 0 ]; do [ \"$1\" = --pidfile ] && p=\"$2\"; "
                + "shift; done\ntrap 'rm -f \"$p\"; exit 0' TERM\necho $$ > \"$p\"\nwhile :; do sleep 0.1; done\n");
        script.toFile().setExecutable(true);
        Files.writeString(dir.resolve("ivcuda.properties"), "server.command=" + script + "\nserver.stop.timeout.ms=5000\n",
                java.nio.file.StandardOpenOption.APPEND);
        host = HostConfig.load(List.of(dir.resolve("ivcuda.properties")));
        paths = BackendPaths.of(BE, host);
    }

    @Test
    void aDoorbellBackendsRelaysRunWhileEitherQemuMayUseThem() throws Exception {
        relayStandIn();
        SlotRelays relays = new SlotRelays(host);
        try {
            assertEquals(0, hook("prepare begin", "gpu-be", doorbellBackendXml()), told());
            assertTrue(relays.isRunning(paths, 0) && relays.isRunning(paths, 1), "a relay per slot before the back-end's QEMU");
            assertEquals(0, hook("started begin", "gpu-be", doorbellBackendXml()), told());
            assign(FE, "front", 0);
            String front = domain("front", FE, "backend=\"gpu-be\" mode=\"doorbell\"", doorbellShmem(0));
            assertEquals(0, hook("prepare begin", "front", front, 300), told());
            try (ControlRegion control = ControlRegion.open(paths.controlFile())) {
                assertEquals(BackendSlotFlyweight.SLOT_ASSIGNED, control.slot(0).stateVolatile());
                assertEquals(32, control.slot(0).doorbellVectors(), "the agent learns the front-end's mode from its slot");
            }
            long relayPid = Long.parseLong(Files.readString(paths.relayPidfile(0)).strip());

            // the back-end stops: the free slot's relay goes, the front-end's stays for the back-end's next start
            assertEquals(0, hook("release end", "gpu-be", doorbellBackendXml()), told());
            assertTrue(relays.isRunning(paths, 0), "the running front-end's relay stays");
            assertFalse(relays.isRunning(paths, 1), "the free slot's relay stopped");
            assertEquals(0, hook("prepare begin", "gpu-be", doorbellBackendXml()), told());
            assertEquals(relayPid, Long.parseLong(Files.readString(paths.relayPidfile(0)).strip()),
                    "the back-end's restart keeps the relay the front-end's QEMU is connected to");
            assertTrue(relays.isRunning(paths, 1));

            // both gone: nothing runs
            assertEquals(0, hook("release end", "gpu-be", doorbellBackendXml()), told());
            assertEquals(0, hook("release end", "front", front), told());
            assertFalse(relays.isRunning(paths, 0), "neither QEMU runs: the relay stopped");
            assertFalse(relays.isRunning(paths, 1));
            assertFalse(Files.exists(paths.relayPidfile(0)));
        } finally {
            relays.stop(paths, 0);
            relays.stop(paths, 1);
        }
    }

    /**
     * A systemctl stand-in for the relays' units: records each call; {@code start ivcuda-relay@I.service} runs the
     * relay stand-in with the arguments of {@code runtime.dir/relay-I.env} as systemd would (the line's value, not
     * shell syntax; {@code $IVCUDA_RELAY_ARGS} split at spaces); {@code stop} ends it; {@code is-active} says whether it runs. {@code start} fails while the file
     * {@code start-fails} exists.
     */
    private Path systemctlStandIn() throws Exception {
        relayStandIn();
        Path script = dir.resolve("systemctl");
        Path units = dir.resolve("units");
        Files.createDirectories(units);
        Files.writeString(script, "#!/bin/sh\necho \"$*\" >> " + dir.resolve("calls") + "\n"
                + "i=${2#ivcuda-relay@}; i=${i%.service}\n"
                + "case \"$1\" in\n"
                + "  start) [ -e " + dir.resolve("start-fails") + " ] && { echo \"Job for $2 failed.\"; exit 1; }\n"
                + "    IVCUDA_RELAY_ARGS=$(sed -n 's/^IVCUDA_RELAY_ARGS=//p' " + dir.resolve("run") + "/relay-$i.env)\n"
                + "    " + dir.resolve("relay-stand-in") + " relay $IVCUDA_RELAY_ARGS </dev/null >/dev/null 2>&1 &\n"
                + "    echo $! > " + units + "/$i ;;\n"
                + "  stop) [ -e " + units + "/$i ] && kill $(cat " + units + "/$i) && while kill -0 $(cat " + units + "/$i) 2>/dev/null; do sleep 0.05; done; rm -f " + units + "/$i ;;\n"
                + "  is-active) [ -e " + units + "/$i ] && kill -0 $(cat " + units + "/$i) 2>/dev/null && { echo active; exit 0; }; echo failed; exit 3 ;;\n"
                + "esac\nexit 0\n");
        script.toFile().setExecutable(true);
        return script;
    }

    private int hookUnderSystemd(Path systemctl, String operation, String name, String xml) {
        String[] words = operation.split(" ");
        DomainNames names = new DomainNames(host.runtimeDir(), List.of(dir.resolve("libvirt")));
        // as HookMain builds it where server.launch is systemd: the relays go the servers' way
        Hook hook = new Hook(host, new SystemdLauncher(systemctl.toString(), "journalctl", 0),
                new PrintStream(userOutput, true, StandardCharsets.UTF_8), names);
        return hook.run(new String[] {name, words[0], words[1], "-"}, xml);
    }

    @Test
    void underSystemdTheRelaysAreUnitsWithTheirArgumentsInTheirEnvironmentFile() throws Exception {
        Path systemctl = systemctlStandIn();
        SlotRelays relays = new SlotRelays(host);
        try {
            assertEquals(0, hookUnderSystemd(systemctl, "prepare begin", "gpu-be", doorbellBackendXml()), told());
            String unit0 = "ivcuda-relay@" + BE + "-slot0.service";
            String unit1 = "ivcuda-relay@" + BE + "-slot1.service";
            List<String> calls = Files.readAllLines(dir.resolve("calls"));
            assertTrue(calls.containsAll(List.of("reset-failed " + unit0, "start " + unit0, "reset-failed " + unit1, "start " + unit1)),
                    calls.toString());
            assertTrue(calls.indexOf("reset-failed " + unit0) < calls.indexOf("start " + unit0), calls.toString());
            assertEquals("IVCUDA_RELAY_ARGS=" + String.join(" ", relays.arguments(paths, 0)),
                    Files.readAllLines(paths.relayEnvironment(0)).get(1));
            assertTrue(relays.isRunning(paths, 0) && relays.isRunning(paths, 1), "each unit's relay runs before the back-end's QEMU");
            assertTrue(Files.exists(paths.relayPidfile(0)), "and listens");
            assertFalse(Files.exists(dir.resolve("log").resolve("relay-" + BE + "-slot0.log")), "not started directly");

            // the back-end stops with no front-end: both units are stopped, their files go
            assertEquals(0, hookUnderSystemd(systemctl, "release end", "gpu-be", doorbellBackendXml()), told());
            calls = Files.readAllLines(dir.resolve("calls"));
            assertTrue(calls.containsAll(List.of("stop " + unit0, "stop " + unit1)), calls.toString());
            assertFalse(relays.isRunning(paths, 0) || relays.isRunning(paths, 1));
            assertFalse(Files.exists(paths.relayEnvironment(0)) || Files.exists(paths.relayPidfile(0)));

            // a unit systemd refuses: the back-end does not start, saying which unit and why
            Files.writeString(dir.resolve("start-fails"), "");
            assertEquals(1, hookUnderSystemd(systemctl, "prepare begin", "gpu-be", doorbellBackendXml()), told());
            assertTrue(told().contains("systemctl start " + unit0 + " failed"), told());
        } finally {
            relays.stop(paths, 0);
            relays.stop(paths, 1);
        }
    }

    @Test
    void directlyLaunchedServersMeanDirectlyLaunchedRelays() {
        assertFalse(SlotRelays.launchedAs(host, new DirectLauncher(host)).asUnits());
        assertTrue(SlotRelays.launchedAs(host, new SystemdLauncher("systemctl", "journalctl", 0)).asUnits());
    }

    @Test
    void aDoorbellFrontendWithAPlainDeviceIsToldToReprovision() throws Exception {
        startBackend();
        assign(FE, "front", 0);
        String front = domain("front", FE, "backend=\"gpu-be\" mode=\"doorbell\"", shmem(BackendPaths.slotShmemName(BE, 0), SLOT));
        assertEquals(1, hook("prepare begin", "front", front), told());
        assertTrue(told().contains("ivshmem-doorbell, server " + paths.relaySocket(0)), told());
        assertTrue(told().contains("ivshmem-provisioner provision front"), told());
    }
}
