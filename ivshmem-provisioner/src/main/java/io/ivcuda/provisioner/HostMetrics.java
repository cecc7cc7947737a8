package io.ivcuda.provisioner;

import io.ivcuda.common.DomainXml;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import io.ivcuda.common.ServerProcesses;
import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.common.metrics.MetricsExposition;
import io.ivcuda.common.metrics.VmFigures;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * {@code ivshmem-provisioner metrics}: the figures of every cuda-server of this host in one Prometheus text
 * exposition (docs/operations.md, "Metrics"). The servers are found as the hook left them — one instance
 * configuration per VM in {@code runtime.dir} — and each is asked for a fresh status file (SIGUSR1), the
 * file {@code status} reads too; libvirt is not needed. A server that does not answer is left out.
 */
final class HostMetrics {
    private final HostConfig host;

    HostMetrics(HostConfig host) {
        this.host = host;
    }

    /** The figures of every server that answered, by domain UUID order. */
    List<VmFigures> gather() throws IOException {
        List<VmFigures> vms = new ArrayList<>();
        Path runtime = host.runtimeDir();
        if (!Files.isDirectory(runtime)) {
            return vms;
        }
        List<Path> configs = new ArrayList<>();
        try (var entries = Files.newDirectoryStream(runtime, "*.properties")) {
            entries.forEach(configs::add);
        }
        configs.sort(null);
        for (Path config : configs) {
            String uuid = config.getFileName().toString().replaceFirst("\\.properties$", "");
            if (!DomainXml.isUuid(uuid)) {
                continue;
            }
            InstancePaths paths = InstancePaths.of(uuid, host);
            List<Long> pids = ServerProcesses.find(paths.instanceConfig());
            if (pids.isEmpty()) {
                continue;
            }
            Properties status = StatusReport.askStatus(pids.get(0), paths.statusFile());
            if (status.isEmpty()) {
                continue;
            }
            vms.add(VmFigures.read(status, status.getProperty(ServerKeys.DOMAIN_NAME.name(), ""), uuid));
        }
        return vms;
    }

    /**
     * Writes the exposition to {@code file} through a temporary file and a rename, so that a collector that
     * reads it (node_exporter's textfile collector) never sees half of it.
     */
    static void writeAtomically(List<VmFigures> vms, Path file) throws IOException {
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        MetricsExposition.write(vms, text);
        Path temporary = file.resolveSibling(file.getFileName() + ".tmp");
        Files.write(temporary, text.toByteArray());
        Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
}
