package io.ivcuda.common.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.HostConfig;
import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.Mode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SettingsTest {
    @TempDir
    Path dir;

    @Test
    void firstLayerWinsDefaultsOtherwiseAndSourcesAreNamed() throws Exception {
        Path low = Files.writeString(dir.resolve("low.properties"), "mode=doorbell\nregion.size=4M\n");
        Path high = Files.writeString(dir.resolve("high.properties"), "region.size=8M\n");
        Settings s = Settings.load(ServerKeys.ALL, List.of(Settings.Layer.sets(List.of("gpu=1")),
                Settings.Layer.file(high, null), Settings.Layer.file(low, null)));
        assertEquals("1", s.get(ServerKeys.GPU));
        assertEquals(8L << 20, s.get(ServerKeys.REGION_SIZE));
        assertEquals(Mode.DOORBELL, s.get(ServerKeys.MODE));
        assertEquals(1200L, s.get(ServerKeys.OWNER_TIMEOUT_MS));
        assertNull(s.get(ServerKeys.PIDFILE));
        assertEquals("--set", s.sourceOf("gpu"));
        assertEquals(high.toString(), s.sourceOf("region.size"));
        assertEquals(low.toString(), s.sourceOf("mode"));
        assertTrue(s.isSet(ServerKeys.MODE));
        assertFalse(s.isSet(ServerKeys.BACKEND));
    }

    @Test
    void unknownKeysAreRefusedUnlessAnotherConsumersAndNamedWithTheirFile() throws Exception {
        Path f = Files.writeString(dir.resolve("f.properties"), "chanel.count=3\n");
        var e = assertThrows(IvcudaConfigException.class,
                () -> Settings.load(ServerKeys.ALL, List.of(Settings.Layer.file(f, null))));
        assertTrue(e.getMessage().startsWith(f + ": unknown key chanel.count (did you mean channel.count?)"), e.getMessage());
        Settings s = Settings.load(ServerKeys.ALL, List.of(Settings.Layer.file(f, null)), k -> k.startsWith("chanel."));
        assertEquals(Map.of("chanel.count", "3"), s.foreign());
    }

    @Test
    void familiesCollectTheirMembersByIndex() throws Exception {
        Path f = Files.writeString(dir.resolve("h.properties"), "gpu.0.capacity=8G\ngpu.2.uuid=GPU-x\n");
        Settings s = Settings.load(HostKeys.ALL, List.of(Settings.Layer.file(f, "host configuration")));
        assertEquals(Map.of(0, 8L << 30), s.members(HostKeys.GPU_CAPACITY));
        assertEquals(Map.of(2, "GPU-x"), s.members(HostKeys.GPU_UUID));
        assertEquals("gpu.3.uuid", HostKeys.GPU_UUID.member(3));
        assertFalse(HostKeys.GPU_UUID.matches("gpu.x.uuid"));
    }

    @Test
    void aMisspeltLifecycleKeyIsTheHostConfigurationsErrorAndServerKeysPassOn() throws Exception {
        Path f = Files.writeString(dir.resolve("ivcuda.properties"), "server.usr=ivcuda\n");
        var e = assertThrows(IvcudaConfigException.class, () -> HostConfig.load(List.of(f)));
        assertTrue(e.getMessage().contains("host configuration " + f + ": unknown key server.usr"), e.getMessage());
        Files.writeString(f, "backend=host-memory\nstandin.behaviour=exit\nserver.user=me\n");
        HostConfig host = HostConfig.load(List.of(f));
        assertEquals(Map.of("backend", "host-memory", "standin.behaviour", "exit"), host.serverKeys());
        assertEquals("me", host.serverUser());
        assertTrue(host.serverKeyProblem().startsWith("host configuration " + f + ": unknown key standin.behaviour"),
                host.serverKeyProblem());
        Files.writeString(f, "chanel.count=4\n");
        assertTrue(HostConfig.load(List.of(f)).serverKeyProblem().contains("(did you mean channel.count?)"));
        Files.writeString(f, "owner.timeout.ms=soon\nbackend=cuda\n");
        assertEquals("host configuration " + f + ": owner.timeout.ms='soon': is not a duration (a number of milliseconds, "
                + "or with us, ms, s, min, h)", HostConfig.load(List.of(f)).serverKeyProblem());
        Files.writeString(f, "owner.timeout.ms=3s\nbackend=cuda\n");
        assertNull(HostConfig.load(List.of(f)).serverKeyProblem());
    }

    @Test
    void whatTheHookWritesTheServerReadsBack() throws Exception {
        Properties p = new Properties();
        ServerKeys.MODE.set(p, Mode.DOORBELL);
        ServerKeys.REGION_SIZE.set(p, 4L << 20);
        ServerKeys.REGION_PATH.set(p, Path.of("/dev/shm/ivcuda-u"));
        assertEquals("doorbell", p.getProperty("mode"));
        assertEquals("4194304", p.getProperty("region.size"));
        Path f = dir.resolve("i.properties");
        try (var w = Files.newBufferedWriter(f)) {
            p.store(w, null);
        }
        Settings s = Settings.load(ServerKeys.ALL, List.of(Settings.Layer.file(f, null)));
        assertEquals(Mode.DOORBELL, s.get(ServerKeys.MODE));
        assertEquals(Path.of("/dev/shm/ivcuda-u"), s.get(ServerKeys.REGION_PATH));
    }

    @Test
    void typesReadWhatPeopleWrite() {
        assertEquals(2000L, ServerKeys.OWNER_TIMEOUT_MS.parse("2s"));
        assertEquals(60_000L, ServerKeys.LOG_REFUSALS_WINDOW_MS.parse("1min"));
        assertEquals(1000L, ServerKeys.WAIT_PARK_MAX_US.parse("1ms"));
        assertEquals(256L << 20, ServerKeys.REGION_SIZE.parse("256M"));
        assertEquals(1L << 20, ServerKeys.REGION_SIZE.parse("0x100000"));
        var e = assertThrows(IllegalArgumentException.class, () -> ServerKeys.DOORBELL_VECTORS.parse("65"));
        assertEquals("is not in 1..64", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ServerKeys.OWNER_TIMEOUT_MS.parse("5 fortnights"));
        assertTrue(e.getMessage().startsWith("is not a duration"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> HostKeys.SERVER_READY_TIMEOUT_MS.parse("0"));
        assertEquals("must be at least 1", e.getMessage());
    }
}
