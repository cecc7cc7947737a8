package io.ivcuda.hook;

import io.ivcuda.common.ByteSize;
import io.ivcuda.common.DomainXml;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.Mode;
import io.ivcuda.common.ShmemDevice;
import io.ivcuda.common.VmSettings;
import java.io.IOException;
import java.io.PrintStream;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Properties;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The libvirt qemu hook for one call: {@code qemu DOMAIN OP SUBOP EXTRA} with the domain XML on stdin.
 * prepare/begin creates the region and starts the VM's server, and returns once it is READY;
 * release/end stops it and removes what belongs to the VM; reconnect/begin checks it is still there
 * (in plain mode it starts it again on the same region if not)
 * (and always succeeds, since a failing reconnect hook kills the running VM); migrate and restore of a
 * tagged domain are refused. Never writes to stdout and never calls libvirt.
 */
final class Hook {
    private static final Logger LOG = LogManager.getLogger(Hook.class);
    static final int LOG_TAIL_LINES = 20;

    private final HostConfig host;
    private final ServerLauncher launcher;
    private final PrintStream user;

    Hook(HostConfig host, ServerLauncher launcher, PrintStream user) {
        this.host = host;
        this.launcher = launcher;
        this.user = user;
    }

    /** The exit status libvirt gets: non-zero refuses prepare/start/started/migrate/restore. */
    int run(String[] args, String xml) {
        if (args.length < 3) {
            user.println("ivcuda hook: expected arguments DOMAIN OPERATION SUB-OPERATION [EXTRA]");
            return 0;
        }
        String operation = args[1] + " " + args[2];
        boolean mustSucceed = operation.startsWith("reconnect") || operation.startsWith("release") || operation.startsWith("stopped");
        try {
            DomainXml domain = DomainXml.parse(xml);
            InstancePaths paths = InstancePaths.of(domain.uuid(), host);
            if (!domain.isTagged()) {
                // The element can vanish from the live XML while the VM runs (virsh metadata --live --remove):
                // a server started for it must still go with the VM.
                if (operation.equals("release end") && Files.exists(paths.instanceConfig())) {
                    release(domain, paths);
                }
                return 0;
            }
            switch (operation) {
                case "prepare begin" -> prepare(domain, paths);
                case "release end" -> release(domain, paths);
                case "reconnect begin" -> reconnect(domain, paths);
                case "migrate begin" -> throw new HookException("domain '" + domain.name()
                        + "': migrating a domain with ivcuda GPU sharing is not supported yet; shut it down and start it on the other host");
                case "restore begin" -> throw new HookException("domain '" + domain.name()
                        + "': restoring a saved domain with ivcuda GPU sharing is not supported yet (its GPU state cannot be saved); start it afresh");
                default -> LOG.debug("{}: nothing to do for {}", domain.name(), operation);
            }
            return 0;
        } catch (HookException | IvcudaConfigException e) {
            LOG.error("{} {}: {}", args[0], operation, e.getMessage());
            user.println("ivcuda: " + e.getMessage());
            return mustSucceed ? 0 : 1;
        } catch (RuntimeException e) {
            LOG.error("{} {}: unexpected failure", args[0], operation, e);
            user.println("ivcuda: " + args[0] + " " + operation + ": unexpected failure: " + e);
            return mustSucceed ? 0 : 1;
        }
    }

    private void prepare(DomainXml domain, InstancePaths paths) throws HookException, IvcudaConfigException {
        GpuElement element = domain.parseGpuElement();
        VmSettings settings = VmSettings.resolve(element, host, domain.name());
        ShmemDevice wanted = ShmemDevice.desired(paths, settings);
        ShmemDevice present = domain.currentShmem();
        if (present == null) {
            throw new HookException("domain '" + domain.name() + "' has the <ivcuda:gpu> element but not its device <shmem name='"
                    + paths.shmemName() + "'>. The ivshmem-provisioner adds it when the domain is defined: is it running "
                    + "(systemctl status ivcuda-provisioner)? To add it now: ivshmem-provisioner provision " + domain.name()
                    + " (or: ivshmem-provisioner status, to see why it was not added)");
        }
        if (!wanted.equals(present)) {
            throw new HookException("domain '" + domain.name() + "': its device " + present.describe()
                    + " does not match the <ivcuda:gpu> element, which asks for " + wanted.describe()
                    + ". Run: ivshmem-provisioner provision " + domain.name());
        }
        if (launcher.isRunning(paths)) {
            // Left over from a start that never reached release: it holds a region QEMU is about to replace.
            LOG.warn("{}: a server for this domain is still running; stopping it first", domain.name());
            launcher.stop(paths);
        }
        createRuntimeDir();
        RegionFile.create(paths.regionFile(), settings.regionSize(), host.serverUser(), host.qemuGroup());
        writeInstanceConfig(domain, paths, settings);
        LOG.info("{}: starting its cuda-server ({}, GPU {}, region {} {})", domain.name(), settings.mode().word(),
                settings.gpu(), paths.regionFile(), ByteSize.describe(settings.regionSize()));
        ServerLauncher.Started started;
        try {
            started = launcher.start(paths);
        } catch (HookException e) {
            cleanUp(paths);
            throw e;
        }
        long deadline = System.nanoTime() + host.serverReadyTimeoutMs() * 1_000_000;
        while (true) {
            RegionFile.Header header = RegionFile.read(paths.regionFile());
            // Doorbell: QEMU connects to the server's socket at once and fails without it.
            boolean socketReady = settings.mode() != Mode.DOORBELL || Files.exists(paths.doorbellSocket());
            if (header.isReady() && socketReady) {
                LOG.info("{}: cuda-server ready", domain.name());
                return;
            }
            String ended = started.exitDescription();
            if (ended != null) {
                throw failedStart(domain, paths, "the cuda-server " + ended + " before it was ready", header);
            }
            if (System.nanoTime() > deadline) {
                String what = header.isReady()
                        ? "the cuda-server is READY but did not create its doorbell socket " + paths.doorbellSocket()
                                + " within " + host.serverReadyTimeoutMs() + " ms (server.ready.timeout.ms)"
                        : "the cuda-server was not ready within " + host.serverReadyTimeoutMs() + " ms (server.ready.timeout.ms)";
                throw failedStart(domain, paths, what, header);
            }
            ServerProcesses.sleep(20);
        }
    }

    private HookException failedStart(DomainXml domain, InstancePaths paths, String what, RegionFile.Header header) {
        String tail = launcher.logTail(paths, LOG_TAIL_LINES);
        cleanUp(paths);
        StringBuilder message = new StringBuilder("domain '" + domain.name() + "': " + what);
        if (!header.serverMessage().isEmpty()) {
            message.append(": ").append(header.serverMessage());
        }
        message.append(". Last lines of its log (").append(launcher.logLocation(paths)).append("):\n").append(tail.strip());
        return new HookException(message.toString());
    }

    private void release(DomainXml domain, InstancePaths paths) {
        LOG.info("{}: stopping its cuda-server and removing its files", domain.name());
        cleanUp(paths);
    }

    /** Stops the server and removes region, socket, instance configuration and pidfile. Never throws. */
    private void cleanUp(InstancePaths paths) {
        launcher.stop(paths);
        for (Path path : new Path[] {paths.regionFile(), paths.doorbellSocket(), paths.instanceConfig(), paths.pidfile()}) {
            try {
                Files.deleteIfExists(path);
            } catch (IOException e) {
                LOG.warn("cannot remove {}: {}", path, e.getMessage());
            }
        }
    }

    private void reconnect(DomainXml domain, InstancePaths paths) {
        if (launcher.isRunning(paths)) {
            LOG.info("{}: libvirt reconnected; its cuda-server is running", domain.name());
            return;
        }
        Mode mode = domain.currentShmem() == null ? null : domain.currentShmem().mode();
        String problem;
        if (mode == Mode.DOORBELL) {
            problem = "it cannot be restarted for a running VM in doorbell mode (QEMU cannot reconnect to a new "
                    + "ivshmem server). CUDA in this VM fails until the VM is shut down and started again";
        } else if (!Files.exists(paths.regionFile()) || !Files.exists(paths.instanceConfig())) {
            problem = "its region " + paths.regionFile() + " or instance configuration " + paths.instanceConfig()
                    + " is gone, so it cannot be restarted. CUDA in this VM fails until the VM is shut down and started again";
        } else {
            // Plain mode: QEMU still maps the same file. A new server starts a new epoch in it: guest
            // processes of the old server get CUDA_ERROR_DEVICE_UNAVAILABLE (their state died with it),
            // new ones work again without restarting the VM.
            problem = restartPlainServer(domain, paths);
            if (problem == null) {
                return;
            }
        }
        String message = "domain '" + domain.name() + "': libvirt reconnected, but its cuda-server is not running; "
                + problem + ". Server log: " + launcher.logLocation(paths);
        LOG.error(message);
        user.println("ivcuda: " + message);
    }

    /** Starts the server of a running plain-mode VM again; null when it is READY, else why not. */
    private String restartPlainServer(DomainXml domain, InstancePaths paths) {
        LOG.warn("{}: libvirt reconnected and its cuda-server is not running: starting it again on {} "
                + "(guest processes of the old server lose their CUDA state)", domain.name(), paths.regionFile());
        // the dead server's header still says READY: ready is READY written by the new one (a new epoch)
        int deadEpoch = RegionFile.read(paths.regionFile()).epoch();
        ServerLauncher.Started started;
        try {
            started = launcher.start(paths);
        } catch (HookException e) {
            return "restarting it failed: " + e.getMessage();
        }
        long deadline = System.nanoTime() + host.serverReadyTimeoutMs() * 1_000_000;
        while (System.nanoTime() < deadline) {
            RegionFile.Header header = RegionFile.read(paths.regionFile());
            if (header.isReady() && header.epoch() != deadEpoch && launcher.isRunning(paths)) {
                LOG.info("{}: cuda-server restarted and ready", domain.name());
                return null;
            }
            String ended = started.exitDescription();
            if (ended != null) {
                return "restarting it failed: the cuda-server " + ended + " before it was ready";
            }
            ServerProcesses.sleep(20);
        }
        return "restarting it failed: not ready within " + host.serverReadyTimeoutMs() + " ms (server.ready.timeout.ms)";
    }

    private void createRuntimeDir() throws HookException {
        Path dir = host.runtimeDir();
        try {
            Files.createDirectories(dir);
            // Searchable by QEMU (doorbell socket), writable by the server (pidfile, socket).
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
            var lookup = dir.getFileSystem().getUserPrincipalLookupService();
            Files.setOwner(dir, RegionFile.lookupUser(lookup, host.serverUser()));
        } catch (IOException e) {
            throw new HookException("cannot prepare the runtime directory " + dir + " (runtime.dir): " + e.getMessage(), e);
        }
    }

    /**
     * The server's whole configuration for this VM: the cuda-server keys of the host configuration
     * (backend, channel.count, …), then this VM's keys, which win. The lifecycle keys stay out: the
     * server refuses keys it does not know, which is how it catches typos.
     */
    private void writeInstanceConfig(DomainXml domain, InstancePaths paths, VmSettings settings) throws HookException {
        Properties p = new Properties();
        host.serverKeys().forEach(p::setProperty);
        p.setProperty("region.path", paths.regionFile().toString());
        p.setProperty("region.size", Long.toString(settings.regionSize()));
        p.setProperty("mode", settings.mode().word());
        p.setProperty("doorbell.socket", paths.doorbellSocket().toString());
        // prepare checked the domain's <shmem> equals the desired one, <msi vectors> included
        p.setProperty("doorbell.vectors", Integer.toString(ShmemDevice.DOORBELL_VECTORS));
        p.setProperty("gpu", settings.gpu());
        p.setProperty("memory.quota", Long.toString(settings.memoryQuota()));
        p.setProperty("domain.uuid", domain.uuid());
        p.setProperty("domain.name", domain.name());
        p.setProperty("pidfile", paths.pidfile().toString());
        try {
            StringWriter text = new StringWriter();
            p.store(text, "ivcuda cuda-server configuration of domain " + domain.name() + ", written by the libvirt hook:\n"
                    + "the server keys of " + host.origin() + ", then this domain's keys");
            Files.writeString(paths.instanceConfig(), text.toString(), StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            throw new HookException("cannot write " + paths.instanceConfig() + ": " + e.getMessage(), e);
        }
    }
}
