package io.ivcuda.common;

import io.ivcuda.common.config.ConfigKey;
import io.ivcuda.common.config.HostKeys;
import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.common.config.Settings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * The host configuration ({@code /etc/ivcuda/ivcuda.properties}), shared by hook and provisioner: the keys
 * of {@link HostKeys}, read and checked by {@link Settings} when the file is loaded, so a bad value is
 * reported once, naming file, key and value. The same file also carries the cuda-server's keys
 * ({@link io.ivcuda.common.config.ServerKeys}), which the hook copies into each VM's instance configuration
 * and the server checks.
 */
public final class HostConfig {
    public static final Path DEFAULT_PATH = Path.of("/etc/ivcuda/ivcuda.properties");
    /** Environment variable that points hook and provisioner at another host configuration (tests, CI). */
    public static final String ENV_CONFIG = "IVCUDA_CONFIG";

    /** One configured GPU: its index, optional UUID and optional memory capacity for quota placement. */
    public record Gpu(int index, String uuid, OptionalLong capacity) {
    }

    private final String origin;
    private final Settings settings;
    private final Map<Integer, Gpu> gpus;

    private HostConfig(Settings settings, List<Path> files) throws IvcudaConfigException {
        this.origin = files.isEmpty() ? "built-in defaults" : String.join(", ", files.stream().map(Path::toString).toList());
        this.settings = settings;
        long size = settings.get(HostKeys.DEFAULTS_SIZE);
        if (!ByteSize.isValidRegionSize(size)) {
            throw settings.bad(HostKeys.DEFAULTS_SIZE, "the region size must be a power of two from 1 MiB to "
                    + ByteSize.describe(ByteSize.MAX_REGION_SIZE));
        }
        if (settings.get(HostKeys.SERVER_COMMAND).isEmpty()) {
            throw settings.bad(HostKeys.SERVER_COMMAND, "must name the cuda-server command");
        }
        this.gpus = readGpus(settings);
    }

    /** Whether a key is one of hook and provisioner's own ({@link HostKeys}); every other key is the server's. */
    public static boolean isLifecycleKey(String key) {
        return HostKeys.isLifecycleKey(key);
    }

    /**
     * The cuda-server's keys of this file (every key that is not a lifecycle key), with their values as
     * written. The server checks them (and refuses keys it does not know) when it starts; they go to it
     * through each VM's instance configuration.
     */
    public Map<String, String> serverKeys() {
        return settings.foreign();
    }

    /**
     * Why a cuda-server would refuse this file's server keys (an unknown key, a value that does not read as the
     * key's type or lies outside its bounds: one line naming file, key and value), or null when it would not.
     * The server is the one that refuses (at every VM start, exit 2); this lets the provisioner say so at once.
     * Cross-key rules (doorbell.socket in doorbell mode) and the per-VM keys the hook writes are not judged.
     */
    public String serverKeyProblem() {
        for (Map.Entry<String, String> e : serverKeys().entrySet()) {
            ConfigKey<?> key = ServerKeys.ALL.find(e.getKey());
            if (key == null) {
                ConfigKey<?> near = ServerKeys.ALL.nearest(e.getKey());
                return settings.sourceOf(e.getKey()) + ": unknown key " + e.getKey()
                        + (near == null ? "" : " (did you mean " + near.name() + "?)")
                        + " (neither a lifecycle nor a cuda-server key: docs/operations.md)";
            }
            try {
                key.parse(e.getValue());
            } catch (IllegalArgumentException why) {
                return settings.bad(e.getKey(), e.getValue(), why.getMessage()).getMessage();
            }
        }
        return null;
    }

    /**
     * Loads the configuration from {@code $IVCUDA_CONFIG} or {@link #DEFAULT_PATH}. A missing default
     * file means built-in defaults; a named file that is missing or unreadable is an error.
     */
    public static HostConfig load() throws IvcudaConfigException {
        String fromEnv = System.getenv(ENV_CONFIG);
        if (fromEnv != null && !fromEnv.isBlank()) {
            return load(List.of(Path.of(fromEnv)));
        }
        return Files.exists(DEFAULT_PATH) ? load(List.of(DEFAULT_PATH)) : defaults();
    }

    /** Loads the files in order; later files override earlier ones. */
    public static HostConfig load(List<Path> files) throws IvcudaConfigException {
        List<Settings.Layer> layers = new ArrayList<>();
        for (Path file : files) {
            layers.add(0, Settings.Layer.file(file, "host configuration"));
        }
        return new HostConfig(Settings.load(HostKeys.ALL, layers, key -> !HostKeys.isLifecycleKey(key)), files);
    }

    public static HostConfig defaults() {
        try {
            return load(List.of());
        } catch (IvcudaConfigException e) {
            throw new IllegalStateException("built-in defaults are invalid", e);
        }
    }

    private static Map<Integer, Gpu> readGpus(Settings s) {
        Map<Integer, String> uuids = s.members(HostKeys.GPU_UUID);
        Map<Integer, Long> capacities = s.members(HostKeys.GPU_CAPACITY);
        Map<Integer, Gpu> result = new TreeMap<>();
        if (uuids.isEmpty() && capacities.isEmpty()) {
            // Nothing configured: one GPU, index 0, without a capacity limit.
            result.put(0, new Gpu(0, null, OptionalLong.empty()));
            return result;
        }
        int count = Math.max(uuids.isEmpty() ? 0 : ((TreeMap<Integer, String>) uuids).lastKey() + 1,
                capacities.isEmpty() ? 0 : ((TreeMap<Integer, Long>) capacities).lastKey() + 1);
        for (int i = 0; i < count; i++) {
            Long capacity = capacities.get(i);
            result.put(i, new Gpu(i, uuids.get(i), capacity == null ? OptionalLong.empty() : OptionalLong.of(capacity)));
        }
        return result;
    }

    public String origin() {
        return origin;
    }

    public String defaultDevice() {
        return settings.get(HostKeys.DEFAULTS_DEVICE);
    }

    public Mode defaultMode() {
        return settings.get(HostKeys.DEFAULTS_MODE);
    }

    public long defaultSize() {
        return settings.get(HostKeys.DEFAULTS_SIZE);
    }

    public long defaultQuota() {
        return settings.get(HostKeys.DEFAULTS_QUOTA);
    }

    /** The compute share of a domain whose element names none (100: the whole GPU). */
    public int defaultShare() {
        return (int) (long) settings.get(HostKeys.DEFAULTS_SHARE);
    }

    public Path mpsPipeDir() {
        return settings.get(HostKeys.MPS_PIPE_DIR);
    }

    public Path mpsLogDir() {
        return settings.get(HostKeys.MPS_LOG_DIR);
    }

    /** Added to a shared VM's quota in MPS's own memory limit ({@link MpsEnvironment}); 0: the limit is the quota. */
    public long mpsPinnedHeadroom() {
        return settings.get(HostKeys.MPS_PINNED_HEADROOM);
    }

    public String mpsControl() {
        return settings.get(HostKeys.MPS_CONTROL);
    }

    /** The configured GPUs by index (indices 0..count-1). */
    public Map<Integer, Gpu> gpus() {
        return gpus;
    }

    public Path runtimeDir() {
        return settings.get(HostKeys.RUNTIME_DIR);
    }

    public Path shmDir() {
        return settings.get(HostKeys.SHM_DIR);
    }

    /** State that outlives a reboot (the back-end slot ledger, {@link SlotLedger}). */
    public Path stateDir() {
        return settings.get(HostKeys.STATE_DIR);
    }

    public Path logDir() {
        return settings.get(HostKeys.LOG_DIR);
    }

    public String qemuGroup() {
        return settings.get(HostKeys.QEMU_GROUP);
    }

    public String serverUser() {
        return settings.get(HostKeys.SERVER_USER);
    }

    public ServerLaunch serverLaunch() {
        return settings.get(HostKeys.SERVER_LAUNCH);
    }

    public String serverCommand() {
        return settings.get(HostKeys.SERVER_COMMAND);
    }

    /** The direct launcher's system-call filter program; empty for none. */
    public String serverSyscallFilter() {
        return settings.get(HostKeys.SERVER_SYSCALL_FILTER);
    }

    public long serverReadyTimeoutMs() {
        return settings.get(HostKeys.SERVER_READY_TIMEOUT_MS);
    }

    public long serverStopTimeoutMs() {
        return settings.get(HostKeys.SERVER_STOP_TIMEOUT_MS);
    }

    /**
     * Host memory a server may hold beyond its region (JVM, driver, pinned buffers): under systemd the
     * unit's MemoryMax is the region size plus this; launched directly, the JVM's MaxRAM. 0: no limit.
     */
    public long serverMemoryMax() {
        return settings.get(HostKeys.SERVER_MEMORY_MAX);
    }

    public String libvirtUri() {
        return settings.get(HostKeys.LIBVIRT_URI);
    }
}
