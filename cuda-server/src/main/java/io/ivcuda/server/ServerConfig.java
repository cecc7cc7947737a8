package io.ivcuda.server;

import io.ivcuda.common.Backend;
import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.Mode;
import io.ivcuda.common.MpsFallback;
import io.ivcuda.common.RegionKind;
import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.common.config.Settings;
import io.ivcuda.server.core.Limits;
import io.ivcuda.server.integrity.IntegrityConfig;
import java.nio.file.Path;
import java.util.List;

/**
 * The server's configuration (docs/operations.md, "cuda-server keys"): the keys of {@link ServerKeys}, read
 * by common's {@link Settings} — properties files in order, later ones override earlier ones, {@code --set}
 * overrides all. Every key is known and every value checked when loaded; an {@link IvcudaConfigException}
 * names the key, the value and where it came from. What is left here is what one key alone cannot say.
 */
public record ServerConfig(Path regionPath, long regionSize, RegionKind regionKind, Mode mode, String doorbellSocket, int doorbellVectors,
                           int doorbellPeerUid, int doorbellParkTimeoutMs, String gpu,
                           long memoryQuota, Backend backend, int channelCount, int channelWindow, int ringBytes,
                           int ownerTimeoutMs, long waitSpinUs, long waitParkMaxUs, long waitIdleParkMs, Path pidfile,
                           String domainUuid, String domainName, Limits limits, IntegrityConfig integrity,
                           int computeShare, MpsFallback mpsUnavailable) {

    /**
     * How long a process's heartbeat may stand still (while the VM's goes on) before the server takes
     * it for dead and reclaims it: a dead process's channels and memory come back within 2 s.
     */
    public static final int DEFAULT_OWNER_TIMEOUT_MS = (int) (long) ServerKeys.OWNER_TIMEOUT_MS.defaultValue();

    /** ivshmem-doorbell: the server is the VM's ivshmem server and idle workers sleep until rung. */
    public boolean doorbell() {
        return mode == Mode.DOORBELL;
    }

    /** {@code files} in order (later ones win), then {@code sets} ({@code KEY=VALUE}, win over all). */
    public static ServerConfig load(List<Path> files, List<String> sets) throws IvcudaConfigException {
        Settings s = Settings.load(ServerKeys.ALL, Settings.Layer.commandLine(files, sets));
        Path regionPath = s.get(ServerKeys.REGION_PATH);
        if (regionPath == null) {
            throw new IvcudaConfigException(ServerKeys.REGION_PATH.name() + ": required (set it in a --config file or with --set)");
        }
        Mode mode = s.get(ServerKeys.MODE);
        String socket = s.get(ServerKeys.DOORBELL_SOCKET);
        RegionKind kind = s.get(ServerKeys.REGION_KIND);
        if (mode == Mode.DOORBELL && (socket == null || socket.isBlank())) {
            throw s.bad(ServerKeys.DOORBELL_SOCKET, kind == RegionKind.DEVICE
                    ? "required in doorbell mode (with " + ServerKeys.REGION_KIND.name() + " device: ivcuda-guest-irqd's socket for the slot device)"
                    : "required in doorbell mode (the socket QEMU's <server path> names)");
        }
        long ringBytes = s.get(ServerKeys.LIMIT_RING_BYTES);
        if (Long.bitCount(ringBytes) != 1) {
            // records are placed at tail & (ring_size - 1) on both sides (protocol §6)
            throw s.bad(ServerKeys.LIMIT_RING_BYTES, "is not a power of two (4096, 8192, … 1048576)");
        }
        return new ServerConfig(regionPath, s.get(ServerKeys.REGION_SIZE), kind, mode, socket,
                s.getInt(ServerKeys.DOORBELL_VECTORS), s.getInt(ServerKeys.DOORBELL_PEER_UID),
                s.getInt(ServerKeys.DOORBELL_PARK_TIMEOUT_MS), s.get(ServerKeys.GPU), s.get(ServerKeys.MEMORY_QUOTA),
                s.get(ServerKeys.BACKEND), s.getInt(ServerKeys.CHANNEL_COUNT), s.getInt(ServerKeys.CHANNEL_WINDOW),
                (int) ringBytes,
                s.getInt(ServerKeys.OWNER_TIMEOUT_MS), s.get(ServerKeys.WAIT_SPIN_US), s.get(ServerKeys.WAIT_PARK_MAX_US),
                s.get(ServerKeys.WAIT_IDLE_PARK_MS), s.get(ServerKeys.PIDFILE), s.get(ServerKeys.DOMAIN_UUID),
                s.get(ServerKeys.DOMAIN_NAME), limits(s), integrity(s), s.getInt(ServerKeys.COMPUTE_SHARE),
                s.get(ServerKeys.MPS_UNAVAILABLE));
    }

    private static IntegrityConfig integrity(Settings s) throws IvcudaConfigException {
        String driver = s.get(ServerKeys.INTEGRITY_DRIVER);
        if (driver == null || driver.isBlank()) {
            throw s.bad(ServerKeys.INTEGRITY_DRIVER, "is empty");
        }
        return new IntegrityConfig(s.get(ServerKeys.INTEGRITY_ORACLE), driver, s.getInt(ServerKeys.INTEGRITY_ORACLES),
                s.getInt(ServerKeys.INTEGRITY_TIMEOUT_MS));
    }

    private static Limits limits(Settings s) {
        return new Limits(s.getInt(ServerKeys.LIMIT_HANDLES_PROCESS), s.getInt(ServerKeys.LIMIT_HANDLES_VM),
                s.getInt(ServerKeys.LIMIT_ALLOCATIONS_PROCESS), s.getInt(ServerKeys.LIMIT_PROCESSES),
                s.get(ServerKeys.LIMIT_MODULE_IMAGE_BYTES), s.getInt(ServerKeys.LOG_REFUSALS_PER_KIND),
                s.get(ServerKeys.LOG_REFUSALS_WINDOW_MS), s.getInt(ServerKeys.LIMIT_RECOVERIES),
                s.get(ServerKeys.LIMIT_RECOVERIES_WINDOW_MS), s.getInt(ServerKeys.LIMIT_DEVICE_OUTPUT_BYTES),
                s.getInt(ServerKeys.LIMIT_JIT_LOG_BYTES), s.get(ServerKeys.LIMIT_JIT_LOG_BYTES_PROCESS),
                s.get(ServerKeys.LIMIT_JIT_LOG_BYTES_VM), s.getInt(ServerKeys.LIMIT_HOST_FUNCTIONS_PROCESS));
    }
}
