package io.ivcuda.server.core;

import io.ivcuda.server.backend.CudaBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.HandleKinds;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
    private final InContext inContext;
    private final Set<Long> provisional = ConcurrentHashMap.newKeySet();
    /** A conditional node's body graphs (native) → {its parent graph, its node} (native): the driver's. */
    private final Map<Long, long[]> bodies = new ConcurrentHashMap<>();

    public GraphState(HandleTable handles, CudaBackend backend, InContext inContext) {
        this.handles = handles;
        this.backend = backend;
        this.inContext = inContext;
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
     * A body graph of a conditional node: the driver frees it with its node (or the node's graph),
     * never the process ({@link #isBody}).
     */
    public void body(long nativeBody, long nativeParentGraph, long nativeNode) {
        bodies.put(nativeBody, new long[] {nativeParentGraph, nativeNode});
    }

    public boolean isBody(long nativeGraph) {
        return bodies.containsKey(nativeGraph);
    }

    /**
     * The body graphs that go with {@code nativeGraph} (destroyed) or {@code nativeNode} (destroyed;
     * 0: none), and theirs in turn: forgotten here and returned, so that the caller removes their
     * handles and their nodes' handles.
     */
    public List<Long> forgetBodies(long nativeGraph, long nativeNode) {
        List<Long> gone = new ArrayList<>();
        for (Map.Entry<Long, long[]> e : bodies.entrySet()) {
            long[] parent = e.getValue();
            if ((nativeGraph != 0 && parent[0] == nativeGraph) || (nativeNode != 0 && parent[1] == nativeNode)) {
                if (bodies.remove(e.getKey()) != null) {
                    gone.add(e.getKey());
                }
            }
        }
        for (int i = 0; i < gone.size(); i++) {
            for (Long nested : forgetBodies(gone.get(i), 0)) {
                if (!gone.contains(nested)) {
                    gone.add(nested);
                }
            }
        }
        return gone;
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
                // a body graph is its node's: its parent graph's destruction frees it
                boolean body = kind == KIND_GRAPH && bodies.remove(e.nativeValue()) != null;
                if (kind == KIND_GRAPH_EXEC) {
                    inContext.run(e.extra(), out, () -> backend.graphExecDestroy(e.nativeValue()));
                } else if (kind == KIND_GRAPH && !capturing && !body) {
                    inContext.run(e.extra(), out, () -> backend.graphDestroy(e.nativeValue()));
                }
            }
        }
    }

}
