package io.ivcuda.server.doorbell;

import io.ivcuda.common.ControlRegion;
import io.ivcuda.wire.BackendSlotFlyweight;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Who may be which peer of a back-end slot's relay ({@link IvshmemRelay}): peer 0 only the QEMU of the back-end
 * domain (its command line carries {@code -uuid <back-end uuid>}), peer 1 only the QEMU of the front-end the
 * control region gives the slot to at the moment it connects (the hook assigns the slot in the front-end's
 * prepare, before its QEMU starts). Both must run as {@code uid} when it is set. The control region's slot
 * fields are the host's, but the back-end's guest maps that region too and could change them: that lets it name
 * another domain's QEMU as peer 1, which gains it nothing — only a domain whose {@code <shmem>} names this
 * socket ever connects here, and the provisioner writes it into the slot's front-end only.
 */
public record SlotPeerRoles(int uid, String backendUuid, Path controlFile, int slot) implements IvshmemRelay.Roles {

    @Override
    public IvshmemRelay.Admission admit(PeerCredentials who) {
        Optional<String> notBackend = new PeerPolicy(uid, backendUuid).refusal(who);
        if (notBackend.isEmpty()) {
            return IvshmemRelay.Admission.as(IvshmemRelay.BACKEND_PEER_ID);
        }
        String frontend;
        try (ControlRegion control = ControlRegion.open(controlFile)) {
            BackendSlotFlyweight s = control.slot(slot);
            frontend = s.stateVolatile() == BackendSlotFlyweight.SLOT_ASSIGNED ? s.frontendUuid() : null;
        } catch (IOException | RuntimeException e) {
            return IvshmemRelay.Admission.refused(notBackend.get() + ", and the slot's front-end is unknown: " + e.getMessage());
        }
        if (frontend == null || frontend.isEmpty()) {
            return IvshmemRelay.Admission.refused(notBackend.get() + ", and slot " + slot + " is given to no front-end");
        }
        Optional<String> notFrontend = new PeerPolicy(uid, frontend).refusal(who);
        return notFrontend.isEmpty() ? IvshmemRelay.Admission.as(IvshmemRelay.FRONTEND_PEER_ID)
                : IvshmemRelay.Admission.refused(notBackend.get() + " nor of slot " + slot + "'s front-end " + frontend);
    }
}
