package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.core.GraphState;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.gen.CaptureCalls;
import io.ivcuda.server.gen.Reply;
import java.nio.ByteOrder;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * Stream capture (api/graphs.api, docs/graphs.md). The graph being captured belongs to the
 * driver until the capture ends: a handle the process got for it (cuStreamGetCaptureInfo) is
 * provisional, and goes with the graph when the capture fails. Dependency lists travel as (node
 * handle, edge data) pairs; each node is resolved as the process's own before the driver's arrays
 * are built.
 */
final class CaptureHandler implements CaptureCalls {
    /** CU_STREAM_CAPTURE_MODE_GLOBAL, THREAD_LOCAL, RELAXED */
    static final int MAX_MODE = 2;
    /** CU_STREAM_CAPTURE_STATUS_ACTIVE */
    static final int ACTIVE = 1;

    private final Session session;

    CaptureHandler(Session session) {
        this.session = session;
    }

    @Override
    public int cuStreamBeginCapture_v2(Reply r, long hStream, int mode) {
        if (mode < 0 || mode > MAX_MODE) {
            return session.refuse("mode", mode + " is no capture mode", CuResult.INVALID_VALUE);
        }
        return session.cuda.streamBeginCapture(hStream, mode);
    }

    /** The CUDA 10.0 form has no mode: global, as the runtime's default. */
    @Override
    public int cuStreamBeginCapture(Reply r, long hStream) {
        return session.cuda.streamBeginCapture(hStream, 0);
    }

    @Override
    public int cuStreamEndCapture(Reply r, long hStream) {
        Out out = session.out;
        long captured = session.cuda.streamGetCaptureInfo(out, hStream) == CuResult.SUCCESS && out.value == ACTIVE
                ? out.handle : 0;
        int result = session.cuda.streamEndCapture(out, hStream);
        if (result != CuResult.SUCCESS) {
            // a failed capture's graph is freed by the driver (unless it was the program's own: ToGraph)
            HandleTable.Entry e = captured == 0 ? null
                    : session.vm.handles().findNative(GraphState.KIND_GRAPH, session.token(), captured);
            if (e != null && session.vm.graphs().forgetFailedCapture(e.id())) {
                GraphHandles.forgetNodes(session, captured);
            }
            return result;
        }
        long graph = out.handle;
        long id = GraphHandles.graph(session, graph, false);
        if (id == 0) {
            session.cuda.graphDestroy(graph);
            return session.refuse("phGraph", "the process holds as many handles as it may", CuResult.OUT_OF_MEMORY);
        }
        session.vm.graphs().settle(id);
        r.set(0, id);
        return CuResult.SUCCESS;
    }

    @Override
    public int cuStreamIsCapturing(Reply r, long hStream) {
        int result = session.cuda.streamIsCapturing(session.out, hStream);
        r.set(0, session.out.value);
        return result;
    }

    @Override
    public int cuStreamGetCaptureInfo(Reply r, long hStream) {
        int result = session.cuda.streamGetCaptureInfo(session.out, hStream);
        r.set(0, session.out.value);
        r.set(1, session.out.totalBytes);
        return result;
    }

    /** Outs: status, id, graph, count, then (node, edge data) pairs, as many as fit. */
    @Override
    public int ivc_stream_capture_info(Reply r, long hStream, int capacity) {
        Out out = session.out;
        int result = session.cuda.streamGetCaptureInfo(out, hStream);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        r.set(0, out.value);
        r.set(1, out.totalBytes);
        if (out.value != ACTIVE || out.handle == 0) {
            r.outbufLength(0);
            return CuResult.SUCCESS;
        }
        // copy the driver's arrays before anything else runs on this thread
        long graph = out.handle;
        long nodes = out.address;
        long edges = out.offset;
        long count = out.bytes;
        int fit = (int) Math.min(count, r.outbufCapacity() / 16);
        long graphId = GraphHandles.graph(session, graph, true);
        if (graphId == 0) {
            return session.refuse("graph_out", "the process holds as many handles as it may", CuResult.OUT_OF_MEMORY);
        }
        for (int i = 0; i < fit; i++) {
            long node = GraphHandles.node(session, UnsafeApi.getLong(nodes + 8L * i), graph);
            if (node == 0) {
                return session.refuse("dependencies_out", "the process holds as many handles as it may", CuResult.OUT_OF_MEMORY);
            }
            r.buffer().putLong(r.outbufIndex() + 16 * i, node, ByteOrder.LITTLE_ENDIAN);
            r.buffer().putLong(r.outbufIndex() + 16 * i + 8, edges == 0 ? 0 : UnsafeApi.getLong(edges + 8L * i),
                    ByteOrder.LITTLE_ENDIAN);
        }
        r.set(2, graphId);
        r.set(3, count);
        r.outbufLength(fit * 16);
        return CuResult.SUCCESS;
    }

    @Override
    public int ivc_update_capture_dependencies(Reply r, DirectBuffer in, long hStream, int count, int entriesIndex,
                                               int entriesLength, int entriesSize, int withEdges, int flags) {
        int refused = GraphHandles.resolve(session, in, entriesIndex, entriesLength, count, 1);
        if (refused != CuResult.SUCCESS) {
            return refused;
        }
        long nodes = GraphHandles.array(session, 0, 1);
        long edges = withEdges != 0 ? GraphHandles.array(session, 1, 1) : 0;
        return session.cuda.streamUpdateCaptureDependencies(hStream, nodes, edges, count, flags);
    }

    @Override
    public int ivc_begin_capture_to_graph(Reply r, DirectBuffer in, long hStream, long hGraph, int count, int entriesIndex,
                                          int entriesLength, int entriesSize, int withEdges, int mode) {
        if (mode < 0 || mode > MAX_MODE) {
            return session.refuse("mode", mode + " is no capture mode", CuResult.INVALID_VALUE);
        }
        int refused = GraphHandles.resolve(session, in, entriesIndex, entriesLength, count, 1);
        if (refused != CuResult.SUCCESS) {
            return refused;
        }
        long nodes = GraphHandles.array(session, 0, 1);
        long edges = withEdges != 0 ? GraphHandles.array(session, 1, 1) : 0;
        return session.cuda.streamBeginCaptureToGraph(hStream, hGraph, count == 0 ? 0 : nodes, count == 0 ? 0 : edges,
                count, mode);
    }

    /** The mode is the worker thread's, and this channel's worker serves one guest thread. */
    @Override
    public int ivc_exchange_capture_mode(Reply r, int mode) {
        if (mode < 0 || mode > MAX_MODE) {
            return session.refuse("mode", mode + " is no capture mode", CuResult.INVALID_VALUE);
        }
        int result = session.cuda.threadExchangeStreamCaptureMode(session.out, mode);
        r.set(0, session.out.value);
        return result;
    }
}
