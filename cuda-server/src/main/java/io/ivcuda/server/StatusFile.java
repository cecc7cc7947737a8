package io.ivcuda.server;

import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.server.core.Owner;
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
 * the guest's processes hold now), {@code memory.quota} (0: none), {@code processes} (pids of the guest
 * processes the server keeps state for, as the guest reported them), {@code channels.attached} and
 * {@code channels.total}; {@code refusals} (every request, record or claim the server refused since it
 * started, logged or not) and one {@code refusals.KIND} per kind of refusal (RefusalLog's kinds: the
 * operation and the field at fault, blanks as dots). Written to a temporary file and renamed, so a
 * reader never sees half of it.
 */
final class StatusFile {
    private static final Logger LOG = LogManager.getLogger(StatusFile.class);

    private final Path path;
    private final ServerConfig config;
    private final CudaServer server;
    private final Instant started = ProcessHandle.current().info().startInstant().orElse(Instant.now());

    private StatusFile(Path path, ServerConfig config, CudaServer server) {
        this.path = path;
        this.config = config;
        this.server = server;
    }

    /** The status file beside {@code config}'s pidfile; null when the server has no pidfile (run by hand). */
    static StatusFile besidePidfile(ServerConfig config, CudaServer server) {
        Path pidfile = config.pidfile();
        if (pidfile == null) {
            return null;
        }
        String name = pidfile.getFileName().toString().replaceFirst("\\.pid$", "") + ".status";
        return new StatusFile(pidfile.resolveSibling(name), config, server);
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
        p.setProperty(ServerKeys.REGION_PATH.name(), config.regionPath().toString());
        p.setProperty(ServerKeys.REGION_SIZE.name(), Long.toString(layout.regionSize()));
        p.setProperty("memory.held", Long.toString(vm.allocated()));
        p.setProperty(ServerKeys.MEMORY_QUOTA.name(), Long.toString(config.memoryQuota()));
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

    /** The refusal counters: at most RefusalLog.MAX_KINDS + 1 of them, so the file stays bounded too. */
    static void putRefusals(Properties p, java.util.Map<String, Long> counts) {
        long total = 0;
        for (java.util.Map.Entry<String, Long> e : counts.entrySet()) {
            p.setProperty(REFUSALS + "." + key(e.getKey()), Long.toString(e.getValue()));
            total += e.getValue();
        }
        p.setProperty(REFUSALS, Long.toString(total));
    }

    static final String REFUSALS = "refusals";

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
