package io.ivcuda.server.handler;

import static io.ivcuda.server.backend.CudaBackend.MEMORYTYPE_DEVICE;
import static io.ivcuda.server.backend.CudaBackend.MEMORYTYPE_HOST;
import static io.ivcuda.server.backend.CudaBackend.NODE_ADD;
import static io.ivcuda.server.backend.CudaBackend.NODE_EXEC_SET;
import static io.ivcuda.server.backend.CudaBackend.NODE_SET;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.GraphState;
import io.ivcuda.server.core.HostCalls;
import io.ivcuda.server.gen.GraphbuildCalls;
import io.ivcuda.server.gen.Reply;
import java.nio.ByteOrder;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * Graph nodes with parameters, made by hand (api/graphs.api section graphbuild, docs/graphs.md):
 * kernel, memset, copy, host and conditional nodes, their parameters set on a node or on an
 * executable graph's node, and the staged copy of pageable guest memory. Every address has passed
 * the generated device/pool checks; copy geometries are checked against those spans as the strided
 * copies check them. A host node's target ({@link HostCalls}) stays until the process goes, as a
 * captured host function's does. New nodes get handles of the process whose extra is their graph.
 */
final class GraphBuildHandler implements GraphbuildCalls {
    /** CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
    static final int CAPTURE_INVALIDATED = 901;
    /** CU_STREAM_CAPTURE_STATUS_ACTIVE, CU_STREAM_SET_CAPTURE_DEPENDENCIES */
    static final int CAPTURE_ACTIVE = 1;
    static final int SET_CAPTURE_DEPENDENCIES = 1;
    /** CUgraphConditionalNodeType IF, WHILE, SWITCH; the bodies one node may have here */
    static final int COND_SWITCH = 2;
    static final int MAX_BODIES = 64;
    /** CU_GRAPH_COND_ASSIGN_DEFAULT: the one flag of cuGraphConditionalHandleCreate */
    static final int COND_ASSIGN_DEFAULT = 1;

    private final Session session;
    private final LaunchHandler launch;

    GraphBuildHandler(Session session, LaunchHandler launch) {
        this.session = session;
        this.launch = launch;
    }

    /**
     * Checks the call's head (which handles an op names) and copies the resolved dependencies into
     * a native array of their own ({@link #deps}; 0 when none): the scratch memory stays free for
     * the kernel's parameters. Returns SUCCESS or the refusal.
     */
    private int head(int op, long hGraph, long hNode, long hExec, DirectBuffer in, int index, int length, int count) {
        deps = 0;
        boolean shape = switch (op) {
            case NODE_ADD -> hGraph != 0 && hNode == 0 && hExec == 0;
            case NODE_SET -> hGraph == 0 && hNode != 0 && hExec == 0 && count == 0;
            case NODE_EXEC_SET -> hGraph == 0 && hNode != 0 && hExec != 0 && count == 0;
            default -> false;
        };
        if (!shape) {
            return session.refuse("op", op + " with graph " + (hGraph != 0) + ", node " + (hNode != 0) + ", exec "
                    + (hExec != 0) + ", " + count + " dependencies", CuResult.INVALID_VALUE);
        }
        if (op == NODE_ADD && !session.vm.handles().canMint(session.token())) {
            return session.refuse("node", "the process holds as many handles as it may", CuResult.OUT_OF_MEMORY);
        }
        int refused = GraphHandles.resolve(session, in, index, length, count, 1);
        if (refused != CuResult.SUCCESS || count == 0) {
            return refused;
        }
        deps = UnsafeApi.allocateMemory(8L * count);
        UnsafeApi.copyMemory(GraphHandles.array(session, 0, 1), deps, 8L * count);
        return CuResult.SUCCESS;
    }

    /** The dependencies {@link #head} copied (freed by {@link #done}). */
    private long deps;

    /** Frees the dependencies; an added node becomes the process's. */
    private int done(Reply r, int op, long hGraph, int result) {
        if (deps != 0) {
            UnsafeApi.freeMemory(deps);
            deps = 0;
        }
        if (op == NODE_ADD && result == CuResult.SUCCESS) {
            r.set(0, session.vm.handles().mint(GraphState.KIND_GRAPH_NODE, session.token(), session.out.handle, hGraph));
        }
        return result;
    }

    @Override
    public int ivc_graph_kernel_node(Reply r, DirectBuffer in, int op, long hGraph, long hNode, long hExec, int count,
                                     int entriesIndex, int entriesLength, int entriesSize, long f, int gridDimX,
                                     int gridDimY, int gridDimZ, int blockDimX, int blockDimY, int blockDimZ,
                                     int sharedMemBytes, int paramsIndex, int paramsLength, int paramsSize) {
        int result = head(op, hGraph, hNode, hExec, in, entriesIndex, entriesLength, count);
        if (result == CuResult.SUCCESS) {
            // the same packing as a launch: the void** over the request's bytes, which the driver copies
            result = launch.packedParams(f, in, paramsIndex, paramsLength);
        }
        if (result == CuResult.SUCCESS) {
            result = session.cuda.graphKernelNode(session.out, op, hGraph, hNode, hExec, deps, count,
                    launch.packedFunction, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                    launch.packedParams);
        }
        return done(r, op, hGraph, result);
    }

    @Override
    public int ivc_graph_memset_node(Reply r, DirectBuffer in, int op, long hGraph, long hNode, long hExec, int count,
                                     int entriesIndex, int entriesLength, int entriesSize, long dst, long span,
                                     long pitch, int value, int elementSize, long width, long height) {
        if (elementSize != 1 && elementSize != 2 && elementSize != 4) {
            return session.refuse("elementSize", elementSize + " (1, 2 or 4)", CuResult.INVALID_VALUE);
        }
        long rowBytes = width > 0 && width <= Long.MAX_VALUE / 4 ? width * elementSize : -1;
        long need = StridedCopyHandler.span(rowBytes, height, 1, height > 1 ? pitch : rowBytes, height);
        if (need < 0 || need > span) {
            return session.refuse("span", width + " elements of " + elementSize + " x " + height + " rows of pitch " + pitch
                    + " reach past the checked " + span + " bytes", CuResult.INVALID_VALUE);
        }
        int result = head(op, hGraph, hNode, hExec, in, entriesIndex, entriesLength, count);
        if (result == CuResult.SUCCESS) {
            result = session.cuda.graphMemsetNode(session.out, op, hGraph, hNode, hExec, deps, count,
                    session.currentNativeContext(), dst, pitch, value, elementSize, width, height);
        }
        return done(r, op, hGraph, result);
    }

    /** Whether a side of the copy stays inside its checked span (StridedCopyHandler's rule). */
    private boolean fits(String side, long checked, long pitch, long rows, long width, long height, long depth) {
        long need = StridedCopyHandler.span(width, height, depth, pitch, rows);
        if (need < 0 || need > checked) {
            session.refuse(side, width + "x" + height + "x" + depth + " bytes with pitch " + pitch + ", " + rows
                    + " rows a slice reach past the checked " + checked + " bytes", CuResult.INVALID_VALUE);
            return false;
        }
        return true;
    }

    private int copyNode(Reply r, DirectBuffer in, int op, long hGraph, long hNode, long hExec, int count,
                         int entriesIndex, int entriesLength, int dstType, long dst, long dstSpan, long dstPitch,
                         long dstHeight, int srcType, long src, long srcSpan, long srcPitch, long srcHeight, long width,
                         long height, long depth) {
        if (!fits("dst", dstSpan, dstPitch, dstHeight, width, height, depth)
                || !fits("src", srcSpan, srcPitch, srcHeight, width, height, depth)) {
            return CuResult.INVALID_VALUE;
        }
        int result = head(op, hGraph, hNode, hExec, in, entriesIndex, entriesLength, count);
        if (result == CuResult.SUCCESS) {
            result = session.cuda.graphCopyNode(session.out, op, hGraph, hNode, hExec, deps, count,
                    session.currentNativeContext(), dstType, dst, dstPitch, dstHeight, srcType, src, srcPitch, srcHeight,
                    width, height, depth);
        }
        return done(r, op, hGraph, result);
    }

    @Override
    public int ivc_graph_copy_node_dtod(Reply r, DirectBuffer in, int op, long hGraph, long hNode, long hExec, int count,
                                        int entriesIndex, int entriesLength, int entriesSize, long dst, long dstSpan,
                                        long dstPitch, long dstHeight, long src, long srcSpan, long srcPitch,
                                        long srcHeight, long width, long height, long depth) {
        return copyNode(r, in, op, hGraph, hNode, hExec, count, entriesIndex, entriesLength, MEMORYTYPE_DEVICE, dst,
                dstSpan, dstPitch, dstHeight, MEMORYTYPE_DEVICE, src, srcSpan, srcPitch, srcHeight, width, height, depth);
    }

    @Override
    public int ivc_graph_copy_node_htod(Reply r, DirectBuffer in, int op, long hGraph, long hNode, long hExec, int count,
                                        int entriesIndex, int entriesLength, int entriesSize, long dst, long dstSpan,
                                        long dstPitch, long dstHeight, long poolOffsetAddress, long hostSpan,
                                        long hostPitch, long hostHeight, long width, long height, long depth) {
        return copyNode(r, in, op, hGraph, hNode, hExec, count, entriesIndex, entriesLength, MEMORYTYPE_DEVICE, dst,
                dstSpan, dstPitch, dstHeight, MEMORYTYPE_HOST, poolOffsetAddress, hostSpan, hostPitch, hostHeight, width,
                height, depth);
    }

    @Override
    public int ivc_graph_copy_node_dtoh(Reply r, DirectBuffer in, int op, long hGraph, long hNode, long hExec, int count,
                                        int entriesIndex, int entriesLength, int entriesSize, long poolOffsetAddress,
                                        long hostSpan, long hostPitch, long hostHeight, long src, long srcSpan,
                                        long srcPitch, long srcHeight, long width, long height, long depth) {
        return copyNode(r, in, op, hGraph, hNode, hExec, count, entriesIndex, entriesLength, MEMORYTYPE_HOST,
                poolOffsetAddress, hostSpan, hostPitch, hostHeight, MEMORYTYPE_DEVICE, src, srcSpan, srcPitch, srcHeight,
                width, height, depth);
    }

    /** A target for the guest's fn(userData) that stays until the process goes; null (refused) at the bound. */
    private HostCalls.Target target(long fn, long userData) {
        if (fn == 0) {
            session.refuse("fn", "is NULL", CuResult.INVALID_VALUE);
            return null;
        }
        HostCalls.Target t = session.vm.hostCalls().add(session.token(), HostCalls.KIND_HOST_FN, fn, userData, 0, false);
        if (t == null) {
            session.refuse("fn", "the process holds " + HostCalls.DEFAULT_MAX_TARGETS + " host functions",
                    CuResult.OUT_OF_MEMORY);
        }
        return t;
    }

    @Override
    public int ivc_graph_host_node(Reply r, DirectBuffer in, int op, long hGraph, long hNode, long hExec, int count,
                                   int entriesIndex, int entriesLength, int entriesSize, long fn, long userData) {
        int result = head(op, hGraph, hNode, hExec, in, entriesIndex, entriesLength, count);
        HostCalls.Target t = result == CuResult.SUCCESS ? target(fn, userData) : null;
        if (result == CuResult.SUCCESS && t == null) {
            result = fn == 0 ? CuResult.INVALID_VALUE : CuResult.OUT_OF_MEMORY;
        }
        if (t != null) {
            result = session.cuda.graphHostNode(session.out, op, hGraph, hNode, hExec, deps, count, t.key());
            if (result != CuResult.SUCCESS) {
                session.vm.hostCalls().remove(t);
            }
        }
        return done(r, op, hGraph, result);
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
        int result = head(NODE_ADD, hGraph == 0 ? -1 : hGraph, 0, 0, in, entriesIndex, entriesLength, count);
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
            t = target(fn, userData);
            result = t == null ? (fn == 0 ? CuResult.INVALID_VALUE : CuResult.OUT_OF_MEMORY)
                    : session.cuda.graphCreate(session.out, 0);
            child = result == CuResult.SUCCESS ? session.out.handle : 0;
        }
        if (result == CuResult.SUCCESS) {
            result = stagedNodes(child, toHost != 0, device, poolOffsetAddress, size, t.key());
        }
        if (result == CuResult.SUCCESS) {
            result = session.cuda.graphAddSimpleNode(session.out, parent, deps, depCount, GraphNodeHandler.CHILD_GRAPH,
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
        if (deps != 0) {
            UnsafeApi.freeMemory(deps);
            deps = 0;
        }
        if (result == CuResult.SUCCESS) {
            r.set(0, session.vm.handles().mint(GraphState.KIND_GRAPH_NODE, session.token(), node, parent));
        }
        return result;
    }

    /** The graph {@code stream} captures (out.handle) and its dependencies, copied into {@link #deps} (out.bytes of them). */
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
            deps = UnsafeApi.allocateMemory(8L * n);
            UnsafeApi.copyMemory(session.out.address, deps, 8L * n);
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

    @Override
    public int cuGraphConditionalHandleCreate(Reply r, long hGraph, long ctx, int defaultLaunchValue, int flags) {
        if ((flags & ~COND_ASSIGN_DEFAULT) != 0) {
            return session.refuse("flags", flags + " (0 or CU_GRAPH_COND_ASSIGN_DEFAULT)", CuResult.INVALID_VALUE);
        }
        int result = session.cuda.graphConditionalHandleCreate(session.out, hGraph,
                ctx != 0 ? ctx : session.currentNativeContext(), defaultLaunchValue, flags);
        r.set(0, session.out.handle);
        return result;
    }

    /**
     * A conditional node: its body graphs (the driver's, freed with the node) become graph handles
     * of the process marked as bodies ({@link GraphState#body}), which cuGraphDestroy refuses and
     * which go with their node or its graph.
     */
    @Override
    public int ivc_graph_conditional_node(Reply r, DirectBuffer in, long hGraph, int count, int entriesIndex,
                                          int entriesLength, int entriesSize, long handle, int type, int size, long ctx,
                                          int capacity) {
        if (type < 0 || type > COND_SWITCH) {
            return session.refuse("type", type + " is no CUgraphConditionalNodeType", CuResult.INVALID_VALUE);
        }
        if (size < 1 || size > MAX_BODIES || size > capacity || size > r.outbufCapacity() / 8) {
            return session.refuse("size", size + " bodies (1.." + MAX_BODIES + ", within the capacity " + capacity + ")",
                    CuResult.INVALID_VALUE);
        }
        int result = head(NODE_ADD, hGraph, 0, 0, in, entriesIndex, entriesLength, count);
        if (result == CuResult.SUCCESS) {
            result = session.cuda.graphAddConditionalNode(session.out, hGraph, deps, count,
                    ctx != 0 ? ctx : session.currentNativeContext(), handle, type, size);
        }
        long node = session.out.handle;
        long array = session.out.address;
        if (deps != 0) {
            UnsafeApi.freeMemory(deps);
            deps = 0;
        }
        if (result != CuResult.SUCCESS) {
            return result;
        }
        r.set(0, session.vm.handles().mint(GraphState.KIND_GRAPH_NODE, session.token(), node, hGraph));
        for (int i = 0; i < size; i++) {
            long body = array == 0 ? 0 : UnsafeApi.getLong(array + 8L * i);
            session.vm.graphs().body(body, hGraph, node);
            // 0 when the process may hold no more handles: the guest answers CUDA_ERROR_OUT_OF_MEMORY
            long id = body == 0 ? 0 : GraphHandles.graph(session, body, false);
            r.buffer().putLong(r.outbufIndex() + 8 * i, id, ByteOrder.LITTLE_ENDIAN);
        }
        r.outbufLength(size * 8);
        return CuResult.SUCCESS;
    }
}
