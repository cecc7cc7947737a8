package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Requests;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/**
 * Graph memory nodes made by hand (api/graphs.api section graphmem, docs/graphs.md "Memory nodes")
 * over GraphBuildTest's stand-in driver, which makes up an address per allocation node and refuses a
 * free node of any other address, as the driver does: the address comes back and is the process's
 * device memory (later nodes pass the device-range checks over it) and counts against the quota
 * until a free node of it is added; free nodes take only the process's allocations; the parameters
 * come back; pool properties and access descriptors other than the guest's device are refused by
 * name before the driver sees them. Nothing here runs a graph: gpu/programs/graph_mem_nodes.c does.
 */
class GraphMemNodesTest extends GraphCase<GraphBuildTest.Backend> {
    static final long TOKEN = (7373L << 32) | 0x43;
    static final long QUOTA = 1 << 20;
    static final int PINNED = 1;
    static final int DEVICE = 1;

    GraphMemNodesTest() {
        super(TOKEN, GraphBuildTest.Backend::new, "memory.quota=" + QUOTA);
    }

    /** CUmemAccessDesc entries: (location type, id, flags) each. */
    private static byte[] descs(int... triples) {
        ByteBuffer b = ByteBuffer.allocate(4 * triples.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < triples.length; i++) {
            b.putInt(4 * i, triples[i]);
        }
        return b.array();
    }

    private static Requests.Request alloc(long graph, long bytes, byte[] descs) {
        return Requests.ivc_graph_mem_alloc_node(graph, 0, new byte[0], 0, PINNED, 0, DEVICE, 0, bytes, descs,
                descs.length);
    }

    private Response memset(Channel c, long graph, long dptr, long bytes) {
        return c.call(Requests.ivc_graph_memset_node(0, graph, 0, 0, 0, new byte[0], 0, dptr, bytes, 0, 7, 1, bytes, 1));
    }

    @Test
    void anAllocationNodesAddressIsTheProcessesAndCountsUntilItsFreeNode() {
        Channel c = greetedWithContext(0, TOKEN);
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        long first = ok(memset(c, graph, ok(c.call(Requests.ivc_mem_alloc(64))), 64));
        long before = server.vm().allocated();
        Response r = c.call(Requests.ivc_graph_mem_alloc_node(graph, 1, deps(first), 16, PINNED, 0, DEVICE, 0, 4096,
                descs(DEVICE, 0, 3), 12));
        assertEquals(CuResult.SUCCESS, r.result());
        long node = r.out(0);
        long dptr = r.out(1);
        assertTrue(backend.allocations.containsKey(dptr), "the driver's address came back");
        assertEquals(1, backend.calls.get(backend.calls.size() - 1).deps().size(), "after its dependency");
        assertEquals(before + 4096, server.vm().allocated(), "counted against the quota");
        assertEquals(CuResult.SUCCESS, memset(c, graph, dptr, 4096).result(), "later nodes may use it");
        assertEquals(CuResult.INVALID_VALUE, memset(c, graph, dptr, 4097).result(), "but not past it");

        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_graph_mem_free_node(graph, 0, new byte[0], 0, 0xdead0000L)).result(),
                "an address the process does not hold");
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_graph_mem_free_node(graph, 0, new byte[0], 0, dptr + 16)).result(),
                "inside the allocation, not its start");
        long free = ok(c.call(Requests.ivc_graph_mem_free_node(graph, 1, deps(node), 16, dptr)));
        assertNotEquals(0, free);
        assertEquals(before, server.vm().allocated(), "out of the quota with its free node");
        assertEquals(CuResult.INVALID_VALUE, memset(c, graph, dptr, 64).result(), "and out of the process's memory");
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_graph_mem_free_node(graph, 0, new byte[0], 0, dptr)).result(), "freed once");

        // a plain allocation is the process's: the driver judges it (it refuses what no allocation node made)
        long plain = ok(c.call(Requests.ivc_mem_alloc(64)));
        int calls = backend.calls.size();
        assertEquals(CuResult.INVALID_VALUE,
                c.call(Requests.ivc_graph_mem_free_node(graph, 0, new byte[0], 0, plain)).result());
        assertEquals(calls, backend.calls.size());
        assertEquals(CuResult.SUCCESS, memset(c, graph, plain, 64).result(), "and stays the process's");
    }

    @Test
    void theParametersComeBack() {
        Channel c = greetedWithContext(0, TOKEN);
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        Response a = c.call(alloc(graph, 8192, descs(DEVICE, 0, 3)));
        long node = a.out(0);
        long dptr = a.out(1);
        long free = ok(c.call(Requests.ivc_graph_mem_free_node(graph, 1, deps(node), 16, dptr)));
        Response p = c.call(Requests.ivc_graph_mem_alloc_node_params(node, 12 * 4));
        assertEquals(CuResult.SUCCESS, p.result(), () -> server.vm().refusals().counts().toString());
        assertEquals(PINNED, p.out(0), "allocType");
        assertEquals(0, p.out(1), "handleTypes");
        assertEquals(DEVICE, p.out(2), "location type");
        assertEquals(0, p.out(3), "the guest's device ordinal");
        assertEquals(8192, p.out(4));
        assertEquals(dptr, p.out(5));
        assertEquals(1, p.out(6), "one access descriptor");
        int descs = p.payload() + 8 * 8; // the 7 outs, the outbuf's length, then its bytes
        assertEquals(12, p.buffer().getLong(p.payload() + 7 * 8, FakeGuest.LE));
        assertEquals(DEVICE, p.buffer().getInt(descs, FakeGuest.LE));
        assertEquals(0, p.buffer().getInt(descs + 4, FakeGuest.LE));
        assertEquals(3, p.buffer().getInt(descs + 8, FakeGuest.LE), "read-write");
        assertEquals(dptr, ok(c.call(Requests.cuGraphMemFreeNodeGetParams(free))));
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.cuGraphMemFreeNodeGetParams(node)).result(),
                "an allocation node is no free node");
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_mem_alloc_node_params(free, 4)).result());
        assertEquals(CuResult.INVALID_VALUE, c.call(Requests.ivc_graph_mem_alloc_node_params(graph, 4)).result(),
                "a graph handle is no node");
    }

    @Test
    void poolPropertiesAndAccessDescriptorsOtherThanTheDevicesAreRefusedByName() {
        Channel c = greetedWithContext(0, TOKEN);
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        int calls = backend.calls.size();
        record Bad(String field, Requests.Request request) {
        }
        byte[] none = new byte[0];
        Bad[] bad = {
            new Bad("poolProps.allocType", Requests.ivc_graph_mem_alloc_node(graph, 0, none, 0, 2, 0, DEVICE, 0, 64, none, 0)),
            new Bad("poolProps.handleTypes", Requests.ivc_graph_mem_alloc_node(graph, 0, none, 0, PINNED, 1, DEVICE, 0, 64, none, 0)),
            new Bad("poolProps.location", Requests.ivc_graph_mem_alloc_node(graph, 0, none, 0, PINNED, 0, 2, 0, 64, none, 0)),
            new Bad("poolProps.location", Requests.ivc_graph_mem_alloc_node(graph, 0, none, 0, PINNED, 0, DEVICE, 1, 64, none, 0)),
            new Bad("bytesize", Requests.ivc_graph_mem_alloc_node(graph, 0, none, 0, PINNED, 0, DEVICE, 0, 0, none, 0)),
            new Bad("descs", alloc(graph, 64, new byte[12 * 9])),
            new Bad("descs", alloc(graph, 64, new byte[13])),
            new Bad("descs", alloc(graph, 64, descs(DEVICE, 3, 3))),
            new Bad("descs", alloc(graph, 64, descs(2, 0, 3))),
            new Bad("descs", alloc(graph, 64, descs(DEVICE, 0, 7))),
        };
        for (Bad b : bad) {
            long seen = server.vm().refusals().count("ivc_graph_mem_alloc_node " + b.field());
            assertEquals(CuResult.INVALID_VALUE, c.call(b.request()).result(), b.field());
            assertEquals(seen + 1, server.vm().refusals().count("ivc_graph_mem_alloc_node " + b.field()),
                    b.field() + " named: " + server.vm().refusals().counts());
        }
        assertEquals(calls, backend.calls.size(), "none reached the driver");
        assertEquals(0, server.vm().allocated(), "nothing counted");
    }

    @Test
    void theQuotaBoundsAllocationNodes() {
        Channel c = greetedWithContext(0, TOKEN);
        long graph = ok(c.call(Requests.cuGraphCreate(0)));
        Response a = c.call(alloc(graph, QUOTA - 4096, new byte[0]));
        assertEquals(CuResult.SUCCESS, a.result());
        long first = a.out(1); // the response's bytes are the channel's: read before the next call
        int calls = backend.calls.size();
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(alloc(graph, 8192, new byte[0])).result(),
                "beyond the quota beside the first");
        assertEquals(calls, backend.calls.size(), "refused before the driver");
        assertEquals(CuResult.OUT_OF_MEMORY, c.call(Requests.ivc_mem_alloc(8192)).result(),
                "a plain allocation sees the graph's too");
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_graph_mem_free_node(graph, 0, new byte[0], 0, first)).result(),
                () -> server.vm().refusals().counts().toString());
        assertEquals(CuResult.SUCCESS, c.call(alloc(graph, 8192, new byte[0])).result(), "room again after its free node");
        long other = ok(c.call(alloc(graph, 4096, new byte[0])));
        assertNotEquals(0, other);
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        ServerIntegrationTest.awaitTrue(() -> server.vm().allocated() == 0, "the process's graph allocations go with it");
    }
}
