package io.ivcuda.provisioner;

import io.ivcuda.common.ByteSize;
import io.ivcuda.common.DescriptionNote;
import io.ivcuda.common.DomainXml;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.ShmSpace;
import io.ivcuda.common.ShmemDevice;
import io.ivcuda.common.VmSettings;
import io.ivcuda.provisioner.Outcome.Action;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
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

    public Reconciler(Connect connection, HostConfig host) {
        this.connection = connection;
        this.host = host;
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

    private List<Outcome> run(String only, boolean dryRun) throws LibvirtException {
        List<Snapshot> snapshots = snapshotAll();
        snapshots.sort(Comparator.comparing((Snapshot s) -> s.xml == null || s.xml.currentShmem() == null).thenComparing(Snapshot::name));
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
                outcome = reconcileOne(s, ledger, dryRun);
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
        return outcomes;
    }

    /**
     * What reconciling {@code xml} would do, with every other persistent domain keeping what it holds
     * (for {@code check}, before the domain is defined or its element set). Changes nothing.
     */
    public Outcome check(DomainXml xml) throws LibvirtException {
        QuotaLedger ledger = new QuotaLedger(host);
        for (Snapshot s : snapshotAll()) {
            if (s.xml != null && !s.xml.uuid().equals(xml.uuid())) {
                VmSettings held = heldSettings(s);
                if (held != null) {
                    ledger.reserve(held);
                }
            }
        }
        return checkAgainst(xml, ledger);
    }

    /** {@link #check} without libvirt: the element and the host configuration only, no quota placement. */
    public static Outcome checkWithoutLibvirt(DomainXml xml, HostConfig host) {
        return new Reconciler(null, host).checkAgainst(xml, new QuotaLedger(host) {
            @Override
            String refusal(VmSettings settings) {
                return null;
            }
        });
    }

    private Outcome checkAgainst(DomainXml xml, QuotaLedger ledger) {
        Decision decision = decide(new Snapshot(xml.name(), xml, null, null), ledger);
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
            return element == null ? null : VmSettings.resolve(element, host, s.name);
        } catch (IvcudaConfigException e) {
            return null;
        }
    }

    /** What one domain should look like: its device (and the action that gets it there) and our note. */
    private record Decision(Action action, String detail, DeviceChange device, ShmemDevice wanted, String note) {
    }

    private enum DeviceChange { KEEP, PUT, REMOVE }

    private Decision decide(Snapshot s, QuotaLedger ledger) {
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
        if (element.backendRole() || element.frontEnd()) {
            // The element reads them (issue 16); placing their devices is the next step, until then nothing half-done.
            String why = "back-end and front-end domains are not provisioned by this version yet";
            return new Decision(Action.INVALID, "domain '" + s.name + "': " + why + "; the domain was left as it was",
                    DeviceChange.KEEP, null, DescriptionNote.error(why));
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

    private Outcome reconcileOne(Snapshot s, QuotaLedger ledger, boolean dryRun) throws LibvirtException {
        if (s.xml == null) {
            return new Outcome(s.name, Action.INVALID, s.readError, List.of());
        }
        DomainXml xml = s.xml;
        Decision decision = decide(s, ledger);
        List<String> foreign = new ArrayList<>();
        for (String shmemName : xml.removeForeignShmems()) {
            foreign.add(shmemName + " (" + owner(shmemName) + ")");
        }
        boolean redefine = !foreign.isEmpty();
        switch (decision.device) {
            case PUT -> {
                xml.putShmem(decision.wanted);
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

    /** Who an ivcuda device name belongs to, for messages: {@code domain 'NAME'}, or what is known. */
    private String owner(String shmemName) {
        String uuid = DomainXml.uuidOfShmemName(shmemName);
        if (uuid == null) {
            return "not a device name ivcuda makes";
        }
        try {
            Domain domain = connection.domainLookupByUUIDString(uuid);
            try {
                return "the device of domain '" + domain.getName() + "'";
            } finally {
                domain.free();
            }
        } catch (LibvirtException e) {
            return "the device of a domain with UUID " + uuid + " that is not defined here";
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
