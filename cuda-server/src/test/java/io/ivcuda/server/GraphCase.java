package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.FakeGuest.Response;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Requests;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.Supplier;

/**
 * A {@link StartedServerCase} on a graph stand-in ({@link GraphStandInBackend}), with what the tests that
 * build graphs node by node send beside the node calls: dependency lists, 4-byte values and a kernel
 * ({@link GraphBuildTest}, {@link GraphMemNodesTest}, {@link GraphExecUpdateTest}).
 */
abstract class GraphCase<B extends GraphStandInBackend> extends StartedServerCase<B> {
    GraphCase(long token, Supplier<B> newBackend, String... settings) {
        super(token, newBackend, settings);
    }

    /** A node list as the graph calls take it: 16 bytes a node, its handle in the first 8, the rest zero. */
    static byte[] deps(long... nodes) {
        ByteBuffer b = ByteBuffer.allocate(16 * nodes.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < nodes.length; i++) {
            b.putLong(16 * i, nodes[i]);
        }
        return b.array();
    }

    static byte[] int4(int v) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, v).array();
    }

    /** The kernel "k1" of a library loaded through {@code c} ({@link LibraryTest.LibraryBackend}'s). */
    static long kernel(Channel c) {
        byte[] image = new byte[64];
        Response lib = c.streamRequest(Requests.ivc_library_load(LaunchAndModuleTest.fnv1a(image), image.length, 1,
                new byte[0], 0), image);
        assertEquals(CuResult.SUCCESS, lib.result());
        return ok(c.call(Requests.cuLibraryGetKernel(lib.out(0), "k1")));
    }
}
