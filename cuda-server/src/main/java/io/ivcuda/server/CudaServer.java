package io.ivcuda.server;

import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.JnaCudaBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.channel.ChannelState;
import io.ivcuda.server.channel.ChannelWorker;
import io.ivcuda.server.channel.DoorbellIdle;
import io.ivcuda.server.channel.IdleWait;
import io.ivcuda.server.channel.PlainIdle;
import io.ivcuda.server.core.CuResult;
import io.ivcuda.server.core.Vm;
import io.ivcuda.server.doorbell.Doorbells;
import io.ivcuda.server.handler.ChannelHandlers;
import io.ivcuda.server.handler.Reclaimer;
import io.ivcuda.server.doorbell.EventFd;
import io.ivcuda.server.doorbell.IvshmemServer;
import io.ivcuda.server.doorbell.NativeFiles;
import io.ivcuda.server.doorbell.PeerCredentials;
import io.ivcuda.server.doorbell.PeerPolicy;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.region.Layout;
import io.ivcuda.server.region.Region;
import io.ivcuda.wire.ChannelFlyweight;
import io.ivcuda.wire.HeaderFlyweight;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.UnsafeBuffer;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * One VM's server: lays out and maps the region, writes the header (READY last), runs the
 * heartbeat (which also checks liveness per owner token, docs/protocol.md §7) and the channel
 * watcher (attaches a worker per claimed channel, reclaims), and shuts down cleanly
 * (STOPPING → free → STOPPED). In doorbell mode it is also the VM's ivshmem server (listening
 * before READY) and its idle threads sleep until the guest rings: an idle VM's server wakes one
 * thread once a second, the heartbeat; when QEMU leaves, the VM is gone and so is this server.
 */
public final class CudaServer implements Reclaimer, AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(CudaServer.class);
    private static final int CU_MEMHOSTREGISTER_PORTABLE = 1;
    private static final int CU_MEMHOSTREGISTER_DEVICEMAP = 2;
    /** How often the watcher looks for claims: a new guest thread's first call waits at most this. */
    private static final long WATCH_PERIOD_NS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long HEARTBEAT_MS = 100;
    /**
     * Doorbell mode beats and checks liveness once a second: each wake-up of an idle server costs
     * CPU, the guest declares a server dead only after 5 s without a beat, and owners time out after
     * owner.timeout.ms (≥ 10 beats of the guest's 250 ms heartbeat are still seen). Both are done by
     * the one heartbeat thread, so an idle doorbell server has a single periodic wake-up.
     */
    private static final long DOORBELL_HEARTBEAT_MS = 1000;
    private static final int GUEST_BEATS_FOR_RECLAIM = 8;

    private final ServerConfig config;
    private final Layout layout;
    private Region region;
    private final HeaderFlyweight header = new HeaderFlyweight();
    private UnsafeBuffer[] channels;
    private ChannelState[] states;
    private ChannelWorker[] workers;
    private Vm vm;
    private CudaBackend backend;
    private Out out;
    private boolean registered;
    private boolean primaryRetained;
    private volatile boolean running;
    private Thread watcher;
    private Thread heartbeat;
    private IvshmemServer ivshmem;
    private Doorbells doorbells;
    private int regionFd = -1;
    private volatile Runnable whenVmLeaves = () -> { };

    /** Liveness bookkeeping of one token (§7); only the heartbeat thread touches it. */
    private static final class Liveness {
        long beatSum;
        long changedAtNanos;
        long guestBeatAtChange;
        /** This check's sum of the token's owner_heartbeat over its channels. */
        long sumNow;
        boolean seenNow;
        boolean fresh;
    }

    /** Per token; Agrona's map and its reused iterators keep the once-a-second check free of garbage. */
    private final Long2ObjectHashMap<Liveness> liveness = new Long2ObjectHashMap<>();
    /**
     * Tokens the heartbeat found dead, for the watcher to reclaim: a reclaim may wait up to 10 s for a
     * worker, which the heartbeat thread must never do.
     */
    private final Queue<Long> reclaimsDue = new ConcurrentLinkedQueue<>();

    public CudaServer(ServerConfig config) {
        this(config, null);
    }

    /** With a given backend (tests); null chooses by {@code backend}. */
    CudaServer(ServerConfig config, CudaBackend backend) {
        this.config = config;
        this.backend = backend;
        int channels = config.channelCount() > 0 ? config.channelCount() : Layout.autoChannelCount(config.regionSize());
        this.layout = Layout.compute(config.regionSize(), channels, config.channelWindow());
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

    /** Doorbell mode: the ring dispatcher (null in plain mode). */
    Doorbells doorbells() {
        return doorbells;
    }

    /** Doorbell mode: the ivshmem server (null in plain mode). */
    public IvshmemServer ivshmemServer() {
        return ivshmem;
    }

    public void start() throws IOException {
        region = Region.openOrCreate(config.regionPath(), config.regionSize());
        header.wrap(region.view(0, HeaderFlyweight.LENGTH), 0);
        int previousEpoch = header.magic() == HeaderFlyweight.MAGIC ? header.epoch() : 0;
        // a fresh header and channel table: nothing a previous server or guest left is trusted
        header.buffer().setMemory(0, HeaderFlyweight.LENGTH, (byte) 0);
        channels = new UnsafeBuffer[layout.channelCount()];
        states = new ChannelState[layout.channelCount()];
        workers = new ChannelWorker[layout.channelCount()];
        for (int i = 0; i < channels.length; i++) {
            channels[i] = region.view(layout.channelOffset(i), layout.channelStride());
            channels[i].setMemory(0, ChannelFlyweight.AREAS_OFFSET, (byte) 0);
            if (config.doorbell()) {
                // a free channel reads as parked: a claimer's ivc_hello rings and wakes the watcher
                channels[i].putIntVolatile(ChannelFlyweight.SERVER_PARKED_OFFSET, 1);
            }
            states[i] = new ChannelState(i);
        }
        header.magic(HeaderFlyweight.MAGIC)
                .protocolVersion(HeaderFlyweight.PROTOCOL_VERSION)
                .headerSize(HeaderFlyweight.LENGTH)
                .regionSize(layout.regionSize());
        header.serverStateRelease(HeaderFlyweight.STATE_INIT);
        header.epoch(previousEpoch + 1)
                .apiVersion(Opcodes.API_VERSION)
                .apiHash(Opcodes.API_HASH)
                .channelCount(layout.channelCount())
                .channelStride(layout.channelStride())
                .channelTableOffset(layout.channelTableOffset())
                .requestAreaSize(layout.requestAreaSize())
                .responseAreaSize(layout.responseAreaSize())
                .ringSize(layout.ringSize())
                .windowSize(layout.windowSize())
                .poolOffset(layout.poolOffset())
                .poolSize(layout.poolSize())
                .ownerTimeoutMs(config.ownerTimeoutMs())
                // The guest cannot read the MSI-X table size from config space without CAP_SYS_ADMIN
                // (sysfs gives others its first 64 bytes): the header tells it the channel→vector modulus.
                .doorbellVectors(config.doorbell() ? config.doorbellVectors() : 0);

        if (backend == null) {
            backend = config.backend().equals("host-memory") ? new HostMemoryBackend() : new JnaCudaBackend();
        }
        out = backend.newOut();
        vm = new Vm(region, layout, backend, config.memoryQuota());
        long features = initDriver() | (config.doorbell() ? HeaderFlyweight.FEATURE_DOORBELL : 0);
        header.featureBits(features).hostDriverVersion(vm.hostDriverVersion());

        running = true;
        watcher = new Thread(this::watch, "channel-watcher");
        watcher.setDaemon(true);
        heartbeat = new Thread(this::beat, "heartbeat");
        heartbeat.setDaemon(true);
        if (config.doorbell()) {
            startIvshmemServer();
        }
        watcher.start();
        heartbeat.start();
        // READY last: in doorbell mode the hook also waits for the socket, which exists by now
        header.serverStateRelease(HeaderFlyweight.STATE_READY);
        if (config.pidfile() != null) {
            Files.writeString(config.pidfile(), ProcessHandle.current().pid() + "\n", StandardCharsets.US_ASCII);
        }
        LOG.info("ready: region {} ({} bytes), {} channels of {} bytes (window {}), pool {} bytes at {}, backend {}{}",
                region.path(), layout.regionSize(), layout.channelCount(), layout.channelStride(), layout.windowSize(),
                layout.poolSize(), layout.poolOffset(), backend.describe(),
                config.domainName().isEmpty() ? "" : ", domain " + config.domainName() + " " + config.domainUuid());
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
        shareSocketWithQemu(Path.of(config.doorbellSocket()));
        if (layout.channelCount() > config.doorbellVectors()) {
            // §8: a guest sleeps only on a vector of its own channel; shared vectors mean polling guests
            LOG.info("doorbell: {} channels share {} vectors: guest threads on a channel that shares its vector "
                    + "poll instead of sleeping on an interrupt (give the domain <msi vectors> >= channel.count)",
                    layout.channelCount(), config.doorbellVectors());
        }
        EventFd[] host = new EventFd[config.doorbellVectors()];
        for (int v = 0; v < host.length; v++) {
            host[v] = ivshmem.hostVector(v);
        }
        doorbells = new Doorbells(host, layout.channelCount());
        doorbells.watcher(watcher);
        doorbells.start();
    }

    /**
     * Connecting needs write permission on the socket: QEMU runs as another user (libvirt-qemu),
     * in the group the hook gave the region file (qemu.group). Mode 0660, that group.
     */
    private void shareSocketWithQemu(Path socket) throws IOException {
        Files.setPosixFilePermissions(socket, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw----"));
        var group = Files.readAttributes(config.regionPath(), java.nio.file.attribute.PosixFileAttributes.class).group();
        try {
            Files.getFileAttributeView(socket, java.nio.file.attribute.PosixFileAttributeView.class).setGroup(group);
        } catch (IOException e) {
            LOG.warn("doorbell socket {}: cannot give it the region's group {} ({}); QEMU may be refused by the "
                    + "file system", socket, group.getName(), e.getMessage());
        }
    }

    private IdleWait idleFor(int channel) {
        return config.doorbell()
                ? new DoorbellIdle(channels[channel], channel, doorbells, ivshmem::interruptGuest, config.waitSpinUs(),
                        config.doorbellParkTimeoutMs())
                : new PlainIdle(config.waitSpinUs(), config.waitParkMaxUs(), config.waitIdleParkMs());
    }

    /** Initialises the driver; failures are logged and answered to the guest's cuInit. Returns feature bits. */
    private long initDriver() {
        int result = backend.init(0);
        vm.initResult(result);
        if (result != CuResult.SUCCESS) {
            LOG.error("cuInit on the host failed: {} — guests get this error from cuInit", CuResult.name(result));
            message("host cuInit failed: " + CuResult.name(result));
            return 0;
        }
        if (backend.driverGetVersion(out) == CuResult.SUCCESS) {
            vm.hostDriverVersion(out.i0);
        }
        int ordinal = ordinalOf(config.gpu());
        if (ordinal < 0) {
            LOG.error("gpu = {}: no such device index or UUID on this host — guests get CUDA_ERROR_NO_DEVICE", config.gpu());
            vm.initResult(CuResult.NO_DEVICE);
            return 0;
        }
        result = backend.deviceGet(out, ordinal);
        if (result != CuResult.SUCCESS) {
            LOG.error("gpu = {}: cuDeviceGet failed: {} — guests get CUDA_ERROR_NO_DEVICE", ordinal, CuResult.name(result));
            vm.initResult(CuResult.NO_DEVICE);
            return 0;
        }
        vm.nativeDevice(out.i0);
        // the region is registered once the primary context exists; pool copies are then DMA
        if (backend.primaryCtxRetain(out, vm.nativeDevice()) != CuResult.SUCCESS) {
            LOG.warn("primary context of gpu {} not available: the pool is not registered", ordinal);
            return 0;
        }
        primaryRetained = true;
        backend.ctxSetCurrent(out.l0);
        result = backend.memHostRegister(region.address(), region.size(),
                CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
        if (result != CuResult.SUCCESS) {
            LOG.warn("cuMemHostRegister of the region failed ({}): pool copies are staged by the driver",
                    CuResult.name(result));
            return 0;
        }
        registered = true;
        if (backend.memHostGetDevicePointer(out, region.address() + layout.poolOffset()) == CuResult.SUCCESS) {
            vm.poolDevicePointer(out.l0);
        }
        return HeaderFlyweight.FEATURE_POOL_REGISTERED;
    }

    /** A device index, or the index of the device whose UUID is {@code GPU-xxxxxxxx-xxxx-...}; -1 if none. */
    private int ordinalOf(String gpu) {
        try {
            return Integer.parseInt(gpu);
        } catch (NumberFormatException notAnIndex) {
            String wanted = gpu.toLowerCase(java.util.Locale.ROOT).replace("gpu-", "").replace("-", "");
            if (backend.deviceGetCount(out) != CuResult.SUCCESS) {
                return -1;
            }
            int count = out.i0;
            for (int i = 0; i < count; i++) {
                if (backend.deviceGet(out, i) != CuResult.SUCCESS
                        || backend.deviceGetUuid(out.scratch, out.i0) != CuResult.SUCCESS) {
                    continue;
                }
                StringBuilder hex = new StringBuilder();
                for (int b = 0; b < 16; b++) {
                    hex.append(String.format("%02x", org.agrona.UnsafeApi.getByte(out.scratch + b) & 0xff));
                }
                if (hex.toString().equals(wanted)) {
                    return i;
                }
            }
            return -1;
        }
    }

    private void message(String text) {
        header.serverMessage(text);
    }

    private long heartbeatMs() {
        return config.doorbell() ? DOORBELL_HEARTBEAT_MS : HEARTBEAT_MS;
    }

    /**
     * Beats, and checks the owners' liveness at the same wake-up; wakes the watcher only when it has
     * work the guest did not ring for (a reclaim, a claim from a guest that cannot ring). Never
     * blocks on anything but its own sleep: the guest times the server out on this counter.
     */
    private void beat() {
        long period = TimeUnit.MILLISECONDS.toNanos(heartbeatMs());
        while (running) {
            header.addServerHeartbeatRelease(1);
            if (checkLiveness(System.nanoTime())) {
                LockSupport.unpark(watcher);
            }
            LockSupport.parkNanos(this, period);
        }
    }

    /** When the watcher last attached a worker (plain mode's watch period follows it). */
    private long lastClaimNs = System.nanoTime();

    private long watchPeriod(long now) {
        long idlePark = TimeUnit.MILLISECONDS.toNanos(config.waitIdleParkMs());
        return idlePark > 0 && now - lastClaimNs > PlainIdle.IDLE_AFTER_NS ? idlePark : WATCH_PERIOD_NS;
    }

    private void watch() {
        while (running) {
            for (Long token = reclaimsDue.poll(); token != null && running; token = reclaimsDue.poll()) {
                LOG.warn("owner pid {} (token {}): heartbeat stopped for {} ms while the VM's went on: reclaiming",
                        token >>> 32, Long.toHexString(token), config.ownerTimeoutMs());
                reclaim(token, -1);
            }
            synchronized (this) {
                for (int i = 0; i < channels.length && running; i++) {
                    ChannelWorker w = workers[i];
                    if (w != null && (w.finished() || !w.alive())) {
                        workers[i] = null;
                        w = null;
                    }
                    long owner = channels[i].getLongVolatile(ChannelFlyweight.OWNER_OFFSET);
                    if (owner != 0 && w == null && channels[i].getIntVolatile(ChannelFlyweight.ATTACHED_OFFSET) == 0) {
                        int index = i;
                        UnsafeBuffer channel = channels[i];
                        ChannelWorker fresh = new ChannelWorker(states[i], channel, owner, layout, idleFor(i),
                                chunks -> new ChannelHandlers(vm, index, owner, channel, chunks, this));
                        workers[i] = fresh;
                        fresh.start();
                        lastClaimNs = System.nanoTime();
                    }
                }
            }
            if (config.doorbell()) {
                // a claim's ivc_hello rings (the Doorbells unpark us), a leaving worker nudges us, the
                // heartbeat wakes us for reclaims and for claims nobody rang for (a guest without BAR0)
                LockSupport.park(this);
            } else {
                // every millisecond while claims come, wait.idle.park.ms once none came for a while
                // (a new guest thread's first call waits at most that long)
                LockSupport.parkNanos(this, watchPeriod(System.nanoTime()));
            }
        }
    }

    /**
     * Finds tokens whose heartbeat stopped while the VM's guest heartbeat went on (§7) and queues
     * them for the watcher. Returns whether the watcher has work: such a reclaim, or a claimed
     * channel without a worker (its claimer's ring may never come: a guest without BAR0 rings not).
     */
    private boolean checkLiveness(long now) {
        boolean watcherNeeded = false;
        for (Liveness l : liveness.values()) {
            l.sumNow = 0;
            l.seenNow = false;
        }
        for (UnsafeBuffer c : channels) {
            long owner = c.getLongVolatile(ChannelFlyweight.OWNER_OFFSET);
            if (owner == 0) {
                continue;
            }
            if (c.getIntVolatile(ChannelFlyweight.ATTACHED_OFFSET) == 0) {
                watcherNeeded = true;
            }
            Liveness l = liveness.get(owner);
            if (l == null) {
                l = new Liveness();
                l.fresh = true;
                liveness.put(owner, l);
            }
            l.sumNow += c.getLongVolatile(ChannelFlyweight.OWNER_HEARTBEAT_OFFSET);
            l.seenNow = true;
        }
        long guestBeat = header.guestHeartbeatVolatile();
        long timeoutNs = TimeUnit.MILLISECONDS.toNanos(config.ownerTimeoutMs());
        for (var it = liveness.entrySet().iterator(); it.hasNext(); ) {
            it.next();
            Liveness l = it.getValue();
            if (!l.seenNow) {
                it.remove();
            } else if (l.fresh || l.beatSum != l.sumNow) {
                l.fresh = false;
                l.beatSum = l.sumNow;
                l.changedAtNanos = now;
                l.guestBeatAtChange = guestBeat;
            } else if (now - l.changedAtNanos >= timeoutNs && guestBeat - l.guestBeatAtChange >= GUEST_BEATS_FOR_RECLAIM) {
                // the watcher logs and reclaims: the heartbeat thread never waits on anything, output included
                reclaimsDue.add(it.getLongKey());
                it.remove();
                watcherNeeded = true;
            }
        }
        return watcherNeeded;
    }

    /** Stops the token's workers (except {@code caller}'s), releases its channels and frees its resources. */
    @Override
    public void reclaim(long token, int caller) {
        synchronized (this) {
            for (int i = 0; i < channels.length; i++) {
                ChannelWorker w = workers[i];
                if (w != null && w.token() == token && w.index() != caller) {
                    w.stop();
                }
            }
            for (int i = 0; i < channels.length; i++) {
                ChannelWorker w = workers[i];
                if (w != null && w.token() == token && w.index() != caller) {
                    try {
                        w.join(10_000);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    if (w.alive()) {
                        LOG.warn("channel {}: worker still busy in a driver call after 10 s; freeing anyway", i);
                    }
                    channels[i].compareAndSetLong(ChannelFlyweight.OWNER_OFFSET, token, 0);
                }
            }
        }
        Out scratch = backend.newOut();
        try {
            vm.reclaim(token, scratch);
        } finally {
            scratch.free();
        }
    }

    /** Reclaims a token from a watcher-independent caller (tests, liveness). */
    public void reclaim(long token) {
        reclaim(token, -1);
    }

    @Override
    public void close() {
        if (region == null) {
            return;
        }
        header.serverStateRelease(HeaderFlyweight.STATE_STOPPING);
        running = false;
        // both may sleep long (a doorbell watcher until woken): wake them to see running == false
        LockSupport.unpark(watcher);
        LockSupport.unpark(heartbeat);
        join(watcher);
        join(heartbeat);
        synchronized (this) {
            stopAndFree();
        }
    }

    private void stopAndFree() {
        for (ChannelWorker w : workers) {
            if (w != null) {
                w.stop();
            }
        }
        for (ChannelWorker w : workers) {
            if (w != null) {
                try {
                    w.join(10_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        for (Long token : vm.owners().keySet().toArray(new Long[0])) {
            vm.reclaim(token, out);
        }
        if (doorbells != null) {
            doorbells.close();
        }
        if (ivshmem != null) {
            ivshmem.close();
        }
        if (regionFd >= 0) {
            NativeFiles.close(regionFd);
            regionFd = -1;
        }
        if (registered) {
            backend.memHostUnregister(region.address());
        }
        if (primaryRetained) {
            backend.primaryCtxRelease(vm.nativeDevice());
        }
        vm.close();
        out.free();
        header.serverStateRelease(HeaderFlyweight.STATE_STOPPED);
        region.close();
        region = null;
        if (config.pidfile() != null) {
            try {
                Files.deleteIfExists(config.pidfile());
            } catch (IOException e) {
                LOG.warn("pidfile {} not removed: {}", config.pidfile(), e.getMessage());
            }
        }
        LOG.info("stopped");
    }

    private static void join(Thread t) {
        if (t != null) {
            try {
                t.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
