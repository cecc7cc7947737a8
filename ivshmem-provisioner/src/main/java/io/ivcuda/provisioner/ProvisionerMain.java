package io.ivcuda.provisioner;

import io.ivcuda.common.HostConfig;
import io.ivcuda.common.IvcudaConfigException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import org.libvirt.Connect;
import org.libvirt.LibvirtException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/** {@code ivshmem-provisioner [--config FILE] [--connect URI] daemon|status|reconcile|provision DOMAIN}. */
@Command(name = "ivshmem-provisioner", mixinStandardHelpOptions = true, version = "ivcuda ivshmem-provisioner 0.1",
        description = "Adds, updates and removes the ivcuda <shmem> device of libvirt domains tagged with <ivcuda:gpu>.",
        subcommands = {ProvisionerMain.Daemon.class, ProvisionerMain.Status.class,
                ProvisionerMain.Reconcile.class, ProvisionerMain.Provision.class})
public final class ProvisionerMain {
    static final String LOGGING_RESOURCE = "log4j2-provisioner.xml";
    static final Path LOGGING_OVERRIDE = Path.of("/etc/ivcuda/log4j2-provisioner.xml");

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
     * logged once, with context. Held in a field: the native side keeps only a pointer to it.
     */
    private static final org.libvirt.ErrorCallback QUIET_LIBVIRT_ERRORS = new org.libvirt.ErrorCallback();

    public static void main(String[] args) throws LibvirtException {
        configureLogging();
        Connect.setErrorCallback(QUIET_LIBVIRT_ERRORS);
        System.exit(commandLine().execute(args));
    }

    static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new ProvisionerMain());
        cl.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
            commandLine.getErr().println("ivshmem-provisioner: " + message(e));
            return e instanceof IvcudaConfigException ? 2 : 1;
        });
        return cl;
    }

    private static String message(Exception e) {
        if (e instanceof LibvirtException le && le.getError() != null) {
            return "libvirt: " + le.getError().getMessage();
        }
        return e.getMessage();
    }

    /** The logging configuration ships once, in templates/: copied into the jar, overridable in /etc/ivcuda. */
    static void configureLogging() {
        if (System.getProperty("log4j2.configurationFile") == null) {
            System.setProperty("log4j2.configurationFile",
                    Files.isReadable(LOGGING_OVERRIDE) ? LOGGING_OVERRIDE.toString() : LOGGING_RESOURCE);
        }
    }

    @Command(name = "daemon", description = "Reconcile all domains, then follow DEFINED and METADATA_CHANGE events until stopped.")
    static final class Daemon implements Callable<Integer> {
        @ParentCommand
        ProvisionerMain main;

        @Override
        public Integer call() throws Exception {
            HostConfig host = main.host();
            ProvisionerDaemon daemon = new ProvisionerDaemon(host, main.uri(host));
            Runtime.getRuntime().addShutdownHook(new Thread(daemon::close, "shutdown"));
            daemon.start();
            daemon.awaitClose();
            return 0;
        }
    }

    @Command(name = "status", description = "Show every domain's ivcuda state and, for a domain that is not provisioned "
            + "or carries another domain's device, why.")
    static final class Status implements Callable<Integer> {
        @ParentCommand
        ProvisionerMain main;

        @Override
        public Integer call() throws Exception {
            HostConfig host = main.host();
            try (Session session = new Session(main.uri(host))) {
                List<Outcome> outcomes = new Reconciler(session.connection, host).preview();
                PrintWriter out = main.spec.commandLine().getOut();
                int problems = 0;
                for (Outcome o : outcomes) {
                    String state = switch (o.action()) {
                        case UNTAGGED -> "untagged";
                        case UNCHANGED -> "provisioned";
                        case ADDED -> "pending: reconcile would add";
                        case UPDATED -> "pending: reconcile would update";
                        case REMOVED -> "pending: reconcile would remove the device";
                        case REFUSED -> "REFUSED";
                        case INVALID -> "INVALID";
                        case SKIPPED -> "skipped";
                    };
                    String detail = o.detail();
                    if (!o.foreign().isEmpty()) {
                        // Whatever else is pending: this one is an isolation problem, so it leads.
                        state = "FOREIGN DEVICE";
                        detail = "carries " + Outcome.describeForeign(o.foreign()) + "; reconcile removes it, the hook refuses "
                                + "to start the domain with it" + (detail.isEmpty() ? "" : "; " + detail);
                    }
                    problems += o.isProblem() ? 1 : 0;
                    out.printf("%-24s %-44s %s%n", o.domain(), state, detail);
                }
                out.flush();
                return problems == 0 ? 0 : 1;
            }
        }
    }

    @Command(name = "reconcile", description = "Reconcile every domain once (for hosts that do not run the daemon).")
    static final class Reconcile implements Callable<Integer> {
        @ParentCommand
        ProvisionerMain main;

        @Override
        public Integer call() throws Exception {
            HostConfig host = main.host();
            try (Session session = new Session(main.uri(host))) {
                List<Outcome> outcomes = new Reconciler(session.connection, host).reconcileAll();
                return report(main, outcomes);
            }
        }
    }

    @Command(name = "provision", description = "Reconcile one domain now.")
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
        return problems == 0 ? 0 : 1;
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
