package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.NvmlQuery;
import io.ivcuda.server.backend.NvmlResult;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.core.MemoryQuota;
import io.ivcuda.server.core.Owner;
import io.ivcuda.server.gen.NvmlCalls;
import io.ivcuda.server.gen.Reply;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.agrona.UnsafeApi;

/**
 * NVML for the guest's libnvidia-ml (api/sharing.api, docs/sharing.md): the host's NVML, filtered
 * to what the VM may see — its one GPU, its memory quota and its own processes. Every call answers
 * CUDA_SUCCESS; NVML's answer is out 0, {@code status}. The host's other GPUs and other VMs'
 * processes are never named.
 */
final class NvmlHandler implements NvmlCalls {
    /** Longest string an answer carries (NVML's longest buffers are 96 bytes). */
    static final int MAX_STRING = 256;
    /** Most u64s of the processes' (pid, bytes) pairs one answer carries. */
    static final int MAX_PROCESS_WORDS = 512;
    /** nvml.h: NVML_TEMPERATURE_GPU, the one sensor; NVML_CLOCK_COUNT clock types (graphics, SM, memory, video). */
    static final int TEMPERATURE_GPU = 0;
    static final int CLOCK_TYPES = 4;

    private final Session session;

    NvmlHandler(Session session) {
        this.session = session;
    }

    @Override
    public int ivc_nvml_init(Reply r) {
        int status;
        long scratch = session.out.scratch;
        // the GPU CUDA gave this server, named by its PCI bus id (NVML numbers devices its own way)
        int found = session.cuda.deviceGetPciBusId(scratch, 64, session.vm.nativeDevice());
        if (found != CuResult.SUCCESS) {
            status = found == CuResult.NO_DEVICE ? NvmlResult.DRIVER_NOT_LOADED : NvmlResult.NOT_SUPPORTED;
        } else {
            status = session.cuda.nvmlOpen(new com.sun.jna.Pointer(scratch).getString(0));
        }
        r.set(0, status);
        r.set(1, status == NvmlResult.SUCCESS ? 1 : 0);
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_nvml_string(Reply r, int what, int capacity) {
        int cap = Math.min(Math.min(capacity, r.outbufCapacity()), MAX_STRING);
        if (what < 0 || what > NvmlQuery.LAST_STRING) {
            session.warn("what", what + " is not one (status NVML_ERROR_INVALID_ARGUMENT)", CuResult.SUCCESS);
            r.set(0, NvmlResult.INVALID_ARGUMENT);
            return CuResult.SUCCESS;
        }
        if (cap <= 0) {
            r.set(0, NvmlResult.INSUFFICIENT_SIZE);
            return CuResult.SUCCESS;
        }
        // into the scratch first: the answer leaves only whole, NUL-terminated, within cap
        long scratch = session.out.scratch;
        UnsafeApi.setMemory(scratch, MAX_STRING + 1, (byte) 0);
        int status = session.cuda.nvmlString(what, scratch, cap);
        if (status == NvmlResult.SUCCESS) {
            int n = 0;
            while (n < cap && UnsafeApi.getByte(scratch + n) != 0) {
                n++;
            }
            if (n >= cap) {
                status = NvmlResult.INSUFFICIENT_SIZE;
            } else {
                for (int i = 0; i < n; i++) {
                    r.buffer().putByte(r.outbufIndex() + i, UnsafeApi.getByte(scratch + i));
                }
                r.buffer().putByte(r.outbufIndex() + n, (byte) 0);
                r.outbufLength(n + 1);
            }
        }
        r.set(0, status);
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_nvml_value(Reply r, int what, int arg) {
        if (what < NvmlQuery.TEMPERATURE || what > NvmlQuery.LAST_VALUE) {
            session.warn("what", what + " is not one (status NVML_ERROR_INVALID_ARGUMENT)", CuResult.SUCCESS);
            r.set(0, NvmlResult.INVALID_ARGUMENT);
            return CuResult.SUCCESS;
        }
        // the host's NVML checks its arguments too; the guest's are bounded here all the same
        boolean argOk = switch (what) {
            case NvmlQuery.TEMPERATURE -> arg == TEMPERATURE_GPU;
            case NvmlQuery.CLOCK, NvmlQuery.MAX_CLOCK -> arg >= 0 && arg < CLOCK_TYPES;
            default -> arg == 0;
        };
        if (!argOk) {
            session.warn("arg", arg + " for what " + what + " (status NVML_ERROR_INVALID_ARGUMENT)", CuResult.SUCCESS);
            r.set(0, NvmlResult.INVALID_ARGUMENT);
            return CuResult.SUCCESS;
        }
        int status = session.cuda.nvmlValue(session.out, what, arg);
        r.set(0, status);
        r.set(1, status == NvmlResult.SUCCESS ? session.out.bytes : 0);
        return CuResult.SUCCESS;
    }

    /** With a quota, the VM's figures (as cuMemGetInfo's, docs/sharing.md); without, the card's. */
    @Override
    public int ivc_nvml_memory(Reply r) {
        int status = session.cuda.nvmlMemory(session.out);
        r.set(0, status);
        if (status != NvmlResult.SUCCESS) {
            return CuResult.SUCCESS;
        }
        long total = session.out.totalBytes;
        long free = session.out.bytes;
        long used = session.out.address;
        if (session.vm.memoryQuota() > 0) {
            MemoryQuota.View view = session.vm.memoryView(session.out, free, total);
            total = view.total();
            free = view.free();
            used = view.held();
        }
        r.set(1, total);
        r.set(2, 0);
        r.set(3, free);
        r.set(4, used);
        return CuResult.SUCCESS;
    }

    /**
     * This VM's processes that hold device memory or a context, as (pid, bytes) pairs: the pids the
     * guest reported at hello, the bytes of their allocations. The host's other processes (other
     * VMs' servers) are never listed.
     */
    @Override
    public int ivc_nvml_processes(Reply r, int capacity) {
        List<long[]> processes = new ArrayList<>();
        for (Owner owner : session.vm.owners().values()) {
            if (owner.closed()) {
                continue;
            }
            long bytes = owner.ranges().allocatedBytes();
            if (bytes > 0 || owner.primaryRetains().get() > 0 || holdsContext(owner.token())) {
                processes.add(new long[] {owner.pid(), bytes});
            }
        }
        // capacity is the guest's u32: above 2^31 it arrives negative, and is then no room at all
        int words = Math.max(0, Math.min(Math.min(capacity, MAX_PROCESS_WORDS), r.outbufCapacity() / 8)) & ~1;
        int fit = Math.min(processes.size(), words / 2);
        for (int i = 0; i < fit; i++) {
            r.buffer().putLong(r.outbufIndex() + 16 * i, processes.get(i)[0], ByteOrder.LITTLE_ENDIAN);
            r.buffer().putLong(r.outbufIndex() + 16 * i + 8, processes.get(i)[1], ByteOrder.LITTLE_ENDIAN);
        }
        r.outbufLength(fit * 16);
        r.set(0, NvmlResult.SUCCESS);
        r.set(1, processes.size());
        return CuResult.SUCCESS;
    }

    private boolean holdsContext(long token) {
        for (HandleTable.Entry e : session.vm.handles().ownedBy(token)) {
            if (e.kind() == HandleTable.KIND_CTX) {
                return true;
            }
        }
        return false;
    }
}
