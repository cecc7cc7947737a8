package io.ivcuda.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class VmSettingsTest {
    @TempDir
    Path dir;

    private HostConfig host(String text) throws Exception {
        Path file = dir.resolve("ivcuda.properties");
        Files.writeString(file, text);
        return HostConfig.load(List.of(file));
    }

    private static GpuElement element(String attributes) throws Exception {
        return DomainXml.parse(GpuElementTest.domain(attributes)).parseGpuElement();
    }

    @Test
    void defaultsComeFromTheHost() throws Exception {
        HostConfig host = host("defaults.mode=doorbell\ndefaults.size=64M\ndefaults.quota=1G\ngpu.0.capacity=8G\ngpu.1.capacity=8G\n");
        VmSettings s = VmSettings.resolve(element(""), host, "vm1");
        assertEquals(new VmSettings(0, "0", Mode.DOORBELL, 64L << 20, 1L << 30), s);
    }

    @Test
    void gpuIndexBeyondConfiguredCountIsRefused() throws Exception {
        HostConfig host = host("gpu.0.capacity=8G\ngpu.1.capacity=8G\n");
        assertEquals(1, VmSettings.resolve(element("device='1'"), host, "vm1").gpuIndex());
        var e = assertThrows(IvcudaConfigException.class, () -> VmSettings.resolve(element("device='2'"), host, "vm1"));
        assertTrue(e.getMessage().contains("domain 'vm1'") && e.getMessage().contains("device='2'")
                && e.getMessage().contains("2 GPUs"), e.getMessage());
    }

    @Test
    void gpuByUuid() throws Exception {
        HostConfig host = host("gpu.0.uuid=GPU-aaaaaaaa-0000\ngpu.1.uuid=GPU-bbbbbbbb-1111\n");
        VmSettings s = VmSettings.resolve(element("device='GPU-bbbbbbbb-1111'"), host, "vm1");
        assertEquals(1, s.gpuIndex());
        assertEquals("GPU-bbbbbbbb-1111", s.gpu());
        var e = assertThrows(IvcudaConfigException.class, () -> VmSettings.resolve(element("device='GPU-cccccccc-2222'"), host, "vm1"));
        assertTrue(e.getMessage().contains("device='GPU-cccccccc-2222'"), e.getMessage());
    }

    @Test
    void badHostValuesNameFileAndKey() throws Exception {
        var e = assertThrows(IvcudaConfigException.class, () -> host("defaults.size=3M\n"));
        assertTrue(e.getMessage().contains("defaults.size='3M'") && e.getMessage().contains(dir.toString()), e.getMessage());
        e = assertThrows(IvcudaConfigException.class, () -> host("server.launch=sometimes\n"));
        assertTrue(e.getMessage().contains("server.launch"), e.getMessage());
        e = assertThrows(IvcudaConfigException.class, () -> host("gpu.0.capacty=8G\n"));
        assertTrue(e.getMessage().contains("gpu.0.capacty"), e.getMessage());
    }

    @Test
    void unreadableFileIsNamed() {
        Path missing = dir.resolve("nope.properties");
        var e = assertThrows(IvcudaConfigException.class, () -> HostConfig.load(List.of(missing)));
        assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
        var d = assertThrows(IvcudaConfigException.class, () -> HostConfig.load(List.of(dir)));
        assertTrue(d.getMessage().contains(dir.toString()), d.getMessage());
    }

    @Test
    void laterFilesOverrideEarlierOnes() throws Exception {
        Path a = dir.resolve("a.properties");
        Path b = dir.resolve("b.properties");
        Files.writeString(a, "defaults.size=64M\nqemu.group=kvm\n");
        Files.writeString(b, "defaults.size=128M\n");
        HostConfig host = HostConfig.load(List.of(a, b));
        assertEquals(128L << 20, host.defaultSize());
        assertEquals("kvm", host.qemuGroup());
    }
}
