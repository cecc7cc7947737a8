package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.IvcudaConfigException;
import io.ivcuda.common.RegionKind;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.region.Region;
import io.ivcuda.wire.HeaderFlyweight;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code region.kind=device}: a back-end domain's server maps a device's memory file (sysfs {@code resource2};
 * here a regular file, reached through a symlink as a host-side stand-in reaches /dev/shm) that it must never
 * create, resize or remove, and keeps the slot's identity the host wrote into the header (§12).
 */
class DeviceRegionTest {
    static final long SIZE = 16L << 20;

    @TempDir
    Path dir;

    private ServerConfig config(Path region, String... extra) throws IvcudaConfigException {
        List<String> sets = new java.util.ArrayList<>(List.of("region.path=" + region, "region.size=" + SIZE,
                "region.kind=device", "channel.count=4", "backend=host-memory"));
        sets.addAll(List.of(extra));
        return ServerConfig.load(List.of(), sets);
    }

    private static Path sized(Path file, long size) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(size);
        }
        return file;
    }

    @Test
    void kindIsFileUnlessSaidAndDeviceDoorbellNeedsTheInterruptDaemonsSocket() throws Exception {
        assertEquals(RegionKind.FILE, ServerConfig.load(List.of(), List.of("region.path=/x")).regionKind());
        assertEquals(RegionKind.DEVICE, config(dir.resolve("r")).regionKind());
        assertTrue(config(dir.resolve("r"), "mode=doorbell", "doorbell.socket=/s").doorbell());
        IvcudaConfigException e = assertThrows(IvcudaConfigException.class, () -> config(dir.resolve("r"), "mode=doorbell"));
        assertTrue(e.getMessage().contains("doorbell.socket") && e.getMessage().contains("ivcuda-guest-irqd"), e.getMessage());
    }

    @Test
    void aDoorbellSlotWithoutInterruptsIsServedByPollingAndSaysPlain() throws Exception {
        Path memory = sized(java.nio.file.Files.createDirectories(dir.resolve("devices/0000:00:05.0")).resolve("resource2"), SIZE);
        CudaServer server = new CudaServer(config(memory, "mode=doorbell", "doorbell.vectors=4",
                "doorbell.socket=" + dir.resolve("no-daemon.sock")));
        try {
            server.start();
            io.ivcuda.wire.HeaderFlyweight header = new io.ivcuda.wire.HeaderFlyweight();
            try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(memory, java.nio.file.StandardOpenOption.READ)) {
                header.wrap(new org.agrona.concurrent.UnsafeBuffer(ch.map(java.nio.channels.FileChannel.MapMode.READ_ONLY, 0, 4096)), 0);
                assertEquals(0, header.doorbellVectors(), "the front-end's library is told plain mode: it polls");
                assertEquals(0, header.featureBits() & io.ivcuda.wire.HeaderFlyweight.FEATURE_DOORBELL);
                assertEquals(io.ivcuda.wire.HeaderFlyweight.STATE_READY, header.serverState());
            }
        } finally {
            server.close();
        }
    }

    @Test
    void anAbsentDeviceFileIsRefusedAndNotCreated() throws Exception {
        Path absent = dir.resolve("devices/0000:00:05.0/resource2");
        CudaServer server = new CudaServer(config(absent));
        IOException e = assertThrows(IOException.class, server::start);
        assertTrue(e.getMessage().contains(absent.toString()) && e.getMessage().contains("does not exist"), e.getMessage());
        assertFalse(Files.exists(absent));
        server.close();
    }

    @Test
    void aDeviceFileOfAnotherSizeIsRefusedAndNotResized() throws Exception {
        Path small = sized(dir.resolve("resource2"), SIZE / 2);
        IOException e = assertThrows(IOException.class, () -> new CudaServer(config(small)).start());
        assertTrue(e.getMessage().contains(small + " has " + (SIZE / 2) + " bytes"), e.getMessage());
        assertEquals(SIZE / 2, Files.size(small));
        Path directory = Files.createDirectory(dir.resolve("dir"));
        e = assertThrows(IOException.class, () -> Region.openDevice(directory, SIZE));
        assertTrue(e.getMessage().contains("not a regular file"), e.getMessage());
    }

    @Test
    void servesTheDeviceFileKeepsTheSlotIdentityAndLeavesTheFile() throws Exception {
        Path shm = sized(dir.resolve("ivcuda-b-slot1"), SIZE);
        Path resource2 = Files.createSymbolicLink(dir.resolve("resource2"), shm);
        try (Region host = Region.openDevice(shm, SIZE)) {
            // what the host's hook writes into a slot region's header before the back-end's server starts
            HeaderFlyweight h = new HeaderFlyweight();
            h.wrap(host.view(0, HeaderFlyweight.LENGTH), 0);
            h.slotTokenLo(0x1111_2222_3333_4444L).slotTokenHi(0x5555_6666_7777_8888L).slotIndex(1);
        }
        CudaServer server = new CudaServer(config(resource2));
        server.start();
        try (FakeGuest guest = new FakeGuest(shm, SIZE)) {
            HeaderFlyweight h = new HeaderFlyweight();
            h.wrap(guest.header, 0);
            assertEquals(HeaderFlyweight.STATE_READY, h.serverState());
            assertEquals(0x1111_2222_3333_4444L, h.slotTokenLo());
            assertEquals(0x5555_6666_7777_8888L, h.slotTokenHi());
            assertEquals(1, h.slotIndex());
            assertEquals(CuResult.SUCCESS, guest.claim(0, 77L << 32 | 1).hello().result());
        } finally {
            server.close();
        }
        assertTrue(Files.isSymbolicLink(resource2));
        assertEquals(SIZE, Files.size(shm));
        try (Region after = Region.openDevice(resource2, SIZE)) {
            HeaderFlyweight h = new HeaderFlyweight();
            h.wrap(after.view(0, HeaderFlyweight.LENGTH), 0);
            assertEquals(HeaderFlyweight.STATE_STOPPED, h.serverState());
            assertEquals(0x5555_6666_7777_8888L, h.slotTokenHi());
        }
    }
}
