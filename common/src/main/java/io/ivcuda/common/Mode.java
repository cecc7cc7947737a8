package io.ivcuda.common;

import java.util.Locale;

/** How the VM's region is shared: a plain shared file, or through the cuda-server acting as ivshmem server. */
public enum Mode {
    PLAIN("plain", "ivshmem-plain"),
    DOORBELL("doorbell", "ivshmem-doorbell");

    private final String word;
    private final String shmemModel;

    Mode(String word, String shmemModel) {
        this.word = word;
        this.shmemModel = shmemModel;
    }

    /** The word used in the metadata element, the host configuration and the server's {@code mode} key. */
    public String word() {
        return word;
    }

    /** The libvirt {@code <shmem><model type=…/>} for this mode. */
    public String shmemModel() {
        return shmemModel;
    }

    /** Parses {@code plain} or {@code doorbell}; null when the word is neither. */
    public static Mode fromWord(String text) {
        String lower = text.trim().toLowerCase(Locale.ROOT);
        for (Mode mode : values()) {
            if (mode.word.equals(lower)) {
                return mode;
            }
        }
        return null;
    }

    public static Mode fromShmemModel(String model) {
        for (Mode mode : values()) {
            if (mode.shmemModel.equals(model)) {
                return mode;
            }
        }
        return null;
    }
}
