package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.VirtualMemory;
import io.ivcuda.server.gen.Reply;
import io.ivcuda.server.gen.VmmCalls;
import org.agrona.DirectBuffer;

/**
 * Virtual memory management (api/vmm.api, docs/memory.md "Virtual memory"): the calling process's
 * {@link VirtualMemory} checks every reservation, allocation and mapping a call names before the
 * driver sees it. The dispatcher has resolved the allocation handles and the device ordinals.
 */
final class VmmHandler implements VmmCalls {
    /** CUmemAllocationType: only pinned device memory is remoted (managed memory is refused). */
    private static final int CU_MEM_ALLOCATION_TYPE_PINNED = 1;
    /** CUmemAllocationHandleType bits: POSIX fd, Win32, Win32 KMT, fabric. */
    private static final int KNOWN_HANDLE_TYPES = 0xf;

    private final Session session;
    private final VirtualMemory.Refusal refusal;

    VmmHandler(Session session) {
        this.session = session;
        this.refusal = session::refuse;
    }

    private VirtualMemory vmm() {
        return session.owner().vmm();
    }

    /** The properties the driver may see: pinned memory, known handle types (the driver checks the rest). */
    private int checkProperties(int type, int handleTypes) {
        if (type != CU_MEM_ALLOCATION_TYPE_PINNED) {
            return session.refuse("type", type + " (only CU_MEM_ALLOCATION_TYPE_PINNED is remoted)", CuResult.NOT_SUPPORTED);
        }
        if ((handleTypes & ~KNOWN_HANDLE_TYPES) != 0) {
            return session.refuse("handleTypes", "0x" + Integer.toHexString(handleTypes), CuResult.INVALID_VALUE);
        }
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_vmm_granularity(Reply r, int type, int handleTypes, int device, int allocFlags, int option) {
        int checked = checkProperties(type, handleTypes);
        if (checked != CuResult.SUCCESS) {
            return checked;
        }
        int result = session.cuda.memGetAllocationGranularity(session.out, type, handleTypes, device, allocFlags, option);
        if (result == CuResult.SUCCESS) {
            r.set(0, session.out.bytes);
        }
        return result;
    }

    @Override
    public int ivc_vmm_address_reserve(Reply r, long size, long alignment, long addr, long flags) {
        int result = vmm().reserve(session.vm, session.out, size, alignment, addr, flags, refusal);
        if (result == CuResult.SUCCESS) {
            r.set(0, session.out.address);
        }
        return result;
    }

    @Override
    public int cuMemAddressFree(Reply r, long ptr, long size) {
        return vmm().free(session.vm, ptr, size, refusal);
    }

    @Override
    public int ivc_vmm_create(Reply r, long size, int type, int handleTypes, int device, int allocFlags, long flags) {
        int checked = checkProperties(type, handleTypes);
        if (checked != CuResult.SUCCESS) {
            return checked;
        }
        String who = "channel " + session.index() + " pid " + session.ownerPid() + " cuMemCreate";
        int result = vmm().create(session.vm, session.out, size, type, handleTypes, device, allocFlags, flags, who, refusal);
        if (result == CuResult.SUCCESS) {
            r.set(0, session.out.handle);
        }
        return result;
    }

    @Override
    public int cuMemRelease(Reply r, long handle) {
        return vmm().release(session.vm, handle, refusal);
    }

    @Override
    public int ivc_vmm_map(Reply r, long ptr, long size, long offset, long handle, long flags) {
        return vmm().map(session.vm, ptr, size, offset, handle, flags, refusal);
    }

    @Override
    public int ivc_vmm_unmap(Reply r, long ptr, long size) {
        return vmm().unmap(session.vm, ptr, size, refusal);
    }

    /** The descriptors are read once and checked before any is applied ({@link AccessDescs}). */
    @Override
    public int ivc_vmm_set_access(Reply r, DirectBuffer in, long ptr, long size, int descsIndex, int descsLength,
                                  long descsSize) {
        return AccessDescs.apply(session, in, descsIndex, descsLength,
                flags -> vmm().setAccess(session.vm, ptr, size, session.vm.nativeDevice(), flags, refusal));
    }

    @Override
    public int ivc_vmm_get_access(Reply r, int device, long ptr) {
        int result = vmm().getAccess(session.vm, session.out, device, ptr, refusal);
        if (result == CuResult.SUCCESS) {
            r.set(0, session.out.value & 0xffffffffL);
        }
        return result;
    }

    @Override
    public int ivc_vmm_properties(Reply r, long handle) {
        int result = vmm().properties(session.vm, session.out, handle, refusal);
        if (result == CuResult.SUCCESS) {
            if (session.out.address != session.vm.nativeDevice()) {
                // this server makes device allocations only: anything else is not the guest's
                return session.refuse("handle", "its location is not the device", CuResult.UNKNOWN);
            }
            r.set(0, session.out.value);
            r.set(1, session.out.offset);
            r.set(2, session.out.bytes);
        }
        return result;
    }

    @Override
    public int ivc_vmm_retain(Reply r, long addr) {
        int result = vmm().retain(session.vm, session.out, addr, refusal);
        if (result == CuResult.SUCCESS) {
            r.set(0, session.out.handle);
        }
        return result;
    }
}
