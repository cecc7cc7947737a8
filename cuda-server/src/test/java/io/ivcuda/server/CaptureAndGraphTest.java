package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.Requests;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.agrona.UnsafeApi;
import org.junit.jupiter.api.Test;

/**
 * Capture and graphs (api/graphs.api). The host-memory backend has neither (CUDA_ERROR_NOT_SUPPORTED,
 * after the server's own checks); the handle bookkeeping is tested against a stand-in that answers
 * the graph calls with made-up native values and counts what it is asked to destroy. Nothing here
 * runs a graph: that is gpu/programs/graphs_streams.c's job on a GPU.
 */
class CaptureAndGraphTest extends HostMemoryGuestCase {
    static final long TOKEN = (6161L << 32) | 0x99;
    static final long CAPTURED = 0xc0ffee00L;
    static final long CAPTURED_NODE = 0xc0ffee80L;

    /** Graph calls answered with fresh native values; a stream "captures" once it began to. */
    static final class GraphStandIn extends GraphStandInBackend {
        final Set<Long> execs = ConcurrentHashMap.newKeySet();
        final Set<Long> capturing = ConcurrentHashMap.newKeySet();
        final AtomicInteger execDestroys = new AtomicInteger();
        volatile int endCaptureResult = CuResult.SUCCESS;

        @Override
        public int graphInstantiate(Out o, long graph, long flags) {
            if (!graphs.contains(graph)) {
                return CuResult.INVALID_VALUE;
            }
            o.handle = fresh();
            execs.add(o.handle);
            return CuResult.SUCCESS;
        }

        @Override
        public int graphExecDestroy(long exec) {
            // removed before counted: a test that waits for the count then sees the set without it
            boolean known = execs.remove(exec);
            execDestroys.incrementAndGet();
            return known ? CuResult.SUCCESS : CuResult.INVALID_VALUE;
        }

        @Override
        public int graphAddSimpleNode(Out o, long graph, long deps, long count, int kind, long object) {
            if (!graphs.contains(graph)) {
                return CuResult.INVALID_VALUE;
            }
            o.handle = fresh();
            return CuResult.SUCCESS;
        }

        @Override
        public int streamBeginCapture(long stream, int mode) {
            capturing.add(stream);
            return CuResult.SUCCESS;
        }

        @Override
        public int streamIsCapturing(Out o, long stream) {
            o.value = capturing.contains(stream) ? 1 : 0;
            return CuResult.SUCCESS;
        }

        /** One dependency, from a driver-owned array in the scratch memory. */
        @Override
        public int streamGetCaptureInfo(Out o, long stream) {
            o.value = capturing.contains(stream) ? 1 : 0;
            o.totalBytes = 7;
            o.handle = CAPTURED;
            UnsafeApi.putLong(o.scratch + 2048, CAPTURED_NODE);
            o.address = o.scratch + 2048;
            o.offset = 0;
            o.bytes = 1;
            return CuResult.SUCCESS;
        }

        @Override
        public int streamEndCapture(Out o, long stream) {
            capturing.remove(stream);
            o.handle = endCaptureResult == CuResult.SUCCESS ? CAPTURED : 0;
            return endCaptureResult;
        }
    }

    @Override
    long token() {
        return TOKEN;
    }

    @Test
    void theHostMemoryBackendHasNoGraphsAndTheChecksComeFirst() throws Exception {
        start(new HostMemoryBackend());
        Channel c = greeted(0);
        long stream = ok(c.call(Requests.cuStreamCreate(0)));
        assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.cuGraphCreate(0)).result());
        assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.cuStreamBeginCapture_v2(stream, 0)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuStreamBeginCapture_v2(stream, 3)).result(), "mode 3");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphCreate(1)).result(), "flags must be 0");
        long made = (50L << 56) | (1L << 32) | 5;
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphDestroy(made)).result(), "no such graph");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphNodeGetType((52L << 56) | (1L << 32))).result());
        c.post(Requests.cuGraphLaunch((51L << 56) | (1L << 32), stream));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuCtxSynchronize()).result(), "a launch of no graph");
        ByteBuffer entries = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(0, stream);
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_update_capture_dependencies(stream, 1, entries.array(), 16, 0, 0)).result(),
                "a stream handle is no node");
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_update_capture_dependencies(stream, 2, entries.array(), 16, 0, 0)).result(),
                "2 dependencies in 16 bytes");
    }

    @Test
    void graphsAndExecutableGraphsAreTheProcesssAndGoAtItsExit() throws Exception {
        GraphStandIn backend = new GraphStandIn();
        start(backend);
        Channel c = greeted(0);
        Channel exiting = greeted(1);
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        long exec = ok(c.call(Requests.cuGraphInstantiateWithFlags(graph, 0)));
        long other = ok(c.call(Requests.cuGraphCreate(0)));
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuGraphDestroy(other)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphDestroy(other)).result(), "destroyed once");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphInstantiateWithFlags(exec, 0)).result(),
                "an executable graph is no graph");
        assertEquals(1, backend.graphDestroys.get());
        assertNotEquals(graph, exec);
        assertEquals(CuResult.SUCCESS, exiting.call(Requests.ivc_process_exit()).result());
        ServerIntegrationTest.awaitTrue(() -> backend.execDestroys.get() == 1 && backend.graphDestroys.get() == 2,
                "the exit destroys its graph and executable graph");
        assertEquals(0, backend.graphs.size() + backend.execs.size());
    }

    @Test
    void aFailedCaptureTakesTheHandlesOfItsGraphAndNodesWithIt() throws Exception {
        GraphStandIn backend = new GraphStandIn();
        start(backend);
        Channel c = greeted(0);
        long stream = ok(c.call(Requests.cuStreamCreate(0)));
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuStreamBeginCapture_v2(stream, 2)).result());
        Response info = c.call(Requests.ivc_stream_capture_info(stream, 16));
        assertEquals(CuResult.SUCCESS, info.result());
        assertEquals(1, info.out(0), "active");
        assertEquals(7, info.out(1), "its id");
        long graph = info.out(2);
        assertEquals(1, info.out(3), "one dependency");
        long node = info.buffer().getLong(info.payload() + 40, FakeGuest.LE); // 4 outs, the length, then (node, edge)
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuGraphNodeGetType(node)).result(), "the node is the process's");
        // a pageable copy on a capturing stream is refused before anything is staged
        long d = ok(c.call(Requests.ivc_mem_alloc(64)));
        assertEquals(900, c.call(Requests.ivc_memcpy_htod_inline(d, stream, new byte[16], 16)).result());
        backend.endCaptureResult = 901; // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
        assertEquals(901, c.call(Requests.cuStreamEndCapture(stream)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphNodeGetType(node)).result(), "its node went");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphDestroy(graph)).result(), "its graph went");
        assertEquals(0, backend.graphDestroys.get(), "the driver freed it, not the server");
        // a capture that succeeds: its graph is the process's, under the handle it had
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuStreamBeginCapture_v2(stream, 2)).result());
        long during = c.call(Requests.ivc_stream_capture_info(stream, 16)).out(2);
        backend.endCaptureResult = CuResult.SUCCESS;
        backend.graphs.add(CAPTURED);
        assertEquals(during, ok(c.call(Requests.cuStreamEndCapture(stream))));
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuGraphDestroy(during)).result());
    }

    @Test
    void aHostFunctionCapturedIntoAGraphStaysForItsLaunches() throws Exception {
        GraphStandIn backend = new GraphStandIn();
        start(backend);
        Channel c = greeted(0);
        Channel hostThread = greeted(1);
        Channel exiting = greeted(2);
        long stream = ok(c.call(Requests.cuStreamCreate(0)));
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuStreamBeginCapture_v2(stream, 2)).result());
        CompletableFuture<Response> enqueue = CompletableFuture.supplyAsync(
                () -> c.call(Requests.ivc_host_enqueue(stream, 0, 0x4000, 0x5000, stream)));
        Response next = hostThread.call(Requests.ivc_host_next(0, 1000));
        assertEquals(CuResult.SUCCESS, next.result());
        assertEquals(0x4000, next.out(2));
        assertEquals(CuResult.NOT_READY, hostThread.call(Requests.ivc_host_next(next.out(0), 50)).result());
        assertEquals(CuResult.SUCCESS, enqueue.get(10, TimeUnit.SECONDS).result());
        assertEquals(1, server.vm().hostCalls().targets(TOKEN), "kept: the graph runs it at each launch");
        assertEquals(CuResult.SUCCESS, exiting.call(Requests.ivc_process_exit()).result());
        ServerIntegrationTest.awaitTrue(() -> server.vm().hostCalls().targets(TOKEN) == 0, "released with the process");
    }

    @Test
    void nodesByHandAreCheckedAndGoWithTheirGraph() throws Exception {
        GraphStandIn backend = new GraphStandIn();
        start(backend);
        Channel c = greeted(0);
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        long a = ok(c.call(Requests.ivc_graph_add_simple_node(graph, 0, new byte[0], 0, 0, 0, 0)));
        byte[] afterA = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(0, a).array();
        long b = ok(c.call(Requests.ivc_graph_add_simple_node(graph, 1, afterA, 16, 0, 0, 0)));
        assertNotEquals(a, b);
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuGraphNodeGetType(b)).result());
        byte[] afterGraph = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(0, graph).array();
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_add_simple_node(graph, 1, afterGraph, 16, 0, 0, 0))
                .result(), "a graph is no node");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_add_simple_node(graph, 0, new byte[0], 0, 7, 0, 0))
                .result(), "kind 7");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_add_simple_node(graph, 0, new byte[0], 0, 1, 0, 0))
                .result(), "an event record node without an event");
        byte[] edge = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN).putLong(0, a).putLong(8, b).array();
        assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.ivc_graph_edges(graph, 0, 1, edge, 24, 0)).result(),
                "checked, then the stand-in's answer");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_edges(graph, 0, 1, edge, 16, 0)).result(),
                "a triple is 24 bytes");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_set_graph_mem_attribute(0, 1, 5)).result(),
                "a watermark is only reset to 0");
        assertEquals(CuResult.SUCCESS, c.call(Requests.cuGraphDestroy(graph)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphNodeGetType(a)).result(), "its nodes went with it");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphNodeGetType(b)).result());
    }
}
