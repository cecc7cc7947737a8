package io.ivcuda.common.config;

import io.ivcuda.common.ServerLaunch;
import io.ivcuda.common.Mode;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The keys of hook and provisioner ("lifecycle keys") in the host configuration
 * {@code /etc/ivcuda/ivcuda.properties}; every other key of that file is the cuda-server's
 * ({@link ServerKeys}) and goes to each VM's instance configuration. Documented in docs/operations.md
 * (generated from these declarations: {@code ConfigDocTest}).
 */
public final class HostKeys {
    private HostKeys() {
    }

    private static final KeyType<Long> MS = KeyType.duration(TimeUnit.MILLISECONDS);

    public static final ConfigKey<String> DEFAULTS_DEVICE = ConfigKey.of("defaults.device", KeyType.TEXT, "0",
            "GPU of a domain whose element names none: index (0, 1, …) or UUID (GPU-…; needs `gpu.<n>.uuid`)");
    public static final ConfigKey<Mode> DEFAULTS_MODE = ConfigKey.of("defaults.mode", KeyType.words(Mode.class, Mode::word),
            Mode.PLAIN, "mode of a domain whose element names none: `plain` or `doorbell`");
    public static final ConfigKey<Long> DEFAULTS_SIZE = ConfigKey.of("defaults.size", KeyType.BYTES, 256L << 20,
            "region size of a domain whose element names none: a power of two from 1M to 64G").shown("256M");
    public static final ConfigKey<Long> DEFAULTS_QUOTA = ConfigKey.of("defaults.quota", KeyType.BYTES, 0L,
            "GPU memory quota of a domain whose element names none; 0 = no limit (not allowed on a GPU with a capacity)");
    public static final ConfigKey<Long> DEFAULTS_SHARE = ConfigKey.of("defaults.share", KeyType.NUMBER, 100L,
            "compute share of a domain whose element names none: percent of the GPU's SMs; 100 = the whole GPU, no MPS "
                    + "(docs/sharing.md)").range(1, 100);
    public static final ConfigKey<Long> GPU_CAPACITY = ConfigKey.of("gpu.<n>.capacity", KeyType.BYTES, null,
            "GPU memory that quotas on GPU n may add up to");
    public static final ConfigKey<String> GPU_UUID = ConfigKey.of("gpu.<n>.uuid", KeyType.TEXT, null,
            "UUID of GPU n (`nvidia-smi -L`), for `device=\"GPU-…\"`");
    public static final ConfigKey<Path> RUNTIME_DIR = ConfigKey.of("runtime.dir", KeyType.PATH, Path.of("/run/ivcuda"),
            "instance configurations, pidfiles, sockets");
    public static final ConfigKey<Path> SHM_DIR = ConfigKey.of("shm.dir", KeyType.PATH, Path.of("/dev/shm"),
            "region files (QEMU's ivshmem-plain looks there)");
    public static final ConfigKey<Path> STATE_DIR = ConfigKey.of("state.dir", KeyType.PATH, Path.of("/var/lib/ivcuda"),
            "state kept across reboots: `backend-slots`, which front-end domain holds which back-end slot "
                    + "(docs/backend-domains.md)");
    public static final ConfigKey<Path> LOG_DIR = ConfigKey.of("log.dir", KeyType.PATH, Path.of("/var/log/ivcuda"),
            "direct-launch server logs; the hook's log where journald does not run");
    public static final ConfigKey<String> QEMU_GROUP = ConfigKey.of("qemu.group", KeyType.TEXT, "libvirt-qemu",
            "group of the region file (RHEL/Fedora: `qemu`)");
    public static final ConfigKey<String> SERVER_USER = ConfigKey.of("server.user", KeyType.TEXT, "ivcuda",
            "the server's user, owner of the region file");
    public static final ConfigKey<ServerLaunch> SERVER_LAUNCH = ConfigKey.of("server.launch",
            KeyType.words(ServerLaunch.class, ServerLaunch::word), ServerLaunch.AUTO,
            "`auto` (systemd when `/run/systemd/system` exists), `systemd` (`ivcuda-server@UUID.service`; a doorbell "
                    + "back-end's slot relays `ivcuda-relay@UUID-slotK.service`) or `direct` (a detached process)");
    public static final ConfigKey<String> SERVER_COMMAND = ConfigKey.of("server.command", KeyType.TEXT, "/usr/bin/ivcuda-server",
            "the server for direct launch; may carry arguments (`java -jar …/cuda-server.jar`)");
    public static final ConfigKey<String> SERVER_SYSCALL_FILTER = ConfigKey.of("server.syscall.filter", KeyType.TEXT,
            "/usr/libexec/ivcuda/ivcuda-syscall-filter", "direct launch: the program that loads the server unit's system-call "
                    + "allow-list before the server runs (needs libseccomp; empty: none)");
    public static final ConfigKey<Long> SERVER_READY_TIMEOUT_MS = ConfigKey.of("server.ready.timeout.ms", MS, 30_000L,
            "longest wait for READY at start").range(1, Long.MAX_VALUE);
    public static final ConfigKey<Long> SERVER_STOP_TIMEOUT_MS = ConfigKey.of("server.stop.timeout.ms", MS, 10_000L,
            "SIGTERM grace before SIGKILL").range(1, Long.MAX_VALUE);
    public static final ConfigKey<Long> SERVER_MEMORY_MAX = ConfigKey.of("server.memory.max", KeyType.BYTES, 4L << 30,
            "host memory a server may hold besides its region: under systemd the hook sets the unit's `MemoryMax` to region "
            + "size + this at each start; launched directly, only the JVM is sized from it (`-XX:MaxRAM`: its heap at most a "
            + "quarter of this) (`0`: no limit)").shown("4G");
    // NVIDIA MPS, for domains with a compute share (docs/sharing.md)
    public static final ConfigKey<Path> MPS_PIPE_DIR = ConfigKey.of("mps.pipe.dir", KeyType.PATH, Path.of("/run/ivcuda-mps"),
            "the MPS control daemon's pipe directory (`CUDA_MPS_PIPE_DIRECTORY` of daemon and servers); "
                    + "`ivcuda-mps.service` uses the default");
    public static final ConfigKey<Path> MPS_LOG_DIR = ConfigKey.of("mps.log.dir", KeyType.PATH, Path.of("/var/log/ivcuda/mps"),
            "the MPS control daemon's log directory (`CUDA_MPS_LOG_DIRECTORY`)");
    public static final ConfigKey<String> MPS_CONTROL = ConfigKey.of("mps.control", KeyType.TEXT,
            "/usr/bin/nvidia-cuda-mps-control", "the MPS control program; the hook starts its daemon (`-d`) on demand "
                    + "where there is no systemd (with systemd: `ivcuda-mps.service`)");
    public static final ConfigKey<Long> MPS_PINNED_HEADROOM = ConfigKey.of("mps.pinned.headroom", KeyType.BYTES, 1L << 30,
            "added to a shared VM's quota in MPS's own limit (`CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`), which also counts the "
                    + "CUDA context's own memory (measured on an H200: 145 MiB at 32 SMs, 389 MiB at 98 SMs; it grows with "
                    + "the SMs), so that the server's exact quota refuses first and MPS stays a second fence; `0`: MPS's "
                    + "limit is exactly the quota").range(0, 1L << 40).shown("1G");
    public static final ConfigKey<String> LIBVIRT_URI = ConfigKey.of("libvirt.uri", KeyType.TEXT, "qemu:///system",
            "the libvirt the provisioner manages");

    /** All of them, in this order. */
    public static final KeySet ALL = KeySet.of("host (hook and provisioner)", HostKeys.class);

    /**
     * Whether {@code key} belongs to hook and provisioner: a declared key, or one of their families
     * ({@code defaults.}, {@code server.}, {@code mps.} but the server's {@code mps.unavailable}, {@code gpu.<n>.}) — a misspelt one of those is an error of the host
     * configuration, not a key for the server.
     */
    public static boolean isLifecycleKey(String key) {
        return ALL.knows(key) || key.startsWith("defaults.") || key.startsWith("server.") || key.startsWith("mps.")
                && !ServerKeys.ALL.knows(key) || key.matches("gpu\\.[0-9]+\\..*");
    }
}
