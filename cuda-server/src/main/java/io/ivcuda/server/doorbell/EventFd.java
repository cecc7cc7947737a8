package io.ivcuda.server.doorbell;

import com.sun.jna.Memory;

/**
 * One Linux eventfd: the wire of one interrupt vector between QEMU and this server.
 * QEMU writes to the server's eventfds when the guest rings BAR0's doorbell, and turns
 * writes to the guest's eventfds into MSI-X interrupts.
 */
public final class EventFd implements AutoCloseable {

    private final int fd;
    private final Memory word = new Memory(8);
    private final Memory pollFd = new Memory(8);

    private EventFd(int fd) {
        this.fd = fd;
    }

    public static EventFd create() {
        return new EventFd(Posix.eventfd(0, Posix.EFD_CLOEXEC | Posix.EFD_NONBLOCK));
    }

    static EventFd adopt(int fd) {
        return new EventFd(fd);
    }

    public int fd() {
        return fd;
    }

    /** Adds one to the counter; wakes whoever waits on it. */
    public void signal() {
        synchronized (word) {
            word.setLong(0, 1L);
            Posix.write(fd, word, 8);
        }
    }

    /**
     * Waits until the counter is non-zero or the timeout passes, then resets it.
     *
     * @return true when it was signalled
     */
    public boolean await(int timeoutMs) {
        synchronized (pollFd) {
            pollFd.setInt(0, fd);
            pollFd.setShort(4, Posix.POLLIN);
            pollFd.setShort(6, (short) 0);
            int ready = Posix.poll(pollFd, 1, timeoutMs);
            if (ready <= 0) {
                return false;
            }
            return Posix.read(fd, pollFd, 8) == 8;
        }
    }

    @Override
    public void close() {
        Posix.close(fd);
    }
}
