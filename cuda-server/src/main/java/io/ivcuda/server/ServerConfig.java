package io.ivcuda.server;

import io.ivcuda.server.core.Limits;
import io.ivcuda.server.integrity.IntegrityConfig;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.commons.configuration2.PropertiesConfiguration;
import org.apache.commons.configuration2.builder.fluent.Configurations;
import org.apache.commons.configuration2.ex.ConfigurationException;

/**
 * The server's configuration (docs/architecture.md): properties files in order, later ones
 * override earlier ones, {@code --set} overrides all. Every key is known and every value checked;
 * a {@link ConfigError} names the key and where it came from.
 */
public record ServerConfig(Path regionPath, long regionSize, String mode, String doorbellSocket, int doorbellVectors,
                           int doorbellPeerUid, int doorbellParkTimeoutMs, String gpu,
                           long memoryQuota, String backend, int channelCount, int channelWindow,
                           int ownerTimeoutMs, long waitSpinUs, long waitParkMaxUs, long waitIdleParkMs, Path pidfile,
                           String domainUuid, String domainName, Limits limits, IntegrityConfig integrity) {

    static final Set<String> KEYS = Set.of("region.path", "region.size", "mode", "doorbell.socket",
            "doorbell.vectors", "doorbell.peer.uid", "doorbell.park.timeout.ms", "gpu",
            "memory.quota", "backend", "channel.count", "channel.window", "owner.timeout.ms", "wait.spin.us",
            "wait.park.max.us", "wait.idle.park.ms", "pidfile", "domain.uuid", "domain.name",
            "limit.handles.process", "limit.handles.vm", "limit.allocations.process", "limit.processes",
            "limit.module.image.bytes", "log.refusals.per.kind", "log.refusals.window.ms",
            "integrity.oracle", "integrity.driver", "integrity.oracles", "integrity.timeout.ms");

    /**
     * How long a process's heartbeat may stand still (while the VM's goes on) before the server takes
     * it for dead and reclaims it: a dead process's channels and memory come back within 2 s.
     */
    public static final int DEFAULT_OWNER_TIMEOUT_MS = 1500;

    /** ivshmem-doorbell: the server is the VM's ivshmem server and idle workers sleep until rung. */
    public boolean doorbell() {
        return mode.equals("doorbell");
    }

    /** A configuration error: exit status 2. */
    public static final class ConfigError extends Exception {
        public ConfigError(String message) {
            super(message);
        }
    }

    private record Value(String text, String source) {
    }

    public static ServerConfig load(List<Path> files, List<String> sets) throws ConfigError {
        Map<String, Value> values = new LinkedHashMap<>();
        Configurations configurations = new Configurations();
        for (Path file : files) {
            PropertiesConfiguration c;
            try {
                c = configurations.properties(file.toFile());
            } catch (ConfigurationException e) {
                throw new ConfigError(file + ": cannot be read: " + e.getMessage());
            }
            for (Iterator<String> keys = c.getKeys(); keys.hasNext(); ) {
                String key = keys.next();
                values.put(key, new Value(c.getString(key), file.toString()));
            }
        }
        for (String set : sets) {
            int eq = set.indexOf('=');
            if (eq <= 0) {
                throw new ConfigError("--set " + set + ": expected KEY=VALUE");
            }
            values.put(set.substring(0, eq).trim(), new Value(set.substring(eq + 1).trim(), "--set"));
        }
        for (Map.Entry<String, Value> e : values.entrySet()) {
            if (!KEYS.contains(e.getKey())) {
                throw new ConfigError(e.getValue().source() + ": unknown key " + e.getKey());
            }
        }
        Reader r = new Reader(values);
        String regionPath = r.string("region.path", null);
        if (regionPath == null || regionPath.isBlank()) {
            throw new ConfigError("region.path: required (set it in a --config file or with --set)");
        }
        String mode = r.string("mode", "plain");
        if (!mode.equals("plain") && !mode.equals("doorbell")) {
            throw r.bad("mode", "is neither plain nor doorbell");
        }
        String socket = r.string("doorbell.socket", null);
        if (mode.equals("doorbell") && (socket == null || socket.isBlank())) {
            throw r.bad("doorbell.socket", "required in doorbell mode (the socket QEMU's <server path> names)");
        }
        String backend = r.string("backend", "cuda");
        if (!backend.equals("cuda") && !backend.equals("host-memory")) {
            throw r.bad("backend", "is neither cuda nor host-memory");
        }
        String pidfile = r.string("pidfile", null);
        return new ServerConfig(Path.of(regionPath), r.number("region.size", 268435456L, 1L << 20, 1L << 46),
                mode, socket, (int) r.number("doorbell.vectors", 1, 1, 64),
                (int) r.number("doorbell.peer.uid", -1, -1, Integer.MAX_VALUE),
                (int) r.number("doorbell.park.timeout.ms", 1000, 10, 60_000), r.string("gpu", "0"),
                r.number("memory.quota", 0, 0, Long.MAX_VALUE), backend,
                (int) r.number("channel.count", 0, 0, 4096), (int) r.number("channel.window", 0, 0, 16 << 20),
                (int) r.number("owner.timeout.ms", DEFAULT_OWNER_TIMEOUT_MS, 100, 3_600_000),
                r.number("wait.spin.us", 50, 0, 1_000_000), r.number("wait.park.max.us", 1000, 1, 1_000_000),
                r.number("wait.idle.park.ms", 20, 0, 1000),
                pidfile == null ? null : Path.of(pidfile), r.string("domain.uuid", ""), r.string("domain.name", ""),
                limits(r), integrity(r));
    }

    private static IntegrityConfig integrity(Reader r) throws ConfigError {
        IntegrityConfig d = IntegrityConfig.DEFAULT;
        String driver = r.string("integrity.driver", d.driver());
        if (driver.isBlank()) {
            throw r.bad("integrity.driver", "is empty");
        }
        return new IntegrityConfig(Path.of(r.string("integrity.oracle", d.oracle().toString())), driver,
                (int) r.number("integrity.oracles", d.oracles(), 0, 4096),
                (int) r.number("integrity.timeout.ms", d.timeoutMs(), 100, 600_000));
    }

    private static Limits limits(Reader r) throws ConfigError {
        Limits d = Limits.DEFAULT;
        return new Limits((int) r.number("limit.handles.process", d.handlesPerProcess(), 1, 1 << 24),
                (int) r.number("limit.handles.vm", d.handlesPerVm(), 1, 1 << 24),
                (int) r.number("limit.allocations.process", d.allocationsPerProcess(), 1, 1 << 24),
                (int) r.number("limit.processes", d.processes(), 1, 1 << 20),
                r.number("limit.module.image.bytes", d.imageBytes(), 1 << 20, 1L << 34),
                (int) r.number("log.refusals.per.kind", d.refusalLinesPerKind(), 1, 1000),
                r.number("log.refusals.window.ms", d.refusalWindowMs(), 1000, 3_600_000));
    }

    private static final class Reader {
        private final Map<String, Value> values;

        Reader(Map<String, Value> values) {
            this.values = values;
        }

        String string(String key, String fallback) {
            Value v = values.get(key);
            return v == null ? fallback : v.text();
        }

        ConfigError bad(String key, String why) {
            Value v = values.get(key);
            String where = v == null ? "default" : v.source();
            return new ConfigError(where + ": " + key + " = " + (v == null ? "" : v.text()) + ": " + why);
        }

        long number(String key, long fallback, long min, long max) throws ConfigError {
            Value v = values.get(key);
            if (v == null) {
                return fallback;
            }
            long n;
            try {
                n = Long.decode(v.text());
            } catch (NumberFormatException e) {
                throw bad(key, "is not a number");
            }
            if (n < min || n > max) {
                throw bad(key, "is not in " + min + ".." + max);
            }
            return n;
        }
    }
}
