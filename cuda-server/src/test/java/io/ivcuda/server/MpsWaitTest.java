package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.backend.HostMemoryBackend;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * cuInit while MPS recovers from a client's fatal fault (docs/sharing.md, "Fault recovery under MPS"):
 * retried, bounded, on MPS's not-ready results only. The stand-in answers what the test scripts; the
 * retry policy is what is tested.
 */
class MpsWaitTest {
    /** Host memory whose cuInit answers the scripted results first. */
    static final class ScriptedInit extends HostMemoryBackend {
        final int[] script;
        final AtomicInteger calls = new AtomicInteger();

        ScriptedInit(int... script) {
            this.script = script;
        }

        @Override
        public int init(int flags) {
            int i = calls.getAndIncrement();
            return i < script.length ? script[i] : super.init(flags);
        }
    }

    @Test
    void mpsNotReadyIsRetriedUntilItIsReady() {
        ScriptedInit cuda = new ScriptedInit(Main.MPS_SERVER_NOT_READY, Main.MPS_CONNECTION_FAILED);
        assertEquals(CuResult.SUCCESS, Main.initWaitingForMps(cuda, 10_000));
        assertEquals(3, cuda.calls.get());
    }

    @Test
    void theRetryIsBounded() {
        ScriptedInit cuda = new ScriptedInit(Main.MPS_SERVER_NOT_READY, Main.MPS_SERVER_NOT_READY,
                Main.MPS_SERVER_NOT_READY, Main.MPS_SERVER_NOT_READY);
        assertEquals(Main.MPS_SERVER_NOT_READY, Main.initWaitingForMps(cuda, 600));
    }

    @Test
    void anotherFailureIsNotRetried() {
        ScriptedInit cuda = new ScriptedInit(CuResult.NO_DEVICE);
        assertEquals(CuResult.NO_DEVICE, Main.initWaitingForMps(cuda, 10_000));
        assertEquals(1, cuda.calls.get());
    }
}
