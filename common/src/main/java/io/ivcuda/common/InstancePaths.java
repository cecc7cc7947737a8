package io.ivcuda.common;

import java.nio.file.Path;

/**
 * Every name and path that belongs to one VM (domain UUID {@code U}), as documented in docs/architecture.md.
 * Hook, provisioner and the systemd unit must agree on these, so they are made only here.
 */
public record InstancePaths(String domainUuid, String shmemName, Path regionFile, Path doorbellSocket,
                            Path instanceConfig, Path pidfile, Path serverLog) {
    /**
     * What the VM's server says about itself when asked (SIGUSR1; {@code ivshmem-provisioner status}):
     * beside the pidfile, {@code runtime.dir/U.status}. The server names it from its pidfile, so the
     * two need no key of their own.
     */
    public Path statusFile() {
        return pidfile.resolveSibling(domainUuid + ".status");
    }

    /**
     * The server's MPS environment ({@link MpsEnvironment}), {@code runtime.dir/U.env}: written by the hook,
     * passed on by the direct launcher, read by {@code ivcuda-server@.service} ({@code EnvironmentFile=}).
     */
    public Path serverEnvironment() {
        return instanceConfig.resolveSibling(domainUuid + ".env");
    }

    public static final String SHMEM_PREFIX = "ivcuda-";

    public static String shmemName(String domainUuid) {
        return SHMEM_PREFIX + domainUuid;
    }

    public static InstancePaths of(String domainUuid, HostConfig host) {
        String shmem = shmemName(domainUuid);
        return new InstancePaths(domainUuid, shmem,
                host.shmDir().resolve(shmem),
                host.runtimeDir().resolve(shmem + ".sock"),
                host.runtimeDir().resolve(domainUuid + ".properties"),
                host.runtimeDir().resolve(domainUuid + ".pid"),
                host.logDir().resolve("server-" + domainUuid + ".log"));
    }

    /** The systemd unit that supervises this VM's server. */
    public String systemdUnit() {
        return "ivcuda-server@" + domainUuid + ".service";
    }
}
