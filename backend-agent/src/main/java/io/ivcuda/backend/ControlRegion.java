package io.ivcuda.backend;

import io.ivcuda.wire.BackendControlFlyweight;
import io.ivcuda.wire.BackendSlotFlyweight;
import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The back-end's control region (docs/protocol.md §12), mapped for the agent's life: the host writes the header's
 * host fields and each slot's host fields, the agent only {@code agent_*} and each slot's served fields. It is the
 * one ivshmem device of exactly 1 MiB whose first words are BACKEND_MAGIC and control version 1; no front-end maps
 * it. Its geometry (slot count, stride, table offset) is read once, here, and checked against the region.
 */
public final class ControlRegion implements AutoCloseable {
    /** The control region's size: the host makes it exactly this, and no other device of a back-end may be it. */
    public static final long SIZE = 1L << 20;
    /** The element's bound on slots per back-end (docs/backend-domains.md). */
    public static final int MAX_SLOTS = 32;

    private final IvshmemDevice device;
    private final MappedByteBuffer mapping;
    private final BackendControlFlyweight header = new BackendControlFlyweight();
    private final BackendSlotFlyweight[] slots;

    private ControlRegion(IvshmemDevice device, MappedByteBuffer mapping) throws IOException {
        this.device = device;
        this.mapping = mapping;
        UnsafeBuffer buffer = new UnsafeBuffer(mapping);
        header.wrap(buffer, 0);
        int count = header.slotCount();
        int stride = header.slotStride();
        int table = header.slotTableOffset();
        if (count < 1 || count > MAX_SLOTS) {
            throw new IOException("control region " + device + ": slot_count " + Integer.toUnsignedString(count)
                    + " is not 1.." + MAX_SLOTS);
        }
        if (stride < BackendSlotFlyweight.LENGTH || stride % 8 != 0 || stride > SIZE) {
            throw new IOException("control region " + device + ": slot_stride " + Integer.toUnsignedString(stride)
                    + " is not a multiple of 8 of at least " + BackendSlotFlyweight.LENGTH);
        }
        if (table < BackendControlFlyweight.SLOTS_OFFSET || table % 8 != 0 || (long) table + (long) count * stride > SIZE) {
            throw new IOException("control region " + device + ": slot table at " + Integer.toUnsignedString(table) + " of "
                    + count + " slots of " + stride + " bytes does not fit between " + BackendControlFlyweight.SLOTS_OFFSET
                    + " and " + SIZE);
        }
        slots = new BackendSlotFlyweight[count];
        for (int i = 0; i < count; i++) {
            slots[i] = new BackendSlotFlyweight().wrap(buffer, table + i * stride);
        }
    }

    /** Whether {@code device} looks like a control region: exactly 1 MiB, BACKEND_MAGIC, control version 1. */
    public static boolean isCandidate(IvshmemDevice device) {
        if (device.size() != SIZE) {
            return false;
        }
        try (FileChannel channel = FileChannel.open(device.memory(), StandardOpenOption.READ)) {
            MappedByteBuffer first = channel.map(FileChannel.MapMode.READ_ONLY, 0, BackendControlFlyweight.SLOTS_OFFSET);
            try {
                BackendControlFlyweight h = new BackendControlFlyweight().wrap(new UnsafeBuffer(first), 0);
                return h.magic() == BackendControlFlyweight.BACKEND_MAGIC
                        && h.controlVersion() == BackendControlFlyweight.BACKEND_CONTROL_VERSION;
            } finally {
                IoUtil.unmap(first);
            }
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /**
     * The one control region among {@code devices}.
     *
     * @return null when there is none (yet)
     * @throws Refused when there is more than one: which one is this domain's cannot be told, so none is served
     */
    public static IvshmemDevice locate(List<IvshmemDevice> devices) throws Refused {
        List<IvshmemDevice> candidates = new ArrayList<>();
        for (IvshmemDevice d : devices) {
            if (isCandidate(d)) {
                candidates.add(d);
            }
        }
        if (candidates.size() > 1) {
            throw new Refused(candidates, candidates.size() + " ivshmem devices look like a back-end control region (1 MiB, "
                    + "magic IVCUDABE): " + candidates.stream().map(IvshmemDevice::address).toList() + "; a back-end domain "
                    + "has exactly one, so this agent serves none (check the domain's <shmem> devices and slot size)");
        }
        return candidates.isEmpty() ? null : candidates.get(0);
    }

    /** Writes {@code message} into {@code device}'s agent_message: what the host's status shows of a refusal. */
    public static void tell(IvshmemDevice device, String message) {
        try (FileChannel channel = FileChannel.open(device.memory(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MappedByteBuffer first = channel.map(FileChannel.MapMode.READ_WRITE, 0, BackendControlFlyweight.SLOTS_OFFSET);
            try {
                new BackendControlFlyweight().wrap(new UnsafeBuffer(first), 0).agentMessage(message);
            } finally {
                IoUtil.unmap(first);
            }
        } catch (IOException | RuntimeException e) {
            // the refusal is still on stderr and in the log
        }
    }

    /** Maps {@code device} read-write and checks its geometry. */
    public static ControlRegion open(IvshmemDevice device) throws IOException {
        MappedByteBuffer mapping;
        try (FileChannel channel = FileChannel.open(device.memory(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            mapping = channel.map(FileChannel.MapMode.READ_WRITE, 0, SIZE);
        }
        try {
            return new ControlRegion(device, mapping);
        } catch (IOException e) {
            IoUtil.unmap(mapping);
            throw e;
        }
    }

    public IvshmemDevice device() {
        return device;
    }

    public Path path() {
        return device.memory();
    }

    public BackendControlFlyweight header() {
        return header;
    }

    public int slotCount() {
        return slots.length;
    }

    public BackendSlotFlyweight slot(int index) {
        return slots[index];
    }

    @Override
    public void close() {
        IoUtil.unmap(mapping);
    }

    /** More than one control region: the agent refuses to serve any (and says so in each). */
    public static final class Refused extends Exception {
        private final transient List<IvshmemDevice> candidates;

        Refused(List<IvshmemDevice> candidates, String message) {
            super(message);
            this.candidates = List.copyOf(candidates);
        }

        public List<IvshmemDevice> candidates() {
            return candidates;
        }
    }
}
