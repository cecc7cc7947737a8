package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.GraphState;
import io.ivcuda.server.gen.GraphCalls;
import io.ivcuda.server.gen.Reply;
import java.nio.ByteOrder;
import org.agrona.UnsafeApi;

/**
 * Graphs and executable graphs (api/graphs.api, docs/graphs.md): new ones are named by handles of
 * the process (a graph's and an executable graph's extra: the context they were made in, where the
 * reclaim destroys them); a graph's destruction removes its nodes' handles. Nodes the driver
 * lists get the process's handles as they are met.
 */
final class GraphHandler implements GraphCalls {
    private final Session session;

    GraphHandler(Session session) {
        this.session = session;
    }

    private long mint(int kind, long nativeValue) {
        return session.vm.handles().mint(kind, session.token(), nativeValue, session.currentNativeContext());
    }

    @Override
    public int cuGraphCreate(Reply r, int flags) {
        if (flags != 0) {
            return session.refuse("flags", flags + " (must be 0)", CuResult.INVALID_VALUE);
        }
        int result = session.cuda.graphCreate(session.out, flags);
        if (result == CuResult.SUCCESS) {
            r.set(0, mint(GraphState.KIND_GRAPH, session.out.handle));
        }
        return result;
    }

    @Override
    public int cuGraphDestroy(Reply r, long hGraph) {
        if (session.vm.graphs().isBody(hGraph)) {
            return session.refuse("hGraph", "is a conditional node's body graph: it goes with its node", CuResult.INVALID_VALUE);
        }
        int result = session.cuda.graphDestroy(hGraph);
        if (result == CuResult.SUCCESS) {
            GraphHandles.forgetNodes(session, hGraph);
        }
        return result;
    }

    @Override
    public int cuGraphClone(Reply r, long originalGraph) {
        int result = session.cuda.graphClone(session.out, originalGraph);
        if (result == CuResult.SUCCESS) {
            r.set(0, mint(GraphState.KIND_GRAPH, session.out.handle));
        }
        return result;
    }

    @Override
    public int cuGraphInstantiateWithFlags(Reply r, long hGraph, long flags) {
        int result = session.cuda.graphInstantiate(session.out, hGraph, flags);
        if (result == CuResult.SUCCESS) {
            r.set(0, mint(GraphState.KIND_GRAPH_EXEC, session.out.handle));
        }
        return result;
    }

    @Override
    public int cuGraphLaunch(long hGraphExec, long hStream) {
        return session.cuda.graphLaunch(hGraphExec, hStream);
    }

    @Override
    public int cuGraphUpload(long hGraphExec, long hStream) {
        return session.cuda.graphUpload(hGraphExec, hStream);
    }

    @Override
    public int cuGraphExecDestroy(Reply r, long hGraphExec) {
        return session.cuda.graphExecDestroy(hGraphExec);
    }

    @Override
    public int cuGraphExecGetFlags(Reply r, long hGraphExec) {
        int result = session.cuda.graphExecGetFlags(session.out, hGraphExec);
        r.set(0, session.out.handle);
        return result;
    }

    /**
     * count: how many nodes (or root nodes) the graph has; the outbuf: the process's handles of as
     * many as the guest asked for and fit.
     */
    @Override
    public int ivc_graph_get_nodes(Reply r, long hGraph, int roots, int capacity) {
        int result = session.cuda.graphGetNodes(session.out, hGraph, roots != 0, 0, 0);
        if (result != CuResult.SUCCESS) {
            return result;
        }
        long count = session.out.bytes;
        int fit = (int) Math.min(count, r.outbufCapacity() / 8);
        r.set(0, count);
        if (fit <= 0) {
            r.outbufLength(0);
            return CuResult.SUCCESS;
        }
        long nodes = UnsafeApi.allocateMemory(8L * fit);
        try {
            result = session.cuda.graphGetNodes(session.out, hGraph, roots != 0, nodes, fit);
            if (result != CuResult.SUCCESS) {
                return result;
            }
            int got = (int) Math.min(fit, session.out.bytes);
            for (int i = 0; i < got; i++) {
                long id = GraphHandles.node(session, UnsafeApi.getLong(nodes + 8L * i), hGraph);
                if (id == 0) {
                    return session.refuse("nodes", "the process holds as many handles as it may", CuResult.OUT_OF_MEMORY);
                }
                r.buffer().putLong(r.outbufIndex() + 8 * i, id, ByteOrder.LITTLE_ENDIAN);
            }
            r.outbufLength(got * 8);
            return CuResult.SUCCESS;
        } finally {
            UnsafeApi.freeMemory(nodes);
        }
    }

    @Override
    public int cuGraphNodeGetType(Reply r, long hNode) {
        int result = session.cuda.graphNodeGetType(session.out, hNode);
        r.set(0, session.out.value);
        return result;
    }
}
