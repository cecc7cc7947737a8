package io.ivcuda.provisioner;

import io.ivcuda.common.BackendPaths;
import io.ivcuda.common.ByteSize;
import io.ivcuda.common.GpuElement;
import io.ivcuda.common.HostConfig;
import io.ivcuda.common.Mode;
import io.ivcuda.common.ShmemDevice;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * A back-end GPU domain as the provisioner places front-ends on it (issue 16): from its valid element.
 *
 * @param slotSize each slot region's size (the element's size, else {@code defaults.size})
 * @param device which of the back-end's own GPUs serves its front-ends (index or UUID; "0" when the element names none)
 * @param mode    its slots' devices: plain, or doorbell (each joined to its front-end's by the host's relay of the slot)
 */
record BackendDomain(String name, String uuid, int slots, long slotSize, String device, OptionalLong capacity, Mode mode,
                     BackendPaths paths) {

    static BackendDomain of(String name, String uuid, GpuElement element, HostConfig host) {
        return new BackendDomain(name, uuid, element.slotCount(), element.size().orElse(host.defaultSize()),
                element.device().orElse("0"), element.capacity(), element.slotMode(), BackendPaths.of(uuid, host));
    }

    /** The devices the back-end's definition carries: its control region (exactly 1 MiB) and one per slot. */
    List<ShmemDevice> devices() {
        List<ShmemDevice> devices = new ArrayList<>();
        devices.add(new ShmemDevice(BackendPaths.controlShmemName(uuid), Mode.PLAIN, BackendPaths.CONTROL_SIZE, null));
        for (int k = 0; k < slots; k++) {
            devices.add(slotDevice(k));
        }
        return devices;
    }

    /** Slot {@code k}'s device in the back-end's definition. */
    ShmemDevice slotDevice(int k) {
        return frontendDevice(k, mode);
    }

    /**
     * Slot {@code k}'s device in the definition of a front-end in {@code frontendMode}: the same region file either
     * way; doorbell (with the slot's relay as its server) only on a back-end whose slots are doorbell devices.
     */
    ShmemDevice frontendDevice(int k, Mode frontendMode) {
        return frontendMode == Mode.DOORBELL
                ? new ShmemDevice(BackendPaths.slotShmemName(uuid, k), Mode.DOORBELL, 0, paths.relaySocket(k))
                : new ShmemDevice(BackendPaths.slotShmemName(uuid, k), Mode.PLAIN, slotSize, null);
    }

    /** {@code 4 slots of 256 MiB} (and the capacity). */
    String describe() {
        return slots + " " + (mode == Mode.DOORBELL ? "doorbell " : "") + "slot" + (slots == 1 ? "" : "s") + " of " + ByteSize.describe(slotSize)
                + (capacity.isPresent() ? ", " + ByteSize.describe(capacity.getAsLong()) + " GPU memory for quotas" : "");
    }
}
