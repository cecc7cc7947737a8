package io.ivcuda.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.wire.BackendControlFlyweight;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Discovery and the choice of the control region, without servers. */
class ControlRegionTest {
    @TempDir
    Path dir;

    @Test
    void onlyIvshmemDevicesAreFoundAndTheControlRegionIsTheOneMiBWithTheMagic() throws Exception {
        try (FakeBackend b = new FakeBackend(dir, 3)) {
            List<IvshmemDevice> devices = new DeviceDiscovery(dir).scan();
            assertEquals(4, devices.size(), "the control region and 3 slots, not the other PCI device: " + devices);
            IvshmemDevice control = ControlRegion.locate(devices);
            assertEquals(b.control, control.memory());
            try (ControlRegion c = ControlRegion.open(control)) {
                assertEquals(3, c.slotCount());
                assertEquals(FakeBackend.BACKEND_UUID, c.header().backendUuid());
            }
        }
    }

    @Test
    void twoControlCandidatesAreRefusedWithAMessageInEach() throws Exception {
        try (FakeBackend b = new FakeBackend(dir, 1)) {
            Path second = b.device("0000:00:04.0", "0x1af4", "0x1110", ControlRegion.SIZE);
            b.map(second, ControlRegion.SIZE).putLong(0, BackendControlFlyweight.BACKEND_MAGIC);
            b.map(second, ControlRegion.SIZE).putInt(BackendControlFlyweight.CONTROL_VERSION_OFFSET, 1);
            ControlRegion.Refused e = assertThrows(ControlRegion.Refused.class,
                    () -> ControlRegion.locate(new DeviceDiscovery(dir).scan()));
            assertTrue(e.getMessage().contains("2 ivshmem devices look like a back-end control region")
                    && e.getMessage().contains("0000:00:03.0") && e.getMessage().contains("0000:00:04.0"), e.getMessage());

            AgentMain main = new AgentMain();
            main.sets = List.of(AgentKeys.SYSFS_ROOT.name() + "=" + dir, AgentKeys.RUN_DIR.name() + "=" + dir.resolve("run"),
                    AgentKeys.SERVER_COMMAND.name() + "=true");
            PrintStream err = System.err;
            ByteArrayOutputStream said = new ByteArrayOutputStream();
            int status;
            System.setErr(new PrintStream(said, true, StandardCharsets.UTF_8));
            try {
                status = main.call();
            } finally {
                System.setErr(err);
            }
            assertEquals(AgentMain.EXIT_REFUSED, status);
            assertTrue(said.toString(StandardCharsets.UTF_8).startsWith("ivcuda-backend-agent: 2 ivshmem devices"), said.toString());
            assertTrue(b.header.agentMessage().startsWith("2 ivshmem devices look like"), b.header.agentMessage());
        }
    }

    @Test
    void aSlotTableThatDoesNotFitIsRefused() throws Exception {
        try (FakeBackend b = new FakeBackend(dir, 1)) {
            b.header.slotCount(33);
            IOException e = assertThrows(IOException.class, () -> ControlRegion.open(ControlRegion.locate(new DeviceDiscovery(dir).scan())));
            assertTrue(e.getMessage().contains("slot_count 33 is not 1..32"), e.getMessage());
            b.header.slotCount(32).slotTableOffset((int) ControlRegion.SIZE - 1024);
            e = assertThrows(IOException.class, () -> ControlRegion.open(ControlRegion.locate(new DeviceDiscovery(dir).scan())));
            assertTrue(e.getMessage().contains("does not fit"), e.getMessage());
        }
    }

    @Test
    void unknownKeysAndBadValuesAreRefusedByName() throws Exception {
        IvcudaConfigException e = assertThrows(IvcudaConfigException.class,
                () -> AgentConfig.load(List.of(), List.of("sysfs.rot=/x", AgentKeys.SERVER_COMMAND.name() + "=true")));
        assertTrue(e.getMessage().contains("sysfs.rot"), e.getMessage());
        e = assertThrows(IvcudaConfigException.class, () -> AgentConfig.load(List.of(),
                List.of(AgentKeys.BACKEND.name() + "=gpu", AgentKeys.SERVER_COMMAND.name() + "=true")));
        assertTrue(e.getMessage().contains("backend") && e.getMessage().contains("gpu"), e.getMessage());
        Path file = Files.writeString(dir.resolve("agent.properties"), AgentKeys.POLL_MS.name() + "=5\n");
        e = assertThrows(IvcudaConfigException.class, () -> AgentConfig.load(List.of(file), List.of(AgentKeys.SERVER_COMMAND.name() + "=true")));
        assertTrue(e.getMessage().contains(AgentKeys.POLL_MS.name()) && e.getMessage().contains("agent.properties"), e.getMessage());
    }
}
