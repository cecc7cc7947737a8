package io.ivcuda.hook;

import io.ivcuda.common.HostConfig;
import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.LogTarget;
import io.ivcuda.common.PackageVersion;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.apache.logging.log4j.ThreadContext;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Entry point of the Java hook. libvirt calls the launcher {@code qemu.d/50-ivcuda} with exactly four
 * arguments, {@code DOMAIN OP SUBOP EXTRA}, and the domain XML on stdin: that call goes straight to
 * {@link Hook}, whatever the domain is called. Any other argument count is a person: {@code --help},
 * {@code --version}, or {@code --stop-all} (package removal).
 */
@Command(name = "50-ivcuda", mixinStandardHelpOptions = true, versionProvider = PackageVersion.class,
        usageHelpAutoWidth = true,
        header = "libvirt hook of ivcuda: the region and the cuda-server around the life of a tagged domain.",
        description = {
            "Installed as /etc/libvirt/hooks/qemu.d/50-ivcuda. libvirt runs it for every operation on a QEMU domain, "
                + "with the domain's XML on standard input; for a domain tagged with <ivcuda:gpu> it creates the region "
                + "and starts the domain's cuda-server at 'prepare begin', and stops the server and removes the region "
                + "at 'release end'. Domains without ivcuda return at once.",
            "",
            "It never writes to standard output. What it refuses, it says on standard error, which libvirt shows in "
                + "the error of virsh start: the first line is 'ivcuda: CAUSE'. It logs to the journal (journalctl -t "
                + "ivcuda-hook) where journald runs, else to log.dir/hook.log."},
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {
            "0: done (for reconnect and release always: libvirt kills a VM whose reconnect hook fails)",
            "1: refused the operation (libvirt then does not start the domain), or --stop-all could not stop a server",
            "2: wrong arguments"},
        footerHeading = "%nFiles:%n",
        footer = {"/etc/ivcuda/ivcuda.properties (IVCUDA_CONFIG), /etc/ivcuda/log4j2-hook.xml, /run/ivcuda, /dev/shm/ivcuda-UUID",
            "", "See also: ivshmem-provisioner(8), ivcuda-server(8), /usr/share/doc/ivcuda/operations.md"})
public final class HookMain implements Callable<Integer> {
    static final String LOGGING_RESOURCE = "log4j2-hook.xml";
    static final Path LOGGING_OVERRIDE = Path.of("/etc/ivcuda/log4j2-hook.xml");
    static final Path SYSTEMD_RUNNING = Path.of("/run/systemd/system");
    /** libvirt always passes four arguments. */
    static final int LIBVIRT_ARGUMENTS = 4;

    @Parameters(index = "0", arity = "0..1", paramLabel = "DOMAIN", description = "the domain's name (from libvirt)")
    String domain;

    @Parameters(index = "1", arity = "0..1", paramLabel = "OPERATION", description = "prepare, start, started, stopped, release, "
            + "reconnect, migrate, restore, attach, …")
    String operation;

    @Parameters(index = "2", arity = "0..1", paramLabel = "SUB-OPERATION", description = "begin or end")
    String subOperation;

    @Parameters(index = "3", arity = "0..1", paramLabel = "EXTRA", description = "libvirt's extra argument ('-' mostly)")
    String extra;

    @Option(names = "--stop-all", description = "Stop every cuda-server on this host and remove its region, socket and "
            + "files, saying which domain each one served (run by the package's removal; the domains keep running, CUDA "
            + "in their guests fails from then on); without systemd also the MPS control daemon the hook started.")
    boolean stopAll;

    private HookMain() {
    }

    public static void main(String[] args) throws IOException {
        // libvirt reads a hook's stdout as domain XML (migrate/restore): nothing of ours may go there.
        PrintStream user = new PrintStream(System.err, true, StandardCharsets.UTF_8);
        PrintStream realOut = System.out;
        System.setOut(user);
        if (args.length != LIBVIRT_ARGUMENTS) {
            CommandLine cl = new CommandLine(new HookMain());
            cl.setOut(new java.io.PrintWriter(realOut, true, StandardCharsets.UTF_8));
            System.exit(cl.execute(args));
            return;
        }
        String xml = new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
        boolean mustSucceed = args[1].equals("reconnect") || args[1].equals("release") || args[1].equals("stopped");
        HostConfig host = loadHostConfig(user);
        if (host == null) {
            System.exit(mustSucceed ? 0 : 1);
            return;
        }
        configureLogging(host);
        // every record of this run names its domain: the journal's IVCUDA_DOMAIN field
        ThreadContext.put("domain", args[0]);
        int status = new Hook(host, launcherFor(host), user).run(args, xml);
        System.exit(status);
    }

    /** {@code --stop-all}; any other use of the command line is a mistake (libvirt passes four arguments). */
    @Override
    public Integer call() {
        CommandLine cl = new CommandLine(this);
        if (!stopAll) {
            cl.getErr().println("50-ivcuda: libvirt calls this hook with DOMAIN OPERATION SUB-OPERATION EXTRA (four "
                    + "arguments) and the domain XML on standard input; see 50-ivcuda --help");
            return 2;
        }
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
        HostConfig host = loadHostConfig(System.err);
        if (host == null) {
            return 1;
        }
        configureLogging(host);
        return new Hook(host, launcherFor(host), System.err).stopAll(out);
    }

    private static HostConfig loadHostConfig(PrintStream user) {
        try {
            return HostConfig.load();
        } catch (IvcudaConfigException e) {
            user.println("ivcuda: " + e.getMessage());
            return null;
        }
    }

    /** The journal where journald runs, else log.dir/hook.log (or the syslog daemon: templates/log4j2-hook.xml). */
    static void configureLogging(HostConfig host) {
        LogTarget.journalOr(LogTarget.FILE, LogTarget.JOURNAL_SOCKET)
                .select(host.logDir().resolve("hook.log"), LOGGING_RESOURCE, LOGGING_OVERRIDE);
    }

    /** Where this host's hook log is, for messages. */
    static String logLocation(HostConfig host) {
        return LogTarget.isJournal() ? "journalctl -t ivcuda-hook" : host.logDir().resolve("hook.log").toString();
    }

    static ServerLauncher launcherFor(HostConfig host) {
        return switch (host.serverLaunch()) {
            case SYSTEMD -> new SystemdLauncher(host);
            case DIRECT -> new DirectLauncher(host);
            case AUTO -> Files.isDirectory(SYSTEMD_RUNNING) ? new SystemdLauncher(host) : new DirectLauncher(host);
        };
    }
}
