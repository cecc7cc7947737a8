package io.ivcuda.server.region;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.Platform;

/** The few libc calls for mapping the region (JNA direct mapping; pointers as long). */
final class LibC {
    static final int O_RDWR = 2;
    static final int PROT_READ = 1;
    static final int PROT_WRITE = 2;
    static final int MAP_SHARED = 1;
    static final long MAP_FAILED = -1L;

    static {
        Native.register(Platform.C_LIBRARY_NAME);
    }

    private LibC() {
    }

    static native int open(String path, int flags) throws LastErrorException;

    static native int close(int fd) throws LastErrorException;

    static native long mmap(long addr, long length, int prot, int flags, int fd, long offset) throws LastErrorException;

    static native int munmap(long addr, long length) throws LastErrorException;
}
