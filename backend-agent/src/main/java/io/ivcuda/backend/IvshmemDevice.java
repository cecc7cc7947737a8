package io.ivcuda.backend;

import java.nio.file.Path;

/**
 * One ivshmem PCI device of this domain: its address ({@code 0000:00:05.0}), its shared memory as a file (BAR2,
 * sysfs {@code resource2}) and that memory's size (the file's size: sysfs reports a BAR's length).
 */
public record IvshmemDevice(String address, Path memory, long size) {
    @Override
    public String toString() {
        return address + " (" + memory + ", " + size + " bytes)";
    }
}
