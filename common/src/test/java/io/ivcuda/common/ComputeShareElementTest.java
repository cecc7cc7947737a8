package io.ivcuda.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.config.HostKeys;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The element's compute share (docs/sharing.md): how it is read, checked, defaulted and turned into MPS's environment. */
class ComputeShareElementTest {
    @TempDir
    Path dir;

    private static GpuElement parse(String attributes) throws IvcudaConfigException {
        return DomainXml.parse(GpuElementTest.domain(attributes)).parseGpuElement();
    }

    @Test
    void aShareIsAWholePercentage() throws Exception {
        assertEquals(25, parse("share='25'").share().getAsInt());
        assertEquals(25, parse("share='25%'").share().getAsInt());
        assertEquals(100, parse("share='100'").share().getAsInt());
        assertEquals(1, parse("share=' 1 '").share().getAsInt());
        assertFalse(parse("quota='4G'").share().isPresent(), "no attribute: the host's default");
    }

    @Test
    void badSharesAreRefusedNamingDomainAttributeAndValue() {
        for (String bad : new String[] {"0", "101", "25.5", "-5", "half", "", "1000"}) {
            var e = assertThrows(IvcudaConfigException.class, () -> parse("share='" + bad + "'"), bad);
            assertTrue(e.getMessage().contains("domain 'vm1'") && e.getMessage().contains("share='" + bad.trim() + "'")
                    && e.getMessage().contains("1 to 100"), e.getMessage());
            assertTrue(e.summary().startsWith("share '"), e.summary());
        }
        var zero = assertThrows(IvcudaConfigException.class, () -> parse("share='0'"));
        assertTrue(zero.getMessage().contains("no SM"), zero.getMessage());
    }

    @Test
    void theUnknownAttributeMessageListsShare() {
        var e = assertThrows(IvcudaConfigException.class, () -> parse("shares='25'"));
        assertTrue(e.getMessage().contains("device, mode, size, quota, share"), e.getMessage());
    }

    private HostConfig host(String text) throws Exception {
        Path file = dir.resolve("ivcuda.properties");
        Files.writeString(file, text);
        return HostConfig.load(List.of(file));
    }

    @Test
    void theHostDefaultAppliesAndTheElementWins() throws Exception {
        HostConfig host = host("defaults.share=50\n");
        assertEquals(50, VmSettings.resolve(parse(""), host, "vm1").computeShare());
        assertEquals(25, VmSettings.resolve(parse("share='25'"), host, "vm1").computeShare());
        assertEquals(100, VmSettings.resolve(parse(""), HostConfig.defaults(), "vm1").computeShare());
        assertFalse(VmSettings.resolve(parse(""), HostConfig.defaults(), "vm1").shared());
        var e = assertThrows(IvcudaConfigException.class, () -> host("defaults.share=0\n"));
        assertTrue(e.getMessage().contains("defaults.share='0'"), e.getMessage());
    }

    @Test
    void mpsKeysBelongToHookAndProvisionerButMpsUnavailableToTheServer() throws Exception {
        assertTrue(HostKeys.isLifecycleKey("mps.pipe.dir"));
        assertTrue(HostKeys.isLifecycleKey("mps.piep.dir"), "a misspelt mps key is the host configuration's error");
        assertFalse(HostKeys.isLifecycleKey("mps.unavailable"));
        HostConfig host = host("mps.unavailable=unshared\nmps.pipe.dir=/run/x-mps\n");
        assertEquals(Map.of("mps.unavailable", "unshared"), host.serverKeys());
        assertEquals(Path.of("/run/x-mps"), host.mpsPipeDir());
    }

    @Test
    void theServerEnvironmentCarriesShareDirectoriesAndQuota() throws Exception {
        HostConfig host = host("mps.pipe.dir=/run/ivcuda-mps\nmps.log.dir=/var/log/ivcuda/mps\n");
        VmSettings shared = new VmSettings(1, "1", Mode.PLAIN, 64L << 20, 4L << 30, 25);
        Map<String, String> env = MpsEnvironment.of(shared, host);
        assertEquals(Map.of("CUDA_MPS_PIPE_DIRECTORY", "/run/ivcuda-mps", "CUDA_MPS_LOG_DIRECTORY", "/var/log/ivcuda/mps",
                "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "1=5120M"), env);
        assertEquals(Map.of(), MpsEnvironment.of(new VmSettings(0, "0", Mode.PLAIN, 64L << 20, 4L << 30), host),
                "the whole GPU: no MPS at all");
        assertFalse(MpsEnvironment.of(new VmSettings(0, "0", Mode.PLAIN, 64L << 20, 0, 30), host)
                .containsKey("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "no quota, no memory limit");
        // rounded up: MPS's fence must never bite before the server's exact quota
        assertEquals("0=2M", MpsEnvironment.memoryLimit(0, (1L << 20) + 1));
        Path file = dir.resolve("u.env");
        MpsEnvironment.write(file, env);
        assertEquals(env, MpsEnvironment.read(file));
        assertEquals(Map.of(), MpsEnvironment.read(dir.resolve("absent.env")));
    }

    @Test
    void mpsLimitIsTheQuotaPlusTheHeadroomForTheContextsOwnMemory() throws Exception {
        // MPS counts the context's own memory in its limit (389 MiB at 98 SMs on an H200): a limit of exactly the
        // quota refused a 4 GiB VM at 3648 MiB, so by default the limit leaves 1 GiB above the server's quota
        VmSettings quota4g = new VmSettings(0, "0", Mode.PLAIN, 64L << 20, 4L << 30, 30);
        assertEquals(1L << 30, host("").mpsPinnedHeadroom());
        assertEquals("0=5120M", MpsEnvironment.of(quota4g, host("")).get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
        assertEquals("0=4352M", MpsEnvironment.of(quota4g, host("mps.pinned.headroom=256M\n"))
                .get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
        assertEquals("0=4096M", MpsEnvironment.of(quota4g, host("mps.pinned.headroom=0\n"))
                .get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0: exactly the quota, as before the headroom");
        assertTrue(HostKeys.isLifecycleKey("mps.pinned.headroom"), "a host key, not the server's");
        assertThrows(IvcudaConfigException.class, () -> host("mps.pinned.headroom=-1\n"));
    }

    @Test
    void aValueSystemdWouldReadDifferentlyIsRefused() throws Exception {
        HostConfig host = host("mps.pipe.dir=/run/my mps\n");
        Map<String, String> env = MpsEnvironment.of(new VmSettings(0, "0", Mode.PLAIN, 64L << 20, 0, 30), host);
        var e = assertThrows(java.io.IOException.class, () -> MpsEnvironment.write(dir.resolve("u.env"), env));
        assertTrue(e.getMessage().contains("CUDA_MPS_PIPE_DIRECTORY='/run/my mps'"), e.getMessage());
    }

    @Test
    void theDescriptionSaysTheShare() {
        assertTrue(DescriptionNote.provisioned(new VmSettings(0, "0", Mode.PLAIN, 256L << 20, 0, 25))
                .contains(", 25 % of its SMs;"));
        assertFalse(DescriptionNote.provisioned(new VmSettings(0, "0", Mode.PLAIN, 256L << 20, 0)).contains("SMs"));
    }
}
