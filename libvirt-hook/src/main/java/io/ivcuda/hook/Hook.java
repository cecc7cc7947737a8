package io.ivcuda.hook;

import io.ivcuda.common.ByteSize;
import io.ivcuda.common.DescriptionNote;
import io.ivcuda.common.DomainXml;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.Mode;
import io.ivcuda.common.MpsEnvironment;
import io.ivcuda.common.RegionHeader;
import io.ivcuda.common.ServerProcesses;
import io.ivcuda.common.ShmSpace;
import io.ivcuda.common.ShmemDevice;
import io.ivcuda.common.VmSettings;
import io.ivcuda.common.config.HostKeys;
import io.ivcuda.common.config.ServerKeys;
import java.io.IOException;
import java.io.PrintStream;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Properties;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The libvirt qemu hook for one call: {@code qemu DOMAIN OP SUBOP EXTRA} with the domain XML on stdin.
 * prepare/begin creates the region and starts the VM's server, and returns once it is READY;
 * release/end stops it and removes what belongs to the VM; reconnect/begin checks it is still there
 * (in plain mode it starts it again on the same region if not)
 * (and always succeeds, since a failing reconnect hook kills the running VM); migrate and restore of a
 * tagged domain are refused. A domain that carries another domain's ivcuda device, or our device
 * without the element, never starts. What the user reads starts with the cause in a few words.
 * Never writes to stdout and never calls libvirt.
 */
final class Hook {
    private static final Logger LOG = LogManager.getLogger(Hook.class);
    static final int LOG_TAIL_LINES = 20;
    /** How the cuda-server starts the one line that says why it refuses to run (Main, before any log line). */
    static final String SERVER_SAYS = "ivcuda-server: ";
    /** The runtime directory's mode, as packaging/files/ivcuda.tmpfiles.in and the postinst make it. */
    static final String RUNTIME_DIR_MODE = "rwxr-x---";
    /** How to see whether the provisioner daemon runs, on this host's kind of init. */
    static final String PROVISIONER_STATUS = java.nio.file.Files.isDirectory(HookMain.SYSTEMD_RUNNING)
            ? "systemctl status ivcuda-provisioner" : "service ivcuda-provisioner status";

    private final HostConfig host;
    private final ServerLauncher launcher;
    private final PrintStream user;
    private final DomainNames domainNames;
    private final BackendHook backends;

    Hook(HostConfig host, ServerLauncher launcher, PrintStream user) {
        this(host, launcher, user, new DomainNames(host.runtimeDir(), DomainNames.LIBVIRT_XML_DIRS));
    }

    Hook(HostConfig host, ServerLauncher launcher, PrintStream user, DomainNames domainNames) {
        this(host, launcher, user, domainNames, new BackendHook(host, domainNames, SlotRelays.launchedAs(host, launcher)));
    }

    Hook(HostConfig host, ServerLauncher launcher, PrintStream user, DomainNames domainNames, BackendHook backends) {
        this.host = host;
        this.launcher = launcher;
        this.user = user;
        this.domainNames = domainNames;
        this.backends = backends;
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
            GpuElement role = roleElement(domain);
            java.util.Set<String> own = role == null ? java.util.Set.of(paths.shmemName()) : backends.ownDevices(domain, role);
            switch (operation) {
                case "prepare begin", "migrate begin", "restore begin" -> refuseForeignDevices(domain, own);
                case "reconnect begin" -> warnOfForeignDevices(domain, own);
                default -> { }
            }
            if (role != null) {
                roleOperation(operation, domain, role);
                return 0;
            }
            if (!domain.isTagged()) {
                if (operation.equals("prepare begin") && domain.currentShmem() != null) {
                    throw new HookException("ivcuda device " + paths.shmemName() + " without the <ivcuda:gpu> element",
                            "domain '" + domain.name() + "' carries the device <shmem name='" + paths.shmemName() + "'> but not "
                                    + "the element that asks for it, so no cuda-server would serve the region QEMU creates. "
                                    + "The ivshmem-provisioner removes the device (ivshmem-provisioner provision " + domain.name()
                                    + "; is it running?), or put the element back.");
                }
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
                case "migrate begin", "restore begin" -> refuseMoving(operation, domain);
                default -> LOG.debug("{}: nothing to do for {}", domain.name(), operation);
            }
            return 0;
        } catch (HookException e) {
            LOG.error("{} {}: {}{}", args[0], operation, e.getMessage(), e.detail() == null ? "" : ". " + e.detail());
            tell(e.getMessage(), e.detail());
            return mustSucceed ? 0 : 1;
        } catch (IvcudaConfigException e) {
            LOG.error("{} {}: {}", args[0], operation, e.getMessage());
            tell(e.summary(), e.getMessage());
            return mustSucceed ? 0 : 1;
        } catch (RuntimeException e) {
            LOG.error("{} {}: unexpected failure", args[0], operation, e);
            tell("unexpected failure in the hook: " + e, args[0] + " " + operation + "; see the hook's log ("
                    + HookMain.logLocation(host) + ")");
            return mustSucceed ? 0 : 1;
        }
    }

    private static void refuseMoving(String operation, DomainXml domain) throws HookException {
        if (operation.startsWith("migrate")) {
            throw new HookException("migrating a domain with ivcuda GPU sharing is not supported",
                    "domain '" + domain.name() + "': its GPU state (contexts, memory, streams) lives in its cuda-server on "
                            + "the source host and cannot move with it. Shut it down and start it on the other host.");
        }
        throw new HookException("a saved domain with ivcuda GPU sharing cannot be restored",
                "domain '" + domain.name() + "': its GPU state lived in the cuda-server that stopped when it was saved. "
                        + "Start it afresh (virsh managedsave-remove " + domain.name() + ", or without the save file).");
    }

    /** A back-end's or front-end's element (issue 16); null for any other domain, or an element that does not parse. */
    private static GpuElement roleElement(DomainXml domain) {
        try {
            GpuElement element = domain.parseGpuElement();
            return element != null && (element.backendRole() || element.frontEnd()) ? element : null;
        } catch (IvcudaConfigException e) {
            return null; // the host-served path refuses it with the element's own words
        }
    }

    /** Back-end and front-end domains: no cuda-server on the host ({@link BackendHook}). */
    private void roleOperation(String operation, DomainXml domain, GpuElement role) throws HookException, IvcudaConfigException {
        switch (operation) {
            case "prepare begin" -> {
                if (role.backendRole()) {
                    backends.prepareBackend(domain, role);
                } else {
                    backends.prepareFrontend(domain, role);
                }
            }
            case "started begin" -> {
                if (role.backendRole()) {
                    backends.startedBackend(domain);
                }
            }
            case "release end" -> {
                if (role.backendRole()) {
                    backends.releaseBackend(domain);
                } else {
                    backends.releaseFrontend(domain);
                }
            }
            case "migrate begin", "restore begin" -> refuseMoving(operation, domain);
            default -> LOG.debug("{}: nothing to do for {}", domain.name(), operation);
        }
    }

    /**
     * Stops every cuda-server of this host (package removal): each one the runtime directory has an instance
     * configuration for, and any other process started with a configuration from there; removes what
     * belonged to each (region, socket, configuration, pidfile, status file) and every region file of ours
     * left in {@code shm.dir}; then the back-ends' slot relays (their sockets and pidfiles too); then the MPS
     * control daemon the launcher started, if it did. A stopped server
     * marks its region STOPPED first, so the guest library tells its CUDA calls the device is gone; QEMU keeps
     * running on its mapping of the (now unlinked) region. Says on {@code out} what it did, one line per domain
     * (and per MPS action). 0 when nothing of ours runs any more, else 1.
     */
    int stopAll(PrintStream out) {
        int failed = 0;
        java.util.Set<String> uuids = new java.util.TreeSet<>();
        for (Path config : listed(host.runtimeDir(), "*.properties")) {
            String uuid = config.getFileName().toString().replaceFirst("\\.properties$", "");
            if (DomainXml.isUuid(uuid)) {
                uuids.add(uuid);
            }
        }
        for (Path region : listed(host.shmDir(), InstancePaths.SHMEM_PREFIX + "*")) {
            String uuid = region.getFileName().toString().substring(InstancePaths.SHMEM_PREFIX.length());
            if (DomainXml.isUuid(uuid)) {
                uuids.add(uuid);
            }
        }
        for (String uuid : uuids) {
            InstancePaths paths = InstancePaths.of(uuid, host);
            String who = domainNames.describe(uuid);
            boolean running = launcher.isRunning(paths);
            cleanUp(paths);
            if (launcher.isRunning(paths)) {
                out.println("ivcuda: could not stop the cuda-server of " + who + " (" + launcher.logLocation(paths) + ")");
                failed++;
            } else if (running) {
                LOG.info("{}: cuda-server stopped (--stop-all)", who);
                out.println("ivcuda: stopped the cuda-server of " + who + ": the domain keeps running, but CUDA in its guest "
                        + "fails from now on (the device is gone); shut it down and start it again once ivcuda is back");
            } else {
                out.println("ivcuda: removed what was left of " + who + " (no cuda-server was running)");
            }
        }
        // a server whose instance configuration is gone still names it on its command line
        List<Long> strays = ServerProcesses.findWithPrefix(host.runtimeDir().toString() + "/");
        if (!strays.isEmpty()) {
            ServerProcesses.terminate(strays, host.serverStopTimeoutMs());
            out.println("ivcuda: stopped cuda-server processes without a domain: " + strays);
        }
        // the back-ends' slot relays (doorbell mode), units or not: each names its socket in the runtime directory
        // (a unit's relay ends as on its unit's stop); its socket, pidfile, peers and unit environment files go with it
        List<Long> relays = ServerProcesses.findRelays(host.runtimeDir());
        if (!relays.isEmpty()) {
            ServerProcesses.terminate(relays, host.serverStopTimeoutMs());
            if (ServerProcesses.findRelays(host.runtimeDir()).isEmpty()) {
                out.println("ivcuda: stopped the back-ends' slot relays: " + relays);
            } else {
                out.println("ivcuda: could not stop every back-end slot relay: " + ServerProcesses.findRelays(host.runtimeDir()));
                failed++;
            }
        }
        for (Path left : listed(host.runtimeDir(), "relay-*")) {
            try {
                Files.deleteIfExists(left);
            } catch (java.io.IOException e) {
                out.println("ivcuda: could not remove " + left + ": " + e.getMessage());
            }
        }
        // after the servers, its clients: a daemon left running as server.user keeps that user from being removed
        if (!launcher.stopMpsDaemon(out)) {
            failed++;
        }
        return failed == 0 ? 0 : 1;
    }

    private static List<Path> listed(Path dir, String glob) {
        List<Path> result = new java.util.ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return result;
        }
        try (var entries = Files.newDirectoryStream(dir, glob)) {
            entries.forEach(result::add);
        } catch (IOException e) {
            LOG.warn("cannot list {}: {}", dir, e.getMessage());
        }
        return result;
    }

    /**
     * What the user reads (libvirt puts our stderr at the end of its error): the cause in a few words on
     * the first line, so that virsh and virt-manager's one-line summary show it; the details after it.
     */
    private void tell(String summary, String detail) {
        user.println("ivcuda: " + summary);
        if (detail != null && !detail.isBlank() && !detail.equals(summary)) {
            user.println(detail);
        }
    }

    /**
     * Another domain's ivcuda device would make QEMU map that domain's live region — its guest could
     * read and write the other VM's CUDA channels and data — or create a region file of the other
     * domain's name. A clone copies the original's device; the provisioner removes it, and until it has,
     * the domain does not start (nor arrive by migration or restore).
     */
    private void refuseForeignDevices(DomainXml domain, java.util.Set<String> own) throws HookException {
        List<String> foreign = domain.foreignShmems(own).stream().map(e -> e.getAttribute("name")).toList();
        if (foreign.isEmpty()) {
            return;
        }
        String first = foreign.get(0);
        String owner = owner(first);
        String more = foreign.size() == 1 ? "" : " (and " + (foreign.size() - 1) + " more)";
        StringBuilder detail = new StringBuilder("domain '" + domain.name() + "' has <shmem name='" + first + "'>, the ivcuda "
                + "device of " + owner + more + ": started with it, its QEMU would map that domain's GPU region. A clone "
                + "copies the original's device; the ivshmem-provisioner removes it (ivshmem-provisioner provision "
                + domain.name() + "; is it running?) and gives the domain its own.");
        for (String other : foreign.subList(1, foreign.size())) {
            detail.append("\nAlso <shmem name='").append(other).append("'> of ").append(owner(other)).append('.');
        }
        throw new HookException("domain '" + domain.name() + "' carries the ivcuda device of " + owner + more,
                detail.toString());
    }

    /** Whose an ivcuda device is: a domain's ({@code domain 'NAME'}), a back-end's slot and its holder, or no one's. */
    private String owner(String shmemName) {
        String backend = backends.describeDevice(shmemName);
        if (backend != null) {
            return backend;
        }
        String uuid = DomainXml.uuidOfShmemName(shmemName);
        return uuid == null ? "no domain (not a name ivcuda makes)" : domainNames.describe(uuid);
    }

    /** reconnect must succeed (a failing reconnect kills the VM): a foreign device is only reported. */
    private void warnOfForeignDevices(DomainXml domain, java.util.Set<String> own) {
        for (org.w3c.dom.Element e : domain.foreignShmems(own)) {
            String shmemName = e.getAttribute("name");
            String message = "domain '" + domain.name() + "' runs with <shmem name='" + shmemName + "'>, the ivcuda device of "
                    + owner(shmemName) + ": shut it down; the provisioner removes the "
                    + "device before its next start";
            LOG.error(message);
            user.println("ivcuda: " + message);
        }
    }

    private void prepare(DomainXml domain, InstancePaths paths) throws HookException, IvcudaConfigException {
        GpuElement element = domain.parseGpuElement();
        VmSettings settings = VmSettings.resolve(element, host, domain.name());
        ShmemDevice wanted = ShmemDevice.desired(paths, settings);
        ShmemDevice present = domain.currentShmem();
        if (present == null) {
            // The provisioner writes why it did not provision a domain into its description (DescriptionNote).
            String provisionerSays = DescriptionNote.errorCause(domain.description());
            throw new HookException(provisionerSays != null ? provisionerSays
                    : "domain '" + domain.name() + "' has no ivcuda device: run ivshmem-provisioner provision " + domain.name(),
                    "domain '" + domain.name() + "' has the <ivcuda:gpu> element but not its device <shmem name='"
                    + paths.shmemName() + "'>, so it would start without its GPU. The ivshmem-provisioner adds the device "
                    + "when the domain is defined or its element changes: is it running (" + PROVISIONER_STATUS + ")? "
                    + "To add it now: ivshmem-provisioner provision " + domain.name()
                    + " (or: ivshmem-provisioner status, to see why it was not added)");
        }
        if (!wanted.equals(present)) {
            throw new HookException("the ivcuda device does not match the <ivcuda:gpu> element yet",
                    "domain '" + domain.name() + "': its device " + present.describe()
                    + " does not match the element, which asks for " + wanted.describe()
                    + ". Run: ivshmem-provisioner provision " + domain.name());
        }
        String space = ShmSpace.doesNotFitNow(host.shmDir(), settings.regionSize());
        if (space != null) {
            throw new HookException(space, "domain '" + domain.name() + "': its region would not find the memory it needs "
                    + "once the server and the guest use it. Free memory in " + host.shmDir() + " (other VMs' regions live "
                    + "there too), make it larger (mount -o remount,size=… " + host.shmDir() + "), or give the domain a "
                    + "smaller size attribute.");
        }
        if (launcher.isRunning(paths)) {
            // Left over from a start that never reached release: it holds a region QEMU is about to replace.
            LOG.warn("{}: a server for this domain is still running; stopping it first", domain.name());
            launcher.stop(paths);
        }
        createRuntimeDir();
        RegionFile.create(paths.regionFile(), settings.regionSize(), host.serverUser(), host.qemuGroup());
        writeInstanceConfig(domain, paths, settings);
        writeServerEnvironment(paths, settings);
        if (settings.shared()) {
            String mps = launcher.ensureMpsDaemon();
            if (mps != null) {
                // the server decides: it refuses the share or runs unshared (mps.unavailable), and says so
                LOG.warn("{}: the MPS control daemon is not running: {}", domain.name(), mps);
            }
        }
        LOG.info("{}: starting its cuda-server ({}, GPU {}, region {} {}{})", domain.name(), settings.mode().word(),
                settings.gpu(), paths.regionFile(), ByteSize.describe(settings.regionSize()),
                settings.shared() ? ", " + settings.computeShare() + " % of the SMs through MPS" : "");
        ServerLauncher.Started started;
        try {
            started = launcher.start(paths);
        } catch (HookException e) {
            cleanUp(paths);
            throw e;
        }
        // Doorbell: QEMU connects to the server's socket at once and fails without it.
        ReadyWait.Outcome outcome = ReadyWait.await(paths.regionFile(), started, host.serverReadyTimeoutMs(),
                header -> header.isReady() && (settings.mode() != Mode.DOORBELL || Files.exists(paths.doorbellSocket())));
        if (outcome.ending() == ReadyWait.Ending.READY) {
            LOG.info("{}: cuda-server ready", domain.name());
            return;
        }
        String within = " within " + host.serverReadyTimeoutMs() + " ms (" + HostKeys.SERVER_READY_TIMEOUT_MS.name() + ")";
        String what = outcome.ending() == ReadyWait.Ending.SERVER_ENDED
                ? "the cuda-server " + outcome.exit() + " before it was ready"
                : outcome.header().isReady()
                        ? "the cuda-server is READY but did not create its doorbell socket " + paths.doorbellSocket() + within
                        : "the cuda-server was not ready" + within;
        throw failedStart(domain, paths, what, outcome.header());
    }

    private HookException failedStart(DomainXml domain, InstancePaths paths, String what, RegionHeader header) {
        String tail = launcher.logTail(paths, LOG_TAIL_LINES).strip();
        cleanUp(paths);
        String happened = what + (header.serverMessage().isEmpty() ? "" : ": " + header.serverMessage());
        // A server that refuses (configuration error, no usable GPU) says why in one line of its own: that leads.
        String serverSays = null;
        for (String line : tail.split("\n")) {
            if (line.startsWith(SERVER_SAYS)) {
                serverSays = line.substring(SERVER_SAYS.length()).strip();
            }
        }
        String summary = serverSays != null ? serverSays : happened;
        return new HookException(summary, "domain '" + domain.name() + "': " + happened + ". Its log since this start ("
                + launcher.logLocation(paths) + "):\n" + tail);
    }

    private void release(DomainXml domain, InstancePaths paths) {
        LOG.info("{}: stopping its cuda-server and removing its files", domain.name());
        cleanUp(paths);
    }

    /** Stops the server and removes region, socket, instance configuration, pidfile and status file. Never throws. */
    private void cleanUp(InstancePaths paths) {
        launcher.stop(paths);
        for (Path path : new Path[] {paths.regionFile(), paths.doorbellSocket(), paths.instanceConfig(), paths.pidfile(),
                paths.statusFile(), paths.serverEnvironment()}) {
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
        int deadEpoch = RegionHeader.read(paths.regionFile()).epoch();
        ServerLauncher.Started started;
        try {
            started = launcher.start(paths);
        } catch (HookException e) {
            return "restarting it failed: " + e.getMessage();
        }
        ReadyWait.Outcome outcome = ReadyWait.await(paths.regionFile(), started, host.serverReadyTimeoutMs(),
                header -> header.isReady() && header.epoch() != deadEpoch && launcher.isRunning(paths));
        return switch (outcome.ending()) {
            case READY -> {
                LOG.info("{}: cuda-server restarted and ready", domain.name());
                yield null;
            }
            case SERVER_ENDED -> "restarting it failed: the cuda-server " + outcome.exit() + " before it was ready";
            case TIMED_OUT -> "restarting it failed: not ready within " + host.serverReadyTimeoutMs() + " ms ("
                    + HostKeys.SERVER_READY_TIMEOUT_MS.name() + ")";
        };
    }

    /**
     * The runtime directory as the packages make it (tmpfiles.d, postinst): mode 0750, owner the server
     * user (pidfile, socket, status file), group QEMU's (it connects to the doorbell socket), others nothing.
     */
    private void createRuntimeDir() throws HookException {
        createRuntimeDir(host);
    }

    static void createRuntimeDir(HostConfig host) throws HookException {
        Path dir = host.runtimeDir();
        try {
            Files.createDirectories(dir);
            var lookup = dir.getFileSystem().getUserPrincipalLookupService();
            PosixFileAttributeView view = Files.getFileAttributeView(dir, PosixFileAttributeView.class);
            view.setOwner(RegionFile.lookupUser(lookup, host.serverUser()));
            view.setGroup(RegionFile.lookupGroup(lookup, host.qemuGroup()));
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString(RUNTIME_DIR_MODE));
        } catch (IOException e) {
            throw new HookException("cannot prepare the runtime directory " + dir + " (" + HostKeys.RUNTIME_DIR.name() + "): " + e.getMessage(), e);
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
        ServerKeys.REGION_PATH.set(p, paths.regionFile());
        ServerKeys.REGION_SIZE.set(p, settings.regionSize());
        ServerKeys.MODE.set(p, settings.mode());
        ServerKeys.DOORBELL_SOCKET.set(p, paths.doorbellSocket().toString());
        // prepare checked the domain's <shmem> equals the desired one, <msi vectors> included
        ServerKeys.DOORBELL_VECTORS.set(p, (long) ShmemDevice.DOORBELL_VECTORS);
        ServerKeys.GPU.set(p, settings.gpu());
        ServerKeys.MEMORY_QUOTA.set(p, settings.memoryQuota());
        ServerKeys.COMPUTE_SHARE.set(p, (long) settings.computeShare());
        ServerKeys.DOMAIN_UUID.set(p, domain.uuid());
        ServerKeys.DOMAIN_NAME.set(p, domain.name());
        ServerKeys.PIDFILE.set(p, paths.pidfile());
        try {
            StringWriter text = new StringWriter();
            p.store(text, "ivcuda cuda-server configuration of domain " + domain.name() + ", written by the libvirt hook:\n"
                    + "the server keys of " + host.origin() + ", then this domain's keys");
            Files.writeString(paths.instanceConfig(), text.toString(), StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            throw new HookException("cannot write " + paths.instanceConfig() + ": " + e.getMessage(), e);
        }
    }

    /** The server's MPS environment (empty for the whole GPU): runtime.dir/U.env, see MpsEnvironment. */
    private void writeServerEnvironment(InstancePaths paths, VmSettings settings) throws HookException {
        try {
            MpsEnvironment.write(paths.serverEnvironment(), MpsEnvironment.of(settings, host));
        } catch (IOException e) {
            throw new HookException("cannot write " + paths.serverEnvironment() + ": " + e.getMessage(), e);
        }
    }
}
