package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.Requests;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.UnsafeApi;
import org.junit.jupiter.api.Test;

/**
 * cuGraphExecUpdate (api/graphs.api, ivc_graph_exec_update) over a stand-in of the driver's graphs
 * that keeps what the server built: each graph's nodes with their kind, dependencies and
 * parameters; an executable graph is a copy of them, which an update replaces when the topology
 * and the node kinds match and refuses as the driver documents otherwise (cuda.h, cuGraphExecUpdate:
 * CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, the result, the node of hGraph and the mismatched
 * dependency); a launch records the parameters the executable graph has then. What is checked is
 * the server's part: the native graphs it hands the driver, the result info it sends back with
 * the process's own node handles, and the refusals of handles that are not the process's.
 */
class GraphExecUpdateTest extends GraphCase<GraphExecUpdateTest.Backend> {
    static final long TOKEN = (7373L << 32) | 0x43;
    static final long OTHER = (7474L << 32) | 0x44;
    /** CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE */
    static final int UPDATE_FAILURE = 910;
    /** CUgraphExecUpdateResult */
    static final int UPDATE_SUCCESS = 0;
    static final int TOPOLOGY_CHANGED = 2;
    static final int NODE_TYPE_CHANGED = 3;

    /** A node as the stand-in keeps it: its native value, kind, dependencies (native) and parameters. */
    record Node(long handle, String kind, List<Long> deps, List<Long> params) {
    }

    static final class Backend extends GraphStandInBackend {
        final Map<Long, List<Node>> nodes = new ConcurrentHashMap<>();
        final Map<Long, List<Node>> execs = new ConcurrentHashMap<>();
        final List<List<Node>> launched = new CopyOnWriteArrayList<>();
        final AtomicInteger updates = new AtomicInteger();
        volatile long lastUpdateExec;
        volatile long lastUpdateGraph;
        /** when not 0: the error node every failed update answers, whatever the graphs */
        volatile long forcedErrorNode;

        @Override
        public int graphCreate(Out o, int flags) {
            int r = super.graphCreate(o, flags);
            nodes.put(o.handle, new CopyOnWriteArrayList<>());
            return r;
        }

        private int node(Out o, int op, long graph, long node, long exec, long deps, long count, String kind,
                         List<Long> params) {
            if (op == NODE_ADD) {
                List<Node> list = nodes.get(graph);
                if (list == null) {
                    return CuResult.INVALID_VALUE;
                }
                List<Long> d = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    d.add(UnsafeApi.getLong(deps + 8L * i));
                }
                o.handle = fresh();
                list.add(new Node(o.handle, kind, d, params));
                return CuResult.SUCCESS;
            }
            // a set: of the node in its graph (op 1) or of its pair in an executable graph (op 2)
            for (List<Node> list : op == NODE_EXEC_SET ? List.of(execs.getOrDefault(exec, List.of()))
                    : nodes.values()) {
                for (int i = 0; i < list.size(); i++) {
                    if (list.get(i).handle() == node) {
                        Node n = list.get(i);
                        list.set(i, new Node(n.handle(), n.kind(), n.deps(), params));
                        return CuResult.SUCCESS;
                    }
                }
            }
            return CuResult.INVALID_VALUE;
        }

        @Override
        public int graphKernelNode(Out o, int op, long graph, long node, long exec, long deps, long count,
                                   long function, int gx, int gy, int gz, int bx, int by, int bz, int shared,
                                   long kernelParams) {
            long first = kernelParams == 0 ? -1 : UnsafeApi.getInt(UnsafeApi.getLong(kernelParams));
            return node(o, op, graph, node, exec, deps, count, "kernel", List.of(function, (long) gx, first));
        }

        @Override
        public int graphMemsetNode(Out o, int op, long graph, long node, long exec, long deps, long count, long ctx,
                                   long dst, long pitch, int value, int elementSize, long width, long height) {
            return node(o, op, graph, node, exec, deps, count, "memset", List.of(dst, (long) value, width));
        }

        @Override
        public int graphCopyNode(Out o, int op, long graph, long node, long exec, long deps, long count, long ctx,
                                 int dstType, long dst, long dstPitch, long dstHeight, int srcType, long src,
                                 long srcPitch, long srcHeight, long width, long height, long depth) {
            return node(o, op, graph, node, exec, deps, count, "copy", List.of(dst, src, width));
        }

        @Override
        public int graphInstantiate(Out o, long graph, long flags) {
            List<Node> list = nodes.get(graph);
            if (list == null) {
                return CuResult.INVALID_VALUE;
            }
            o.handle = fresh();
            execs.put(o.handle, new CopyOnWriteArrayList<>(list));
            return CuResult.SUCCESS;
        }

        @Override
        public int graphExecDestroy(long exec) {
            return execs.remove(exec) != null ? CuResult.SUCCESS : CuResult.INVALID_VALUE;
        }

        @Override
        public int graphLaunch(long exec, long stream) {
            List<Node> list = execs.get(exec);
            if (list == null) {
                return CuResult.INVALID_VALUE;
            }
            launched.add(List.copyOf(list));
            return CuResult.SUCCESS;
        }

        private int fail(Out o, int result, long errorNode, long errorFrom) {
            o.value = result;
            o.handle = forcedErrorNode != 0 ? forcedErrorNode : errorNode;
            o.address = errorFrom;
            return UPDATE_FAILURE;
        }

        /** Nodes pair by their place; dependencies by the place of the node they name. */
        @Override
        public int graphExecUpdate(Out o, long exec, long graph) {
            updates.incrementAndGet();
            lastUpdateExec = exec;
            lastUpdateGraph = graph;
            List<Node> old = execs.get(exec);
            List<Node> now = nodes.get(graph);
            if (old == null || now == null) {
                o.value = 1; // CU_GRAPH_EXEC_UPDATE_ERROR
                o.handle = 0;
                o.address = 0;
                return CuResult.INVALID_VALUE;
            }
            if (old.size() != now.size()) {
                return fail(o, TOPOLOGY_CHANGED, 0, 0);
            }
            for (int i = 0; i < now.size(); i++) {
                Node n = now.get(i);
                Node paired = old.get(i);
                if (!n.kind().equals(paired.kind())) {
                    return fail(o, NODE_TYPE_CHANGED, n.handle(), 0);
                }
                if (n.deps().size() != paired.deps().size()) {
                    return fail(o, TOPOLOGY_CHANGED, n.handle(), 0);
                }
                for (int k = 0; k < n.deps().size(); k++) {
                    if (place(now, n.deps().get(k)) != place(old, paired.deps().get(k))) {
                        return fail(o, TOPOLOGY_CHANGED, n.handle(), n.deps().get(k));
                    }
                }
            }
            List<Node> updated = execs.get(exec);
            for (int i = 0; i < now.size(); i++) {
                Node paired = updated.get(i);
                updated.set(i, new Node(paired.handle(), paired.kind(), paired.deps(), now.get(i).params()));
            }
            o.value = UPDATE_SUCCESS;
            o.handle = 0;
            o.address = 0;
            return CuResult.SUCCESS;
        }

        private static int place(List<Node> list, long node) {
            for (int i = 0; i < list.size(); i++) {
                if (list.get(i).handle() == node) {
                    return i;
                }
            }
            return -1;
        }
    }

    GraphExecUpdateTest() {
        super(TOKEN, Backend::new);
    }

    /** The handles of one graph's nodes: a memset, a kernel after it, a copy after the kernel. */
    record Built(long graph, long memset, long kernel, long copy) {
    }

    private Built build(Channel c, long k, long d, int memsetValue, int kernelArgument, int copyBytes) {
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        long ms = ok(c.call(Requests.ivc_graph_memset_node(0, graph, 0, 0, 0, new byte[0], 0, d, 256, 0, memsetValue, 4,
                64, 1)));
        long kn = ok(c.call(Requests.ivc_graph_kernel_node(0, graph, 0, 0, 1, deps(ms), 16, k, 3, 1, 1, 32, 1, 1, 0,
                int4(kernelArgument), 4)));
        long cp = ok(c.call(Requests.ivc_graph_copy_node_dtod(0, graph, 0, 0, 1, deps(kn), 16, d + 128, 128, 128, 1, d,
                128, 128, 1, copyBytes, 1, 1)));
        return new Built(graph, ms, kn, cp);
    }

    private List<Long> launch(Channel c, long exec) {
        int before = backend.launched.size();
        long stream = ok(c.call(Requests.cuStreamCreate(0)));
        c.post(Requests.cuGraphLaunch(exec, stream));
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuStreamSynchronize(stream)).result());
        assertEquals(before + 1, backend.launched.size(), "one launch reached the driver");
        List<Long> params = new ArrayList<>();
        for (Node n : backend.launched.get(before)) {
            params.addAll(n.params());
        }
        return params;
    }

    /** the result info as ivc_graph_exec_update answers it: result, errorNode, errorFromNode */
    private static long[] info(Response r) {
        return new long[] {r.out(0), r.out(1), r.out(2)};
    }

    @Test
    void anUpdateWithTheSameTopologyIsWhatTheExecutableGraphLaunchesAfterwards() {
        Channel c = greetedWithContext(0, TOKEN);
        long k = kernel(c);
        long d = ok(c.call(Requests.ivc_mem_alloc(256)));
        Built first = build(c, k, d, 7, 1234, 64);
        long exec = ok(c.call(Requests.cuGraphInstantiateWithFlags(first.graph(), 0)));
        List<Long> before = launch(c, exec);
        assertEquals(List.of(d, 7L, 64L, LibraryTest.FUNCTION + 1, 3L, 1234L, d + 128, d, 64L), before);

        Built second = build(c, k, d, 9, 4321, 96);
        Response r = c.call(Requests.ivc_graph_exec_update(exec, second.graph()));
        assertEquals(CuResult.SUCCESS, r.result());
        assertEquals(UPDATE_SUCCESS, r.out(0));
        assertEquals(0, r.out(1), "no error node");
        assertEquals(0, r.out(2), "no error edge");
        assertEquals(backend.nodes.keySet().stream().filter(g -> backend.nodes.get(g).get(0).params().get(1) == 9L)
                .findFirst().orElseThrow(), backend.lastUpdateGraph, "the driver got the native graph of the handle");
        assertNotEquals(second.graph(), backend.lastUpdateGraph, "not the handle");
        assertEquals(List.of(d, 9L, 64L, LibraryTest.FUNCTION + 1, 3L, 4321L, d + 128, d, 96L), launch(c, exec),
                "the memset's value, the kernel's parameter and the copy's width of the second graph");

        // the executable graph's own node setter after the update, then an update back to the first graph
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_graph_memset_node(2, 0, first.memset(), exec, 0,
                new byte[0], 0, d, 256, 0, 5, 4, 64, 1)).result());
        assertEquals(List.of(d, 5L, 64L), launch(c, exec).subList(0, 3));
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_graph_exec_update(exec, first.graph())).result());
        assertEquals(before, launch(c, exec), "the first graph's parameters again");
    }

    @Test
    void aTopologyChangeAnswersTheFailureWithTheProcesssNodes() {
        Channel c = greetedWithContext(0, TOKEN);
        long k = kernel(c);
        long d = ok(c.call(Requests.ivc_mem_alloc(256)));
        Built first = build(c, k, d, 7, 1, 64);
        long exec = ok(c.call(Requests.cuGraphInstantiateWithFlags(first.graph(), 0)));
        List<Long> before = launch(c, exec);

        // the copy after the memset instead of after the kernel: the copy of the new graph, its memset
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        long ms = ok(c.call(Requests.ivc_graph_memset_node(0, graph, 0, 0, 0, new byte[0], 0, d, 256, 0, 8, 4, 64, 1)));
        long kn = ok(c.call(Requests.ivc_graph_kernel_node(0, graph, 0, 0, 1, deps(ms), 16, k, 3, 1, 1, 32, 1, 1, 0,
                int4(2), 4)));
        long cp = ok(c.call(Requests.ivc_graph_copy_node_dtod(0, graph, 0, 0, 1, deps(ms), 16, d + 128, 128, 128, 1, d,
                128, 128, 1, 64, 1, 1)));
        Response r = c.call(Requests.ivc_graph_exec_update(exec, graph));
        assertEquals(UPDATE_FAILURE, r.result(), "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE");
        assertEquals(List.of((long) TOPOLOGY_CHANGED, cp, ms), List.of(info(r)[0], info(r)[1], info(r)[2]),
                "result, errorNode (the node of hGraph), errorFromNode (its mismatched dependency), as handles");
        assertNotEquals(kn, r.out(1));
        assertEquals(before, launch(c, exec), "a refused update leaves the executable graph as it was");

        // a node of another kind in the same place: the node, no edge
        long swapped = ok(c.call(Requests.cuGraphCreate(0)));
        long m1 = ok(c.call(Requests.ivc_graph_memset_node(0, swapped, 0, 0, 0, new byte[0], 0, d, 256, 0, 1, 4, 64, 1)));
        long m2 = ok(c.call(Requests.ivc_graph_memset_node(0, swapped, 0, 0, 1, deps(m1), 16, d, 256, 0, 1, 4, 64, 1)));
        ok(c.call(Requests.ivc_graph_copy_node_dtod(0, swapped, 0, 0, 1, deps(m2), 16, d + 128, 128, 128, 1, d, 128, 128,
                1, 64, 1, 1)));
        r = c.call(Requests.ivc_graph_exec_update(exec, swapped));
        assertEquals(UPDATE_FAILURE, r.result());
        assertEquals(List.of((long) NODE_TYPE_CHANGED, m2, 0L), List.of(info(r)[0], info(r)[1], info(r)[2]));

        // another count of nodes: no error node (cuda.h)
        long small = ok(c.call(Requests.cuGraphCreate(0)));
        ok(c.call(Requests.ivc_graph_memset_node(0, small, 0, 0, 0, new byte[0], 0, d, 256, 0, 1, 4, 64, 1)));
        r = c.call(Requests.ivc_graph_exec_update(exec, small));
        assertEquals(UPDATE_FAILURE, r.result());
        assertEquals(List.of((long) TOPOLOGY_CHANGED, 0L, 0L), List.of(info(r)[0], info(r)[1], info(r)[2]));
    }

    @Test
    void handlesThatAreNotTheProcesssAreRefusedBeforeTheDriver() {
        Channel c = greetedWithContext(0, TOKEN);
        Channel other = greetedWithContext(1, OTHER);
        long d = ok(c.call(Requests.ivc_mem_alloc(256)));
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        long node = ok(c.call(Requests.ivc_graph_memset_node(0, graph, 0, 0, 0, new byte[0], 0, d, 256, 0, 1, 4, 64, 1)));
        long exec = ok(c.call(Requests.cuGraphInstantiateWithFlags(graph, 0)));
        long theirGraph = ok(other.call(Requests.cuGraphCreate(0)));
        long theirExec = ok(other.call(Requests.cuGraphInstantiateWithFlags(theirGraph, 0)));
        int updates = backend.updates.get();

        long madeUp = (51L << 56) | (1L << 32) | 77;
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_exec_update(madeUp, graph)).result(),
                "an executable graph handle nobody was given");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_exec_update(theirExec, graph)).result(),
                "another process's executable graph");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_exec_update(exec, theirGraph)).result(),
                "another process's graph");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_exec_update(graph, graph)).result(),
                "a graph handle is no executable graph");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_exec_update(exec, exec)).result(),
                "an executable graph handle is no graph");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_exec_update(exec, node)).result(),
                "a node handle is no graph");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_exec_update(exec, 0)).result(), "NULL graph");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_exec_update(0, graph)).result(), "NULL exec");
        assertEquals(updates, backend.updates.get(), "none of those reached the driver");
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuGraphExecDestroy(exec)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_exec_update(exec, graph)).result(),
                "a destroyed executable graph");
        assertEquals(updates, backend.updates.get());

        // the server still serves both processes
        long again = ok(c.call(Requests.cuGraphInstantiateWithFlags(graph, 0)));
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_graph_exec_update(again, graph)).result());
        assertEquals(CuResult.SUCCESS, other.call(Requests.ivc_graph_exec_update(theirExec, theirGraph)).result());
    }

    @Test
    void anErrorNodeOfAnotherProcessIsNoHandleOfThisOne() {
        Channel c = greetedWithContext(0, TOKEN);
        Channel other = greetedWithContext(1, OTHER);
        long d = ok(c.call(Requests.ivc_mem_alloc(256)));
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        ok(c.call(Requests.ivc_graph_memset_node(0, graph, 0, 0, 0, new byte[0], 0, d, 256, 0, 1, 4, 64, 1)));
        long exec = ok(c.call(Requests.cuGraphInstantiateWithFlags(graph, 0)));
        long empty = ok(c.call(Requests.cuGraphCreate(0)));
        // the other process's node, made by hand: the stand-in answers its native value as the error node
        long od = ok(other.call(Requests.ivc_mem_alloc(256)));
        long theirGraph = ok(other.call(Requests.cuGraphCreate(0)));
        long theirs = ok(other.call(Requests.ivc_graph_memset_node(0, theirGraph, 0, 0, 0, new byte[0], 0, od, 256, 0, 1,
                4, 64, 1)));
        backend.forcedErrorNode = backend.nodes.get(backend.nodes.keySet().stream()
                .filter(g -> !backend.nodes.get(g).isEmpty() && backend.nodes.get(g).get(0).params().get(0) == od)
                .findFirst().orElseThrow()).get(0).handle();
        Response r = c.call(Requests.ivc_graph_exec_update(exec, empty));
        assertEquals(UPDATE_FAILURE, r.result());
        assertEquals(TOPOLOGY_CHANGED, r.out(0));
        assertEquals(0, r.out(1), "the other process's node is no handle of this one: NULL, not " + theirs);
        assertEquals(CuResult.SUCCESS, other.call(Requests.cuGraphNodeGetType(theirs)).result(), "still the other's");
    }
}
