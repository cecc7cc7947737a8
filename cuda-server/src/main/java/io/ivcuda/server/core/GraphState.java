package io.ivcuda.server.core;

import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.HandleKinds;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the VM keeps about its processes' graphs beyond the handle table (docs/graphs.md): which
 * graph handles name a graph still being captured ({@link #provisional}: the driver owns it and
 * frees it if the capture fails, so its handle must go with it), and the reclaim of graphs,
 * executable graphs and nodes. A graph handle's extra is the context it lives in; a node's is its
 * native graph, so a graph's destruction removes its nodes' handles ({@link
 * HandleTable#removeDependents}).
 */
public final class GraphState {
    public static final int KIND_GRAPH = HandleKinds.GRAPH;
    public static final int KIND_GRAPH_EXEC = HandleKinds.GRAPH_EXEC;
    public static final int KIND_GRAPH_NODE = HandleKinds.GRAPH_NODE;
    public static final int KIND_USER_OBJECT = HandleKinds.USER_OBJECT;

    private final HandleTable handles;
    private final CudaBackend backend;
    private final Set<Long> provisional = ConcurrentHashMap.newKeySet();

    public GraphState(HandleTable handles, CudaBackend backend) {
        this.handles = handles;
        this.backend = backend;
    }

    /** A graph handle minted for a graph being captured. */
    public void provisional(long id) {
        provisional.add(id);
    }

    /** Whether the handle names a graph being captured (removes the mark: the capture ended). */
    public boolean settle(long id) {
        return provisional.remove(id);
    }

    /**
     * The capture of a provisional graph failed and the driver freed the graph: its handle goes.
     * False (nothing done) if the handle was not provisional, or a reclaim took it first. One step
     * with the reclaim's take, so the graph is either left to the driver or destroyed by the reclaim,
     * never both.
     */
    public synchronized boolean forgetFailedCapture(long id) {
        if (!provisional.remove(id)) {
            return false;
        }
        handles.remove(id);
        return true;
    }

    /** Takes the handle for the reclaim; null if it is gone, else whether it named a graph being captured. */
    private synchronized Boolean take(long id) {
        if (!handles.takeForReclaim(id)) {
            return null;
        }
        return provisional.remove(id);
    }

    /**
     * Frees the token's executable graphs and graphs (in their contexts) and forgets its node
     * handles; a graph still being captured is left to its stream, which the reclaim destroys
     * next. Called by {@link Vm#reclaim} before the other kinds.
     */
    void reclaim(long token, Out out) {
        List<HandleTable.Entry> entries = handles.ownedBy(token);
        for (int kind : new int[] {KIND_GRAPH_EXEC, KIND_GRAPH_NODE, KIND_GRAPH}) {
            for (HandleTable.Entry e : entries) {
                if (e.kind() != kind) {
                    continue;
                }
                Boolean provisionalGraph = take(e.id());
                if (provisionalGraph == null) {
                    continue; // destroyed (or its capture failed) by a call of the process: not twice
                }
                boolean capturing = provisionalGraph;
                if (kind == KIND_GRAPH_EXEC) {
                    inContext(e.extra(), out, () -> backend.graphExecDestroy(e.nativeValue()));
                } else if (kind == KIND_GRAPH && !capturing) {
                    inContext(e.extra(), out, () -> backend.graphDestroy(e.nativeValue()));
                }
            }
        }
    }

    private void inContext(long ctx, Out out, Runnable call) {
        if (ctx != 0) {
            backend.ctxPushCurrent(ctx);
        }
        call.run();
        if (ctx != 0) {
            backend.ctxPopCurrent(out);
        }
    }
}
