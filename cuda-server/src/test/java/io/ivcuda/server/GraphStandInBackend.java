package io.ivcuda.server;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.Out;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the graph stand-ins of CaptureAndGraphTest and GraphBuildTest share: the driver's graphs
 * are made-up native values, kept while they live so a test can see which the server destroyed,
 * and destroys are counted. A library stand-in underneath, because graph kernel nodes need a
 * kernel (GraphBuildTest); the host-memory backend itself has no graphs.
 */
class GraphStandInBackend extends LibraryTest.LibraryBackend {
    final AtomicInteger next = new AtomicInteger(0x100);
    final Set<Long> graphs = ConcurrentHashMap.newKeySet();
    final AtomicInteger graphDestroys = new AtomicInteger();

    /** A native value no other call of this stand-in has answered. */
    long fresh() {
        return next.incrementAndGet() * 16L;
    }

    @Override
    public int graphCreate(Out o, int flags) {
        o.handle = fresh();
        graphs.add(o.handle);
        return CuResult.SUCCESS;
    }

    @Override
    public int graphDestroy(long graph) {
        // removed before counted: a test that waits for the count then sees the set without it
        boolean known = graphs.remove(graph);
        graphDestroys.incrementAndGet();
        return known ? CuResult.SUCCESS : CuResult.INVALID_VALUE;
    }

    @Override
    public int graphNodeGetType(Out o, long node) {
        o.value = 0;
        return CuResult.SUCCESS;
    }
}
