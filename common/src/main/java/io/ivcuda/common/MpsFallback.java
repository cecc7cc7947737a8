package io.ivcuda.common;

import java.util.Locale;

/**
 * What a cuda-server does when its VM has a compute share (docs/sharing.md) that MPS does not enforce — no
 * control daemon, or a server started without the MPS environment ({@code mps.unavailable}).
 */
public enum MpsFallback {
    /** Refuse to start: the VM does not start rather than take more of the GPU than it was given. */
    REFUSE,
    /** Run with the whole GPU, and say so in the log, the status file and {@code ivshmem-provisioner status}. */
    UNSHARED;

    /** The word of {@code mps.unavailable}. */
    public String word() {
        return name().toLowerCase(Locale.ROOT);
    }
}
