package io.ivcuda.backend;

import io.ivcuda.wire.HeaderFlyweight;
import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Which device is which slot: the host writes slot k's random 128-bit token into the control region and into the
 * header of the slot's region ({@code slot_token_lo/hi}, §2). A front-end can read and overwrite only its own
 * region's token, so a forged or broken token costs only its own service. The agent reads a device's token once,
 * when it is about to start that slot's server, and trusts nothing else of the slot's region.
 */
public record SlotToken(long lo, long hi) {
    /** Never matched: a slot the host has not prepared. */
    public boolean isZero() {
        return lo == 0 && hi == 0;
    }

    /** The token in {@code device}'s header (a sysfs BAR supports mmap only, not read: the first page is mapped). */
    public static SlotToken of(IvshmemDevice device) throws IOException {
        if (device.size() < HeaderFlyweight.LENGTH) {
            throw new IOException("device " + device + " is smaller than a region header");
        }
        try (FileChannel channel = FileChannel.open(device.memory(), StandardOpenOption.READ)) {
            MappedByteBuffer first = channel.map(FileChannel.MapMode.READ_ONLY, 0, HeaderFlyweight.LENGTH);
            try {
                HeaderFlyweight h = new HeaderFlyweight().wrap(new UnsafeBuffer(first), 0);
                return new SlotToken(h.slotTokenLo(), h.slotTokenHi());
            } finally {
                IoUtil.unmap(first);
            }
        }
    }

    /**
     * The one device among {@code devices} whose header carries this token.
     *
     * @throws IOException naming the slot's problem: no device carries it, or more than one does
     */
    public IvshmemDevice find(List<IvshmemDevice> devices, int slot) throws IOException {
        if (isZero()) {
            throw new IOException("slot " + slot + " has no token in the control region (not prepared by the host)");
        }
        List<IvshmemDevice> matches = new ArrayList<>();
        for (IvshmemDevice d : devices) {
            try {
                if (equals(of(d))) {
                    matches.add(d);
                }
            } catch (IOException e) {
                // a device that cannot be read is no slot's: the others are still looked at
            }
        }
        if (matches.isEmpty()) {
            throw new IOException("no ivshmem device carries slot " + slot + "'s token (its region's header was "
                    + "overwritten, or its device is missing from this domain)");
        }
        if (matches.size() > 1) {
            throw new IOException("slot " + slot + "'s token is in " + matches.size() + " devices ("
                    + matches.stream().map(IvshmemDevice::address).toList() + "): which one is the slot's cannot be told");
        }
        return matches.get(0);
    }
}
