package io.ivcuda.backend;

import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.PackageVersion;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import sun.misc.Signal;

/**
 * {@code ivcuda-backend-agent [--config FILE]... [--set KEY=VALUE]...}: inside a back-end GPU domain, finds the
 * control region among the domain's ivshmem devices and serves it until SIGTERM (docs/backend-domains.md).
 */
@Command(name = "ivcuda-backend-agent", mixinStandardHelpOptions = true, versionProvider = PackageVersion.class,
        usageHelpAutoWidth = true,
        header = "Inside a back-end GPU domain of ivcuda: runs one cuda-server per front-end the host assigned to it.",
        description = {
            "Finds this domain's ivshmem devices (PCI 1af4:1110) under the sysfs root, takes the one of exactly 1 MiB "
                + "that carries the back-end magic as the control region the host writes, and serves it: a heartbeat, "
                + "and for every slot the host assigns a front-end to, a cuda-server on the device whose header carries "
                + "the slot's token, with the front-end's quota, compute share and GPU. A freed slot's server is "
                + "stopped (SIGTERM, then SIGKILL); a failed one is restarted after a back-off while its slot stays "
                + "assigned. Runs as ivcuda-backend-agent.service (or /etc/init.d/ivcuda-backend-agent), or by hand.",
            "",
            "Its keys (sysfs root, backend, server command and user, run directory, timings) are read from --config "
                + "files and --set; the package's file is /etc/ivcuda/backend.properties. It logs to stderr."},
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {
            "0: stopped by SIGTERM or SIGINT (every server stopped first)",
            "1: the agent failed while serving (see the log)",
            "2: configuration error, or the control region is refused (more than one, or a bad slot table)"},
        footerHeading = "%nSee also:%n",
        footer = {"ivcuda-server(8), /usr/share/doc/ivcuda-backend/operations.md"})
public final class AgentMain implements Callable<Integer> {
    static final int EXIT_FAILURE = 1;
    static final int EXIT_REFUSED = 2;
    static final String SAYS = "ivcuda-backend-agent: ";
    /** How often the agent looks again for a control region that is not there yet. */
    static final long LOOK_AGAIN_MS = 2000;

    @Option(names = "--config", paramLabel = "FILE", description = "properties file; later files override earlier ones")
    List<Path> configs = new ArrayList<>();

    @Option(names = "--set", paramLabel = "KEY=VALUE", description = "overrides every file")
    List<String> sets = new ArrayList<>();

    public static void main(String[] args) {
        CommandLine cl = new CommandLine(new AgentMain());
        cl.setParameterExceptionHandler((e, a) -> {
            System.err.println(SAYS + e.getMessage() + " (ivcuda-backend-agent --help)");
            return EXIT_REFUSED;
        });
        System.exit(cl.execute(args));
    }

    @Override
    public Integer call() throws InterruptedException {
        AgentConfig config;
        try {
            config = AgentConfig.load(configs, sets);
        } catch (IvcudaConfigException e) {
            System.err.println(SAYS + "configuration error: " + e.getMessage());
            return EXIT_REFUSED;
        }
        Logger log = LogManager.getLogger(AgentMain.class);
        CountDownLatch stop = new CountDownLatch(1);
        Signal.handle(new Signal("TERM"), s -> stop.countDown());
        Signal.handle(new Signal("INT"), s -> stop.countDown());
        DeviceDiscovery discovery = new DeviceDiscovery(config.sysfsRoot());
        IvshmemDevice found = null;
        boolean told = false;
        while (found == null) {
            try {
                found = ControlRegion.locate(discovery.scan());
            } catch (ControlRegion.Refused e) {
                for (IvshmemDevice d : e.candidates()) {
                    ControlRegion.tell(d, e.getMessage());
                }
                System.err.println(SAYS + e.getMessage());
                return EXIT_REFUSED;
            } catch (IOException e) {
                if (!told) {
                    log.warn("{} (looking again every {} ms)", e.getMessage(), LOOK_AGAIN_MS);
                }
                told = true;
            }
            if (found == null) {
                if (!told) {
                    log.warn("no back-end control region among the ivshmem devices under {} yet (looking again every {} ms)",
                            discovery.devicesDir(), LOOK_AGAIN_MS);
                    told = true;
                }
                if (stop.await(LOOK_AGAIN_MS, TimeUnit.MILLISECONDS)) {
                    return 0;
                }
            }
        }
        Agent agent;
        try {
            ControlRegion control = ControlRegion.open(found);
            agent = new Agent(config, control);
        } catch (IOException e) {
            ControlRegion.tell(found, e.getMessage());
            System.err.println(SAYS + e.getMessage());
            return EXIT_REFUSED;
        }
        agent.start();
        Thread watch = new Thread(() -> {
            try {
                agent.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            stop.countDown();
        }, "agent-watch");
        watch.setDaemon(true);
        watch.start();
        stop.await();
        boolean failed = agent.ended();
        log.info("stopping ({})", failed ? "the agent's loop ended" : "signal");
        agent.close();
        return failed ? EXIT_FAILURE : 0;
    }
}
