package io.ivcuda.server;

import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.common.metrics.VmFigures;
import io.ivcuda.server.core.CallMetrics;
import io.ivcuda.server.core.Owner;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.server.core.Vm;
import io.ivcuda.server.region.Layout;
import io.ivcuda.wire.ChannelFlyweight;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.Properties;
import java.util.TreeSet;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * What this server holds, written on request for {@code ivshmem-provisioner status}: beside the pidfile
 * ({@code /run/ivcuda/U.pid} → {@code U.status}), as Java properties, when the server is READY and each
 * time it gets SIGUSR1 — never by itself, so an idle server does not wake up for it. The keys (read by
 * {@code io.ivcuda.common.ServerStatus}):
 * {@code pid}, {@code started} and {@code written} (ISO-8601 instants), {@code mode}, {@code backend},
 * {@code gpu}, {@code region.path}, {@code region.size}, {@code memory.held} (bytes of device memory
 * the guest's processes hold now), {@code memory.quota} (0: none), {@code compute.share}, {@code compute.share.state} ({@code whole-gpu},
 * {@code mps} or {@code unshared}) and, when not enforced, {@code compute.share.problem}; {@code processes} (pids of the guest
 * processes the server keeps state for, as the guest reported them), {@code channels.attached} and
 * {@code channels.total}; {@code refusals} (every request, record or claim the server refused since it
 * started, logged or not) and one {@code refusals.KIND} per kind of refusal (RefusalLog's kinds: the
 * operation and the field at fault, blanks as dots); the call figures of {@link VmFigures} ({@code calls.FUNCTION},
 * {@code errors.FUNCTION}, {@code total.*}, {@code process.PID.*} with {@code process.PID.calls.FUNCTION} and
 * {@code process.PID.errors.FUNCTION}). Written to a temporary file and renamed, so a
 * reader never sees half of it.
 */
final class StatusFile {
    private static final Logger LOG = LogManager.getLogger(StatusFile.class);

    private final Path path;
    private final ServerConfig config;
    private final CudaServer server;
    private final ComputeShare share;
    private final Instant started = ProcessHandle.current().info().startInstant().orElse(Instant.now());

    private StatusFile(Path path, ServerConfig config, CudaServer server, ComputeShare share) {
        this.path = path;
        this.config = config;
        this.server = server;
        this.share = share;
    }

    /** The status file beside {@code config}'s pidfile; null when the server has no pidfile (run by hand). */
    static StatusFile besidePidfile(ServerConfig config, CudaServer server) {
        return besidePidfile(config, server, ComputeShare.check(config, null, java.util.Map.of()));
    }

    /** {@link #besidePidfile(ServerConfig, CudaServer)} with what Main found of the compute share. */
    static StatusFile besidePidfile(ServerConfig config, CudaServer server, ComputeShare share) {
        Path pidfile = config.pidfile();
        if (pidfile == null) {
            return null;
        }
        String name = pidfile.getFileName().toString().replaceFirst("\\.pid$", "") + ".status";
        return new StatusFile(pidfile.resolveSibling(name), config, server, share);
    }

    /** Writes what the server holds now. Called from the signal thread; never throws. */
    synchronized void write() {
        Vm vm = server.vm();
        Layout layout = server.layout();
        if (vm == null) {
            return;
        }
        Properties p = new Properties();
        p.setProperty("pid", Long.toString(ProcessHandle.current().pid()));
        p.setProperty("started", started.toString());
        p.setProperty("written", Instant.now().toString());
        p.setProperty(ServerKeys.MODE.name(), ServerKeys.MODE.format(config.mode()));
        p.setProperty(ServerKeys.BACKEND.name(), ServerKeys.BACKEND.format(config.backend()));
        p.setProperty(ServerKeys.GPU.name(), config.gpu());
        p.setProperty(ServerKeys.DOMAIN_NAME.name(), config.domainName());
        p.setProperty(ServerKeys.DOMAIN_UUID.name(), config.domainUuid());
        p.setProperty(ServerKeys.REGION_PATH.name(), config.regionPath().toString());
        p.setProperty(ServerKeys.REGION_SIZE.name(), Long.toString(layout.regionSize()));
        p.setProperty("memory.held", Long.toString(vm.allocated()));
        p.setProperty(ServerKeys.MEMORY_QUOTA.name(), Long.toString(config.memoryQuota()));
        p.setProperty(ServerKeys.COMPUTE_SHARE.name(), Integer.toString(share.share()));
        p.setProperty(SHARE_STATE, share.state().word);
        if (share.problem() != null) {
            p.setProperty(SHARE_PROBLEM, share.problem());
        }
        TreeSet<Integer> pids = new TreeSet<>();
        for (Owner owner : vm.owners().values()) {
            pids.add(owner.pid());
        }
        p.setProperty("processes", String.join(" ", pids.stream().map(String::valueOf).toList()));
        int attached = 0;
        ChannelFlyweight channel = new ChannelFlyweight();
        for (int i = 0; i < layout.channelCount(); i++) {
            // written by the server's own workers (docs/protocol.md §3): 1 while a worker serves the channel
            channel.wrap(vm.region().view(layout.channelOffset(i), ChannelFlyweight.ATTACHED_OFFSET + 4), 0);
            if (channel.attachedVolatile() == 1) {
                attached++;
            }
        }
        p.setProperty("channels.attached", Integer.toString(attached));
        p.setProperty("channels.total", Integer.toString(layout.channelCount()));
        putRefusals(p, vm.refusals().refusalCounts());
        putMetrics(p, vm);
        p.setProperty(RECOVERIES, Integer.toString(server.recoveries()));
        if (vm.fatalFault().poisoned()) {
            p.setProperty(FATAL_FAULT, vm.fatalFault().fault());
        }
        try {
            StringWriter text = new StringWriter();
            p.store(text, "ivcuda cuda-server status (StatusFile); read by ivshmem-provisioner status");
            Path temporary = path.resolveSibling(path.getFileName() + ".tmp");
            Files.writeString(temporary, text.toString(), StandardCharsets.ISO_8859_1);
            Files.move(temporary, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | RuntimeException e) {
            LOG.warn("status file {} not written: {}", path, e.getMessage());
        }
    }

    /**
     * The VM's call figures (VmFigures' keys, which status and metrics read): calls and errors of every
     * function called at least once, the VM's totals, and each guest process's totals and its calls and errors of
     * every function it called at least once.
     */
    static void putMetrics(Properties p, Vm vm) {
        CallMetrics m = vm.metrics();
        for (int op = 0; op < Opcodes.LIMIT; op++) {
            long calls = m.calls(op);
            if (calls != 0) {
                p.setProperty(VmFigures.CALLS + Opcodes.name(op), Long.toString(calls));
                p.setProperty(VmFigures.ERRORS + Opcodes.name(op), Long.toString(m.errors(op)));
            }
        }
        totals(m, vm.allocated()).put(p, VmFigures.TOTAL);
        java.util.Map<Integer, VmFigures.Totals> byPid = new java.util.TreeMap<>();
        java.util.Map<Integer, long[][]> functionsByPid = new java.util.TreeMap<>();
        for (Owner owner : vm.owners().values()) {
            // two owners with one pid (a pid reused while the old one is reclaimed) are added up
            byPid.merge(owner.pid(), totals(owner.metrics(), owner.ranges().allocatedBytes()), StatusFile::sum);
            long[][] f = functionsByPid.computeIfAbsent(owner.pid(), pid -> new long[2][Opcodes.LIMIT]);
            CallMetrics om = owner.metrics();
            for (int op = 0; op < Opcodes.LIMIT; op++) {
                f[0][op] += om.calls(op);
                f[1][op] += om.errors(op);
            }
        }
        byPid.forEach((pid, t) -> t.put(p, VmFigures.PROCESS + pid + "."));
        // a process's calls and errors of each function it called (process.PID.calls.FUNCTION, .errors.FUNCTION)
        functionsByPid.forEach((pid, f) -> {
            for (int op = 0; op < Opcodes.LIMIT; op++) {
                if (f[0][op] != 0) {
                    p.setProperty(VmFigures.PROCESS + pid + "." + VmFigures.CALLS + Opcodes.name(op), Long.toString(f[0][op]));
                    p.setProperty(VmFigures.PROCESS + pid + "." + VmFigures.ERRORS + Opcodes.name(op), Long.toString(f[1][op]));
                }
            }
        });
    }

    private static VmFigures.Totals totals(CallMetrics m, long held) {
        return new VmFigures.Totals(m.totalCalls(), m.totalErrors(), m.bytesToDevice(), m.bytesToHost(), m.launches(),
                m.busyNanos(), held);
    }

    private static VmFigures.Totals sum(VmFigures.Totals a, VmFigures.Totals b) {
        return new VmFigures.Totals(a.calls() + b.calls(), a.errors() + b.errors(), a.bytesToDevice() + b.bytesToDevice(),
                a.bytesToHost() + b.bytesToHost(), a.launches() + b.launches(), a.busyNanos() + b.busyNanos(),
                a.memoryHeld() + b.memoryHeld());
    }

    /** The refusal counters: at most RefusalLog.MAX_KINDS + 1 of them, so the file stays bounded too. */
    static void putRefusals(Properties p, java.util.Map<String, Long> counts) {
        long total = 0;
        for (java.util.Map.Entry<String, Long> e : counts.entrySet()) {
            p.setProperty(REFUSALS + "." + key(e.getKey()), Long.toString(e.getValue()));
            total += e.getValue();
        }
        p.setProperty(REFUSALS, Long.toString(total));
    }

    static final String REFUSALS = VmFigures.REFUSALS;
    /** How many times the server replaced its CUDA process after a fatal GPU fault (docs/operations.md). */
    static final String RECOVERIES = io.ivcuda.common.metrics.VmFigures.RECOVERIES;
    /** Present while a fatal GPU fault poisons the VM: the faulting pid, function and result. */
    static final String FATAL_FAULT = io.ivcuda.common.metrics.VmFigures.FATAL_FAULT;
    /** {@code whole-gpu}, {@code mps} (enforced) or {@code unshared} (ComputeShare.State). */
    static final String SHARE_STATE = "compute.share.state";
    /** Why MPS does not enforce the share, when it does not. */
    static final String SHARE_PROBLEM = "compute.share.problem";

    /** A kind as a property key: "cuMemAlloc_v2 bytesize" → "cuMemAlloc_v2.bytesize". */
    static String key(String kind) {
        return kind.trim().replaceAll("\\s+", ".");
    }

    void delete() {
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            LOG.warn("status file {} not removed: {}", path, e.getMessage());
        }
    }
}
