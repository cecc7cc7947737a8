package io.ivcuda.server.doorbell;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Memory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The back-end slot's relay against two peers that follow QEMU's ivshmem-spec message by message: which id each
 * gets, that the descriptors wire the two directions, that either may come first, that a peer that leaves and
 * comes back is wired again through the eventfds the other holds (nobody is told of a departure: QEMU 7.2 corrupts
 * its heap on an announcement after one), and what a hostile peer gets.
 */
class IvshmemRelayTest {

    private static final int VECTORS = 3;
    private static final long REGION_SIZE = 1 << 20;

    @TempDir
    Path dir;
    private Path socket;
    private Path regionPath;
    private int regionFd;
    /** The ids the next connections may take, in order (all connections come from this test's pid). */
    private final ConcurrentLinkedDeque<IvshmemRelay.Admission> admissions = new ConcurrentLinkedDeque<>();
    private final IvshmemRelay.Roles roles = who -> {
        IvshmemRelay.Admission next = admissions.pollFirst();
        return next != null ? next : IvshmemRelay.Admission.refused("no admission queued for pid " + who.pid());
    };
    private final List<Peer> opened = new ArrayList<>();

    @BeforeEach
    void region() throws IOException {
        regionPath = dir.resolve("slot0");
        try (var f = new java.io.RandomAccessFile(regionPath.toFile(), "rw")) {
            f.setLength(REGION_SIZE);
        }
        regionFd = NativeFiles.openReadWrite(regionPath);
        socket = dir.resolve("relay.sock");
    }

    @AfterEach
    void closeAll() {
        opened.forEach(Peer::close);
        NativeFiles.close(regionFd);
    }

    /** A QEMU as the spec describes its side: the greeting, with the other id's eventfds and then its own. */
    private final class Peer {
        final int fd;
        final long id;
        final int shmFd;
        final int[] own = new int[VECTORS];
        /** The other peer's eventfds as last announced (-1: none). */
        final int[] other = {-1, -1, -1};
        int otherCount;
        boolean closed;

        Peer(IvshmemRelay.Admission as) {
            admissions.addLast(as);
            fd = UnixSockets.connect(socket);
            opened.add(this);
            UnixSockets.Message version = receive(5000);
            assertEquals(IvshmemServer.PROTOCOL_VERSION, version.value());
            assertEquals(-1, version.fd());
            UnixSockets.Message idMessage = receive(5000);
            assertEquals(-1, idMessage.fd(), "the peer id comes without a descriptor");
            id = idMessage.value();
            UnixSockets.Message shm = receive(5000);
            assertEquals(-1, shm.value());
            shmFd = shm.fd();
            assertTrue(shmFd >= 0, "the region comes with the third message");
            readAnnouncement(); // whether that peer is connected or not
            for (int v = 0; v < VECTORS; v++) {
                UnixSockets.Message m = receive(5000);
                assertEquals(id, m.value(), "own vector " + v);
                assertTrue(m.fd() >= 0);
                own[v] = m.fd();
            }
        }

        long otherId() {
            return 1 - id;
        }

        /** The other id's eventfds: its id with one descriptor per vector, in vector order. */
        void readAnnouncement() {
            for (int v = 0; v < VECTORS; v++) {
                UnixSockets.Message m = receive(5000);
                assertEquals(otherId(), m.value(), "the other peer's id, vector " + v);
                assertTrue(m.fd() >= 0, "the other peer's vector " + v + " comes with its eventfd");
                other[v] = m.fd();
            }
            otherCount++;
        }

        /** This guest writes {@code otherId << 16 | vector} to Doorbell: QEMU signals the other's eventfd. */
        void ring(int vector) {
            EventFd.adopt(other[vector]).signal();
        }

        /** Whether MSI-X {@code vector} fired in this guest: its own eventfd was signalled. */
        boolean interrupted(int vector, int timeoutMs) {
            return EventFd.adopt(own[vector]).await(timeoutMs);
        }

        UnixSockets.Message receive(int timeoutMs) {
            assertTrue(readable(timeoutMs), "a message within " + timeoutMs + " ms");
            return UnixSockets.receive(fd);
        }

        /** True when the relay sent something (or closed) within the timeout. */
        boolean readable(int timeoutMs) {
            Memory p = new Memory(8);
            p.setInt(0, fd);
            p.setShort(4, Posix.POLLIN);
            p.setShort(6, (short) 0);
            return Posix.poll(p, 1, timeoutMs) > 0;
        }

        void close() {
            if (closed) {
                return;
            }
            closed = true;
            Posix.close(fd);
            Posix.close(shmFd);
            for (int v = 0; v < VECTORS; v++) {
                Posix.close(own[v]);
                if (other[v] >= 0) {
                    Posix.close(other[v]);
                }
            }
        }
    }

    private static IvshmemRelay.Admission backend() {
        return IvshmemRelay.Admission.as(IvshmemRelay.BACKEND_PEER_ID);
    }

    private static IvshmemRelay.Admission frontend() {
        return IvshmemRelay.Admission.as(IvshmemRelay.FRONTEND_PEER_ID);
    }

    /** Both directions work: the front-end's ring is the back-end's interrupt and the reverse, vector by vector. */
    private static void assertWired(Peer back, Peer front) {
        front.ring(2);
        assertTrue(back.interrupted(2, 5000), "the front-end's ring on vector 2 is MSI-X 2 of the back-end's device");
        assertFalse(back.interrupted(1, 50), "vector 1 did not fire");
        back.ring(0);
        assertTrue(front.interrupted(0, 5000), "the back-end's ring on vector 0 is MSI-X 0 of the front-end");
        assertFalse(front.interrupted(2, 50), "vector 2 did not fire");
    }

    private static void assertSameRegion(Path region, Peer peer) throws IOException {
        assertEquals(region.toRealPath(), Path.of("/proc/self/fd/" + peer.shmFd).toRealPath(), "the region is the slot's file");
    }

    @Test
    void backEndFirstThenFrontEndKeepTheHostServedIds() throws Exception {
        try (IvshmemRelay relay = IvshmemRelay.start(socket, regionFd, VECTORS, roles)) {
            Peer back = new Peer(backend());
            assertEquals(0, back.id, "the back-end's slot device is peer 0: the id a front-end's guest library rings");
            assertFalse(back.readable(100), "nothing more while it is alone");
            Peer front = new Peer(frontend());
            assertEquals(1, front.id, "the front-end is peer 1, as with a host-served server");
            assertFalse(back.readable(100), "the back-end holds the front-end's eventfds already: nothing more to say");
            assertSameRegion(regionPath, back);
            assertSameRegion(regionPath, front);
            assertWired(back, front);
            assertEquals(ProcessHandle.current().pid(), relay.peer(0).pid());
        }
        assertFalse(Files.exists(socket), "the socket is removed on close");
    }

    /** ivshmem-provisioner status reads who is connected from the peers file the relay keeps. */
    @Test
    void thePeersFileSaysWhoIsConnectedAndGoesWithTheRelay() throws Exception {
        Path peers = dir.resolve("relay.peers");
        String me = ProcessHandle.current().pid() + " " + Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        try (IvshmemRelay relay = IvshmemRelay.start(socket, regionFd, VECTORS, roles)) {
            relay.recordPeers(peers);
            assertEquals("", Files.readString(peers), "nobody yet");
            Peer back = new Peer(backend());
            waitFor(() -> read(peers).equals("0 " + me + "\n"));
            Peer front = new Peer(frontend());
            waitFor(() -> read(peers).equals("0 " + me + "\n1 " + me + "\n"));
            back.close();
            waitFor(() -> read(peers).equals("1 " + me + "\n"));
            front.close();
            waitFor(() -> read(peers).equals(""));
        }
        assertFalse(Files.exists(peers), "removed with the relay");
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            return "unreadable: " + e;
        }
    }

    @Test
    void frontEndFirstIsWiredWhenTheBackEndComes() throws Exception {
        try (IvshmemRelay relay = IvshmemRelay.start(socket, regionFd, VECTORS, roles)) {
            Peer front = new Peer(frontend());
            assertEquals(1, front.id);
            Peer back = new Peer(backend());
            assertEquals(0, back.id);
            assertFalse(front.readable(100));
            assertWired(back, front);
        }
    }

    @Test
    void aBackEndThatRestartsIsWiredAgainThroughTheEventfdsTheFrontEndHolds() throws Exception {
        try (IvshmemRelay relay = IvshmemRelay.start(socket, regionFd, VECTORS, roles)) {
            Peer back = new Peer(backend());
            Peer front = new Peer(frontend());
            back.close();
            waitFor(() -> relay.peer(0) == null);
            assertFalse(front.readable(200), "the front-end is not told: no disconnect, no announcement later");
            front.ring(1); // for nobody: the back-end is away

            Peer again = new Peer(backend());
            assertEquals(0, again.id, "the restarted back-end takes peer 0 again");
            assertEquals(2, relay.connections(0));
            assertFalse(again.interrupted(1, 50), "a ring from before it connected is no interrupt of the new back-end");
            assertFalse(front.readable(200), "still nothing to tell the front-end");
            assertWired(again, front);

            // and the front-end restarting is the same the other way
            front.close();
            waitFor(() -> relay.peer(1) == null);
            Peer front2 = new Peer(frontend());
            assertFalse(again.readable(200));
            assertWired(again, front2);
        }
    }

    @Test
    void aSecondPeerForATakenIdIsClosedWithoutAGreeting() throws Exception {
        try (IvshmemRelay relay = IvshmemRelay.start(socket, regionFd, VECTORS, roles)) {
            Peer back = new Peer(backend());
            admissions.addLast(backend());
            int intruder = UnixSockets.connect(socket);
            assertNull(UnixSockets.receive(intruder), "refused: end of stream, no greeting");
            Posix.close(intruder);
            assertFalse(back.readable(100), "the connected peer heard nothing of it");
            assertEquals(1, relay.connections(0));
        }
    }

    @Test
    void aProcessTheRolesRefuseGetsNothing() throws Exception {
        try (IvshmemRelay relay = IvshmemRelay.start(socket, regionFd, VECTORS, roles)) {
            admissions.addLast(IvshmemRelay.Admission.refused("not the QEMU of either domain"));
            int stranger = UnixSockets.connect(socket);
            assertNull(UnixSockets.receive(stranger), "refused: end of stream before any message");
            Posix.close(stranger);
            // an out-of-range id from the roles is a refusal too, never an array index
            admissions.addLast(IvshmemRelay.Admission.as(7));
            int odd = UnixSockets.connect(socket);
            assertNull(UnixSockets.receive(odd));
            Posix.close(odd);
            assertNull(relay.peer(0));
            assertNull(relay.peer(1));
        }
    }

    @Test
    void rolesThatFailRefuseAndTheRelayGoesOn() throws Exception {
        IvshmemRelay.Roles failing = who -> {
            throw new IllegalStateException("control region unreadable");
        };
        try (IvshmemRelay relay = IvshmemRelay.start(socket, regionFd, VECTORS, failing)) {
            int client = UnixSockets.connect(socket);
            assertNull(UnixSockets.receive(client));
            Posix.close(client);
            int again = UnixSockets.connect(socket);
            assertNull(UnixSockets.receive(again), "still listening after a failure");
            Posix.close(again);
        }
    }

    @Test
    void aPeerThatSendsAnythingIsDropped() throws Exception {
        try (IvshmemRelay relay = IvshmemRelay.start(socket, regionFd, VECTORS, roles)) {
            Peer back = new Peer(backend());
            Peer front = new Peer(frontend());
            // QEMU never writes on the socket; a forged "I am peer 0" message is no request, it ends the peer
            UnixSockets.send(front.fd, 0, front.own[0]);
            assertTrue(front.readable(5000));
            // closed with our message unread: end of stream or a reset, never a reply
            try {
                assertNull(UnixSockets.receive(front.fd), "the sender's connection is closed");
            } catch (com.sun.jna.LastErrorException reset) {
                assertEquals(104, reset.getErrorCode(), "ECONNRESET");
            }
            waitFor(() -> relay.peer(1) == null);
            assertNotNull(relay.peer(0), "the back-end stays");
            assertFalse(back.readable(100), "and hears nothing of it");
        }
    }

    @Test
    void refusesToReplaceARegularFileAndMoreVectorsThanQemuTakes() throws Exception {
        Files.writeString(socket, "not a socket");
        assertThrows(IOException.class, () -> IvshmemRelay.start(socket, regionFd, VECTORS, roles));
        assertTrue(Files.exists(socket));
        Files.delete(socket);
        assertThrows(IllegalArgumentException.class, () -> IvshmemRelay.start(socket, regionFd, 65, roles));
        assertThrows(IllegalArgumentException.class, () -> IvshmemRelay.start(socket, regionFd, 0, roles));
    }

    private static void waitFor(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < until, "condition within 5 s");
            Thread.sleep(10);
        }
    }
}
