package io.ivcuda.server.core;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The one push-call-pop of the server: reclaim, deferred frees and cuCtxSynchronize_v2 use it. */
class InContextTest {
    /** The host-memory backend's context stack, with a push that can be made to fail. */
    static final class Stack extends HostMemoryBackend {
        volatile int pushResult = CuResult.SUCCESS;
        final AtomicInteger pops = new AtomicInteger();

        @Override
        public int ctxPushCurrent(long ctx) {
            return pushResult != CuResult.SUCCESS ? pushResult : super.ctxPushCurrent(ctx);
        }

        @Override
        public int ctxPopCurrent(Out o) {
            pops.incrementAndGet();
            return super.ctxPopCurrent(o);
        }

        long current() {
            Out o = newOut();
            try {
                ctxGetCurrent(o);
                return o.handle;
            } finally {
                o.free();
            }
        }
    }

    private final Stack backend = new Stack();
    private final Out out = backend.newOut();
    private final InContext inContext = new InContext(backend);

    @AfterEach
    void free() {
        out.free();
    }

    @Test
    void theCallSeesTheContextAndTheThreadGetsItsOwnBack() {
        backend.ctxPushCurrent(0x10);
        AtomicLong seen = new AtomicLong();
        int result = inContext.run(0x20, out, () -> {
            seen.set(backend.current());
            return CuResult.SUCCESS;
        });
        assertEquals(CuResult.SUCCESS, result);
        assertEquals(0x20, seen.get(), "current during the call");
        assertEquals(0x10, backend.current(), "the thread's own context after it");
        assertEquals(0x20, out.handle, "the popped context");
    }

    @Test
    void contextZeroRunsInWhateverIsCurrentWithoutPushOrPop() {
        backend.ctxPushCurrent(0x10);
        AtomicLong seen = new AtomicLong();
        int result = inContext.run(0, out, () -> {
            seen.set(backend.current());
            return CuResult.OUT_OF_MEMORY;
        });
        assertEquals(CuResult.OUT_OF_MEMORY, result, "the call's own result");
        assertEquals(0x10, seen.get());
        assertEquals(0, backend.pops.get());
    }

    @Test
    void aFailedPushMakesNoCallAndPopsNothing() {
        backend.ctxPushCurrent(0x10);
        backend.pushResult = CuResult.INVALID_CONTEXT;
        AtomicInteger calls = new AtomicInteger();
        int result = inContext.run(0x20, out, () -> {
            calls.incrementAndGet();
            return CuResult.SUCCESS;
        });
        assertEquals(CuResult.INVALID_CONTEXT, result);
        assertEquals(0, calls.get(), "no call in a context that could not be made current");
        assertEquals(0, backend.pops.get(), "nothing popped that was not pushed");
        assertEquals(0x10, backend.current());
    }

    @Test
    void theCallsFailureWinsOverThePop() {
        int result = inContext.run(0x20, out, () -> CuResult.INVALID_VALUE);
        assertEquals(CuResult.INVALID_VALUE, result);
        assertEquals(1, backend.pops.get());
        assertEquals(0, backend.current());
    }
}
