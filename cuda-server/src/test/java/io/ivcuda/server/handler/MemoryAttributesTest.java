package io.ivcuda.server.handler;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The memory-feature attributes a guest is told are absent (docs/memory.md), and only those. */
class MemoryAttributesTest {
    @Test
    void managedAndUnremotedFeaturesAnswerZero() {
        for (int attribute : new int[] {83, 88, 89, 91, 100, 101, 103, 116, 119, 124}) {
            assertTrue(MemoryAttributes.answersZero(attribute), "attribute " + attribute);
        }
    }

    @Test
    void everythingElsePassesThrough() {
        // max threads per block, SM count, unified addressing, can map host memory, compute capability,
        // host registration and memory pools, virtual memory management (remoted)
        for (int attribute : new int[] {1, 16, 41, 19, 75, 76, 99, 102, 113, 115, 0, -1, 100000}) {
            assertFalse(MemoryAttributes.answersZero(attribute), "attribute " + attribute);
        }
    }
}
