package io.ivcuda.common;

import java.util.Locale;

/** How the hook starts a VM's server ({@code server.launch}): by systemd, directly, or whichever the host has. */
public enum ServerLaunch {
    AUTO, SYSTEMD, DIRECT;

    /** The word of {@code server.launch}. */
    public String word() {
        return name().toLowerCase(Locale.ROOT);
    }
}
