package io.ivcuda.provisioner;

import static org.junit.jupiter.api.Assertions.fail;

import io.ivcuda.common.InstancePaths;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Assumptions;

/** The real libvirtd and commands the integration tests share (LifecycleIT, VmIT). */
final class LibvirtTestHost {
    static final String URI = "qemu:///system";
    static final Path HOOK = Path.of("/etc/libvirt/hooks/qemu.d/50-ivcuda");
    /** Longest a command may run: eight TCG guests plus their servers on a small CI machine. */
    static final long COMMAND_MS = 300_000;

    private LibvirtTestHost() {
    }

    record Result(int status, String output) {
    }

    static Result run(List<String> command) {
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            process.getOutputStream().close();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(COMMAND_MS, TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                return new Result(-1, String.join(" ", command) + ": timed out");
            }
            return new Result(process.exitValue(), output);
        } catch (IOException e) {
            return new Result(-1, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(-1, "interrupted");
        }
    }

    /** Runs virsh on {@link #URI}; a failure fails the test with virsh's own words. */
    static String virsh(String... args) {
        List<String> command = new ArrayList<>(List.of("virsh", "-c", URI));
        command.addAll(List.of(args));
        Result result = run(command);
        if (result.status() != 0) {
            throw new AssertionError(String.join(" ", command) + " failed (" + result.status() + "): "
                    + result.output().trim());
        }
        return result.output();
    }

    /**
     * Skips the test class when libvirtd, root or the hook is missing; fails it instead under
     * {@code IVCUDA_IT_LIBVIRT=required} (CI), so a broken set-up cannot pass as a skip.
     */
    static void requireLibvirt(String what) {
        String problem = libvirtProblem();
        if (problem == null) {
            return;
        }
        if ("required".equals(System.getenv("IVCUDA_IT_LIBVIRT"))) {
            fail("IVCUDA_IT_LIBVIRT=required but " + problem);
        }
        skip(what + " skipped: " + problem + "; to run it: as root with libvirtd and the hook set up as .ci/run does, "
                + "IVCUDA_IT_LIBVIRT=required mvn -B verify (which fails instead of skipping)");
    }

    /**
     * Skips the test (or, from a @BeforeAll, the class), saying why and how to run it in one line on
     * stderr: Maven shows an aborted test only as 'Skipped: 1' and an aborted @BeforeAll as 'Tests run: 0'.
     */
    static void skip(String skipped) {
        System.err.println(skipped);
        Assumptions.abort(skipped);
    }

    /** The repository root (system property ivcuda.repo, else the module's parent). */
    static Path repo() {
        return Path.of(System.getProperty("ivcuda.repo", "..")).toAbsolutePath().normalize();
    }

    /** Null when libvirtd answers, the hook is installed and we are root; else what is missing. */
    static String libvirtProblem() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "not running as root";
        }
        Result version = run(List.of("virsh", "-c", URI, "version"));
        if (version.status() != 0) {
            return "libvirtd is unreachable at " + URI + ": " + version.output().trim();
        }
        if (!Files.isExecutable(HOOK)) {
            return "the hook " + HOOK + " is not installed (see .ci/run)";
        }
        return null;
    }

    /** The build's provisioner jar as a daemon, its output in {@code log}. */
    static Process startProvisionerDaemon(Path repo, Path log) throws java.io.IOException {
        Path jar = repo.resolve("ivshmem-provisioner/target/ivshmem-provisioner.jar");
        if (!java.nio.file.Files.exists(jar)) {
            throw new AssertionError("the provisioner jar is built before the integration test: " + jar);
        }
        return new ProcessBuilder(javaCommand(), "-jar", jar.toString(), "daemon")
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
    }

    /** The java of this test JVM, for the servers and daemons the tests start. */
    static String javaCommand() {
        return ProcessHandle.current().info().command().orElse("java");
    }

    static void waitFor(BooleanSupplier condition, long ms, String what) throws InterruptedException {
        long deadline = System.nanoTime() + ms * 1_000_000;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out after " + ms + " ms waiting until " + what);
            }
            Thread.sleep(100);
        }
    }

    /** The server processes of one VM: every one carries {@code --config <instance config>}. */
    static List<Long> serverPids(InstancePaths paths) {
        List<Long> pids = new ArrayList<>();
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path proc : procs) {
                try {
                    String cmdline = Files.readString(proc.resolve("cmdline"), StandardCharsets.UTF_8);
                    String stat = Files.readString(proc.resolve("stat"));
                    char state = stat.charAt(stat.lastIndexOf(')') + 2);
                    if (state != 'Z' && List.of(cmdline.split("\0")).contains(paths.instanceConfig().toString())) {
                        pids.add(Long.parseLong(proc.getFileName().toString()));
                    }
                } catch (IOException | RuntimeException e) {
                    // gone meanwhile
                }
            }
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return pids;
    }
}
