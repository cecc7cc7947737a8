package io.ivcuda.server.doorbell;

import com.sun.jna.Memory;
import io.ivcuda.common.config.ServerKeys;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * This VM's ivshmem server (QEMU docs/specs/ivshmem-spec.rst, "ivshmem-server protocol"):
 * in doorbell mode the cuda-server itself hands QEMU the region and the interrupt
 * eventfds. The server is peer {@value #SERVER_PEER_ID}; the one QEMU allowed to connect
 * becomes peer {@value #GUEST_PEER_ID}. A guest rings the server with
 * {@code Doorbell = 0 << 16 | vector}; the server interrupts the guest by signalling the
 * guest's own eventfd of that vector.
 *
 * <p>The socket must exist before QEMU starts (QEMU fails to start otherwise), and this
 * server must live as long as the VM: QEMU cannot reconnect to a restarted server.
 */
public final class IvshmemServer implements AutoCloseable {

    public static final long PROTOCOL_VERSION = 0;
    public static final long SERVER_PEER_ID = 0;
    public static final long GUEST_PEER_ID = 1;
    /** QEMU's ivshmem accepts at most this many vectors. */
    public static final int MAX_VECTORS = 64;

    private static final Logger LOG = LogManager.getLogger(IvshmemServer.class);

    /** What the VM's peer does. Called on the server's own thread. */
    public interface Listener {
        void peerJoined(PeerCredentials peer);

        void peerLeft(PeerCredentials peer);
    }

    private final ListeningSocket listening;
    private final int regionFd;
    private final EventFd[] hostVectors;
    private final EventFd[] guestVectors;
    private final PeerPolicy policy;
    private final Listener listener;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile PeerCredentials peer;
    private int peerFd = -1;

    private IvshmemServer(ListeningSocket listening, int regionFd, int vectors, PeerPolicy policy, Listener listener) {
        this.listening = listening;
        this.regionFd = regionFd;
        this.policy = policy;
        this.listener = listener;
        this.hostVectors = new EventFd[vectors];
        this.guestVectors = new EventFd[vectors];
        for (int v = 0; v < vectors; v++) {
            hostVectors[v] = EventFd.create();
            guestVectors[v] = EventFd.create();
        }
        this.thread = new Thread(this::serve, "ivshmem-server");
        this.thread.setDaemon(true);
    }

    /**
     * Listens on {@code socketPath} (a stale socket left by a dead server is replaced) and
     * serves QEMU's connection on a thread of its own.
     *
     * @param regionFd the region's file descriptor, sent to QEMU to map as BAR2
     * @param vectors  the domain's {@code <msi vectors>}: QEMU refuses more eventfds than that
     */
    public static IvshmemServer start(Path socketPath, int regionFd, int vectors, PeerPolicy policy,
                                      Listener listener) throws IOException {
        if (vectors < 1 || vectors > MAX_VECTORS) {
            throw new IllegalArgumentException(ServerKeys.DOORBELL_VECTORS.name() + " must be 1.." + MAX_VECTORS + ", not " + vectors);
        }
        IvshmemServer server = new IvshmemServer(ListeningSocket.open(socketPath), regionFd, vectors, policy, listener);
        server.thread.start();
        LOG.info("ivshmem server listening on {} with {} vectors", socketPath, vectors);
        return server;
    }

    /**
     * Connecting needs write permission on the socket: QEMU runs as another user (libvirt-qemu), in the group the
     * hook gave the region file (qemu.group). Mode 0660, that group.
     */
    public static void shareSocketWithGroupOf(Path socket, Path regionFile) throws IOException {
        Files.setPosixFilePermissions(socket, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw----"));
        var group = Files.readAttributes(regionFile, java.nio.file.attribute.PosixFileAttributes.class).group();
        try {
            Files.getFileAttributeView(socket, java.nio.file.attribute.PosixFileAttributeView.class).setGroup(group);
        } catch (IOException e) {
            LOG.warn("doorbell socket {}: cannot give it the region's group {} ({}); QEMU may be refused by the "
                    + "file system", socket, group.getName(), e.getMessage());
        }
    }

    public int vectors() {
        return hostVectors.length;
    }

    /** The eventfd QEMU signals when the guest rings {@code Doorbell = 0 << 16 | vector}. */
    public EventFd hostVector(int vector) {
        return hostVectors[vector];
    }

    /** Raises MSI-X {@code vector} in the guest (a no-op for QEMU while no peer is connected). */
    public void interruptGuest(int vector) {
        guestVectors[vector].signal();
    }

    /** The connected QEMU, or null. */
    public PeerCredentials peer() {
        return peer;
    }

    private void serve() {
        Memory fds = new Memory(24);
        while (running) {
            int count = peerFd >= 0 ? 3 : 2;
            fds.setInt(0, listening.fd());
            fds.setShort(4, Posix.POLLIN);
            fds.setShort(6, (short) 0);
            fds.setInt(8, listening.stopSignal().fd());
            fds.setShort(12, Posix.POLLIN);
            fds.setShort(14, (short) 0);
            fds.setInt(16, peerFd);
            fds.setShort(20, Posix.POLLIN);
            fds.setShort(22, (short) 0);
            int ready = Posix.poll(fds, count, ListeningSocket.POLL_MS);
            if (ready <= 0 || !running) {
                continue;
            }
            if (count == 3 && fds.getShort(22) != 0) {
                dropPeer();
            }
            if ((fds.getShort(6) & Posix.POLLIN) != 0) {
                accept();
            }
        }
    }

    private void accept() {
        int fd = listening.accept();
        if (fd < 0) {
            return;
        }
        PeerCredentials who = UnixSockets.credentials(fd);
        if (peerFd >= 0) {
            LOG.warn("refused pid {} (uid {}) on {}: QEMU pid {} is already connected", who.pid(), who.uid(),
                    listening.path(), peer.pid());
            Posix.close(fd);
            return;
        }
        Optional<String> refusal = policy.refusal(who);
        if (refusal.isPresent()) {
            LOG.warn("refused a connection on {}: {}", listening.path(), refusal.get());
            Posix.close(fd);
            return;
        }
        try {
            handshake(fd);
        } catch (RuntimeException e) {
            LOG.warn("handshake with pid {} failed: {}", who.pid(), e.getMessage());
            Posix.close(fd);
            return;
        }
        peerFd = fd;
        peer = who;
        LOG.info("QEMU pid {} (uid {}) connected as peer {}", who.pid(), who.uid(), GUEST_PEER_ID);
        listener.peerJoined(who);
    }

    /** The spec's greeting, in its order. */
    private void handshake(int fd) {
        UnixSockets.send(fd, PROTOCOL_VERSION, -1);
        UnixSockets.send(fd, GUEST_PEER_ID, -1);
        UnixSockets.send(fd, -1, regionFd);
        for (EventFd v : hostVectors) {
            UnixSockets.send(fd, SERVER_PEER_ID, v.fd());
        }
        for (EventFd v : guestVectors) {
            UnixSockets.send(fd, GUEST_PEER_ID, v.fd());
        }
    }

    private void dropPeer() {
        PeerCredentials who = peer;
        Posix.close(peerFd);
        peerFd = -1;
        peer = null;
        LOG.info("QEMU pid {} disconnected", who.pid());
        listener.peerLeft(who);
    }

    @Override
    public void close() {
        running = false;
        listening.stop(thread);
        if (peerFd >= 0) {
            Posix.close(peerFd);
            peerFd = -1;
        }
        listening.close();
        for (int v = 0; v < hostVectors.length; v++) {
            hostVectors[v].close();
            guestVectors[v].close();
        }
    }
}
