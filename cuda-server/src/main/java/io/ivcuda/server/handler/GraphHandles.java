package io.ivcuda.server.handler;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.core.GraphState;
import io.ivcuda.server.core.HandleTable;
import java.nio.ByteOrder;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

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

    /** The graph went (destroyed, or its capture failed): its handle's nodes go with it, and its conditional nodes' bodies. */
    static void forgetNodes(Session s, long nativeGraph) {
        s.vm.handles().removeDependents(s.token(), GraphState.KIND_GRAPH_NODE, nativeGraph, s.chunks::stopping);
        forgetBodies(s, nativeGraph, 0);
    }

    /**
     * The body graphs the driver freed with {@code nativeGraph} or the conditional node {@code
     * nativeNode} (0: none): their handles and their nodes' handles go, so none reaches the driver again.
     */
    static void forgetBodies(Session s, long nativeGraph, long nativeNode) {
        HandleTable handles = s.vm.handles();
        for (long body : s.vm.graphs().forgetBodies(nativeGraph, nativeNode)) {
            HandleTable.Entry e = handles.findNative(GraphState.KIND_GRAPH, s.token(), body);
            if (e != null) {
                handles.remove(e.id());
            }
            handles.removeDependents(s.token(), GraphState.KIND_GRAPH_NODE, body, s.chunks::stopping);
        }
    }

    /** Where {@link #resolve} builds its arrays: after the first 256 bytes of the scratch memory. */
    static final int ARRAYS_OFFSET = 256;

    /** Entries one call may carry when each holds {@code nodes} node handles and the edge data. */
    static int maxEntries(int nodes) {
        return (Out.SCRATCH_SIZE - ARRAYS_OFFSET) / (8 * (nodes + 1));
    }

    /** The native address of array {@code k} (k == nodes: the edge data) that {@link #resolve} built. */
    static long array(Session s, int k, int nodes) {
        return s.out.scratch + ARRAYS_OFFSET + 8L * k * maxEntries(nodes);
    }

    /**
     * Resolves {@code count} entries of {@code nodes} node handles and one edge-data word each (u64,
     * little-endian, read once) into native arrays in the scratch memory ({@link #array}); every node
     * must be a live node of the process (pinned for the call). Returns SUCCESS or the refusal.
     */
    static int resolve(Session s, DirectBuffer in, int index, int length, int count, int nodes) {
        int max = maxEntries(nodes);
        if (count < 0 || count > max) {
            return s.refuse("count", count + " is not within 0.." + max, CuResult.INVALID_VALUE);
        }
        int stride = 8 * (nodes + 1);
        if (length != count * stride) {
            return s.refuse("entries", length + " bytes for " + count + " entries of " + stride, CuResult.INVALID_VALUE);
        }
        for (int i = 0; i < count; i++) {
            for (int k = 0; k <= nodes; k++) {
                long word = in.getLong(index + stride * i + 8 * k, ByteOrder.LITTLE_ENDIAN);
                if (k < nodes) {
                    HandleTable.Entry e = s.pinHandle(GraphState.KIND_GRAPH_NODE, word);
                    if (e == null) {
                        return s.refuse("entries[" + i + "]", "names no live node of this process", CuResult.INVALID_VALUE);
                    }
                    word = e.nativeValue();
                }
                UnsafeApi.putLong(array(s, k, nodes) + 8L * i, word);
            }
        }
        return CuResult.SUCCESS;
    }
}
