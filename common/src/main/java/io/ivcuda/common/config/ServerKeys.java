package io.ivcuda.common.config;

import io.ivcuda.common.Backend;
import io.ivcuda.common.Mode;
import io.ivcuda.common.MpsFallback;
import io.ivcuda.common.RegionKind;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The cuda-server's keys: read by the server ({@code --config}, {@code --set}), written by the libvirt hook
 * into each VM's instance configuration, documented in docs/operations.md (the table is generated from
 * these declarations: {@code ConfigDocTest}). A new server key is one line here.
 */
public final class ServerKeys {
    private ServerKeys() {
    }

    private static final KeyType<Long> MS = KeyType.duration(TimeUnit.MILLISECONDS);
    private static final KeyType<Long> US = KeyType.duration(TimeUnit.MICROSECONDS);

    // ---- written by the hook for each VM ----
    public static final ConfigKey<Path> REGION_PATH = ConfigKey.of("region.path", KeyType.PATH, null,
            "the region file; created with `region.size` if absent (`region.kind` file), refused if present with another size").shown("— (required)");
    public static final ConfigKey<Long> REGION_SIZE = ConfigKey.of("region.size", KeyType.BYTES, 268435456L,
            "bytes, power of two ≥ 1 MiB").range(1L << 20, 1L << 46);
    public static final ConfigKey<RegionKind> REGION_KIND = ConfigKey.of("region.kind",
            KeyType.words(RegionKind.class, RegionKind::word), RegionKind.FILE,
            "`file` (the host's region file, as `region.path` says) or `device` (a back-end domain's ivshmem BAR, sysfs "
                    + "`resource2`: it must exist with exactly `region.size` bytes; never created, resized or removed)");
    public static final ConfigKey<Mode> MODE = ConfigKey.of("mode", KeyType.words(Mode.class, Mode::word), Mode.PLAIN,
            "`plain` (ivshmem-plain, polling) or `doorbell` (ivshmem-doorbell, interrupts; the server is the ivshmem server)");
    public static final ConfigKey<String> DOORBELL_SOCKET = ConfigKey.of("doorbell.socket", KeyType.TEXT, null,
            "doorbell mode (required there): the listening socket, the domain's `<server path>`; with `region.kind` "
                    + "`device` (a back-end's slot) the socket of ivcuda-guest-irqd serving the slot device's MSI-X eventfds");
    public static final ConfigKey<Long> DOORBELL_VECTORS = ConfigKey.of("doorbell.vectors", KeyType.NUMBER, 1L,
            "eventfd pairs handed to QEMU: exactly the domain's `<msi vectors>` (the hook writes the provisioner's 32)").range(1, 64);
    public static final ConfigKey<String> GPU = ConfigKey.of("gpu", KeyType.TEXT, "0",
            "device index or UUID the VM uses");
    public static final ConfigKey<Long> MEMORY_QUOTA = ConfigKey.of("memory.quota", KeyType.BYTES, 0L,
            "bytes of device memory the VM may hold, 0 = no limit").range(0, Long.MAX_VALUE);
    public static final ConfigKey<Long> COMPUTE_SHARE = ConfigKey.of("compute.share", KeyType.NUMBER, 100L,
            "percent of the GPU's SMs the VM may use, enforced by MPS: below 100 the server must run as an MPS client "
                    + "(`CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` set to it: docs/sharing.md)").range(1, 100);
    public static final ConfigKey<Path> PIDFILE = ConfigKey.of("pidfile", KeyType.PATH, null,
            "written after ready, removed at exit");
    public static final ConfigKey<String> DOMAIN_UUID = ConfigKey.of("domain.uuid", KeyType.TEXT, "",
            "the domain's UUID, for log lines and the doorbell peer check").shown("—");
    public static final ConfigKey<String> DOMAIN_NAME = ConfigKey.of("domain.name", KeyType.TEXT, "",
            "the domain's name, for log lines").shown("—");

    // ---- from the host configuration (every VM) ----
    public static final ConfigKey<Backend> BACKEND = ConfigKey.of("backend", KeyType.words(Backend.class, Backend::word),
            Backend.CUDA, "`cuda` (JNA → libcuda.so.1); `host-memory` exists only to test the transport without a GPU");
    public static final ConfigKey<Long> CHANNEL_COUNT = ConfigKey.of("channel.count", KeyType.NUMBER, 0L,
            "channels in the region: 32, or as many as fit in half of a small region (0 = auto)").range(0, 4096).shown("auto");
    public static final ConfigKey<Long> CHANNEL_WINDOW = ConfigKey.of("channel.window", KeyType.BYTES, 0L,
            "bytes of each channel's data window (0 = derived)").range(0, 16 << 20).shown("derived");
    // the ring holds one channel's queued calls; 4 KiB still takes the largest record a guest
    // queues that is not sent as a request instead (protocol §6), 1 MiB keeps channels small
    public static final ConfigKey<Long> LIMIT_RING_BYTES = ConfigKey.of("limit.ring.bytes", KeyType.BYTES, 131_072L,
            "bytes of each channel's ring of queued calls, a power of two (the header's `ring_size`: the guest follows "
                    + "it); a call whose record is larger is sent as a request and answered at once; a thread whose ring is "
                    + "full waits for the server to run what it queued (docs/threat-model.md, \"Limits\")").range(4096, 1 << 20);
    public static final ConfigKey<Long> OWNER_TIMEOUT_MS = ConfigKey.of("owner.timeout.ms", MS, 1200L,
            "a process whose heartbeat stood still this long while the VM's went on is reclaimed (protocol §7): with the "
                    + "server's check period (100 ms; doorbell mode 500 ms) its channels and memory come back within 2 s of its "
                    + "death; raise it where CUDA programs are stopped in a debugger").range(100, 3_600_000);
    public static final ConfigKey<Long> LIMIT_HANDLES_PROCESS = ConfigKey.of("limit.handles.process", KeyType.NUMBER, 65_536L,
            "handles one guest process may hold (docs/threat-model.md, \"Limits\"; beyond any limit: a CUDA error)").range(1, 1 << 24);
    public static final ConfigKey<Long> LIMIT_HANDLES_VM = ConfigKey.of("limit.handles.vm", KeyType.NUMBER, 262_144L,
            "handles the VM's processes may hold together").range(1, 1 << 24);
    public static final ConfigKey<Long> LIMIT_ALLOCATIONS_PROCESS = ConfigKey.of("limit.allocations.process", KeyType.NUMBER,
            65_536L, "device allocations one guest process may hold").range(1, 1 << 24);
    // a target is a few hundred bytes of heap (HostCalls, HostCallbacks); a graph's host nodes and
    // staged copies keep theirs until the process goes, so the default leaves room for many captures
    public static final ConfigKey<Long> LIMIT_HOST_FUNCTIONS_PROCESS = ConfigKey.of("limit.host.functions.process",
            KeyType.NUMBER, 65_536L, "host functions one guest process may have waiting on the server at once: queued on "
                    + "streams and not yet run (a stream the driver holds back keeps them), host nodes of its graphs, its "
                    + "staged copies' completions; checked before the driver call, beyond it CUDA_ERROR_OUT_OF_MEMORY")
            .range(1, 1 << 20);
    public static final ConfigKey<Long> LIMIT_PROCESSES = ConfigKey.of("limit.processes", KeyType.NUMBER, 4096L,
            "guest processes the server keeps state for at once").range(1, 1 << 20);
    public static final ConfigKey<Long> LIMIT_MODULE_IMAGE_BYTES = ConfigKey.of("limit.module.image.bytes", KeyType.BYTES,
            512L << 20, "module image bytes kept per VM, and as many in transit (reserved before allocation)").range(1 << 20, 1L << 34);
    public static final ConfigKey<Long> LIMIT_DEVICE_OUTPUT_BYTES = ConfigKey.of("limit.device.output.bytes", KeyType.BYTES,
            1L << 20, "device printf output kept per guest process until it reads it (the driver's default printf buffer); "
                    + "beyond it the output is dropped and counted").range(4096, 256L << 20);
    // one ivc_jit_log_read answers a log in one response area (64 KiB with its header): no more is kept
    public static final ConfigKey<Long> LIMIT_JIT_LOG_BYTES = ConfigKey.of("limit.jit.log.bytes", KeyType.BYTES, 32L << 10,
            "bytes of each JIT log (info, error) the server gives the driver per link state or module load; a longer log "
                    + "is cut, as the driver cuts it at a smaller buffer").range(256, 60L << 10);
    // real programs keep one or two link states alive; the floor lets one state have both logs at their largest
    public static final ConfigKey<Long> LIMIT_JIT_LOG_BYTES_PROCESS = ConfigKey.of("limit.jit.log.bytes.process", KeyType.BYTES,
            4L << 20, "JIT log bytes one guest process's live link states may hold together; a cuLinkCreate beyond it "
                    + "gets CUDA_ERROR_OUT_OF_MEMORY").range(120L << 10, 1L << 30);
    public static final ConfigKey<Long> LIMIT_JIT_LOG_BYTES_VM = ConfigKey.of("limit.jit.log.bytes.vm", KeyType.BYTES,
            64L << 20, "JIT log bytes the VM's processes' live link states may hold together").range(120L << 10, 16L << 30);
    public static final ConfigKey<Long> LIMIT_RECOVERIES = ConfigKey.of("limit.recoveries", KeyType.NUMBER, 10L,
            "times the server may replace its CUDA process after guests' fatal GPU faults within `limit.recoveries.window.ms`; "
                    + "after that the VM's CUDA stays unusable until the VM restarts (0: never replace it)").range(0, 1000);
    public static final ConfigKey<Long> LIMIT_RECOVERIES_WINDOW_MS = ConfigKey.of("limit.recoveries.window.ms", MS, 600_000L,
            "the window of `limit.recoveries`").range(1000, 86_400_000);
    public static final ConfigKey<Long> LOG_REFUSALS_PER_KIND = ConfigKey.of("log.refusals.per.kind", KeyType.NUMBER, 5L,
            "log lines per kind of guest refusal or event per window; the rest are counted").range(1, 1000);
    public static final ConfigKey<Long> LOG_REFUSALS_WINDOW_MS = ConfigKey.of("log.refusals.window.ms", MS, 60_000L,
            "the window of `log.refusals.per.kind`").range(1000, 3_600_000);
    public static final ConfigKey<Long> DOORBELL_PEER_UID = ConfigKey.of("doorbell.peer.uid", KeyType.NUMBER, -1L,
            "doorbell mode: uid QEMU must run as to connect (libvirt-qemu's uid on Debian; -1: any); QEMU's command "
                    + "line must also carry `-uuid <domain.uuid>` when `domain.uuid` is set").range(-1, Integer.MAX_VALUE);
    public static final ConfigKey<Long> DOORBELL_PARK_TIMEOUT_MS = ConfigKey.of("doorbell.park.timeout.ms", MS, 1000L,
            "doorbell mode: longest sleep of a parked worker without a ring (one wake-up per idle channel per period; "
                    + "a guest that cannot ring BAR0 is served at this pace)").range(10, 60_000);
    public static final ConfigKey<Long> WAIT_SPIN_US = ConfigKey.of("wait.spin.us", US, 50L,
            "busy-poll budget before a worker backs off (plain) or parks (doorbell)").range(0, 1_000_000);
    public static final ConfigKey<Long> WAIT_PARK_MAX_US = ConfigKey.of("wait.park.max.us", US, 1000L,
            "longest sleep of an idle worker in plain mode").range(1, 1_000_000);
    public static final ConfigKey<Long> WAIT_IDLE_PARK_MS = ConfigKey.of("wait.idle.park.ms", MS, 20L,
            "plain mode: once a channel (or the watcher) had no work for 100 ms, it sleeps this long at a time; the first "
                    + "call after such a pause waits up to this long; 0 = never").range(0, 1000);
    public static final ConfigKey<MpsFallback> MPS_UNAVAILABLE = ConfigKey.of("mps.unavailable",
            KeyType.words(MpsFallback.class, MpsFallback::word), MpsFallback.REFUSE,
            "a VM with a `compute.share` below 100 whose server MPS does not serve: `refuse` (the server exits 4, the VM "
                    + "does not start) or `unshared` (it runs with the whole GPU and `status` says so)");
    // cudart's integrity check (docs/export-tables.md, "d4082055"; docs/threat-model.md, "The integrity oracle")
    public static final ConfigKey<Path> INTEGRITY_ORACLE = ConfigKey.of("integrity.oracle", KeyType.PATH,
            Path.of("/usr/libexec/ivcuda/ivcuda-integrity-oracle"),
            "the program that answers cudart's integrity check for one guest process (host-tools)");
    public static final ConfigKey<String> INTEGRITY_DRIVER = ConfigKey.of("integrity.driver", KeyType.TEXT, "libcuda.so.1",
            "the driver the integrity oracles load, as dlopen takes it");
    public static final ConfigKey<Long> INTEGRITY_ORACLES = ConfigKey.of("integrity.oracles", KeyType.NUMBER, 16L,
            "integrity oracles alive at once per VM, one per guest process that asked; 0 = none (runtime-API programs "
                    + "then fail with error 103)").range(0, 4096);
    public static final ConfigKey<Long> INTEGRITY_TIMEOUT_MS = ConfigKey.of("integrity.timeout.ms", MS, 30_000L,
            "longest an integrity oracle may take to start (cuInit) or to answer; past it, it is killed").range(100, 600_000);

    /** The keys the hook writes into each VM's instance configuration (an administrator does not set them). */
    public static final java.util.List<ConfigKey<?>> WRITTEN_BY_HOOK = java.util.List.of(REGION_PATH, REGION_SIZE, MODE,
            DOORBELL_SOCKET, DOORBELL_VECTORS, GPU, MEMORY_QUOTA, COMPUTE_SHARE, PIDFILE, DOMAIN_UUID, DOMAIN_NAME);

    /** All of them, in this order. */
    public static final KeySet ALL = KeySet.of("cuda-server", ServerKeys.class);
}
