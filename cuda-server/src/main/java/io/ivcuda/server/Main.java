package io.ivcuda.server;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.JnaCudaBackend;
import io.ivcuda.server.backend.NoDriver;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import sun.misc.Signal;

/**
 * {@code ivcuda-server [--config FILE]... [--set KEY=VALUE]...} (docs/architecture.md). Exit status 0
 * after SIGTERM (or, in doorbell mode, once QEMU left), 1 for a failure while serving, 2 for a
 * configuration error, 3 when the host has no usable GPU for {@code gpu}. A refusal (2, 3) is one line
 * on stderr, {@code ivcuda-server: CAUSE}, which the hook puts first in the VM's start error.
 */
@Command(name = "ivcuda-server", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        usageHelpAutoWidth = true, subcommands = RelayCommand.class,
        header = "The per-VM cuda-server of ivcuda: serves one VM's CUDA driver calls from its ivshmem region.",
        description = {
            "Started by the libvirt hook (/etc/libvirt/hooks/qemu.d/50-ivcuda) before the VM's QEMU, with the VM's "
                + "instance configuration /run/ivcuda/UUID.properties, directly or as ivcuda-server@UUID.service; not "
                + "meant to be started by hand except for tests. Inside a back-end domain, ivcuda-backend-agent starts one "
                + "per assigned service slot, with region.kind=device on the slot's PCI memory file. It maps the region, initialises the GPU, writes READY "
                + "into the region's header and serves the guest's channels until SIGTERM.",
            "",
            "With a pidfile it also keeps a status file beside it (UUID.status), written when READY and on SIGUSR1, "
                + "which ivshmem-provisioner status reads."},
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {
            "0: stopped by SIGTERM or SIGINT, or (doorbell mode) QEMU left",
            "1: failed while starting or serving (see the log)",
            "2: configuration error (unknown key, bad value, missing region.path)",
            "3: no usable GPU for the gpu key (no driver, cuInit failed, no such device)",
            "4: compute.share below 100 that MPS does not enforce, with mps.unavailable=refuse"},
        footerHeading = "%nSee also:%n",
        footer = {"50-ivcuda(8), ivshmem-provisioner(8), /usr/share/doc/ivcuda/operations.md"})
public final class Main implements Callable<Integer> {
    static final int EXIT_FAILURE = 1;
    static final int EXIT_CONFIG = 2;
    static final int EXIT_NO_GPU = 3;
    static final int EXIT_NO_SHARE = 4;
    /** Starts the one line that says why the server refuses to run (the hook looks for it). */
    static final String SAYS = "ivcuda-server: ";

    @Option(names = "--config", paramLabel = "FILE", description = "properties file; later files override earlier ones")
    List<Path> configs = new ArrayList<>();

    @Option(names = "--set", paramLabel = "KEY=VALUE", description = "overrides every file")
    List<String> sets = new ArrayList<>();

    /** The package version, from the jar's manifest (0.1.0-SNAPSHOT is package 0.1.0~SNAPSHOT). */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String maven = Main.class.getPackage().getImplementationVersion();
            return new String[] {"ivcuda-server (ivcuda) " + (maven == null ? "(not built as a package)" : maven.replace('-', '~'))};
        }
    }

    public static void main(String[] args) {
        CommandLine cl = new CommandLine(new Main());
        cl.setParameterExceptionHandler((e, a) -> {
            System.err.println(SAYS + e.getMessage() + " (ivcuda-server --help)");
            return EXIT_CONFIG;
        });
        System.exit(cl.execute(args));
    }

    @Override
    public Integer call() {
        ServerConfig config;
        try {
            config = ServerConfig.load(configs, sets);
        } catch (io.ivcuda.common.IvcudaConfigException e) {
            System.err.println(SAYS + "configuration error: " + e.getMessage());
            return EXIT_CONFIG;
        }
        CudaBackend backend = null;
        if (config.backend() == io.ivcuda.common.Backend.CUDA) {
            CudaBackend cuda = JnaCudaBackend.load();
            String unusable = unusableGpu(cuda, config.gpu());
            if (unusable != null) {
                System.err.println(SAYS + "no usable GPU (gpu " + config.gpu() + "): " + unusable);
                return EXIT_NO_GPU;
            }
            backend = cuda;
        }
        Logger log = LogManager.getLogger(Main.class);
        ComputeShare share = ComputeShare.check(config, backend, System.getenv());
        if (share.state() == ComputeShare.State.REFUSED) {
            System.err.println(SAYS + share.refusal());
            return EXIT_NO_SHARE;
        }
        if (share.state() == ComputeShare.State.UNSHARED) {
            log.warn("compute share {} % NOT enforced, running with the whole GPU (mps.unavailable=unshared): {}",
                    share.share(), share.problem());
        } else if (share.state() == ComputeShare.State.ENFORCED) {
            log.info("compute share {} % of the GPU's SMs, enforced by MPS", share.share());
        }
        CountDownLatch stop = new CountDownLatch(1);
        Signal.handle(new Signal("TERM"), s -> stop.countDown());
        Signal.handle(new Signal("INT"), s -> stop.countDown());
        CudaServer server;
        try {
            server = new CudaServer(config, backend);
        } catch (IllegalArgumentException e) {
            System.err.println(SAYS + "configuration error: " + e.getMessage());
            return EXIT_CONFIG;
        }
        String[] why = {"signal"};
        server.whenVmLeaves(() -> {
            why[0] = "QEMU left";
            stop.countDown();
        });
        StatusFile status = StatusFile.besidePidfile(config, server, share);
        try {
            server.start();
            if (status != null) {
                status.write();
                Signal.handle(new Signal("USR1"), s -> status.write());
            }
            stop.await();
            log.info("stopping ({})", why[0]);
            server.close();
            return 0;
        } catch (Exception e) {
            log.error("cuda-server failed: {}", e.getMessage(), e);
            server.close();
            return EXIT_FAILURE;
        } finally {
            if (status != null) {
                status.delete();
            }
        }
    }

    /** cuda.h: the MPS client cannot reach its server, or the server is recovering from a fatal fault. */
    static final int MPS_CONNECTION_FAILED = 805;
    static final int MPS_RPC_FAILURE = 806;
    static final int MPS_SERVER_NOT_READY = 807;
    /** How long cuInit is retried while MPS is not ready (docs/sharing.md, "Fault recovery"). */
    static final long MPS_WAIT_MS = 60_000;

    /** Whether {@code result} says MPS cannot take a new client yet (it may be recovering from a client's fault). */
    static boolean mpsNotReady(int result) {
        return result == MPS_CONNECTION_FAILED || result == MPS_RPC_FAILURE || result == MPS_SERVER_NOT_READY;
    }

    /**
     * cuInit, retried for up to {@code waitMs} while it answers one of MPS's not-ready results: after a
     * fatal fault of any MPS client NVIDIA documents that the MPS server refuses new clients until every
     * affected client exited, and a server replacing its CUDA process is such a new client.
     */
    static int initWaitingForMps(CudaBackend cuda, long waitMs) {
        int result = cuda.init(0);
        long deadline = System.nanoTime() + waitMs * 1_000_000;
        boolean said = false;
        while (mpsNotReady(result) && System.nanoTime() - deadline < 0) {
            if (!said) {
                LogManager.getLogger(Main.class).warn("cuInit: CUresult {} (MPS not ready: it may be recovering from "
                        + "a fatal fault of one of its clients); retrying for up to {} s", result, waitMs / 1000);
                said = true;
            }
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            result = cuda.init(0);
        }
        return result;
    }

    /**
     * Whether the cuda backend can serve {@code gpu} here: the driver loads, cuInit succeeds, and an index
     * names a device that exists (a UUID is matched when the server starts: a wrong one gets its guests
     * CUDA_ERROR_NO_DEVICE). Null when usable, else why not. The host-memory backend is always usable.
     */
    static String unusableGpu(CudaBackend cuda, String gpu) {
        if (NoDriver.is(cuda)) {
            return "the CUDA driver (libcuda.so.1) cannot be loaded: is NVIDIA's driver installed on this host?";
        }
        int result = initWaitingForMps(cuda, MPS_WAIT_MS);
        if (result != CuResult.SUCCESS) {
            return "cuInit failed: " + CuResult.name(result) + (result == CuResult.NO_DEVICE ? " (the driver finds no GPU)" : "");
        }
        if (!gpu.chars().allMatch(Character::isDigit) || gpu.isEmpty()) {
            return null;
        }
        var out = cuda.newOut();
        try {
            result = cuda.deviceGetCount(out);
            if (result != CuResult.SUCCESS) {
                return "cuDeviceGetCount failed: " + CuResult.name(result);
            }
            int count = out.value;
            boolean exists = gpu.length() < 10 && Long.parseLong(gpu) < count;
            return exists ? null : "no GPU with index " + gpu + " (the driver finds " + count + ")";
        } finally {
            out.free();
        }
    }
}
