package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** limit.recoveries within limit.recoveries.window.ms, counted across re-executions through the environment. */
class RecoveryBudgetTest {
    static final long NOW = 1_800_000_000_000L;
    static final long WINDOW = 600_000;

    @Test
    void aServerThatNeverRecoveredMay() {
        RecoveryBudget b = RecoveryBudget.of(Map.of(), 2, WINDOW, NOW);
        assertTrue(b.allows());
        assertEquals(Long.toString(NOW), b.withReplacementAt(NOW));
    }

    @Test
    void theLimitCountsOnlyReplacementsWithinTheWindow() {
        String times = (NOW - WINDOW - 1) + "," + (NOW - 1000) + "," + (NOW - 10);
        RecoveryBudget b = RecoveryBudget.of(Map.of(RecoveryBudget.TIMES, times), 2, WINDOW, NOW);
        assertFalse(b.allows(), "two within the window reach a limit of 2");
        assertTrue(b.describe().startsWith("2 replacement(s)"), b.describe());
        RecoveryBudget wider = RecoveryBudget.of(Map.of(RecoveryBudget.TIMES, times), 3, WINDOW, NOW);
        assertTrue(wider.allows());
        assertEquals((NOW - 1000) + "," + (NOW - 10) + "," + NOW, wider.withReplacementAt(NOW),
                "the next image is handed the recent ones and this one; the old one is forgotten");
    }

    @Test
    void limitZeroNeverReplaces() {
        assertFalse(RecoveryBudget.of(Map.of(), 0, WINDOW, NOW).allows());
    }

    @Test
    void whatItCannotReadCountsAsNothingAndIsBounded() {
        String junk = "x,,-5," + (NOW + 60_000) + ",12abc";
        RecoveryBudget b = RecoveryBudget.of(Map.of(RecoveryBudget.TIMES, junk), 1, WINDOW, NOW);
        assertTrue(b.allows(), "malformed, negative and future times are not replacements");
        String many = String.join(",", java.util.Collections.nCopies(5000, Long.toString(NOW - 1)));
        RecoveryBudget full = RecoveryBudget.of(Map.of(RecoveryBudget.TIMES, many), 1000, WINDOW, NOW);
        assertFalse(full.allows(), "at most 1000 read, which reach the largest limit");
        assertEquals(1001, full.withReplacementAt(NOW).split(",").length);
    }

    @Test
    void reexecHandsTheTimesToTheNextImage() {
        String[] env = Reexec.environment(Map.of("A", "1"), "pid 7 x", 0x1000, "5,6");
        assertTrue(Arrays.asList(env).contains(RecoveryBudget.TIMES + "=5,6"));
    }
}
