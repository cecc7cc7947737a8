package io.ivcuda.provisioner;

import io.ivcuda.common.DomainXml;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.InstancePaths;
import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.ShmemDevice;
import io.ivcuda.common.VmSettings;
import io.ivcuda.provisioner.Outcome.Action;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.libvirt.Connect;
import org.libvirt.Domain;
import org.libvirt.LibvirtException;

/**
 * Brings the persistent definition of domains in line with their ivcuda element: exactly one
 * {@code <shmem name='ivcuda-UUID'>} for a tagged domain whose element is valid and whose quota fits,
 * none for an untagged one. A domain that already matches is not redefined, so the echo of our own
 * redefinition (DEFINED/UPDATED) changes nothing. A domain with a problem is left as it was.
 */
public final class Reconciler {
    private static final Logger LOG = LogManager.getLogger(Reconciler.class);
    private static final int PERSISTENT_DEFINITION = Domain.XMLFlags.INACTIVE | Domain.XMLFlags.SECURE;

    private final Connect connection;
    private final HostConfig host;

    public Reconciler(Connect connection, HostConfig host) {
        this.connection = connection;
        this.host = host;
    }

    /** One domain's persistent definition, read once. {@code xml} is null when it could not be parsed. */
    private record Snapshot(String name, DomainXml xml, String readError) {
    }

    /** Reconciles every persistent domain: already provisioned ones first, so they keep their GPU memory. */
    public List<Outcome> reconcileAll() throws LibvirtException {
        return run(null, false);
    }

    /** Reconciles one domain by name; other domains are only read (for quota placement). */
    public Outcome reconcile(String domainName) throws LibvirtException {
        List<Outcome> outcomes = run(domainName, false);
        if (outcomes.isEmpty()) {
            return new Outcome(domainName, Action.SKIPPED, "no persistent domain with this name");
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
            Outcome outcome = reconcileOne(s, ledger, dryRun);
            outcomes.add(outcome);
            if (!dryRun) {
                log(outcome);
            }
        }
        return outcomes;
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

    private Outcome reconcileOne(Snapshot s, QuotaLedger ledger, boolean dryRun) throws LibvirtException {
        if (s.xml == null) {
            return new Outcome(s.name, Action.INVALID, s.readError);
        }
        DomainXml xml = s.xml;
        ShmemDevice current = xml.currentShmem();
        GpuElement element;
        try {
            element = xml.parseGpuElement();
        } catch (IvcudaConfigException e) {
            return new Outcome(s.name, Action.INVALID, e.getMessage() + "; the domain was left as it was");
        }
        if (element == null) {
            if (current == null) {
                return new Outcome(s.name, Action.UNTAGGED, "");
            }
            xml.removeShmem();
            define(xml, dryRun);
            return new Outcome(s.name, Action.REMOVED, "the ivcuda element is gone, so " + current.describe() + " was removed");
        }
        VmSettings settings;
        try {
            settings = VmSettings.resolve(element, host, s.name);
        } catch (IvcudaConfigException e) {
            return new Outcome(s.name, Action.INVALID, e.getMessage() + "; the domain was left as it was");
        }
        String refusal = ledger.refusal(settings);
        if (refusal != null) {
            return new Outcome(s.name, Action.REFUSED, refusal + "; the domain was not provisioned");
        }
        ledger.reserve(settings);
        ShmemDevice wanted = ShmemDevice.desired(InstancePaths.of(xml.uuid(), host), settings);
        String placement = wanted.describe() + " on GPU " + settings.gpu()
                + (settings.memoryQuota() == 0 ? "" : ", quota " + io.ivcuda.common.ByteSize.describe(settings.memoryQuota()));
        if (wanted.equals(current)) {
            return new Outcome(s.name, Action.UNCHANGED, placement);
        }
        xml.putShmem(wanted);
        define(xml, dryRun);
        return new Outcome(s.name, current == null ? Action.ADDED : Action.UPDATED, placement);
    }

    private void define(DomainXml xml, boolean dryRun) throws LibvirtException {
        if (dryRun) {
            return;
        }
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
                    result.add(new Snapshot(name, DomainXml.parse(text), null));
                } catch (IvcudaConfigException e) {
                    result.add(new Snapshot(name, null, "domain '" + name + "': " + e.getMessage()));
                }
            } finally {
                domain.free();
            }
        }
        return result;
    }

    private static void log(Outcome outcome) {
        switch (outcome.action()) {
            case ADDED, UPDATED, REMOVED -> LOG.info("{}", outcome);
            case REFUSED, INVALID -> LOG.error("{}", outcome);
            default -> LOG.debug("{}", outcome);
        }
    }
}
