package io.ivcuda.hook;

import io.ivcuda.common.BackendPaths;
import io.ivcuda.common.ControlRegion;
import io.ivcuda.common.DescriptionNote;
import io.ivcuda.common.DomainXml;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.Mode;
import io.ivcuda.common.ShmemDevice;
import io.ivcuda.common.SlotLedger;
import io.ivcuda.common.SlotRegion;
import io.ivcuda.wire.BackendControlFlyweight;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.LongSupplier;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The hook's work for back-end and front-end domains (issue 16, docs/backend-domains.md); no cuda-server
 * runs on the host for either. A back-end's start makes its region files, fresh slot tokens and an idle
 * agent state; {@code started} marks it running, {@code release} unmarks it. A front-end's start checks its
 * slot (the ledger, its device), that its back-end runs, frees the slot, waits (bounded) for the back-end's
 * agent to stop the slot's last server, wipes the slot's region and gives the slot to the front-end; its
 * {@code release} frees the slot. Never calls libvirt: what it knows of other domains comes from the
 * ledger, the region files and the marker.
 */
final class BackendHook {
    private static final Logger LOG = LogManager.getLogger(BackendHook.class);
    /** Longest wait for the back-end's agent to stop a slot's last server. */
    static final long AGENT_WAIT_MS = 10_000;
    static final long AGENT_STEP_MS = 50;
    /** An agent beats every 200 ms: a heartbeat that stands still this long is no agent. */
    static final long AGENT_STALE_MS = 2_000;

    private final HostConfig host;
    private final DomainNames names;
    private final LongSupplier clock;
    private final ControlRegion.Sleeper sleeper;
    private final long agentWaitMs;
    private final SlotRelays relays;
    private final SecureRandom random = new SecureRandom();

    BackendHook(HostConfig host, DomainNames names) {
        this(host, names, new SlotRelays(host));
    }

    BackendHook(HostConfig host, DomainNames names, SlotRelays relays) {
        this(host, names, System::currentTimeMillis, Thread::sleep, AGENT_WAIT_MS, relays);
    }

    BackendHook(HostConfig host, DomainNames names, LongSupplier clock, ControlRegion.Sleeper sleeper, long agentWaitMs,
                SlotRelays relays) {
        this.host = host;
        this.names = names;
        this.clock = clock;
        this.sleeper = sleeper;
        this.agentWaitMs = agentWaitMs;
        this.relays = relays;
    }

    /**
     * The ivcuda devices a back-end or front-end domain may carry: a back-end its control region and its slots,
     * a front-end the one slot the ledger gives it (none when it gives none: a clone's copy is another's).
     */
    Set<String> ownDevices(DomainXml domain, GpuElement element) throws IvcudaConfigException {
        Set<String> own = new HashSet<>();
        if (element.backendRole()) {
            own.add(BackendPaths.controlShmemName(domain.uuid()));
            for (int k = 0; k < element.slotCount(); k++) {
                own.add(BackendPaths.slotShmemName(domain.uuid(), k));
            }
        } else {
            assignment(domain).ifPresent(a -> own.add(BackendPaths.slotShmemName(a.backendUuid(), a.slot())));
        }
        return own;
    }

    /** Who an ivcuda device name of a back-end belongs to, for messages; null for another kind of name. */
    String describeDevice(String shmemName) {
        BackendPaths.DeviceName device = BackendPaths.parse(shmemName);
        if (device == null) {
            return null;
        }
        String backend = "back-end " + names.describe(device.backendUuid());
        if (device.isControl()) {
            return "the control region of " + backend;
        }
        String holder;
        try {
            holder = SlotLedger.ofSlot(SlotLedger.of(host).read(), device.backendUuid(), device.slot())
                    .map(a -> ", held by domain '" + a.frontendName() + "'").orElse(", held by no front-end");
        } catch (IvcudaConfigException e) {
            holder = "";
        }
        return "slot " + device.slot() + " of " + backend + holder;
    }

    private Optional<SlotLedger.Assignment> assignment(DomainXml domain) throws IvcudaConfigException {
        return SlotLedger.ofFrontend(SlotLedger.of(host).read(), domain.uuid());
    }

    // ---- back-end ----

    void prepareBackend(DomainXml domain, GpuElement element) throws HookException, IvcudaConfigException {
        BackendPaths paths = BackendPaths.of(domain.uuid(), host);
        int slots = element.slotCount();
        long size = element.size().orElse(host.defaultSize());
        checkDevice(domain, new ShmemDevice(paths.controlShmemName(), Mode.PLAIN, BackendPaths.CONTROL_SIZE, null));
        boolean doorbell = element.slotMode() == Mode.DOORBELL;
        for (int k = 0; k < slots; k++) {
            checkDevice(domain, doorbell ? new ShmemDevice(paths.slotShmemName(k), Mode.DOORBELL, 0, paths.relaySocket(k))
                    : new ShmemDevice(paths.slotShmemName(k), Mode.PLAIN, size, null));
        }
        Hook.createRuntimeDir(host);
        try {
            Files.deleteIfExists(paths.runningMarker());
        } catch (IOException e) {
            throw new HookException("cannot remove " + paths.runningMarker() + ": " + e.getMessage(), e);
        }
        RegionFile.ensure(paths.controlFile(), BackendPaths.CONTROL_SIZE, host.serverUser(), host.qemuGroup());
        for (int k = 0; k < slots; k++) {
            RegionFile.ensure(paths.slotFile(k), size, host.serverUser(), host.qemuGroup());
        }
        List<SlotLedger.Assignment> ledger = SlotLedger.of(host).read();
        ControlRegion.Token[] tokens = new ControlRegion.Token[slots];
        try (ControlRegion control = ControlRegion.open(paths.controlFile())) {
            boolean[] keep = new boolean[GpuElement.MAX_SLOTS];
            for (int k = 0; k < slots; k++) {
                int slot = k;
                // ASSIGNED stays only for the front-end the ledger names: its QEMU may still map the slot.
                String holder = control.slot(k).frontendUuid();
                keep[k] = control.slot(k).stateVolatile() == io.ivcuda.wire.BackendSlotFlyweight.SLOT_ASSIGNED
                        && SlotLedger.ofSlot(ledger, domain.uuid(), slot).filter(a -> a.frontendUuid().equals(holder)).isPresent();
                tokens[k] = new ControlRegion.Token(random.nextLong(), random.nextLong());
            }
            control.format(domain.uuid(), slots, element.device().orElse("0"), tokens, keep);
            for (int k = 0; k < slots; k++) {
                SlotRegion.stamp(paths.slotFile(k), tokens[k], k);
            }
        } catch (IOException e) {
            throw new HookException("cannot prepare the back-end's regions in " + host.shmDir() + ": " + e.getMessage(), e);
        }
        if (doorbell) {
            // before QEMU: its doorbell slot devices connect to these at start; one a front-end still uses keeps running
            for (int k = 0; k < slots; k++) {
                relays.ensure(paths, k);
            }
        }
        LOG.info("{}: back-end regions ready ({} {}slots of {} MiB)", domain.name(), slots, doorbell ? "doorbell " : "", size >> 20);
    }

    void startedBackend(DomainXml domain) throws HookException {
        Path marker = BackendPaths.of(domain.uuid(), host).runningMarker();
        try {
            Files.writeString(marker, domain.name() + "\n", StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new HookException("cannot write " + marker + ": " + e.getMessage(), e);
        }
        LOG.info("{}: back-end running ({})", domain.name(), marker);
    }

    /**
     * The back-end stopped: its front-ends keep running, their calls fail until it is back. The relays of its free
     * slots stop; a relay whose front-end runs stays, so that the back-end's next start joins that front-end again.
     * Never throws.
     */
    void releaseBackend(DomainXml domain) {
        BackendPaths paths = BackendPaths.of(domain.uuid(), host);
        Path marker = paths.runningMarker();
        try {
            Files.deleteIfExists(marker);
        } catch (IOException e) {
            LOG.warn("cannot remove {}: {}", marker, e.getMessage());
        }
        // the marker first, the slots' states after: a front-end's release frees its slot first and looks at the
        // marker after, so of two releases at once at least one sees the other's step and stops the relay
        for (int k = 0; k < GpuElement.MAX_SLOTS; k++) {
            if (Files.exists(paths.relayPidfile(k)) && !slotAssigned(paths, k)) {
                relays.stop(paths, k);
            }
        }
        LOG.info("{}: back-end stopped; its front-ends' CUDA calls fail until it runs again", domain.name());
    }

    // ---- front-end ----

    void prepareFrontend(DomainXml domain, GpuElement element) throws HookException, IvcudaConfigException {
        SlotLedger.Assignment a = assignment(domain).orElse(null);
        if (a == null) {
            String provisionerSays = DescriptionNote.errorCause(domain.description());
            throw new HookException(provisionerSays != null ? provisionerSays
                    : "domain '" + domain.name() + "' has no back-end slot: run ivshmem-provisioner provision " + domain.name(),
                    "domain '" + domain.name() + "' is a front-end (" + GpuElement.ATTR_BACKEND + "='" + element.backend().orElse("")
                    + "') but the slot ledger " + SlotLedger.of(host).file() + " gives it no slot. The ivshmem-provisioner "
                    + "assigns one when the domain is defined or its element changes (ivshmem-provisioner status says why not).");
        }
        BackendPaths paths = BackendPaths.of(a.backendUuid(), host);
        String backendName = backendName(a.backendUuid());
        ShmemDevice device = domain.shmemDevice(paths.slotShmemName(a.slot()));
        Mode mode = element.slotMode();
        if (device == null || device.mode() != mode || mode == Mode.DOORBELL && !paths.relaySocket(a.slot()).equals(device.socket())) {
            throw new HookException("the ivcuda device does not match the slot ledger yet",
                    "domain '" + domain.name() + "': the ledger gives it slot " + a.slot() + " of back-end domain '" + backendName
                    + "', but it does not carry <shmem name='" + paths.slotShmemName(a.slot()) + "'> (" + mode.shmemModel()
                    + (mode == Mode.DOORBELL ? ", server " + paths.relaySocket(a.slot()) : "") + "). Run: "
                    + "ivshmem-provisioner provision " + domain.name());
        }
        if (!Files.exists(paths.runningMarker())) {
            throw new HookException("back-end domain '" + backendName + "' is not running; start it first",
                    "domain '" + domain.name() + "' is served by slot " + a.slot() + " of back-end domain '" + backendName
                    + "', which is not running (" + paths.runningMarker() + " is missing). Start it (virsh start " + backendName
                    + "), then this domain.");
        }
        Path slotFile = paths.slotFile(a.slot());
        long fileSize;
        try {
            fileSize = Files.size(slotFile);
        } catch (IOException e) {
            throw new HookException("back-end domain '" + backendName + "' has no region for slot " + a.slot()
                    + "; restart it", "domain '" + domain.name() + "': " + slotFile + " is missing: " + e.getMessage());
        }
        if (mode == Mode.PLAIN && fileSize != device.size()) {
            throw new HookException("slot " + a.slot() + " of back-end domain '" + backendName + "' is " + (fileSize >> 20)
                    + " MiB, the device asks for " + (device.size() >> 20) + " MiB; run ivshmem-provisioner provision "
                    + domain.name(), "domain '" + domain.name() + "': " + slotFile + " does not match its device "
                    + device.describe() + " (the back-end's slot size changed?). Reprovision, and restart the back-end.");
        }
        try (ControlRegion control = ControlRegion.open(paths.controlFile())) {
            BackendControlFlyweight header = control.header();
            if (header.magic() != BackendControlFlyweight.BACKEND_MAGIC || !a.backendUuid().equals(header.backendUuid())) {
                throw new HookException("back-end domain '" + backendName + "' has no control region of its own; restart it",
                        "domain '" + domain.name() + "': " + paths.controlFile() + " is not back-end " + a.backendUuid()
                        + "'s control region (its prepare writes it)");
            }
            control.free(a.slot());
            ControlRegion.Wait waited;
            try {
                waited = control.awaitIdle(a.slot(), agentWaitMs, AGENT_STEP_MS, AGENT_STALE_MS, clock, sleeper);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new HookException("interrupted while waiting for back-end domain '" + backendName + "'", e);
            }
            if (waited == ControlRegion.Wait.TIMEOUT) {
                throw new HookException("back-end domain '" + backendName + "' did not stop the last server of slot " + a.slot()
                        + " within " + agentWaitMs / 1000 + " s", "domain '" + domain.name() + "': the agent of back-end domain '"
                        + backendName + "' is alive but still serves slot " + a.slot() + " (served generation "
                        + control.slot(a.slot()).servedGenerationVolatile() + "); its log inside the back-end says why. "
                        + "Try again, or restart the back-end.");
            }
            ControlRegion.Token token = new ControlRegion.Token(control.slot(a.slot()).tokenLo(), control.slot(a.slot()).tokenHi());
            // Nothing of the last front-end's data reaches this one; the token is written back after the wipe.
            SlotRegion.wipe(slotFile, token, a.slot());
            if (mode == Mode.DOORBELL) {
                // runs since the back-end's start; started here only if it died (the back-end's device then has no peer)
                relays.ensure(paths, a.slot());
            }
            control.assign(a.slot(), new ControlRegion.Assignment(domain.uuid(), domain.name(),
                    element.quota().orElse(host.defaultQuota()), element.share().orElse(host.defaultShare()), null, fileSize,
                    mode == Mode.DOORBELL ? ShmemDevice.DOORBELL_VECTORS : 0));
            LOG.info("{}: slot {} of back-end '{}' assigned ({}; agent: {})", domain.name(), a.slot(), backendName, slotFile, waited);
        } catch (IOException e) {
            throw new HookException("cannot use back-end domain '" + backendName + "''s regions: " + e.getMessage(), e);
        }
    }

    /** The front-end stopped: its slot is free (its device names the slot; only a slot still given to it is freed). Never throws. */
    void releaseFrontend(DomainXml domain) {
        for (org.w3c.dom.Element e : domain.foreignShmems(Set.of())) {
            BackendPaths.DeviceName device = BackendPaths.parse(e.getAttribute("name"));
            if (device == null || device.isControl()) {
                continue;
            }
            Path control = BackendPaths.of(device.backendUuid(), host).controlFile();
            if (!Files.exists(control)) {
                continue;
            }
            try (ControlRegion c = ControlRegion.open(control)) {
                if (domain.uuid().equals(c.slot(device.slot()).frontendUuid())
                        && c.slot(device.slot()).stateVolatile() == io.ivcuda.wire.BackendSlotFlyweight.SLOT_ASSIGNED) {
                    c.free(device.slot());
                    LOG.info("{}: slot {} of back-end {} freed", domain.name(), device.slot(), device.backendUuid());
                }
                BackendPaths paths = BackendPaths.of(device.backendUuid(), host);
                if (!Files.exists(paths.runningMarker()) && Files.exists(paths.relayPidfile(device.slot()))) {
                    // neither QEMU runs any more: the back-end's next start begins a new relay
                    relays.stop(paths, device.slot());
                }
            } catch (IOException | RuntimeException ex) {
                LOG.warn("{}: cannot free slot {} in {}: {}", domain.name(), device.slot(), control, ex.getMessage());
            }
        }
    }

    private static boolean slotAssigned(BackendPaths paths, int k) {
        try (ControlRegion c = ControlRegion.open(paths.controlFile())) {
            return c.slot(k).stateVolatile() == io.ivcuda.wire.BackendSlotFlyweight.SLOT_ASSIGNED;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    private String backendName(String uuid) {
        Path marker = BackendPaths.of(uuid, host).runningMarker();
        try {
            if (Files.isRegularFile(marker) && Files.size(marker) < 512) {
                String name = Files.readString(marker, StandardCharsets.UTF_8).strip();
                if (!name.isEmpty()) {
                    return name;
                }
            }
        } catch (IOException e) {
            // from libvirt's files instead
        }
        String name = names.nameOf(uuid);
        return name != null ? name : uuid;
    }

    private static void checkDevice(DomainXml domain, ShmemDevice wanted) throws HookException {
        ShmemDevice present = domain.shmemDevice(wanted.name());
        if (!wanted.equals(present)) {
            throw new HookException("the ivcuda devices do not match the back-end element yet",
                    "domain '" + domain.name() + "': " + (present == null ? "it lacks " + wanted.describe()
                    : "its device " + present.describe() + " is not " + wanted.describe()) + ". Run: ivshmem-provisioner provision "
                    + domain.name());
        }
    }
}
