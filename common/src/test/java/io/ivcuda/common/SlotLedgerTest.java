package io.ivcuda.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SlotLedgerTest {
    private static final String B = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
    private static final String F1 = "11111111-1111-1111-1111-111111111111";
    private static final String F2 = "22222222-2222-2222-2222-222222222222";

    @TempDir
    Path dir;

    @Test
    void noFileIsNoAssignment() throws Exception {
        assertEquals(List.of(), new SlotLedger(dir.resolve("none")).read());
    }

    @Test
    void writesOneLinePerAssignmentAndReadsThemBack() throws Exception {
        SlotLedger ledger = new SlotLedger(dir.resolve("state/backend-slots"));
        ledger.update(a -> a.add(new SlotLedger.Assignment(B, 2, F1, "front one")));
        ledger.update(a -> a.add(new SlotLedger.Assignment(B, 0, F2, "f2")));
        List<SlotLedger.Assignment> read = ledger.read();
        assertEquals(List.of(new SlotLedger.Assignment(B, 0, F2, "f2"), new SlotLedger.Assignment(B, 2, F1, "front one")), read);
        assertTrue(Files.readString(ledger.file()).contains(B + " 2 " + F1 + " front one\n"), "the documented line format");
        assertEquals(2, SlotLedger.ofFrontend(read, F1).orElseThrow().slot());
        assertEquals(F2, SlotLedger.ofSlot(read, B, 0).orElseThrow().frontendUuid());
        assertEquals(List.of(0, 2), SlotLedger.ofBackend(read, B).stream().map(SlotLedger.Assignment::slot).toList());
        ledger.update(a -> a.removeIf(x -> x.frontendUuid().equals(F1)));
        assertEquals(1, ledger.read().size());
        assertTrue(Files.notExists(dir.resolve("state/backend-slots.new")), "the temporary file was renamed");
    }

    @Test
    void refusesASlotGivenTwice() throws Exception {
        SlotLedger ledger = new SlotLedger(dir.resolve("backend-slots"));
        ledger.update(a -> a.add(new SlotLedger.Assignment(B, 1, F1, "f1")));
        assertThrows(IllegalStateException.class, () -> ledger.update(a -> a.add(new SlotLedger.Assignment(B, 1, F2, "f2"))));
        assertEquals(1, ledger.read().size(), "nothing was written");
    }

    @Test
    void aBadLineIsNamedWithFileAndLine() throws Exception {
        Path file = dir.resolve("backend-slots");
        Files.writeString(file, "# comment\n" + B + " 1 " + F1 + " ok\n" + B + " x " + F2 + " bad\n");
        var e = assertThrows(IvcudaConfigException.class, () -> new SlotLedger(file).read());
        assertTrue(e.getMessage().contains(file + " line 3"), e.getMessage());
    }

    @Test
    void aNameCannotBreakTheLine() throws Exception {
        SlotLedger ledger = new SlotLedger(dir.resolve("backend-slots"));
        ledger.update(a -> a.add(new SlotLedger.Assignment(B, 1, F1, "evil\nname")));
        assertEquals("evil?name", ledger.read().get(0).frontendName());
    }

    @Test
    void concurrentUpdatesNeverLoseOne() throws Exception {
        SlotLedger ledger = new SlotLedger(dir.resolve("backend-slots"));
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<Object>> done = new java.util.ArrayList<>();
            for (int i = 0; i < 16; i++) {
                String f = String.format("%08d-0000-0000-0000-000000000000", i);
                done.add(pool.submit(() -> ledger.update(a -> {
                    int free = 0;
                    while (SlotLedger.ofSlot(a, B, free).isPresent()) {
                        free++;
                    }
                    a.add(new SlotLedger.Assignment(B, free, f, "f"));
                    return null;
                })));
            }
            for (Future<Object> f : done) {
                f.get();
            }
        } finally {
            pool.shutdown();
        }
        assertEquals(16, ledger.read().size(), "each update saw the one before it (the lock held across read and write)");
    }
}
