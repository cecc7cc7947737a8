package io.ivcuda.server.handler;

import static io.ivcuda.server.backend.CudaBackend.NODE_ADD;
import static io.ivcuda.server.backend.CudaBackend.NODE_EXEC_SET;
import static io.ivcuda.server.backend.CudaBackend.NODE_SET;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.core.GraphState;
import io.ivcuda.server.core.HostCalls;
import io.ivcuda.server.gen.Reply;
import org.agrona.DirectBuffer;
import org.agrona.UnsafeApi;

/**
 * What every hand-made graph node call shares (GraphBuildHandler, StagedCopyHandler,
 * ConditionalNodeHandler): the call's head checked, its dependencies resolved into a native array
 * of their own for the duration of one call, the new node minted for the process, and host-function
 * targets that stay until the process goes. One per channel, like its handlers.
 */
final class GraphNodeCall {
    private final Session session;

    GraphNodeCall(Session session) {
        this.session = session;
    }

    /**
     * Checks the call's head (which handles an op names) and copies the resolved dependencies into
     * a native array of their own ({@link #deps}; 0 when none): the scratch memory stays free for
     * the kernel's parameters. Returns SUCCESS or the refusal.
     */
    int head(int op, long hGraph, long hNode, long hExec, DirectBuffer in, int index, int length, int count) {
        deps = 0;
        boolean shape = switch (op) {
            case NODE_ADD -> hGraph != 0 && hNode == 0 && hExec == 0;
            case NODE_SET -> hGraph == 0 && hNode != 0 && hExec == 0 && count == 0;
            case NODE_EXEC_SET -> hGraph == 0 && hNode != 0 && hExec != 0 && count == 0;
            default -> false;
        };
        if (!shape) {
            return session.refuse("op", op + " with graph " + (hGraph != 0) + ", node " + (hNode != 0) + ", exec "
                    + (hExec != 0) + ", " + count + " dependencies", CuResult.INVALID_VALUE);
        }
        if (op == NODE_ADD && !session.vm.handles().canMint(session.token())) {
            return session.refuse("node", "the process holds as many handles as it may", CuResult.OUT_OF_MEMORY);
        }
        int refused = GraphHandles.resolve(session, in, index, length, count, 1);
        if (refused != CuResult.SUCCESS || count == 0) {
            return refused;
        }
        deps = UnsafeApi.allocateMemory(8L * count);
        UnsafeApi.copyMemory(GraphHandles.array(session, 0, 1), deps, 8L * count);
        return CuResult.SUCCESS;
    }

    /** The dependencies {@link #head} copied (freed by {@link #done}). */
    private long deps;

    /** The dependencies of the call in progress (0: none). */
    long deps() {
        return deps;
    }

    /** Takes a native array of n dependencies the caller allocated (a capture's); freed by {@link #release}. */
    void adopt(long address) {
        deps = address;
    }

    /** Frees the dependencies without minting anything (a call that mints its node itself). */
    void release() {
        if (deps != 0) {
            UnsafeApi.freeMemory(deps);
            deps = 0;
        }
    }

    /** Frees the dependencies; an added node becomes the process's. */
    int done(Reply r, int op, long hGraph, int result) {
        if (deps != 0) {
            UnsafeApi.freeMemory(deps);
            deps = 0;
        }
        if (op == NODE_ADD && result == CuResult.SUCCESS) {
            r.set(0, session.vm.handles().mint(GraphState.KIND_GRAPH_NODE, session.token(), session.out.handle, hGraph));
        }
        return result;
    }

    /** A target for the guest's fn(userData) that stays until the process goes; null (refused) at the bound. */
    HostCalls.Target target(long fn, long userData) {
        if (fn == 0) {
            session.refuse("fn", "is NULL", CuResult.INVALID_VALUE);
            return null;
        }
        HostCalls.Target t = session.vm.hostCalls().add(session.token(), HostCalls.KIND_HOST_FN, fn, userData, 0, false);
        if (t == null) {
            session.refuse("fn", session.vm.hostCalls().refusal(), CuResult.OUT_OF_MEMORY);
        }
        return t;
    }
}
