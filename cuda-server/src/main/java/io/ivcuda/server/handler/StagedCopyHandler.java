package io.ivcuda.server.handler;

import static io.ivcuda.server.backend.CudaBackend.MEMORYTYPE_DEVICE;
import static io.ivcuda.server.backend.CudaBackend.MEMORYTYPE_HOST;
import static io.ivcuda.server.backend.CudaBackend.NODE_ADD;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.GraphState;
import io.ivcuda.server.core.HostCalls;
import io.ivcuda.server.gen.Reply;
import io.ivcuda.server.gen.StagedcopyCalls;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * Copies between device memory and pageable guest memory inside graphs (api/graphs.api section
 * stagedcopy, docs/graphs.md): the driver cannot reach the guest's pageable memory, so the copy
 * goes through a pinned staging block of the region and the guest's host function moves the bytes.
 */
final class StagedCopyHandler implements StagedcopyCalls {
    /** CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
    static final int CAPTURE_INVALIDATED = 901;
    /** CU_STREAM_CAPTURE_STATUS_ACTIVE, CU_STREAM_SET_CAPTURE_DEPENDENCIES */
    static final int CAPTURE_ACTIVE = 1;
    static final int SET_CAPTURE_DEPENDENCIES = 1;

    private final Session session;
    private final GraphNodeCall nodes;

    StagedCopyHandler(Session session) {
        this.session = session;
        this.nodes = new GraphNodeCall(session);
    }

    /**
     * A child graph of two nodes, the copy through the pinned staging block and the guest's host
     * function that moves the bytes between the block and its pageable memory (after the copy to the
     * host, before the copy to the device), added to {@code hGraph} after the dependencies or to the
     * graph {@code stream} captures after its dependencies (which then become the new node). The
     * child graph node holds a copy of the two-node graph, which goes at once.
     */
    @Override
    public int ivc_graph_staged_copy(Reply r, DirectBuffer in, long hGraph, long stream, int count, int entriesIndex,
                                     int entriesLength, int entriesSize, int toHost, long device, long poolOffsetAddress,
                                     long size, long fn, long userData) {
        if (toHost != 0 && toHost != 1) {
            return session.refuse("toHost", toHost + " (0 or 1)", CuResult.INVALID_VALUE);
        }
        if (size <= 0) {
            return session.refuse("size", size + " bytes", CuResult.INVALID_VALUE);
        }
        if (hGraph == 0 && count != 0) {
            return session.refuse("count", count + " dependencies for a capture, which has its own", CuResult.INVALID_VALUE);
        }
        int result = nodes.head(NODE_ADD, hGraph == 0 ? -1 : hGraph, 0, 0, in, entriesIndex, entriesLength, count);
        long parent = hGraph;
        long depCount = count;
        if (result == CuResult.SUCCESS && hGraph == 0) {
            result = captured(stream);
            parent = session.out.handle;
            depCount = session.out.bytes;
        }
        long child = 0;
        HostCalls.Target t = null;
        if (result == CuResult.SUCCESS) {
            t = nodes.target(fn, userData);
            result = t == null ? (fn == 0 ? CuResult.INVALID_VALUE : CuResult.OUT_OF_MEMORY)
                    : session.cuda.graphCreate(session.out, 0);
            child = result == CuResult.SUCCESS ? session.out.handle : 0;
        }
        if (result == CuResult.SUCCESS) {
            result = stagedNodes(child, toHost != 0, device, poolOffsetAddress, size, t.key());
        }
        if (result == CuResult.SUCCESS) {
            result = session.cuda.graphAddSimpleNode(session.out, parent, nodes.deps(), depCount, GraphNodeHandler.CHILD_GRAPH,
                    child);
        }
        long node = session.out.handle;
        if (result == CuResult.SUCCESS && hGraph == 0) {
            UnsafeApi.putLong(session.out.scratch + 8, node);
            result = session.cuda.streamUpdateCaptureDependencies(stream, session.out.scratch + 8, 0, 1,
                    SET_CAPTURE_DEPENDENCIES);
        }
        if (child != 0) {
            session.cuda.graphDestroy(child);
        }
        if (result != CuResult.SUCCESS && t != null) {
            session.vm.hostCalls().remove(t);
        }
        nodes.release();
        if (result == CuResult.SUCCESS) {
            r.set(0, session.vm.handles().mint(GraphState.KIND_GRAPH_NODE, session.token(), node, parent));
        }
        return result;
    }

    /** The graph {@code stream} captures (out.handle) and its dependencies, copied into the call's dependencies (out.bytes of them). */
    private int captured(long stream) {
        int result = session.cuda.streamGetCaptureInfo(session.out, stream);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        if (session.out.value != CAPTURE_ACTIVE) {
            return session.refuse("stream", "captures nothing (status " + session.out.value + ")",
                    session.out.value == 0 ? CuResult.INVALID_VALUE : CAPTURE_INVALIDATED);
        }
        long n = session.out.bytes;
        if (n < 0 || n > GraphHandles.maxEntries(1)) {
            return session.refuse("stream", "its capture has " + n + " dependencies", CuResult.NOT_SUPPORTED);
        }
        if (n > 0) {
            long deps = UnsafeApi.allocateMemory(8L * n);
            UnsafeApi.copyMemory(session.out.address, deps, 8L * n);
            nodes.adopt(deps);
        }
        return CuResult.SUCCESS;
    }

    /** The copy node and the host node of a staged copy, in the order the direction needs. */
    private int stagedNodes(long graph, boolean toHost, long device, long staging, long size, long key) {
        long edge = session.out.scratch + 16;
        int result;
        if (toHost) {
            result = session.cuda.graphCopyNode(session.out, NODE_ADD, graph, 0, 0, 0, 0, session.currentNativeContext(),
                    MEMORYTYPE_HOST, staging, size, 1, MEMORYTYPE_DEVICE, device, size, 1, size, 1, 1);
            UnsafeApi.putLong(edge, session.out.handle);
            if (result == CuResult.SUCCESS) {
                result = session.cuda.graphHostNode(session.out, NODE_ADD, graph, 0, 0, edge, 1, key);
            }
        } else {
            result = session.cuda.graphHostNode(session.out, NODE_ADD, graph, 0, 0, 0, 0, key);
            UnsafeApi.putLong(edge, session.out.handle);
            if (result == CuResult.SUCCESS) {
                result = session.cuda.graphCopyNode(session.out, NODE_ADD, graph, 0, 0, edge, 1,
                        session.currentNativeContext(), MEMORYTYPE_DEVICE, device, size, 1, MEMORYTYPE_HOST, staging, size,
                        1, size, 1, 1);
            }
        }
        return result;
    }
}
