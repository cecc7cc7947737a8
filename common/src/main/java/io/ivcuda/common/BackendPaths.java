package io.ivcuda.common;

import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The names and paths of one back-end domain (UUID {@code B}, docs/backend-domains.md): its control
 * region {@code ivcuda-B-control} and its slot regions {@code ivcuda-B-slot<k>} (each both a
 * {@code <shmem>} name and a file in {@code shm.dir}), and the marker that says it is running. Hook,
 * provisioner and status must agree on these, so they are made only here, as {@link InstancePaths} does
 * for a host-served VM.
 */
public record BackendPaths(String backendUuid, Path controlFile, Path runningMarker, Path shmDir, Path runtimeDir) {
    /**
     * The control region's size, exactly: the back-end's agent tells it from the slot regions by this
     * size (and its magic), so it may never be a size a slot region can have (those are at least 1 MiB
     * too, so the magic decides between a 1 MiB slot and the control region).
     */
    public static final long CONTROL_SIZE = 1L << 20;
    private static final String CONTROL_SUFFIX = "-control";
    private static final String SLOT_SUFFIX = "-slot";
    private static final Pattern NAME = Pattern.compile(Pattern.quote(InstancePaths.SHMEM_PREFIX)
            + "([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:-control|-slot([0-9]{1,2}))");

    public static BackendPaths of(String backendUuid, HostConfig host) {
        return new BackendPaths(backendUuid, host.shmDir().resolve(controlShmemName(backendUuid)),
                host.runtimeDir().resolve("backend-" + backendUuid + ".running"), host.shmDir(), host.runtimeDir());
    }

    public static String controlShmemName(String backendUuid) {
        return InstancePaths.SHMEM_PREFIX + backendUuid + CONTROL_SUFFIX;
    }

    public static String slotShmemName(String backendUuid, int slot) {
        return InstancePaths.SHMEM_PREFIX + backendUuid + SLOT_SUFFIX + slot;
    }

    public String controlShmemName() {
        return controlShmemName(backendUuid);
    }

    public String slotShmemName(int slot) {
        return slotShmemName(backendUuid, slot);
    }

    /** The region file of slot {@code slot}, which the back-end's and the front-end's QEMU both map. */
    public Path slotFile(int slot) {
        return shmDir.resolve(slotShmemName(slot));
    }

    /**
     * Where the ivshmem relay of slot {@code slot} listens (a back-end with mode="doorbell"): the {@code <server path>}
     * of the slot's device in the back-end's and in a doorbell front-end's definition.
     */
    public Path relaySocket(int slot) {
        return runtimeDir.resolve("relay-" + backendUuid + "-slot" + slot + ".sock");
    }

    /** The pidfile of that relay (written once it listens). */
    public Path relayPidfile(int slot) {
        return runtimeDir.resolve("relay-" + backendUuid + "-slot" + slot + ".pid");
    }

    /**
     * Who is connected to that relay, which rewrites it at every change ({@code PEER PID UID} a line: peer 0 the
     * back-end's QEMU, peer 1 the front-end's); {@code ivshmem-provisioner status} shows it.
     */
    public Path relayPeers(int slot) {
        return runtimeDir.resolve("relay-" + backendUuid + "-slot" + slot + ".peers");
    }

    /** That relay's systemd unit, where the hook launches through systemd (templates/ivcuda-relay@.service). */
    public String relayUnit(int slot) {
        return "ivcuda-relay@" + backendUuid + "-slot" + slot + ".service";
    }

    /** The arguments of that unit's relay ({@code IVCUDA_RELAY_ARGS=…}, the unit's {@code EnvironmentFile=}). */
    public Path relayEnvironment(int slot) {
        return runtimeDir.resolve("relay-" + backendUuid + "-slot" + slot + ".env");
    }

    /**
     * What a back-end device name says: the back-end's UUID and the slot ({@code -1} for the control
     * region). Null for any other name (a host-served VM's {@code ivcuda-UUID} among them).
     */
    public record DeviceName(String backendUuid, int slot) {
        public boolean isControl() {
            return slot < 0;
        }
    }

    /** Reads a back-end device name; null when {@code shmemName} is none (or names a slot beyond the most a back-end has). */
    public static DeviceName parse(String shmemName) {
        Matcher m = NAME.matcher(shmemName);
        if (!m.matches()) {
            return null;
        }
        if (m.group(2) == null) {
            return new DeviceName(m.group(1), -1);
        }
        int slot = Integer.parseInt(m.group(2));
        // "slot07" is not a name the provisioner writes: one spelling per slot, so names compare as strings.
        return slot < GpuElement.MAX_SLOTS && m.group(2).equals(Integer.toString(slot)) ? new DeviceName(m.group(1), slot) : null;
    }
}
