package io.ivcuda.server.handler;

import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.backend.StdoutCapture;
import io.ivcuda.server.channel.ChunkStream;
import io.ivcuda.server.core.DeviceRanges;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.core.Owner;
import io.ivcuda.server.core.Vm;
import io.ivcuda.server.gen.Checks;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.wire.ChannelFlyweight;
import java.util.Arrays;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * One channel's session, shared by its section handlers (all on the channel's worker thread): the
 * VM, the driver, the calling process (its owner token, known once ivc_hello succeeded), the
 * worker's scratch {@link Out}, the window, and the parameter {@link Checks} the generated dispatcher
 * runs before a handler: handles are the process's own (kind, generation, owner), the device is the
 * one the VM sees, device ranges lie in the process's allocations or pool blocks, pool ranges in its
 * pool blocks.
 *
 * <p>What the checks resolve stays <em>pinned</em> until the call returns ({@link #called}): a
 * handle cannot be destroyed and an allocation's memory is not released while a call of another
 * thread of the process still uses it (a destroy waits, a free is deferred). Handlers that resolve
 * handles or ranges themselves pin them with {@link #pinHandle} / {@link #pinRange}.
 */
public final class Session implements Checks {
    private static final Logger LOG = LogManager.getLogger(Session.class);

    final Vm vm;
    final CudaBackend cuda;
    final Out out;
    final ChunkStream chunks;
    final Reclaimer reclaimer;
    private final int index;
    private final long token;
    private final ChannelFlyweight channel;
    private Owner owner;
    private boolean greeted;
    private int opcode;
    /** What the current call pinned: handle ids and ranges, released by {@link #called}. */
    private long[] pinnedHandles = new long[8];
    private int pinnedHandleCount;
    private DeviceRanges.Range[] pinnedRanges = new DeviceRanges.Range[8];
    private int pinnedRangeCount;
    /**
     * The JIT options, logs and outputs of this channel's last module or library load, for the guest
     * to read after the call (ivc_jit_log_read of link state 0); freed at the next load or when the
     * session ends. One per channel, at most two logs of {@code limit.jit.log.bytes}.
     */
    private io.ivcuda.server.core.JitLogs loadLogs;

    Session(Vm vm, int index, long token, ChannelFlyweight channel, ChunkStream chunks, Reclaimer reclaimer) {
        this.vm = vm;
        this.cuda = vm.backend();
        this.out = cuda.newOut();
        this.index = index;
        this.token = token;
        this.channel = channel;
        this.chunks = chunks;
        this.reclaimer = reclaimer;
    }

    int index() {
        return index;
    }

    long token() {
        return token;
    }

    /** The calling process's state: set by a successful ivc_hello, which every other call follows. */
    Owner owner() {
        return owner;
    }

    int ownerPid() {
        return channel.ownerPid();
    }

    boolean greeted() {
        return greeted;
    }

    /**
     * ivc_hello succeeded: the session belongs to the process of this channel's token. False (and
     * not greeted) when the server is reclaiming that process or holds as many processes as it may.
     */
    boolean greet() {
        Owner o = vm.greet(token);
        if (o == null) {
            return false;
        }
        owner = o;
        greeted = true;
        // from now on what the driver prints in this worker's thread is this process's
        StdoutCapture.serve(this::deviceOutput);
        return true;
    }

    /**
     * What the driver printed in this worker's thread (during one of its calls). Natively a process's
     * kernels print only into its own contexts; here the device's primary context is shared by the
     * VM's processes, so the driver may flush one process's output in another's call. While this
     * process uses the primary context and another process of the VM does too, the bytes could be
     * either's: they are withheld (counted and said), never given to the wrong one.
     */
    private void deviceOutput(byte[] bytes) {
        Owner o = owner;
        if (o == null || o.closed()) {
            return;
        }
        if (o.primaryRetains().get() > 0) {
            for (Owner other : vm.owners().values()) {
                if (other != o && !other.closed() && other.primaryRetains().get() > 0) {
                    o.output().withhold(bytes.length);
                    return;
                }
            }
        }
        o.output().append(bytes, bytes.length);
    }

    /** Whether the process has device output (or a note about lost output) to read. */
    boolean outputPending() {
        Owner o = owner;
        return o != null && o.output().pending();
    }

    /** ivc_goodbye, ivc_process_exit: the next call must be a hello again. */
    void close() {
        greeted = false;
        keepLoadLogs(null);
    }

    /** A load's JIT logs replace the last load's (freed: the driver wrote them during its call only). */
    void keepLoadLogs(io.ivcuda.server.core.JitLogs logs) {
        if (loadLogs != null) {
            loadLogs.free();
        }
        loadLogs = logs;
    }

    /** The last module or library load's JIT logs on this channel, null if none. */
    io.ivcuda.server.core.JitLogs loadLogs() {
        return loadLogs;
    }

    void calling(int op) {
        opcode = op;
    }

    /** A dispatched call or ring record ended with {@code result} after {@code nanos}: counted for the VM and the process. */
    void finished(int op, int result, long nanos) {
        vm.metrics().record(op, result, nanos);
        Owner o = owner;
        if (o != null) {
            o.metrics().record(op, result, nanos);
        }
        if (io.ivcuda.server.core.FatalFault.fatal(result)) {
            vm.fatalFault().observe(o != null ? o.pid() : ownerPid(), op, result);
        }
    }

    /** A copy moved {@code bytes} between the guest and the GPU: counted for the VM and the process. */
    void copied(boolean toDevice, long bytes) {
        vm.metrics().copied(toDevice, bytes);
        Owner o = owner;
        if (o != null) {
            o.metrics().copied(toDevice, bytes);
        }
    }

    /** The call returned: releases what it pinned (a free or destroy waiting for it may go on). */
    void called() {
        for (int i = 0; i < pinnedHandleCount; i++) {
            vm.handles().unpin(pinnedHandles[i]);
        }
        pinnedHandleCount = 0;
        for (int i = 0; i < pinnedRangeCount; i++) {
            DeviceRanges.Range r = pinnedRanges[i];
            pinnedRanges[i] = null;
            r.use().unpin();
        }
        pinnedRangeCount = 0;
    }

    /** Resolves and pins the caller's handle for the rest of the current call; null if it is not one. */
    HandleTable.Entry pinHandle(int kind, long id) {
        HandleTable.Entry e = vm.handles().pin(id, kind, token);
        if (e != null) {
            if (pinnedHandleCount == pinnedHandles.length) {
                pinnedHandles = Arrays.copyOf(pinnedHandles, pinnedHandleCount * 2);
            }
            pinnedHandles[pinnedHandleCount++] = id;
        }
        return e;
    }

    /** Resolves and pins the caller's device range for the rest of the current call; null if it is not one. */
    DeviceRanges.Range pinRange(long address, long bytes) {
        DeviceRanges.Range r = owner.ranges().pin(address, bytes);
        if (r != null) {
            track(r);
        }
        return r;
    }

    /** A range pinned for the current call: unpinned by {@link #called}. */
    private void track(DeviceRanges.Range r) {
        if (pinnedRangeCount == pinnedRanges.length) {
            pinnedRanges = Arrays.copyOf(pinnedRanges, pinnedRangeCount * 2);
        }
        pinnedRanges[pinnedRangeCount++] = r;
    }

    /**
     * Whether the process may hold one more device allocation ({@code limit.allocations.process});
     * refuses the call (logged) when not. Handlers that allocate device memory ask it first.
     */
    boolean mayAllocate(String field) {
        int limit = vm.limits().allocationsPerProcess();
        if (owner.ranges().count() < limit) {
            return true;
        }
        warn(field, "the process holds " + ServerKeys.LIMIT_ALLOCATIONS_PROCESS.name() + " " + limit + " allocations", CuResult.OUT_OF_MEMORY);
        return false;
    }

    private boolean pinnedByThisCall(long id) {
        for (int i = 0; i < pinnedHandleCount; i++) {
            if (pinnedHandles[i] == id) {
                return true;
            }
        }
        return false;
    }

    /** The worker leaves for good: nothing current on its thread, its scratch memory freed. */
    void detach() {
        StdoutCapture.serve(null);
        if (greeted) {
            cuda.ctxSetCurrent(0);
        }
        greeted = false;
        keepLoadLogs(null);
        out.free();
    }

    /**
     * Logs why a handler refused the current call ({@code field} and what is wrong with it): counted,
     * and rate-limited per kind (operation and field) by the VM's {@link io.ivcuda.server.core.RefusalLog}.
     */
    void warn(String field, String detail, int result) {
        int pid = ownerPid();
        String operation = Opcodes.name(opcode);
        vm.refusals().log(LOG, Level.WARN, operation + " " + field, () -> "channel " + index + " pid " + pid + " "
                + operation + ": " + field + " " + detail + " → " + CuResult.name(result));
    }

    /** Refuses the current call: logs as {@link #warn} and answers {@code result}. */
    int refuse(String field, String detail, int result) {
        warn(field, detail, result);
        return result;
    }

    /** The native context current on this thread (0 when none). */
    long currentNativeContext() {
        cuda.ctxGetCurrent(out);
        return out.handle;
    }

    // ---- Checks ----------------------------------------------------------------------------

    @Override
    public int device(int ordinal) {
        return ordinal == 0 ? vm.nativeDevice() : NO_DEVICE;
    }

    @Override
    public long handle(int kind, long id) {
        HandleTable.Entry e = pinHandle(kind, id);
        return e == null ? NO_HANDLE : e.nativeValue();
    }

    @Override
    public boolean canMint(int kind) {
        return vm.handles().canMint(token);
    }

    @Override
    public long beginRelease(int kind, long id) {
        // waits for the process's other calls that use it; a call never destroys what it also uses
        HandleTable.Entry e = pinnedByThisCall(id) ? null : vm.handles().beginRelease(id, kind, token, chunks::stopping);
        if (e == null) {
            return NO_HANDLE;
        }
        if (kind == HandleTable.KIND_CTX && e.extra() != 0) {
            // a primary context is shared by the VM's processes: released, never destroyed
            vm.handles().endRelease(id, false);
            return NO_HANDLE;
        }
        return e.nativeValue();
    }

    @Override
    public void endRelease(long id, boolean released) {
        vm.handles().endRelease(id, released);
    }

    @Override
    public boolean deviceRange(long address, long bytes) {
        if (bytes < 0) {
            return false;
        }
        if (pinRange(address, bytes) != null) {
            return true;
        }
        long poolDevice = vm.poolDevicePointer();
        if (poolDevice != 0 && address - poolDevice >= 0 && vm.pool().blockOf(address - poolDevice, bytes, token) != null) {
            return true;
        }
        // mapped virtual memory with access set (api/vmm.api): its reservation stays pinned
        DeviceRanges.Range mapped = owner.vmm().pinMapped(address, bytes);
        if (mapped != null) {
            track(mapped);
        }
        return mapped != null;
    }

    @Override
    public long poolRange(long offset, long bytes) {
        long poolSize = vm.layout().poolSize();
        if (offset < 0 || bytes < 0 || offset > poolSize || bytes > poolSize - offset
                || vm.pool().blockOf(offset, bytes, token) == null) {
            return 0;
        }
        return vm.poolAddress() + offset;
    }

    @Override
    public int settle(boolean toServer, long bytes, int result) {
        boolean moved = toServer ? chunks.discard(bytes) : chunks.zeroFill(bytes);
        return moved ? result : CuResult.DEVICE_UNAVAILABLE;
    }
}
