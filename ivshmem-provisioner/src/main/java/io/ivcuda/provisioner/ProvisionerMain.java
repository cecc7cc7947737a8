package io.ivcuda.provisioner;

import com.google.gson.GsonBuilder;
import io.ivcuda.common.DomainXml;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.LogTarget;
import io.ivcuda.common.PackageVersion;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import org.apache.logging.log4j.LogManager;
import org.libvirt.Connect;
import org.libvirt.LibvirtException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code ivshmem-provisioner [--config FILE] [--connect URI] daemon|status|check|reconcile|provision|uninstall}.
 * Every command prints what it did once, on stdout (problems on stderr), and exits with a status that
 * says what happened (the exit status list of the usage help).
 */
@Command(name = "ivshmem-provisioner", mixinStandardHelpOptions = true, versionProvider = PackageVersion.class,
        usageHelpAutoWidth = true,
        header = "Adds, updates and removes the ivcuda <shmem> device of libvirt domains tagged with <ivcuda:gpu>.",
        description = {
            "The daemon (ivcuda-provisioner.service, or /etc/init.d/ivcuda-provisioner on hosts without systemd) follows "
                + "libvirt's events and keeps every domain's device in line with its element; the other commands are the "
                + "admin's: what runs (status), whether an element is right before it is set (check), and a reconcile by "
                + "hand where no daemon runs."},
        subcommands = {ProvisionerMain.Daemon.class, ProvisionerMain.Status.class, ProvisionerMain.Metrics.class,
                ProvisionerMain.Check.class,
                ProvisionerMain.Reconcile.class, ProvisionerMain.Provision.class, ProvisionerMain.Uninstall.class},
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {
            "0: done; every domain shown is in order",
            "1: a domain has a problem (invalid element, refused quota, another domain's device, no such domain)",
            "2: wrong arguments, or an unreadable or invalid host configuration",
            "3: libvirt could not be reached or refused"},
        footerHeading = "%nFiles:%n",
        footer = {"/etc/ivcuda/ivcuda.properties (IVCUDA_CONFIG), /etc/ivcuda/log4j2-provisioner.xml, /run/ivcuda",
            "", "See also: 50-ivcuda(8), ivcuda-server(8), /usr/share/doc/ivcuda/operations.md"})
public final class ProvisionerMain {
    static final String LOGGING_RESOURCE = "log4j2-provisioner.xml";
    static final Path LOGGING_OVERRIDE = Path.of("/etc/ivcuda/log4j2-provisioner.xml");
    static final int EXIT_PROBLEM = 1;
    static final int EXIT_CONFIG = 2;
    static final int EXIT_LIBVIRT = 3;

    @Option(names = "--config", paramLabel = "FILE", description = "host configuration (default: $IVCUDA_CONFIG or /etc/ivcuda/ivcuda.properties)")
    Path config;

    @Option(names = {"-c", "--connect"}, paramLabel = "URI", description = "libvirt URI (default: libvirt.uri of the host configuration)")
    String uri;

    @Spec
    CommandLine.Model.CommandSpec spec;

    HostConfig host() throws IvcudaConfigException {
        return config == null ? HostConfig.load() : HostConfig.load(List.of(config));
    }

    String uri(HostConfig host) {
        return uri != null ? uri : host.libvirtUri();
    }

    /**
     * libvirt's C library prints every error to stderr by default; ours arrive as exceptions and are
     * said once, with context. Held in a field: the native side keeps only a pointer to it.
     */
    private static final org.libvirt.ErrorCallback QUIET_LIBVIRT_ERRORS = new org.libvirt.ErrorCallback();

    public static void main(String[] args) throws LibvirtException {
        // The one-shot commands print what they did; the log only keeps a record where journald runs.
        // The daemon chooses again before its first log line (Daemon#call).
        LogTarget.journalOr(LogTarget.NONE, LogTarget.JOURNAL_SOCKET).select(null, LOGGING_RESOURCE, LOGGING_OVERRIDE);
        Connect.setErrorCallback(QUIET_LIBVIRT_ERRORS);
        System.exit(commandLine().execute(args));
    }

    static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new ProvisionerMain());
        cl.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
            commandLine.getErr().println("ivshmem-provisioner: " + message(e));
            if (e instanceof IvcudaConfigException) {
                return EXIT_CONFIG;
            }
            return e instanceof LibvirtException ? EXIT_LIBVIRT : EXIT_PROBLEM;
        });
        return cl;
    }

    private static String message(Exception e) {
        if (e instanceof LibvirtException le && le.getError() != null) {
            return "libvirt: " + le.getError().getMessage();
        }
        return e.getMessage();
    }

    @Command(name = "daemon", mixinStandardHelpOptions = true, versionProvider = PackageVersion.class,
            header = "the service: keep every domain's device in line with its element",
            description = {"Reconcile all domains, then follow DEFINED and METADATA_CHANGE events until SIGTERM.",
                "Logs to stderr under systemd (the journal), to --log FILE when given, else to the journal where "
                    + "journald runs, else to stderr."})
    static final class Daemon implements Callable<Integer> {
        @ParentCommand
        ProvisionerMain main;

        @Option(names = "--pidfile", paramLabel = "FILE", description = "write the daemon's pid here; refuse to start while "
                + "the pid in it runs (the init script's /run/ivcuda/provisioner.pid)")
        Path pidfile;

        @Option(names = "--log", paramLabel = "FILE", description = "append the log to FILE instead (the init script's "
                + "/var/log/ivcuda/provisioner.log)")
        Path log;

        @Override
        public Integer call() throws Exception {
            System.clearProperty(LogTarget.PROPERTY);
            LogTarget target = log != null ? LogTarget.FILE
                    : LogTarget.stderrIsJournal() ? LogTarget.STDERR
                    : LogTarget.journalOr(LogTarget.STDERR, LogTarget.JOURNAL_SOCKET);
            target.select(log, LOGGING_RESOURCE, LOGGING_OVERRIDE);
            HostConfig host = main.host();
            String serverKeys = host.serverKeyProblem();
            if (serverKeys != null) {
                LogManager.getLogger(ProvisionerMain.class).warn("{}: every cuda-server would refuse it, so no VM with "
                        + "a GPU starts until it is fixed", serverKeys);
            }
            Pidfile lock = pidfile == null ? null : Pidfile.claim(pidfile);
            ProvisionerDaemon daemon = new ProvisionerDaemon(host, main.uri(host));
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                daemon.close();
                if (lock != null) {
                    lock.release();
                }
            }, "shutdown"));
            daemon.start();
            daemon.awaitClose();
            return 0;
        }
    }

    @Command(name = "status", mixinStandardHelpOptions = true, versionProvider = PackageVersion.class,
            header = "what runs: tagged domains, their servers, what they hold",
            description = {"What runs: for every domain that is tagged or carries an ivcuda device, its state, whether it "
                + "is provisioned, its cuda-server (state in the region's header, pid, mode, region, uptime), the guest "
                + "processes and channels it serves, the GPU memory they hold against the quota, and the last error. "
                + "Before that, whether the hook is installed and seen by libvirtd and whether the daemon runs.",
                "The server's figures come from its status file, which it writes when status sends it SIGUSR1 (run as "
                    + "root). Exit 1 when a domain has a problem."})
    static final class Status implements Callable<Integer> {
        @ParentCommand
        ProvisionerMain main;

        @Option(names = "--json", description = "print one JSON document instead of the table")
        boolean json;

        @Option(names = "--all", description = "also list domains without anything of ivcuda")
        boolean all;

        @Override
        public Integer call() throws Exception {
            HostConfig host = main.host();
            String serverKeys = host.serverKeyProblem();
            if (serverKeys != null) {
                main.spec.commandLine().getErr().println("ivshmem-provisioner: warning: " + serverKeys
                        + ": every cuda-server would refuse it, so no VM with a GPU starts until it is fixed");
            }
            try (Session session = new Session(main.uri(host))) {
                StatusReport.Report report = new StatusReport(session.connection, host).gather(all);
                PrintWriter out = main.spec.commandLine().getOut();
                if (json) {
                    out.println(new GsonBuilder().setPrettyPrinting().serializeNulls().disableHtmlEscaping().create().toJson(report));
                } else {
                    StatusTable.print(report, out);
                }
                out.flush();
                return report.domains().stream().anyMatch(StatusReport.DomainStatus::problem) ? EXIT_PROBLEM : 0;
            }
        }
    }

    @Command(name = "check", mixinStandardHelpOptions = true, versionProvider = PackageVersion.class,
            header = "check an element or a domain before it counts",
            description = {"Check a domain's element before it counts: a FILE with a domain's XML or with the element alone "
                + "(<ivcuda:gpu xmlns:ivcuda=\"https://ivcuda.dev/xmlns/domain/1\" …/>), or the persistent definition of "
                + "DOMAIN. Says what the domain would get, or what is wrong: attributes, the GPU against the host "
                + "configuration, the size against shm.dir, the quota against the GPU's capacity and the other domains "
                + "(without libvirt: all but the quota). Changes nothing. Exit 0 valid, 1 not."})
    static final class Check implements Callable<Integer> {
        @ParentCommand
        ProvisionerMain main;

        @Parameters(paramLabel = "DOMAIN|FILE")
        String target;

        @Override
        public Integer call() throws Exception {
            HostConfig host = main.host();
            PrintWriter out = main.spec.commandLine().getOut();
            PrintWriter err = main.spec.commandLine().getErr();
            Path file = Path.of(target);
            DomainXml xml;
            Outcome outcome;
            if (Files.isRegularFile(file)) {
                xml = fromFile(file);
                Session session = null;
                try {
                    session = new Session(main.uri(host));
                    outcome = new Reconciler(session.connection, host).check(xml);
                } catch (LibvirtException e) {
                    outcome = Reconciler.checkWithoutLibvirt(xml, host);
                    err.println("ivshmem-provisioner: libvirt not reachable (" + message(e) + "): the quota is not checked "
                            + "against the other domains");
                } finally {
                    if (session != null) {
                        session.close();
                    }
                }
            } else {
                try (Session session = new Session(main.uri(host))) {
                    org.libvirt.Domain domain;
                    try {
                        domain = session.connection.domainLookupByName(target);
                    } catch (LibvirtException e) {
                        err.println(target + ": no such file, and no domain of this name at " + main.uri(host));
                        return EXIT_PROBLEM;
                    }
                    try {
                        xml = DomainXml.parse(domain.getXMLDesc(org.libvirt.Domain.XMLFlags.INACTIVE));
                    } finally {
                        domain.free();
                    }
                    outcome = new Reconciler(session.connection, host).check(xml);
                }
            }
            return switch (outcome.action()) {
                case UNTAGGED -> {
                    err.println(outcome.domain() + ": no <ivcuda:gpu> element (in namespace https://ivcuda.dev/xmlns/domain/1): "
                            + "no GPU sharing");
                    yield EXIT_PROBLEM;
                }
                case UNCHANGED, ADDED, UPDATED -> {
                    out.println(outcome.domain() + ": valid — " + outcome.detail());
                    yield 0;
                }
                default -> {
                    err.println(outcome.domain() + ": " + outcome.action().name() + " — " + outcome.detail());
                    yield EXIT_PROBLEM;
                }
            };
        }

        private static final String PLACEHOLDER_UUID = "<uuid>00000000-0000-0000-0000-000000000000</uuid>";

        /** A domain's XML, or the element alone (wrapped into a domain named after the file). */
        private static DomainXml fromFile(Path file) throws IOException, IvcudaConfigException {
            String text = Files.readString(file, StandardCharsets.UTF_8).strip();
            if (text.startsWith("<?xml")) {
                text = text.substring(text.indexOf("?>") + 2).strip();
            }
            if (text.startsWith("<domain")) {
                // Written before define, a domain's XML usually has no <uuid> (libvirt makes one): the check
                // needs one for the device's name, the placeholder the element alone gets too.
                int startTagEnd = text.indexOf('>');
                if (!text.contains("<uuid") && startTagEnd > 0) {
                    text = text.substring(0, startTagEnd + 1) + PLACEHOLDER_UUID + text.substring(startTagEnd + 1);
                }
                return DomainXml.parse(text);
            }
            return DomainXml.parse("<domain><name>" + file.getFileName().toString().replaceAll("[<>&'\"]", "_")
                    + "</name>" + PLACEHOLDER_UUID + "<metadata>" + text + "</metadata></domain>");
        }
    }

    @Command(name = "metrics", mixinStandardHelpOptions = true, versionProvider = PackageVersion.class,
            header = "every VM's figures in the Prometheus text format",
            description = {"Calls by function, errors, bytes copied each way, kernel launches, time busy, GPU memory held "
                + "against the quota and the compute share of every cuda-server on this host, per VM and per guest process, "
                + "in the Prometheus text format: the figures status shows, from the same status files (docs/operations.md, "
                + "\"Metrics\"). Run as root (it signals the servers). Without --output it prints them once.",
                "With --output FILE it writes FILE atomically (node_exporter's textfile collector reads *.prom files), "
                    + "and with --interval it does so again every SECONDS until stopped."})
    static final class Metrics implements Callable<Integer> {
        @ParentCommand
        ProvisionerMain main;

        @Option(names = "--output", paramLabel = "FILE", description = "write FILE (atomically) instead of printing")
        Path output;

        @Option(names = "--interval", paramLabel = "SECONDS", description = "with --output: write it again every SECONDS")
        int interval;

        @Override
        public Integer call() throws Exception {
            HostMetrics metrics = new HostMetrics(main.host());
            if (output == null) {
                java.io.ByteArrayOutputStream text = new java.io.ByteArrayOutputStream();
                io.ivcuda.common.metrics.MetricsExposition.write(metrics.gather(), text);
                PrintWriter out = main.spec.commandLine().getOut();
                out.print(text.toString(java.nio.charset.StandardCharsets.UTF_8));
                out.flush();
                return 0;
            }
            do {
                HostMetrics.writeAtomically(metrics.gather(), output);
                if (interval > 0) {
                    Thread.sleep(interval * 1000L);
                }
            } while (interval > 0);
            return 0;
        }
    }

    @Command(name = "reconcile", mixinStandardHelpOptions = true, versionProvider = PackageVersion.class,
            header = "reconcile every domain once",
            description = "Reconcile every domain once (for hosts that do not run the daemon). Exit 1 when a domain has a problem.")
    static final class Reconcile implements Callable<Integer> {
        @ParentCommand
        ProvisionerMain main;

        @Override
        public Integer call() throws Exception {
            HostConfig host = main.host();
            try (Session session = new Session(main.uri(host))) {
                return report(main, new Reconciler(session.connection, host).reconcileAll());
            }
        }
    }

    @Command(name = "provision", mixinStandardHelpOptions = true, versionProvider = PackageVersion.class,
            header = "reconcile one domain now",
            description = "Reconcile one domain now. Exit 1 when it has a problem or does not exist.")
    static final class Provision implements Callable<Integer> {
        @ParentCommand
        ProvisionerMain main;

        @Parameters(paramLabel = "DOMAIN")
        String domain;

        @Override
        public Integer call() throws Exception {
            HostConfig host = main.host();
            try (Session session = new Session(main.uri(host))) {
                return report(main, List.of(new Reconciler(session.connection, host).reconcile(domain)));
            }
        }
    }

    @Command(name = "uninstall", mixinStandardHelpOptions = true, versionProvider = PackageVersion.class,
            header = "take every ivcuda device out of the domain definitions",
            description = {"Take every ivcuda device and [ivcuda] description line out of every domain definition (run by "
                + "the package's removal, after the daemon stopped). The <ivcuda:gpu> elements stay: a reinstalled daemon "
                + "gives the devices back. A running domain keeps its device until it stops."})
    static final class Uninstall implements Callable<Integer> {
        @ParentCommand
        ProvisionerMain main;

        @Override
        public Integer call() throws Exception {
            HostConfig host = main.host();
            try (Session session = new Session(main.uri(host))) {
                return report(main, new Reconciler(session.connection, host).removeAll());
            }
        }
    }

    /** Each outcome once: problems on stderr, changes on stdout, untouched domains not at all. */
    private static int report(ProvisionerMain main, List<Outcome> outcomes) {
        PrintWriter out = main.spec.commandLine().getOut();
        PrintWriter err = main.spec.commandLine().getErr();
        int problems = 0;
        for (Outcome o : outcomes) {
            if (o.action().isProblem()) {
                err.println(o);
                problems++;
            } else if (o.action() != Outcome.Action.UNTAGGED || !o.foreign().isEmpty()) {
                out.println(o);
            }
        }
        out.flush();
        err.flush();
        return problems == 0 ? 0 : EXIT_PROBLEM;
    }

    /** A plain (event-less) connection for the one-shot commands. */
    private static final class Session implements AutoCloseable {
        final Connect connection;

        Session(String uri) throws LibvirtException {
            connection = new Connect(uri);
        }

        @Override
        public void close() throws LibvirtException {
            connection.close();
        }
    }
}
