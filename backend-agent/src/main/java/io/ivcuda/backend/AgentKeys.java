package io.ivcuda.backend;

import io.ivcuda.common.Backend;
import io.ivcuda.common.config.ConfigKey;
import io.ivcuda.common.config.KeySet;
import io.ivcuda.common.config.KeyType;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The agent's keys ({@code /etc/ivcuda/backend.properties}, {@code --config}, {@code --set}), checked like the
 * server's (common's Settings): an unknown key or a bad value is one line naming the key, the value and the file.
 */
public final class AgentKeys {
    private AgentKeys() {
    }

    private static final KeyType<Long> MS = KeyType.duration(TimeUnit.MILLISECONDS);

    public static final ConfigKey<Path> SYSFS_ROOT = ConfigKey.of("sysfs.root", KeyType.PATH, Path.of("/sys"),
            "where sysfs is: the agent looks for ivshmem devices (PCI 1af4:1110) under ROOT/bus/pci/devices");
    public static final ConfigKey<Backend> BACKEND = ConfigKey.of("backend", KeyType.words(Backend.class, Backend::word),
            Backend.CUDA, "what the servers serve with: `cuda` (this domain's GPU) or `host-memory` (tests without a GPU)");
    public static final ConfigKey<String> SERVER_COMMAND = ConfigKey.of("server.command", KeyType.TEXT, "",
            "the cuda-server command, words split at spaces (empty: this JVM running cuda-server.jar beside the agent's jar)")
            .shown("— (cuda-server.jar beside the agent)");
    public static final ConfigKey<Path> SERVER_CONFIG = ConfigKey.of("server.config", KeyType.PATH, null,
            "a cuda-server properties file every server reads first (host-wide server keys: channel.count, integrity.oracle...)")
            .shown("—");
    public static final ConfigKey<String> SERVER_USER = ConfigKey.of("server.user", KeyType.TEXT, "",
            "the user the servers run as (the agent, as root, starts them through setpriv and gives the user the slot's "
                    + "device file); empty: the agent's own user").shown("—");
    public static final ConfigKey<String> IRQD_COMMAND = ConfigKey.of("irqd.command", KeyType.TEXT,
            "/usr/libexec/ivcuda-backend/ivcuda-guest-irqd",
            "a front-end in doorbell mode: the interrupt daemon the agent (root) starts for the slot's device, words split at "
                    + "spaces; it takes the device through vfio-pci and hands its server the MSI-X eventfds (the front-end's "
                    + "rings); empty, or when it cannot start: the slot's server polls, and says so in the log. It gets "
                    + "--exit-with-parent=<agent pid> (it stops when the agent ends, even killed): a wrapper must exec it");
    public static final ConfigKey<Path> RUN_DIR = ConfigKey.of("run.dir", KeyType.PATH, Path.of("/run/ivcuda-backend"),
            "the servers' pidfiles and the agent's record of its children, servers and interrupt daemons (slotK.server, "
                    + "slotK.irqd: pid and start time), by which a new agent stops those a killed one left");
    public static final ConfigKey<Long> POLL_MS = ConfigKey.of("poll.ms", MS, 200L,
            "how often the agent beats its heartbeat and reads the host's slot changes").range(10, 2000);
    public static final ConfigKey<Long> STOP_TIMEOUT_MS = ConfigKey.of("stop.timeout.ms", MS, 5000L,
            "how long a stopped server may take after SIGTERM before SIGKILL (the host waits 10 s for a freed slot)")
            .range(100, 9000);
    public static final ConfigKey<Long> RESTART_BACKOFF_MAX_MS = ConfigKey.of("restart.backoff.max.ms", MS, 30_000L,
            "a failed server of a still assigned slot is restarted after 1 s, then twice as long each time, up to this")
            .range(100, 3_600_000);

    /** All of them, in this order. */
    public static final KeySet ALL = KeySet.of("ivcuda-backend-agent", AgentKeys.class);
}
