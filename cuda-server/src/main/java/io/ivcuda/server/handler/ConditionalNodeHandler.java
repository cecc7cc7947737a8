package io.ivcuda.server.handler;

import static io.ivcuda.server.backend.CudaBackend.NODE_ADD;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.GraphState;
import io.ivcuda.server.gen.ConditionalCalls;
import io.ivcuda.server.gen.Reply;
import java.nio.ByteOrder;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * Conditional graph nodes (api/graphs.api section conditional, docs/graphs.md): the handle is the
 * driver's value, which kernels get as a parameter; the node's body graphs become graph handles of
 * the process.
 */
final class ConditionalNodeHandler implements ConditionalCalls {
    /** CUgraphConditionalNodeType IF, WHILE, SWITCH; the bodies one node may have here */
    static final int COND_SWITCH = 2;
    static final int MAX_BODIES = 64;
    /** CU_GRAPH_COND_ASSIGN_DEFAULT: the one flag of cuGraphConditionalHandleCreate */
    static final int COND_ASSIGN_DEFAULT = 1;

    private final Session session;
    private final GraphNodeCall nodes;

    ConditionalNodeHandler(Session session) {
        this.session = session;
        this.nodes = new GraphNodeCall(session);
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
        int result = nodes.head(NODE_ADD, hGraph, 0, 0, in, entriesIndex, entriesLength, count);
        if (result == CuResult.SUCCESS) {
            result = session.cuda.graphAddConditionalNode(session.out, hGraph, nodes.deps(), count,
                    ctx != 0 ? ctx : session.currentNativeContext(), handle, type, size);
        }
        long node = session.out.handle;
        long array = session.out.address;
        nodes.release();
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
