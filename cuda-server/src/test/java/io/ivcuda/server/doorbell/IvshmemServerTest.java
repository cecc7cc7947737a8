package io.ivcuda.server.doorbell;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The server against a client that follows QEMU's ivshmem-spec, message by message. */
class IvshmemServerTest {

    private static final int VECTORS = 3;
    private static final long REGION_SIZE = 1 << 20;

    @TempDir
    Path dir;
    private Path socket;
    private int regionFd;
    private final CountDownLatch joined = new CountDownLatch(1);
    private final CountDownLatch left = new CountDownLatch(1);
    private final IvshmemServer.Listener listener = new IvshmemServer.Listener() {
        @Override
        public void peerJoined(PeerCredentials peer) {
            joined.countDown();
        }

        @Override
        public void peerLeft(PeerCredentials peer) {
            left.countDown();
        }
    };

    @BeforeEach
    void region() throws IOException {
        Path region = dir.resolve("region");
        try (var f = new java.io.RandomAccessFile(region.toFile(), "rw")) {
            f.setLength(REGION_SIZE);
        }
        regionFd = NativeFiles.openReadWrite(region);
        socket = dir.resolve("s.sock");
    }

    @AfterEach
    void closeRegion() {
        NativeFiles.close(regionFd);
    }

    /** What QEMU learns from the greeting. */
    private record Greeting(long peerId, int regionFd, int[] serverFds, int[] ownFds) {
    }

    private static Greeting readGreeting(int fd) {
        UnixSockets.Message version = UnixSockets.receive(fd);
        assertEquals(0, version.value(), "protocol version");
        assertEquals(-1, version.fd());
        UnixSockets.Message id = UnixSockets.receive(fd);
        assertEquals(-1, id.fd(), "the peer id comes without a descriptor");
        UnixSockets.Message shm = UnixSockets.receive(fd);
        assertEquals(-1, shm.value(), "shared memory message carries -1");
        assertTrue(shm.fd() >= 0, "shared memory message carries a descriptor");
        int[] server = new int[VECTORS];
        for (int v = 0; v < VECTORS; v++) {
            UnixSockets.Message m = UnixSockets.receive(fd);
            assertEquals(IvshmemServer.SERVER_PEER_ID, m.value(), "other peer's id, vector " + v);
            assertTrue(m.fd() >= 0);
            server[v] = m.fd();
        }
        int[] own = new int[VECTORS];
        for (int v = 0; v < VECTORS; v++) {
            UnixSockets.Message m = UnixSockets.receive(fd);
            assertEquals(id.value(), m.value(), "own id, vector " + v);
            assertTrue(m.fd() >= 0);
            own[v] = m.fd();
        }
        return new Greeting(id.value(), shm.fd(), server, own);
    }

    @Test
    void greetsQemuAsTheSpecSaysAndCarriesBothDirections() throws Exception {
        try (IvshmemServer server = IvshmemServer.start(socket, regionFd, VECTORS, PeerPolicy.ANY, listener)) {
            int client = UnixSockets.connect(socket);
            Greeting g = readGreeting(client);
            assertEquals(IvshmemServer.GUEST_PEER_ID, g.peerId());
            assertEquals(REGION_SIZE, Files.size(Path.of("/proc/self/fd/" + g.regionFd())),
                    "the descriptor is the region");
            assertTrue(joined.await(5, TimeUnit.SECONDS));
            assertEquals(ProcessHandle.current().pid(), server.peer().pid());

            // Guest rings Doorbell = 0 << 16 | 2: QEMU signals the server's eventfd of vector 2.
            EventFd.adopt(g.serverFds()[2]).signal();
            assertTrue(server.hostVector(2).await(5000), "vector 2 woke the server");
            assertFalse(server.hostVector(1).await(50), "vector 1 did not");

            // Server interrupts the guest on vector 1: QEMU sees its own eventfd of vector 1.
            server.interruptGuest(1);
            assertTrue(EventFd.adopt(g.ownFds()[1]).await(5000));
            assertFalse(EventFd.adopt(g.ownFds()[0]).await(50));

            // A second QEMU is refused while the first is connected.
            int intruder = UnixSockets.connect(socket);
            assertNull(UnixSockets.receive(intruder), "second peer gets end of stream, no greeting");
            Posix.close(intruder);

            Posix.close(client);
            assertTrue(left.await(5, TimeUnit.SECONDS), "server noticed QEMU leaving");
            assertNull(server.peer());
        }
        assertFalse(Files.exists(socket), "socket removed on close");
    }

    @Test
    void refusesAPeerOfTheWrongUser() throws Exception {
        int myUid = (int) new com.sun.security.auth.module.UnixSystem().getUid();
        try (IvshmemServer server = IvshmemServer.start(socket, regionFd, VECTORS, new PeerPolicy(myUid + 1, null),
                listener)) {
            int client = UnixSockets.connect(socket);
            assertNull(UnixSockets.receive(client), "refused: closed before any greeting");
            Posix.close(client);
            assertNull(server.peer());
        }
    }

    @Test
    void refusesAProcessThatIsNotOurDomainsQemu() throws Exception {
        PeerPolicy policy = new PeerPolicy(-1, "6f1c2a9e-3c55-4a8e-9d3a-0c2b7a1d9e42");
        try (IvshmemServer server = IvshmemServer.start(socket, regionFd, VECTORS, policy, listener)) {
            int client = UnixSockets.connect(socket);
            assertNull(UnixSockets.receive(client), "refused: closed before any greeting");
            Posix.close(client);
            assertNull(server.peer());
        }
    }

    @Test
    void refusesToReplaceARegularFile() throws Exception {
        Files.writeString(socket, "not a socket");
        assertThrows(IOException.class, () -> IvshmemServer.start(socket, regionFd, VECTORS, PeerPolicy.ANY, listener));
        assertTrue(Files.exists(socket));
    }

    @Test
    void rejectsMoreVectorsThanQemuAccepts() {
        assertThrows(IllegalArgumentException.class,
                () -> IvshmemServer.start(socket, regionFd, 65, PeerPolicy.ANY, listener));
    }
}
