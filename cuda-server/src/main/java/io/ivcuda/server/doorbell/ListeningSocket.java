package io.ivcuda.server.doorbell;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * The listening end that both ivshmem roles ({@link IvshmemServer}, {@link IvshmemRelay}) serve from one thread
 * each: the socket file, its descriptor, and the eventfd that wakes that thread's {@code poll} when it must stop.
 */
final class ListeningSocket implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(ListeningSocket.class);
    /** A safety net only for the serving thread's poll: {@link #stop} wakes it through {@link #stopSignal()}. */
    static final int POLL_MS = 60_000;

    private final Path path;
    private final int fd;
    private final EventFd stopSignal = EventFd.create();

    private ListeningSocket(Path path, int fd) {
        this.path = path;
        this.fd = fd;
    }

    /** Listens on {@code path}; a socket left there by a dead process is replaced, any other file refused. */
    static ListeningSocket open(Path path) throws IOException {
        if (Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
            Object isOther = Files.readAttributes(path, "isOther", LinkOption.NOFOLLOW_LINKS).get("isOther");
            if (!Boolean.TRUE.equals(isOther)) {
                throw new IOException(path + " exists and is not a socket; refusing to replace it");
            }
            Files.delete(path);
        }
        return new ListeningSocket(path, UnixSockets.listen(path));
    }

    Path path() {
        return path;
    }

    int fd() {
        return fd;
    }

    EventFd stopSignal() {
        return stopSignal;
    }

    /** The next connection (close-on-exec), or -1 when accept failed (logged). */
    int accept() {
        try {
            return Posix.accept4(fd, null, null, Posix.SOCK_CLOEXEC);
        } catch (RuntimeException e) {
            LOG.warn("accept on {} failed: {}", path, e.getMessage());
            return -1;
        }
    }

    /** Wakes {@code server}'s poll and waits (at most 5 s) for it to end, unless called on it. */
    void stop(Thread server) {
        stopSignal.signal();
        if (Thread.currentThread() != server) {
            try {
                server.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Closes the descriptors and removes the socket file. */
    @Override
    public void close() {
        Posix.close(fd);
        stopSignal.close();
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            LOG.warn("could not remove {}: {}", path, e.getMessage());
        }
    }
}
