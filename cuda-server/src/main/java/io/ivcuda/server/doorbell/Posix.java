package io.ivcuda.server.doorbell;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;

/**
 * The few libc calls the ivshmem-server protocol needs that Java's own sockets lack:
 * file descriptors passed with SCM_RIGHTS, peer credentials, and eventfds.
 * JNA direct mapping: these sit on the wake-up path of parked workers.
 * Struct layouts are those of Linux LP64 (x86-64 and aarch64 agree on all of them).
 */
final class Posix {

    static final int AF_UNIX = 1;
    static final int SOCK_STREAM = 1;
    static final int SOCK_CLOEXEC = 0x80000;
    static final int SOL_SOCKET = 1;
    static final int SCM_RIGHTS = 1;
    static final int SO_PEERCRED = 17;
    static final int EFD_CLOEXEC = 0x80000;
    static final int EFD_NONBLOCK = 0x800;
    static final short POLLIN = 0x1;
    static final short POLLHUP = 0x10;
    static final short POLLERR = 0x8;
    static final int MSG_NOSIGNAL = 0x4000;
    static final int MSG_DONTWAIT = 0x40;
    static final int MSG_TRUNC = 0x20;
    static final int MSG_CTRUNC = 0x8;
    static final int MSG_CMSG_CLOEXEC = 0x40000000;
    static final int O_RDWR = 2;
    static final int O_CLOEXEC = 0x80000;
    static final int EINTR = 4;
    static final int EAGAIN = 11;

    /** sizeof(struct sockaddr_un). */
    static final int SOCKADDR_UN_SIZE = 110;
    static final int SUN_PATH_MAX = 108;

    static {
        if (!Platform.isLinux()) {
            throw new UnsupportedOperationException("doorbell mode needs Linux");
        }
        Native.register(Posix.class, Platform.C_LIBRARY_NAME);
    }

    private Posix() {
    }

    static native int socket(int domain, int type, int protocol) throws LastErrorException;

    static native int bind(int fd, Pointer addr, int addrlen) throws LastErrorException;

    static native int listen(int fd, int backlog) throws LastErrorException;

    static native int accept4(int fd, Pointer addr, Pointer addrlen, int flags) throws LastErrorException;

    static native int connect(int fd, Pointer addr, int addrlen) throws LastErrorException;

    static native long sendmsg(int fd, Pointer msg, int flags) throws LastErrorException;

    static native long recvmsg(int fd, Pointer msg, int flags) throws LastErrorException;

    static native int getsockopt(int fd, int level, int name, Pointer value, Pointer len) throws LastErrorException;

    static native int eventfd(int initval, int flags) throws LastErrorException;

    static native long read(int fd, Pointer buf, long count);

    static native long write(int fd, Pointer buf, long count);

    static native int poll(Pointer fds, long nfds, int timeoutMs);

    static native int open(String path, int flags) throws LastErrorException;

    static native int close(int fd);

    static native int shutdown(int fd, int how);

}
