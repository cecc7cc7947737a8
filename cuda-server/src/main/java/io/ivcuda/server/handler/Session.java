package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.channel.ChunkStream;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.core.Owner;
import io.ivcuda.server.core.Vm;
import io.ivcuda.server.gen.Checks;
import io.ivcuda.server.gen.Opcodes;
import io.ivcuda.wire.ChannelFlyweight;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * One channel's session, shared by its section handlers (all on the channel's worker thread): the
 * VM, the driver, the calling process (its owner token, known once ivc_hello succeeded), the
 * worker's scratch {@link Out}, the window, and the parameter {@link Checks} the generated dispatcher
 * runs before a handler: handles are the process's own (kind, generation, owner), the device is the
 * one the VM sees, device ranges lie in the process's allocations or pool blocks, pool ranges in its
 * pool blocks.
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

    /** ivc_hello succeeded: the session belongs to the process of this channel's token. */
    void greet() {
        owner = vm.owner(token);
        greeted = true;
    }

    /** ivc_goodbye, ivc_process_exit: the next call must be a hello again. */
    void close() {
        greeted = false;
    }

    void calling(int op) {
        opcode = op;
    }

    /** The worker leaves for good: nothing current on its thread, its scratch memory freed. */
    void detach() {
        if (greeted) {
            cuda.ctxSetCurrent(0);
        }
        greeted = false;
        out.free();
    }

    /** Logs why a handler refused the current call ({@code field} and what is wrong with it). */
    void warn(String field, String detail, int result) {
        LOG.warn("channel {} pid {} {}: {} {} → {}", index, ownerPid(), Opcodes.name(opcode), field, detail,
                CuResult.name(result));
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
        HandleTable.Entry e = vm.handles().lookup(id, kind, token);
        return e == null ? NO_HANDLE : e.nativeValue();
    }

    @Override
    public long beginRelease(int kind, long id) {
        HandleTable.Entry e = vm.handles().beginRelease(id, kind, token);
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
        if (owner.ranges().contains(address, bytes)) {
            return true;
        }
        long poolDevice = vm.poolDevicePointer();
        return poolDevice != 0 && address - poolDevice >= 0 && vm.pool().blockOf(address - poolDevice, bytes, token) != null;
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
