package io.ivcuda.server.doorbell;

import com.sun.jna.Memory;
import java.io.IOException;
import java.nio.file.Path;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The ivshmem server of one back-end service slot in doorbell mode (docs/backend-domains.md, "Doorbell
 * mode through a back-end"): both peers are QEMUs — the back-end's slot device and the front-end's device
 * — and this process only hands out the region and the eventfds (QEMU docs/specs/ivshmem-spec.rst,
 * "ivshmem-server protocol"), it never rings anybody itself.
 *
 * <p>The ids keep the host-served convention, so a front-end's guest library cannot tell the difference:
 * the back-end's slot device is peer {@value #BACKEND_PEER_ID} (the front-end rings {@code 0 << 16 |
 * vector}, which QEMU turns into MSI-X {@code vector} of the back-end's device) and the front-end is peer
 * {@value #FRONTEND_PEER_ID} (the back-end's server rings {@code 1 << 16 | vector}). Which id a connection
 * gets is decided from the kernel's credentials by {@link Roles}, never by what a peer says.
 *
 * <p>Each id's eventfds are made once, when the relay starts, and belong to the id, not to a connection: every
 * QEMU that connects gets the other id's eventfds and then its own, whether the other peer is connected or not,
 * and nobody is ever told that a peer left. So either QEMU may start first, and a back-end that restarts while
 * its front-end runs (or the reverse) is wired again the moment it connects, through the eventfds the other
 * QEMU has held all along — unlike a host-served VM's server, this process stays while peers come and go. Why
 * not the spec's disconnect message and new eventfds at the return: a QEMU that is told peer N left frees that
 * peer's eventfd array but keeps using it when peer N's eventfds are announced again (hw/misc/ivshmem.c,
 * close_peer_eventfds then process_msg_connect; QEMU's own ivshmem-server never reuses an id), which corrupted
 * the front-end QEMU's heap at the back-end's return (QEMU 7.2, vm/backend-doorbell.sh --restart-backend:
 * "malloc(): unsorted double linked list corrupted", the front-end VM aborted). A returning peer's own eventfds
 * are emptied before they are handed over: rings meant for its predecessor are not its interrupts. QEMU never
 * writes on the socket: anything a peer sends, and its hang-up, drops it.
 */
public final class IvshmemRelay implements AutoCloseable {

    public static final int BACKEND_PEER_ID = 0;
    public static final int FRONTEND_PEER_ID = 1;
    private static final int PEERS = 2;

    private static final Logger LOG = LogManager.getLogger(IvshmemRelay.class);

    /** Which peer id a connecting process may take. */
    public interface Roles {
        /** The id ({@link #BACKEND_PEER_ID} or {@link #FRONTEND_PEER_ID}) {@code who} may take, or a refusal. */
        Admission admit(PeerCredentials who);
    }

    /** A decision of {@link Roles}: a peer id, or why not (for the log). */
    public record Admission(int peerId, String refusal) {
        public static Admission as(int peerId) {
            return new Admission(peerId, null);
        }

        public static Admission refused(String why) {
            return new Admission(-1, why);
        }
    }

    /** One connected QEMU: its socket and who it is. */
    private record Peer(int fd, PeerCredentials who) {
        void close() {
            Posix.close(fd);
        }
    }

    private final ListeningSocket listening;
    private final int regionFd;
    private final int vectors;
    private final Roles roles;
    private final Thread thread;
    private final Peer[] peers = new Peer[PEERS];
    /** Each id's eventfds, one per vector, for the relay's lifetime. */
    private final EventFd[][] vectorsOf = new EventFd[PEERS][];
    private volatile boolean running = true;
    /** How many times each id connected (tests and the log). */
    private final int[] connections = new int[PEERS];
    /** Where the connected peers are written at every change ({@link #recordPeers}), or null. */
    private Path peersFile;

    private IvshmemRelay(ListeningSocket listening, int regionFd, int vectors, Roles roles) {
        this.listening = listening;
        this.regionFd = regionFd;
        this.vectors = vectors;
        this.roles = roles;
        this.thread = new Thread(this::serve, "ivshmem-relay");
        this.thread.setDaemon(true);
        for (int id = 0; id < PEERS; id++) {
            vectorsOf[id] = new EventFd[vectors];
            for (int v = 0; v < vectors; v++) {
                vectorsOf[id][v] = EventFd.create();
            }
        }
    }

    /**
     * Listens on {@code socketPath} (a stale socket is replaced, anything else is refused) and relays on a thread
     * of its own.
     *
     * @param regionFd the slot region's descriptor, sent to both QEMUs to map as BAR2
     * @param vectors  the devices' {@code <msi vectors>} (both devices have the same): QEMU refuses more eventfds
     */
    public static IvshmemRelay start(Path socketPath, int regionFd, int vectors, Roles roles) throws IOException {
        if (vectors < 1 || vectors > IvshmemServer.MAX_VECTORS) {
            throw new IllegalArgumentException("vectors must be 1.." + IvshmemServer.MAX_VECTORS + ", not " + vectors);
        }
        IvshmemRelay relay = new IvshmemRelay(ListeningSocket.open(socketPath), regionFd, vectors, roles);
        relay.thread.start();
        LOG.info("ivshmem relay listening on {} with {} vectors per peer", socketPath, vectors);
        return relay;
    }

    /** The credentials of the connected peer {@code id}, or null. */
    public synchronized PeerCredentials peer(int id) {
        Peer p = peers[id];
        return p == null ? null : p.who();
    }

    /**
     * From now on keeps {@code file} saying who is connected: one line {@code PEER PID UID} per connected peer (empty:
     * none), replaced whole (written beside it, then renamed) at every change, removed by {@link #close}.
     */
    public synchronized void recordPeers(Path file) {
        peersFile = file;
        writePeers();
    }

    /** Holding the lock. A file that cannot be written costs only what status shows (logged). */
    private void writePeers() {
        if (peersFile == null) {
            return;
        }
        StringBuilder text = new StringBuilder();
        for (int id = 0; id < PEERS; id++) {
            if (peers[id] != null) {
                text.append(id).append(' ').append(peers[id].who().pid()).append(' ').append(peers[id].who().uid()).append('\n');
            }
        }
        Path temporary = peersFile.resolveSibling(peersFile.getFileName() + ".new");
        try {
            java.nio.file.Files.writeString(temporary, text, java.nio.charset.StandardCharsets.US_ASCII);
            java.nio.file.Files.move(temporary, peersFile, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                    java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            LOG.warn("cannot write the relay's peers to {}: {}", peersFile, e.getMessage());
        }
    }

    /** How many times peer {@code id} connected since the start. */
    public synchronized int connections(int id) {
        return connections[id];
    }

    private void serve() {
        Memory fds = new Memory(8L * (2 + PEERS));
        int[] polled = new int[PEERS];
        while (running) {
            int count = 0;
            count = pollFd(fds, count, listening.fd());
            count = pollFd(fds, count, listening.stopSignal().fd());
            synchronized (this) {
                for (int id = 0; id < PEERS; id++) {
                    polled[id] = peers[id] == null ? -1 : count;
                    if (peers[id] != null) {
                        count = pollFd(fds, count, peers[id].fd());
                    }
                }
            }
            int ready = Posix.poll(fds, count, ListeningSocket.POLL_MS);
            if (ready <= 0 || !running) {
                continue;
            }
            for (int id = 0; id < PEERS; id++) {
                // QEMU never writes: data, hang-up or error all mean this peer is done
                if (polled[id] >= 0 && fds.getShort(8L * polled[id] + 6) != 0) {
                    drop(id, "its connection closed or it sent data (QEMU never does)");
                }
            }
            if ((fds.getShort(6) & Posix.POLLIN) != 0) {
                accept();
            }
        }
    }

    private static int pollFd(Memory fds, int index, int fd) {
        fds.setInt(8L * index, fd);
        fds.setShort(8L * index + 4, Posix.POLLIN);
        fds.setShort(8L * index + 6, (short) 0);
        return index + 1;
    }

    private void accept() {
        int fd = listening.accept();
        if (fd < 0) {
            return;
        }
        PeerCredentials who = UnixSockets.credentials(fd);
        Admission admission;
        try {
            admission = roles.admit(who);
        } catch (RuntimeException e) {
            admission = Admission.refused("cannot tell who pid " + who.pid() + " is: " + e.getMessage());
        }
        if (admission.refusal() != null || admission.peerId() < 0 || admission.peerId() >= PEERS) {
            LOG.warn("refused a connection on {}: {}", listening.path(), admission.refusal());
            Posix.close(fd);
            return;
        }
        int id = admission.peerId();
        synchronized (this) {
            if (peers[id] != null) {
                LOG.warn("refused pid {} (uid {}) as peer {} on {}: pid {} is connected as that peer", who.pid(), who.uid(), id,
                        listening.path(), peers[id].who().pid());
                Posix.close(fd);
                return;
            }
            Peer joining = new Peer(fd, who);
            Peer other = peers[PEERS - 1 - id];
            int stale = 0;
            for (EventFd v : vectorsOf[id]) {
                stale += v.await(0) ? 1 : 0; // rings for a predecessor: not this QEMU's interrupts
            }
            try {
                greet(joining, id);
            } catch (RuntimeException e) {
                LOG.warn("handshake with pid {} as peer {} failed: {}", who.pid(), id, e.getMessage());
                joining.close();
                return;
            }
            peers[id] = joining;
            connections[id]++;
            writePeers();
            LOG.info("pid {} (uid {}) connected as peer {} ({}); the other peer is {}{}", who.pid(), who.uid(), id, role(id),
                    other == null ? "not connected" : "pid " + other.who().pid(),
                    stale == 0 ? "" : "; " + stale + " of its vectors had rings from before it, emptied");
        }
    }

    /**
     * The spec's greeting: version, the peer's id, the region, the other id's eventfds (whether that peer is
     * connected or not: they are the id's, for the relay's lifetime), then its own.
     */
    private void greet(Peer joining, int id) {
        UnixSockets.send(joining.fd(), IvshmemServer.PROTOCOL_VERSION, -1);
        UnixSockets.send(joining.fd(), id, -1);
        UnixSockets.send(joining.fd(), -1, regionFd);
        for (EventFd v : vectorsOf[PEERS - 1 - id]) {
            UnixSockets.send(joining.fd(), PEERS - 1 - id, v.fd());
        }
        for (EventFd v : vectorsOf[id]) {
            UnixSockets.send(joining.fd(), id, v.fd());
        }
    }

    private synchronized void drop(int id, String why) {
        dropLocked(id, why);
    }

    private void dropLocked(int id, String why) {
        Peer leaving = peers[id];
        if (leaving == null) {
            return;
        }
        peers[id] = null;
        leaving.close();
        // the other QEMU is not told (see the class comment): it keeps this id's eventfds for the next one
        writePeers();
        LOG.info("peer {} ({}, pid {}) left: {}", id, role(id), leaving.who().pid(), why);
    }

    private static String role(int id) {
        return id == BACKEND_PEER_ID ? "the back-end's slot device" : "the front-end";
    }

    @Override
    public void close() {
        running = false;
        listening.stop(thread);
        synchronized (this) {
            for (int id = 0; id < PEERS; id++) {
                if (peers[id] != null) {
                    peers[id].close();
                    peers[id] = null;
                }
                for (EventFd v : vectorsOf[id]) {
                    v.close();
                }
            }
            if (peersFile != null) {
                try {
                    java.nio.file.Files.deleteIfExists(peersFile);
                } catch (IOException e) {
                    LOG.warn("cannot remove {}: {}", peersFile, e.getMessage());
                }
            }
        }
        listening.close();
    }
}
