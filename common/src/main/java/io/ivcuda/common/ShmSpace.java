package io.ivcuda.common;

import io.ivcuda.common.config.HostKeys;
import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Whether a region of a given size fits in the file system of {@code shm.dir} (tmpfs {@code /dev/shm}).
 * A region file is sparse when the hook creates it, but the server (with a GPU it pins the whole
 * region) and the guest fill it; a region larger than what is free gets a SIGBUS in QEMU or the server
 * on the first page that finds no memory. So the provisioner refuses a size larger than the whole
 * file system (it can never fit), and the hook refuses a start when it is larger than what is free now.
 */
public final class ShmSpace {
    private ShmSpace() {
    }

    /** Why a region of {@code size} can never fit in {@code shmDir}'s file system (a few words), or null. */
    public static String neverFits(Path shmDir, long size) {
        FileStore store = store(shmDir);
        if (store == null) {
            return null; // not there (yet): the hook's check at start still applies
        }
        try {
            long total = store.getTotalSpace();
            if (total > 0 && size > total) {
                return "region size " + ByteSize.describe(size) + " is larger than " + shmDir + " (" + describe(total)
                        + " in all, " + HostKeys.SHM_DIR.name() + ")";
            }
        } catch (IOException e) {
            return null;
        }
        return null;
    }

    /** Why a region of {@code size} does not fit in what {@code shmDir}'s file system has free now (a few words), or null. */
    public static String doesNotFitNow(Path shmDir, long size) {
        FileStore store = store(shmDir);
        if (store == null) {
            return null;
        }
        try {
            long free = store.getUsableSpace();
            if (size > free) {
                return "region size " + ByteSize.describe(size) + " does not fit in " + shmDir + ": " + describe(free)
                        + " free of " + describe(store.getTotalSpace()) + " (" + HostKeys.SHM_DIR.name() + ")";
            }
        } catch (IOException e) {
            return null;
        }
        return null;
    }

    private static FileStore store(Path dir) {
        try {
            return Files.isDirectory(dir) ? Files.getFileStore(dir) : null;
        } catch (IOException e) {
            return null;
        }
    }

    /** Sizes of a file system, rounded down to what a person compares: {@code 23.5 GiB}, {@code 512 MiB}. */
    static String describe(long bytes) {
        if (bytes >= 1L << 30) {
            return String.format(java.util.Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
        }
        return (bytes >> 20) + " MiB";
    }
}
