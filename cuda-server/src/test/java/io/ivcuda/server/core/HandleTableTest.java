package io.ivcuda.server.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

class HandleTableTest {
    @Test
    void idsCarryKindGenerationAndIndexAndAreCheckedOnUse() {
        HandleTable t = new HandleTable();
        long id = t.mint(HandleTable.KIND_STREAM, 7, 0xabc, 0);
        assertEquals(HandleTable.KIND_STREAM, HandleTable.kindOf(id));
        assertEquals(1, (id >>> 32) & 0xffffff, "generation");
        assertEquals(0xabc, t.lookup(id, HandleTable.KIND_STREAM, 7).nativeValue());
        assertNull(t.lookup(id, HandleTable.KIND_EVENT, 7), "wrong kind");
        assertNull(t.lookup(id, HandleTable.KIND_STREAM, 8), "wrong owner");
        assertNull(t.lookup(id + 1, HandleTable.KIND_STREAM, 7), "unknown index");
        assertNull(t.lookup(0, HandleTable.KIND_STREAM, 7));
        assertNull(t.lookup(-1, HandleTable.KIND_STREAM, 7));
        t.remove(id);
        assertNull(t.lookup(id, HandleTable.KIND_STREAM, 7), "freed");
        long reused = t.mint(HandleTable.KIND_STREAM, 7, 0xdef, 0);
        assertEquals(id & 0xffffffffL, reused & 0xffffffffL, "index reused");
        assertNotEquals(id, reused, "with the next generation");
        assertNull(t.lookup(id, HandleTable.KIND_STREAM, 7), "the stale id stays dead");
        assertNotNull(t.lookup(reused, HandleTable.KIND_STREAM, 7));
        assertFalse(t.remove(id));
    }

    @Test
    void aHandleBeingReleasedIsHiddenAndGoneOnlyIfTheReleaseSucceeded() {
        HandleTable t = new HandleTable();
        long id = t.mint(HandleTable.KIND_EVENT, 7, 0xe1, 0);
        assertNotNull(t.beginRelease(id, HandleTable.KIND_EVENT, 7));
        assertNull(t.lookup(id, HandleTable.KIND_EVENT, 7), "no other call uses it meanwhile");
        assertNull(t.beginRelease(id, HandleTable.KIND_EVENT, 7), "nor destroys it a second time");
        assertEquals(1, t.ownedBy(7).size(), "reclaim still sees it");
        t.endRelease(id, false);
        assertNotNull(t.lookup(id, HandleTable.KIND_EVENT, 7), "a failed destroy gives it back");
        assertNotNull(t.beginRelease(id, HandleTable.KIND_EVENT, 7));
        t.endRelease(id, true);
        assertNull(t.lookup(id, HandleTable.KIND_EVENT, 7), "a successful one removes it");
        assertEquals(0, t.size());
    }

    @Test
    void poolAllocatorIsFirstFitPerOwner() {
        PoolAllocator p = new PoolAllocator(5 * 4096);
        long a = p.allocate(1, 1);
        long b = p.allocate(4097, 2);
        assertEquals(0, a);
        assertEquals(4096, b);
        assertEquals(-1, p.allocate(3 * 4096, 1), "only 2 pages left");
        assertNotNull(p.blockOf(b + 100, 8000, 2));
        assertNull(p.blockOf(b + 100, 8000, 1), "other owner");
        assertNull(p.blockOf(b, 8193, 2), "past the block");
        assertFalse(p.free(b, 1));
        assertEquals(1, p.freeAllOf(2).size());
        assertEquals(4096, p.allocate(3 * 4096, 1), "first fit reuses the hole");
    }

    @Test
    void largePoolBlocksStartOn2MiBBoundaries() {
        PoolAllocator p = new PoolAllocator(16L << 20);
        assertEquals(0, p.allocate(4096, 1));
        long big = p.allocate(4L << 20, 1);
        assertEquals(2L << 20, big, "a 4 MiB buffer skips to the next 2 MiB boundary");
        assertEquals(4096, p.allocate(4096, 1), "small ones still fill the gap before it");
    }

    @Test
    void deviceRangesCheckWholeRanges() {
        DeviceRanges r = new DeviceRanges();
        r.add(new DeviceRanges.Range(1000, 100, true, 0));
        assertEquals(true, r.contains(1000, 100));
        assertEquals(true, r.contains(1099, 1));
        assertEquals(true, r.contains(1100, 0));
        assertFalse(r.contains(1099, 2));
        assertFalse(r.contains(999, 1));
        assertFalse(r.contains(1050, Long.MAX_VALUE));
        assertFalse(r.contains(1050, -1));
        assertNull(r.removeAllocation(1001));
        assertNotNull(r.removeAllocation(1000));
        assertFalse(r.contains(1000, 1));
    }

    /**
     * A reclaim takes a handle only once no call uses it, and not at all when a call of the process
     * destroyed it meanwhile: it destroyed the same driver object a second time before (issue 13,
     * glibc's "double free or corruption" on the H200).
     */
    @Test
    void aReclaimTakesNothingACallDestroyedAndWaitsForCallsThatUseIt() throws Exception {
        HandleTable t = new HandleTable();
        long destroyed = t.mint(HandleTable.KIND_STREAM, 7, 0x51, 0);
        long pinned = t.mint(HandleTable.KIND_STREAM, 7, 0x52, 0);
        // a call is destroying the first when the reclaim comes
        assertNotNull(t.beginRelease(destroyed, HandleTable.KIND_STREAM, 7));
        CompletableFuture<Boolean> take = CompletableFuture.supplyAsync(() -> t.takeForReclaim(destroyed));
        Thread.sleep(50);
        assertFalse(take.isDone(), "the reclaim waits for the destroying call");
        t.endRelease(destroyed, true);
        assertFalse(take.get(5, TimeUnit.SECONDS), "and leaves what the call destroyed alone");
        // a call uses the second
        assertNotNull(t.pin(pinned, HandleTable.KIND_STREAM, 7));
        CompletableFuture<Boolean> takePinned = CompletableFuture.supplyAsync(() -> t.takeForReclaim(pinned));
        Thread.sleep(50);
        assertFalse(takePinned.isDone(), "the reclaim waits for the call that uses it");
        t.unpin(pinned);
        assertTrue(takePinned.get(5, TimeUnit.SECONDS), "then takes it");
        assertEquals(0, t.size());
        assertFalse(t.takeForReclaim(pinned), "once");
    }
}
