package io.ivcuda.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.wire.BackendSlotFlyweight;
import io.ivcuda.wire.HeaderFlyweight;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent against a fake sysfs tree, with the real cuda-server (host-memory backend, from this build's classes)
 * started as its child on each assigned slot's file.
 */
class AgentTest {
    /** A server's JVM start on a loaded build machine. */
    static final long SERVER_MS = 90_000;

    @TempDir
    Path dir;
    FakeBackend backend;
    Agent agent;

    /** The real server, from the test's class path (cuda-server's classes and its dependencies). */
    static String serverCommand() {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        return java + " --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -XX:+UseSerialGC -XX:TieredStopAtLevel=1"
                + " -Xmx128m -cp " + System.getProperty("java.class.path") + " io.ivcuda.server.Main";
    }

    Agent start(int slots) throws Exception {
        backend = new FakeBackend(dir.resolve("sys"), slots);
        List<String> sets = new ArrayList<>(List.of(AgentKeys.SYSFS_ROOT.name() + "=" + backend.root,
                AgentKeys.BACKEND.name() + "=host-memory", AgentKeys.SERVER_COMMAND.name() + "=" + serverCommand(),
                AgentKeys.RUN_DIR.name() + "=" + dir.resolve("run"), AgentKeys.POLL_MS.name() + "=50"));
        AgentConfig config = AgentConfig.load(List.of(), sets);
        ControlRegion control = ControlRegion.open(ControlRegion.locate(new DeviceDiscovery(config.sysfsRoot()).scan()));
        agent = new Agent(config, control);
        agent.start();
        return agent;
    }

    @AfterEach
    void stop() {
        if (agent != null) {
            agent.close();
        }
        if (backend != null) {
            backend.close();
        }
    }

    private static boolean alive(long pid) {
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    @Test
    void anAssignedSlotGetsAReadyServerOnItsDeviceAndAFreedOneIsStoppedAndIdle() throws Exception {
        start(2);
        long beat = backend.header.agentHeartbeatVolatile();
        FakeBackend.await("the agent's heartbeat", 5000, () -> backend.header.agentHeartbeatVolatile() > beat + 2);
        assertEquals(ProcessHandle.current().pid(), backend.header.agentPid());
        BackendSlotFlyweight slot = backend.slots[1];
        int g = backend.assign(1, "front-a", 64L << 20);
        FakeBackend.await("slot 1 SERVING", SERVER_MS, () -> slot.serverStateVolatile() == BackendSlotFlyweight.SERVED_SERVING);
        assertEquals(g, slot.servedGenerationVolatile());
        long pid = slot.serverPid();
        assertTrue(alive(pid), "the server runs");
        // the front-end's quota, as the host wrote it into the slot, is the server's memory.quota
        String cmdline = new String(java.nio.file.Files.readAllBytes(java.nio.file.Path.of("/proc/" + pid + "/cmdline")),
                java.nio.charset.StandardCharsets.UTF_8).replace('\0', ' ');
        assertTrue(cmdline.contains(" " + io.ivcuda.common.config.ServerKeys.MEMORY_QUOTA.name() + "=" + (64L << 20) + " "), cmdline);
        HeaderFlyweight h = backend.slotHeader(1);
        assertEquals(HeaderFlyweight.STATE_READY, h.serverStateVolatile(), "the server serves slot 1's device, found by token");
        assertEquals(1, h.slotIndex(), "and kept the slot's identity");
        assertEquals(0, backend.slotHeader(0).magic(), "slot 0's device is untouched");
        assertEquals(BackendSlotFlyweight.SERVED_IDLE, backend.slots[0].serverStateVolatile());

        backend.free(1);
        FakeBackend.await("slot 1 IDLE", 20_000, () -> slot.serverStateVolatile() == BackendSlotFlyweight.SERVED_IDLE);
        assertEquals(0, slot.servedGenerationVolatile());
        assertFalse(alive(pid), "the server is gone before served_generation is 0");
        assertEquals(HeaderFlyweight.STATE_STOPPED, h.serverStateVolatile(), "it stopped cleanly on SIGTERM");
        assertTrue(slot.serverMessage().contains("freed"), slot.serverMessage());
        assertTrue(java.nio.file.Files.size(backend.slotFiles.get(1)) == FakeBackend.SLOT_SIZE, "the device file is as it was");
    }

    @Test
    void aSlotWhoseRegionCarriesAForgedTokenIsNotServedAndTheOthersAre() throws Exception {
        start(2);
        // front-end 0 overwrote its own region's token (it can reach no other)
        backend.writeSlotHeader(0, 0xbadL, 0xbadL);
        backend.assign(0, "forger", 0);
        backend.assign(1, "honest", 0);
        BackendSlotFlyweight forged = backend.slots[0];
        BackendSlotFlyweight honest = backend.slots[1];
        FakeBackend.await("slot 1 SERVING", SERVER_MS, () -> honest.serverStateVolatile() == BackendSlotFlyweight.SERVED_SERVING);
        FakeBackend.await("slot 0 FAILED", 5000, () -> forged.serverStateVolatile() == BackendSlotFlyweight.SERVED_FAILED);
        assertTrue(forged.serverMessage().contains("no ivshmem device carries slot 0's token"), forged.serverMessage());
        assertEquals(0, forged.serverPid(), "no server was started for it");
        assertEquals(0, backend.slotHeader(0).magic(), "nothing serves the forged region");
        assertEquals(HeaderFlyweight.STATE_READY, backend.slotHeader(1).serverStateVolatile());
    }

    @Test
    void aKilledServerIsFailedThenRestartedWhileItsSlotStaysAssigned() throws Exception {
        start(1);
        BackendSlotFlyweight slot = backend.slots[0];
        int g = backend.assign(0, "front-k", 0);
        FakeBackend.await("SERVING", SERVER_MS, () -> slot.serverStateVolatile() == BackendSlotFlyweight.SERVED_SERVING);
        long first = slot.serverPid();
        ProcessHandle.of(first).orElseThrow().destroyForcibly();
        FakeBackend.await("FAILED", 10_000, () -> slot.serverStateVolatile() == BackendSlotFlyweight.SERVED_FAILED);
        assertTrue(slot.serverMessage().contains("killed by signal 9"), slot.serverMessage());
        assertEquals(g, slot.servedGenerationVolatile(), "still this assignment's");
        FakeBackend.await("SERVING again", SERVER_MS, () -> slot.serverStateVolatile() == BackendSlotFlyweight.SERVED_SERVING);
        assertNotEquals(first, slot.serverPid());
        assertTrue(alive(slot.serverPid()));
        assertEquals(HeaderFlyweight.STATE_READY, backend.slotHeader(0).serverStateVolatile());
    }

    @Test
    void theAgentsStopStopsItsServersAndLeavesTheSlotsIdle() throws Exception {
        start(1);
        BackendSlotFlyweight slot = backend.slots[0];
        backend.assign(0, "front-s", 0);
        FakeBackend.await("SERVING", SERVER_MS, () -> slot.serverStateVolatile() == BackendSlotFlyweight.SERVED_SERVING);
        long pid = slot.serverPid();
        agent.close();
        agent = null;
        assertFalse(alive(pid));
        assertEquals(BackendSlotFlyweight.SERVED_IDLE, slot.serverStateVolatile());
        assertEquals(0, slot.servedGenerationVolatile());
        assertEquals("agent stopped", backend.header.agentMessage());
    }
}
