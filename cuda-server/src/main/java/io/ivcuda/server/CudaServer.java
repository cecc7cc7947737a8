package io.ivcuda.server;

import io.ivcuda.common.RegionKind;
import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.JnaCudaBackend;
import io.ivcuda.server.backend.StdoutCapture;
import io.ivcuda.server.channel.DoorbellIdle;
import io.ivcuda.server.channel.IdleWait;
import io.ivcuda.server.channel.PlainIdle;
import io.ivcuda.server.core.FatalFault;
import io.ivcuda.server.core.Vm;
import io.ivcuda.server.doorbell.DeviceDoorbell;
import io.ivcuda.server.doorbell.Doorbells;
import io.ivcuda.server.doorbell.EventFd;
import io.ivcuda.server.doorbell.IvshmemServer;
import io.ivcuda.server.doorbell.NativeFiles;
import io.ivcuda.server.doorbell.PeerCredentials;
import io.ivcuda.server.doorbell.PeerPolicy;
import io.ivcuda.server.region.Layout;
import io.ivcuda.server.region.Region;
import io.ivcuda.wire.HeaderFlyweight;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * One VM's server, put together: maps the region and writes its header ({@link HeaderWriter},
 * READY last), opens the driver for the configured GPU ({@link DriverSession}), builds the
 * {@link Vm}, and runs the {@link ChannelWatcher} (a worker per claimed channel, reclaims) and the
 * {@link LivenessMonitor} (heartbeat, dead owners); it shuts down cleanly (STOPPING → free → STOPPED).
 * In doorbell mode it is also the VM's ivshmem server (listening before READY) and its idle threads
 * sleep until the guest rings: an idle VM's server wakes one thread once a second, the heartbeat;
 * when QEMU leaves, the VM is gone and so is this server.
 */
public final class CudaServer implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(CudaServer.class);
    private static final long HEARTBEAT_MS = 100;
    /**
     * Doorbell mode beats and checks liveness once a second while no guest process holds a channel or
     * state: each wake-up of an idle server costs CPU, and the guest declares a server dead only after
     * 5 s without a beat. While it watches a process it checks every {@link #DOORBELL_WATCH_MS}: a dead
     * process's last beat is seen up to one period late, and owner.timeout.ms (1.2 s) plus that period
     * must stay under the 2 s in which a dead process's channels and memory are given back (issue 13;
     * docs/threat-model.md, "Liveness a guest cannot starve"). Both are done by the one heartbeat
     * thread, so an idle doorbell server has a single periodic wake-up.
     */
    private static final long DOORBELL_HEARTBEAT_MS = 1000;
    private static final long DOORBELL_WATCH_MS = 500;

    private final ServerConfig config;
    private final Layout layout;
    private final CudaBackend chosenBackend;
    private Region region;
    private HeaderWriter header;
    private DriverSession driver;
    private Vm vm;
    private ChannelWatcher watcher;
    private LivenessMonitor liveness;
    private IvshmemServer ivshmem;
    /** Doorbell mode in a back-end domain: the slot device's interrupts and Doorbell register (null otherwise). */
    private DeviceDoorbell device;
    /** Doorbell mode as served: config's mode, unless a back-end slot's interrupts are unavailable (then polling). */
    private boolean doorbell;
    private java.util.function.IntConsumer interruptGuest = v -> { };
    private Doorbells doorbells;
    private int regionFd = -1;
    private volatile Runnable whenVmLeaves = () -> { };
    /** Replaces the process after a fatal fault (returns only when it failed: why); tests record instead. */
    private java.util.function.Function<String, String> replaceProcess = this::reexec;
    private final int recoveries = Reexec.recoveries(System.getenv());
    private RecoveryBudget recoveryBudget;
    /** Where the image this one replaced mapped the region (0: none): asked for again. */
    private final long previousRegionAddress = Reexec.regionAddress(System.getenv());

    public CudaServer(ServerConfig config) {
        this(config, null);
    }

    /** With a given backend (tests); null chooses by {@code backend}. */
    CudaServer(ServerConfig config, CudaBackend backend) {
        this.config = config;
        this.chosenBackend = backend;
        int channels = config.channelCount() > 0 ? config.channelCount() : Layout.autoChannelCount(config.regionSize(), config.ringBytes());
        this.layout = Layout.compute(config.regionSize(), channels, config.channelWindow(), config.ringBytes());
    }

    public Layout layout() {
        return layout;
    }

    public Vm vm() {
        return vm;
    }

    /** Doorbell mode: called once QEMU disconnects (the VM stopped or crashed); the caller stops us. */
    public void whenVmLeaves(Runnable action) {
        whenVmLeaves = action;
    }

    /** How many times this server replaced its CUDA process after a fatal fault (0: never). */
    public int recoveries() {
        return recoveries;
    }

    /** Tests: what replaces the process after a fatal fault (given the fault; returns why it failed). */
    void replaceProcessWith(java.util.function.Function<String, String> action) {
        replaceProcess = action;
    }

    /** Doorbell mode: the ring dispatcher (null in plain mode). */
    Doorbells doorbells() {
        return doorbells;
    }

    /** Doorbell mode: the ivshmem server (null in plain mode). */
    public IvshmemServer ivshmemServer() {
        return ivshmem;
    }

    /** {@code backend=host-memory}: the transport test backend; else the driver, or NoDriver when it cannot load. */
    private CudaBackend backend() {
        if (chosenBackend != null) {
            return chosenBackend;
        }
        return config.backend() == io.ivcuda.common.Backend.HOST_MEMORY ? new HostMemoryBackend() : JnaCudaBackend.load();
    }

    public void start() throws IOException {
        region = config.regionKind() == RegionKind.DEVICE
                ? Region.openDevice(config.regionPath(), config.regionSize(), previousRegionAddress)
                : Region.openOrCreate(config.regionPath(), config.regionSize(), previousRegionAddress);
        header = new HeaderWriter(region);
        doorbell = config.doorbell();
        if (doorbell && config.regionKind() == RegionKind.DEVICE) {
            doorbell = connectDeviceDoorbell();
        }
        header.init(layout, config.ownerTimeoutMs(), doorbell ? config.doorbellVectors() : 0);
        CudaBackend backend = backend();
        if (backend instanceof JnaCudaBackend) {
            // before cuInit: kernels' printf must reach their guest process, not our stdout
            StdoutCapture.install();
        }
        driver = DriverSession.open(backend, region, layout.poolOffset(), config.gpu(), header::message);
        // doorbell mode: QEMU's connection to our ivshmem socket cannot survive an exec (QEMU does not reconnect);
        // and a server that replaced its CUDA process limit.recoveries times within the window does not again
        recoveryBudget = RecoveryBudget.of(System.getenv(), config.limits().recoveries(),
                config.limits().recoveriesWindowMs(), System.currentTimeMillis());
        String cannotRestart = doorbell ? "doorbell mode cannot restart it"
                : recoveryBudget.allows() ? null : "the server will not replace it again (" + recoveryBudget.describe() + ")";
        // recover and stayPoisoned read vm and header when they run, after a fault: by then both are set
        FatalFault.Recovery recovery = cannotRestart == null ? FatalFault.Recovery.restarting(this::recover)
                : new FatalFault.Recovery(() -> stayPoisoned(cannotRestart), cannotRestart);
        vm = new Vm(region, layout, backend, config.memoryQuota(), driver.gpu(), config.limits(), config.integrity(),
                recovery);
        header.driver(driver.features() | (doorbell ? HeaderFlyweight.FEATURE_DOORBELL : 0),
                vm.hostDriverVersion(), vm.poolDevicePointer());
        watcher = new ChannelWatcher(region, vm, doorbell, config.waitIdleParkMs(), config.ownerTimeoutMs(),
                this::idleFor);
        liveness = new LivenessMonitor(header, watcher, doorbell ? DOORBELL_WATCH_MS : HEARTBEAT_MS,
                doorbell ? DOORBELL_HEARTBEAT_MS : HEARTBEAT_MS, config.ownerTimeoutMs());
        if (doorbell) {
            // a new process is watched from its first claim, not from the next once-a-second check
            watcher.onAttach(liveness::wake);
        }
        if (doorbell && device != null) {
            startDoorbells(device::vector);
        } else if (doorbell) {
            startIvshmemServer();
        }
        watcher.start();
        liveness.start();
        // READY last: in doorbell mode the hook also waits for the socket, which exists by now
        header.state(HeaderFlyweight.STATE_READY);
        if (config.pidfile() != null) {
            Files.writeString(config.pidfile(), ProcessHandle.current().pid() + "\n", StandardCharsets.US_ASCII);
        }
        LOG.info("ready: region {} ({} bytes), {} channels of {} bytes (window {}), pool {} bytes at {}, backend {}{}",
                region.path(), layout.regionSize(), layout.channelCount(), layout.channelStride(), layout.windowSize(),
                layout.poolSize(), layout.poolOffset(), backend.describe(),
                config.domainName().isEmpty() ? "" : ", domain " + config.domainName() + " " + config.domainUuid());
        if (recoveries > 0) {
            LOG.warn("recovered: this is a new CUDA process of the server (epoch {}, recovery {} of this server) after "
                    + "a fatal GPU fault: {}; region mapped {}", header.epoch(), recoveries,
                    System.getenv(Reexec.RECOVERED_FROM), region.address() == previousRegionAddress
                            ? "at the previous image's address (guests' pinned pointers stay device pointers)"
                            : "elsewhere than the previous image's (guests placed at the old address lose pinned "
                                    + "pointers as device pointers, protocol §2a)");
        }
    }

    /**
     * Plain mode, after a fatal fault once every process that held state was reclaimed: replaces the
     * server's CUDA process. The header says INIT first (a guest attaching now waits for READY, one
     * attached sees the server go away), then the workers, the heartbeat and the integrity oracles stop
     * as on the stop path — but the region, the pidfile and the status file stay, for the new image,
     * which is this program started again with the same pid and arguments (epoch + 1).
     */
    private void recover() {
        String fault = vm.fatalFault().fault();
        LOG.warn("recovery: every process that held state at the fatal GPU fault ({}) exited: replacing the server's "
                + "CUDA process (same pid and arguments; epoch {} -> {})", fault, header.epoch(), header.epoch() + 1);
        header.message("replacing the CUDA process after a fatal GPU fault (" + fault + ")");
        header.state(HeaderFlyweight.STATE_INIT);
        if (liveness != null) {
            liveness.close();
        }
        if (watcher != null && !watcher.close()) {
            LOG.warn("recovery: a worker is still inside a driver call; the new image ends it");
        }
        vm.integrity().close();
        String failed = replaceProcess.apply(fault);
        if (failed != null) {
            // nothing serves the region any more: say so where the guest and the admin look, and leave
            header.message("the server could not restart after a fatal GPU fault: " + failed);
            header.state(HeaderFlyweight.STATE_STOPPED);
            System.err.println("ivcuda-server: recovery failed: " + failed);
            Runtime.getRuntime().halt(Main.EXIT_FAILURE);
        }
    }

    /** Flushes logging and execs (Reexec); returns only why it failed. */
    private String reexec(String fault) {
        long address = region.address();
        String times = recoveryBudget.withReplacementAt(System.currentTimeMillis());
        LogManager.shutdown();
        System.err.flush();
        return Reexec.exec(fault, address, times);
    }

    /**
     * The server cannot replace its CUDA process: in doorbell mode a restart would lose QEMU's connection
     * (QEMU cannot reconnect to a new ivshmem server), and past limit.recoveries it must not. The VM
     * stays poisoned and the admin is told.
     */
    private void stayPoisoned(String why) {
        String fault = vm.fatalFault().fault();
        LOG.warn("fatal GPU fault ({}): every process that held state exited, but {}: the VM's CUDA stays "
                + "unusable, new processes are refused — restart the VM", fault, why);
        header.message("a fatal GPU fault (" + fault + ") made this VM's CUDA unusable: restart the VM");
    }

    /**
     * Listens on {@code doorbell.socket} for this VM's QEMU and hands it the region (the same
     * file the hook created, so host tools can still open it) and {@code doorbell.vectors} pairs of
     * eventfds — exactly the domain's {@code <msi vectors>}: QEMU refuses more.
     */
    private void startIvshmemServer() throws IOException {
        String uuid = config.domainUuid().isEmpty() ? null : config.domainUuid();
        PeerPolicy policy = new PeerPolicy(config.doorbellPeerUid(), uuid);
        regionFd = NativeFiles.openReadWrite(config.regionPath());
        ivshmem = IvshmemServer.start(Path.of(config.doorbellSocket()), regionFd, config.doorbellVectors(), policy,
                new IvshmemServer.Listener() {
                    @Override
                    public void peerJoined(PeerCredentials peer) {
                        LOG.info("doorbell: QEMU pid {} connected; handshake sent (region fd, {} vectors each way)",
                                peer.pid(), config.doorbellVectors());
                    }

                    @Override
                    public void peerLeft(PeerCredentials peer) {
                        LOG.info("doorbell: QEMU pid {} disconnected: the VM is gone, stopping (QEMU cannot reconnect "
                                + "to a server, so this one has no further use)", peer.pid());
                        whenVmLeaves.run();
                    }
                });
        IvshmemServer.shareSocketWithGroupOf(Path.of(config.doorbellSocket()), config.regionPath());
        if (layout.channelCount() > config.doorbellVectors()) {
            // §8: a guest sleeps only on a vector of its own channel; shared vectors mean polling guests
            LOG.info("doorbell: {} channels share {} vectors: guest threads on a channel that shares its vector "
                    + "poll instead of sleeping on an interrupt (give the domain <msi vectors> >= {})",
                    layout.channelCount(), config.doorbellVectors(), ServerKeys.CHANNEL_COUNT.name());
        }
        interruptGuest = ivshmem::interruptGuest;
        startDoorbells(ivshmem::hostVector);
    }

    /** The dispatcher of the guest's rings over {@code doorbell.vectors} eventfds. */
    private void startDoorbells(java.util.function.IntFunction<EventFd> vectors) {
        EventFd[] host = new EventFd[config.doorbellVectors()];
        for (int v = 0; v < host.length; v++) {
            host[v] = vectors.apply(v);
        }
        doorbells = new Doorbells(host, layout.channelCount());
        doorbells.watcher(watcher.thread());
        doorbells.start();
    }

    /**
     * A back-end slot's server in doorbell mode: the relay on the host is the ivshmem server, this server a guest of
     * the slot's device — interrupts from ivcuda-guest-irqd ({@code doorbell.socket}), rings through BAR0. Without
     * them the slot is served by polling, and the header says plain mode, so the front-end's library polls too.
     */
    private boolean connectDeviceDoorbell() {
        try {
            device = DeviceDoorbell.connect(Path.of(config.doorbellSocket()), config.regionPath(), config.doorbellVectors());
        } catch (IOException e) {
            LOG.warn("doorbell: no interrupts for this slot ({}): serving it by polling, as in plain mode", e.getMessage());
            return false;
        }
        interruptGuest = device::interruptGuest;
        LOG.info("doorbell: the slot device's {} MSI-X vectors come from {}; the front-end is rung through {}",
                device.vectors(), config.doorbellSocket(), config.regionPath().resolveSibling("resource0"));
        return true;
    }

    private IdleWait idleFor(int channel) {
        return doorbell
                ? new DoorbellIdle(watcher.controls()[channel], channel, doorbells, interruptGuest,
                        config.waitSpinUs(), config.doorbellParkTimeoutMs())
                : new PlainIdle(config.waitSpinUs(), config.waitParkMaxUs(), config.waitIdleParkMs());
    }

    /** Reclaims a token from outside the watcher (tests); the reclaim finishes once its workers left. */
    public void reclaim(long token) {
        watcher.reclaim(token, -1);
    }

    /**
     * Makes the watcher look at the channels now, as a doorbell-mode claimer's ring does (tests in plain
     * mode: the hostile-guest fuzzer claims a channel for nearly every input and would otherwise wait
     * for the watcher's next poll, up to a millisecond plus a thread wake-up, each time).
     */
    void wakeWatcher() {
        watcher.wake();
    }

    /** How long {@link #close} waits for busy workers before it leaves the rest to the process's exit (tests). */
    void stopWaitMs(long ms) {
        watcher.stopWaitMs(ms);
    }

    @Override
    public void close() {
        if (region == null) {
            return;
        }
        if (vm != null) {
            vm.fatalFault().closing();
        }
        header.state(HeaderFlyweight.STATE_STOPPING);
        if (liveness != null) {
            liveness.close();
        }
        boolean quiet = watcher == null || watcher.close();
        if (vm != null) {
            vm.integrity().close(); // the oracles go whatever the workers do: they hold no region memory
        }
        if (doorbells != null) {
            doorbells.close();
        }
        if (ivshmem != null) {
            ivshmem.close();
        }
        if (device != null) {
            device.close();
        }
        if (regionFd >= 0) {
            NativeFiles.close(regionFd);
            regionFd = -1;
        }
        if (!quiet) {
            // a worker may still be inside a driver call that reads or writes the region or what the
            // VM holds: nothing it may touch is released or unmapped; the process's exit does it
            LOG.warn("stopping with workers still running: the driver session, the VM's memory and the region "
                    + "are left to the process's exit");
            region = null;
            return;
        }
        if (driver != null) {
            driver.close();
        }
        if (vm != null) {
            vm.close();
        }
        header.state(HeaderFlyweight.STATE_STOPPED);
        region.close();
        region = null;
        if (config.pidfile() != null) {
            try {
                Files.deleteIfExists(config.pidfile());
            } catch (IOException e) {
                LOG.warn("{} {} not removed: {}", ServerKeys.PIDFILE.name(), config.pidfile(), e.getMessage());
            }
        }
        LOG.info("stopped");
    }
}
