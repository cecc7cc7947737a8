package io.ivcuda.hook;

import io.ivcuda.common.HostConfig;
import io.ivcuda.common.IvcudaConfigException;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Entry point of the Java hook, started by the launcher {@code qemu.d/50-ivcuda} only for domain XML
 * that mentions our namespace. Arguments as libvirt passes them: {@code DOMAIN OP SUBOP EXTRA}.
 */
public final class HookMain {
    static final String LOGGING_RESOURCE = "log4j2-hook.xml";
    static final Path LOGGING_OVERRIDE = Path.of("/etc/ivcuda/log4j2-hook.xml");
    static final Path SYSTEMD_RUNNING = Path.of("/run/systemd/system");

    private HookMain() {
    }

    public static void main(String[] args) throws IOException {
        // libvirt reads a hook's stdout as domain XML (migrate/restore): nothing of ours may go there.
        PrintStream user = new PrintStream(System.err, true, StandardCharsets.UTF_8);
        System.setOut(user);
        String xml = new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
        HostConfig host;
        try {
            host = HostConfig.load();
        } catch (IvcudaConfigException e) {
            user.println("ivcuda: " + e.getMessage());
            boolean mustSucceed = args.length > 1 && (args[1].equals("reconnect") || args[1].equals("release") || args[1].equals("stopped"));
            System.exit(mustSucceed ? 0 : 1);
            return;
        }
        configureLogging(host);
        int status = new Hook(host, launcherFor(host), user).run(args, xml);
        System.exit(status);
    }

    static void configureLogging(HostConfig host) {
        if (System.getProperty("ivcuda.log.dir") == null) {
            System.setProperty("ivcuda.log.dir", host.logDir().toString());
        }
        if (System.getProperty("log4j2.configurationFile") == null) {
            System.setProperty("log4j2.configurationFile",
                    Files.isReadable(LOGGING_OVERRIDE) ? LOGGING_OVERRIDE.toString() : LOGGING_RESOURCE);
        }
    }

    static ServerLauncher launcherFor(HostConfig host) {
        return switch (host.serverLaunch()) {
            case SYSTEMD -> new SystemdLauncher(host);
            case DIRECT -> new DirectLauncher(host);
            case AUTO -> Files.isDirectory(SYSTEMD_RUNNING) ? new SystemdLauncher(host) : new DirectLauncher(host);
        };
    }
}
