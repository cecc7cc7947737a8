package io.ivcuda.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class BackendPathsTest {
    private static final String B = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";

    @Test
    void namesAndPathsFollowTheHostConfiguration() {
        BackendPaths paths = BackendPaths.of(B, HostConfig.defaults());
        assertEquals("ivcuda-" + B + "-control", paths.controlShmemName());
        assertEquals(Path.of("/dev/shm/ivcuda-" + B + "-control"), paths.controlFile());
        assertEquals("ivcuda-" + B + "-slot3", paths.slotShmemName(3));
        assertEquals(Path.of("/dev/shm/ivcuda-" + B + "-slot3"), paths.slotFile(3));
        assertEquals(Path.of("/run/ivcuda/backend-" + B + ".running"), paths.runningMarker());
    }

    @Test
    void parsesOnlyTheNamesItMakes() {
        assertEquals(new BackendPaths.DeviceName(B, -1), BackendPaths.parse(BackendPaths.controlShmemName(B)));
        assertEquals(new BackendPaths.DeviceName(B, 31), BackendPaths.parse(BackendPaths.slotShmemName(B, 31)));
        assertNull(BackendPaths.parse("ivcuda-" + B), "a host-served VM's device");
        assertNull(BackendPaths.parse("ivcuda-" + B + "-slot32"), "beyond the most slots a back-end has");
        assertNull(BackendPaths.parse("ivcuda-" + B + "-slot07"), "one spelling per slot");
        assertNull(BackendPaths.parse("ivcuda-" + B.toUpperCase() + "-control"), "libvirt writes UUIDs in lower case");
        assertNull(BackendPaths.parse("ivcuda-" + B + "-controlx"));
    }
}
