package io.ivcuda.server.handler;

import io.ivcuda.server.core.GraphState;
import io.ivcuda.server.core.HandleTable;

/**
 * The process's handles for native graphs and nodes the driver hands out (a captured graph, a
 * capture's dependencies, a graph's nodes): the one it holds already, else a new one. A node
 * handle's extra is its native graph, so the graph's destruction takes its nodes' handles with it.
 */
final class GraphHandles {
    /** CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
    static final int CAPTURE_UNSUPPORTED = 900;

    private GraphHandles() {
    }

    /** 0 when the process may hold no more handles. */
    static long graph(Session s, long nativeGraph, boolean capturing) {
        HandleTable handles = s.vm.handles();
        HandleTable.Entry e = handles.findNative(GraphState.KIND_GRAPH, s.token(), nativeGraph);
        if (e != null) {
            return e.id();
        }
        if (!handles.canMint(s.token())) {
            return 0;
        }
        long id = handles.mint(GraphState.KIND_GRAPH, s.token(), nativeGraph, s.currentNativeContext());
        if (capturing) {
            s.vm.graphs().provisional(id);
        }
        return id;
    }

    /** 0 when the process may hold no more handles. */
    static long node(Session s, long nativeNode, long nativeGraph) {
        HandleTable handles = s.vm.handles();
        HandleTable.Entry e = handles.findNative(GraphState.KIND_GRAPH_NODE, s.token(), nativeNode);
        if (e != null) {
            return e.id();
        }
        if (!handles.canMint(s.token())) {
            return 0;
        }
        return handles.mint(GraphState.KIND_GRAPH_NODE, s.token(), nativeNode, nativeGraph);
    }

    /** The graph went (destroyed, or its capture failed): its handle's nodes go with it. */
    static void forgetNodes(Session s, long nativeGraph) {
        s.vm.handles().removeDependents(s.token(), GraphState.KIND_GRAPH_NODE, nativeGraph, s.chunks::stopping);
    }
}
