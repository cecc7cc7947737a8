package io.ivcuda.backend;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Finds the domain's ivshmem devices: every {@code ROOT/bus/pci/devices/ADDRESS} whose {@code vendor} is 0x1af4
 * and {@code device} 0x1110 (QEMU's ivshmem), with its BAR2 file {@code resource2}. The root is configurable
 * ({@code sysfs.root}) so that tests and a host-side stand-in give it a tree of ordinary files.
 */
public final class DeviceDiscovery {
    private static final Logger LOG = LogManager.getLogger(DeviceDiscovery.class);
    static final String VENDOR_REDHAT_QUMRANET = "0x1af4";
    static final String DEVICE_IVSHMEM = "0x1110";
    static final String BAR2 = "resource2";

    private final Path devices;

    public DeviceDiscovery(Path sysfsRoot) {
        this.devices = sysfsRoot.resolve("bus/pci/devices");
    }

    public Path devicesDir() {
        return devices;
    }

    /** The ivshmem devices now present, by address; a device without a readable BAR2 is left out (and logged). */
    public List<IvshmemDevice> scan() throws IOException {
        List<IvshmemDevice> found = new ArrayList<>();
        if (!Files.isDirectory(devices)) {
            throw new IOException(devices + " is not a directory: is sysfs mounted (or the configured root right)?");
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(devices)) {
            for (Path dir : entries) {
                if (!VENDOR_REDHAT_QUMRANET.equals(word(dir.resolve("vendor"))) || !DEVICE_IVSHMEM.equals(word(dir.resolve("device")))) {
                    continue;
                }
                Path bar = dir.resolve(BAR2);
                try {
                    found.add(new IvshmemDevice(dir.getFileName().toString(), bar, Files.size(bar)));
                } catch (IOException e) {
                    LOG.warn("ivshmem device {}: no usable {} ({}): left out", dir.getFileName(), BAR2, e.toString());
                }
            }
        }
        found.sort(Comparator.comparing(IvshmemDevice::address));
        return found;
    }

    /** The first word of a small sysfs attribute file, lower case; empty when it cannot be read. */
    private static String word(Path file) {
        try {
            byte[] bytes = Files.readAllBytes(file);
            return new String(bytes, 0, Math.min(bytes.length, 64), StandardCharsets.US_ASCII).trim().toLowerCase(java.util.Locale.ROOT);
        } catch (IOException e) {
            return "";
        }
    }
}
