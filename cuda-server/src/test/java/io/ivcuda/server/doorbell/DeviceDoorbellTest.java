package io.ivcuda.server.doorbell;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A back-end slot's server as a guest of its doorbell device: the interrupt daemon's message checked as §8.1 says, the
 * front-end's rings arriving on the daemon's eventfds, and the server's ring written to BAR0's Doorbell register.
 * The daemon is a stand-in that sends what ivcuda-guest-irqd sends; the device is a sysfs-like folder of files.
 */
class DeviceDoorbellTest {
    private static final String ADDRESS = "0000:00:05.0";
    private static final int VECTORS = 3;

    @TempDir
    Path dir;
    private Path resource2;
    private Path resource0;
    private Path socket;
    private EventFd[] daemonVectors;
    private Thread daemon;

    @BeforeEach
    void device() throws Exception {
        Path device = Files.createDirectories(dir.resolve("devices").resolve(ADDRESS));
        resource2 = device.resolve("resource2");
        resource0 = device.resolve("resource0");
        try (RandomAccessFile f = new RandomAccessFile(resource2.toFile(), "rw")) {
            f.setLength(1 << 20);
        }
        try (RandomAccessFile f = new RandomAccessFile(resource0.toFile(), "rw")) {
            f.setLength(256);
        }
        socket = dir.resolve("irq.sock");
        daemonVectors = new EventFd[VECTORS];
        for (int v = 0; v < VECTORS; v++) {
            daemonVectors[v] = EventFd.create();
        }
    }

    @AfterEach
    void stop() throws Exception {
        if (daemon != null) {
            daemon.join(5000);
        }
        for (EventFd v : daemonVectors) {
            v.close();
        }
    }

    /** ivcuda-guest-irqd's message: magic, u32 vectors, u32 flags, char[32] address; eventfds attached. */
    private static byte[] message(String magic, int vectors, String address) {
        ByteBuffer b = ByteBuffer.allocate(DeviceDoorbell.MESSAGE_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        b.put(magic.getBytes(StandardCharsets.US_ASCII)).putInt(8, vectors).putInt(12, 0);
        b.position(16);
        b.put(address.getBytes(StandardCharsets.US_ASCII));
        return b.array();
    }

    /** Serves one client with {@code bytes} and {@code fds}, then keeps the connection until the client closes it. */
    private void daemonSends(byte[] bytes, int[] fds) throws IOException {
        ListeningSocket listening = ListeningSocket.open(socket);
        daemon = new Thread(() -> {
            int client = listening.accept();
            UnixSockets.send(client, bytes, fds);
            UnixSockets.receive(client); // until the server closes its end
            Posix.close(client);
            listening.close();
        });
        daemon.start();
    }

    private int[] daemonFds(int count) {
        int[] fds = new int[count];
        for (int v = 0; v < count; v++) {
            fds[v] = daemonVectors[v].fd();
        }
        return fds;
    }

    @Test
    void ringsArriveOnTheDaemonsEventfdsAndTheServerRingsPeerOneThroughBar0() throws Exception {
        daemonSends(message("IVCIRQ01", VECTORS, ADDRESS), daemonFds(VECTORS));
        try (DeviceDoorbell device = DeviceDoorbell.connect(socket, resource2, VECTORS)) {
            assertEquals(VECTORS, device.vectors());
            daemonVectors[1].signal(); // MSI-X 1 of the slot device: the front-end rang 0 << 16 | 1
            assertTrue(device.vector(1).await(5000), "the front-end's ring on vector 1 reaches the server");
            assertFalse(device.vector(0).await(50));
            device.interruptGuest(2);
            ByteBuffer bar0 = ByteBuffer.wrap(Files.readAllBytes(resource0)).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(1 << 16 | 2, bar0.getInt(DeviceDoorbell.DOORBELL_REGISTER),
                    "Doorbell = front-end's peer id 1 << 16 | vector 2");
            device.interruptGuest(2);
            assertEquals(2, device.interruptsSent(2), "the rings to the front-end are counted per vector");
            assertEquals(0, device.interruptsSent(1));
        }
    }

    @Test
    void aDaemonMessageThatDoesNotFitIsRefusedSayingWhy() throws Exception {
        daemonSends(message("IVCIRQ01", VECTORS, ADDRESS), daemonFds(VECTORS));
        IOException vectors = assertThrows(IOException.class, () -> DeviceDoorbell.connect(socket, resource2, 4));
        assertTrue(vectors.getMessage().contains("says 3 vectors with 3 descriptors attached; this server has doorbell.vectors 4"),
                vectors.getMessage());
        daemon.join(5000);

        daemonSends(message("IVCIRQ01", VECTORS, "0000:00:06.0"), daemonFds(VECTORS));
        IOException other = assertThrows(IOException.class, () -> DeviceDoorbell.connect(socket, resource2, VECTORS));
        assertTrue(other.getMessage().contains("serves device 0000:00:06.0, this server maps " + ADDRESS), other.getMessage());
        daemon.join(5000);

        daemonSends(message("NOTIRQ01", VECTORS, ADDRESS), daemonFds(VECTORS));
        IOException magic = assertThrows(IOException.class, () -> DeviceDoorbell.connect(socket, resource2, VECTORS));
        assertTrue(magic.getMessage().contains("(magic)"), magic.getMessage());
        daemon.join(5000);

        daemonSends(message("IVCIRQ01", VECTORS, ADDRESS), daemonFds(2));
        IOException fewer = assertThrows(IOException.class, () -> DeviceDoorbell.connect(socket, resource2, VECTORS));
        assertTrue(fewer.getMessage().contains("3 vectors with 2 descriptors"), fewer.getMessage());
    }

    @Test
    void noDaemonIsACleanRefusal() {
        IOException e = assertThrows(IOException.class, () -> DeviceDoorbell.connect(socket, resource2, VECTORS));
        assertTrue(e.getMessage().contains("is ivcuda-guest-irqd running for this device?"), e.getMessage());
    }
}
