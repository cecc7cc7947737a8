package io.ivcuda.server.handler;

import static io.ivcuda.server.core.HandleTable.KIND_CTX;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.DeviceRanges;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.core.MemoryQuota;
import io.ivcuda.server.gen.HandleKinds;
import io.ivcuda.server.gen.MemoryCalls;
import io.ivcuda.server.gen.Reply;
import java.nio.ByteOrder;

/**
 * Device memory (allocations counted against the VM's quota, kept per process for the range checks
 * and for reclaim), memsets, and pinned host memory carved from the region's pool. The dispatcher
 * has checked every device and pool range before these run.
 */
final class MemoryHandler implements MemoryCalls {
    private static final int CU_POINTER_ATTRIBUTE_CONTEXT = 1;
    private static final int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
    private static final int CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3;
    private static final int CU_POINTER_ATTRIBUTE_HOST_POINTER = 4;
    private static final int CU_POINTER_ATTRIBUTE_BUFFER_ID = 7;
    private static final int CU_POINTER_ATTRIBUTE_IS_MANAGED = 8;
    private static final int CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;
    private static final int CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11;
    private static final int CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12;
    private static final int CU_POINTER_ATTRIBUTE_MAPPED = 13;
    private static final int CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE = 17;
    private static final int CU_MEMORYTYPE_DEVICE = 2;

    private final Session session;

    MemoryHandler(Session session) {
        this.session = session;
    }

    private String who(String operation) {
        return "channel " + session.index() + " pid " + session.ownerPid() + " " + operation;
    }

    @Override
    public int ivc_mem_alloc(Reply r, long bytesize) {
        if (bytesize <= 0) {
            session.warn("bytesize", String.valueOf(bytesize), CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        if (!session.mayAllocate("bytesize")) {
            return CuResult.OUT_OF_MEMORY;
        }
        if (!session.vm.reserve(bytesize, who("ivc_mem_alloc"), session.out)) {
            return CuResult.OUT_OF_MEMORY;
        }
        int result = session.cuda.memAlloc(session.out, bytesize);
        if (result != CuResult.SUCCESS) {
            session.vm.release(bytesize);
            return result;
        }
        long dptr = session.out.address;
        session.owner().ranges().add(new DeviceRanges.Range(dptr, bytesize, true, session.currentNativeContext()));
        r.set(0, dptr);
        return result;
    }

    @Override
    public int ivc_mem_alloc_pitch(Reply r, long widthInBytes, long height, int elementSizeBytes) {
        if (widthInBytes <= 0 || height <= 0 || widthInBytes > (1L << 40) || height > (1L << 40)) {
            session.warn("widthInBytes/height", widthInBytes + "x" + height, CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        if (!session.mayAllocate("widthInBytes")) {
            return CuResult.OUT_OF_MEMORY;
        }
        long estimate = ((widthInBytes + 511) & ~511L) * height;
        if (!session.vm.reserve(estimate, who("ivc_mem_alloc_pitch"), session.out)) {
            return CuResult.OUT_OF_MEMORY;
        }
        int result = session.cuda.memAllocPitch(session.out, widthInBytes, height, elementSizeBytes);
        if (result != CuResult.SUCCESS) {
            session.vm.release(estimate);
            return result;
        }
        long dptr = session.out.address;
        long pitch = session.out.bytes;
        // counted at its real size in place of the estimate, even where the driver's pitch is wider
        // than the estimate's 512-byte rows and the quota is passed: the memory is held, and its free
        // gives back exactly pitch x height
        session.vm.release(estimate - pitch * height);
        session.owner().ranges().add(new DeviceRanges.Range(dptr, pitch * height, true, session.currentNativeContext()));
        r.set(0, dptr);
        r.set(1, pitch);
        return result;
    }

    @Override
    public int ivc_mem_free(Reply r, long dptr) {
        if (dptr == 0) {
            return CuResult.SUCCESS;
        }
        DeviceRanges.Range range = session.owner().ranges().removeAllocation(dptr);
        if (range == null) {
            session.warn("dptr", "0x" + Long.toHexString(dptr) + " is not an allocation of this process", CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        // released once no call of another thread of the process uses it any more
        return session.vm.freeWhenIdle(range);
    }

    /** With a memory quota, the quota and the VM's use of it, not the card's (docs/sharing.md). */
    @Override
    public int cuMemGetInfo_v2(Reply r) {
        int result = session.cuda.memGetInfo(session.out);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        MemoryQuota.View view = session.vm.memoryView(session.out, session.out.bytes, session.out.totalBytes);
        r.set(0, view.free());
        r.set(1, view.total());
        return result;
    }

    @Override
    public int cuMemGetAddressRange_v2(Reply r, long dptr) {
        int result = session.cuda.memGetAddressRange(session.out, dptr);
        r.set(0, session.out.address);
        r.set(1, session.out.bytes);
        return result;
    }

    @Override
    public int cuMemsetD8_v2(Reply r, long dstDevice, int uc, long n) {
        return session.cuda.memset(1, dstDevice, uc, n, 0, false);
    }

    @Override
    public int cuMemsetD16_v2(Reply r, long dstDevice, int us, long n) {
        return session.cuda.memset(2, dstDevice, us, n, 0, false);
    }

    @Override
    public int cuMemsetD32_v2(Reply r, long dstDevice, int ui, long n) {
        return session.cuda.memset(4, dstDevice, ui, n, 0, false);
    }

    @Override
    public int cuMemsetD8Async(long dstDevice, int uc, long n, long hStream) {
        return session.cuda.memset(1, dstDevice, uc, n, hStream, true);
    }

    @Override
    public int cuMemsetD16Async(long dstDevice, int us, long n, long hStream) {
        return session.cuda.memset(2, dstDevice, us, n, hStream, true);
    }

    @Override
    public int cuMemsetD32Async(long dstDevice, int ui, long n, long hStream) {
        return session.cuda.memset(4, dstDevice, ui, n, hStream, true);
    }

    @Override
    public int ivc_host_alloc(Reply r, long bytesize, int flags) {
        long offset = session.vm.pool().allocate(bytesize, session.token());
        if (offset < 0) {
            session.warn("bytesize", bytesize + " bytes do not fit in the pool of " + session.vm.layout().poolSize(),
                    CuResult.OUT_OF_MEMORY);
            return bytesize <= 0 ? CuResult.INVALID_VALUE : CuResult.OUT_OF_MEMORY;
        }
        r.set(0, offset);
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_host_free(Reply r, long poolOffset) {
        if (!session.vm.pool().free(poolOffset, session.token())) {
            session.warn("poolOffset", poolOffset + " is not a pool block of this process", CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_host_device_pointer(Reply r, long poolOffsetAddress, int flags) {
        if (flags != 0) {
            return CuResult.INVALID_VALUE;
        }
        long poolDevice = session.vm.poolDevicePointer();
        if (poolDevice == 0) {
            return CuResult.NOT_SUPPORTED;
        }
        r.set(0, poolDevice + (poolOffsetAddress - session.vm.poolAddress()));
        return CuResult.SUCCESS;
    }

    /**
     * The process's handle for the device's current driver pool, which a cuMemAllocAsync without a
     * created current pool allocates from (the server never changes the driver's current pool): the
     * one cuDeviceGetMemPool answered it, or a new one. Into {@code session.out.handle}.
     */
    private int devicePoolHandle() {
        int result = session.cuda.deviceGetMemPool(session.out, session.vm.nativeDevice());
        if (result != CuResult.SUCCESS) {
            return result;
        }
        long nativePool = session.out.handle;
        HandleTable.Entry known = session.vm.handles().findNative(HandleKinds.MEMPOOL, session.token(), nativePool);
        if (known != null) {
            session.out.handle = known.id();
        } else if (session.vm.handles().canMint(session.token())) {
            session.out.handle = session.vm.handles().mint(HandleKinds.MEMPOOL, session.token(), nativePool, 0);
        } else {
            return session.refuse("attribute", "MEMPOOL_HANDLE: the process holds as many handles as it may",
                    CuResult.OUT_OF_MEMORY);
        }
        return CuResult.SUCCESS;
    }

    /**
     * Attributes of a device pointer, answered from the owner's ranges (the guest answers pool
     * pointers itself). Pointers outside them get CUDA_ERROR_INVALID_VALUE, as from the driver, and
     * so does HOST_POINTER: device memory has no host address (cuda.h, cuPointerGetAttribute);
     * cuPointerGetAttributes turns both into zeroes. IS_MANAGED (never: managed memory is refused)
     * and MAPPED (an allocation is mapped) are booleans, written as 4 bytes like MEMORY_TYPE.
     * MEMPOOL_HANDLE is the process's own handle of the pool a stream-ordered allocation came from
     * (recorded at ivc_mem_alloc_async), NULL for other memory (cuMemAlloc's, globals, graph
     * allocations): never a native pool, never another process's handle.
     */
    @Override
    public int ivc_pointer_attribute(Reply r, int capacity, int attribute, long ptr) {
        DeviceRanges.Range range = session.owner().ranges().find(ptr);
        if (range == null) {
            return CuResult.INVALID_VALUE;
        }
        long value;
        int size = 8;
        switch (attribute) {
            case CU_POINTER_ATTRIBUTE_CONTEXT -> {
                HandleTable.Entry ctx = session.vm.handles().findNative(KIND_CTX, session.token(), range.context());
                value = ctx == null ? 0 : ctx.id();
            }
            case CU_POINTER_ATTRIBUTE_MEMORY_TYPE -> {
                value = CU_MEMORYTYPE_DEVICE;
                size = 4;
            }
            case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_IS_MANAGED -> {
                value = 0;
                size = 4;
            }
            case CU_POINTER_ATTRIBUTE_MAPPED -> {
                value = 1;
                size = 4;
            }
            case CU_POINTER_ATTRIBUTE_HOST_POINTER -> {
                return CuResult.INVALID_VALUE;
            }
            case CU_POINTER_ATTRIBUTE_DEVICE_POINTER -> value = ptr;
            case CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR -> value = range.base();
            case CU_POINTER_ATTRIBUTE_RANGE_SIZE -> value = range.size();
            case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE -> {
                if (range.pool() == DeviceRanges.DEVICE_POOL) {
                    int result = devicePoolHandle();
                    if (result != CuResult.SUCCESS) {
                        return result;
                    }
                    value = session.out.handle;
                } else {
                    value = range.pool();
                }
            }
            default -> {
                session.warn("attribute", attribute + " is not answered by this server", CuResult.NOT_SUPPORTED);
                return CuResult.NOT_SUPPORTED;
            }
        }
        if (r.outbufCapacity() < size) {
            session.warn("capacity", capacity + " bytes for a " + size + "-byte attribute", CuResult.INVALID_VALUE);
            return CuResult.INVALID_VALUE;
        }
        if (size == 4) {
            r.buffer().putInt(r.outbufIndex(), (int) value, ByteOrder.LITTLE_ENDIAN);
        } else {
            r.buffer().putLong(r.outbufIndex(), value, ByteOrder.LITTLE_ENDIAN);
        }
        r.outbufLength(size);
        return CuResult.SUCCESS;
    }
}
