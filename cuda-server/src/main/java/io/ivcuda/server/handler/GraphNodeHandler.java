package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.GraphState;
import io.ivcuda.server.core.HandleTable;
import io.ivcuda.server.gen.GraphnodeCalls;
import io.ivcuda.server.gen.Reply;
import org.agrona.DirectBuffer;

/**
 * Graph nodes and edges made by hand, executable-graph updates, graph memory (api/graphs.api,
 * docs/graphs.md). Node lists are resolved with {@link GraphHandles#resolve}; a new node's handle
 * carries its native graph. The graph memory calls reach the server process's device pool, which
 * is this VM's alone (one server process per VM).
 */
final class GraphNodeHandler implements GraphnodeCalls {
    static final int EMPTY = 0;
    static final int EVENT_RECORD = 1;
    static final int EVENT_WAIT = 2;
    static final int CHILD_GRAPH = 3;
    /** CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, RESERVED_MEM_HIGH: the settable ones (to 0, a reset) */
    static final int USED_MEM_HIGH = 1;
    static final int RESERVED_MEM_HIGH = 3;

    private final Session session;

    GraphNodeHandler(Session session) {
        this.session = session;
    }

    @Override
    public int ivc_graph_add_simple_node(Reply r, DirectBuffer in, long hGraph, int count, int entriesIndex,
                                         int entriesLength, int entriesSize, int kind, long event, long child) {
        long object = switch (kind) {
            case EMPTY -> 0;
            case EVENT_RECORD, EVENT_WAIT -> event;
            case CHILD_GRAPH -> child;
            default -> -1;
        };
        if (object == -1) {
            return session.refuse("kind", kind + " is no node kind of this call", CuResult.INVALID_VALUE);
        }
        if (kind != EMPTY && object == 0) {
            return session.refuse(kind == CHILD_GRAPH ? "child" : "event", "is NULL", CuResult.INVALID_VALUE);
        }
        int refused = GraphHandles.resolve(session, in, entriesIndex, entriesLength, count, 1);
        if (refused != CuResult.SUCCESS) {
            return refused;
        }
        if (!session.vm.handles().canMint(session.token())) {
            return session.refuse("phGraphNode", "the process holds as many handles as it may", CuResult.OUT_OF_MEMORY);
        }
        int result = session.cuda.graphAddSimpleNode(session.out, hGraph, GraphHandles.array(session, 0, 1), count, kind,
                object);
        if (result == CuResult.SUCCESS) {
            r.set(0, session.vm.handles().mint(GraphState.KIND_GRAPH_NODE, session.token(), session.out.handle, hGraph));
        }
        return result;
    }

    @Override
    public int cuGraphDestroyNode(Reply r, long hNode) {
        int result = session.cuda.graphDestroyNode(hNode);
        if (result == CuResult.SUCCESS) {
            GraphHandles.forgetBodies(session, 0, hNode);
        }
        return result;
    }

    @Override
    public int ivc_graph_edges(Reply r, DirectBuffer in, long hGraph, int remove, int count, int entriesIndex,
                               int entriesLength, int entriesSize, int withEdges) {
        int refused = GraphHandles.resolve(session, in, entriesIndex, entriesLength, count, 2);
        if (refused != CuResult.SUCCESS) {
            return refused;
        }
        return session.cuda.graphEdges(hGraph, remove != 0, GraphHandles.array(session, 0, 2),
                GraphHandles.array(session, 1, 2), withEdges != 0 ? GraphHandles.array(session, 2, 2) : 0, count);
    }

    /** The error nodes as the process's handles (0 when it holds none for them). */
    @Override
    public int ivc_graph_exec_update(Reply r, long hGraphExec, long hGraph) {
        int result = session.cuda.graphExecUpdate(session.out, hGraphExec, hGraph);
        long errorNode = session.out.handle;
        long errorFrom = session.out.address;
        r.set(0, session.out.value);
        r.set(1, nodeId(errorNode));
        r.set(2, nodeId(errorFrom));
        return result;
    }

    private long nodeId(long nativeNode) {
        if (nativeNode == 0) {
            return 0;
        }
        HandleTable.Entry e = session.vm.handles().findNative(GraphState.KIND_GRAPH_NODE, session.token(), nativeNode);
        return e == null ? 0 : e.id();
    }

    @Override
    public int cuDeviceGraphMemTrim(Reply r, int device) {
        return session.cuda.deviceGraphMemTrim(device);
    }

    @Override
    public int cuDeviceGetGraphMemAttribute(Reply r, int device, int attr) {
        int result = session.cuda.deviceGetGraphMemAttribute(session.out, device, attr);
        r.set(0, session.out.bytes);
        return result;
    }

    @Override
    public int ivc_set_graph_mem_attribute(Reply r, int device, int attr, long value) {
        if ((attr != USED_MEM_HIGH && attr != RESERVED_MEM_HIGH) || value != 0) {
            return session.refuse("attr", attr + " = " + value + ": only the high watermarks, reset to 0",
                    CuResult.INVALID_VALUE);
        }
        return session.cuda.deviceSetGraphMemAttribute(session.out, device, attr, value);
    }
}
