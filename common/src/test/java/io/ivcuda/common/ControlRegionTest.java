package io.ivcuda.common;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.wire.BackendControlFlyweight;
import io.ivcuda.wire.BackendSlotFlyweight;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ControlRegionTest {
    private static final String B = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
    private static final String F = "11111111-1111-1111-1111-111111111111";

    @TempDir
    Path dir;

    private Path file(String name, long size) throws IOException {
        Path p = dir.resolve(name);
        try (RandomAccessFile f = new RandomAccessFile(p.toFile(), "rw")) {
            f.setLength(size);
        }
        return p;
    }

    private static ControlRegion.Token[] tokens(int n) {
        ControlRegion.Token[] t = new ControlRegion.Token[n];
        for (int i = 0; i < n; i++) {
            t[i] = new ControlRegion.Token(100 + i, 200 + i);
        }
        return t;
    }

    @Test
    void refusesAFileOfAnotherSize() throws Exception {
        Path wrong = file("c", 2L << 20);
        var e = assertThrows(IOException.class, () -> ControlRegion.open(wrong));
        assertTrue(e.getMessage().contains("not 1048576"), e.getMessage());
    }

    @Test
    void formatWritesTheHeaderTokensAndIdleAgentFields() throws Exception {
        try (ControlRegion c = ControlRegion.open(file("c", BackendPaths.CONTROL_SIZE))) {
            c.slot(1).serverStateVolatile(BackendSlotFlyweight.SERVED_SERVING);
            c.slot(1).servedGenerationVolatile(5);
            c.header().agentHeartbeatVolatile(77);
            c.format(B, 4, "0", tokens(4), new boolean[GpuElement.MAX_SLOTS]);
            BackendControlFlyweight h = c.header();
            assertEquals(BackendControlFlyweight.BACKEND_MAGIC, h.magic());
            assertEquals(1, h.controlVersion());
            assertEquals(4, h.slotCount());
            assertEquals(1024, h.slotStride());
            assertEquals(0x200, h.slotTableOffset());
            assertEquals(B, h.backendUuid());
            assertEquals(0, h.agentHeartbeat(), "no agent has run since this start");
            assertEquals(1, h.hostGeneration());
            assertEquals(103, c.slot(3).tokenLo());
            assertEquals(203, c.slot(3).tokenHi());
            assertEquals(BackendSlotFlyweight.SERVED_IDLE, c.slot(1).serverState());
            assertEquals(0, c.slot(1).servedGeneration());
            assertEquals(0, c.slot(4).tokenLo(), "beyond slot_count: no token, so no device matches");
        }
    }

    @Test
    void formatKeepsOnlyTheAssignmentsItIsTold() throws Exception {
        try (ControlRegion c = ControlRegion.open(file("c", BackendPaths.CONTROL_SIZE))) {
            c.format(B, 4, "0", tokens(4), new boolean[GpuElement.MAX_SLOTS]);
            c.assign(0, new ControlRegion.Assignment(F, "f0", 4L << 30, 50, "0", 256L << 20));
            c.assign(2, new ControlRegion.Assignment(F, "f2", 0, 0, "0", 256L << 20));
            boolean[] keep = new boolean[GpuElement.MAX_SLOTS];
            keep[0] = true;
            c.format(B, 4, "0", tokens(4), keep);
            assertEquals(BackendSlotFlyweight.SLOT_ASSIGNED, c.slot(0).state());
            assertEquals("f0", c.slot(0).frontendName());
            assertEquals(4L << 30, c.slot(0).quotaBytes());
            assertEquals(BackendSlotFlyweight.SLOT_FREE, c.slot(2).state(), "the ledger does not give slot 2 to its front-end");
            assertEquals("", c.slot(2).frontendUuid());
        }
    }

    @Test
    void assignAndFreeMoveTheGenerations() throws Exception {
        try (ControlRegion c = ControlRegion.open(file("c", BackendPaths.CONTROL_SIZE))) {
            c.format(B, 2, "GPU-be", tokens(2), new boolean[GpuElement.MAX_SLOTS]);
            c.assign(1, new ControlRegion.Assignment(F, "front", 1L << 30, 25, "GPU-x", 64L << 20));
            BackendSlotFlyweight s = c.slot(1);
            assertEquals(BackendSlotFlyweight.SLOT_ASSIGNED, s.state());
            assertEquals(1, s.generation());
            assertEquals(F, s.frontendUuid());
            assertEquals("GPU-x", s.device());
            assertEquals(25, s.computeShare());
            assertEquals(64L << 20, s.regionSize());
            assertEquals(2, c.header().hostGeneration());
            c.free(1);
            assertEquals(BackendSlotFlyweight.SLOT_FREE, s.state());
            assertEquals(2, s.generation());
            assertEquals(3, c.header().hostGeneration());
        }
    }

    @Test
    void awaitIdleEndsOnIdleOnAStillHeartbeatOrAfterTheBound() throws Exception {
        try (ControlRegion c = ControlRegion.open(file("c", BackendPaths.CONTROL_SIZE))) {
            c.format(B, 2, "GPU-be", tokens(2), new boolean[GpuElement.MAX_SLOTS]);
            AtomicLong clock = new AtomicLong();
            assertEquals(ControlRegion.Wait.IDLE, c.awaitIdle(0, 10_000, 50, 2_000, clock::get, clock::addAndGet));

            c.slot(0).servedGenerationVolatile(1);
            assertEquals(ControlRegion.Wait.NO_AGENT, c.awaitIdle(0, 10_000, 50, 2_000, clock::get, clock::addAndGet),
                    "heartbeat 0: no agent since the back-end started");

            // an agent that beats but never lets go: the bound
            c.header().agentHeartbeatVolatile(1);
            clock.set(0);
            assertEquals(ControlRegion.Wait.TIMEOUT, c.awaitIdle(0, 10_000, 50, 2_000, clock::get, ms -> {
                clock.addAndGet(ms);
                c.header().agentHeartbeatVolatile(c.header().agentHeartbeatVolatile() + 1);
            }));
            assertTrue(clock.get() >= 10_000 && clock.get() < 10_100, "waited the bound, in steps: " + clock.get());

            // a heartbeat that stops: no agent after 2 s
            clock.set(0);
            assertEquals(ControlRegion.Wait.NO_AGENT, c.awaitIdle(0, 10_000, 50, 2_000, clock::get, clock::addAndGet));
            assertEquals(2_000, clock.get());

            // the agent lets go after a while
            clock.set(0);
            assertEquals(ControlRegion.Wait.IDLE, c.awaitIdle(0, 10_000, 50, 2_000, clock::get, ms -> {
                clock.addAndGet(ms);
                c.header().agentHeartbeatVolatile(c.header().agentHeartbeatVolatile() + 1);
                if (clock.get() == 500) {
                    c.slot(0).servedGenerationVolatile(0);
                }
            }));
            assertEquals(500, clock.get());
        }
    }

    @Test
    void viewMakesTheAgentsWordsPrintable() throws Exception {
        try (ControlRegion c = ControlRegion.open(file("c", BackendPaths.CONTROL_SIZE))) {
            c.format(B, 2, "GPU-be", tokens(2), new boolean[GpuElement.MAX_SLOTS]);
            c.slot(1).serverMessage("bad\u0007news").serverPid(42).serverStateVolatile(BackendSlotFlyweight.SERVED_FAILED);
            ControlRegion.View v = c.view(2);
            assertTrue(v.formatted());
            assertEquals(2, v.slots().size());
            assertEquals("bad?news", v.slots().get(1).serverMessage());
            assertEquals("FAILED", v.slots().get(1).serverStateName());
            assertEquals(42, v.slots().get(1).serverPid());
        }
    }

    @Test
    void slotRegionStampAndWipe() throws Exception {
        Path slot = file("s", 3L << 20);
        try (RandomAccessFile f = new RandomAccessFile(slot.toFile(), "rw")) {
            f.seek((2L << 20) + 17);
            f.write(0x5a);
            f.seek(0);
            f.write(new byte[] {1, 2, 3});
        }
        SlotRegion.wipe(slot, new ControlRegion.Token(-1, 0x1234), 7);
        assertArrayEquals(new long[] {-1, 0x1234, 7}, SlotRegion.readIdentity(slot));
        byte[] all = Files.readAllBytes(slot);
        assertEquals(3L << 20, all.length, "never truncated");
        for (int i = 0; i < all.length; i++) {
            if (i < 0xC00 || i >= 0xC14) {
                assertEquals(0, all[i], "byte " + i);
            }
        }
    }
}
