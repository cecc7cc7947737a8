package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.Backend;
import io.ivcuda.common.IvcudaConfigException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ServerConfigTest {
    @TempDir
    Path dir;

    @Test
    void laterFilesOverrideEarlierOnesAndSetOverridesAll() throws Exception {
        Path a = Files.writeString(dir.resolve("a.properties"), "region.path=/dev/shm/a\nchannel.count=4\nmemory.quota=10\n");
        Path b = Files.writeString(dir.resolve("b.properties"), "channel.count=8\n");
        ServerConfig c = ServerConfig.load(List.of(a, b), List.of("memory.quota=20"));
        assertEquals(Path.of("/dev/shm/a"), c.regionPath());
        assertEquals(8, c.channelCount());
        assertEquals(20, c.memoryQuota());
        assertEquals(268435456L, c.regionSize());
        assertEquals(Backend.CUDA, c.backend());
        assertEquals(ServerConfig.DEFAULT_OWNER_TIMEOUT_MS, c.ownerTimeoutMs());
    }

    @Test
    void unknownKeyNamesKeyAndFile() throws Exception {
        Path a = Files.writeString(dir.resolve("a.properties"), "region.path=/x\nchanel.count=4\n");
        IvcudaConfigException e = assertThrows(IvcudaConfigException.class, () -> ServerConfig.load(List.of(a), List.of()));
        assertTrue(e.getMessage().contains("chanel.count") && e.getMessage().contains("a.properties"), e.getMessage());
    }

    @Test
    void badValueNamesKeyAndFile() throws Exception {
        Path a = Files.writeString(dir.resolve("a.properties"), "region.path=/x\nwait.spin.us=lots\n");
        IvcudaConfigException e = assertThrows(IvcudaConfigException.class, () -> ServerConfig.load(List.of(a), List.of()));
        assertTrue(e.getMessage().contains("wait.spin.us") && e.getMessage().contains("a.properties"), e.getMessage());
        e = assertThrows(IvcudaConfigException.class, () -> ServerConfig.load(List.of(), List.of()));
        assertTrue(e.getMessage().contains("region.path"), e.getMessage());
    }

    @Test
    void doorbellModeNeedsItsSocketAndTakesVectorsUidAndParkTimeout() throws Exception {
        IvcudaConfigException e = assertThrows(IvcudaConfigException.class,
                () -> ServerConfig.load(List.of(), List.of("region.path=/x", "mode=doorbell")));
        assertTrue(e.getMessage().contains("doorbell.socket"), e.getMessage());
        ServerConfig c = ServerConfig.load(List.of(), List.of("region.path=/x", "mode=doorbell",
                "doorbell.socket=/run/ivcuda/x.sock", "doorbell.vectors=2", "doorbell.peer.uid=64055"));
        assertTrue(c.doorbell());
        assertEquals(2, c.doorbellVectors());
        assertEquals(64055, c.doorbellPeerUid());
        assertEquals(1000, c.doorbellParkTimeoutMs());
        e = assertThrows(IvcudaConfigException.class, () -> ServerConfig.load(List.of(),
                List.of("region.path=/x", "mode=doorbell", "doorbell.socket=/s", "doorbell.vectors=65")));
        assertTrue(e.getMessage().contains("doorbell.vectors"), e.getMessage());
        ServerConfig plain = ServerConfig.load(List.of(), List.of("region.path=/x"));
        assertEquals(-1, plain.doorbellPeerUid(), "any uid unless configured");
        assertTrue(!plain.doorbell());
    }

    @Test
    void sizesAndDurationsTakeUnitsAndEveryProblemIsOneLineNamingKeyValueAndFile() throws Exception {
        ServerConfig c = ServerConfig.load(List.of(), List.of("region.path=/x", "region.size=64M", "memory.quota=4G",
                "owner.timeout.ms=2s", "wait.park.max.us=1ms", "limit.module.image.bytes=0x100000"));
        assertEquals(64L << 20, c.regionSize());
        assertEquals(4L << 30, c.memoryQuota());
        assertEquals(2000, c.ownerTimeoutMs());
        assertEquals(1000, c.waitParkMaxUs());
        assertEquals(1L << 20, c.limits().imageBytes());
        Path a = Files.writeString(dir.resolve("a.properties"), "region.path=/x\nmode=bell\n");
        IvcudaConfigException e = assertThrows(IvcudaConfigException.class, () -> ServerConfig.load(List.of(a), List.of()));
        assertEquals(a + ": mode='bell': is not plain or doorbell", e.getMessage());
        e = assertThrows(IvcudaConfigException.class, () -> ServerConfig.load(List.of(a), List.of("mode=doorbell",
                "owner.timeout.ms=1500us")));
        assertEquals("--set: owner.timeout.ms='1500us': is not a whole number of milliseconds", e.getMessage());
        e = assertThrows(IvcudaConfigException.class, () -> ServerConfig.load(List.of(), List.of("region.path=/x",
                "limit.processes=0")));
        assertEquals("--set: limit.processes='0': is not in 1..1048576", e.getMessage());
        assertTrue(!e.getMessage().contains("\n"));
    }
}
