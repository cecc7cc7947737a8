package io.ivcuda.server.core;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Opcodes;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * What a VM's (or one guest process's) calls did, for {@code ivshmem-provisioner status} and {@code metrics}
 * (docs/operations.md, "Metrics"): calls and errors by function, bytes copied each way, kernel launches and the
 * time the server spent serving them. Counted on the hot path by every channel worker at once, so each figure is
 * a {@link LongAdder} (an add is a few nanoseconds and workers do not contend on one cache line); read only when a
 * status is written.
 *
 * <p>A process is short-lived and a VM may run thousands, so the by-function counters are made on a function's
 * first call: a process that calls 30 functions holds 30 pairs of adders, plus one reference per opcode of the
 * table ({@value Opcodes#LIMIT} of them).
 */
public final class CallMetrics {
    /** Calls and errors of one function, made on its first call. */
    private static final class FunctionCounts {
        final LongAdder calls = new LongAdder();
        final LongAdder errors = new LongAdder();
    }

    private final AtomicReferenceArray<FunctionCounts> byOpcode = new AtomicReferenceArray<>(Opcodes.LIMIT);
    private final LongAdder totalCalls = new LongAdder();
    private final LongAdder totalErrors = new LongAdder();
    private final LongAdder busyNanos = new LongAdder();
    private final LongAdder bytesToDevice = new LongAdder();
    private final LongAdder bytesToHost = new LongAdder();
    private final LongAdder launches = new LongAdder();

    /**
     * One dispatched call or ring record: {@code opcode} is one the dispatcher knows or any value a guest
     * wrote (counted in the totals only when it is outside the table).
     */
    public void record(int opcode, int result, long nanos) {
        totalCalls.increment();
        busyNanos.add(nanos);
        boolean failed = result != CuResult.SUCCESS;
        if (failed) {
            totalErrors.increment();
        }
        if (opcode >= 0 && opcode < Opcodes.LIMIT) {
            FunctionCounts f = function(opcode);
            f.calls.increment();
            if (failed) {
                f.errors.increment();
            }
        }
        if (!failed && (opcode == Opcodes.IVC_LAUNCH || opcode == Opcodes.IVC_LAUNCH_EX)) {
            launches.increment();
        }
    }

    /** The counters of {@code opcode}, made by the first worker that needs them (a lost race adopts the winner's). */
    private FunctionCounts function(int opcode) {
        FunctionCounts f = byOpcode.get(opcode);
        if (f == null) {
            FunctionCounts made = new FunctionCounts();
            f = byOpcode.compareAndSet(opcode, null, made) ? made : byOpcode.get(opcode);
        }
        return f;
    }

    /** Bytes a successful copy moved between the guest and the GPU. */
    public void copied(boolean toDevice, long bytes) {
        (toDevice ? bytesToDevice : bytesToHost).add(bytes);
    }

    /** Calls of {@code opcode} (0 for one never called or outside the table). */
    public long calls(int opcode) {
        FunctionCounts f = opcode >= 0 && opcode < Opcodes.LIMIT ? byOpcode.get(opcode) : null;
        return f == null ? 0 : f.calls.sum();
    }

    public long errors(int opcode) {
        FunctionCounts f = opcode >= 0 && opcode < Opcodes.LIMIT ? byOpcode.get(opcode) : null;
        return f == null ? 0 : f.errors.sum();
    }

    /** How many functions have been called at least once (the by-function counters this holds). */
    public int functionsCalled() {
        int n = 0;
        for (int op = 0; op < Opcodes.LIMIT; op++) {
            if (byOpcode.get(op) != null) {
                n++;
            }
        }
        return n;
    }

    public long totalCalls() {
        return totalCalls.sum();
    }

    public long totalErrors() {
        return totalErrors.sum();
    }

    public long busyNanos() {
        return busyNanos.sum();
    }

    public long bytesToDevice() {
        return bytesToDevice.sum();
    }

    public long bytesToHost() {
        return bytesToHost.sum();
    }

    public long launches() {
        return launches.sum();
    }
}
