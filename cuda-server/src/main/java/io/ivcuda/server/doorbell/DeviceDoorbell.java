package io.ivcuda.server.doorbell;

import io.ivcuda.server.region.Region;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLongArray;
import org.agrona.concurrent.UnsafeBuffer;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Doorbell mode inside a back-end domain (docs/backend-domains.md, "Doorbell mode through a back-end"): the slot's
 * server is not the ivshmem server — the host's relay is — but a guest of the slot's ivshmem-doorbell device, like a
 * front-end's library. The front-end's rings arrive as MSI-X interrupts of the slot device, which
 * ivcuda-guest-irqd (root, owning the device through vfio-pci) hands over as one eventfd per vector on its socket
 * (docs/protocol.md §8.1); the server rings the front-end by writing {@code 1 << 16 | vector} to the device's
 * Doorbell register (BAR0 offset 12, sysfs {@code resource0} beside the slot's {@code resource2}).
 *
 * <p>The daemon's message is checked as the guest library checks it: magic, a vector count equal to the server's
 * {@code doorbell.vectors} and to the descriptors attached, the PCI address of the device this server maps. The
 * connection stays open: the eventfds are wired to the device while the daemon runs.
 */
public final class DeviceDoorbell implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(DeviceDoorbell.class);
    /** §8.1's message: magic, u32 vectors, u32 flags, char[32] PCI address. */
    static final int MESSAGE_SIZE = 48;
    static final byte[] MAGIC = "IVCIRQ01".getBytes(StandardCharsets.US_ASCII);
    /** BAR0's Doorbell register (QEMU docs/specs/ivshmem-spec.rst). */
    static final int DOORBELL_REGISTER = 12;
    /** The relay gives the front-end this id (IvshmemRelay.FRONTEND_PEER_ID). */
    static final int FRONTEND_PEER = IvshmemRelay.FRONTEND_PEER_ID;

    private final int socket;
    private final EventFd[] vectors;
    private final Region bar0;
    private final UnsafeBuffer registers;
    private final AtomicLongArray rung;

    private DeviceDoorbell(int socket, EventFd[] vectors, Region bar0) {
        this.socket = socket;
        this.vectors = vectors;
        this.bar0 = bar0;
        this.registers = bar0.view(0, (int) bar0.size());
        this.rung = new AtomicLongArray(vectors.length);
    }

    /**
     * Connects to the interrupt daemon at {@code irqSocket} for the device whose BAR2 is {@code region} and maps
     * that device's BAR0.
     *
     * @throws IOException saying what is missing or wrong (the caller serves by polling then)
     */
    public static DeviceDoorbell connect(Path irqSocket, Path region, int expectedVectors) throws IOException {
        Path device = region.toAbsolutePath().getParent();
        Path resource0 = device.resolve("resource0");
        int fd;
        try {
            fd = UnixSockets.connect(irqSocket);
        } catch (RuntimeException e) {
            throw new IOException("cannot connect to the interrupt daemon's socket " + irqSocket + " (" + e.getMessage()
                    + "): is ivcuda-guest-irqd running for this device?", e);
        }
        int[] fds = new int[0];
        try {
            UnixSockets.Datagram m;
            try {
                m = UnixSockets.receive(fd, MESSAGE_SIZE, IvshmemServer.MAX_VECTORS);
            } catch (RuntimeException e) {
                throw new IOException("the interrupt daemon on " + irqSocket + " sent a bad message: " + e.getMessage(), e);
            }
            if (m == null) {
                throw new IOException("the interrupt daemon on " + irqSocket + " closed the connection without a message");
            }
            fds = m.fds();
            byte[] b = m.bytes();
            if (!Arrays.equals(Arrays.copyOf(b, 8), MAGIC)) {
                throw new IOException("the message on " + irqSocket + " is not ivcuda-guest-irqd's (magic)");
            }
            int count = (b[8] & 0xff) | (b[9] & 0xff) << 8 | (b[10] & 0xff) << 16 | (b[11] & 0xff) << 24;
            if (count != expectedVectors || fds.length != count) {
                throw new IOException("the interrupt daemon on " + irqSocket + " says " + Integer.toUnsignedString(count)
                        + " vectors with " + fds.length + " descriptors attached; this server has "
                        + io.ivcuda.common.config.ServerKeys.DOORBELL_VECTORS.name() + " "
                        + expectedVectors + " (the slot device's <msi vectors>)");
            }
            int end = 16;
            while (end < MESSAGE_SIZE && b[end] != 0) {
                end++;
            }
            String address = new String(b, 16, end - 16, StandardCharsets.US_ASCII).replaceAll("[^ -~]", "?");
            String ours = device.getFileName() == null ? "" : device.getFileName().toString();
            if (!address.equals(ours)) {
                throw new IOException("the interrupt daemon on " + irqSocket + " serves device " + address
                        + ", this server maps " + ours);
            }
            if (!Files.exists(resource0)) {
                throw new IOException(resource0 + " does not exist: no Doorbell register to ring the front-end with");
            }
            Region registers = Region.openDevice(resource0, Files.size(resource0));
            EventFd[] vectors = new EventFd[count];
            for (int v = 0; v < count; v++) {
                vectors[v] = EventFd.adopt(fds[v]);
            }
            return new DeviceDoorbell(fd, vectors, registers);
        } catch (IOException | RuntimeException e) {
            for (int passed : fds) {
                Posix.close(passed);
            }
            Posix.close(fd);
            throw e instanceof IOException io ? io : new IOException(e.getMessage(), e);
        }
    }

    public int vectors() {
        return vectors.length;
    }

    /** Signalled when the front-end rings {@code 0 << 16 | vector} (MSI-X {@code vector} of the slot device). */
    public EventFd vector(int vector) {
        return vectors[vector];
    }

    /**
     * Raises MSI-X {@code vector} in the front-end: one 32-bit write of {@code 1 << 16 | vector} to Doorbell. The first
     * ring of each vector is logged ({@code doorbell: first interrupt to the front-end on vector N}): proof for the
     * operator (and vm/backend-doorbell.sh) that the back-end's rings leave it.
     */
    public void interruptGuest(int vector) {
        registers.putIntVolatile(DOORBELL_REGISTER, FRONTEND_PEER << 16 | vector);
        if (rung.getAndIncrement(vector) == 0) {
            LOG.info("doorbell: first interrupt to the front-end on vector {}", vector);
        }
    }

    /** How often this server rang the front-end's {@code vector}. */
    public long interruptsSent(int vector) {
        return rung.get(vector);
    }

    @Override
    public void close() {
        for (EventFd v : vectors) {
            v.close();
        }
        Posix.close(socket);
        bar0.close();
    }
}
