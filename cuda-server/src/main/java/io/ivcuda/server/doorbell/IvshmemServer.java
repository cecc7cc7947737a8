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
    /** A safety net only: {@link #close} wakes the poll through {@link #stopSignal}. */
    private static final int POLL_MS = 60_000;

    /** What the VM's peer does. Called on the server's own thread. */
    public interface Listener {
        void peerJoined(PeerCredentials peer);

        void peerLeft(PeerCredentials peer);
    }

    private final Path socketPath;
    private final int listenFd;
    private final int regionFd;
    private final EventFd[] hostVectors;
    private final EventFd[] guestVectors;
    private final PeerPolicy policy;
    private final Listener listener;
    private final Thread thread;
    private final EventFd stopSignal = EventFd.create();
    private volatile boolean running = true;
    private volatile PeerCredentials peer;
    private int peerFd = -1;

    private IvshmemServer(Path socketPath, int regionFd, int vectors, PeerPolicy policy, Listener listener) {
        this.socketPath = socketPath;
        this.regionFd = regionFd;
        this.policy = policy;
        this.listener = listener;
        this.hostVectors = new EventFd[vectors];
        this.guestVectors = new EventFd[vectors];
        for (int v = 0; v < vectors; v++) {
            hostVectors[v] = EventFd.create();
            guestVectors[v] = EventFd.create();
        }
        this.listenFd = UnixSockets.listen(socketPath);
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
        if (Files.exists(socketPath)) {
            if (!"socket".equals(fileType(socketPath))) {
                throw new IOException(socketPath + " exists and is not a socket; refusing to replace it");
            }
            Files.delete(socketPath);
        }
        IvshmemServer server = new IvshmemServer(socketPath, regionFd, vectors, policy, listener);
        server.thread.start();
        LOG.info("ivshmem server listening on {} with {} vectors", socketPath, vectors);
        return server;
    }

    private static String fileType(Path path) throws IOException {
        Object isOther = Files.readAttributes(path, "isOther", java.nio.file.LinkOption.NOFOLLOW_LINKS).get("isOther");
        return Boolean.TRUE.equals(isOther) ? "socket" : "file";
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
            fds.setInt(0, listenFd);
            fds.setShort(4, Posix.POLLIN);
            fds.setShort(6, (short) 0);
            fds.setInt(8, stopSignal.fd());
            fds.setShort(12, Posix.POLLIN);
            fds.setShort(14, (short) 0);
            fds.setInt(16, peerFd);
            fds.setShort(20, Posix.POLLIN);
            fds.setShort(22, (short) 0);
            int ready = Posix.poll(fds, count, POLL_MS);
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
        int fd;
        try {
            fd = Posix.accept4(listenFd, null, null, Posix.SOCK_CLOEXEC);
        } catch (RuntimeException e) {
            LOG.warn("accept on {} failed: {}", socketPath, e.getMessage());
            return;
        }
        PeerCredentials who = UnixSockets.credentials(fd);
        if (peerFd >= 0) {
            LOG.warn("refused pid {} (uid {}) on {}: QEMU pid {} is already connected", who.pid(), who.uid(),
                    socketPath, peer.pid());
            Posix.close(fd);
            return;
        }
        Optional<String> refusal = policy.refusal(who);
        if (refusal.isPresent()) {
            LOG.warn("refused a connection on {}: {}", socketPath, refusal.get());
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
        stopSignal.signal();
        if (Thread.currentThread() != thread) {
            try {
                thread.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (peerFd >= 0) {
            Posix.close(peerFd);
            peerFd = -1;
        }
        Posix.close(listenFd);
        stopSignal.close();
        for (int v = 0; v < hostVectors.length; v++) {
            hostVectors[v].close();
            guestVectors[v].close();
        }
        try {
            Files.deleteIfExists(socketPath);
        } catch (IOException e) {
            LOG.warn("could not remove {}: {}", socketPath, e.getMessage());
        }
    }
}
