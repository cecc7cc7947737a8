package io.ivcuda.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The shell launcher qemu.d/50-ivcuda: filters untagged domains before any JVM, hands tagged ones on. */
class LauncherScriptTest {
    @TempDir
    Path dir;

    private record Run(int status, String stdout, String stderr) {
    }

    private final java.util.Map<String, String> extraEnvironment = new java.util.HashMap<>();

    private Run launch(String xml, Path fakeJava, String... args) throws Exception {
        String script = System.getProperty("ivcuda.hook.launcher");
        ProcessBuilder builder = new ProcessBuilder(new java.util.ArrayList<>(java.util.List.of("sh", script)));
        builder.command().addAll(java.util.List.of(args));
        builder.environment().put("IVCUDA_JAVA", fakeJava.toString());
        builder.environment().put("IVCUDA_HOME", dir.toString());
        builder.environment().putAll(extraEnvironment);
        Path out = dir.resolve("stdout");
        Path err = dir.resolve("stderr");
        builder.redirectOutput(out.toFile()).redirectError(err.toFile());
        Process process = builder.start();
        process.getOutputStream().write(xml.getBytes(StandardCharsets.UTF_8));
        process.getOutputStream().close();
        int status = process.waitFor();
        return new Run(status, Files.readString(out), Files.readString(err));
    }

    private Path fakeJava() throws Exception {
        Path fake = dir.resolve("fake-java");
        Files.writeString(fake, "#!/bin/sh\necho \"args: $*\" > " + dir.resolve("args") + "\ncat > " + dir.resolve("stdin")
                + "\necho 'this would be stdout'\nexit 7\n");
        Files.setPosixFilePermissions(fake, PosixFilePermissions.fromString("rwxr-xr-x"));
        return fake;
    }

    @Test
    void untaggedDomainNeverStartsAJvm() throws Exception {
        Run run = launch(HookTest.domain("untagged"), fakeJava(), "plainvm", "prepare", "begin", "-");
        assertEquals(0, run.status);
        assertFalse(Files.exists(dir.resolve("args")), "no JVM for an untagged domain");
        assertEquals("", run.stdout);
    }

    @Test
    void untaggedDomainWithAnIvcudaDeviceReachesTheJavaHook() throws Exception {
        // A clone whose element was removed still carries the original's device: the Java hook must refuse it.
        String xml = HookTest.domain("untagged").replace("</devices>",
                "<shmem name='ivcuda-0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5'><model type='ivshmem-plain'/></shmem></devices>");
        Run run = launch(xml, fakeJava(), "plainvm", "prepare", "begin", "-");
        assertEquals(7, run.status, "the Java hook's status is the hook's status");
        assertTrue(Files.exists(dir.resolve("args")), "the Java hook did run");
    }

    @Test
    void reconnectAndReleaseSucceedWhateverTheJvmDoes() throws Exception {
        String xml = HookTest.domain("tagged");
        assertEquals(0, launch(xml, fakeJava(), "gpuvm", "reconnect", "begin", "-").status, "a failing reconnect would kill the VM");
        assertTrue(Files.exists(dir.resolve("args")), "the Java hook did run");
        assertEquals(0, launch(xml, dir.resolve("no-such-java"), "gpuvm", "reconnect", "begin", "-").status);
        assertEquals(0, launch(xml, dir.resolve("no-such-java"), "gpuvm", "release", "end", "-").status);
        assertTrue(launch(xml, dir.resolve("no-such-java"), "gpuvm", "prepare", "begin", "-").status != 0,
                "without a JVM a start must not go ahead");
    }

    @Test
    void releaseOfAnUntaggedDomainWithAServerStillReachesTheJavaHook() throws Exception {
        String untagged = HookTest.domain("untagged");
        String uuid = "0a0b0c0d-0000-4000-8000-000000000001";
        Path runtime = Files.createDirectories(dir.resolve("run"));
        Path config = dir.resolve("ivcuda.properties");
        Files.writeString(config, "runtime.dir = " + runtime + "\n");
        assertEquals(0, launchWithConfig(untagged, config, "plainvm", "release", "end", "-").status);
        assertFalse(Files.exists(dir.resolve("args")), "no instance configuration: no JVM");
        Files.writeString(runtime.resolve(uuid + ".properties"), "region.path=/x\n");
        launchWithConfig(untagged, config, "plainvm", "release", "end", "-");
        assertTrue(Files.exists(dir.resolve("args")), "a server may run: the Java hook cleans up");
    }

    private Run launchWithConfig(String xml, Path config, String... args) throws Exception {
        extraEnvironment.put("IVCUDA_CONFIG", config.toString());
        return launch(xml, fakeJava(), args);
    }

    @Test
    void operationsWithoutWorkNeverStartAJvm() throws Exception {
        for (String[] op : new String[][] {{"start", "begin"}, {"started", "begin"}, {"stopped", "end"}}) {
            Run run = launch(HookTest.domain("tagged"), fakeJava(), "gpuvm", op[0], op[1], "-");
            assertEquals(0, run.status);
            assertFalse(Files.exists(dir.resolve("args")), "no JVM for " + op[0]);
        }
    }

    @Test
    void taggedDomainIsHandedToTheJavaHookWithItsXml() throws Exception {
        String xml = HookTest.domain("tagged");
        Run run = launch(xml, fakeJava(), "gpuvm", "prepare", "begin", "-");
        assertEquals(7, run.status, "the Java hook's status is the hook's status");
        String args = Files.readString(dir.resolve("args"));
        assertTrue(args.contains("-jar " + dir.resolve("libvirt-hook.jar") + " gpuvm prepare begin -"), args);
        assertEquals(xml.strip(), Files.readString(dir.resolve("stdin")).strip(), "the domain XML arrives unchanged");
        assertEquals("", run.stdout, "nothing reaches libvirt's stdout");
        assertTrue(run.stderr.contains("this would be stdout"));
    }
}
