package io.ivcuda.common;

import io.ivcuda.common.config.HostKeys;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The environment that makes a VM's cuda-server an MPS client with the VM's compute share (docs/sharing.md):
 * NVIDIA's MPS reads these variables when the driver initialises, so they must be in the server's environment
 * before it starts — the hook writes them to {@code runtime.dir/U.env}, which the direct launcher passes on
 * and {@code ivcuda-server@.service} reads ({@code EnvironmentFile=}). A VM with the whole GPU gets an empty
 * file: its server stays out of MPS (an MPS client shares its fault domain with the other clients).
 */
public final class MpsEnvironment {
    public static final String PIPE_DIRECTORY = "CUDA_MPS_PIPE_DIRECTORY";
    public static final String LOG_DIRECTORY = "CUDA_MPS_LOG_DIRECTORY";
    public static final String ACTIVE_THREAD_PERCENTAGE = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";
    public static final String PINNED_DEVICE_MEM_LIMIT = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT";
    /** Characters a value may have: the file is read by systemd's EnvironmentFile= parser, which unquotes and joins. */
    private static final String PLAIN_VALUE = "[A-Za-z0-9/._,:=+@-]*";

    private MpsEnvironment() {
    }

    /**
     * The variables for a VM: none for the whole GPU; else the pipe and log directories, the share, and MPS's
     * own limit on the VM's device memory — a second fence behind the server's quota. MPS counts the CUDA
     * context's own memory in that limit too (on an H200: 145 MiB at 32 SMs, 389 MiB at 98 SMs,
     * docs/benchmarks/sharing.md), so a limit of exactly the quota refused VMs a few hundred MiB short of it;
     * the limit is the quota plus {@code mps.pinned.headroom}, rounded up to whole MiB, so that the server's
     * exact check is the one a guest meets first.
     */
    public static Map<String, String> of(VmSettings settings, HostConfig host) {
        Map<String, String> env = new LinkedHashMap<>();
        if (!settings.shared()) {
            return env;
        }
        env.put(PIPE_DIRECTORY, host.mpsPipeDir().toString());
        env.put(LOG_DIRECTORY, host.mpsLogDir().toString());
        env.put(ACTIVE_THREAD_PERCENTAGE, Integer.toString(settings.computeShare()));
        if (settings.memoryQuota() > 0) {
            env.put(PINNED_DEVICE_MEM_LIMIT, memoryLimit(settings.gpuIndex(), settings.memoryQuota() + host.mpsPinnedHeadroom()));
        }
        return env;
    }

    /**
     * MPS's form of a device memory limit: {@code <device index>=<size>M}. The index is the configured GPU's
     * ({@code gpu.<n>}), which is CUDA's ordinal when the element names an index; for a UUID it is the index
     * {@code gpu.<n>.uuid} gives it, which matches CUDA's order on hosts whose GPUs are all of one kind.
     */
    public static String memoryLimit(int deviceIndex, long limitBytes) {
        long mib = (limitBytes + (1L << 20) - 1) >>> 20;
        return deviceIndex + "=" + mib + "M";
    }

    /** Writes {@code env} as {@code KEY=VALUE} lines (an empty file for none), replacing {@code file}. */
    public static void write(Path file, Map<String, String> env) throws IOException {
        StringBuilder text = new StringBuilder("# ivcuda: the MPS environment of this VM's cuda-server, written by the libvirt hook\n");
        for (Map.Entry<String, String> e : env.entrySet()) {
            if (!e.getValue().matches(PLAIN_VALUE)) {
                throw new IOException(e.getKey() + "='" + e.getValue() + "': only letters, digits and / . _ , : = + @ - "
                        + "can be passed to the server's environment (" + HostKeys.MPS_PIPE_DIR.name() + ", "
                        + HostKeys.MPS_LOG_DIR.name() + ")");
            }
            text.append(e.getKey()).append('=').append(e.getValue()).append('\n');
        }
        Files.writeString(file, text.toString(), StandardCharsets.UTF_8);
    }

    /** The variables of a file {@link #write} wrote; none when it is absent. */
    public static Map<String, String> read(Path file) throws IOException {
        Map<String, String> env = new LinkedHashMap<>();
        if (!Files.exists(file)) {
            return env;
        }
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        for (String line : lines) {
            int eq = line.indexOf('=');
            if (line.startsWith("#") || eq <= 0) {
                continue;
            }
            env.put(line.substring(0, eq), line.substring(eq + 1));
        }
        return env;
    }
}
