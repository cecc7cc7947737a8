package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.Requests;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.agrona.UnsafeApi;
import org.junit.jupiter.api.Test;

/**
 * Graph nodes with parameters (api/graphs.api section graphbuild) over a stand-in backend that
 * records what the server asked the driver for: the head's shapes, the kernel's parameters, the
 * spans of memsets and copies, host-node targets, conditional nodes' bodies as graph handles that
 * go with their graph, and the staged copy of pageable memory (by hand and into a capture).
 * Nothing here runs a graph: gpu/programs/graph_nodes.c does that on a GPU.
 */
class GraphBuildTest extends GraphCase<GraphBuildTest.Backend> {
    static final long TOKEN = (7272L << 32) | 0x42;
    static final long CAPTURED = 0xcafe0000L;

    /** A recorded node: its kind, op, graph, node, exec, dependencies and a few values. */
    record Call(String kind, int op, long graph, long node, long exec, List<Long> deps, long a, long b, long c) {
    }

    static final class Backend extends GraphStandInBackend {
        final List<Call> calls = new CopyOnWriteArrayList<>();
        volatile boolean capturing;
        volatile long updatedDependency;
        volatile long bodyArray = UnsafeApi.allocateMemory(8 * 4);

        private static List<Long> deps(long deps, long count) {
            List<Long> l = new CopyOnWriteArrayList<>();
            for (int i = 0; i < count; i++) {
                l.add(UnsafeApi.getLong(deps + 8L * i));
            }
            return l;
        }

        private int record(Out o, String kind, int op, long graph, long node, long exec, long deps, long count, long a,
                           long b, long c) {
            if (op == NODE_ADD && !graphs.contains(graph)) {
                return CuResult.INVALID_VALUE;
            }
            calls.add(new Call(kind, op, graph, node, exec, deps(deps, count), a, b, c));
            o.handle = fresh();
            return CuResult.SUCCESS;
        }

        @Override
        public int graphInstantiate(Out o, long graph, long flags) {
            o.handle = fresh();
            return CuResult.SUCCESS;
        }

        @Override
        public int graphExecDestroy(long exec) {
            return CuResult.SUCCESS;
        }

        @Override
        public int graphDestroyNode(long node) {
            return CuResult.SUCCESS;
        }

        @Override
        public int graphAddSimpleNode(Out o, long graph, long deps, long count, int kind, long object) {
            return record(o, "simple" + kind, NODE_ADD, graph, 0, 0, deps, count, object, 0, 0);
        }

        @Override
        public int graphKernelNode(Out o, int op, long graph, long node, long exec, long deps, long count, long function,
                                   int gx, int gy, int gz, int bx, int by, int bz, int shared, long kernelParams) {
            long first = kernelParams == 0 ? -1 : UnsafeApi.getInt(UnsafeApi.getLong(kernelParams));
            return record(o, "kernel", op, graph, node, exec, deps, count, function, gx, first);
        }

        @Override
        public int graphMemsetNode(Out o, int op, long graph, long node, long exec, long deps, long count, long ctx,
                                   long dst, long pitch, int value, int elementSize, long width, long height) {
            return record(o, "memset", op, graph, node, exec, deps, count, dst, value, width);
        }

        @Override
        public int graphCopyNode(Out o, int op, long graph, long node, long exec, long deps, long count, long ctx,
                                 int dstType, long dst, long dstPitch, long dstHeight, int srcType, long src,
                                 long srcPitch, long srcHeight, long width, long height, long depth) {
            return record(o, "copy" + srcType + dstType, op, graph, node, exec, deps, count, dst, src, width);
        }

        @Override
        public int graphHostNode(Out o, int op, long graph, long node, long exec, long deps, long count, long key) {
            return record(o, "host", op, graph, node, exec, deps, count, key, 0, 0);
        }

        @Override
        public int graphConditionalHandleCreate(Out o, long graph, long ctx, int defaultLaunchValue, int flags) {
            o.handle = 0x77000 + defaultLaunchValue;
            return graphs.contains(graph) ? CuResult.SUCCESS : CuResult.INVALID_VALUE;
        }

        @Override
        public int graphAddConditionalNode(Out o, long graph, long deps, long count, long ctx, long handle, int type,
                                           int size) {
            int r = record(o, "conditional", NODE_ADD, graph, 0, 0, deps, count, handle, type, size);
            long node = o.handle;
            for (int i = 0; i < size; i++) {
                long body = fresh();
                graphs.add(body);
                UnsafeApi.putLong(bodyArray + 8L * i, body);
            }
            o.handle = node;
            o.address = bodyArray;
            return r;
        }

        /** Allocation nodes' addresses → their node, as the driver keeps them (GraphMemNodesTest). */
        final java.util.Map<Long, Long> allocations = new java.util.concurrent.ConcurrentHashMap<>();
        /** node → {dptr, bytesize, device, access flags or -1} of the allocation nodes; node → dptr of free nodes. */
        final java.util.Map<Long, long[]> allocNodes = new java.util.concurrent.ConcurrentHashMap<>();
        final java.util.Map<Long, Long> freeNodes = new java.util.concurrent.ConcurrentHashMap<>();

        @Override
        public int graphMemAllocNode(Out o, long graph, long deps, long count, int device, long bytesize,
                                     int[] accessFlags) {
            int r = record(o, "alloc", NODE_ADD, graph, 0, 0, deps, count, bytesize, device, accessFlags.length);
            if (r == CuResult.SUCCESS) {
                long dptr = 0x7f00_0000_0000L + fresh() * 0x10000L;
                allocations.put(dptr, o.handle);
                allocNodes.put(o.handle, new long[] {dptr, bytesize, device, accessFlags.length == 0 ? -1 : accessFlags[0]});
                o.address = dptr;
            }
            return r;
        }

        @Override
        public int graphMemFreeNode(Out o, long graph, long deps, long count, long dptr) {
            if (!allocations.containsKey(dptr)) {
                return CuResult.INVALID_VALUE; // the driver's answer for an address no allocation node made
            }
            int r = record(o, "free", NODE_ADD, graph, 0, 0, deps, count, dptr, 0, 0);
            if (r == CuResult.SUCCESS) {
                freeNodes.put(o.handle, dptr);
            }
            return r;
        }

        @Override
        public int graphMemAllocNodeGetParams(Out o, long node) {
            long[] a = allocNodes.get(node);
            if (a == null) {
                return CuResult.INVALID_VALUE;
            }
            long p = o.scratch + MEM_ALLOC_NODE_SCRATCH;
            UnsafeApi.setMemory(p, MEM_ALLOC_NODE_SIZE, (byte) 0);
            UnsafeApi.putInt(p, 1);
            UnsafeApi.putInt(p + 8, 1);
            UnsafeApi.putInt(p + 12, (int) a[2]);
            long descs = o.scratch + MEM_ALLOC_NODE_SCRATCH_DESCS;
            if (a[3] >= 0) {
                UnsafeApi.putInt(descs, 1);
                UnsafeApi.putInt(descs + 4, (int) a[2]);
                UnsafeApi.putInt(descs + 8, (int) a[3]);
                UnsafeApi.putLong(p + MEM_ALLOC_NODE_ACCESS_DESCS, 0x1234);
                UnsafeApi.putLong(p + MEM_ALLOC_NODE_ACCESS_COUNT, 1);
            }
            UnsafeApi.putLong(p + MEM_ALLOC_NODE_BYTESIZE, a[1]);
            UnsafeApi.putLong(p + MEM_ALLOC_NODE_DPTR, a[0]);
            return CuResult.SUCCESS;
        }

        @Override
        public int graphMemFreeNodeGetParams(Out o, long node) {
            Long dptr = freeNodes.get(node);
            if (dptr == null) {
                return CuResult.INVALID_VALUE;
            }
            o.address = dptr;
            return CuResult.SUCCESS;
        }

        @Override
        public int streamIsCapturing(Out o, long stream) {
            o.value = capturing ? 1 : 0;
            return CuResult.SUCCESS;
        }

        @Override
        public int streamGetCaptureInfo(Out o, long stream) {
            o.value = capturing ? 1 : 0;
            o.handle = CAPTURED;
            UnsafeApi.putLong(o.scratch + 3000, 0xdeb0L);
            o.address = o.scratch + 3000;
            o.bytes = 1;
            return CuResult.SUCCESS;
        }

        @Override
        public int streamUpdateCaptureDependencies(long stream, long nodes, long edges, long count, int flags) {
            updatedDependency = count == 1 && flags == 1 ? UnsafeApi.getLong(nodes) : -1;
            return CuResult.SUCCESS;
        }
    }

    GraphBuildTest() {
        super(TOKEN, Backend::new);
    }

    private Call last() {
        return backend.calls.get(backend.calls.size() - 1);
    }

    @Test
    void kernelMemsetAndCopyNodesReachTheDriverChecked() {
        Channel c = greetedWithContext(0, TOKEN);
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        long k = kernel(c);
        long kn = ok(c.call(Requests.ivc_graph_kernel_node(0, graph, 0, 0, 0, new byte[0], 0, k, 3, 1, 1, 32, 1, 1, 0,
                int4(1234), 4)));
        Call call = last();
        assertEquals("kernel", call.kind());
        assertEquals(LibraryTest.FUNCTION + 1, call.a(), "the CUkernel resolved to its function");
        assertEquals(3, call.b());
        assertEquals(1234, call.c(), "the parameter's bytes as the driver reads them");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_kernel_node(0, graph, 0, 0, 0, new byte[0], 0, k,
                1, 1, 1, 1, 1, 1, 0, new byte[2], 2)).result(), "2 bytes for a 4-byte parameter");

        long d = ok(c.call(Requests.ivc_mem_alloc(256)));
        long ms = ok(c.call(Requests.ivc_graph_memset_node(0, graph, 0, 0, 1, deps(kn), 16, d, 256, 0, 7, 4, 64, 1)));
        call = last();
        assertEquals("memset", call.kind());
        assertEquals(d, call.a());
        assertEquals(1, call.deps().size(), "one dependency, resolved to its native node");
        assertNotEquals(kn, call.deps().get(0), "the native node, not the handle");
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_graph_memset_node(0, graph, 0, 0, 0, new byte[0], 0, d, 256, 0, 7, 4, 65, 1)).result(),
                "65 words reach past the 256 checked bytes");
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_graph_memset_node(0, graph, 0, 0, 0, new byte[0], 0, d, 512, 0, 7, 4, 64, 1)).result(),
                "a span past the allocation (the generated device check)");
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_graph_memset_node(0, graph, 0, 0, 0, new byte[0], 0, d, 256, 0, 7, 3, 4, 1)).result(),
                "element size 3");

        long pinned = ok(c.call(Requests.ivc_host_alloc(4096, 0)));
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_graph_copy_node_htod(0, graph, 0, 0, 1, deps(ms), 16, d, 256,
                256, 1, pinned, 256, 256, 1, 256, 1, 1)).result());
        call = last();
        assertEquals("copy12", call.kind(), "host to device");
        assertEquals(d, call.a());
        assertNotEquals(pinned, call.b(), "the pool offset became the server's address");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_copy_node_dtoh(0, graph, 0, 0, 0, new byte[0], 0,
                pinned, 256, 128, 2, d, 256, 128, 2, 200, 2, 1)).result(), "rows of 200 bytes with a pitch of 128");
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_graph_copy_node_dtod(0, graph, 0, 0, 0, new byte[0], 0, d,
                128, 128, 1, d + 128, 128, 128, 1, 128, 1, 1)).result());
        assertEquals("copy22", last().kind());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_copy_node_dtod(0, graph, 0, 0, 0, new byte[0], 0,
                d, 128, 128, 1, d + 200, 128, 128, 1, 128, 1, 1)).result(), "the source reaches past its allocation");
    }

    @Test
    void theHeadNamesWhatItsOperationNeeds() {
        Channel c = greetedWithContext(0, TOKEN);
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        long exec = ok(c.call(Requests.cuGraphInstantiateWithFlags(graph, 0)));
        long d = ok(c.call(Requests.ivc_mem_alloc(64)));
        long node = ok(c.call(Requests.ivc_graph_memset_node(0, graph, 0, 0, 0, new byte[0], 0, d, 64, 0, 1, 1, 64, 1)));
        int calls = backend.calls.size();
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_memset_node(1, graph, node, 0, 0, new byte[0], 0,
                d, 64, 0, 1, 1, 64, 1)).result(), "a set names no graph");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_memset_node(2, 0, node, 0, 0, new byte[0], 0, d,
                64, 0, 1, 1, 64, 1)).result(), "an executable set names its executable graph");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_memset_node(0, 0, 0, 0, 0, new byte[0], 0, d, 64,
                0, 1, 1, 64, 1)).result(), "an add names its graph");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_memset_node(3, graph, 0, 0, 0, new byte[0], 0, d,
                64, 0, 1, 1, 64, 1)).result(), "op 3");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_memset_node(1, 0, graph, 0, 0, new byte[0], 0, d,
                64, 0, 1, 1, 64, 1)).result(), "a graph handle is no node (the generated kind check)");
        assertEquals(calls, backend.calls.size(), "none of those reached the driver");
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_graph_memset_node(1, 0, node, 0, 0, new byte[0], 0, d, 64, 0,
                2, 1, 64, 1)).result());
        assertEquals(1, last().op());
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_graph_memset_node(2, 0, node, exec, 0, new byte[0], 0, d, 64,
                0, 3, 1, 64, 1)).result());
        assertEquals(2, last().op());
        assertNotEquals(exec, last().exec(), "the native executable graph");
    }

    @Test
    void hostNodesKeepTheirTargetUntilTheProcessGoes() {
        Channel c = greetedWithContext(0, TOKEN);
        Channel exiting = greeted(1);
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_graph_host_node(0, graph, 0, 0, 0, new byte[0], 0, 0, 5)).result(), "fn NULL");
        assertEquals(0, server.vm().hostCalls().targets(TOKEN));
        ok(c.call(Requests.ivc_graph_host_node(0, graph, 0, 0, 0, new byte[0], 0, 0x4000, 5)));
        assertEquals("host", last().kind());
        assertNotEquals(0x4000L, last().a(), "the driver gets the server's key, never the guest's function");
        assertEquals(1, server.vm().hostCalls().targets(TOKEN), "kept: every launch runs it");
        assertEquals(CuResult.SUCCESS, exiting.call(Requests.ivc_process_exit()).result());
        ServerIntegrationTest.awaitTrue(() -> server.vm().hostCalls().targets(TOKEN) == 0, "released with the process");
    }

    @Test
    void conditionalBodiesAreTheNodesAndGoWithTheirGraph() {
        Channel c = greetedWithContext(0, TOKEN);
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        long handle = ok(c.call(Requests.cuGraphConditionalHandleCreate(graph, 0, 1, 1)));
        assertEquals(0x77001, handle, "the driver's value, unchanged: kernels get it as a parameter");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphConditionalHandleCreate(graph, 0, 1, 2)).result(),
                "flags 2");
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_graph_conditional_node(graph, 0, new byte[0], 0, handle, 3, 1, 0, 4)).result(),
                "type 3");
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_graph_conditional_node(graph, 0, new byte[0], 0, handle, 0, 2, 0, 1)).result(),
                "2 bodies, room for 1");
        Response r = c.call(Requests.ivc_graph_conditional_node(graph, 0, new byte[0], 0, handle, 0, 2, 0, 4));
        assertEquals(CuResult.SUCCESS, r.result());
        long body = r.buffer().getLong(r.payload() + 16, FakeGuest.LE); // the node, the length, then the bodies
        long elseBody = r.buffer().getLong(r.payload() + 24, FakeGuest.LE);
        assertNotEquals(0, body);
        assertNotEquals(body, elseBody);
        // a body is a graph of the process: nodes go into it
        long d = ok(c.call(Requests.ivc_mem_alloc(64)));
        long inBody = ok(c.call(Requests.ivc_graph_memset_node(0, body, 0, 0, 0, new byte[0], 0, d, 64, 0, 1, 1, 64, 1)));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphDestroy(body)).result(), "the driver's to free");
        int destroys = backend.graphDestroys.get();
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuGraphDestroy(graph)).result());
        assertEquals(destroys + 1, backend.graphDestroys.get(), "only the parent reached the driver");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_memset_node(0, body, 0, 0, 0, new byte[0], 0, d,
                64, 0, 1, 1, 64, 1)).result(), "the body's handle went with its graph");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphNodeGetType(inBody)).result(), "and its node's");
    }

    @Test
    void aConditionalNodesDestructionTakesItsBodies() {
        Channel c = greetedWithContext(0, TOKEN);
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        Response r = c.call(Requests.ivc_graph_conditional_node(graph, 0, new byte[0], 0, 5, 1, 1, 0, 1));
        long node = r.out(0);
        long body = r.buffer().getLong(r.payload() + 16, FakeGuest.LE);
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuGraphConditionalHandleCreate(body, 0, 0, 0)).result(),
                "the body is a graph of the process");
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuGraphDestroyNode(node)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphConditionalHandleCreate(body, 0, 0, 0)).result(),
                "the body went with its node");
    }

    @Test
    void aPageableCopyIsStagedAsOneChildGraphNode() {
        Channel c = greetedWithContext(0, TOKEN);
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        long d = ok(c.call(Requests.ivc_mem_alloc(64)));
        long staging = ok(c.call(Requests.ivc_host_alloc(64, 0)));
        long first = ok(c.call(Requests.ivc_graph_memset_node(0, graph, 0, 0, 0, new byte[0], 0, d, 64, 0, 1, 1, 64, 1)));
        int destroys = backend.graphDestroys.get();
        int before = backend.calls.size();
        long node = ok(c.call(Requests.ivc_graph_staged_copy(graph, 0, 1, deps(first), 16, 1, d, staging, 64, 0x5000,
                0x6000)));
        List<Call> made = backend.calls.subList(before, backend.calls.size());
        assertEquals(List.of("copy21", "host", "simple3"), made.stream().map(Call::kind).toList(),
                "to the host: the copy into the staging block, then the guest's function, as a child graph");
        assertEquals(made.get(0).graph(), made.get(1).graph());
        assertEquals(1, made.get(1).deps().size(), "the host node after the copy");
        assertEquals(backend.calls.get(before - 1).graph(), made.get(2).graph(), "into the program's graph");
        assertEquals(made.get(0).graph(), made.get(2).a(), "the child is the two-node graph");
        assertEquals(1, made.get(2).deps().size(), "after the given dependency");
        assertEquals(destroys + 1, backend.graphDestroys.get(), "the two-node graph goes: its node holds a copy");
        assertEquals(1, server.vm().hostCalls().targets(TOKEN));
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuGraphNodeGetType(node)).result(), "the node is the process's");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_staged_copy(graph, 0, 0, new byte[0], 0, 1, d,
                staging, 128, 0x5000, 0x6000)).result(), "128 bytes of a 64-byte allocation");

        // into a capture: after the capture's dependencies, which become the new node
        long stream = ok(c.call(Requests.cuStreamCreate(0)));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_staged_copy(0, stream, 0, new byte[0], 0, 0, d,
                staging, 64, 0x5000, 0x6000)).result(), "the stream captures nothing");
        backend.capturing = true;
        backend.graphs.add(CAPTURED);
        before = backend.calls.size();
        long captured = ok(c.call(Requests.ivc_graph_staged_copy(0, stream, 0, new byte[0], 0, 0, d, staging, 64, 0x5000,
                0x6000)));
        made = backend.calls.subList(before, backend.calls.size());
        assertEquals(List.of("host", "copy12", "simple3"), made.stream().map(Call::kind).toList(),
                "to the device: the guest's function fills the staging block first");
        assertEquals(CAPTURED, made.get(2).graph());
        assertEquals(List.of(0xdeb0L), made.get(2).deps(), "after the capture's dependencies");
        assertNotEquals(0, captured);
        assertTrue(backend.updatedDependency != 0 && backend.updatedDependency != -1, "the capture goes on after the node");
    }
}
