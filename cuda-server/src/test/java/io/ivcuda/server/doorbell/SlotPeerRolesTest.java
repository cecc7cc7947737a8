package io.ivcuda.server.doorbell;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.BackendPaths;
import io.ivcuda.common.ControlRegion;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which QEMU may be which peer of a slot's relay: told by the {@code -uuid} on its command line and the control region. */
class SlotPeerRolesTest {
    private static final String BACKEND = "0b0b0b0b-1111-4222-8333-444444444444";
    private static final String FRONTEND = "0f0f0f0f-1111-4222-8333-555555555555";
    private static final String STRANGER = "05050505-1111-4222-8333-666666666666";
    private static final int SLOT = 2;

    @TempDir
    Path dir;
    private Path control;
    private final List<Process> children = new ArrayList<>();

    @BeforeEach
    void controlRegion() throws Exception {
        control = dir.resolve("control");
        try (RandomAccessFile f = new RandomAccessFile(control.toFile(), "rw")) {
            f.setLength(BackendPaths.CONTROL_SIZE);
        }
        try (ControlRegion c = ControlRegion.open(control)) {
            ControlRegion.Token[] tokens = new ControlRegion.Token[4];
            java.util.Arrays.fill(tokens, new ControlRegion.Token(1, 2));
            c.format(BACKEND, 4, "0", tokens, new boolean[io.ivcuda.common.GpuElement.MAX_SLOTS]);
        }
    }

    @AfterEach
    void stopChildren() {
        children.forEach(Process::destroyForcibly);
    }

    /** A process whose command line carries {@code -uuid uuid}, as libvirt starts QEMU. */
    private PeerCredentials qemuOf(String uuid) throws Exception {
        Process p = new ProcessBuilder("sh", "-c", "sleep 30", "qemu-system-x86_64", "-uuid", uuid).start();
        children.add(p);
        return new PeerCredentials((int) p.pid(), -1, -1);
    }

    private void assign(String frontend) throws Exception {
        try (ControlRegion c = ControlRegion.open(control)) {
            c.assign(SLOT, new ControlRegion.Assignment(frontend, "fe", 0, 0, null, 1 << 20));
        }
    }

    @Test
    void theBackEndsQemuIsPeerZeroAndTheSlotsFrontEndPeerOne() throws Exception {
        SlotPeerRoles roles = new SlotPeerRoles(-1, BACKEND, control, SLOT);
        assertEquals(IvshmemRelay.BACKEND_PEER_ID, roles.admit(qemuOf(BACKEND)).peerId());
        assign(FRONTEND);
        IvshmemRelay.Admission front = roles.admit(qemuOf(FRONTEND));
        assertNull(front.refusal());
        assertEquals(IvshmemRelay.FRONTEND_PEER_ID, front.peerId());
    }

    @Test
    void anyOtherProcessIsRefusedWithWhy() throws Exception {
        SlotPeerRoles roles = new SlotPeerRoles(-1, BACKEND, control, SLOT);
        String free = roles.admit(qemuOf(FRONTEND)).refusal();
        assertTrue(free.contains("slot 2 is given to no front-end"), free);
        assign(FRONTEND);
        String stranger = roles.admit(qemuOf(STRANGER)).refusal();
        assertTrue(stranger.contains("nor of slot 2's front-end " + FRONTEND), stranger);
        String other = new SlotPeerRoles(-1, BACKEND, control, SLOT + 1).admit(qemuOf(FRONTEND)).refusal();
        assertTrue(other.contains("slot 3 is given to no front-end"), "another slot's front-end is refused: " + other);
        String noControl = new SlotPeerRoles(-1, BACKEND, dir.resolve("missing"), SLOT).admit(qemuOf(FRONTEND)).refusal();
        assertTrue(noControl.contains("the slot's front-end is unknown"), noControl);
        String wrongUid = new SlotPeerRoles(12345, BACKEND, control, SLOT).admit(qemuOf(BACKEND)).refusal();
        assertTrue(wrongUid.contains("expected 12345"), wrongUid);
    }
}
