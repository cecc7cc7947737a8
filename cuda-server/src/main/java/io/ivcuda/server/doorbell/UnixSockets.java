package io.ivcuda.server.doorbell;

import com.sun.jna.Memory;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * UNIX stream sockets with what {@code java.nio} lacks: file descriptors passed as
 * SCM_RIGHTS and the peer's credentials. Messages are the ivshmem-server protocol's:
 * one little-endian int64, optionally with one descriptor.
 */
final class UnixSockets {

    // struct msghdr (LP64)
    private static final int MSG_IOV = 16;
    private static final int MSG_IOVLEN = 24;
    private static final int MSG_CONTROL = 32;
    private static final int MSG_CONTROLLEN = 40;
    private static final int MSG_FLAGS = 48;
    private static final int MSGHDR_SIZE = 56;
    private static final int IOVEC_SIZE = 16;
    // struct cmsghdr: size_t len, int level, int type, data
    private static final int CMSG_DATA = 16;
    private static final int CMSG_LEN_ONE_FD = CMSG_DATA + 4;
    private static final int CMSG_SPACE_ONE_FD = 24;

    private UnixSockets() {
    }

    static Memory address(Path path) {
        byte[] bytes = path.toString().getBytes(StandardCharsets.UTF_8);
        if (bytes.length >= Posix.SUN_PATH_MAX) {
            throw new IllegalArgumentException("socket path too long (" + bytes.length + " bytes, max "
                    + (Posix.SUN_PATH_MAX - 1) + "): " + path);
        }
        Memory addr = new Memory(Posix.SOCKADDR_UN_SIZE);
        addr.clear();
        addr.setShort(0, (short) Posix.AF_UNIX);
        addr.write(2, bytes, 0, bytes.length);
        return addr;
    }

    static int listen(Path path) {
        int fd = Posix.socket(Posix.AF_UNIX, Posix.SOCK_STREAM | Posix.SOCK_CLOEXEC, 0);
        try {
            Posix.bind(fd, address(path), Posix.SOCKADDR_UN_SIZE);
            Posix.listen(fd, 4);
            return fd;
        } catch (RuntimeException e) {
            Posix.close(fd);
            throw e;
        }
    }

    static int connect(Path path) {
        int fd = Posix.socket(Posix.AF_UNIX, Posix.SOCK_STREAM | Posix.SOCK_CLOEXEC, 0);
        try {
            Posix.connect(fd, address(path), Posix.SOCKADDR_UN_SIZE);
            return fd;
        } catch (RuntimeException e) {
            Posix.close(fd);
            throw e;
        }
    }

    static PeerCredentials credentials(int fd) {
        Memory cred = new Memory(12);
        Memory len = new Memory(4);
        len.setInt(0, 12);
        Posix.getsockopt(fd, Posix.SOL_SOCKET, Posix.SO_PEERCRED, cred, len);
        return new PeerCredentials(cred.getInt(0), cred.getInt(4), cred.getInt(8));
    }

    /** Sends one int64, with {@code passFd} attached when it is ≥ 0. */
    static void send(int fd, long value, int passFd) {
        send(fd, value, passFd, Posix.MSG_NOSIGNAL);
    }

    /** As {@link #send}, but fails instead of waiting when the peer's receive buffer is full. */
    static void sendNow(int fd, long value, int passFd) {
        send(fd, value, passFd, Posix.MSG_NOSIGNAL | Posix.MSG_DONTWAIT);
    }

    private static void send(int fd, long value, int passFd, int flags) {
        Memory payload = new Memory(8);
        payload.setLong(0, value); // JNA writes native order: little-endian on every platform we run on
        long sent = sendmsg(fd, payload, passFd >= 0 ? new int[] {passFd} : new int[0], flags);
        if (sent != 8) {
            throw new IllegalStateException("short send on the ivshmem socket: " + sent + " of 8 bytes");
        }
    }

    /** One received message: the int64 and the descriptor that came with it, or -1. */
    record Message(long value, int fd) {
    }

    /** Receives one message; null at end of stream. */
    static Message receive(int fd) {
        Memory payload = new Memory(8);
        Memory control = new Memory(CMSG_SPACE_ONE_FD);
        control.clear();
        Memory msg = header(payload, control);
        long got = Posix.recvmsg(fd, msg, 0);
        if (got == 0) {
            return null;
        }
        if (got != 8) {
            throw new IllegalStateException("short message on the ivshmem socket: " + got + " bytes");
        }
        long controlLen = msg.getLong(MSG_CONTROLLEN);
        int passed = -1;
        if (controlLen >= CMSG_LEN_ONE_FD && isRights(control)) {
            passed = control.getInt(CMSG_DATA);
        }
        return new Message(payload.getLong(0), passed);
    }

    /** Sends {@code bytes} with {@code fds} attached in one message (the shape of ivcuda-guest-irqd's, §8.1). */
    static void send(int fd, byte[] bytes, int[] fds) {
        Memory payload = new Memory(bytes.length);
        payload.write(0, bytes, 0, bytes.length);
        long sent = sendmsg(fd, payload, fds, Posix.MSG_NOSIGNAL);
        if (sent != bytes.length) {
            throw new IllegalStateException("short send: " + sent + " of " + bytes.length + " bytes");
        }
    }

    /** One received message of {@code size} bytes and the descriptors that came with it. */
    record Datagram(byte[] bytes, int[] fds) {
    }

    /**
     * Receives exactly {@code size} bytes with up to {@code maxFds} descriptors attached (ivcuda-guest-irqd's
     * message, docs/protocol.md §8.1); null at end of stream. Descriptors beyond {@code maxFds} would be cut by the
     * kernel: that, like a short message, is an error (the descriptors that did come are closed).
     */
    static Datagram receive(int fd, int size, int maxFds) {
        Memory payload = new Memory(size);
        Memory control = new Memory(CMSG_DATA + 4 * maxFds);
        control.clear();
        Memory msg = header(payload, control);
        long got = Posix.recvmsg(fd, msg, Posix.MSG_CMSG_CLOEXEC);
        if (got == 0) {
            return null;
        }
        long controlLen = msg.getLong(MSG_CONTROLLEN);
        int[] fds = new int[0];
        if (controlLen >= CMSG_DATA && isRights(control)) {
            long cmsgLen = Math.min(control.getLong(0), controlLen);
            fds = control.getIntArray(CMSG_DATA, (int) Math.max(0, (cmsgLen - CMSG_DATA) / 4));
        }
        boolean truncated = (msg.getInt(MSG_FLAGS) & (Posix.MSG_CTRUNC | Posix.MSG_TRUNC)) != 0;
        if (got != size || truncated) {
            for (int passed : fds) {
                Posix.close(passed);
            }
            throw new IllegalStateException(truncated ? "more descriptors than " + maxFds + " or a longer message than " + size
                    + " bytes" : "a message of " + got + " bytes, expected " + size);
        }
        return new Datagram(payload.getByteArray(0, size), fds);
    }

    /** sendmsg of all of {@code payload} with {@code fds} (none: no ancillary data) as SCM_RIGHTS; the bytes sent. */
    private static long sendmsg(int fd, Memory payload, int[] fds, int flags) {
        Memory control = null;
        if (fds.length > 0) {
            control = new Memory(CMSG_DATA + 4 * ((fds.length + 1) & ~1)); // CMSG_SPACE: a multiple of 8
            control.clear();
            control.setLong(0, CMSG_DATA + 4L * fds.length);
            control.setInt(8, Posix.SOL_SOCKET);
            control.setInt(12, Posix.SCM_RIGHTS);
            control.write(CMSG_DATA, fds, 0, fds.length);
        }
        Memory msg = header(payload, control);
        try {
            return Posix.sendmsg(fd, msg, flags);
        } finally {
            Reference.reachabilityFence(payload);
            Reference.reachabilityFence(control);
        }
    }

    /**
     * The struct msghdr of one message: one iovec over all of {@code payload} (it lives in the header's own block,
     * after it) and, unless {@code control} is null, all of {@code control} as the ancillary data — the one builder
     * for sending and receiving, one descriptor or several.
     */
    private static Memory header(Memory payload, Memory control) {
        Memory msg = new Memory(MSGHDR_SIZE + IOVEC_SIZE);
        msg.clear();
        msg.setPointer(MSGHDR_SIZE, payload);
        msg.setLong(MSGHDR_SIZE + 8, payload.size());
        msg.setPointer(MSG_IOV, msg.share(MSGHDR_SIZE, IOVEC_SIZE));
        msg.setLong(MSG_IOVLEN, 1);
        if (control != null) {
            msg.setPointer(MSG_CONTROL, control);
            msg.setLong(MSG_CONTROLLEN, control.size());
        }
        return msg;
    }

    /** Whether the first cmsghdr in {@code control} is SOL_SOCKET / SCM_RIGHTS. */
    private static boolean isRights(Memory control) {
        return control.getInt(8) == Posix.SOL_SOCKET && control.getInt(12) == Posix.SCM_RIGHTS;
    }
}
