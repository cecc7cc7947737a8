package io.ivcuda.backend;

import io.ivcuda.wire.BackendSlotFlyweight;

/**
 * One assignment of a slot as the host wrote it (its host fields, read once per start of its server): which
 * front-end, with which quota, share and GPU, and whether its device is ivshmem-doorbell (its vector count, else 0). Read between two reads of the generation; a generation that moved
 * meanwhile gives null (the host is changing the slot: the next poll sees the change whole).
 */
public record SlotAssignment(int index, int generation, SlotToken token, long regionSize, long quotaBytes,
                             int computeShare, String device, String frontendUuid, String frontendName, int doorbellVectors) {

    static SlotAssignment read(int index, BackendSlotFlyweight slot) {
        int generation = slot.generationAcquire();
        SlotAssignment a = new SlotAssignment(index, generation, new SlotToken(slot.tokenLo(), slot.tokenHi()),
                slot.regionSize(), slot.quotaBytes(), slot.computeShare(), slot.device(), slot.frontendUuid(),
                slot.frontendName(), slot.doorbellVectors());
        return slot.generationAcquire() == generation && slot.stateAcquire() == BackendSlotFlyweight.SLOT_ASSIGNED ? a : null;
    }

    /** The front-end as log lines and messages name it. */
    public String frontend() {
        return "'" + frontendName + "' (" + frontendUuid + ")";
    }
}
