package io.ivcuda.common;

/** What the server's region file is (the server's {@code region.kind} key). */
public enum RegionKind {
    /** A file in /dev/shm that the host owns: created with region.size when absent (a host-served VM). */
    FILE("file"),
    /**
     * A PCI device's memory as a file (a back-end domain's ivshmem BAR, sysfs {@code resource2}): it exists with
     * the device's size, which nobody may change; the server maps it and neither creates, resizes nor removes it.
     */
    DEVICE("device");

    private final String word;

    RegionKind(String word) {
        this.word = word;
    }

    /** The word of the {@code region.kind} key. */
    public String word() {
        return word;
    }
}
