package io.ivcuda.server.handler;

import static io.ivcuda.server.backend.CudaBackend.MEM_ALLOC_NODE_ACCESS_COUNT;
import static io.ivcuda.server.backend.CudaBackend.MEM_ALLOC_NODE_BYTESIZE;
import static io.ivcuda.server.backend.CudaBackend.MEM_ALLOC_NODE_DPTR;
import static io.ivcuda.server.backend.CudaBackend.MEM_ALLOC_NODE_MAX_DESCS;
import static io.ivcuda.server.backend.CudaBackend.MEM_ALLOC_NODE_SCRATCH;
import static io.ivcuda.server.backend.CudaBackend.MEM_ALLOC_NODE_SCRATCH_DESCS;
import static io.ivcuda.server.backend.CudaBackend.NODE_ADD;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.DeviceRanges;
import io.ivcuda.server.gen.GraphmemCalls;
import io.ivcuda.server.gen.Reply;
import java.nio.ByteOrder;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * Graph memory nodes made by hand (api/graphs.api section graphmem, docs/graphs.md "Memory nodes").
 * An allocation node's address becomes a device range of the process, counted against the VM's
 * quota, from the node's addition until a free node of it is added (or cuMemFreeAsync/cuMemFree frees
 * it), exactly as a cuMemAllocAsync captured into a graph is kept (PoolHandler); later nodes, kernels
 * and copies then pass the generated device-range checks over it. Only a pinned pool on the guest's
 * device with no handle types is made, and access descriptors name that device (AccessDescs). A free
 * node takes an allocation of the process only; the driver refuses one no allocation node made.
 */
final class GraphMemHandler implements GraphmemCalls {
    /** CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_DEVICE (cuda.h) */
    static final int ALLOCATION_PINNED = 1;
    static final int LOCATION_DEVICE = 1;

    private final Session session;
    private final GraphNodeCall nodes;

    GraphMemHandler(Session session) {
        this.session = session;
        this.nodes = new GraphNodeCall(session);
    }

    @Override
    public int ivc_graph_mem_alloc_node(Reply r, DirectBuffer in, long hGraph, int count, int entriesIndex,
                                        int entriesLength, int entriesSize, int allocType, int handleTypes,
                                        int locationType, int locationId, long bytesize, int descsIndex,
                                        int descsLength, int descsSize) {
        if (allocType != ALLOCATION_PINNED) {
            return session.refuse("poolProps.allocType", allocType + " (only CU_MEM_ALLOCATION_TYPE_PINNED)",
                    CuResult.INVALID_VALUE);
        }
        if (handleTypes != 0) {
            return session.refuse("poolProps.handleTypes", "0x" + Integer.toHexString(handleTypes)
                    + " (graph allocations take none)", CuResult.INVALID_VALUE);
        }
        int device = session.device(locationId);
        if (locationType != LOCATION_DEVICE || device == Session.NO_DEVICE) {
            return session.refuse("poolProps.location", locationType + "/" + locationId + " is not the device",
                    CuResult.INVALID_VALUE);
        }
        if (bytesize <= 0) {
            return session.refuse("bytesize", Long.toUnsignedString(bytesize), CuResult.INVALID_VALUE);
        }
        int[] flags = descsLength == 0 ? new int[0] : AccessDescs.read(session, in, descsIndex, descsLength);
        if (flags == null) {
            return CuResult.INVALID_VALUE;
        }
        if (!session.mayAllocate("bytesize")) {
            return CuResult.OUT_OF_MEMORY;
        }
        int result = nodes.head(NODE_ADD, hGraph, 0, 0, in, entriesIndex, entriesLength, count);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        if (!session.vm.reserve(bytesize, "channel " + session.index() + " pid " + session.ownerPid()
                + " ivc_graph_mem_alloc_node", session.out)) {
            nodes.release();
            return CuResult.OUT_OF_MEMORY;
        }
        long context = session.currentNativeContext(); // before the driver's answer: it uses session.out
        result = session.cuda.graphMemAllocNode(session.out, hGraph, nodes.deps(), count, device, bytesize, flags);
        if (result != CuResult.SUCCESS) {
            session.vm.release(bytesize);
            nodes.release();
            return result;
        }
        long dptr = session.out.address;
        session.owner().ranges().add(new DeviceRanges.Range(dptr, bytesize, true, context));
        r.set(1, dptr);
        return nodes.done(r, NODE_ADD, hGraph, result);
    }

    /**
     * The address must be an allocation of the process (its start); once the driver has the free
     * node, the range leaves the process and the quota, as a captured cuMemFreeAsync's does: nothing
     * outside the graph may use it, and the graph's memory counts while the driver holds it.
     */
    @Override
    public int ivc_graph_mem_free_node(Reply r, DirectBuffer in, long hGraph, int count, int entriesIndex,
                                       int entriesLength, int entriesSize, long dptr) {
        DeviceRanges.Range range = session.owner().ranges().find(dptr);
        if (range == null || !range.allocation() || range.base() != dptr) {
            return session.refuse("dptr", "0x" + Long.toHexString(dptr) + " is not an allocation of this process",
                    CuResult.INVALID_VALUE);
        }
        int result = nodes.head(NODE_ADD, hGraph, 0, 0, in, entriesIndex, entriesLength, count);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        result = session.cuda.graphMemFreeNode(session.out, hGraph, nodes.deps(), count, dptr);
        if (result == CuResult.SUCCESS) {
            DeviceRanges.Range removed = session.owner().ranges().removeAllocation(dptr);
            if (removed != null) {
                session.vm.release(removed.size());
            }
        }
        return nodes.done(r, NODE_ADD, hGraph, result);
    }

    /** The driver's location or descriptor device as the guest's ordinal (0), -1 for any other. */
    private int guestDevice(int nativeDevice) {
        return nativeDevice == session.device(0) ? 0 : -1;
    }

    @Override
    public int ivc_graph_mem_alloc_node_params(Reply r, long hNode, int capacity) {
        int result = session.cuda.graphMemAllocNodeGetParams(session.out, hNode);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        long p = session.out.scratch + MEM_ALLOC_NODE_SCRATCH;
        r.set(0, UnsafeApi.getInt(p));
        r.set(1, UnsafeApi.getInt(p + 4));
        r.set(2, UnsafeApi.getInt(p + 8));
        r.set(3, guestDevice(UnsafeApi.getInt(p + 12)));
        r.set(4, UnsafeApi.getLong(p + MEM_ALLOC_NODE_BYTESIZE));
        r.set(5, UnsafeApi.getLong(p + MEM_ALLOC_NODE_DPTR));
        long n = Math.min(Math.max(UnsafeApi.getLong(p + MEM_ALLOC_NODE_ACCESS_COUNT), 0), MEM_ALLOC_NODE_MAX_DESCS);
        r.set(6, n);
        int fit = (int) Math.min(n, Math.min(Math.max(capacity, 0), r.outbufCapacity()) / AccessDescs.BYTES);
        long descs = session.out.scratch + MEM_ALLOC_NODE_SCRATCH_DESCS;
        for (int i = 0; i < fit; i++) {
            long d = descs + (long) AccessDescs.BYTES * i;
            int at = r.outbufIndex() + AccessDescs.BYTES * i;
            r.buffer().putInt(at, UnsafeApi.getInt(d), ByteOrder.LITTLE_ENDIAN);
            r.buffer().putInt(at + 4, guestDevice(UnsafeApi.getInt(d + 4)), ByteOrder.LITTLE_ENDIAN);
            r.buffer().putInt(at + 8, UnsafeApi.getInt(d + 8), ByteOrder.LITTLE_ENDIAN);
        }
        r.outbufLength(fit * AccessDescs.BYTES);
        return CuResult.SUCCESS;
    }

    @Override
    public int cuGraphMemFreeNodeGetParams(Reply r, long hNode) {
        int result = session.cuda.graphMemFreeNodeGetParams(session.out, hNode);
        if (result == CuResult.SUCCESS) {
            r.set(0, session.out.address);
        }
        return result;
    }
}
