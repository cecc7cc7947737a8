package io.ivcuda.provisioner;

import io.ivcuda.common.BackendPaths;
import io.ivcuda.common.ByteSize;
import io.ivcuda.common.ControlRegion;
import io.ivcuda.common.DescriptionNote;
import io.ivcuda.common.DomainXml;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.Mode;
import io.ivcuda.common.ShmSpace;
import io.ivcuda.common.ShmemDevice;
import io.ivcuda.common.SlotLedger;
import io.ivcuda.common.VmSettings;
import io.ivcuda.common.config.HostKeys;
import io.ivcuda.provisioner.Outcome.Action;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.libvirt.Connect;
import org.libvirt.Domain;
import org.libvirt.LibvirtException;

/**
 * Brings the persistent definition of domains in line with their ivcuda element: exactly one
 * {@code <shmem name='ivcuda-UUID'>} for a tagged domain whose element is valid and whose quota fits,
 * none for an untagged one, and never another domain's ivcuda device (a clone copies the original's:
 * it is removed from every domain, tagged or not). Our {@link DescriptionNote} in {@code <description>}
 * says what the domain gets or why not, in the persistent definition and, for a running domain, in
 * the live one. A domain that already matches is not changed, so the echo of our own change
 * (DEFINED/UPDATED, METADATA_CHANGE) changes nothing. A domain with a problem keeps its device as it
 * was and gets the reason in its note.
 */
public final class Reconciler {
    private static final Logger LOG = LogManager.getLogger(Reconciler.class);
    private static final int PERSISTENT_DEFINITION = Domain.XMLFlags.INACTIVE | Domain.XMLFlags.SECURE;
    /** {@code VIR_DOMAIN_METADATA_DESCRIPTION}: {@code setMetadata} of the {@code <description>} text. */
    private static final int METADATA_DESCRIPTION = 0;

    private final Connect connection;
    private final HostConfig host;
    private final SlotLedger slots;
    /** Why the slot ledger could not be read or written in this run (back-ends and front-ends are then left as they are). */
    private String ledgerProblem;

    public Reconciler(Connect connection, HostConfig host) {
        this.connection = connection;
        this.host = host;
        this.slots = SlotLedger.of(host);
    }

    /**
     * One domain's persistent definition, read once. {@code xml} is null when it could not be parsed;
     * {@code live} is the running domain's live XML (null when the domain is not running or it could not be read).
     */
    private record Snapshot(String name, DomainXml xml, String readError, DomainXml live) {
    }

    /** Reconciles every persistent domain: already provisioned ones first, so they keep their GPU memory. */
    public List<Outcome> reconcileAll() throws LibvirtException {
        return run(null, false);
    }

    /** Reconciles one domain by name; other domains are only read (for quota placement). */
    public Outcome reconcile(String domainName) throws LibvirtException {
        List<Outcome> outcomes = run(domainName, false);
        if (outcomes.isEmpty()) {
            try {
                connection.domainLookupByName(domainName).free();
            } catch (LibvirtException e) {
                return new Outcome(domainName, Action.NOT_FOUND, "no domain of this name at " + connection.getURI());
            }
            return new Outcome(domainName, Action.SKIPPED, "a transient domain: no persistent definition to change");
        }
        return outcomes.get(0);
    }

    /** What {@link #reconcileAll()} would do, without changing anything (for {@code status}). */
    public List<Outcome> preview() throws LibvirtException {
        return run(null, true);
    }

    /** Carries libvirt's exception through the slot ledger's update. */
    private static final class LibvirtFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        LibvirtFailure(LibvirtException cause) {
            super(cause);
        }
    }

    /**
     * Runs under the slot ledger's lock (front-end domains may take or give up slots; a dry run works on a
     * copy). A ledger that cannot be read or written leaves every back-end and front-end domain as it is,
     * saying why; host-served domains still get their turn.
     */
    private List<Outcome> run(String only, boolean dryRun) throws LibvirtException {
        List<Snapshot> snapshots = snapshotAll();
        try {
            if (dryRun || snapshots.stream().noneMatch(Reconciler::hasRole) && slots.read().isEmpty()) {
                // Nothing to place: no lock, no ledger file made where no back-end domain was ever used.
                return run(only, dryRun, snapshots, new ArrayList<>(slots.read()));
            }
            return slots.update(assignments -> {
                try {
                    return run(only, false, snapshots, assignments);
                } catch (LibvirtException e) {
                    throw new LibvirtFailure(e);
                }
            });
        } catch (LibvirtFailure e) {
            throw (LibvirtException) e.getCause();
        } catch (IvcudaConfigException e) {
            ledgerProblem = e.getMessage();
            return run(only, dryRun, snapshots, new ArrayList<>());
        }
    }

    private List<Outcome> run(String only, boolean dryRun, List<Snapshot> snapshots, List<SlotLedger.Assignment> assignments)
            throws LibvirtException {
        Roles roles = roles(snapshots, assignments);
        List<SlotLedger.Assignment> before = List.copyOf(assignments);
        // Front-ends first: a back-end's note counts the slots they hold after this run.
        snapshots.sort(Comparator.comparing((Snapshot s) -> isBackend(s))
                .thenComparing((Snapshot s) -> s.xml == null || s.xml.currentShmem() == null).thenComparing(Snapshot::name));
        QuotaLedger ledger = new QuotaLedger(host);
        if (only != null) {
            // Everyone else keeps what they hold now.
            for (Snapshot s : snapshots) {
                if (!s.name.equals(only)) {
                    VmSettings held = heldSettings(s);
                    if (held != null) {
                        ledger.reserve(held);
                    }
                }
            }
        }
        List<Outcome> outcomes = new ArrayList<>();
        for (Snapshot s : snapshots) {
            if (only != null && !s.name.equals(only)) {
                continue;
            }
            Outcome outcome;
            try {
                outcome = reconcileOne(s, ledger, roles, dryRun);
            } catch (LibvirtException e) {
                if (only != null) {
                    throw e;
                }
                // Undefined meanwhile, or libvirt refused this one: the other domains still get their turn.
                outcome = new Outcome(s.name, Action.FAILED, "libvirt: " + (e.getError() != null ? e.getError().getMessage() : e.getMessage()));
            }
            outcomes.add(outcome);
            if (!dryRun) {
                log(outcome);
            }
        }
        if (only != null && !dryRun && !assignments.equals(before)) {
            // A front-end took or gave up a slot: its back-ends' notes count their slots in use.
            for (Snapshot s : snapshots) {
                if (!s.name.equals(only) && isBackend(s)) {
                    try {
                        log(reconcileOne(s, ledger, roles, false));
                    } catch (LibvirtException e) {
                        LOG.debug("back-end '{}' note: {}", s.name, e.getMessage());
                    }
                }
            }
        }
        if (!dryRun) {
            removeUndefinedBackendFiles(snapshots);
        }
        return outcomes;
    }

    private static boolean hasRole(Snapshot s) {
        try {
            GpuElement element = s.xml == null ? null : s.xml.parseGpuElement();
            return element != null && (element.backendRole() || element.frontEnd());
        } catch (IvcudaConfigException e) {
            return false;
        }
    }

    private static boolean isBackend(Snapshot s) {
        try {
            GpuElement element = s.xml == null ? null : s.xml.parseGpuElement();
            return element != null && element.backendRole();
        } catch (IvcudaConfigException e) {
            return false;
        }
    }

    /**
     * Every persistent domain as slot placement sees it, and the ledger without the assignments nobody can
     * use any more: of a front-end that is gone or no longer a front-end, or on a back-end that is gone. An
     * assignment of a domain whose element has a problem stays (as its device does) until the problem is fixed.
     */
    private Roles roles(List<Snapshot> snapshots, List<SlotLedger.Assignment> assignments) {
        Map<String, SlotPlacement.Known> byName = new HashMap<>();
        Map<String, SlotPlacement.Known> byUuid = new HashMap<>();
        Map<String, Long> quotas = new HashMap<>();
        java.util.Set<String> keepFrontends = new java.util.HashSet<>();
        for (Snapshot s : snapshots) {
            if (s.xml == null) {
                continue;
            }
            GpuElement element;
            try {
                element = s.xml.parseGpuElement();
            } catch (IvcudaConfigException e) {
                keepFrontends.add(s.xml.uuid());
                byUuid.put(s.xml.uuid(), new SlotPlacement.Known(s.name, s.xml.uuid(), null, false, false));
                byName.put(s.name, byUuid.get(s.xml.uuid()));
                continue;
            }
            BackendDomain backend = null;
            if (element != null && element.backendRole()) {
                BackendDomain b = BackendDomain.of(s.name, s.xml.uuid(), element, host);
                backend = ShmSpace.neverFits(host.shmDir(), b.slotSize()) == null ? b : null;
            }
            boolean frontEnd = element != null && element.frontEnd();
            if (frontEnd) {
                keepFrontends.add(s.xml.uuid());
                quotas.put(s.xml.uuid(), element.quota().orElse(host.defaultQuota()));
            }
            SlotPlacement.Known known = new SlotPlacement.Known(s.name, s.xml.uuid(), backend,
                    element != null && element.backendRole(), frontEnd);
            byName.put(s.name, known);
            byUuid.put(s.xml.uuid(), known);
        }
        if (ledgerProblem == null) {
            assignments.removeIf(a -> !keepFrontends.contains(a.frontendUuid()) || !byUuid.containsKey(a.backendUuid()));
        }
        return new Roles(ledgerProblem == null && connection != null ? new SlotPlacement(byName, byUuid, assignments, quotas) : null,
                assignments);
    }

    /**
     * A back-end that is undefined leaves its region files in {@code shm.dir}: they go once no slot is ASSIGNED
     * (a running front-end may still map its slot; the hook frees it when that front-end stops).
     */
    private void removeUndefinedBackendFiles(List<Snapshot> snapshots) {
        java.util.Set<String> defined = new java.util.HashSet<>();
        snapshots.forEach(s -> {
            if (s.xml != null) {
                defined.add(s.xml.uuid());
            }
        });
        try (java.util.stream.Stream<java.nio.file.Path> files = java.nio.file.Files.list(host.shmDir())) {
            for (java.nio.file.Path file : files.toList()) {
                BackendPaths.DeviceName name = BackendPaths.parse(file.getFileName().toString());
                if (name == null || !name.isControl() || defined.contains(name.backendUuid())) {
                    continue;
                }
                boolean assigned;
                try (ControlRegion control = ControlRegion.open(file)) {
                    assigned = control.view(GpuElement.MAX_SLOTS).slots().stream().anyMatch(ControlRegion.SlotView::assigned);
                } catch (java.io.IOException e) {
                    assigned = false; // not a control region of ours after all (wrong size): nothing maps it as one
                }
                if (assigned) {
                    continue;
                }
                BackendPaths paths = BackendPaths.of(name.backendUuid(), host);
                for (int k = 0; k < GpuElement.MAX_SLOTS; k++) {
                    java.nio.file.Files.deleteIfExists(paths.slotFile(k));
                }
                java.nio.file.Files.deleteIfExists(file);
                LOG.info("removed the region files of undefined back-end domain {} ({})", name.backendUuid(), file);
            }
        } catch (java.io.IOException e) {
            LOG.debug("cannot look for an undefined back-end's region files in {}: {}", host.shmDir(), e.getMessage());
        }
    }

    /**
     * What reconciling {@code xml} would do, with every other persistent domain keeping what it holds
     * (for {@code check}, before the domain is defined or its element set). Changes nothing.
     */
    public Outcome check(DomainXml xml) throws LibvirtException {
        QuotaLedger ledger = new QuotaLedger(host);
        List<Snapshot> all = snapshotAll();
        List<Snapshot> others = new ArrayList<>(all.stream().filter(s -> s.xml == null || !s.xml.uuid().equals(xml.uuid())).toList());
        others.add(new Snapshot(xml.name(), xml, null, null));
        List<SlotLedger.Assignment> assignments;
        try {
            assignments = new ArrayList<>(slots.read());
        } catch (IvcudaConfigException e) {
            ledgerProblem = e.getMessage();
            assignments = new ArrayList<>();
        }
        Roles roles = roles(others, assignments);
        for (Snapshot s : all) {
            if (s.xml != null && !s.xml.uuid().equals(xml.uuid())) {
                VmSettings held = heldSettings(s);
                if (held != null) {
                    ledger.reserve(held);
                }
            }
        }
        return checkAgainst(xml, ledger, roles);
    }

    /** {@link #check} without libvirt: the element and the host configuration only, no quota placement. */
    public static Outcome checkWithoutLibvirt(DomainXml xml, HostConfig host) {
        return new Reconciler(null, host).checkAgainst(xml, new QuotaLedger(host) {
            @Override
            String refusal(VmSettings settings) {
                return null;
            }
        }, null);
    }

    private Outcome checkAgainst(DomainXml xml, QuotaLedger ledger, Roles roles) {
        Decision decision = decide(new Snapshot(xml.name(), xml, null, null), ledger, roles);
        String detail = decision.detail;
        if (decision.note != null && !decision.action.isProblem()) {
            detail += "; its description would say: " + DescriptionNote.MARKER + decision.note;
        }
        return new Outcome(xml.name(), decision.action, detail);
    }

    /** The settings a domain holds GPU memory with: tagged, valid and currently carrying our device. */
    private VmSettings heldSettings(Snapshot s) {
        if (s.xml == null || s.xml.currentShmem() == null) {
            return null;
        }
        try {
            GpuElement element = s.xml.parseGpuElement();
            // Back-ends and front-ends hold no memory of the host's GPUs.
            return element == null || element.backendRole() || element.frontEnd() ? null : VmSettings.resolve(element, host, s.name);
        } catch (IvcudaConfigException e) {
            return null;
        }
    }

    /**
     * What one domain should look like: its device (and the action that gets it there) and our note. A back-end
     * or front-end domain's devices are {@code roleDevices} (null for the host-served kind).
     */
    private record Decision(Action action, String detail, DeviceChange device, ShmemDevice wanted, String note,
                            List<ShmemDevice> roleDevices, boolean addInterruptRemapping) {
        Decision(Action action, String detail, DeviceChange device, ShmemDevice wanted, String note) {
            this(action, detail, device, wanted, note, null, false);
        }
    }

    /**
     * Back-end and front-end domains (issue 16) of one run: every persistent domain as slot placement knows it,
     * and the ledger's assignments (changed in place, written back by {@link #run}). Null placement: no libvirt.
     */
    private record Roles(SlotPlacement placement, List<SlotLedger.Assignment> assignments) {
    }

    private Decision decideBackend(Snapshot s, GpuElement element, Roles roles) {
        BackendDomain b = BackendDomain.of(s.name, s.xml.uuid(), element, host);
        String tooLarge = b.slotSize() <= BackendPaths.CONTROL_SIZE ? GpuElement.BACKEND_SLOT_SIZE_RULE + " (" + HostKeys.DEFAULTS_SIZE.name() + ")"
                : ShmSpace.neverFits(host.shmDir(), b.slotSize());
        if (tooLarge != null) {
            return new Decision(Action.INVALID, "domain '" + s.name + "': " + tooLarge + "; the domain was left as it was",
                    DeviceChange.KEEP, null, DescriptionNote.error(tooLarge));
        }
        // Its agent takes doorbell slot devices through vfio-pci with MSI-X: a virtual IOMMU with interrupt remapping.
        boolean remap = b.mode() == Mode.DOORBELL && s.xml.iommu() == null;
        String noIommu = b.mode() == Mode.DOORBELL ? s.xml.interruptRemappingProblem() : null;
        if (noIommu != null) {
            String why = "a back-end with doorbell slots needs a virtual IOMMU with interrupt remapping (its agent takes the"
                    + " slot devices through vfio-pci with MSI-X): " + noIommu;
            return new Decision(Action.INVALID, "domain '" + s.name + "': " + why + "; the domain was left as it was",
                    DeviceChange.KEEP, null, DescriptionNote.error(why));
        }
        int inUse = roles == null ? 0 : SlotLedger.ofBackend(roles.assignments, b.uuid()).size();
        String note = "back-end: " + b.describe() + ", " + inUse + " in use";
        Decision d = roleDecision(s.xml, b.devices(), "back-end with " + b.describe() + ", " + inUse + " in use"
                + (remap ? "; adds <iommu model='intel'> with interrupt remapping and <ioapic driver='qemu'/>" : ""), note);
        if (!remap) {
            return d;
        }
        return new Decision(d.action == Action.UNCHANGED ? Action.UPDATED : d.action, d.detail, DeviceChange.PUT, null, note,
                d.roleDevices, true);
    }

    private Decision decideFrontend(Snapshot s, GpuElement element, Roles roles) {
        String wanted = element.backend().orElseThrow();
        long quota = element.quota().orElse(host.defaultQuota());
        int share = element.share().orElse(host.defaultShare());
        if (roles != null && ledgerProblem != null) {
            return new Decision(Action.FAILED, "domain '" + s.name + "': " + ledgerProblem + "; the domain was left as it was",
                    DeviceChange.KEEP, null, DescriptionNote.error(ledgerProblem));
        }
        if (roles == null || roles.placement == null) {
            return new Decision(Action.UNCHANGED, "front-end of back-end '" + wanted + "': its slot is chosen when it is defined",
                    DeviceChange.KEEP, null, null);
        }
        SlotLedger.Assignment a;
        try {
            a = roles.placement.place(s.name, s.xml.uuid(), wanted, quota, element.slotMode());
        } catch (IvcudaConfigException e) {
            return new Decision(Action.REFUSED, e.getMessage() + "; the domain has no slot", DeviceChange.KEEP, null,
                    DescriptionNote.error(e.summary()));
        }
        BackendDomain b = roles.placement.backend(a.backendUuid()).orElseThrow();
        if (element.size().isPresent() && element.size().getAsLong() != b.slotSize()) {
            roles.assignments.remove(a);
            String why = "back-end domain '" + b.name() + "' has slots of " + ByteSize.describe(b.slotSize())
                    + " (leave " + GpuElement.ATTR_SIZE + " out, or make it the same)";
            return new Decision(Action.INVALID, "domain '" + s.name + "': <" + GpuElement.PREFIX + ":" + GpuElement.NAME
                    + "> attribute " + GpuElement.ATTR_SIZE + "='" + ByteSize.describe(element.size().getAsLong()) + "': "
                    + why + "; the domain has no slot", DeviceChange.KEEP, null, DescriptionNote.error(why));
        }
        String note = "front-end of '" + b.name() + "', slot " + a.slot() + ", " + ByteSize.describe(b.slotSize()) + " region"
                + (element.slotMode() == Mode.DOORBELL ? ", doorbell" : "")
                + (quota == 0 ? "" : ", " + ByteSize.describe(quota) + " GPU memory quota")
                + (share < VmSettings.WHOLE_GPU ? ", " + share + " % of its SMs" : "") + "; no save or migration";
        return roleDecision(s.xml, List.of(b.frontendDevice(a.slot(), element.slotMode())), "front-end of back-end '" + b.name() + "', slot "
                + a.slot() + (quota == 0 ? "" : ", quota " + ByteSize.describe(quota)), note);
    }

    /** A back-end's or front-end's devices: ADDED when it had none of them, UPDATED when some differ or are too many. */
    private static Decision roleDecision(DomainXml xml, List<ShmemDevice> wanted, String detail, String note) {
        java.util.Set<String> names = new java.util.HashSet<>();
        boolean same = true;
        boolean any = false;
        for (ShmemDevice device : wanted) {
            names.add(device.name());
            ShmemDevice current = xml.shmemDevice(device.name());
            any |= current != null;
            same &= device.equals(current);
        }
        List<String> ownSurplus = xml.foreignShmems(names).stream().map(e -> e.getAttribute("name"))
                .filter(n -> ownedBy(n, xml.uuid())).toList();
        Action action = same && ownSurplus.isEmpty() ? Action.UNCHANGED : any ? Action.UPDATED : Action.ADDED;
        return new Decision(action, detail, action == Action.UNCHANGED ? DeviceChange.KEEP : DeviceChange.PUT, null, note, wanted, false);
    }

    /** Whether an ivcuda device name was made from domain {@code uuid}: its host-served device or one of its back-end devices. */
    private static boolean ownedBy(String shmemName, String uuid) {
        BackendPaths.DeviceName backend = BackendPaths.parse(shmemName);
        return shmemName.equals(InstancePaths.shmemName(uuid)) || backend != null && backend.backendUuid().equals(uuid);
    }

    private enum DeviceChange { KEEP, PUT, REMOVE }

    private Decision decide(Snapshot s, QuotaLedger ledger, Roles roles) {
        DomainXml xml = s.xml;
        ShmemDevice current = xml.currentShmem();
        GpuElement element;
        try {
            element = xml.parseGpuElement();
        } catch (IvcudaConfigException e) {
            return invalid(e);
        }
        if (element == null) {
            return current == null
                    ? new Decision(Action.UNTAGGED, "", DeviceChange.KEEP, null, null)
                    : new Decision(Action.REMOVED, "the ivcuda element is gone, so " + current.describe() + " was removed",
                            DeviceChange.REMOVE, null, null);
        }
        if (element.backendRole()) {
            return decideBackend(s, element, roles);
        }
        if (element.frontEnd()) {
            return decideFrontend(s, element, roles);
        }
        VmSettings settings;
        try {
            settings = VmSettings.resolve(element, host, s.name);
        } catch (IvcudaConfigException e) {
            return invalid(e);
        }
        String tooLarge = ShmSpace.neverFits(host.shmDir(), settings.regionSize());
        if (tooLarge != null) {
            return new Decision(Action.INVALID, "domain '" + s.name + "': " + tooLarge + "; the domain was left as it was",
                    DeviceChange.KEEP, null, DescriptionNote.error(tooLarge));
        }
        String refusal = ledger.refusal(settings);
        if (refusal != null) {
            // A domain provisioned before (another capacity, other quotas) keeps its device: say so, not "not provisioned".
            String kept = current == null ? "; the domain was not provisioned"
                    : "; it keeps its device " + current.describe() + " from before, over the GPU's capacity";
            return new Decision(Action.REFUSED, refusal + kept, DeviceChange.KEEP, null, DescriptionNote.error(refusal));
        }
        ledger.reserve(settings);
        ShmemDevice wanted = ShmemDevice.desired(InstancePaths.of(xml.uuid(), host), settings);
        String placement = wanted.describe() + " on GPU " + settings.gpu()
                + (settings.memoryQuota() == 0 ? "" : ", quota " + ByteSize.describe(settings.memoryQuota()));
        String note = DescriptionNote.provisioned(settings);
        if (wanted.equals(current)) {
            return new Decision(Action.UNCHANGED, placement, DeviceChange.KEEP, wanted, note);
        }
        return new Decision(current == null ? Action.ADDED : Action.UPDATED, placement, DeviceChange.PUT, wanted, note);
    }

    private static Decision invalid(IvcudaConfigException e) {
        return new Decision(Action.INVALID, e.getMessage() + "; the domain was left as it was", DeviceChange.KEEP, null,
                DescriptionNote.error(e.summary()));
    }

    private Outcome reconcileOne(Snapshot s, QuotaLedger ledger, Roles roles, boolean dryRun) throws LibvirtException {
        if (s.xml == null) {
            return new Outcome(s.name, Action.INVALID, s.readError, List.of());
        }
        DomainXml xml = s.xml;
        Decision decision = decide(s, ledger, roles);
        List<String> foreign = new ArrayList<>();
        boolean redefine = false;
        for (String shmemName : xml.removeShmemsExcept(own(xml, decision, roles))) {
            redefine = true;
            if (!ownedBy(shmemName, xml.uuid())) {
                foreign.add(shmemName + " (" + owner(shmemName, roles) + ")");
            }
        }
        switch (decision.device) {
            case PUT -> {
                if (decision.roleDevices != null) {
                    decision.roleDevices.forEach(xml::putShmemNamed);
                    if (decision.addInterruptRemapping) {
                        xml.addInterruptRemapping();
                    }
                } else {
                    xml.putShmem(decision.wanted);
                }
                redefine = true;
            }
            case REMOVE -> {
                xml.removeShmem();
                redefine = true;
            }
            case KEEP -> { }
        }
        String description = DescriptionNote.apply(xml.description(), decision.note);
        boolean describe = !Objects.equals(description, xml.description());
        if (!dryRun) {
            if (redefine) {
                xml.setDescription(description);
                define(xml);
            } else if (describe) {
                setDescription(s.name, description, Domain.ModificationImpact.CONFIG);
            }
            if (s.live != null) {
                // A running domain shows its live XML (virt-manager too): the note follows there as well, saying
                // so when the persistent definition gives the next start another device than the running one.
                String note = decision.note;
                if (note != null && decision.wanted != null && !decision.wanted.equals(s.live.currentShmem())) {
                    note += " (from the next start)";
                }
                String live = DescriptionNote.apply(s.live.description(), note);
                if (!Objects.equals(live, s.live.description())) {
                    setDescription(s.name, live, Domain.ModificationImpact.LIVE);
                }
            }
        }
        return new Outcome(s.name, decision.action, decision.detail, foreign);
    }

    /**
     * Package removal: takes every ivcuda device and our description line out of every persistent
     * definition, and the line out of running domains' live definitions (their device stays until they
     * stop: QEMU has it). The elements stay, so a reinstalled provisioner gives the devices back.
     * Returns one outcome per domain it changed.
     */
    public List<Outcome> removeAll() throws LibvirtException {
        List<Outcome> outcomes = new ArrayList<>();
        for (Snapshot s : snapshotAll()) {
            if (s.xml == null) {
                continue;
            }
            DomainXml xml = s.xml;
            List<String> removed = new ArrayList<>(xml.removeForeignShmems());
            ShmemDevice own = xml.currentShmem();
            if (own != null) {
                xml.removeShmem();
                removed.add(InstancePaths.shmemName(xml.uuid()));
            }
            String description = DescriptionNote.apply(xml.description(), null);
            boolean noteGone = !Objects.equals(description, xml.description());
            try {
                if (!removed.isEmpty()) {
                    xml.setDescription(description);
                    define(xml);
                } else if (noteGone) {
                    setDescription(s.name, description, Domain.ModificationImpact.CONFIG);
                }
                if (s.live != null) {
                    String live = DescriptionNote.apply(s.live.description(), null);
                    if (!Objects.equals(live, s.live.description())) {
                        setDescription(s.name, live, Domain.ModificationImpact.LIVE);
                    }
                }
            } catch (LibvirtException e) {
                outcomes.add(new Outcome(s.name, Action.FAILED, "libvirt: " + (e.getError() != null ? e.getError().getMessage() : e.getMessage())));
                continue;
            }
            if (!removed.isEmpty() || noteGone) {
                String what = removed.isEmpty() ? "its [ivcuda] description line" : "device " + String.join(", ", removed)
                        + " and the [ivcuda] description line";
                Outcome outcome = new Outcome(s.name, Action.REMOVED, "removed " + what + " (the element stays"
                        + (s.live != null && own != null ? "; the running domain keeps its device until it stops" : "") + ")");
                LOG.info("{}", outcome);
                outcomes.add(outcome);
            }
        }
        return outcomes;
    }

    /**
     * The ivcuda devices a domain may carry: a back-end's or front-end's exactly as its role gives them; a
     * host-served domain its {@code ivcuda-UUID}; a domain with a problem whatever of its own it has (its
     * devices stay as they were, as a host-served one's do), a front-end's being the slot the ledger gives it.
     */
    private java.util.Set<String> own(DomainXml xml, Decision decision, Roles roles) {
        java.util.Set<String> own = new java.util.HashSet<>();
        if (ledgerProblem != null) {
            // Without the ledger nobody can tell a clone's slot device from its original's: touch none.
            xml.foreignShmems(own).forEach(e -> own.add(e.getAttribute("name")));
            return own;
        }
        if (decision.roleDevices != null) {
            decision.roleDevices.forEach(d -> own.add(d.name()));
            return own;
        }
        own.add(InstancePaths.shmemName(xml.uuid()));
        if (decision.action.isProblem()) {
            for (org.w3c.dom.Element e : xml.foreignShmems(own)) {
                String name = e.getAttribute("name");
                BackendPaths.DeviceName device = BackendPaths.parse(name);
                boolean mine = device != null && device.backendUuid().equals(xml.uuid());
                boolean held = device != null && !device.isControl() && roles != null
                        && SlotLedger.ofSlot(roles.assignments, device.backendUuid(), device.slot())
                                .filter(a -> a.frontendUuid().equals(xml.uuid())).isPresent();
                if (mine || held) {
                    own.add(name);
                }
            }
        }
        return own;
    }

    /** Who an ivcuda device name belongs to, for messages: {@code domain 'NAME'}, or what is known. */
    private String owner(String shmemName, Roles roles) {
        BackendPaths.DeviceName backend = BackendPaths.parse(shmemName);
        if (backend != null) {
            String of = backend.isControl() ? "the control region" : "slot " + backend.slot();
            String holder = backend.isControl() || roles == null ? "" : SlotLedger.ofSlot(roles.assignments, backend.backendUuid(),
                    backend.slot()).map(a -> ", held by '" + a.frontendName() + "'").orElse(", held by no front-end");
            return of + " of back-end domain " + domainName(backend.backendUuid()) + holder;
        }
        String uuid = DomainXml.uuidOfShmemName(shmemName);
        if (uuid == null) {
            return "not a device name ivcuda makes";
        }
        String owner = domainName(uuid);
        return owner.startsWith("'") ? "the device of domain " + owner : "the device of a domain with UUID " + uuid + " that is not defined here";
    }

    /** {@code 'NAME'} of the domain with this UUID, or the UUID and that it is not defined here. */
    private String domainName(String uuid) {
        try {
            Domain domain = connection.domainLookupByUUIDString(uuid);
            try {
                return "'" + domain.getName() + "'";
            } finally {
                domain.free();
            }
        } catch (LibvirtException e) {
            return uuid + " (not defined here)";
        }
    }

    private void setDescription(String name, String text, int impact) throws LibvirtException {
        Domain domain = connection.domainLookupByName(name);
        try {
            domain.setMetadata(METADATA_DESCRIPTION, text, null, null, impact);
        } finally {
            domain.free();
        }
    }

    private void define(DomainXml xml) throws LibvirtException {
        Domain redefined = connection.domainDefineXML(xml.toXml());
        redefined.free();
    }

    private List<Snapshot> snapshotAll() throws LibvirtException {
        List<Snapshot> result = new ArrayList<>();
        for (Domain domain : connection.listAllDomains(Connect.ConnectListAllDomainsFlags.CONNECT_LIST_DOMAINS_PERSISTENT)) {
            try {
                String name = domain.getName();
                String text;
                try {
                    text = domain.getXMLDesc(PERSISTENT_DEFINITION);
                } catch (LibvirtException e) {
                    // The domain may have been undefined since the listing.
                    LOG.debug("domain '{}' vanished while reading it: {}", name, e.getMessage());
                    continue;
                }
                try {
                    result.add(new Snapshot(name, DomainXml.parse(text), null, live(domain)));
                } catch (IvcudaConfigException e) {
                    result.add(new Snapshot(name, null, "domain '" + name + "': " + e.getMessage(), null));
                }
            } finally {
                domain.free();
            }
        }
        return result;
    }

    /** The live XML of a running domain; null when it is not running (or stopped meanwhile). */
    private static DomainXml live(Domain domain) {
        try {
            return domain.isActive() == 1 ? DomainXml.parse(domain.getXMLDesc(0)) : null;
        } catch (LibvirtException | IvcudaConfigException e) {
            LOG.debug("no live XML: {}", e.getMessage());
            return null;
        }
    }

    private static void log(Outcome outcome) {
        if (outcome.action().isProblem()) {
            LOG.error("{}", outcome);
        } else if (!outcome.foreign().isEmpty()) {
            LOG.warn("{}", outcome);
        } else if (outcome.redefines()) {
            LOG.info("{}", outcome);
        } else {
            LOG.debug("{}", outcome);
        }
    }
}
