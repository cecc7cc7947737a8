package io.ivcuda.server.core;

import io.ivcuda.common.config.ServerKeys;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The JIT log bytes the VM's live link states hold (docs/threat-model.md, "Limits"): a link state
 * keeps its log buffers until it is destroyed, and link states are bounded only by the handle
 * limits, so without this a process could make the server hold {@code limit.handles.process} × two
 * logs (4 GiB at the defaults). Reserved before cuLinkCreate, per process ({@code
 * limit.jit.log.bytes.process}) and per VM ({@code limit.jit.log.bytes.vm}); given back when the
 * buffers are freed after cuLinkDestroy, by the process or by its reclaim.
 */
public final class JitLogBudget {
    private final long perProcess;
    private final long perVm;
    private final AtomicLong held = new AtomicLong();

    public JitLogBudget(Limits limits) {
        this.perProcess = limits.jitLogBytesPerProcess();
        this.perVm = limits.jitLogBytesPerVm();
    }

    /** Reserves {@code bytes} for {@code owner}; null when reserved, else why not (naming the limit). */
    public String reserve(Owner owner, long bytes) {
        AtomicLong own = owner.jitLogBytes();
        if (!Vm.reserveUpTo(own, bytes, perProcess)) {
            return bytes + " bytes of JIT logs do not fit in " + ServerKeys.LIMIT_JIT_LOG_BYTES_PROCESS.name() + " "
                    + perProcess + " with the process's live link states' " + own.get();
        }
        if (!Vm.reserveUpTo(held, bytes, perVm)) {
            own.addAndGet(-bytes);
            return bytes + " bytes of JIT logs do not fit in " + ServerKeys.LIMIT_JIT_LOG_BYTES_VM.name() + " "
                    + perVm + " with the VM's live link states' " + held.get();
        }
        return null;
    }

    public void release(Owner owner, long bytes) {
        owner.jitLogBytes().addAndGet(-bytes);
        held.addAndGet(-bytes);
    }

    /** The bytes the VM's live link states hold now. */
    public long held() {
        return held.get();
    }
}
