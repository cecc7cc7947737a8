package io.ivcuda.server.doorbell;

import java.nio.file.Path;

/** Raw descriptors for files whose descriptor must travel to QEMU (the region). */
public final class NativeFiles {

    private NativeFiles() {
    }

    public static int openReadWrite(Path path) {
        return Posix.open(path.toString(), Posix.O_RDWR | Posix.O_CLOEXEC);
    }

    public static void close(int fd) {
        Posix.close(fd);
    }
}
