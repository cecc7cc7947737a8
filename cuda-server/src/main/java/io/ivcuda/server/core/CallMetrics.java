package io.ivcuda.server.core;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Opcodes;
import java.util.concurrent.atomic.LongAdder;

/**
 * What a VM's (or one guest process's) calls did, for {@code ivshmem-provisioner status} and {@code metrics}
 * (docs/operations.md, "Metrics"): calls and errors (by function for a VM), bytes copied each way, kernel
 * launches and the time the server spent serving them. Counted on the hot path by every channel worker at
 * once, so each figure is a {@link LongAdder} (an add is a few nanoseconds and workers do not contend on one
 * cache line); read only when a status is written.
 */
public final class CallMetrics {
    private final LongAdder[] calls;
    private final LongAdder[] errors;
    private final LongAdder totalCalls = new LongAdder();
    private final LongAdder totalErrors = new LongAdder();
    private final LongAdder busyNanos = new LongAdder();
    private final LongAdder bytesToDevice = new LongAdder();
    private final LongAdder bytesToHost = new LongAdder();
    private final LongAdder launches = new LongAdder();

    private CallMetrics(boolean byFunction) {
        calls = byFunction ? adders() : null;
        errors = byFunction ? adders() : null;
    }

    private static LongAdder[] adders() {
        LongAdder[] a = new LongAdder[Opcodes.LIMIT];
        for (int i = 0; i < a.length; i++) {
            a[i] = new LongAdder();
        }
        return a;
    }

    /** A VM's: calls and errors by function too. */
    public static CallMetrics byFunction() {
        return new CallMetrics(true);
    }

    /** A process's: totals only (a process is short-lived and there may be thousands). */
    public static CallMetrics totals() {
        return new CallMetrics(false);
    }

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
        if (calls != null && opcode >= 0 && opcode < calls.length) {
            calls[opcode].increment();
            if (failed) {
                errors[opcode].increment();
            }
        }
        if (!failed && (opcode == Opcodes.IVC_LAUNCH || opcode == Opcodes.IVC_LAUNCH_EX)) {
            launches.increment();
        }
    }

    /** Bytes a successful copy moved between the guest and the GPU. */
    public void copied(boolean toDevice, long bytes) {
        (toDevice ? bytesToDevice : bytesToHost).add(bytes);
    }

    public boolean byFunctionKept() {
        return calls != null;
    }

    /** Calls of {@code opcode} (0 for a process's figures, which are not by function). */
    public long calls(int opcode) {
        return calls == null ? 0 : calls[opcode].sum();
    }

    public long errors(int opcode) {
        return errors == null ? 0 : errors[opcode].sum();
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
