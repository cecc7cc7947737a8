package io.ivcuda.server.region;

import com.sun.jna.LastErrorException;
import io.ivcuda.common.config.ServerKeys;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The mapped region file. Regions may exceed 2 GiB, so the mapping is a native address;
 * the header and each channel get their own {@link UnsafeBuffer} view (each &lt; 2 GiB).
 */
public final class Region implements AutoCloseable {
    private final Path path;
    private final long size;
    private final long address;
    private boolean closed;

    private Region(Path path, long size, long address) {
        this.path = path;
        this.size = size;
        this.address = address;
    }

    /**
     * Opens the region file, creating it with {@code size} bytes when absent.
     *
     * @throws IOException naming the file and both sizes when it exists with another size
     */
    public static Region openOrCreate(Path path, long size) throws IOException {
        return openOrCreate(path, size, 0);
    }

    /**
     * {@link #openOrCreate(Path, long)}, mapped at {@code hint} when that range is free (0: wherever the
     * kernel puts it): a server replacing its CUDA process maps the region where its previous image did, so
     * the pool's device address, which guests placed their mapping at (docs/protocol.md §2a), stays.
     */
    public static Region openOrCreate(Path path, long size, long hint) throws IOException {
        if (Files.exists(path)) {
            long actual = Files.size(path);
            if (actual != size) {
                throw new IOException("region " + path + " has " + actual + " bytes, configured " + ServerKeys.REGION_SIZE.name() + " is " + size);
            }
        } else {
            try (RandomAccessFile f = new RandomAccessFile(path.toFile(), "rw")) {
                f.setLength(size);
            }
        }
        return map(path, size, hint);
    }

    /**
     * Opens a region that is a device's memory ({@code region.kind=device}: a back-end domain's ivshmem BAR,
     * sysfs {@code resource2}, whose file size is the BAR's): it must exist with exactly {@code size} bytes.
     * Nothing here creates, truncates or removes it: the device's size is the back-end's QEMU's, and the
     * front-end's QEMU maps the same memory.
     *
     * @throws IOException naming the file when it is absent, not a regular file, or of another size
     */
    public static Region openDevice(Path path, long size) throws IOException {
        return openDevice(path, size, 0);
    }

    /** {@link #openDevice(Path, long)}, mapped at {@code hint} when that range is free (see {@link #openOrCreate(Path, long, long)}). */
    public static Region openDevice(Path path, long size, long hint) throws IOException {
        if (!Files.exists(path)) {
            throw new IOException("region " + path + " does not exist (" + ServerKeys.REGION_KIND.name()
                    + " device: the device's memory file is never created)");
        }
        if (!Files.isRegularFile(path)) {
            throw new IOException("region " + path + " is not a regular file (" + ServerKeys.REGION_KIND.name() + " device)");
        }
        long actual = Files.size(path);
        if (actual != size) {
            throw new IOException("region " + path + " has " + actual + " bytes, configured " + ServerKeys.REGION_SIZE.name()
                    + " is " + size + " (" + ServerKeys.REGION_KIND.name() + " device: its size is the device's)");
        }
        return map(path, size, hint);
    }

    private static Region map(Path path, long size, long hint) throws IOException {
        int fd;
        try {
            fd = LibC.open(path.toString(), LibC.O_RDWR);
        } catch (LastErrorException e) {
            throw new IOException("region " + path + ": open failed, errno " + e.getErrorCode(), e);
        }
        try {
            // a hint, not MAP_FIXED: a range in use is never replaced, the kernel then picks another
            long addr = LibC.mmap(hint, size, LibC.PROT_READ | LibC.PROT_WRITE, LibC.MAP_SHARED, fd, 0);
            return new Region(path, size, addr);
        } catch (LastErrorException e) {
            throw new IOException("region " + path + ": mmap of " + size + " bytes failed, errno " + e.getErrorCode(), e);
        } finally {
            LibC.close(fd);
        }
    }

    public Path path() {
        return path;
    }

    public long size() {
        return size;
    }

    public long address() {
        return address;
    }

    /** A view of {@code length} bytes at {@code offset}; checked against the region. */
    public UnsafeBuffer view(long offset, int length) {
        if (offset < 0 || length < 0 || offset + length > size) {
            throw new IllegalArgumentException("view " + offset + "+" + length + " outside region of " + size);
        }
        return new UnsafeBuffer(address + offset, length);
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            LibC.munmap(address, size);
        }
    }
}
