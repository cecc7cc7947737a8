package io.ivcuda.server.core;

import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.HandleKinds;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One process's virtual-memory objects (api/vmm.api, docs/memory.md "Virtual memory"): the address
 * ranges it reserved, the physical allocations it created (by native handle) and what it mapped
 * where. Every call checks against them, under this object's lock, before the driver sees it: a
 * process maps only its own allocations, only into its own reservations, never over a mapping.
 *
 * <p>An allocation counts against the VM's memory quota from cuMemCreate until the driver frees it,
 * which is when it is neither held (cuMemCreate and each cuMemRetainAllocationHandle hold it once,
 * each cuMemRelease lets go once) nor mapped. Its handle leaves the table at the last release.
 *
 * <p>A copy may touch a mapped range once access was set on it ({@link #pinMapped}): the check
 * pins the whole reservation, so an unmap while another thread's copy runs there takes the
 * mapping out of the bookkeeping at once and unmaps it in the driver when that copy returned.
 */
public final class VirtualMemory {

    /** How a refusal is logged and answered (the session's). */
    @FunctionalInterface
    public interface Refusal {
        int refuse(String field, String detail, int result);
    }

    private static final class Allocation {
        long nativeHandle;
        final long size;
        /** The guest's handle id, 0 once the last release took it from the table. */
        long id;
        int refs = 1;
        int mappings;

        Allocation(long nativeHandle, long size) {
            this.nativeHandle = nativeHandle;
            this.size = size;
        }
    }

    private static final class Mapping {
        final long base;
        final long size;
        final Allocation allocation;
        /** CUmemAccess_flags last set on it (0: no access yet). */
        int access;

        Mapping(long base, long size, Allocation allocation) {
            this.base = base;
            this.size = size;
            this.allocation = allocation;
        }
    }

    private static final class Reservation {
        final long base;
        final long size;
        /** What a copy's check pins (never an allocation: cuMemFree and reclaim's range loop skip it). */
        final DeviceRanges.Range range;
        final TreeMap<Long, Mapping> mappings = new TreeMap<>();
        /** Taken out of the bookkeeping, to be unmapped in the driver once no copy uses the range. */
        final List<Mapping> unmapping = new ArrayList<>();
        boolean freeing;

        Reservation(long base, long size) {
            this.base = base;
            this.size = size;
            this.range = new DeviceRanges.Range(base, size, false, 0);
        }

        boolean contains(long address, long bytes) {
            long into = address - base;
            return bytes >= 0 && into >= 0 && into <= size && bytes <= size - into;
        }
    }

    private final long token;
    private final TreeMap<Long, Reservation> reservations = new TreeMap<>();
    private final Map<Long, Allocation> allocations = new HashMap<>();
    private int mappingCount;

    public VirtualMemory(long token) {
        this.token = token;
    }

    /** Reservations, allocations and mappings the process holds (each bounded by limit.allocations.process). */
    public synchronized int count() {
        return reservations.size() + allocations.size() + mappingCount;
    }

    /** Whether one more object would pass limit.allocations.process (lock held). */
    private boolean full(Vm vm) {
        return count() >= vm.limits().allocationsPerProcess();
    }

    private static String atLimit(Vm vm) {
        return "the process holds " + ServerKeys.LIMIT_ALLOCATIONS_PROCESS.name() + " " + vm.limits().allocationsPerProcess()
                + " reservations, allocations and mappings";
    }

    private Reservation reservationOf(long address, long bytes) {
        Map.Entry<Long, Reservation> e = reservations.floorEntry(address);
        return e != null && e.getValue().contains(address, bytes) ? e.getValue() : null;
    }

    /**
     * The mappings that tile [address, address+bytes) exactly, in order; null when a byte of it is
     * not mapped or a mapping reaches beyond it ({@code exact}) .
     */
    private static List<Mapping> tiling(Reservation r, long address, long bytes, boolean exact) {
        List<Mapping> tiles = new ArrayList<>();
        Map.Entry<Long, Mapping> first = r.mappings.floorEntry(address);
        if (first == null || (exact && first.getKey() != address)) {
            return null;
        }
        long at = first.getKey();
        long end = address + bytes;
        while (at < end) {
            Mapping m = r.mappings.get(at);
            if (m == null) {
                return null;
            }
            tiles.add(m);
            at = m.base + m.size;
        }
        return exact && at != end ? null : tiles;
    }

    // ---- reservations ----

    public synchronized int reserve(Vm vm, Out out, long size, long alignment, long addr, long flags, Refusal refusal) {
        if (size <= 0) {
            return refusal.refuse("size", String.valueOf(size), CuResult.INVALID_VALUE);
        }
        if (full(vm)) {
            return refusal.refuse("size", atLimit(vm), CuResult.OUT_OF_MEMORY);
        }
        int result = vm.backend().memAddressReserve(out, size, alignment, addr, flags);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        reservations.put(out.address, new Reservation(out.address, size));
        return result;
    }

    public synchronized int free(Vm vm, long ptr, long size, Refusal refusal) {
        Reservation r = reservations.get(ptr);
        if (r == null || r.size != size) {
            return refusal.refuse("ptr", "0x" + Long.toHexString(ptr) + "+" + size + " is not a reservation of this process",
                    CuResult.INVALID_VALUE);
        }
        if (!r.mappings.isEmpty()) {
            return refusal.refuse("ptr", "0x" + Long.toHexString(ptr) + " still has " + r.mappings.size()
                    + " mappings (cuMemUnmap them first)", CuResult.INVALID_VALUE);
        }
        reservations.remove(ptr);
        r.freeing = true;
        return r.range.use().whenIdle(() -> drain(vm, r));
    }

    // ---- allocations ----

    /** @param who names the caller in the quota's log line */
    public synchronized int create(Vm vm, Out out, long size, int type, int handleTypes, int device, int allocFlags,
                                   long flags, String who, Refusal refusal) {
        if (size <= 0) {
            return refusal.refuse("size", String.valueOf(size), CuResult.INVALID_VALUE);
        }
        if (full(vm)) {
            return refusal.refuse("size", atLimit(vm), CuResult.OUT_OF_MEMORY);
        }
        if (!vm.reserve(size, who, out)) {
            return CuResult.OUT_OF_MEMORY;
        }
        int result = vm.backend().memCreate(out, size, type, handleTypes, device, allocFlags, flags);
        if (result != CuResult.SUCCESS) {
            vm.release(size);
            return result;
        }
        Allocation a = new Allocation(out.handle, size);
        a.id = vm.handles().mint(HandleKinds.MEMHANDLE, token, out.handle, 0);
        allocations.put(out.handle, a);
        out.handle = a.id;
        return result;
    }

    /** Frees what the driver freed: an allocation neither held nor mapped leaves the quota (lock held). */
    private void forgetIfGone(Vm vm, Allocation a) {
        if (a.refs == 0 && a.mappings == 0) {
            vm.release(a.size);
        }
    }

    public synchronized int release(Vm vm, long nativeHandle, Refusal refusal) {
        Allocation a = allocations.get(nativeHandle);
        if (a == null || a.refs == 0) {
            return refusal.refuse("handle", "not an allocation this process holds", CuResult.INVALID_VALUE);
        }
        int result = vm.backend().memRelease(nativeHandle);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        if (--a.refs == 0) {
            vm.handles().remove(a.id);
            a.id = 0;
            allocations.remove(nativeHandle);
            forgetIfGone(vm, a);
        }
        return result;
    }

    /** cuMemRetainAllocationHandle: the allocation mapped at {@code addr}, held once more → out.handle (the id). */
    public synchronized int retain(Vm vm, Out out, long addr, Refusal refusal) {
        Reservation r = reservationOf(addr, 1);
        Map.Entry<Long, Mapping> e = r == null ? null : r.mappings.floorEntry(addr);
        Mapping m = e == null || addr - e.getKey() >= e.getValue().size ? null : e.getValue();
        if (m == null) {
            return refusal.refuse("addr", "0x" + Long.toHexString(addr) + " is not mapped by this process",
                    CuResult.INVALID_VALUE);
        }
        Allocation a = m.allocation;
        if (a.refs == 0 && !vm.handles().canMint(token)) {
            return refusal.refuse("handle", "the process holds as many handles as it may", CuResult.OUT_OF_MEMORY);
        }
        int result = vm.backend().memRetainAllocationHandle(out, addr);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        if (a.refs == 0) {
            // released before, still mapped: the driver names it again, the guest gets a new id
            a.nativeHandle = out.handle;
            a.id = vm.handles().mint(HandleKinds.MEMHANDLE, token, out.handle, 0);
            allocations.put(out.handle, a);
        } else if (out.handle != a.nativeHandle) {
            vm.backend().memRelease(out.handle);
            return refusal.refuse("addr", "the driver names another allocation there than this process mapped",
                    CuResult.UNKNOWN);
        }
        a.refs++;
        out.handle = a.id;
        return result;
    }

    /**
     * The allocation's properties (under the lock: another thread's last release cannot free the
     * handle during the driver call) → as {@link io.ivcuda.server.backend.CudaBackend#memGetAllocationProperties}.
     */
    public synchronized int properties(Vm vm, Out out, long nativeHandle, Refusal refusal) {
        Allocation a = allocations.get(nativeHandle);
        if (a == null || a.refs == 0) {
            return refusal.refuse("handle", "not an allocation this process holds", CuResult.INVALID_VALUE);
        }
        return vm.backend().memGetAllocationProperties(out, nativeHandle);
    }

    // ---- mappings ----

    public synchronized int map(Vm vm, long ptr, long size, long offset, long nativeHandle, long flags, Refusal refusal) {
        Allocation a = allocations.get(nativeHandle);
        if (a == null || a.refs == 0) {
            return refusal.refuse("handle", "not an allocation this process holds", CuResult.INVALID_VALUE);
        }
        if (size <= 0 || offset < 0 || offset > a.size || size > a.size - offset) {
            return refusal.refuse("size", size + " bytes at offset " + offset + " of an allocation of " + a.size,
                    CuResult.INVALID_VALUE);
        }
        Reservation r = reservationOf(ptr, size);
        if (r == null) {
            return refusal.refuse("ptr", "0x" + Long.toHexString(ptr) + "+" + size + " is not inside a reservation of this process",
                    CuResult.INVALID_VALUE);
        }
        Map.Entry<Long, Mapping> below = r.mappings.floorEntry(ptr + size - 1);
        if (below != null && below.getValue().base + below.getValue().size > ptr) {
            return refusal.refuse("ptr", "0x" + Long.toHexString(ptr) + "+" + size + " overlaps the mapping at 0x"
                    + Long.toHexString(below.getKey()), CuResult.INVALID_VALUE);
        }
        if (full(vm)) {
            return refusal.refuse("ptr", atLimit(vm), CuResult.OUT_OF_MEMORY);
        }
        int result = vm.backend().memMap(ptr, size, offset, nativeHandle, flags);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        r.mappings.put(ptr, new Mapping(ptr, size, a));
        a.mappings++;
        mappingCount++;
        return result;
    }

    /** Unmaps the mappings that tile [ptr, ptr+size) exactly: in the driver now, or once no copy uses them. */
    public synchronized int unmap(Vm vm, long ptr, long size, Refusal refusal) {
        Reservation r = reservationOf(ptr, size);
        List<Mapping> tiles = r == null || size <= 0 ? null : tiling(r, ptr, size, true);
        if (tiles == null) {
            return refusal.refuse("ptr", "0x" + Long.toHexString(ptr) + "+" + size
                    + " is not exactly a run of this process's mappings", CuResult.INVALID_VALUE);
        }
        for (Mapping m : tiles) {
            r.mappings.remove(m.base);
            r.unmapping.add(m);
        }
        return r.range.use().whenIdle(() -> drain(vm, r));
    }

    /** Unmaps in the driver what was taken out of the bookkeeping; frees the range if it is going. */
    private int drain(Vm vm, Reservation r) {
        synchronized (this) {
            int first = CuResult.SUCCESS;
            for (Mapping m : r.unmapping) {
                int result = vm.backend().memUnmap(m.base, m.size);
                if (first == CuResult.SUCCESS) {
                    first = result;
                }
                m.allocation.mappings--;
                mappingCount--;
                forgetIfGone(vm, m.allocation);
            }
            r.unmapping.clear();
            if (r.freeing) {
                r.freeing = false;
                int result = vm.backend().memAddressFree(r.base, r.size);
                if (first == CuResult.SUCCESS) {
                    first = result;
                }
            }
            return first;
        }
    }

    /**
     * cuMemSetAccess for device {@code device}: [ptr, ptr+size) must be mapped by this process
     * throughout; the mappings it touches take {@code flags}.
     */
    public synchronized int setAccess(Vm vm, long ptr, long size, int device, int flags, Refusal refusal) {
        Reservation r = reservationOf(ptr, size);
        List<Mapping> tiles = r == null || size <= 0 ? null : tiling(r, ptr, size, false);
        if (tiles == null) {
            return refusal.refuse("ptr", "0x" + Long.toHexString(ptr) + "+" + size
                    + " is not mapped throughout by this process", CuResult.INVALID_VALUE);
        }
        int result = vm.backend().memSetAccess(ptr, size, device, flags);
        if (result == CuResult.SUCCESS) {
            for (Mapping m : tiles) {
                m.access = flags;
            }
        }
        return result;
    }

    public synchronized int getAccess(Vm vm, Out out, int device, long ptr, Refusal refusal) {
        Reservation r = reservationOf(ptr, 1);
        if (r == null || tiling(r, ptr, 1, false) == null) {
            return refusal.refuse("ptr", "0x" + Long.toHexString(ptr) + " is not mapped by this process",
                    CuResult.INVALID_VALUE);
        }
        return vm.backend().memGetAccess(out, device, ptr);
    }

    /**
     * The device-range check: when [address, address+bytes) lies in one reservation and is mapped
     * with access set throughout, that reservation's range, pinned (the caller unpins it when its
     * call returns); else null.
     */
    public synchronized DeviceRanges.Range pinMapped(long address, long bytes) {
        if (bytes < 0) {
            return null;
        }
        Reservation r = reservationOf(address, Math.max(bytes, 1));
        List<Mapping> tiles = r == null ? null : tiling(r, address, Math.max(bytes, 1), false);
        if (tiles == null) {
            return null;
        }
        for (Mapping m : tiles) {
            if (m.access == 0) {
                return null;
            }
        }
        r.range.use().pin();
        return r.range;
    }

    /**
     * At reclaim (no call of the process runs): unmaps every mapping, lets go of every hold on each
     * allocation, frees every reservation — in that order — and gives back their quota and handles.
     * Returns how many objects went.
     */
    public synchronized int reclaim(Vm vm) {
        int objects = count();
        for (Reservation r : reservations.values()) {
            r.unmapping.addAll(r.mappings.values());
            r.mappings.clear();
            r.freeing = true;
        }
        for (Reservation r : reservations.values()) {
            drain(vm, r);
        }
        reservations.clear();
        for (Allocation a : allocations.values()) {
            while (a.refs > 0) {
                vm.backend().memRelease(a.nativeHandle);
                a.refs--;
            }
            vm.handles().remove(a.id);
            a.id = 0;
            forgetIfGone(vm, a);
        }
        allocations.clear();
        return objects;
    }
}
