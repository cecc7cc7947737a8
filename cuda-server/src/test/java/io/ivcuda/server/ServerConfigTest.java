package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
        assertEquals("cuda", c.backend());
        assertEquals(ServerConfig.DEFAULT_OWNER_TIMEOUT_MS, c.ownerTimeoutMs());
    }

    @Test
    void unknownKeyNamesKeyAndFile() throws Exception {
        Path a = Files.writeString(dir.resolve("a.properties"), "region.path=/x\nchanel.count=4\n");
        ServerConfig.ConfigError e = assertThrows(ServerConfig.ConfigError.class, () -> ServerConfig.load(List.of(a), List.of()));
        assertTrue(e.getMessage().contains("chanel.count") && e.getMessage().contains("a.properties"), e.getMessage());
    }

    @Test
    void badValueNamesKeyAndFile() throws Exception {
        Path a = Files.writeString(dir.resolve("a.properties"), "region.path=/x\nwait.spin.us=lots\n");
        ServerConfig.ConfigError e = assertThrows(ServerConfig.ConfigError.class, () -> ServerConfig.load(List.of(a), List.of()));
        assertTrue(e.getMessage().contains("wait.spin.us") && e.getMessage().contains("a.properties"), e.getMessage());
        e = assertThrows(ServerConfig.ConfigError.class, () -> ServerConfig.load(List.of(), List.of()));
        assertTrue(e.getMessage().contains("region.path"), e.getMessage());
    }

    @Test
    void doorbellModeNeedsItsSocketAndTakesVectorsUidAndParkTimeout() throws Exception {
        ServerConfig.ConfigError e = assertThrows(ServerConfig.ConfigError.class,
                () -> ServerConfig.load(List.of(), List.of("region.path=/x", "mode=doorbell")));
        assertTrue(e.getMessage().contains("doorbell.socket"), e.getMessage());
        ServerConfig c = ServerConfig.load(List.of(), List.of("region.path=/x", "mode=doorbell",
                "doorbell.socket=/run/ivcuda/x.sock", "doorbell.vectors=2", "doorbell.peer.uid=64055"));
        assertTrue(c.doorbell());
        assertEquals(2, c.doorbellVectors());
        assertEquals(64055, c.doorbellPeerUid());
        assertEquals(1000, c.doorbellParkTimeoutMs());
        e = assertThrows(ServerConfig.ConfigError.class, () -> ServerConfig.load(List.of(),
                List.of("region.path=/x", "mode=doorbell", "doorbell.socket=/s", "doorbell.vectors=65")));
        assertTrue(e.getMessage().contains("doorbell.vectors"), e.getMessage());
        ServerConfig plain = ServerConfig.load(List.of(), List.of("region.path=/x"));
        assertEquals(-1, plain.doorbellPeerUid(), "any uid unless configured");
        assertTrue(!plain.doorbell());
    }
}
