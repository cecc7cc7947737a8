package io.ivcuda.server.doorbell;

import java.nio.file.Path;

/**
 * QEMU's side of the ivshmem-server protocol as the spec describes it, for tests: connects, reads
 * the greeting, and then does what QEMU does for the guest — a write to BAR0's Doorbell becomes
 * a signal on the server's eventfd of that vector, and the server's signal on our own eventfd of a
 * vector is the guest's MSI-X interrupt.
 */
public final class FakeQemu implements AutoCloseable {
    private final int socket;
    private final long peerId;
    private final int regionFd;
    private final EventFd[] server;
    private final EventFd[] own;
    private boolean closed;

    public FakeQemu(Path socketPath, int vectors) {
        socket = UnixSockets.connect(socketPath);
        long version = UnixSockets.receive(socket).value();
        if (version != IvshmemServer.PROTOCOL_VERSION) {
            throw new AssertionError("protocol version " + version);
        }
        peerId = UnixSockets.receive(socket).value();
        UnixSockets.Message shm = UnixSockets.receive(socket);
        if (shm.value() != -1 || shm.fd() < 0) {
            throw new AssertionError("expected -1 with the region fd, got " + shm);
        }
        regionFd = shm.fd();
        server = new EventFd[vectors];
        own = new EventFd[vectors];
        for (int v = 0; v < vectors; v++) {
            UnixSockets.Message m = UnixSockets.receive(socket);
            if (m.value() != IvshmemServer.SERVER_PEER_ID || m.fd() < 0) {
                throw new AssertionError("vector " + v + " of the server: " + m);
            }
            server[v] = EventFd.adopt(m.fd());
        }
        for (int v = 0; v < vectors; v++) {
            UnixSockets.Message m = UnixSockets.receive(socket);
            if (m.value() != peerId || m.fd() < 0) {
                throw new AssertionError("own vector " + v + ": " + m);
            }
            own[v] = EventFd.adopt(m.fd());
        }
    }

    public long peerId() {
        return peerId;
    }

    /** The guest wrote {@code 0 << 16 | vector} to Doorbell. */
    public void ring(int vector) {
        server[vector].signal();
    }

    /** Whether the server interrupted the guest on {@code vector} within the timeout. */
    public boolean interrupted(int vector, int timeoutMs) {
        return own[vector].await(timeoutMs);
    }

    /** QEMU exits: the socket closes. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        Posix.close(socket);
        Posix.close(regionFd);
        for (int v = 0; v < server.length; v++) {
            server[v].close();
            own[v].close();
        }
    }
}
