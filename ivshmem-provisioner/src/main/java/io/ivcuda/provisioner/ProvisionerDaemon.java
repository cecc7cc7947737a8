package io.ivcuda.provisioner;

import io.ivcuda.common.HostConfig;
import io.ivcuda.provisioner.Outcome.Action;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.libvirt.Domain;
import org.libvirt.LibvirtException;
import org.libvirt.Library;
import org.libvirt.event.DomainEvent;
import org.libvirt.event.DomainEventType;
import org.libvirt.event.LifecycleListener;

/**
 * The provisioner daemon: reconciles every domain when connected, then each domain that libvirt
 * reports DEFINED or METADATA_CHANGE. Callbacks arrive on libvirt's event loop thread and only
 * queue work; a single worker thread does all libvirt calls, so reconciliations never overlap.
 * When libvirtd goes away it reconnects, re-registers and reconciles everything again.
 */
public final class ProvisionerDaemon implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(ProvisionerDaemon.class);
    private static final long MAX_BACKOFF_MS = 10_000;

    private final HostConfig host;
    private final String uri;
    private final ExecutorService worker = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "reconcile");
        t.setDaemon(true);
        return t;
    });
    private final MetadataChangeEvents metadataEvents = new MetadataChangeEvents(this::domainChanged);
    private final LifecycleListener lifecycleListener = this::lifecycleChanged;
    private Thread eventLoop;
    private volatile EventConnection connection;
    private volatile boolean closing;
    private volatile long reconciliations;
    private volatile long redefinitions;

    public ProvisionerDaemon(HostConfig host, String uri) {
        this.host = host;
        this.uri = uri;
    }

    /** Starts the event loop and connects (retrying in the background until libvirtd answers). */
    public void start() throws LibvirtException {
        Library.initEventLoop();
        eventLoop = new Thread(() -> {
            try {
                Library.runEventLoop();
            } catch (LibvirtException e) {
                LOG.error("libvirt event loop failed: {}", e.getMessage());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "libvirt-events");
        eventLoop.setDaemon(true);
        eventLoop.start();
        worker.submit(this::connectUntilConnected);
    }

    /** How many reconcile runs finished (for tests that wait for the daemon to settle). */
    public long reconciliations() {
        return reconciliations;
    }

    /** How many times the daemon redefined a domain (added, updated or removed a device). */
    public long redefinitions() {
        return redefinitions;
    }

    private void count(Outcome outcome) {
        if (outcome.redefines()) {
            redefinitions++;
        }
    }

    public boolean isConnected() {
        return connection != null;
    }

    private void connectUntilConnected() {
        long backoff = 250;
        while (!closing) {
            try {
                connect();
                return;
            } catch (LibvirtException | RuntimeException e) {
                LOG.warn("cannot connect to {} ({}); retrying in {} ms", uri, e.getMessage(), backoff);
                sleep(backoff);
                backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
            }
        }
    }

    private void connect() throws LibvirtException {
        EventConnection c = new EventConnection(uri);
        try {
            try {
                c.setKeepAlive(5, 3);
            } catch (LibvirtException e) {
                LOG.debug("no keepalive on {} ({}); relying on the close callback", uri, e.getMessage());
            }
            c.registerCloseListener((closed, reason) -> {
                LOG.warn("connection to {} closed ({}); reconnecting", uri, reason);
                worker.submit(this::reconnect);
            });
            c.addLifecycleListener(lifecycleListener);
            metadataEvents.register(c);
        } catch (LibvirtException | RuntimeException e) {
            c.close();
            throw e;
        }
        connection = c;
        LOG.info("connected to {}; watching DEFINED and METADATA_CHANGE events", uri);
        reconcileAll();
    }

    private void reconnect() {
        EventConnection old = connection;
        connection = null;
        if (old != null) {
            try {
                old.close();
            } catch (LibvirtException e) {
                LOG.debug("closing the dead connection: {}", e.getMessage());
            }
        }
        connectUntilConnected();
    }

    private int lifecycleChanged(Domain domain, DomainEvent event) {
        try {
            DomainEventType type = event.getType();
            if (type == DomainEventType.DEFINED) {
                String name = domain.getName();
                worker.submit(() -> reconcileOne(name));
            } else if (type == DomainEventType.UNDEFINED) {
                // Its GPU memory is free again: a domain refused before may fit now.
                worker.submit(this::reconcileAll);
            }
        } catch (LibvirtException e) {
            LOG.warn("cannot read the domain of a lifecycle event: {}", e.getMessage());
        } finally {
            try {
                domain.free();
            } catch (LibvirtException e) {
                LOG.debug("freeing an event's domain: {}", e.getMessage());
            }
        }
        return 0;
    }

    private void domainChanged(String name) {
        worker.submit(() -> reconcileOne(name));
    }

    private void reconcileOne(String name) {
        EventConnection c = connection;
        if (c == null) {
            return; // the reconnect reconciles everything
        }
        try {
            Outcome outcome = new Reconciler(c, host).reconcile(name);
            count(outcome);
            if (outcome.action() == Action.REMOVED || outcome.action() == Action.UPDATED) {
                // Memory may have been freed on a GPU: give refused domains another chance.
                new Reconciler(c, host).reconcileAll().forEach(this::count);
            }
        } catch (LibvirtException | RuntimeException e) {
            LOG.error("reconciling domain '{}' failed: {}", name, e.getMessage());
        } finally {
            reconciliations++;
        }
    }

    private void reconcileAll() {
        EventConnection c = connection;
        if (c == null) {
            return;
        }
        try {
            new Reconciler(c, host).reconcileAll().forEach(this::count);
        } catch (LibvirtException | RuntimeException e) {
            LOG.error("reconciling all domains failed: {}", e.getMessage());
        } finally {
            reconciliations++;
        }
    }

    /** Blocks until {@link #close()} (SIGTERM through the shutdown hook). */
    public void awaitClose() throws InterruptedException {
        while (!worker.awaitTermination(1, TimeUnit.HOURS)) {
            // keep waiting
        }
    }

    @Override
    public void close() {
        closing = true;
        try {
            worker.submit(() -> {
                EventConnection c = connection;
                connection = null;
                if (c != null) {
                    try {
                        metadataEvents.deregister(c);
                        c.removeLifecycleListener(lifecycleListener);
                        c.unregisterCloseListener();
                        c.close();
                    } catch (LibvirtException e) {
                        LOG.debug("closing: {}", e.getMessage());
                    }
                }
            }).get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            LOG.debug("closing: {}", e.toString());
        }
        worker.shutdownNow();
        try {
            Library.stopEventLoop();
        } catch (LibvirtException e) {
            LOG.debug("stopping the event loop: {}", e.getMessage());
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
