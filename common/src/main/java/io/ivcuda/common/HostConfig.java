package io.ivcuda.common;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.commons.configuration2.CompositeConfiguration;
import org.apache.commons.configuration2.Configuration;
import org.apache.commons.configuration2.PropertiesConfiguration;
import org.apache.commons.configuration2.ex.ConfigurationException;

/**
 * The host configuration ({@code /etc/ivcuda/ivcuda.properties}), shared by hook and provisioner.
 * The same file also carries the cuda-server's keys (the hook passes it to every server first).
 * All values are checked when the file is loaded, so a bad value is reported once, naming file and key.
 */
public final class HostConfig {
    public static final Path DEFAULT_PATH = Path.of("/etc/ivcuda/ivcuda.properties");
    /** Environment variable that points hook and provisioner at another host configuration (tests, CI). */
    public static final String ENV_CONFIG = "IVCUDA_CONFIG";

    public enum Launch { AUTO, SYSTEMD, DIRECT }

    /** One configured GPU: its index, optional UUID and optional memory capacity for quota placement. */
    public record Gpu(int index, String uuid, OptionalLong capacity) {
    }

    private static final Pattern GPU_KEY = Pattern.compile("gpu\\.([0-9]{1,4})\\.(capacity|uuid)");
    /**
     * Keys that belong to hook and provisioner. Every other key of the file is the cuda-server's, and
     * the hook hands those to the server (see {@link #serverKeys()}).
     */
    private static final Pattern LIFECYCLE_KEY = Pattern.compile(
            "defaults\\..*|gpu\\.[0-9]+\\..*|runtime\\.dir|shm\\.dir|log\\.dir|qemu\\.group|server\\..*|libvirt\\.uri");

    private final String origin;
    private final Map<String, String> serverKeys;
    private final String defaultDevice;
    private final Mode defaultMode;
    private final long defaultSize;
    private final long defaultQuota;
    private final Map<Integer, Gpu> gpus;
    private final Path runtimeDir;
    private final Path shmDir;
    private final Path logDir;
    private final String qemuGroup;
    private final String serverUser;
    private final Launch serverLaunch;
    private final String serverCommand;
    private final long serverReadyTimeoutMs;
    private final long serverStopTimeoutMs;
    private final long serverMemoryMax;
    private final String libvirtUri;

    private HostConfig(Configuration c, List<Path> files) throws IvcudaConfigException {
        this.origin = files.isEmpty() ? "built-in defaults" : String.join(", ", files.stream().map(Path::toString).toList());
        this.defaultDevice = c.getString("defaults.device", "0").trim();
        String modeWord = c.getString("defaults.mode", "plain");
        Mode mode = Mode.fromWord(modeWord);
        if (mode == null) {
            throw bad("defaults.mode", modeWord, "unknown mode (use plain or doorbell)");
        }
        this.defaultMode = mode;
        this.defaultSize = bytes(c, "defaults.size", "256M");
        if (!ByteSize.isValidRegionSize(defaultSize)) {
            throw bad("defaults.size", c.getString("defaults.size"), "the region size must be a power of two from 1 MiB to "
                    + ByteSize.describe(ByteSize.MAX_REGION_SIZE));
        }
        this.defaultQuota = bytes(c, "defaults.quota", "0");
        this.gpus = readGpus(c);
        this.runtimeDir = Path.of(c.getString("runtime.dir", "/run/ivcuda"));
        this.shmDir = Path.of(c.getString("shm.dir", "/dev/shm"));
        this.logDir = Path.of(c.getString("log.dir", "/var/log/ivcuda"));
        this.qemuGroup = c.getString("qemu.group", "libvirt-qemu").trim();
        this.serverUser = c.getString("server.user", "ivcuda").trim();
        String launch = c.getString("server.launch", "auto").trim();
        try {
            this.serverLaunch = Launch.valueOf(launch.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw bad("server.launch", launch, "use auto, systemd or direct");
        }
        this.serverCommand = c.getString("server.command", "/usr/bin/ivcuda-server").trim();
        if (serverCommand.isEmpty()) {
            throw bad("server.command", serverCommand, "must name the cuda-server command");
        }
        this.serverReadyTimeoutMs = millis(c, "server.ready.timeout.ms", 30000);
        this.serverStopTimeoutMs = millis(c, "server.stop.timeout.ms", 10000);
        this.serverMemoryMax = bytes(c, "server.memory.max", "4G");
        this.libvirtUri = c.getString("libvirt.uri", "qemu:///system").trim();
        Map<String, String> forServer = new TreeMap<>();
        for (Iterator<String> keys = c.getKeys(); keys.hasNext(); ) {
            String key = keys.next();
            if (!isLifecycleKey(key)) {
                forServer.put(key, c.getString(key));
            }
        }
        this.serverKeys = java.util.Collections.unmodifiableMap(forServer);
    }

    /** Whether a key is one of hook and provisioner's own (documented in templates/ivcuda.properties). */
    public static boolean isLifecycleKey(String key) {
        return LIFECYCLE_KEY.matcher(key).matches();
    }

    /**
     * The cuda-server's keys of this file (every key that is not a lifecycle key), with their values.
     * The server refuses keys it does not know, so it gets these and not the whole file.
     */
    public Map<String, String> serverKeys() {
        return serverKeys;
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
        CompositeConfiguration composite = new CompositeConfiguration();
        // CompositeConfiguration answers from the first configuration that has a key: add in reverse.
        List<Path> reversed = new ArrayList<>(files);
        java.util.Collections.reverse(reversed);
        for (Path file : reversed) {
            composite.addConfiguration(read(file));
        }
        return new HostConfig(composite, files);
    }

    public static HostConfig defaults() {
        try {
            return new HostConfig(new PropertiesConfiguration(), List.of());
        } catch (IvcudaConfigException e) {
            throw new IllegalStateException("built-in defaults are invalid", e);
        }
    }

    private static PropertiesConfiguration read(Path file) throws IvcudaConfigException {
        if (!Files.isRegularFile(file)) {
            throw new IvcudaConfigException("host configuration " + file + ": missing or not a regular file");
        }
        PropertiesConfiguration properties = new PropertiesConfiguration();
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            properties.read(reader);
        } catch (IOException | ConfigurationException | RuntimeException e) {
            throw new IvcudaConfigException("host configuration " + file + ": unreadable: " + e.getMessage(), e);
        }
        return properties;
    }

    private Map<Integer, Gpu> readGpus(Configuration c) throws IvcudaConfigException {
        Map<Integer, String> uuids = new TreeMap<>();
        Map<Integer, OptionalLong> capacities = new TreeMap<>();
        for (Iterator<String> keys = c.getKeys("gpu"); keys.hasNext(); ) {
            String key = keys.next();
            Matcher m = GPU_KEY.matcher(key);
            if (!m.matches()) {
                throw bad(key, c.getString(key), "unknown key (known: gpu.<n>.capacity, gpu.<n>.uuid)");
            }
            int index = Integer.parseInt(m.group(1));
            if ("uuid".equals(m.group(2))) {
                uuids.put(index, c.getString(key).trim());
            } else {
                capacities.put(index, OptionalLong.of(bytes(c, key, null)));
            }
        }
        Map<Integer, Gpu> result = new TreeMap<>();
        if (uuids.isEmpty() && capacities.isEmpty()) {
            // Nothing configured: one GPU, index 0, without a capacity limit.
            result.put(0, new Gpu(0, null, OptionalLong.empty()));
            return result;
        }
        int count = Math.max(uuids.isEmpty() ? 0 : ((TreeMap<Integer, String>) uuids).lastKey() + 1,
                capacities.isEmpty() ? 0 : ((TreeMap<Integer, OptionalLong>) capacities).lastKey() + 1);
        for (int i = 0; i < count; i++) {
            result.put(i, new Gpu(i, uuids.get(i), capacities.getOrDefault(i, OptionalLong.empty())));
        }
        return result;
    }

    private long bytes(Configuration c, String key, String fallback) throws IvcudaConfigException {
        String text = c.getString(key, fallback);
        try {
            return ByteSize.parse(text);
        } catch (IllegalArgumentException e) {
            throw bad(key, text, e.getMessage());
        }
    }

    private long millis(Configuration c, String key, long fallback) throws IvcudaConfigException {
        String text = c.getString(key, Long.toString(fallback)).trim();
        try {
            long value = Long.parseLong(text);
            if (value <= 0) {
                throw bad(key, text, "must be a positive number of milliseconds");
            }
            return value;
        } catch (NumberFormatException e) {
            throw bad(key, text, "must be a positive number of milliseconds");
        }
    }

    private IvcudaConfigException bad(String key, String value, String reason) {
        return new IvcudaConfigException("host configuration " + origin + ": " + key + "='" + value + "': " + reason);
    }

    public String origin() {
        return origin;
    }

    public String defaultDevice() {
        return defaultDevice;
    }

    public Mode defaultMode() {
        return defaultMode;
    }

    public long defaultSize() {
        return defaultSize;
    }

    public long defaultQuota() {
        return defaultQuota;
    }

    /** The configured GPUs by index (indices 0..count-1). */
    public Map<Integer, Gpu> gpus() {
        return gpus;
    }

    public Path runtimeDir() {
        return runtimeDir;
    }

    public Path shmDir() {
        return shmDir;
    }

    public Path logDir() {
        return logDir;
    }

    public String qemuGroup() {
        return qemuGroup;
    }

    public String serverUser() {
        return serverUser;
    }

    public Launch serverLaunch() {
        return serverLaunch;
    }

    public String serverCommand() {
        return serverCommand;
    }

    public long serverReadyTimeoutMs() {
        return serverReadyTimeoutMs;
    }

    public long serverStopTimeoutMs() {
        return serverStopTimeoutMs;
    }

    /**
     * Host memory a systemd-supervised server may hold beyond its region (JVM, driver, pinned
     * buffers); the unit's MemoryMax is the region size plus this. 0: no limit.
     */
    public long serverMemoryMax() {
        return serverMemoryMax;
    }

    public String libvirtUri() {
        return libvirtUri;
    }
}
