package io.ivcuda.backend;

import io.ivcuda.wire.BackendControlFlyweight;
import io.ivcuda.wire.BackendSlotFlyweight;
import io.ivcuda.wire.HeaderFlyweight;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A back-end domain as the agent sees it, made of ordinary files: a sysfs tree ({@code bus/pci/devices/ADDR/vendor,
 * device, resource2}) whose control region and slot regions the test writes as the host's hook would (tokens, host
 * fields, ASSIGNED/FREE with the generations bumped in the host's order).
 */
final class FakeBackend implements AutoCloseable {
    static final long SLOT_SIZE = 4L << 20;
    static final String BACKEND_UUID = "0b0b0b0b-1111-2222-3333-444455556666";

    final Path root;
    final Path control;
    final List<Path> slotFiles = new ArrayList<>();
    private final List<MappedByteBuffer> mappings = new ArrayList<>();
    final BackendControlFlyweight header = new BackendControlFlyweight();
    final BackendSlotFlyweight[] slots;

    FakeBackend(Path root, int slotCount) throws IOException {
        this.root = root;
        // a device that is not ivshmem, with a 1 MiB BAR: never looked at
        device("0000:00:02.0", "0x1234", "0x1111", 1L << 20);
        control = device("0000:00:03.0", "0x1af4", "0x1110", ControlRegion.SIZE);
        UnsafeBuffer c = map(control, ControlRegion.SIZE);
        header.wrap(c, 0);
        header.magic(BackendControlFlyweight.BACKEND_MAGIC).controlVersion(BackendControlFlyweight.BACKEND_CONTROL_VERSION)
                .slotCount(slotCount).slotStride(BackendSlotFlyweight.LENGTH).slotTableOffset(BackendControlFlyweight.SLOTS_OFFSET)
                .backendUuid(BACKEND_UUID);
        slots = new BackendSlotFlyweight[slotCount];
        for (int k = 0; k < slotCount; k++) {
            slots[k] = new BackendSlotFlyweight().wrap(c, BackendControlFlyweight.SLOTS_OFFSET + k * BackendSlotFlyweight.LENGTH);
            // slot devices in another order than the slots: the token, not the address, says which is which
            Path file = device(String.format("0000:00:%02x.0", 0x10 + slotCount - k), "0x1af4", "0x1110", SLOT_SIZE);
            slotFiles.add(file);
            long lo = 0x5107_0000_0000_0000L | (k + 1);
            long hi = 0x7e57_7e57_0000_0000L | (k + 1);
            slots[k].tokenLo(lo).tokenHi(hi).regionSize(SLOT_SIZE);
            writeSlotHeader(k, lo, hi);
        }
    }

    /** {@code ROOT/bus/pci/devices/ADDR} with its vendor, device and a BAR2 file of {@code size} bytes. */
    Path device(String address, String vendor, String device, long size) throws IOException {
        Path dir = Files.createDirectories(root.resolve("bus/pci/devices").resolve(address));
        Files.writeString(dir.resolve("vendor"), vendor + "\n", StandardCharsets.US_ASCII);
        Files.writeString(dir.resolve("device"), device + "\n", StandardCharsets.US_ASCII);
        Path bar = dir.resolve("resource2");
        try (RandomAccessFile f = new RandomAccessFile(bar.toFile(), "rw")) {
            f.setLength(size);
        }
        return bar;
    }

    UnsafeBuffer map(Path file, long size) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
            mappings.add(m);
            return new UnsafeBuffer(m);
        }
    }

    /** What the hook writes into a slot region's header (0xC00: token and index). */
    void writeSlotHeader(int k, long lo, long hi) throws IOException {
        HeaderFlyweight h = new HeaderFlyweight().wrap(map(slotFiles.get(k), HeaderFlyweight.LENGTH), 0);
        h.slotTokenLo(lo).slotTokenHi(hi).slotIndex(k);
    }

    HeaderFlyweight slotHeader(int k) throws IOException {
        return new HeaderFlyweight().wrap(map(slotFiles.get(k), HeaderFlyweight.LENGTH), 0);
    }

    /** The front-end's hook at prepare: host fields, then ASSIGNED, generation+1, host_generation+1. */
    int assign(int k, String name, long quota) {
        BackendSlotFlyweight s = slots[k];
        s.frontendUuid("f0f0f0f0-0000-0000-0000-00000000000" + k).frontendName(name).quotaBytes(quota).computeShare(0).device("0");
        s.stateRelease(BackendSlotFlyweight.SLOT_ASSIGNED);
        int g = s.generation() + 1;
        s.generationRelease(g);
        header.addHostGenerationRelease(1);
        return g;
    }

    /** The front-end's hook at release: FREE, generation+1, host_generation+1. */
    void free(int k) {
        BackendSlotFlyweight s = slots[k];
        s.stateRelease(BackendSlotFlyweight.SLOT_FREE);
        s.generationRelease(s.generation() + 1);
        header.addHostGenerationRelease(1);
    }

    static void await(String what, long ms, BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + ms * 1_000_000;
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + ms + " ms waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    @Override
    public void close() {
        for (MappedByteBuffer m : mappings) {
            IoUtil.unmap(m);
        }
    }
}
