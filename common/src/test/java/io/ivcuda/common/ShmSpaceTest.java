package io.ivcuda.common;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ShmSpaceTest {
    @TempDir
    Path dir;

    @Test
    void aRegionLargerThanTheFileSystemNeverFits() throws Exception {
        long total = Files.getFileStore(dir).getTotalSpace();
        String why = ShmSpace.neverFits(dir, Long.highestOneBit(total) << 1);
        assertTrue(why != null && why.contains("is larger than " + dir) && why.contains("shm.dir"), why);
        assertNull(ShmSpace.neverFits(dir, 1L << 20));
    }

    @Test
    void aRegionLargerThanWhatIsFreeDoesNotFitNow() throws Exception {
        long free = Files.getFileStore(dir).getUsableSpace();
        String why = ShmSpace.doesNotFitNow(dir, Long.highestOneBit(free) << 1);
        assertTrue(why != null && why.contains("does not fit in " + dir) && why.contains("free of"), why);
        assertNull(ShmSpace.doesNotFitNow(dir, 1L << 20));
    }

    @Test
    void aMissingDirectoryIsLeftToTheStart() {
        assertNull(ShmSpace.neverFits(dir.resolve("missing"), Long.MAX_VALUE));
    }
}
