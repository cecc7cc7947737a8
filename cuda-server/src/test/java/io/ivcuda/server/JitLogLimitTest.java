package io.ivcuda.server;

import static io.ivcuda.server.ServerIntegrationTest.awaitTrue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import io.ivcuda.server.backend.Out;
import io.ivcuda.server.gen.Requests;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 13: a link state keeps its JIT log buffers until it is destroyed, so a process that makes
 * link states with logs and never destroys them grew the server by {@code limit.handles.process} × two
 * logs (4 GiB at the defaults). The bytes its live link states hold are bounded per process ({@code
 * limit.jit.log.bytes.process}) and per VM ({@code limit.jit.log.bytes.vm}): beyond either, cuLinkCreate
 * gets CUDA_ERROR_OUT_OF_MEMORY before the driver makes a link state, counted and logged rate-limited
 * as a refusal; a destroy or the process's exit gives the bytes back.
 */
class JitLogLimitTest extends HostMemoryGuestCase {
    static final long TOKEN = (85L << 32) | 7;
    static final long OTHER = (86L << 32) | 9;
    /** Both logs at 8 KiB: 16 KiB a link state. */
    static final byte[] LOGS = JitLogTest.pairs(4, 8192, 6, 8192);

    /** Stands in for the driver's linker: a distinct state per create, each counted. */
    static final class Linker extends HostMemoryBackend {
        final AtomicLong next = new AtomicLong(0xC100);
        final AtomicInteger created = new AtomicInteger();
        final AtomicInteger destroyed = new AtomicInteger();

        @Override
        public int linkCreate(Out o, int count, long options, long values) {
            created.incrementAndGet();
            o.handle = next.getAndAdd(0x100);
            return CuResult.SUCCESS;
        }

        @Override
        public int linkDestroy(long state) {
            destroyed.incrementAndGet();
            return CuResult.SUCCESS;
        }
    }

    final LogCapture log = new LogCapture();
    Linker backend;

    @Override
    long token() {
        return TOKEN;
    }

    @AfterEach
    @Override
    void stop() {
        log.close();
        super.stop();
    }

    private static long create(Channel c, int expected) {
        var r = c.call(Requests.ivc_link_create(LOGS, LOGS.length));
        assertEquals(expected, r.result());
        return r.out(0);
    }

    @Test
    void aProcesssLiveLinkStatesAreBoundedInJitLogBytes() throws Exception {
        backend = new Linker();
        // 128 KiB: eight link states with both logs at 8 KiB
        start(backend, ServerKeys.LIMIT_JIT_LOG_BYTES_PROCESS.name() + "=128K");
        Channel c = greeted(0);
        List<Long> states = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            states.add(create(c, CuResult.SUCCESS));
        }
        assertEquals(128L << 10, server.vm().jitLogs().held());
        for (int i = 0; i < 20; i++) {
            create(c, CuResult.OUT_OF_MEMORY);
        }
        assertEquals(8, backend.created.get(), "refused before the driver made a link state");
        assertEquals(8, server.vm().handles().size(), "and before a handle");
        assertEquals(128L << 10, server.vm().jitLogs().held(), "a refused create holds nothing");
        assertEquals(20, server.vm().refusals().count("ivc_link_create jitOptions"));
        assertEquals(5, log.lines().stream().filter(l -> l.contains(ServerKeys.LIMIT_JIT_LOG_BYTES_PROCESS.name())).count(),
                "logged at log.refusals.per.kind, naming the limit: " + log.lines());

        // a link state without logs holds none: not refused
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_link_create(new byte[0], 0)).result());

        // one destroyed: room for exactly one more
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_link_destroy(states.remove(0))).result());
        assertEquals(112L << 10, server.vm().jitLogs().held());
        states.add(create(c, CuResult.SUCCESS));
        create(c, CuResult.OUT_OF_MEMORY);

        // another process has its own room
        Channel other = hello(1, OTHER);
        assertEquals(CuResult.SUCCESS, other.call(Requests.ivc_link_create(LOGS, LOGS.length)).result());

        // the process's exit gives every byte back, with its link states
        assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_process_exit()).result());
        awaitTrue(() -> server.vm().jitLogs().held() == 16L << 10, "the exited process's JIT log bytes released");
        awaitTrue(() -> backend.destroyed.get() == 1 + 9, "its link states destroyed");
        assertEquals(0, log.count(org.apache.logging.log4j.Level.ERROR), log.lines().toString());
    }

    @Test
    void theVmsLinkStatesAreBoundedTogether() throws Exception {
        backend = new Linker();
        // 160 KiB per VM: ten link states of 16 KiB, whoever holds them; each process may hold 128 KiB
        start(backend, ServerKeys.LIMIT_JIT_LOG_BYTES_PROCESS.name() + "=128K",
                ServerKeys.LIMIT_JIT_LOG_BYTES_VM.name() + "=160K");
        Channel a = hello(0, TOKEN);
        Channel b = hello(1, OTHER);
        for (int i = 0; i < 6; i++) {
            create(a, CuResult.SUCCESS);
        }
        for (int i = 0; i < 4; i++) {
            create(b, CuResult.SUCCESS);
        }
        create(b, CuResult.OUT_OF_MEMORY);
        create(a, CuResult.OUT_OF_MEMORY);
        assertEquals(10, backend.created.get());
        assertTrue(log.lines().stream().anyMatch(l -> l.contains(ServerKeys.LIMIT_JIT_LOG_BYTES_VM.name())), log.lines().toString());
        assertEquals(CuResult.SUCCESS, a.call(Requests.ivc_process_exit()).result());
        awaitTrue(() -> server.vm().jitLogs().held() == 64L << 10, "a's bytes given back to the VM");
        for (int i = 0; i < 4; i++) {
            create(b, CuResult.SUCCESS);
        }
        assertEquals(128L << 10, server.vm().jitLogs().held());
        create(b, CuResult.OUT_OF_MEMORY);
    }
}
