package io.ivcuda.provisioner;

import com.sun.jna.Library;
import com.sun.jna.Native;
import io.ivcuda.common.BackendPaths;
import io.ivcuda.common.ByteSize;
import io.ivcuda.common.ControlRegion;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.SlotLedger;
import io.ivcuda.common.DomainXml;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.RegionHeader;
import io.ivcuda.common.ServerProcesses;
import io.ivcuda.common.Mode;
import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.common.metrics.VmFigures;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import org.libvirt.Connect;
import org.libvirt.Domain;
import org.libvirt.DomainInfo;
import org.libvirt.LibvirtException;

/**
 * What {@code ivshmem-provisioner status} shows: for every domain that is tagged or carries an ivcuda
 * device, what libvirt says (state), what the provisioner makes of its element (provisioning, from a
 * dry run of the reconcile), and what runs (the server's pid and uptime from /proc, its state from the
 * region's header, and what it holds from its status file, which it writes when asked with SIGUSR1); and
 * for the host, whether the hook and the provisioner daemon are where libvirt and the admin need them.
 * Every figure comes from the thing itself at the moment of asking; what cannot be read says so.
 */
final class StatusReport {
    static final Path HOOK = Path.of("/etc/libvirt/hooks/qemu.d/50-ivcuda");
    /** How long status waits for a server to answer SIGUSR1 with a fresh status file. */
    static final long STATUS_WAIT_MS = 1000;
    private static final int SIGUSR1 = 10;

    record Host(String hook, String libvirtd, String daemon) {
    }

    /** What runs for a domain: null fields are what could not be read. */
    record Server(Long pid, String state, String started, Long uptimeSeconds, String mode, String region, Long regionSize,
                  List<Integer> processes, Integer channelsAttached, Integer channelsTotal, Long memoryHeld, Long memoryQuota,
                  String statusWritten, Long refusals, java.util.Map<String, Long> refusalsByKind, Integer computeShare,
                  String computeShareState, String computeShareProblem, VmFigures.Totals calls) {
    }

    /**
     * @param backend a back-end domain's slots and agent (issue 16), else null
     * @param frontend which back-end and slot serve a front-end domain, else null
     */
    record DomainStatus(String name, String uuid, String state, String provisioning, String provisioningDetail,
                        boolean problem, Server server, String lastError, BackendStatus backend, FrontendStatus frontend) {
    }

    /**
     * One slot of a back-end: who holds it (the ledger), what the control region says (null when there is none:
     * the back-end has not started since boot), and what the back-end's agent reports of its server.
     */
    record SlotStatus(int slot, String frontend, String frontendUuid, String state, String server, Integer serverPid,
                      String serverMessage, RelayStatus relay) {
    }

    /**
     * A doorbell slot's relay on the host (docs/backend-domains.md): its socket, its process (found by its
     * {@code --socket} argument), {@code state} {@value #RELAY_RUNNING}, {@value #RELAY_STARTING} (no pidfile yet),
     * {@value #RELAY_STALE} (no process, but its socket or pidfile left) or {@value #RELAY_NONE}; and who is
     * connected, from the peers file the relay keeps (null: not known).
     */
    record RelayStatus(String socket, Long pid, String state, List<RelayPeer> peers) {
    }

    /** A QEMU connected to a relay: peer 0 the back-end's slot device, peer 1 the front-end. */
    record RelayPeer(int peer, String role, long pid, int uid) {
    }

    static final String RELAY_RUNNING = "running";
    static final String RELAY_STARTING = "starting";
    static final String RELAY_STALE = "stale";
    static final String RELAY_NONE = "not running";

    /**
     * A back-end domain: whether its hook marked it running, its agent (pid, whether its heartbeat moved while
     * status looked, for {@link #AGENT_LOOK_MS}), and its slots.
     */
    record BackendStatus(int slotCount, long slotSize, boolean running, Integer agentPid, String agent, String agentMessage,
                         List<SlotStatus> slots) {
    }

    /** A front-end domain: its back-end and slot (the ledger), and that slot's state in the back-end's control region. */
    record FrontendStatus(String backend, String backendUuid, Integer slot, String slotState, String server) {
    }

    /** How long status watches a back-end agent's heartbeat (it beats every 200 ms). */
    static final long AGENT_LOOK_MS = 600;

    record Report(Host host, List<DomainStatus> domains) {
    }

    interface LibC extends Library {
        int kill(int pid, int signal);
    }

    private final Connect connection;
    private final HostConfig host;

    StatusReport(Connect connection, HostConfig host) {
        this.connection = connection;
        this.host = host;
    }

    Report gather(boolean all) throws LibvirtException {
        List<DomainStatus> domains = new ArrayList<>();
        List<SlotLedger.Assignment> ledger;
        try {
            ledger = SlotLedger.of(host).read();
        } catch (IvcudaConfigException e) {
            ledger = List.of();
        }
        for (Outcome o : new Reconciler(connection, host).preview()) {
            if (!all && o.action() == Outcome.Action.UNTAGGED && o.foreign().isEmpty()) {
                continue;
            }
            DomainStatus role = role(o, ledger);
            domains.add(role != null ? role : domain(o));
        }
        return new Report(hostStatus(), domains);
    }

    /** The status of a back-end or front-end domain, from its persistent element; null for any other domain. */
    private DomainStatus role(Outcome o, List<SlotLedger.Assignment> ledger) {
        try {
            Domain domain = connection.domainLookupByName(o.domain());
            try {
                GpuElement element = DomainXml.parse(domain.getXMLDesc(Domain.XMLFlags.INACTIVE)).parseGpuElement();
                if (element == null || !element.backendRole() && !element.frontEnd()) {
                    return null;
                }
                return roleStatus(o, domain.getUUIDString(), stateWord(domain.getInfo().state), element, ledger);
            } finally {
                domain.free();
            }
        } catch (LibvirtException | IvcudaConfigException e) {
            return null;
        }
    }

    private DomainStatus domain(Outcome o) {
        String state = "?";
        String uuid = null;
        DomainXml live = null;
        try {
            Domain domain = connection.domainLookupByName(o.domain());
            try {
                uuid = domain.getUUIDString();
                DomainInfo info = domain.getInfo();
                state = stateWord(info.state);
                if (domain.isActive() == 1) {
                    live = DomainXml.parse(domain.getXMLDesc(0));
                }
            } finally {
                domain.free();
            }
        } catch (LibvirtException | IvcudaConfigException e) {
            state = "unknown (" + e.getMessage() + ")";
        }
        String provisioning = provisioningWord(o);
        String detail = o.detail();
        if (!o.foreign().isEmpty()) {
            detail = "carries " + Outcome.describeForeign(o.foreign()) + "; reconcile removes it, the hook refuses to start "
                    + "the domain with it" + (detail.isEmpty() ? "" : "; " + detail);
        }
        Server server = null;
        String lastError = o.isProblem() ? detail : null;
        if (uuid != null && live != null && (live.isTagged() || live.currentShmem() != null)) {
            InstancePaths paths = InstancePaths.of(uuid, host);
            server = server(paths);
            String serverError = lastServerError(paths, server);
            if (serverError != null) {
                lastError = serverError;
            }
        }
        return new DomainStatus(o.domain(), uuid, state, provisioning, detail, o.isProblem(), server, lastError, null, null);
    }

    /** A back-end's or front-end's status; null for a domain of neither role. */
    private DomainStatus roleStatus(Outcome o, String uuid, String state, GpuElement element, List<SlotLedger.Assignment> ledger) {
        String provisioning = provisioningWord(o);
        String detail = o.detail();
        if (!o.foreign().isEmpty()) {
            detail = "carries " + Outcome.describeForeign(o.foreign()) + "; reconcile removes it" + (detail.isEmpty() ? "" : "; " + detail);
        }
        String lastError = o.isProblem() ? detail : null;
        if (element.backendRole()) {
            return new DomainStatus(o.domain(), uuid, state, provisioning, detail, o.isProblem(), null, lastError,
                    backendStatus(uuid, element, ledger), null);
        }
        return new DomainStatus(o.domain(), uuid, state, provisioning, detail, o.isProblem(), null, lastError, null,
                frontendStatus(uuid, ledger));
    }

    private BackendStatus backendStatus(String uuid, GpuElement element, List<SlotLedger.Assignment> ledger) {
        BackendPaths paths = BackendPaths.of(uuid, host);
        int count = element.slotCount();
        boolean running = Files.exists(paths.runningMarker());
        List<SlotStatus> slots = new ArrayList<>();
        Integer agentPid = null;
        String agent = "no control region (the back-end has not started since boot)";
        String agentMessage = null;
        ControlRegion.View view = null;
        if (Files.exists(paths.controlFile())) {
            try (ControlRegion control = ControlRegion.open(paths.controlFile())) {
                long before = control.header().agentHeartbeatVolatile();
                long deadline = System.nanoTime() + AGENT_LOOK_MS * 1_000_000;
                boolean beats = false;
                while (!beats && running && System.nanoTime() < deadline) {
                    ServerProcesses.sleep(50);
                    beats = control.header().agentHeartbeatVolatile() != before;
                }
                view = control.view(count);
                agentPid = view.agentPid() == 0 ? null : view.agentPid();
                agent = beats ? "alive" : view.agentHeartbeat() == 0 ? "none since the back-end started"
                        : running ? "heartbeat stopped (no beat in " + AGENT_LOOK_MS + " ms)" : "back-end not running";
                agentMessage = view.agentMessage().isEmpty() ? null : view.agentMessage();
            } catch (IOException e) {
                agent = "control region unreadable: " + e.getMessage();
            }
        }
        boolean doorbell = element.mode().orElse(Mode.PLAIN) == Mode.DOORBELL;
        for (int k = 0; k < count; k++) {
            RelayStatus relay = relayStatus(paths, k);
            if (!doorbell && relay.state().equals(RELAY_NONE)) {
                relay = null; // a plain back-end has none
            }
            java.util.Optional<SlotLedger.Assignment> a = SlotLedger.ofSlot(ledger, uuid, k);
            ControlRegion.SlotView v = view == null ? null : view.slots().get(k);
            slots.add(new SlotStatus(k, a.map(SlotLedger.Assignment::frontendName).orElse(null),
                    a.map(SlotLedger.Assignment::frontendUuid).orElse(null),
                    v == null ? null : v.assigned() ? "ASSIGNED" : "FREE", v == null ? null : v.serverStateName(),
                    v == null || v.serverPid() == 0 ? null : v.serverPid(),
                    v == null || v.serverMessage().isEmpty() ? null : v.serverMessage(), relay));
        }
        return new BackendStatus(count, element.size().orElse(host.defaultSize()), running, agentPid, agent, agentMessage, slots);
    }

    /** Slot {@code slot}'s relay: its process, the files it leaves, the peers it says are connected. */
    static RelayStatus relayStatus(BackendPaths paths, int slot) {
        Path socket = paths.relaySocket(slot);
        List<Long> pids = ServerProcesses.find(socket);
        boolean pidfile = Files.exists(paths.relayPidfile(slot));
        if (pids.isEmpty()) {
            boolean left = pidfile || Files.exists(socket, LinkOption.NOFOLLOW_LINKS);
            return new RelayStatus(socket.toString(), null, left ? RELAY_STALE : RELAY_NONE, null);
        }
        return new RelayStatus(socket.toString(), pids.get(0), pidfile ? RELAY_RUNNING : RELAY_STARTING,
                relayPeers(paths.relayPeers(slot)));
    }

    /** The relay's peers file ({@code PEER PID UID} a line); null when it is missing or not as the relay writes it. */
    static List<RelayPeer> relayPeers(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.US_ASCII);
        } catch (IOException | RuntimeException e) {
            return null;
        }
        List<RelayPeer> peers = new ArrayList<>();
        for (String line : lines) {
            String[] w = line.trim().split(" ");
            if (w.length != 3 || !w[0].matches("[01]") || !w[1].matches("[0-9]{1,10}") || !w[2].matches("[0-9]{1,10}")) {
                return null;
            }
            int peer = Integer.parseInt(w[0]);
            peers.add(new RelayPeer(peer, peer == 0 ? "back-end" : "front-end", Long.parseLong(w[1]),
                    (int) Long.parseLong(w[2])));
        }
        return peers;
    }

    private FrontendStatus frontendStatus(String uuid, List<SlotLedger.Assignment> ledger) {
        java.util.Optional<SlotLedger.Assignment> a = SlotLedger.ofFrontend(ledger, uuid);
        if (a.isEmpty()) {
            return new FrontendStatus(null, null, null, null, null);
        }
        String backendName = a.get().backendUuid();
        try {
            Domain d = connection.domainLookupByUUIDString(a.get().backendUuid());
            try {
                backendName = d.getName();
            } finally {
                d.free();
            }
        } catch (LibvirtException e) {
            // shown by UUID
        }
        String slotState = null;
        String server = null;
        Path control = BackendPaths.of(a.get().backendUuid(), host).controlFile();
        if (Files.exists(control)) {
            try (ControlRegion c = ControlRegion.open(control)) {
                ControlRegion.SlotView v = c.view(a.get().slot() + 1).slots().get(a.get().slot());
                boolean ours = uuid.equals(v.frontendUuid());
                slotState = v.assigned() ? (ours ? "ASSIGNED" : "ASSIGNED to another") : "FREE";
                server = v.assigned() && ours ? v.serverStateName() : null;
            } catch (IOException e) {
                slotState = "unreadable";
            }
        }
        return new FrontendStatus(backendName, a.get().backendUuid(), a.get().slot(), slotState, server);
    }

    static String provisioningWord(Outcome o) {
        if (!o.foreign().isEmpty()) {
            return "FOREIGN DEVICE";
        }
        return switch (o.action()) {
            case UNTAGGED -> "untagged";
            case UNCHANGED -> "provisioned";
            case ADDED -> "pending: add";
            case UPDATED -> "pending: update";
            case REMOVED -> "pending: remove";
            case REFUSED -> "REFUSED";
            case INVALID -> "INVALID";
            case SKIPPED -> "transient";
            case NOT_FOUND -> "NOT FOUND";
            case FAILED -> "FAILED";
        };
    }

    private static String stateWord(DomainInfo.DomainState state) {
        return switch (state) {
            case VIR_DOMAIN_RUNNING -> "running";
            case VIR_DOMAIN_BLOCKED -> "blocked";
            case VIR_DOMAIN_PAUSED -> "paused";
            case VIR_DOMAIN_SHUTDOWN -> "shutting down";
            case VIR_DOMAIN_SHUTOFF -> "shut off";
            case VIR_DOMAIN_CRASHED -> "crashed";
            case VIR_DOMAIN_PMSUSPENDED -> "suspended";
            default -> "no state";
        };
    }

    /** The server of a running domain: found by its command line, asked for its status file. */
    private Server server(InstancePaths paths) {
        List<Long> pids = ServerProcesses.find(paths.instanceConfig());
        RegionHeader header = RegionHeader.read(paths.regionFile());
        if (pids.isEmpty()) {
            return new Server(null, "not running" + (header == RegionHeader.NONE ? "" : " (header: " + header.stateName() + ")"),
                    null, null, null, paths.regionFile().toString(), null, List.of(), null, null, null, null, null, null,
                    java.util.Map.of(), null, null, null, null);
        }
        long pid = pids.get(0);
        Instant started = ServerProcesses.startTime(pid);
        Properties status = askStatus(pid, paths.statusFile());
        String state = header.stateName();
        Long uptime = started == null ? null : Duration.between(started, Instant.now()).toSeconds();
        return new Server(pid, state, started == null ? null : started.toString(), uptime,
                status.getProperty(ServerKeys.MODE.name(), ServerKeys.MODE.format((header.featureBits() & 1) != 0 ? Mode.DOORBELL : Mode.PLAIN)),
                paths.regionFile().toString(), number(status, ServerKeys.REGION_SIZE.name()), pids(status.getProperty("processes")),
                integer(status, "channels.attached"), integer(status, "channels.total"),
                number(status, "memory.held"), number(status, ServerKeys.MEMORY_QUOTA.name()), status.getProperty("written"),
                number(status, VmFigures.REFUSALS), refusalsByKind(status), integer(status, ServerKeys.COMPUTE_SHARE.name()),
                status.getProperty("compute.share.state"), status.getProperty("compute.share.problem"),
                status.getProperty(VmFigures.TOTAL + "calls") == null ? null : VmFigures.read(status, "", "").totals());
    }

    /** The server's refusal counters ({@code refusals.KIND} keys of its status file), by kind. */
    static java.util.Map<String, Long> refusalsByKind(Properties status) {
        return VmFigures.refusalsByKind(status);
    }

    /**
     * Sends SIGUSR1 and waits (at most {@link #STATUS_WAIT_MS}) for a status file written after it.
     * Empty properties when the server does not answer (an older server, or not ours to signal).
     */
    static Properties askStatus(long pid, Path file) {
        Instant asked = Instant.now();
        Properties status = new Properties();
        try {
            if (Native.load("c", LibC.class).kill((int) pid, SIGUSR1) != 0) {
                return status;
            }
        } catch (UnsatisfiedLinkError e) {
            return status;
        }
        long deadline = System.nanoTime() + STATUS_WAIT_MS * 1_000_000;
        while (System.nanoTime() < deadline) {
            Properties read = readProperties(file);
            String written = read.getProperty("written");
            if (written != null && !Instant.parse(written).isBefore(asked.minusMillis(5))) {
                return read;
            }
            ServerProcesses.sleep(10);
        }
        return status;
    }

    private static Properties readProperties(Path file) {
        Properties p = new Properties();
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.ISO_8859_1)) {
            p.load(reader);
        } catch (IOException | IllegalArgumentException e) {
            // not there (yet)
        }
        return p;
    }

    private static Long number(Properties p, String key) {
        try {
            return p.getProperty(key) == null ? null : Long.parseLong(p.getProperty(key).trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static Integer integer(Properties p, String key) {
        Long n = number(p, key);
        return n == null ? null : n.intValue();
    }

    private static List<Integer> pids(String text) {
        if (text == null || text.isBlank()) {
            return List.of();
        }
        return Arrays.stream(text.trim().split("\\s+")).filter(w -> w.matches("[0-9]{1,9}")).map(Integer::valueOf).toList();
    }

    /**
     * The server's last error since its latest start: its header's message when it is not READY, else the
     * last ERROR line of its log (direct launch: log.dir/server-UUID.log; under systemd the journal).
     */
    private String lastServerError(InstancePaths paths, Server server) {
        RegionHeader header = RegionHeader.read(paths.regionFile());
        if (server != null && server.pid() != null && !header.isReady() && !header.serverMessage().isEmpty()) {
            return header.serverMessage();
        }
        if (server == null || server.pid() == null) {
            return server == null ? null : "the domain runs, but its cuda-server does not: CUDA in the guest fails; shut the "
                    + "domain down and start it again";
        }
        if (!Files.isReadable(paths.serverLog())) {
            return null;
        }
        try {
            return lastErrorSinceStart(Files.readAllLines(paths.serverLog(), StandardCharsets.UTF_8));
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /**
     * The last ERROR line of a server log after its last start line ({@code --- TIME starting: …}, which the
     * hook writes before each start): an error of an earlier start is not this run's.
     */
    static String lastErrorSinceStart(List<String> lines) {
        String last = null;
        for (String line : lines) {
            if (line.startsWith("--- ")) {
                last = null; // a new start
            } else if (line.contains(" ERROR ")) {
                last = line;
            }
        }
        return last;
    }

    /** The hook installed and seen by libvirtd, the provisioner daemon running. */
    private Host hostStatus() {
        String hook;
        String libvirtd;
        if (!Files.exists(HOOK)) {
            hook = "missing: " + HOOK + " (tagged domains start without their server)";
        } else if (!Files.isExecutable(HOOK)) {
            hook = HOOK + " is not executable";
        } else {
            hook = "installed at " + HOOK;
        }
        List<Long> daemons = ServerProcesses.findCommand(List.of("libvirtd"), List.of("virtqemud"));
        if (daemons.isEmpty()) {
            libvirtd = "no libvirtd or virtqemud on this host (or not visible from here)";
        } else {
            long pid = daemons.get(0);
            Instant started = ServerProcesses.startTime(pid);
            Instant hookTime = null;
            try {
                hookTime = Files.getLastModifiedTime(HOOK, LinkOption.NOFOLLOW_LINKS).toInstant();
            } catch (IOException e) {
                // no hook: said above
            }
            libvirtd = "pid " + pid + (started != null && hookTime != null && started.isBefore(hookTime)
                    ? ", STARTED BEFORE THE HOOK WAS INSTALLED: it does not run it; restart libvirtd (or virtqemud)"
                    : ", runs the hook");
        }
        List<Long> provisioners = ServerProcesses.findCommand(List.of("ivshmem-provisioner.jar", "daemon"));
        String daemon = provisioners.isEmpty()
                ? "NOT RUNNING: element changes are not followed (start it: service ivcuda-provisioner start, or "
                        + "systemctl start ivcuda-provisioner)"
                : "running, pid " + provisioners.get(0);
        return new Host(hook, libvirtd, daemon);
    }

    /** Bytes for a table cell: {@code 64 MiB}, {@code 1.5 GiB}. */
    static String bytes(Long n) {
        if (n == null) {
            return "?";
        }
        if (n >= 1L << 30 && n % (1L << 30) != 0) {
            return String.format(java.util.Locale.ROOT, "%.1f GiB", n / (double) (1L << 30));
        }
        return ByteSize.describe(n);
    }

    /** Seconds as {@code 3d4h}, {@code 5h02m}, {@code 12m03s}, {@code 42s}. */
    static String duration(Long seconds) {
        if (seconds == null) {
            return "?";
        }
        long s = seconds;
        if (s >= 86_400) {
            return String.format("%dd%dh", s / 86_400, s % 86_400 / 3600);
        }
        if (s >= 3600) {
            return String.format("%dh%02dm", s / 3600, s % 3600 / 60);
        }
        return s >= 60 ? String.format("%dm%02ds", s / 60, s % 60) : s + "s";
    }
}
