package io.ivcuda.server.handler;

import static io.ivcuda.server.backend.CudaBackend.MEMORYTYPE_DEVICE;
import static io.ivcuda.server.backend.CudaBackend.MEMORYTYPE_HOST;
import static io.ivcuda.server.backend.CudaBackend.NODE_ADD;
import static io.ivcuda.server.backend.CudaBackend.NODE_EXEC_SET;
import static io.ivcuda.server.backend.CudaBackend.NODE_SET;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.HostCalls;
import io.ivcuda.server.gen.GraphbuildCalls;
import io.ivcuda.server.gen.Reply;
import org.agrona.DirectBuffer;

/**
 * Graph nodes with parameters, made by hand (api/graphs.api section graphbuild, docs/graphs.md):
 * kernel, memset, copy and host nodes, their parameters set on a node or on an executable graph's
 * node (staged copies and conditional nodes: their own sections). Every address has passed
 * the generated device/pool checks; copy geometries are checked against those spans as the strided
 * copies check them. A host node's target ({@link HostCalls}) stays until the process goes, as a
 * captured host function's does. New nodes get handles of the process whose extra is their graph.
 */
final class GraphBuildHandler implements GraphbuildCalls {

    private final Session session;
    private final LaunchHandler launch;
    private final GraphNodeCall nodes;

    GraphBuildHandler(Session session, LaunchHandler launch) {
        this.session = session;
        this.launch = launch;
        this.nodes = new GraphNodeCall(session);
    }

    @Override
    public int ivc_graph_kernel_node(Reply r, DirectBuffer in, int op, long hGraph, long hNode, long hExec, int count,
                                     int entriesIndex, int entriesLength, int entriesSize, long f, int gridDimX,
                                     int gridDimY, int gridDimZ, int blockDimX, int blockDimY, int blockDimZ,
                                     int sharedMemBytes, int paramsIndex, int paramsLength, int paramsSize) {
        int result = nodes.head(op, hGraph, hNode, hExec, in, entriesIndex, entriesLength, count);
        if (result == CuResult.SUCCESS) {
            // the same packing as a launch: the void** over the request's bytes, which the driver copies
            result = launch.packedParams(f, in, paramsIndex, paramsLength);
        }
        if (result == CuResult.SUCCESS) {
            result = session.cuda.graphKernelNode(session.out, op, hGraph, hNode, hExec, nodes.deps(), count,
                    launch.packedFunction, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                    launch.packedParams);
        }
        return nodes.done(r, op, hGraph, result);
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
        int result = nodes.head(op, hGraph, hNode, hExec, in, entriesIndex, entriesLength, count);
        if (result == CuResult.SUCCESS) {
            result = session.cuda.graphMemsetNode(session.out, op, hGraph, hNode, hExec, nodes.deps(), count,
                    session.currentNativeContext(), dst, pitch, value, elementSize, width, height);
        }
        return nodes.done(r, op, hGraph, result);
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
        int result = nodes.head(op, hGraph, hNode, hExec, in, entriesIndex, entriesLength, count);
        if (result == CuResult.SUCCESS) {
            result = session.cuda.graphCopyNode(session.out, op, hGraph, hNode, hExec, nodes.deps(), count,
                    session.currentNativeContext(), dstType, dst, dstPitch, dstHeight, srcType, src, srcPitch, srcHeight,
                    width, height, depth);
        }
        return nodes.done(r, op, hGraph, result);
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

    @Override
    public int ivc_graph_host_node(Reply r, DirectBuffer in, int op, long hGraph, long hNode, long hExec, int count,
                                   int entriesIndex, int entriesLength, int entriesSize, long fn, long userData) {
        int result = nodes.head(op, hGraph, hNode, hExec, in, entriesIndex, entriesLength, count);
        HostCalls.Target t = result == CuResult.SUCCESS ? nodes.target(fn, userData) : null;
        if (result == CuResult.SUCCESS && t == null) {
            result = fn == 0 ? CuResult.INVALID_VALUE : CuResult.OUT_OF_MEMORY;
        }
        if (t != null) {
            result = session.cuda.graphHostNode(session.out, op, hGraph, hNode, hExec, nodes.deps(), count, t.key());
            if (result != CuResult.SUCCESS) {
                session.vm.hostCalls().remove(t);
            }
        }
        return nodes.done(r, op, hGraph, result);
    }

}
